//! The bank's side of ISO 20022 SEPA credit transfers: reading the fields of a pain.001 file a
//! status report refers to ([`read_pain001`]: `MsgId`, `PmtInfId`, `InstrId`, `EndToEndId`,
//! amounts), and building ([`status_report`]) and writing ([`write_pain002`]) the
//! pain.002.001.09 report answering it. The report writer's output is checked by parsing it
//! back with `bank_formats::iso20022::parse_pain002`: the XSD package the tests use ships no
//! pain.002.001.09 schema.

pub mod pain001_read;
pub mod pain002_write;

pub use pain001_read::{
    Pain001ReadError, Pain001Summary, PaymentInfoSummary, TransactionSummary, read_pain001,
};
pub use pain002_write::{
    Pain002WriteError, ReportDecisions, TransactionDecision, status_report, write_pain002,
};
