//! The receiving bank's answer to a NACHA origination file: return and notification-of-change
//! files, as an RDFI (or the ODFI passing them on) sends them back, laid out by
//! [`bank_formats::nacha::write_answer`].

use std::collections::{HashMap, HashSet};

use bank_formats::nacha::{
    Addenda, Addenda98, Addenda99, Batch, BatchHeader, ChangeCode, EntryDetail, FileHeader,
    LineEnding, NachaFile, ReturnCode, ReturnKind, SecCode, ServiceClass, TransactionCode,
    WriteError, answer_transaction_code, write_answer,
};
use chrono::{NaiveDate, NaiveTime};

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

/// Options of [`answer_file`] and [`write_answer`](bank_formats::nacha::write_answer): what the bank's own file header says.
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

/// The answer file, typed: what [`write_answer`](bank_formats::nacha::write_answer) writes.
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
/// See [`AnswerError`]. Field errors of the copied fields are reported by [`write_answer`](bank_formats::nacha::write_answer).
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

/// [`answer_file`], written by [`write_answer`](bank_formats::nacha::write_answer).
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
    let destination = if bank_codes::us_routing::is_valid(origin) {
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

/// Eight digits and their check digit; the value unchanged when it is not eight digits (the
/// writer then refuses it).
fn with_check_digit(first8: &str) -> String {
    bank_codes::us_routing::check_digit(first8)
        .map_or_else(|| first8.to_owned(), |d| format!("{first8}{d}"))
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
