//! The writer: typed contents to the bytes of an ABA file.

use std::fmt::Write as _;

use chrono::{Datelike, NaiveDate};

use super::codes::{Indicator, TransactionCode};
use super::error::{Field, Location, Problem, WriteError};
use super::text::{clean_text, is_digits};
use super::types::{AbaFile, DescriptiveRecord, DetailKind, DetailRecord};

/// Characters per record.
pub const RECORD_LENGTH: usize = 120;

/// What ends every record, the last one included.
pub const RECORD_END: &str = "\r\n";

/// The largest amount or total: ten digits of cents.
pub const MAX_AMOUNT: u64 = 9_999_999_999;

/// The most detail records a file can count: six digits.
pub const MAX_RECORDS: u64 = 999_999;

/// Writes `file` as an originated ABA file: the descriptive record, the payment records
/// (type 1) and the file total record computed here, each record 120 characters ended by
/// CRLF.
///
/// Every field is checked first (see the [module documentation](super) for the rules).
///
/// # Errors
///
/// The first field that cannot be written, by location and field name; a file without a
/// detail record; a returned payment (type 2, which [`write_return`] writes).
pub fn write(file: &AbaFile) -> Result<Vec<u8>> {
    for (index, detail) in file.details.iter().enumerate() {
        if matches!(detail.kind, DetailKind::Returned { .. }) {
            return Err(WriteError::field(
                Location::Detail { index },
                Field::RecordType,
                Problem::NotWritable,
            ));
        }
    }
    write_records(file)
}

/// Writes a return file as the bank sends it (the layout of NAB's direct entry returns file):
/// the same record rules as [`write()`], with returned detail records (type 2) allowed. What
/// is returned is the bank's business (the bank simulator's `bank_simulator::aba`).
///
/// # Errors
///
/// The first field that cannot be written.
pub fn write_return(file: &AbaFile) -> Result<Vec<u8>> {
    write_records(file)
}

/// Writes every record of `file`, payments or returns, with the same field rules.
fn write_records(file: &AbaFile) -> Result<Vec<u8>> {
    if file.details.is_empty() {
        return Err(WriteError::NoDetails);
    }
    let mut out = String::with_capacity((file.details.len() + 2) * (RECORD_LENGTH + 2));
    out.push_str(&descriptive(&file.descriptive)?);
    out.push_str(RECORD_END);
    for (index, detail) in file.details.iter().enumerate() {
        out.push_str(&detail_record(Location::Detail { index }, detail)?);
        out.push_str(RECORD_END);
    }
    out.push_str(&total(file)?);
    out.push_str(RECORD_END);
    Ok(out.into_bytes())
}

pub(super) type Result<T> = std::result::Result<T, WriteError>;

/// A record under construction: fields are appended left to right, each already checked to
/// be ASCII and to fit its width.
struct Record(String);

impl Record {
    fn new(record_type: char) -> Self {
        let mut record = String::with_capacity(RECORD_LENGTH);
        record.push(record_type);
        Self(record)
    }

    /// Appends `value` left-justified and blank-filled.
    fn left(mut self, value: &str, width: usize) -> Self {
        let _ = write!(self.0, "{value:<width$}");
        self
    }

    /// Appends `value` right-justified and blank-filled.
    fn right(mut self, value: &str, width: usize) -> Self {
        let _ = write!(self.0, "{value:>width$}");
        self
    }

    /// Appends `value` right-justified and zero-filled.
    fn number(mut self, value: u64, width: usize) -> Self {
        let _ = write!(self.0, "{value:0width$}");
        self
    }

    fn blank(self, width: usize) -> Self {
        self.left("", width)
    }

    fn finish(self) -> String {
        debug_assert_eq!(self.0.len(), RECORD_LENGTH, "{}", self.0);
        self.0
    }
}

fn digits(at: Location, field: Field, value: &str, count: usize) -> Result<()> {
    if value.len() == count && is_digits(value) {
        Ok(())
    } else {
        Err(WriteError::field(
            at,
            field,
            Problem::NotDigits { digits: count },
        ))
    }
}

/// A BSB: six digits, written `xxx-xxx`.
fn bsb(at: Location, field: Field, value: &str) -> Result<String> {
    digits(at, field, value, 6)?;
    let (branch_bank, branch) = value.split_at(3);
    Ok(format!("{branch_bank}-{branch}"))
}

/// An account number: up to nine digits or hyphens with at least one digit, written as given
/// (a changed account number would pay another account).
fn account(at: Location, field: Field, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(WriteError::field(at, field, Problem::Required));
    }
    if !value.bytes().all(|b| b.is_ascii_digit() || b == b'-')
        || !value.bytes().any(|b| b.is_ascii_digit())
    {
        return Err(WriteError::field(
            at,
            field,
            Problem::Format {
                expected: "digits and hyphens",
            },
        ));
    }
    if value.len() > 9 {
        return Err(WriteError::field(at, field, Problem::TooLong { max: 9 }));
    }
    Ok(())
}

/// Free text, cleaned up and cut to `width` ([`clean_text`]); required fields must keep
/// something.
fn text(at: Location, field: Field, value: &str, width: usize) -> Result<String> {
    let cleaned = clean_text(value, width);
    if cleaned.is_empty() {
        return Err(WriteError::field(at, field, Problem::Required));
    }
    Ok(cleaned)
}

fn at_most(at: Location, field: Field, value: u64, max: u64) -> Result<u64> {
    if value <= max {
        Ok(value)
    } else {
        Err(WriteError::field(at, field, Problem::TooLarge { max }))
    }
}

fn ddmmyy(at: Location, field: Field, date: NaiveDate) -> Result<String> {
    if (2000..=2099).contains(&date.year()) {
        Ok(date.format("%d%m%y").to_string())
    } else {
        Err(WriteError::field(at, field, Problem::InvalidDate))
    }
}

fn descriptive(record: &DescriptiveRecord) -> Result<String> {
    let at = Location::Descriptive;
    if !(1..=99).contains(&record.reel_sequence) {
        return Err(WriteError::field(
            at,
            Field::ReelSequence,
            Problem::Format {
                expected: "1 to 99",
            },
        ));
    }
    let mnemonic = &record.bank_mnemonic;
    if mnemonic.len() != 3 || !mnemonic.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(WriteError::field(
            at,
            Field::BankMnemonic,
            Problem::Format {
                expected: "three upper-case letters",
            },
        ));
    }
    let user_name = text(at, Field::UserName, &record.user_name, 26)?;
    digits(at, Field::ApcaUserId, &record.apca_user_id, 6)?;
    let description = text(at, Field::Description, &record.description, 12)?;
    let date = ddmmyy(at, Field::ProcessingDate, record.processing_date)?;
    Ok(Record::new('0')
        .blank(17)
        .number(u64::from(record.reel_sequence), 2)
        .left(mnemonic, 3)
        .blank(7)
        .left(&user_name, 26)
        .left(&record.apca_user_id, 6)
        .left(&description, 12)
        .left(&date, 6)
        .blank(40)
        .finish())
}

fn detail_record(at: Location, detail: &DetailRecord) -> Result<String> {
    let bsb_text = bsb(at, Field::Bsb, &detail.bsb)?;
    account(at, Field::AccountNumber, &detail.account_number)?;
    let code = detail.transaction_code;
    if !matches!(code, TransactionCode::Credit | TransactionCode::Debit) {
        return Err(WriteError::field(
            at,
            Field::TransactionCode,
            Problem::NotWritable,
        ));
    }
    let amount = at_most(at, Field::Amount, detail.amount, MAX_AMOUNT)?;
    if amount == 0 {
        return Err(WriteError::field(at, Field::Amount, Problem::ZeroAmount));
    }
    let title = text(at, Field::AccountTitle, &detail.account_title, 32)?;
    let reference = text(
        at,
        Field::LodgementReference,
        &detail.lodgement_reference,
        18,
    )?;
    let trace_bsb = bsb(at, Field::TraceBsb, &detail.trace_bsb)?;
    account(at, Field::TraceAccount, &detail.trace_account)?;
    let remitter = text(at, Field::RemitterName, &detail.remitter_name, 16)?;
    let (position_18, tail) = match &detail.kind {
        DetailKind::Payment {
            indicator,
            withholding_tax,
        } => {
            if *indicator != Indicator::None {
                return Err(WriteError::field(
                    at,
                    Field::Indicator,
                    Problem::NotWritable,
                ));
            }
            let tax = at_most(at, Field::WithholdingTax, *withholding_tax, 99_999_999)?;
            (indicator.as_char(), format!("{tax:08}"))
        }
        DetailKind::Returned {
            return_code,
            original_processing_day,
            original_user_id,
        } => {
            let digit = char::from_digit(u32::from(return_code.code()), 10).ok_or(
                WriteError::field(at, Field::ReturnCode, Problem::Unsupported),
            )?;
            if !(1..=31).contains(original_processing_day) {
                return Err(WriteError::field(
                    at,
                    Field::OriginalProcessingDay,
                    Problem::Format {
                        expected: "a day of the month, 1 to 31",
                    },
                ));
            }
            digits(at, Field::OriginalUserId, original_user_id, 6)?;
            (
                digit,
                format!("{original_processing_day:02}{original_user_id}"),
            )
        }
    };
    Ok(Record::new(detail.record_type())
        .left(&bsb_text, 7)
        .right(&detail.account_number, 9)
        .left(&position_18.to_string(), 1)
        .number(u64::from(code.code()), 2)
        .number(amount, 10)
        .left(&title, 32)
        .left(&reference, 18)
        .left(&trace_bsb, 7)
        .right(&detail.trace_account, 9)
        .left(&remitter, 16)
        .left(&tail, 8)
        .finish())
}

fn total(file: &AbaFile) -> Result<String> {
    let at = Location::Total;
    let total = file.total();
    let credit = at_most(at, Field::CreditTotal, total.credit_total, MAX_AMOUNT)?;
    let debit = at_most(at, Field::DebitTotal, total.debit_total, MAX_AMOUNT)?;
    let net = at_most(at, Field::NetTotal, total.net_total, MAX_AMOUNT)?;
    let count = at_most(at, Field::RecordCount, total.record_count, MAX_RECORDS)?;
    Ok(Record::new('7')
        .left("999-999", 7)
        .blank(12)
        .number(net, 10)
        .number(credit, 10)
        .number(debit, 10)
        .blank(24)
        .number(count, 6)
        .blank(40)
        .finish())
}
