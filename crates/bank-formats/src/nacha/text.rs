//! Characters and small field helpers shared by the writer and the parser: the character set the
//! writer produces, the clean-up of free-text fields, and the ABA routing number check digit.

/// The symbols the writer lets through in alphanumeric fields, besides `A`–`Z`, `0`–`9` and the
/// space.
///
/// NACHA allows any ASCII character above `0x1F`. The writer is narrower: upper-case letters,
/// digits, the space and these symbols. It leaves out lower case (many banks refuse it) and
/// `[ \ ] ^ ` `` ` `` ` { | } ~`, whose EBCDIC code points differ between the code pages banks
/// translate files into.
pub const ALLOWED_SYMBOLS: &str = "!\"#$%&'()*+,-./:;<=>?@_";

/// Whether the writer lets `c` through unchanged in an alphanumeric field.
#[must_use]
pub fn is_allowed_char(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == ' ' || ALLOWED_SYMBOLS.contains(c)
}

/// What the writer makes of a free-text value (names, descriptions, discretionary data,
/// payment-related information): trimmed, upper-cased, accented Latin letters folded to their
/// base letters (`é` → `E`, `ß` → `SS`, `Æ` → `AE`), typographic quotes and dashes to their
/// ASCII forms, any other character outside the allowed set replaced by a space, and the result
/// cut to `width` characters (trailing spaces dropped). The writer then pads it to the field.
#[must_use]
pub fn clean_text(value: &str, width: usize) -> String {
    let mut out = String::with_capacity(width);
    for c in value.trim().chars() {
        let upper = c.to_ascii_uppercase();
        if is_allowed_char(upper) {
            out.push(upper);
        } else if let Some(folded) = fold(c) {
            out.push_str(folded);
        } else {
            out.push(' ');
        }
    }
    // Everything pushed is ASCII, so a byte length is a character count.
    out.truncate(width);
    out.truncate(out.trim_end().len());
    out
}

/// The ASCII an accented Latin letter ([`crate::text::latin_letter`]) or a typographic
/// punctuation mark stands for, upper case.
fn fold(c: char) -> Option<&'static str> {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{2032}' => Some("'"),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{2033}' => Some("\""),
        c if crate::text::is_dash(c) => Some("-"),
        c => crate::text::latin_letter(c),
    }
}

/// The check digit of an ABA routing number's first eight digits: weights 3, 7, 1, 3, 7, 1, 3, 7,
/// and the digit that brings the weighted sum to a multiple of 10. `None` unless `first8` is
/// exactly eight ASCII digits.
#[must_use]
pub fn routing_check_digit(first8: &str) -> Option<u8> {
    const WEIGHTS: [u32; 8] = [3, 7, 1, 3, 7, 1, 3, 7];
    if first8.len() != 8 || !is_digits(first8) {
        return None;
    }
    let sum: u32 = first8
        .bytes()
        .zip(WEIGHTS)
        .map(|(b, w)| u32::from(b - b'0') * w)
        .sum();
    u8::try_from((10 - sum % 10) % 10).ok()
}

/// Whether `value` is a nine-digit ABA routing number whose ninth digit is its check digit.
#[must_use]
pub fn is_valid_routing_number(value: &str) -> bool {
    let (Some(first8), Some(check)) = (value.get(..8), value.get(8..)) else {
        return false;
    };
    value.len() == 9
        && check.len() == 1
        && routing_check_digit(first8)
            .is_some_and(|d| check.as_bytes().first() == Some(&(b'0' + d)))
}

/// Whether `value` is non-empty and only ASCII digits.
pub(crate) fn is_digits(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_upper_cases_folds_and_replaces() {
        assert_eq!(clean_text("José Müller", 22), "JOSE MULLER");
        assert_eq!(clean_text("Straße", 22), "STRASSE");
        assert_eq!(clean_text("Æsir Œuvre", 22), "AESIR OEUVRE");
        assert_eq!(clean_text("O’Brien – Co", 22), "O'BRIEN - CO");
        assert_eq!(clean_text("a~b{c}日本", 22), "A B C");
        assert_eq!(clean_text("tab\there", 22), "TAB HERE");
        assert_eq!(clean_text("  padded  ", 22), "PADDED");
    }

    #[test]
    fn clean_text_truncates_to_the_width() {
        assert_eq!(clean_text("ABCDEFGHIJ", 4), "ABCD");
        // Folding can lengthen a value; the cut comes after it.
        assert_eq!(clean_text("ßßß", 4), "SSSS");
        // A cut that ends on a space leaves no trailing space.
        assert_eq!(clean_text("AB CD", 3), "AB");
    }

    #[test]
    fn allowed_characters() {
        for c in "AZ09 &-./@_".chars() {
            assert!(is_allowed_char(c), "{c:?}");
        }
        for c in "az~{}|[]\\^`é\n".chars() {
            assert!(!is_allowed_char(c), "{c:?}");
        }
    }

    #[test]
    fn routing_numbers() {
        // Published routing numbers (Federal Reserve Bank of New York, JPMorgan Chase NY).
        assert!(is_valid_routing_number("021000021"));
        assert!(is_valid_routing_number("011000015"));
        assert!(is_valid_routing_number("231380104"));
        assert_eq!(routing_check_digit("23138010"), Some(4));
        assert!(!is_valid_routing_number("021000022"));
        assert!(!is_valid_routing_number("02100002"));
        assert!(!is_valid_routing_number("0210000211"));
        assert!(!is_valid_routing_number("02100002a"));
        assert!(!is_valid_routing_number("０２１000021"));
        assert_eq!(routing_check_digit("2313801"), None);
    }
}
