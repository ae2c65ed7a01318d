//! The bodies of the accounts the demo creates: one per method, with the details each bank rail
//! expects.

use domain::account::PayoutMethod;
use serde_json::{Value, json};

use super::{LAST_NAMES, RECEIVERS};
use crate::bank::RailKind;

/// The account of the `i`th receiver for `method`, without its `receiver_id`.
pub(super) fn method_account_body(method: PayoutMethod, i: usize) -> Value {
    match RailKind::of(method) {
        Some(kind) => account_body(kind, i),
        // The partner fails a transfer to an address whose local part starts with `invalid`
        // (the last receiver's).
        None => json!({
            "recipient": if i + 1 == RECEIVERS {
                format!("invalid.payee{i}@example.com")
            } else {
                format!("payee{i}@example.com")
            },
            "name": format!("Demo {}", LAST_NAMES[i % LAST_NAMES.len()]),
            "description": "Rails demo"
        }),
    }
}

/// The account of the `i`th receiver for `kind`, without its `receiver_id`.
pub(super) fn account_body(kind: RailKind, i: usize) -> Value {
    match kind {
        RailKind::Ach => json!({
            "routing_number": "021000021",
            "account_number": format!("{}", 100_200_300 + i),
            "account_type": "checking"
        }),
        RailKind::Sepa => json!({
            "iban": german_iban("37040044", 532_013_000 + i as u64),
            "bic": "COBADEFFXXX"
        }),
        RailKind::DirectEntry => json!({
            "bsb": "012-002",
            "account_number": format!("{}", 12_345_670 + i)
        }),
        RailKind::Eft => json!({
            "routing_number": "12345-003",
            "account_number": format!("{}", 7_654_321 + i),
            "account_type": "checking"
        }),
        // The suffix is not covered by the check digits of bank 01.
        RailKind::DirectCredit => json!({"account_number": format!("01-902-0068389-{i:02}")}),
    }
}

/// A German IBAN for bank code `blz` (8 digits) and `account` (up to 10 digits).
pub(super) fn german_iban(blz: &str, account: u64) -> String {
    let bban = format!("{blz}{account:010}");
    // Check digits: BBAN + "DE00" as digits (D = 13, E = 14), mod 97.
    let digits = format!("{bban}131400");
    let remainder = digits
        .bytes()
        .fold(0u32, |acc, b| (acc * 10 + u32::from(b - b'0')) % 97);
    format!("DE{:02}{bban}", 98 - remainder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibans_have_valid_check_digits() {
        assert_eq!(
            german_iban("37040044", 532_013_000),
            "DE89370400440532013000"
        );
        let other = german_iban("37040044", 532_013_001);
        assert!(other.starts_with("DE") && other.len() == 22, "{other}");
        assert!(bank_codes::iban::is_electronic(&other), "{other}");
    }
}
