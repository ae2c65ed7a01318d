//! ISO 20022 SEPA credit transfers: the pain.001.001.09 file payoutd sends its bank
//! ([`pain001`]) and the pain.002 payment status reports the bank sends back ([`pain002`]).
//!
//! The bank's side (reading the pain.001 fields a status report refers to, writing the
//! pain.002.001.09 that answers it) is the bank simulator's (`bank_simulator::iso20022`), over
//! the XML toolkit both share ([`xml`]).
//!
//! Text in both follows the SEPA (EPC) Latin character set ([`text`]). The writer's output is
//! validated against the official XSD by the crate's tests (`tests/iso20022_xsd.rs`), with
//! `xmllint` and the schema that `cargo xtask test` provides.

pub mod pain001;
pub mod pain002;
pub mod text;
pub mod xml;

pub use pain001::{
    CreditTransfer, CreditTransferInitiation, DebtorAgent, InitiatingParty, PAIN001_NAMESPACE,
    Pain001Error, PaymentBatch, write_pain001,
};
pub use pain002::{
    Pain002Error, Pain002Version, PaymentInfoStatus, PaymentStatusReport, ReasonCode, Status,
    StatusReason, TransactionStatus, parse_pain002,
};
