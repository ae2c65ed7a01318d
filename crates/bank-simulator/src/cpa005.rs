//! The bank's answer to a Standard 005 origination file: the file of returned items a Canadian
//! bank sends back, written by [`bank_formats::cpa005::write`].

use std::collections::BTreeMap;

use chrono::NaiveDate;

use bank_codes::digits::is_ascii_digits;
use bank_formats::cpa005::{
    Cpa005File, Header, RecordType, ReturnCode, ReturnDetails, WriteError, WriteOptions, write,
};

/// The bank's decision to return one transaction of the origination file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReturnDecision {
    /// The transaction's index in the parsed origination file's
    /// [`transactions`](Cpa005File::transactions), from 0.
    pub item: usize,
    /// Why it is returned.
    pub reason: ReturnCode,
}

/// What the bank's own file says besides the returned items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnFileOptions {
    /// Creation date of the file of returns.
    pub creation_date: NaiveDate,
    /// The bank's file creation number, 1 to 9999.
    pub file_creation_number: u16,
    /// The returning institution and branch `0IIITTTTT`: the first nine digits of the returned
    /// items' trace numbers, followed by a 13-digit sequence from 1.
    pub trace_prefix: String,
    /// How the file is written.
    pub write: WriteOptions,
}

/// Why a file of returns cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReturnFileError {
    /// A decision names a transaction the origination file does not hold.
    #[error("the origination file has no transaction {item}")]
    UnknownItem {
        /// The index.
        item: usize,
    },
    /// Two decisions for one transaction.
    #[error("more than one decision for transaction {item}")]
    DuplicateItem {
        /// The index.
        item: usize,
    },
    /// A decision names a transaction that is itself a returned item.
    #[error("transaction {item} is a returned item, not an originated one")]
    NotOriginated {
        /// The index.
        item: usize,
    },
    /// The trace prefix is not `0IIITTTTT`.
    #[error("the trace prefix must be 0IIITTTTT")]
    TracePrefix,
    /// The file cannot be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// The file of returned items answering `original`: a header with the originator's ID, data
/// centre and currency of the original and the bank's date and file creation number; one
/// returned item per decision, in the original's order (`I` for a credit, `J` for a debit),
/// repeating every field of the original transaction (its cross reference among them) with
/// the bank's trace number and the return reason code.
///
/// # Errors
///
/// An unknown, repeated or already returned item, or a trace prefix that is not `0IIITTTTT`.
pub fn return_file(
    original: &Cpa005File,
    decisions: &[ReturnDecision],
    options: &ReturnFileOptions,
) -> Result<Cpa005File, ReturnFileError> {
    let prefix = &options.trace_prefix;
    if !is_ascii_digits(prefix, 9..=9) || !prefix.starts_with('0') {
        return Err(ReturnFileError::TracePrefix);
    }
    let mut by_item = BTreeMap::new();
    for decision in decisions {
        if by_item.insert(decision.item, decision.reason).is_some() {
            return Err(ReturnFileError::DuplicateItem {
                item: decision.item,
            });
        }
    }
    let mut transactions = Vec::with_capacity(by_item.len());
    for (sequence, (&item, &reason)) in by_item.iter().enumerate() {
        let mut returned = original
            .transactions
            .get(item)
            .cloned()
            .ok_or(ReturnFileError::UnknownItem { item })?;
        returned.record_type = match returned.record_type {
            RecordType::Credit => RecordType::ReturnedCredit,
            RecordType::Debit => RecordType::ReturnedDebit,
            RecordType::ReturnedCredit | RecordType::ReturnedDebit => {
                return Err(ReturnFileError::NotOriginated { item });
            }
        };
        returned.item_trace_number = format!("{prefix}{:013}", sequence + 1);
        returned.returned = Some(ReturnDetails { reason });
        transactions.push(returned);
    }
    Ok(Cpa005File {
        header: Header {
            originator_id: original.header.originator_id.clone(),
            file_creation_number: options.file_creation_number,
            creation_date: options.creation_date,
            destination_data_centre: original.header.destination_data_centre.clone(),
            currency: original.header.currency.clone(),
        },
        transactions,
    })
}

/// [`return_file`], written.
///
/// # Errors
///
/// As [`return_file`], and a field the writer refuses.
pub fn write_return_file(
    original: &Cpa005File,
    decisions: &[ReturnDecision],
    options: &ReturnFileOptions,
) -> Result<Vec<u8>, ReturnFileError> {
    let file = return_file(original, decisions, options)?;
    Ok(write(&file, &options.write)?)
}
