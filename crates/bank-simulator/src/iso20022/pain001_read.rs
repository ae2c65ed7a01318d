//! A reader of the few pain.001 fields a bank needs to answer a file with a pain.002 status
//! report ([`super::pain002_write`]): `GrpHdr/MsgId`, the version from the namespace, and per
//! payment information block its `PmtInfId` and per transaction its `InstrId`, `EndToEndId` and
//! `InstdAmt`. Everything else is skipped. It reads the XML as [`bank_formats::iso20022::parse_pain002`] does
//! (quick-xml, well-formedness checked, elements of other namespaces left out).

use bank_formats::iso20022::xml::{Node, read_document};

/// The namespace prefix of every pain.001.001 version.
const NAMESPACE_PREFIX: &str = "urn:iso:std:iso:20022:tech:xsd:pain.001.001.";

/// What a status report needs from a pain.001 file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pain001Summary {
    /// The message name from the namespace, such as `pain.001.001.09` (a status report's
    /// `OrgnlMsgNmId`).
    pub message_name: String,
    /// `GrpHdr/MsgId`.
    pub message_id: String,
    /// `PmtInf`, in file order.
    pub payment_infos: Vec<PaymentInfoSummary>,
}

/// One `PmtInf` block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentInfoSummary {
    /// `PmtInfId`.
    pub payment_info_id: String,
    /// `CdtTrfTxInf`, in file order.
    pub transactions: Vec<TransactionSummary>,
}

/// One `CdtTrfTxInf`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionSummary {
    /// `PmtId/InstrId`, when present.
    pub instruction_id: Option<String>,
    /// `PmtId/EndToEndId`.
    pub end_to_end_id: String,
    /// `Amt/InstdAmt` in cents (at most two decimals).
    pub amount_cents: u64,
}

impl Pain001Summary {
    /// Every transaction, in file order, with its block's `PmtInfId`.
    pub fn transactions(&self) -> impl Iterator<Item = (&str, &TransactionSummary)> {
        self.payment_infos.iter().flat_map(|p| {
            p.transactions
                .iter()
                .map(move |t| (p.payment_info_id.as_str(), t))
        })
    }
}

/// Why a pain.001 file could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Pain001ReadError {
    /// Not UTF-8, not well-formed XML, or nested too deep.
    #[error("unreadable XML: {0}")]
    Xml(String),
    /// Well-formed XML, but not a pain.001 `CstmrCdtTrfInitn` document.
    #[error("not a pain.001 document: root element {element:?} in namespace {namespace:?}")]
    NotPain001 { element: String, namespace: String },
    /// A required element is missing or empty (its path from `CstmrCdtTrfInitn`).
    #[error("missing {path}")]
    Missing { path: String },
    /// An amount that is not a decimal number of at most two decimals that fits in cents.
    #[error("{path}: {found:?} is not an amount with at most two decimals")]
    BadAmount { path: String, found: String },
}

/// Reads the fields of [`Pain001Summary`] from a pain.001 file of any `pain.001.001` version.
///
/// # Errors
/// See [`Pain001ReadError`].
pub fn read_pain001(bytes: &[u8]) -> Result<Pain001Summary, Pain001ReadError> {
    let (namespace, root) =
        read_document(bytes).map_err(|e| Pain001ReadError::Xml(e.to_string()))?;
    let version = namespace
        .strip_prefix(NAMESPACE_PREFIX)
        .filter(|v| v.len() == 2 && v.bytes().all(|b| b.is_ascii_digit()));
    let initiation = root.child("CstmrCdtTrfInitn");
    let (Some(version), "Document", Some(initiation)) = (version, root.name.as_str(), initiation)
    else {
        return Err(Pain001ReadError::NotPain001 {
            element: root.name.clone(),
            namespace,
        });
    };
    let header = initiation
        .child("GrpHdr")
        .ok_or_else(|| missing("GrpHdr".into()))?;
    let payment_infos = initiation
        .children("PmtInf")
        .enumerate()
        .map(|(b, block)| {
            let path = format!("PmtInf[{b}]");
            Ok(PaymentInfoSummary {
                payment_info_id: required(block, &path, "PmtInfId")?,
                transactions: block
                    .children("CdtTrfTxInf")
                    .enumerate()
                    .map(|(t, tx)| transaction(&format!("{path}/CdtTrfTxInf[{t}]"), tx))
                    .collect::<Result<_, _>>()?,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Pain001Summary {
        message_name: format!("pain.001.001.{version}"),
        message_id: required(header, "GrpHdr", "MsgId")?,
        payment_infos,
    })
}

fn transaction(path: &str, tx: &Node) -> Result<TransactionSummary, Pain001ReadError> {
    let id = tx
        .child("PmtId")
        .ok_or_else(|| missing(format!("{path}/PmtId")))?;
    let amount_path = format!("{path}/Amt/InstdAmt");
    let amount = tx
        .child("Amt")
        .and_then(|a| a.child("InstdAmt"))
        .map(|a| a.text.trim())
        .filter(|a| !a.is_empty())
        .ok_or_else(|| missing(amount_path.clone()))?;
    Ok(TransactionSummary {
        instruction_id: optional(id, "InstrId"),
        end_to_end_id: required(id, &format!("{path}/PmtId"), "EndToEndId")?,
        amount_cents: cents(amount).ok_or_else(|| Pain001ReadError::BadAmount {
            path: amount_path,
            found: amount.to_owned(),
        })?,
    })
}

/// `123`, `123.4` or `123.45` as cents.
fn cents(amount: &str) -> Option<u64> {
    let (units, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(units) || !(fraction.is_empty() || digits(fraction)) || fraction.len() > 2 {
        return None;
    }
    let fraction: u64 = if fraction.is_empty() {
        0
    } else {
        format!("{fraction:0<2}").parse().ok()?
    };
    units
        .parse::<u64>()
        .ok()?
        .checked_mul(100)?
        .checked_add(fraction)
}

fn missing(path: String) -> Pain001ReadError {
    Pain001ReadError::Missing { path }
}

fn required(parent: &Node, parent_path: &str, name: &str) -> Result<String, Pain001ReadError> {
    optional(parent, name).ok_or_else(|| missing(format!("{parent_path}/{name}")))
}

fn optional(parent: &Node, name: &str) -> Option<String> {
    let text = parent.child(name)?.text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::cents;

    #[test]
    fn amounts() {
        assert_eq!(cents("0.01"), Some(1));
        assert_eq!(cents("12"), Some(1200));
        assert_eq!(cents("12.5"), Some(1250));
        assert_eq!(cents("999999999.99"), Some(99_999_999_999));
        for bad in [
            "",
            ".5",
            "1.234",
            "-1",
            "1e3",
            "1,00",
            "99999999999999999999",
        ] {
            assert_eq!(cents(bad), None, "{bad:?}");
        }
    }
}
