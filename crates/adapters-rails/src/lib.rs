//! The production rails' file formats: each implements the domain's
//! [`BankFileWriter`](domain::rail::instruction::BankFileWriter) port by mapping the batch's
//! credit instructions (built from the payout-method descriptors' rail roles) onto the typed
//! file contents of `bank-formats`, with the originator details of the rail's settings.
//!
//! | method | format | module |
//! |---|---|---|
//! | `usd/ach` | NACHA, PPD (or CCD) credits 22 / 32 | [`nacha`] |
//! | `eur/sepa` | ISO 20022 pain.001.001.09 | [`sepa`] |
//! | `aud/direct-entry` | ABA (Cemtex) direct entry, credits 50 (and an optional self-balancing debit 13) | [`aba`] |
//! | `cad/eft` | Payments Canada Standard 005, `C` credits | [`cpa005`] |
//! | `nzd/direct-credit` | BNZ IB4B direct credit CSV, code 50 (dishonours: payoutd's IB4B-style file) | [`ib4b`] |
//! | `cad/digital` | Interac e-Transfer partner protocol, signed JSON batch requests | [`interac`] |

pub mod aba;
pub mod cpa005;
pub mod ib4b;
pub mod interac;
pub mod nacha;
pub mod sepa;

/// A request the format cannot carry: nothing is written or sent.
pub(crate) fn refused(message: impl Into<String>) -> domain::PortError {
    domain::PortError::unknown(message)
}

/// Why a rail's originator settings are wrong, naming the setting (its key in the rail's
/// configuration table).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct SettingsError {
    /// The setting's name.
    pub setting: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

pub(crate) fn setting_error(setting: &'static str, problem: impl Into<String>) -> SettingsError {
    SettingsError {
        setting,
        problem: problem.into(),
    }
}
