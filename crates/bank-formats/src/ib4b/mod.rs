//! BNZ Internet Banking for Business (IB4B) direct credit files, from the direct credit import
//! layout of BNZ's "Internet Banking for Business — file format guide" (the "Direct Credits File
//! Format" section and its glossary of field types): comma-separated records, one per line.
//!
//! - [`write()`] turns a [`DirectCreditFile`] into bytes: a header record `1`, one transaction
//!   record `2` per credit (transaction code `50`), and a control record `3` it computes itself
//!   (total amount, count of transactions, hash total). Every record ends with CRLF.
//! - [`parse`] reads such a file, and payoutd's **dishonour file** (below), into an
//!   [`Ib4bFile`], checking every field and the control record; it never panics.
//! - [`write_dishonours`] writes a [`DishonourFile`] as it is: the dishonour file a bank would
//!   send back (which credits it dishonours is the bank simulator's: `bank_simulator::ib4b`).
//! - [`clean_text`] is what free-text fields go through; [`DishonourReason`] lists the
//!   dishonour codes with their meaning and [`DishonourReason::account_is_invalid`].
//!
//! # Direct credit layout
//!
//! Fields are numbered from 1 within a record; no field is quoted or padded, and no field may
//! hold a comma. "A" fields hold letters, digits, the space and `- ' & / # ? : _ .`
//! ([`is_allowed_char`]); "N" fields only digits.
//!
//! | Record | Field | Name | Type / width | Value |
//! |---|---|---|---|---|
//! | 1 header | 1 | record type | N 1 | `1` |
//! | | 2 | auth code | N | blank (direct debits only) |
//! | | 3, 4 | spare (batch number) | | blank |
//! | | 5 | originating account | N 16 | [`Header::originating_account`] |
//! | | 6 | batch type | N 1 | `7` (direct credit) |
//! | | 7 | due date | N 6 `YYMMDD` | [`Header::due_date`] |
//! | | 8 | creation date | N 6 `YYMMDD` | [`Header::creation_date`] |
//! | | 9 | indicator | A 1 | blank |
//! | 2 transaction | 1 | record type | N 1 | `2` |
//! | | 2 | other party account | N 16 | [`Transaction::account`] |
//! | | 3 | transaction code | N 2 | `50` |
//! | | 4 | amount, cents | N ≤ 10 | [`Transaction::amount`] |
//! | | 5 | other party name | A 20 | [`Transaction::other_party_name`] |
//! | | 6 | other party reference | A 12 | [`StatementDetails::reference`] of `other_party` |
//! | | 7 | other party analysis code | A 12 | [`StatementDetails::code`] of `other_party` |
//! | | 8 | other party alpha reference | A 12 | [`Transaction::other_party_alpha_reference`] (unused) |
//! | | 9 | other party particulars | A 12 | [`StatementDetails::particulars`] of `other_party` |
//! | | 10 | your name | A 20 | [`Transaction::your_name`] |
//! | | 11 | your code | A 12 | [`StatementDetails::code`] of `yours` |
//! | | 12 | your reference | A 12 | [`StatementDetails::reference`] of `yours` |
//! | | 13 | your particulars | A 12 | [`StatementDetails::particulars`] of `yours` |
//! | 3 control | 1 | record type | N 1 | `3` |
//! | | 2 | total amount, cents | N ≤ 11 | computed |
//! | | 3 | number of transactions | N ≤ 6 | computed |
//! | | 4 | hash total | N 11, zero-filled | computed ([`hash_total`]) |
//!
//! The hash total: for each transaction's account, the branch (4 digits) and base (7 digits)
//! taken together as one 11-digit number, bank and suffix ignored; summed; the rightmost 11
//! digits kept.
//!
//! The widths of the amount (10), total (11) and count (6) fields are the limits payoutd
//! enforces; the writer refuses a value that does not fit rather than cutting it.
//!
//! # Dishonour layout (payoutd's own)
//!
//! BNZ publishes no file for dishonoured direct credits. For banks and file agents that report
//! dishonours by file, payoutd defines one in the same style (CSV, CRLF, the same field types):
//!
//! | Record | Field | Name | Type / width | Value |
//! |---|---|---|---|---|
//! | 1 header | 1, 2 | record type, file kind | | `1`, `DISHONOUR` |
//! | | 3 | originating account | N 16 | of the direct credit file |
//! | | 4 | due date | N 6 `YYMMDD` | of the direct credit file |
//! | | 5 | report date | N 6 `YYMMDD` | when the bank reports |
//! | 2 dishonour | 1 | record type | N 1 | `2` |
//! | | 2 | other party account | N 16 | of the transaction |
//! | | 3 | transaction code | N 2 | of the transaction (`50`) |
//! | | 4 | amount, cents | N ≤ 10 | sent back |
//! | | 5 | other party name | A 20 | of the transaction |
//! | | 6 | your code | A 12 | of the transaction |
//! | | 7 | your reference | A 12 | of the transaction (required) |
//! | | 8 | reason code | N 2 | [`DishonourReason::code`] |
//! | | 9 | reason text | A 40 | [`DishonourReason::meaning`] |
//! | 3 control | 1–4 | as the direct credit control | | over the dishonour records |
//!
//! A dishonour file may have no dishonour records.

mod codes;
mod error;
mod parse;
mod text;
mod types;
mod write;

pub use codes::{DishonourReason, TransactionCode};
pub use error::{Field, Location, ParseError, ParseErrorKind, Problem, WriteError};
pub use parse::parse;
pub use text::{ALLOWED_SYMBOLS, SUBSTITUTE, clean_text, is_allowed_char};
pub use types::{
    ACCOUNT_DIGITS, AMOUNT_DIGITS, COUNT_DIGITS, Control, DETAIL_WIDTH, DIRECT_CREDIT_BATCH_TYPE,
    DISHONOUR_KIND, DirectCreditFile, Dishonour, DishonourFile, DishonourHeader, HASH_DIGITS,
    Header, Ib4bFile, NAME_WIDTH, REASON_TEXT_WIDTH, StatementDetails, TOTAL_DIGITS, Transaction,
    hash_total,
};
pub use write::{RECORD_END, write, write_dishonours};
