//! The parser: the bytes of a Standard 005 file (an origination file or the bank's file of
//! returned items) to its typed contents.

use chrono::NaiveDate;

use super::codes::{RecordType, ReturnCode};
use super::error::{Field, ParseError, ParseErrorKind, Problem};
use super::text::is_digits;
use super::types::{Cpa005File, Header, ReturnDetails, Totals, Transaction};
use super::write::{RECORD_LENGTH, SEGMENT_LENGTH};

type Kind = ParseErrorKind;

/// Reads a Standard 005 file.
///
/// Records may be followed by `\r\n` or `\n` (empty lines at the end are skipped) or follow
/// each other with no separator. Every record must be 1464 printable ASCII characters. The
/// parser checks the record order (header `A`, detail records `C`, `D`, `I`, `J`, trailer
/// `Z`, nothing after it), every record's count and its copy of the originator's ID and file
/// creation number, each used segment's fields (unused segments, blank or with a zero
/// transaction type and amount, may only follow the used ones, and a detail record has at least
/// one used segment), a returned item's return reason code, and the trailer's totals and counts
/// against the segments. It does not check filler fields.
///
/// # Errors
///
/// The first problem found, with the record's number.
pub fn parse(bytes: &[u8]) -> Result<Cpa005File, ParseError> {
    let records = split(bytes)?;
    let mut records = records.into_iter().enumerate().map(|(i, r)| (i + 1, r));
    let Some((_, first)) = records.next() else {
        return Err(ParseError {
            record: 1,
            kind: Kind::Empty,
        });
    };
    let at = |record: usize| move |kind: Kind| ParseError { record, kind };
    let header = header(first).map_err(at(1))?;
    let mut transactions = Vec::new();
    let mut last = 1;
    for (number, record) in records.by_ref() {
        last = number;
        let found = record_type(record).map_err(at(number))?;
        expect_count_and_origin(record, number, &header).map_err(at(number))?;
        match found {
            'Z' => {
                trailer(record, &transactions).map_err(at(number))?;
                if let Some((after, record)) = records.next() {
                    return Err(ParseError {
                        record: after,
                        kind: Kind::UnexpectedRecord {
                            found: record_type(record).unwrap_or('?'),
                            expected: "nothing after the trailer",
                        },
                    });
                }
                return Ok(Cpa005File {
                    header,
                    transactions,
                });
            }
            'A' => {
                return Err(ParseError {
                    record: number,
                    kind: Kind::UnexpectedRecord {
                        found,
                        expected: "a detail record (C, D, I, J) or the trailer (Z)",
                    },
                });
            }
            other => {
                let kind = RecordType::from_char(other)
                    .ok_or(Kind::UnknownRecordType { found: other })
                    .map_err(at(number))?;
                detail(record, kind, &mut transactions).map_err(at(number))?;
            }
        }
    }
    Err(ParseError {
        record: last.saturating_add(1),
        kind: Kind::Truncated,
    })
}

/// The records of `bytes`, each checked to be 1464 printable ASCII characters.
fn split(bytes: &[u8]) -> Result<Vec<&str>, ParseError> {
    let mut lines: Vec<&[u8]> = if bytes.contains(&b'\n') {
        bytes
            .split(|b| *b == b'\n')
            .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
            .collect()
    } else {
        bytes.chunks(RECORD_LENGTH).collect()
    };
    while lines.last().is_some_and(|line| line.is_empty()) {
        lines.pop();
    }
    if lines.is_empty() {
        return Err(ParseError {
            record: 1,
            kind: Kind::Empty,
        });
    }
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let at = |kind| ParseError {
                record: i + 1,
                kind,
            };
            if let Some(column) = line.iter().position(|b| !(0x20..=0x7E).contains(b)) {
                let byte = line.get(column).copied().unwrap_or(0);
                return Err(at(Kind::InvalidByte {
                    column: column + 1,
                    byte,
                }));
            }
            if line.len() != RECORD_LENGTH {
                return Err(at(Kind::RecordLength { found: line.len() }));
            }
            std::str::from_utf8(line).map_err(|_| at(Kind::InvalidByte { column: 1, byte: 0 }))
        })
        .collect()
}

/// Positions `from` to `to` (from 1, inclusive) of `text`; empty when out of range.
fn pos(text: &str, from: usize, to: usize) -> &str {
    text.get(from.saturating_sub(1)..to).unwrap_or_default()
}

fn record_type(record: &str) -> Result<char, Kind> {
    let found = record.chars().next().unwrap_or(' ');
    if "ACDIJZ".contains(found) {
        Ok(found)
    } else {
        Err(Kind::UnknownRecordType { found })
    }
}

fn number(value: &str, field: Field) -> Result<u64, Kind> {
    if is_digits(value) {
        value.parse().map_err(|_| {
            Kind::field(
                field,
                Problem::NotDigits {
                    digits: value.len(),
                },
            )
        })
    } else {
        Err(Kind::field(
            field,
            Problem::NotDigits {
                digits: value.len(),
            },
        ))
    }
}

/// A date `0YYDDD` of the years 2000–2099.
pub(super) fn julian(value: &str) -> Option<NaiveDate> {
    if value.len() != 6 || !is_digits(value) || !value.starts_with('0') {
        return None;
    }
    let year: i32 = value.get(1..3)?.parse().ok()?;
    let day: u32 = value.get(3..6)?.parse().ok()?;
    NaiveDate::from_yo_opt(2000 + year, day)
}

fn date(value: &str, field: Field) -> Result<NaiveDate, Kind> {
    julian(value).ok_or(Kind::field(field, Problem::Date))
}

fn header(record: &str) -> Result<Header, Kind> {
    let found = record_type(record)?;
    if found != 'A' {
        return Err(Kind::UnexpectedRecord {
            found,
            expected: "the header (A)",
        });
    }
    let count = number(pos(record, 2, 10), Field::RecordCount)?;
    if count != 1 {
        return Err(Kind::ControlTotal {
            field: Field::RecordCount,
            found: count,
            computed: 1,
        });
    }
    let originator_id = pos(record, 11, 20).trim_end();
    if originator_id.is_empty() {
        return Err(Kind::field(Field::OriginatorId, Problem::Required));
    }
    let file_creation_number = number(pos(record, 21, 24), Field::FileCreationNumber)?;
    let file_creation_number = u16::try_from(file_creation_number)
        .ok()
        .filter(|n| *n != 0)
        .ok_or(Kind::field(
            Field::FileCreationNumber,
            Problem::Expected {
                expected: "0001 to 9999",
            },
        ))?;
    let creation_date = date(pos(record, 25, 30), Field::CreationDate)?;
    let data_centre = pos(record, 31, 35);
    if data_centre.len() != 5 || !is_digits(data_centre) {
        return Err(Kind::field(
            Field::DestinationDataCentre,
            Problem::NotDigits { digits: 5 },
        ));
    }
    let currency = pos(record, 56, 58);
    if !matches!(currency, "CAD" | "USD") {
        return Err(Kind::field(
            Field::CurrencyCode,
            Problem::Expected {
                expected: "CAD or USD",
            },
        ));
    }
    Ok(Header {
        originator_id: originator_id.to_owned(),
        file_creation_number,
        creation_date,
        destination_data_centre: data_centre.to_owned(),
        currency: currency.to_owned(),
    })
}

/// The record count (positions 2–10) and the originator's ID and file creation number
/// (11–24) of a record after the header.
fn expect_count_and_origin(record: &str, expected: usize, header: &Header) -> Result<(), Kind> {
    let count = number(pos(record, 2, 10), Field::RecordCount)?;
    let expected = u64::try_from(expected).unwrap_or(u64::MAX);
    if count != expected {
        return Err(Kind::ControlTotal {
            field: Field::RecordCount,
            found: count,
            computed: expected,
        });
    }
    if pos(record, 11, 20).trim_end() != header.originator_id {
        return Err(Kind::field(
            Field::OriginatorId,
            Problem::Expected {
                expected: "the header's",
            },
        ));
    }
    let number = number(pos(record, 21, 24), Field::FileCreationNumber)?;
    if number != u64::from(header.file_creation_number) {
        return Err(Kind::field(
            Field::FileCreationNumber,
            Problem::Expected {
                expected: "the header's",
            },
        ));
    }
    Ok(())
}

/// Whether a segment is unused: blank, or with a zero transaction type and amount.
fn is_unused(segment: &str) -> bool {
    segment.bytes().all(|b| b == b' ') || pos(segment, 1, 13).bytes().all(|b| b == b'0')
}

fn detail(record: &str, kind: RecordType, out: &mut Vec<Transaction>) -> Result<(), Kind> {
    let mut used = 0;
    let mut ended = false;
    for s in 0..6 {
        let start = 25 + s * SEGMENT_LENGTH;
        let text = pos(record, start, start + SEGMENT_LENGTH - 1);
        if is_unused(text) {
            ended = true;
            continue;
        }
        let in_segment = |kind: Kind| match kind {
            Kind::Field { field, problem, .. } => Kind::Field {
                segment: Some(s + 1),
                field,
                problem,
            },
            other => other,
        };
        if ended {
            return Err(in_segment(Kind::field(
                Field::TransactionType,
                Problem::Expected {
                    expected: "an unused segment after an unused one",
                },
            )));
        }
        out.push(segment(text, kind).map_err(in_segment)?);
        used += 1;
    }
    if used == 0 {
        return Err(Kind::Field {
            segment: Some(1),
            field: Field::TransactionType,
            problem: Problem::Required,
        });
    }
    Ok(())
}

fn institution(value: &str, field: Field) -> Result<String, Kind> {
    if value.len() == 9 && is_digits(value) && value.starts_with('0') {
        Ok(value.to_owned())
    } else {
        Err(Kind::field(field, Problem::Institution))
    }
}

/// An account number: digits, left-justified, blank-filled.
fn account(value: &str, field: Field, required: bool) -> Result<String, Kind> {
    let digits = value.trim_end();
    if digits.is_empty() && !required || is_digits(digits) {
        Ok(digits.to_owned())
    } else {
        Err(Kind::field(
            field,
            Problem::Expected {
                expected: "1 to 12 digits, left-justified",
            },
        ))
    }
}

fn digits(value: &str, field: Field) -> Result<String, Kind> {
    if is_digits(value) {
        Ok(value.to_owned())
    } else {
        Err(Kind::field(
            field,
            Problem::NotDigits {
                digits: value.len(),
            },
        ))
    }
}

fn segment(s: &str, kind: RecordType) -> Result<Transaction, Kind> {
    let transaction_type = number(pos(s, 1, 3), Field::TransactionType)?;
    let transaction_type = u16::try_from(transaction_type)
        .ok()
        .filter(|t| *t != 0)
        .ok_or(Kind::field(
            Field::TransactionType,
            Problem::Expected {
                expected: "1 to 999",
            },
        ))?;
    let amount = number(pos(s, 4, 13), Field::Amount)?;
    if amount == 0 {
        return Err(Kind::field(Field::Amount, Problem::ZeroAmount));
    }
    let returned = if kind.is_return() {
        let code = pos(s, 230, 232);
        let reason = code
            .parse::<u16>()
            .ok()
            .filter(|_| is_digits(code))
            .and_then(ReturnCode::new)
            .ok_or(Kind::field(
                Field::InvalidDataElementId,
                Problem::Expected {
                    expected: "a return reason code 900-999 in its first three positions",
                },
            ))?;
        Some(ReturnDetails { reason })
    } else {
        None
    };
    Ok(Transaction {
        record_type: kind,
        transaction_type,
        amount,
        due_date: date(pos(s, 14, 19), Field::DueDate)?,
        institution_id: institution(pos(s, 20, 28), Field::InstitutionId)?,
        account_number: account(pos(s, 29, 40), Field::AccountNumber, true)?,
        item_trace_number: digits(pos(s, 41, 62), Field::ItemTraceNumber)?,
        stored_transaction_type: digits(pos(s, 63, 65), Field::StoredTransactionType)?,
        originator_short_name: pos(s, 66, 80).trim_end().to_owned(),
        payee_name: pos(s, 81, 110).trim_end().to_owned(),
        originator_long_name: pos(s, 111, 140).trim_end().to_owned(),
        direct_clearer_user_id: pos(s, 141, 150).trim_end().to_owned(),
        cross_reference: pos(s, 151, 169).trim_end().to_owned(),
        return_institution_id: institution(pos(s, 170, 178), Field::ReturnInstitutionId)?,
        return_account_number: account(pos(s, 179, 190), Field::ReturnAccountNumber, false)?,
        sundry_information: pos(s, 191, 205).trim_end().to_owned(),
        returned,
    })
}

fn trailer(record: &str, transactions: &[Transaction]) -> Result<(), Kind> {
    let computed = Totals::of(transactions);
    let Totals {
        debit_value,
        debit_count,
        credit_value,
        credit_count,
    } = computed;
    for (from, to, field, expected) in [
        (25, 38, Field::TotalDebitValue, debit_value),
        (39, 46, Field::TotalDebitCount, debit_count),
        (47, 60, Field::TotalCreditValue, credit_value),
        (61, 68, Field::TotalCreditCount, credit_count),
        (69, 82, Field::ErrorCorrectionTotals, 0),
        (83, 90, Field::ErrorCorrectionTotals, 0),
        (91, 104, Field::ErrorCorrectionTotals, 0),
        (105, 112, Field::ErrorCorrectionTotals, 0),
    ] {
        let found = number(pos(record, from, to), field)?;
        if found != expected {
            return Err(Kind::ControlTotal {
                field,
                found,
                computed: expected,
            });
        }
    }
    Ok(())
}
