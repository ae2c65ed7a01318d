//! Wiring: adapters into ports, ports into services, services into the HTTP server.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use adapters_postgres::{PgStore, Vault, create_pool};
use adapters_sandbox::{SandboxKyc, SandboxNotifier, SandboxRail};
use adapters_webhook::{HttpWebhookSender, WebhookSenderConfig};
use anyhow::Context;
use domain::account::PayoutMethod;
use domain::account::notification::worker::{NotificationSettings, NotificationWorker};
use domain::account::ports::Notifier;
use domain::account::service::AccountService;
use domain::auth::{AuthService, CachedCredentials};
use domain::batch::ports::{BatchStore, PayoutRail};
use domain::batch::runner::BatchRunner;
use domain::delivery::worker::{DeliveryWorker, WorkerSettings};
use domain::idempotency::IdempotencyService;
use domain::paging::cursor::CursorKey;
use domain::payout::service::PayoutService;
use domain::ports::{Clock, IdGenerator, KycProvider};
use domain::rail::schedule::BatchSchedule;
use domain::receiver::service::ReceiverService;
use domain::subaccount::service::SubaccountService;

use crate::config::Config;
use crate::http;
use crate::jobs;
use crate::metrics::Metrics;
use crate::production::Production;
use crate::state::AppState;
use crate::system::{RandomIds, SystemClock};

/// The store and vault built from configuration.
pub fn build_store(config: &Config) -> anyhow::Result<PgStore> {
    build_store_sized(config, config.database.max_size)
}

/// [`build_store`] with a pool of at most `connections` (new batches run the configured interval
/// after they open).
pub fn build_store_sized(config: &Config, connections: usize) -> anyhow::Result<PgStore> {
    let interval = chrono::Duration::from_std(config.batches.interval).context("batch interval")?;
    build_store_scheduled(config, connections, BatchSchedule::Every(interval))
}

/// [`build_store`] with a pool of at most `connections` whose new batches run on `schedule`.
fn build_store_scheduled(
    config: &Config,
    connections: usize,
    schedule: BatchSchedule,
) -> anyhow::Result<PgStore> {
    let mut database = config.database.clone();
    database.max_size = connections.max(1);
    let pool = create_pool(&database).context("building the database pool")?;
    let vault = Vault::with_previous(&config.master_key, config.previous_master_key.as_ref())
        .context("deriving keys from PAYOUT_MASTER_KEY and PAYOUT_PREVIOUS_MASTER_KEY")?;
    Ok(PgStore::new(pool, Arc::new(vault)).with_batch_schedule(schedule))
}

/// Logs, when a previous master key is configured, whether a rotation to the current key has
/// completed (the previous key is then no longer needed) or is still to run.
pub async fn report_master_key_rotation(config: &Config) {
    let store = match build_store_sized(config, 1) {
        Ok(store) => store,
        Err(e) => {
            tracing::warn!(error = %e, "could not check the master key rotation");
            return;
        }
    };
    match store.rotated_to_current_key().await {
        Ok(Some(done_at)) => tracing::warn!(
            rotated_at = %done_at,
            "PAYOUT_PREVIOUS_MASTER_KEY is no longer needed: every row was moved to \
             PAYOUT_MASTER_KEY; remove it at the next restart"
        ),
        Ok(None) => tracing::warn!(
            "master key rotation incomplete: PAYOUT_PREVIOUS_MASTER_KEY is still needed; once \
             every instance runs with the new PAYOUT_MASTER_KEY, run \
             `payoutd admin rotate-master-key`"
        ),
        Err(e) => tracing::warn!(error = %e, "could not check the master key rotation"),
    }
}

/// The outside world the application talks to.
#[derive(Clone)]
pub enum World {
    /// Sandbox mode: the simulators (docs/ARCHITECTURE.md, Ports by job).
    Sandbox(Sandbox),
    /// Production mode: the bank file rails, the SMTP notifier and manual KYC (docs/RAILS.md).
    Production(Arc<Production>),
}

impl World {
    /// The notifier of confirmation requests.
    pub fn notifier(&self) -> Arc<dyn Notifier> {
        match self {
            Self::Sandbox(sandbox) => sandbox.notifier.clone(),
            Self::Production(production) => production.notifier.clone(),
        }
    }

    /// The notifiers' names a subaccount reports (`sms_provider`, `email_provider`).
    pub fn providers(&self) -> crate::state::NotificationProviders {
        match self {
            Self::Sandbox(_) => crate::state::NotificationProviders::SANDBOX,
            Self::Production(_) => crate::state::NotificationProviders::PRODUCTION,
        }
    }

    /// How confirmation requests are retried: the defaults, with production's `max_attempts`.
    pub fn notification_settings(&self) -> NotificationSettings {
        match self {
            Self::Sandbox(_) => NotificationSettings::default(),
            Self::Production(production) => NotificationSettings {
                max_attempts: production.settings.smtp.max_attempts.max(1),
                ..NotificationSettings::default()
            },
        }
    }

    /// When new batches run: the configured interval (sandbox) or the rails' cut-offs.
    fn schedule(&self, config: &Config) -> anyhow::Result<BatchSchedule> {
        let interval =
            chrono::Duration::from_std(config.batches.interval).context("batch interval")?;
        Ok(match self {
            Self::Sandbox(_) => BatchSchedule::Every(interval),
            Self::Production(production) => production.schedule(interval),
        })
    }
}

/// The simulated outside world of sandbox mode, reachable by tests and the sandbox helpers.
#[derive(Clone)]
pub struct Sandbox {
    /// The KYC provider.
    pub kyc: Arc<SandboxKyc>,
    /// The e-mail/SMS provider.
    pub notifier: Arc<SandboxNotifier>,
    /// How long the payout rail takes to settle a payout: the rail reads the submitted payouts
    /// from each state's store ([`Sandbox::payout_rail`]).
    pub rail_settle_after: std::time::Duration,
}

impl Sandbox {
    /// The simulators as configured.
    pub fn new(config: &Config) -> Self {
        let kyc = match config.sandbox_kyc {
            Some((after, outcome)) => SandboxKyc::deciding_after(after, outcome),
            None => SandboxKyc::new(),
        };
        Self {
            kyc: Arc::new(kyc),
            notifier: Arc::new(SandboxNotifier::new()),
            rail_settle_after: config.batches.sandbox_settle,
        }
    }

    /// The payout rail over `batches`, where it finds the payouts submitted to it.
    pub fn payout_rail(&self, batches: Arc<dyn BatchStore>, clock: Arc<dyn Clock>) -> SandboxRail {
        SandboxRail::new(clock, self.rail_settle_after, batches)
    }
}

/// What every HTTP worker's state shares: metrics, the rate limiter's buckets, the pools to
/// report and the readers of partner callbacks.
#[derive(Clone)]
pub struct Shared {
    /// The process's metrics.
    pub metrics: Arc<Metrics>,
    /// The buckets of every API key (one set per process, not per worker).
    pub rate_limit: Arc<http::rate_limit::ApiKeyLimiter>,
    /// Every pool of the process, for `/metrics`.
    pub pools: crate::metrics::Pools,
    /// The credential changes announced to this process (revocations), which every worker's
    /// credential cache consults.
    pub credential_changes: Arc<domain::auth::CredentialChanges>,
    /// The groups of create-payout requests every worker's store writes through (`None`:
    /// group commit is off, `PAYOUT_GROUP_COMMIT_MAX=1`).
    pub payout_groups: Option<Arc<adapters_postgres::PayoutGroups>>,
    /// The readers of partner callback bodies and the applier of their reports (one per
    /// process, not per worker).
    pub callbacks: crate::partner_callbacks::CallbackCapacity,
}

impl Shared {
    /// Fresh metrics, buckets and pool list.
    pub fn new(config: &Config) -> Self {
        Self {
            metrics: Arc::new(Metrics::new(http::route_patterns())),
            rate_limit: Arc::new(http::rate_limit::ApiKeyLimiter::new(
                config.rate_limit.0,
                config.rate_limit.1,
            )),
            pools: crate::metrics::Pools::default(),
            credential_changes: Arc::new(domain::auth::CredentialChanges::new(
                chrono::Duration::from_std(config.credential_cache)
                    .unwrap_or_else(|_| chrono::Duration::seconds(1)),
            )),
            payout_groups: (config.group_commit.max_group > 1)
                .then(|| adapters_postgres::PayoutGroups::new(config.group_commit)),
            callbacks: crate::partner_callbacks::CallbackCapacity::new(),
        }
    }
}

/// The outside world's ports: KYC provider, notifier, payout rail, and the methods enabled
/// (`None`: all).
type OutsidePorts = (
    Arc<dyn KycProvider>,
    Arc<dyn Notifier>,
    Arc<dyn PayoutRail>,
    Option<BTreeSet<PayoutMethod>>,
);

/// The handler state over a store and the outside world's adapters.
pub fn build_state(
    config: &Config,
    store: &PgStore,
    world: &World,
    shared: &Shared,
) -> anyhow::Result<AppState> {
    shared.pools.register(store.pool().clone());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ids: Arc<dyn IdGenerator> = Arc::new(RandomIds::default());
    let (kyc, notifier, rail, enabled): OutsidePorts = match world {
        World::Sandbox(sandbox) => (
            sandbox.kyc.clone(),
            sandbox.notifier.clone(),
            Arc::new(sandbox.payout_rail(Arc::new(store.clone()), clock.clone())),
            None,
        ),
        World::Production(production) => (
            production.kyc.clone(),
            production.notifier.clone(),
            Arc::new(production.payout_rail(Arc::new(store.clone()), clock.clone(), ids.clone())),
            Some(production.enabled()),
        ),
    };
    let cursor_key = adapters_postgres::vault::derive_key(&config.master_key, b"cursor")
        .context("deriving the cursor key")?;
    let store = Arc::new(store.clone());
    let window = chrono::Duration::from_std(config.signature_window).context("signature window")?;
    let credentials = CachedCredentials::new(
        store.clone(),
        clock.clone(),
        chrono::Duration::from_std(config.credential_cache).context("credential cache")?,
    )
    .watching(shared.credential_changes.clone());
    let batches = Arc::new(BatchRunner::new(
        store.clone(),
        store.clone(),
        store.clone(),
        rail,
        clock.clone(),
        ids.clone(),
        chrono::Duration::from_std(config.batches.lease).context("batch lease")?,
    ));
    let rail_callbacks = match world {
        World::Production(production) => production
            .partner_callbacks(
                store.clone(),
                batches.clone(),
                clock.clone(),
                ids.clone(),
                shared.callbacks.clone(),
            )
            .map(Arc::new),
        World::Sandbox(_) => None,
    };
    Ok(AppState {
        auth: AuthService::new(Arc::new(credentials), clock.clone(), window),
        receivers: ReceiverService::new(
            store.clone(),
            kyc,
            clock.clone(),
            ids.clone(),
            CursorKey::new(cursor_key),
        ),
        subaccounts: SubaccountService::new(store.clone()),
        accounts: {
            let accounts = AccountService::new(
                store.clone(),
                store.clone(),
                Arc::new(build_notification_worker(
                    store.clone(),
                    notifier,
                    world.notification_settings(),
                )),
                clock.clone(),
                ids.clone(),
                config.public_url.clone(),
            );
            match enabled {
                Some(methods) => accounts.enabling(methods),
                None => accounts,
            }
        },
        payouts: PayoutService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
            CursorKey::new(cursor_key),
        ),
        batches,
        idempotency: IdempotencyService::new(store.clone(), Arc::new(SystemClock)),
        rate_limit: shared.rate_limit.clone(),
        metrics: shared.metrics.clone(),
        sampler: Arc::new(crate::metrics::StoreSampler::new(
            (*store).clone(),
            shared.pools.clone(),
        )),
        readiness: Box::new((*store).clone()),
        sandbox_notifier: match world {
            World::Sandbox(sandbox) => Some(sandbox.notifier.clone()),
            World::Production(_) => None,
        },
        rail_callbacks,
        providers: world.providers(),
    })
}

/// The worker that sends confirmation requests through `notifier` and records each attempt in
/// `store` (the queue in `notifications`): the account use case makes each request's first
/// attempt with it, the retry job ([`jobs::notifications`]) the others. Production wiring
/// passes the SMTP notifier (`adapters_smtp::SmtpNotifier::new(settings)`) and its
/// `max_attempts`; sandbox mode passes the sandbox notifier.
pub fn build_notification_worker(
    store: Arc<PgStore>,
    notifier: Arc<dyn Notifier>,
    settings: NotificationSettings,
) -> NotificationWorker {
    NotificationWorker::new(
        store,
        notifier,
        Arc::new(SystemClock),
        Arc::new(RandomIds::default()),
        settings,
    )
}

/// The notification worker over the SMTP notifier: what production wiring calls with the relay
/// settings (host, port, TLS mode, credentials, sender, timeout, optional CA) and the number of
/// attempts before a request is `failed`; the other retry settings keep their defaults.
///
/// # Errors
/// When the SMTP settings are refused (see `adapters_smtp::SmtpNotifier::new`).
pub fn build_smtp_notification_worker(
    store: Arc<PgStore>,
    smtp: &adapters_smtp::SmtpSettings,
    max_attempts: u32,
) -> anyhow::Result<NotificationWorker> {
    let notifier = adapters_smtp::SmtpNotifier::new(smtp).context("SMTP notifier settings")?;
    Ok(build_notification_worker(
        store,
        Arc::new(notifier),
        NotificationSettings {
            max_attempts: max_attempts.max(1),
            ..NotificationSettings::default()
        },
    ))
}

/// How long a stopping server lets the requests in flight finish before it closes their
/// connections (actix's graceful shutdown; the service manager's stop timeout must exceed it).
pub const SHUTDOWN_TIMEOUT_SECS: u64 = 30;

/// The listener's keep-alive for `PAYOUT_HTTP_KEEP_ALIVE_SECS`: zero closes each connection
/// after its response (`Connection: close`).
fn keep_alive(idle: Duration) -> actix_web::http::KeepAlive {
    if idle.is_zero() {
        actix_web::http::KeepAlive::Disabled
    } else {
        actix_web::http::KeepAlive::Timeout(idle)
    }
}

/// A bound, not yet running, HTTP server and its background jobs.
pub struct Application {
    server: Server,
    port: u16,
    store: PgStore,
    world: World,
    worker: Arc<DeliveryWorker>,
    notifications: Arc<NotificationWorker>,
    poll: Duration,
    batch_poll: Duration,
    state: web::Data<AppState>,
    database_url: String,
    credential_changes: Arc<domain::auth::CredentialChanges>,
    console: Option<crate::console_server::ConsoleServer>,
}

/// The webhook delivery worker over the store and an HTTP sender.
pub fn build_worker(config: &Config, store: &PgStore) -> anyhow::Result<DeliveryWorker> {
    let sender = HttpWebhookSender::new(WebhookSenderConfig {
        timeout: config.delivery.timeout,
        allow_private_targets: config.delivery.allow_private_targets,
        ..WebhookSenderConfig::default()
    })
    .context("building the webhook sender")?;
    let settings = WorkerSettings {
        batch: config.delivery.batch,
        // A claim outlives the slowest attempt by a margin, so a live worker keeps its events.
        lease: config.delivery.timeout * 2 + Duration::from_secs(10),
    };
    Ok(DeliveryWorker::new(
        Arc::new(store.clone()),
        Arc::new(sender),
        Arc::new(SystemClock),
        Arc::new(RandomIds::default()),
        settings,
    ))
}

impl Application {
    /// Binds `config.bind` (port 0 picks a free port) and wires everything to the sandbox
    /// simulators (`PAYOUT_SANDBOX=true`).
    pub fn build(config: &Config) -> anyhow::Result<Self> {
        anyhow::ensure!(
            config.sandbox,
            "Application::build wires the sandbox simulators: PAYOUT_SANDBOX must be true \
             (production mode is Application::build_production)"
        );
        Self::build_in(config, World::Sandbox(Sandbox::new(config)))
    }

    /// Binds `config.bind` and wires everything to the production adapters (`PAYOUT_SANDBOX`
    /// unset or false): the bank file rails, the notifier and manual KYC. The sandbox helpers
    /// do not exist (404).
    pub fn build_production(config: &Config, production: Production) -> anyhow::Result<Self> {
        anyhow::ensure!(
            !config.sandbox,
            "production adapters with PAYOUT_SANDBOX=true: the sandbox would be used"
        );
        Self::build_in(config, World::Production(Arc::new(production)))
    }

    fn build_in(config: &Config, world: World) -> anyhow::Result<Self> {
        let schedule = world.schedule(config)?;
        let console_schedule = schedule.clone();
        // One pool per HTTP worker: a diesel-async connection's I/O runs on the runtime that
        // opened it, so a pool shared by the workers hands queries between threads (measured
        // in the stack notes). The background jobs get a pool of their own.
        let workers = config.workers.max(1);
        let per_worker = config.database.max_size.div_ceil(workers).max(2);
        let store = build_store_scheduled(
            config,
            (config.database.max_size / 2).clamp(2, 8),
            schedule.clone(),
        )?;
        let shared = Shared::new(config);
        let credential_changes = shared.credential_changes.clone();
        let jobs_state = web::Data::new(build_state(config, &store, &world, &shared)?);
        let app_state = jobs_state.clone();
        let sandbox_mode = config.sandbox;
        let listener =
            TcpListener::bind(config.bind).with_context(|| format!("binding {}", config.bind))?;
        let port = listener.local_addr()?.port();
        let worker_config = config.clone();
        let worker_world = world.clone();
        // Every worker's store wakes the one delivery loop when it commits events.
        let commit_signal = store.commit_signal();
        let server = HttpServer::new(move || {
            let state = match build_store_scheduled(&worker_config, per_worker, schedule.clone())
                .and_then(|store| {
                    let mut store = store.with_commit_signal(commit_signal.clone());
                    if let Some(groups) = &shared.payout_groups {
                        store = store.with_payout_groups(groups.clone());
                    }
                    build_state(&worker_config, &store, &worker_world, &shared)
                }) {
                Ok(state) => web::Data::new(state),
                Err(e) => {
                    // Cannot happen with a configuration the first build accepted; the jobs'
                    // state still serves.
                    tracing::error!(error = %e, "building a worker's state failed; sharing the jobs' pool");
                    jobs_state.clone()
                }
            };
            App::new()
                .app_data(state)
                .wrap(from_fn(http::idempotency::idempotency))
                .wrap(from_fn(http::context::request_context))
                .configure(http::routes)
                .configure(|cfg| {
                    if sandbox_mode {
                        http::sandbox_routes(cfg);
                    }
                })
                .default_service(http::fallback())
        })
        .workers(workers)
        .keep_alive(keep_alive(config.http.keep_alive))
        .client_request_timeout(config.http.request_timeout)
        .shutdown_timeout(SHUTDOWN_TIMEOUT_SECS);
        let server = match &config.tls {
            Some(tls) => server.listen_rustls_0_23(listener, tls.server_config())?,
            None => server.listen(listener)?,
        }
        .run();
        let worker = Arc::new(build_worker(config, &store)?);
        let notifications = Arc::new(build_notification_worker(
            Arc::new(store.clone()),
            world.notifier(),
            world.notification_settings(),
        ));
        // The console's own listener, with a small pool whose new batches follow the same
        // schedule (its decisions move payouts into batches).
        let console = match &config.console {
            Some(settings) => Some(crate::console_server::build(
                config,
                settings,
                &build_store_scheduled(config, 4, console_schedule)?,
                SHUTDOWN_TIMEOUT_SECS,
            )?),
            None => None,
        };
        Ok(Self {
            console,
            server,
            port,
            store,
            world,
            worker,
            notifications,
            poll: config.delivery.poll,
            batch_poll: config.batches.poll,
            state: app_state,
            database_url: config.database.url.clone(),
            credential_changes,
        })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The console's bound port, when it has a listener (`PAYOUT_CONSOLE_BIND`).
    pub fn console_port(&self) -> Option<u16> {
        self.console.as_ref().map(|c| c.port)
    }

    /// The sandbox simulators this application talks to (`None` in production mode).
    pub fn sandbox(&self) -> Option<&Sandbox> {
        match &self.world {
            World::Sandbox(sandbox) => Some(sandbox),
            World::Production(_) => None,
        }
    }

    /// Serves until SIGINT/SIGTERM (actix stops accepting and lets in-flight requests finish),
    /// with the webhook delivery worker and the nonce clean-up job alongside.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let housekeeping = tokio::spawn(jobs::housekeeping::run(
            self.store.clone(),
            self.state.clone(),
        ));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let delivery = tokio::spawn(jobs::delivery::run(
            self.worker.clone(),
            self.poll,
            self.store.commit_signal(),
            stopped.clone(),
            self.state.metrics.clone(),
        ));
        let stopped_inbound = stopped.clone();
        let credential_changes = tokio::spawn(jobs::credential_changes::run(
            self.database_url.clone(),
            self.credential_changes.clone(),
            Arc::new(SystemClock),
            stopped.clone(),
        ));
        let batches = tokio::spawn(jobs::batches::run(
            self.state.batches.clone(),
            self.batch_poll,
            stopped.clone(),
            self.state.metrics.clone(),
        ));
        let notifications = tokio::spawn(jobs::notifications::run(
            self.notifications.clone(),
            jobs::notifications::POLL,
            stopped,
        ));
        let sandbox_kyc = match &self.world {
            World::Sandbox(sandbox) => Some(tokio::spawn(jobs::sandbox_kyc::run(
                self.state.clone(),
                sandbox.kyc.clone(),
            ))),
            World::Production(_) => None,
        };
        let inbound = match &self.world {
            World::Production(production) => {
                let store = Arc::new(self.store.clone());
                let processor = production.inbound(
                    store,
                    self.state.batches.clone(),
                    Arc::new(SystemClock),
                    Arc::new(RandomIds::default()),
                );
                Some(tokio::spawn(jobs::inbound::run(
                    Arc::new(processor),
                    production.poll_interval(),
                    stopped_inbound,
                    self.state.metrics.clone(),
                )))
            }
            World::Sandbox(_) => None,
        };
        // Both servers stop on the same signal; the console's is awaited after the API's.
        let console = self.console.map(|console| tokio::spawn(console.server));
        let result = self.server.await;
        if let Some(console) = console {
            match console.await {
                Ok(Err(e)) => tracing::warn!(error = %e, "console server ended abnormally"),
                Err(e) => tracing::warn!(error = %e, "console server task ended abnormally"),
                Ok(Ok(())) => {}
            }
        }
        housekeeping.abort();
        if let Some(task) = sandbox_kyc {
            task.abort();
        }
        // The server has drained its requests; let the pass each job has in hand finish.
        let draining = std::time::Instant::now();
        let _ = stop.send(true);
        let mut drained = Drained::default();
        drained.job("webhook delivery", delivery.await);
        drained.job("batch runner", batches.await);
        drained.job("notification retries", notifications.await);
        drained.job("credential change listener", credential_changes.await);
        if let Some(task) = inbound {
            drained.job("inbound bank files", task.await);
        }
        tracing::info!(
            http = if result.is_ok() { "drained" } else { "failed" },
            jobs_finished = ?drained.finished,
            jobs_failed = ?drained.failed,
            jobs_drain_ms = u64::try_from(draining.elapsed().as_millis()).unwrap_or(u64::MAX),
            "payoutd stopped"
        );
        result
    }
}

/// What a graceful stop drained: the background jobs that finished the pass they had in hand,
/// and those that ended abnormally (each also logged as a warning).
#[derive(Default)]
struct Drained {
    finished: Vec<&'static str>,
    failed: Vec<&'static str>,
}

impl Drained {
    fn job(&mut self, name: &'static str, outcome: Result<(), tokio::task::JoinError>) {
        match outcome {
            Ok(()) => self.finished.push(name),
            Err(e) => {
                tracing::warn!(error = %e, job = name, "a background job ended abnormally");
                self.failed.push(name);
            }
        }
    }
}
