//! The writers: a direct credit file in BNZ's import layout, and payoutd's dishonour file.

use chrono::{Datelike, NaiveDate};

use super::error::{Field, Location, Problem, WriteError};
use super::text::{clean_text, is_digits};
use super::types::{
    ACCOUNT_DIGITS, AMOUNT_DIGITS, COUNT_DIGITS, Control, DETAIL_WIDTH, DIRECT_CREDIT_BATCH_TYPE,
    DISHONOUR_KIND, DirectCreditFile, DishonourFile, HASH_DIGITS, NAME_WIDTH, REASON_TEXT_WIDTH,
    TOTAL_DIGITS,
};

/// What ends every record, the last one too.
pub const RECORD_END: &str = "\r\n";

fn err(location: Location, field: Field, problem: Problem) -> WriteError {
    WriteError {
        location,
        field,
        problem,
    }
}

/// An account number: exactly 16 digits, never altered.
fn account(location: Location, field: Field, value: &str) -> Result<String, WriteError> {
    if value.len() == ACCOUNT_DIGITS && is_digits(value) {
        Ok(value.to_owned())
    } else {
        Err(err(
            location,
            field,
            Problem::NotDigits {
                width: ACCOUNT_DIGITS,
            },
        ))
    }
}

/// A `YYMMDD` date of the years 2000–2099.
fn yymmdd(location: Location, field: Field, date: NaiveDate) -> Result<String, WriteError> {
    if (2000..=2099).contains(&date.year()) {
        Ok(date.format("%y%m%d").to_string())
    } else {
        Err(err(location, field, Problem::BadDate))
    }
}

/// A number of at most `width` digits, written without padding.
fn number(
    location: Location,
    field: Field,
    value: u64,
    width: usize,
) -> Result<String, WriteError> {
    let text = value.to_string();
    if text.len() > width {
        return Err(err(location, field, Problem::Overflow));
    }
    Ok(text)
}

/// A positive amount of at most [`AMOUNT_DIGITS`] digits.
fn amount(location: Location, value: u64) -> Result<String, WriteError> {
    if value == 0 {
        return Err(err(location, Field::Amount, Problem::Zero));
    }
    number(location, Field::Amount, value, AMOUNT_DIGITS)
}

/// A required free-text field, cleaned.
fn required(
    location: Location,
    field: Field,
    value: &str,
    width: usize,
) -> Result<String, WriteError> {
    let cleaned = clean_text(value, width);
    if cleaned.is_empty() {
        return Err(err(location, field, Problem::Empty));
    }
    Ok(cleaned)
}

fn control_record(control: Control) -> Result<String, WriteError> {
    let at = Location::Control;
    Ok(format!(
        "3,{},{},{:0width$}",
        number(at, Field::TotalAmount, control.total_amount, TOTAL_DIGITS)?,
        number(at, Field::TransactionCount, control.count, COUNT_DIGITS)?,
        control.hash_total,
        width = HASH_DIGITS
    ))
}

fn join(records: &[String]) -> Vec<u8> {
    let mut out = String::new();
    for record in records {
        out.push_str(record);
        out.push_str(RECORD_END);
    }
    out.into_bytes()
}

/// Writes a direct credit file: the header, one record per transaction, and the control
/// record computed from them (total amount, count, hash total). Account numbers must be 16
/// digits; amounts more than zero and at most 10 digits; free text is cleaned with
/// [`clean_text`] and cut to its field; names are required. Records end with CRLF.
///
/// # Errors
/// The first field that cannot be written, by record and field; a file with no transaction
/// is refused (the count `Zero`).
pub fn write(file: &DirectCreditFile) -> Result<Vec<u8>, WriteError> {
    let at = Location::Header;
    let header = &file.header;
    let mut records = vec![format!(
        "1,,,,{},{},{},{},",
        account(at, Field::OriginatingAccount, &header.originating_account)?,
        DIRECT_CREDIT_BATCH_TYPE,
        yymmdd(at, Field::DueDate, header.due_date)?,
        yymmdd(at, Field::CreationDate, header.creation_date)?,
    )];
    if file.transactions.is_empty() {
        return Err(err(
            Location::Control,
            Field::TransactionCount,
            Problem::Zero,
        ));
    }
    for (i, t) in file.transactions.iter().enumerate() {
        let at = Location::Transaction(i);
        records.push(format!(
            "2,{},{},{},{},{},{},{},{},{},{},{},{}",
            account(at, Field::Account, &t.account)?,
            t.transaction_code.code(),
            amount(at, t.amount)?,
            required(at, Field::OtherPartyName, &t.other_party_name, NAME_WIDTH)?,
            clean_text(&t.other_party.reference, DETAIL_WIDTH),
            clean_text(&t.other_party.code, DETAIL_WIDTH),
            clean_text(&t.other_party_alpha_reference, DETAIL_WIDTH),
            clean_text(&t.other_party.particulars, DETAIL_WIDTH),
            required(at, Field::YourName, &t.your_name, NAME_WIDTH)?,
            clean_text(&t.yours.code, DETAIL_WIDTH),
            clean_text(&t.yours.reference, DETAIL_WIDTH),
            clean_text(&t.yours.particulars, DETAIL_WIDTH),
        ));
    }
    records.push(control_record(file.control())?);
    Ok(join(&records))
}

/// Writes payoutd's dishonour file: the header, one record per dishonour, and the control
/// record computed from them. The same field rules as [`write()`]; the reason text is cleaned
/// and cut to 40; a file with no dishonours is allowed (a report that nothing came back).
///
/// # Errors
/// The first field that cannot be written, by record and field.
pub fn write_dishonours(file: &DishonourFile) -> Result<Vec<u8>, WriteError> {
    let at = Location::Header;
    let header = &file.header;
    let mut records = vec![format!(
        "1,{},{},{},{}",
        DISHONOUR_KIND,
        account(at, Field::OriginatingAccount, &header.originating_account)?,
        yymmdd(at, Field::DueDate, header.due_date)?,
        yymmdd(at, Field::ReportDate, header.report_date)?,
    )];
    for (i, d) in file.dishonours.iter().enumerate() {
        let at = Location::Transaction(i);
        records.push(format!(
            "2,{},{},{},{},{},{},{},{}",
            account(at, Field::Account, &d.account)?,
            d.transaction_code.code(),
            amount(at, d.amount)?,
            required(at, Field::OtherPartyName, &d.other_party_name, NAME_WIDTH)?,
            clean_text(&d.your_code, DETAIL_WIDTH),
            required(at, Field::YourReference, &d.your_reference, DETAIL_WIDTH)?,
            d.reason.code(),
            required(at, Field::ReasonText, &d.reason_text, REASON_TEXT_WIDTH)?,
        ));
    }
    records.push(control_record(file.control())?);
    Ok(join(&records))
}
