//! `cad/eft`: one Payments Canada Standard 005 file per closed batch (or several when the batch
//! has more than [`LIMITS`] allows, each with its own file creation number), one `C` (credit)
//! segment per payout.
//!
//! Field mapping (positions as in the Standard 005 layout):
//! - header `A`: the settings' `originator_id` and `data_centre`; the file creation number from
//!   the rail's overall file number (`request.sequence`, 1 → `0001` … 9999 → `9999`, then
//!   10000 → `0001` again: the four-digit number wraps, as banks expect a number that goes on
//!   from the last one and never `0000`); the creation date of the file (UTC) as `0YYDDD`;
//!   currency `CAD`.
//! - one segment per payout, six per `C` record: the settings' `transaction_code`; the amount in
//!   cents; the effective date as the date funds are available; the `receiving_bank`
//!   (`0IIITTTTT`) and `account` of the payout's account; trace number and stored transaction
//!   type zeros; the settings' short and long names, direct clearer's user ID (the originator's
//!   ID when not set), institution and account for returns; the payee's name; the payout's
//!   reference as originator's cross reference; the remittance text as sundry information. The
//!   account kind (`checking`/`savings`) has no field in Standard 005 and is not written.
//! - the reference ([`reference()`]): 19 upper-case hex digits of the payout id, its version and
//!   variant digits left out, so the 76 bits are random (UUID v4) and unique across the rail's
//!   files. The bank's returned items repeat it.

use std::sync::Arc;

use bank_codes::digits::is_ascii_digits;
use bank_formats::cpa005::{
    self, Cpa005File, Header, LineEnding, Location, RecordType, Transaction, WriteOptions,
};
use domain::PortError;
use domain::account::ca::CaRoutingNumber;
use domain::ids::PayoutId;
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

/// The `cad/eft` rail.
pub const UNIT: RailUnit = RailUnit {
    method: domain::account::PayoutMethod::Eft,
    format: "cpa-005",
    numbering: NUMBERING,
    limits: LIMITS,
    settlement: SETTLEMENT,
    answers: ANSWERS,
    transports: FILE_DROP,
    settles_on_weekends: false,
    settings: read::<Cpa005Settings>,
};

/// How Standard 005 files are numbered: one count over all the rail's files (the file creation
/// number).
pub const NUMBERING: FileNumbering = FileNumbering::Overall;

/// What one Standard 005 file holds: the trailer's total credit count carries eight digits and
/// its total credit value fourteen (cents); the record count (nine digits, one `C` record per six
/// credits) follows. Each part takes the next file creation number (1 to 9999, then 1 again).
pub const LIMITS: FileLimits = FileLimits {
    max_items: 99_999_999,
    max_total: Some(99_999_999_999_999),
    max_parts: u32::MAX,
};

/// How EFT payouts settle: on the effective date unless returned (no positive confirmation).
pub const SETTLEMENT: Settlement = Settlement::OnEffectiveDate;

/// Which of the bank's answers may follow which: a bank file rail, with returns after
/// settlement and files named by the bank.
pub const ANSWERS: AnswerRules = AnswerRules::FILE_RAIL;

/// The file name extension.
pub const EXTENSION: &str = "cpa";

/// `line_ending`: what follows each record, as the bank's transmission guide asks.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(from = "String")]
pub enum RecordEnd {
    /// `"crlf"`: `\r\n`, the default.
    #[default]
    CrLf,
    /// `"lf"`: `\n`.
    Lf,
    /// `"none"`: records follow each other (a fixed-length file).
    None,
    /// Anything else, which `validate` refuses.
    Unknown(String),
}

impl From<String> for RecordEnd {
    fn from(name: String) -> Self {
        match name.as_str() {
            "crlf" => Self::CrLf,
            "lf" => Self::Lf,
            "none" => Self::None,
            _ => Self::Unknown(name),
        }
    }
}

impl RecordEnd {
    /// The writer's line ending (`None` for an unknown one).
    pub fn line_ending(&self) -> Option<LineEnding> {
        match self {
            Self::CrLf => Some(LineEnding::CrLf),
            Self::Lf => Some(LineEnding::Lf),
            Self::None => Some(LineEnding::None),
            Self::Unknown(_) => None,
        }
    }
}

/// The originator details a bank gives for Standard 005 (AFT) origination: the keys of
/// `[rails."cad/eft"]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cpa005Settings {
    /// The originator's ID the bank assigned: 1 to 10 upper-case letters or digits.
    pub originator_id: String,
    /// The bank's destination data centre: five digits.
    pub data_centre: String,
    /// The originator's name payees see where space is short: 1 to 15 characters.
    pub originator_short_name: String,
    /// The originator's full name: 1 to 30 characters.
    pub originator_long_name: String,
    /// The originating direct clearer's user ID, when the bank gives one different from the
    /// originator's ID: 1 to 10 upper-case letters or digits.
    #[serde(default)]
    pub direct_clearer_user_id: Option<String>,
    /// Where returned items go: institution and transit `0IIITTTTT` of the originator's account.
    pub return_institution: String,
    /// Where returned items go: the originator's account number, 1 to 12 digits.
    pub return_account: String,
    /// The CPA transaction code of the credits (Payments Canada Standard 007), 1 to 999, e.g.
    /// 200 (payroll deposit), 450 (miscellaneous payments), 460 (accounts payable).
    pub transaction_code: u16,
    /// What follows each record: `\r\n` unless the bank asks otherwise.
    #[serde(default)]
    pub line_ending: RecordEnd,
}

/// The names' characters: those the writer lets through unchanged.
fn text(check: &mut Check, setting: &'static str, value: &str, width: usize) {
    if value.trim().is_empty() {
        check.push(setting, "is empty");
    } else if value.chars().count() > width {
        check.push(
            setting,
            format!("is longer than the {width} characters of its Standard 005 field"),
        );
    } else if value.starts_with(' ') || value.ends_with(' ') {
        check.push(setting, "starts or ends with a blank");
    } else if let Some(c) = value.chars().find(|c| !cpa005::is_allowed_char(*c)) {
        check.push(
            setting,
            format!(
                "{c:?} is not allowed: use upper-case letters, digits, blanks and {}",
                cpa005::ALLOWED_SYMBOLS
            ),
        );
    }
}

/// An identifier: 1 to `width` upper-case letters or digits.
fn identifier(check: &mut Check, setting: &'static str, value: &str, width: usize) {
    let valid = (1..=width).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
    check.require(
        valid,
        setting,
        format!("must be 1 to {width} upper-case letters or digits"),
    );
}

impl Cpa005Settings {
    /// Checks every setting against the Standard 005 layout.
    ///
    /// # Errors
    /// Every wrong setting, by key.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let mut check = Check::default();
        identifier(&mut check, "originator_id", &self.originator_id, 10);
        check.require(
            is_ascii_digits(&self.data_centre, 5..=5),
            "data_centre",
            "must be 5 digits",
        );
        text(
            &mut check,
            "originator_short_name",
            &self.originator_short_name,
            15,
        );
        text(
            &mut check,
            "originator_long_name",
            &self.originator_long_name,
            30,
        );
        if let Some(user_id) = &self.direct_clearer_user_id {
            identifier(&mut check, "direct_clearer_user_id", user_id, 10);
        }
        check.require(
            CaRoutingNumber::parse(&self.return_institution)
                .is_ok_and(|number| number.as_str() == self.return_institution),
            "return_institution",
            "must be 0IIITTTTT: a zero, a known 3-digit institution number and the 5-digit \
             transit number",
        );
        check.require(
            is_ascii_digits(&self.return_account, 1..=12),
            "return_account",
            "must be 1 to 12 digits",
        );
        check.require(
            (1..=999).contains(&self.transaction_code),
            "transaction_code",
            "must be a 3-digit CPA transaction code, 001 to 999",
        );
        if let RecordEnd::Unknown(other) = &self.line_ending {
            check.push(
                "line_ending",
                format!("must be \"crlf\" (the default), \"lf\" or \"none\", got {other:?}"),
            );
        }
        check.finish()
    }
}

impl RailSettings for Cpa005Settings {
    fn validate(&self) -> Result<(), SettingsError> {
        Cpa005Settings::validate(self)
    }

    fn writer(&self) -> Arc<dyn BankFileWriter> {
        Arc::new(Cpa005Writer {
            settings: self.clone(),
        })
    }

    fn reader(&self) -> Arc<dyn BankFileReader> {
        Arc::new(Cpa005Reader)
    }

    fn summary(&self) -> serde_json::Value {
        json!({
            "originator_id": self.originator_id,
            "data_centre": self.data_centre,
            "originator_short_name": self.originator_short_name,
            "originator_long_name": self.originator_long_name,
            "direct_clearer_user_id": self.direct_clearer_user_id,
            "return_institution": MaskedValue::mask(&self.return_institution).as_str(),
            "return_account": MaskedValue::mask(&self.return_account).as_str(),
            "transaction_code": self.transaction_code,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The Standard 005 writer of a rail.
#[derive(Debug, Clone)]
pub struct Cpa005Writer {
    settings: Cpa005Settings,
}

impl Cpa005Writer {
    /// A writer with checked settings.
    ///
    /// # Errors
    /// Every wrong setting ([`Cpa005Settings::validate`]).
    pub fn new(settings: Cpa005Settings) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self { settings })
    }
}

/// The file creation number of the rail's `sequence`th file: 1 to 9999, then 1 again; `None`
/// for 0.
#[must_use]
pub fn file_creation_number(sequence: u32) -> Option<u16> {
    let number = sequence.checked_sub(1)? % u32::from(cpa005::MAX_FILE_CREATION_NUMBER) + 1;
    u16::try_from(number).ok()
}

/// The payout's reference in a Standard 005 file (originator's cross reference, 19 of its 19
/// characters): the payout id's upper-case hex digits without the UUID version digit (the
/// 13th) and variant digit (the 17th), first 19.
#[must_use]
pub fn reference(payout_id: PayoutId) -> String {
    let hex = payout_id
        .as_uuid()
        .simple()
        .to_string()
        .to_ascii_uppercase();
    hex.char_indices()
        .filter(|(i, _)| *i != 12 && *i != 16)
        .map(|(_, c)| c)
        .take(19)
        .collect()
}

impl Cpa005Writer {
    fn transaction(
        &self,
        request: &FileRequest,
        instruction: &CreditInstruction,
    ) -> Result<Transaction, PortError> {
        let s = &self.settings;
        let payout = instruction.payout_id;
        let institution_id = instruction
            .receiving_bank
            .as_ref()
            .map(|bank| bank.expose().clone())
            .ok_or_else(|| {
                refused(format!(
                    "payout {payout} has no institution and transit number"
                ))
            })?;
        let amount = u64::try_from(instruction.amount.get())
            .map_err(|_| refused(format!("payout {payout}: negative amount")))?;
        Ok(Transaction {
            record_type: RecordType::Credit,
            transaction_type: s.transaction_code,
            amount,
            due_date: request.effective_date,
            institution_id,
            account_number: instruction.account.expose().clone(),
            item_trace_number: "0".repeat(22),
            stored_transaction_type: "000".to_owned(),
            originator_short_name: s.originator_short_name.clone(),
            payee_name: instruction.payee_name.clone(),
            originator_long_name: s.originator_long_name.clone(),
            direct_clearer_user_id: s
                .direct_clearer_user_id
                .clone()
                .unwrap_or_else(|| s.originator_id.clone()),
            cross_reference: reference(payout),
            return_institution_id: s.return_institution.clone(),
            return_account_number: s.return_account.clone(),
            sundry_information: instruction.remittance.clone(),
            returned: None,
        })
    }
}

impl BankFileWriter for Cpa005Writer {
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError> {
        if request.asset != Asset::Cad {
            return Err(refused(format!(
                "a Standard 005 file of this rail pays CAD, not {}",
                request.asset.code()
            )));
        }
        let number = file_creation_number(request.sequence).ok_or_else(|| {
            refused(format!(
                "file number {} is not a Standard 005 file creation number",
                request.sequence
            ))
        })?;
        let transactions = request
            .instructions
            .iter()
            .map(|instruction| self.transaction(request, instruction))
            .collect::<Result<Vec<_>, _>>()?;
        let references: Vec<String> = transactions
            .iter()
            .map(|t| t.cross_reference.clone())
            .collect();
        let mut seen = std::collections::HashSet::new();
        if let Some(i) = references.iter().position(|r| !seen.insert(r)) {
            let payout = request.instructions.get(i).map(|i| i.payout_id.to_string());
            return Err(refused(format!(
                "payout {}: another payout of the file has the same reference",
                payout.unwrap_or_default()
            )));
        }
        let s = &self.settings;
        let file = Cpa005File {
            header: Header {
                originator_id: s.originator_id.clone(),
                file_creation_number: number,
                creation_date: request.created_at.date_naive(),
                destination_data_centre: s.data_centre.clone(),
                currency: "CAD".to_owned(),
            },
            transactions,
        };
        let bytes = cpa005::write(
            &file,
            &WriteOptions {
                line_ending: s.line_ending.line_ending().unwrap_or_default(),
            },
        )
        .map_err(|e| match e.location {
            // Name the payout and the field, never the value.
            Location::Transaction { index } => refused(format!(
                "payout {}: the Standard 005 {} {}",
                request
                    .instructions
                    .get(index)
                    .map_or_else(|| format!("#{index}"), |i| i.payout_id.to_string()),
                e.field,
                e.problem
            )),
            Location::Header | Location::Trailer => {
                refused(format!("the Standard 005 file cannot be written: {e}"))
            }
        })?;
        Ok(WrittenFile {
            extension: EXTENSION,
            bytes,
            references,
        })
    }
}

/// Whether `bytes` start like a Standard 005 file: a header record `A` with record count
/// `000000001`.
#[must_use]
pub fn looks_like_cpa005(bytes: &[u8]) -> bool {
    bytes.starts_with(b"A000000001")
}

/// The reader of the bank's Standard 005 files of returned items: each returned credit (`I`)
/// names its payout by the originator's cross reference, which is the payout's reference.
/// Standard 005 origination files (`C`, `D` only), which may sit in the same directory, are
/// not its files.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpa005Reader;

impl BankFileReader for Cpa005Reader {
    fn read(&self, _name: &str, bytes: &[u8]) -> Result<ReadOutcome, PortError> {
        if !looks_like_cpa005(bytes) {
            return Ok(ReadOutcome::NotMine);
        }
        let file = match cpa005::parse(bytes) {
            Ok(file) => file,
            Err(e) => {
                return Ok(ReadOutcome::Unreadable(format!(
                    "not a valid Standard 005 file: {e}"
                )));
            }
        };
        let returns = file
            .transactions
            .iter()
            .filter(|t| t.record_type.is_return())
            .count();
        if returns == 0 && !file.transactions.is_empty() {
            // An origination file (ours, or a copy): nothing the bank says.
            return Ok(ReadOutcome::NotMine);
        }
        if returns != file.transactions.len() {
            return Ok(ReadOutcome::Unreadable(
                "a Standard 005 file mixing originated and returned items".to_owned(),
            ));
        }
        let items = file
            .transactions
            .iter()
            .filter_map(|t| {
                let details = t.returned?;
                let code = details.reason.to_string();
                let reason = details
                    .reason
                    .reason()
                    .map_or_else(|| format!("return reason {code}"), str::to_owned);
                let outcome = match t.record_type {
                    RecordType::ReturnedCredit => ItemOutcome::Returned {
                        reason: ReturnReason {
                            code,
                            reason,
                            account_is_invalid: details.reason.account_is_invalid(),
                        },
                        amount: i64::try_from(t.amount)
                            .ok()
                            .and_then(|cents| MinorUnits::new(cents).ok()),
                    },
                    // payoutd sends no debits: a returned debit is recorded, not applied.
                    _ => ItemOutcome::Notice {
                        code,
                        reason: format!("returned debit: {reason}"),
                    },
                };
                Some(ItemReport {
                    reference: t.cross_reference.clone(),
                    outcome,
                })
            })
            .collect();
        Ok(ReadOutcome::Report(BankReport { file: None, items }))
    }
}
