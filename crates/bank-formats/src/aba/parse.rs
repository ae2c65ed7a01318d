//! The parser: bytes of an ABA file (originated or returned) to typed contents.

use chrono::NaiveDate;

use super::codes::{Indicator, ReturnCode, TransactionCode};
use super::error::{Field, ParseError, ParseErrorKind, Problem};
use super::types::{AbaFile, DescriptiveRecord, DetailKind, DetailRecord};
use super::write::RECORD_LENGTH;

type Result<T> = std::result::Result<T, ParseError>;

/// Reads an ABA file: a descriptive record (type 0), detail records (type 1 payments or type 2
/// returned payments, in any mix), and a file total record (type 7) whose totals and count
/// must be those of the detail records.
///
/// Records are separated by CRLF or LF (a last separator and empty lines after the last
/// record are allowed), or not separated at all; each must be exactly 120 printable ASCII
/// characters. Every field is checked against its layout (see the
/// [module documentation](super)); free text is kept as written, trailing blanks removed.
///
/// # Errors
///
/// The first problem found, with its line.
pub fn parse(bytes: &[u8]) -> Result<AbaFile> {
    let lines = split_records(bytes)?;
    let mut records = lines.iter().enumerate().map(|(i, r)| (i + 1, *r));
    let Some((line, first)) = records.next() else {
        return Err(error(1, ParseErrorKind::Empty));
    };
    if !first.starts_with('0') {
        return Err(unexpected(line, first, "0 (descriptive record)"));
    }
    let descriptive = descriptive(first).map_err(|kind| error(line, kind))?;
    let mut details = Vec::new();
    for (line, record) in records {
        match record.as_bytes().first() {
            Some(b'1' | b'2') => {
                details.push(detail(record).map_err(|kind| error(line, kind))?);
            }
            Some(b'7') => {
                let file = AbaFile {
                    descriptive,
                    details,
                };
                check_total(&file, record).map_err(|kind| error(line, kind))?;
                if let Some(&extra) = lines.get(line) {
                    return Err(unexpected(line + 1, extra, "the end of the file"));
                }
                return Ok(file);
            }
            _ => return Err(unexpected(line, record, "1, 2 (detail) or 7 (file total)")),
        }
    }
    Err(error(lines.len() + 1, ParseErrorKind::Truncated))
}

const fn error(line: usize, kind: ParseErrorKind) -> ParseError {
    ParseError { line, kind }
}

fn unexpected(line: usize, record: &str, expected: &'static str) -> ParseError {
    error(
        line,
        ParseErrorKind::UnexpectedRecord {
            found: record.chars().next().unwrap_or(' '),
            expected,
        },
    )
}

/// The records of `bytes`, each checked to be 120 printable ASCII characters.
fn split_records(bytes: &[u8]) -> Result<Vec<&str>> {
    if bytes.is_empty() {
        return Err(error(1, ParseErrorKind::Empty));
    }
    let mut records: Vec<&[u8]> = if bytes.contains(&b'\n') {
        bytes
            .split(|&b| b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .collect()
    } else if bytes.len().is_multiple_of(RECORD_LENGTH) {
        bytes.chunks(RECORD_LENGTH).collect()
    } else {
        vec![bytes]
    };
    while records.last().is_some_and(|r| r.is_empty()) {
        records.pop();
    }
    if records.is_empty() {
        return Err(error(1, ParseErrorKind::Empty));
    }
    let mut out = Vec::with_capacity(records.len());
    for (i, record) in records.into_iter().enumerate() {
        if let Some(column) = record.iter().position(|b| !(0x20..=0x7E).contains(b)) {
            return Err(error(
                i + 1,
                ParseErrorKind::InvalidByte { column: column + 1 },
            ));
        }
        if record.len() != RECORD_LENGTH {
            return Err(error(
                i + 1,
                ParseErrorKind::RecordLength {
                    found: record.len(),
                },
            ));
        }
        // Printable ASCII is UTF-8.
        let text = std::str::from_utf8(record)
            .map_err(|_| error(i + 1, ParseErrorKind::InvalidByte { column: 1 }))?;
        out.push(text);
    }
    Ok(out)
}

type FieldResult<T> = std::result::Result<T, ParseErrorKind>;

const fn field_error(field: Field, problem: Problem) -> ParseErrorKind {
    ParseErrorKind::Field { field, problem }
}

/// Positions `from..=to` (from 1) of a 120-character ASCII record.
fn at(record: &str, from: usize, to: usize) -> &str {
    record.get(from - 1..to).unwrap_or_default()
}

fn blank(record: &str, from: usize, to: usize) -> FieldResult<()> {
    if at(record, from, to).bytes().all(|b| b == b' ') {
        Ok(())
    } else {
        Err(field_error(
            Field::Blank,
            Problem::Format { expected: "blank" },
        ))
    }
}

fn number(record: &str, from: usize, to: usize, field: Field) -> FieldResult<u64> {
    let value = at(record, from, to);
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(field_error(
            field,
            Problem::NotDigits {
                digits: to + 1 - from,
            },
        ));
    }
    value.parse().map_err(|_| {
        field_error(
            field,
            Problem::NotDigits {
                digits: to + 1 - from,
            },
        )
    })
}

fn text(record: &str, from: usize, to: usize) -> String {
    at(record, from, to).trim_end().to_owned()
}

fn bsb(record: &str, from: usize, field: Field) -> FieldResult<String> {
    let value = at(record, from, from + 6).as_bytes();
    let ok = value.len() == 7
        && value.iter().enumerate().all(|(i, b)| {
            if i == 3 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !ok {
        return Err(field_error(
            field,
            Problem::Format {
                expected: "a BSB written xxx-xxx",
            },
        ));
    }
    let value = at(record, from, from + 6);
    Ok(format!("{}{}", at(value, 1, 3), at(value, 5, 7)))
}

fn account(record: &str, from: usize, field: Field) -> FieldResult<String> {
    let value = at(record, from, from + 8).trim();
    if value.is_empty() {
        return Err(field_error(field, Problem::Required));
    }
    if !value.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
        return Err(field_error(
            field,
            Problem::Format {
                expected: "right-justified digits and hyphens",
            },
        ));
    }
    Ok(value.to_owned())
}

fn ddmmyy(record: &str, from: usize, field: Field) -> FieldResult<NaiveDate> {
    let value = at(record, from, from + 5);
    if value.len() != 6 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(field_error(field, Problem::InvalidDate));
    }
    NaiveDate::parse_from_str(
        &format!("{}20{}", at(value, 1, 4), at(value, 5, 6)),
        "%d%m%Y",
    )
    .map_err(|_| field_error(field, Problem::InvalidDate))
}

fn descriptive(record: &str) -> FieldResult<DescriptiveRecord> {
    blank(record, 2, 18)?;
    let reel = number(record, 19, 20, Field::ReelSequence)?;
    let mnemonic = at(record, 21, 23);
    if !mnemonic.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(field_error(
            Field::BankMnemonic,
            Problem::Format {
                expected: "three upper-case letters",
            },
        ));
    }
    blank(record, 24, 30)?;
    let apca_user_id = at(record, 57, 62);
    number(record, 57, 62, Field::ApcaUserId)?;
    let processing_date = ddmmyy(record, 75, Field::ProcessingDate)?;
    blank(record, 81, 120)?;
    Ok(DescriptiveRecord {
        reel_sequence: u8::try_from(reel).unwrap_or(0),
        bank_mnemonic: mnemonic.to_owned(),
        user_name: text(record, 31, 56),
        apca_user_id: apca_user_id.to_owned(),
        description: text(record, 63, 74),
        processing_date,
    })
}

fn detail(record: &str) -> FieldResult<DetailRecord> {
    let bsb_value = bsb(record, 2, Field::Bsb)?;
    let account_number = account(record, 9, Field::AccountNumber)?;
    let position_18 = record.as_bytes().get(17).copied().unwrap_or(b' ');
    let code = number(record, 19, 20, Field::TransactionCode)?;
    let transaction_code = u8::try_from(code)
        .ok()
        .and_then(TransactionCode::from_code)
        .ok_or(field_error(Field::TransactionCode, Problem::Unsupported))?;
    let amount = number(record, 21, 30, Field::Amount)?;
    let trace_bsb = bsb(record, 81, Field::TraceBsb)?;
    let trace_account = account(record, 88, Field::TraceAccount)?;
    let kind = if record.starts_with('1') {
        let indicator = Indicator::from_char(char::from(position_18))
            .ok_or(field_error(Field::Indicator, Problem::Unsupported))?;
        DetailKind::Payment {
            indicator,
            withholding_tax: number(record, 113, 120, Field::WithholdingTax)?,
        }
    } else {
        let return_code = char::from(position_18)
            .to_digit(10)
            .and_then(|d| u8::try_from(d).ok())
            .and_then(ReturnCode::from_code)
            .ok_or(field_error(
                Field::ReturnCode,
                Problem::NotDigits { digits: 1 },
            ))?;
        let day = number(record, 113, 114, Field::OriginalProcessingDay)?;
        if !(1..=31).contains(&day) {
            return Err(field_error(
                Field::OriginalProcessingDay,
                Problem::Format {
                    expected: "a day of the month, 1 to 31",
                },
            ));
        }
        number(record, 115, 120, Field::OriginalUserId)?;
        DetailKind::Returned {
            return_code,
            original_processing_day: u8::try_from(day).unwrap_or(0),
            original_user_id: at(record, 115, 120).to_owned(),
        }
    };
    Ok(DetailRecord {
        bsb: bsb_value,
        account_number,
        transaction_code,
        amount,
        account_title: text(record, 31, 62),
        lodgement_reference: text(record, 63, 80),
        trace_bsb,
        trace_account,
        remitter_name: text(record, 97, 112),
        kind,
    })
}

fn check_total(file: &AbaFile, record: &str) -> FieldResult<()> {
    if at(record, 2, 8) != "999-999" {
        return Err(field_error(
            Field::TotalFiller,
            Problem::Format {
                expected: "999-999",
            },
        ));
    }
    blank(record, 9, 20)?;
    blank(record, 51, 74)?;
    blank(record, 81, 120)?;
    let computed = file.total();
    let fields = [
        (Field::NetTotal, 21, 30, computed.net_total),
        (Field::CreditTotal, 31, 40, computed.credit_total),
        (Field::DebitTotal, 41, 50, computed.debit_total),
        (Field::RecordCount, 75, 80, computed.record_count),
    ];
    for (field, from, to, computed) in fields {
        let found = number(record, from, to, field)?;
        if found != computed {
            return Err(ParseErrorKind::Total {
                field,
                found,
                computed,
            });
        }
    }
    Ok(())
}
