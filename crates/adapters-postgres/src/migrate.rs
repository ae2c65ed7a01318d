//! Schema migrations, embedded in the binary and run on request (`payoutd migrate`), never as a
//! side effect of building a pool.

use anyhow::Context;
use diesel::migration::MigrationSource;
use diesel::pg::Pg;
use diesel::sql_types::{Bool, Text};
use diesel_async::async_connection_wrapper::AsyncConnectionWrapper;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};

use crate::citus::distribute_tables;
use crate::email_keys::rekey_receiver_emails;

/// Every migration under `migrations/`.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("../../migrations");

/// Runs every pending migration on the database at `url`, then, on Citus, distributes the tables
/// ([`distribute_tables`]; nothing on plain PostgreSQL), then recomputes receivers' e-mail keys
/// ([`rekey_receiver_emails`]: SQL cannot compute them); returns the versions applied.
/// Receivers left with their old key (stored duplicates) are logged by id as a warning.
///
/// diesel's migration harness is synchronous: it runs on a blocking thread through diesel-async's
/// connection wrapper (no libpq needed), which works on any tokio runtime flavour.
pub async fn run_migrations(url: &str) -> anyhow::Result<Vec<String>> {
    let applied = run_sql_migrations(url).await?;
    let mut conn = AsyncPgConnection::establish(url)
        .await
        .context("connecting to distribute tables and recompute e-mail keys")?;
    let placed = distribute_tables(&mut conn)
        .await
        .context("placing the tables on Citus")?;
    if let Some(placed) = placed.filter(|p| !p.reference.is_empty() || !p.distributed.is_empty()) {
        tracing::info!(
            reference = ?placed.reference,
            distributed = ?placed.distributed,
            "Citus: placed the tables"
        );
    }
    let rekey = rekey_receiver_emails(&mut conn)
        .await
        .context("recomputing receivers' e-mail keys")?;
    if rekey.updated > 0 {
        tracing::info!(updated = rekey.updated, "recomputed receivers' e-mail keys");
    }
    if !rekey.kept_old_key.is_empty() {
        tracing::warn!(
            receivers = ?rekey.kept_old_key,
            "receivers whose e-mail now matches another receiver of their subaccount keep their old e-mail key"
        );
    }
    Ok(applied)
}

/// Runs every pending SQL migration on the database at `url`; returns the versions applied.
async fn run_sql_migrations(url: &str) -> anyhow::Result<Vec<String>> {
    let url = url.to_owned();
    tokio::task::spawn_blocking(move || -> anyhow::Result<Vec<String>> {
        let mut conn =
            <AsyncConnectionWrapper<AsyncPgConnection> as diesel::Connection>::establish(&url)
                .context("connecting to run migrations")?;
        let applied = conn
            .run_pending_migrations(MIGRATIONS)
            .map_err(|e| anyhow::anyhow!("running migrations: {e}"))?;
        Ok(applied.iter().map(ToString::to_string).collect())
    })
    .await
    .context("migration task panicked")?
}

/// The versions of the embedded migrations, oldest first.
pub fn embedded_versions() -> anyhow::Result<Vec<String>> {
    let migrations = MigrationSource::<Pg>::migrations(&MIGRATIONS)
        .map_err(|e| anyhow::anyhow!("reading embedded migrations: {e}"))?;
    Ok(migrations
        .iter()
        .map(|m| m.name().version().to_string())
        .collect())
}

/// Replaces the database name of a `postgres://` URL (keeping any query string).
pub fn with_database(url: &str, database: &str) -> anyhow::Result<String> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").context("DATABASE_URL has no scheme")? + 3;
    let server = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    Ok(match query {
        Some(query) => format!("{server}/{database}?{query}"),
        None => format!("{server}/{database}"),
    })
}

/// The database name of a `postgres://` URL.
pub fn database_name(url: &str) -> anyhow::Result<String> {
    let base = url.split('?').next().unwrap_or(url);
    let after_scheme = base
        .split_once("://")
        .context("DATABASE_URL has no scheme")?
        .1;
    let name = after_scheme
        .split_once('/')
        .map(|(_, name)| name)
        .unwrap_or_default();
    anyhow::ensure!(!name.is_empty(), "DATABASE_URL names no database");
    Ok(name.to_owned())
}

#[derive(diesel::QueryableByName)]
struct Exists {
    #[diesel(sql_type = Bool)]
    exists: bool,
}

/// Creates the database named in `url` when it does not exist, connecting to the server's
/// `postgres` maintenance database to do so.
pub async fn create_database_if_missing(url: &str) -> anyhow::Result<bool> {
    let name = database_name(url)?;
    let mut admin = AsyncPgConnection::establish(&with_database(url, "postgres")?)
        .await
        .context("connecting to the maintenance database `postgres`")?;
    let found: Exists =
        diesel::sql_query("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS exists")
            .bind::<Text, _>(&name)
            .get_result(&mut admin)
            .await?;
    if found.exists {
        return Ok(false);
    }
    let quoted = format!("\"{}\"", name.replace('"', "\"\""));
    diesel::sql_query(format!("CREATE DATABASE {quoted}"))
        .execute(&mut admin)
        .await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_in_urls() {
        assert_eq!(
            with_database("postgres://u:p@h:5432/a?sslmode=disable", "b")
                .ok()
                .as_deref(),
            Some("postgres://u:p@h:5432/b?sslmode=disable")
        );
        assert_eq!(
            with_database("postgres://h", "b").ok().as_deref(),
            Some("postgres://h/b")
        );
        assert_eq!(
            database_name("postgres://h:1/payoutd?x=y").ok().as_deref(),
            Some("payoutd")
        );
        assert!(database_name("postgres://h:1/").is_err());
        assert!(with_database("not a url", "b").is_err());
    }

    #[test]
    fn migrations_are_embedded() {
        let versions = embedded_versions().unwrap_or_default();
        assert!(!versions.is_empty());
    }
}
