//! ABA ("Cemtex") direct entry files, the Australian Bankers' Association layout that
//! Australian banks publish for BECS direct entry (the CBA, Westpac, NAB and ANZ direct entry
//! file guides): records of 120 characters, each ended by CRLF.
//!
//! - [`write()`] turns an [`AbaFile`] into the bytes of an **originated file**: one
//!   descriptive record (type 0), payment records (type 1, transaction code 50 credits and
//!   the 13 debit of a self-balancing record), and the file total record (type 7), which it
//!   computes (net, credit and debit totals, record count).
//! - [`parse()`] reads an originated file or the bank's **return file** (returned payments
//!   are detail records of type 2) and checks the file total record against the detail
//!   records.
//! - [`write_return`] writes the **bank's return file** (which payments it returns, and why,
//!   is the bank simulator's: `bank_simulator::aba`). The return layout followed is NAB's
//!   direct entry returns file
//!   (as NAB documents it for its customers): the originated layout with record type `2`, the
//!   return code in position 18, the original day of processing in positions 113–114 and the
//!   original APCA user id in positions 115–120.
//! - [`clean_text`] is the clean-up of free-text fields; [`ReturnCode`] the return reasons,
//!   with [`ReturnCode::account_is_invalid`].
//!
//! One descriptive record per file: files with several descriptive/total pairs (which some
//! banks accept) are refused by the parser.
//!
//! # Layout
//!
//! Positions from 1, inclusive. `N` numeric, right-justified and zero-filled; `A` text,
//! left-justified and blank-filled; `R` right-justified and blank-filled.
//!
//! | Record | Positions | Field | Form | Rust |
//! |---|---|---|---|---|
//! | 0 descriptive | 1 | record type `0` | | constant |
//! | | 2–18 | blank | | |
//! | | 19–20 | reel sequence number | N2 | [`DescriptiveRecord::reel_sequence`] |
//! | | 21–23 | user financial institution mnemonic | A3 | [`DescriptiveRecord::bank_mnemonic`] |
//! | | 24–30 | blank | | |
//! | | 31–56 | name of user supplying file | A26 | [`DescriptiveRecord::user_name`] |
//! | | 57–62 | APCA user identification number | N6 | [`DescriptiveRecord::apca_user_id`] |
//! | | 63–74 | description of entries | A12 | [`DescriptiveRecord::description`] |
//! | | 75–80 | date to be processed `DDMMYY` | N6 | [`DescriptiveRecord::processing_date`] |
//! | | 81–120 | blank | | |
//! | 1 detail (2 return) | 1 | record type `1` (`2`) | | [`DetailRecord::record_type`] |
//! | | 2–8 | BSB `xxx-xxx` | | [`DetailRecord::bsb`] (six digits) |
//! | | 9–17 | account number | R9 | [`DetailRecord::account_number`] |
//! | | 18 | indicator (return code) | | [`DetailKind`] |
//! | | 19–20 | transaction code | N2 | [`DetailRecord::transaction_code`] |
//! | | 21–30 | amount, cents | N10 | [`DetailRecord::amount`] |
//! | | 31–62 | title of account | A32 | [`DetailRecord::account_title`] |
//! | | 63–80 | lodgement reference | A18 | [`DetailRecord::lodgement_reference`] |
//! | | 81–87 | trace record BSB `xxx-xxx` | | [`DetailRecord::trace_bsb`] |
//! | | 88–96 | trace account number | R9 | [`DetailRecord::trace_account`] |
//! | | 97–112 | name of remitter | A16 | [`DetailRecord::remitter_name`] |
//! | | 113–120 | withholding tax, cents (return: original day 113–114, original user id 115–120) | N8 | [`DetailKind`] |
//! | 7 file total | 1 | record type `7` | | constant |
//! | | 2–8 | BSB format filler `999-999` | | constant |
//! | | 9–20 | blank | | |
//! | | 21–30 | file net total: credit total − debit total, absolute | N10 | [`FileTotal::net_total`] |
//! | | 31–40 | file credit total | N10 | [`FileTotal::credit_total`] |
//! | | 41–50 | file debit total | N10 | [`FileTotal::debit_total`] |
//! | | 51–74 | blank | | |
//! | | 75–80 | count of detail records | N6 | [`FileTotal::record_count`] |
//! | | 81–120 | blank | | |
//!
//! Debit totals count transaction code 13; every other code counts as a credit.
//!
//! # Field rules of the writer
//!
//! - **BSBs** (detail and trace) are six digits, written `xxx-xxx`.
//! - **Account numbers** (detail and trace) are written as given, right-justified: one to
//!   nine digits or hyphens. A longer or otherwise wrong value is an error, never cut.
//! - **Free text** (user name, description, title of account, lodgement reference, remitter
//!   name) goes through [`clean_text`] and is required to keep at least one character.
//! - The bank mnemonic is three upper-case letters; the APCA user id six digits; the reel
//!   sequence 1–99; dates `DDMMYY` in 2000–2099.
//! - Amounts are 1 to 9 999 999 999 cents; the writer writes transaction codes 50 and 13 and
//!   a blank indicator only; withholding tax up to eight digits.
//! - Totals wider than ten digits and more than 999 999 detail records are refused.
//!
//! # What the parser checks
//!
//! Record length and characters, the record order (0, then 1 or 2, then 7 and nothing
//! after), the blank areas of the descriptive and total records, every numeric field's
//! digits, the BSB forms, the date, the transaction codes, the indicator (blank, `N`, `W`,
//! `X`, `Y`), the return code digit and original day (1–31) and user id of return records,
//! the `999-999` filler, and each total and the count against the detail records.
//!
//! Errors name the field ([`Field`]) and the problem ([`Problem`]), never the value.

mod codes;
mod error;
mod parse;
mod text;
mod types;
mod write;

pub use codes::{Indicator, ReturnCode, TransactionCode};
pub use error::{Field, Location, ParseError, ParseErrorKind, Problem, WriteError};
pub use parse::parse;
pub use text::{ALLOWED_SYMBOLS, clean_text, is_allowed_char};
pub use types::{AbaFile, DescriptiveRecord, DetailKind, DetailRecord, FileTotal};
pub use write::{MAX_AMOUNT, MAX_RECORDS, RECORD_END, RECORD_LENGTH, write, write_return};
