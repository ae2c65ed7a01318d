//! The IB4B parser on bad input: the error it gives for each kind of damage, and no panic on
//! random bytes or random damage to a valid file. Also the writer's refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_formats::ib4b::{
    self, DirectCreditFile, Field, Header, Ib4bFile, Location, ParseErrorKind, Problem,
    StatementDetails, Transaction, TransactionCode, WriteError,
};
use chrono::NaiveDate;
use proptest::prelude::*;

const VALID: &str = "1,,,,0102420100194000,7,261127,261125,\r\n\
2,0109020068389000,50,12345,Ada Lovelace,0A1B2C3D4E5F,,,Invoice 1001,Payoutd Ltd,PAYOUTS,0A1B2C3D4E5F,\r\n\
2,0865231954512001,50,500,Grace Hopper,FEDCBA987654,,,Refund 7,Payoutd Ltd,PAYOUTS,FEDCBA987654,\r\n\
3,12845,2,74252022901\r\n";

fn kind(bytes: &str) -> (usize, ParseErrorKind) {
    let e = ib4b::parse(bytes.as_bytes()).unwrap_err();
    (e.line, e.kind)
}

fn field(f: Field, p: Problem) -> ParseErrorKind {
    ParseErrorKind::Field(f, p)
}

#[test]
fn valid_files_parse_with_crlf_or_lf() {
    assert!(matches!(
        ib4b::parse(VALID.as_bytes()),
        Ok(Ib4bFile::DirectCredit(_))
    ));
    let lf = VALID.replace("\r\n", "\n");
    assert!(ib4b::parse(lf.as_bytes()).is_ok());
    assert!(ib4b::parse(lf.trim_end().as_bytes()).is_ok());
}

#[test]
fn each_kind_of_damage_is_named() {
    let cases: Vec<(String, (usize, ParseErrorKind))> = vec![
        (String::new(), (0, ParseErrorKind::Empty)),
        ("\r\n".into(), (1, ParseErrorKind::BlankLine)),
        (VALID.replace("Ada", "Adé"), (2, ParseErrorKind::BadByte)),
        (VALID.replacen("\r\n", "\r", 1), (1, ParseErrorKind::BareCarriageReturn)),
        (VALID.replacen("1,", "2,", 1), (1, ParseErrorKind::UnexpectedRecord)),
        (
            VALID.replace(",261125,", ",261125,I,"),
            (1, ParseErrorKind::FieldCount { expected: 9, found: 10 }),
        ),
        (VALID.replace("1,,,,", "1,123,,,"), (1, field(Field::AuthCode, Problem::NotBlank))),
        (VALID.replace(",7,", ",6,"), (1, field(Field::BatchType, Problem::UnknownValue))),
        (VALID.replace("261127", "261131"), (1, field(Field::DueDate, Problem::BadDate))),
        (
            VALID.replace("0102420100194000", "010242010019400"),
            (1, field(Field::OriginatingAccount, Problem::NotDigits { width: 16 })),
        ),
        (VALID.replace(",50,500,", ",52,500,"), (3, field(Field::TransactionCode, Problem::UnknownValue))),
        (VALID.replace(",50,500,", ",50,0,"), (3, field(Field::Amount, Problem::Zero))),
        (
            VALID.replace(",50,500,", ",50,12345678901,"),
            (3, field(Field::Amount, Problem::NotDigits { width: 10 })),
        ),
        (
            VALID.replace("Grace Hopper", "Grace Brewster Murray Hopper"),
            (3, field(Field::OtherPartyName, Problem::TooLong { max: 20 })),
        ),
        (
            VALID.replace("Refund 7", "Refund@7"),
            (3, field(Field::OtherPartyParticulars, Problem::BadCharacter)),
        ),
        (VALID.replace("Grace Hopper", ""), (3, field(Field::OtherPartyName, Problem::Empty))),
        (
            VALID.replace("3,12845,", "3,12846,"),
            (4, field(Field::TotalAmount, Problem::Mismatch)),
        ),
        (
            VALID.replace(",2,742", ",3,742"),
            (4, field(Field::TransactionCount, Problem::Mismatch)),
        ),
        (
            VALID.replace("74252022901", "74252022900"),
            (4, field(Field::HashTotal, Problem::Mismatch)),
        ),
        (
            VALID.replace("74252022901", "7425202290"),
            (4, field(Field::HashTotal, Problem::NotDigits { width: 11 })),
        ),
        (
            VALID.replace("3,12845,2,74252022901\r\n", ""),
            (3, ParseErrorKind::MissingControl),
        ),
        (format!("{VALID}3,0,0,00000000000\r\n"), (5, ParseErrorKind::AfterControl)),
        (
            "1,,,,0102420100194000,7,261127,261125,\r\n3,0,0,00000000000\r\n".into(),
            (2, ParseErrorKind::NoTransactions),
        ),
        (
            "1,DISHONOUR,0102420100194000,261127,261130\r\n2,0865231954512001,50,500,Grace Hopper,PAYOUTS,FEDCBA987654,10,No account\r\n3,500,1,65231954512\r\n".into(),
            (2, field(Field::ReasonCode, Problem::UnknownValue)),
        ),
    ];
    for (bytes, expected) in cases {
        assert_eq!(kind(&bytes), expected, "{bytes:?}");
    }
}

#[test]
fn errors_never_quote_a_value() {
    let bad = VALID.replace("Refund 7", "Refund@7");
    let message = ib4b::parse(bad.as_bytes()).unwrap_err().to_string();
    assert!(!message.contains("Refund"), "{message}");
    let bad = VALID.replace("0865231954512001", "08652319545120x1");
    let message = ib4b::parse(bad.as_bytes()).unwrap_err().to_string();
    assert!(!message.contains("0865"), "{message}");
}

#[test]
fn an_empty_dishonour_file_parses() {
    let bytes = "1,DISHONOUR,0102420100194000,261127,261130\r\n3,0,0,00000000000\r\n";
    let Ok(Ib4bFile::Dishonour(file)) = ib4b::parse(bytes.as_bytes()) else {
        panic!("not parsed");
    };
    assert!(file.dishonours.is_empty());
}

fn credit(account: &str, amount: u64, name: &str, reference: &str) -> Transaction {
    Transaction {
        account: account.into(),
        transaction_code: TransactionCode::DirectCredit,
        amount,
        other_party_name: name.into(),
        other_party: StatementDetails::default(),
        other_party_alpha_reference: String::new(),
        your_name: "Payoutd".into(),
        yours: StatementDetails {
            reference: reference.into(),
            ..StatementDetails::default()
        },
    }
}

fn file(transactions: Vec<Transaction>) -> DirectCreditFile {
    DirectCreditFile {
        header: Header {
            originating_account: "0102420100194000".into(),
            due_date: NaiveDate::from_ymd_opt(2026, 11, 27).unwrap(),
            creation_date: NaiveDate::from_ymd_opt(2026, 11, 25).unwrap(),
        },
        transactions,
    }
}

#[test]
fn the_writer_refuses_what_the_format_cannot_carry() {
    let at = |i| Location::Transaction(i);
    let cases: Vec<(DirectCreditFile, WriteError)> = vec![
        (
            file(vec![]),
            WriteError {
                location: Location::Control,
                field: Field::TransactionCount,
                problem: Problem::Zero,
            },
        ),
        (
            file(vec![credit("010902006838900", 1, "A", "R")]),
            WriteError {
                location: at(0),
                field: Field::Account,
                problem: Problem::NotDigits { width: 16 },
            },
        ),
        (
            file(vec![credit("0109020068389000", 0, "A", "R")]),
            WriteError {
                location: at(0),
                field: Field::Amount,
                problem: Problem::Zero,
            },
        ),
        (
            file(vec![
                credit("0109020068389000", 1, "A", "R"),
                credit("0109020068389000", 10_000_000_000, "A", "R"),
            ]),
            WriteError {
                location: at(1),
                field: Field::Amount,
                problem: Problem::Overflow,
            },
        ),
        (
            file(vec![credit("0109020068389000", 1, "日本", "R")]),
            WriteError {
                location: at(0),
                field: Field::OtherPartyName,
                problem: Problem::Empty,
            },
        ),
        (
            file(vec![
                credit("0109020068389000", 9_999_999_999, "A", "R");
                11
            ]),
            WriteError {
                location: Location::Control,
                field: Field::TotalAmount,
                problem: Problem::Overflow,
            },
        ),
    ];
    for (f, expected) in cases {
        assert_eq!(ib4b::write(&f), Err(expected));
    }
    let mut old = file(vec![credit("0109020068389000", 1, "A", "R")]);
    old.header.due_date = NaiveDate::from_ymd_opt(1999, 12, 31).unwrap();
    assert_eq!(ib4b::write(&old).unwrap_err().field, Field::DueDate);
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = ib4b::parse(&bytes);
    }

    #[test]
    fn random_csv_like_text_never_panics(text in "[0-9,123\r\nA-Z ]{0,300}") {
        let _ = ib4b::parse(text.as_bytes());
    }

    #[test]
    fn damaged_valid_files_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 1..8),
    ) {
        let mut bytes = VALID.as_bytes().to_vec();
        for (index, byte, action) in edits {
            if bytes.is_empty() {
                break;
            }
            let i = index.index(bytes.len());
            match action {
                0 => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                2 => { bytes.remove(i); }
                _ => bytes.truncate(i),
            }
        }
        let _ = ib4b::parse(&bytes);
    }

    #[test]
    fn damaged_dishonour_files_never_panic(
        edits in prop::collection::vec((any::<prop::sample::Index>(), prop::sample::select(b"0123456789,\r\nA2 ".to_vec())), 1..6),
    ) {
        let mut bytes = b"1,DISHONOUR,0102420100194000,261127,261130\r\n2,0865231954512001,50,500,Grace Hopper,PAYOUTS,FEDCBA987654,02,No account\r\n3,500,1,65231954512\r\n".to_vec();
        for (index, byte) in edits {
            let i = index.index(bytes.len());
            bytes[i] = byte;
        }
        let _ = ib4b::parse(&bytes);
    }
}
