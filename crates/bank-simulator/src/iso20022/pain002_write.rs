//! The bank's side of pain.002: writing a pain.002.001.09 CustomerPaymentStatusReport that
//! answers a pain.001 file.
//!
//! - [`status_report`] builds the report from the fields of the pain.001 file
//!   ([`Pain001Summary`], read by [`super::read_pain001`]) and the bank's decisions
//!   ([`ReportDecisions`]): the report's `MsgId` and `CreDtTm`, the group status (`ACTC`,
//!   `ACCP`, `ACSC`, `RJCT`, `PART`, …) with optional reasons, and a status per listed
//!   transaction (by `EndToEndId`: for example `ACSC`, or `RJCT` with reason `AC04` and
//!   `AddtlInf`). `OrgnlMsgId` and `OrgnlMsgNmId` come from the pain.001; each block with a
//!   decided transaction gets an `OrgnlPmtInfAndSts` with its `PmtInfId`, listing those
//!   transactions (`OrgnlInstrId`, `OrgnlEndToEndId`, `TxSts`, `StsRsnInf`); the block's
//!   `PmtInfSts` is the common status when every transaction of the block has the same one,
//!   `PART` when some are rejected and others accepted, and left out otherwise.
//! - [`write_pain002`] writes a [`PaymentStatusReport`] (the type [`bank_formats::iso20022::parse_pain002`]
//!   returns) as pain.002.001.09 XML, in the element order of the pain.002.001.09 schema:
//!   `GrpHdr` (`MsgId`, `CreDtTm`), `OrgnlGrpInfAndSts` (`OrgnlMsgId`, `OrgnlMsgNmId`,
//!   `GrpSts`, `StsRsnInf`), then `OrgnlPmtInfAndSts` (`OrgnlPmtInfId`, `PmtInfSts`,
//!   `StsRsnInf`, `TxInfAndSts` with `StsId`, `OrgnlInstrId`, `OrgnlEndToEndId`, `TxSts`,
//!   `StsRsnInf`). A `StsRsnInf` holds `Rsn/Cd` or `Rsn/Prtry` and its `AddtlInf` lines.
//!   Values are checked against the schema's lengths (identifiers 1–35, codes 1–4,
//!   `AddtlInf` 1–105 characters) and written as given, never cut. Parsing the output gives
//!   back the same report.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDateTime};

use super::pain001_read::Pain001Summary;
use bank_formats::iso20022::xml::Emitter;
use bank_formats::iso20022::{
    Pain002Version, PaymentInfoStatus, PaymentStatusReport, Status, StatusReason, TransactionStatus,
};

/// `Max35Text` identifiers.
const MAX_ID: usize = 35;
/// `Max105Text` additional information.
const MAX_ADDITIONAL_INFO: usize = 105;
/// Status and reason codes (`Max4Text` code lists).
const MAX_CODE: usize = 4;

/// What the bank decided about a pain.001 file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportDecisions {
    /// The report's own `MsgId`.
    pub message_id: String,
    /// The report's `CreDtTm`.
    pub created_at: NaiveDateTime,
    /// `GrpSts`.
    pub group_status: Status,
    /// The group's `StsRsnInf` (usually only with `RJCT`).
    pub group_reasons: Vec<StatusReason>,
    /// Transactions to list, each once; the others are not listed.
    pub transactions: Vec<TransactionDecision>,
}

/// The status of one transaction of the pain.001 file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionDecision {
    /// Its `EndToEndId`.
    pub end_to_end_id: String,
    /// `TxSts`, for example `ACSC` or `RJCT`.
    pub status: Status,
    /// `StsRsnInf`, for example `AC04` for a rejection.
    pub reasons: Vec<StatusReason>,
}

/// Why a report cannot be built or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Pain002WriteError {
    /// A decision names an `EndToEndId` the pain.001 file does not hold.
    #[error("no transaction with EndToEndId {end_to_end_id:?} in the pain.001 file")]
    UnknownEndToEndId { end_to_end_id: String },
    /// The pain.001 file holds an `EndToEndId` twice, or two decisions name the same one.
    #[error("EndToEndId {end_to_end_id:?} is not unique")]
    DuplicateEndToEndId { end_to_end_id: String },
    /// Only pain.002.001.09 is written.
    #[error("pain.002 version {version:?} is not written (only pain.002.001.09)")]
    Version { version: Pain002Version },
    /// A value that does not fit its element (path from `CstmrPmtStsRpt`).
    #[error("{path}: {problem}")]
    Field { path: String, problem: &'static str },
}

/// Builds the status report answering `original` (see the [module documentation](self)).
///
/// # Errors
/// An unknown or repeated `EndToEndId`; field errors are found by [`write_pain002`].
pub fn status_report(
    original: &Pain001Summary,
    decisions: &ReportDecisions,
) -> Result<PaymentStatusReport, Pain002WriteError> {
    let mut sent: HashSet<&str> = HashSet::new();
    for (_, tx) in original.transactions() {
        if !sent.insert(tx.end_to_end_id.as_str()) {
            return Err(Pain002WriteError::DuplicateEndToEndId {
                end_to_end_id: tx.end_to_end_id.clone(),
            });
        }
    }
    let mut decided: HashMap<&str, &TransactionDecision> = HashMap::new();
    for decision in &decisions.transactions {
        let id = decision.end_to_end_id.as_str();
        if !sent.contains(id) {
            return Err(Pain002WriteError::UnknownEndToEndId {
                end_to_end_id: decision.end_to_end_id.clone(),
            });
        }
        if decided.insert(id, decision).is_some() {
            return Err(Pain002WriteError::DuplicateEndToEndId {
                end_to_end_id: decision.end_to_end_id.clone(),
            });
        }
    }
    let payment_infos = original
        .payment_infos
        .iter()
        .filter_map(|block| {
            let transactions: Vec<TransactionStatus> = block
                .transactions
                .iter()
                .filter_map(|tx| {
                    let decision = decided.get(tx.end_to_end_id.as_str())?;
                    Some(TransactionStatus {
                        status_id: None,
                        original_instruction_id: tx.instruction_id.clone(),
                        original_end_to_end_id: Some(tx.end_to_end_id.clone()),
                        status: Some(decision.status.clone()),
                        reasons: decision.reasons.clone(),
                    })
                })
                .collect();
            if transactions.is_empty() {
                return None;
            }
            let statuses: Vec<&Status> = transactions
                .iter()
                .filter_map(|t| t.status.as_ref())
                .collect();
            let all_listed = transactions.len() == block.transactions.len();
            let status = if all_listed && statuses.windows(2).all(|w| w[0] == w[1]) {
                statuses.first().map(|s| (*s).clone())
            } else if statuses.iter().any(|s| s.is_rejected())
                && statuses.iter().any(|s| s.is_accepted())
            {
                Some(Status::PartiallyAccepted)
            } else {
                None
            };
            Some(PaymentInfoStatus {
                original_payment_info_id: block.payment_info_id.clone(),
                status,
                reasons: Vec::new(),
                transactions,
            })
        })
        .collect();
    Ok(PaymentStatusReport {
        version: Pain002Version::V09,
        message_id: decisions.message_id.clone(),
        created_at: decisions.created_at.format("%Y-%m-%dT%H:%M:%S").to_string(),
        original_message_id: original.message_id.clone(),
        original_message_name: original.message_name.clone(),
        group_status: Some(decisions.group_status.clone()),
        group_reasons: decisions.group_reasons.clone(),
        payment_infos,
    })
}

/// Writes `report` as a pain.002.001.09 document (UTF-8 XML).
///
/// # Errors
/// A version other than [`Pain002Version::V09`], or the first value that does not fit its
/// element, by path.
pub fn write_pain002(report: &PaymentStatusReport) -> Result<Vec<u8>, Pain002WriteError> {
    if report.version != Pain002Version::V09 {
        return Err(Pain002WriteError::Version {
            version: report.version,
        });
    }
    let mut xml = Emitter::new();
    xml.open_with("Document", &[("xmlns", Pain002Version::V09.namespace())]);
    xml.open("CstmrPmtStsRpt");
    xml.open("GrpHdr");
    leaf_id(&mut xml, "GrpHdr/MsgId", "MsgId", &report.message_id)?;
    let created = report.created_at.trim();
    if created.parse::<NaiveDateTime>().is_err() && DateTime::parse_from_rfc3339(created).is_err() {
        return Err(field("GrpHdr/CreDtTm", "not an ISO date and time"));
    }
    xml.leaf("CreDtTm", created);
    xml.close();
    xml.open("OrgnlGrpInfAndSts");
    let path = "OrgnlGrpInfAndSts";
    leaf_id(
        &mut xml,
        "OrgnlGrpInfAndSts/OrgnlMsgId",
        "OrgnlMsgId",
        &report.original_message_id,
    )?;
    leaf_id(
        &mut xml,
        "OrgnlGrpInfAndSts/OrgnlMsgNmId",
        "OrgnlMsgNmId",
        &report.original_message_name,
    )?;
    status(&mut xml, path, "GrpSts", report.group_status.as_ref())?;
    reasons(&mut xml, path, &report.group_reasons)?;
    xml.close();
    for (b, block) in report.payment_infos.iter().enumerate() {
        let path = format!("OrgnlPmtInfAndSts[{b}]");
        xml.open("OrgnlPmtInfAndSts");
        leaf_id(
            &mut xml,
            &format!("{path}/OrgnlPmtInfId"),
            "OrgnlPmtInfId",
            &block.original_payment_info_id,
        )?;
        status(&mut xml, &path, "PmtInfSts", block.status.as_ref())?;
        reasons(&mut xml, &path, &block.reasons)?;
        for (t, tx) in block.transactions.iter().enumerate() {
            let path = format!("{path}/TxInfAndSts[{t}]");
            xml.open("TxInfAndSts");
            for (name, value) in [
                ("StsId", &tx.status_id),
                ("OrgnlInstrId", &tx.original_instruction_id),
                ("OrgnlEndToEndId", &tx.original_end_to_end_id),
            ] {
                if let Some(value) = value {
                    leaf_id(&mut xml, &format!("{path}/{name}"), name, value)?;
                }
            }
            status(&mut xml, &path, "TxSts", tx.status.as_ref())?;
            reasons(&mut xml, &path, &tx.reasons)?;
            xml.close();
        }
        xml.close();
    }
    Ok(xml.finish().into_bytes())
}

fn field(path: &str, problem: &'static str) -> Pain002WriteError {
    Pain002WriteError::Field {
        path: path.to_owned(),
        problem,
    }
}

/// Text of 1 to `max` characters with no surrounding blanks (the parser trims them, so they
/// would not read back), no control characters and none XML 1.0 excludes.
fn check_text(path: &str, value: &str, max: usize) -> Result<(), Pain002WriteError> {
    if value.is_empty() {
        return Err(field(path, "empty"));
    }
    if value.chars().count() > max {
        return Err(field(path, "too long for its element"));
    }
    if value.trim() != value {
        return Err(field(path, "starts or ends with blanks"));
    }
    if value
        .chars()
        .any(|c| c.is_control() || matches!(c, '\u{FFFE}' | '\u{FFFF}'))
    {
        return Err(field(path, "contains a character XML does not allow"));
    }
    Ok(())
}

fn leaf_id(
    xml: &mut Emitter,
    path: &str,
    name: &'static str,
    value: &str,
) -> Result<(), Pain002WriteError> {
    check_text(path, value, MAX_ID)?;
    xml.leaf(name, value);
    Ok(())
}

fn code(path: &str, value: &str) -> Result<(), Pain002WriteError> {
    check_text(path, value, MAX_CODE)?;
    if !value.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(field(path, "a code holds letters and digits only"));
    }
    Ok(())
}

fn status(
    xml: &mut Emitter,
    parent: &str,
    name: &'static str,
    value: Option<&Status>,
) -> Result<(), Pain002WriteError> {
    if let Some(value) = value {
        code(&format!("{parent}/{name}"), value.code())?;
        xml.leaf(name, value.code());
    }
    Ok(())
}

fn reasons(
    xml: &mut Emitter,
    parent: &str,
    reasons: &[StatusReason],
) -> Result<(), Pain002WriteError> {
    for (r, reason) in reasons.iter().enumerate() {
        let path = format!("{parent}/StsRsnInf[{r}]");
        xml.open("StsRsnInf");
        match (&reason.code, &reason.proprietary) {
            (Some(_), Some(_)) => {
                return Err(field(
                    &format!("{path}/Rsn"),
                    "either a code or a proprietary reason, not both",
                ));
            }
            (Some(c), None) => {
                code(&format!("{path}/Rsn/Cd"), c.as_str())?;
                xml.open("Rsn");
                xml.leaf("Cd", c.as_str());
                xml.close();
            }
            (None, Some(p)) => {
                check_text(&format!("{path}/Rsn/Prtry"), p, MAX_ID)?;
                xml.open("Rsn");
                xml.leaf("Prtry", p);
                xml.close();
            }
            (None, None) => {}
        }
        for (l, line) in reason.additional_info.iter().enumerate() {
            check_text(&format!("{path}/AddtlInf[{l}]"), line, MAX_ADDITIONAL_INFO)?;
            xml.leaf("AddtlInf", line);
        }
        xml.close();
    }
    Ok(())
}
