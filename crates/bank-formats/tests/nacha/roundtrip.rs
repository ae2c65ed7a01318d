//! Written files parse back to the same contents.

use bank_formats::nacha::{
    Addenda, Addenda05, Batch, BatchHeader, EntryDetail, FileHeader, LineEnding, NachaFile,
    SecCode, ServiceClass, TransactionCode, WriteOptions, parse, write,
};
use chrono::NaiveTime;
use proptest::prelude::*;

use super::support::{batch_header, credit, date, header, sample};

/// Contents already in the form the writer writes (upper case, no seconds), so that parsing the
/// output gives them back unchanged.
fn clean_file() -> NachaFile {
    let mut first = credit("011000015", 12_345, 1);
    first.individual_name = "JOSE MULLER".into();
    first.addenda.push(Addenda::PaymentRelated(Addenda05 {
        payment_related_information: "INVOICE 42 - THANKS".into(),
    }));
    let mut prenote = credit("231380104", 0, 2);
    prenote.transaction_code = TransactionCode::SavingsCreditPrenote;
    let mut savings = credit("021000021", 9_999_999_999, 3);
    savings.transaction_code = TransactionCode::SavingsCredit;
    savings.discretionary_data = "XY".into();
    let mut ccd = batch_header(7);
    ccd.sec_code = SecCode::Ccd;
    ccd.company_discretionary_data = "BATCH 7".into();
    let mut ccd_entry = credit("011000015", 50, 1);
    ccd_entry.transaction_code = TransactionCode::CheckingCreditPrenote;
    ccd_entry.amount = 0;
    let mut h = header();
    h.immediate_destination_name = "JPMORGAN CHASE".into();
    h.immediate_origin_name = "PAYOUTD INC".into();
    h.reference_code = "REF00001".into();
    let mut batch1 = batch_header(1);
    batch1.company_name = "PAYOUTD".into();
    let mut batch2 = ccd;
    batch2.company_name = "PAYOUTD".into();
    NachaFile {
        header: h,
        batches: vec![
            Batch {
                header: batch1,
                entries: vec![first, prenote, savings],
            },
            Batch {
                header: batch2,
                entries: vec![ccd_entry],
            },
        ],
    }
}

#[test]
fn write_then_parse_gives_the_contents_back() {
    let file = clean_file();
    for line_ending in [LineEnding::Lf, LineEnding::CrLf] {
        let bytes = write(&file, &WriteOptions { line_ending }).unwrap();
        assert_eq!(parse(&bytes).unwrap(), file, "{line_ending:?}");
    }
}

#[test]
fn parse_gives_the_cleaned_contents() {
    let parsed = parse(&write(&sample(), &WriteOptions::default()).unwrap()).unwrap();
    assert_eq!(parsed.batches[0].entries[0].individual_name, "JOSE MULLER");
    assert_eq!(parsed.batches[0].header.company_name, "PAYOUTD");
    assert_eq!(
        parsed.batches[0].entries[0].addenda,
        vec![Addenda::PaymentRelated(Addenda05 {
            payment_related_information: "INVOICE 42 - THANKS".into()
        })]
    );
    assert_eq!(parsed.control(), sample().control());
}

#[test]
fn nine_digit_origin_and_no_time_round_trip() {
    let mut file = clean_file();
    file.header.immediate_origin = "231380104".into();
    file.header.creation_time = None;
    file.header.reference_code = String::new();
    let bytes = write(&file, &WriteOptions::default()).unwrap();
    assert_eq!(parse(&bytes).unwrap(), file);
}

fn text(width: usize) -> impl Strategy<Value = String> {
    // Allowed characters, no blank at either end (the writer trims, the parser drops the fill).
    proptest::string::string_regex(&format!(
        "([A-Z0-9&'()*+,./:;=?@_-]([A-Z0-9 &'()*+,./:;=?@_-]{{0,{}}}[A-Z0-9&'()*+,./:;=?@_-])?)?",
        width - 2
    ))
    .unwrap()
}

fn routing() -> impl Strategy<Value = String> {
    "[0-9]{8}".prop_map(|first8| {
        let check = bank_codes::us_routing::check_digit(&first8).unwrap();
        format!("{first8}{check}")
    })
}

fn entry() -> impl Strategy<Value = EntryDetail> {
    (
        routing(),
        "[A-Z0-9-]{1,17}",
        1..=9_999_999_999u64,
        text(15),
        text(22).prop_filter("required", |s| !s.is_empty()),
        text(2),
        prop::option::of(text(80)),
        prop_oneof![
            Just(TransactionCode::CheckingCredit),
            Just(TransactionCode::SavingsCredit),
            Just(TransactionCode::CheckingCreditPrenote),
            Just(TransactionCode::SavingsCreditPrenote),
        ],
    )
        .prop_map(
            |(receiving_dfi, account_number, amount, individual_id, name, disc, info, code)| {
                EntryDetail {
                    transaction_code: code,
                    receiving_dfi,
                    account_number,
                    amount: if code.is_prenote() { 0 } else { amount },
                    individual_id,
                    individual_name: name,
                    discretionary_data: disc,
                    trace_number: String::new(),
                    addenda: info
                        .map(|payment_related_information| {
                            Addenda::PaymentRelated(Addenda05 {
                                payment_related_information,
                            })
                        })
                        .into_iter()
                        .collect(),
                }
            },
        )
}

fn file() -> impl Strategy<Value = NachaFile> {
    let batch = (
        text(16).prop_filter("required", |s| !s.is_empty()),
        "[0-9]{8}",
        prop::collection::vec(entry(), 1..12),
        prop::bool::ANY,
    );
    prop::collection::vec(batch, 1..4).prop_map(|batches| NachaFile {
        header: FileHeader {
            immediate_destination: "021000021".into(),
            immediate_origin: "1234567890".into(),
            creation_date: date(2031, 12, 31),
            creation_time: NaiveTime::from_hms_opt(23, 59, 0),
            file_id_modifier: '7',
            immediate_destination_name: "DEST".into(),
            immediate_origin_name: "ORIGIN".into(),
            reference_code: String::new(),
        },
        batches: batches
            .into_iter()
            .enumerate()
            .map(|(i, (company_name, odfi, entries, ccd))| Batch {
                header: BatchHeader {
                    service_class: ServiceClass::CreditsOnly,
                    company_name,
                    company_discretionary_data: String::new(),
                    company_identification: "1234567890".into(),
                    sec_code: if ccd { SecCode::Ccd } else { SecCode::Ppd },
                    company_entry_description: "PAYOUT".into(),
                    company_descriptive_date: String::new(),
                    effective_entry_date: Some(date(2032, 1, 2)),
                    originating_dfi: odfi.clone(),
                    batch_number: u32::try_from(i).unwrap() * 3 + 1,
                },
                entries: entries
                    .into_iter()
                    .enumerate()
                    .map(|(n, mut entry)| {
                        entry.trace_number = format!("{odfi}{:07}", n * 5 + 1);
                        entry
                    })
                    .collect(),
            })
            .collect(),
    })
}

proptest! {
    #[test]
    fn generated_files_round_trip(file in file()) {
        let bytes = write(&file, &WriteOptions::default()).unwrap();
        prop_assert_eq!(bytes.len() % 95, 94);
        let parsed = parse(&bytes).unwrap();
        prop_assert_eq!(&parsed, &file);
        let lines = bytes.split(|b| *b == b'\n').count();
        prop_assert_eq!(lines % 10, 0);
    }
}
