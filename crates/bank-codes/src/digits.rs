//! Strings of ASCII digits.

use std::ops::RangeInclusive;

/// Whether `text` is only ASCII digits (`0`–`9`, not other Unicode digits), with a length in
/// `lengths`. Reading stops at the first character past the longest length, so a long input
/// costs no more than a short one.
#[must_use]
pub fn is_ascii_digits(text: &str, lengths: RangeInclusive<usize>) -> bool {
    let mut count = 0;
    for c in text.chars() {
        if !c.is_ascii_digit() || count == *lengths.end() {
            return false;
        }
        count += 1;
    }
    lengths.contains(&count)
}

#[cfg(test)]
mod tests {
    use super::is_ascii_digits;

    #[test]
    fn digits_of_a_length_in_the_range() {
        assert!(is_ascii_digits("021000021", 9..=9));
        assert!(is_ascii_digits("1234", 4..=17));
        assert!(is_ascii_digits("0", 1..=usize::MAX));
        assert!(is_ascii_digits("", 0..=3));
        for (text, lengths) in [
            ("", 1..=usize::MAX),
            ("123", 4..=17),
            ("12345", 1..=4),
            ("12a4", 1..=9),
            ("１２３４", 1..=9),
            ("٠١٢", 1..=9),
            ("12 4", 1..=9),
            ("-123", 1..=9),
        ] {
            assert!(
                !is_ascii_digits(text, lengths.clone()),
                "{text:?} {lengths:?}"
            );
        }
        assert!(!is_ascii_digits(&"7".repeat(100_000), 4..=17));
    }
}
