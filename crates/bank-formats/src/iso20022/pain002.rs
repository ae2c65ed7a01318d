//! pain.002 (CustomerPaymentStatusReport): the bank's answer to a pain.001 file.
//!
//! [`parse_pain002`] reads versions pain.002.001.10 (the one that answers pain.001.001.09),
//! pain.002.001.09 and pain.002.001.03 (still common in SEPA); the parts read here have the
//! same shape in all three. It reads the group status, the status of each payment information
//! block and of each listed transaction, with their reasons. Everything else (agents, charges,
//! original transaction references, supplementary data, elements of other namespaces) is
//! skipped. Status and reason codes are external code lists that grow over time, so codes this
//! module does not know are kept as they are ([`Status::Other`], [`ReasonCode`]).
//!
//! Malformed XML, another document or a missing required element is an error, never a panic.

use std::fmt;

use super::xml::{Node, XmlError, read_document};

/// The namespace prefix of every pain.002.001 version.
const NAMESPACE_PREFIX: &str = "urn:iso:std:iso:20022:tech:xsd:pain.002.001.";

/// Reason codes that mean the creditor's account details are wrong: paying the same account
/// again would fail the same way, so the account should be corrected before any retry.
///
/// - `AC01` IncorrectAccountNumber: the IBAN (or account number) is wrong.
/// - `AC03` InvalidCreditorAccountNumber.
/// - `AC04` ClosedAccountNumber.
/// - `AC06` BlockedAccount.
/// - `AC14` InvalidCreditorAccountType.
/// - `BE01` InconsistentWithEndCustomer: the name does not match the account's holder.
/// - `MD07` EndCustomerDeceased: the account holder has died.
/// - `RC01` BankIdentifierIncorrect: the creditor's BIC is wrong.
///
/// Not in the list, because the account itself may be right: `AC02`, `AC05`, `AC13` (the
/// debtor's account, payoutd's own), `AM04` InsufficientFunds and the other `AM..` amount
/// codes, `BE04` MissingCreditorAddress (data missing from the payment, not a wrong account),
/// `MS02`/`MS03` (reason not specified), `FF..` format errors, `DUPL`, `CUST`, `AG..`.
pub const WRONG_ACCOUNT_CODES: &[&str] = &[
    "AC01", "AC03", "AC04", "AC06", "AC14", "BE01", "MD07", "RC01",
];

/// The pain.002 version of a report, from its namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pain002Version {
    /// pain.002.001.03.
    V03,
    /// pain.002.001.09.
    V09,
    /// pain.002.001.10.
    V10,
}

impl Pain002Version {
    /// The XML namespace of this version.
    pub fn namespace(self) -> &'static str {
        match self {
            Self::V03 => "urn:iso:std:iso:20022:tech:xsd:pain.002.001.03",
            Self::V09 => "urn:iso:std:iso:20022:tech:xsd:pain.002.001.09",
            Self::V10 => "urn:iso:std:iso:20022:tech:xsd:pain.002.001.10",
        }
    }

    fn from_namespace(namespace: &str) -> Option<Self> {
        match namespace.strip_prefix(NAMESPACE_PREFIX)? {
            "03" => Some(Self::V03),
            "09" => Some(Self::V09),
            "10" => Some(Self::V10),
            _ => None,
        }
    }
}

/// A group, payment information or transaction status (`GrpSts`, `PmtInfSts`, `TxSts`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Status {
    /// `RCVD`: received, nothing checked yet.
    Received,
    /// `ACTC`: accepted after technical validation.
    AcceptedTechnicalValidation,
    /// `ACCP`: accepted after the customer profile checks.
    AcceptedCustomerProfile,
    /// `ACSP`: accepted, settlement in process.
    AcceptedSettlementInProcess,
    /// `ACSC`: accepted, settlement completed on the debtor's account.
    AcceptedSettlementCompleted,
    /// `ACCC`: accepted, settlement completed on the creditor's account.
    AcceptedCreditSettlementCompleted,
    /// `ACWC`: accepted with a change (date, amount…).
    AcceptedWithChange,
    /// `ACWP`: accepted without posting.
    AcceptedWithoutPosting,
    /// `PART`: some transactions accepted, some rejected.
    PartiallyAccepted,
    /// `PDNG`: pending.
    Pending,
    /// `RJCT`: rejected.
    Rejected,
    /// A code this module does not know, as written.
    Other(String),
}

impl Status {
    /// The status for a code (`RJCT` → [`Status::Rejected`]); unknown codes are kept.
    pub fn from_code(code: &str) -> Self {
        match code {
            "RCVD" => Self::Received,
            "ACTC" => Self::AcceptedTechnicalValidation,
            "ACCP" => Self::AcceptedCustomerProfile,
            "ACSP" => Self::AcceptedSettlementInProcess,
            "ACSC" => Self::AcceptedSettlementCompleted,
            "ACCC" => Self::AcceptedCreditSettlementCompleted,
            "ACWC" => Self::AcceptedWithChange,
            "ACWP" => Self::AcceptedWithoutPosting,
            "PART" => Self::PartiallyAccepted,
            "PDNG" => Self::Pending,
            "RJCT" => Self::Rejected,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The code as written in the report.
    pub fn code(&self) -> &str {
        match self {
            Self::Received => "RCVD",
            Self::AcceptedTechnicalValidation => "ACTC",
            Self::AcceptedCustomerProfile => "ACCP",
            Self::AcceptedSettlementInProcess => "ACSP",
            Self::AcceptedSettlementCompleted => "ACSC",
            Self::AcceptedCreditSettlementCompleted => "ACCC",
            Self::AcceptedWithChange => "ACWC",
            Self::AcceptedWithoutPosting => "ACWP",
            Self::PartiallyAccepted => "PART",
            Self::Pending => "PDNG",
            Self::Rejected => "RJCT",
            Self::Other(code) => code,
        }
    }

    /// `RJCT`.
    pub fn is_rejected(&self) -> bool {
        matches!(self, Self::Rejected)
    }

    /// One of the `AC..` acceptances (`ACTC`, `ACCP`, `ACSP`, `ACSC`, `ACCC`, `ACWC`, `ACWP`).
    pub fn is_accepted(&self) -> bool {
        matches!(
            self,
            Self::AcceptedTechnicalValidation
                | Self::AcceptedCustomerProfile
                | Self::AcceptedSettlementInProcess
                | Self::AcceptedSettlementCompleted
                | Self::AcceptedCreditSettlementCompleted
                | Self::AcceptedWithChange
                | Self::AcceptedWithoutPosting
        )
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// An ISO 20022 external status reason code (`StsRsnInf/Rsn/Cd`), such as `AC01` or `AM04`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReasonCode(String);

impl ReasonCode {
    /// A code as written in a report.
    pub fn new(code: impl Into<String>) -> Self {
        Self(code.into())
    }

    /// The code.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the code says the creditor's account details are wrong (see
    /// [`WRONG_ACCOUNT_CODES`]).
    pub fn means_wrong_account(&self) -> bool {
        WRONG_ACCOUNT_CODES.contains(&self.0.as_str())
    }
}

impl fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One `StsRsnInf`: why a status was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusReason {
    /// `Rsn/Cd`.
    pub code: Option<ReasonCode>,
    /// `Rsn/Prtry`: the bank's own reason, when it gives no code.
    pub proprietary: Option<String>,
    /// `AddtlInf`, each line as written.
    pub additional_info: Vec<String>,
}

impl StatusReason {
    /// Whether the reason code says the creditor's account details are wrong.
    pub fn means_wrong_account(&self) -> bool {
        self.code
            .as_ref()
            .is_some_and(ReasonCode::means_wrong_account)
    }
}

/// The status of one transaction (`TxInfAndSts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionStatus {
    /// `StsId`.
    pub status_id: Option<String>,
    /// `OrgnlInstrId`: the `InstrId` sent.
    pub original_instruction_id: Option<String>,
    /// `OrgnlEndToEndId`: the `EndToEndId` sent.
    pub original_end_to_end_id: Option<String>,
    /// `TxSts`.
    pub status: Option<Status>,
    /// `StsRsnInf`.
    pub reasons: Vec<StatusReason>,
}

impl TransactionStatus {
    /// Whether any reason says the creditor's account details are wrong.
    pub fn means_wrong_account(&self) -> bool {
        self.reasons.iter().any(StatusReason::means_wrong_account)
    }
}

/// The status of one payment information block (`OrgnlPmtInfAndSts`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentInfoStatus {
    /// `OrgnlPmtInfId`: the `PmtInfId` sent.
    pub original_payment_info_id: String,
    /// `PmtInfSts`.
    pub status: Option<Status>,
    /// `StsRsnInf`.
    pub reasons: Vec<StatusReason>,
    /// `TxInfAndSts`: often only the transactions whose status differs from the block's.
    pub transactions: Vec<TransactionStatus>,
}

/// A parsed pain.002 report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentStatusReport {
    /// The version, from the namespace.
    pub version: Pain002Version,
    /// `GrpHdr/MsgId`: the report's own id.
    pub message_id: String,
    /// `GrpHdr/CreDtTm`, as written.
    pub created_at: String,
    /// `OrgnlGrpInfAndSts/OrgnlMsgId`: the `MsgId` of the file reported on.
    pub original_message_id: String,
    /// `OrgnlGrpInfAndSts/OrgnlMsgNmId`, such as `pain.001.001.09`.
    pub original_message_name: String,
    /// `OrgnlGrpInfAndSts/GrpSts`.
    pub group_status: Option<Status>,
    /// `OrgnlGrpInfAndSts/StsRsnInf`.
    pub group_reasons: Vec<StatusReason>,
    /// `OrgnlPmtInfAndSts`.
    pub payment_infos: Vec<PaymentInfoStatus>,
}

impl PaymentStatusReport {
    /// Every transaction status in the report, in order.
    pub fn transactions(&self) -> impl Iterator<Item = &TransactionStatus> {
        self.payment_infos.iter().flat_map(|p| &p.transactions)
    }

    /// The transaction status listed for `end_to_end_id`, if any.
    pub fn transaction(&self, end_to_end_id: &str) -> Option<&TransactionStatus> {
        self.transactions()
            .find(|tx| tx.original_end_to_end_id.as_deref() == Some(end_to_end_id))
    }

    /// The most specific status the report states for a transaction sent in block
    /// `payment_info_id` with `end_to_end_id`: its own `TxSts` if listed, else its block's
    /// `PmtInfSts`, else the `GrpSts`. `PART` on a block or the group says nothing about one
    /// transaction and is passed over; `None` when nothing applies. (Under `PART`, banks
    /// usually list only the rejected transactions, but that is a convention, not a rule.)
    pub fn status_for(&self, payment_info_id: &str, end_to_end_id: &str) -> Option<&Status> {
        let block = self
            .payment_infos
            .iter()
            .filter(|p| p.original_payment_info_id == payment_info_id);
        let listed = block
            .clone()
            .flat_map(|p| &p.transactions)
            .filter(|tx| tx.original_end_to_end_id.as_deref() == Some(end_to_end_id))
            .find_map(|tx| tx.status.as_ref());
        let not_partial = |s: &&Status| !matches!(s, Status::PartiallyAccepted);
        listed
            .or_else(|| block.filter_map(|p| p.status.as_ref()).find(not_partial))
            .or_else(|| self.group_status.as_ref().filter(not_partial))
    }
}

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Pain002Error {
    /// The bytes are not UTF-8 (the only encoding read).
    #[error("the report is not UTF-8")]
    NotUtf8,
    /// Not well-formed XML.
    #[error("malformed XML at byte {position}: {message}")]
    Malformed { position: u64, message: String },
    /// Elements nested deeper than the parser accepts.
    #[error("elements nested deeper than {max}")]
    TooDeep { max: usize },
    /// Well-formed XML, but not a pain.002 report of a version read here.
    #[error(
        "not a pain.002.001.03/09/10 report: root element {element:?} in namespace {namespace:?}"
    )]
    NotPain002 { element: String, namespace: String },
    /// A required element is missing or empty (its path from `CstmrPmtStsRpt`).
    #[error("missing {path}")]
    Missing { path: String },
}

/// Reads a pain.002 payment status report.
///
/// # Errors
/// See [`Pain002Error`]: not UTF-8, malformed XML, another kind of document, or a missing
/// required element.
pub fn parse_pain002(bytes: &[u8]) -> Result<PaymentStatusReport, Pain002Error> {
    let (namespace, root) = read_document(bytes).map_err(|e| match e {
        XmlError::NotUtf8 => Pain002Error::NotUtf8,
        XmlError::Malformed { position, message } => Pain002Error::Malformed { position, message },
        XmlError::TooDeep { max } => Pain002Error::TooDeep { max },
    })?;
    let not_pain002 = || Pain002Error::NotPain002 {
        element: root.name.clone(),
        namespace: namespace.clone(),
    };
    let version = Pain002Version::from_namespace(&namespace).ok_or_else(not_pain002)?;
    if root.name != "Document" {
        return Err(not_pain002());
    }
    let report = root
        .child("CstmrPmtStsRpt")
        .ok_or_else(|| missing("CstmrPmtStsRpt"))?;
    let header = report.child("GrpHdr").ok_or_else(|| missing("GrpHdr"))?;
    let group = report
        .child("OrgnlGrpInfAndSts")
        .ok_or_else(|| missing("OrgnlGrpInfAndSts"))?;
    Ok(PaymentStatusReport {
        version,
        message_id: required(header, "GrpHdr", "MsgId")?,
        created_at: required(header, "GrpHdr", "CreDtTm")?,
        original_message_id: required(group, "OrgnlGrpInfAndSts", "OrgnlMsgId")?,
        original_message_name: required(group, "OrgnlGrpInfAndSts", "OrgnlMsgNmId")?,
        group_status: status(group, "GrpSts"),
        group_reasons: reasons(group),
        payment_infos: report
            .children("OrgnlPmtInfAndSts")
            .enumerate()
            .map(|(i, block)| payment_info(i, block))
            .collect::<Result<_, _>>()?,
    })
}

fn payment_info(index: usize, block: &Node) -> Result<PaymentInfoStatus, Pain002Error> {
    Ok(PaymentInfoStatus {
        original_payment_info_id: required(
            block,
            &format!("OrgnlPmtInfAndSts[{index}]"),
            "OrgnlPmtInfId",
        )?,
        status: status(block, "PmtInfSts"),
        reasons: reasons(block),
        transactions: block
            .children("TxInfAndSts")
            .map(|tx| TransactionStatus {
                status_id: optional(tx, "StsId"),
                original_instruction_id: optional(tx, "OrgnlInstrId"),
                original_end_to_end_id: optional(tx, "OrgnlEndToEndId"),
                status: status(tx, "TxSts"),
                reasons: reasons(tx),
            })
            .collect(),
    })
}

fn missing(path: &str) -> Pain002Error {
    Pain002Error::Missing { path: path.into() }
}

/// The trimmed text of child `name`, which must be there and not empty.
fn required(parent: &Node, parent_path: &str, name: &str) -> Result<String, Pain002Error> {
    optional(parent, name).ok_or_else(|| missing(&format!("{parent_path}/{name}")))
}

/// The trimmed text of child `name`, if there and not empty.
fn optional(parent: &Node, name: &str) -> Option<String> {
    let text = parent.child(name)?.text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn status(parent: &Node, name: &str) -> Option<Status> {
    optional(parent, name).map(|code| Status::from_code(&code))
}

fn reasons(parent: &Node) -> Vec<StatusReason> {
    parent
        .children("StsRsnInf")
        .map(|info| {
            let reason = info.child("Rsn");
            StatusReason {
                code: reason.and_then(|r| optional(r, "Cd")).map(ReasonCode),
                proprietary: reason.and_then(|r| optional(r, "Prtry")),
                additional_info: info
                    .children("AddtlInf")
                    .map(|line| line.text.trim().to_owned())
                    .filter(|line| !line.is_empty())
                    .collect(),
            }
        })
        .collect()
}
