//! A fresh database per test, cloned from a migrated template and dropped when the handle is
//! dropped (feature `test-db`). The server comes from `DATABASE_URL` (any database on it; it is
//! used as the maintenance connection). `cargo xtask test` provides one.

use std::hash::{DefaultHasher, Hash, Hasher};

use anyhow::Context;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use tokio::sync::OnceCell;

use crate::migrate::{embedded_versions, run_migrations, with_database};

static TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// A database that exists for one test.
#[derive(Debug)]
pub struct TestDb {
    name: String,
    url: String,
    maintenance_url: String,
}

fn server_url() -> anyhow::Result<String> {
    std::env::var("DATABASE_URL").context(
        "DATABASE_URL is not set: database tests need a PostgreSQL server; run them with `cargo xtask test`",
    )
}

#[derive(diesel::QueryableByName)]
struct Found {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// The SQL of every migration, so a migration edited in place gets a new template rather than
/// a stale one (the embedded migrations do not expose their SQL).
fn migration_sources() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations");
    let mut sources = Vec::new();
    for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for file in ["up.sql", "down.sql"] {
            let path = dir.path().join(file);
            if let Ok(sql) = std::fs::read_to_string(&path) {
                sources.push((path.display().to_string(), sql));
            }
        }
    }
    sources.sort();
    sources
}

async fn ensure_template(maintenance_url: &str) -> anyhow::Result<String> {
    let mut hasher = DefaultHasher::new();
    embedded_versions()?.hash(&mut hasher);
    migration_sources().hash(&mut hasher);
    let name = format!("payoutd_template_{:016x}", hasher.finish());
    let mut admin = AsyncPgConnection::establish(maintenance_url)
        .await
        .with_context(|| "connecting to the PostgreSQL server in DATABASE_URL")?;
    // Several test processes may start at once: one builds the template, the others wait.
    diesel::sql_query("SELECT pg_advisory_lock(8675309)")
        .execute(&mut admin)
        .await?;
    let built = async {
        let found: Found =
            diesel::sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
                .bind::<Text, _>(&name)
                .get_result(&mut admin)
                .await?;
        if found.n == 0 {
            let building = format!("{name}_building");
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"))
                .execute(&mut admin)
                .await?;
            diesel::sql_query(format!("CREATE DATABASE {building}"))
                .execute(&mut admin)
                .await?;
            run_migrations(&with_database(maintenance_url, &building)?).await?;
            diesel::sql_query(format!("ALTER DATABASE {building} RENAME TO {name}"))
                .execute(&mut admin)
                .await?;
        }
        anyhow::Ok(())
    }
    .await;
    diesel::sql_query("SELECT pg_advisory_unlock(8675309)")
        .execute(&mut admin)
        .await?;
    built?;
    Ok(name)
}

impl TestDb {
    /// Creates a new, migrated, empty database.
    pub async fn new() -> anyhow::Result<Self> {
        let maintenance_url = server_url()?;
        let template = TEMPLATE
            .get_or_try_init(|| ensure_template(&maintenance_url))
            .await?;
        let name = format!("payoutd_test_{}", uuid::Uuid::new_v4().simple());
        let mut admin = AsyncPgConnection::establish(&maintenance_url).await?;
        diesel::sql_query(format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .execute(&mut admin)
            .await?;
        let url = with_database(&maintenance_url, &name)?;
        Ok(Self {
            name,
            url,
            maintenance_url,
        })
    }

    /// The database's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let maintenance_url = self.maintenance_url.clone();
        let name = self.name.clone();
        // Drop may run inside a runtime that is shutting down: use a thread with its own runtime.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let mut admin = AsyncPgConnection::establish(&maintenance_url).await?;
                diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut admin)
                    .await?;
                anyhow::Ok(())
            })
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("warning: could not drop test database {}: {e:#}", self.name);
        }
    }
}
