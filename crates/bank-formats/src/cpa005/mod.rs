//! Payments Canada Standard 005 files ("Standards for the Exchange of Financial Data on AFT
//! Files", the layout of the Canadian Payments Association's Automated Funds Transfer files, as
//! Payments Canada publishes it and the Canadian banks' AFT/EFT origination guides repeat it):
//! 1464-character logical records.
//!
//! - [`write()`] turns a [`Cpa005File`] into bytes: the header record `A`, detail records of six
//!   240-character segments (`C` credits, `D` debits, `I` returned credits, `J` returned
//!   debits; consecutive transactions of one type share a record, unused segments are blank,
//!   as Standard 005 says), and the trailer `Z`, whose record count,
//!   totals and counts it computes. Each record is followed by `\r\n` by default
//!   ([`LineEnding`]).
//! - [`parse`] turns bytes into a [`Cpa005File`] (unused segments blank or, as some writers
//!   leave them, zero-filled in their numeric fields): origination files and the bank's files of
//!   returned items alike, checking every record count, every used segment's fields and the
//!   trailer's totals. It never panics.
//! - [`write`] also writes what the bank sends back: a Standard 005 file of `I` records
//!   repeating the returned credits with a return reason code ([`ReturnCode`]); which credits
//!   are returned is the bank simulator's (`bank_simulator::cpa005`).
//!
//! # Layout
//!
//! Positions from 1, inclusive. Every record starts with the logical record type (1), the
//! logical record count (2–10, from `000000001` for the header), the originator's ID (11–20)
//! and the file creation number (21–24).
//!
//! | Record | Positions | Field | Rust |
//! |---|---|---|---|
//! | `A` header | 25–30 | creation date `0YYDDD` | [`Header::creation_date`] |
//! | | 31–35 | destination data centre | [`Header::destination_data_centre`] |
//! | | 36–55 | communication area, blank | — |
//! | | 56–58 | currency `CAD` | [`Header::currency`] |
//! | | 59–1464 | filler, blank | — |
//! | `C`/`D`/`I`/`J` | 25–264, 265–504, … 1225–1464 | six segments | [`Transaction`] |
//! | `Z` trailer | 25–38 / 39–46 | total value / number of `D` and `J` segments | [`Totals`] |
//! | | 47–60 / 61–68 | total value / number of `C` and `I` segments | [`Totals`] |
//! | | 69–112 | value and number of error corrections `E` and `F`: zeros | — |
//! | | 113–1464 | filler, blank | — |
//!
//! A segment (positions within it):
//!
//! | Positions | Field | Type | Rust |
//! |---|---|---|---|
//! | 1–3 | transaction type | numeric | [`Transaction::transaction_type`] |
//! | 4–13 | amount, cents | numeric | [`Transaction::amount`] |
//! | 14–19 | date funds to be available `0YYDDD` | numeric | [`Transaction::due_date`] |
//! | 20–28 | institutional identification `0IIITTTTT` | numeric | [`Transaction::institution_id`] |
//! | 29–40 | payee account number, left-justified | alphanumeric | [`Transaction::account_number`] |
//! | 41–62 | item trace number (zeros on origination) | numeric | [`Transaction::item_trace_number`] |
//! | 63–65 | stored transaction type (zeros) | numeric | [`Transaction::stored_transaction_type`] |
//! | 66–80 | originator's short name | alphanumeric | [`Transaction::originator_short_name`] |
//! | 81–110 | payee name | alphanumeric | [`Transaction::payee_name`] |
//! | 111–140 | originator's long name | alphanumeric | [`Transaction::originator_long_name`] |
//! | 141–150 | originating direct clearer's user's ID | alphanumeric | [`Transaction::direct_clearer_user_id`] |
//! | 151–169 | originator's cross reference number | alphanumeric | [`Transaction::cross_reference`] |
//! | 170–178 | institution for returns `0IIITTTTT` | numeric | [`Transaction::return_institution_id`] |
//! | 179–190 | account for returns, left-justified | alphanumeric | [`Transaction::return_account_number`] |
//! | 191–205 | originator's sundry information | alphanumeric | [`Transaction::sundry_information`] |
//! | 206–227 | filler, blank | — | — |
//! | 228–229 | settlement code, blank | — | — |
//! | 230–240 | invalid data element ID: zeros; on `I`/`J`, the return reason code then zeros | numeric | [`ReturnDetails::reason`] |
//!
//! Where the return reason code sits in a returned item differs between banks' return
//! layouts; this module puts it in the first three positions of the invalid data element ID
//! and reads it from there.
//!
//! # Field rules of the writer
//!
//! - Numeric fields are right-justified and zero-filled; alphanumeric fields left-justified and
//!   blank-filled. Every value is checked against its width: amounts 1 to 9 999 999 999
//!   cents, transaction types 1 to 999, file creation numbers 1 to 9999, dates of the years
//!   2000–2099, institutions exactly `0IIITTTTT`, accounts 1 to 12 digits, trace numbers 22
//!   digits, the data centre five digits, the currency `CAD` or `USD`.
//! - Free text (names, sundry information) is cleaned by [`clean_text`]; the originator's short
//!   and long names and the payee name are required.
//! - Identifiers (originator's ID, user ID, cross reference) are written as given, so they
//!   must fit and use only [`is_allowed_char`] characters.
//! - A returned item (`I`, `J`) carries [`ReturnDetails`]; `C` and `D` do not.
//!
//! Errors name the field by its Standard 005 name ([`Field`]) and never repeat its value.

mod codes;
mod error;
mod parse;
mod text;
mod types;
mod write;

pub use codes::{RETURN_CODES, RecordType, ReturnCode};
pub use error::{Field, Location, ParseError, ParseErrorKind, Problem, WriteError};
pub use parse::parse;
pub use text::{ALLOWED_SYMBOLS, clean_text, is_allowed_char};
pub use types::{Cpa005File, Header, ReturnDetails, SEGMENTS_PER_RECORD, Totals, Transaction};
pub use write::{
    LineEnding, MAX_AMOUNT, MAX_FILE_CREATION_NUMBER, RECORD_LENGTH, SEGMENT_LENGTH, WriteOptions,
    write,
};
