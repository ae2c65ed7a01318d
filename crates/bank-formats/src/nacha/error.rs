//! Errors of the writer and the parser. Both name the field by its NACHA name ([`Field`]).

use std::fmt;

/// A field of a NACHA record, by its name in the NACHA layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    // The first character of every record.
    /// Record type code (position 01 of every record).
    RecordTypeCode,
    // File header.
    /// Priority code (file header 02–03).
    PriorityCode,
    /// Immediate destination (file header 04–13).
    ImmediateDestination,
    /// Immediate origin (file header 14–23).
    ImmediateOrigin,
    /// File creation date (file header 24–29).
    FileCreationDate,
    /// File creation time (file header 30–33).
    FileCreationTime,
    /// File ID modifier (file header 34).
    FileIdModifier,
    /// Record size (file header 35–37).
    RecordSize,
    /// Blocking factor (file header 38–39).
    BlockingFactor,
    /// Format code (file header 40).
    FormatCode,
    /// Immediate destination name (file header 41–63).
    ImmediateDestinationName,
    /// Immediate origin name (file header 64–86).
    ImmediateOriginName,
    /// Reference code (file header 87–94).
    ReferenceCode,
    // Batch header (and the fields its control repeats).
    /// Service class code (batch header and control 02–04).
    ServiceClassCode,
    /// Company name (batch header 05–20).
    CompanyName,
    /// Company discretionary data (batch header 21–40).
    CompanyDiscretionaryData,
    /// Company identification (batch header 41–50, batch control 45–54).
    CompanyIdentification,
    /// Standard entry class code (batch header 51–53).
    StandardEntryClassCode,
    /// Company entry description (batch header 54–63).
    CompanyEntryDescription,
    /// Company descriptive date (batch header 64–69).
    CompanyDescriptiveDate,
    /// Effective entry date (batch header 70–75).
    EffectiveEntryDate,
    /// Settlement date (batch header 76–78).
    SettlementDate,
    /// Originator status code (batch header 79).
    OriginatorStatusCode,
    /// Originating DFI identification (batch header and control 80–87).
    OriginatingDfi,
    /// Batch number (batch header and control 88–94).
    BatchNumber,
    // Entry detail.
    /// Transaction code (entry 02–03).
    TransactionCode,
    /// Receiving DFI identification (entry 04–11).
    ReceivingDfi,
    /// Check digit (entry 12).
    CheckDigit,
    /// DFI account number (entry 13–29).
    DfiAccountNumber,
    /// Amount (entry 30–39).
    Amount,
    /// Individual identification number (entry 40–54).
    IndividualIdentificationNumber,
    /// Individual name (entry 55–76).
    IndividualName,
    /// Discretionary data (entry 77–78).
    DiscretionaryData,
    /// Addenda record indicator (entry 79).
    AddendaRecordIndicator,
    /// Trace number (entry 80–94, addenda 80–94).
    TraceNumber,
    // Addenda.
    /// Addenda type code (addenda 02–03).
    AddendaTypeCode,
    /// Payment-related information (addenda 05, 04–83).
    PaymentRelatedInformation,
    /// Addenda sequence number (addenda 05, 84–87).
    AddendaSequenceNumber,
    /// Entry detail sequence number (addenda 05, 88–94).
    EntryDetailSequenceNumber,
    /// Change code (addenda 98, 04–06).
    ChangeCode,
    /// Corrected data (addenda 98, 36–64).
    CorrectedData,
    /// Return reason code (addenda 99, 04–06).
    ReturnReasonCode,
    /// Original entry trace number (addenda 98 and 99, 07–21).
    OriginalEntryTraceNumber,
    /// Date of death (addenda 99, 22–27).
    DateOfDeath,
    /// Original receiving DFI identification (addenda 98 and 99, 28–35).
    OriginalReceivingDfi,
    /// Addenda information (addenda 99).
    AddendaInformation,
    /// Return trace number (dishonored and contested addenda 99, 39–53).
    ReturnTraceNumber,
    /// Original return reason code (dishonored and contested addenda 99, 57–58).
    OriginalReturnReasonCode,
    /// Dishonored return trace number (contested addenda 99, 59–73).
    DishonoredReturnTraceNumber,
    /// Dishonored return reason code (contested addenda 99, 77–78).
    DishonoredReturnReasonCode,
    // Control records.
    /// Entry/addenda count (batch control 05–10, file control 14–21).
    EntryAddendaCount,
    /// Entry hash (batch control 11–20, file control 22–31).
    EntryHash,
    /// Total debit entry dollar amount (batch control 21–32, file control 32–43).
    TotalDebit,
    /// Total credit entry dollar amount (batch control 33–44, file control 44–55).
    TotalCredit,
    /// Batch count (file control 02–07).
    BatchCount,
    /// Block count (file control 08–13).
    BlockCount,
}

impl Field {
    /// The field's name in the NACHA layout.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::RecordTypeCode => "record type code",
            Self::PriorityCode => "priority code",
            Self::ImmediateDestination => "immediate destination",
            Self::ImmediateOrigin => "immediate origin",
            Self::FileCreationDate => "file creation date",
            Self::FileCreationTime => "file creation time",
            Self::FileIdModifier => "file ID modifier",
            Self::RecordSize => "record size",
            Self::BlockingFactor => "blocking factor",
            Self::FormatCode => "format code",
            Self::ImmediateDestinationName => "immediate destination name",
            Self::ImmediateOriginName => "immediate origin name",
            Self::ReferenceCode => "reference code",
            Self::ServiceClassCode => "service class code",
            Self::CompanyName => "company name",
            Self::CompanyDiscretionaryData => "company discretionary data",
            Self::CompanyIdentification => "company identification",
            Self::StandardEntryClassCode => "standard entry class code",
            Self::CompanyEntryDescription => "company entry description",
            Self::CompanyDescriptiveDate => "company descriptive date",
            Self::EffectiveEntryDate => "effective entry date",
            Self::SettlementDate => "settlement date",
            Self::OriginatorStatusCode => "originator status code",
            Self::OriginatingDfi => "originating DFI identification",
            Self::BatchNumber => "batch number",
            Self::TransactionCode => "transaction code",
            Self::ReceivingDfi => "receiving DFI identification",
            Self::CheckDigit => "check digit",
            Self::DfiAccountNumber => "DFI account number",
            Self::Amount => "amount",
            Self::IndividualIdentificationNumber => "individual identification number",
            Self::IndividualName => "individual name",
            Self::DiscretionaryData => "discretionary data",
            Self::AddendaRecordIndicator => "addenda record indicator",
            Self::TraceNumber => "trace number",
            Self::AddendaTypeCode => "addenda type code",
            Self::PaymentRelatedInformation => "payment-related information",
            Self::AddendaSequenceNumber => "addenda sequence number",
            Self::EntryDetailSequenceNumber => "entry detail sequence number",
            Self::ChangeCode => "change code",
            Self::CorrectedData => "corrected data",
            Self::ReturnReasonCode => "return reason code",
            Self::OriginalEntryTraceNumber => "original entry trace number",
            Self::DateOfDeath => "date of death",
            Self::OriginalReceivingDfi => "original receiving DFI identification",
            Self::AddendaInformation => "addenda information",
            Self::ReturnTraceNumber => "return trace number",
            Self::OriginalReturnReasonCode => "original return reason code",
            Self::DishonoredReturnTraceNumber => "dishonored return trace number",
            Self::DishonoredReturnReasonCode => "dishonored return reason code",
            Self::EntryAddendaCount => "entry/addenda count",
            Self::EntryHash => "entry hash",
            Self::TotalDebit => "total debit entry dollar amount",
            Self::TotalCredit => "total credit entry dollar amount",
            Self::BatchCount => "batch count",
            Self::BlockCount => "block count",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is wrong with a field's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// A required field is empty (or blank once cleaned up).
    #[error("is required")]
    Required,
    /// An identifier is longer than its field. (Free text is cut to length instead.)
    #[error("is longer than {max} characters")]
    TooLong {
        /// The field's width.
        max: usize,
    },
    /// A numeric field holds something other than its digits.
    #[error("must be {digits} digits")]
    NotDigits {
        /// How many digits the field takes.
        digits: usize,
    },
    /// A routing number whose ninth digit is not its check digit.
    #[error("fails the routing number check (the check digit should be {expected})")]
    CheckDigit {
        /// The check digit the first eight digits call for.
        expected: u8,
    },
    /// An identifier holds a character the writer does not write.
    #[error("contains {found:?}, outside the NACHA character set the writer uses")]
    Character {
        /// The first such character.
        found: char,
    },
    /// A number too large for its field.
    #[error("is {value}, more than the field's maximum {max}")]
    TooLarge {
        /// The value.
        value: u64,
        /// The largest value the field holds.
        max: u64,
    },
    /// A date outside the years `YYMMDD` can express (2000–2099).
    #[error("is outside 2000-2099")]
    DateOutOfRange,
    /// A date or time that does not exist.
    #[error("{found:?} is not a valid {format}")]
    InvalidDateTime {
        /// The text found.
        found: String,
        /// `YYMMDD` or `HHMM`.
        format: &'static str,
    },
    /// A code this module does not know or does not read.
    #[error("{found:?} is not supported")]
    Unsupported {
        /// The value found.
        found: String,
    },
    /// A value the parser reads but the writer does not write (e.g. a debit, a WEB batch, a
    /// return addenda).
    #[error("{found} is read but not written")]
    NotWritable {
        /// The value, as the file would spell it.
        found: String,
    },
    /// A fixed value that is not what the layout prescribes.
    #[error("is {found:?}, expected {expected:?}")]
    Expected {
        /// What the layout prescribes.
        expected: &'static str,
        /// What was found.
        found: String,
    },
    /// Batch numbers (within the file) and trace numbers (within a batch) must ascend.
    #[error("does not ascend")]
    NotAscending,
    /// An entry's trace number does not start with its batch's originating DFI.
    #[error("does not start with the batch's originating DFI identification")]
    OdfiMismatch,
    /// A transaction code that does not belong in the batch's service class.
    #[error("does not match service class {service_class}")]
    ServiceClassMismatch {
        /// The batch's service class code.
        service_class: u16,
    },
    /// A prenotification with an amount other than zero.
    #[error("of a prenotification must be zero")]
    PrenoteAmount,
    /// A live entry with a zero amount.
    #[error("must not be zero")]
    ZeroAmount,
    /// More addenda than the standard entry class allows.
    #[error("allows at most {max} addenda record(s) per entry")]
    TooManyAddenda {
        /// The most allowed.
        max: usize,
    },
    /// The addenda record indicator disagrees with the addenda records that follow.
    #[error("is {found:?} but the entry has {addenda} addenda record(s)")]
    AddendaIndicator {
        /// The indicator read.
        found: char,
        /// Addenda records that follow the entry.
        addenda: usize,
    },
    /// A sequence number that is not the one expected.
    #[error("is {found}, expected {expected}")]
    Sequence {
        /// What the position of the record calls for.
        expected: u64,
        /// What was read.
        found: u64,
    },
}

/// Where the writer found a problem, by index (from 0) into [`NachaFile`](super::NachaFile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The file header.
    FileHeader,
    /// `batches[batch].header`.
    BatchHeader {
        /// Index of the batch.
        batch: usize,
    },
    /// `batches[batch].entries[entry]`.
    Entry {
        /// Index of the batch.
        batch: usize,
        /// Index of the entry in the batch.
        entry: usize,
    },
    /// `batches[batch].entries[entry].addenda[addenda]`.
    Addenda {
        /// Index of the batch.
        batch: usize,
        /// Index of the entry in the batch.
        entry: usize,
        /// Index of the addenda under the entry.
        addenda: usize,
    },
    /// The control record of `batches[batch]`.
    BatchControl {
        /// Index of the batch.
        batch: usize,
    },
    /// The file control record.
    FileControl,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::FileHeader => f.write_str("file header"),
            Self::BatchHeader { batch } => write!(f, "batches[{batch}].header"),
            Self::Entry { batch, entry } => write!(f, "batches[{batch}].entries[{entry}]"),
            Self::Addenda {
                batch,
                entry,
                addenda,
            } => write!(f, "batches[{batch}].entries[{entry}].addenda[{addenda}]"),
            Self::BatchControl { batch } => write!(f, "batches[{batch}] control"),
            Self::FileControl => f.write_str("file control"),
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
    /// The file has no batch.
    #[error("the file has no batch")]
    NoBatches,
    /// A batch has no entry.
    #[error("batches[{batch}] has no entry")]
    EmptyBatch {
        /// Index of the batch.
        batch: usize,
    },
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
    /// The record's line, from 1 (the 94-character slice's number when the file has no line
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
    /// A byte that is not printable ASCII (`0x20`–`0x7E`): non-ASCII text, a control character,
    /// a carriage return not followed by a line feed.
    #[error("byte {byte:#04x} at column {column} is not printable ASCII")]
    InvalidByte {
        /// Its column, from 1.
        column: usize,
        /// The byte.
        byte: u8,
    },
    /// A record that is not 94 characters long.
    #[error("the record is {found} characters long, not 94")]
    RecordLength {
        /// Its length.
        found: usize,
    },
    /// A record type code other than 1, 5, 6, 7, 8 and 9.
    #[error("unknown record type {found:?}")]
    UnknownRecordType {
        /// The first character of the record.
        found: char,
    },
    /// A record where the file's structure does not allow it.
    #[error("unexpected record type {found:?}, expected {expected}")]
    UnexpectedRecord {
        /// Its record type code.
        found: char,
        /// What the structure called for.
        expected: &'static str,
    },
    /// The file ends inside a batch, or before its file control record.
    #[error("the file ends before its {missing} record")]
    Truncated {
        /// `batch control` or `file control`.
        missing: &'static str,
    },
    /// A field's value cannot be read.
    #[error("{field} {problem}")]
    Field {
        /// The field.
        field: Field,
        /// What is wrong.
        problem: Problem,
    },
    /// A control record's count, hash or total differs from the one computed from the records.
    #[error("{field} is {found}, the records give {computed}")]
    ControlTotal {
        /// The field.
        field: Field,
        /// The value in the control record.
        found: u64,
        /// The value computed.
        computed: u64,
    },
    /// A batch control record's copy of a batch header field differs from the header.
    #[error("{field} is {found:?}, the batch header has {header:?}")]
    HeaderMismatch {
        /// The field.
        field: Field,
        /// The value in the batch control record.
        found: String,
        /// The value in the batch header.
        header: String,
    },
}
