//! NACHA (ACH) files, from the published NACHA record layouts: 94-character records in blocks
//! of ten.
//!
//! - [`write()`] turns a [`NachaFile`] into bytes. It writes **credit origination files**: one file
//!   header, batches of service class 220 (credits only) with standard entry class PPD or CCD,
//!   entries with transaction code 22 (checking credit) or 32 (savings credit), or their
//!   prenotifications 23 and 33 (amount zero), each with at most one addenda 05. It computes
//!   every control record (entry/addenda counts, entry hashes, debit and credit totals, batch
//!   count, block count) and pads the last block with records of 94 `9`s. Records are joined
//!   with `\n` by default, with none after the last; [`LineEnding::CrLf`] joins them with
//!   `\r\n` instead.
//! - [`parse`] (and [`parse_with`]) turns bytes into a [`NachaFile`]. It accepts `\n` or
//!   `\r\n` separated records (or records with no separator at all), skips trailing empty lines
//!   and the padding records, requires every record to be exactly 94 printable ASCII
//!   characters (unless [`ParseOptions::allow_short_records`]), and checks every batch control
//!   and the file control record against what it computes from the records. Besides credit
//!   files it reads **return files** (Addenda99, with the dishonored R61–R70 and contested
//!   dishonored R71–R77 layouts) and **notifications of change** (SEC code COR, Addenda98), with
//!   service classes 200, 220 and 225 and the checking and savings transaction codes 21–39.
//! - [`write_answer`] writes a **return or notification-of-change file** as a receiving bank
//!   sends it: entries with the answer transaction codes ([`answer_transaction_code`]: 21/31
//!   for returned or notified checking/savings credits, 26/36 for debits), NOC entries in `COR`
//!   batches with amount zero, one Addenda99 (plain return layout) or Addenda98 each, with
//!   corrected data laid out by [`corrected_data`], and the same control records, padding and
//!   field rules as [`write()`]. The layout matches the moov-io return and COR files in the
//!   tests' fixtures, and [`parse`] reads it back. Dishonored and contested returns are not
//!   written. Which entries a bank answers, and how, is the bank simulator's
//!   (`bank_simulator::nacha`).
//! - [`NachaFile::returns`] and [`NachaFile::notifications_of_change`] list what a return or
//!   NOC file says about the entries that were sent: the original trace number, the return
//!   reason ([`ReturnCode::reason`], [`ReturnCode::is_account_error`]) or change code and the
//!   corrected data ([`Correction`]).
//!
//! Not supported: other standard entry classes (CTX, IAT, CIE, ENR, … have other entry or
//! batch layouts and are refused), general ledger and loan transaction codes (4x, 5x), addenda
//! types other than 05, 98 and 99, refused notifications of change (C61–C69), and ACH operator
//! advice files.
//!
//! # Field rules of the writer
//!
//! - **Numeric fields** (routing numbers, originating DFI, trace numbers) must be exactly their
//!   digits. Routing numbers (immediate destination, receiving DFI) must carry a valid check
//!   digit: weights 3, 7, 1 repeated over the first eight digits, the ninth digit bringing the
//!   sum to a multiple of 10. Amounts and counts are written right-justified and zero-filled,
//!   and are refused when wider than their fields.
//! - **Free text** (names, descriptions, discretionary data, reference code, payment-related
//!   information) is cleaned up by [`clean_text`]: upper-cased, accented letters folded
//!   (`é` → `E`, `ß` → `SS`), any character outside upper-case letters, digits, the space and
//!   [`ALLOWED_SYMBOLS`] replaced by a space, and cut to the field's width.
//! - **Identifiers** (DFI account number, company identification, individual identification
//!   number) are never changed: a value that is too long or holds a character outside that set
//!   is an error, because a cut or altered account number would pay another account.
//! - Company name, company entry description, individual name, company identification and
//!   account number are required.
//! - Batch numbers ascend within the file; trace numbers ascend within a batch and start with
//!   the batch's originating DFI identification.
//! - Dates are `YYMMDD` for the years 2000–2099; the creation time is `HHMM` (seconds are not
//!   written).
//!
//! # What the parser checks
//!
//! - every record: 94 printable ASCII characters (NACHA allows any ASCII character above
//!   `0x1F`; lower case is read as it is), a known record type, in the order file header,
//!   batches (header, entries each followed by its addenda, control), file control, padding;
//! - the file header's constants, its dates and times, the immediate destination's check
//!   digit, each entry's receiving DFI check digit and numeric fields;
//! - codes: service class 200/220/225, the standard entry classes of [`SecCode`], the
//!   transaction codes of [`TransactionCode`] (and that a 220 batch holds only credits, a 225
//!   batch only debits), addenda types 05/98/99, return codes `Rnn`, change codes C01–C14;
//! - the addenda record indicator against the addenda that follow, and addenda 05 sequence
//!   numbers;
//! - each batch control (entry/addenda count, entry hash, totals, and its copies of the service
//!   class, company identification — blanks ignored, since implementations justify it
//!   differently —, originating DFI and batch number) and the file control (batch count, block
//!   count, entry/addenda count, entry hash, totals).
//!
//! It does not check trace number order or prefixes, prenote amounts, or the dates inside
//! dishonored and contested return addenda (kept as written).
//!
//! Errors name the field by its NACHA name ([`Field`]), where it is ([`Location`] for the
//! writer, the line for the parser) and what is wrong ([`Problem`]).
//!
//! # Field mapping
//!
//! Positions are those of the NACHA layout, from 1, inclusive.
//!
//! | Record | Positions | Field | Rust |
//! |---|---|---|---|
//! | 1 file header | 01 / 02–03 | record type `1` / priority code `01` | constants |
//! | | 04–13 | immediate destination (blank + 9 digits) | [`FileHeader::immediate_destination`] |
//! | | 14–23 | immediate origin (blank + 9, or 10 digits) | [`FileHeader::immediate_origin`] |
//! | | 24–29 / 30–33 | creation date `YYMMDD` / time `HHMM` | [`FileHeader::creation_date`] / [`FileHeader::creation_time`] |
//! | | 34 | file ID modifier | [`FileHeader::file_id_modifier`] |
//! | | 35–37 / 38–39 / 40 | record size `094` / blocking factor `10` / format code `1` | constants |
//! | | 41–63 / 64–86 / 87–94 | destination name / origin name / reference code | [`FileHeader`] |
//! | 5 batch header | 02–04 | service class code | [`BatchHeader::service_class`] |
//! | | 05–20 / 21–40 / 41–50 | company name / discretionary data / identification | [`BatchHeader`] |
//! | | 51–53 | standard entry class code | [`BatchHeader::sec_code`] |
//! | | 54–63 / 64–69 | company entry description / descriptive date | [`BatchHeader`] |
//! | | 70–75 | effective entry date `YYMMDD` | [`BatchHeader::effective_entry_date`] |
//! | | 76–78 / 79 | settlement date (blank) / originator status code `1` | not kept |
//! | | 80–87 / 88–94 | originating DFI / batch number | [`BatchHeader`] |
//! | 6 entry detail | 02–03 | transaction code | [`EntryDetail::transaction_code`] |
//! | | 04–11 + 12 | receiving DFI identification + check digit | [`EntryDetail::receiving_dfi`] (9 digits) |
//! | | 13–29 | DFI account number | [`EntryDetail::account_number`] |
//! | | 30–39 | amount, cents | [`EntryDetail::amount`] |
//! | | 40–54 / 55–76 / 77–78 | individual identification / name / discretionary data | [`EntryDetail`] |
//! | | 79 | addenda record indicator | `!addenda.is_empty()` |
//! | | 80–94 | trace number | [`EntryDetail::trace_number`] |
//! | 7 addenda 05 | 04–83 | payment-related information | [`Addenda05`] |
//! | | 84–87 / 88–94 | addenda sequence / entry detail sequence number | computed |
//! | 7 addenda 98 | 04–06, 07–21, 28–35, 36–64, 80–94 | change code, original trace, original RDFI, corrected data, trace | [`Addenda98`] |
//! | 7 addenda 99 | 04–06, 07–21, 22–27, 28–35, 36–79, 80–94 | reason code, original trace, date of death, original RDFI, information, trace | [`Addenda99`], [`Addenda99Dishonored`], [`Addenda99Contested`] |
//! | 8 batch control | all | counts, entry hash, totals, copies of the header | [`Batch::control`] ([`BatchControl`]) |
//! | 9 file control | all | batch count, block count, counts, entry hash, totals | [`NachaFile::control`] ([`FileControl`]) |
//! | 9 padding | all | 94 `9`s up to a multiple of ten records | computed |
//!
//! The entry hash is the sum of the entries' eight-digit receiving DFI identifications, keeping
//! its rightmost ten digits; the file's is the sum of its batches', likewise.

mod answer_write;
mod codes;
mod error;
mod parse;
mod text;
mod types;
mod views;
mod write;

pub use answer_write::{answer_transaction_code, corrected_data, write_answer};
pub use codes::{
    AccountType, ChangeCode, ReturnCode, ReturnKind, SecCode, ServiceClass, TransactionCode,
};
pub use error::{Field, Location, ParseError, ParseErrorKind, Problem, WriteError};
pub use parse::{ParseOptions, parse, parse_with};
pub use text::{ALLOWED_SYMBOLS, clean_text, is_allowed_char};
pub use types::{
    Addenda, Addenda05, Addenda98, Addenda99, Addenda99Contested, Addenda99Dishonored,
    BLOCKING_FACTOR, Batch, BatchControl, BatchHeader, EntryDetail, FileControl, FileHeader,
    NachaFile, trace_number,
};
pub use views::{Correction, NotificationOfChange, ReturnedEntry};
pub use write::{LineEnding, RECORD_LENGTH, WriteOptions, write};
