//! The bank's IB4B dishonour files: chosen credits of a direct credit file (the golden file of
//! `bank-formats`) dishonoured with their reasons, refusals, and the independent checker on
//! what is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_format_oracles::ib4b::{Kind, check};
use bank_formats::ib4b::{
    self, DirectCreditFile, DishonourReason, Ib4bFile, StatementDetails, Transaction,
};
use bank_simulator::ib4b::{
    DishonourDecision, DishonourError, dishonour_file, write_dishonour_file,
};
use chrono::NaiveDate;

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

/// A golden file of `bank-formats` (the layout's own examples).
fn golden(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../bank-formats/tests/golden/ib4b/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `basic.csv`: two credits, `0A1B2C3D4E5F` and `FEDCBA987654`.
fn basic() -> DirectCreditFile {
    match ib4b::parse(&golden("basic.csv")).unwrap() {
        Ib4bFile::DirectCredit(file) => file,
        other => panic!("{other:?}"),
    }
}

/// The second credit of `basic.csv` (no account) and the first (refused), in that order:
/// byte for byte the golden dishonour file, which the independent checker accepts.
#[test]
fn golden_dishonour_file() {
    // Control, by hand: total = 500 + 12345 = 12845; count = 2;
    // hash = 65231954512 + 09020068389 = 74252022901.
    let decisions = [
        DishonourDecision {
            your_reference: "FEDCBA987654".into(),
            reason: DishonourReason::NoAccount,
        },
        DishonourDecision {
            your_reference: "0A1B2C3D4E5F".into(),
            reason: DishonourReason::PaymentRefused,
        },
    ];
    let written = write_dishonour_file(&basic(), &decisions, date(2026, 11, 30)).unwrap();
    let expected = golden("dishonour.csv");
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(check(&written), Ok(Kind::Dishonour));
}

#[test]
fn dishonour_decisions_must_name_one_transaction_once() {
    let mut original = basic();
    let template = original.transactions[0].clone();
    let credit = |amount: u64, reference: &str| Transaction {
        amount,
        yours: StatementDetails {
            reference: reference.into(),
            ..StatementDetails::default()
        },
        ..template.clone()
    };
    original.transactions = vec![credit(1, "R1"), credit(2, "R2"), credit(3, "R2")];
    let date = NaiveDate::from_ymd_opt(2026, 11, 30).unwrap();
    let decide = |r: &str| DishonourDecision {
        your_reference: r.into(),
        reason: DishonourReason::AccountClosed,
    };
    assert_eq!(
        dishonour_file(&original, &[decide("R9")], date),
        Err(DishonourError::UnknownReference(0))
    );
    assert_eq!(
        dishonour_file(&original, &[decide("R1"), decide("R2")], date),
        Err(DishonourError::AmbiguousReference(1))
    );
    assert_eq!(
        dishonour_file(&original, &[decide("R1"), decide("R1")], date),
        Err(DishonourError::Repeated(1))
    );
    let made = dishonour_file(&original, &[decide("R1")], date).unwrap();
    assert_eq!(made.dishonours.len(), 1);
    assert_eq!(made.dishonours[0].amount, 1);
    assert_eq!(made.dishonours[0].reason_text, "Account closed");
}
