//! The ABA writer and parser: round trips, refusals, and inputs that must never panic the
//! parser. (The bank's return files are `bank-simulator`'s.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_formats::aba::{
    AbaFile, DescriptiveRecord, DetailKind, DetailRecord, Field, Indicator, Location,
    ParseErrorKind, Problem, RECORD_LENGTH, ReturnCode, TransactionCode, WriteError, parse, write,
};
use chrono::NaiveDate;
use proptest::prelude::*;

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn descriptive() -> DescriptiveRecord {
    DescriptiveRecord {
        reel_sequence: 1,
        bank_mnemonic: "CBA".into(),
        user_name: "PAYOUTD PTY LTD".into(),
        apca_user_id: "301500".into(),
        description: "PAYOUTS".into(),
        processing_date: date(2026, 11, 26),
    }
}

fn credit(bsb: &str, account: &str, amount: u64, title: &str, reference: &str) -> DetailRecord {
    DetailRecord {
        bsb: bsb.into(),
        account_number: account.into(),
        transaction_code: TransactionCode::Credit,
        amount,
        account_title: title.into(),
        lodgement_reference: reference.into(),
        trace_bsb: "062000".into(),
        trace_account: "12345678".into(),
        remitter_name: "PAYOUTD".into(),
        kind: DetailKind::Payment {
            indicator: Indicator::None,
            withholding_tax: 0,
        },
    }
}

fn sample() -> AbaFile {
    let mut balancing = credit("062000", "12345678", 30_100, "PAYOUTD PTY LTD", "BALANCE");
    balancing.transaction_code = TransactionCode::Debit;
    AbaFile {
        descriptive: descriptive(),
        details: vec![
            credit(
                "082001",
                "12345",
                10_000,
                "JANE CITIZEN",
                "A1B2C3D4E5F6A7B8C9",
            ),
            credit("033172", "987654321", 20_100, "O'BRIEN AND SONS", "REF 2"),
            balancing,
        ],
    }
}

fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).unwrap()
}

#[test]
fn write_then_parse_gives_the_contents_back() {
    let file = sample();
    let bytes = write(&file).unwrap();
    assert_eq!(parse(&bytes).unwrap(), file);
    let total = file.total();
    assert_eq!(total.credit_total, 30_100);
    assert_eq!(total.debit_total, 30_100);
    assert_eq!(total.net_total, 0);
    assert_eq!(total.record_count, 3);
}

#[test]
fn every_record_is_120_characters_ended_by_crlf() {
    let bytes = write(&sample()).unwrap();
    let body = text(&bytes);
    assert!(body.ends_with("\r\n"));
    let records: Vec<&str> = body.split_terminator("\r\n").collect();
    assert_eq!(records.len(), 5);
    for record in &records {
        assert_eq!(record.len(), RECORD_LENGTH, "{record:?}");
    }
    assert_eq!(
        records[1],
        format!(
            "1082-001    12345 500000010000{:<32}{:<18}062-000 12345678{:<16}00000000",
            "JANE CITIZEN", "A1B2C3D4E5F6A7B8C9", "PAYOUTD"
        )
    );
}

#[test]
fn the_parser_reads_lf_separated_and_unseparated_records() {
    let bytes = write(&sample()).unwrap();
    let lf = text(&bytes).replace("\r\n", "\n");
    assert_eq!(parse(lf.as_bytes()).unwrap(), sample());
    let joined = text(&bytes).replace("\r\n", "");
    assert_eq!(parse(joined.as_bytes()).unwrap(), sample());
    let trailing = format!("{}\r\n\r\n", text(&bytes));
    assert_eq!(parse(trailing.as_bytes()).unwrap(), sample());
}

#[test]
fn free_text_is_cleaned_and_cut() {
    let mut file = sample();
    file.details[0].account_title = "Zoë Ångström & Sons — Ünïcödé Holdings Pty Ltd".into();
    file.details[0].lodgement_reference = "Ref: Жук #42".into();
    file.descriptive.user_name = "payoutd".into();
    let parsed = parse(&write(&file).unwrap()).unwrap();
    assert_eq!(
        parsed.details[0].account_title,
        "ZOE ANGSTROM AND SONS - UNICODE"
    );
    assert_eq!(parsed.details[0].lodgement_reference, "REF 42");
    assert_eq!(parsed.descriptive.user_name, "PAYOUTD");
}

fn field_error(file: &AbaFile) -> (Location, Field, Problem) {
    match write(file) {
        Err(WriteError::Field {
            location,
            field,
            problem,
        }) => (location, field, problem),
        other => panic!("{other:?}"),
    }
}

/// A change that breaks [`sample`].
type Change = Box<dyn Fn(&mut AbaFile)>;

#[test]
fn the_writer_refuses_what_the_layout_cannot_carry() {
    let at0 = Location::Detail { index: 0 };
    let cases: Vec<(Change, Location, Field)> = vec![
        (
            Box::new(|f| f.details[0].bsb = "08200".into()),
            at0,
            Field::Bsb,
        ),
        (
            Box::new(|f| f.details[0].bsb = "082-001".into()),
            at0,
            Field::Bsb,
        ),
        (
            Box::new(|f| f.details[0].account_number = "1234567890".into()),
            at0,
            Field::AccountNumber,
        ),
        (
            Box::new(|f| f.details[0].account_number = "12 345".into()),
            at0,
            Field::AccountNumber,
        ),
        (
            Box::new(|f| f.details[0].account_number = String::new()),
            at0,
            Field::AccountNumber,
        ),
        (Box::new(|f| f.details[0].amount = 0), at0, Field::Amount),
        (
            Box::new(|f| f.details[0].amount = 10_000_000_000),
            at0,
            Field::Amount,
        ),
        (
            Box::new(|f| f.details[0].account_title = "Иван".into()),
            at0,
            Field::AccountTitle,
        ),
        (
            Box::new(|f| f.details[0].lodgement_reference = "  ".into()),
            at0,
            Field::LodgementReference,
        ),
        (
            Box::new(|f| f.details[0].transaction_code = TransactionCode::Pay),
            at0,
            Field::TransactionCode,
        ),
        (
            Box::new(|f| {
                f.details[0].kind = DetailKind::Payment {
                    indicator: Indicator::NewOrVaried,
                    withholding_tax: 0,
                }
            }),
            at0,
            Field::Indicator,
        ),
        (
            Box::new(|f| {
                f.details[0].kind = DetailKind::Payment {
                    indicator: Indicator::None,
                    withholding_tax: 100_000_000,
                }
            }),
            at0,
            Field::WithholdingTax,
        ),
        (
            Box::new(|f| f.details[0].trace_bsb = "12345".into()),
            at0,
            Field::TraceBsb,
        ),
        (
            Box::new(|f| f.details[0].trace_account = "A1".into()),
            at0,
            Field::TraceAccount,
        ),
        (
            Box::new(|f| f.details[0].remitter_name = "".into()),
            at0,
            Field::RemitterName,
        ),
        (
            Box::new(|f| {
                f.details[0].kind = DetailKind::Returned {
                    return_code: ReturnCode::AccountClosed,
                    original_processing_day: 1,
                    original_user_id: "301500".into(),
                }
            }),
            at0,
            Field::RecordType,
        ),
        (
            Box::new(|f| f.descriptive.bank_mnemonic = "cba".into()),
            Location::Descriptive,
            Field::BankMnemonic,
        ),
        (
            Box::new(|f| f.descriptive.apca_user_id = "30150".into()),
            Location::Descriptive,
            Field::ApcaUserId,
        ),
        (
            Box::new(|f| f.descriptive.reel_sequence = 0),
            Location::Descriptive,
            Field::ReelSequence,
        ),
        (
            Box::new(|f| f.descriptive.processing_date = date(1999, 12, 31)),
            Location::Descriptive,
            Field::ProcessingDate,
        ),
        (
            Box::new(|f| f.descriptive.description = "".into()),
            Location::Descriptive,
            Field::Description,
        ),
        (
            Box::new(|f| {
                f.details[0].amount = 9_999_999_999;
                f.details[1].amount = 9_999_999_999;
                f.details[2].amount = 1;
            }),
            Location::Total,
            Field::CreditTotal,
        ),
    ];
    for (i, (change, location, field)) in cases.into_iter().enumerate() {
        let mut file = sample();
        change(&mut file);
        let (got_location, got_field, _) = field_error(&file);
        assert_eq!((got_location, got_field), (location, field), "case {i}");
    }
    let empty = AbaFile {
        descriptive: descriptive(),
        details: vec![],
    };
    assert_eq!(write(&empty), Err(WriteError::NoDetails));
}

#[test]
fn errors_never_show_account_data() {
    let mut file = sample();
    file.details[0].account_number = "98765432109".into();
    let message = write(&file).unwrap_err().to_string();
    assert!(!message.contains("98765432109"), "{message}");
    let bytes = write(&sample()).unwrap();
    let mut broken = text(&bytes).to_owned();
    broken.replace_range(131..138, "08X-001");
    let message = parse(broken.as_bytes()).unwrap_err().to_string();
    assert!(!message.contains("08X"), "{message}");
    let shown = format!("{:?}", sample());
    for secret in ["082001", "12345", "987654321", "062000", "12345678"] {
        assert!(!shown.contains(secret), "{shown}");
    }
}

fn parse_error(bytes: &[u8]) -> (usize, ParseErrorKind) {
    let e = parse(bytes).unwrap_err();
    (e.line, e.kind)
}

/// `sample()` written, with `range` of the whole text replaced by `with`.
fn broken(range: std::ops::Range<usize>, with: &str) -> Vec<u8> {
    let mut body = text(&write(&sample()).unwrap()).to_owned();
    body.replace_range(range, with);
    body.into_bytes()
}

#[test]
fn the_parser_refuses_broken_files() {
    // Records start at 0, 122, 244, 366, 488 (120 characters and CRLF each).
    assert_eq!(parse_error(b"").1, ParseErrorKind::Empty);
    assert_eq!(parse_error(b"\r\n\n").1, ParseErrorKind::Empty);
    assert_eq!(
        parse_error(&broken(0..1, "1")),
        (
            1,
            ParseErrorKind::UnexpectedRecord {
                found: '1',
                expected: "0 (descriptive record)"
            }
        )
    );
    assert_eq!(
        parse_error(&broken(488 + 30..488 + 40, "0000030101")),
        (
            5,
            ParseErrorKind::Total {
                field: Field::CreditTotal,
                found: 30_101,
                computed: 30_100
            }
        )
    );
    assert_eq!(
        parse_error(&broken(488 + 74..488 + 80, "000004")).1,
        ParseErrorKind::Total {
            field: Field::RecordCount,
            found: 4,
            computed: 3
        }
    );
    assert_eq!(
        parse_error(&broken(488 + 20..488 + 30, "0000000001")).1,
        ParseErrorKind::Total {
            field: Field::NetTotal,
            found: 1,
            computed: 0
        }
    );
    assert_eq!(
        parse_error(&broken(122 + 50..122 + 51, "")),
        (2, ParseErrorKind::RecordLength { found: 119 })
    );
    assert_eq!(
        parse_error(&broken(122 + 40..122 + 41, "é")),
        (2, ParseErrorKind::InvalidByte { column: 41 })
    );
    assert_eq!(
        parse_error(&broken(122 + 20..122 + 21, "X")).1,
        ParseErrorKind::Field {
            field: Field::Amount,
            problem: Problem::NotDigits { digits: 10 }
        }
    );
    assert_eq!(
        parse_error(&broken(74..80, "310226")).1,
        ParseErrorKind::Field {
            field: Field::ProcessingDate,
            problem: Problem::InvalidDate
        }
    );
    assert!(matches!(
        parse_error(&broken(122 + 18..122 + 20, "22")).1,
        ParseErrorKind::Field {
            field: Field::TransactionCode,
            problem: Problem::Unsupported
        }
    ));
    assert!(matches!(
        parse_error(&broken(5..6, "X")).1,
        ParseErrorKind::Field {
            field: Field::Blank,
            ..
        }
    ));
    assert!(matches!(
        parse_error(&broken(488 + 1..488 + 8, "999-998")).1,
        ParseErrorKind::Field {
            field: Field::TotalFiller,
            ..
        }
    ));
    // The file ends before its total record; a record after it.
    assert_eq!(
        parse_error(&broken(488..610, "")).1,
        ParseErrorKind::Truncated
    );
    let mut extra = write(&sample()).unwrap();
    extra.extend_from_slice(&write(&sample()).unwrap()[..122]);
    assert_eq!(
        parse_error(&extra),
        (
            6,
            ParseErrorKind::UnexpectedRecord {
                found: '0',
                expected: "the end of the file"
            }
        )
    );
}

fn clean_text_strategy(width: usize) -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("[A-Z0-9][A-Z0-9'(),./-]{{0,{}}}", width - 1)).unwrap()
}

prop_compose! {
    fn arb_detail()(
        bsb in "[0-9]{6}",
        account in "[0-9]{5,9}",
        amount in 1u64..=99_999_999,
        title in clean_text_strategy(32),
        reference in clean_text_strategy(18),
        trace_bsb in "[0-9]{6}",
        trace_account in "[0-9]{5,9}",
        remitter in clean_text_strategy(16),
        debit in proptest::bool::weighted(0.1),
    ) -> DetailRecord {
        DetailRecord {
            bsb,
            account_number: account,
            transaction_code: if debit { TransactionCode::Debit } else { TransactionCode::Credit },
            amount,
            account_title: title,
            lodgement_reference: reference,
            trace_bsb,
            trace_account,
            remitter_name: remitter,
            kind: DetailKind::Payment { indicator: Indicator::None, withholding_tax: 0 },
        }
    }
}

prop_compose! {
    /// Random files the writer accepts, with text already in the form it writes.
    pub fn arb_file()(
        mnemonic in "[A-Z]{3}",
        user in clean_text_strategy(26),
        user_id in "[0-9]{6}",
        description in clean_text_strategy(12),
        day in 0u32..36_500,
        details in proptest::collection::vec(arb_detail(), 1..20),
    ) -> AbaFile {
        AbaFile {
            descriptive: DescriptiveRecord {
                reel_sequence: 1,
                bank_mnemonic: mnemonic,
                user_name: user,
                apca_user_id: user_id,
                description,
                processing_date: date(2000, 1, 1) + chrono::Days::new(u64::from(day)),
            },
            details,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_valid_files_round_trip(file in arb_file()) {
        let bytes = write(&file).unwrap();
        prop_assert_eq!(parse(&bytes).unwrap(), file);
    }

    #[test]
    fn random_bytes_never_panic_the_parser(bytes in proptest::collection::vec(any::<u8>(), 0..1000)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn random_records_never_panic_the_parser(
        records in proptest::collection::vec("[0-9 127\\-A-Z]{118,122}", 0..6)
    ) {
        let _ = parse(records.join("\r\n").as_bytes());
    }

    #[test]
    fn mutated_valid_files_never_panic_the_parser(
        file in arb_file(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let mut bytes = write(&file).unwrap();
        for (index, byte, op) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = index.index(bytes.len());
            match op {
                0 => bytes[i] = byte,
                1 => { bytes.remove(i); }
                _ => bytes.insert(i, byte),
            }
        }
        if let Ok(parsed) = parse(&bytes) {
            // Whatever parses must be consistent with its own total.
            let total = parsed.total();
            prop_assert_eq!(total.record_count, parsed.details.len() as u64);
        }
    }
}
