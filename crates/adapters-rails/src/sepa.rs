//! `eur/sepa`: one ISO 20022 pain.001.001.09 SEPA credit transfer file per closed batch.
//!
//! Field mapping:
//! - `GrpHdr/MsgId`: the batch id (32 hex digits), unique per file since a batch has one file
//!   per method; the bank's pain.002 quotes it back as `OrgnlMsgId`. `CreDtTm`: when the file
//!   was written (UTC). `InitgPty`: the settings' initiating party.
//! - one `PmtInf` for the batch: `PmtInfId` the batch id and `-1`; `ReqdExctnDt` the file's
//!   effective date; `Dbtr`, `DbtrAcct/IBAN` and `DbtrAgt` from the settings; batch booking
//!   as set.
//! - one `CdtTrfTxInf` per payout: `InstrId` and `EndToEndId` the payout id (32 hex digits,
//!   unique everywhere, quoted back by pain.002 and camt.054); the amount in euros from cents;
//!   `CdtrAgt` the account's `bic` when given; `Cdtr/Nm` the payee's name; `CdtrAcct/IBAN` the
//!   account's `iban` in electronic form; `RmtInf/Ustrd` the remittance text.
//!
//! The end-to-end ids are the payouts' references.

use bank_formats::iso20022::{
    CreditTransfer, CreditTransferInitiation, DebtorAgent, InitiatingParty, PaymentBatch,
    write_pain001,
};
use domain::PortError;
use domain::money::Asset;
use domain::rail::answers::AnswerRules;
use domain::rail::file_rail::{FileNumbering, Settlement};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest, WrittenFile};

use crate::refused;

/// How pain.001 files are numbered (not used in the file: the batch id identifies it).
pub const NUMBERING: FileNumbering = FileNumbering::Overall;

/// How SEPA payouts settle: when the bank's pain.002 reports them `ACSC`.
pub const SETTLEMENT: Settlement = Settlement::OnConfirmation;

/// Which of the bank's answers may follow which: a bank file rail, with returns after
/// settlement and files named by the bank.
pub const ANSWERS: AnswerRules = AnswerRules::FILE_RAIL;

/// The file name extension.
pub const EXTENSION: &str = "xml";

/// The debtor and initiating party a bank gives for SEPA credit transfers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SepaSettings {
    /// The initiating party's name.
    pub initiating_party_name: String,
    /// Its id at the bank, when the bank assigned one.
    pub initiating_party_id: Option<String>,
    /// The debtor's name (the account debited).
    pub debtor_name: String,
    /// The debited account's IBAN.
    pub debtor_iban: String,
    /// The debtor's bank's BIC, when the bank wants it (else `NOTPROVIDED`).
    pub debtor_bic: Option<String>,
    /// One debit of the file's total (`true`) or one per transfer.
    pub batch_booking: bool,
}

/// Why SEPA settings are wrong, naming the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct SettingsError {
    /// The setting's name.
    pub setting: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

/// The electronic form of an IBAN or BIC: no spaces, upper case.
fn electronic(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_uppercase()
}

impl SepaSettings {
    /// Checks the settings by writing a one-transfer file with them: the writer's own rules
    /// (character set, IBAN check digits, BIC form, lengths) decide.
    ///
    /// # Errors
    /// The first wrong setting, by name.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let probe = SepaWriter {
            settings: self.clone(),
        }
        .document(
            "PROBE",
            chrono::NaiveDate::from_ymd_opt(2000, 1, 3).unwrap_or_default(),
            chrono::NaiveDateTime::default(),
            vec![CreditTransfer {
                instruction_id: "PROBE".into(),
                end_to_end_id: "PROBE".into(),
                amount_cents: 1,
                creditor_agent_bic: None,
                creditor_name: "PROBE".into(),
                creditor_iban: "DE89370400440532013000".into(),
                remittance: None,
            }],
        );
        let Err(e) = write_pain001(&probe) else {
            return Ok(());
        };
        let setting = match e.field() {
            "initiating_party.name" => "initiating_party_name",
            "initiating_party.id" => "initiating_party_id",
            f if f.ends_with("debtor_name") => "debtor_name",
            f if f.ends_with("debtor_iban") => "debtor_iban",
            f if f.ends_with("debtor_agent") => "debtor_bic",
            _ => "sepa",
        };
        let problem = e.to_string();
        let problem = problem
            .split_once(": ")
            .map_or(problem.clone(), |(_, p)| p.to_owned());
        Err(SettingsError { setting, problem })
    }
}

/// The pain.001 writer of a rail.
#[derive(Debug, Clone)]
pub struct SepaWriter {
    settings: SepaSettings,
}

impl SepaWriter {
    /// A writer with checked settings.
    ///
    /// # Errors
    /// The first wrong setting ([`SepaSettings::validate`]).
    pub fn new(settings: SepaSettings) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self { settings })
    }

    fn document(
        &self,
        batch: &str,
        execution_date: chrono::NaiveDate,
        created_at: chrono::NaiveDateTime,
        transactions: Vec<CreditTransfer>,
    ) -> CreditTransferInitiation {
        let s = &self.settings;
        CreditTransferInitiation {
            message_id: batch.to_owned(),
            created_at,
            initiating_party: InitiatingParty {
                name: s.initiating_party_name.clone(),
                id: s.initiating_party_id.clone(),
            },
            batches: vec![PaymentBatch {
                payment_info_id: format!("{batch}-1"),
                batch_booking: s.batch_booking,
                execution_date,
                debtor_name: s.debtor_name.clone(),
                debtor_iban: electronic(&s.debtor_iban),
                debtor_agent: s
                    .debtor_bic
                    .as_deref()
                    .map_or(DebtorAgent::NotProvided, |bic| {
                        DebtorAgent::Bic(electronic(bic))
                    }),
                transactions,
            }],
        }
    }
}

/// A payout's end-to-end id: its id, 32 hex digits.
pub fn end_to_end_id(instruction: &CreditInstruction) -> String {
    instruction.payout_id.as_uuid().simple().to_string()
}

fn transfer(instruction: &CreditInstruction) -> Result<CreditTransfer, PortError> {
    let id = end_to_end_id(instruction);
    let amount_cents = u64::try_from(instruction.amount.get())
        .map_err(|_| refused(format!("payout {}: negative amount", instruction.payout_id)))?;
    Ok(CreditTransfer {
        instruction_id: id.clone(),
        end_to_end_id: id,
        amount_cents,
        creditor_agent_bic: instruction
            .receiving_bank
            .as_ref()
            .map(|bic| electronic(bic.expose()))
            .filter(|bic| !bic.is_empty()),
        creditor_name: instruction.payee_name.clone(),
        creditor_iban: electronic(instruction.account.expose()),
        remittance: Some(instruction.remittance.clone()).filter(|r| !r.trim().is_empty()),
    })
}

impl BankFileWriter for SepaWriter {
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError> {
        if request.asset != Asset::Eur {
            return Err(refused(format!(
                "a SEPA credit transfer pays EUR, not {}",
                request.asset.code()
            )));
        }
        let transactions = request
            .instructions
            .iter()
            .map(transfer)
            .collect::<Result<Vec<_>, _>>()?;
        let references = transactions
            .iter()
            .map(|t| t.end_to_end_id.clone())
            .collect();
        let document = self.document(
            &request.batch_id.as_uuid().simple().to_string(),
            request.effective_date,
            request.created_at.naive_utc(),
            transactions,
        );
        let bytes = write_pain001(&document)
            .map_err(|e| refused(format!("the pain.001 file cannot be written: {e}")))?;
        Ok(WrittenFile {
            extension: EXTENSION,
            bytes,
            references,
        })
    }
}

/// The meaning of the ISO 20022 external status reason codes banks most often give for SEPA
/// credit transfers.
pub fn reason_text(code: &str) -> Option<&'static str> {
    Some(match code {
        "AC01" => "Incorrect account number",
        "AC04" => "Closed account number",
        "AC06" => "Blocked account",
        "AG01" => "Transaction forbidden on this account",
        "AG02" => "Invalid bank operation code",
        "AM04" => "Insufficient funds",
        "AM05" => "Duplication",
        "BE04" => "Missing creditor address",
        "DUPL" => "Duplicate payment",
        "FF01" => "Invalid file format",
        "MD07" => "End customer deceased",
        "MS02" => "Reason not specified, by the customer",
        "MS03" => "Reason not specified, by the bank",
        "RC01" => "Bank identifier incorrect",
        "RR04" => "Regulatory reason",
        "TM01" => "Received after the cut-off time",
        _ => return None,
    })
}

/// The reader of pain.002 payment status reports (versions 03, 09 and 10): the file's verdict
/// (by its `OrgnlMsgId`, the batch id) and each listed transaction's (by its
/// `OrgnlEndToEndId`, the payout id).
#[derive(Debug, Clone, Copy, Default)]
pub struct Pain002Reader;

/// The batch whose file has `message_id` as its `MsgId` (the batch id's 32 hex digits).
pub fn batch_of(message_id: &str) -> Option<domain::ids::BatchId> {
    if message_id.len() != 32 || !message_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    uuid::Uuid::try_parse(message_id)
        .ok()
        .map(domain::ids::BatchId::from_uuid)
}

/// Whether `bytes` look like a pain.002 document.
pub fn looks_like_pain002(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    String::from_utf8_lossy(head).contains("urn:iso:std:iso:20022:tech:xsd:pain.002.")
}

fn reason_of(reasons: &[bank_formats::iso20022::StatusReason]) -> (Option<String>, String) {
    let Some(first) = reasons.first() else {
        return (None, "no reason given".to_owned());
    };
    let code = first.code.as_ref().map(|c| c.as_str().to_owned());
    let text = code
        .as_deref()
        .and_then(reason_text)
        .map(str::to_owned)
        .or_else(|| first.proprietary.clone())
        .or_else(|| first.additional_info.first().cloned())
        .unwrap_or_else(|| match &code {
            Some(code) => format!("ISO 20022 reason {code}"),
            None => "no reason given".to_owned(),
        });
    (code, text)
}

impl domain::rail::report::BankFileReader for Pain002Reader {
    fn read(
        &self,
        _name: &str,
        bytes: &[u8],
    ) -> Result<domain::rail::report::ReadOutcome, PortError> {
        use bank_formats::iso20022::{Status, parse_pain002};
        use domain::rail::report::{
            BankReport, FileMention, FileVerdict, ItemOutcome, ItemReport, ReadOutcome,
            ReturnReason,
        };

        if !looks_like_pain002(bytes) {
            return Ok(ReadOutcome::NotMine);
        }
        let report = match parse_pain002(bytes) {
            Ok(report) => report,
            Err(e) => {
                return Ok(ReadOutcome::Unreadable(format!(
                    "not a valid pain.002: {e}"
                )));
            }
        };
        let mention = batch_of(&report.original_message_id).map_or_else(
            || FileMention::Unknown(report.original_message_id.clone()),
            FileMention::Batch,
        );
        // The group's status, else (one block per file) the block's.
        let (status, reasons) = match (&report.group_status, report.payment_infos.first()) {
            (Some(status), _) => (Some(status), report.group_reasons.as_slice()),
            (None, Some(block)) => (block.status.as_ref(), block.reasons.as_slice()),
            (None, None) => (None, &[][..]),
        };
        let verdict = status.and_then(|status| match status {
            Status::Rejected => {
                let (code, reason) = reason_of(reasons);
                Some(FileVerdict::Rejected { code, reason })
            }
            Status::AcceptedSettlementCompleted | Status::AcceptedCreditSettlementCompleted => {
                Some(FileVerdict::Settled)
            }
            s if s.is_accepted() || *s == Status::PartiallyAccepted => Some(FileVerdict::Accepted),
            _ => None,
        });
        let mut items = Vec::new();
        for tx in report.transactions() {
            let Some(reference) = tx.original_end_to_end_id.clone() else {
                continue;
            };
            let outcome = match &tx.status {
                Some(
                    Status::AcceptedSettlementCompleted | Status::AcceptedCreditSettlementCompleted,
                ) => ItemOutcome::Settled,
                Some(Status::Rejected) => {
                    let (code, reason) = reason_of(&tx.reasons);
                    ItemOutcome::Rejected(ReturnReason {
                        code: code.unwrap_or_else(|| "RJCT".to_owned()),
                        reason,
                        account_is_invalid: tx.means_wrong_account(),
                    })
                }
                _ => continue,
            };
            items.push(ItemReport { reference, outcome });
        }
        Ok(ReadOutcome::Report(BankReport {
            file: verdict.map(|v| (mention, v)),
            items,
        }))
    }
}
