//! What the formats share when they clean free text: the ASCII letters an accented Latin letter
//! stands for. Each format adds its own character set, punctuation and substitutes.

use std::borrow::Cow;

/// The upper-case ASCII letters an accented Latin letter of the Latin-1 Supplement or Latin
/// Extended-A blocks stands for (`é` → `E`, `ß` → `SS`, `Æ` → `AE`, `Ø` → `O`, `Þ` → `TH`,
/// `ŉ` → `'N`); `None` for any other character.
pub(crate) fn latin_letter(c: char) -> Option<&'static str> {
    Some(match c {
        'À'..='Å' | 'à'..='å' | 'Ā'..='ą' => "A",
        'Æ' | 'æ' => "AE",
        'Ç' | 'ç' | 'Ć'..='č' => "C",
        'Ð' | 'ð' | 'Ď'..='đ' => "D",
        'È'..='Ë' | 'è'..='ë' | 'Ē'..='ě' => "E",
        'Ĝ'..='ģ' => "G",
        'Ĥ'..='ħ' => "H",
        'Ì'..='Ï' | 'ì'..='ï' | 'Ĩ'..='ı' => "I",
        'Ĳ' | 'ĳ' => "IJ",
        'Ĵ' | 'ĵ' => "J",
        'Ķ'..='ĸ' => "K",
        'Ĺ'..='ł' => "L",
        'Ñ' | 'ñ' | 'Ń'..='ň' | 'Ŋ' | 'ŋ' => "N",
        'ŉ' => "'N",
        'Ò'..='Ö' | 'Ø' | 'ò'..='ö' | 'ø' | 'Ō'..='ő' => "O",
        'Œ' | 'œ' => "OE",
        'Ŕ'..='ř' => "R",
        'Ś'..='š' | 'ſ' => "S",
        'ß' | 'ẞ' => "SS",
        'Ţ'..='ŧ' => "T",
        'Þ' | 'þ' => "TH",
        'Ù'..='Ü' | 'ù'..='ü' | 'Ũ'..='ų' => "U",
        'Ŵ' | 'ŵ' => "W",
        'Ý' | 'ý' | 'ÿ' | 'Ŷ'..='Ÿ' => "Y",
        'Ź'..='ž' => "Z",
        _ => return None,
    })
}

/// [`latin_letter`] in the case of `c`: lower case for a lower-case letter (`é` → `e`,
/// `ß` → `ss`).
pub(crate) fn latin_letter_keeping_case(c: char) -> Option<Cow<'static, str>> {
    let upper = latin_letter(c)?;
    Some(if c.is_lowercase() {
        Cow::Owned(upper.to_ascii_lowercase())
    } else {
        Cow::Borrowed(upper)
    })
}

/// Whether `value` is non-empty and only ASCII digits (`bank_codes`' one digits rule).
pub(crate) fn is_digits(value: &str) -> bool {
    bank_codes::digits::is_ascii_digits(value, 1..=usize::MAX)
}

/// A typographic dash or minus sign: written `-`.
pub(crate) fn is_dash(c: char) -> bool {
    matches!(c, '\u{2010}'..='\u{2015}' | '\u{2212}')
}

/// The words of `spelled` (split at spaces) joined by one space, cut to `width` bytes with no
/// space left at the end. `spelled` must be ASCII, so every cut is on a character boundary.
pub(crate) fn words_within(spelled: &str, width: usize) -> String {
    let mut out = String::with_capacity(width);
    for word in spelled.split(' ').filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() >= width {
            break;
        }
    }
    out.truncate(width);
    out.truncate(out.trim_end().len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_letters_fold_to_ascii_in_their_case() {
        for (c, upper, kept) in [
            ('é', "E", "e"),
            ('Ø', "O", "O"),
            ('ß', "SS", "ss"),
            ('ẞ', "SS", "SS"),
            ('æ', "AE", "ae"),
            ('Þ', "TH", "TH"),
            ('ł', "L", "l"),
            ('ÿ', "Y", "y"),
        ] {
            assert_eq!(latin_letter(c), Some(upper), "{c}");
            assert_eq!(latin_letter_keeping_case(c).as_deref(), Some(kept), "{c}");
        }
        for other in ['a', 'Z', '7', 'Ж', '山', '’', '-'] {
            assert_eq!(latin_letter(other), None, "{other}");
        }
        assert!(is_dash('–') && is_dash('\u{2212}') && !is_dash('-'));
    }

    #[test]
    fn words_are_joined_by_one_space_and_cut_without_a_trailing_space() {
        assert_eq!(words_within("  A   B  C ", 10), "A B C");
        assert_eq!(words_within("ABCD EFGH", 5), "ABCD");
        assert_eq!(words_within("ABCD EFGH", 6), "ABCD E");
        assert_eq!(words_within("", 4), "");
    }
}
