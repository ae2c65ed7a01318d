//! Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "<webhook-id>.<webhook-timestamp>.<body>">`, keyed with the bytes of a `whsec_<base64>`
//! secret. During a secret rotation both signatures are sent, space-separated.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};
use sha2::Sha256;

/// Why a webhook secret is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// Not `whsec_` followed by base64.
    #[error("webhook secret must be whsec_ followed by base64")]
    Malformed,
}

/// The signing key of one `whsec_` secret.
pub struct WebhookKey(Vec<u8>);

impl WebhookKey {
    /// Parses `whsec_<base64>`.
    pub fn parse(secret: &str) -> Result<Self, SecretError> {
        let encoded = secret
            .strip_prefix("whsec_")
            .ok_or(SecretError::Malformed)?;
        let bytes = STANDARD
            .decode(encoded)
            .map_err(|_| SecretError::Malformed)?;
        if bytes.is_empty() {
            return Err(SecretError::Malformed);
        }
        Ok(Self(bytes))
    }

    /// `v1,<base64>` for one message.
    pub fn sign(&self, id: &str, timestamp_secs: i64, body: &[u8]) -> String {
        let mut mac = match hmac::Hmac::<Sha256>::new_from_slice(&self.0) {
            Ok(mac) => mac,
            // HMAC takes keys of any length; unreachable, but total.
            Err(_) => return String::new(),
        };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp_secs.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}

/// The `webhook-signature` header value: one signature per key, space-separated (the current
/// key first, then the previous one during a rotation).
pub fn signature_header(keys: &[WebhookKey], id: &str, timestamp_secs: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|k| k.sign(id, timestamp_secs, body))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1_614_265_330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;

    fn key(secret: &str) -> WebhookKey {
        match WebhookKey::parse(secret) {
            Ok(key) => key,
            Err(e) => panic!("{e}"),
        }
    }

    // The example of the Standard Webhooks specification.
    #[test]
    fn known_answer_from_the_specification() {
        let key = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        assert_eq!(
            key.sign(ID, TS, BODY),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    // python3 -c 'import hmac,hashlib,base64;print(base64.b64encode(hmac.new(bytes(32),b"msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{\"test\": 2432232314}",hashlib.sha256).digest()).decode())'
    #[test]
    fn rotation_sends_both_signatures() {
        let current = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let previous = key("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=");
        let header = signature_header(&[current, previous], ID, TS, BODY);
        assert_eq!(
            header,
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v1,woH/1mJtZGSMCmpFTxRYbStS24eLLD/oXIYr4PYyZ7g="
        );
    }

    #[test]
    fn malformed_secrets_are_refused() {
        for bad in [
            "",
            "whsec_",
            "sk_abc",
            "whsec_!!!",
            "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        ] {
            assert!(WebhookKey::parse(bad).is_err(), "{bad}");
        }
    }
}
