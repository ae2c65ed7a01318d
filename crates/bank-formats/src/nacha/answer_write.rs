//! Return and notification-of-change files as a receiving bank writes them: [`write_answer`]
//! lays out a [`NachaFile`] of returned (x1, x6) and notified entries with their Addenda99 or
//! Addenda98, with the control records, padding and field rules of [`write()`](super::write());
//! [`answer_transaction_code`] and [`corrected_data`] give the codes and the corrected data
//! such a file carries. What to return, and the answer file's other fields, are the bank's
//! business (the bank simulator's `bank_simulator::nacha`).

use super::codes::{ChangeCode, ReturnKind, SecCode, TransactionCode};
use super::error::{Field, Location, Problem, WriteError};
use super::types::{Addenda, Addenda98, Addenda99, BatchHeader, EntryDetail, NachaFile};
use super::views::Correction;
use super::write::{
    LineEnding, Record, Records, at_most, batch_control, batch_header_record, digits, file_control,
    file_header, identifier, routing_number, text, yymmdd,
};

/// The transaction code of the return or notification of an entry with code `original`:
/// 21 for checking credits (22, 23, 24), 26 for checking debits (27, 28, 29), 31 and 36 for
/// savings. `None` for codes that are themselves returns or notifications.
#[must_use]
pub fn answer_transaction_code(original: TransactionCode) -> Option<TransactionCode> {
    if original.is_return_or_notification() {
        return None;
    }
    let base = original.code() - original.code() % 10;
    let code = if original.is_credit() {
        base + 1
    } else {
        base + 6
    };
    TransactionCode::from_code(code)
}

/// Lays out `correction` as the corrected data of `code` (NACHA's positions within the 29
/// characters): C01 account; C02 routing; C03 routing, three blanks, account; C04 name; C05
/// transaction code; C06 account on 17, five blanks, transaction code; C07 routing, account on
/// 17, transaction code; C09 individual identification. `None` when a part the code needs is
/// missing, or for other codes. The reverse of [`Correction::read`].
#[must_use]
pub fn corrected_data(code: ChangeCode, correction: &Correction) -> Option<String> {
    let routing = || correction.routing_number.as_deref();
    let account = || correction.account_number.as_deref();
    let tx = || {
        correction
            .transaction_code
            .map(|t| format!("{:02}", t.code()))
    };
    Some(match code.number() {
        1 => account()?.to_owned(),
        2 => routing()?.to_owned(),
        3 => format!("{}   {}", routing()?, account()?),
        4 => correction.individual_name.clone()?,
        5 => tx()?,
        6 => format!("{:<17}     {}", account()?, tx()?),
        7 => format!("{}{:<17}{}", routing()?, account()?, tx()?),
        9 => correction.individual_id.clone()?,
        _ => return None,
    })
}

/// Writes a return or notification-of-change file: entries with transaction codes x1 and x6,
/// each with exactly one Addenda99 (plain return layout) or Addenda98, in batches of any
/// service class whose entries it allows (SEC `COR` batches for the notifications, which must
/// have zero amounts). Controls and padding are computed as [`write()`](super::write()) does;
/// the file header, text and identifier fields follow its rules.
///
/// # Errors
///
/// The first field that cannot be written, by location in `file` and NACHA field name; a file
/// without a batch or a batch without an entry.
pub fn write_answer(file: &NachaFile, line_ending: LineEnding) -> Result<Vec<u8>, WriteError> {
    if file.batches.is_empty() {
        return Err(WriteError::NoBatches);
    }
    let mut out = Records::for_file(file, line_ending);
    out.push(file_header(&file.header)?);
    for (b, batch) in file.batches.iter().enumerate() {
        if batch.entries.is_empty() {
            return Err(WriteError::EmptyBatch { batch: b });
        }
        out.push(answer_batch_header(b, &batch.header)?);
        let mut previous: Option<&str> = None;
        for (e, entry) in batch.entries.iter().enumerate() {
            let at = Location::Entry { batch: b, entry: e };
            if previous.is_some_and(|p| entry.trace_number.as_str() <= p) {
                return Err(WriteError::field(
                    at,
                    Field::TraceNumber,
                    Problem::NotAscending,
                ));
            }
            previous = Some(&entry.trace_number);
            answer_entry(at, &batch.header, entry, &mut out)?;
        }
        out.push(batch_control(b, batch)?);
    }
    out.push(file_control(file)?);
    Ok(out.finish())
}

fn answer_batch_header(b: usize, header: &BatchHeader) -> Result<String, WriteError> {
    let at = Location::BatchHeader { batch: b };
    if matches!(header.sec_code, SecCode::Pos) {
        return Err(WriteError::field(
            at,
            Field::StandardEntryClassCode,
            Problem::NotWritable {
                found: header.sec_code.to_string(),
            },
        ));
    }
    batch_header_record(b, header)
}

fn answer_entry(
    at: Location,
    header: &BatchHeader,
    entry: &EntryDetail,
    out: &mut Records,
) -> Result<(), WriteError> {
    let code = entry.transaction_code;
    if !code.is_return_or_notification() {
        return Err(WriteError::field(
            at,
            Field::TransactionCode,
            Problem::NotWritable {
                found: code.to_string(),
            },
        ));
    }
    if !header.service_class.allows(code) {
        return Err(WriteError::field(
            at,
            Field::TransactionCode,
            Problem::ServiceClassMismatch {
                service_class: header.service_class.code(),
            },
        ));
    }
    routing_number(
        at,
        Field::ReceivingDfi,
        Field::CheckDigit,
        &entry.receiving_dfi,
    )?;
    identifier(at, Field::DfiAccountNumber, &entry.account_number, 17, true)?;
    let amount = at_most(at, Field::Amount, entry.amount, 9_999_999_999)?;
    identifier(
        at,
        Field::IndividualIdentificationNumber,
        &entry.individual_id,
        15,
        false,
    )?;
    let name = text(at, Field::IndividualName, &entry.individual_name, 22, true)?;
    let discretionary = text(
        at,
        Field::DiscretionaryData,
        &entry.discretionary_data,
        2,
        false,
    )?;
    digits(at, Field::TraceNumber, &entry.trace_number, 15)?;
    if !entry
        .trace_number
        .starts_with(header.originating_dfi.as_str())
    {
        return Err(WriteError::field(
            at,
            Field::TraceNumber,
            Problem::OdfiMismatch,
        ));
    }
    let [addenda] = entry.addenda.as_slice() else {
        return Err(WriteError::field(
            at,
            Field::AddendaRecordIndicator,
            Problem::AddendaIndicator {
                found: if entry.addenda.is_empty() { '0' } else { '1' },
                addenda: entry.addenda.len(),
            },
        ));
    };
    let at_addenda = match at {
        Location::Entry { batch, entry } => Location::Addenda {
            batch,
            entry,
            addenda: 0,
        },
        other => other,
    };
    let addenda = match (header.sec_code, addenda) {
        (SecCode::Cor, Addenda::Notification(a)) => {
            if amount != 0 {
                return Err(WriteError::field(at, Field::Amount, Problem::PrenoteAmount));
            }
            addenda_98(at_addenda, a)?
        }
        (sec, Addenda::Return(a)) if sec != SecCode::Cor => addenda_99(at_addenda, a)?,
        (_, other) => {
            let found = match other {
                Addenda::PaymentRelated(_) => "addenda 05",
                Addenda::Notification(_) => "addenda 98 outside a COR batch",
                Addenda::Return(_) => "addenda 99 in a COR batch",
                Addenda::DishonoredReturn(_) | Addenda::ContestedReturn(_) => {
                    "dishonored or contested addenda 99"
                }
            };
            return Err(WriteError::field(
                at_addenda,
                Field::AddendaTypeCode,
                Problem::NotWritable {
                    found: found.to_owned(),
                },
            ));
        }
    };
    let rdfi = entry.receiving_dfi.get(..8).unwrap_or_default();
    let check = entry.receiving_dfi.get(8..).unwrap_or_default();
    out.push(
        Record::new('6')
            .number(u64::from(code.code()), 2)
            .text(rdfi, 8)
            .text(check, 1)
            .text(&entry.account_number, 17)
            .number(amount, 10)
            .text(&entry.individual_id, 15)
            .text(&name, 22)
            .text(&discretionary, 2)
            .text("1", 1)
            .text(&entry.trace_number, 15)
            .finish(),
    );
    out.push(addenda);
    Ok(())
}

fn addenda_99(at: Location, a: &Addenda99) -> Result<String, WriteError> {
    if a.return_code.kind() != ReturnKind::Return {
        return Err(WriteError::field(
            at,
            Field::ReturnReasonCode,
            Problem::NotWritable {
                found: a.return_code.to_string(),
            },
        ));
    }
    digits(
        at,
        Field::OriginalEntryTraceNumber,
        &a.original_trace_number,
        15,
    )?;
    let death = a
        .date_of_death
        .map(|d| yymmdd(at, Field::DateOfDeath, d))
        .transpose()?
        .unwrap_or_default();
    digits(
        at,
        Field::OriginalReceivingDfi,
        &a.original_receiving_dfi,
        8,
    )?;
    let information = text(
        at,
        Field::AddendaInformation,
        &a.addenda_information,
        44,
        false,
    )?;
    digits(at, Field::TraceNumber, &a.trace_number, 15)?;
    Ok(Record::new('7')
        .text("99", 2)
        .text(&a.return_code.to_string(), 3)
        .text(&a.original_trace_number, 15)
        .text(&death, 6)
        .text(&a.original_receiving_dfi, 8)
        .text(&information, 44)
        .text(&a.trace_number, 15)
        .finish())
}

fn addenda_98(at: Location, a: &Addenda98) -> Result<String, WriteError> {
    digits(
        at,
        Field::OriginalEntryTraceNumber,
        &a.original_trace_number,
        15,
    )?;
    digits(
        at,
        Field::OriginalReceivingDfi,
        &a.original_receiving_dfi,
        8,
    )?;
    identifier(at, Field::CorrectedData, &a.corrected_data, 29, true)?;
    digits(at, Field::TraceNumber, &a.trace_number, 15)?;
    Ok(Record::new('7')
        .text("98", 2)
        .text(&a.change_code.to_string(), 3)
        .text(&a.original_trace_number, 15)
        .blank(6)
        .text(&a.original_receiving_dfi, 8)
        .text(&a.corrected_data, 29)
        .blank(15)
        .text(&a.trace_number, 15)
        .finish())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answer_codes() {
        let code = |n| TransactionCode::from_code(n).and_then(answer_transaction_code);
        assert_eq!(code(22), TransactionCode::from_code(21));
        assert_eq!(code(23), TransactionCode::from_code(21));
        assert_eq!(code(32), TransactionCode::from_code(31));
        assert_eq!(code(27), TransactionCode::from_code(26));
        assert_eq!(code(38), TransactionCode::from_code(36));
        assert_eq!(code(21), None);
        assert_eq!(code(36), None);
    }

    #[test]
    fn corrected_data_reads_back() {
        let full = Correction {
            routing_number: Some("021000021".into()),
            account_number: Some("12345678".into()),
            transaction_code: Some(TransactionCode::SavingsCredit),
            individual_name: Some("JANE DOE".into()),
            individual_id: Some("ID-42".into()),
        };
        for n in [1, 2, 3, 4, 5, 6, 7, 9] {
            let code = ChangeCode::new(n).unwrap();
            let data = corrected_data(code, &full).unwrap();
            assert!(data.len() <= 29, "C{n:02}: {data:?}");
            let read = Correction::read(code, &data);
            let expect = |some: bool, v: &Option<String>| if some { v.clone() } else { None };
            assert_eq!(
                read.routing_number,
                expect(matches!(n, 2 | 3 | 7), &full.routing_number),
                "C{n:02}"
            );
            assert_eq!(
                read.account_number,
                expect(matches!(n, 1 | 3 | 6 | 7), &full.account_number),
                "C{n:02}"
            );
            assert_eq!(
                read.individual_name,
                expect(n == 4, &full.individual_name),
                "C{n:02}"
            );
            assert_eq!(
                read.individual_id,
                expect(n == 9, &full.individual_id),
                "C{n:02}"
            );
            assert_eq!(
                read.transaction_code,
                matches!(n, 5..=7).then_some(TransactionCode::SavingsCredit),
                "C{n:02}"
            );
        }
        assert_eq!(
            corrected_data(ChangeCode::new(3).unwrap(), &Correction::default()),
            None
        );
        assert_eq!(corrected_data(ChangeCode::new(13).unwrap(), &full), None);
    }
}
