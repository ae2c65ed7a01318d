//! Errors of the writer and the parser. Both name the field by its name in the layout, never
//! its value: account numbers and BSBs must not reach logs.

use std::fmt;

/// A field of an ABA record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// Record type (position 1 of every record).
    RecordType,
    /// A blank area of the layout.
    Blank,
    /// Reel sequence number (descriptive 19–20).
    ReelSequence,
    /// User financial institution mnemonic (descriptive 21–23).
    BankMnemonic,
    /// Name of user supplying the file (descriptive 31–56).
    UserName,
    /// APCA user identification number (descriptive 57–62).
    ApcaUserId,
    /// Description of entries (descriptive 63–74).
    Description,
    /// Date to be processed (descriptive 75–80).
    ProcessingDate,
    /// BSB (detail 2–8).
    Bsb,
    /// Account number (detail 9–17).
    AccountNumber,
    /// Indicator (detail 18).
    Indicator,
    /// Return code (return detail 18).
    ReturnCode,
    /// Transaction code (detail 19–20).
    TransactionCode,
    /// Amount (detail 21–30).
    Amount,
    /// Title of account (detail 31–62).
    AccountTitle,
    /// Lodgement reference (detail 63–80).
    LodgementReference,
    /// Trace record BSB (detail 81–87).
    TraceBsb,
    /// Trace account number (detail 88–96).
    TraceAccount,
    /// Name of remitter (detail 97–112).
    RemitterName,
    /// Amount of withholding tax (detail 113–120).
    WithholdingTax,
    /// Original day of processing (return detail 113–114).
    OriginalProcessingDay,
    /// Original user identification number (return detail 115–120).
    OriginalUserId,
    /// BSB format filler `999-999` (file total 2–8).
    TotalFiller,
    /// File net total amount (file total 21–30).
    NetTotal,
    /// File credit total amount (file total 31–40).
    CreditTotal,
    /// File debit total amount (file total 41–50).
    DebitTotal,
    /// File count of detail records (file total 75–80).
    RecordCount,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::RecordType => "record type",
            Self::Blank => "blank area",
            Self::ReelSequence => "reel sequence number",
            Self::BankMnemonic => "user financial institution",
            Self::UserName => "name of user supplying file",
            Self::ApcaUserId => "APCA user identification number",
            Self::Description => "description of entries",
            Self::ProcessingDate => "date to be processed",
            Self::Bsb => "BSB",
            Self::AccountNumber => "account number",
            Self::Indicator => "indicator",
            Self::ReturnCode => "return code",
            Self::TransactionCode => "transaction code",
            Self::Amount => "amount",
            Self::AccountTitle => "title of account",
            Self::LodgementReference => "lodgement reference",
            Self::TraceBsb => "trace record BSB",
            Self::TraceAccount => "trace account number",
            Self::RemitterName => "name of remitter",
            Self::WithholdingTax => "amount of withholding tax",
            Self::OriginalProcessingDay => "original day of processing",
            Self::OriginalUserId => "original user identification number",
            Self::TotalFiller => "BSB format filler",
            Self::NetTotal => "file net total amount",
            Self::CreditTotal => "file credit total amount",
            Self::DebitTotal => "file debit total amount",
            Self::RecordCount => "file count of records",
        })
    }
}

/// What is wrong with a field. No variant carries the field's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A required field is empty (or blank once cleaned up).
    #[error("is required")]
    Required,
    /// An identifier longer than its field. (Free text is cut to length instead.)
    #[error("is longer than {max} characters")]
    TooLong {
        /// The field's width.
        max: usize,
    },
    /// A numeric field holding something other than its digits.
    #[error("must be {digits} digits")]
    NotDigits {
        /// How many digits the field takes.
        digits: usize,
    },
    /// A value not in the form the layout prescribes.
    #[error("must be {expected}")]
    Format {
        /// The form.
        expected: &'static str,
    },
    /// A number too large for its field.
    #[error("is more than the field's maximum {max}")]
    TooLarge {
        /// The largest value the field holds.
        max: u64,
    },
    /// A date outside the years `DDMMYY` can express (2000–2099), or no date at all.
    #[error("is not a date of 2000-2099")]
    InvalidDate,
    /// A code the layout does not list.
    #[error("is not a known code")]
    Unsupported,
    /// A value the parser reads but the writer does not write.
    #[error("is read but not written")]
    NotWritable,
    /// A payment of zero.
    #[error("must not be zero")]
    ZeroAmount,
}

/// Where the writer found a problem, by index (from 0) into [`AbaFile`](super::AbaFile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The descriptive record.
    Descriptive,
    /// `details[index]`.
    Detail {
        /// Its index.
        index: usize,
    },
    /// The file total record.
    Total,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Descriptive => f.write_str("descriptive record"),
            Self::Detail { index } => write!(f, "details[{index}]"),
            Self::Total => f.write_str("file total record"),
        }
    }
}

/// Why the writer refused a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// A field's value cannot be written.
    #[error("{location}: {field} {problem}")]
    Field {
        /// The record.
        location: Location,
        /// The field.
        field: Field,
        /// What is wrong.
        problem: Problem,
    },
    /// The file has no detail record.
    #[error("the file has no detail record")]
    NoDetails,
}

impl WriteError {
    pub(crate) const fn field(location: Location, field: Field, problem: Problem) -> Self {
        Self::Field {
            location,
            field,
            problem,
        }
    }
}

/// Why the parser refused a file: what, and on which line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// The record's line, from 1 (the 120-character slice's number when the file has no line
    /// separators).
    pub line: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What the parser found wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// The input is empty.
    #[error("the file is empty")]
    Empty,
    /// A byte that is not printable ASCII, or a carriage return not followed by a line feed.
    #[error("the byte at column {column} is not printable ASCII")]
    InvalidByte {
        /// Its column, from 1.
        column: usize,
    },
    /// A record that is not 120 characters long.
    #[error("the record is {found} characters long, not 120")]
    RecordLength {
        /// Its length.
        found: usize,
    },
    /// A record where the file's structure does not allow it, or an unknown record type.
    #[error("unexpected record type {found:?}, expected {expected}")]
    UnexpectedRecord {
        /// Its record type.
        found: char,
        /// What the structure called for.
        expected: &'static str,
    },
    /// The file ends before its file total record.
    #[error("the file ends before its file total record")]
    Truncated,
    /// A field's value cannot be read.
    #[error("{field} {problem}")]
    Field {
        /// The field.
        field: Field,
        /// What is wrong.
        problem: Problem,
    },
    /// A total or count of the file total record differs from the one computed from the
    /// detail records.
    #[error("{field} is {found}, the detail records give {computed}")]
    Total {
        /// The field.
        field: Field,
        /// The value in the file total record.
        found: u64,
        /// The value computed.
        computed: u64,
    },
}
