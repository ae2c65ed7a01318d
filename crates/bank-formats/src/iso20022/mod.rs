//! ISO 20022 SEPA credit transfers: the pain.001.001.09 file payoutd sends its bank
//! ([`pain001`]) and the pain.002 payment status reports the bank sends back ([`pain002`]).
//!
//! The bank's side, for a local bank simulator: [`read_pain001`] reads the pain.001 fields a
//! status report refers to (`MsgId`, `PmtInfId`, `InstrId`, `EndToEndId`, amounts), and
//! [`pain002_write`] builds ([`status_report`]) and writes ([`write_pain002`]) the
//! pain.002.001.09 report answering it. The report writer's output is checked by parsing it
//! back with [`parse_pain002`]: the XSD package the tests use ships no pain.002.001.09 schema.
//!
//! Text in both follows the SEPA (EPC) Latin character set ([`text`]). The writer's output is
//! validated against the official XSD by the crate's tests (`tests/iso20022_xsd.rs`), with
//! `xmllint` and the schema that `cargo xtask test` provides.

pub mod pain001;
pub mod pain001_read;
pub mod pain002;
pub mod pain002_write;
pub mod text;
mod xml;

pub use pain001::{
    CreditTransfer, CreditTransferInitiation, DebtorAgent, InitiatingParty, PAIN001_NAMESPACE,
    Pain001Error, PaymentBatch, write_pain001,
};
pub use pain001_read::{
    Pain001ReadError, Pain001Summary, PaymentInfoSummary, TransactionSummary, read_pain001,
};
pub use pain002::{
    Pain002Error, Pain002Version, PaymentInfoStatus, PaymentStatusReport, ReasonCode, Status,
    StatusReason, TransactionStatus, parse_pain002,
};
pub use pain002_write::{
    Pain002WriteError, ReportDecisions, TransactionDecision, status_report, write_pain002,
};
