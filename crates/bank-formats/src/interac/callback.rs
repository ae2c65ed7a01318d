//! Checking a status report the partner pushed (`POST /rail/interac/callback`): the signature
//! over the body, its time, then the report itself.

use super::documents::{InteracError, StatusReport};
use super::signature::{SignatureError, verify_signature};

/// Why a pushed report is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackError {
    /// No `X-Partner-Signature` header.
    #[error("the callback has no X-Partner-Signature header")]
    Unsigned,
    /// The signature is malformed, stale, early or does not match (answer 401).
    #[error("the callback's signature is refused: {0}")]
    Signature(#[from] SignatureError),
    /// Signed, but not a valid status report (answer 400).
    #[error("the callback is not a valid status report: {0}")]
    NotAReport(#[from] InteracError),
}

/// Checks a pushed report: `signature` is the `X-Partner-Signature` header's value, `body` the
/// request body, `now` the receiver's clock in unix seconds, `tolerance` the accepted clock
/// difference in seconds. Returns the report, whose `report_id` is the name to record the body
/// under, so that a pushed report and the same report polled are one inbound document.
///
/// # Errors
/// [`CallbackError`]: the signature is checked before the body is parsed.
pub fn verify_callback(
    signature: Option<&str>,
    body: &[u8],
    secret: &[u8],
    now: i64,
    tolerance: u64,
) -> Result<StatusReport, CallbackError> {
    let header = signature.ok_or(CallbackError::Unsigned)?;
    verify_signature(header, body, secret, now, tolerance)?;
    Ok(StatusReport::parse(body)?)
}
