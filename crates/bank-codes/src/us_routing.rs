//! The US ABA routing transit number's check digit (the ninth digit): weights 3, 7, 1 repeated
//! over the first eight digits, the ninth bringing the weighted sum to a multiple of 10.

use crate::digits::is_ascii_digits;

/// The check digit of a routing number's first eight digits; `None` unless `first8` is exactly
/// eight ASCII digits.
#[must_use]
pub fn check_digit(first8: &str) -> Option<u8> {
    const WEIGHTS: [u32; 8] = [3, 7, 1, 3, 7, 1, 3, 7];
    if !is_ascii_digits(first8, 8..=8) {
        return None;
    }
    let sum: u32 = first8
        .bytes()
        .zip(WEIGHTS)
        .map(|(b, w)| u32::from(b - b'0') * w)
        .sum();
    u8::try_from((10 - sum % 10) % 10).ok()
}

/// Whether `number` is nine ASCII digits whose ninth is the check digit of the first eight.
#[must_use]
pub fn is_valid(number: &str) -> bool {
    if !is_ascii_digits(number, 9..=9) {
        return false;
    }
    let (first8, ninth) = number.split_at(8);
    check_digit(first8).is_some_and(|d| ninth.as_bytes() == [b'0' + d])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_routing_numbers_check() {
        // Federal Reserve Bank of Boston, JPMorgan Chase (NY), Bank of America (NY and CA),
        // JPMorgan Chase (CA), a thrift.
        for number in [
            "011000015",
            "021000021",
            "026009593",
            "121000358",
            "322271627",
            "231380104",
        ] {
            assert!(is_valid(number), "{number}");
        }
        assert_eq!(check_digit("23138010"), Some(4));
        assert_eq!(check_digit("02100002"), Some(1));
    }

    #[test]
    fn anything_else_does_not() {
        for number in [
            "021000022",
            "011000016",
            "000000001",
            "02100002",
            "0210000211",
            "02100002a",
            "０２１000021",
            "021-000-021",
            "",
        ] {
            assert!(!is_valid(number), "{number}");
        }
        assert_eq!(check_digit("2313801"), None);
        assert_eq!(check_digit("2313801a"), None);
    }
}
