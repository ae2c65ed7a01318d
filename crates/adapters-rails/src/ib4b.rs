//! `nzd/direct-credit`: one BNZ IB4B direct credit file per closed batch, or several when the
//! batch has more than [`LIMITS`] allows (the direct credit
//! import layout of BNZ's "Internet Banking for Business — file format guide"), and the reader
//! of payoutd's IB4B-style dishonour files.
//!
//! Field mapping (fields numbered from 1 within a record):
//! - header `1`: the `originating_account` setting (field 5), batch type `7`, the file's
//!   effective date as due date (field 7), the UTC date of `created_at` as creation date
//!   (field 8); the auth code, spare and indicator fields blank.
//! - one transaction `2` per payout: the payout's 16-digit New Zealand account number (bank,
//!   branch, base and suffix: the bank and branch are part of it, there is no separate
//!   receiving bank), transaction code `50`, the amount in cents, the payee's name (cleaned, 20
//!   characters), the payout's reference as other party reference, the remittance text
//!   (cleaned, 12 characters) as other party particulars; the `originator_name` setting as your
//!   name, the batch id's first 12 hex digits as your code, the payout's reference as your
//!   reference, and `FILE` with the file's sequence number as your particulars.
//! - control `3`: total, count and hash total, computed by `bank_formats::ib4b::write`.
//!
//! The payout's **reference** is the first 12 hex digits of its id, upper case: random bits of
//! a UUID v4 (the version digit is the 13th), so unique across the rail's files in practice; a
//! file in which two payouts share one is refused. A dishonour record echoes it as "your
//! reference", which is how a dishonour finds its payout.

use std::sync::Arc;

use bank_codes::digits::is_ascii_digits;
use bank_formats::ib4b::{
    self, DETAIL_WIDTH, DirectCreditFile, Header, Ib4bFile, NAME_WIDTH, StatementDetails,
    Transaction, TransactionCode,
};
use domain::PortError;
use domain::account::nz::NzAccountNumber;
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

/// The `nzd/direct-credit` rail.
pub const UNIT: RailUnit = RailUnit {
    method: domain::account::PayoutMethod::DirectCredit,
    format: "ib4b",
    numbering: NUMBERING,
    limits: LIMITS,
    settlement: SETTLEMENT,
    answers: ANSWERS,
    transports: FILE_DROP,
    settles_on_weekends: false,
    settings: read::<Ib4bSettings>,
};

/// How IB4B files are numbered: over all time (the number goes into each credit's "your
/// particulars" as `FILE<n>`; the format itself has no file number).
pub const NUMBERING: FileNumbering = FileNumbering::Overall;

/// How IB4B payouts settle: on the due date unless dishonoured.
pub const SETTLEMENT: Settlement = Settlement::OnEffectiveDate;

/// Which of the bank's answers may follow which: a bank file rail, with returns after
/// settlement and files named by the bank.
pub const ANSWERS: AnswerRules = AnswerRules::FILE_RAIL;

/// The file name extension.
pub const EXTENSION: &str = "csv";

/// The largest file sequence number `FILE<n>` fits in the 12 characters of "your particulars".
pub const MAX_SEQUENCE: u32 = 99_999_999;

/// The largest amount a transaction record carries: ten digits of cents.
pub const MAX_AMOUNT: i64 = 9_999_999_999;

/// What one IB4B file holds: the control record's transaction count carries six digits and its
/// total amount eleven (cents). Each part takes the next file number (`FILE<n>`).
pub const LIMITS: FileLimits = FileLimits {
    max_items: 999_999,
    max_total: Some(99_999_999_999),
    max_parts: u32::MAX,
};

/// The originator details for IB4B direct credits: the keys of `[rails."nzd/direct-credit"]`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ib4bSettings {
    /// The BNZ account the credits are paid from: its 16 digits `BBbbbbAAAAAAASSS`, a valid New
    /// Zealand account number.
    pub originating_account: String,
    /// The name the other party sees ("your name"): 1 to 20 characters of the IB4B set
    /// (letters, digits, space, `- ' & / # ? : _ .`).
    pub originator_name: String,
}

impl Ib4bSettings {
    /// Checks every setting.
    ///
    /// # Errors
    /// Every wrong setting, by key (never repeating the account).
    pub fn validate(&self) -> Result<(), SettingsError> {
        let mut check = Check::default();
        let account = &self.originating_account;
        if !is_ascii_digits(account, ib4b::ACCOUNT_DIGITS..=ib4b::ACCOUNT_DIGITS) {
            check.push(
                "originating_account",
                "must be the account's 16 digits BBbbbbAAAAAAASSS",
            );
        } else if NzAccountNumber::parse(account).is_err() {
            check.push(
                "originating_account",
                "is not a valid New Zealand account number (bank, branch or check digits)",
            );
        }
        let name = &self.originator_name;
        if name.trim().is_empty() {
            check.push("originator_name", "is empty");
        } else if name.chars().count() > NAME_WIDTH {
            check.push(
                "originator_name",
                format!("is longer than the {NAME_WIDTH} characters of its IB4B field"),
            );
        } else if let Some(c) = name.chars().find(|c| !ib4b::is_allowed_char(*c)) {
            check.push(
                "originator_name",
                format!("{c:?} is not allowed in an IB4B file"),
            );
        }
        check.finish()
    }
}

impl RailSettings for Ib4bSettings {
    fn validate(&self) -> Result<(), SettingsError> {
        Ib4bSettings::validate(self)
    }

    fn writer(&self) -> Arc<dyn BankFileWriter> {
        Arc::new(Ib4bWriter {
            settings: self.clone(),
        })
    }

    fn reader(&self) -> Arc<dyn BankFileReader> {
        Arc::new(Ib4bReader)
    }

    fn summary(&self) -> serde_json::Value {
        json!({
            "originating_account": MaskedValue::mask(&self.originating_account).as_str(),
            "originator_name": self.originator_name,
        })
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The IB4B writer of a rail.
#[derive(Debug, Clone)]
pub struct Ib4bWriter {
    settings: Ib4bSettings,
}

impl Ib4bWriter {
    /// A writer with checked settings.
    ///
    /// # Errors
    /// Every wrong setting ([`Ib4bSettings::validate`]).
    pub fn new(settings: Ib4bSettings) -> Result<Self, SettingsError> {
        settings.validate()?;
        Ok(Self { settings })
    }
}

/// The reference of a payout in IB4B files: the first 12 hex digits of its id, upper case.
#[must_use]
pub fn reference(payout_id: &domain::ids::PayoutId) -> String {
    let hex = payout_id
        .as_uuid()
        .simple()
        .to_string()
        .to_ascii_uppercase();
    hex.chars().take(DETAIL_WIDTH).collect()
}

/// The 16-digit account of `instruction`, checked: a valid New Zealand account number, and
/// when the instruction names a receiving bank, that bank and branch.
fn account(instruction: &CreditInstruction) -> Result<String, PortError> {
    let id = instruction.payout_id;
    let parsed = NzAccountNumber::parse(instruction.account.expose()).map_err(|_| {
        refused(format!(
            "payout {id}: the account number is not a New Zealand account number with bank, \
             branch, base and suffix"
        ))
    })?;
    let digits = parsed.as_str().to_owned();
    if let Some(bank) = &instruction.receiving_bank {
        let bank: String = bank.expose().chars().filter(char::is_ascii_digit).collect();
        if digits.get(..6) != Some(bank.as_str()) {
            return Err(refused(format!(
                "payout {id}: the receiving bank is not the account number's bank and branch"
            )));
        }
    }
    Ok(digits)
}

impl Ib4bWriter {
    fn transaction(
        &self,
        batch_code: &str,
        particulars: &str,
        instruction: &CreditInstruction,
    ) -> Result<Transaction, PortError> {
        let id = instruction.payout_id;
        let cents = instruction.amount.get();
        if cents <= 0 || cents > MAX_AMOUNT {
            return Err(refused(format!(
                "payout {id}: an IB4B amount is 1 to {MAX_AMOUNT} cents"
            )));
        }
        let amount =
            u64::try_from(cents).map_err(|_| refused(format!("payout {id}: negative amount")))?;
        let name = ib4b::clean_text(&instruction.payee_name, NAME_WIDTH);
        if name.is_empty() {
            return Err(refused(format!(
                "payout {id}: the payee name has no character an IB4B file can carry"
            )));
        }
        let reference = reference(&id);
        Ok(Transaction {
            account: account(instruction)?,
            transaction_code: TransactionCode::DirectCredit,
            amount,
            other_party_name: name,
            other_party: StatementDetails {
                particulars: ib4b::clean_text(&instruction.remittance, DETAIL_WIDTH),
                code: String::new(),
                reference: reference.clone(),
            },
            other_party_alpha_reference: String::new(),
            your_name: self.settings.originator_name.clone(),
            yours: StatementDetails {
                particulars: particulars.to_owned(),
                code: batch_code.to_owned(),
                reference,
            },
        })
    }
}

impl BankFileWriter for Ib4bWriter {
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError> {
        if request.asset != Asset::Nzd {
            return Err(refused(format!(
                "an IB4B direct credit file pays NZD, not {}",
                request.asset.code()
            )));
        }
        if !(1..=MAX_SEQUENCE).contains(&request.sequence) {
            return Err(refused(format!(
                "file {}: IB4B file numbers run from 1 to {MAX_SEQUENCE}",
                request.sequence
            )));
        }
        let batch_code: String = request
            .batch_id
            .as_uuid()
            .simple()
            .to_string()
            .to_ascii_uppercase()
            .chars()
            .take(DETAIL_WIDTH)
            .collect();
        let particulars = format!("FILE{}", request.sequence);
        let transactions = request
            .instructions
            .iter()
            .map(|instruction| self.transaction(&batch_code, &particulars, instruction))
            .collect::<Result<Vec<_>, _>>()?;
        let references: Vec<String> = transactions
            .iter()
            .map(|t| t.yours.reference.clone())
            .collect();
        // A set of those seen, not a search of every earlier one: a file of 25,000 payouts
        // made that 312 million comparisons.
        let mut seen = std::collections::HashSet::with_capacity(references.len());
        for (i, r) in references.iter().enumerate() {
            if !seen.insert(r.as_str()) {
                return Err(refused(format!(
                    "payout {}: its reference is another payout's in the same file",
                    request
                        .instructions
                        .get(i)
                        .map_or_else(String::new, |x| x.payout_id.to_string())
                )));
            }
        }
        let file = DirectCreditFile {
            header: Header {
                originating_account: self.settings.originating_account.clone(),
                due_date: request.effective_date,
                creation_date: request.created_at.date_naive(),
            },
            transactions,
        };
        let bytes = ib4b::write(&file)
            .map_err(|e| refused(format!("the IB4B file cannot be written: {e}")))?;
        Ok(WrittenFile {
            extension: EXTENSION,
            bytes,
            references,
        })
    }
}

/// Whether `bytes` start like payoutd's IB4B dishonour file: `1,DISHONOUR,`. Originated direct
/// credit files (`1,,,,`), NACHA (`101`) and XML files do not.
#[must_use]
pub fn looks_like_dishonour_file(bytes: &[u8]) -> bool {
    bytes.starts_with(b"1,DISHONOUR,")
}

/// The reader of IB4B dishonour files: each dishonour becomes a return of the payout whose
/// reference is the record's "your reference", with the dishonour code, its meaning, whether
/// it says the account is invalid, and the amount.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ib4bReader;

impl BankFileReader for Ib4bReader {
    fn read(&self, _name: &str, bytes: &[u8]) -> Result<ReadOutcome, PortError> {
        if !looks_like_dishonour_file(bytes) {
            return Ok(ReadOutcome::NotMine);
        }
        let file = match ib4b::parse(bytes) {
            Ok(Ib4bFile::Dishonour(file)) => file,
            Ok(Ib4bFile::DirectCredit(_)) => return Ok(ReadOutcome::NotMine),
            Err(e) => {
                return Ok(ReadOutcome::Unreadable(format!(
                    "not a valid IB4B dishonour file: {e}"
                )));
            }
        };
        let items = file
            .dishonours
            .into_iter()
            .map(|d| ItemReport {
                reference: d.your_reference.trim().to_owned(),
                outcome: ItemOutcome::Returned {
                    reason: ReturnReason {
                        code: d.reason.code().to_owned(),
                        reason: d.reason.meaning().to_owned(),
                        account_is_invalid: d.reason.account_is_invalid(),
                    },
                    amount: i64::try_from(d.amount)
                        .ok()
                        .and_then(|cents| MinorUnits::new(cents).ok()),
                },
            })
            .collect();
        Ok(ReadOutcome::Report(BankReport { file: None, items }))
    }
}
