//! Bad input gives an error naming the line and the problem, never a panic.

use bank_formats::nacha::{
    Field, ParseError, ParseErrorKind, ParseOptions, Problem, WriteOptions, parse, parse_with,
    write,
};
use proptest::prelude::*;

use super::support::{sample, written};

/// The sample file's records (file header, batch header, entry, addenda, entry, batch control,
/// file control, three padding records), to edit.
fn lines() -> Vec<String> {
    written(&sample()).split('\n').map(str::to_owned).collect()
}

fn join(lines: &[String]) -> Vec<u8> {
    lines.join("\n").into_bytes()
}

fn error(bytes: &[u8]) -> ParseError {
    parse(bytes).unwrap_err()
}

fn at(line: usize, kind: ParseErrorKind) -> ParseError {
    ParseError { line, kind }
}

fn set(line: &mut String, from: usize, value: &str) {
    line.replace_range(from - 1..from - 1 + value.len(), value);
}

#[test]
fn the_sample_parses() {
    assert!(parse(&join(&lines())).is_ok());
}

#[test]
fn separators_padding_and_trailing_newlines_are_tolerated() {
    let lines = lines();
    let expected = parse(&join(&lines)).unwrap();
    let variants = [
        lines.join("\r\n"),
        lines.join("\n") + "\n",
        lines.join("\r\n") + "\r\n\r\n",
        lines[..7].join("\n"),
        lines[..8].join("\n") + "\n",
        lines.concat(),
        lines[..7].concat(),
    ];
    for variant in variants {
        assert_eq!(parse(variant.as_bytes()).unwrap(), expected);
    }
}

#[test]
fn wrong_record_length() {
    let mut short = lines();
    short[2].pop();
    assert_eq!(
        error(&join(&short)),
        at(3, ParseErrorKind::RecordLength { found: 93 })
    );
    let mut long = lines();
    long[4].push(' ');
    assert_eq!(
        error(&join(&long)),
        at(5, ParseErrorKind::RecordLength { found: 95 })
    );
    // With trailing blanks stripped (the file control record becomes 55 characters long), the
    // file is read only when short records are allowed, and never with a long record.
    let lenient = ParseOptions {
        allow_short_records: true,
    };
    let stripped: Vec<String> = self::lines()
        .iter()
        .map(|l| l.trim_end().to_owned())
        .collect();
    assert_eq!(
        error(&join(&stripped)),
        at(7, ParseErrorKind::RecordLength { found: 55 })
    );
    assert_eq!(
        parse_with(&join(&stripped), &lenient).unwrap(),
        parse(&join(&self::lines())).unwrap()
    );
    assert_eq!(
        parse_with(&join(&long), &lenient).unwrap_err(),
        at(5, ParseErrorKind::RecordLength { found: 95 })
    );
    let mut blank = lines();
    blank.insert(3, String::new());
    assert_eq!(
        error(&join(&blank)),
        at(4, ParseErrorKind::RecordLength { found: 0 })
    );
    // Without separators, a length that is not a multiple of 94 leaves a short last record.
    let mut concatenated = lines()[..7].concat();
    concatenated.pop();
    assert_eq!(
        error(concatenated.as_bytes()),
        at(7, ParseErrorKind::RecordLength { found: 93 })
    );
}

#[test]
fn unknown_record_type() {
    let mut lines = lines();
    set(&mut lines[3], 1, "3");
    assert_eq!(
        error(&join(&lines)),
        at(4, ParseErrorKind::UnknownRecordType { found: '3' })
    );
}

#[test]
fn non_ascii_and_control_characters() {
    let mut accented = lines();
    accented[2].replace_range(54..56, "é");
    assert_eq!(
        error(&join(&accented)),
        at(
            3,
            ParseErrorKind::InvalidByte {
                column: 55,
                byte: 0xc3
            }
        )
    );
    let mut tab = lines();
    tab[1].replace_range(9..10, "\t");
    assert_eq!(
        error(&join(&tab)),
        at(
            2,
            ParseErrorKind::InvalidByte {
                column: 10,
                byte: 0x09
            }
        )
    );
    // Records separated by bare carriage returns.
    let cr = lines().join("\r");
    assert!(matches!(
        error(cr.as_bytes()).kind,
        ParseErrorKind::InvalidByte { byte: 0x0d, .. }
    ));
    assert_eq!(error(b""), at(1, ParseErrorKind::Empty));
    assert_eq!(error(b"\n\r\n"), at(1, ParseErrorKind::Empty));
}

#[test]
fn batch_control_totals_are_checked() {
    let cases = [
        (5, "000004", Field::EntryAddendaCount, 4, 3),
        (11, "0024238012", Field::EntryHash, 24_238_012, 24_238_011),
        (21, "000000000001", Field::TotalDebit, 1, 0),
        (33, "000000012347", Field::TotalCredit, 12_347, 12_346),
    ];
    for (position, value, field, found, computed) in cases {
        let mut lines = lines();
        set(&mut lines[5], position, value);
        assert_eq!(
            error(&join(&lines)),
            at(
                6,
                ParseErrorKind::ControlTotal {
                    field,
                    found,
                    computed
                }
            ),
            "{field}"
        );
    }
    // An entry whose amount was changed no longer matches its batch control.
    let mut lines = lines();
    set(&mut lines[4], 30, "0000000002");
    assert_eq!(
        error(&join(&lines)),
        at(
            6,
            ParseErrorKind::ControlTotal {
                field: Field::TotalCredit,
                found: 12_346,
                computed: 12_347
            }
        )
    );
}

#[test]
fn batch_control_copies_of_the_header_are_checked() {
    let mut lines = lines();
    set(&mut lines[5], 88, "0000002");
    assert_eq!(
        error(&join(&lines)),
        at(
            6,
            ParseErrorKind::HeaderMismatch {
                field: Field::BatchNumber,
                found: "0000002".into(),
                header: "0000001".into()
            }
        )
    );
}

#[test]
fn file_control_totals_are_checked() {
    let cases = [
        (2, "000002", Field::BatchCount, 2, 1),
        (8, "000002", Field::BlockCount, 2, 1),
        (14, "00000004", Field::EntryAddendaCount, 4, 3),
        (22, "0000000000", Field::EntryHash, 0, 24_238_011),
        (44, "000000012345", Field::TotalCredit, 12_345, 12_346),
    ];
    for (position, value, field, found, computed) in cases {
        let mut lines = lines();
        set(&mut lines[6], position, value);
        assert_eq!(
            error(&join(&lines)),
            at(
                7,
                ParseErrorKind::ControlTotal {
                    field,
                    found,
                    computed
                }
            ),
            "{field}"
        );
    }
}

#[test]
fn structure_is_checked() {
    let all = lines();
    // Missing file control (padding alone does not count).
    assert_eq!(
        error(&join(&all[..6])),
        at(
            6,
            ParseErrorKind::Truncated {
                missing: "file control"
            }
        )
    );
    assert!(matches!(
        error(&join(&[&all[..6], &all[7..]].concat())).kind,
        ParseErrorKind::UnexpectedRecord { found: '9', .. }
    ));
    // Missing batch control.
    assert_eq!(
        error(&join(&all[..5])),
        at(
            5,
            ParseErrorKind::Truncated {
                missing: "batch control"
            }
        )
    );
    // A record after the file control other than padding.
    let mut after = all.clone();
    after[8] = all[2].clone();
    assert!(matches!(
        error(&join(&after)),
        ParseError {
            line: 9,
            kind: ParseErrorKind::UnexpectedRecord { found: '6', .. }
        }
    ));
    // An addenda record straight after the batch header.
    let mut orphan = all.clone();
    orphan.swap(2, 3);
    assert!(matches!(
        error(&join(&orphan)),
        ParseError {
            line: 3,
            kind: ParseErrorKind::UnexpectedRecord { found: '7', .. }
        }
    ));
    // No file header.
    assert!(matches!(
        error(&join(&all[1..])).kind,
        ParseErrorKind::UnexpectedRecord { found: '5', .. }
    ));
}

#[test]
fn entry_fields_are_checked() {
    let field_error =
        |line: usize, field, problem| at(line, ParseErrorKind::Field { field, problem });
    let mut lines = lines();
    set(&mut lines[2], 79, "0");
    assert_eq!(
        error(&join(&lines)),
        field_error(
            3,
            Field::AddendaRecordIndicator,
            Problem::AddendaIndicator {
                found: '0',
                addenda: 1
            }
        )
    );
    let mut lines = self::lines();
    set(&mut lines[2], 12, "6");
    assert_eq!(
        error(&join(&lines)),
        field_error(3, Field::CheckDigit, Problem::CheckDigit { expected: 5 })
    );
    let mut lines = self::lines();
    set(&mut lines[2], 30, "00000123X5");
    assert_eq!(
        error(&join(&lines)),
        field_error(3, Field::Amount, Problem::NotDigits { digits: 10 })
    );
    let mut lines = self::lines();
    set(&mut lines[2], 2, "27");
    assert_eq!(
        error(&join(&lines)),
        field_error(
            3,
            Field::TransactionCode,
            Problem::ServiceClassMismatch { service_class: 220 }
        )
    );
    let mut lines = self::lines();
    set(&mut lines[2], 2, "42");
    assert_eq!(
        error(&join(&lines)),
        field_error(
            3,
            Field::TransactionCode,
            Problem::Unsupported { found: "42".into() }
        )
    );
    let mut lines = self::lines();
    set(&mut lines[1], 51, "CTX");
    assert_eq!(
        error(&join(&lines)),
        field_error(
            2,
            Field::StandardEntryClassCode,
            Problem::Unsupported {
                found: "CTX".into()
            }
        )
    );
    let mut lines = self::lines();
    set(&mut lines[3], 84, "0002");
    assert_eq!(
        error(&join(&lines)),
        field_error(
            4,
            Field::AddendaSequenceNumber,
            Problem::Sequence {
                expected: 1,
                found: 2
            }
        )
    );
    let mut lines = self::lines();
    set(&mut lines[0], 35, "095");
    assert_eq!(
        error(&join(&lines)),
        field_error(
            1,
            Field::RecordSize,
            Problem::Expected {
                expected: "094",
                found: "095".into()
            }
        )
    );
    let mut lines = self::lines();
    set(&mut lines[0], 24, "250230");
    assert_eq!(
        error(&join(&lines)),
        field_error(
            1,
            Field::FileCreationDate,
            Problem::InvalidDateTime {
                found: "250230".into(),
                format: "YYMMDD"
            }
        )
    );
}

#[test]
fn errors_say_where_and_what() {
    let mut lines = lines();
    set(&mut lines[5], 33, "000000012347");
    assert_eq!(
        error(&join(&lines)).to_string(),
        "line 6: total credit entry dollar amount is 12347, the records give 12346"
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        let _ = parse(&bytes);
        let _ = parse_with(&bytes, &ParseOptions { allow_short_records: true });
    }

    /// Random records made of record-type characters, digits and blanks get deeper into the
    /// parser than random bytes.
    #[test]
    fn arbitrary_records_never_panic(
        records in prop::collection::vec("[156789][0-9 A-Z]{0,95}", 0..25),
    ) {
        let _ = parse(records.join("\n").as_bytes());
        let _ = parse_with(records.join("\r\n").as_bytes(), &ParseOptions { allow_short_records: true });
    }

    #[test]
    fn edited_files_never_panic(
        edits in prop::collection::vec((0usize..950, any::<u8>()), 1..6),
    ) {
        let mut bytes = write(&sample(), &WriteOptions::default()).unwrap();
        for (position, byte) in edits {
            if let Some(b) = bytes.get_mut(position) {
                *b = byte;
            }
        }
        let _ = parse(&bytes);
    }
}
