//! Operator passwords: the rule a new one must meet, and the hashing port (argon2id in the
//! application; slow on purpose, so it runs off the request threads).

use async_trait::async_trait;

use crate::error::PortError;
use crate::masking::Secret;

/// The shortest password accepted, in characters (NIST SP 800-63B asks for at least 8 and
/// no composition rules; a console that moves money asks for more).
pub const MIN_PASSWORD_CHARS: usize = 12;

/// The longest password accepted, in characters (bounds the hashing work).
pub const MAX_PASSWORD_CHARS: usize = 256;

/// A password an operator chose, checked against the rule.
#[derive(Debug, Clone)]
pub struct NewPassword(Secret<String>);

/// Why a new password is refused (the message is shown on the enrolment page).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PasswordError {
    /// Too short.
    #[error("the password must be at least 12 characters long")]
    TooShort,
    /// Too long.
    #[error("the password must be at most 256 characters long")]
    TooLong,
    /// The two entries differ.
    #[error("the two passwords differ")]
    Mismatch,
    /// It is the operator's e-mail address or one character repeated.
    #[error("the password is too easy to guess (your e-mail address, or one character repeated)")]
    Guessable,
}

impl NewPassword {
    /// Checks `password` (entered twice, `confirmation`) for the operator `email`.
    ///
    /// # Errors
    /// See [`PasswordError`].
    pub fn parse(password: &str, confirmation: &str, email: &str) -> Result<Self, PasswordError> {
        if password != confirmation {
            return Err(PasswordError::Mismatch);
        }
        let count = password.chars().count();
        if count < MIN_PASSWORD_CHARS {
            return Err(PasswordError::TooShort);
        }
        if count > MAX_PASSWORD_CHARS {
            return Err(PasswordError::TooLong);
        }
        let mut chars = password.chars();
        let first = chars.next();
        if password.eq_ignore_ascii_case(email) || chars.all(|c| Some(c) == first) {
            return Err(PasswordError::Guessable);
        }
        Ok(Self(Secret::new(password.to_owned())))
    }

    /// The password.
    pub fn secret(&self) -> &Secret<String> {
        &self.0
    }
}

/// A password hash in the PHC string format (`$argon2id$v=19$…`). Not a secret in itself,
/// but never shown.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordHash(pub String);

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordHash(..)")
    }
}

/// Hashes and checks passwords.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PasswordHasher: Send + Sync {
    /// A new salted hash of `password`.
    ///
    /// # Errors
    /// `PortError::Unknown` when hashing fails.
    async fn hash(&self, password: &Secret<String>) -> Result<PasswordHash, PortError>;

    /// Whether `password` matches `hash`. With `hash` `None` (no such operator) it does the
    /// same work against a fixed hash and answers `false`, so the time taken does not tell
    /// whether an account exists.
    ///
    /// # Errors
    /// `PortError::Unknown` when the work cannot be run; a malformed stored hash is `false`.
    async fn verify<'a>(
        &self,
        password: &Secret<String>,
        hash: Option<&'a PasswordHash>,
    ) -> Result<bool, PortError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        let email = "ann@example.com";
        assert!(
            NewPassword::parse("correct horse battery", "correct horse battery", email).is_ok()
        );
        assert!(NewPassword::parse("ünïcödé-pässwörd", "ünïcödé-pässwörd", email).is_ok());
        let check = |p: &str| NewPassword::parse(p, p, email).map(drop);
        assert_eq!(check("short"), Err(PasswordError::TooShort));
        // Characters, not bytes: 11 two-byte characters are too short.
        assert_eq!(check(&"é".repeat(11)), Err(PasswordError::TooShort));
        assert_eq!(check(&"x".repeat(257)), Err(PasswordError::TooLong));
        assert_eq!(check(&"a".repeat(20)), Err(PasswordError::Guessable));
        assert_eq!(check("ANN@example.com"), Err(PasswordError::Guessable));
        assert_eq!(
            NewPassword::parse("correct horse battery", "correct horse batterz", email).map(drop),
            Err(PasswordError::Mismatch)
        );
    }

    #[test]
    fn nothing_prints_a_password_or_hash() {
        let password =
            NewPassword::parse("correct horse battery", "correct horse battery", "a@b.co");
        let hash = PasswordHash("$argon2id$v=19$secret".to_owned());
        let printed = format!("{password:?} {hash:?}");
        assert!(
            !printed.contains("horse") && !printed.contains("argon2id"),
            "{printed}"
        );
    }
}
