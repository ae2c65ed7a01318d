//! The bank's Standard 005 files of returned items: chosen transactions of an origination file
//! returned with their reasons, refusals, the golden file of `bank-formats`, and the
//! independent checker on what is written.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../bank-formats/tests/cpa005_support/samples.rs"]
mod samples;

use bank_format_oracles::cpa005 as checker;
use bank_formats::cpa005::{Cpa005File, ReturnCode, WriteOptions, parse};
use bank_simulator::cpa005::{
    ReturnDecision, ReturnFileError, ReturnFileOptions, return_file, write_return_file,
};
use samples::*;

/// A golden file of `bank-formats` (the layout's own examples).
fn golden(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../bank-formats/tests/golden/cpa005/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Three credits (`PAYOUT…0001` to `…0003`).
fn golden_credits() -> Cpa005File {
    parse(&golden("credits.cpa")).unwrap()
}

fn return_options() -> ReturnFileOptions {
    ReturnFileOptions {
        creation_date: date(2026, 3, 9),
        file_creation_number: 1,
        trace_prefix: "000312345".into(),
        write: WriteOptions::default(),
    }
}

/// Items 2 (905) and 1 (911) returned: byte for byte the golden file of returned items, in
/// the original's order.
#[test]
fn golden_return_file() {
    let decisions = [
        ReturnDecision {
            item: 2,
            reason: ReturnCode::new(905).unwrap(),
        },
        ReturnDecision {
            item: 1,
            reason: ReturnCode::new(911).unwrap(),
        },
    ];
    let bytes = write_return_file(&golden_credits(), &decisions, &return_options()).unwrap();
    assert!(
        bytes == golden("returns.cpa"),
        "returns.cpa differs:\n{}",
        String::from_utf8_lossy(&bytes)
    );
    checker::check(&bytes, b"\r\n").unwrap();
}

#[test]
fn return_file_refuses_bad_decisions() {
    let original = golden_credits();
    let code = ReturnCode::new(912).unwrap();
    let options = return_options();
    assert_eq!(
        return_file(
            &original,
            &[ReturnDecision {
                item: 3,
                reason: code
            }],
            &options
        ),
        Err(ReturnFileError::UnknownItem { item: 3 })
    );
    assert_eq!(
        return_file(
            &original,
            &[
                ReturnDecision {
                    item: 0,
                    reason: code
                },
                ReturnDecision {
                    item: 0,
                    reason: code
                }
            ],
            &options
        ),
        Err(ReturnFileError::DuplicateItem { item: 0 })
    );
    let bad_prefix = ReturnFileOptions {
        trace_prefix: "12345".into(),
        ..return_options()
    };
    assert_eq!(
        return_file(
            &original,
            &[ReturnDecision {
                item: 0,
                reason: code
            }],
            &bad_prefix
        ),
        Err(ReturnFileError::TracePrefix)
    );
    let returns = return_file(
        &original,
        &[ReturnDecision {
            item: 0,
            reason: code,
        }],
        &options,
    )
    .unwrap();
    assert_eq!(
        return_file(
            &returns,
            &[ReturnDecision {
                item: 0,
                reason: code
            }],
            &options
        ),
        Err(ReturnFileError::NotOriginated { item: 0 })
    );
    // No decision: a file with a header and a trailer only.
    let empty = write_return_file(&original, &[], &options).unwrap();
    assert_eq!(checker::check(&empty, b"\r\n").unwrap().records, 2);
    assert!(parse(&empty).unwrap().transactions.is_empty());
}

#[test]
fn a_file_of_returned_items_passes_the_checker() {
    let original = parse(&written(&file(vec![
        credit(500, "A"),
        credit(700, "B"),
        credit(900, "C"),
    ])))
    .unwrap();
    let bytes = write_return_file(
        &original,
        &[
            ReturnDecision {
                item: 2,
                reason: ReturnCode::new(905).unwrap(),
            },
            ReturnDecision {
                item: 0,
                reason: ReturnCode::new(912).unwrap(),
            },
        ],
        &ReturnFileOptions {
            creation_date: date(2026, 3, 6),
            file_creation_number: 7,
            trace_prefix: "000300010".into(),
            write: WriteOptions::default(),
        },
    )
    .unwrap();
    let summary = checker::check(&bytes, b"\r\n").unwrap();
    assert_eq!(summary.items, vec![('I', "A".into()), ('I', "C".into())]);
    assert_eq!((summary.credit_count, summary.credit_value), (2, 1400));
}
