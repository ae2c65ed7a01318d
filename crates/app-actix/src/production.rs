//! The adapters of production mode, built from the checked [`ProductionSettings`]: one bank
//! file rail per enabled method (format writer and reader, transport, calendar), the manual KYC
//! provider, and the batch schedule that runs each batch at its rail's next cut-off.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use adapters_filetransfer::{DirectoryTransport, PartnerApiTransport, SftpTransport};
use adapters_rails::aba::{self, AbaReader, AbaWriter};
use adapters_rails::cpa005::{self, Cpa005Reader, Cpa005Writer};
use adapters_rails::ib4b::{self, Ib4bReader, Ib4bWriter};
use adapters_rails::interac::{self, InteracReader, InteracWriter};
use adapters_rails::nacha::{self, EntryClass, NachaReader, NachaSettings, NachaWriter};
use adapters_rails::sepa::{self, Pain002Reader, SepaSettings, SepaWriter};
use anyhow::Context;
use async_trait::async_trait;
use bank_formats::nacha::LineEnding;
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
use domain::rail::ports::RailFileStore;
use domain::rail::report::BankFileReader;
use domain::rail::schedule::BatchSchedule;
use domain::rail::transport::FileTransport;
use domain::receiver::ports::ReceiverStore;

use crate::partner_callbacks::RailCallbacks;
use crate::production_config::{
    FormatSettings, NachaOriginator, RailSettings, SepaOriginator, SmtpSettings, SmtpTls,
    TransportSettings,
};
use crate::production_config::{KycProviderSetting, ProductionSettings};

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

fn nacha_settings(o: &NachaOriginator) -> NachaSettings {
    NachaSettings {
        immediate_destination: o.immediate_destination.clone(),
        immediate_destination_name: o.immediate_destination_name.clone(),
        immediate_origin: o.immediate_origin.clone(),
        immediate_origin_name: o.immediate_origin_name.clone(),
        company_name: o.company_name.clone(),
        company_id: o.company_id.clone(),
        originating_dfi: o.odfi_routing.clone(),
        entry_description: o.entry_description.clone(),
        // Receivers are people (names, dates of birth): consumer credits.
        entry_class: EntryClass::Ppd,
        line_ending: LineEnding::Lf,
    }
}

fn sepa_settings(o: &SepaOriginator) -> SepaSettings {
    SepaSettings {
        initiating_party_name: o.initiating_party_name.clone(),
        initiating_party_id: o.initiating_party_id.clone(),
        debtor_name: o.debtor_name.clone(),
        debtor_iban: o.debtor_iban.clone(),
        debtor_bic: o.debtor_bic.clone(),
        batch_booking: true,
    }
}

fn build_rail(settings: &RailSettings) -> anyhow::Result<BuiltRail> {
    let route = settings.method.route();
    let at = |setting: &str| format!("rails.\"{route}\".{setting}");
    let (writer, reader, numbering, settlement, answers): (
        Arc<dyn BankFileWriter>,
        Arc<dyn BankFileReader>,
        _,
        _,
        _,
    ) = match &settings.format {
        FormatSettings::Nacha(originator) => (
            Arc::new(
                NachaWriter::new(nacha_settings(originator))
                    .map_err(|e| anyhow::anyhow!("{}: {}", at(e.setting), e.problem))?,
            ),
            Arc::new(NachaReader),
            nacha::NUMBERING,
            nacha::SETTLEMENT,
            nacha::ANSWERS,
        ),
        FormatSettings::Pain001(originator) => (
            Arc::new(
                SepaWriter::new(sepa_settings(originator))
                    .map_err(|e| anyhow::anyhow!("{}: {}", at(e.setting), e.problem))?,
            ),
            Arc::new(Pain002Reader),
            sepa::NUMBERING,
            sepa::SETTLEMENT,
            sepa::ANSWERS,
        ),
        FormatSettings::Aba(settings) => (
            Arc::new(
                AbaWriter::new(settings.clone())
                    .map_err(|e| anyhow::anyhow!("{}: {}", at(e.setting), e.problem))?,
            ),
            Arc::new(AbaReader),
            aba::NUMBERING,
            aba::SETTLEMENT,
            aba::ANSWERS,
        ),
        FormatSettings::Cpa005(settings) => (
            Arc::new(
                Cpa005Writer::new(settings.clone())
                    .map_err(|e| anyhow::anyhow!("{}: {}", at(e.setting), e.problem))?,
            ),
            Arc::new(Cpa005Reader),
            cpa005::NUMBERING,
            cpa005::SETTLEMENT,
            cpa005::ANSWERS,
        ),
        FormatSettings::Ib4b(settings) => (
            Arc::new(
                Ib4bWriter::new(settings.clone())
                    .map_err(|e| anyhow::anyhow!("{}: {}", at(e.setting), e.problem))?,
            ),
            Arc::new(Ib4bReader),
            ib4b::NUMBERING,
            ib4b::SETTLEMENT,
            ib4b::ANSWERS,
        ),
        FormatSettings::Interac(settings) => (
            Arc::new(
                InteracWriter::new(settings.clone())
                    .map_err(|e| anyhow::anyhow!("{}: {}", at(e.setting), e.problem))?,
            ),
            Arc::new(InteracReader),
            interac::NUMBERING,
            interac::SETTLEMENT,
            interac::ANSWERS,
        ),
    };
    let transport: Arc<dyn FileTransport> = match &settings.transport {
        TransportSettings::Sftp(sftp) => {
            Arc::new(SftpTransport::new(sftp.settings.clone()).with_context(|| at("transport"))?)
        }
        TransportSettings::PartnerApi(api) => Arc::new(
            PartnerApiTransport::new(api.settings.clone()).with_context(|| at("transport"))?,
        ),
        TransportSettings::Directory(dirs) => Arc::new(DirectoryTransport::new(
            dirs.outbound_dir.clone(),
            dirs.inbound_dir.clone(),
        )),
    };
    Ok(BuiltRail {
        method: settings.method,
        settings: settings.clone(),
        writer,
        reader,
        transport,
        numbering,
        settlement,
        answers,
    })
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
            .map(|rail| Ok((rail.method, build_rail(rail)?)))
            .collect::<anyhow::Result<BTreeMap<_, _>>>()?;
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
    /// process's `readers` of callback bodies.
    pub fn partner_callbacks<S>(
        &self,
        store: Arc<S>,
        runner: Arc<BatchRunner>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        readers: Arc<tokio::sync::Semaphore>,
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
            readers,
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
