//! The IB4B character set and the clean-up of free-text fields.

/// The symbols BNZ allows in alphanumeric fields, besides `a`–`z`, `A`–`Z`, `0`–`9` and the
/// space (the "A" field type of BNZ's IB4B file format guide). The comma is not among them: it
/// separates the fields.
pub const ALLOWED_SYMBOLS: &str = "-'&/#?:_.";

/// What replaces a character that has no place in an IB4B text field (and no ASCII letters it
/// folds to): a space, collapsed with its neighbours.
pub const SUBSTITUTE: char = ' ';

/// Whether `c` may appear in an IB4B alphanumeric field.
#[must_use]
pub fn is_allowed_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == ' ' || ALLOWED_SYMBOLS.contains(c)
}

/// What the writer makes of a free-text value (names, particulars, codes, references): accented
/// Latin letters folded to their ASCII letters (`é` → `e`, `ß` → `ss`, `Æ` → `AE`, case kept),
/// typographic quotes and dashes to `'` and `-`, the double quote to `'`, every other character
/// outside the IB4B set (the comma, symbols such as `@` or `%`, control characters, Cyrillic,
/// Greek, CJK...) replaced by [`SUBSTITUTE`], runs of spaces collapsed to one, the
/// ends trimmed, and the result cut to `width` characters (trailing spaces dropped again).
#[must_use]
pub fn clean_text(value: &str, width: usize) -> String {
    let mut out = String::with_capacity(value.len());
    let push = |s: &str, out: &mut String| {
        for c in s.chars() {
            if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
                continue;
            }
            out.push(c);
        }
    };
    for c in value.chars() {
        if is_allowed_char(c) {
            let mut buf = [0u8; 4];
            push(c.encode_utf8(&mut buf), &mut out);
        } else if let Some(folded) = fold(c) {
            push(&folded, &mut out);
        } else {
            let mut buf = [0u8; 4];
            push(SUBSTITUTE.encode_utf8(&mut buf), &mut out);
        }
    }
    // Everything pushed is ASCII, so a byte length is a character count.
    out.truncate(width);
    out.truncate(out.trim_end().len());
    out
}

/// The ASCII an accented Latin letter stands for, in its case
/// ([`crate::text::latin_letter_keeping_case`]), or a typographic punctuation mark.
fn fold(c: char) -> Option<std::borrow::Cow<'static, str>> {
    use std::borrow::Cow;
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{2032}' | '`' | '´' => Some(Cow::Borrowed("'")),
        '"' | '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{2033}' => Some(Cow::Borrowed("'")),
        c if crate::text::is_dash(c) => Some(Cow::Borrowed("-")),
        c => crate::text::latin_letter_keeping_case(c),
    }
}

pub(crate) use crate::text::is_digits;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_table() {
        let cases: &[(&str, usize, &str)] = &[
            // Accents fold, case is kept.
            ("José Müller", 20, "Jose Muller"),
            ("Straße", 20, "Strasse"),
            ("Æsir Œuvre", 20, "AEsir OEuvre"),
            ("Łódź Žižek", 20, "Lodz Zizek"),
            // Apostrophes and ampersands are in BNZ's set; typographic ones fold.
            ("O'Brien & Co", 20, "O'Brien & Co"),
            ("O’Brien – Co", 20, "O'Brien - Co"),
            ("say \"hi\"", 20, "say 'hi'"),
            // Commas separate fields: never inside one.
            ("Smith, John", 20, "Smith John"),
            // Symbols outside the set, control characters.
            ("a@b%c;d", 20, "a b c d"),
            ("tab\there\r\nnext", 20, "tab here next"),
            // Non-Latin letters become spaces, collapsed.
            ("Иван Petrov", 20, "Petrov"),
            ("王 Wang 伟", 20, "Wang"),
            ("Ωmega", 20, "mega"),
            ("日本", 20, ""),
            // Spaces collapse and the ends are trimmed.
            ("  a   b  ", 20, "a b"),
            // Allowed symbols pass.
            ("INV-1/2#3?4:5_6.7", 20, "INV-1/2#3?4:5_6.7"),
        ];
        for (input, width, expected) in cases {
            assert_eq!(clean_text(input, *width), *expected, "{input:?}");
        }
    }

    #[test]
    fn clean_text_truncates_to_the_width() {
        let cases: &[(&str, usize, &str)] = &[
            ("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 12, "ABCDEFGHIJKL"),
            // Folding lengthens a value; the cut comes after it.
            ("ßßßßßßß", 12, "ssssssssssss"),
            // A cut that ends on a space leaves no trailing space.
            ("Invoice 1234 5", 13, "Invoice 1234"),
            ("Zoë Ørsted-Ångström", 12, "Zoe Orsted-A"),
            ("", 12, ""),
        ];
        for (input, width, expected) in cases {
            assert_eq!(clean_text(input, *width), *expected, "{input:?}");
        }
    }

    #[test]
    fn allowed_characters() {
        for c in "azAZ09 -'&/#?:_.".chars() {
            assert!(is_allowed_char(c), "{c:?}");
        }
        for c in ",\"@%;!~é\n\r\tЖ".chars() {
            assert!(!is_allowed_char(c), "{c:?}");
        }
    }
}
