//! Bench databases: one fresh database per measured configuration, created (and migrated) by
//! `payoutd migrate --create-database`, dropped at the end.

use adapters_postgres::migrate::with_database;
use anyhow::Context;
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
        })
    }

    /// Drops the database if a previous run left it behind.
    pub async fn drop_if_exists(&self) -> anyhow::Result<()> {
        let mut conn = AsyncPgConnection::establish(&self.maintenance_url)
            .await
            .with_context(|| "connecting to the maintenance database")?;
        diesel::sql_query(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            quote_ident(&self.name)
        ))
        .execute(&mut conn)
        .await
        .with_context(|| format!("dropping database {}", self.name))?;
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
