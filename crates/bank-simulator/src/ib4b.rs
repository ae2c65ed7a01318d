//! The bank's answer to a BNZ IB4B direct credit file: the dishonour file a bank or file agent
//! that reports dishonoured direct credits by file would send (payoutd's own layout: BNZ
//! publishes none), written by [`bank_formats::ib4b::write_dishonours`].

use std::collections::HashSet;

use chrono::NaiveDate;

use bank_formats::ib4b::{
    DirectCreditFile, Dishonour, DishonourFile, DishonourHeader, DishonourReason, WriteError,
    write_dishonours,
};

/// The bank's decision to dishonour one transaction of the direct credit file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DishonourDecision {
    /// The transaction, by its "your reference" in the direct credit file.
    pub your_reference: String,
    /// Why it is sent back.
    pub reason: DishonourReason,
}

/// Why a dishonour file cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DishonourError {
    /// The decision at this position (from 0) names no transaction of the file.
    #[error("decision {0}: no transaction has its reference")]
    UnknownReference(usize),
    /// The decision at this position names a reference that two transactions share.
    #[error("decision {0}: more than one transaction has its reference")]
    AmbiguousReference(usize),
    /// The decision at this position names a transaction an earlier decision names.
    #[error("decision {0}: the transaction is already dishonoured")]
    Repeated(usize),
    /// The dishonour file cannot be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

/// The dishonour file for `original`: its originating account and due date, the report date,
/// and per decision (in the decisions' order) the transaction's account, code, amount, other
/// party name, your code and your reference, with the reason's code and meaning.
///
/// # Errors
/// A decision that names no transaction, an ambiguous one, or one named twice.
pub fn dishonour_file(
    original: &DirectCreditFile,
    decisions: &[DishonourDecision],
    report_date: NaiveDate,
) -> Result<DishonourFile, DishonourError> {
    let mut seen = HashSet::new();
    let mut dishonours = Vec::with_capacity(decisions.len());
    for (i, decision) in decisions.iter().enumerate() {
        let mut matching = original
            .transactions
            .iter()
            .filter(|t| t.yours.reference == decision.your_reference);
        let transaction = matching.next().ok_or(DishonourError::UnknownReference(i))?;
        if matching.next().is_some() {
            return Err(DishonourError::AmbiguousReference(i));
        }
        if !seen.insert(decision.your_reference.as_str()) {
            return Err(DishonourError::Repeated(i));
        }
        dishonours.push(Dishonour {
            account: transaction.account.clone(),
            transaction_code: transaction.transaction_code,
            amount: transaction.amount,
            other_party_name: transaction.other_party_name.clone(),
            your_code: transaction.yours.code.clone(),
            your_reference: transaction.yours.reference.clone(),
            reason: decision.reason,
            reason_text: decision.reason.meaning().to_owned(),
        });
    }
    Ok(DishonourFile {
        header: DishonourHeader {
            originating_account: original.header.originating_account.clone(),
            due_date: original.header.due_date,
            report_date,
        },
        dishonours,
    })
}

/// [`dishonour_file`] written with [`write_dishonours`].
///
/// # Errors
/// As [`dishonour_file`], or a field that cannot be written.
pub fn write_dishonour_file(
    original: &DirectCreditFile,
    decisions: &[DishonourDecision],
    report_date: NaiveDate,
) -> Result<Vec<u8>, DishonourError> {
    let file = dishonour_file(original, decisions, report_date)?;
    Ok(write_dishonours(&file)?)
}
