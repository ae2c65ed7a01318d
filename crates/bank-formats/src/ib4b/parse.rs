//! The parser of direct credit files and dishonour files.

use chrono::NaiveDate;

use super::codes::{DishonourReason, TransactionCode};
use super::error::{Field, ParseError, ParseErrorKind, Problem};
use super::text::{is_allowed_char, is_digits};
use super::types::{
    ACCOUNT_DIGITS, AMOUNT_DIGITS, COUNT_DIGITS, Control, DETAIL_WIDTH, DIRECT_CREDIT_BATCH_TYPE,
    DISHONOUR_KIND, DirectCreditFile, Dishonour, DishonourFile, DishonourHeader, HASH_DIGITS,
    Header, Ib4bFile, NAME_WIDTH, REASON_TEXT_WIDTH, StatementDetails, TOTAL_DIGITS, Transaction,
};

/// One record: its line number (from 1) and its comma-separated fields.
struct Record<'a> {
    line: usize,
    fields: Vec<&'a str>,
}

impl<'a> Record<'a> {
    fn error(&self, kind: ParseErrorKind) -> ParseError {
        ParseError {
            line: self.line,
            kind,
        }
    }

    fn field_error(&self, field: Field, problem: Problem) -> ParseError {
        self.error(ParseErrorKind::Field(field, problem))
    }

    fn record_type(&self) -> &'a str {
        self.fields.first().copied().unwrap_or("")
    }

    fn expect_fields(&self, expected: usize) -> Result<(), ParseError> {
        if self.fields.len() == expected {
            Ok(())
        } else {
            Err(self.error(ParseErrorKind::FieldCount {
                expected,
                found: self.fields.len(),
            }))
        }
    }

    fn get(&self, index: usize) -> &'a str {
        self.fields.get(index).copied().unwrap_or("")
    }

    fn blank(&self, index: usize, field: Field) -> Result<(), ParseError> {
        if self.get(index).is_empty() {
            Ok(())
        } else {
            Err(self.field_error(field, Problem::NotBlank))
        }
    }

    fn account(&self, index: usize, field: Field) -> Result<String, ParseError> {
        let value = self.get(index);
        if value.len() == ACCOUNT_DIGITS && is_digits(value) {
            Ok(value.to_owned())
        } else {
            Err(self.field_error(
                field,
                Problem::NotDigits {
                    width: ACCOUNT_DIGITS,
                },
            ))
        }
    }

    fn number(&self, index: usize, field: Field, width: usize) -> Result<u64, ParseError> {
        let value = self.get(index);
        if value.len() > width || !is_digits(value) {
            return Err(self.field_error(field, Problem::NotDigits { width }));
        }
        value
            .parse()
            .map_err(|_| self.field_error(field, Problem::Overflow))
    }

    fn amount(&self, index: usize) -> Result<u64, ParseError> {
        let value = self.number(index, Field::Amount, AMOUNT_DIGITS)?;
        if value == 0 {
            return Err(self.field_error(Field::Amount, Problem::Zero));
        }
        Ok(value)
    }

    fn date(&self, index: usize, field: Field) -> Result<NaiveDate, ParseError> {
        let value = self.get(index);
        let bad = || self.field_error(field, Problem::BadDate);
        if value.len() != 6 || !is_digits(value) {
            return Err(bad());
        }
        let part = |range: std::ops::Range<usize>| {
            value
                .get(range)
                .and_then(|digits| digits.parse::<u32>().ok())
        };
        let (Some(yy), Some(mm), Some(dd)) = (part(0..2), part(2..4), part(4..6)) else {
            return Err(bad());
        };
        let year = i32::try_from(2000 + yy).map_err(|_| bad())?;
        NaiveDate::from_ymd_opt(year, mm, dd).ok_or_else(bad)
    }

    fn text(&self, index: usize, field: Field, width: usize) -> Result<String, ParseError> {
        let value = self.get(index);
        if value.len() > width {
            return Err(self.field_error(field, Problem::TooLong { max: width }));
        }
        if !value.chars().all(is_allowed_char) {
            return Err(self.field_error(field, Problem::BadCharacter));
        }
        Ok(value.to_owned())
    }

    fn required_text(
        &self,
        index: usize,
        field: Field,
        width: usize,
    ) -> Result<String, ParseError> {
        let value = self.text(index, field, width)?;
        if value.trim().is_empty() {
            return Err(self.field_error(field, Problem::Empty));
        }
        Ok(value)
    }

    fn transaction_code(&self, index: usize) -> Result<TransactionCode, ParseError> {
        TransactionCode::from_code(self.get(index))
            .ok_or_else(|| self.field_error(Field::TransactionCode, Problem::UnknownValue))
    }
}

/// Splits the bytes into records: printable ASCII lines ending with CRLF or LF (the last one
/// may have no ending); no blank line.
fn records(bytes: &[u8]) -> Result<Vec<Record<'_>>, ParseError> {
    let mut line = 1;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b' '..=b'~' => {}
            b'\n' => line += 1,
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {}
            b'\r' => {
                return Err(ParseError {
                    line,
                    kind: ParseErrorKind::BareCarriageReturn,
                });
            }
            _ => {
                return Err(ParseError {
                    line,
                    kind: ParseErrorKind::BadByte,
                });
            }
        }
    }
    // Only ASCII is left, so this cannot fail.
    let text = std::str::from_utf8(bytes).map_err(|_| ParseError {
        line: 0,
        kind: ParseErrorKind::BadByte,
    })?;
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    if lines.is_empty() {
        return Err(ParseError {
            line: 0,
            kind: ParseErrorKind::Empty,
        });
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let line_text = line.strip_suffix('\r').unwrap_or(line);
            if line_text.is_empty() {
                return Err(ParseError {
                    line: i + 1,
                    kind: ParseErrorKind::BlankLine,
                });
            }
            Ok(Record {
                line: i + 1,
                fields: line_text.split(',').collect(),
            })
        })
        .collect()
}

/// Reads a direct credit file (BNZ's import layout) or payoutd's dishonour file (a header
/// whose second field is `DISHONOUR`).
///
/// Checks: printable ASCII records ending with CRLF or LF; the record types in the order
/// header, transactions (at least one in a direct credit file), control, nothing after; each
/// record's number of fields; every field's type, width and characters (the IB4B set of
/// [`is_allowed_char`]); dates `YYMMDD`; the header's constants (blank auth code, spare fields
/// and indicator, batch type `7`); transaction code `50`; amounts more than zero; and the
/// control record's total amount, count and hash total against the records.
///
/// # Errors
/// The first problem, with its line; never panics.
pub fn parse(bytes: &[u8]) -> Result<Ib4bFile, ParseError> {
    let records = records(bytes)?;
    let Some((first, rest)) = records.split_first() else {
        return Err(ParseError {
            line: 0,
            kind: ParseErrorKind::Empty,
        });
    };
    if first.record_type() != "1" {
        return Err(first.error(ParseErrorKind::UnexpectedRecord));
    }
    if first.get(1) == DISHONOUR_KIND {
        parse_dishonours(first, rest).map(Ib4bFile::Dishonour)
    } else {
        parse_direct_credits(first, rest).map(Ib4bFile::DirectCredit)
    }
}

/// The control record at the end of `rest` (after `body` records), checked against `computed`.
fn check_control(
    rest: &[Record<'_>],
    body: usize,
    last_line: usize,
    computed: Control,
) -> Result<(), ParseError> {
    let Some(control) = rest.get(body) else {
        return Err(ParseError {
            line: last_line,
            kind: ParseErrorKind::MissingControl,
        });
    };
    if control.record_type() != "3" {
        return Err(control.error(ParseErrorKind::UnexpectedRecord));
    }
    control.expect_fields(4)?;
    let total = control.number(1, Field::TotalAmount, TOTAL_DIGITS)?;
    let count = control.number(2, Field::TransactionCount, COUNT_DIGITS)?;
    if control.get(3).len() != HASH_DIGITS {
        return Err(
            control.field_error(Field::HashTotal, Problem::NotDigits { width: HASH_DIGITS })
        );
    }
    let hash = control.number(3, Field::HashTotal, HASH_DIGITS)?;
    if total != computed.total_amount {
        return Err(control.field_error(Field::TotalAmount, Problem::Mismatch));
    }
    if count != computed.count {
        return Err(control.field_error(Field::TransactionCount, Problem::Mismatch));
    }
    if hash != computed.hash_total {
        return Err(control.field_error(Field::HashTotal, Problem::Mismatch));
    }
    if let Some(after) = rest.get(body + 1) {
        return Err(after.error(ParseErrorKind::AfterControl));
    }
    Ok(())
}

fn parse_direct_credits(
    first: &Record<'_>,
    rest: &[Record<'_>],
) -> Result<DirectCreditFile, ParseError> {
    first.expect_fields(9)?;
    first.blank(1, Field::AuthCode)?;
    first.blank(2, Field::Spare)?;
    first.blank(3, Field::Spare)?;
    let originating_account = first.account(4, Field::OriginatingAccount)?;
    if first.get(5) != DIRECT_CREDIT_BATCH_TYPE {
        return Err(first.field_error(Field::BatchType, Problem::UnknownValue));
    }
    let header = Header {
        originating_account,
        due_date: first.date(6, Field::DueDate)?,
        creation_date: first.date(7, Field::CreationDate)?,
    };
    first.blank(8, Field::Indicator)?;
    let mut transactions = Vec::new();
    for record in rest.iter().take_while(|r| r.record_type() == "2") {
        record.expect_fields(13)?;
        transactions.push(Transaction {
            account: record.account(1, Field::Account)?,
            transaction_code: record.transaction_code(2)?,
            amount: record.amount(3)?,
            other_party_name: record.required_text(4, Field::OtherPartyName, NAME_WIDTH)?,
            other_party: StatementDetails {
                reference: record.text(5, Field::OtherPartyReference, DETAIL_WIDTH)?,
                code: record.text(6, Field::OtherPartyCode, DETAIL_WIDTH)?,
                particulars: record.text(8, Field::OtherPartyParticulars, DETAIL_WIDTH)?,
            },
            other_party_alpha_reference: record.text(
                7,
                Field::OtherPartyAlphaReference,
                DETAIL_WIDTH,
            )?,
            your_name: record.required_text(9, Field::YourName, NAME_WIDTH)?,
            yours: StatementDetails {
                code: record.text(10, Field::YourCode, DETAIL_WIDTH)?,
                reference: record.text(11, Field::YourReference, DETAIL_WIDTH)?,
                particulars: record.text(12, Field::YourParticulars, DETAIL_WIDTH)?,
            },
        });
    }
    let file = DirectCreditFile {
        header,
        transactions,
    };
    if file.transactions.is_empty() {
        return Err(ParseError {
            line: first.line + 1,
            kind: ParseErrorKind::NoTransactions,
        });
    }
    let last_line = rest.last().map_or(first.line, |r| r.line);
    check_control(rest, file.transactions.len(), last_line, file.control())?;
    Ok(file)
}

fn parse_dishonours(first: &Record<'_>, rest: &[Record<'_>]) -> Result<DishonourFile, ParseError> {
    first.expect_fields(5)?;
    let header = DishonourHeader {
        originating_account: first.account(2, Field::OriginatingAccount)?,
        due_date: first.date(3, Field::DueDate)?,
        report_date: first.date(4, Field::ReportDate)?,
    };
    let mut dishonours = Vec::new();
    for record in rest.iter().take_while(|r| r.record_type() == "2") {
        record.expect_fields(9)?;
        dishonours.push(Dishonour {
            account: record.account(1, Field::Account)?,
            transaction_code: record.transaction_code(2)?,
            amount: record.amount(3)?,
            other_party_name: record.required_text(4, Field::OtherPartyName, NAME_WIDTH)?,
            your_code: record.text(5, Field::YourCode, DETAIL_WIDTH)?,
            your_reference: record.required_text(6, Field::YourReference, DETAIL_WIDTH)?,
            reason: DishonourReason::from_code(record.get(7))
                .ok_or_else(|| record.field_error(Field::ReasonCode, Problem::UnknownValue))?,
            reason_text: record.required_text(8, Field::ReasonText, REASON_TEXT_WIDTH)?,
        });
    }
    let file = DishonourFile { header, dishonours };
    let last_line = rest.last().map_or(first.line, |r| r.line);
    check_control(rest, file.dishonours.len(), last_line, file.control())?;
    Ok(file)
}
