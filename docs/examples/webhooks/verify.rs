//! Verifies a payoutd webhook delivery (Standard Webhooks, `v1` signatures).
//!
//! Dependencies: `hmac = "0.13"`, `sha2 = "0.11"`, `base64 = "0.22"`. Call [`verify`] from your
//! HTTP handler with the headers and the raw body bytes, or run this file as a program:
//!
//! ```text
//! verify SECRET WEBHOOK_ID WEBHOOK_TIMESTAMP WEBHOOK_SIGNATURE < body
//! ```
//!
//! It exits 0 when the delivery is genuine and 1 when it is not.

use std::io::Read;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// How far `webhook-timestamp` may be from our clock (replay protection).
pub const TOLERANCE_SECS: u64 = 5 * 60;

/// Why a delivery was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// `webhook-timestamp` is not a number or is more than [`TOLERANCE_SECS`] from now.
    Timestamp,
    /// No `v1,` entry of `webhook-signature` signs this id, timestamp and body.
    Signature,
    /// The secret is not `whsec_` followed by base64.
    Secret,
}

/// Checks one delivery: `id`, `timestamp` and `signatures` are the `webhook-id`,
/// `webhook-timestamp` and `webhook-signature` headers, `body` the raw body as received.
pub fn verify(
    secret: &str,
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
) -> Result<(), Rejected> {
    let sent_at: u64 = timestamp.parse().map_err(|_| Rejected::Timestamp)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Rejected::Timestamp)?
        .as_secs();
    if now.abs_diff(sent_at) > TOLERANCE_SECS {
        return Err(Rejected::Timestamp);
    }
    let key = secret
        .strip_prefix("whsec_")
        .and_then(|key| STANDARD.decode(key).ok())
        .ok_or(Rejected::Secret)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|_| Rejected::Secret)?;
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    // During a secret rotation there are several signatures: any one will do.
    let signed = signatures
        .split(' ')
        .filter_map(|entry| entry.strip_prefix("v1,"))
        .filter_map(|signature| STANDARD.decode(signature).ok())
        .any(|tag| mac.clone().verify_slice(&tag).is_ok()); // constant-time comparison
    if signed {
        Ok(())
    } else {
        Err(Rejected::Signature)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [secret, id, timestamp, signatures] = args.as_slice() else {
        eprintln!("usage: verify SECRET WEBHOOK_ID WEBHOOK_TIMESTAMP WEBHOOK_SIGNATURE < body");
        return ExitCode::from(2);
    };
    let mut body = Vec::new();
    if let Err(error) = std::io::stdin().read_to_end(&mut body) {
        eprintln!("cannot read the body: {error}");
        return ExitCode::from(2);
    }
    match verify(secret, id, timestamp, signatures, &body) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("rejected: {why:?}");
            ExitCode::FAILURE
        }
    }
}
