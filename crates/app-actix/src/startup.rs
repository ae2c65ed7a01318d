//! Wiring: adapters into ports, ports into services, services into the HTTP server.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Server;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use adapters_postgres::{NONCE_RETENTION, PgStore, Vault, create_pool};
use adapters_sandbox::{SandboxKyc, SandboxNotifier, SandboxRail};
use adapters_webhook::{HttpWebhookSender, WebhookSenderConfig};
use anyhow::Context;
use domain::account::ports::Notifier;
use domain::account::service::AccountService;
use domain::auth::{AuthService, CachedCredentials};
use domain::batch::runner::BatchRunner;
use domain::delivery::NextStep;
use domain::delivery::worker::{DeliveryWorker, WorkerSettings};
use domain::idempotency::{IdempotencyService, IdempotencyStore};
use domain::paging::cursor::CursorKey;
use domain::payout::service::PayoutService;
use domain::ports::{Clock, IdGenerator, KycProvider};
use domain::receiver::service::ReceiverService;
use domain::subaccount::service::SubaccountService;

use crate::config::Config;
use crate::http;
use crate::metrics::Metrics;
use crate::state::AppState;
use crate::system::{RandomIds, SystemClock};

/// The store and vault built from configuration.
pub fn build_store(config: &Config) -> anyhow::Result<PgStore> {
    build_store_sized(config, config.database.max_size)
}

/// [`build_store`] with a pool of at most `connections`.
pub fn build_store_sized(config: &Config, connections: usize) -> anyhow::Result<PgStore> {
    let mut database = config.database.clone();
    database.max_size = connections.max(1);
    let pool = create_pool(&database).context("building the database pool")?;
    let vault = Vault::new(&config.master_key).context("deriving keys from PAYOUT_MASTER_KEY")?;
    let interval = chrono::Duration::from_std(config.batches.interval).context("batch interval")?;
    Ok(PgStore::new(pool, Arc::new(vault)).with_batch_interval(interval))
}

/// The simulated outside world of sandbox mode, reachable by tests and the sandbox helpers.
#[derive(Clone)]
pub struct Sandbox {
    /// The KYC provider.
    pub kyc: Arc<SandboxKyc>,
    /// The e-mail/SMS provider.
    pub notifier: Arc<SandboxNotifier>,
    /// The payout rail.
    pub rail: Arc<SandboxRail>,
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
            rail: Arc::new(SandboxRail::new(
                Arc::new(SystemClock),
                config.batches.sandbox_settle,
            )),
        }
    }
}

/// Applies the sandbox KYC provider's own decisions as they come due, as a real provider's
/// callbacks would be applied; an outcome for a receiver decided meanwhile is skipped.
async fn apply_sandbox_kyc(state: web::Data<AppState>, kyc: Arc<SandboxKyc>) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tick.tick().await;
        for decision in kyc.take_due(chrono::Utc::now()) {
            let id = decision.receiver_id.to_string();
            if let Err(e) = state
                .receivers
                .apply_kyc_outcome(
                    decision.subaccount_id,
                    &id,
                    decision.outcome,
                    &domain::idempotency::WriteKey::none(),
                )
                .await
            {
                tracing::info!(receiver_id = %id, error = %e, "sandbox KYC decision not applied");
            }
        }
    }
}

/// Runs batch passes until `stop` says so: at once again while a pass found work, else after
/// `poll`. A pass in hand finishes before it stops.
pub async fn run_batches(
    runner: Arc<BatchRunner>,
    poll: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
    metrics: Arc<Metrics>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        let idle = match runner.run_once().await {
            Ok(pass) => {
                metrics.observe_batch_pass(&pass);
                if !pass.is_idle() {
                    tracing::info!(
                        closed = pass.closed,
                        submitted = pass.submitted,
                        settled = pass.settled,
                        finished = pass.finished,
                        "batch pass"
                    );
                }
                pass.is_idle()
            }
            Err(e) => {
                tracing::warn!(error = %e, "batch pass failed");
                true
            }
        };
        if idle {
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                _ = stop.changed() => {}
            }
        }
    }
}

/// What every HTTP worker's state shares: metrics, the rate limiter's buckets and the pools to
/// report.
#[derive(Clone)]
pub struct Shared {
    /// The process's metrics.
    pub metrics: Arc<Metrics>,
    /// The buckets of every API key (one set per process, not per worker).
    pub rate_limit: Arc<http::rate_limit::ApiKeyLimiter>,
    /// Every pool of the process, for `/metrics`.
    pub pools: crate::metrics::Pools,
}

impl Shared {
    /// Fresh metrics, buckets and pool list.
    pub fn new(config: &Config) -> Self {
        Self {
            metrics: Arc::new(Metrics::new()),
            rate_limit: Arc::new(http::rate_limit::ApiKeyLimiter::new(
                config.rate_limit.0,
                config.rate_limit.1,
            )),
            pools: crate::metrics::Pools::default(),
        }
    }
}

/// The handler state over a store and the outside world's adapters.
pub fn build_state(
    config: &Config,
    store: &PgStore,
    sandbox: &Sandbox,
    shared: &Shared,
) -> anyhow::Result<AppState> {
    shared.pools.register(store.pool().clone());
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ids: Arc<dyn IdGenerator> = Arc::new(RandomIds::default());
    let kyc: Arc<dyn KycProvider> = sandbox.kyc.clone();
    let notifier: Arc<dyn Notifier> = sandbox.notifier.clone();
    let cursor_key = adapters_postgres::vault::derive_key(&config.master_key, b"cursor")
        .context("deriving the cursor key")?;
    let store = Arc::new(store.clone());
    let window = chrono::Duration::from_std(config.signature_window).context("signature window")?;
    let credentials = CachedCredentials::new(
        store.clone(),
        clock.clone(),
        chrono::Duration::from_std(config.credential_cache).context("credential cache")?,
    );
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
        accounts: AccountService::new(
            store.clone(),
            store.clone(),
            notifier,
            clock.clone(),
            ids.clone(),
            config.public_url.clone(),
        ),
        payouts: PayoutService::new(
            store.clone(),
            store.clone(),
            store.clone(),
            store.clone(),
            clock.clone(),
            ids.clone(),
            CursorKey::new(cursor_key),
        ),
        batches: Arc::new(BatchRunner::new(
            store.clone(),
            store.clone(),
            store.clone(),
            sandbox.rail.clone(),
            clock,
            ids,
            chrono::Duration::from_std(config.batches.lease).context("batch lease")?,
        )),
        idempotency: IdempotencyService::new(store.clone(), Arc::new(SystemClock)),
        rate_limit: shared.rate_limit.clone(),
        metrics: shared.metrics.clone(),
        sampler: Arc::new(crate::metrics::StoreSampler::new(
            (*store).clone(),
            shared.pools.clone(),
        )),
        readiness: Box::new((*store).clone()),
    })
}

/// A bound, not yet running, HTTP server and its background jobs.
pub struct Application {
    server: Server,
    port: u16,
    store: PgStore,
    sandbox: Sandbox,
    worker: Arc<DeliveryWorker>,
    poll: Duration,
    batch_poll: Duration,
    state: web::Data<AppState>,
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

/// How long the delivery loop waits after a local commit signal before claiming, so that the
/// events other requests are committing at the same moment join the same pass.
pub const DELIVERY_GATHER: Duration = Duration::from_millis(5);

/// The least time between two claims that commit signals bring forward. Under load commits
/// signal continuously, and a claim costs the same whether it finds 5 events or 64 (it walks
/// the due index, dead entries included), so signalled claims are spaced out; when idle the
/// first signal is answered after [`DELIVERY_GATHER`] alone.
pub const DELIVERY_SIGNAL_SPACING: Duration = Duration::from_millis(25);

/// Delivers until `stop` is set, keeping up to the worker's capacity of attempts in flight and
/// claiming more as each one ends, so one slow or hanging endpoint holds only its own attempts,
/// never the other events (or other subaccounts) behind it. Claims are made at once while they
/// come back full, [`DELIVERY_GATHER`] after `committed` signals that this process committed
/// new events (but not within [`DELIVERY_SIGNAL_SPACING`] of the last claim), and otherwise
/// every `poll` (which finds the events other instances wrote). On stop, the attempts in flight
/// finish and are recorded; nothing is left claimed but unrecorded except by a crash (the lease
/// covers that).
pub async fn run_delivery(
    worker: Arc<DeliveryWorker>,
    poll: Duration,
    committed: Arc<tokio::sync::Notify>,
    stop: tokio::sync::watch::Receiver<bool>,
    metrics: Arc<Metrics>,
) {
    let mut stop = stop;
    let mut in_flight = tokio::task::JoinSet::new();
    let mut next_claim = tokio::time::Instant::now();
    let mut last_claim = next_claim;
    loop {
        let stopping = *stop.borrow();
        let free = free_slots(&worker, &in_flight);
        if !stopping
            && worth_claiming(&worker, &in_flight)
            && tokio::time::Instant::now() >= next_claim
        {
            last_claim = tokio::time::Instant::now();
            match worker.claim(free).await {
                Ok(claim) => {
                    let full = u32::try_from(claim.taken()).unwrap_or(u32::MAX) == free;
                    // Given up by the claim (no enabled endpoint): already recorded.
                    for _ in 0..claim.skipped {
                        metrics.observe_delivery(Some(&NextStep::Exhausted));
                    }
                    for event in claim.events {
                        let worker = worker.clone();
                        in_flight.spawn(async move {
                            let record = worker.send(&event).await;
                            (event, record)
                        });
                    }
                    // More may be due right away only if this claim came back full.
                    let now = tokio::time::Instant::now();
                    next_claim = if full { now } else { now + poll };
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming webhook events failed");
                    next_claim = tokio::time::Instant::now() + poll;
                }
            }
        }
        if stopping && in_flight.is_empty() {
            return;
        }
        tokio::select! {
            Some(first) = in_flight.join_next(), if !in_flight.is_empty() => {
                // Record every attempt that has ended by now in one transaction.
                let mut done = Vec::new();
                let mut next = Some(first);
                while let Some(finished) = next {
                    match finished {
                        Ok(attempt) => done.push(attempt),
                        Err(e) => tracing::warn!(error = %e, "a webhook attempt task ended abnormally"),
                    }
                    next = in_flight.try_join_next();
                }
                match worker.record(&done).await {
                    Ok(steps) => {
                        for step in steps {
                            metrics.observe_delivery(step.as_ref());
                        }
                    }
                    Err(e) => {
                        // The claims stay until their leases end; the events are attempted again.
                        for _ in &done {
                            metrics.observe_delivery_error();
                        }
                        tracing::warn!(error = %e, attempts = done.len(), "recording webhook attempts failed");
                    }
                }
            }
            // Only when a claim could follow: with too few free slots, waking for the timer
            // would spin until an attempt ends.
            () = tokio::time::sleep_until(next_claim), if !stopping && worth_claiming(&worker, &in_flight) => {}
            // Only while a signal could bring the next claim forward. Once the next claim is as
            // early as a signal can make it, further signals change nothing, and waking for
            // each commit (thousands a second under load) would cost a thread wake-up apiece.
            // A signal sent meanwhile is kept (`notify_one`) and answered after that claim.
            () = committed.notified(), if !stopping && next_claim > signalled_claim(last_claim) => {
                // New events are due now: claim soon rather than at the next poll.
                next_claim = next_claim.min(signalled_claim(last_claim));
            }
            _ = stop.changed(), if !stopping => {}
        }
    }
}

/// When a commit signal received now schedules the next claim: after [`DELIVERY_GATHER`], but
/// not within [`DELIVERY_SIGNAL_SPACING`] of the last claim. It only grows with time, so a claim
/// already due by then cannot be brought forward by any later signal.
fn signalled_claim(last_claim: tokio::time::Instant) -> tokio::time::Instant {
    (tokio::time::Instant::now() + DELIVERY_GATHER).max(last_claim + DELIVERY_SIGNAL_SPACING)
}

fn free_slots<T: 'static>(worker: &DeliveryWorker, in_flight: &tokio::task::JoinSet<T>) -> u32 {
    worker
        .capacity()
        .saturating_sub(u32::try_from(in_flight.len()).unwrap_or(u32::MAX))
}

/// Claims go in batches: once a quarter of the slots are free (or none is busy), not for every
/// attempt that ends, which would cost a claiming transaction per event.
fn worth_claiming<T: 'static>(
    worker: &DeliveryWorker,
    in_flight: &tokio::task::JoinSet<T>,
) -> bool {
    free_slots(worker, in_flight) >= (worker.capacity() / 4).max(1) || in_flight.is_empty()
}

impl Application {
    /// Binds `config.bind` (port 0 picks a free port) and wires everything. The KYC provider
    /// and notifier are the sandbox simulators: real provider adapters do not exist yet, so
    /// `serve` refuses to start outside sandbox mode.
    pub fn build(config: &Config) -> anyhow::Result<Self> {
        anyhow::ensure!(
            config.sandbox,
            "PAYOUT_SANDBOX must be true: only the sandbox KYC provider and notifier are implemented so far"
        );
        // One pool per HTTP worker: a diesel-async connection's I/O runs on the runtime that
        // opened it, so a pool shared by the workers hands queries between threads (measured
        // in the stack notes). The background jobs get a pool of their own.
        let workers = config.workers.max(1);
        let per_worker = config.database.max_size.div_ceil(workers).max(2);
        let store = build_store_sized(config, (config.database.max_size / 2).clamp(2, 8))?;
        let sandbox = Sandbox::new(config);
        let shared = Shared::new(config);
        let jobs_state = web::Data::new(build_state(config, &store, &sandbox, &shared)?);
        let app_state = jobs_state.clone();
        let sandbox_mode = config.sandbox;
        let listener =
            TcpListener::bind(config.bind).with_context(|| format!("binding {}", config.bind))?;
        let port = listener.local_addr()?.port();
        let worker_config = config.clone();
        let worker_sandbox = sandbox.clone();
        // Every worker's store wakes the one delivery loop when it commits events.
        let commit_signal = store.commit_signal();
        let server = HttpServer::new(move || {
            let state = match build_store_sized(&worker_config, per_worker).and_then(|store| {
                let store = store.with_commit_signal(commit_signal.clone());
                build_state(&worker_config, &store, &worker_sandbox, &shared)
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
        .shutdown_timeout(30)
        .listen(listener)?
        .run();
        let worker = Arc::new(build_worker(config, &store)?);
        Ok(Self {
            server,
            port,
            store,
            sandbox,
            worker,
            poll: config.delivery.poll,
            batch_poll: config.batches.poll,
            state: app_state,
        })
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The sandbox simulators this application talks to.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// Serves until SIGINT/SIGTERM (actix stops accepting and lets in-flight requests finish),
    /// with the webhook delivery worker and the nonce clean-up job alongside.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let store = self.store.clone();
        let state = self.state.clone();
        let housekeeping = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                let cutoff = chrono::Utc::now() - NONCE_RETENTION;
                if let Err(e) = store.purge_nonces(cutoff).await {
                    tracing::warn!(error = %e, "purging expired nonces failed");
                }
                state.rate_limit.forget_idle();
                if let Err(e) = IdempotencyStore::purge_expired(&store, chrono::Utc::now()).await {
                    tracing::warn!(error = %e, "purging expired idempotency keys failed");
                }
            }
        });
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let delivery = tokio::spawn(run_delivery(
            self.worker.clone(),
            self.poll,
            self.store.commit_signal(),
            stopped.clone(),
            self.state.metrics.clone(),
        ));
        let batches = tokio::spawn(run_batches(
            self.state.batches.clone(),
            self.batch_poll,
            stopped,
            self.state.metrics.clone(),
        ));
        let sandbox_kyc = tokio::spawn(apply_sandbox_kyc(
            self.state.clone(),
            self.sandbox.kyc.clone(),
        ));
        let result = self.server.await;
        housekeeping.abort();
        sandbox_kyc.abort();
        // The server has drained its requests; let the delivery pass in hand finish.
        let _ = stop.send(true);
        if let Err(e) = delivery.await {
            tracing::warn!(error = %e, "webhook delivery task ended abnormally");
        }
        if let Err(e) = batches.await {
            tracing::warn!(error = %e, "batch runner task ended abnormally");
        }
        result
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use domain::delivery::ports::{Claim, MockDeliveryStore};
    use domain::delivery::sender::MockWebhookSender;

    use super::*;

    /// A delivery worker whose claims find nothing and are counted.
    fn counting_worker(claims: Arc<AtomicUsize>) -> Arc<DeliveryWorker> {
        let mut store = MockDeliveryStore::new();
        store.expect_claim_due().returning(move |_, _, _| {
            claims.fetch_add(1, Ordering::SeqCst);
            Ok(Claim::default())
        });
        Arc::new(DeliveryWorker::new(
            Arc::new(store),
            Arc::new(MockWebhookSender::new()),
            Arc::new(SystemClock),
            Arc::new(RandomIds::default()),
            WorkerSettings::default(),
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn commit_signals_bring_claims_forward_spaced_out_and_none_is_lost() {
        let claims = Arc::new(AtomicUsize::new(0));
        let count = || claims.load(Ordering::SeqCst);
        let committed = Arc::new(tokio::sync::Notify::new());
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let poll = Duration::from_secs(3600);
        let delivery = tokio::spawn(run_delivery(
            counting_worker(Arc::clone(&claims)),
            poll,
            Arc::clone(&committed),
            stopped,
            Arc::new(Metrics::new()),
        ));
        let ms = Duration::from_millis;
        tokio::time::sleep(ms(1)).await;
        assert_eq!(count(), 1, "the first claim is made at once");

        // A burst of commits: one claim, spaced from the last one; the signal the loop was not
        // listening for is kept and answered by one more claim, spaced again.
        for _ in 0..100 {
            committed.notify_one();
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(DELIVERY_SIGNAL_SPACING).await;
        assert_eq!(count(), 2);
        tokio::time::sleep(DELIVERY_SIGNAL_SPACING).await;
        assert_eq!(count(), 3);
        // Then nothing until the poll: no claim per signal, no spinning.
        tokio::time::sleep(ms(1000)).await;
        assert_eq!(count(), 3);

        // A lone commit after a quiet spell is answered after the gathering time.
        committed.notify_one();
        tokio::time::sleep(DELIVERY_GATHER + ms(1)).await;
        assert_eq!(count(), 4);
        // And without signals, the poll.
        tokio::time::sleep(poll).await;
        assert_eq!(count(), 5);

        stop.send(true).unwrap();
        delivery.await.unwrap();
    }
}
