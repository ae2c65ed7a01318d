//! NACHA (ACH) files, from the published NACHA record layouts: 94-character records in blocks
//! of ten. [`write()`] turns typed contents into a credit origination file; [`parse`] reads
//! credit, return and notification-of-change files and checks their control records.

mod codes;
mod error;
mod parse;
mod text;
mod types;
mod write;

pub use codes::{
    AccountType, ChangeCode, ReturnCode, ReturnKind, SecCode, ServiceClass, TransactionCode,
};
pub use error::{Field, Location, ParseError, ParseErrorKind, Problem, WriteError};
pub use parse::{ParseOptions, parse, parse_with};
pub use text::{
    ALLOWED_SYMBOLS, clean_text, is_allowed_char, is_valid_routing_number, routing_check_digit,
};
pub use types::{
    Addenda, Addenda05, Addenda98, Addenda99, Addenda99Contested, Addenda99Dishonored,
    BLOCKING_FACTOR, Batch, BatchControl, BatchHeader, EntryDetail, FileControl, FileHeader,
    NachaFile, trace_number,
};
pub use write::{LineEnding, RECORD_LENGTH, WriteOptions, write};
