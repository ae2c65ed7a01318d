//! The SEPA character set: free text folded into it, identifiers checked against it.
//!
//! The EPC's implementation guidelines for SEPA Credit Transfer allow only the Latin character
//! set in messages:
//!
//! ```text
//! a b c d e f g h i j k l m n o p q r s t u v w x y z
//! A B C D E F G H I J K L M N O P Q R S T U V W X Y Z
//! 0 1 2 3 4 5 6 7 8 9
//! / - ? : ( ) . , ' + space
//! ```
//!
//! **Free text** (names, remittance information) is folded into that set by [`to_sepa_text`]:
//!
//! - Latin letters with diacritics lose them (`é` → `e`, `Å` → `A`, `ł` → `l`), and ligatures
//!   and letters without a plain form are spelled out (`ß` → `ss`, `æ` → `ae`, `Œ` → `OE`,
//!   `þ` → `th`). Combining marks (a decomposed `e` + U+0301) are dropped.
//! - `&` becomes `+` (the EPC's own suggestion); typographic quotes and backticks become `'`;
//!   `"` becomes `'`; dashes and `_` become `-`; `[` `{` `<` become `(` and `]` `}` `>`
//!   become `)`; `;` becomes `,`; `!` becomes `.`; `\` becomes `/`.
//! - Any whitespace (tabs, newlines, no-break spaces) becomes a space.
//! - **Every other character** (other scripts such as `東京`, symbols such as `€`, `@`, `#`,
//!   `*`, emoji, control characters) is replaced by `.`; a run of such characters becomes one
//!   `.`, so `東京` is `.`. A dot rather than a space, so that a name in another script does not
//!   vanish and the reader can see that something was left out.
//! - Runs of spaces collapse to one, and leading and trailing spaces are removed.
//! - The result is then cut to the field's length (in characters, which are all one byte).
//!
//! **Identifiers** (message, payment-information, instruction and end-to-end ids) are never
//! changed: [`check_id`] refuses one that is empty, too long, holds a character outside the set,
//! starts or ends with `/` or contains `//` (the EPC's rules for references).

/// Whether `c` is in the SEPA (EPC) Latin character set.
pub fn is_sepa_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '/' | '-' | '?' | ':' | '(' | ')' | '.' | ',' | '\'' | '+' | ' '
        )
}

/// What is wrong with an identifier (see [`check_id`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdProblem {
    /// Nothing but spaces, or nothing at all.
    Empty,
    /// More characters than the field allows.
    TooLong { len: usize, max: usize },
    /// A character outside the SEPA character set.
    BadChar(char),
    /// Starts or ends with `/`, or contains `//`.
    Slashes,
}

/// Checks an identifier against the EPC rules: 1 to `max` characters of the SEPA set, not
/// starting or ending with `/`, without `//`.
///
/// # Errors
/// The first [`IdProblem`] found.
pub fn check_id(id: &str, max: usize) -> Result<(), IdProblem> {
    if id.trim().is_empty() {
        return Err(IdProblem::Empty);
    }
    if let Some(c) = id.chars().find(|c| !is_sepa_char(*c)) {
        return Err(IdProblem::BadChar(c));
    }
    let len = id.chars().count();
    if len > max {
        return Err(IdProblem::TooLong { len, max });
    }
    if id.starts_with('/') || id.ends_with('/') || id.contains("//") {
        return Err(IdProblem::Slashes);
    }
    Ok(())
}

/// Folds free text into the SEPA character set and cuts it to `max` characters (see the module
/// documentation for the rules). The result may be empty, when `text` held only spaces.
pub fn to_sepa_text(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max.saturating_mul(2)));
    // Whether the last thing written was a replacement dot for unknown characters, so a run of
    // them yields one dot.
    let mut in_unknown_run = false;
    for c in text.chars() {
        if is_combining_mark(c) {
            continue;
        }
        let replacement: Replacement = fold(c);
        match replacement {
            Replacement::Keep(k) => {
                push_collapsing_spaces(&mut out, k);
                in_unknown_run = false;
            }
            Replacement::Spell(s) => {
                for k in s.chars() {
                    push_collapsing_spaces(&mut out, k);
                }
                in_unknown_run = false;
            }
            Replacement::Unknown => {
                if !in_unknown_run {
                    out.push('.');
                }
                in_unknown_run = true;
            }
        }
        // Enough is written once we are well past the limit (spaces may still be trimmed).
        if out.len() > max.saturating_add(1) {
            break;
        }
    }
    let trimmed = out.trim_start();
    let mut result: String = trimmed.chars().take(max).collect();
    let kept = result.trim_end().len();
    result.truncate(kept);
    result
}

/// Pushes `c`, except a space after a space (or at the very start).
fn push_collapsing_spaces(out: &mut String, c: char) {
    if c == ' ' && (out.is_empty() || out.ends_with(' ')) {
        return;
    }
    out.push(c);
}

/// What a character becomes.
enum Replacement {
    Keep(char),
    Spell(&'static str),
    Unknown,
}

/// Combining diacritical marks (U+0300–U+036F and the supplement/extended blocks), dropped so
/// that decomposed text folds like precomposed text.
fn is_combining_mark(c: char) -> bool {
    matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}' | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

/// The replacement of one character.
fn fold(c: char) -> Replacement {
    use Replacement::{Keep, Spell, Unknown};
    if is_sepa_char(c) {
        return Keep(c);
    }
    if c.is_whitespace() {
        return Keep(' ');
    }
    match c {
        '&' => Keep('+'),
        '"' | '`' | '´' | '‘' | '’' | '‚' | '‛' | '“' | '”' | '„' | '‟' | '«' | '»' | '‹' | '›' => {
            Keep('\'')
        }
        '_' | '‐' | '‑' | '‒' | '–' | '—' | '―' | '−' => Keep('-'),
        '[' | '{' | '<' => Keep('('),
        ']' | '}' | '>' => Keep(')'),
        ';' => Keep(','),
        '!' => Keep('.'),
        '\\' => Keep('/'),
        '…' => Spell("..."),
        _ => fold_latin_letter(c).map_or(Unknown, |s| {
            let mut chars = s.chars();
            match (chars.next(), chars.next()) {
                (Some(one), None) => Keep(one),
                _ => Spell(s),
            }
        }),
    }
}

/// The plain spelling of a Latin letter with diacritics, a ligature or a special Latin letter
/// (Latin-1 Supplement, Latin Extended-A and the common letters of Latin Extended-B).
fn fold_latin_letter(c: char) -> Option<&'static str> {
    Some(match c {
        'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' | 'Ā' | 'Ă' | 'Ą' | 'Ǎ' | 'Ǻ' => "A",
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' | 'ǎ' | 'ǻ' | 'ª' => "a",
        'Æ' | 'Ǽ' => "AE",
        'æ' | 'ǽ' => "ae",
        'Ç' | 'Ć' | 'Ĉ' | 'Ċ' | 'Č' => "C",
        'ç' | 'ć' | 'ĉ' | 'ċ' | 'č' => "c",
        'Ð' | 'Ď' | 'Đ' => "D",
        'ð' | 'ď' | 'đ' => "d",
        'È' | 'É' | 'Ê' | 'Ë' | 'Ē' | 'Ĕ' | 'Ė' | 'Ę' | 'Ě' => "E",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ĕ' | 'ė' | 'ę' | 'ě' => "e",
        'Ĝ' | 'Ğ' | 'Ġ' | 'Ģ' => "G",
        'ĝ' | 'ğ' | 'ġ' | 'ģ' => "g",
        'Ĥ' | 'Ħ' => "H",
        'ĥ' | 'ħ' => "h",
        'Ì' | 'Í' | 'Î' | 'Ï' | 'Ĩ' | 'Ī' | 'Ĭ' | 'Į' | 'İ' | 'Ǐ' => "I",
        'ì' | 'í' | 'î' | 'ï' | 'ĩ' | 'ī' | 'ĭ' | 'į' | 'ı' | 'ǐ' => "i",
        'Ĳ' => "IJ",
        'ĳ' => "ij",
        'Ĵ' => "J",
        'ĵ' => "j",
        'Ķ' => "K",
        'ķ' | 'ĸ' => "k",
        'Ĺ' | 'Ļ' | 'Ľ' | 'Ŀ' | 'Ł' => "L",
        'ĺ' | 'ļ' | 'ľ' | 'ŀ' | 'ł' => "l",
        'Ñ' | 'Ń' | 'Ņ' | 'Ň' | 'Ŋ' => "N",
        'ñ' | 'ń' | 'ņ' | 'ň' | 'ŉ' | 'ŋ' => "n",
        'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' | 'Ō' | 'Ŏ' | 'Ő' | 'Ơ' | 'Ǒ' | 'Ǿ' => "O",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ŏ' | 'ő' | 'ơ' | 'ǒ' | 'ǿ' | 'º' => {
            "o"
        }
        'Œ' => "OE",
        'œ' => "oe",
        'Ŕ' | 'Ŗ' | 'Ř' => "R",
        'ŕ' | 'ŗ' | 'ř' => "r",
        'Ś' | 'Ŝ' | 'Ş' | 'Š' | 'Ș' => "S",
        'ś' | 'ŝ' | 'ş' | 'š' | 'ș' | 'ſ' => "s",
        'ß' => "ss",
        'ẞ' => "SS",
        'Ţ' | 'Ť' | 'Ŧ' | 'Ț' => "T",
        'ţ' | 'ť' | 'ŧ' | 'ț' => "t",
        'Þ' => "TH",
        'þ' => "th",
        'Ù' | 'Ú' | 'Û' | 'Ü' | 'Ũ' | 'Ū' | 'Ŭ' | 'Ů' | 'Ű' | 'Ų' | 'Ư' | 'Ǔ' | 'Ǖ' | 'Ǘ' | 'Ǚ'
        | 'Ǜ' => "U",
        'ù' | 'ú' | 'û' | 'ü' | 'ũ' | 'ū' | 'ŭ' | 'ů' | 'ű' | 'ų' | 'ư' | 'ǔ' | 'ǖ' | 'ǘ' | 'ǚ'
        | 'ǜ' => "u",
        'Ŵ' => "W",
        'ŵ' => "w",
        'Ý' | 'Ŷ' | 'Ÿ' => "Y",
        'ý' | 'ÿ' | 'ŷ' => "y",
        'Ź' | 'Ż' | 'Ž' | 'Ƶ' => "Z",
        'ź' | 'ż' | 'ž' | 'ƶ' => "z",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{IdProblem, check_id, is_sepa_char, to_sepa_text};

    #[test]
    fn the_set_is_exactly_the_epc_latin_set() {
        let allowed: String = (0u8..=127)
            .map(char::from)
            .filter(|c| is_sepa_char(*c))
            .collect();
        assert_eq!(
            allowed,
            " '()+,-./0123456789:?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
        );
        assert!(!is_sepa_char('é'));
    }

    #[test]
    fn accents_and_ligatures_fold() {
        assert_eq!(
            to_sepa_text("Zoë Ångström-Łukasz", 70),
            "Zoe Angstrom-Lukasz"
        );
        assert_eq!(
            to_sepa_text("Straße Æsir Œuvre þorn", 70),
            "Strasse AEsir OEuvre thorn"
        );
        // Decomposed: e + combining acute accent.
        assert_eq!(to_sepa_text("Jose\u{301} Mu\u{303}noz", 70), "Jose Munoz");
    }

    #[test]
    fn other_characters_are_replaced() {
        assert_eq!(
            to_sepa_text("Zoë O'Brien & Søn — 東京", 70),
            "Zoe O'Brien + Son - ."
        );
        assert_eq!(
            to_sepa_text("Invoice #42 @ 5€; \"paid\"!", 140),
            "Invoice .42 . 5., 'paid'."
        );
        assert_eq!(
            to_sepa_text("a_b [c] {d} <e> \\f", 140),
            "a-b (c) (d) (e) /f"
        );
        assert_eq!(to_sepa_text("emoji 😀😀 here", 140), "emoji . here");
        assert_eq!(to_sepa_text("ctrl\u{0}\u{7}char", 140), "ctrl.char");
    }

    #[test]
    fn whitespace_collapses_and_is_trimmed() {
        assert_eq!(to_sepa_text("  a\t\tb\n c\u{a0} ", 70), "a b c");
        assert_eq!(to_sepa_text(" \t\n ", 70), "");
    }

    #[test]
    fn text_is_cut_to_the_field_length_without_trailing_space() {
        assert_eq!(to_sepa_text("abcdef", 3), "abc");
        assert_eq!(to_sepa_text("ab cdef", 3), "ab");
        assert_eq!(to_sepa_text("ßßß", 3), "sss");
        let long = "é".repeat(500);
        assert_eq!(to_sepa_text(&long, 140), "e".repeat(140));
    }

    #[test]
    fn ids_follow_the_epc_rules() {
        assert_eq!(check_id("PAYOUT-2026/11/25-0001", 35), Ok(()));
        assert_eq!(check_id("", 35), Err(IdProblem::Empty));
        assert_eq!(check_id("   ", 35), Err(IdProblem::Empty));
        assert_eq!(
            check_id(&"a".repeat(36), 35),
            Err(IdProblem::TooLong { len: 36, max: 35 })
        );
        assert_eq!(check_id("a_b", 35), Err(IdProblem::BadChar('_')));
        assert_eq!(check_id("é", 35), Err(IdProblem::BadChar('é')));
        assert_eq!(check_id("/ab", 35), Err(IdProblem::Slashes));
        assert_eq!(check_id("ab/", 35), Err(IdProblem::Slashes));
        assert_eq!(check_id("a//b", 35), Err(IdProblem::Slashes));
    }
}
