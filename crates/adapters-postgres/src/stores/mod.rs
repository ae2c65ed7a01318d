//! `PgStore`: one value implementing every store port over one pool.

mod account_rows;
pub(crate) mod accounts;
mod batches;
mod claims;
#[cfg(test)]
mod claims_plan_tests;
pub(crate) mod console;
pub mod credentials;
mod delivery;
mod events;
pub mod idempotency;
mod inbound;
mod kyc_decisions;
mod notifications;
mod operator;
mod outbox;
mod overview;
mod payout_story;
mod payout_write;
mod rail_files;
mod receivers;
pub mod rotation;
mod subaccounts;

pub use payout_write::groups::{GroupCommitSettings, PayoutGroups};

use std::sync::Arc;

use tokio::sync::{Notify, OnceCell};

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::deadpool::Object;
use domain::PortError;

use domain::rail::schedule::BatchSchedule;

use crate::errors::from_pool;
use crate::pool::DbPool;
use crate::vault::Vault;

/// The PostgreSQL implementation of the store ports.
#[derive(Clone)]
pub struct PgStore {
    pool: DbPool,
    vault: Arc<Vault>,
    batch_schedule: BatchSchedule,
    events_committed: Arc<Notify>,
    /// Group commit of new payouts, when enabled (shared by the stores of every HTTP worker).
    payout_groups: Option<Arc<PayoutGroups>>,
    /// Whether the database is a Citus cluster, found once by [`PgStore::detect_citus`].
    citus: Arc<OnceCell<bool>>,
    /// The open batch each subaccount and currency's last new payouts joined (shared by the
    /// store's clones), so the next can be written in one round trip.
    open_batches: Arc<payout_write::OpenBatches>,
}

/// Most rows one set statement writes. A set the size of a cut-off (a payroll of 100,000
/// payouts in one subaccount's batch: closing it, its file's items, its references, its events)
/// is written in statements of at most this many rows inside the one transaction, so each stays
/// far within the statement timeout (`PAYOUT_DB_STATEMENT_TIMEOUT_MS`) on a busy machine, where
/// one statement of 100,000 rows took over 5 s. The transaction, and so what commits, is the
/// same.
pub(crate) const SET_STATEMENT_ROWS: usize = 10_000;

/// The most bytes of files a connection may carry in one use (a bank file stored or read)
/// and still go back to the pool. The driver keeps its read and write buffers as large as the
/// largest message the connection has carried, for the connection's life: a pooled connection
/// that once stored a bank file of 25,000 payouts (5–15 MB) would go on holding twice that,
/// and in time every connection of the pool would. Above this, [`release`] closes it instead.
pub(crate) const LARGE_MESSAGE_BYTES: usize = 1 << 20;

/// Gives `conn` back to the pool, or closes it when it carried `carried` bytes of files, more
/// than [`LARGE_MESSAGE_BYTES`] (the next use opens a fresh connection).
pub(crate) fn release(conn: Object<AsyncPgConnection>, carried: usize) {
    if carried > LARGE_MESSAGE_BYTES {
        drop(Object::take(conn));
    }
}

/// How long a new batch stays open by default (docs/OPERATIONS.md, Configuration,
/// `PAYOUT_BATCH_INTERVAL_SECS`).
pub const DEFAULT_BATCH_INTERVAL: chrono::Duration = chrono::Duration::seconds(60);

impl PgStore {
    /// A store over `pool`, encrypting secrets with `vault`.
    pub fn new(pool: DbPool, vault: Arc<Vault>) -> Self {
        Self {
            pool,
            vault,
            batch_schedule: BatchSchedule::Every(DEFAULT_BATCH_INTERVAL),
            events_committed: Arc::new(Notify::new()),
            payout_groups: None,
            citus: Arc::new(OnceCell::new()),
            open_batches: Arc::default(),
        }
    }

    /// Whether the database is a Citus cluster (has the `citus` extension). Asked of the
    /// database once per store (and its clones); later calls answer from memory, so the
    /// background claims, which take another path on Citus, pay for it only once. Call it at
    /// start-up to find out early; a failed look-up is retried on the next call.
    pub async fn detect_citus(&self) -> Result<bool, PortError> {
        let found = self
            .citus
            .get_or_try_init(|| async {
                let mut conn = self.conn().await?;
                let citus = crate::citus::has_citus(&mut conn)
                    .await
                    .map_err(PortError::Unavailable)?;
                if citus {
                    tracing::debug!("the database is a Citus cluster: claims go by subaccount");
                }
                Ok::<bool, PortError>(citus)
            })
            .await?;
        Ok(*found)
    }

    /// The same store, writing new payouts through `groups` (group commit: see
    /// [`PayoutGroups`]). Give every HTTP worker's store the same groups.
    pub fn with_payout_groups(self, groups: Arc<PayoutGroups>) -> Self {
        Self {
            payout_groups: Some(groups),
            ..self
        }
    }

    /// The same store, signalling `signal` (instead of a signal of its own) whenever one of its
    /// transactions that wrote outbox events commits. Stores that share one signal (one per
    /// HTTP worker, say) wake one delivery worker.
    pub fn with_commit_signal(self, signal: Arc<Notify>) -> Self {
        Self {
            events_committed: signal,
            ..self
        }
    }

    /// Notified (`notify_one`, so a signal sent while nobody waits is kept for the next wait)
    /// after a transaction of this store that wrote outbox events commits. The delivery worker
    /// waits on it to claim new events at once instead of at its next poll. Only this process
    /// is told: other instances find the events when they poll.
    pub fn commit_signal(&self) -> Arc<Notify> {
        Arc::clone(&self.events_committed)
    }

    /// Passes on a write transaction's `result`, signalling [`Self::commit_signal`] when it
    /// committed. (Every such transaction writes events; a wake for one that wrote none would
    /// only cost the worker a claim query.)
    fn after_commit<T, E>(&self, result: Result<T, E>) -> Result<T, E> {
        if result.is_ok() {
            self.events_committed.notify_one();
        }
        result
    }

    /// The same store, opening new batches to run `interval` after they open.
    pub fn with_batch_interval(self, interval: chrono::Duration) -> Self {
        self.with_batch_schedule(BatchSchedule::Every(interval))
    }

    /// The same store, giving new batches their run time from `schedule` (the production
    /// rails' cut-offs).
    pub fn with_batch_schedule(self, schedule: BatchSchedule) -> Self {
        Self {
            batch_schedule: schedule,
            ..self
        }
    }

    /// When new batches run (the console's overview shows the rails' next cut-offs from it).
    pub fn batch_schedule(&self) -> &BatchSchedule {
        &self.batch_schedule
    }

    /// The pool (for readiness checks and metrics).
    pub fn pool(&self) -> &DbPool {
        &self.pool
    }

    async fn conn(&self) -> Result<Object<AsyncPgConnection>, PortError> {
        self.pool.get().await.map_err(from_pool)
    }
}

/// The same port error again, for another request that shares its cause (a group's write, a
/// statement of several requests' reads); the error itself is not `Clone`.
pub(crate) fn copied_port_error(e: &PortError) -> PortError {
    match e {
        PortError::Unavailable(cause) => PortError::Unavailable(anyhow::anyhow!("{cause:#}")),
        PortError::Unknown(cause) => PortError::Unknown(anyhow::anyhow!("{cause:#}")),
    }
}

#[derive(diesel::QueryableByName)]
struct AppliedVersion {
    #[diesel(sql_type = diesel::sql_types::Text)]
    version: String,
}

impl PgStore {
    /// Ready when the database answers and every embedded migration is applied.
    pub async fn check_ready(&self) -> Result<(), PortError> {
        use diesel_async::RunQueryDsl;
        let mut conn = self.conn().await?;
        let applied: Vec<AppliedVersion> =
            diesel::sql_query("SELECT version FROM __diesel_schema_migrations")
                .load(&mut conn)
                .await
                // No migrations table means no schema yet: not ready, rather than broken.
                .map_err(|e| {
                    PortError::Unavailable(anyhow::anyhow!("reading applied migrations: {e}"))
                })?;
        let embedded = crate::migrate::embedded_versions().map_err(PortError::Unknown)?;
        let missing: Vec<_> = embedded
            .iter()
            .filter(|v| !applied.iter().any(|a| &a.version == *v))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(PortError::Unavailable(anyhow::anyhow!(
                "migrations not applied: {missing:?}"
            )))
        }
    }
}

/// Counts for monitoring (`/metrics`), read at scrape time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationalCounts {
    /// Outbox events waiting for delivery.
    pub outbox_pending: i64,
    /// Payouts by status code.
    pub payouts_by_status: Vec<(i16, i64)>,
}

impl PgStore {
    /// The outbox backlog (served by the partial index of pending events) and payouts by
    /// status (a scan of `payouts`: scrape every 15 s or more on large tables).
    pub async fn operational_counts(&self) -> Result<OperationalCounts, PortError> {
        use crate::schema::{outbox_events, payouts};
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;
        let mut conn = self.conn().await?;
        let outbox_pending: i64 = outbox_events::table
            .filter(outbox_events::status.eq("pending"))
            .count()
            .get_result(&mut conn)
            .await
            .map_err(crate::errors::from_diesel)?;
        let payouts_by_status: Vec<(i16, i64)> = payouts::table
            .group_by(payouts::status)
            .select((payouts::status, diesel::dsl::count_star()))
            .order(payouts::status)
            .load(&mut conn)
            .await
            .map_err(crate::errors::from_diesel)?;
        Ok(OperationalCounts {
            outbox_pending,
            payouts_by_status,
        })
    }
}
