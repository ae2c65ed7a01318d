//! The protocol's documents: typed contents, strict parsing and canonical writing.

use std::collections::HashSet;
use std::fmt;

use chrono::{DateTime, TimeDelta, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The protocol version every document carries.
pub const VERSION: u64 = 1;

/// The largest amount of one payment, in cents (25,000.00 CAD).
pub const MAX_AMOUNT: u64 = 2_500_000;

/// The most payments one batch request carries.
pub const MAX_PAYMENTS: usize = 10_000;

/// The longest message to the recipient, in characters.
pub const MEMO_MAX: usize = 400;

/// The longest sender or recipient name, in characters.
pub const NAME_MAX: usize = 30;

/// The longest time a recipient has to deposit a transfer, in days.
pub const MAX_EXPIRY_DAYS: i64 = 30;

/// The longest identifier (batch, payment, report, partner customer), in characters.
const ID_MAX: usize = 35;

/// The longest report id: partners name reports with longer ids than payments.
const REPORT_ID_MAX: usize = 64;

/// The longest code, reason or error message the partner sends.
const CODE_MAX: usize = 35;
const REASON_MAX: usize = 200;

/// Why a document was refused. Messages name the field, never its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InteracError {
    /// Not a JSON object, or a JSON value of the wrong shape (a missing or unknown field, a
    /// string where a number belongs, a duplicate key, ...).
    #[error("not a valid {document} document: {problem}")]
    Malformed {
        /// The document expected.
        document: &'static str,
        /// What is wrong, with its position, without the value.
        problem: String,
    },
    /// A JSON object of another document type.
    #[error("a {found} document is not a {expected}")]
    WrongDocument {
        /// The type expected.
        expected: &'static str,
        /// The type found (cut to 40 characters).
        found: String,
    },
    /// A version this parser does not know.
    #[error("protocol version {0} is not supported (only version 1)")]
    UnsupportedVersion(u64),
    /// A field whose value breaks the protocol's rules.
    #[error("{field}: {problem}")]
    Invalid {
        /// The field (`payments[2].amount`).
        field: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Two payments with one id.
    #[error("payment id {0} appears more than once")]
    DuplicatePayment(String),
}

fn invalid(field: impl Into<String>, problem: &'static str) -> InteracError {
    InteracError::Invalid {
        field: field.into(),
        problem,
    }
}

/// The only currency of Interac e-Transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Currency {
    /// Canadian dollars.
    #[serde(rename = "CAD")]
    Cad,
}

/// One transfer of a batch request.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Payment {
    /// The payment's unique reference (1 to 35 of `A-Z a-z 0-9 - _`); status reports quote it.
    pub payment_id: String,
    /// The amount in cents, 1 to [`MAX_AMOUNT`].
    pub amount: u64,
    /// Always CAD.
    pub currency: Currency,
    /// The recipient's name as the sender knows it (1 to [`NAME_MAX`] characters).
    pub recipient_name: String,
    /// The address the notification goes to. Secret: never in `Debug` output or errors.
    pub recipient_email: String,
    /// The message to the recipient (at most [`MEMO_MAX`] characters, no control characters).
    pub memo: String,
    /// When an undeposited transfer expires and the money returns to the sender.
    #[serde(with = "seconds")]
    pub expires_at: DateTime<Utc>,
}

impl fmt::Debug for Payment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Payment")
            .field("payment_id", &self.payment_id)
            .field("amount", &self.amount)
            .field("currency", &self.currency)
            .field("recipient_name", &self.recipient_name)
            .field("recipient_email", &"<redacted>")
            .field("memo", &self.memo)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// What payoutd posts for one batch: `POST /v1/batches`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRequest {
    /// The batch id (1 to 35 of `A-Z a-z 0-9 - _`): reports quote it.
    pub batch_id: String,
    /// When the request was written.
    pub created_at: DateTime<Utc>,
    /// The sender's customer id at the partner.
    pub originator: String,
    /// The sender's name recipients see (1 to [`NAME_MAX`] characters).
    pub sender_name: String,
    /// The transfers, 1 to [`MAX_PAYMENTS`], with unique ids.
    pub payments: Vec<Payment>,
}

/// The partner's answer to a posted batch (201 the first time, 200 for a repeat).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchReceipt {
    /// The batch received.
    pub batch_id: String,
    /// How many payments it holds.
    pub payment_count: u64,
    /// Their total, in cents.
    pub total_amount: u64,
    /// When the partner first received it.
    pub received_at: DateTime<Utc>,
}

/// The partner's word on a whole batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum BatchVerdict {
    /// Checked and being sent.
    Accepted,
    /// Refused as a whole: no payment of it is sent.
    Rejected {
        /// The partner's code.
        code: String,
        /// Its reason in words.
        reason: String,
    },
}

/// Where a transfer stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaymentStatus {
    /// The notification went to the recipient; the money is reserved.
    Sent,
    /// The recipient deposited it: paid.
    Deposited,
    /// The recipient declined it; the money returns to the sender.
    Declined,
    /// Not deposited before it expired; the money returns to the sender.
    Expired,
    /// Cancelled by the sender or the partner before deposit.
    Cancelled,
    /// Could not be sent (an invalid recipient, a limit, ...): see its code.
    Failed,
}

impl PaymentStatus {
    /// Whether the status is final (anything but `sent`).
    #[must_use]
    pub fn is_final(self) -> bool {
        self != Self::Sent
    }

    /// The wire name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Deposited => "deposited",
            Self::Declined => "declined",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
            Self::Failed => "failed",
        }
    }
}

/// The codes the protocol gives a `failed` payment. Partners may send others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureCode {
    /// `INVALID_RECIPIENT`: the address is not a valid, reachable e-mail address.
    InvalidRecipient,
    /// `UNDELIVERABLE`: the notification bounced.
    Undeliverable,
    /// `LIMIT_EXCEEDED`: over the sender's or the recipient's limits.
    LimitExceeded,
    /// `FRAUD_SUSPECTED`: held and cancelled by the partner's fraud checks.
    FraudSuspected,
}

impl FailureCode {
    /// Every code.
    pub const ALL: [Self; 4] = [
        Self::InvalidRecipient,
        Self::Undeliverable,
        Self::LimitExceeded,
        Self::FraudSuspected,
    ];

    /// The wire code.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Self::InvalidRecipient => "INVALID_RECIPIENT",
            Self::Undeliverable => "UNDELIVERABLE",
            Self::LimitExceeded => "LIMIT_EXCEEDED",
            Self::FraudSuspected => "FRAUD_SUSPECTED",
        }
    }

    /// The code's meaning.
    #[must_use]
    pub fn reason(self) -> &'static str {
        match self {
            Self::InvalidRecipient => "the recipient's e-mail address is not valid",
            Self::Undeliverable => "the notification could not be delivered to the recipient",
            Self::LimitExceeded => "a sending or receiving limit was exceeded",
            Self::FraudSuspected => "stopped by the partner's fraud checks",
        }
    }

    /// Whether the code says the recipient's address is wrong (the account is unusable).
    #[must_use]
    pub fn means_invalid_recipient(self) -> bool {
        matches!(self, Self::InvalidRecipient | Self::Undeliverable)
    }

    /// The code of a wire name.
    #[must_use]
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }
}

/// One payment's status in a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentUpdate {
    /// The payment, by the id of the batch request.
    pub payment_id: String,
    /// Where it stands.
    pub status: PaymentStatus,
    /// The partner's code (`A-Z 0-9 _`, up to 35), for declined, expired, cancelled and failed
    /// payments when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The reason in words (up to 200 characters), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the payment reached this status.
    #[serde(with = "seconds")]
    pub updated_at: DateTime<Utc>,
}

/// The partner's report on one batch: polled (`GET /v1/reports/{report_id}`) and pushed as a
/// callback, the same bytes both ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusReport {
    /// The report's unique id (1 to 64 of `A-Z a-z 0-9 - _`): its name.
    pub report_id: String,
    /// The batch reported on.
    pub batch_id: String,
    /// When the report was written.
    pub created_at: DateTime<Utc>,
    /// The verdict on the whole batch, when the report gives one.
    pub batch_status: Option<BatchVerdict>,
    /// The payments reported on (unique ids).
    pub payments: Vec<PaymentUpdate>,
}

/// The ids of the reports after a cursor: `GET /v1/reports?after=<id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportList {
    /// Report ids, oldest first.
    pub report_ids: Vec<String>,
    /// More reports follow the last id listed.
    pub has_more: bool,
}

/// The partner's refusal of a request (any 4xx or 5xx answer with a body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorAnswer {
    /// The error code (`A-Z 0-9 _`, up to 35).
    pub code: String,
    /// What went wrong, in words (up to 200 characters).
    pub message: String,
}

// ---------------------------------------------------------------------------------------------
// Wire forms: the documents with their type and version, in canonical field order.

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchRequestWire {
    #[serde(rename = "type")]
    document: String,
    version: u64,
    batch_id: String,
    #[serde(with = "seconds")]
    created_at: DateTime<Utc>,
    originator: String,
    sender_name: String,
    payments: Vec<Payment>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchReceiptWire {
    #[serde(rename = "type")]
    document: String,
    version: u64,
    batch_id: String,
    payment_count: u64,
    total_amount: u64,
    #[serde(with = "seconds")]
    received_at: DateTime<Utc>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusReportWire {
    #[serde(rename = "type")]
    document: String,
    version: u64,
    report_id: String,
    batch_id: String,
    #[serde(with = "seconds")]
    created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    batch_status: Option<BatchVerdict>,
    payments: Vec<PaymentUpdate>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReportListWire {
    #[serde(rename = "type")]
    document: String,
    version: u64,
    report_ids: Vec<String>,
    has_more: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorAnswerWire {
    #[serde(rename = "type")]
    document: String,
    version: u64,
    code: String,
    message: String,
}

/// Just the type and version, read first so that a wrong document or version gets its own error.
#[derive(Deserialize)]
struct Header {
    #[serde(rename = "type")]
    document: Option<String>,
    version: Option<serde_json::Value>,
}

const BATCH_REQUEST: &str = "batch_request";
const BATCH_RECEIPT: &str = "batch_receipt";
const STATUS_REPORT: &str = "status_report";
const REPORT_LIST: &str = "report_list";
const ERROR: &str = "error";

fn malformed(document: &'static str, e: &serde_json::Error) -> InteracError {
    use serde_json::error::Category;
    let kind = match e.classify() {
        Category::Io => "read error",
        Category::Syntax => "not JSON",
        Category::Data => "a field is missing, unknown, repeated or of the wrong type",
        Category::Eof => "the document ends too early",
    };
    InteracError::Malformed {
        document,
        problem: format!("{kind} (line {}, column {})", e.line(), e.column()),
    }
}

fn parse_document<T: DeserializeOwned>(
    document: &'static str,
    bytes: &[u8],
) -> Result<T, InteracError> {
    let header: Header = serde_json::from_slice(bytes).map_err(|e| malformed(document, &e))?;
    match header.document.as_deref() {
        Some(found) if found == document => {}
        Some(found) => {
            return Err(InteracError::WrongDocument {
                expected: document,
                found: found.chars().take(40).collect(),
            });
        }
        None => return Err(invalid("type", "is missing")),
    }
    match header.version {
        Some(serde_json::Value::Number(n)) => match n.as_u64() {
            Some(VERSION) => {}
            Some(other) => return Err(InteracError::UnsupportedVersion(other)),
            None => return Err(invalid("version", "is not a positive integer")),
        },
        Some(_) => return Err(invalid("version", "is not a positive integer")),
        None => return Err(invalid("version", "is missing")),
    }
    serde_json::from_slice(bytes).map_err(|e| malformed(document, &e))
}

fn to_bytes<T: Serialize>(wire: &T) -> Vec<u8> {
    // Serialising these plain structs to a Vec cannot fail: no maps with non-string keys, no
    // I/O. An empty object stands in should it ever fail, which every parser refuses.
    serde_json::to_vec(wire).unwrap_or_else(|_| b"{}".to_vec())
}

/// Whether `bytes` are a JSON object of type `status_report` (of any version), for readers that
/// share an inbound source with other formats: they are this protocol's, readable or not.
#[must_use]
pub fn looks_like_status_report(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Header>(bytes)
        .is_ok_and(|header| header.document.as_deref() == Some(STATUS_REPORT))
}

// ---------------------------------------------------------------------------------------------
// Field rules.

/// Whether `value` is an identifier of the protocol: 1 to `max` characters of
/// `A-Z a-z 0-9 - _`, not starting with `-` (so it is also a plain file name).
#[must_use]
pub fn is_identifier(value: &str, max: usize) -> bool {
    !value.is_empty()
        && value.len() <= max
        && !value.starts_with('-')
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn is_code(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= CODE_MAX
        && value
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// Whether `value` is an e-mail address the protocol carries: at most 254 characters, one `@`
/// between a local part of 1 to 64 characters and a domain of dot-separated labels of letters,
/// digits and hyphens with at least two labels, printable ASCII without spaces.
#[must_use]
pub fn is_email(value: &str) -> bool {
    if value.len() > 254 || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    let Some((local, domain)) = value.rsplit_once('@') else {
        return false;
    };
    let labels: Vec<&str> = domain.split('.').collect();
    !local.is_empty()
        && local.len() <= 64
        && !local.contains('@')
        && labels.len() >= 2
        && labels.iter().all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
}

fn is_clean_text(value: &str, max: usize) -> bool {
    value.chars().count() <= max && !value.chars().any(char::is_control)
}

fn clean(value: &str, max: usize) -> String {
    let mut out = String::with_capacity(value.len().min(max * 4));
    let mut pending_space = false;
    for c in value.chars() {
        if c.is_control() || c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
    }
    let cut: String = out.chars().take(max).collect();
    cut.trim_end().to_owned()
}

/// What a writer makes of a message to the recipient: control characters and runs of white
/// space become one space, the ends are trimmed, and the result is cut to [`MEMO_MAX`]
/// characters.
#[must_use]
pub fn clean_memo(value: &str) -> String {
    clean(value, MEMO_MAX)
}

/// What a writer makes of a sender or recipient name: as [`clean_memo`], cut to [`NAME_MAX`]
/// characters.
#[must_use]
pub fn clean_name(value: &str) -> String {
    clean(value, NAME_MAX)
}

fn check_name(field: impl Into<String>, value: &str) -> Result<(), InteracError> {
    if value.trim().is_empty() {
        return Err(invalid(field, "is empty"));
    }
    if !is_clean_text(value, NAME_MAX) {
        return Err(invalid(
            field,
            "is longer than 30 characters or holds a control character",
        ));
    }
    Ok(())
}

fn check_id(field: impl Into<String>, value: &str, max: usize) -> Result<(), InteracError> {
    if is_identifier(value, max) {
        Ok(())
    } else {
        Err(invalid(
            field,
            "is not an identifier of letters, digits, '-' and '_' of the allowed length",
        ))
    }
}

// ---------------------------------------------------------------------------------------------
// Documents.

impl BatchRequest {
    /// Checks the request against the protocol's rules.
    ///
    /// # Errors
    /// The first rule broken, by field.
    pub fn validate(&self) -> Result<(), InteracError> {
        check_id("batch_id", &self.batch_id, ID_MAX)?;
        check_id("originator", &self.originator, ID_MAX)?;
        check_name("sender_name", &self.sender_name)?;
        if self.payments.is_empty() {
            return Err(invalid("payments", "is empty"));
        }
        if self.payments.len() > MAX_PAYMENTS {
            return Err(invalid("payments", "holds more than 10000 payments"));
        }
        let mut seen = HashSet::with_capacity(self.payments.len());
        for (i, payment) in self.payments.iter().enumerate() {
            let field = |name: &str| format!("payments[{i}].{name}");
            check_id(field("payment_id"), &payment.payment_id, ID_MAX)?;
            if !seen.insert(payment.payment_id.as_str()) {
                return Err(InteracError::DuplicatePayment(payment.payment_id.clone()));
            }
            if payment.amount == 0 || payment.amount > MAX_AMOUNT {
                return Err(invalid(
                    field("amount"),
                    "is not a whole number of cents from 1 to 2500000",
                ));
            }
            check_name(field("recipient_name"), &payment.recipient_name)?;
            if !is_email(&payment.recipient_email) {
                return Err(invalid(
                    field("recipient_email"),
                    "is not a valid e-mail address",
                ));
            }
            if !is_clean_text(&payment.memo, MEMO_MAX) {
                return Err(invalid(
                    field("memo"),
                    "is longer than 400 characters or holds a control character",
                ));
            }
            if payment.expires_at <= self.created_at
                || payment.expires_at - self.created_at > TimeDelta::days(MAX_EXPIRY_DAYS)
            {
                return Err(invalid(
                    field("expires_at"),
                    "is not within 30 days after the request's creation",
                ));
            }
        }
        Ok(())
    }

    /// The total of the payments, in cents (saturating: a valid request cannot reach the limit).
    #[must_use]
    pub fn total_amount(&self) -> u64 {
        self.payments
            .iter()
            .fold(0u64, |sum, p| sum.saturating_add(p.amount))
    }

    /// Parses and checks a request.
    ///
    /// # Errors
    /// A malformed document, another type or version, or a broken rule.
    pub fn parse(bytes: &[u8]) -> Result<Self, InteracError> {
        let wire: BatchRequestWire = parse_document(BATCH_REQUEST, bytes)?;
        let request = Self {
            batch_id: wire.batch_id,
            created_at: wire.created_at,
            originator: wire.originator,
            sender_name: wire.sender_name,
            payments: wire.payments,
        };
        request.validate()?;
        Ok(request)
    }

    /// The canonical bytes of a valid request.
    ///
    /// # Errors
    /// The first rule the request breaks: an invalid request is never written.
    pub fn to_bytes(&self) -> Result<Vec<u8>, InteracError> {
        self.validate()?;
        Ok(to_bytes(&BatchRequestWire {
            document: BATCH_REQUEST.to_owned(),
            version: VERSION,
            batch_id: self.batch_id.clone(),
            created_at: self.created_at,
            originator: self.originator.clone(),
            sender_name: self.sender_name.clone(),
            payments: self.payments.clone(),
        }))
    }
}

impl BatchReceipt {
    /// The receipt of `request`, received at `received_at`.
    #[must_use]
    pub fn of(request: &BatchRequest, received_at: DateTime<Utc>) -> Self {
        Self {
            batch_id: request.batch_id.clone(),
            payment_count: request.payments.len() as u64,
            total_amount: request.total_amount(),
            received_at,
        }
    }

    /// Parses and checks a receipt.
    ///
    /// # Errors
    /// A malformed document, another type or version, or a bad batch id.
    pub fn parse(bytes: &[u8]) -> Result<Self, InteracError> {
        let wire: BatchReceiptWire = parse_document(BATCH_RECEIPT, bytes)?;
        check_id("batch_id", &wire.batch_id, ID_MAX)?;
        Ok(Self {
            batch_id: wire.batch_id,
            payment_count: wire.payment_count,
            total_amount: wire.total_amount,
            received_at: wire.received_at,
        })
    }

    /// The canonical bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        to_bytes(&BatchReceiptWire {
            document: BATCH_RECEIPT.to_owned(),
            version: VERSION,
            batch_id: self.batch_id.clone(),
            payment_count: self.payment_count,
            total_amount: self.total_amount,
            received_at: self.received_at,
        })
    }
}

fn check_reason(field: impl Into<String>, value: &str) -> Result<(), InteracError> {
    if is_clean_text(value, REASON_MAX) {
        Ok(())
    } else {
        Err(invalid(
            field,
            "is longer than 200 characters or holds a control character",
        ))
    }
}

fn check_code(field: impl Into<String>, value: &str) -> Result<(), InteracError> {
    if is_code(value) {
        Ok(())
    } else {
        Err(invalid(
            field,
            "is not a code of 1 to 35 upper-case letters, digits and '_'",
        ))
    }
}

impl StatusReport {
    /// Checks the report against the protocol's rules.
    ///
    /// # Errors
    /// The first rule broken, by field.
    pub fn validate(&self) -> Result<(), InteracError> {
        check_id("report_id", &self.report_id, REPORT_ID_MAX)?;
        check_id("batch_id", &self.batch_id, ID_MAX)?;
        if let Some(BatchVerdict::Rejected { code, reason }) = &self.batch_status {
            check_code("batch_status.code", code)?;
            check_reason("batch_status.reason", reason)?;
        }
        if self.payments.len() > MAX_PAYMENTS {
            return Err(invalid("payments", "holds more than 10000 payments"));
        }
        let mut seen = HashSet::with_capacity(self.payments.len());
        for (i, update) in self.payments.iter().enumerate() {
            let field = |name: &str| format!("payments[{i}].{name}");
            check_id(field("payment_id"), &update.payment_id, ID_MAX)?;
            if !seen.insert(update.payment_id.as_str()) {
                return Err(InteracError::DuplicatePayment(update.payment_id.clone()));
            }
            if let Some(code) = &update.code {
                check_code(field("code"), code)?;
            }
            if let Some(reason) = &update.reason {
                check_reason(field("reason"), reason)?;
            }
        }
        Ok(())
    }

    /// Parses and checks a report.
    ///
    /// # Errors
    /// A malformed document, another type or version, or a broken rule.
    pub fn parse(bytes: &[u8]) -> Result<Self, InteracError> {
        let wire: StatusReportWire = parse_document(STATUS_REPORT, bytes)?;
        let report = Self {
            report_id: wire.report_id,
            batch_id: wire.batch_id,
            created_at: wire.created_at,
            batch_status: wire.batch_status,
            payments: wire.payments,
        };
        report.validate()?;
        Ok(report)
    }

    /// The canonical bytes of a valid report.
    ///
    /// # Errors
    /// The first rule the report breaks.
    pub fn to_bytes(&self) -> Result<Vec<u8>, InteracError> {
        self.validate()?;
        Ok(to_bytes(&StatusReportWire {
            document: STATUS_REPORT.to_owned(),
            version: VERSION,
            report_id: self.report_id.clone(),
            batch_id: self.batch_id.clone(),
            created_at: self.created_at,
            batch_status: self.batch_status.clone(),
            payments: self.payments.clone(),
        }))
    }
}

impl ReportList {
    /// The most ids one list holds.
    pub const MAX_IDS: usize = 1_000;

    /// Parses and checks a list: at most [`Self::MAX_IDS`] report ids, each an identifier.
    ///
    /// # Errors
    /// A malformed document, another type or version, or a bad id.
    pub fn parse(bytes: &[u8]) -> Result<Self, InteracError> {
        let wire: ReportListWire = parse_document(REPORT_LIST, bytes)?;
        if wire.report_ids.len() > Self::MAX_IDS {
            return Err(invalid("report_ids", "holds more than 1000 ids"));
        }
        for (i, id) in wire.report_ids.iter().enumerate() {
            check_id(format!("report_ids[{i}]"), id, REPORT_ID_MAX)?;
        }
        Ok(Self {
            report_ids: wire.report_ids,
            has_more: wire.has_more,
        })
    }

    /// The canonical bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        to_bytes(&ReportListWire {
            document: REPORT_LIST.to_owned(),
            version: VERSION,
            report_ids: self.report_ids.clone(),
            has_more: self.has_more,
        })
    }
}

impl ErrorAnswer {
    /// Parses and checks an error answer.
    ///
    /// # Errors
    /// A malformed document, another type or version, a bad code or message.
    pub fn parse(bytes: &[u8]) -> Result<Self, InteracError> {
        let wire: ErrorAnswerWire = parse_document(ERROR, bytes)?;
        check_code("code", &wire.code)?;
        check_reason("message", &wire.message)?;
        Ok(Self {
            code: wire.code,
            message: wire.message,
        })
    }

    /// The canonical bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        to_bytes(&ErrorAnswerWire {
            document: ERROR.to_owned(),
            version: VERSION,
            code: self.code.clone(),
            message: self.message.clone(),
        })
    }
}

/// Timestamps as RFC 3339 in whole seconds, UTC (`2026-11-25T21:07:00Z`); any RFC 3339 offset
/// is read.
mod seconds {
    use chrono::{DateTime, SecondsFormat, Utc};
    use serde::{Deserialize, Deserializer, Serializer, de::Error as _};

    pub(super) fn serialize<S: Serializer>(
        value: &DateTime<Utc>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&value.to_rfc3339_opts(SecondsFormat::Secs, true))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<DateTime<Utc>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        DateTime::parse_from_rfc3339(&text)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|_| D::Error::custom("not an RFC 3339 timestamp"))
    }
}
