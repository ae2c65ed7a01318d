//! Secrets and account identifiers as types that cannot leak.
//!
//! [`Secret`] never prints its content. [`MaskedValue`] is the one masking rule, applied
//! wherever an account identifier leaves the service: the first characters stay visible, at
//! most three and never more than half of the value, followed by a space and `***`; values of
//! three characters or fewer are fully starred. A 9-digit account number shows `123 ***`, a
//! 5-digit one `12 ***`, a 4-digit one `12 ***`.

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
    /// The most leading characters that stay visible.
    pub const VISIBLE: usize = 3;

    /// How many leading characters of a value of `count` characters stay visible: at most
    /// [`Self::VISIBLE`] and at most half of them (rounded down), none for a value of
    /// [`Self::VISIBLE`] characters or fewer.
    pub const fn visible(count: usize) -> usize {
        if count <= Self::VISIBLE {
            0
        } else if count / 2 < Self::VISIBLE {
            count / 2
        } else {
            Self::VISIBLE
        }
    }

    /// Masks `raw` by the service's one masking rule. Works on characters, never bytes.
    pub fn mask(raw: &str) -> Self {
        let count = raw.chars().count();
        let visible = Self::visible(count);
        if visible == 0 {
            return Self("*".repeat(count.max(1)));
        }
        let shown: String = raw.chars().take(visible).collect();
        Self(format!("{shown} ***"))
    }

    /// How many characters of the value the masked text shows.
    pub fn shown(&self) -> usize {
        self.0
            .strip_suffix(" ***")
            .map_or(0, |shown| shown.chars().count())
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
    fn never_more_than_half_is_shown() {
        for (raw, masked) in [
            ("1234", "12 ***"),
            ("12345", "12 ***"),
            ("123456", "123 ***"),
            ("1234567", "123 ***"),
        ] {
            assert_eq!(MaskedValue::mask(raw).as_str(), masked, "{raw}");
        }
        for count in 0..40 {
            let shown = MaskedValue::visible(count);
            assert!(
                shown <= MaskedValue::VISIBLE && 2 * shown <= count,
                "{count}: {shown}"
            );
        }
    }

    #[test]
    fn masks_by_characters_not_bytes() {
        assert_eq!(MaskedValue::mask("éééééé").as_str(), "ééé ***");
        assert_eq!(MaskedValue::mask("🦀🦀🦀🦀").as_str(), "🦀🦀 ***");
    }

    proptest::proptest! {
        /// Whatever the value, the masked form shows at most its first three characters and
        /// at most half of them: it is those characters followed by ` ***`, or only stars.
        #[test]
        fn masking_never_shows_more_than_three_leading_characters_nor_half(raw in "\\PC{0,40}") {
            let masked = MaskedValue::mask(&raw);
            let shown = masked.as_str();
            let count = raw.chars().count();
            let visible = MaskedValue::visible(count);
            proptest::prop_assert!(visible <= MaskedValue::VISIBLE && 2 * visible <= count);
            proptest::prop_assert_eq!(masked.shown(), visible);
            if visible == 0 {
                proptest::prop_assert!(shown.chars().all(|c| c == '*'));
            } else {
                let prefix: String = raw.chars().take(visible).collect();
                proptest::prop_assert_eq!(shown, format!("{prefix} ***"));
            }
            // Nothing of the value beyond the shown characters is derivable from the output.
            let rest: String = raw.chars().skip(visible).collect();
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
