//! Bench databases: one fresh database per measured configuration, created (and migrated) by
//! `payoutd migrate --create-database`, dropped at the end.
//!
//! On a Citus cluster ([`BenchDb::citus`]) the database is made on the coordinator and on every
//! worker, each given the `citus` extension, and the nodes are registered in it on the
//! coordinator, so that `payoutd migrate` then distributes the tables. `CREATE DATABASE` of a
//! Citus database is not propagated to the workers, hence one per node.

use adapters_postgres::migrate::with_database;
use anyhow::Context;
use diesel::QueryableByName;
use diesel::sql_types::{Integer, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};

/// A database on the bench server (or on every node of a Citus cluster).
#[derive(Debug, Clone)]
pub struct BenchDb {
    /// Its name.
    pub name: String,
    /// URL of the database itself (the coordinator's, on Citus).
    pub url: String,
    /// URL of the database to connect to for creating and dropping it.
    maintenance_url: String,
    /// On Citus: the workers, in group order.
    workers: Vec<CitusNode>,
    /// On Citus: the coordinator's host and port, registered in the database.
    coordinator: Option<(String, i32)>,
    /// On Citus: `citus.shard_count` of the distributed tables.
    shard_count: u32,
}

/// A worker of a Citus cluster.
#[derive(Debug, Clone)]
pub struct CitusNode {
    /// `host:port`.
    pub label: String,
    host: String,
    port: i32,
    /// The node's maintenance database.
    maintenance_url: String,
}

impl CitusNode {
    /// The URL of database `name` on this node.
    pub fn url_of(&self, name: &str) -> anyhow::Result<String> {
        with_database(&self.maintenance_url, name)
    }

    /// The port it listens on.
    pub fn port(&self) -> i32 {
        self.port
    }

    /// Runs `CHECKPOINT` on the node, so that a crash from here on replays only the WAL written
    /// after it.
    pub async fn checkpoint(&self) -> anyhow::Result<()> {
        let mut conn = AsyncPgConnection::establish(&self.maintenance_url)
            .await
            .with_context(|| format!("connecting to the Citus node {}", self.label))?;
        conn.batch_execute("CHECKPOINT")
            .await
            .with_context(|| format!("a checkpoint on the Citus node {}", self.label))
    }
}

/// `"name"`, quoted as an SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `url` with its host and port replaced (user, password, database and query kept).
fn with_host_port(url: &str, host: &str, port: i32) -> anyhow::Result<String> {
    let (scheme, rest) = url.split_once("://").context("the URL has no scheme")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let user = authority
        .rsplit_once('@')
        .map(|(user, _)| format!("{user}@"))
        .unwrap_or_default();
    Ok(format!("{scheme}://{user}{host}:{port}{tail}"))
}

#[derive(QueryableByName)]
struct Node {
    #[diesel(sql_type = Text)]
    nodename: String,
    #[diesel(sql_type = Integer)]
    nodeport: i32,
    #[diesel(sql_type = Integer)]
    groupid: i32,
}

impl BenchDb {
    /// The database `name` on the server of `server_url` (not created yet).
    pub fn new(server_url: &str, name: &str) -> anyhow::Result<Self> {
        Ok(Self {
            name: name.to_owned(),
            url: with_database(server_url, name)?,
            maintenance_url: server_url.to_owned(),
            workers: Vec::new(),
            coordinator: None,
            shard_count: 0,
        })
    }

    /// The database `name` on the Citus cluster whose coordinator's maintenance database
    /// (with the extension and the nodes registered, as `cargo xtask citus` leaves it) is
    /// `coordinator_url`, its distributed tables to have `shard_count` shards. Not created yet:
    /// [`BenchDb::create_on_citus`] does that.
    pub async fn citus(
        coordinator_url: &str,
        name: &str,
        shard_count: u32,
    ) -> anyhow::Result<Self> {
        anyhow::ensure!(shard_count > 0, "a shard count must be at least 1");
        let mut admin = AsyncPgConnection::establish(coordinator_url)
            .await
            .context("connecting to the Citus coordinator")?;
        let nodes: Vec<Node> = diesel::sql_query(
            "SELECT nodename::text AS nodename, nodeport, groupid FROM pg_dist_node \
             WHERE noderole = 'primary' ORDER BY groupid",
        )
        .load(&mut admin)
        .await
        .context(
            "listing the Citus nodes (is the citus extension in the coordinator's database?)",
        )?;
        let coordinator = nodes
            .iter()
            .find(|n| n.groupid == 0)
            .map(|n| (n.nodename.clone(), n.nodeport))
            .context("the coordinator is not registered (`cargo xtask citus` does it)")?;
        let workers = nodes
            .iter()
            .filter(|n| n.groupid != 0)
            .map(|n| {
                Ok(CitusNode {
                    label: format!("{}:{}", n.nodename, n.nodeport),
                    host: n.nodename.clone(),
                    port: n.nodeport,
                    maintenance_url: with_host_port(coordinator_url, &n.nodename, n.nodeport)?,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        anyhow::ensure!(!workers.is_empty(), "the Citus cluster has no worker");
        Ok(Self {
            name: name.to_owned(),
            url: with_database(coordinator_url, name)?,
            maintenance_url: coordinator_url.to_owned(),
            workers,
            coordinator: Some(coordinator),
            shard_count,
        })
    }

    /// The Citus workers (none on plain PostgreSQL).
    pub fn workers(&self) -> &[CitusNode] {
        &self.workers
    }

    /// Whether the database is on a Citus cluster.
    pub fn is_citus(&self) -> bool {
        self.coordinator.is_some()
    }

    /// On Citus: creates the database on every node with the extension, sets its shard count,
    /// switches Citus' statistics counters on (`citus_stat_counters`) and registers the nodes.
    /// Does nothing on plain PostgreSQL (`payoutd migrate --create-database` creates it).
    pub async fn create_on_citus(&self) -> anyhow::Result<()> {
        let Some((host, port)) = &self.coordinator else {
            return Ok(());
        };
        let maintenance = std::iter::once(self.maintenance_url.as_str())
            .chain(self.workers.iter().map(|w| w.maintenance_url.as_str()));
        for maintenance_url in maintenance {
            let mut admin = AsyncPgConnection::establish(maintenance_url)
                .await
                .with_context(|| format!("connecting to the Citus node {maintenance_url}"))?;
            diesel::sql_query(format!("CREATE DATABASE {}", quote_ident(&self.name)))
                .execute(&mut admin)
                .await
                .with_context(|| format!("creating {} on {maintenance_url}", self.name))?;
            let mut conn =
                AsyncPgConnection::establish(&with_database(maintenance_url, &self.name)?).await?;
            conn.batch_execute("CREATE EXTENSION citus")
                .await
                .with_context(|| format!("creating the citus extension on {maintenance_url}"))?;
        }
        let mut conn = self.connect().await?;
        conn.batch_execute(&format!(
            "ALTER DATABASE {name} SET citus.shard_count = {shards};
             ALTER DATABASE {name} SET citus.enable_stat_counters = on;",
            name = quote_ident(&self.name),
            shards = self.shard_count
        ))
        .await?;
        diesel::sql_query("SELECT citus_set_coordinator_host($1, $2)")
            .bind::<Text, _>(host)
            .bind::<Integer, _>(*port)
            .execute(&mut conn)
            .await
            .context("registering the coordinator")?;
        for worker in &self.workers {
            diesel::sql_query("SELECT citus_add_node($1, $2)")
                .bind::<Text, _>(&worker.host)
                .bind::<Integer, _>(worker.port)
                .execute(&mut conn)
                .await
                .with_context(|| format!("registering the worker {}", worker.label))?;
        }
        Ok(())
    }

    /// Drops the database if a previous run left it behind (on every Citus node, the
    /// coordinator first: that ends its connections to the workers' databases; on a worker,
    /// after rolling back the prepared transactions a killed coordinator session may have left
    /// there, which would block dropping it).
    pub async fn drop_if_exists(&self) -> anyhow::Result<()> {
        const DROP_TRIES: u32 = 10;
        let maintenance = std::iter::once(self.maintenance_url.as_str())
            .chain(self.workers.iter().map(|w| w.maintenance_url.as_str()));
        for (n, maintenance_url) in maintenance.enumerate() {
            if n > 0 {
                roll_back_prepared(&with_database(maintenance_url, &self.name)?).await?;
            }
            let mut conn = AsyncPgConnection::establish(maintenance_url)
                .await
                .with_context(|| {
                    format!("connecting to the maintenance database {maintenance_url}")
                })?;
            let drop = format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                quote_ident(&self.name)
            );
            // FORCE ends the sessions it finds, but a worker's Citus maintenance daemon (or a
            // session of a run just ended) can connect again before the drop looks once more:
            // a few tries a second apart, then the error.
            let mut tries = 0;
            loop {
                tries += 1;
                match diesel::sql_query(&drop).execute(&mut conn).await {
                    Ok(_) => break,
                    Err(_) if tries < DROP_TRIES => {
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    }
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!(
                                "dropping database {} on {maintenance_url} ({tries} tries)",
                                self.name
                            )
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// A new connection to the database.
    pub async fn connect(&self) -> anyhow::Result<AsyncPgConnection> {
        AsyncPgConnection::establish(&self.url)
            .await
            .with_context(|| format!("connecting to database {}", self.name))
    }

    /// Runs `sql` (one or more statements, no results) on a new connection.
    pub async fn execute(&self, sql: &str) -> anyhow::Result<()> {
        let mut conn = self.connect().await?;
        conn.batch_execute(sql)
            .await
            .with_context(|| format!("running `{sql}` on {}", self.name))
    }
}

/// A prepared transaction's id.
#[derive(QueryableByName)]
struct Prepared {
    #[diesel(sql_type = Text)]
    gid: String,
}

/// Rolls back the prepared transactions of the database at `url`, if it exists.
async fn roll_back_prepared(url: &str) -> anyhow::Result<()> {
    let Ok(mut conn) = AsyncPgConnection::establish(url).await else {
        // No such database (yet): nothing to roll back.
        return Ok(());
    };
    let prepared: Vec<Prepared> =
        diesel::sql_query("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
            .load(&mut conn)
            .await?;
    for transaction in prepared {
        conn.batch_execute(&format!(
            "ROLLBACK PREPARED '{}'",
            transaction.gid.replace('\'', "''")
        ))
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::with_host_port;

    #[test]
    fn node_urls_keep_user_database_and_query() {
        assert_eq!(
            with_host_port(
                "postgres://postgres@127.0.0.1:25470/postgres?x=1",
                "h",
                25471
            )
            .ok()
            .as_deref(),
            Some("postgres://postgres@h:25471/postgres?x=1")
        );
        assert_eq!(
            with_host_port("postgres://127.0.0.1:1", "h", 2)
                .ok()
                .as_deref(),
            Some("postgres://h:2")
        );
        assert!(with_host_port("no scheme", "h", 2).is_err());
    }
}
