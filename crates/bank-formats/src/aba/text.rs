//! The character set the writer produces and the clean-up of free-text fields.

/// The symbols the writer lets through in free-text fields, besides `A`–`Z`, `0`–`9` and the
/// space.
///
/// The direct entry character set is wider (it is the BECS subset of EBCDIC, lower case and
/// more symbols included), but banks differ on which symbols they pass on to the payee's
/// statement. The writer keeps to upper-case letters, digits, the space and these symbols,
/// which every published bank guide accepts. The apostrophe stays (names such as O'Brien);
/// the ampersand is written as the word `AND` ([`clean_text`]).
pub const ALLOWED_SYMBOLS: &str = "'(),-./";

/// Whether the writer writes `c` unchanged in a free-text field.
#[must_use]
pub fn is_allowed_char(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == ' ' || ALLOWED_SYMBOLS.contains(c)
}

/// What the writer makes of a free-text value (title of account, lodgement reference, remitter
/// name, user name, description), in this order:
///
/// 1. lower-case ASCII letters are upper-cased;
/// 2. accented Latin letters are folded to their base letters (`é` → `E`, `ß` → `SS`,
///    `Æ` → `AE`, `Ø` → `O`, `Þ` → `TH`), typographic quotes to `'` and dashes to `-`;
/// 3. `&` becomes ` AND `;
/// 4. any other character outside [`is_allowed_char`] (other symbols, control characters,
///    non-Latin letters such as Cyrillic or CJK) becomes a space;
/// 5. runs of spaces collapse to one and leading and trailing spaces go;
/// 6. the result is cut to `width` characters, and a space left at the end by the cut goes.
///
/// Everything it returns is ASCII, so its length in bytes is its length in characters.
#[must_use]
pub fn clean_text(value: &str, width: usize) -> String {
    let mut mapped = String::with_capacity(value.len());
    for c in value.chars() {
        let upper = c.to_ascii_uppercase();
        if is_allowed_char(upper) {
            mapped.push(upper);
        } else if c == '&' {
            mapped.push_str(" AND ");
        } else if let Some(folded) = fold(c) {
            mapped.push_str(folded);
        } else {
            mapped.push(' ');
        }
    }
    crate::text::words_within(&mapped, width)
}

/// The ASCII an accented Latin letter ([`crate::text::latin_letter`]) or a typographic
/// punctuation mark stands for, upper case.
fn fold(c: char) -> Option<&'static str> {
    match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{2032}' | '`' | '´' => Some("'"),
        c if crate::text::is_dash(c) => Some("-"),
        c => crate::text::latin_letter(c),
    }
}

pub(crate) use crate::text::is_digits;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_table() {
        // (input, width, expected)
        let table: &[(&str, usize, &str)] = &[
            ("José Müller", 32, "JOSE MULLER"),
            ("Straße", 32, "STRASSE"),
            ("Æsir Œuvre", 32, "AESIR OEUVRE"),
            ("Søren Þórsson", 32, "SOREN THORSSON"),
            ("Łukasz Żółć", 32, "LUKASZ ZOLC"),
            ("O'Brien", 32, "O'BRIEN"),
            ("O’Brien – Co", 32, "O'BRIEN - CO"),
            ("Smith & Sons", 32, "SMITH AND SONS"),
            ("A&B", 32, "A AND B"),
            ("Иван Petrov", 32, "PETROV"),
            ("山田 Taro", 32, "TARO"),
            ("Иван", 32, ""),
            ("a~b{c}#d", 32, "A B C D"),
            ("tab\there\nnew", 32, "TAB HERE NEW"),
            ("  many    spaces  ", 32, "MANY SPACES"),
            ("(care of) 1/2, 3-4.", 32, "(CARE OF) 1/2, 3-4."),
            ("ABCDEFGHIJ", 4, "ABCD"),
            ("ßßß", 4, "SSSS"),
            ("AB CD", 3, "AB"),
            (
                "Ünïcödé & Co Pty Ltd Superannuation Fund",
                32,
                "UNICODE AND CO PTY LTD SUPERANNU",
            ),
            ("", 10, ""),
        ];
        for (input, width, expected) in table {
            assert_eq!(clean_text(input, *width), *expected, "{input:?}");
            assert!(clean_text(input, *width).chars().all(is_allowed_char));
        }
    }

    #[test]
    fn allowed_characters() {
        for c in "AZ09 '(),-./".chars() {
            assert!(is_allowed_char(c), "{c:?}");
        }
        for c in "az&~{}|[]\\^`é\n\r\"#@!".chars() {
            assert!(!is_allowed_char(c), "{c:?}");
        }
    }
}
