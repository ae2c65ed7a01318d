//! The writer: typed contents to the bytes of a Standard 005 file.

use std::fmt::Write as _;

use chrono::{Datelike, NaiveDate};

use super::codes::RecordType;
use super::error::{Field, Location, Problem, WriteError};
use super::text::{clean_text, is_allowed_char, is_digits};
use super::types::{Cpa005File, Header, SEGMENTS_PER_RECORD, Transaction};

/// Characters per logical record.
pub const RECORD_LENGTH: usize = 1464;

/// Characters per segment of a detail record.
pub const SEGMENT_LENGTH: usize = 240;

/// The largest amount of one transaction, cents (ten digits).
pub const MAX_AMOUNT: u64 = 9_999_999_999;

/// The largest file creation number (four digits).
pub const MAX_FILE_CREATION_NUMBER: u16 = 9999;

/// What follows every record of a written file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LineEnding {
    /// `\r\n`, the default: what most Canadian banks' transmission guides ask for.
    #[default]
    CrLf,
    /// `\n`.
    Lf,
    /// Nothing: the records follow each other (a fixed-length file).
    None,
}

impl LineEnding {
    /// The characters written after each record.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::CrLf => "\r\n",
            Self::Lf => "\n",
            Self::None => "",
        }
    }
}

/// Options of [`write()`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct WriteOptions {
    /// What follows each record, the last one included.
    pub line_ending: LineEnding,
}

pub(super) type Result<T> = std::result::Result<T, WriteError>;

/// Writes `file` as a Standard 005 file: the header, the detail records (consecutive
/// transactions of one record type, six segments per record, unused segments blank), and the
/// trailer, whose record count, totals and counts are computed here. Each record is followed by `options.line_ending`.
///
/// Every field is checked first (see the [module documentation](super) for the rules).
///
/// # Errors
///
/// The first field that cannot be written, by location and Standard 005 field name.
pub fn write(file: &Cpa005File, options: &WriteOptions) -> Result<Vec<u8>> {
    let mut out = String::new();
    for record in records(file)? {
        out.push_str(&record);
        out.push_str(options.line_ending.as_str());
    }
    Ok(out.into_bytes())
}

/// The records of `file`.
fn records(file: &Cpa005File) -> Result<Vec<String>> {
    let header = &file.header;
    check_header(header)?;
    let mut count: u64 = 1;
    let mut out = vec![header_record(header)];
    let mut index = 0;
    for group in file.detail_records() {
        count += 1;
        let mut record = Record::start(group_type(group).as_char(), count, header)?;
        for transaction in group {
            record.0.push_str(&segment(index, transaction)?);
            index += 1;
        }
        for _ in group.len()..SEGMENTS_PER_RECORD {
            record.0.push_str(&unused_segment());
        }
        out.push(record.finish());
    }
    count += 1;
    out.push(trailer(file, count)?);
    Ok(out)
}

fn group_type(group: &[Transaction]) -> RecordType {
    group.first().map_or(RecordType::Credit, |t| t.record_type)
}

/// A record under construction: fields are appended left to right.
struct Record(String);

impl Record {
    fn new(record_type: char) -> Self {
        let mut record = String::with_capacity(RECORD_LENGTH);
        record.push(record_type);
        Self(record)
    }

    /// The record type, count, originator's ID and file creation number every record starts
    /// with.
    fn start(record_type: char, count: u64, header: &Header) -> Result<Self> {
        let count = at_most(Location::Trailer, Field::RecordCount, count, 999_999_999)?;
        Ok(Self::new(record_type)
            .number(count, 9)
            .text(&header.originator_id, 10)
            .number(u64::from(header.file_creation_number), 4))
    }

    /// Appends `value` (checked to be ASCII and to fit), left-justified and blank-filled.
    fn text(mut self, value: &str, width: usize) -> Self {
        let value = value.get(..width.min(value.len())).unwrap_or_default();
        let _ = write!(self.0, "{value:<width$}");
        self
    }

    /// Appends `value` (checked to fit), right-justified and zero-filled.
    fn number(mut self, value: u64, width: usize) -> Self {
        let _ = write!(self.0, "{value:0width$}");
        self
    }

    fn blank(self, width: usize) -> Self {
        self.text("", width)
    }

    fn finish(mut self) -> String {
        let width = RECORD_LENGTH;
        let _ = write!(self.0, "{:<width$}", "");
        self.0.truncate(RECORD_LENGTH);
        self.0
    }
}

fn at_most(location: Location, field: Field, value: u64, max: u64) -> Result<u64> {
    if value <= max {
        Ok(value)
    } else {
        Err(WriteError::new(location, field, Problem::TooLarge { max }))
    }
}

/// `0YYDDD`: a zero, the year's last two digits and the day of the year.
pub(super) fn julian(location: Location, field: Field, date: NaiveDate) -> Result<String> {
    if (2000..=2099).contains(&date.year()) {
        Ok(format!("0{:02}{:03}", date.year() % 100, date.ordinal()))
    } else {
        Err(WriteError::new(location, field, Problem::Date))
    }
}

/// An identifier written as given: it must fit and use only allowed characters, since a cut or
/// altered identifier would name another party.
fn identifier(at: Location, field: Field, value: &str, width: usize, required: bool) -> Result<()> {
    if value.trim().is_empty() {
        return if required {
            Err(WriteError::new(at, field, Problem::Required))
        } else {
            Ok(())
        };
    }
    if !value.chars().all(is_allowed_char) {
        return Err(WriteError::new(at, field, Problem::Character));
    }
    if value.len() > width {
        return Err(WriteError::new(at, field, Problem::TooLong { max: width }));
    }
    Ok(())
}

fn exact_digits(at: Location, field: Field, value: &str, digits: usize) -> Result<()> {
    if value.len() == digits && is_digits(value) {
        Ok(())
    } else {
        Err(WriteError::new(at, field, Problem::NotDigits { digits }))
    }
}

/// An institution and branch `0IIITTTTT`.
fn institution(at: Location, field: Field, value: &str) -> Result<()> {
    if value.len() == 9 && is_digits(value) && value.starts_with('0') {
        Ok(())
    } else {
        Err(WriteError::new(at, field, Problem::Institution))
    }
}

/// An account number: 1 to 12 digits.
fn account(at: Location, field: Field, value: &str) -> Result<()> {
    if (1..=12).contains(&value.len()) && is_digits(value) {
        Ok(())
    } else {
        Err(WriteError::new(
            at,
            field,
            Problem::Expected {
                expected: "1 to 12 digits",
            },
        ))
    }
}

/// Free text, cleaned up and cut to `width` ([`clean_text`]).
fn text(at: Location, field: Field, value: &str, width: usize, required: bool) -> Result<String> {
    let cleaned = clean_text(value, width);
    if required && cleaned.is_empty() {
        return Err(WriteError::new(at, field, Problem::Required));
    }
    Ok(cleaned)
}

fn check_header(header: &Header) -> Result<()> {
    let at = Location::Header;
    identifier(at, Field::OriginatorId, &header.originator_id, 10, true)?;
    if header.file_creation_number == 0 {
        return Err(WriteError::new(
            at,
            Field::FileCreationNumber,
            Problem::Expected {
                expected: "1 to 9999",
            },
        ));
    }
    at_most(
        at,
        Field::FileCreationNumber,
        u64::from(header.file_creation_number),
        u64::from(MAX_FILE_CREATION_NUMBER),
    )?;
    julian(at, Field::CreationDate, header.creation_date)?;
    exact_digits(
        at,
        Field::DestinationDataCentre,
        &header.destination_data_centre,
        5,
    )?;
    if !matches!(header.currency.as_str(), "CAD" | "USD") {
        return Err(WriteError::new(
            at,
            Field::CurrencyCode,
            Problem::Expected {
                expected: "CAD or USD",
            },
        ));
    }
    Ok(())
}

fn header_record(header: &Header) -> String {
    let date =
        julian(Location::Header, Field::CreationDate, header.creation_date).unwrap_or_default();
    Record::new('A')
        .number(1, 9)
        .text(&header.originator_id, 10)
        .number(u64::from(header.file_creation_number), 4)
        .text(&date, 6)
        .text(&header.destination_data_centre, 5)
        .blank(20)
        .text(&header.currency, 3)
        .finish()
}

/// The 240 characters of one transaction's segment.
fn segment(index: usize, t: &Transaction) -> Result<String> {
    let at = Location::Transaction { index };
    if t.record_type.is_return() != t.returned.is_some() {
        return Err(WriteError::new(
            at,
            Field::InvalidDataElementId,
            Problem::RecordTypeMismatch,
        ));
    }
    if t.transaction_type == 0 {
        return Err(WriteError::new(
            at,
            Field::TransactionType,
            Problem::Expected {
                expected: "1 to 999",
            },
        ));
    }
    let transaction_type = at_most(
        at,
        Field::TransactionType,
        u64::from(t.transaction_type),
        999,
    )?;
    if t.amount == 0 {
        return Err(WriteError::new(at, Field::Amount, Problem::ZeroAmount));
    }
    let amount = at_most(at, Field::Amount, t.amount, MAX_AMOUNT)?;
    let due = julian(at, Field::DueDate, t.due_date)?;
    institution(at, Field::InstitutionId, &t.institution_id)?;
    account(at, Field::AccountNumber, &t.account_number)?;
    exact_digits(at, Field::ItemTraceNumber, &t.item_trace_number, 22)?;
    exact_digits(
        at,
        Field::StoredTransactionType,
        &t.stored_transaction_type,
        3,
    )?;
    let short_name = text(
        at,
        Field::OriginatorShortName,
        &t.originator_short_name,
        15,
        true,
    )?;
    let payee_name = text(at, Field::PayeeName, &t.payee_name, 30, true)?;
    let long_name = text(
        at,
        Field::OriginatorLongName,
        &t.originator_long_name,
        30,
        true,
    )?;
    identifier(
        at,
        Field::DirectClearerUserId,
        &t.direct_clearer_user_id,
        10,
        false,
    )?;
    identifier(at, Field::CrossReference, &t.cross_reference, 19, false)?;
    institution(at, Field::ReturnInstitutionId, &t.return_institution_id)?;
    account(at, Field::ReturnAccountNumber, &t.return_account_number)?;
    let sundry = text(
        at,
        Field::SundryInformation,
        &t.sundry_information,
        15,
        false,
    )?;
    let invalid_data_element = t.returned.map_or_else(
        || "0".repeat(11),
        |r| format!("{}{}", r.reason, "0".repeat(8)),
    );
    let mut out = Record(String::with_capacity(SEGMENT_LENGTH))
        .number(transaction_type, 3)
        .number(amount, 10)
        .text(&due, 6)
        .text(&t.institution_id, 9)
        .text(&t.account_number, 12)
        .text(&t.item_trace_number, 22)
        .text(&t.stored_transaction_type, 3)
        .text(&short_name, 15)
        .text(&payee_name, 30)
        .text(&long_name, 30)
        .text(&t.direct_clearer_user_id, 10)
        .text(&t.cross_reference, 19)
        .text(&t.return_institution_id, 9)
        .text(&t.return_account_number, 12)
        .text(&sundry, 15)
        .blank(22)
        .blank(2)
        .text(&invalid_data_element, 11)
        .0;
    out.truncate(SEGMENT_LENGTH);
    debug_assert_eq!(out.len(), SEGMENT_LENGTH);
    Ok(out)
}

/// An unused segment: blank, as Standard 005 says (a reader that stops at the first blank
/// segment then reads no zero-amount transaction).
fn unused_segment() -> String {
    " ".repeat(SEGMENT_LENGTH)
}

fn trailer(file: &Cpa005File, count: u64) -> Result<String> {
    let at = Location::Trailer;
    let totals = file.totals();
    const VALUE_MAX: u64 = 99_999_999_999_999;
    const COUNT_MAX: u64 = 99_999_999;
    let debit_value = at_most(at, Field::TotalDebitValue, totals.debit_value, VALUE_MAX)?;
    let debit_count = at_most(at, Field::TotalDebitCount, totals.debit_count, COUNT_MAX)?;
    let credit_value = at_most(at, Field::TotalCreditValue, totals.credit_value, VALUE_MAX)?;
    let credit_count = at_most(at, Field::TotalCreditCount, totals.credit_count, COUNT_MAX)?;
    Ok(Record::start('Z', count, &file.header)?
        .number(debit_value, 14)
        .number(debit_count, 8)
        .number(credit_value, 14)
        .number(credit_count, 8)
        .number(0, 14)
        .number(0, 8)
        .number(0, 14)
        .number(0, 8)
        .finish())
}
