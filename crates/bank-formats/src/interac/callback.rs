//! Checking a status report the partner pushed (`POST /rail/interac/callback`), in two steps so
//! that a receiver reads no body it would refuse anyway: the signature header (present,
//! well-formed, dated within the tolerance) before the body is read, then the signature over
//! the body, then the report itself.

use super::documents::{InteracError, StatusReport};
use super::signature::{SignatureError, SignatureHeader};

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

/// A pushed report's signature header that passed every check possible before its body is
/// read ([`check_callback_head`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallbackHead(SignatureHeader);

/// Checks a pushed report's `X-Partner-Signature` value `signature` before its body is read:
/// present, well-formed, and dated at most `tolerance` seconds from `now` (unix seconds).
///
/// # Errors
/// [`CallbackError::Unsigned`], or [`CallbackError::Signature`] with
/// [`SignatureError::Malformed`], [`SignatureError::Expired`] or
/// [`SignatureError::FromTheFuture`].
pub fn check_callback_head(
    signature: Option<&str>,
    now: i64,
    tolerance: u64,
) -> Result<CallbackHead, CallbackError> {
    let header = SignatureHeader::parse(signature.ok_or(CallbackError::Unsigned)?)?;
    header.check_time(now, tolerance)?;
    Ok(CallbackHead(header))
}

impl CallbackHead {
    /// Checks the signature over `body` with `secret` (constant time), then reads the report.
    /// Returns the report, whose `report_id` is the name to record the body under, so that a
    /// pushed report and the same report polled are one inbound document.
    ///
    /// # Errors
    /// [`CallbackError::Signature`] ([`SignatureError::Mismatch`] or
    /// [`SignatureError::EmptySecret`]), then [`CallbackError::NotAReport`].
    pub fn verify_body(&self, body: &[u8], secret: &[u8]) -> Result<StatusReport, CallbackError> {
        self.0.verify(body, secret)?;
        Ok(StatusReport::parse(body)?)
    }
}

/// Checks a pushed report whole: `signature` is the `X-Partner-Signature` header's value, `body`
/// the request body, `now` the receiver's clock in unix seconds, `tolerance` the accepted clock
/// difference in seconds ([`check_callback_head`], then [`CallbackHead::verify_body`]).
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
    check_callback_head(signature, now, tolerance)?.verify_body(body, secret)
}
