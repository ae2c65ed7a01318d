//! `aud/direct-entry`: one ABA (Cemtex) direct entry file per closed batch (or several when
//! the batch has more than [`LIMITS`] allows), for an Australian bank's direct entry service.
//!
//! Field mapping (positions as in the ABA layout, see [`bank_formats::aba`]):
//! - descriptive record (type 0): reel sequence `01`, the bank's mnemonic, the user name, the
//!   APCA user id and the description from the settings, the file's effective date as the
//!   date to be processed (`DDMMYY`).
//! - one detail record (type 1) per payout: the `bsb` (six digits, written `xxx-xxx`), the
//!   `account_number` (right-justified, written as given), a blank indicator, transaction
//!   code 50 (credit), the amount in cents, the payee's name cleaned up and cut to 32
//!   characters as the title of account, the **lodgement reference**, the trace BSB and trace
//!   account and the remitter name from the settings, withholding tax zero.
//! - with `self_balancing`, a last detail record debiting the trace account (transaction
//!   code 13) for the file's credit total, titled with the user name, with the batch id's
//!   first 18 hex digits as its lodgement reference, so the file's net total is zero.
//! - the file total record (type 7) is computed by the writer.
//!
//! The lodgement reference is the payout id's first 18 hex digits, upper case. It is what the
//! payee's statement shows and what the bank's return record carries back, so it is the
//! payout's reference: a return finds its payout by it. Payout ids are random UUIDs (v4): the
//! first 18 hex digits hold 68 random bits (the 13th digit is the version), so two payouts
//! share a reference with probability about n² / 2⁶⁹ over n payouts (below one in a million
//! for ten million payouts), across all of the rail's files, with no counter to keep. Two
//! payouts of one file with the same reference (ids alike in their first 18 hex digits) are
//! refused rather than written.
//!
//! The file has no creation time and no file number: `request.created_at` and
//! `request.sequence` are not written, and the file is numbered [`FileNumbering::Overall`]
//! ([`NUMBERING`]), which puts no daily limit on the number of files.
//!
//! The reader reads the bank's return file (detail records of type 2, the return layout of
//! NAB's direct entry returns file): each returned record gives its lodgement reference, the
//! return code (`1`–`9`, [`ReturnCode`]) and the amount.

use std::sync::Arc;

use bank_codes::digits::is_ascii_digits as digits;
use bank_formats::aba::{
    self, AbaFile, DescriptiveRecord, DetailKind, DetailRecord, Indicator, ReturnCode,
    TransactionCode,
};
use domain::PortError;
use domain::masking::MaskedValue;
use domain::money::{Asset, MinorUnits};
use domain::rail::answers::AnswerRules;
use domain::rail::file_rail::{FileNumbering, Settlement};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest, WrittenFile};
use domain::rail::limits::FileLimits;
use domain::rail::report::{
    BankFileReader, BankReport, ItemOutcome, ItemReport, ReadOutcome, ReturnReason,
};
use serde::Deserialize;
use serde_json::json;

use crate::refused;
use crate::settings::{Check, SettingsError};
use crate::unit::{FILE_DROP, RailSettings, RailUnit, read};

/// The `aud/direct-entry` rail.
pub const UNIT: RailUnit = RailUnit {
    method: domain::account::PayoutMethod::DirectEntry,
    format: "aba",
    numbering: NUMBERING,
    limits: LIMITS,
    settlement: SETTLEMENT,
    answers: ANSWERS,
    transports: FILE_DROP,
    settles_on_weekends: false,
    settings: read::<AbaSettings>,
};

/// How ABA files are numbered: the file carries no number, so the framework's overall count,
/// which the writer does not use.
pub const NUMBERING: FileNumbering = FileNumbering::Overall;

/// What one ABA file holds: the file total record counts 999,999 detail records (six digits),
/// one of them kept for the self-balancing debit, and its credit, debit and net totals carry
/// ten digits of cents ([`aba::MAX_AMOUNT`]). The file names no number, so a batch may have
/// any number of parts.
pub const LIMITS: FileLimits = FileLimits {
    max_items: 999_998,
    max_total: Some(9_999_999_999),
    max_parts: u32::MAX,
};

/// How direct entry payouts settle: on the processing date unless returned.
pub const SETTLEMENT: Settlement = Settlement::OnEffectiveDate;

/// Which of the bank's answers may follow which: a bank file rail, with returns after
/// settlement and files named by the bank.
pub const ANSWERS: AnswerRules = AnswerRules::FILE_RAIL;

/// The file name extension.
pub const EXTENSION: &str = "aba";

/// Characters of a lodgement reference.
const REFERENCE_LENGTH: usize = 18;

/// The originator details a bank gives for direct entry: the keys of
/// `[rails."aud/direct-entry"]`. `Debug` masks the trace BSB and account.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AbaSettings {
    /// The bank's three-letter mnemonic, e.g. `CBA`, `WBC`, `NAB`, `ANZ`.
    pub bank_mnemonic: String,
    /// The user name the bank registered for the APCA user id (26 characters).
    pub user_name: String,
    /// The APCA direct entry user id: six digits.
    pub apca_user_id: String,
    /// Description of the entries (12 characters), e.g. `PAYOUTS`.
    pub description: String,
    /// The name payees see on their statements (16 characters).
    pub remitter_name: String,
    /// BSB of the originator's account, where returns are paid: six digits.
    pub trace_bsb: String,
    /// The originator's account number at that BSB: five to nine digits.
    pub trace_account: String,
    /// Whether each file ends with a debit of the trace account for the file's credit total
    /// (banks require it of some users; others refuse it). `false` when not given.
    #[serde(default)]
    pub self_balancing: bool,
}

impl std::fmt::Debug for AbaSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AbaSettings")
            .field("bank_mnemonic", &self.bank_mnemonic)
            .field("user_name", &self.user_name)
            .field("apca_user_id", &self.apca_user_id)
            .field("description", &self.description)
            .field("remitter_name", &self.remitter_name)
            .field("trace_bsb", &"***")
            .field("trace_account", &"***")
            .field("self_balancing", &self.self_balancing)
            .finish()
    }
}

/// A free-text setting: written as it is, so it must already be in the writer's character
/// set and fit its field.
fn text(check: &mut Check, setting: &'static str, value: &str, width: usize) {
    if value.trim().is_empty() {
        check.push(setting, "is empty");
    } else if value.chars().count() > width {
        check.push(
            setting,
            format!("is longer than the {width} characters of its ABA field"),
        );
    } else if let Some(c) = value.chars().find(|c| !aba::is_allowed_char(*c)) {
        check.push(
            setting,
            format!(
                "{c:?} is not written in an ABA file (upper-case letters, digits, spaces and {} only)",
                aba::ALLOWED_SYMBOLS
            ),
        );
    }
}

impl AbaSettings {
    /// Checks every setting against the ABA layout.
    ///
    /// # Errors
    /// Every wrong setting, by key (the messages never repeat an account value).
    pub fn validate(&self) -> Result<(), SettingsError> {
        let mut check = Check::default();
        let mnemonic = &self.bank_mnemonic;
        check.require(
            mnemonic.len() == 3 && mnemonic.bytes().all(|b| b.is_ascii_uppercase()),
            "bank_mnemonic",
            "must be the bank's three upper-case letters, e.g. CBA",
        );
        text(&mut check, "user_name", &self.user_name, 26);
        check.require(
            digits(&self.apca_user_id, 6..=6),
            "apca_user_id",
            "must be six digits",
        );
        text(&mut check, "description", &self.description, 12);
        text(&mut check, "remitter_name", &self.remitter_name, 16);
        check.require(
            digits(&self.trace_bsb, 6..=6),
            "trace_bsb",
            "must be six digits, without a separator",
        );
        check.require(
            digits(&self.trace_account, 5..=9),
            "trace_account",
            "must be 5 to 9 digits",
        );
        check.finish()
    }
}

impl RailSettings for AbaSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        AbaSettings::validate(self)
    }

    fn writer(&self) -> Arc<dyn BankFileWriter> {
        Arc::new(AbaWriter {
            settings: self.clone(),
        })
    }

    fn reader(&self) -> Arc<dyn BankFileReader> {
        Arc::new(AbaReader)
    }

    fn summary(&self) -> serde_json::Value {
        json!({
            "bank_mnemonic": self.bank_mnemonic,
            "user_name": self.user_name,
            "apca_user_id": self.apca_user_id,
            "description": self.description,
            "remitter_name": self.remitter_name,
            "trace_bsb": MaskedValue::mask(&self.trace_bsb).as_str(),
            "trace_account": MaskedValue::mask(&self.trace_account).as_str(),
            "self_balancing": self.self_balancing,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The ABA writer of a rail.
#[derive(Debug, Clone)]
pub struct AbaWriter {
    settings: AbaSettings,
}

impl AbaWriter {
    /// A writer with checked settings.
    ///
    /// # Errors
    /// Every wrong setting ([`AbaSettings::validate`]).
    pub fn new(settings: AbaSettings) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self { settings })
    }
}

/// The lodgement reference of a payout: its id's first 18 hex digits, upper case.
#[must_use]
pub fn lodgement_reference(payout_id: &domain::ids::PayoutId) -> String {
    let mut hex = payout_id.as_uuid().simple().to_string();
    hex.truncate(REFERENCE_LENGTH);
    hex.to_ascii_uppercase()
}

impl AbaWriter {
    fn payment(&self, instruction: &CreditInstruction) -> Result<DetailRecord, PortError> {
        let payout = instruction.payout_id;
        let bsb = instruction
            .receiving_bank
            .as_ref()
            .map(|bank| bank.expose().clone())
            .ok_or_else(|| refused(format!("payout {payout} has no BSB")))?;
        if !digits(&bsb, 6..=6) {
            return Err(refused(format!(
                "payout {payout}: the BSB is not six digits"
            )));
        }
        let account = instruction.account.expose().clone();
        if !digits(&account, 1..=9) {
            return Err(refused(format!(
                "payout {payout}: the account number is not 1 to 9 digits"
            )));
        }
        let amount = u64::try_from(instruction.amount.get())
            .ok()
            .filter(|cents| (1..=aba::MAX_AMOUNT).contains(cents))
            .ok_or_else(|| {
                refused(format!(
                    "payout {payout}: the amount is more than the {} cents an ABA record carries",
                    aba::MAX_AMOUNT
                ))
            })?;
        let title = aba::clean_text(&instruction.payee_name, 32);
        if title.is_empty() {
            return Err(refused(format!(
                "payout {payout}: the payee name has no letter or digit an ABA file can carry"
            )));
        }
        let s = &self.settings;
        Ok(DetailRecord {
            bsb,
            account_number: account,
            transaction_code: TransactionCode::Credit,
            amount,
            account_title: title,
            lodgement_reference: lodgement_reference(&payout),
            trace_bsb: s.trace_bsb.clone(),
            trace_account: s.trace_account.clone(),
            remitter_name: s.remitter_name.clone(),
            kind: DetailKind::Payment {
                indicator: Indicator::None,
                withholding_tax: 0,
            },
        })
    }

    fn balancing_debit(&self, request: &FileRequest, credit_total: u64) -> DetailRecord {
        let s = &self.settings;
        let mut batch = request.batch_id.as_uuid().simple().to_string();
        batch.truncate(REFERENCE_LENGTH);
        DetailRecord {
            bsb: s.trace_bsb.clone(),
            account_number: s.trace_account.clone(),
            transaction_code: TransactionCode::Debit,
            amount: credit_total,
            account_title: s.user_name.clone(),
            lodgement_reference: batch.to_ascii_uppercase(),
            trace_bsb: s.trace_bsb.clone(),
            trace_account: s.trace_account.clone(),
            remitter_name: s.remitter_name.clone(),
            kind: DetailKind::Payment {
                indicator: Indicator::None,
                withholding_tax: 0,
            },
        }
    }
}

impl BankFileWriter for AbaWriter {
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError> {
        if request.asset != Asset::Aud {
            return Err(refused(format!(
                "an ABA file pays AUD, not {}",
                request.asset.code()
            )));
        }
        let mut details = request
            .instructions
            .iter()
            .map(|instruction| self.payment(instruction))
            .collect::<Result<Vec<_>, _>>()?;
        let references: Vec<String> = details
            .iter()
            .map(|d| d.lodgement_reference.clone())
            .collect();
        let mut seen = std::collections::HashMap::new();
        for (instruction, reference) in request.instructions.iter().zip(&references) {
            if let Some(first) = seen.insert(reference.as_str(), instruction.payout_id) {
                return Err(refused(format!(
                    "payouts {first} and {} share the lodgement reference {reference}: a return could not tell them apart",
                    instruction.payout_id
                )));
            }
        }
        if self.settings.self_balancing {
            let credit_total = details
                .iter()
                .try_fold(0u64, |sum, d| sum.checked_add(d.amount))
                .filter(|total| *total <= aba::MAX_AMOUNT)
                .ok_or_else(|| {
                    refused(format!(
                        "the file's credit total is more than the {} cents an ABA total carries",
                        aba::MAX_AMOUNT
                    ))
                })?;
            details.push(self.balancing_debit(request, credit_total));
        }
        let s = &self.settings;
        let file = AbaFile {
            descriptive: DescriptiveRecord {
                reel_sequence: 1,
                bank_mnemonic: s.bank_mnemonic.clone(),
                user_name: s.user_name.clone(),
                apca_user_id: s.apca_user_id.clone(),
                description: s.description.clone(),
                processing_date: request.effective_date,
            },
            details,
        };
        let bytes = aba::write(&file)
            .map_err(|e| refused(format!("the ABA file cannot be written: {e}")))?;
        Ok(WrittenFile {
            extension: EXTENSION,
            bytes,
            references,
        })
    }
}

/// Whether `bytes` start like an ABA file: a descriptive record (`0`, 17 blanks, a two-digit
/// reel sequence number).
#[must_use]
pub fn looks_like_aba(bytes: &[u8]) -> bool {
    bytes.len() >= 20
        && bytes.first() == Some(&b'0')
        && bytes
            .get(1..18)
            .is_some_and(|b| b.iter().all(|c| *c == b' '))
        && bytes
            .get(18..20)
            .is_some_and(|b| b.iter().all(u8::is_ascii_digit))
}

/// Whether the records of `bytes` (read loosely, for a file the parser refused) include
/// payments (type 1) and no returns (type 2): an originated file rather than a return file.
fn looks_originated(bytes: &[u8]) -> bool {
    let mut payments = false;
    for record in bytes.split(|b| *b == b'\n') {
        match record.first() {
            Some(b'1') => payments = true,
            Some(b'2') => return false,
            _ => {}
        }
    }
    payments
}

/// The reason a return code gives.
fn return_reason(code: ReturnCode) -> ReturnReason {
    ReturnReason {
        code: code.to_string(),
        reason: code
            .reason()
            .map_or_else(|| format!("return reason {code}"), str::to_owned),
        account_is_invalid: code.account_is_invalid(),
    }
}

/// The reader of the bank's ABA return files: one report per returned payment (type 2),
/// named by its lodgement reference, which is the payout's reference. Originated files
/// (payments only: ours, should one reach the inbound directory) and files of other formats
/// are not this reader's.
#[derive(Debug, Clone, Copy, Default)]
pub struct AbaReader;

impl BankFileReader for AbaReader {
    fn read(&self, _name: &str, bytes: &[u8]) -> Result<ReadOutcome, PortError> {
        if !looks_like_aba(bytes) {
            return Ok(ReadOutcome::NotMine);
        }
        let file = match aba::parse(bytes) {
            Ok(file) => file,
            Err(_) if looks_originated(bytes) => return Ok(ReadOutcome::NotMine),
            Err(e) => {
                return Ok(ReadOutcome::Unreadable(format!(
                    "not a valid ABA return file: {e}"
                )));
            }
        };
        let items: Vec<ItemReport> = file
            .returns()
            .filter_map(|returned| {
                let code = returned.return_code()?;
                Some(ItemReport {
                    reference: returned.lodgement_reference.clone(),
                    outcome: ItemOutcome::Returned {
                        reason: return_reason(code),
                        amount: i64::try_from(returned.amount)
                            .ok()
                            .and_then(|cents| MinorUnits::new(cents).ok()),
                    },
                })
            })
            .collect();
        if items.is_empty() {
            // Payments only: an originated file, not the bank's answer.
            return Ok(ReadOutcome::NotMine);
        }
        Ok(ReadOutcome::Report(BankReport { file: None, items }))
    }
}
