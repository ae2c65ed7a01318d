//! pain.001.001.09 (CustomerCreditTransferInitiationV09): SEPA credit transfer files, as the
//! EPC's SEPA Credit Transfer customer-to-bank implementation guidelines describe them.
//!
//! [`write_pain001`] turns a [`CreditTransferInitiation`] into the XML bytes of a file, or says
//! which input field is wrong. The writer computes `NbOfTxs` and `CtrlSum` (for the file and
//! for each payment information block), writes amounts in euros with two decimals from integer
//! cents, folds free text into the SEPA character set and cuts it to its field's length (see
//! [`super::text`]), and refuses identifiers it would have to change.
//!
//! What each block always carries: `PmtMtd` `TRF`, `PmtTpInf/SvcLvl/Cd` `SEPA`, `ChrgBr`
//! `SLEV`, currency `EUR`.

use std::collections::HashSet;

use chrono::{DateTime, Datelike, NaiveDate, Utc};

use super::text::{IdProblem, check_id, to_sepa_text};
use super::xml::Emitter;

/// The XML namespace of pain.001.001.09.
pub const PAIN001_NAMESPACE: &str = "urn:iso:std:iso:20022:tech:xsd:pain.001.001.09";

/// The most transactions one file may carry. SEPA sets no limit, but banks do (commonly tens
/// of thousands per file); a payout batch larger than this should be split into several files.
pub const MAX_TRANSACTIONS: usize = 100_000;

/// The largest amount of one SEPA credit transfer: 999,999,999.99 EUR (EPC rulebook).
pub const MAX_AMOUNT_CENTS: u64 = 99_999_999_999;

/// Identifiers (`MsgId`, `PmtInfId`, `InstrId`, `EndToEndId`, the initiating party's id).
pub const MAX_ID_LEN: usize = 35;
/// Names of the initiating party, the debtor and creditors (the EPC's limit, below the XSD's).
pub const MAX_NAME_LEN: usize = 70;
/// Unstructured remittance information.
pub const MAX_REMITTANCE_LEN: usize = 140;

/// One pain.001 file: a group header and one payment information block per batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditTransferInitiation {
    /// `GrpHdr/MsgId`: unique per file for the bank (up to 35 characters of the SEPA set).
    pub message_id: String,
    /// `GrpHdr/CreDtTm`, written in UTC with its offset (`YYYY-MM-DDThh:mm:ssZ`), so a bank
    /// in any time zone reads the same instant.
    pub created_at: DateTime<Utc>,
    /// `GrpHdr/InitgPty`.
    pub initiating_party: InitiatingParty,
    /// `PmtInf`, one per batch, at least one.
    pub batches: Vec<PaymentBatch>,
}

/// The party that sends the file (`GrpHdr/InitgPty`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitiatingParty {
    /// `Nm`: folded into the SEPA set, cut to 70 characters.
    pub name: String,
    /// `Id/OrgId/Othr/Id`, when the bank assigned one (an identifier: up to 35 characters of
    /// the SEPA set).
    pub id: Option<String>,
}

/// The debtor's bank (`DbtrAgt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DebtorAgent {
    /// `FinInstnId/BICFI`: 8 or 11 characters.
    Bic(String),
    /// `FinInstnId/Othr/Id` `NOTPROVIDED`, which the EPC guidelines allow since the BIC became
    /// optional for SEPA payments.
    NotProvided,
}

/// One payment information block (`PmtInf`): the transfers of one batch, debited from one
/// account on one date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentBatch {
    /// `PmtInfId`: unique within the file.
    pub payment_info_id: String,
    /// `BtchBookg`: `true` asks for one debit of the total, `false` for one per transaction.
    pub batch_booking: bool,
    /// `ReqdExctnDt/Dt`.
    pub execution_date: NaiveDate,
    /// `Dbtr/Nm`: folded into the SEPA set, cut to 70 characters.
    pub debtor_name: String,
    /// `DbtrAcct/Id/IBAN`, in electronic form (no spaces, upper case).
    pub debtor_iban: String,
    /// `DbtrAgt`.
    pub debtor_agent: DebtorAgent,
    /// `CdtTrfTxInf`, at least one.
    pub transactions: Vec<CreditTransfer>,
}

/// One credit transfer (`CdtTrfTxInf`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditTransfer {
    /// `PmtId/InstrId`: unique within the file.
    pub instruction_id: String,
    /// `PmtId/EndToEndId`: unique within the file; the bank's status reports (pain.002) and
    /// the creditor's statement carry it back.
    pub end_to_end_id: String,
    /// `Amt/InstdAmt` (`Ccy="EUR"`), in cents: 1 to [`MAX_AMOUNT_CENTS`].
    pub amount_cents: u64,
    /// `CdtrAgt/FinInstnId/BICFI`, optional for SEPA.
    pub creditor_agent_bic: Option<String>,
    /// `Cdtr/Nm`: folded into the SEPA set, cut to 70 characters.
    pub creditor_name: String,
    /// `CdtrAcct/Id/IBAN`, in electronic form (no spaces, upper case).
    pub creditor_iban: String,
    /// `RmtInf/Ustrd`: folded into the SEPA set, cut to 140 characters; left out when empty.
    pub remittance: Option<String>,
}

/// Why a file could not be written. `field` names the input field, as a path from
/// [`CreditTransferInitiation`] (for example `batches[0].transactions[3].end_to_end_id`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Pain001Error {
    /// A required value is empty, or nothing is left of a name once folded.
    #[error("{field}: empty")]
    Empty { field: String },
    /// An identifier is longer than its field.
    #[error("{field}: {len} characters, at most {max} allowed")]
    TooLong {
        field: String,
        len: usize,
        max: usize,
    },
    /// An identifier holds a character outside the SEPA character set.
    #[error("{field}: {ch:?} is outside the SEPA character set allowed in identifiers")]
    IdCharacter { field: String, ch: char },
    /// An identifier starts or ends with `/` or contains `//`.
    #[error("{field}: an identifier may not start or end with '/' or contain '//'")]
    IdSlashes { field: String },
    /// An identifier that must be unique in the file is used twice.
    #[error("{field}: {id:?} is already used in this file")]
    DuplicateId { field: String, id: String },
    /// Not an IBAN in electronic form: its country's length and format, valid check digits
    /// (`bank_codes::iban`), capital letters and digits without spaces.
    #[error(
        "{field}: not an IBAN (its country's length and format, valid check digits, capital \
         letters and digits without spaces)"
    )]
    BadIban { field: String },
    /// Not a BIC (4 letters, a country, 2 letters or digits, an optional 3-character branch:
    /// `bank_codes::bic`).
    #[error("{field}: not a BIC (8 or 11 capital letters and digits)")]
    BadBic { field: String },
    /// An amount of zero.
    #[error("{field}: the amount is zero")]
    ZeroAmount { field: String },
    /// An amount above the SEPA maximum.
    #[error("{field}: {cents} cents is more than the SEPA maximum of 999999999.99 EUR")]
    AmountTooLarge { field: String, cents: u64 },
    /// A batch without transactions, or a file without batches.
    #[error("{field}: at least one is required")]
    NoneGiven { field: String },
    /// More transactions than [`MAX_TRANSACTIONS`].
    #[error("{field}: {count} transactions, at most {max} in one file")]
    TooManyTransactions {
        field: String,
        count: usize,
        max: usize,
    },
    /// A date outside the years 1 to 9999.
    #[error("{field}: the year must have four digits")]
    BadDate { field: String },
}

impl Pain001Error {
    /// The input field the error is about.
    pub fn field(&self) -> &str {
        match self {
            Self::Empty { field }
            | Self::TooLong { field, .. }
            | Self::IdCharacter { field, .. }
            | Self::IdSlashes { field }
            | Self::DuplicateId { field, .. }
            | Self::BadIban { field }
            | Self::BadBic { field }
            | Self::ZeroAmount { field }
            | Self::AmountTooLarge { field, .. }
            | Self::NoneGiven { field }
            | Self::TooManyTransactions { field, .. }
            | Self::BadDate { field } => field,
        }
    }
}

/// Writes `file` as a pain.001.001.09 document (UTF-8 XML).
///
/// # Errors
/// The first problem found, naming its field: see [`Pain001Error`].
pub fn write_pain001(file: &CreditTransferInitiation) -> Result<Vec<u8>, Pain001Error> {
    id("message_id", &file.message_id)?;
    let created_at = date_time("created_at", file.created_at)?;
    let initiator_name = name("initiating_party.name", &file.initiating_party.name)?;
    if let Some(party_id) = &file.initiating_party.id {
        id("initiating_party.id", party_id)?;
    }
    if file.batches.is_empty() {
        return Err(Pain001Error::NoneGiven {
            field: "batches".into(),
        });
    }
    let count: usize = file.batches.iter().map(|b| b.transactions.len()).sum();
    if count > MAX_TRANSACTIONS {
        return Err(Pain001Error::TooManyTransactions {
            field: "batches".into(),
            count,
            max: MAX_TRANSACTIONS,
        });
    }
    // Amounts first: the group header carries the file's total before any block is written.
    let mut total_cents: u64 = 0;
    for (b, batch) in file.batches.iter().enumerate() {
        if batch.transactions.is_empty() {
            return Err(Pain001Error::NoneGiven {
                field: format!("batches[{b}].transactions"),
            });
        }
        for (t, tx) in batch.transactions.iter().enumerate() {
            check_amount(
                &format!("batches[{b}].transactions[{t}].amount_cents"),
                tx.amount_cents,
            )?;
            // At most MAX_TRANSACTIONS × MAX_AMOUNT_CENTS ≈ 1e16: no overflow.
            total_cents = total_cents.saturating_add(tx.amount_cents);
        }
    }

    let mut xml = Emitter::new();
    xml.open_with("Document", &[("xmlns", PAIN001_NAMESPACE)]);
    xml.open("CstmrCdtTrfInitn");
    xml.open("GrpHdr");
    xml.leaf("MsgId", &file.message_id);
    xml.leaf("CreDtTm", &created_at);
    xml.leaf("NbOfTxs", &count.to_string());
    xml.leaf("CtrlSum", &format_cents(total_cents));
    xml.open("InitgPty");
    xml.leaf("Nm", &initiator_name);
    if let Some(party_id) = &file.initiating_party.id {
        xml.open("Id");
        xml.open("OrgId");
        xml.open("Othr");
        xml.leaf("Id", party_id);
        xml.close();
        xml.close();
        xml.close();
    }
    xml.close(); // InitgPty
    xml.close(); // GrpHdr

    let mut batch_ids = HashSet::new();
    let mut instruction_ids = HashSet::new();
    let mut end_to_end_ids = HashSet::new();
    for (b, batch) in file.batches.iter().enumerate() {
        let field = |name: &str| format!("batches[{b}].{name}");
        unique(
            &field("payment_info_id"),
            &batch.payment_info_id,
            &mut batch_ids,
        )?;
        let execution_date = date(&field("execution_date"), batch.execution_date)?;
        let debtor_name = name(&field("debtor_name"), &batch.debtor_name)?;
        iban(&field("debtor_iban"), &batch.debtor_iban)?;
        if let DebtorAgent::Bic(code) = &batch.debtor_agent {
            bic(&field("debtor_agent"), code)?;
        }
        let batch_cents: u64 = batch.transactions.iter().map(|tx| tx.amount_cents).sum();

        xml.open("PmtInf");
        xml.leaf("PmtInfId", &batch.payment_info_id);
        xml.leaf("PmtMtd", "TRF");
        xml.leaf(
            "BtchBookg",
            if batch.batch_booking { "true" } else { "false" },
        );
        xml.leaf("NbOfTxs", &batch.transactions.len().to_string());
        xml.leaf("CtrlSum", &format_cents(batch_cents));
        xml.open("PmtTpInf");
        xml.open("SvcLvl");
        xml.leaf("Cd", "SEPA");
        xml.close();
        xml.close();
        xml.open("ReqdExctnDt");
        xml.leaf("Dt", &execution_date);
        xml.close();
        xml.open("Dbtr");
        xml.leaf("Nm", &debtor_name);
        xml.close();
        account(&mut xml, "DbtrAcct", &batch.debtor_iban);
        xml.open("DbtrAgt");
        xml.open("FinInstnId");
        match &batch.debtor_agent {
            DebtorAgent::Bic(code) => xml.leaf("BICFI", code),
            DebtorAgent::NotProvided => {
                xml.open("Othr");
                xml.leaf("Id", "NOTPROVIDED");
                xml.close();
            }
        }
        xml.close();
        xml.close();
        xml.leaf("ChrgBr", "SLEV");

        for (t, tx) in batch.transactions.iter().enumerate() {
            let field = |name: &str| format!("batches[{b}].transactions[{t}].{name}");
            unique(
                &field("instruction_id"),
                &tx.instruction_id,
                &mut instruction_ids,
            )?;
            unique(
                &field("end_to_end_id"),
                &tx.end_to_end_id,
                &mut end_to_end_ids,
            )?;
            if let Some(code) = &tx.creditor_agent_bic {
                bic(&field("creditor_agent_bic"), code)?;
            }
            let creditor_name = name(&field("creditor_name"), &tx.creditor_name)?;
            iban(&field("creditor_iban"), &tx.creditor_iban)?;
            let remittance = tx
                .remittance
                .as_deref()
                .map(|text| to_sepa_text(text, MAX_REMITTANCE_LEN))
                .filter(|text| !text.is_empty());

            xml.open("CdtTrfTxInf");
            xml.open("PmtId");
            xml.leaf("InstrId", &tx.instruction_id);
            xml.leaf("EndToEndId", &tx.end_to_end_id);
            xml.close();
            xml.open("Amt");
            xml.leaf_with(
                "InstdAmt",
                &[("Ccy", "EUR")],
                &format_cents(tx.amount_cents),
            );
            xml.close();
            if let Some(code) = &tx.creditor_agent_bic {
                xml.open("CdtrAgt");
                xml.open("FinInstnId");
                xml.leaf("BICFI", code);
                xml.close();
                xml.close();
            }
            xml.open("Cdtr");
            xml.leaf("Nm", &creditor_name);
            xml.close();
            account(&mut xml, "CdtrAcct", &tx.creditor_iban);
            if let Some(text) = remittance {
                xml.open("RmtInf");
                xml.leaf("Ustrd", &text);
                xml.close();
            }
            xml.close(); // CdtTrfTxInf
        }
        xml.close(); // PmtInf
    }
    Ok(xml.finish().into_bytes())
}

/// `<name><Id><IBAN>iban</IBAN></Id></name>`.
fn account(xml: &mut Emitter, element: &'static str, iban: &str) {
    xml.open(element);
    xml.open("Id");
    xml.leaf("IBAN", iban);
    xml.close();
    xml.close();
}

/// Euros with two decimals: 1 → `0.01`, 123456 → `1234.56`.
pub fn format_cents(cents: u64) -> String {
    format!("{}.{:02}", cents / 100, cents % 100)
}

fn check_amount(field: &str, cents: u64) -> Result<(), Pain001Error> {
    if cents == 0 {
        return Err(Pain001Error::ZeroAmount {
            field: field.into(),
        });
    }
    if cents > MAX_AMOUNT_CENTS {
        return Err(Pain001Error::AmountTooLarge {
            field: field.into(),
            cents,
        });
    }
    Ok(())
}

/// Checks an identifier (see [`check_id`]).
fn id(field: &str, value: &str) -> Result<(), Pain001Error> {
    check_id(value, MAX_ID_LEN).map_err(|problem| {
        let field = field.to_owned();
        match problem {
            IdProblem::Empty => Pain001Error::Empty { field },
            IdProblem::TooLong { len, max } => Pain001Error::TooLong { field, len, max },
            IdProblem::BadChar(ch) => Pain001Error::IdCharacter { field, ch },
            IdProblem::Slashes => Pain001Error::IdSlashes { field },
        }
    })
}

/// Checks an identifier and that `seen` does not hold it yet.
fn unique(field: &str, value: &str, seen: &mut HashSet<String>) -> Result<(), Pain001Error> {
    id(field, value)?;
    if !seen.insert(value.to_owned()) {
        return Err(Pain001Error::DuplicateId {
            field: field.into(),
            id: value.into(),
        });
    }
    Ok(())
}

/// A name folded into the SEPA set and cut to 70 characters; empty is an error.
fn name(field: &str, value: &str) -> Result<String, Pain001Error> {
    let folded = to_sepa_text(value, MAX_NAME_LEN);
    if folded.is_empty() {
        return Err(Pain001Error::Empty {
            field: field.into(),
        });
    }
    Ok(folded)
}

fn four_digit_year(field: &str, year: i32) -> Result<(), Pain001Error> {
    if (1..=9999).contains(&year) {
        Ok(())
    } else {
        Err(Pain001Error::BadDate {
            field: field.into(),
        })
    }
}

fn date(field: &str, value: NaiveDate) -> Result<String, Pain001Error> {
    four_digit_year(field, value.year())?;
    Ok(value.format("%Y-%m-%d").to_string())
}

fn date_time(field: &str, value: DateTime<Utc>) -> Result<String, Pain001Error> {
    four_digit_year(field, value.year())?;
    Ok(value.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

fn iban(field: &str, value: &str) -> Result<(), Pain001Error> {
    // One IBAN rule for the API, the settings and the file: `bank_codes`.
    if bank_codes::iban::is_electronic(value) {
        Ok(())
    } else {
        Err(Pain001Error::BadIban {
            field: field.into(),
        })
    }
}

fn bic(field: &str, value: &str) -> Result<(), Pain001Error> {
    if bank_codes::bic::is_normalised(value) {
        Ok(())
    } else {
        Err(Pain001Error::BadBic {
            field: field.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::format_cents;

    #[test]
    fn cents_are_written_with_two_decimals() {
        assert_eq!(format_cents(1), "0.01");
        assert_eq!(format_cents(10), "0.10");
        assert_eq!(format_cents(100), "1.00");
        assert_eq!(format_cents(123_456), "1234.56");
        assert_eq!(format_cents(99_999_999_999), "999999999.99");
    }
}
