//! The typed contents of a Standard 005 file, and the trailer totals computed from them.

use chrono::NaiveDate;

use super::codes::{RecordType, ReturnCode};

/// A Standard 005 file: its header and its transactions (segments), in file order.
///
/// Detail records are not stored as such: the writer packs consecutive transactions of one
/// [`RecordType`] into records of up to six segments, and the parser lists every used segment
/// of every record. The trailer is computed ([`Cpa005File::totals`]) by the writer and checked
/// by the parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpa005File {
    /// The header record (`A`).
    pub header: Header,
    /// The transactions, in file order.
    pub transactions: Vec<Transaction>,
}

/// The header record (`A`). Its originator's ID and file creation number are repeated in
/// positions 11–24 of every record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The originator's ID the bank assigned (positions 11–20, 10 characters).
    pub originator_id: String,
    /// File creation number (positions 21–24), 1 to 9999.
    pub file_creation_number: u16,
    /// Creation date (positions 25–30, `0YYDDD`).
    pub creation_date: NaiveDate,
    /// Destination data centre (positions 31–35, five digits).
    pub destination_data_centre: String,
    /// Currency code identifier (positions 56–58): `CAD` or `USD`.
    pub currency: String,
}

/// One transaction: a 240-character segment of a detail record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// The record type of the record holding the segment.
    pub record_type: RecordType,
    /// Transaction type (segment positions 1–3), e.g. 450 (miscellaneous payments).
    pub transaction_type: u16,
    /// Amount in cents (4–13), 1 to 9 999 999 999.
    pub amount: u64,
    /// Date funds to be available (14–19, `0YYDDD`).
    pub due_date: NaiveDate,
    /// The payee's institution and branch `0IIITTTTT` (20–28).
    pub institution_id: String,
    /// The payee's account number (29–40), digits, left-justified.
    pub account_number: String,
    /// Item trace number (41–62), 22 digits: zeros on origination, the returning institution's
    /// trace number on a returned item.
    pub item_trace_number: String,
    /// Stored transaction type (63–65), three digits, zeros on origination.
    pub stored_transaction_type: String,
    /// Originator's short name (66–80, 15 characters).
    pub originator_short_name: String,
    /// Payee name (81–110, 30 characters).
    pub payee_name: String,
    /// Originator's long name (111–140, 30 characters).
    pub originator_long_name: String,
    /// Originating direct clearer's user's ID (141–150, 10 characters).
    pub direct_clearer_user_id: String,
    /// Originator's cross reference number (151–169, 19 characters): the originator's
    /// reference of the item, which a returned item repeats.
    pub cross_reference: String,
    /// Institution to return the item to, `0IIITTTTT` (170–178).
    pub return_institution_id: String,
    /// Account to return the item to (179–190), digits.
    pub return_account_number: String,
    /// Originator's sundry information (191–205, 15 characters).
    pub sundry_information: String,
    /// The return details of a returned item (`I`, `J`); `None` for `C` and `D`.
    pub returned: Option<ReturnDetails>,
}

/// What a returned item says besides the original item's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReturnDetails {
    /// Return reason code (segment positions 230–232, the start of the invalid data element
    /// ID).
    pub reason: ReturnCode,
}

/// The trailer record's totals (`Z`), as computed from the transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// Sum of the `D` and `J` amounts, cents (positions 25–38).
    pub debit_value: u64,
    /// Number of `D` and `J` segments (39–46).
    pub debit_count: u64,
    /// Sum of the `C` and `I` amounts, cents (47–60).
    pub credit_value: u64,
    /// Number of `C` and `I` segments (61–68).
    pub credit_count: u64,
}

impl Totals {
    /// The totals of `transactions`. Sums saturate rather than wrap.
    #[must_use]
    pub fn of(transactions: &[Transaction]) -> Self {
        let mut totals = Self::default();
        for t in transactions {
            if t.record_type.is_credit_side() {
                totals.credit_value = totals.credit_value.saturating_add(t.amount);
                totals.credit_count = totals.credit_count.saturating_add(1);
            } else {
                totals.debit_value = totals.debit_value.saturating_add(t.amount);
                totals.debit_count = totals.debit_count.saturating_add(1);
            }
        }
        totals
    }
}

/// Segments per detail record.
pub const SEGMENTS_PER_RECORD: usize = 6;

impl Cpa005File {
    /// The trailer totals of this file. Sums saturate rather than wrap; the writer refuses
    /// totals wider than their fields.
    #[must_use]
    pub fn totals(&self) -> Totals {
        Totals::of(&self.transactions)
    }

    /// The detail records the writer makes: runs of consecutive transactions of one record
    /// type, cut into groups of at most six.
    #[must_use]
    pub fn detail_records(&self) -> Vec<&[Transaction]> {
        let mut records = Vec::new();
        let mut rest = self.transactions.as_slice();
        while let Some(first) = rest.first() {
            let run = rest
                .iter()
                .take(SEGMENTS_PER_RECORD)
                .take_while(|t| t.record_type == first.record_type)
                .count();
            let (record, tail) = rest.split_at(run);
            records.push(record);
            rest = tail;
        }
        records
    }
}
