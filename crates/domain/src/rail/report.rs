//! What the bank's inbound files say (acknowledgements, status reports, returns, notifications
//! of change), in payoutd's terms, and the port of the format readers that turn a file into it.
//!
//! A reader only reads: matching a report to a stored file or payout, and applying it (or
//! recording it as unmatched or repeated), is the inbound processor's job.

use crate::error::PortError;
use crate::ids::BatchId;
use crate::money::MinorUnits;

/// The bank's word on a whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileVerdict {
    /// Accepted (checked, will be paid): the file becomes `acknowledged`.
    Accepted,
    /// Accepted and every payment in it settled.
    Settled,
    /// Refused as a whole: the file becomes `rejected` and every payout in it fails.
    Rejected {
        /// The bank's code, when it gave one.
        code: Option<String>,
        /// Its reason in words.
        reason: String,
    },
}

/// The bank's word on one payment, found by its reference in the file (trace number,
/// end-to-end id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ItemOutcome {
    /// Paid (pain.002 `ACSC`).
    Settled,
    /// Refused before payment (pain.002 `RJCT`).
    Rejected(ReturnReason),
    /// Paid and then sent back by the receiving bank (NACHA return, camt.054 return).
    Returned {
        /// Why.
        reason: ReturnReason,
        /// The amount sent back, when the report says.
        amount: Option<MinorUnits>,
    },
    /// Something to record and report, not to apply: a NACHA notification of change (the
    /// corrected details are not kept: they are account data), a dishonored or contested
    /// return.
    Notice {
        /// The code (`C01`, `R61`, ...).
        code: String,
        /// Its meaning.
        reason: String,
    },
}

/// A bank's reason for refusing or returning a payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnReason {
    /// The code (`R03`, `AC04`, ...).
    pub code: String,
    /// Its meaning.
    pub reason: String,
    /// The code says the account details are wrong or the account is gone: the account fails
    /// with the payout.
    pub account_is_invalid: bool,
}

/// One payment's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemReport {
    /// The payment's reference in the file it was sent in.
    pub reference: String,
    /// What happened to it.
    pub outcome: ItemOutcome,
}

/// What one inbound file says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BankReport {
    /// The file reported on, by its batch, with the verdict, when the report names one
    /// (pain.002 quotes the file's `MsgId`, which is the batch id). NACHA returns arrive in
    /// files of their own and name only entries.
    pub file: Option<(FileMention, FileVerdict)>,
    /// The payments reported on, in the order of the file.
    pub items: Vec<ItemReport>,
}

/// How a report names the file it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileMention {
    /// The file of this batch and part (from 1).
    Batch {
        /// The batch.
        batch: BatchId,
        /// Which of its files of the rail's method.
        part: u32,
    },
    /// An identifier that names no batch: reported as unmatched.
    Unknown(String),
}

/// What a reader made of an inbound file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadOutcome {
    /// A report in the reader's format.
    Report(BankReport),
    /// Not a file of the reader's format (another rail's file in a shared directory): left alone.
    NotMine,
    /// A file of the reader's format that cannot be read: recorded as failed with this reason,
    /// and reported.
    Unreadable(String),
}

/// A format's reader of inbound files (a rail adapter).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait BankFileReader: Send + Sync {
    /// Reads one inbound file. Pure: the same bytes give the same outcome.
    ///
    /// # Errors
    /// Only for failures outside the file itself; a bad file is
    /// [`ReadOutcome::Unreadable`].
    fn read(&self, name: &str, bytes: &[u8]) -> Result<ReadOutcome, PortError>;
}
