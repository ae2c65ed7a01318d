//! `eur/sepa`: one ISO 20022 pain.001.001.09 SEPA credit transfer file per closed batch, or
//! several (parts) when its payouts are more than one file holds ([`LIMITS`]).
//!
//! Field mapping:
//! - `GrpHdr/MsgId`: the batch id (32 hex digits), and `-<part>` after it from part 2 on
//!   ([`RailFile::batch_file_id`]), unique per file since a batch has one file per method and
//!   part; the bank's pain.002 quotes it back as `OrgnlMsgId`. `CreDtTm`: when the file
//!   was written (UTC). `InitgPty`: the settings' initiating party.
//! - one `PmtInf` for the file: `PmtInfId` the batch id, `-` and the part (`-1` for a batch's
//!   only or first file); `ReqdExctnDt` the file's
//!   effective date; `Dbtr`, `DbtrAcct/IBAN` and `DbtrAgt` from the settings; batch booking
//!   as set.
//! - one `CdtTrfTxInf` per payout: `InstrId` and `EndToEndId` the payout id (32 hex digits,
//!   unique everywhere, quoted back by pain.002 and camt.054); the amount in euros from cents;
//!   `CdtrAgt` the account's `bic` when given; `Cdtr/Nm` the payee's name; `CdtrAcct/IBAN` the
//!   account's `iban` in electronic form; `RmtInf/Ustrd` the remittance text.
//!
//! The end-to-end ids are the payouts' references.

use std::sync::Arc;

use bank_formats::iso20022::pain001::MAX_TRANSACTIONS;
use bank_formats::iso20022::text::check_id;
use bank_formats::iso20022::{
    CreditTransfer, CreditTransferInitiation, DebtorAgent, InitiatingParty, PaymentBatch,
    write_pain001,
};
use domain::PortError;
use domain::ids::BatchId;
use domain::masking::MaskedValue;
use domain::money::Asset;
use domain::rail::answers::AnswerRules;
use domain::rail::file::RailFile;
use domain::rail::file_rail::{FileNumbering, Settlement};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest, WrittenFile};
use domain::rail::limits::FileLimits;
use serde::Deserialize;
use serde_json::json;

use crate::refused;
use crate::settings::{Check, SettingsError, trimmed, trimmed_option};
use crate::unit::{FILE_DROP, RailSettings, RailUnit, read};

/// The `eur/sepa` rail.
pub const UNIT: RailUnit = RailUnit {
    method: domain::account::PayoutMethod::Sepa,
    format: "pain.001.001.09",
    numbering: NUMBERING,
    limits: LIMITS,
    settlement: SETTLEMENT,
    answers: ANSWERS,
    transports: FILE_DROP,
    settles_on_weekends: false,
    settings: read::<SepaSettings>,
};

/// How pain.001 files are numbered (not used in the file: the batch id identifies it).
pub const NUMBERING: FileNumbering = FileNumbering::Overall;

/// The largest pain.001 file payoutd writes, bytes. The EPC sets no file size and banks set
/// their own; 20 MiB is payoutd's conservative figure, well under the upload limits of bank
/// channels (EBICS, host-to-host SFTP) that take files of tens of thousands of transfers.
pub const MAX_FILE_BYTES: usize = 20 * 1024 * 1024;

/// The most bytes one `CdtTrfTxInf` takes: every field at its longest (ids of 32 hex digits,
/// the largest amount, an 11-character BIC, a 70-character name, a 34-character IBAN, a
/// 140-character remittance; free text is folded into the one-byte SEPA set), indentation
/// included. A test writes such transfers and checks this.
pub const MAX_TRANSFER_BYTES: usize = 1_024;

/// The most bytes of a file besides its transfers (declaration, group header, the one
/// `PmtInf`'s debtor part, closing tags) with every setting at its longest. Checked by a test.
pub const MAX_ENVELOPE_BYTES: usize = 4_096;

/// What one pain.001 file holds: at most [`MAX_TRANSACTIONS`] transfers (the writer's cap) and
/// as many as keep the file within [`MAX_FILE_BYTES`] at their longest (20,476), no total that
/// binds (`CtrlSum` carries 18 digits), and up to 99 parts (the `MsgId`
/// [`RailFile::batch_file_id`] of part 99 is 35 characters, the most `MsgId` holds).
pub const LIMITS: FileLimits = FileLimits {
    max_items: if (MAX_FILE_BYTES - MAX_ENVELOPE_BYTES) / MAX_TRANSFER_BYTES < MAX_TRANSACTIONS {
        (MAX_FILE_BYTES - MAX_ENVELOPE_BYTES) / MAX_TRANSFER_BYTES
    } else {
        MAX_TRANSACTIONS
    },
    max_total: None,
    max_parts: 99,
};

// A file of LIMITS.max_items transfers at their longest fits MAX_FILE_BYTES.
const _: () = assert!(
    MAX_ENVELOPE_BYTES + LIMITS.max_items * MAX_TRANSFER_BYTES <= MAX_FILE_BYTES
        && LIMITS.max_items <= MAX_TRANSACTIONS
);

/// How SEPA payouts settle: when the bank's pain.002 reports them `ACSC`.
pub const SETTLEMENT: Settlement = Settlement::OnConfirmation;

/// Which of the bank's answers may follow which: a bank file rail, with returns after
/// settlement and files named by the bank.
pub const ANSWERS: AnswerRules = AnswerRules::FILE_RAIL;

/// The file name extension.
pub const EXTENSION: &str = "xml";

/// The debtor and initiating party a bank gives for SEPA credit transfers: the keys of
/// `[rails."eur/sepa"]` (names read trimmed).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SepaSettings {
    /// `GrpHdr/InitgPty/Nm`: the initiating party's name (at most 70 characters).
    #[serde(deserialize_with = "trimmed")]
    pub initiating_party_name: String,
    /// `GrpHdr/InitgPty/Id/OrgId/Othr/Id`: its id at the bank, when the bank assigned one (at
    /// most 35 characters of the SEPA set).
    #[serde(default, deserialize_with = "trimmed_option")]
    pub initiating_party_id: Option<String>,
    /// `Dbtr/Nm`: the debtor's name, the account debited (at most 70 characters).
    #[serde(deserialize_with = "trimmed")]
    pub debtor_name: String,
    /// `DbtrAcct/Id/IBAN`: the debited account's IBAN, given in electronic or paper form and
    /// read in electronic form (no spaces, upper case).
    #[serde(deserialize_with = "electronic_form")]
    pub debtor_iban: String,
    /// `DbtrAgt/FinInstnId/BICFI`: the debtor's bank's BIC, when the bank wants it (else
    /// `NOTPROVIDED`), read in upper case.
    #[serde(default, deserialize_with = "electronic_option")]
    pub debtor_bic: Option<String>,
    /// One debit of the file's total (`true`, what payoutd asks) or one per transfer; not a
    /// key of the file.
    #[serde(skip, default = "batch_booking")]
    pub batch_booking: bool,
}

/// payoutd books each file as one debit.
fn batch_booking() -> bool {
    true
}

impl std::fmt::Debug for SepaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SepaSettings")
            .field("initiating_party_name", &self.initiating_party_name)
            .field("initiating_party_id", &self.initiating_party_id)
            .field("debtor_name", &self.debtor_name)
            .field("debtor_iban", &MaskedValue::mask(&self.debtor_iban))
            .field("debtor_bic", &self.debtor_bic)
            .field("batch_booking", &self.batch_booking)
            .finish()
    }
}

/// The electronic form of an IBAN or BIC: no spaces, upper case.
fn electronic(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_uppercase()
}

fn electronic_form<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(electronic(&String::deserialize(deserializer)?))
}

fn electronic_option<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.map(|value| electronic(&value)))
}

impl SepaSettings {
    /// Checks every setting against the pain.001 rules (`bank_codes`' IBAN and BIC, the EPC's
    /// identifier rules, the names' lengths).
    ///
    /// # Errors
    /// Every wrong setting, by key (never repeating the IBAN).
    pub fn validate(&self) -> Result<(), SettingsError> {
        let mut check = Check::default();
        check.text("debtor_name", &self.debtor_name, 70);
        check.require(
            bank_codes::iban::parse(&self.debtor_iban).is_ok(),
            "debtor_iban",
            "must be an IBAN with valid check digits (spaces allowed in groups of four)",
        );
        if let Some(bic) = &self.debtor_bic {
            check.require(
                bank_codes::bic::parse(bic).is_ok(),
                "debtor_bic",
                format!(
                    "must be a BIC of 8 or 11 characters (4 letters, a 2-letter country, 2 letters \
                     or digits, an optional 3-character branch), got {bic:?}"
                ),
            );
        }
        check.text("initiating_party_name", &self.initiating_party_name, 70);
        if let Some(id) = &self.initiating_party_id
            && let Err(problem) = check_id(id, 35)
        {
            check.push(
                "initiating_party_id",
                format!(
                    "must be 1 to 35 characters of the SEPA set, not starting or ending with '/' \
                     nor containing '//' ({problem:?})"
                ),
            );
        }
        check.finish()
    }
}

impl RailSettings for SepaSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        SepaSettings::validate(self)
    }

    fn writer(&self) -> Arc<dyn BankFileWriter> {
        Arc::new(SepaWriter {
            settings: self.clone(),
        })
    }

    fn reader(&self) -> Arc<dyn domain::rail::report::BankFileReader> {
        Arc::new(Pain002Reader)
    }

    fn summary(&self) -> serde_json::Value {
        json!({
            "debtor_name": self.debtor_name,
            "debtor_iban": MaskedValue::mask(&electronic(&self.debtor_iban)).as_str(),
            "debtor_bic": self.debtor_bic,
            "initiating_party_name": self.initiating_party_name,
            "initiating_party_id": self.initiating_party_id,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
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
    /// Every wrong setting ([`SepaSettings::validate`]).
    pub fn new(settings: SepaSettings) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self { settings })
    }

    fn document(
        &self,
        batch: BatchId,
        part: u32,
        execution_date: chrono::NaiveDate,
        created_at: chrono::DateTime<chrono::Utc>,
        transactions: Vec<CreditTransfer>,
    ) -> CreditTransferInitiation {
        let s = &self.settings;
        CreditTransferInitiation {
            message_id: RailFile::batch_file_id(batch, part),
            created_at,
            initiating_party: InitiatingParty {
                name: s.initiating_party_name.clone(),
                id: s.initiating_party_id.clone(),
            },
            batches: vec![PaymentBatch {
                payment_info_id: format!("{}-{part}", batch.as_uuid().simple()),
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
        if request.part > LIMITS.max_parts {
            return Err(refused(format!(
                "part {} of batch {}: a pain.001 MsgId numbers {} parts",
                request.part, request.batch_id, LIMITS.max_parts
            )));
        }
        let document = self.document(
            request.batch_id,
            request.part,
            request.effective_date,
            request.created_at,
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

/// The file whose `MsgId` is `message_id` ([`RailFile::batch_file_id`]: the batch id's 32 hex
/// digits, then `-<part>` from part 2 on), as the report's mention of it.
pub fn mention_of(message_id: &str) -> domain::rail::report::FileMention {
    use domain::rail::report::FileMention;
    RailFile::parse_batch_file_id(message_id).map_or_else(
        || FileMention::Unknown(message_id.to_owned()),
        |(batch, part)| FileMention::Batch { batch, part },
    )
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
            BankReport, FileVerdict, ItemOutcome, ItemReport, ReadOutcome, ReturnReason,
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
        let mention = mention_of(&report.original_message_id);
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
