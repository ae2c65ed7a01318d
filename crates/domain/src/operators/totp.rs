//! The second factor: time-based one-time passwords (RFC 6238; SHA-1, 6 digits, 30-second
//! steps, as every authenticator app reads them), computed by the `totp-rs` crate. A code is
//! accepted for its step and the one before and after (clock drift), and each step at most once
//! per operator (RFC 6238 §5.2): the store keeps the last step used.

use chrono::{DateTime, Utc};
use totp_rs::{Algorithm, Builder, Totp};

use crate::masking::Secret;
use crate::ports::IdGenerator;

/// The issuer shown in authenticator apps.
pub const ISSUER: &str = "payoutd";

/// Secret length: 160 bits, RFC 4226's recommendation.
const SECRET_BYTES: usize = 20;

/// An operator's TOTP secret (stored sealed).
#[derive(Clone, PartialEq, Eq)]
pub struct TotpSecret(Secret<Vec<u8>>);

impl std::fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TotpSecret([REDACTED])")
    }
}

impl TotpSecret {
    /// 160 fresh random bits.
    pub fn generate(ids: &dyn IdGenerator) -> Self {
        Self(Secret::new(ids.random_bytes()[..SECRET_BYTES].to_vec()))
    }

    /// A secret read back from storage; `None` unless it is 160 bits.
    pub fn from_bytes(bytes: Vec<u8>) -> Option<Self> {
        (bytes.len() == SECRET_BYTES).then(|| Self(Secret::new(bytes)))
    }

    /// A secret as [`Self::base32`] shows it (what an operator types into an app); `None`
    /// unless it is 160 bits of base32.
    pub fn from_base32(text: &str) -> Option<Self> {
        totp_rs::Secret::try_from_base32(text.trim())
            .ok()
            .and_then(|s| Self::from_bytes(s.as_bytes().to_vec()))
    }

    /// The raw bytes (for sealing).
    pub fn expose(&self) -> &[u8] {
        self.0.expose()
    }

    fn totp(&self, account: &str) -> Option<Totp> {
        Builder::new()
            .with_algorithm(Algorithm::SHA1)
            .with_digits(6)
            .with_skew(1)
            .with_step_duration(30)
            .with_secret(self.0.expose().clone())
            .with_issuer(Some(ISSUER))
            .with_account_name(account)
            .build()
            .ok()
    }

    /// The secret in base32, as typed into an authenticator app by hand.
    pub fn base32(&self) -> String {
        self.totp("")
            .map(|t| t.secret().to_base32())
            .unwrap_or_default()
    }

    /// The `otpauth://totp/…` URI an authenticator app reads, for `account` (the e-mail).
    pub fn otpauth_uri(&self, account: &str) -> String {
        self.totp(account)
            .and_then(|t| t.to_url().ok())
            .unwrap_or_default()
    }

    /// The step `code` is valid for at `now` (that step, or one before or after), if any.
    pub fn verify(&self, code: &str, now: DateTime<Utc>) -> Option<u64> {
        let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let time = u64::try_from(now.timestamp()).ok()?;
        self.totp("")?.check(&code, time)
    }

    /// The code for `now` (tests and the demo).
    pub fn code_at(&self, now: DateTime<Utc>) -> String {
        let time = u64::try_from(now.timestamp()).unwrap_or_default();
        self.totp("")
            .map(|t| t.generate(time).to_string())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 appendix B's SHA-1 key, "12345678901234567890".
    fn rfc_secret() -> TotpSecret {
        TotpSecret::from_bytes(b"12345678901234567890".to_vec()).unwrap_or_else(|| unreachable!())
    }

    #[test]
    fn rfc_6238_test_vectors_last_six_digits() {
        // Appendix B, SHA-1 (8-digit values; the last 6 are the 6-digit code).
        for (time, expected) in [
            (59, "287082"),
            (1_111_111_109, "081804"),
            (1_111_111_111, "050471"),
            (1_234_567_890, "005924"),
            (2_000_000_000, "279037"),
        ] {
            let now = DateTime::from_timestamp(time, 0).unwrap_or_default();
            assert_eq!(rfc_secret().code_at(now), expected, "{time}");
            assert_eq!(
                rfc_secret().verify(expected, now),
                Some(u64::try_from(time / 30).unwrap_or(0))
            );
        }
    }

    #[test]
    fn a_code_is_good_for_its_step_and_the_neighbours_only() {
        let secret = rfc_secret();
        let t = DateTime::from_timestamp(1_234_567_890, 0).unwrap_or_default();
        let code = secret.code_at(t);
        let step = u64::try_from(t.timestamp() / 30).unwrap_or(0);
        assert_eq!(
            secret.verify(&code, t + chrono::Duration::seconds(30)),
            Some(step)
        );
        assert_eq!(
            secret.verify(&code, t - chrono::Duration::seconds(30)),
            Some(step)
        );
        assert_eq!(
            secret.verify(&code, t + chrono::Duration::seconds(90)),
            None
        );
        assert_eq!(
            secret.verify(&format!(" {} {} ", &code[..3], &code[3..]), t),
            Some(step)
        );
        for bad in ["", "12345", "1234567", "abcdef", "１２３４５６"] {
            assert_eq!(secret.verify(bad, t), None, "{bad}");
        }
    }

    #[test]
    fn secrets_are_160_bits_and_render_for_apps() {
        assert!(TotpSecret::from_bytes(vec![0; 19]).is_none());
        let secret = rfc_secret();
        assert_eq!(secret.base32(), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
        assert_eq!(
            TotpSecret::from_base32(&secret.base32()),
            Some(secret.clone())
        );
        assert_eq!(TotpSecret::from_base32("GEZDGNBV"), None);
        let uri = secret.otpauth_uri("ann@example.com");
        assert!(
            uri.starts_with("otpauth://totp/payoutd:ann%40example.com?"),
            "{uri}"
        );
        assert!(
            uri.contains("secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"),
            "{uri}"
        );
        assert!(!format!("{secret:?}").contains("GEZ"));
    }
}
