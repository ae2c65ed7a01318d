//! `cad/digital`: Interac e-Transfer through a partner bank's HTTPS bulk API, one signed JSON
//! batch request per closed batch (or several when it has more than [`LIMITS`] allows, each with
//! its own `batch_id`), read back from the partner's status reports (the protocol of
//! `bank_formats::interac`, described in docs/RAILS.md, "Interac e-Transfer partner API").
//!
//! Field mapping of the batch request:
//! - `batch_id`: the batch id (32 hex digits, then `-<part>` from a batch's second request on),
//!   quoted back by every status report;
//!   `created_at`: when the request was written (UTC, whole seconds); `originator` and
//!   `sender_name`: the settings' partner customer id and sender name.
//! - one payment per payout: `payment_id` the payout id (32 hex digits, unique everywhere); the
//!   amount in cents; `CAD`; `recipient_name` the payee's name (cleaned, cut to 30 characters);
//!   `recipient_email` the account's `recipient` (the Address role); `memo` the remittance text
//!   (control characters and runs of white space made one space, cut to 400 characters);
//!   `expires_at` the creation time plus the settings' expiry days.
//!
//! The payment ids are the payouts' references. Payouts settle when the partner reports them
//! `deposited`; `declined`, `expired`, `cancelled` and `failed` payments are rejected (money
//! never left: the transfer is returned to the sender), `sent` is not final and changes
//! nothing.

use std::sync::Arc;

use bank_formats::interac::{
    self, BatchRequest, BatchVerdict, Currency, FailureCode, Payment, PaymentStatus, StatusReport,
};
use chrono::{DateTime, SubsecRound, TimeDelta, Utc};
use domain::PortError;
use domain::money::Asset;
use domain::rail::answers::{AnswerRules, ReportNames, Returns};
use domain::rail::file::RailFile;
use domain::rail::file_rail::{FileNumbering, Settlement};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest, WrittenFile};
use domain::rail::limits::FileLimits;
use domain::rail::report::{
    BankFileReader, BankReport, FileVerdict, ItemOutcome, ItemReport, ReadOutcome, ReturnReason,
};
use serde::Deserialize;
use serde_json::json;

use crate::refused;
use crate::settings::{Check, SettingsError};
use crate::unit::{RailSettings, RailUnit, TransportKind, read};

/// The `cad/digital` rail: batch requests go through the partner's API, nothing else.
pub const UNIT: RailUnit = RailUnit {
    method: domain::account::PayoutMethod::Digital,
    format: "interac-partner-api",
    numbering: NUMBERING,
    limits: LIMITS,
    settlement: SETTLEMENT,
    answers: ANSWERS,
    transports: &[TransportKind::PartnerApi],
    settles_on_weekends: true,
    settings: read::<InteracSettings>,
};

/// How batch requests are numbered (not used in the document: the batch id identifies it).
pub const NUMBERING: FileNumbering = FileNumbering::Overall;

/// What one batch request holds: the partner protocol's [`interac::MAX_PAYMENTS`] payments
/// (no total field); its `batch_id` ([`RailFile::batch_file_id`]) numbers up to 99 parts in
/// its 35 characters.
pub const LIMITS: FileLimits = FileLimits {
    max_items: interac::MAX_PAYMENTS,
    max_total: None,
    max_parts: 99,
};

/// How Interac payouts settle: when the partner reports them `deposited`.
pub const SETTLEMENT: Settlement = Settlement::OnConfirmation;

/// Which of the partner's answers may follow which: a deposited transfer is final (Interac has
/// no returns: a `declined`, `expired`, `cancelled` or `failed` transfer after a deposit is an
/// anomaly), and each report id names one document.
pub const ANSWERS: AnswerRules = AnswerRules {
    returns: Returns::Never,
    names: ReportNames::Unique,
};

/// The file name extension of batch requests.
pub const EXTENSION: &str = "json";

/// Default of `expiry_days`: what Interac allows at most.
pub const DEFAULT_EXPIRY_DAYS: u32 = 30;

/// The sender details a partner bank gives for Interac e-Transfer bulk sending: the keys of
/// `[rails."cad/digital"]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InteracSettings {
    /// payoutd's customer id at the partner (1 to 35 of `A-Z a-z 0-9 - _`).
    pub partner_customer_id: String,
    /// The sender's name recipients see in the notification (1 to 30 characters).
    pub sender_name: String,
    /// Days a recipient has to deposit a transfer before it expires (1 to 30, by default
    /// [`DEFAULT_EXPIRY_DAYS`]).
    #[serde(default = "default_expiry_days")]
    pub expiry_days: u32,
}

fn default_expiry_days() -> u32 {
    DEFAULT_EXPIRY_DAYS
}

impl InteracSettings {
    /// Checks every setting against the protocol.
    ///
    /// # Errors
    /// Every wrong setting, by key.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let mut check = Check::default();
        check.require(
            interac::is_identifier(&self.partner_customer_id, 35),
            "partner_customer_id",
            "must be 1 to 35 letters, digits, '-' or '_', not starting with '-'",
        );
        if self.sender_name.trim().is_empty() {
            check.push("sender_name", "is empty");
        } else if self.sender_name.chars().any(char::is_control)
            || self.sender_name.chars().count() > interac::NAME_MAX
        {
            check.push(
                "sender_name",
                "must be at most 30 characters without control characters",
            );
        }
        check.require(
            (1..=30).contains(&self.expiry_days),
            "expiry_days",
            "must be from 1 to 30",
        );
        check.finish()
    }
}

impl RailSettings for InteracSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        InteracSettings::validate(self)
    }

    fn writer(&self) -> Arc<dyn BankFileWriter> {
        Arc::new(InteracWriter {
            settings: self.clone(),
        })
    }

    fn reader(&self) -> Arc<dyn BankFileReader> {
        Arc::new(InteracReader)
    }

    fn summary(&self) -> serde_json::Value {
        json!({
            "partner_customer_id": self.partner_customer_id,
            "sender_name": self.sender_name,
            "expiry_days": self.expiry_days,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The writer of Interac batch requests.
#[derive(Debug, Clone)]
pub struct InteracWriter {
    settings: InteracSettings,
}

impl InteracWriter {
    /// A writer with checked settings.
    ///
    /// # Errors
    /// Every wrong setting ([`InteracSettings::validate`]).
    pub fn new(settings: InteracSettings) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self { settings })
    }
}

/// The partner's pushed status reports are verified by the protocol's own check (signature,
/// freshness, shape) before the application's callback route applies them.
pub use bank_formats::interac::{
    CallbackError, CallbackHead, SIGNATURE_HEADER, SignatureError, check_callback_head,
    verify_callback,
};

/// The payment id of a payout: its id in 32 hex digits.
pub fn payment_id(instruction: &CreditInstruction) -> String {
    instruction.payout_id.as_uuid().simple().to_string()
}

fn payment(
    instruction: &CreditInstruction,
    expires_at: DateTime<Utc>,
) -> Result<Payment, PortError> {
    let payout = instruction.payout_id;
    let amount = u64::try_from(instruction.amount.get())
        .ok()
        .filter(|cents| (1..=interac::MAX_AMOUNT).contains(cents))
        .ok_or_else(|| {
            refused(format!(
                "payout {payout}: an Interac e-Transfer amount is from 0.01 to 25000.00 CAD"
            ))
        })?;
    let recipient_email = instruction.account.expose().trim().to_owned();
    if !interac::is_email(&recipient_email) {
        return Err(refused(format!(
            "payout {payout}: the recipient is not a valid e-mail address"
        )));
    }
    let recipient_name = interac::clean_name(&instruction.payee_name);
    if recipient_name.is_empty() {
        return Err(refused(format!("payout {payout}: the payee name is empty")));
    }
    Ok(Payment {
        payment_id: payment_id(instruction),
        amount,
        currency: Currency::Cad,
        recipient_name,
        recipient_email,
        memo: interac::clean_memo(&instruction.remittance),
        expires_at,
    })
}

impl BankFileWriter for InteracWriter {
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError> {
        if request.asset != Asset::Cad {
            return Err(refused(format!(
                "an Interac e-Transfer pays CAD, not {}",
                request.asset.code()
            )));
        }
        let created_at = request.created_at.trunc_subsecs(0);
        let expires_at = created_at + TimeDelta::days(i64::from(self.settings.expiry_days));
        let payments = request
            .instructions
            .iter()
            .map(|instruction| payment(instruction, expires_at))
            .collect::<Result<Vec<_>, _>>()?;
        let references = payments.iter().map(|p| p.payment_id.clone()).collect();
        let document = BatchRequest {
            batch_id: RailFile::batch_file_id(request.batch_id, request.part),
            created_at,
            originator: self.settings.partner_customer_id.clone(),
            sender_name: self.settings.sender_name.clone(),
            payments,
        };
        let bytes = document.to_bytes().map_err(|e| {
            refused(format!(
                "batch {}: the Interac batch request cannot be written: {e}",
                request.batch_id
            ))
        })?;
        Ok(WrittenFile {
            extension: EXTENSION,
            bytes,
            references,
        })
    }
}

/// The reader of the partner's status reports. Anything that is not a JSON object of type
/// `status_report` is [`ReadOutcome::NotMine`]; a status report that breaks the protocol is
/// [`ReadOutcome::Unreadable`].
#[derive(Debug, Clone, Copy, Default)]
pub struct InteracReader;

fn rejected(
    code: Option<&String>,
    fallback: &str,
    reason: Option<&String>,
    default: &str,
) -> ReturnReason {
    let code = code.cloned().unwrap_or_else(|| fallback.to_owned());
    let reason = reason
        .filter(|r| !r.trim().is_empty())
        .cloned()
        .or_else(|| FailureCode::from_code(&code).map(|c| c.reason().to_owned()))
        .unwrap_or_else(|| default.to_owned());
    ReturnReason {
        code,
        reason,
        account_is_invalid: false,
    }
}

/// What a report says, in payoutd's terms.
pub fn bank_report(report: &StatusReport) -> BankReport {
    let mention = crate::sepa::mention_of(&report.batch_id);
    let file = report.batch_status.as_ref().map(|verdict| {
        let verdict = match verdict {
            BatchVerdict::Accepted => FileVerdict::Accepted,
            BatchVerdict::Rejected { code, reason } => FileVerdict::Rejected {
                code: Some(code.clone()),
                reason: reason.clone(),
            },
        };
        (mention, verdict)
    });
    let items = report
        .payments
        .iter()
        .filter_map(|update| {
            let (code, reason) = (update.code.as_ref(), update.reason.as_ref());
            let outcome = match update.status {
                PaymentStatus::Sent => return None,
                PaymentStatus::Deposited => ItemOutcome::Settled,
                PaymentStatus::Declined => ItemOutcome::Rejected(rejected(
                    code,
                    "DECLINED",
                    reason,
                    "the recipient declined the transfer",
                )),
                PaymentStatus::Expired => ItemOutcome::Rejected(rejected(
                    code,
                    "EXPIRED",
                    reason,
                    "the recipient did not deposit the transfer before it expired",
                )),
                PaymentStatus::Cancelled => ItemOutcome::Rejected(rejected(
                    code,
                    "CANCELLED",
                    reason,
                    "the transfer was cancelled before it was deposited",
                )),
                PaymentStatus::Failed => {
                    let mut failed = rejected(
                        code,
                        "FAILED",
                        reason,
                        "the partner could not send the transfer",
                    );
                    // Only a failure to reach the address condemns the account; a decline or an
                    // expiry says nothing about it.
                    failed.account_is_invalid = FailureCode::from_code(&failed.code)
                        .is_some_and(FailureCode::means_invalid_recipient);
                    ItemOutcome::Rejected(failed)
                }
            };
            Some(ItemReport {
                reference: update.payment_id.clone(),
                outcome,
            })
        })
        .collect();
    BankReport { file, items }
}

impl BankFileReader for InteracReader {
    fn read(&self, _name: &str, bytes: &[u8]) -> Result<ReadOutcome, PortError> {
        if !interac::looks_like_status_report(bytes) {
            return Ok(ReadOutcome::NotMine);
        }
        Ok(match StatusReport::parse(bytes) {
            Ok(report) => ReadOutcome::Report(bank_report(&report)),
            Err(e) => ReadOutcome::Unreadable(format!("not a valid Interac status report: {e}")),
        })
    }
}
