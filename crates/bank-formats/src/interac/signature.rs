//! Message signatures: HMAC-SHA256 with the shared secret over `"{timestamp}.{payload}"`,
//! carried as `X-Partner-Signature: t=<unix seconds>,v1=<64 lower-case hex digits>`.
//!
//! The payload is the body of a `POST` request or of a response, and the request target
//! (`/v1/reports?after=...`) of a `GET` request, which has no body. A receiver verifies in
//! constant time and refuses a timestamp further than the tolerance from its clock, so a
//! captured message cannot be replayed later. A header may carry several `v1` values (a secret
//! being rotated): one match suffices.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "X-Partner-Signature";

/// How far a signature's timestamp may be from the receiver's clock, by default: five minutes.
pub const DEFAULT_TOLERANCE_SECONDS: u64 = 300;

/// The longest header accepted.
const MAX_HEADER_LEN: usize = 1_024;

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The shared secret is empty.
    #[error("the shared secret is empty")]
    EmptySecret,
    /// The header is not `t=<seconds>,v1=<hex>`.
    #[error("the signature header is malformed: {0}")]
    Malformed(&'static str),
    /// The timestamp is older than the tolerance allows.
    #[error("the signature is {age} s old; at most {tolerance} s are accepted")]
    Expired {
        /// Its age in seconds.
        age: u64,
        /// The tolerance.
        tolerance: u64,
    },
    /// The timestamp is further in the future than the tolerance allows.
    #[error("the signature is dated {ahead} s in the future; at most {tolerance} s are accepted")]
    FromTheFuture {
        /// How far ahead, in seconds.
        ahead: u64,
        /// The tolerance.
        tolerance: u64,
    },
    /// No signature in the header matches the message.
    #[error("the signature does not match the message")]
    Mismatch,
}

fn mac(secret: &[u8], timestamp: i64, payload: &[u8]) -> Result<Hmac<Sha256>, SignatureError> {
    if secret.is_empty() {
        return Err(SignatureError::EmptySecret);
    }
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret).map_err(|_| SignatureError::EmptySecret)?;
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    Ok(mac)
}

/// The header value signing `payload` at `timestamp` (unix seconds) with `secret`.
///
/// # Errors
/// [`SignatureError::EmptySecret`].
pub fn sign(secret: &[u8], timestamp: i64, payload: &[u8]) -> Result<String, SignatureError> {
    let tag = mac(secret, timestamp, payload)?.finalize().into_bytes();
    Ok(format!("t={timestamp},v1={}", hex::encode(tag)))
}

/// A signature header read, before its payload is: the timestamp and the `v1` values. A
/// receiver refuses a malformed header ([`SignatureHeader::parse`]) and a stale or early one
/// ([`SignatureHeader::check_time`]) before reading a body it would otherwise have to hold, and
/// verifies the body last ([`SignatureHeader::verify`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHeader {
    timestamp: i64,
    tags: Vec<Vec<u8>>,
}

impl SignatureHeader {
    /// Reads `t=<unix seconds>,v1=<64 hex digits>[,v1=…]`; parts of other schemes are ignored.
    ///
    /// # Errors
    /// [`SignatureError::Malformed`].
    pub fn parse(header: &str) -> Result<Self, SignatureError> {
        if header.len() > MAX_HEADER_LEN {
            return Err(SignatureError::Malformed("longer than 1024 bytes"));
        }
        let mut timestamp = None;
        let mut tags = Vec::new();
        for part in header.split(',') {
            let Some((key, value)) = part.trim().split_once('=') else {
                return Err(SignatureError::Malformed("a part is not key=value"));
            };
            match key {
                "t" => {
                    if timestamp.is_some() {
                        return Err(SignatureError::Malformed("two timestamps"));
                    }
                    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                        return Err(SignatureError::Malformed(
                            "the timestamp is not unix seconds",
                        ));
                    }
                    timestamp =
                        Some(value.parse::<i64>().map_err(|_| {
                            SignatureError::Malformed("the timestamp is out of range")
                        })?);
                }
                "v1" => {
                    if value.len() != 64 {
                        return Err(SignatureError::Malformed("a v1 value is not 64 hex digits"));
                    }
                    let tag = hex::decode(value).map_err(|_| {
                        SignatureError::Malformed("a v1 value is not 64 hex digits")
                    })?;
                    tags.push(tag);
                }
                // Other schemes are ignored so a partner can add one without breaking receivers.
                _ => {}
            }
        }
        let timestamp = timestamp.ok_or(SignatureError::Malformed("no timestamp"))?;
        if tags.is_empty() {
            return Err(SignatureError::Malformed("no v1 signature"));
        }
        Ok(Self { timestamp, tags })
    }

    /// The signature's timestamp, in unix seconds.
    pub fn timestamp(&self) -> i64 {
        self.timestamp
    }

    /// Checks that the timestamp is at most `tolerance` seconds from `now` (unix seconds),
    /// either way.
    ///
    /// # Errors
    /// [`SignatureError::Expired`] or [`SignatureError::FromTheFuture`].
    pub fn check_time(&self, now: i64, tolerance: u64) -> Result<(), SignatureError> {
        if self.timestamp <= now {
            let age = now.abs_diff(self.timestamp);
            if age > tolerance {
                return Err(SignatureError::Expired { age, tolerance });
            }
        } else {
            let ahead = self.timestamp.abs_diff(now);
            if ahead > tolerance {
                return Err(SignatureError::FromTheFuture { ahead, tolerance });
            }
        }
        Ok(())
    }

    /// Checks, in constant time, that one of the `v1` values signs `payload` at the header's
    /// timestamp with `secret`. Returns the timestamp.
    ///
    /// # Errors
    /// [`SignatureError::EmptySecret`] or [`SignatureError::Mismatch`].
    pub fn verify(&self, payload: &[u8], secret: &[u8]) -> Result<i64, SignatureError> {
        let expected = mac(secret, self.timestamp, payload)?;
        for tag in &self.tags {
            if expected.clone().verify_slice(tag).is_ok() {
                return Ok(self.timestamp);
            }
        }
        Err(SignatureError::Mismatch)
    }
}

/// Checks the header `header` on `payload` with `secret` at `now` (unix seconds), allowing
/// `tolerance` seconds between the signature's timestamp and `now` either way. Returns the
/// signature's timestamp.
///
/// # Errors
/// Why the signature is refused; the checks run in the order: secret, header form, time,
/// match (constant time).
pub fn verify_signature(
    header: &str,
    payload: &[u8],
    secret: &[u8],
    now: i64,
    tolerance: u64,
) -> Result<i64, SignatureError> {
    if secret.is_empty() {
        return Err(SignatureError::EmptySecret);
    }
    let header = SignatureHeader::parse(header)?;
    header.check_time(now, tolerance)?;
    header.verify(payload, secret)
}
