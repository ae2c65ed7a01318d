//! Errors of the writers and the parser. They name the record and the field, never a field's
//! value: account numbers and names are account data.

use std::fmt;

/// A field of an IB4B record, by its name in BNZ's layout (or in payoutd's dishonour layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// Record type (field 1 of every record).
    RecordType,
    /// Header: direct debit authority code (blank for direct credits).
    AuthCode,
    /// Header: the spare (batch number) fields 3 and 4, blank.
    Spare,
    /// Header: the account the credits are paid from (16 digits).
    OriginatingAccount,
    /// Header: batch (file) type, `7` for direct credits.
    BatchType,
    /// Header: due date `YYMMDD`.
    DueDate,
    /// Header: creation date `YYMMDD`.
    CreationDate,
    /// Header: the indicator (field 9), blank.
    Indicator,
    /// Dishonour header: the file kind, `DISHONOUR`.
    FileKind,
    /// Dishonour header: the date of the report `YYMMDD`.
    ReportDate,
    /// Transaction: the other party's account number (16 digits).
    Account,
    /// Transaction: transaction code.
    TransactionCode,
    /// Transaction: amount in cents.
    Amount,
    /// Transaction: other party name (20).
    OtherPartyName,
    /// Transaction: other party reference (12).
    OtherPartyReference,
    /// Transaction: other party analysis code (12).
    OtherPartyCode,
    /// Transaction: other party alpha reference (12, unused).
    OtherPartyAlphaReference,
    /// Transaction: other party particulars (12).
    OtherPartyParticulars,
    /// Transaction: your (the originator's) name (20).
    YourName,
    /// Transaction: your code (12).
    YourCode,
    /// Transaction: your reference (12).
    YourReference,
    /// Transaction: your particulars (12).
    YourParticulars,
    /// Dishonour: reason code (2 digits).
    ReasonCode,
    /// Dishonour: reason text (40).
    ReasonText,
    /// Control: total amount in cents.
    TotalAmount,
    /// Control: number of transactions.
    TransactionCount,
    /// Control: hash total (11 digits).
    HashTotal,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Field::RecordType => "record type",
            Field::AuthCode => "auth code",
            Field::Spare => "spare field",
            Field::OriginatingAccount => "originating account",
            Field::BatchType => "batch type",
            Field::DueDate => "due date",
            Field::CreationDate => "creation date",
            Field::Indicator => "indicator",
            Field::FileKind => "file kind",
            Field::ReportDate => "report date",
            Field::Account => "account number",
            Field::TransactionCode => "transaction code",
            Field::Amount => "amount",
            Field::OtherPartyName => "other party name",
            Field::OtherPartyReference => "other party reference",
            Field::OtherPartyCode => "other party code",
            Field::OtherPartyAlphaReference => "other party alpha reference",
            Field::OtherPartyParticulars => "other party particulars",
            Field::YourName => "your name",
            Field::YourCode => "your code",
            Field::YourReference => "your reference",
            Field::YourParticulars => "your particulars",
            Field::ReasonCode => "reason code",
            Field::ReasonText => "reason text",
            Field::TotalAmount => "total amount",
            Field::TransactionCount => "transaction count",
            Field::HashTotal => "hash total",
        })
    }
}

/// What is wrong with a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    /// Required and empty.
    Empty,
    /// Must be blank and is not.
    NotBlank,
    /// Longer than the field.
    TooLong {
        /// The field's width.
        max: usize,
    },
    /// Not exactly the number of digits the field has.
    NotDigits {
        /// The digits it must have (at most, for amounts and counts).
        width: usize,
    },
    /// A character outside the IB4B set.
    BadCharacter,
    /// Not a `YYMMDD` date of the years 2000–2099.
    BadDate,
    /// Not one of the field's values.
    UnknownValue,
    /// Zero where the field must be positive.
    Zero,
    /// Does not fit the field.
    Overflow,
    /// Differs from what the records add up to.
    Mismatch,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::Empty => f.write_str("is empty"),
            Problem::NotBlank => f.write_str("must be blank"),
            Problem::TooLong { max } => write!(f, "is longer than {max} characters"),
            Problem::NotDigits { width } => write!(f, "must be digits ({width})"),
            Problem::BadCharacter => f.write_str("holds a character outside the IB4B set"),
            Problem::BadDate => f.write_str("is not a YYMMDD date of 2000-2099"),
            Problem::UnknownValue => f.write_str("is not a known value"),
            Problem::Zero => f.write_str("must be more than zero"),
            Problem::Overflow => f.write_str("does not fit its field"),
            Problem::Mismatch => f.write_str("does not match the records"),
        }
    }
}

/// Which record a writer error is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The header record.
    Header,
    /// The transaction (or dishonour) record at this position, from 0.
    Transaction(usize),
    /// The control record.
    Control,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Header => f.write_str("header"),
            Location::Transaction(i) => write!(f, "transaction {}", i + 1),
            Location::Control => f.write_str("control"),
        }
    }
}

/// Why a file cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{location}: {field} {problem}")]
pub struct WriteError {
    /// The record.
    pub location: Location,
    /// The field.
    pub field: Field,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with a file being parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// No records.
    Empty,
    /// A byte that is not printable ASCII, CR or LF.
    BadByte,
    /// A carriage return not followed by a line feed.
    BareCarriageReturn,
    /// A blank line before the last record.
    BlankLine,
    /// A record type other than the one expected at this place.
    UnexpectedRecord,
    /// The record has the wrong number of comma-separated fields.
    FieldCount {
        /// Fields the record type has.
        expected: usize,
        /// Fields found.
        found: usize,
    },
    /// A field is wrong.
    Field(Field, Problem),
    /// The file ends before its control record.
    MissingControl,
    /// Records after the control record.
    AfterControl,
    /// A file with no transaction records.
    NoTransactions,
}

/// Why bytes are not a valid IB4B file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct ParseError {
    /// The line, from 1 (0 for the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

impl fmt::Display for ParseErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseErrorKind::Empty => f.write_str("the file has no records"),
            ParseErrorKind::BadByte => f.write_str("a byte that is not printable ASCII"),
            ParseErrorKind::BareCarriageReturn => {
                f.write_str("a carriage return without a line feed")
            }
            ParseErrorKind::BlankLine => f.write_str("a blank line"),
            ParseErrorKind::UnexpectedRecord => f.write_str("a record type out of place"),
            ParseErrorKind::FieldCount { expected, found } => {
                write!(f, "{found} fields where the record has {expected}")
            }
            ParseErrorKind::Field(field, problem) => write!(f, "{field} {problem}"),
            ParseErrorKind::MissingControl => f.write_str("no control record"),
            ParseErrorKind::AfterControl => f.write_str("records after the control record"),
            ParseErrorKind::NoTransactions => f.write_str("no transaction records"),
        }
    }
}
