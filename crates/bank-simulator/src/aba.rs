//! The bank's answer to an ABA direct entry file: the return file it sends back to the user
//! (the layout of NAB's direct entry returns file, written by [`bank_formats::aba::write_return`]).

use std::collections::BTreeMap;

use bank_formats::aba::{
    AbaFile, DescriptiveRecord, DetailKind, ReturnCode, WriteError, write_return,
};
use chrono::{Datelike, NaiveDate};

/// The bank's decision to return one payment of the originated file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReturnDecision {
    /// Index (from 0) of the payment among the originated file's detail records.
    pub entry: usize,
    /// Why it is returned.
    pub code: ReturnCode,
}

/// Why a return file cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReturnError {
    /// No decision: a file without detail records cannot be written.
    #[error("no payment is returned")]
    NoDecisions,
    /// A decision names an entry the originated file does not have.
    #[error("the originated file has no detail record {entry}")]
    UnknownEntry {
        /// The index.
        entry: usize,
    },
    /// Two decisions for the same entry.
    #[error("more than one decision for detail record {entry}")]
    DuplicateEntry {
        /// The index.
        entry: usize,
    },
    /// The entry is not a credit payment (a debit, such as the self-balancing record, or a
    /// record that is already a return).
    #[error("detail record {entry} is not a credit payment")]
    NotACredit {
        /// The index.
        entry: usize,
    },
    /// An unassigned return code (0 or 7).
    #[error("return code {code} is not assigned")]
    UnassignedCode {
        /// The digit.
        code: u8,
    },
    /// The return file cannot be written.
    #[error("the return file cannot be written: {0}")]
    Write(#[from] WriteError),
}

/// The return file answering `original` (an originated file, as
/// [`bank_formats::aba::parse`] read it): the descriptive record of the original with `processing_date` (the day the bank
/// writes the return file), then one returned detail record (type 2) per decision, in the
/// original's order, then the file total record.
///
/// Each returned record copies the original payment's fields (BSB, account number,
/// transaction code, amount, title, lodgement reference, trace BSB and account, remitter
/// name), puts the return code in position 18, and the original file's day of processing
/// (positions 113–114) and APCA user id (positions 115–120) in place of the withholding tax.
///
/// # Errors
///
/// No decision, an unknown or repeated entry, an entry that is not a credit payment, an
/// unassigned code, or a field that cannot be written.
pub fn return_file(
    original: &AbaFile,
    decisions: &[ReturnDecision],
    processing_date: NaiveDate,
) -> Result<AbaFile, ReturnError> {
    if decisions.is_empty() {
        return Err(ReturnError::NoDecisions);
    }
    let mut chosen = BTreeMap::new();
    for decision in decisions {
        let entry = decision.entry;
        let detail = original
            .details
            .get(entry)
            .ok_or(ReturnError::UnknownEntry { entry })?;
        if detail.transaction_code.is_debit() || !matches!(detail.kind, DetailKind::Payment { .. })
        {
            return Err(ReturnError::NotACredit { entry });
        }
        if let ReturnCode::Unassigned(code) = decision.code {
            return Err(ReturnError::UnassignedCode { code });
        }
        if chosen.insert(entry, decision.code).is_some() {
            return Err(ReturnError::DuplicateEntry { entry });
        }
    }
    let original_day = u8::try_from(original.descriptive.processing_date.day()).unwrap_or(0);
    let details = chosen
        .into_iter()
        .filter_map(|(entry, code)| {
            let mut detail = original.details.get(entry)?.clone();
            detail.kind = DetailKind::Returned {
                return_code: code,
                original_processing_day: original_day,
                original_user_id: original.descriptive.apca_user_id.clone(),
            };
            Some(detail)
        })
        .collect();
    Ok(AbaFile {
        descriptive: DescriptiveRecord {
            processing_date,
            ..original.descriptive.clone()
        },
        details,
    })
}

/// [`return_file`] then [`bank_formats::aba::write_return`]: the bytes of the bank's return file.
///
/// # Errors
///
/// As [`return_file`].
pub fn write_return_file(
    original: &AbaFile,
    decisions: &[ReturnDecision],
    processing_date: NaiveDate,
) -> Result<Vec<u8>, ReturnError> {
    Ok(write_return(&return_file(
        original,
        decisions,
        processing_date,
    )?)?)
}
