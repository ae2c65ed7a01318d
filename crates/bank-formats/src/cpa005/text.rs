//! The characters the writer produces and the clean-up of free-text fields (names, sundry
//! information).

/// The symbols the writer lets through in alphanumeric fields, besides `A`–`Z`, `0`–`9` and the
/// space.
///
/// Standard 005 files are translated to EBCDIC by many banks and their guides ask for upper-case
/// letters, digits and a few punctuation marks; the writer keeps to those. The apostrophe, the
/// ampersand and the other symbols are refused by several banks' edits and are not written.
pub const ALLOWED_SYMBOLS: &str = "-.,/()";

/// Whether the writer lets `c` through unchanged in an alphanumeric field.
#[must_use]
pub fn is_allowed_char(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || c == ' ' || ALLOWED_SYMBOLS.contains(c)
}

/// What the writer makes of a free-text value:
///
/// 1. ASCII letters are upper-cased; digits, the space and [`ALLOWED_SYMBOLS`] are kept;
/// 2. accented Latin letters are folded to their base letters (`é` → `E`, `ß` → `SS`,
///    `Æ` → `AE`, `Œ` → `OE`, `Þ` → `TH`), typographic dashes to `-`;
/// 3. `&` becomes ` AND `;
/// 4. apostrophes (`'`, `’`, `‘`, `′`) are dropped (`O'Brien` → `OBRIEN`);
/// 5. any other character (other symbols, control characters, non-Latin letters such as Cyrillic
///    or CJK) becomes a space;
/// 6. runs of spaces collapse to one, leading and trailing spaces go, and the result is cut to
///    `width` characters (it is ASCII, so every cut is on a character boundary), with no
///    trailing space after the cut.
///
/// The writer then pads the result to the field's width.
#[must_use]
pub fn clean_text(value: &str, width: usize) -> String {
    let mut spelled = String::with_capacity(value.len());
    for c in value.chars() {
        let upper = c.to_ascii_uppercase();
        if is_allowed_char(upper) {
            spelled.push(upper);
        } else if let Some(folded) = fold(c) {
            spelled.push_str(folded);
        } else if c == '&' {
            spelled.push_str(" AND ");
        } else if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{2032}') {
            // Dropped: `O'BRIEN` reads better as `OBRIEN` than as `O BRIEN`.
        } else {
            spelled.push(' ');
        }
    }
    crate::text::words_within(&spelled, width)
}

/// The upper-case ASCII letters an accented Latin letter stands for
/// ([`crate::text::latin_letter`]), or `-` for a typographic dash.
fn fold(c: char) -> Option<&'static str> {
    match c {
        c if crate::text::is_dash(c) => Some("-"),
        // The apostrophe is not in the set: `ŉ` is written as `N`, like `'` is dropped.
        'ŉ' => Some("N"),
        c => crate::text::latin_letter(c),
    }
}

pub(crate) use crate::text::is_digits;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_table() {
        let cases: &[(&str, usize, &str)] = &[
            // Upper-casing and the allowed symbols.
            ("Acme Payroll Inc.", 30, "ACME PAYROLL INC."),
            ("a-b.c,d/e(f)", 30, "A-B.C,D/E(F)"),
            // Accents folded.
            ("Élise Côté-Bélanger", 30, "ELISE COTE-BELANGER"),
            ("Straße", 30, "STRASSE"),
            ("Æsir Œuvre Þórr", 30, "AESIR OEUVRE THORR"),
            ("Łódź Ñandú", 30, "LODZ NANDU"),
            // Apostrophes dropped, ampersands spelled out.
            ("O'Brien & Sons", 30, "OBRIEN AND SONS"),
            ("L’Épicerie d‘Anne", 30, "LEPICERIE DANNE"),
            ("A&B", 30, "A AND B"),
            // Other characters become spaces, and spaces collapse.
            ("Иван Petrov", 30, "PETROV"),
            ("山田 Taro", 30, "TARO"),
            ("x~y{z}|w", 30, "X Y Z W"),
            ("tab\there\nnew  line", 30, "TAB HERE NEW LINE"),
            ("  padded   out  ", 30, "PADDED OUT"),
            ("Em—dash", 30, "EM-DASH"),
            ("\"quoted\" #1 50%", 30, "QUOTED 1 50"),
            // Cut to the width, never leaving a trailing space.
            ("ABCDEFGHIJ", 4, "ABCD"),
            ("ßßß", 4, "SSSS"),
            ("AB CD", 3, "AB"),
            ("Smith & Wesson Holdings", 12, "SMITH AND WE"),
            // Nothing left.
            ("日本", 30, ""),
            ("", 30, ""),
        ];
        for (input, width, expected) in cases {
            assert_eq!(clean_text(input, *width), *expected, "{input:?}");
            assert!(clean_text(input, *width).chars().all(is_allowed_char));
        }
    }

    #[test]
    fn allowed_characters() {
        for c in "AZ09 -.,/()".chars() {
            assert!(is_allowed_char(c), "{c:?}");
        }
        for c in "az&'#@_~{}é\n\r".chars() {
            assert!(!is_allowed_char(c), "{c:?}");
        }
    }
}
