//! `usd/ach`: one NACHA file per closed batch (or several, its parts, when the batch has more
//! payouts than one file holds: [`LIMITS`]), one batch of PPD (or CCD) credits in each.
//!
//! Field mapping (positions as in the NACHA layout):
//! - file header: immediate destination and origin with their names from the settings; the
//!   creation date and time of the file (UTC); the file id modifier from the file's number of
//!   the day (1 → `A` … 26 → `Z`, 27 → `0` … 36 → `9`: a 37th file on one day is refused); the
//!   reference code is the first eight hex digits of the batch id.
//! - batch header: service class 220 (credits only), company name, id and entry description
//!   from the settings, the payoutd batch's first 20 hex digits as discretionary data, the
//!   effective entry date of the file, the originating DFI from the settings, batch number 1.
//! - one entry per payout: transaction code 22 (checking) or 32 (savings) from the account's
//!   `account_type`, the `routing_number` as receiving DFI and check digit, the
//!   `account_number`, the amount in cents, the payout id's first 15 hex digits as individual
//!   id, the payee's name, and one addenda 05 with the remittance text.
//! - trace numbers: the originating DFI's eight digits, then a sequence unique among the day's
//!   files: `(file number of the day − 1) × 100 000 + position`, so a return's trace number
//!   names one entry of one file of its day. They are the payouts' references.

use std::sync::Arc;

use bank_codes::digits::is_ascii_digits;
use bank_formats::nacha::{
    self, Addenda, Addenda05, Batch, BatchHeader, EntryDetail, FileHeader, LineEnding, NachaFile,
    SecCode, ServiceClass, TransactionCode, WriteOptions,
};
use domain::PortError;
use domain::account::us::AccountType;
use domain::money::Asset;
use domain::rail::answers::AnswerRules;
use domain::rail::file_rail::{FileNumbering, Settlement};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest, WrittenFile};
use domain::rail::limits::FileLimits;
use serde::{Deserialize, Deserializer};
use serde_json::json;

use crate::refused;
use crate::settings::{Check, SettingsError};
use crate::unit::{FILE_DROP, RailSettings, RailUnit, read};

/// The `usd/ach` rail.
pub const UNIT: RailUnit = RailUnit {
    method: domain::account::PayoutMethod::Ach,
    format: "nacha",
    numbering: NUMBERING,
    limits: LIMITS,
    settlement: SETTLEMENT,
    answers: ANSWERS,
    transports: FILE_DROP,
    settles_on_weekends: false,
    settings: read::<NachaSettings>,
};

/// Files a day can have: the file id modifier's 36 values.
pub const MAX_FILES_PER_DAY: u32 = 36;

/// Entries one file can have with day-unique trace numbers.
pub const MAX_ENTRIES_PER_FILE: usize = 99_999;

/// The largest credit total of a file: the batch and file control records' total credit
/// amounts, twelve digits of cents.
pub const MAX_FILE_TOTAL: i64 = 999_999_999_999;

/// What one NACHA file holds: [`MAX_ENTRIES_PER_FILE`] entries (the trace numbering gives each
/// of the day's files 100,000 sequence numbers; with one addenda each, 199,998 entry/addenda
/// records fit the batch control's six digits and the file control's eight, and 20,001 blocks
/// its six), a credit total of [`MAX_FILE_TOTAL`], and one file per file id modifier: at most
/// [`MAX_FILES_PER_DAY`] parts (the day's other files take modifiers too: the writer refuses a
/// 37th).
pub const LIMITS: FileLimits = FileLimits {
    max_items: MAX_ENTRIES_PER_FILE,
    max_total: Some(MAX_FILE_TOTAL),
    max_parts: MAX_FILES_PER_DAY,
};

/// How NACHA files are numbered: per day (the file id modifier).
pub const NUMBERING: FileNumbering = FileNumbering::PerDay;

/// How NACHA payouts settle: on the effective date unless returned (no positive confirmation).
pub const SETTLEMENT: Settlement = Settlement::OnEffectiveDate;

/// Which of the bank's answers may follow which: a bank file rail, with returns after
/// settlement and files named by the bank.
pub const ANSWERS: AnswerRules = AnswerRules::FILE_RAIL;

/// The file name extension.
pub const EXTENSION: &str = "ach";

/// The standard entry class of the rail's credits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EntryClass {
    /// Consumer accounts (receivers are people): the default.
    #[default]
    Ppd,
    /// Business accounts.
    Ccd,
}

/// The originator details a bank gives for NACHA origination: the keys of `[rails."usd/ach"]`
/// (names and descriptions are read trimmed and upper-cased, as the file carries them).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NachaSettings {
    /// The bank the files go to: its nine-digit routing number.
    pub immediate_destination: String,
    /// Its name (23 characters).
    #[serde(deserialize_with = "nacha_text")]
    pub immediate_destination_name: String,
    /// The originator's identification at that bank: nine or ten digits.
    pub immediate_origin: String,
    /// The originator's name (23 characters).
    #[serde(deserialize_with = "nacha_text")]
    pub immediate_origin_name: String,
    /// The name receivers see (16 characters).
    #[serde(deserialize_with = "nacha_text")]
    pub company_name: String,
    /// The company identification (10 characters, often `1` and a tax id).
    pub company_id: String,
    /// The originating bank: the first eight digits of its routing number.
    pub odfi_routing: String,
    /// The purpose receivers see (10 characters), e.g. `PAYOUT`.
    #[serde(deserialize_with = "nacha_text")]
    pub entry_description: String,
    /// PPD (receivers are people, what payoutd pays) or CCD; not a key of the file.
    #[serde(skip)]
    pub entry_class: EntryClass,
    /// What separates records (`\n`); not a key of the file.
    #[serde(skip)]
    pub line_ending: LineEnding,
}

/// A name or description as the file carries it: trimmed and upper-cased (letters outside
/// ASCII are left for `validate` to refuse).
fn nacha_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(String::deserialize(deserializer)?
        .trim()
        .to_ascii_uppercase())
}

impl NachaSettings {
    /// Checks every setting against the NACHA layout.
    ///
    /// # Errors
    /// Every wrong setting, by key.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let mut check = Check::default();
        check.require(
            bank_codes::us_routing::is_valid(&self.immediate_destination),
            "immediate_destination",
            format!(
                "must be a 9-digit ABA routing number with a valid check digit, got {:?}",
                self.immediate_destination
            ),
        );
        check.require(
            is_ascii_digits(&self.immediate_origin, 9..=10),
            "immediate_origin",
            format!("must be 9 or 10 digits, got {:?}", self.immediate_origin),
        );
        let company_id = self.company_id.chars().count();
        if company_id != 10 {
            check.push(
                "company_id",
                format!("must be 10 characters, got {company_id}"),
            );
        } else if let Some(c) = self
            .company_id
            .chars()
            .find(|c| !nacha::is_allowed_char(*c))
        {
            check.push(
                "company_id",
                format!(
                    "{c:?} is not allowed: upper-case letters, digits, space and {}",
                    nacha::ALLOWED_SYMBOLS
                ),
            );
        }
        check.require(
            is_ascii_digits(&self.odfi_routing, 8..=8),
            "odfi_routing",
            format!(
                "must be 8 digits (the routing number without its check digit), got {:?}",
                self.odfi_routing
            ),
        );
        for (setting, value, width) in [
            (
                "immediate_destination_name",
                &self.immediate_destination_name,
                23,
            ),
            ("immediate_origin_name", &self.immediate_origin_name, 23),
            ("company_name", &self.company_name, 16),
            ("entry_description", &self.entry_description, 10),
        ] {
            if !check.text(setting, value, width) {
                continue;
            }
            if let Some(c) = value.chars().find(|c| !nacha::is_allowed_char(*c)) {
                check.push(
                    setting,
                    format!(
                        "{c:?} is not allowed in a NACHA file (letters, digits, space and {})",
                        nacha::ALLOWED_SYMBOLS
                    ),
                );
            }
        }
        check.finish()
    }
}

impl RailSettings for NachaSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        NachaSettings::validate(self)
    }

    fn writer(&self) -> Arc<dyn BankFileWriter> {
        Arc::new(NachaWriter {
            settings: self.clone(),
        })
    }

    fn reader(&self) -> Arc<dyn domain::rail::report::BankFileReader> {
        Arc::new(NachaReader)
    }

    fn summary(&self) -> serde_json::Value {
        json!({
            "immediate_destination": self.immediate_destination,
            "immediate_destination_name": self.immediate_destination_name,
            "immediate_origin": self.immediate_origin,
            "immediate_origin_name": self.immediate_origin_name,
            "company_name": self.company_name,
            "company_id": self.company_id,
            "odfi_routing": self.odfi_routing,
            "entry_description": self.entry_description,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The NACHA writer of a rail.
#[derive(Debug, Clone)]
pub struct NachaWriter {
    settings: NachaSettings,
}

impl NachaWriter {
    /// A writer with checked settings.
    ///
    /// # Errors
    /// Every wrong setting ([`NachaSettings::validate`]).
    pub fn new(settings: NachaSettings) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self { settings })
    }
}

/// The file id modifier of the day's `sequence`th file.
pub fn file_id_modifier(sequence: u32) -> Option<char> {
    match sequence {
        1..=26 => char::from_u32(u32::from(b'A') + sequence - 1),
        27..=36 => char::from_digit(sequence - 27, 10),
        _ => None,
    }
}

/// The trace sequence (last seven digits of the trace number) of the entry at `position` of
/// the day's `sequence`th file.
pub fn trace_sequence(sequence: u32, position: usize) -> Option<u32> {
    if position >= MAX_ENTRIES_PER_FILE || !(1..=MAX_FILES_PER_DAY).contains(&sequence) {
        return None;
    }
    let position = u32::try_from(position).ok()?;
    Some((sequence - 1) * 100_000 + position + 1)
}

fn transaction_code(instruction: &CreditInstruction) -> TransactionCode {
    match instruction.account_kind {
        Some(AccountType::Checking) | None => TransactionCode::CheckingCredit,
        Some(AccountType::Savings) => TransactionCode::SavingsCredit,
    }
}

impl NachaWriter {
    fn entry(
        &self,
        request: &FileRequest,
        position: usize,
        instruction: &CreditInstruction,
    ) -> Result<EntryDetail, PortError> {
        let sequence = trace_sequence(request.sequence, position).ok_or_else(|| {
            refused(format!(
                "entry {} of file {} of the day: more than {MAX_ENTRIES_PER_FILE} entries",
                position + 1,
                request.sequence
            ))
        })?;
        let trace = nacha::trace_number(&self.settings.odfi_routing, sequence)
            .ok_or_else(|| refused("the originating DFI cannot start a trace number"))?;
        let receiving_dfi = instruction
            .receiving_bank
            .as_ref()
            .map(|bank| bank.expose().clone())
            .ok_or_else(|| {
                refused(format!(
                    "payout {} has no routing number",
                    instruction.payout_id
                ))
            })?;
        let amount = u64::try_from(instruction.amount.get())
            .map_err(|_| refused(format!("payout {}: negative amount", instruction.payout_id)))?;
        let payout_id = instruction.payout_id.as_uuid().simple().to_string();
        Ok(EntryDetail {
            transaction_code: transaction_code(instruction),
            receiving_dfi,
            account_number: instruction.account.expose().clone(),
            amount,
            individual_id: payout_id[..15].to_ascii_uppercase(),
            individual_name: nacha::clean_text(&instruction.payee_name, 22),
            discretionary_data: String::new(),
            trace_number: trace,
            addenda: vec![Addenda::PaymentRelated(Addenda05 {
                payment_related_information: nacha::clean_text(&instruction.remittance, 80),
            })],
        })
    }
}

impl BankFileWriter for NachaWriter {
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError> {
        if request.asset != Asset::Usd {
            return Err(refused(format!(
                "a NACHA file pays USD, not {}",
                request.asset.code()
            )));
        }
        let modifier = file_id_modifier(request.sequence).ok_or_else(|| {
            refused(format!(
                "file {} of the day: NACHA allows {MAX_FILES_PER_DAY} files a day",
                request.sequence
            ))
        })?;
        let entries = request
            .instructions
            .iter()
            .enumerate()
            .map(|(position, instruction)| self.entry(request, position, instruction))
            .collect::<Result<Vec<_>, _>>()?;
        let references = entries.iter().map(|e| e.trace_number.clone()).collect();
        let batch = request
            .batch_id
            .as_uuid()
            .simple()
            .to_string()
            .to_ascii_uppercase();
        let s = &self.settings;
        let file = NachaFile {
            header: FileHeader {
                immediate_destination: s.immediate_destination.clone(),
                immediate_origin: s.immediate_origin.clone(),
                creation_date: request.created_at.date_naive(),
                creation_time: Some(request.created_at.time()),
                file_id_modifier: modifier,
                immediate_destination_name: s.immediate_destination_name.clone(),
                immediate_origin_name: s.immediate_origin_name.clone(),
                reference_code: batch[..8].to_owned(),
            },
            batches: vec![Batch {
                header: BatchHeader {
                    service_class: ServiceClass::CreditsOnly,
                    company_name: s.company_name.clone(),
                    company_discretionary_data: batch[..20].to_owned(),
                    company_identification: s.company_id.clone(),
                    sec_code: match s.entry_class {
                        EntryClass::Ppd => SecCode::Ppd,
                        EntryClass::Ccd => SecCode::Ccd,
                    },
                    company_entry_description: s.entry_description.clone(),
                    company_descriptive_date: String::new(),
                    effective_entry_date: Some(request.effective_date),
                    originating_dfi: s.odfi_routing.clone(),
                    batch_number: 1,
                },
                entries,
            }],
        };
        let bytes = nacha::write(
            &file,
            &WriteOptions {
                line_ending: s.line_ending,
            },
        )
        .map_err(|e| refused(format!("the NACHA file cannot be written: {e}")))?;
        Ok(WrittenFile {
            extension: EXTENSION,
            bytes,
            references,
        })
    }
}

/// The reader of NACHA files from the bank: returns (Addenda99) and notifications of change
/// (Addenda98), with records shortened by trailing-blank stripping read as blank-filled. Return
/// entries name the returned entry by its trace number, which is the payout's reference.
/// Dishonored and contested returns (R61–R77) concern returns payoutd never dishonours and are
/// recorded as notices. An originated file (entries that are neither returns nor
/// notifications: payoutd's own, or anyone's, should one reach the inbound directory) is not
/// this reader's.
#[derive(Debug, Clone, Copy, Default)]
pub struct NachaReader;

/// Whether `bytes` start like a NACHA file: a file header record (`101`).
pub fn looks_like_nacha(bytes: &[u8]) -> bool {
    bytes.starts_with(b"101")
}

impl domain::rail::report::BankFileReader for NachaReader {
    fn read(
        &self,
        _name: &str,
        bytes: &[u8],
    ) -> Result<domain::rail::report::ReadOutcome, PortError> {
        use bank_formats::nacha::ReturnKind;
        use domain::money::MinorUnits;
        use domain::rail::report::{
            BankReport, ItemOutcome, ItemReport, ReadOutcome, ReturnReason,
        };

        if !looks_like_nacha(bytes) {
            return Ok(ReadOutcome::NotMine);
        }
        // Some banks' systems strip each record's trailing blanks: read those as blank-filled.
        let lenient = nacha::ParseOptions {
            allow_short_records: true,
        };
        let file = match nacha::parse_with(bytes, &lenient) {
            Ok(file) => file,
            Err(e) => {
                return Ok(ReadOutcome::Unreadable(format!(
                    "not a valid NACHA file: {e}"
                )));
            }
        };
        if file.returns().is_empty() && file.notifications_of_change().is_empty() {
            // No entry answers another (no Addenda99 or Addenda98): an originated file, what
            // was sent rather than the bank's answer.
            return Ok(ReadOutcome::NotMine);
        }
        let mut items = Vec::new();
        for returned in file.returns() {
            let code = returned.return_code.to_string();
            let reason = returned
                .reason
                .map_or_else(|| format!("return reason {code}"), str::to_owned);
            let outcome = match returned.kind {
                ReturnKind::Return => ItemOutcome::Returned {
                    reason: ReturnReason {
                        code,
                        reason,
                        account_is_invalid: returned.account_error,
                    },
                    amount: i64::try_from(returned.amount)
                        .ok()
                        .and_then(|cents| MinorUnits::new(cents).ok()),
                },
                ReturnKind::Dishonored | ReturnKind::Contested => {
                    ItemOutcome::Notice { code, reason }
                }
            };
            items.push(ItemReport {
                reference: returned.original_trace_number,
                outcome,
            });
        }
        for change in file.notifications_of_change() {
            items.push(ItemReport {
                reference: change.original_trace_number,
                outcome: ItemOutcome::Notice {
                    code: change.change_code.to_string(),
                    reason: change.reason.to_owned(),
                },
            });
        }
        Ok(ReadOutcome::Report(BankReport { file: None, items }))
    }
}
