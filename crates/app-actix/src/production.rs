//! The adapters of production mode, built from the checked [`ProductionSettings`]: one bank
//! file rail per enabled method (format writer and reader, transport, calendar), the manual KYC
//! provider, and the batch schedule that runs each batch at its rail's next cut-off.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use domain::PortError;
use domain::account::PayoutMethod;
use domain::account::ports::{AccountStore, Notifier};
use domain::batch::runner::BatchRunner;
use domain::payout::ports::PayoutStore;
use domain::ports::{Clock, IdGenerator, KycCheckRequest, KycProvider};
use domain::rail::answers::AnswerRules;
use domain::rail::calendar::RailCalendar;
use domain::rail::file_rail::{FileNumbering, FileRail, FileRailSettings, MethodRails, Settlement};
use domain::rail::inbound::{InboundProcessor, InboundRail};
use domain::rail::inbound_ports::InboundStore;
use domain::rail::instruction::BankFileWriter;
use domain::rail::limits::FileLimits;
use domain::rail::ports::RailFileStore;
use domain::rail::report::BankFileReader;
use domain::rail::schedule::BatchSchedule;
use domain::rail::transport::FileTransport;
use domain::receiver::ports::ReceiverStore;

use crate::partner_callbacks::{CallbackCapacity, RailCallbacks};
use crate::production_config::{KycProviderSetting, ProductionSettings};
use crate::production_config::{RailSettings, SmtpSettings, SmtpTls, TransportSettings};

/// KYC decided by operators (`payoutd admin kyc`): opening a check records nothing outside
/// payoutd, and the receiver stays `pending` until an operator decides.
#[derive(Debug, Clone, Copy, Default)]
pub struct ManualKyc;

#[async_trait]
impl KycProvider for ManualKyc {
    async fn start_check(&self, request: &KycCheckRequest) -> Result<String, PortError> {
        Ok(format!("manual_{}", request.receiver_id.as_uuid().simple()))
    }
}

/// One enabled method's rail, built.
pub struct BuiltRail {
    /// The method.
    pub method: PayoutMethod,
    /// Its settings (prefix, calendar).
    pub settings: RailSettings,
    /// The format writer.
    pub writer: Arc<dyn BankFileWriter>,
    /// The format reader of the bank's answers.
    pub reader: Arc<dyn BankFileReader>,
    /// The bank's drop.
    pub transport: Arc<dyn FileTransport>,
    numbering: FileNumbering,
    settlement: Settlement,
    limits: FileLimits,
    /// Which of the rail's answers may follow which.
    pub answers: AnswerRules,
}

/// The outside world of production mode.
pub struct Production {
    /// The checked settings.
    pub settings: ProductionSettings,
    /// The rails, by method.
    pub rails: BTreeMap<PayoutMethod, BuiltRail>,
    /// The KYC provider.
    pub kyc: Arc<dyn KycProvider>,
    /// The notifier of confirmation requests.
    pub notifier: Arc<dyn Notifier>,
}

/// The SMTP notifier's settings from the checked `[smtp]` section.
pub fn smtp_settings(s: &SmtpSettings) -> adapters_smtp::SmtpSettings {
    adapters_smtp::SmtpSettings {
        host: s.host.clone(),
        port: s.port,
        tls: match s.tls {
            SmtpTls::StartTls => adapters_smtp::TlsMode::Starttls,
            SmtpTls::Implicit => adapters_smtp::TlsMode::Implicit,
            SmtpTls::None => adapters_smtp::TlsMode::None,
        },
        credentials: s
            .credentials
            .as_ref()
            .map(|c| adapters_smtp::SmtpCredentials {
                username: c.username.clone(),
                password: c.password.value.clone(),
            }),
        from: s.from.clone(),
        timeout: s.timeout,
        ca_certificate_pem: None,
    }
}

fn build_rail(settings: &RailSettings) -> BuiltRail {
    let unit = settings.rail.unit();
    BuiltRail {
        method: settings.method,
        settings: settings.clone(),
        writer: settings.rail.writer(),
        reader: settings.rail.reader(),
        transport: settings.transport.transport(),
        numbering: unit.numbering,
        settlement: unit.settlement,
        limits: unit.limits,
        answers: unit.answers,
    }
}

impl Production {
    /// Builds the production adapters from checked settings (nothing is connected yet): the
    /// rails, manual KYC, and the SMTP notifier of `[smtp]`.
    ///
    /// # Errors
    /// A setting the adapters refuse, named by its path.
    pub fn from_settings(settings: ProductionSettings) -> anyhow::Result<Self> {
        let notifier = adapters_smtp::SmtpNotifier::new(&smtp_settings(&settings.smtp))
            .map_err(|e| anyhow::anyhow!("smtp: {e}"))?;
        Self::build(settings, Arc::new(notifier))
    }

    /// Builds every enabled rail's adapters from checked settings (nothing is connected yet),
    /// with `notifier` sending the confirmation requests (tests pass a recording one).
    ///
    /// # Errors
    /// A setting the adapters refuse, named by its path.
    pub fn build(
        settings: ProductionSettings,
        notifier: Arc<dyn Notifier>,
    ) -> anyhow::Result<Self> {
        let rails = settings
            .rails
            .values()
            .map(|rail| (rail.method, build_rail(rail)))
            .collect();
        let kyc: Arc<dyn KycProvider> = match settings.kyc {
            KycProviderSetting::Manual => Arc::new(ManualKyc),
        };
        Ok(Self {
            settings,
            rails,
            kyc,
            notifier,
        })
    }

    /// The enabled methods: those with a rail.
    pub fn enabled(&self) -> BTreeSet<PayoutMethod> {
        self.rails.keys().copied().collect()
    }

    /// Each batch runs at its asset's rail's next cut-off (an asset without a rail has no
    /// enabled method, so no batch; `otherwise` is the fallback).
    pub fn schedule(&self, otherwise: chrono::Duration) -> BatchSchedule {
        let calendars: BTreeMap<_, Arc<RailCalendar>> = self
            .rails
            .values()
            .map(|rail| (rail.method.asset(), rail.settings.calendar.clone()))
            .collect();
        BatchSchedule::AtCutoffs {
            calendars,
            otherwise,
        }
    }

    /// How often the inbound directories are read: the shortest of the rails' intervals.
    pub fn poll_interval(&self) -> Duration {
        self.rails
            .values()
            .map(|rail| rail.settings.transport.poll_interval())
            .min()
            .unwrap_or(Duration::from_secs(300))
    }

    /// The payout rail: each payout's file rail by its account's method.
    pub fn payout_rail<S>(
        &self,
        store: Arc<S>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> MethodRails
    where
        S: RailFileStore + ReceiverStore + AccountStore + 'static,
    {
        let rails = self
            .rails
            .values()
            .map(|rail| {
                FileRail::new(
                    FileRailSettings {
                        method: rail.method,
                        prefix: rail.settings.file_prefix.clone(),
                        numbering: rail.numbering,
                        settlement: rail.settlement,
                        limits: rail.limits,
                        effective_date: rail.settings.effective_date(),
                    },
                    rail.writer.clone(),
                    rail.transport.clone(),
                    store.clone(),
                    store.clone(),
                    clock.clone(),
                    ids.clone(),
                )
            })
            .collect();
        MethodRails::new(rails, store)
    }

    /// The callback route's wiring when `cad/digital` is paid through a partner's API: its
    /// reports' processor (the same as polling's), the partner's shared secret, and the
    /// process's `capacity` for callbacks.
    pub fn partner_callbacks<S>(
        &self,
        store: Arc<S>,
        runner: Arc<BatchRunner>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        capacity: CallbackCapacity,
    ) -> Option<RailCallbacks>
    where
        S: RailFileStore + InboundStore + PayoutStore + 'static,
    {
        let rail = self.rails.get(&PayoutMethod::Digital)?;
        let TransportSettings::PartnerApi(api) = &rail.settings.transport else {
            return None;
        };
        let processor = InboundProcessor::new(
            vec![InboundRail {
                method: rail.method,
                transport: rail.transport.clone(),
                reader: rail.reader.clone(),
                answers: rail.answers,
                poll_interval: rail.settings.transport.poll_interval(),
            }],
            store.clone(),
            store.clone(),
            store,
            runner,
            clock.clone(),
            ids,
        );
        Some(RailCallbacks::new(
            Arc::new(processor),
            api.settings.shared_secret.clone(),
            api.settings.signature_tolerance_seconds,
            clock,
            capacity,
        ))
    }

    /// The processor of the bank's answers in every rail's inbound directory.
    pub fn inbound<S>(
        &self,
        store: Arc<S>,
        runner: Arc<BatchRunner>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> InboundProcessor
    where
        S: RailFileStore + InboundStore + PayoutStore + 'static,
    {
        let rails = self
            .rails
            .values()
            .map(|rail| InboundRail {
                method: rail.method,
                transport: rail.transport.clone(),
                reader: rail.reader.clone(),
                answers: rail.answers,
                poll_interval: rail.settings.transport.poll_interval(),
            })
            .collect();
        InboundProcessor::new(
            rails,
            store.clone(),
            store.clone(),
            store,
            runner,
            clock,
            ids,
        )
    }
}
