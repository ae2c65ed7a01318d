//! The spec-driven Standard 005 checker (`bank_format_oracles::cpa005`) against the writer's
//! output, and against deliberately broken files so it is seen to fail.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_format_oracles::cpa005 as checker;
#[path = "cpa005_support/samples.rs"]
mod samples;

use bank_formats::cpa005::{
    Cpa005File, Header, LineEnding, RecordType, Transaction, WriteOptions, parse, write,
};
use proptest::prelude::*;
use samples::*;

fn passes(bytes: &[u8]) -> checker::Summary {
    match checker::check(bytes, b"\r\n") {
        Ok(summary) => summary,
        Err(errors) => panic!("checker refused the file: {errors:#?}"),
    }
}

/// The checker's complaints about `records` (CRLF-joined), which must be refused.
fn refused(records: &[String]) -> Vec<String> {
    match checker::check(&join(records), b"\r\n") {
        Ok(summary) => panic!("checker passed a broken file: {summary:?}"),
        Err(errors) => errors,
    }
}

fn assert_mentions(errors: &[String], needle: &str) {
    assert!(
        errors.iter().any(|e| e.contains(needle)),
        "no complaint mentions {needle:?}: {errors:#?}"
    );
}

#[test]
fn the_writer_passes_the_checker_with_one_record() {
    let file = file(vec![credit(12_345, "REF1"), credit(100, "REF2")]);
    let summary = passes(&written(&file));
    assert_eq!(summary.records, 3);
    assert_eq!((summary.credit_count, summary.credit_value), (2, 12_445));
    assert_eq!((summary.debit_count, summary.debit_value), (0, 0));
}

#[test]
fn the_writer_passes_the_checker_with_several_records() {
    // Thirteen credits: records of 6, 6 and 1 segments.
    let credits = (1..=13)
        .map(|i| credit(i * 1000, &format!("REF{i}")))
        .collect();
    let summary = passes(&written(&file(credits)));
    assert_eq!(summary.records, 5);
    assert_eq!(summary.credit_count, 13);
    assert_eq!(summary.credit_value, 91_000);
    let references: Vec<_> = summary.items.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(
        references,
        (1..=13).map(|i| format!("REF{i}")).collect::<Vec<_>>()
    );
}

#[test]
fn other_line_endings_pass_with_their_ending() {
    let file = file(vec![credit(1, "X")]);
    for (ending, bytes) in [(LineEnding::Lf, &b"\n"[..]), (LineEnding::None, &b""[..])] {
        let written = write(
            &file,
            &WriteOptions {
                line_ending: ending,
            },
        )
        .unwrap();
        checker::check(&written, bytes).unwrap();
        assert!(checker::check(&written, b"\r\n").is_err(), "{ending:?}");
    }
}

// --- The checker fails on broken files. ---

fn valid_records() -> Vec<String> {
    let transactions = (1..=7).map(|i| credit(i * 100, &format!("R{i}"))).collect();
    records(&written(&file(transactions)))
}

#[test]
fn the_sample_is_valid() {
    passes(&join(&valid_records()));
}

#[test]
fn refuses_a_wrong_credit_total() {
    let mut records = valid_records();
    let z = records.len() - 1;
    set(&mut records[z], 47, "00000000002801"); // the credits sum to 2800
    assert_mentions(&refused(&records), "total value of credits is 2801");
}

#[test]
fn refuses_a_wrong_credit_count() {
    let mut records = valid_records();
    let z = records.len() - 1;
    set(&mut records[z], 61, "00000008");
    assert_mentions(&refused(&records), "total number of credits is 8");
}

#[test]
fn refuses_nonzero_debit_and_error_correction_totals() {
    let mut records = valid_records();
    let z = records.len() - 1;
    set(&mut records[z], 39, "00000001");
    set(&mut records[z], 83, "00000001");
    let errors = refused(&records);
    assert_mentions(&errors, "total number of debits is 1");
    assert_mentions(&errors, "total number of E error corrections is 1");
}

#[test]
fn refuses_a_wrong_record_count() {
    let mut records = valid_records();
    set(&mut records[1], 2, "000000003");
    assert_mentions(&refused(&records), "record 2: record count");
}

#[test]
fn refuses_a_wrong_record_length() {
    let mut records = valid_records();
    records[1].pop();
    let errors = refused(&records);
    assert_mentions(&errors, "not a multiple of 1466");
}

#[test]
fn refuses_a_bare_line_feed() {
    let bytes = join(&valid_records());
    let lf: Vec<u8> = String::from_utf8(bytes)
        .unwrap()
        .replace("\r\n", "\n")
        .into_bytes();
    assert!(checker::check(&lf, b"\r\n").is_err());
}

#[test]
fn refuses_characters_outside_the_set() {
    for bad in ["&", "'", "a", "#", "\u{7f}"] {
        let mut records = valid_records();
        // Payee name of segment 1: positions 25 + 80 .. 25 + 109.
        set(&mut records[1], 25 + 80, bad);
        let bytes = join(&records);
        assert!(checker::check(&bytes, b"\r\n").is_err(), "{bad:?}");
    }
    let mut records = valid_records();
    set(&mut records[1], 25 + 80, "&");
    assert_mentions(&refused(&records), "payee name holds '&'");
}

#[test]
fn refuses_non_numeric_and_misjustified_fields() {
    let mut records = valid_records();
    set(&mut records[1], 25 + 3, "00000001 0"); // amount with a blank
    assert_mentions(&refused(&records), "amount is not numeric");

    let mut records = valid_records();
    set(&mut records[1], 25 + 28, " 1234567"); // account right-justified
    assert_mentions(&refused(&records), "payee account number is not digits");

    let mut records = valid_records();
    set(&mut records[1], 25 + 80, " ANN LEE"); // payee name with a leading blank
    assert_mentions(&refused(&records), "payee name is not left-justified");
}

#[test]
fn refuses_bad_dates() {
    let mut records = valid_records();
    set(&mut records[1], 25 + 13, "025366"); // 2025 has 365 days
    assert_mentions(
        &refused(&records),
        "date funds to be available is not a Julian date",
    );

    let mut records = valid_records();
    set(&mut records[0], 25, "126061"); // century digit 1
    assert_mentions(&refused(&records), "creation date is not a Julian date");
}

#[test]
fn refuses_a_bad_header_and_order() {
    let mut records = valid_records();
    set(&mut records[0], 56, "USD");
    assert_mentions(&refused(&records), "currency code is not CAD");

    let mut records = valid_records();
    set(&mut records[2], 11, "OTHERORIG1");
    assert_mentions(&refused(&records), "originator's ID differs");

    let mut records = valid_records();
    set(&mut records[2], 21, "0043");
    assert_mentions(&refused(&records), "file creation number differs");

    let mut records = valid_records();
    records.swap(0, 1);
    assert_mentions(&refused(&records), "expected one of A");

    let mut records = valid_records();
    records.pop();
    assert_mentions(&refused(&records), "expected one of Z");
}

#[test]
fn refuses_bad_unused_segments_and_fillers() {
    // Record 3 holds the seventh credit in segment 1; segment 2 is unused, so blank.
    let mut records = valid_records();
    set(&mut records[2], 25 + 240, &"0".repeat(13));
    assert_mentions(
        &refused(&records),
        "segment 2: an unused segment must be blank, not zero-filled",
    );

    // Anything in it makes it a used segment, and a broken one.
    let mut records = valid_records();
    set(&mut records[2], 25 + 240 + 80, "X");
    assert_mentions(&refused(&records), "segment 2: transaction type");

    let mut records = valid_records();
    set(&mut records[1], 25 + 205, "X"); // segment filler 206-227
    assert_mentions(&refused(&records), "filler is not blank");

    let mut records = valid_records();
    set(&mut records[0], 1000, "X");
    assert_mentions(&refused(&records), "filler is not blank");
}

#[test]
fn refuses_a_return_without_a_reason_code() {
    let mut records = valid_records();
    set(&mut records[1], 1, "I");
    assert_mentions(&refused(&records), "no return reason code");
}

// --- Random valid files pass the checker. ---

fn text_strategy(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            proptest::char::range('a', 'z'),
            proptest::char::range('A', 'Z'),
            Just(' '),
            Just('\''),
            Just('&'),
            Just('é'),
            Just('ß'),
            Just('Ж'),
            Just('日'),
            Just('-'),
            Just('.'),
        ],
        1..max,
    )
    .prop_map(|chars| format!("X{}", chars.into_iter().collect::<String>()))
}

fn transaction_strategy() -> impl Strategy<Value = Transaction> {
    (
        1u64..=9_999_999_999,
        1u16..=999,
        0u32..3000,
        "0[0-9]{8}",
        "[0-9]{1,12}",
        text_strategy(40),
        "[A-Z0-9]{0,19}",
        text_strategy(20),
    )
        .prop_map(
            |(amount, ty, days, inst, account, name, reference, sundry)| {
                let mut t = credit(amount, &reference);
                t.transaction_type = ty;
                t.due_date = date(2024, 1, 1) + chrono::Days::new(u64::from(days));
                t.institution_id = inst;
                t.account_number = account;
                t.payee_name = name;
                t.sundry_information = sundry;
                t
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn random_valid_files_pass_the_checker_and_read_back(
        transactions in proptest::collection::vec(transaction_strategy(), 1..20),
        number in 1u16..=9999,
    ) {
        let file = Cpa005File {
            header: Header { file_creation_number: number, ..header() },
            transactions,
        };
        let bytes = written(&file);
        let summary = passes(&bytes);
        prop_assert_eq!(summary.credit_count as usize, file.transactions.len());
        prop_assert_eq!(summary.credit_value, file.transactions.iter().map(|t| t.amount).sum::<u64>());
        let read = parse(&bytes).unwrap();
        prop_assert_eq!(read.transactions.len(), file.transactions.len());
        for (read, sent) in read.transactions.iter().zip(&file.transactions) {
            prop_assert_eq!(read.record_type, RecordType::Credit);
            prop_assert_eq!(read.amount, sent.amount);
            prop_assert_eq!(read.due_date, sent.due_date);
            prop_assert_eq!(&read.account_number, &sent.account_number);
            prop_assert_eq!(&read.cross_reference, &sent.cross_reference);
            prop_assert_eq!(&read.payee_name, &bank_formats::cpa005::clean_text(&sent.payee_name, 30));
        }
    }
}
