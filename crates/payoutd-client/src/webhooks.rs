//! Verifying webhook deliveries (Standard Webhooks, docs/WEBHOOKS.md).
//!
//! Each delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature`: space-separated `v1,<base64 HMAC-SHA256>` entries of
//! `<id>.<timestamp>.<raw body>`, keyed with the bytes of the secret (`whsec_<base64>`). During a
//! secret rotation the server signs with both secrets, and a [`Verifier`] may hold both.
//!
//! ```
//! use payoutd_client::webhooks::Verifier;
//!
//! let verifier = Verifier::new(["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).expect("a secret");
//! # let (id, timestamp, signature, body) = ("msg_1", "1", "v1,x", b"{}");
//! // In your handler, with the three headers and the raw body bytes:
//! match verifier.verify(id, timestamp, signature, body) {
//!     Ok(event) => println!("{} {}", event.event, event.event_id),
//!     Err(why) => eprintln!("refused: {why}"),
//! }
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// How far `webhook-timestamp` may be from the verifier's clock by default (replay
/// protection): five minutes.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// The delivery's headers.
pub const ID_HEADER: &str = "webhook-id";
/// Unix seconds of the attempt.
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
/// `v1,<base64>` entries separated by spaces.
pub const SIGNATURE_HEADER: &str = "webhook-signature";

/// Why a delivery was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rejected {
    /// `webhook-timestamp` is not a number, or is further from the clock than the tolerance.
    #[error("the timestamp is missing, malformed or outside the tolerance")]
    Timestamp,
    /// No `v1,` entry signs this id, timestamp and body with any of the secrets.
    #[error("no signature matches")]
    Signature,
    /// The body is genuine but not a JSON event object.
    #[error("the body is not an event: {0}")]
    Body(String),
}

/// A secret that is not `whsec_` followed by base64.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a webhook secret is `whsec_` followed by base64")]
pub struct BadSecret;

/// An event as every delivery carries it; the event's own fields are in [`Event::data`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Event {
    /// `receiverCreated`, `payoutUpdated`, … (docs/WEBHOOKS.md, Events).
    pub event: String,
    /// The event's id (also `webhook-id`): deduplicate by it, delivery is at least once.
    pub event_id: String,
    /// The subaccount.
    pub subaccount_id: String,
    /// Grows by one with each event of the same object: order by it, drop stale ones.
    pub sequence: u64,
    /// When the event was written, Unix milliseconds.
    pub timestamp: u64,
    /// Every other field (`receiver_id`, `payout_id`, `status`, …).
    #[serde(flatten)]
    pub data: serde_json::Map<String, serde_json::Value>,
}

/// Checks deliveries against one secret, or two during a rotation.
#[derive(Clone)]
pub struct Verifier {
    keys: Vec<Hmac<Sha256>>,
    tolerance: Duration,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("secrets", &self.keys.len())
            .field("tolerance", &self.tolerance)
            .finish()
    }
}

impl Verifier {
    /// A verifier that accepts a signature by any of `secrets` (`whsec_…`).
    ///
    /// # Errors
    /// [`BadSecret`] when a secret is not `whsec_` and base64, or none is given.
    pub fn new<S: AsRef<str>>(secrets: impl IntoIterator<Item = S>) -> Result<Self, BadSecret> {
        let keys = secrets
            .into_iter()
            .map(|secret| {
                let key = secret
                    .as_ref()
                    .strip_prefix("whsec_")
                    .and_then(|key| STANDARD.decode(key).ok())
                    .ok_or(BadSecret)?;
                Hmac::<Sha256>::new_from_slice(&key).map_err(|_| BadSecret)
            })
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(BadSecret);
        }
        Ok(Self {
            keys,
            tolerance: DEFAULT_TOLERANCE,
        })
    }

    /// Accepts timestamps within `tolerance` of the clock instead of five minutes.
    pub fn tolerance(mut self, tolerance: Duration) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Checks one delivery by the clock: `id`, `timestamp` and `signatures` are the
    /// `webhook-id`, `webhook-timestamp` and `webhook-signature` headers, `body` the raw
    /// body as received (re-serialised JSON would not verify). Returns the event.
    ///
    /// # Errors
    /// [`Rejected`] says why the delivery is not genuine.
    pub fn verify(
        &self,
        id: &str,
        timestamp: &str,
        signatures: &str,
        body: &[u8],
    ) -> Result<Event, Rejected> {
        self.verify_at(id, timestamp, signatures, body, SystemTime::now())
    }

    /// [`Verifier::verify`] as if the clock read `now`.
    ///
    /// # Errors
    /// As [`Verifier::verify`].
    pub fn verify_at(
        &self,
        id: &str,
        timestamp: &str,
        signatures: &str,
        body: &[u8],
        now: SystemTime,
    ) -> Result<Event, Rejected> {
        self.verify_signature_at(id, timestamp, signatures, body, now)?;
        serde_json::from_slice(body).map_err(|e| Rejected::Body(e.to_string()))
    }

    /// Checks the timestamp and the signature only, whatever the body holds.
    ///
    /// # Errors
    /// As [`Verifier::verify`], never [`Rejected::Body`].
    pub fn verify_signature_at(
        &self,
        id: &str,
        timestamp: &str,
        signatures: &str,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), Rejected> {
        if timestamp.is_empty() || !timestamp.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Rejected::Timestamp);
        }
        let sent = timestamp.parse::<u64>().map_err(|_| Rejected::Timestamp)?;
        let now = now
            .duration_since(UNIX_EPOCH)
            .map_err(|_| Rejected::Timestamp)?
            .as_secs();
        if now.abs_diff(sent) > self.tolerance.as_secs() {
            return Err(Rejected::Timestamp);
        }
        let tags: Vec<Vec<u8>> = signatures
            .split(' ')
            .filter_map(|entry| entry.strip_prefix("v1,"))
            .filter_map(|tag| STANDARD.decode(tag).ok())
            .collect();
        for key in &self.keys {
            let mut mac = key.clone();
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.as_bytes());
            mac.update(b".");
            mac.update(body);
            // `verify_slice` compares in constant time.
            if tags.iter().any(|tag| mac.clone().verify_slice(tag).is_ok()) {
                return Ok(());
            }
        }
        Err(Rejected::Signature)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    /// The Standard Webhooks specification's published test vector.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: &str = "1614265330";
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn sign(secret: &str, id: &str, timestamp: &str, body: &[u8]) -> String {
        let key = STANDARD
            .decode(secret.trim_start_matches("whsec_"))
            .unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn the_specifications_test_vector_verifies() {
        let verifier = Verifier::new([SECRET]).unwrap();
        assert_eq!(
            verifier.verify_signature_at(ID, TIMESTAMP, SIGNATURE, BODY, at(1_614_265_330)),
            Ok(())
        );
        assert_eq!(sign(SECRET, ID, TIMESTAMP, BODY), SIGNATURE);
    }

    #[test]
    fn forgeries_and_stale_deliveries_are_refused() {
        let verifier = Verifier::new([SECRET]).unwrap();
        let now = at(1_614_265_330);
        let refused = |id: &str, ts: &str, sig: &str, body: &[u8]| {
            verifier.verify_signature_at(id, ts, sig, body, now)
        };
        assert_eq!(
            refused(ID, TIMESTAMP, SIGNATURE, br#"{"test": 2432232315}"#),
            Err(Rejected::Signature)
        );
        assert_eq!(
            refused("msg_other", TIMESTAMP, SIGNATURE, BODY),
            Err(Rejected::Signature)
        );
        assert_eq!(
            refused(
                ID,
                TIMESTAMP,
                "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
                BODY
            ),
            Err(Rejected::Signature)
        );
        assert_eq!(refused(ID, TIMESTAMP, "", BODY), Err(Rejected::Signature));
        // Correctly signed, but six minutes off either way.
        for ts in ["1614264970", "1614265690"] {
            let signature = sign(SECRET, ID, ts, BODY);
            assert_eq!(refused(ID, ts, &signature, BODY), Err(Rejected::Timestamp));
        }
        for ts in ["", "-1", "+1614265330", "1614265330.0", "abc"] {
            assert_eq!(refused(ID, ts, SIGNATURE, BODY), Err(Rejected::Timestamp));
        }
    }

    #[test]
    fn during_a_rotation_either_secret_and_either_signature_verifies() {
        let old = "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
        let now = at(1_614_265_330);
        let by_old = sign(old, ID, TIMESTAMP, BODY);
        // The server sends both signatures; a verifier may know either or both secrets.
        let both = format!("{by_old} {SIGNATURE}");
        for secrets in [vec![SECRET], vec![old], vec![old, SECRET]] {
            let verifier = Verifier::new(&secrets).unwrap();
            assert_eq!(
                verifier.verify_signature_at(ID, TIMESTAMP, &both, BODY, now),
                Ok(())
            );
        }
        let verifier = Verifier::new([old, SECRET]).unwrap();
        assert_eq!(
            verifier.verify_signature_at(ID, TIMESTAMP, SIGNATURE, BODY, now),
            Ok(())
        );
    }

    #[test]
    fn secrets_must_be_whsec_base64() {
        assert!(Verifier::new(["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).is_err());
        assert!(Verifier::new(["whsec_not base64!"]).is_err());
        assert!(Verifier::new(Vec::<String>::new()).is_err());
    }

    #[test]
    fn a_genuine_delivery_reads_as_an_event() {
        let body = br#"{"event":"payoutUpdated","event_id":"e1","subaccount_id":"s","subccount_id":"s","sequence":3,"timestamp":1614265330000,"status":"successful"}"#;
        let signature = sign(SECRET, "e1", TIMESTAMP, body);
        let event = Verifier::new([SECRET])
            .unwrap()
            .verify_at("e1", TIMESTAMP, &signature, body, at(1_614_265_331))
            .unwrap();
        assert_eq!(event.event, "payoutUpdated");
        assert_eq!(event.sequence, 3);
        assert_eq!(event.data["status"], "successful");
    }
}
