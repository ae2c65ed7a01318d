//! ISO 20022 SEPA credit transfers: the pain.001.001.09 file payoutd sends its bank
//! ([`pain001`]).
//!
//! Text follows the SEPA (EPC) Latin character set ([`text`]). The writer's output is
//! validated against the official XSD by the crate's tests (`tests/iso20022_xsd.rs`), with
//! `xmllint` and the schema that `cargo xtask test` provides.

pub mod pain001;
pub mod text;
mod xml;

pub use pain001::{
    CreditTransfer, CreditTransferInitiation, DebtorAgent, InitiatingParty, PAIN001_NAMESPACE,
    Pain001Error, PaymentBatch, write_pain001,
};
