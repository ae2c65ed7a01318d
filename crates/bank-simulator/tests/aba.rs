//! The bank's ABA return files: chosen payments of an originated file (the golden files of
//! `bank-formats`) returned with their codes, refusals, the golden return file, and the
//! independent checker on what is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_format_oracles::aba::{Kind, check};
use bank_formats::aba::{AbaFile, DetailKind, ReturnCode, parse, write_return};
use bank_simulator::aba::{ReturnDecision, ReturnError, return_file, write_return_file};
use chrono::NaiveDate;

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

/// A golden file of `bank-formats` (the layouts' own examples).
fn golden(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../bank-formats/tests/golden/aba/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Two credits (`5A1F…` 123.45 and `C0FFEE…` 2 500.00), processed on 27 November 2026.
fn credits() -> AbaFile {
    parse(&golden("credits.aba")).unwrap()
}

#[test]
fn the_bank_returns_chosen_payments() {
    let original = credits();
    let decisions = [
        ReturnDecision {
            entry: 1,
            code: ReturnCode::NoAccount,
        },
        ReturnDecision {
            entry: 0,
            code: ReturnCode::AccountClosed,
        },
    ];
    let bytes = write_return_file(&original, &decisions, date(2026, 11, 30)).unwrap();
    let returned = parse(&bytes).unwrap();
    assert_eq!(returned.descriptive.processing_date, date(2026, 11, 30));
    assert_eq!(returned.descriptive.apca_user_id, "301500");
    let returns: Vec<_> = returned.returns().collect();
    assert_eq!(returns.len(), 2);
    // In the original's order, whatever the decisions' order.
    assert_eq!(returns[0].lodgement_reference, "5A1F3C9E2B7D4F60A1");
    assert_eq!(returns[0].return_code(), Some(ReturnCode::AccountClosed));
    assert_eq!(returns[1].lodgement_reference, "C0FFEE12345678ABCD");
    assert_eq!(returns[1].return_code(), Some(ReturnCode::NoAccount));
    assert_eq!(returns[1].amount, 250_000);
    assert_eq!(
        returns[1].kind,
        DetailKind::Returned {
            return_code: ReturnCode::NoAccount,
            original_processing_day: 27,
            original_user_id: "301500".into()
        }
    );
    let total = returned.total();
    assert_eq!((total.credit_total, total.debit_total), (262_345, 0));
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert_eq!(text.lines().nth(1).map(|l| &l[..1]), Some("2"));
    // write_return lays out what return_file built.
    let file = return_file(&original, &decisions, date(2026, 11, 30)).unwrap();
    assert_eq!(write_return(&file).unwrap(), bytes);
}

#[test]
fn the_bank_refuses_impossible_returns() {
    let original = credits();
    let on = |entry, code| ReturnDecision { entry, code };
    let day = date(2026, 11, 30);
    assert_eq!(
        return_file(&original, &[], day),
        Err(ReturnError::NoDecisions)
    );
    assert_eq!(
        return_file(&original, &[on(2, ReturnCode::NoAccount)], day),
        Err(ReturnError::UnknownEntry { entry: 2 })
    );
    // The self-balancing debit of the cleaned file is its fifth record.
    let balanced = parse(&golden("cleaned-balanced.aba")).unwrap();
    assert_eq!(
        return_file(&balanced, &[on(4, ReturnCode::NoAccount)], day),
        Err(ReturnError::NotACredit { entry: 4 })
    );
    assert_eq!(
        return_file(
            &original,
            &[
                on(0, ReturnCode::NoAccount),
                on(0, ReturnCode::AccountClosed)
            ],
            day
        ),
        Err(ReturnError::DuplicateEntry { entry: 0 })
    );
    assert_eq!(
        return_file(&original, &[on(0, ReturnCode::Unassigned(7))], day),
        Err(ReturnError::UnassignedCode { code: 7 })
    );
}

/// The bank returns the second credit (code 5) and the first (code 3) of the credits file:
/// byte for byte the golden return file, which the independent checker accepts.
#[test]
fn golden_return_file() {
    let decisions = [
        ReturnDecision {
            entry: 1,
            code: ReturnCode::NoAccount,
        },
        ReturnDecision {
            entry: 0,
            code: ReturnCode::AccountClosed,
        },
    ];
    let bytes = write_return_file(&credits(), &decisions, date(2026, 12, 1)).unwrap();
    check(&bytes, Kind::Returns).unwrap();
    assert!(
        bytes == golden("return.aba"),
        "return.aba differs:\n{}",
        String::from_utf8_lossy(&bytes)
    );
}

#[test]
fn a_single_return_passes_the_checker() {
    let decisions = [ReturnDecision {
        entry: 0,
        code: ReturnCode::InvalidBsb,
    }];
    let bytes = write_return_file(&credits(), &decisions, date(2026, 12, 1)).unwrap();
    check(&bytes, Kind::Returns).unwrap();
}
