//! The production rails, one unit per payout method ([`unit()`], one exhaustive match on
//! `PayoutMethod`): each module holds its method's whole rail, and nothing about a format
//! lives outside it:
//!
//! - its settings type, read from the keys of `[rails."<method>"]` besides the common ones
//!   (serde, unknown keys refused) and checked by one `validate()` that reports every problem by
//!   its key;
//! - its writer (the domain's [`BankFileWriter`](domain::rail::instruction::BankFileWriter)
//!   port: the batch's credit instructions mapped onto the typed file contents of
//!   `bank-formats`) and its reader of the bank's answers
//!   ([`BankFileReader`](domain::rail::report::BankFileReader));
//! - its `UNIT`: the format's name, file numbering, settlement rule and the transports that
//!   carry its files ([`TransportKind`]).
//!
//! | method | format | module |
//! |---|---|---|
//! | `usd/ach` | NACHA, PPD (or CCD) credits 22 / 32 | [`nacha`] |
//! | `eur/sepa` | ISO 20022 pain.001.001.09 | [`sepa`] |
//! | `aud/direct-entry` | ABA (Cemtex) direct entry, credits 50 (and an optional self-balancing debit 13) | [`aba`] |
//! | `cad/eft` | Payments Canada Standard 005, `C` credits | [`cpa005`] |
//! | `nzd/direct-credit` | BNZ IB4B direct credit CSV, code 50 (dishonours: payoutd's IB4B-style file) | [`ib4b`] |
//! | `cad/digital` | Interac e-Transfer partner protocol, signed JSON batch requests | [`interac`] |
//!
//! A rail for another method over an existing format is one more module with its settings
//! type, writer and reader over that format, and its arm in [`unit()`].

pub mod aba;
pub mod cpa005;
pub mod ib4b;
pub mod interac;
pub mod nacha;
pub mod sepa;
mod settings;
mod unit;

pub use settings::{SettingProblem, SettingsError};
pub use unit::{ConfigureError, ConfiguredRail, RailUnit, TransportKind, unit};

/// A request the format cannot carry: nothing is written or sent.
pub(crate) fn refused(message: impl Into<String>) -> domain::PortError {
    domain::PortError::unknown(message)
}
