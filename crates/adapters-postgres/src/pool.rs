//! The connection pool, built in exactly one place.

use std::time::Duration;

use diesel::ConnectionError;
use diesel_async::pooled_connection::deadpool::Pool;
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};

/// The pool type every store uses.
pub type DbPool = Pool<AsyncPgConnection>;

/// Pool settings. Read by `app-actix` from `DATABASE_URL`, `PAYOUT_DB_POOL_SIZE`,
/// `PAYOUT_DB_WAIT_TIMEOUT_MS`, `PAYOUT_DB_STATEMENT_TIMEOUT_MS`.
#[derive(Debug, Clone)]
pub struct DbConfig {
    /// `postgres://…` URL of the service database.
    pub url: String,
    /// Most connections open at once.
    pub max_size: usize,
    /// How long a request waits for a free connection before failing with 503.
    pub wait_timeout: Duration,
    /// How long to wait when opening a new connection.
    pub connect_timeout: Duration,
    /// Per-connection `statement_timeout`.
    pub statement_timeout: Duration,
    /// `application_name` shown in `pg_stat_activity`.
    pub application_name: String,
}

impl DbConfig {
    /// Defaults for everything but the URL.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            max_size: 16,
            wait_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(3),
            statement_timeout: Duration::from_secs(5),
            application_name: "payoutd".to_owned(),
        }
    }
}

/// The statements run on every new connection: `statement_timeout` and `application_name`, and,
/// on a Citus coordinator only (a database with the `citus` extension), the coordinator's own
/// connection timeout to its workers, `citus.node_connection_timeout` (30 s by default), set to
/// `connect_timeout`: a request whose shards live on a worker that does not answer then fails
/// (503) after as long as it would wait for the coordinator itself, well within its
/// `statement_timeout`, instead of waiting 30 s.
fn connection_setup(config: &DbConfig) -> String {
    let statement_timeout_ms = config.statement_timeout.as_millis();
    let application_name = config.application_name.replace('\'', "");
    // Citus accepts 10 ms to one hour.
    let node_connection_timeout_ms = config.connect_timeout.as_millis().clamp(10, 3_600_000);
    format!(
        "SET statement_timeout = {statement_timeout_ms}; \
         SET application_name = '{application_name}'; \
         SELECT set_config('citus.node_connection_timeout', '{node_connection_timeout_ms}', false) \
         FROM pg_extension WHERE extname = 'citus'"
    )
}

/// Builds the pool. Connections are opened lazily and each gets `statement_timeout`,
/// `application_name` and, on Citus, `citus.node_connection_timeout` when it is opened
/// ([`connection_setup`]). Recycling is `Fast` (no test query per checkout); a broken connection
/// surfaces as an error on use and is then discarded. Building a pool does not run migrations.
pub fn create_pool(config: &DbConfig) -> anyhow::Result<DbPool> {
    let setup = connection_setup(config);
    let connect_timeout = config.connect_timeout;
    let mut manager_config = ManagerConfig::default();
    manager_config.recycling_method = RecyclingMethod::Fast;
    manager_config.custom_setup = Box::new(move |url| {
        let setup = setup.clone();
        let url = url.to_owned();
        Box::pin(async move {
            let mut conn =
                tokio::time::timeout(connect_timeout, AsyncPgConnection::establish(&url))
                    .await
                    .map_err(|_| {
                        ConnectionError::BadConnection(
                            "timed out connecting to PostgreSQL".to_owned(),
                        )
                    })??;
            conn.batch_execute(&setup)
                .await
                .map_err(|e| ConnectionError::BadConnection(e.to_string()))?;
            Ok(conn)
        })
    });
    let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(
        &config.url,
        manager_config,
    );
    Ok(Pool::builder(manager)
        .max_size(config.max_size)
        .wait_timeout(Some(config.wait_timeout))
        .create_timeout(Some(config.connect_timeout))
        .runtime(deadpool::Runtime::Tokio1)
        .build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citus_waits_for_a_worker_as_long_as_for_the_coordinator() {
        let mut config = DbConfig::new("postgres://127.0.0.1/payoutd");
        config.connect_timeout = Duration::from_millis(2500);
        config.statement_timeout = Duration::from_secs(5);
        config.application_name = "pay'outd".to_owned();
        let setup = connection_setup(&config);
        assert!(setup.contains("SET statement_timeout = 5000;"), "{setup}");
        assert!(
            setup.contains("SET application_name = 'payoutd';"),
            "{setup}"
        );
        assert!(
            setup.contains(
                "set_config('citus.node_connection_timeout', '2500', false) \
                 FROM pg_extension WHERE extname = 'citus'"
            ),
            "{setup}"
        );
        config.connect_timeout = Duration::ZERO;
        assert!(connection_setup(&config).contains("'citus.node_connection_timeout', '10'"));
    }
}
