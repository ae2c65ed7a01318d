//! A method's rail as one value: [`RailUnit`], reached through [`unit`], one exhaustive match on
//! [`PayoutMethod`]. A unit says how the method's files are numbered and settled, which of the
//! bank's answers may follow which, which transports carry them, and reads its own settings (the keys of `[rails."<method>"]` besides
//! the common ones, which the application reads: cut-offs, calendar, transport) into a
//! [`ConfiguredRail`], which gives the writer and the reader.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use domain::account::PayoutMethod;
use domain::rail::answers::AnswerRules;
use domain::rail::file_rail::{FileNumbering, Settlement};
use domain::rail::instruction::BankFileWriter;
use domain::rail::limits::FileLimits;
use domain::rail::report::BankFileReader;
use serde::de::DeserializeOwned;

use crate::settings::SettingsError;
use crate::{aba, cpa005, ib4b, interac, nacha, sepa};

/// How a rail's files reach the bank: the `kind` of `[rails."<method>".transport]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransportKind {
    /// SFTP to the bank's host.
    Sftp,
    /// Local directories a managed file-transfer agent serves.
    Directory,
    /// A partner's signed HTTPS API.
    PartnerApi,
}

impl TransportKind {
    /// Every kind.
    pub const ALL: &'static [Self] = &[Self::Sftp, Self::Directory, Self::PartnerApi];

    /// Its name in the configuration.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sftp => "sftp",
            Self::Directory => "directory",
            Self::PartnerApi => "partner_api",
        }
    }

    /// The kind named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|kind| kind.name() == name)
    }

    /// The methods whose rails accept this kind.
    pub fn methods(self) -> Vec<PayoutMethod> {
        PayoutMethod::ALL
            .iter()
            .copied()
            .filter(|method| unit(*method).transports.contains(&self))
            .collect()
    }
}

/// The transports of a bank file drop.
pub(crate) const FILE_DROP: &[TransportKind] = &[TransportKind::Sftp, TransportKind::Directory];

/// One method's rail, before its settings: what it is and how it behaves.
pub struct RailUnit {
    /// The method.
    pub method: PayoutMethod,
    /// The format's name in summaries (`nacha`, `pain.001.001.09`, …).
    pub format: &'static str,
    /// How its files are numbered.
    pub numbering: FileNumbering,
    /// What one of its files may hold; a batch with more becomes several files.
    pub limits: FileLimits,
    /// How its payouts settle.
    pub settlement: Settlement,
    /// Which of the bank's answers may follow which.
    pub answers: AnswerRules,
    /// The transports that carry its files, the first the usual one.
    pub transports: &'static [TransportKind],
    /// Whether its counterparty pays on Saturdays and Sundays, so that its calendar may open
    /// them: a partner's API that works every day, never a bank file scheme (NACHA, SEPA, ABA,
    /// Standard 005 and IB4B settle on business days only).
    pub settles_on_weekends: bool,
    /// Reads the rail's own keys.
    pub(crate) settings: fn(toml::Table) -> Result<Arc<dyn RailSettings>, String>,
}

impl fmt::Debug for RailUnit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RailUnit")
            .field("method", &self.method)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

/// The rail of `method`.
pub const fn unit(method: PayoutMethod) -> &'static RailUnit {
    match method {
        PayoutMethod::DirectEntry => &aba::UNIT,
        PayoutMethod::Ach => &nacha::UNIT,
        PayoutMethod::Eft => &cpa005::UNIT,
        PayoutMethod::Digital => &interac::UNIT,
        PayoutMethod::Sepa => &sepa::UNIT,
        PayoutMethod::DirectCredit => &ib4b::UNIT,
    }
}

/// Why a rail's own keys were not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigureError {
    /// A key that is unknown, missing or of the wrong type (serde's message, about the whole
    /// table).
    #[error("{0}")]
    Unreadable(String),
    /// Every problem of the values, by key.
    #[error(transparent)]
    Invalid(#[from] SettingsError),
}

impl RailUnit {
    /// Reads and checks the rail's own keys (`[rails."<method>"]` without the common ones).
    ///
    /// # Errors
    /// A key serde refuses, or every problem the settings' `validate()` finds.
    pub fn configure(&'static self, table: toml::Table) -> Result<ConfiguredRail, ConfigureError> {
        let settings = (self.settings)(table).map_err(ConfigureError::Unreadable)?;
        settings.validate()?;
        Ok(ConfiguredRail {
            unit: self,
            settings,
        })
    }

    /// Whether `kind` carries this rail's files.
    pub fn accepts(&self, kind: TransportKind) -> bool {
        self.transports.contains(&kind)
    }
}

/// A rail with checked settings: its writer and reader.
#[derive(Clone)]
pub struct ConfiguredRail {
    unit: &'static RailUnit,
    settings: Arc<dyn RailSettings>,
}

impl fmt::Debug for ConfiguredRail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfiguredRail")
            .field("method", &self.unit.method)
            .field("settings", &self.settings)
            .finish()
    }
}

impl ConfiguredRail {
    /// The rail.
    pub fn unit(&self) -> &'static RailUnit {
        self.unit
    }

    /// The method.
    pub fn method(&self) -> PayoutMethod {
        self.unit.method
    }

    /// The settings, as the rail's own type (`NachaSettings`, …); `None` for another type.
    pub fn settings<T: 'static>(&self) -> Option<&T> {
        self.settings.as_any().downcast_ref()
    }

    /// The writer of the rail's files.
    pub fn writer(&self) -> Arc<dyn BankFileWriter> {
        self.settings.writer()
    }

    /// The reader of the bank's answers.
    pub fn reader(&self) -> Arc<dyn BankFileReader> {
        self.settings.reader()
    }

    /// The settings for `check-config`'s summary, account values masked.
    pub fn summary(&self) -> serde_json::Value {
        self.settings.summary()
    }
}

/// What each rail's settings type does. Implemented by the rail modules; `writer` is called
/// only on settings `validate` accepted.
pub(crate) trait RailSettings: fmt::Debug + Send + Sync + 'static {
    /// Every problem, by key.
    fn validate(&self) -> Result<(), SettingsError>;
    /// The writer with these settings.
    fn writer(&self) -> Arc<dyn BankFileWriter>;
    /// The reader of the bank's answers.
    fn reader(&self) -> Arc<dyn BankFileReader>;
    /// The summary, account values masked.
    fn summary(&self) -> serde_json::Value;
    /// For [`ConfiguredRail::settings`].
    fn as_any(&self) -> &dyn Any;
}

/// Reads a settings type from the rail's table (for [`RailUnit`]'s reader).
pub(crate) fn read<T: RailSettings + DeserializeOwned>(
    table: toml::Table,
) -> Result<Arc<dyn RailSettings>, String> {
    toml::Value::Table(table)
        .try_into::<T>()
        .map(|settings| Arc::new(settings) as Arc<dyn RailSettings>)
        .map_err(|e| e.message().trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_has_its_own_unit() {
        for &method in PayoutMethod::ALL {
            assert_eq!(unit(method).method, method);
            assert!(!unit(method).transports.is_empty());
            // Only Interac's partner works every day; every bank file scheme settles on
            // business days.
            assert_eq!(
                unit(method).settles_on_weekends,
                method == PayoutMethod::Digital,
                "{method:?}"
            );
        }
    }

    fn table(text: &str) -> toml::Table {
        match text.parse() {
            Ok(table) => table,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn a_rail_reads_its_own_keys_and_reports_every_problem_by_key() {
        let ach = unit(PayoutMethod::Ach);
        let good = "immediate_destination = \"021000021\"\n\
                    immediate_destination_name = \" Bank of Example \"\n\
                    immediate_origin = \"1234567890\"\n\
                    immediate_origin_name = \"acme\"\n\
                    company_name = \"Acme Payouts\"\n\
                    company_id = \"1234567890\"\n\
                    odfi_routing = \"02100002\"\n\
                    entry_description = \"payout\"\n";
        let Ok(rail) = ach.configure(table(good)) else {
            panic!("accepted")
        };
        assert_eq!(rail.method(), PayoutMethod::Ach);
        let Some(settings) = rail.settings::<nacha::NachaSettings>() else {
            panic!("NACHA settings")
        };
        // Names are read as the file carries them.
        assert_eq!(settings.immediate_destination_name, "BANK OF EXAMPLE");
        assert_eq!(settings.entry_description, "PAYOUT");
        assert!(rail.settings::<sepa::SepaSettings>().is_none());
        assert_eq!(rail.summary()["company_name"], "ACME PAYOUTS");

        let bad = good
            .replace("021000021", "021000022")
            .replace("\"1234567890\"\nodfi", "\"12345\"\nodfi")
            .replace("payout", "pay~out");
        let Err(ConfigureError::Invalid(error)) = ach.configure(table(&bad)) else {
            panic!("refused")
        };
        assert_eq!(
            error.settings(),
            ["immediate_destination", "company_id", "entry_description"]
        );
        let Err(ConfigureError::Unreadable(why)) =
            ach.configure(table(&format!("{good}compnay_id = \"x\"\n")))
        else {
            panic!("refused")
        };
        assert!(why.contains("compnay_id"), "{why}");
        // Another rail's keys are not this rail's.
        assert!(matches!(
            unit(PayoutMethod::Sepa).configure(table(good)),
            Err(ConfigureError::Unreadable(_))
        ));
    }

    #[test]
    fn transports_are_named_and_each_carries_some_rail() {
        for &kind in TransportKind::ALL {
            assert_eq!(TransportKind::from_name(kind.name()), Some(kind));
            assert!(!kind.methods().is_empty(), "{kind:?}");
        }
        assert_eq!(TransportKind::from_name("ftp"), None);
        assert_eq!(TransportKind::PartnerApi.methods(), [PayoutMethod::Digital]);
    }
}
