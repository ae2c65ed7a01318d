//! The parser: the bytes of a NACHA file to typed contents, with the control records checked.

use bank_codes::us_routing::check_digit;
use chrono::{NaiveDate, NaiveTime};

use super::codes::{ChangeCode, ReturnCode, ReturnKind, SecCode, ServiceClass, TransactionCode};
use super::error::{Field, ParseError, ParseErrorKind, Problem};
use super::text::is_digits;
use super::types::{
    Addenda, Addenda05, Addenda98, Addenda99, Addenda99Contested, Addenda99Dishonored, Batch,
    BatchHeader, EntryDetail, FileHeader, NachaFile,
};
use super::write::RECORD_LENGTH;

/// Options of [`parse_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct ParseOptions {
    /// Accept records shorter than 94 characters as if they were blank-filled to 94. Some
    /// systems strip trailing blanks from each line. Off by default: a short record is an
    /// error. A record longer than 94 characters is always an error.
    pub allow_short_records: bool,
}

/// Parses a NACHA file with the default (strict) options.
///
/// # Errors
///
/// See [`parse_with`].
pub fn parse(bytes: &[u8]) -> std::result::Result<NachaFile, ParseError> {
    parse_with(bytes, &ParseOptions::default())
}

/// Parses a NACHA file.
///
/// Records are separated by `\n` or `\r\n`; a file without any line feed is read as
/// consecutive 94-character records. Empty lines at the end and padding records (94 `9`s)
/// after the file control record are skipped. Every batch control and the file control record
/// are checked against the counts, entry hashes and totals computed from the records.
///
/// # Errors
///
/// The first problem found, with its line: a byte outside printable ASCII, a record of the
/// wrong length, an unknown or misplaced record type, a field that cannot be read (named by
/// its NACHA name), a control total that does not match. Never panics.
pub fn parse_with(
    bytes: &[u8],
    options: &ParseOptions,
) -> std::result::Result<NachaFile, ParseError> {
    let lines = split(bytes, options)?;
    Parser {
        lines: &lines,
        next: 0,
    }
    .file()
}

type Result<T> = std::result::Result<T, ParseError>;

/// One record: its line number and its 94 characters (all printable ASCII).
struct Line {
    number: usize,
    text: String,
}

fn split(bytes: &[u8], options: &ParseOptions) -> Result<Vec<Line>> {
    let mut raw: Vec<&[u8]> = if bytes.contains(&b'\n') {
        bytes
            .split(|b| *b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .collect()
    } else {
        bytes.chunks(RECORD_LENGTH).collect()
    };
    while raw.last().is_some_and(|line| line.is_empty()) {
        raw.pop();
    }
    if raw.is_empty() {
        return Err(ParseError {
            line: 1,
            kind: ParseErrorKind::Empty,
        });
    }
    raw.iter()
        .enumerate()
        .map(|(i, bytes)| line(i + 1, bytes, options))
        .collect()
}

fn line(number: usize, bytes: &[u8], options: &ParseOptions) -> Result<Line> {
    let error = |kind| ParseError { line: number, kind };
    if let Some((column, byte)) = bytes
        .iter()
        .enumerate()
        .find(|(_, b)| !(0x20..=0x7e).contains(*b))
    {
        return Err(error(ParseErrorKind::InvalidByte {
            column: column + 1,
            byte: *byte,
        }));
    }
    let short_allowed = options.allow_short_records && !bytes.is_empty();
    if bytes.len() > RECORD_LENGTH || (bytes.len() < RECORD_LENGTH && !short_allowed) {
        return Err(error(ParseErrorKind::RecordLength { found: bytes.len() }));
    }
    let mut text: String = bytes.iter().map(|b| char::from(*b)).collect();
    while text.len() < RECORD_LENGTH {
        text.push(' ');
    }
    let found = text.chars().next().unwrap_or(' ');
    if !matches!(found, '1' | '5' | '6' | '7' | '8' | '9') {
        return Err(error(ParseErrorKind::UnknownRecordType { found }));
    }
    Ok(Line { number, text })
}

impl Line {
    fn record_type(&self) -> char {
        self.text.chars().next().unwrap_or(' ')
    }

    fn is_padding(&self) -> bool {
        self.text.bytes().all(|b| b == b'9')
    }

    fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            line: self.number,
            kind,
        }
    }

    fn field_error(&self, field: Field, problem: Problem) -> ParseError {
        self.error(ParseErrorKind::Field { field, problem })
    }

    /// Positions `start` to `end` of the record, counted from 1 and inclusive, as in the NACHA
    /// layout.
    fn get(&self, start: usize, end: usize) -> &str {
        self.text
            .get(start.saturating_sub(1)..end)
            .unwrap_or_default()
    }

    /// An alphanumeric field, its blank fill removed.
    fn text(&self, start: usize, end: usize) -> String {
        self.get(start, end).trim_end().to_owned()
    }

    fn digits(&self, start: usize, end: usize, field: Field) -> Result<&str> {
        let value = self.get(start, end);
        if is_digits(value) {
            Ok(value)
        } else {
            Err(self.field_error(
                field,
                Problem::NotDigits {
                    digits: end + 1 - start,
                },
            ))
        }
    }

    fn number(&self, start: usize, end: usize, field: Field) -> Result<u64> {
        let digits = self.digits(start, end, field)?;
        digits.parse().map_err(|_| {
            self.field_error(
                field,
                Problem::NotDigits {
                    digits: end + 1 - start,
                },
            )
        })
    }

    fn fixed(&self, start: usize, end: usize, field: Field, expected: &'static str) -> Result<()> {
        let found = self.get(start, end);
        if found == expected {
            Ok(())
        } else {
            Err(self.field_error(
                field,
                Problem::Expected {
                    expected,
                    found: found.to_owned(),
                },
            ))
        }
    }

    /// A `YYMMDD` date (years 2000–2099). When `optional`, blanks or zeros give `None`.
    fn date(&self, start: usize, field: Field, optional: bool) -> Result<Option<NaiveDate>> {
        let raw = self.get(start, start + 5);
        if optional && (raw.trim().is_empty() || raw == "000000") {
            return Ok(None);
        }
        let invalid = || {
            self.field_error(
                field,
                Problem::InvalidDateTime {
                    found: raw.to_owned(),
                    format: "YYMMDD",
                },
            )
        };
        let part = |from: usize| -> Option<u32> { raw.get(from..from + 2)?.parse().ok() };
        if !is_digits(raw) {
            return Err(invalid());
        }
        let (Some(year), Some(month), Some(day)) = (part(0), part(2), part(4)) else {
            return Err(invalid());
        };
        let year = i32::try_from(2000 + year).map_err(|_| invalid())?;
        NaiveDate::from_ymd_opt(year, month, day)
            .map(Some)
            .ok_or_else(invalid)
    }

    /// A two-digit reason code without its `R`, as dishonored and contested returns carry it.
    fn short_return_code(&self, start: usize, field: Field) -> Result<ReturnCode> {
        let number = self.number(start, start + 1, field)?;
        u8::try_from(number)
            .ok()
            .and_then(ReturnCode::new)
            .ok_or_else(|| {
                self.field_error(
                    field,
                    Problem::Unsupported {
                        found: self.get(start, start + 1).to_owned(),
                    },
                )
            })
    }
}

/// An entry being read, until the record after its addenda.
struct Pending<'a> {
    entry: EntryDetail,
    line: &'a Line,
    indicator: char,
}

struct Parser<'a> {
    lines: &'a [Line],
    next: usize,
}

impl<'a> Parser<'a> {
    fn next_line(&mut self) -> Option<&'a Line> {
        let line = self.lines.get(self.next)?;
        self.next += 1;
        Some(line)
    }

    fn truncated(&self, missing: &'static str) -> ParseError {
        ParseError {
            line: self.lines.last().map_or(1, |l| l.number),
            kind: ParseErrorKind::Truncated { missing },
        }
    }

    fn file(mut self) -> Result<NachaFile> {
        let first = self
            .next_line()
            .ok_or_else(|| self.truncated("file header"))?;
        if first.record_type() != '1' {
            return Err(first.error(ParseErrorKind::UnexpectedRecord {
                found: first.record_type(),
                expected: "the file header record (1)",
            }));
        }
        let header = file_header(first)?;
        let mut batches = Vec::new();
        let control = loop {
            let line = self
                .next_line()
                .ok_or_else(|| self.truncated("file control"))?;
            match line.record_type() {
                '5' => batches.push(self.batch(line)?),
                '9' if !line.is_padding() => break line,
                found => {
                    return Err(line.error(ParseErrorKind::UnexpectedRecord {
                        found,
                        expected: "a batch header (5) or the file control record (9)",
                    }));
                }
            }
        };
        while let Some(line) = self.next_line() {
            if !line.is_padding() {
                return Err(line.error(ParseErrorKind::UnexpectedRecord {
                    found: line.record_type(),
                    expected: "only padding records (94 9s) after the file control record",
                }));
            }
        }
        let file = NachaFile { header, batches };
        check_file_control(control, &file)?;
        Ok(file)
    }

    fn batch(&mut self, header_line: &'a Line) -> Result<Batch> {
        let header = batch_header(header_line)?;
        let mut entries = Vec::new();
        let mut pending: Option<Pending<'a>> = None;
        loop {
            let line = self
                .next_line()
                .ok_or_else(|| self.truncated("batch control"))?;
            match line.record_type() {
                '6' => {
                    if let Some(done) = pending.take() {
                        entries.push(finish_entry(done)?);
                    }
                    pending = Some(entry_detail(line, &header)?);
                }
                '7' => {
                    let Some(current) = pending.as_mut() else {
                        return Err(line.error(ParseErrorKind::UnexpectedRecord {
                            found: '7',
                            expected: "an entry detail record (6) before an addenda record",
                        }));
                    };
                    let addenda = addenda(line, &current.entry)?;
                    current.entry.addenda.push(addenda);
                }
                '8' => {
                    if let Some(done) = pending.take() {
                        entries.push(finish_entry(done)?);
                    }
                    let batch = Batch { header, entries };
                    check_batch_control(line, &batch)?;
                    return Ok(batch);
                }
                found => {
                    return Err(line.error(ParseErrorKind::UnexpectedRecord {
                        found,
                        expected: "an entry detail (6), addenda (7) or batch control (8) record",
                    }));
                }
            }
        }
    }
}

fn file_header(line: &Line) -> Result<FileHeader> {
    line.fixed(2, 3, Field::PriorityCode, "01")?;
    let destination = line.get(4, 13);
    let routing = destination
        .strip_prefix(' ')
        .filter(|r| is_digits(r))
        .ok_or_else(|| {
            line.field_error(
                Field::ImmediateDestination,
                Problem::Expected {
                    expected: "a blank and 9 digits",
                    found: destination.to_owned(),
                },
            )
        })?;
    check_routing(line, Field::ImmediateDestination, routing)?;
    let origin = line.get(14, 23).trim();
    if !(origin.len() == 9 || origin.len() == 10) || !is_digits(origin) {
        return Err(line.field_error(
            Field::ImmediateOrigin,
            Problem::Expected {
                expected: "9 or 10 digits",
                found: line.get(14, 23).to_owned(),
            },
        ));
    }
    let creation_date = line
        .date(24, Field::FileCreationDate, false)?
        .ok_or_else(|| line.field_error(Field::FileCreationDate, Problem::Required))?;
    let time = line.get(30, 33);
    let creation_time = if time.trim().is_empty() {
        None
    } else {
        let invalid = || {
            line.field_error(
                Field::FileCreationTime,
                Problem::InvalidDateTime {
                    found: time.to_owned(),
                    format: "HHMM",
                },
            )
        };
        let hour = line
            .number(30, 31, Field::FileCreationTime)
            .map_err(|_| invalid())?;
        let minute = line
            .number(32, 33, Field::FileCreationTime)
            .map_err(|_| invalid())?;
        let (Ok(hour), Ok(minute)) = (u32::try_from(hour), u32::try_from(minute)) else {
            return Err(invalid());
        };
        Some(NaiveTime::from_hms_opt(hour, minute, 0).ok_or_else(invalid)?)
    };
    let file_id_modifier = line.get(34, 34).chars().next().unwrap_or(' ');
    if !(file_id_modifier.is_ascii_uppercase() || file_id_modifier.is_ascii_digit()) {
        return Err(line.field_error(
            Field::FileIdModifier,
            Problem::Expected {
                expected: "A-Z or 0-9",
                found: file_id_modifier.to_string(),
            },
        ));
    }
    line.fixed(35, 37, Field::RecordSize, "094")?;
    line.fixed(38, 39, Field::BlockingFactor, "10")?;
    line.fixed(40, 40, Field::FormatCode, "1")?;
    Ok(FileHeader {
        immediate_destination: routing.to_owned(),
        immediate_origin: origin.to_owned(),
        creation_date,
        creation_time,
        file_id_modifier,
        immediate_destination_name: line.text(41, 63),
        immediate_origin_name: line.text(64, 86),
        reference_code: line.text(87, 94),
    })
}

/// Checks the ninth digit of a nine-digit routing number.
fn check_routing(line: &Line, field: Field, routing: &str) -> Result<()> {
    let expected = routing.get(..8).and_then(check_digit);
    match expected {
        Some(expected) if routing.as_bytes().get(8) == Some(&(b'0' + expected)) => Ok(()),
        Some(expected) => Err(line.field_error(field, Problem::CheckDigit { expected })),
        None => Err(line.field_error(field, Problem::NotDigits { digits: 9 })),
    }
}

fn batch_header(line: &Line) -> Result<BatchHeader> {
    let code = line.number(2, 4, Field::ServiceClassCode)?;
    let service_class = u16::try_from(code)
        .ok()
        .and_then(ServiceClass::from_code)
        .ok_or_else(|| {
            line.field_error(
                Field::ServiceClassCode,
                Problem::Unsupported {
                    found: line.get(2, 4).to_owned(),
                },
            )
        })?;
    let sec = line.get(51, 53);
    let sec_code = SecCode::from_code(sec).ok_or_else(|| {
        line.field_error(
            Field::StandardEntryClassCode,
            Problem::Unsupported {
                found: sec.to_owned(),
            },
        )
    })?;
    let effective_entry_date = line.date(70, Field::EffectiveEntryDate, true)?;
    let settlement = line.get(76, 78);
    if !(settlement.trim().is_empty() || is_digits(settlement)) {
        return Err(line.field_error(
            Field::SettlementDate,
            Problem::Expected {
                expected: "blank or a Julian day",
                found: settlement.to_owned(),
            },
        ));
    }
    let status = line.get(79, 79);
    if !matches!(status, "0" | "1" | "2") {
        return Err(line.field_error(
            Field::OriginatorStatusCode,
            Problem::Expected {
                expected: "0, 1 or 2",
                found: status.to_owned(),
            },
        ));
    }
    let originating_dfi = line.digits(80, 87, Field::OriginatingDfi)?.to_owned();
    let batch_number = line.number(88, 94, Field::BatchNumber)?;
    Ok(BatchHeader {
        service_class,
        company_name: line.text(5, 20),
        company_discretionary_data: line.text(21, 40),
        company_identification: line.text(41, 50),
        sec_code,
        company_entry_description: line.text(54, 63),
        company_descriptive_date: line.text(64, 69),
        effective_entry_date,
        originating_dfi,
        batch_number: u32::try_from(batch_number).unwrap_or(u32::MAX),
    })
}

fn entry_detail<'a>(line: &'a Line, header: &BatchHeader) -> Result<Pending<'a>> {
    let code = line.number(2, 3, Field::TransactionCode)?;
    let transaction_code = u8::try_from(code)
        .ok()
        .and_then(TransactionCode::from_code)
        .ok_or_else(|| {
            line.field_error(
                Field::TransactionCode,
                Problem::Unsupported {
                    found: line.get(2, 3).to_owned(),
                },
            )
        })?;
    if !header.service_class.allows(transaction_code) {
        return Err(line.field_error(
            Field::TransactionCode,
            Problem::ServiceClassMismatch {
                service_class: header.service_class.code(),
            },
        ));
    }
    let receiving_dfi = format!(
        "{}{}",
        line.digits(4, 11, Field::ReceivingDfi)?,
        line.digits(12, 12, Field::CheckDigit)?
    );
    check_routing(line, Field::CheckDigit, &receiving_dfi)?;
    let indicator = line.get(79, 79).chars().next().unwrap_or(' ');
    if !matches!(indicator, '0' | '1') {
        return Err(line.field_error(
            Field::AddendaRecordIndicator,
            Problem::Expected {
                expected: "0 or 1",
                found: indicator.to_string(),
            },
        ));
    }
    let entry = EntryDetail {
        transaction_code,
        receiving_dfi,
        account_number: line.text(13, 29),
        amount: line.number(30, 39, Field::Amount)?,
        individual_id: line.text(40, 54),
        individual_name: line.text(55, 76),
        discretionary_data: line.text(77, 78),
        trace_number: line.digits(80, 94, Field::TraceNumber)?.to_owned(),
        addenda: Vec::new(),
    };
    Ok(Pending {
        entry,
        line,
        indicator,
    })
}

/// Checks the addenda record indicator against the addenda records read.
fn finish_entry(pending: Pending<'_>) -> Result<EntryDetail> {
    let has_addenda = !pending.entry.addenda.is_empty();
    if has_addenda != (pending.indicator == '1') {
        return Err(pending.line.field_error(
            Field::AddendaRecordIndicator,
            Problem::AddendaIndicator {
                found: pending.indicator,
                addenda: pending.entry.addenda.len(),
            },
        ));
    }
    Ok(pending.entry)
}

fn addenda(line: &Line, entry: &EntryDetail) -> Result<Addenda> {
    match line.get(2, 3) {
        "05" => addenda_05(line, entry),
        "98" => addenda_98(line),
        "99" => addenda_99(line),
        found => Err(line.field_error(
            Field::AddendaTypeCode,
            Problem::Unsupported {
                found: found.to_owned(),
            },
        )),
    }
}

fn addenda_05(line: &Line, entry: &EntryDetail) -> Result<Addenda> {
    let expected = u64::try_from(entry.addenda.len()).map_or(u64::MAX, |n| n.saturating_add(1));
    let found = line.number(84, 87, Field::AddendaSequenceNumber)?;
    if found != expected {
        return Err(line.field_error(
            Field::AddendaSequenceNumber,
            Problem::Sequence { expected, found },
        ));
    }
    let expected = entry.trace_sequence().map_or(0, u64::from);
    let found = line.number(88, 94, Field::EntryDetailSequenceNumber)?;
    if found != expected {
        return Err(line.field_error(
            Field::EntryDetailSequenceNumber,
            Problem::Sequence { expected, found },
        ));
    }
    Ok(Addenda::PaymentRelated(Addenda05 {
        payment_related_information: line.text(4, 83),
    }))
}

fn addenda_98(line: &Line) -> Result<Addenda> {
    let code = line.get(4, 6);
    let change_code = ChangeCode::parse(code).ok_or_else(|| {
        line.field_error(
            Field::ChangeCode,
            Problem::Unsupported {
                found: code.to_owned(),
            },
        )
    })?;
    Ok(Addenda::Notification(Addenda98 {
        change_code,
        original_trace_number: line
            .digits(7, 21, Field::OriginalEntryTraceNumber)?
            .to_owned(),
        original_receiving_dfi: line.digits(28, 35, Field::OriginalReceivingDfi)?.to_owned(),
        corrected_data: line.text(36, 64),
        trace_number: line.digits(80, 94, Field::TraceNumber)?.to_owned(),
    }))
}

fn addenda_99(line: &Line) -> Result<Addenda> {
    let code = line.get(4, 6);
    let return_code = ReturnCode::parse(code).ok_or_else(|| {
        line.field_error(
            Field::ReturnReasonCode,
            Problem::Unsupported {
                found: code.to_owned(),
            },
        )
    })?;
    let original_trace_number = line
        .digits(7, 21, Field::OriginalEntryTraceNumber)?
        .to_owned();
    let original_receiving_dfi = line.digits(28, 35, Field::OriginalReceivingDfi)?.to_owned();
    let trace_number = line.digits(80, 94, Field::TraceNumber)?.to_owned();
    Ok(match return_code.kind() {
        ReturnKind::Return => Addenda::Return(Addenda99 {
            return_code,
            original_trace_number,
            date_of_death: line.date(22, Field::DateOfDeath, true)?,
            original_receiving_dfi,
            addenda_information: line.text(36, 79),
            trace_number,
        }),
        ReturnKind::Dishonored => Addenda::DishonoredReturn(Addenda99Dishonored {
            return_code,
            original_trace_number,
            original_receiving_dfi,
            return_trace_number: line.digits(39, 53, Field::ReturnTraceNumber)?.to_owned(),
            return_settlement_date: line.text(54, 56),
            original_return_code: line.short_return_code(57, Field::OriginalReturnReasonCode)?,
            addenda_information: line.text(59, 79),
            trace_number,
        }),
        ReturnKind::Contested => Addenda::ContestedReturn(Addenda99Contested {
            return_code,
            original_trace_number,
            date_original_entry_returned: line.text(22, 27),
            original_receiving_dfi,
            original_settlement_date: line.text(36, 38),
            return_trace_number: line.digits(39, 53, Field::ReturnTraceNumber)?.to_owned(),
            return_settlement_date: line.text(54, 56),
            original_return_code: line.short_return_code(57, Field::OriginalReturnReasonCode)?,
            dishonored_return_trace_number: line
                .digits(59, 73, Field::DishonoredReturnTraceNumber)?
                .to_owned(),
            dishonored_return_settlement_date: line.text(74, 76),
            dishonored_return_code: line
                .short_return_code(77, Field::DishonoredReturnReasonCode)?,
            trace_number,
        }),
    })
}

fn check_total(line: &Line, field: Field, start: usize, end: usize, computed: u64) -> Result<()> {
    let found = line.number(start, end, field)?;
    if found == computed {
        Ok(())
    } else {
        Err(line.error(ParseErrorKind::ControlTotal {
            field,
            found,
            computed,
        }))
    }
}

fn check_copy(line: &Line, field: Field, found: &str, header: &str) -> Result<()> {
    if found.trim() == header.trim() {
        Ok(())
    } else {
        Err(line.error(ParseErrorKind::HeaderMismatch {
            field,
            found: found.to_owned(),
            header: header.to_owned(),
        }))
    }
}

fn check_batch_control(line: &Line, batch: &Batch) -> Result<()> {
    let computed = batch.control();
    check_copy(
        line,
        Field::ServiceClassCode,
        line.get(2, 4),
        &computed.service_class.to_string(),
    )?;
    check_total(
        line,
        Field::EntryAddendaCount,
        5,
        10,
        computed.entry_addenda_count,
    )?;
    check_total(line, Field::EntryHash, 11, 20, computed.entry_hash)?;
    check_total(line, Field::TotalDebit, 21, 32, computed.total_debit)?;
    check_total(line, Field::TotalCredit, 33, 44, computed.total_credit)?;
    check_copy(
        line,
        Field::CompanyIdentification,
        line.get(45, 54),
        &computed.company_identification,
    )?;
    check_copy(
        line,
        Field::OriginatingDfi,
        line.get(80, 87),
        &computed.originating_dfi,
    )?;
    check_copy(
        line,
        Field::BatchNumber,
        line.get(88, 94),
        &format!("{:07}", computed.batch_number),
    )
}

fn check_file_control(line: &Line, file: &NachaFile) -> Result<()> {
    let computed = file.control();
    check_total(line, Field::BatchCount, 2, 7, computed.batch_count)?;
    check_total(line, Field::BlockCount, 8, 13, computed.block_count)?;
    check_total(
        line,
        Field::EntryAddendaCount,
        14,
        21,
        computed.entry_addenda_count,
    )?;
    check_total(line, Field::EntryHash, 22, 31, computed.entry_hash)?;
    check_total(line, Field::TotalDebit, 32, 43, computed.total_debit)?;
    check_total(line, Field::TotalCredit, 44, 55, computed.total_credit)
}
