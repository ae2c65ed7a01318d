//! The typed contents of an ABA file, and the file total computed from them.

use std::fmt;

use chrono::NaiveDate;

use super::codes::{Indicator, ReturnCode, TransactionCode};

/// An ABA file: one descriptive record, its detail records, and a file total record that the
/// writer computes ([`AbaFile::total`]) and the parser checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AbaFile {
    /// The descriptive record (type 0).
    pub descriptive: DescriptiveRecord,
    /// The detail records (type 1 in an originated file, type 2 in a return file), in file
    /// order.
    pub details: Vec<DetailRecord>,
}

/// The descriptive record (type 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescriptiveRecord {
    /// Reel sequence number (positions 19–20), `1` for a file on one reel.
    pub reel_sequence: u8,
    /// The user's financial institution: its three-letter mnemonic, e.g. `CBA`, `WBC`, `NAB`
    /// (positions 21–23).
    pub bank_mnemonic: String,
    /// Name of the user supplying the file, as the bank registered it (positions 31–56,
    /// 26 characters).
    pub user_name: String,
    /// The direct entry user identification number APCA assigned: six digits (positions
    /// 57–62).
    pub apca_user_id: String,
    /// Description of the entries, e.g. `PAYOUTS` (positions 63–74, 12 characters).
    pub description: String,
    /// Date to be processed (positions 75–80, `DDMMYY`, years 2000–2099).
    pub processing_date: NaiveDate,
}

/// A detail record: a payment (type 1) or a returned payment (type 2).
///
/// The two types share the layout of positions 2–112; they differ in position 18 and in
/// positions 113–120 ([`DetailKind`]).
///
/// `Debug` masks the BSBs and account numbers (account data must not reach logs).
#[derive(Clone, PartialEq, Eq)]
pub struct DetailRecord {
    /// The account's BSB, six digits (positions 2–8, written `xxx-xxx`).
    pub bsb: String,
    /// The account number, up to nine digits or hyphens (positions 9–17, right-justified,
    /// blank-filled).
    pub account_number: String,
    /// Transaction code (positions 19–20).
    pub transaction_code: TransactionCode,
    /// Amount in cents (positions 21–30, ten digits).
    pub amount: u64,
    /// Title of the account (positions 31–62, 32 characters).
    pub account_title: String,
    /// Lodgement reference: what the account holder's statement shows, and what a return
    /// carries back (positions 63–80, 18 characters).
    pub lodgement_reference: String,
    /// BSB of the user's trace account, where returns are paid (positions 81–87, `xxx-xxx`).
    pub trace_bsb: String,
    /// The trace account number (positions 88–96, right-justified, blank-filled).
    pub trace_account: String,
    /// Name of the remitter, as the account holder's statement shows it (positions 97–112,
    /// 16 characters).
    pub remitter_name: String,
    /// What makes it a payment or a return.
    pub kind: DetailKind,
}

/// The fields that differ between a payment and a returned payment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetailKind {
    /// A payment: detail record type 1.
    Payment {
        /// Indicator (position 18).
        indicator: Indicator,
        /// Amount of withholding tax in cents (positions 113–120, eight digits).
        withholding_tax: u64,
    },
    /// A returned payment: detail record type 2 of the bank's return file.
    Returned {
        /// Why it was returned (position 18).
        return_code: ReturnCode,
        /// Day of the month the original payment was processed (positions 113–114).
        original_processing_day: u8,
        /// The APCA user id of the original file (positions 115–120).
        original_user_id: String,
    },
}

impl fmt::Debug for DetailRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DetailRecord")
            .field("bsb", &"***")
            .field("account_number", &"***")
            .field("transaction_code", &self.transaction_code)
            .field("amount", &self.amount)
            .field("account_title", &self.account_title)
            .field("lodgement_reference", &self.lodgement_reference)
            .field("trace_bsb", &"***")
            .field("trace_account", &"***")
            .field("remitter_name", &self.remitter_name)
            .field("kind", &self.kind)
            .finish()
    }
}

impl DetailRecord {
    /// The record type: `1` for a payment, `2` for a returned payment.
    #[must_use]
    pub const fn record_type(&self) -> char {
        match self.kind {
            DetailKind::Payment { .. } => '1',
            DetailKind::Returned { .. } => '2',
        }
    }

    /// The return code, for a returned payment.
    #[must_use]
    pub const fn return_code(&self) -> Option<ReturnCode> {
        match self.kind {
            DetailKind::Returned { return_code, .. } => Some(return_code),
            DetailKind::Payment { .. } => None,
        }
    }
}

/// The file total record (type 7), as computed from the detail records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileTotal {
    /// Credit total minus debit total, as an absolute value (positions 21–30).
    pub net_total: u64,
    /// Sum of the credit records' amounts (positions 31–40).
    pub credit_total: u64,
    /// Sum of the debit records' amounts (positions 41–50).
    pub debit_total: u64,
    /// Number of detail records (positions 75–80).
    pub record_count: u64,
}

impl AbaFile {
    /// The file total record of this file. Sums saturate rather than wrap; the writer refuses
    /// totals wider than their fields.
    #[must_use]
    pub fn total(&self) -> FileTotal {
        let mut credit = 0u64;
        let mut debit = 0u64;
        for detail in &self.details {
            if detail.transaction_code.is_debit() {
                debit = debit.saturating_add(detail.amount);
            } else {
                credit = credit.saturating_add(detail.amount);
            }
        }
        FileTotal {
            net_total: credit.abs_diff(debit),
            credit_total: credit,
            debit_total: debit,
            record_count: u64::try_from(self.details.len()).unwrap_or(u64::MAX),
        }
    }

    /// The returned payments (type 2 records) of a return file.
    pub fn returns(&self) -> impl Iterator<Item = &DetailRecord> {
        self.details
            .iter()
            .filter(|d| matches!(d.kind, DetailKind::Returned { .. }))
    }
}
