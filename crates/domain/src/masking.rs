//! Secrets and account identifiers as types that cannot leak.
//!
//! [`Secret`] never prints its content. [`MaskedValue`] is the one masking rule, applied
//! wherever an account identifier leaves the service: the first three characters stay visible,
//! followed by a space and `***`; values of three characters or fewer are fully starred.

use std::fmt;

/// A value that must never reach a log, an error or a response. `Debug` and `Display` print
/// `[REDACTED]`; the content is reachable only through [`Secret::expose`], which makes every
/// use greppable.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a secret value.
    pub const fn new(value: T) -> Self {
        Self(value)
    }

    /// The secret itself. Call only where the raw value is needed (signing, encrypting).
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([REDACTED])")
    }
}

impl<T> fmt::Display for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[REDACTED]")
    }
}

/// An account identifier after masking: safe to print, log and send.
#[derive(Clone, PartialEq, Eq)]
pub struct MaskedValue(String);

impl MaskedValue {
    /// How many leading characters stay visible.
    pub const VISIBLE: usize = 3;

    /// Masks `raw` by the service's one masking rule. Works on characters, never bytes.
    pub fn mask(raw: &str) -> Self {
        let count = raw.chars().count();
        if count <= Self::VISIBLE {
            return Self("*".repeat(count.max(1)));
        }
        let visible: String = raw.chars().take(Self::VISIBLE).collect();
        Self(format!("{visible} ***"))
    }

    /// The masked text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MaskedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for MaskedValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MaskedValue({:?})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_like_the_documented_examples() {
        assert_eq!(MaskedValue::mask("012002").as_str(), "012 ***");
        assert_eq!(MaskedValue::mask("111222333").as_str(), "111 ***");
        assert_eq!(
            MaskedValue::mask("DE89370400440532013000").as_str(),
            "DE8 ***"
        );
    }

    #[test]
    fn short_values_are_fully_starred() {
        assert_eq!(MaskedValue::mask("123").as_str(), "***");
        assert_eq!(MaskedValue::mask("12").as_str(), "**");
        assert_eq!(MaskedValue::mask("").as_str(), "*");
    }

    #[test]
    fn masks_by_characters_not_bytes() {
        assert_eq!(MaskedValue::mask("ééééé").as_str(), "ééé ***");
        assert_eq!(MaskedValue::mask("🦀🦀🦀🦀").as_str(), "🦀🦀🦀 ***");
    }

    proptest::proptest! {
        /// Whatever the value, the masked form shows at most its first three characters: it is
        /// those characters followed by ` ***`, or only stars.
        #[test]
        fn masking_never_shows_more_than_three_leading_characters(raw in "\\PC{0,40}") {
            let masked = MaskedValue::mask(&raw);
            let shown = masked.as_str();
            let count = raw.chars().count();
            if count <= MaskedValue::VISIBLE {
                proptest::prop_assert!(shown.chars().all(|c| c == '*'));
            } else {
                let prefix: String = raw.chars().take(MaskedValue::VISIBLE).collect();
                proptest::prop_assert_eq!(shown, format!("{prefix} ***"));
            }
            // Nothing of the value beyond the third character is derivable from the output.
            let rest: String = raw.chars().skip(MaskedValue::VISIBLE).collect();
            if rest.chars().count() > 4 {
                proptest::prop_assert!(!shown.contains(&rest));
            }
        }
    }

    #[test]
    fn secrets_never_print() {
        let secret = Secret::new(String::from("sk_live_very_secret"));
        assert!(!format!("{secret:?}").contains("very_secret"));
        assert!(!format!("{secret}").contains("very_secret"));
        assert_eq!(secret.expose(), "sk_live_very_secret");
    }
}
