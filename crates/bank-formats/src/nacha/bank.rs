//! The receiving bank's side: return and notification-of-change files answering an origination
//! file, as an RDFI (or the ODFI passing them on) sends them back.

use bank_codes::us_routing::check_digit;
use std::collections::{HashMap, HashSet};

use chrono::{NaiveDate, NaiveTime};

use super::codes::{ChangeCode, ReturnCode, ReturnKind, SecCode, ServiceClass, TransactionCode};
use super::error::{Field, Location, Problem, WriteError};
use super::text::is_digits;
use super::types::{
    Addenda, Addenda98, Addenda99, BLOCKING_FACTOR, Batch, BatchHeader, EntryDetail, FileHeader,
    NachaFile,
};
use super::views::Correction;
use super::write::{
    LineEnding, RECORD_LENGTH, Record, at_most, batch_control, batch_header_record, digits,
    file_control, file_header, identifier, routing_number, text, yymmdd,
};

/// What the bank answers about one entry of the origination file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDecision {
    /// Trace number of the entry in the origination file (15 digits).
    pub original_trace_number: String,
    /// Return it, or notify a change.
    pub answer: Answer,
}

/// A return or a notification of change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Return the entry (an Addenda99 of the plain return layout).
    Return {
        /// Return reason code; dishonored (R61–R70) and contested (R71–R77) codes have other
        /// layouts and are refused.
        code: ReturnCode,
        /// Date of death, for R14 and R15 (positions 22–27); blank when `None`.
        date_of_death: Option<NaiveDate>,
        /// Free text (positions 36–79), cleaned up and cut to 44 characters.
        addenda_information: String,
    },
    /// Notify a change (an Addenda98 in a COR batch).
    Notification {
        /// Change code.
        code: ChangeCode,
        /// Corrected data as NACHA lays it out for the code (positions 36–64): written as
        /// given, at most 29 characters of the NACHA set, not blank. [`corrected_data`] lays out
        /// a [`Correction`].
        corrected_data: String,
    },
}

/// Options of [`answer_file`] and [`write_answer`]: what the bank's own file header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerOptions {
    /// File creation date, also the return batches' effective entry date.
    pub creation_date: NaiveDate,
    /// File creation time (`HHMM`); blank when `None`.
    pub creation_time: Option<NaiveTime>,
    /// File ID modifier, `A`–`Z` or `0`–`9`.
    pub file_id_modifier: char,
    /// What separates the records.
    pub line_ending: LineEnding,
}

/// Why an answer file cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// No decision: a file without batches cannot be written.
    #[error("no entry is returned or notified")]
    NoDecisions,
    /// A decision names a trace number the origination file does not hold.
    #[error("no entry with trace number {trace_number} in the origination file")]
    UnknownTraceNumber {
        /// The trace number.
        trace_number: String,
    },
    /// Two decisions for the same entry.
    #[error("more than one decision for trace number {trace_number}")]
    DuplicateDecision {
        /// The trace number.
        trace_number: String,
    },
    /// A return code this writer does not write (dishonored and contested returns).
    #[error("return code {code} is not written (dishonored and contested returns are not)")]
    ReturnCodeNotWritable {
        /// The code.
        code: ReturnCode,
    },
    /// The original entry cannot be answered: its transaction code is already a return or
    /// notification (x1, x6).
    #[error("entry {trace_number} has transaction code {code}, which cannot be returned")]
    NotAnswerable {
        /// The entry's trace number.
        trace_number: String,
        /// Its transaction code.
        code: TransactionCode,
    },
    /// More entries to answer than seven-digit trace sequence numbers.
    #[error("too many entries to answer")]
    TooManyEntries,
    /// A field of the answer file cannot be written (locations are those of the answer file).
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// The transaction code of the return or notification of an entry with code `original`:
/// 21 for checking credits (22, 23, 24), 26 for checking debits (27, 28, 29), 31 and 36 for
/// savings. `None` for codes that are themselves returns or notifications.
#[must_use]
pub fn answer_transaction_code(original: TransactionCode) -> Option<TransactionCode> {
    if original.is_return_or_notification() {
        return None;
    }
    let base = original.code() - original.code() % 10;
    let code = if original.is_credit() {
        base + 1
    } else {
        base + 6
    };
    TransactionCode::from_code(code)
}

/// Lays out `correction` as the corrected data of `code` (NACHA's positions within the 29
/// characters): C01 account; C02 routing; C03 routing, three blanks, account; C04 name; C05
/// transaction code; C06 account on 17, five blanks, transaction code; C07 routing, account on
/// 17, transaction code; C09 individual identification. `None` when a part the code needs is
/// missing, or for other codes. The reverse of [`Correction::read`].
#[must_use]
pub fn corrected_data(code: ChangeCode, correction: &Correction) -> Option<String> {
    let routing = || correction.routing_number.as_deref();
    let account = || correction.account_number.as_deref();
    let tx = || {
        correction
            .transaction_code
            .map(|t| format!("{:02}", t.code()))
    };
    Some(match code.number() {
        1 => account()?.to_owned(),
        2 => routing()?.to_owned(),
        3 => format!("{}   {}", routing()?, account()?),
        4 => correction.individual_name.clone()?,
        5 => tx()?,
        6 => format!("{:<17}     {}", account()?, tx()?),
        7 => format!("{}{:<17}{}", routing()?, account()?, tx()?),
        9 => correction.individual_id.clone()?,
        _ => return None,
    })
}

/// The answer file, typed: what [`write_answer`] writes.
///
/// - **File header**: the origination file's immediate destination and origin swapped, as
///   RDFIs do: the new immediate origin is the origination file's immediate destination (the
///   bank); the new immediate destination is the origination file's immediate origin when that
///   is a routing number (nine digits with a valid check digit), otherwise the first batch's
///   originating DFI with its check digit (a ten-digit company identification cannot be a
///   destination). The names are swapped too; the reference code is kept.
/// - **Batches**: for each original batch, in order, a batch with its returned entries (same
///   standard entry class) and then a `COR` batch with its notifications, each only when not
///   empty. Company name, discretionary data, identification, entry description and
///   descriptive date are copied; the effective entry date is [`AnswerOptions::creation_date`];
///   the originating DFI is the bank's (the first eight digits of the new immediate origin);
///   the service class is 220, 225 or 200 by the entries' transaction codes; batches are
///   numbered from 1.
/// - **Entries**: transaction code by [`answer_transaction_code`] (21 for a returned checking
///   credit 22, 31 for savings 32); receiving DFI = the original batch's originating DFI with its
///   check digit; account number, individual identification, name and discretionary data
///   copied; amount copied for a return, zero for a notification; trace number = the bank's
///   eight digits and a sequence number from 1, ascending through the file.
/// - **Addenda**: one Addenda99 (return code, original trace number, date of death, original
///   receiving DFI = the original entry's first eight digits, addenda information, the return's
///   trace number) or Addenda98 (change code, original trace, original receiving DFI, corrected
///   data, trace number).
///
/// # Errors
///
/// See [`AnswerError`]. Field errors of the copied fields are reported by [`write_answer`].
pub fn answer_file(
    original: &NachaFile,
    decisions: &[EntryDecision],
    options: &AnswerOptions,
) -> Result<NachaFile, AnswerError> {
    if decisions.is_empty() {
        return Err(AnswerError::NoDecisions);
    }
    let mut by_trace: HashMap<&str, &Answer> = HashMap::new();
    for decision in decisions {
        if by_trace
            .insert(decision.original_trace_number.as_str(), &decision.answer)
            .is_some()
        {
            return Err(AnswerError::DuplicateDecision {
                trace_number: decision.original_trace_number.clone(),
            });
        }
        if let Answer::Return { code, .. } = &decision.answer
            && code.kind() != ReturnKind::Return
        {
            return Err(AnswerError::ReturnCodeNotWritable { code: *code });
        }
    }
    let known: HashSet<&str> = original
        .batches
        .iter()
        .flat_map(|b| b.entries.iter().map(|e| e.trace_number.as_str()))
        .collect();
    if let Some(unknown) = decisions
        .iter()
        .find(|d| !known.contains(d.original_trace_number.as_str()))
    {
        return Err(AnswerError::UnknownTraceNumber {
            trace_number: unknown.original_trace_number.clone(),
        });
    }

    let header = swapped_header(original, options);
    let bank = header
        .immediate_origin
        .trim_start()
        .get(..8)
        .unwrap_or_default()
        .to_owned();
    let mut sequence = 0u32;
    let mut batches = Vec::new();
    for batch in &original.batches {
        let odfi = with_check_digit(&batch.header.originating_dfi);
        let mut returns = Vec::new();
        let mut notifications = Vec::new();
        for entry in &batch.entries {
            let Some(answer) = by_trace.get(entry.trace_number.as_str()) else {
                continue;
            };
            let code = answer_transaction_code(entry.transaction_code).ok_or_else(|| {
                AnswerError::NotAnswerable {
                    trace_number: entry.trace_number.clone(),
                    code: entry.transaction_code,
                }
            })?;
            sequence = sequence
                .checked_add(1)
                .filter(|s| *s <= 9_999_999)
                .ok_or(AnswerError::TooManyEntries)?;
            let trace_number = format!("{bank}{sequence:07}");
            let original_receiving_dfi =
                entry.receiving_dfi.get(..8).unwrap_or_default().to_owned();
            let (amount, addenda) = match answer {
                Answer::Return {
                    code,
                    date_of_death,
                    addenda_information,
                } => (
                    entry.amount,
                    Addenda::Return(Addenda99 {
                        return_code: *code,
                        original_trace_number: entry.trace_number.clone(),
                        date_of_death: *date_of_death,
                        original_receiving_dfi,
                        addenda_information: addenda_information.clone(),
                        trace_number: trace_number.clone(),
                    }),
                ),
                Answer::Notification {
                    code,
                    corrected_data,
                } => (
                    0,
                    Addenda::Notification(Addenda98 {
                        change_code: *code,
                        original_trace_number: entry.trace_number.clone(),
                        original_receiving_dfi,
                        corrected_data: corrected_data.clone(),
                        trace_number: trace_number.clone(),
                    }),
                ),
            };
            let answered = EntryDetail {
                transaction_code: code,
                receiving_dfi: odfi.clone(),
                account_number: entry.account_number.clone(),
                amount,
                individual_id: entry.individual_id.clone(),
                individual_name: entry.individual_name.clone(),
                discretionary_data: entry.discretionary_data.clone(),
                trace_number,
                addenda: vec![addenda],
            };
            if matches!(answer, Answer::Return { .. }) {
                returns.push(answered);
            } else {
                notifications.push(answered);
            }
        }
        for (sec_code, entries) in [
            (batch.header.sec_code, returns),
            (SecCode::Cor, notifications),
        ] {
            if entries.is_empty() {
                continue;
            }
            let batch_number =
                u32::try_from(batches.len() + 1).map_err(|_| AnswerError::TooManyEntries)?;
            batches.push(Batch {
                header: BatchHeader {
                    service_class: service_class(&entries),
                    sec_code,
                    effective_entry_date: Some(options.creation_date),
                    originating_dfi: bank.clone(),
                    batch_number,
                    ..batch.header.clone()
                },
                entries,
            });
        }
    }
    Ok(NachaFile { header, batches })
}

/// [`answer_file`], written by [`write_answer`].
///
/// # Errors
///
/// Those of both.
pub fn write_answer_file(
    original: &NachaFile,
    decisions: &[EntryDecision],
    options: &AnswerOptions,
) -> Result<Vec<u8>, AnswerError> {
    let file = answer_file(original, decisions, options)?;
    Ok(write_answer(&file, options.line_ending)?)
}

fn swapped_header(original: &NachaFile, options: &AnswerOptions) -> FileHeader {
    let o = &original.header;
    let origin = o.immediate_origin.trim();
    let destination = if origin.len() == 9 && is_routing(origin) {
        origin.to_owned()
    } else {
        original
            .batches
            .first()
            .map(|b| with_check_digit(&b.header.originating_dfi))
            .unwrap_or_default()
    };
    FileHeader {
        immediate_destination: destination,
        immediate_origin: o.immediate_destination.clone(),
        creation_date: options.creation_date,
        creation_time: options.creation_time,
        file_id_modifier: options.file_id_modifier,
        immediate_destination_name: o.immediate_origin_name.clone(),
        immediate_origin_name: o.immediate_destination_name.clone(),
        reference_code: o.reference_code.clone(),
    }
}

fn is_routing(value: &str) -> bool {
    is_digits(value)
        && value
            .get(..8)
            .and_then(check_digit)
            .is_some_and(|d| value.as_bytes().get(8) == Some(&(b'0' + d)))
}

/// Eight digits and their check digit; the value unchanged when it is not eight digits (the
/// writer then refuses it).
fn with_check_digit(first8: &str) -> String {
    check_digit(first8).map_or_else(|| first8.to_owned(), |d| format!("{first8}{d}"))
}

fn service_class(entries: &[EntryDetail]) -> ServiceClass {
    if entries.iter().all(|e| e.transaction_code.is_credit()) {
        ServiceClass::CreditsOnly
    } else if entries.iter().all(|e| e.transaction_code.is_debit()) {
        ServiceClass::DebitsOnly
    } else {
        ServiceClass::Mixed
    }
}

/// Writes a return or notification-of-change file: entries with transaction codes x1 and x6,
/// each with exactly one Addenda99 (plain return layout) or Addenda98, in batches of any
/// service class whose entries it allows (SEC `COR` batches for the notifications, which must
/// have zero amounts). Controls and padding are computed as [`write()`](super::write()) does;
/// the file header, text and identifier fields follow its rules.
///
/// # Errors
///
/// The first field that cannot be written, by location in `file` and NACHA field name; a file
/// without a batch or a batch without an entry.
pub fn write_answer(file: &NachaFile, line_ending: LineEnding) -> Result<Vec<u8>, WriteError> {
    if file.batches.is_empty() {
        return Err(WriteError::NoBatches);
    }
    let mut out = vec![file_header(&file.header)?];
    for (b, batch) in file.batches.iter().enumerate() {
        if batch.entries.is_empty() {
            return Err(WriteError::EmptyBatch { batch: b });
        }
        out.push(answer_batch_header(b, &batch.header)?);
        let mut previous: Option<&str> = None;
        for (e, entry) in batch.entries.iter().enumerate() {
            let at = Location::Entry { batch: b, entry: e };
            if previous.is_some_and(|p| entry.trace_number.as_str() <= p) {
                return Err(WriteError::field(
                    at,
                    Field::TraceNumber,
                    Problem::NotAscending,
                ));
            }
            previous = Some(&entry.trace_number);
            answer_entry(at, &batch.header, entry, &mut out)?;
        }
        out.push(batch_control(b, batch)?);
    }
    out.push(file_control(file)?);
    let block = usize::try_from(BLOCKING_FACTOR).unwrap_or(10);
    out.resize(out.len().div_ceil(block) * block, "9".repeat(RECORD_LENGTH));
    Ok(out.join(line_ending.as_str()).into_bytes())
}

fn answer_batch_header(b: usize, header: &BatchHeader) -> Result<String, WriteError> {
    let at = Location::BatchHeader { batch: b };
    if matches!(header.sec_code, SecCode::Pos) {
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

fn answer_entry(
    at: Location,
    header: &BatchHeader,
    entry: &EntryDetail,
    out: &mut Vec<String>,
) -> Result<(), WriteError> {
    let code = entry.transaction_code;
    if !code.is_return_or_notification() {
        return Err(WriteError::field(
            at,
            Field::TransactionCode,
            Problem::NotWritable {
                found: code.to_string(),
            },
        ));
    }
    if !header.service_class.allows(code) {
        return Err(WriteError::field(
            at,
            Field::TransactionCode,
            Problem::ServiceClassMismatch {
                service_class: header.service_class.code(),
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
    let [addenda] = entry.addenda.as_slice() else {
        return Err(WriteError::field(
            at,
            Field::AddendaRecordIndicator,
            Problem::AddendaIndicator {
                found: if entry.addenda.is_empty() { '0' } else { '1' },
                addenda: entry.addenda.len(),
            },
        ));
    };
    let at_addenda = match at {
        Location::Entry { batch, entry } => Location::Addenda {
            batch,
            entry,
            addenda: 0,
        },
        other => other,
    };
    let addenda = match (header.sec_code, addenda) {
        (SecCode::Cor, Addenda::Notification(a)) => {
            if amount != 0 {
                return Err(WriteError::field(at, Field::Amount, Problem::PrenoteAmount));
            }
            addenda_98(at_addenda, a)?
        }
        (sec, Addenda::Return(a)) if sec != SecCode::Cor => addenda_99(at_addenda, a)?,
        (_, other) => {
            let found = match other {
                Addenda::PaymentRelated(_) => "addenda 05",
                Addenda::Notification(_) => "addenda 98 outside a COR batch",
                Addenda::Return(_) => "addenda 99 in a COR batch",
                Addenda::DishonoredReturn(_) | Addenda::ContestedReturn(_) => {
                    "dishonored or contested addenda 99"
                }
            };
            return Err(WriteError::field(
                at_addenda,
                Field::AddendaTypeCode,
                Problem::NotWritable {
                    found: found.to_owned(),
                },
            ));
        }
    };
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
            .text("1", 1)
            .text(&entry.trace_number, 15)
            .finish(),
    );
    out.push(addenda);
    Ok(())
}

fn addenda_99(at: Location, a: &Addenda99) -> Result<String, WriteError> {
    if a.return_code.kind() != ReturnKind::Return {
        return Err(WriteError::field(
            at,
            Field::ReturnReasonCode,
            Problem::NotWritable {
                found: a.return_code.to_string(),
            },
        ));
    }
    digits(
        at,
        Field::OriginalEntryTraceNumber,
        &a.original_trace_number,
        15,
    )?;
    let death = a
        .date_of_death
        .map(|d| yymmdd(at, Field::DateOfDeath, d))
        .transpose()?
        .unwrap_or_default();
    digits(
        at,
        Field::OriginalReceivingDfi,
        &a.original_receiving_dfi,
        8,
    )?;
    let information = text(
        at,
        Field::AddendaInformation,
        &a.addenda_information,
        44,
        false,
    )?;
    digits(at, Field::TraceNumber, &a.trace_number, 15)?;
    Ok(Record::new('7')
        .text("99", 2)
        .text(&a.return_code.to_string(), 3)
        .text(&a.original_trace_number, 15)
        .text(&death, 6)
        .text(&a.original_receiving_dfi, 8)
        .text(&information, 44)
        .text(&a.trace_number, 15)
        .finish())
}

fn addenda_98(at: Location, a: &Addenda98) -> Result<String, WriteError> {
    digits(
        at,
        Field::OriginalEntryTraceNumber,
        &a.original_trace_number,
        15,
    )?;
    digits(
        at,
        Field::OriginalReceivingDfi,
        &a.original_receiving_dfi,
        8,
    )?;
    identifier(at, Field::CorrectedData, &a.corrected_data, 29, true)?;
    digits(at, Field::TraceNumber, &a.trace_number, 15)?;
    Ok(Record::new('7')
        .text("98", 2)
        .text(&a.change_code.to_string(), 3)
        .text(&a.original_trace_number, 15)
        .blank(6)
        .text(&a.original_receiving_dfi, 8)
        .text(&a.corrected_data, 29)
        .blank(15)
        .text(&a.trace_number, 15)
        .finish())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answer_codes() {
        let code = |n| TransactionCode::from_code(n).and_then(answer_transaction_code);
        assert_eq!(code(22), TransactionCode::from_code(21));
        assert_eq!(code(23), TransactionCode::from_code(21));
        assert_eq!(code(32), TransactionCode::from_code(31));
        assert_eq!(code(27), TransactionCode::from_code(26));
        assert_eq!(code(38), TransactionCode::from_code(36));
        assert_eq!(code(21), None);
        assert_eq!(code(36), None);
    }

    #[test]
    fn corrected_data_reads_back() {
        let full = Correction {
            routing_number: Some("021000021".into()),
            account_number: Some("12345678".into()),
            transaction_code: Some(TransactionCode::SavingsCredit),
            individual_name: Some("JANE DOE".into()),
            individual_id: Some("ID-42".into()),
        };
        for n in [1, 2, 3, 4, 5, 6, 7, 9] {
            let code = ChangeCode::new(n).unwrap();
            let data = corrected_data(code, &full).unwrap();
            assert!(data.len() <= 29, "C{n:02}: {data:?}");
            let read = Correction::read(code, &data);
            let expect = |some: bool, v: &Option<String>| if some { v.clone() } else { None };
            assert_eq!(
                read.routing_number,
                expect(matches!(n, 2 | 3 | 7), &full.routing_number),
                "C{n:02}"
            );
            assert_eq!(
                read.account_number,
                expect(matches!(n, 1 | 3 | 6 | 7), &full.account_number),
                "C{n:02}"
            );
            assert_eq!(
                read.individual_name,
                expect(n == 4, &full.individual_name),
                "C{n:02}"
            );
            assert_eq!(
                read.individual_id,
                expect(n == 9, &full.individual_id),
                "C{n:02}"
            );
            assert_eq!(
                read.transaction_code,
                matches!(n, 5..=7).then_some(TransactionCode::SavingsCredit),
                "C{n:02}"
            );
        }
        assert_eq!(
            corrected_data(ChangeCode::new(3).unwrap(), &Correction::default()),
            None
        );
        assert_eq!(corrected_data(ChangeCode::new(13).unwrap(), &full), None);
    }
}
