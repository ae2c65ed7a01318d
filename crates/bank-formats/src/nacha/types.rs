//! The typed contents of a NACHA file, and the control totals computed from them.

use chrono::{NaiveDate, NaiveTime};

use super::codes::{ChangeCode, ReturnCode, SecCode, ServiceClass, TransactionCode};

/// A NACHA file: its header and its batches.
///
/// The control records (batch control, file control) and the padding are not stored: the writer
/// computes them and the parser checks them against what it computes
/// ([`Batch::control`], [`NachaFile::control`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NachaFile {
    /// The file header record (type 1).
    pub header: FileHeader,
    /// The batches, in file order.
    pub batches: Vec<Batch>,
}

/// The file header record (type 1).
///
/// Priority code `01`, record size `094`, blocking factor `10` and format code `1` are constants:
/// the writer writes them and the parser requires them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    /// Routing number of the bank the file is sent to, nine digits with a valid check digit
    /// (positions 04–13, written as a blank and the nine digits).
    pub immediate_destination: String,
    /// The sender's identification the bank assigned: nine digits (written after a blank) or
    /// ten digits (positions 14–23).
    pub immediate_origin: String,
    /// File creation date (positions 24–29, `YYMMDD`, years 2000–2099).
    pub creation_date: NaiveDate,
    /// File creation time (positions 30–33, `HHMM`); blank when `None`.
    pub creation_time: Option<NaiveTime>,
    /// Distinguishes files sent the same day: `A`–`Z` or `0`–`9` (position 34).
    pub file_id_modifier: char,
    /// Name of the destination bank (positions 41–63, 23 characters).
    pub immediate_destination_name: String,
    /// Name of the sender (positions 64–86, 23 characters).
    pub immediate_origin_name: String,
    /// Free reference (positions 87–94, 8 characters).
    pub reference_code: String,
}

/// A batch: its header and its entries. Its control record is computed ([`Batch::control`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// The batch header record (type 5).
    pub header: BatchHeader,
    /// The entry detail records (type 6), each with its addenda.
    pub entries: Vec<EntryDetail>,
}

/// The batch header record (type 5).
///
/// The settlement date (positions 76–78) is written blank, since the ACH operator fills it, and
/// the originator status code (position 79) is written `1` (a depository financial institution
/// bound by the NACHA rules). The parser checks their form (blank or three digits; `0`, `1` or
/// `2`) and does not keep them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchHeader {
    /// Service class code (positions 02–04). The writer writes 220 (credits only).
    pub service_class: ServiceClass,
    /// Originator's name as the receiver will see it (positions 05–20, 16 characters).
    pub company_name: String,
    /// Free data for the originator (positions 21–40, 20 characters).
    pub company_discretionary_data: String,
    /// Originator's identification, often `1` and its tax id (positions 41–50, 10 characters).
    pub company_identification: String,
    /// Standard entry class code (positions 51–53). The writer writes PPD and CCD.
    pub sec_code: SecCode,
    /// Purpose shown to the receiver, e.g. `PAYROLL` (positions 54–63, 10 characters).
    pub company_entry_description: String,
    /// Date shown to the receiver, free text (positions 64–69, 6 characters).
    pub company_descriptive_date: String,
    /// Date the originator wants the entries to settle (positions 70–75, `YYMMDD`). The parser
    /// gives `None` for zeros or blanks, which return files carry; the writer requires a date.
    pub effective_entry_date: Option<NaiveDate>,
    /// Originating bank: the first eight digits of its routing number (positions 80–87).
    pub originating_dfi: String,
    /// Batch number (positions 88–94), ascending within the file.
    pub batch_number: u32,
}

/// An entry detail record (type 6) and its addenda records (type 7).
///
/// The addenda record indicator (position 79) is not stored: it is `1` exactly when
/// [`addenda`](Self::addenda) is not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDetail {
    /// Transaction code (positions 02–03).
    pub transaction_code: TransactionCode,
    /// Receiving bank's routing number, nine digits: its first eight are the receiving DFI
    /// identification (positions 04–11) and the ninth is the check digit (position 12).
    pub receiving_dfi: String,
    /// Receiver's account number at that bank (positions 13–29, 17 characters, left-justified).
    pub account_number: String,
    /// Amount in cents (positions 30–39, at most 9 999 999 999).
    pub amount: u64,
    /// Receiver's identification at the originator (positions 40–54, 15 characters).
    pub individual_id: String,
    /// Receiver's name (positions 55–76, 22 characters).
    pub individual_name: String,
    /// Discretionary data, or the payment type code of WEB and TEL entries (positions 77–78).
    pub discretionary_data: String,
    /// Trace number (positions 80–94): the originating DFI's eight digits then a seven-digit
    /// sequence number, ascending within the batch.
    pub trace_number: String,
    /// The entry's addenda records.
    pub addenda: Vec<Addenda>,
}

/// An addenda record (type 7), by addenda type code (positions 02–03).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addenda {
    /// `05`: payment-related information. The only addenda the writer writes.
    PaymentRelated(Addenda05),
    /// `98`: notification of change.
    Notification(Addenda98),
    /// `99` with a return reason code outside R61–R77: a return.
    Return(Addenda99),
    /// `99` with R61–R70: a dishonored return.
    DishonoredReturn(Addenda99Dishonored),
    /// `99` with R71–R77: a contested dishonored return.
    ContestedReturn(Addenda99Contested),
}

/// Addenda `05`: payment-related information.
///
/// The addenda sequence number (positions 84–87) and entry detail sequence number (88–94) are
/// not stored: they are the addenda's position under its entry (from 1) and the last seven
/// digits of the entry's trace number. The writer writes them and the parser checks them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addenda05 {
    /// Free text for the receiver (positions 04–83, 80 characters).
    pub payment_related_information: String,
}

/// Addenda `98`: notification of change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addenda98 {
    /// Change code (positions 04–06).
    pub change_code: ChangeCode,
    /// Trace number of the entry the notification is about (positions 07–21).
    pub original_trace_number: String,
    /// Receiving DFI identification of that entry, eight digits (positions 28–35).
    pub original_receiving_dfi: String,
    /// The correct value(s), laid out by change code (positions 36–64, 29 characters).
    pub corrected_data: String,
    /// Trace number of the notification (positions 80–94).
    pub trace_number: String,
}

/// Addenda `99`: a return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addenda99 {
    /// Return reason code (positions 04–06).
    pub return_code: ReturnCode,
    /// Trace number of the returned entry (positions 07–21).
    pub original_trace_number: String,
    /// Date of death for R14 and R15 (positions 22–27, `YYMMDD`); `None` when blank or zeros.
    pub date_of_death: Option<NaiveDate>,
    /// Receiving DFI identification of the returned entry, eight digits (positions 28–35).
    pub original_receiving_dfi: String,
    /// Free text from the returning bank (positions 36–79, 44 characters).
    pub addenda_information: String,
    /// Trace number of the return (positions 80–94).
    pub trace_number: String,
}

/// Addenda `99` of a dishonored return (R61–R70): the originating bank refuses a return.
///
/// Positions 22–27 and 36–38 are reserved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addenda99Dishonored {
    /// Dishonored return reason code (positions 04–06).
    pub return_code: ReturnCode,
    /// Trace number of the original entry (positions 07–21).
    pub original_trace_number: String,
    /// Receiving DFI identification of the original entry (positions 28–35).
    pub original_receiving_dfi: String,
    /// Trace number of the return being dishonored (positions 39–53).
    pub return_trace_number: String,
    /// Settlement date of that return, Julian day, as written (positions 54–56).
    pub return_settlement_date: String,
    /// Reason code of that return, the two digits after the `R` (positions 57–58).
    pub original_return_code: ReturnCode,
    /// Free text (positions 59–79, 21 characters).
    pub addenda_information: String,
    /// Trace number of the dishonored return (positions 80–94).
    pub trace_number: String,
}

/// Addenda `99` of a contested dishonored return (R71–R77): the receiving bank contests a
/// dishonored return.
///
/// Position 79 is reserved. Dates are kept as written: they are informational and some
/// implementations fill them loosely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addenda99Contested {
    /// Contested dishonored return reason code (positions 04–06).
    pub return_code: ReturnCode,
    /// Trace number of the original entry (positions 07–21).
    pub original_trace_number: String,
    /// Date the original entry was returned, `YYMMDD` as written (positions 22–27).
    pub date_original_entry_returned: String,
    /// Receiving DFI identification of the original entry (positions 28–35).
    pub original_receiving_dfi: String,
    /// Settlement date of the original entry, Julian day, as written (positions 36–38).
    pub original_settlement_date: String,
    /// Trace number of the return (positions 39–53).
    pub return_trace_number: String,
    /// Settlement date of the return, as written (positions 54–56).
    pub return_settlement_date: String,
    /// Reason code of the return, two digits (positions 57–58).
    pub original_return_code: ReturnCode,
    /// Trace number of the dishonored return (positions 59–73).
    pub dishonored_return_trace_number: String,
    /// Settlement date of the dishonored return, as written (positions 74–76).
    pub dishonored_return_settlement_date: String,
    /// Reason code of the dishonored return, two digits (positions 77–78).
    pub dishonored_return_code: ReturnCode,
    /// Trace number of the contested dishonored return (positions 80–94).
    pub trace_number: String,
}

/// A batch control record (type 8), as computed from its batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchControl {
    /// The batch header's service class (positions 02–04).
    pub service_class: ServiceClass,
    /// Entry and addenda records in the batch (positions 05–10, six digits).
    pub entry_addenda_count: u64,
    /// Sum of the entries' eight-digit receiving DFI identifications, its rightmost ten digits
    /// (positions 11–20).
    pub entry_hash: u64,
    /// Sum of the debit entries' amounts, cents (positions 21–32, twelve digits).
    pub total_debit: u64,
    /// Sum of the credit entries' amounts, cents (positions 33–44, twelve digits).
    pub total_credit: u64,
    /// The batch header's company identification (positions 45–54).
    pub company_identification: String,
    /// The batch header's originating DFI (positions 80–87). Positions 55–73 (message
    /// authentication code) and 74–79 (reserved) are blank.
    pub originating_dfi: String,
    /// The batch header's batch number (positions 88–94).
    pub batch_number: u32,
}

/// A file control record (type 9), as computed from its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileControl {
    /// Batches in the file (positions 02–07, six digits).
    pub batch_count: u64,
    /// Blocks of ten records, the file header, control and padding records included
    /// (positions 08–13, six digits).
    pub block_count: u64,
    /// Entry and addenda records in the file (positions 14–21, eight digits).
    pub entry_addenda_count: u64,
    /// Sum of the batches' entry hashes, its rightmost ten digits (positions 22–31).
    pub entry_hash: u64,
    /// Sum of the batches' total debits (positions 32–43, twelve digits).
    pub total_debit: u64,
    /// Sum of the batches' total credits (positions 44–55, twelve digits). Positions 56–94 are
    /// reserved (blank).
    pub total_credit: u64,
}

/// Records per block.
pub const BLOCKING_FACTOR: u64 = 10;

/// The entry hash keeps the rightmost ten digits of the sum.
const ENTRY_HASH_MODULUS: u64 = 10_000_000_000;

/// The eight-digit receiving DFI identification as a number; a value that is not eight digits
/// counts as 0 (the writer and the parser refuse such values before computing totals).
fn dfi_identification(receiving_dfi: &str) -> u64 {
    receiving_dfi
        .get(..8)
        .filter(|id| id.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|id| id.parse().ok())
        .unwrap_or(0)
}

impl Batch {
    /// The batch control record of this batch: counts, entry hash and totals computed from the
    /// entries, identification copied from the header. Sums saturate rather than wrap; the writer
    /// refuses totals wider than their fields.
    #[must_use]
    pub fn control(&self) -> BatchControl {
        let mut count = 0u64;
        let mut hash = 0u64;
        let mut debit = 0u64;
        let mut credit = 0u64;
        for entry in &self.entries {
            let addenda = u64::try_from(entry.addenda.len()).unwrap_or(u64::MAX);
            count = count.saturating_add(1).saturating_add(addenda);
            hash = (hash + dfi_identification(&entry.receiving_dfi)) % ENTRY_HASH_MODULUS;
            if entry.transaction_code.is_credit() {
                credit = credit.saturating_add(entry.amount);
            } else {
                debit = debit.saturating_add(entry.amount);
            }
        }
        BatchControl {
            service_class: self.header.service_class,
            entry_addenda_count: count,
            entry_hash: hash,
            total_debit: debit,
            total_credit: credit,
            company_identification: self.header.company_identification.clone(),
            originating_dfi: self.header.originating_dfi.clone(),
            batch_number: self.header.batch_number,
        }
    }
}

impl NachaFile {
    /// The file control record of this file, computed from its batches.
    #[must_use]
    pub fn control(&self) -> FileControl {
        let mut control = FileControl {
            batch_count: u64::try_from(self.batches.len()).unwrap_or(u64::MAX),
            block_count: 0,
            entry_addenda_count: 0,
            entry_hash: 0,
            total_debit: 0,
            total_credit: 0,
        };
        for batch in &self.batches {
            let b = batch.control();
            control.entry_addenda_count = control
                .entry_addenda_count
                .saturating_add(b.entry_addenda_count);
            control.entry_hash = (control.entry_hash + b.entry_hash) % ENTRY_HASH_MODULUS;
            control.total_debit = control.total_debit.saturating_add(b.total_debit);
            control.total_credit = control.total_credit.saturating_add(b.total_credit);
        }
        control.block_count = self.record_count().div_ceil(BLOCKING_FACTOR);
        control
    }

    /// Records in the file before padding: the file header and control, each batch's header
    /// and control, and every entry and addenda record.
    #[must_use]
    pub fn record_count(&self) -> u64 {
        self.batches.iter().fold(2u64, |n, batch| {
            n.saturating_add(2)
                .saturating_add(batch.control().entry_addenda_count)
        })
    }
}

impl EntryDetail {
    /// The last seven digits of the trace number: the entry detail sequence number addenda 05
    /// records carry. `None` unless the trace number is fifteen digits.
    #[must_use]
    pub fn trace_sequence(&self) -> Option<u32> {
        if self.trace_number.len() != 15 || !super::text::is_digits(&self.trace_number) {
            return None;
        }
        self.trace_number.get(8..)?.parse().ok()
    }
}

/// The trace number `odfi` (eight digits) followed by `sequence` on seven digits; `None` unless
/// `odfi` is eight digits and `sequence` fits in seven.
#[must_use]
pub fn trace_number(odfi: &str, sequence: u32) -> Option<String> {
    (odfi.len() == 8 && super::text::is_digits(odfi) && sequence <= 9_999_999)
        .then(|| format!("{odfi}{sequence:07}"))
}
