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

pub(crate) use crate::text::is_digits;

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
}
