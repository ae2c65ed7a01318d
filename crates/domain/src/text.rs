//! Unicode rules shared by free-text request fields: which characters are refused outright, and
//! the compatibility form (NFKC) that field rules are checked against.
//!
//! A field value is refused when it holds a character that is invisible or changes how text
//! around it is shown or split: control characters (general category Cc, which includes CR, LF
//! and TAB inside the value), format characters (Cf: bidirectional overrides and isolates, zero
//! width spaces and joiners, the byte order mark, …), line and paragraph separators (Zl, Zp), and
//! the short list [`INVISIBLE`] of characters that draw nothing although their category is a
//! letter, symbol or mark (Hangul fillers, the braille blank, variation selectors, …).
//!
//! Field rules (letters only, no dot, …) are checked on the text as sent **and** on its NFKC
//! form, so a full-width full stop (U+FF0E) or one-dot leader (U+2024) counts as a dot while a
//! value is still stored as sent.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Characters that draw nothing but whose general category is not Cc, Cf, Zl or Zp, so the
/// category test alone would let them through. Each is a closed range of code points.
pub const INVISIBLE: &[(char, char)] = &[
    // COMBINING GRAPHEME JOINER (Mn).
    ('\u{034F}', '\u{034F}'),
    // HANGUL CHOSEONG FILLER and HANGUL JUNGSEONG FILLER (Lo).
    ('\u{115F}', '\u{1160}'),
    // KHMER VOWEL INHERENT AQ and AA (Mn).
    ('\u{17B4}', '\u{17B5}'),
    // MONGOLIAN FREE VARIATION SELECTORS ONE to THREE (Mn); U+180E is Cf.
    ('\u{180B}', '\u{180D}'),
    // MONGOLIAN FREE VARIATION SELECTOR FOUR (Mn).
    ('\u{180F}', '\u{180F}'),
    // BRAILLE PATTERN BLANK (So).
    ('\u{2800}', '\u{2800}'),
    // HANGUL FILLER (Lo).
    ('\u{3164}', '\u{3164}'),
    // VARIATION SELECTOR-1 to -16 (Mn).
    ('\u{FE00}', '\u{FE0F}'),
    // HALFWIDTH HANGUL FILLER (Lo).
    ('\u{FFA0}', '\u{FFA0}'),
    // VARIATION SELECTOR-17 to -256 (Mn).
    ('\u{E0100}', '\u{E01EF}'),
];

/// True when `c` may not appear in a text field: a control, format, line or paragraph separator
/// character, or one of the [`INVISIBLE`] characters.
pub fn is_refused(c: char) -> bool {
    matches!(
        c.general_category(),
        GeneralCategory::Control
            | GeneralCategory::Format
            | GeneralCategory::LineSeparator
            | GeneralCategory::ParagraphSeparator
    ) || INVISIBLE
        .iter()
        .any(|(first, last)| (*first..=*last).contains(&c))
}

/// True when `text` holds no refused character (see [`is_refused`]), neither as sent nor in its
/// NFKC form.
pub fn is_plain(text: &str) -> bool {
    !text.chars().any(is_refused) && !text.nfkc().any(is_refused)
}

/// A text field held a control, format or invisible character (see [`is_refused`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("text holds a control, format or invisible character")]
pub struct RefusedCharacter;

/// `text` as an owned string when it [`is_plain`], for free-text fields with no other rule.
pub fn plain_text(text: &str) -> Result<String, RefusedCharacter> {
    if is_plain(text) {
        Ok(text.to_owned())
    } else {
        Err(RefusedCharacter)
    }
}

/// The NFKC (compatibility) form of `text`: full-width letters become ASCII, `U+FF0E` and
/// `U+2024` become `.`, decomposed accents are composed.
pub fn nfkc(text: &str) -> String {
    text.nfkc().collect()
}

/// True when `allowed` holds for every character of `text` and of its NFKC form.
pub fn all_chars_in_both_forms(text: &str, allowed: impl Fn(char) -> bool) -> bool {
    text.chars().all(&allowed) && text.nfkc().all(&allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_controls_formats_separators_and_invisible_fillers() {
        for c in [
            '\u{0000}',
            '\t',
            '\n',
            '\r',
            '\u{007F}',
            '\u{0085}',
            '\u{200B}',
            '\u{200C}',
            '\u{200D}',
            '\u{200E}',
            '\u{202A}',
            '\u{202E}',
            '\u{2066}',
            '\u{2069}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{180E}',
            '\u{2028}',
            '\u{2029}',
            '\u{3164}',
            '\u{115F}',
            '\u{1160}',
            '\u{FFA0}',
            '\u{2800}',
            '\u{034F}',
            '\u{FE0F}',
            '\u{E0100}',
            '\u{E0041}',
        ] {
            assert!(is_refused(c), "U+{:04X}", u32::from(c));
            assert!(!is_plain(&format!("a{c}b")), "U+{:04X}", u32::from(c));
        }
    }

    #[test]
    fn accepts_letters_marks_spaces_and_symbols_of_any_script() {
        for text in [
            "Jane Doe",
            "Jose\u{0301}",
            "山田 太郎",
            "محمد",
            "Ｊａｎｅ",
            "a.b/c 🙂",
            "\u{00A0}\u{3000}",
            "한국",
        ] {
            assert!(is_plain(text), "{text}");
        }
    }

    #[test]
    fn nfkc_maps_compatibility_dots_and_full_width_letters() {
        assert_eq!(nfkc("1\u{FF0E}2\u{2024}3"), "1.2.3");
        assert_eq!(nfkc("Ｊａｎｅ"), "Jane");
        assert_eq!(nfkc("Jose\u{0301}"), "José");
        assert!(!all_chars_in_both_forms("St\u{FF0E}", |c| c != '.'));
        assert!(all_chars_in_both_forms("St", |c| c != '.'));
    }
}
