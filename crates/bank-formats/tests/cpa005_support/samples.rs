//! Sample Standard 005 contents shared by the tests.

#![allow(dead_code)]

use bank_formats::cpa005::{
    Cpa005File, Header, LineEnding, RecordType, Transaction, WriteOptions, write,
};
use chrono::NaiveDate;

pub fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

pub fn header() -> Header {
    Header {
        originator_id: "PAYOUTD001".into(),
        file_creation_number: 42,
        creation_date: date(2026, 3, 2),
        destination_data_centre: "00310".into(),
        currency: "CAD".into(),
    }
}

/// A credit of `amount` cents with cross reference `reference`.
pub fn credit(amount: u64, reference: &str) -> Transaction {
    Transaction {
        record_type: RecordType::Credit,
        transaction_type: 450,
        amount,
        due_date: date(2026, 3, 4),
        institution_id: "000312345".into(),
        account_number: "1234567".into(),
        item_trace_number: "0".repeat(22),
        stored_transaction_type: "000".into(),
        originator_short_name: "PAYOUTD".into(),
        payee_name: "ANN LEE".into(),
        originator_long_name: "PAYOUTD PAYMENTS INC".into(),
        direct_clearer_user_id: "PAYOUTD001".into(),
        cross_reference: reference.into(),
        return_institution_id: "000400011".into(),
        return_account_number: "5550001".into(),
        sundry_information: String::new(),
        returned: None,
    }
}

pub fn file(transactions: Vec<Transaction>) -> Cpa005File {
    Cpa005File {
        header: header(),
        transactions,
    }
}

pub const CRLF: WriteOptions = WriteOptions {
    line_ending: LineEnding::CrLf,
};

pub fn written(file: &Cpa005File) -> Vec<u8> {
    write(file, &CRLF).unwrap()
}

/// The records of CRLF-terminated bytes.
pub fn records(bytes: &[u8]) -> Vec<String> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .split_terminator("\r\n")
        .map(str::to_owned)
        .collect()
}

pub fn join(records: &[String]) -> Vec<u8> {
    records
        .iter()
        .flat_map(|r| format!("{r}\r\n").into_bytes())
        .collect()
}

/// Positions `from` to `to` of a record, from 1, inclusive.
pub fn field(record: &str, from: usize, to: usize) -> &str {
    &record[from - 1..to]
}

/// Replaces positions `from`.. of `record` with `value`.
pub fn set(record: &mut String, from: usize, value: &str) {
    record.replace_range(from - 1..from - 1 + value.len(), value);
}
