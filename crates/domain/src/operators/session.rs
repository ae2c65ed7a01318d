//! Console sessions: the token in the cookie, its hash kept at rest, the idle and absolute
//! timeouts, and the CSRF token forms carry.
//!
//! The cookie holds 256 random bits (base64url). The store keeps only their SHA-256
//! ([`TokenHash`]), so a copy of the database signs nobody in. A CSRF token is an HMAC of a
//! fixed label under a secret the browser holds in an HttpOnly cookie (the session token, or
//! before sign-in a random pre-session secret): a page of this origin can put it in a form, a
//! page of another origin can neither read the cookie nor compute the token.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

use crate::ids::OperatorId;
use crate::masking::Secret;
use crate::ports::IdGenerator;

/// Length of a token's text: 32 bytes in unpadded base64url.
const TOKEN_CHARS: usize = 43;

/// What CSRF tokens are an HMAC of.
const CSRF_LABEL: &[u8] = b"payoutd console csrf v1";

/// A bearer secret held by the browser: the session token, or the pre-session secret of the
/// sign-in and enrolment forms. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct BrowserSecret(Secret<String>);

impl std::fmt::Debug for BrowserSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BrowserSecret([REDACTED])")
    }
}

impl BrowserSecret {
    /// 256 fresh random bits.
    pub fn generate(ids: &dyn IdGenerator) -> Self {
        Self(Secret::new(URL_SAFE_NO_PAD.encode(ids.random_bytes())))
    }

    /// A token as a cookie carries it back; `None` unless it has a token's shape.
    pub fn parse(raw: &str) -> Option<Self> {
        let well_formed = raw.len() == TOKEN_CHARS
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        well_formed.then(|| Self(Secret::new(raw.to_owned())))
    }

    /// The text for the cookie.
    pub fn expose(&self) -> &str {
        self.0.expose()
    }

    /// What the store keeps of a session token.
    pub fn key(&self) -> TokenHash {
        TokenHash(Sha256::digest(self.0.expose().as_bytes()).into())
    }

    /// The CSRF token of forms shown to the holder of this secret.
    pub fn csrf_token(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.csrf_mac().finalize().into_bytes())
    }

    /// Whether `presented` is this secret's CSRF token (compared in constant time).
    pub fn csrf_matches(&self, presented: &str) -> bool {
        let Ok(presented) = URL_SAFE_NO_PAD.decode(presented.trim()) else {
            return false;
        };
        self.csrf_mac().verify_slice(&presented).is_ok()
    }

    fn csrf_mac(&self) -> hmac::Hmac<Sha256> {
        // The HMAC key is a hash of the secret under its own label (not the session key the
        // store keeps), zero-padded to the block size as HMAC pads any shorter key, so
        // building it cannot fail.
        let mut key = [0u8; 64];
        key[..32].copy_from_slice(&Sha256::digest(
            [b"csrf:", self.0.expose().as_bytes()].concat(),
        ));
        let mut mac = <hmac::Hmac<Sha256> as KeyInit>::new(&key.into());
        mac.update(CSRF_LABEL);
        mac
    }
}

/// The SHA-256 of a session token: the session's key at rest.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenHash(pub [u8; 32]);

impl std::fmt::Debug for TokenHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A prefix identifies it in a log without being usable.
        write!(f, "TokenHash({}…)", hex::encode(&self.0[..4]))
    }
}

/// A signed-in operator's session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The token's hash.
    pub key: TokenHash,
    /// Whose it is.
    pub operator_id: OperatorId,
    /// When it was created (sign-in).
    pub created_at: DateTime<Utc>,
    /// When it was last used (updated at most once a minute).
    pub last_seen_at: DateTime<Utc>,
    /// When it ends whatever happens (created + the absolute timeout).
    pub expires_at: DateTime<Utc>,
    /// The client's address at sign-in.
    pub client_address: Option<String>,
}

/// How long sessions last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPolicy {
    /// Unused for this long, a session ends.
    pub idle: Duration,
    /// A session ends this long after sign-in, however busy.
    pub absolute: Duration,
}

impl Default for SessionPolicy {
    /// 30 minutes idle, 12 hours absolute.
    fn default() -> Self {
        Self {
            idle: Duration::minutes(30),
            absolute: Duration::hours(12),
        }
    }
}

/// Why a policy is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionPolicyError {
    /// The idle timeout is outside 1 minute ..= 24 hours.
    #[error("the idle timeout must be from 1 minute to 24 hours")]
    Idle,
    /// The absolute timeout is shorter than the idle one or longer than 7 days.
    #[error("the absolute timeout must be at least the idle timeout and at most 7 days")]
    Absolute,
}

/// What to do with a session presented at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionVerdict {
    /// It is valid; `touch` says whether to record this use (its last use is over a minute
    /// old), so a busy session costs one write a minute, not one per request.
    Active {
        /// Record the use.
        touch: bool,
    },
    /// Unused for longer than the idle timeout.
    Idle,
    /// Past its absolute end.
    Expired,
}

/// How stale `last_seen_at` may get before a use is recorded.
pub const TOUCH_EVERY: Duration = Duration::minutes(1);

impl SessionPolicy {
    /// A policy with these timeouts.
    ///
    /// # Errors
    /// Idle outside 1 minute ..= 24 hours; absolute shorter than idle or over 7 days.
    pub fn new(idle: Duration, absolute: Duration) -> Result<Self, SessionPolicyError> {
        if idle < Duration::minutes(1) || idle > Duration::hours(24) {
            return Err(SessionPolicyError::Idle);
        }
        if absolute < idle || absolute > Duration::days(7) {
            return Err(SessionPolicyError::Absolute);
        }
        Ok(Self { idle, absolute })
    }

    /// A new session of `operator_id` for the holder of `token`, signed in at `now`.
    pub fn start(
        &self,
        token: &BrowserSecret,
        operator_id: OperatorId,
        client_address: Option<String>,
        now: DateTime<Utc>,
    ) -> Session {
        Session {
            key: token.key(),
            operator_id,
            created_at: now,
            last_seen_at: now,
            expires_at: now + self.absolute,
            client_address,
        }
    }

    /// Judges `session` at `now`.
    pub fn judge(&self, session: &Session, now: DateTime<Utc>) -> SessionVerdict {
        if now >= session.expires_at {
            SessionVerdict::Expired
        } else if now - session.last_seen_at >= self.idle {
            SessionVerdict::Idle
        } else {
            SessionVerdict::Active {
                touch: now - session.last_seen_at >= TOUCH_EVERY,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::MockIdGenerator;

    fn ids(byte: u8) -> MockIdGenerator {
        let mut ids = MockIdGenerator::new();
        ids.expect_random_bytes().return_const([byte; 32]);
        ids
    }

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default() + Duration::minutes(minutes)
    }

    #[test]
    fn tokens_are_256_bits_and_only_their_hash_is_kept() {
        let token = BrowserSecret::generate(&ids(7));
        assert_eq!(token.expose().len(), TOKEN_CHARS);
        assert_eq!(BrowserSecret::parse(token.expose()), Some(token.clone()));
        let key = token.key();
        assert_eq!(
            key.0,
            <[u8; 32]>::from(Sha256::digest(token.expose().as_bytes()))
        );
        assert!(!format!("{key:?}{token:?}").contains(token.expose()));
    }

    #[test]
    fn only_well_formed_tokens_parse() {
        let good = "A".repeat(TOKEN_CHARS);
        assert!(BrowserSecret::parse(&good).is_some());
        for bad in [
            String::new(),
            "A".repeat(TOKEN_CHARS - 1),
            "A".repeat(TOKEN_CHARS + 1),
            format!("{}=", "A".repeat(TOKEN_CHARS - 1)),
            format!("{}+", "A".repeat(TOKEN_CHARS - 1)),
            format!("{};", "A".repeat(TOKEN_CHARS - 1)),
        ] {
            assert!(BrowserSecret::parse(&bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_csrf_token_belongs_to_its_secret() {
        let mine = BrowserSecret::generate(&ids(1));
        let theirs = BrowserSecret::generate(&ids(2));
        let token = mine.csrf_token();
        assert!(mine.csrf_matches(&token));
        assert!(!theirs.csrf_matches(&token));
        assert!(!mine.csrf_matches(""));
        assert!(!mine.csrf_matches("not base64!"));
        assert!(!mine.csrf_matches(&theirs.csrf_token()));
        // Neither the secret nor its hash is the token.
        assert_ne!(token, mine.expose());
        assert_ne!(token, URL_SAFE_NO_PAD.encode(mine.key().0));
    }

    #[test]
    fn sessions_end_when_idle_or_at_their_absolute_end() {
        let policy = SessionPolicy::default();
        let token = BrowserSecret::generate(&ids(3));
        let mut session = policy.start(
            &token,
            OperatorId::from_uuid(uuid::Uuid::nil()),
            None,
            at(0),
        );
        assert_eq!(session.expires_at, at(12 * 60));
        assert_eq!(
            policy.judge(&session, at(0)),
            SessionVerdict::Active { touch: false }
        );
        assert_eq!(
            policy.judge(&session, at(1)),
            SessionVerdict::Active { touch: true }
        );
        assert_eq!(
            policy.judge(&session, at(29)),
            SessionVerdict::Active { touch: true }
        );
        assert_eq!(policy.judge(&session, at(30)), SessionVerdict::Idle);
        // Kept busy, it still ends after 12 hours.
        session.last_seen_at = at(12 * 60 - 1);
        assert_eq!(
            policy.judge(&session, at(12 * 60 - 1)),
            SessionVerdict::Active { touch: false }
        );
        assert_eq!(policy.judge(&session, at(12 * 60)), SessionVerdict::Expired);
    }

    #[test]
    fn policies_are_bounded() {
        assert!(SessionPolicy::new(Duration::minutes(5), Duration::hours(1)).is_ok());
        assert_eq!(
            SessionPolicy::new(Duration::seconds(30), Duration::hours(1)),
            Err(SessionPolicyError::Idle)
        );
        assert_eq!(
            SessionPolicy::new(Duration::hours(2), Duration::hours(1)),
            Err(SessionPolicyError::Absolute)
        );
        assert_eq!(
            SessionPolicy::new(Duration::hours(2), Duration::days(8)),
            Err(SessionPolicyError::Absolute)
        );
    }
}
