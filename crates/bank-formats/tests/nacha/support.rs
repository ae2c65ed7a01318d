//! Sample contents and helpers shared by the tests.

use bank_formats::nacha::{
    Addenda, Addenda05, Batch, BatchHeader, EntryDetail, FileHeader, NachaFile, SecCode,
    ServiceClass, TransactionCode, WriteOptions, write,
};
use chrono::{NaiveDate, NaiveTime};

/// Positions `from` to `to` of a record, counted from 1 and inclusive, as the NACHA layout
/// gives them.
pub fn field(record: &str, from: usize, to: usize) -> &str {
    &record[from - 1..to]
}

pub fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

pub fn header() -> FileHeader {
    FileHeader {
        immediate_destination: "021000021".into(),
        immediate_origin: "1234567890".into(),
        creation_date: date(2025, 3, 7),
        creation_time: NaiveTime::from_hms_opt(14, 5, 0),
        file_id_modifier: 'A',
        immediate_destination_name: "JPMorgan Chase".into(),
        immediate_origin_name: "Payoutd Inc".into(),
        reference_code: "REF00001".into(),
    }
}

pub fn batch_header(batch_number: u32) -> BatchHeader {
    BatchHeader {
        service_class: ServiceClass::CreditsOnly,
        company_name: "Payoutd".into(),
        company_discretionary_data: String::new(),
        company_identification: "1234567890".into(),
        sec_code: SecCode::Ppd,
        company_entry_description: "PAYOUT".into(),
        company_descriptive_date: "MAR 07".into(),
        effective_entry_date: Some(date(2025, 3, 10)),
        originating_dfi: "02100002".into(),
        batch_number,
    }
}

/// A checking credit of `amount` cents to `receiving_dfi`, trace `02100002` + `sequence`.
pub fn credit(receiving_dfi: &str, amount: u64, sequence: u32) -> EntryDetail {
    EntryDetail {
        transaction_code: TransactionCode::CheckingCredit,
        receiving_dfi: receiving_dfi.into(),
        account_number: "12345678901".into(),
        amount,
        individual_id: "RCV-1".into(),
        individual_name: "ANN LEE".into(),
        discretionary_data: String::new(),
        trace_number: format!("02100002{sequence:07}"),
        addenda: Vec::new(),
    }
}

/// One PPD batch: a checking credit with an addenda 05 and accented name, and a savings credit.
pub fn sample() -> NachaFile {
    let mut first = credit("011000015", 12_345, 1);
    first.individual_name = "José Müller".into();
    first.addenda.push(Addenda::PaymentRelated(Addenda05 {
        payment_related_information: "Invoice 42 – thanks".into(),
    }));
    let mut second = credit("231380104", 1, 2);
    second.transaction_code = TransactionCode::SavingsCredit;
    second.account_number = "987654321".into();
    second.individual_id = String::new();
    NachaFile {
        header: header(),
        batches: vec![Batch {
            header: batch_header(1),
            entries: vec![first, second],
        }],
    }
}

/// One batch of `entries` checking credits of 1.00 to 011000015.
pub fn file_with_entries(entries: u32) -> NachaFile {
    NachaFile {
        header: header(),
        batches: vec![Batch {
            header: batch_header(1),
            entries: (1..=entries).map(|n| credit("011000015", 100, n)).collect(),
        }],
    }
}

pub fn written(file: &NachaFile) -> String {
    String::from_utf8(write(file, &WriteOptions::default()).unwrap()).unwrap()
}

pub fn records(file: &NachaFile) -> Vec<String> {
    written(file).split('\n').map(str::to_owned).collect()
}
