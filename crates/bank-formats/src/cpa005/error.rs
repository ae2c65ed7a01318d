//! Errors of the writer and the parser. Both name the field by its Standard 005 name
//! ([`Field`]); neither repeats a field's value, since account numbers and names are secret.

use std::fmt;

/// A field of a Standard 005 record, by its name in the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// Logical record type (position 1 of every record).
    RecordType,
    /// Logical record count (positions 2–10 of every record).
    RecordCount,
    /// Originator's ID (positions 11–20 of every record).
    OriginatorId,
    /// File creation number (positions 21–24 of every record).
    FileCreationNumber,
    /// Creation date (header 25–30).
    CreationDate,
    /// Destination data centre (header 31–35).
    DestinationDataCentre,
    /// Reserved customer/direct clearer communication area (header 36–55).
    CommunicationArea,
    /// Currency code identifier (header 56–58).
    CurrencyCode,
    /// A filler field, which must be blank.
    Filler,
    /// Transaction type (segment 1–3).
    TransactionType,
    /// Amount (segment 4–13).
    Amount,
    /// Date funds to be available (segment 14–19).
    DueDate,
    /// Institutional identification number (segment 20–28).
    InstitutionId,
    /// Payee/payor account number (segment 29–40).
    AccountNumber,
    /// Item trace number (segment 41–62).
    ItemTraceNumber,
    /// Stored transaction type (segment 63–65).
    StoredTransactionType,
    /// Originator's short name (segment 66–80).
    OriginatorShortName,
    /// Payee/payor name (segment 81–110).
    PayeeName,
    /// Originator's long name (segment 111–140).
    OriginatorLongName,
    /// Originating direct clearer's user's ID (segment 141–150).
    DirectClearerUserId,
    /// Originator's cross reference number (segment 151–169).
    CrossReference,
    /// Institutional identification number for returns (segment 170–178).
    ReturnInstitutionId,
    /// Account number for returns (segment 179–190).
    ReturnAccountNumber,
    /// Originator's sundry information (segment 191–205).
    SundryInformation,
    /// Originator/direct clearer settlement code (segment 228–229).
    SettlementCode,
    /// Invalid data element ID (segment 230–240), whose first three positions carry a returned
    /// item's return reason code.
    InvalidDataElementId,
    /// Total value of debit transactions (trailer 25–38).
    TotalDebitValue,
    /// Total number of debit transactions (trailer 39–46).
    TotalDebitCount,
    /// Total value of credit transactions (trailer 47–60).
    TotalCreditValue,
    /// Total number of credit transactions (trailer 61–68).
    TotalCreditCount,
    /// Total value and number of error corrections `E` and `F` (trailer 69–112).
    ErrorCorrectionTotals,
}

impl Field {
    /// The field's name in the layout.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::RecordType => "logical record type",
            Self::RecordCount => "logical record count",
            Self::OriginatorId => "originator's ID",
            Self::FileCreationNumber => "file creation number",
            Self::CreationDate => "creation date",
            Self::DestinationDataCentre => "destination data centre",
            Self::CommunicationArea => "communication area",
            Self::CurrencyCode => "currency code",
            Self::Filler => "filler",
            Self::TransactionType => "transaction type",
            Self::Amount => "amount",
            Self::DueDate => "date funds to be available",
            Self::InstitutionId => "institutional identification number",
            Self::AccountNumber => "account number",
            Self::ItemTraceNumber => "item trace number",
            Self::StoredTransactionType => "stored transaction type",
            Self::OriginatorShortName => "originator's short name",
            Self::PayeeName => "payee name",
            Self::OriginatorLongName => "originator's long name",
            Self::DirectClearerUserId => "originating direct clearer's user's ID",
            Self::CrossReference => "originator's cross reference number",
            Self::ReturnInstitutionId => "institutional identification number for returns",
            Self::ReturnAccountNumber => "account number for returns",
            Self::SundryInformation => "originator's sundry information",
            Self::SettlementCode => "settlement code",
            Self::InvalidDataElementId => "invalid data element ID",
            Self::TotalDebitValue => "total value of debit transactions",
            Self::TotalDebitCount => "total number of debit transactions",
            Self::TotalCreditValue => "total value of credit transactions",
            Self::TotalCreditCount => "total number of credit transactions",
            Self::ErrorCorrectionTotals => "error correction totals",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is wrong with a field. Never carries the field's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// The field is empty and must not be.
    #[error("is required")]
    Required,
    /// The value does not fit.
    #[error("is longer than {max} characters")]
    TooLong {
        /// The field's width.
        max: usize,
    },
    /// A number too large for its field.
    #[error("is larger than {max}")]
    TooLarge {
        /// The largest value the field holds.
        max: u64,
    },
    /// The value holds a character the field does not allow.
    #[error("holds a character that is not allowed")]
    Character,
    /// The value is not the digits the field needs.
    #[error("must be {digits} digits")]
    NotDigits {
        /// How many.
        digits: usize,
    },
    /// An institution number that is not `0IIITTTTT`.
    #[error("must be 0IIITTTTT (a zero, the institution and transit numbers)")]
    Institution,
    /// A date outside 2000–2099 (Julian dates carry two year digits) or not a date.
    #[error("is not a date 0YYDDD of the years 2000-2099")]
    Date,
    /// A credit or debit of zero.
    #[error("is zero")]
    ZeroAmount,
    /// A value other than the one the layout requires.
    #[error("must be {expected}")]
    Expected {
        /// What the layout requires.
        expected: &'static str,
    },
    /// A returned item without its return details, or an originated item with them.
    #[error("does not match the record type")]
    RecordTypeMismatch,
}

/// Where the writer found a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The header record.
    Header,
    /// `transactions[index]`.
    Transaction {
        /// Index of the transaction, from 0.
        index: usize,
    },
    /// The trailer record.
    Trailer,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Header => f.write_str("header"),
            Self::Transaction { index } => write!(f, "transactions[{index}]"),
            Self::Trailer => f.write_str("trailer"),
        }
    }
}

/// Why the writer refused a file: the record, the field and the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {field} {problem}")]
pub struct WriteError {
    /// The record.
    pub location: Location,
    /// The field.
    pub field: Field,
    /// What is wrong.
    pub problem: Problem,
}

impl WriteError {
    pub(crate) const fn new(location: Location, field: Field, problem: Problem) -> Self {
        Self {
            location,
            field,
            problem,
        }
    }
}

/// Why the parser refused a file: what, and in which record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("record {record}: {kind}")]
pub struct ParseError {
    /// The record's number in the file, from 1.
    pub record: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What the parser found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// The input is empty.
    #[error("the file is empty")]
    Empty,
    /// A byte that is not printable ASCII (`0x20`–`0x7E`) inside a record.
    #[error("byte {byte:#04x} at column {column} is not printable ASCII")]
    InvalidByte {
        /// Its column, from 1.
        column: usize,
        /// The byte.
        byte: u8,
    },
    /// A record that is not 1464 characters long.
    #[error("the record is {found} characters long, not 1464")]
    RecordLength {
        /// Its length.
        found: usize,
    },
    /// A record type other than A, C, D, I, J and Z.
    #[error("unknown logical record type {found:?}")]
    UnknownRecordType {
        /// The first character of the record.
        found: char,
    },
    /// A record where the file's structure does not allow it.
    #[error("unexpected logical record type {found:?}, expected {expected}")]
    UnexpectedRecord {
        /// Its record type.
        found: char,
        /// What the structure called for.
        expected: &'static str,
    },
    /// The file ends before its trailer record.
    #[error("the file ends before its trailer record")]
    Truncated,
    /// A field's value cannot be read. `segment` is the segment (from 1) of a detail record.
    #[error("{}{field} {problem}", segment.map(|s| format!("segment {s}: ")).unwrap_or_default())]
    Field {
        /// The segment of a detail record, from 1.
        segment: Option<usize>,
        /// The field.
        field: Field,
        /// What is wrong.
        problem: Problem,
    },
    /// A record's count or the trailer's total differs from the one computed from the records.
    #[error("{field} is {found}, the records give {computed}")]
    ControlTotal {
        /// The field.
        field: Field,
        /// The value in the record.
        found: u64,
        /// The value computed.
        computed: u64,
    },
}

impl ParseErrorKind {
    pub(crate) const fn field(field: Field, problem: Problem) -> Self {
        Self::Field {
            segment: None,
            field,
            problem,
        }
    }
}
