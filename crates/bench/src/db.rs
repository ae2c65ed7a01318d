//! Bench databases: one fresh database per measured configuration, created (and migrated) by
//! `payoutd migrate --create-database`, dropped at the end.
//!
//! On a Citus cluster ([`BenchDb::create_on_citus`]) a database is created on every node first,
//! with the `citus` extension and the cluster's nodes registered, as a Citus database must be
//! before `payoutd migrate` can distribute its tables.

use adapters_postgres::migrate::with_database;
use anyhow::Context;
use diesel::sql_types::{Integer, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};

/// A database on the bench server.
#[derive(Debug, Clone)]
pub struct BenchDb {
    /// Its name.
    pub name: String,
    /// URL of the database itself.
    pub url: String,
    /// URL of the database to connect to for creating and dropping it.
    maintenance_url: String,
    /// On Citus, the maintenance URLs of the workers, which hold the database too.
    worker_urls: Vec<String>,
}

/// A node of a Citus cluster, as `pg_dist_node` lists it.
#[derive(diesel::QueryableByName)]
struct CitusNode {
    #[diesel(sql_type = Text)]
    nodename: String,
    #[diesel(sql_type = Integer)]
    nodeport: i32,
    /// 0 for the coordinator.
    #[diesel(sql_type = Integer)]
    groupid: i32,
}

/// `url` with its host and port replaced (user, database and query kept).
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

/// A prepared transaction's id.
#[derive(diesel::QueryableByName)]
struct Prepared {
    #[diesel(sql_type = Text)]
    gid: String,
}

/// `"name"`, quoted as an SQL identifier.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl BenchDb {
    /// The database `name` on the server of `server_url` (not created yet).
    pub fn new(server_url: &str, name: &str) -> anyhow::Result<Self> {
        Ok(Self {
            name: name.to_owned(),
            url: with_database(server_url, name)?,
            maintenance_url: server_url.to_owned(),
            worker_urls: Vec::new(),
        })
    }

    /// The database `name`, made afresh (dropping what a previous run left) on every node of
    /// the Citus cluster whose coordinator `server_url` names: its maintenance database must
    /// have the extension and the nodes registered, as `cargo xtask citus` leaves it. The new
    /// database gets the extension on every node, the same nodes registered, and
    /// `shard_count` shards per distributed table; `payoutd migrate` then distributes the
    /// tables.
    pub async fn create_on_citus(
        server_url: &str,
        name: &str,
        shard_count: u32,
    ) -> anyhow::Result<Self> {
        let mut coordinator = AsyncPgConnection::establish(server_url)
            .await
            .context("connecting to the Citus coordinator")?;
        let mut nodes: Vec<CitusNode> = diesel::sql_query(
            "SELECT nodename::text AS nodename, nodeport, groupid FROM pg_dist_node \
             WHERE noderole = 'primary' ORDER BY groupid",
        )
        .load(&mut coordinator)
        .await
        .context("listing the Citus nodes (is --database-url a Citus coordinator?)")?;
        let coordinator_node = match <[CitusNode]>::first(&nodes) {
            Some(node) if node.groupid == 0 && nodes.len() > 1 => nodes.remove(0),
            _ => anyhow::bail!(
                "the Citus coordinator's database must have the coordinator and its workers \
                 registered (`cargo xtask citus` does it)"
            ),
        };
        let workers = nodes;
        let mut db = Self::new(server_url, name)?;
        db.worker_urls = workers
            .iter()
            .map(|node| with_host_port(server_url, &node.nodename, node.nodeport))
            .collect::<anyhow::Result<_>>()?;
        db.drop_if_exists().await?;
        let quoted = quote_ident(name);
        for maintenance_url in std::iter::once(&db.maintenance_url).chain(&db.worker_urls) {
            let mut conn = AsyncPgConnection::establish(maintenance_url)
                .await
                .with_context(|| format!("connecting to the Citus node {maintenance_url}"))?;
            conn.batch_execute(&format!("CREATE DATABASE {quoted}"))
                .await
                .with_context(|| format!("creating {name} on {maintenance_url}"))?;
            let mut conn = AsyncPgConnection::establish(&with_database(maintenance_url, name)?)
                .await
                .with_context(|| format!("connecting to {name} on {maintenance_url}"))?;
            conn.batch_execute("CREATE EXTENSION citus")
                .await
                .with_context(|| format!("creating the citus extension on {maintenance_url}"))?;
        }
        let mut conn = db.connect().await?;
        conn.batch_execute(&format!(
            "ALTER DATABASE {quoted} SET citus.shard_count = {shard_count}"
        ))
        .await?;
        diesel::sql_query("SELECT citus_set_coordinator_host($1, $2)")
            .bind::<Text, _>(&coordinator_node.nodename)
            .bind::<Integer, _>(coordinator_node.nodeport)
            .execute(&mut conn)
            .await
            .context("registering the coordinator")?;
        for node in &workers {
            diesel::sql_query("SELECT citus_add_node($1, $2)")
                .bind::<Text, _>(&node.nodename)
                .bind::<Integer, _>(node.nodeport)
                .execute(&mut conn)
                .await
                .with_context(|| format!("registering {}:{}", node.nodename, node.nodeport))?;
        }
        Ok(db)
    }

    /// Drops the database if a previous run left it behind: on Citus, on the coordinator first
    /// (which ends its connections to the workers), then on each worker, after rolling back the
    /// prepared transactions a killed coordinator session may have left there (they block
    /// dropping it).
    pub async fn drop_if_exists(&self) -> anyhow::Result<()> {
        let mut conn = AsyncPgConnection::establish(&self.maintenance_url)
            .await
            .with_context(|| "connecting to the maintenance database")?;
        let drop = format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            quote_ident(&self.name)
        );
        conn.batch_execute(&drop)
            .await
            .with_context(|| format!("dropping database {}", self.name))?;
        for worker_url in &self.worker_urls {
            if let Ok(mut on_worker) =
                AsyncPgConnection::establish(&with_database(worker_url, &self.name)?).await
            {
                let prepared: Vec<Prepared> = diesel::sql_query(
                    "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()",
                )
                .load(&mut on_worker)
                .await?;
                for transaction in prepared {
                    on_worker
                        .batch_execute(&format!(
                            "ROLLBACK PREPARED '{}'",
                            transaction.gid.replace('\'', "''")
                        ))
                        .await?;
                }
            }
            let mut conn = AsyncPgConnection::establish(worker_url)
                .await
                .with_context(|| format!("connecting to the Citus worker {worker_url}"))?;
            conn.batch_execute(&drop)
                .await
                .with_context(|| format!("dropping database {} on {worker_url}", self.name))?;
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

#[cfg(test)]
mod tests {
    use super::with_host_port;

    #[test]
    fn a_workers_url_keeps_the_user_and_database() {
        assert_eq!(
            with_host_port(
                "postgres://postgres@127.0.0.1:25450/postgres",
                "127.0.0.1",
                25451
            )
            .ok()
            .as_deref(),
            Some("postgres://postgres@127.0.0.1:25451/postgres")
        );
        assert_eq!(
            with_host_port("postgres://h:1?sslmode=disable", "w", 2)
                .ok()
                .as_deref(),
            Some("postgres://w:2?sslmode=disable")
        );
        assert!(with_host_port("no scheme", "w", 2).is_err());
    }
}
