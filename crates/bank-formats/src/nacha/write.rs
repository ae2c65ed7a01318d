//! The writer: typed contents to the bytes of a NACHA file.

use bank_codes::us_routing::check_digit;
use std::fmt::Write as _;

use chrono::{Datelike, NaiveDate};

use super::codes::{SecCode, ServiceClass, TransactionCode};
use super::error::{Field, Location, Problem, WriteError};
use super::text::{clean_text, is_allowed_char, is_digits};
use super::types::{
    Addenda, BLOCKING_FACTOR, Batch, BatchHeader, EntryDetail, FileHeader, NachaFile,
};

/// Characters per record.
pub const RECORD_LENGTH: usize = 94;

/// What separates the records of a written file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum LineEnding {
    /// `\n`, the default.
    #[default]
    Lf,
    /// `\r\n`, which many banks also accept.
    CrLf,
}

impl LineEnding {
    /// The separator's characters.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Lf => "\n",
            Self::CrLf => "\r\n",
        }
    }
}

/// Options of [`write()`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct WriteOptions {
    /// What separates the records. None follows the last record.
    pub line_ending: LineEnding,
}

/// Writes `file` as a NACHA file: its records of 94 characters, the control records and the
/// padding computed here, joined by `options.line_ending` with none after the last record.
///
/// Every field is checked first (see the [module documentation](super) for the rules). The
/// writer writes credit-only origination files: service class 220, standard entry class PPD or
/// CCD, transaction codes 22, 23, 32 and 33, at most one addenda 05 per entry.
///
/// # Errors
///
/// The first field that cannot be written, by location and NACHA field name; a file without a
/// batch or a batch without an entry.
pub fn write(file: &NachaFile, options: &WriteOptions) -> std::result::Result<Vec<u8>, WriteError> {
    if file.batches.is_empty() {
        return Err(WriteError::NoBatches);
    }
    let mut out = Records::for_file(file, options.line_ending);
    out.push(file_header(&file.header)?);
    let mut previous_batch_number = None;
    for (b, batch) in file.batches.iter().enumerate() {
        if previous_batch_number.is_some_and(|previous| batch.header.batch_number <= previous) {
            return Err(WriteError::field(
                Location::BatchHeader { batch: b },
                Field::BatchNumber,
                Problem::NotAscending,
            ));
        }
        previous_batch_number = Some(batch.header.batch_number);
        write_batch(b, batch, &mut out)?;
    }
    out.push(file_control(file)?);
    Ok(out.finish())
}

/// The records of a file being written, joined as they are written: each is appended to the
/// file's bytes, which are sized for the whole file up front, so a file of 100,000 entries is
/// never also a list of 200,000 strings, nor copied by a join.
pub(super) struct Records {
    bytes: Vec<u8>,
    count: usize,
    separator: &'static str,
}

impl Records {
    /// Room for `file`'s records (its header, each batch's header, entries, addenda and
    /// control, its control, the padding) joined by `line_ending`.
    pub(super) fn for_file(file: &NachaFile, line_ending: LineEnding) -> Self {
        let records = 2 + file
            .batches
            .iter()
            .map(|batch| {
                2 + batch
                    .entries
                    .iter()
                    .map(|entry| 1 + entry.addenda.len())
                    .sum::<usize>()
            })
            .sum::<usize>();
        let block = usize::try_from(BLOCKING_FACTOR).unwrap_or(10);
        let padded = records.div_ceil(block) * block;
        let separator = line_ending.as_str();
        Self {
            bytes: Vec::with_capacity(
                padded * RECORD_LENGTH + padded.saturating_sub(1) * separator.len(),
            ),
            count: 0,
            separator,
        }
    }

    /// Appends `record` (94 characters), after a separator unless it is the first.
    pub(super) fn push(&mut self, record: String) {
        debug_assert_eq!(record.len(), RECORD_LENGTH, "{record}");
        if self.count > 0 {
            self.bytes.extend_from_slice(self.separator.as_bytes());
        }
        self.bytes.extend_from_slice(record.as_bytes());
        self.count += 1;
    }

    /// The file's bytes: the records, then records of `9`s up to a multiple of the blocking
    /// factor.
    pub(super) fn finish(mut self) -> Vec<u8> {
        let block = usize::try_from(BLOCKING_FACTOR).unwrap_or(10);
        while !self.count.is_multiple_of(block) {
            self.push("9".repeat(RECORD_LENGTH));
        }
        self.bytes
    }
}

fn write_batch(b: usize, batch: &Batch, out: &mut Records) -> Result<()> {
    if batch.entries.is_empty() {
        return Err(WriteError::EmptyBatch { batch: b });
    }
    out.push(batch_header(b, &batch.header)?);
    let mut previous_trace: Option<&str> = None;
    for (e, entry) in batch.entries.iter().enumerate() {
        let location = Location::Entry { batch: b, entry: e };
        entry_detail(location, &batch.header, entry, out)?;
        if previous_trace.is_some_and(|previous| entry.trace_number.as_str() <= previous) {
            return Err(WriteError::field(
                location,
                Field::TraceNumber,
                Problem::NotAscending,
            ));
        }
        previous_trace = Some(&entry.trace_number);
        for (a, addenda) in entry.addenda.iter().enumerate() {
            let location = Location::Addenda {
                batch: b,
                entry: e,
                addenda: a,
            };
            out.push(addenda_05(location, entry, a, addenda)?);
        }
    }
    out.push(batch_control(b, batch)?);
    Ok(())
}

/// A record under construction: fields are appended left to right.
pub(super) struct Record(String);

impl Record {
    pub(super) fn new(record_type: char) -> Self {
        let mut record = String::with_capacity(RECORD_LENGTH);
        record.push(record_type);
        Self(record)
    }

    /// Appends `value`, checked to be ASCII and at most `width` long, left-justified and
    /// blank-filled.
    pub(super) fn text(mut self, value: &str, width: usize) -> Self {
        let value = value.get(..width.min(value.len())).unwrap_or_default();
        let _ = write!(self.0, "{value:<width$}");
        self
    }

    /// Appends `value`, checked to fit, right-justified and zero-filled.
    pub(super) fn number(mut self, value: u64, width: usize) -> Self {
        let _ = write!(self.0, "{value:0width$}");
        self
    }

    pub(super) fn blank(self, width: usize) -> Self {
        self.text("", width)
    }

    pub(super) fn finish(self) -> String {
        debug_assert_eq!(self.0.len(), RECORD_LENGTH, "{}", self.0);
        self.0
    }
}

pub(super) type Result<T> = std::result::Result<T, WriteError>;

/// A nine-digit routing number with a valid check digit.
pub(super) fn routing_number(
    location: Location,
    field: Field,
    check: Field,
    value: &str,
) -> Result<()> {
    if value.len() != 9 || !is_digits(value) {
        return Err(WriteError::field(
            location,
            field,
            Problem::NotDigits { digits: 9 },
        ));
    }
    let expected = value.get(..8).and_then(check_digit).unwrap_or(0);
    if value.as_bytes().get(8) != Some(&(b'0' + expected)) {
        return Err(WriteError::field(
            location,
            check,
            Problem::CheckDigit { expected },
        ));
    }
    Ok(())
}

pub(super) fn digits(location: Location, field: Field, value: &str, count: usize) -> Result<()> {
    if value.len() == count && is_digits(value) {
        Ok(())
    } else {
        Err(WriteError::field(
            location,
            field,
            Problem::NotDigits { digits: count },
        ))
    }
}

/// An identifier (account number, company identification, individual identification): written
/// as given, so it must already fit and use only allowed characters. Cutting or changing it
/// could send money to another account or break reconciliation.
pub(super) fn identifier(
    location: Location,
    field: Field,
    value: &str,
    width: usize,
    required: bool,
) -> Result<()> {
    if value.trim().is_empty() {
        return if required {
            Err(WriteError::field(location, field, Problem::Required))
        } else {
            Ok(())
        };
    }
    if let Some(found) = value.chars().find(|c| !is_allowed_char(*c)) {
        return Err(WriteError::field(
            location,
            field,
            Problem::Character { found },
        ));
    }
    if value.len() > width {
        return Err(WriteError::field(
            location,
            field,
            Problem::TooLong { max: width },
        ));
    }
    Ok(())
}

/// Free text, cleaned up and cut to `width` ([`clean_text`]).
pub(super) fn text(
    location: Location,
    field: Field,
    value: &str,
    width: usize,
    required: bool,
) -> Result<String> {
    let cleaned = clean_text(value, width);
    if required && cleaned.trim().is_empty() {
        return Err(WriteError::field(location, field, Problem::Required));
    }
    Ok(cleaned)
}

pub(super) fn yymmdd(location: Location, field: Field, date: NaiveDate) -> Result<String> {
    if (2000..=2099).contains(&date.year()) {
        Ok(date.format("%y%m%d").to_string())
    } else {
        Err(WriteError::field(location, field, Problem::DateOutOfRange))
    }
}

pub(super) fn at_most(location: Location, field: Field, value: u64, max: u64) -> Result<u64> {
    if value <= max {
        Ok(value)
    } else {
        Err(WriteError::field(
            location,
            field,
            Problem::TooLarge { value, max },
        ))
    }
}

pub(super) fn file_header(header: &FileHeader) -> Result<String> {
    let at = Location::FileHeader;
    routing_number(
        at,
        Field::ImmediateDestination,
        Field::ImmediateDestination,
        &header.immediate_destination,
    )?;
    let origin = &header.immediate_origin;
    if !(origin.len() == 9 || origin.len() == 10) || !is_digits(origin) {
        return Err(WriteError::field(
            at,
            Field::ImmediateOrigin,
            Problem::Expected {
                expected: "9 or 10 digits",
                found: origin.clone(),
            },
        ));
    }
    let date = yymmdd(at, Field::FileCreationDate, header.creation_date)?;
    let time = header
        .creation_time
        .map(|t| t.format("%H%M").to_string())
        .unwrap_or_default();
    let modifier = header.file_id_modifier;
    if !(modifier.is_ascii_uppercase() || modifier.is_ascii_digit()) {
        return Err(WriteError::field(
            at,
            Field::FileIdModifier,
            Problem::Expected {
                expected: "A-Z or 0-9",
                found: modifier.to_string(),
            },
        ));
    }
    let destination_name = text(
        at,
        Field::ImmediateDestinationName,
        &header.immediate_destination_name,
        23,
        false,
    )?;
    let origin_name = text(
        at,
        Field::ImmediateOriginName,
        &header.immediate_origin_name,
        23,
        false,
    )?;
    let reference = text(at, Field::ReferenceCode, &header.reference_code, 8, false)?;
    Ok(Record::new('1')
        .text("01", 2)
        .text(&format!(" {}", header.immediate_destination), 10)
        .text(&format!("{origin:>10}"), 10)
        .text(&date, 6)
        .text(&time, 4)
        .text(&modifier.to_string(), 1)
        .text("094", 3)
        .text("10", 2)
        .text("1", 1)
        .text(&destination_name, 23)
        .text(&origin_name, 23)
        .text(&reference, 8)
        .finish())
}

fn batch_header(b: usize, header: &BatchHeader) -> Result<String> {
    let at = Location::BatchHeader { batch: b };
    if header.service_class != ServiceClass::CreditsOnly {
        return Err(WriteError::field(
            at,
            Field::ServiceClassCode,
            Problem::NotWritable {
                found: header.service_class.to_string(),
            },
        ));
    }
    if !matches!(header.sec_code, SecCode::Ppd | SecCode::Ccd) {
        return Err(WriteError::field(
            at,
            Field::StandardEntryClassCode,
            Problem::NotWritable {
                found: header.sec_code.to_string(),
            },
        ));
    }
    batch_header_record(b, header)
}

/// The batch header record of `header`, every field checked against its layout (whatever the
/// service class and entry class: callers decide which they write).
pub(super) fn batch_header_record(b: usize, header: &BatchHeader) -> Result<String> {
    let at = Location::BatchHeader { batch: b };
    let company_name = text(at, Field::CompanyName, &header.company_name, 16, true)?;
    let discretionary = text(
        at,
        Field::CompanyDiscretionaryData,
        &header.company_discretionary_data,
        20,
        false,
    )?;
    identifier(
        at,
        Field::CompanyIdentification,
        &header.company_identification,
        10,
        true,
    )?;
    let description = text(
        at,
        Field::CompanyEntryDescription,
        &header.company_entry_description,
        10,
        true,
    )?;
    let descriptive_date = text(
        at,
        Field::CompanyDescriptiveDate,
        &header.company_descriptive_date,
        6,
        false,
    )?;
    let effective = header
        .effective_entry_date
        .ok_or_else(|| WriteError::field(at, Field::EffectiveEntryDate, Problem::Required))?;
    let effective = yymmdd(at, Field::EffectiveEntryDate, effective)?;
    digits(at, Field::OriginatingDfi, &header.originating_dfi, 8)?;
    let batch_number = at_most(
        at,
        Field::BatchNumber,
        u64::from(header.batch_number),
        9_999_999,
    )?;
    Ok(Record::new('5')
        .number(u64::from(header.service_class.code()), 3)
        .text(&company_name, 16)
        .text(&discretionary, 20)
        .text(&header.company_identification, 10)
        .text(header.sec_code.as_str(), 3)
        .text(&description, 10)
        .text(&descriptive_date, 6)
        .text(&effective, 6)
        .blank(3)
        .text("1", 1)
        .text(&header.originating_dfi, 8)
        .number(batch_number, 7)
        .finish())
}

fn entry_detail(
    at: Location,
    header: &BatchHeader,
    entry: &EntryDetail,
    out: &mut Records,
) -> Result<()> {
    let code = entry.transaction_code;
    if !matches!(
        code,
        TransactionCode::CheckingCredit
            | TransactionCode::CheckingCreditPrenote
            | TransactionCode::SavingsCredit
            | TransactionCode::SavingsCreditPrenote
    ) {
        return Err(WriteError::field(
            at,
            Field::TransactionCode,
            Problem::NotWritable {
                found: code.to_string(),
            },
        ));
    }
    routing_number(
        at,
        Field::ReceivingDfi,
        Field::CheckDigit,
        &entry.receiving_dfi,
    )?;
    identifier(at, Field::DfiAccountNumber, &entry.account_number, 17, true)?;
    let amount = at_most(at, Field::Amount, entry.amount, 9_999_999_999)?;
    if code.is_prenote() && amount != 0 {
        return Err(WriteError::field(at, Field::Amount, Problem::PrenoteAmount));
    }
    if !code.is_prenote() && amount == 0 {
        return Err(WriteError::field(at, Field::Amount, Problem::ZeroAmount));
    }
    identifier(
        at,
        Field::IndividualIdentificationNumber,
        &entry.individual_id,
        15,
        false,
    )?;
    let name = text(at, Field::IndividualName, &entry.individual_name, 22, true)?;
    let discretionary = text(
        at,
        Field::DiscretionaryData,
        &entry.discretionary_data,
        2,
        false,
    )?;
    digits(at, Field::TraceNumber, &entry.trace_number, 15)?;
    if !entry
        .trace_number
        .starts_with(header.originating_dfi.as_str())
    {
        return Err(WriteError::field(
            at,
            Field::TraceNumber,
            Problem::OdfiMismatch,
        ));
    }
    if entry.addenda.len() > 1 {
        return Err(WriteError::field(
            at,
            Field::AddendaRecordIndicator,
            Problem::TooManyAddenda { max: 1 },
        ));
    }
    let rdfi = entry.receiving_dfi.get(..8).unwrap_or_default();
    let check = entry.receiving_dfi.get(8..).unwrap_or_default();
    out.push(
        Record::new('6')
            .number(u64::from(code.code()), 2)
            .text(rdfi, 8)
            .text(check, 1)
            .text(&entry.account_number, 17)
            .number(amount, 10)
            .text(&entry.individual_id, 15)
            .text(&name, 22)
            .text(&discretionary, 2)
            .text(if entry.addenda.is_empty() { "0" } else { "1" }, 1)
            .text(&entry.trace_number, 15)
            .finish(),
    );
    Ok(())
}

fn addenda_05(
    at: Location,
    entry: &EntryDetail,
    index: usize,
    addenda: &Addenda,
) -> Result<String> {
    let Addenda::PaymentRelated(addenda) = addenda else {
        let found = match addenda {
            Addenda::Notification(_) => "addenda 98",
            _ => "addenda 99",
        };
        return Err(WriteError::field(
            at,
            Field::AddendaTypeCode,
            Problem::NotWritable {
                found: found.to_owned(),
            },
        ));
    };
    let information = text(
        at,
        Field::PaymentRelatedInformation,
        &addenda.payment_related_information,
        80,
        false,
    )?;
    let sequence = u64::try_from(index).map_or(u64::MAX, |i| i.saturating_add(1));
    let entry_sequence = entry.trace_sequence().map_or(0, u64::from);
    Ok(Record::new('7')
        .text("05", 2)
        .text(&information, 80)
        .number(
            at_most(at, Field::AddendaSequenceNumber, sequence, 9_999)?,
            4,
        )
        .number(entry_sequence, 7)
        .finish())
}

pub(super) fn batch_control(b: usize, batch: &Batch) -> Result<String> {
    let at = Location::BatchControl { batch: b };
    let control = batch.control();
    let count = at_most(
        at,
        Field::EntryAddendaCount,
        control.entry_addenda_count,
        999_999,
    )?;
    let debit = at_most(at, Field::TotalDebit, control.total_debit, 999_999_999_999)?;
    let credit = at_most(
        at,
        Field::TotalCredit,
        control.total_credit,
        999_999_999_999,
    )?;
    Ok(Record::new('8')
        .number(u64::from(control.service_class.code()), 3)
        .number(count, 6)
        .number(control.entry_hash, 10)
        .number(debit, 12)
        .number(credit, 12)
        .text(&control.company_identification, 10)
        .blank(19)
        .blank(6)
        .text(&control.originating_dfi, 8)
        .number(u64::from(control.batch_number), 7)
        .finish())
}

pub(super) fn file_control(file: &NachaFile) -> Result<String> {
    let at = Location::FileControl;
    let control = file.control();
    let batches = at_most(at, Field::BatchCount, control.batch_count, 999_999)?;
    let blocks = at_most(at, Field::BlockCount, control.block_count, 999_999)?;
    let count = at_most(
        at,
        Field::EntryAddendaCount,
        control.entry_addenda_count,
        99_999_999,
    )?;
    let debit = at_most(at, Field::TotalDebit, control.total_debit, 999_999_999_999)?;
    let credit = at_most(
        at,
        Field::TotalCredit,
        control.total_credit,
        999_999_999_999,
    )?;
    Ok(Record::new('9')
        .number(batches, 6)
        .number(blocks, 6)
        .number(count, 8)
        .number(control.entry_hash, 10)
        .number(debit, 12)
        .number(credit, 12)
        .blank(39)
        .finish())
}
