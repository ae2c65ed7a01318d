//! `bank_formats::cpa005`: golden files (the bank's file of returned items among them), and the
//! parser on good and bad input. (Which items a bank returns is `bank-simulator`'s.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_format_oracles::cpa005 as checker;
#[path = "cpa005_support/samples.rs"]
mod samples;

use std::path::PathBuf;

use bank_formats::cpa005::{
    Cpa005File, Field, Header, LineEnding, ParseErrorKind, Problem, RecordType, ReturnCode,
    ReturnDetails, WriteOptions, parse, write,
};
use proptest::prelude::*;
use samples::*;

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/cpa005")
        .join(name)
}

/// Compares `bytes` with the golden file `name` byte for byte (`CPA005_BLESS=1` rewrites it),
/// and runs the checker on it.
fn golden(name: &str, bytes: &[u8]) -> checker::Summary {
    let path = golden_path(name);
    if std::env::var_os("CPA005_BLESS").is_some() {
        std::fs::write(&path, bytes).unwrap();
    }
    let expected = std::fs::read(&path).unwrap();
    assert!(expected == bytes, "{name} differs from the writer's output");
    checker::check(&expected, b"\r\n").unwrap()
}

/// Three credits: 1 234.56 + 50.00 + 0.01 dollars.
fn golden_credits() -> Cpa005File {
    let mut second = credit(5_000, "PAYOUT0000000000002");
    second.payee_name = "Bob Tremblay".into();
    second.institution_id = "000100002".into();
    second.account_number = "987654321012".into();
    let mut third = credit(1, "PAYOUT0000000000003");
    third.payee_name = "Chloe Roy".into();
    third.sundry_information = "INV 2026-03".into();
    file(vec![credit(123_456, "PAYOUT0000000000001"), second, third])
}

#[test]
fn golden_credit_file() {
    let bytes = written(&golden_credits());
    let summary = golden("credits.cpa", &bytes);
    // Header, one C record with three of its six segments used, trailer.
    assert_eq!(summary.records, 3);
    let records = records(&bytes);
    // Header: A, count 1, originator, file 42, 2 March 2026 = day 31 + 28 + 2 = 061, data
    // centre 00310, currency CAD.
    assert_eq!(
        field(&records[0], 1, 35),
        "A000000001PAYOUTD001004202606100310"
    );
    assert_eq!(field(&records[0], 56, 58), "CAD");
    // First segment: type 450, amount 123456 cents, 4 March 2026 = day 063, institution,
    // account padded to 12, 22 zeros, stored type 000.
    assert_eq!(
        field(&records[1], 25, 104),
        "4500000123456026063000312345\
         1234567     0000000000000000000000000PAYOUTD        "
    );
    assert_eq!(
        field(&records[1], 25 + 150, 25 + 168),
        "PAYOUT0000000000001"
    );
    assert_eq!(field(&records[1], 25 + 229, 25 + 239), "00000000000");
    // Segments 4 to 6 are unused: blank, as Standard 005 says.
    assert_eq!(field(&records[1], 25 + 720, 1464), " ".repeat(720));
    // Trailer: count 3; debits 0 / 0; credits 123456 + 5000 + 1 = 128457 cents, 3 of them;
    // E and F corrections zero.
    assert_eq!(
        field(&records[2], 1, 68),
        [
            "Z000000003PAYOUTD0010042",
            "00000000000000", // total value of debits
            "00000000",       // total number of debits
            "00000000128457", // total value of credits
            "00000003",       // total number of credits
        ]
        .concat()
    );
    assert_eq!(field(&records[2], 69, 112), "0".repeat(44));
}

/// Names that need cleaning: accents, apostrophes, ampersands, Cyrillic, and cuts.
fn golden_cleaning() -> Cpa005File {
    let mut first = credit(99_999, "PAYOUT0000000000004");
    first.payee_name = "Zoë O'Connor-Lévesque & Søren Åberg Ltd".into();
    first.sundry_information = "Réf: façade №7".into();
    first.originator_short_name = "Payoutd Canada Incorporated".into();
    let mut second = credit(250_000, "PAYOUT0000000000005");
    second.payee_name = "Иван Straße Œuvre 山田".into();
    second.originator_long_name = "L'Équipe des Paiements & Fils du Québec".into();
    file(vec![first, second])
}

#[test]
fn golden_cleaning_file() {
    let bytes = written(&golden_cleaning());
    let summary = golden("cleaning.cpa", &bytes);
    assert_eq!((summary.credit_count, summary.credit_value), (2, 349_999));
    let records = records(&bytes);
    let segment = |k: usize, from: usize, to: usize| {
        field(&records[1], 24 + k * 240 + from, 24 + k * 240 + to).to_owned()
    };
    // "ZOE OCONNOR-LEVESQUE AND SOREN ABERG LTD" cut to 30.
    assert_eq!(segment(0, 81, 110), "ZOE OCONNOR-LEVESQUE AND SOREN");
    // "PAYOUTD CANADA INCORPORATED" cut to 15, trailing blank dropped then padded.
    assert_eq!(segment(0, 66, 80), "PAYOUTD CANADA ");
    // ':' and '№' become blanks, collapsed: "REF FACADE 7".
    assert_eq!(segment(0, 191, 205), "REF FACADE 7   ");
    // Cyrillic and CJK become blanks: "STRASSE OEUVRE".
    assert_eq!(segment(1, 81, 110), format!("{:<30}", "STRASSE OEUVRE"));
    // "LEQUIPE DES PAIEMENTS AND FILS DU QUEBEC" cut to 30.
    assert_eq!(segment(1, 111, 140), "LEQUIPE DES PAIEMENTS AND FILS");
    // Trailer: 99 999 + 250 000 = 349 999 cents, 2 credits.
    assert_eq!(field(&records[2], 47, 68), "0000000034999900000002");
}

/// The golden credits' items 1 and 2 returned (reasons 911 and 905) in the bank's file of 9
/// March 2026, number 1, trace numbers under `000312345` (`bank-simulator` decides the same
/// returns and must write the same bytes).
fn golden_returns() -> Cpa005File {
    let sent = golden_credits();
    let returned = |item: usize, sequence: u32, reason: u16| {
        let mut t = sent.transactions[item].clone();
        t.record_type = RecordType::ReturnedCredit;
        t.item_trace_number = format!("000312345{sequence:013}");
        t.returned = Some(ReturnDetails {
            reason: ReturnCode::new(reason).unwrap(),
        });
        t
    };
    Cpa005File {
        header: Header {
            file_creation_number: 1,
            creation_date: date(2026, 3, 9),
            ..sent.header.clone()
        },
        transactions: vec![returned(1, 1, 911), returned(2, 2, 905)],
    }
}

#[test]
fn golden_return_file() {
    let bytes = written(&golden_returns());
    let summary = golden("returns.cpa", &bytes);
    // The returns come in the original's order: items 1 and 2, 5000 + 1 = 5001 cents.
    assert_eq!(
        summary.items,
        vec![
            ('I', "PAYOUT0000000000002".to_owned()),
            ('I', "PAYOUT0000000000003".to_owned())
        ]
    );
    assert_eq!((summary.credit_count, summary.credit_value), (2, 5_001));
    let records = records(&bytes);
    // Header: 9 March 2026 = day 31 + 28 + 9 = 068, the bank's file number 0001.
    assert_eq!(field(&records[0], 1, 30), "A000000001PAYOUTD0010001026068");
    // Trace numbers: the prefix then a sequence; reason codes in 230-232.
    assert_eq!(
        field(&records[1], 25 + 40, 25 + 61),
        "0003123450000000000001"
    );
    assert_eq!(field(&records[1], 25 + 229, 25 + 239), "91100000000");
    assert_eq!(field(&records[1], 265 + 229, 265 + 239), "90500000000");

    let read = parse(&std::fs::read(golden_path("returns.cpa")).unwrap()).unwrap();
    assert_eq!(read.transactions.len(), 2);
    let first = &read.transactions[0];
    assert_eq!(first.record_type, RecordType::ReturnedCredit);
    assert_eq!(first.cross_reference, "PAYOUT0000000000002");
    assert_eq!(first.amount, 5_000);
    assert_eq!(first.returned.unwrap().reason.value(), 911);
    let second = &read.transactions[1];
    assert_eq!(second.returned.unwrap().reason.value(), 905);
    assert!(second.returned.unwrap().reason.account_is_invalid());
    assert_eq!(read.header.file_creation_number, 1);
}

/// Unused segments written the other way some writers do (zeros in the numeric fields, blanks in
/// the others, as payoutd itself once wrote them) read the same as blank ones.
#[test]
fn zero_filled_unused_segments_read_as_unused() {
    let blank = std::fs::read(golden_path("credits.cpa")).unwrap();
    let zero_filled = std::fs::read(golden_path("credits-zero-filled.cpa")).unwrap();
    assert_ne!(blank, zero_filled);
    assert_eq!(parse(&zero_filled).unwrap(), parse(&blank).unwrap());
    // The checker, which stands for the standard, refuses them.
    let errors = checker::check(&zero_filled, b"\r\n").unwrap_err();
    assert!(
        errors.iter().any(|e| e.contains("must be blank")),
        "{errors:?}"
    );
}

#[test]
fn golden_files_read_back() {
    for (name, sent) in [
        ("credits.cpa", golden_credits()),
        ("cleaning.cpa", golden_cleaning()),
    ] {
        let read = parse(&std::fs::read(golden_path(name)).unwrap()).unwrap();
        assert_eq!(read.header, sent.header, "{name}");
        assert_eq!(read.transactions.len(), sent.transactions.len());
        for (read, sent) in read.transactions.iter().zip(&sent.transactions) {
            assert_eq!(read.amount, sent.amount);
            assert_eq!(read.cross_reference, sent.cross_reference);
            assert_eq!(read.account_number, sent.account_number);
            assert_eq!(read.institution_id, sent.institution_id);
            assert!(read.returned.is_none());
        }
    }
    // A file that needs no cleaning reads back equal.
    let sent = golden_credits();
    let mut read = parse(&std::fs::read(golden_path("credits.cpa")).unwrap()).unwrap();
    for (r, s) in read.transactions.iter_mut().zip(&sent.transactions) {
        r.payee_name = s.payee_name.clone();
    }
    assert_eq!(read, sent);
}

// --- The writer refuses what it cannot write. ---

#[test]
fn the_writer_refuses_values_that_do_not_fit() {
    let refuse = |file: Cpa005File, field: Field| {
        let error = write(&file, &CRLF).unwrap_err();
        assert_eq!(error.field, field, "{error}");
        error
    };
    let mut t = credit(10_000_000_000, "R");
    refuse(file(vec![t.clone()]), Field::Amount);
    t.amount = 0;
    assert_eq!(
        refuse(file(vec![t]), Field::Amount).problem,
        Problem::ZeroAmount
    );
    let mut t = credit(1, "R");
    t.account_number = "1234567890123".into();
    let error = refuse(file(vec![t]), Field::AccountNumber);
    assert!(!error.to_string().contains("1234567890123"), "{error}");
    let mut t = credit(1, "R");
    t.institution_id = "123456789".into();
    refuse(file(vec![t]), Field::InstitutionId);
    let mut t = credit(1, "R");
    t.cross_reference = "THIS-IS-TWENTY-CHARS".into();
    refuse(file(vec![t]), Field::CrossReference);
    let mut t = credit(1, "R");
    t.cross_reference = "lower".into();
    refuse(file(vec![t]), Field::CrossReference);
    let mut t = credit(1, "R");
    t.payee_name = "日本".into();
    refuse(file(vec![t]), Field::PayeeName);
    let mut t = credit(1, "R");
    t.due_date = date(2100, 1, 1);
    refuse(file(vec![t]), Field::DueDate);
    let mut t = credit(1, "R");
    t.record_type = RecordType::ReturnedCredit;
    refuse(file(vec![t]), Field::InvalidDataElementId);
    let mut f = file(vec![credit(1, "R")]);
    f.header.file_creation_number = 10_000;
    refuse(f, Field::FileCreationNumber);
    let mut f = file(vec![credit(1, "R")]);
    f.header.file_creation_number = 0;
    refuse(f, Field::FileCreationNumber);
    let mut f = file(vec![credit(1, "R")]);
    f.header.destination_data_centre = "310".into();
    refuse(f, Field::DestinationDataCentre);
    let mut f = file(vec![credit(1, "R")]);
    f.header.currency = "EUR".into();
    refuse(f, Field::CurrencyCode);
    let mut f = file(vec![credit(1, "R")]);
    f.header.originator_id = "TOO-LONG-ID".into();
    refuse(f, Field::OriginatorId);
}

#[test]
fn mixed_record_types_get_records_of_their_own() {
    let mut debit = credit(300, "D1");
    debit.record_type = RecordType::Debit;
    let bytes = written(&file(vec![credit(100, "C1"), debit, credit(200, "C2")]));
    let records = records(&bytes);
    let types: String = records.iter().map(|r| &r[..1]).collect();
    assert_eq!(types, "ACDCZ");
    let summary = checker::check(&bytes, b"\r\n").unwrap();
    assert_eq!((summary.credit_value, summary.debit_value), (300, 300));
    let read = parse(&bytes).unwrap();
    assert_eq!(read.transactions[1].record_type, RecordType::Debit);
}

// --- The parser on bad input. ---

fn kind(bytes: &[u8]) -> ParseErrorKind {
    parse(bytes).unwrap_err().kind
}

#[test]
fn the_parser_refuses_broken_files() {
    let valid = records(&written(&golden_credits()));
    assert_eq!(kind(b""), ParseErrorKind::Empty);
    assert_eq!(kind(b"\r\n\r\n"), ParseErrorKind::Empty);

    let mut r = valid.clone();
    r[1].pop();
    assert_eq!(
        kind(&join(&r)),
        ParseErrorKind::RecordLength { found: 1463 }
    );

    let mut r = valid.clone();
    r.pop();
    let error = parse(&join(&r)).unwrap_err();
    assert_eq!((error.record, error.kind), (3, ParseErrorKind::Truncated));

    let mut r = valid.clone();
    set(&mut r[2], 47, "00000000128458");
    assert_eq!(
        kind(&join(&r)),
        ParseErrorKind::ControlTotal {
            field: Field::TotalCreditValue,
            found: 128_458,
            computed: 128_457
        }
    );

    let mut r = valid.clone();
    set(&mut r[2], 2, "000000004");
    assert!(matches!(
        kind(&join(&r)),
        ParseErrorKind::ControlTotal {
            field: Field::RecordCount,
            ..
        }
    ));

    let mut r = valid.clone();
    set(&mut r[1], 1, "X");
    assert_eq!(
        kind(&join(&r)),
        ParseErrorKind::UnknownRecordType { found: 'X' }
    );

    let mut r = valid.clone();
    set(&mut r[1], 25 + 13, "026999");
    assert!(matches!(
        kind(&join(&r)),
        ParseErrorKind::Field {
            segment: Some(1),
            field: Field::DueDate,
            ..
        }
    ));

    let mut r = valid.clone();
    set(&mut r[1], 11, "SOMEONE   ");
    assert!(matches!(
        kind(&join(&r)),
        ParseErrorKind::Field {
            field: Field::OriginatorId,
            ..
        }
    ));

    let mut r = valid.clone();
    r.push(valid[2].clone());
    assert!(matches!(
        kind(&join(&r)),
        ParseErrorKind::UnexpectedRecord { found: 'Z', .. }
    ));

    let mut r = valid.clone();
    set(&mut r[1], 1, "I"); // a returned item needs a reason code
    assert!(matches!(
        kind(&join(&r)),
        ParseErrorKind::Field {
            field: Field::InvalidDataElementId,
            ..
        }
    ));

    let mut bytes = join(&valid);
    bytes[100] = 0xC3;
    assert!(matches!(
        kind(&bytes),
        ParseErrorKind::InvalidByte {
            column: 101,
            byte: 0xC3
        }
    ));
}

#[test]
fn the_parser_reads_every_line_ending() {
    let file = golden_credits();
    for ending in [LineEnding::CrLf, LineEnding::Lf, LineEnding::None] {
        let bytes = write(
            &file,
            &WriteOptions {
                line_ending: ending,
            },
        )
        .unwrap();
        assert_eq!(parse(&bytes).unwrap().transactions.len(), 3, "{ending:?}");
    }
}

// --- The parser never panics. ---

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4000)) {
        let _ = parse(&bytes);
    }

    #[test]
    fn random_records_never_panic(
        lines in proptest::collection::vec("[ACDIJZ0-9 A-Z]{0,1470}", 0..5),
    ) {
        let _ = parse(lines.join("\r\n").as_bytes());
    }

    #[test]
    fn mutations_of_a_valid_file_never_panic(
        edits in proptest::collection::vec((0usize..4500, any::<u8>()), 1..8),
        cut in 0usize..4500,
    ) {
        let mut bytes = written(&golden_credits());
        for (at, byte) in edits {
            let at = at % bytes.len();
            bytes[at] = byte;
        }
        let _ = parse(&bytes);
        bytes.truncate(cut);
        let _ = parse(&bytes);
    }

    #[test]
    fn digit_mutations_of_a_valid_file_never_panic(
        edits in proptest::collection::vec((0usize..4500, b'0'..=b'9'), 1..8),
    ) {
        let mut bytes = written(&golden_credits());
        for (at, byte) in edits {
            let at = at % bytes.len();
            if bytes[at].is_ascii_digit() {
                bytes[at] = byte;
            }
        }
        let _ = parse(&bytes);
    }
}
