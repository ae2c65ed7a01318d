//! A fresh database per test, dropped when the handle is dropped (feature `test-db`).
//!
//! On plain PostgreSQL (the default) the server comes from `DATABASE_URL` (any database on it;
//! it is used as the maintenance connection) and each database is cloned from a migrated
//! template. `cargo xtask test` provides the server.
//!
//! When `PAYOUT_TEST_CITUS_URL` is set (to a Citus coordinator's database that has the `citus`
//! extension and its workers registered, as `cargo xtask citus` prints it as
//! `MAINTENANCE_DATABASE_URL`), [`TestDb::new`] makes each database on that cluster instead. A
//! Citus database is one database of the same name on every node (the workers hold the shards),
//! so its template is one too: the first test process builds it once per set of migrations (a
//! database on the coordinator and on every worker, given the extension, its nodes registered on
//! the coordinator, and migrated, which places the tables, [`crate::citus`]), then closes it to
//! connections on every node, which also keeps Citus' maintenance daemon out of it. Each test's
//! database is then `CREATE DATABASE … TEMPLATE` on every node, a fraction of a second where
//! building one takes about four. Such databases have [`CITUS_TEST_SHARD_COUNT`] shards per
//! distributed table, enough to spread every table over the workers at a fraction of the
//! placement time of Citus' default.
//!
//! A test's database is dropped when its handle is; a run that is killed leaves its databases
//! behind. Their names carry the creating process's id (`payoutd_test_p<pid>_<uuid>`,
//! `payoutd_citus_p<pid>_<uuid>`), and the first database a test process makes on a server
//! drops those whose process is gone ([`sweep_leftovers`]).

use std::collections::BTreeSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::IpAddr;
use std::path::Path;

use anyhow::Context;
use diesel::sql_types::{BigInt, Integer, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use tokio::sync::OnceCell;

use crate::citus::has_citus;
use crate::migrate::{embedded_versions, run_migrations, with_database};

static TEMPLATE: OnceCell<String> = OnceCell::const_new();
static CITUS_TEMPLATE: OnceCell<String> = OnceCell::const_new();

/// Set once this process has swept the plain PostgreSQL server, and the Citus cluster.
static SWEPT_POSTGRES: OnceCell<()> = OnceCell::const_new();
static SWEPT_CITUS: OnceCell<()> = OnceCell::const_new();

/// The variable that makes [`TestDb::new`] create its databases on a Citus cluster.
pub const CITUS_URL_VAR: &str = "PAYOUT_TEST_CITUS_URL";

/// The advisory lock (on the coordinator's maintenance database) that test processes take in
/// turns to register the nodes in a new database.
const CITUS_REGISTRATION_LOCK: i64 = 0x7061_796f_7574_6472;

/// The advisory lock (on the coordinator's maintenance database) under which one test process
/// builds the Citus template while the others wait.
const CITUS_TEMPLATE_LOCK: i64 = 0x7061_796f_7574_6474;

/// `citus.shard_count` of the test databases made on Citus.
pub const CITUS_TEST_SHARD_COUNT: u32 = 4;

/// A database that exists for one test.
#[derive(Debug)]
pub struct TestDb {
    name: String,
    url: String,
    /// The maintenance URL of every server the database exists on: one on plain PostgreSQL, the
    /// coordinator then the workers on Citus.
    maintenance_urls: Vec<String>,
}

fn server_url() -> anyhow::Result<String> {
    std::env::var("DATABASE_URL").context(
        "DATABASE_URL is not set: database tests need a PostgreSQL server; run them with `cargo xtask test`",
    )
}

/// The Citus coordinator named by [`CITUS_URL_VAR`], when it is set and not empty.
pub fn citus_url() -> Option<String> {
    std::env::var(CITUS_URL_VAR)
        .ok()
        .filter(|url| !url.is_empty())
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

/// A hash of the migrations (their versions and SQL), which names the templates built from
/// them.
fn migrations_hash() -> anyhow::Result<u64> {
    let mut hasher = DefaultHasher::new();
    embedded_versions()?.hash(&mut hasher);
    migration_sources().hash(&mut hasher);
    Ok(hasher.finish())
}

async fn ensure_template(maintenance_url: &str) -> anyhow::Result<String> {
    let name = format!("payoutd_template_{:016x}", migrations_hash()?);
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

#[derive(diesel::QueryableByName)]
struct Node {
    #[diesel(sql_type = Text)]
    nodename: String,
    #[diesel(sql_type = Integer)]
    nodeport: i32,
    #[diesel(sql_type = Integer)]
    groupid: i32,
}

/// `url` with its host and port replaced (user, password, database and query kept).
pub fn with_host_port(url: &str, host: &str, port: i32) -> anyhow::Result<String> {
    let (scheme, rest) = url.split_once("://").context("the URL has no scheme")?;
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let user = authority
        .rsplit_once('@')
        .map(|(user, _)| format!("{user}@"))
        .unwrap_or_default();
    Ok(format!("{scheme}://{user}{host}:{port}{tail}"))
}

/// The nodes of the Citus cluster whose coordinator a URL names.
struct CitusCluster {
    /// A connection to the coordinator's maintenance database.
    admin: AsyncPgConnection,
    /// The primaries, the coordinator's group 0 first.
    nodes: Vec<Node>,
    /// Each node's maintenance URL, in the order of `nodes`.
    maintenance_urls: Vec<String>,
}

impl CitusCluster {
    async fn of(coordinator_url: &str) -> anyhow::Result<Self> {
        let mut admin = AsyncPgConnection::establish(coordinator_url)
            .await
            .with_context(|| format!("connecting to the Citus coordinator in {CITUS_URL_VAR}"))?;
        anyhow::ensure!(
            has_citus(&mut admin).await?,
            "{CITUS_URL_VAR} must name a database with the citus extension"
        );
        let mut nodes: Vec<Node> = diesel::sql_query(
            "SELECT nodename::text AS nodename, nodeport, groupid FROM pg_dist_node \
             WHERE noderole = 'primary' ORDER BY groupid",
        )
        .load(&mut admin)
        .await
        .context("listing the Citus nodes")?;
        anyhow::ensure!(
            nodes.iter().any(|n| n.groupid == 0) && nodes.iter().any(|n| n.groupid != 0),
            "{CITUS_URL_VAR}'s database must have its coordinator and workers registered \
             (`cargo xtask citus` does it)"
        );
        nodes.sort_by_key(|n| n.groupid);
        let maintenance_urls = nodes
            .iter()
            .map(|node| with_host_port(coordinator_url, &node.nodename, node.nodeport))
            .collect::<anyhow::Result<_>>()?;
        Ok(Self {
            admin,
            nodes,
            maintenance_urls,
        })
    }
}

/// The Citus template of the current migrations on the cluster of `coordinator_url`, built
/// first when some node lacks it: a migrated database of the same name on every node, closed to
/// connections (`CREATE DATABASE … TEMPLATE` needs a template nobody uses, and Citus' maintenance
/// daemon would otherwise be using it). Test processes build it in turns under
/// [`CITUS_TEMPLATE_LOCK`]; one killed while building leaves a `payoutd_citus_p…` database the
/// next sweep drops.
async fn ensure_citus_template(
    coordinator_url: &str,
    cluster: &CitusCluster,
) -> anyhow::Result<String> {
    let name = format!(
        "payoutd_template_citus{CITUS_TEST_SHARD_COUNT}_{:016x}",
        migrations_hash()?
    );
    let mut lock = AsyncPgConnection::establish(coordinator_url).await?;
    diesel::sql_query("SELECT pg_advisory_lock($1)")
        .bind::<BigInt, _>(CITUS_TEMPLATE_LOCK)
        .execute(&mut lock)
        .await?;
    let built = async {
        let mut missing = false;
        for maintenance_url in &cluster.maintenance_urls {
            let mut conn = AsyncPgConnection::establish(maintenance_url).await?;
            let found: Found =
                diesel::sql_query("SELECT count(*) AS n FROM pg_database WHERE datname = $1")
                    .bind::<Text, _>(&name)
                    .get_result(&mut conn)
                    .await?;
            missing |= found.n == 0;
        }
        if !missing {
            return anyhow::Ok(());
        }
        // A part left on some node by a build that failed there goes first.
        drop_everywhere(&name, &cluster.maintenance_urls).await?;
        swept_once(&SWEPT_CITUS, &cluster.maintenance_urls).await;
        let fresh = CitusCluster::of(coordinator_url).await?;
        let mut building = TestDb::citus_unmigrated_in(coordinator_url, fresh).await?;
        run_migrations(building.url())
            .await
            .with_context(|| format!("migrating {} on Citus", building.name))?;
        // The coordinator first: ending its sessions ends its connections to the workers.
        for maintenance_url in &building.maintenance_urls {
            let mut conn = AsyncPgConnection::establish(maintenance_url).await?;
            for sql in [
                format!("ALTER DATABASE {} ALLOW_CONNECTIONS false", building.name),
                format!(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                     WHERE datname = '{}'",
                    building.name
                ),
                // Waits (up to five seconds) for the ended sessions to go.
                format!("ALTER DATABASE {} RENAME TO {name}", building.name),
            ] {
                diesel::sql_query(&sql)
                    .execute(&mut conn)
                    .await
                    .with_context(|| format!("{sql} on {maintenance_url}"))?;
            }
        }
        // Renamed on every node: the handle has nothing left to drop.
        building.maintenance_urls.clear();
        Ok(())
    }
    .await;
    diesel::sql_query("SELECT pg_advisory_unlock($1)")
        .bind::<BigInt, _>(CITUS_TEMPLATE_LOCK)
        .execute(&mut lock)
        .await?;
    built?;
    Ok(name)
}

impl TestDb {
    /// Creates a new, migrated, empty database: on the Citus cluster of [`CITUS_URL_VAR`] when
    /// it is set ([`Self::citus`]), else on the plain PostgreSQL server of `DATABASE_URL`
    /// ([`Self::postgres`]).
    pub async fn new() -> anyhow::Result<Self> {
        match citus_url() {
            Some(coordinator_url) => Self::citus(&coordinator_url).await,
            None => Self::postgres().await,
        }
    }

    /// Creates a new, migrated, empty database on the plain PostgreSQL server of
    /// `DATABASE_URL`, whatever [`CITUS_URL_VAR`] says.
    pub async fn postgres() -> anyhow::Result<Self> {
        let maintenance_url = server_url()?;
        let template = TEMPLATE
            .get_or_try_init(|| ensure_template(&maintenance_url))
            .await?;
        swept_once(&SWEPT_POSTGRES, std::slice::from_ref(&maintenance_url)).await;
        let name = new_database_name("test");
        let mut admin = AsyncPgConnection::establish(&maintenance_url).await?;
        diesel::sql_query(format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .execute(&mut admin)
            .await?;
        let url = with_database(&maintenance_url, &name)?;
        Ok(Self {
            name,
            url,
            maintenance_urls: vec![maintenance_url],
        })
    }

    /// Creates a new, migrated, empty database on the Citus cluster whose coordinator
    /// `coordinator_url` names: a copy of the cluster's template on every node (see the module
    /// docs).
    pub async fn citus(coordinator_url: &str) -> anyhow::Result<Self> {
        let cluster = CitusCluster::of(coordinator_url).await?;
        let template = CITUS_TEMPLATE
            .get_or_try_init(|| ensure_citus_template(coordinator_url, &cluster))
            .await?;
        swept_once(&SWEPT_CITUS, &cluster.maintenance_urls).await;
        let db = Self::new_on_citus(coordinator_url, cluster.maintenance_urls)?;
        db.create_on_every_node(&format!(" TEMPLATE {template}"))
            .await?;
        Ok(db)
    }

    /// The handle of a new Citus database on the nodes of `maintenance_urls`, not created yet:
    /// from here on the handle drops whatever is created, should a step fail.
    fn new_on_citus(coordinator_url: &str, maintenance_urls: Vec<String>) -> anyhow::Result<Self> {
        let name = new_database_name("citus");
        let url = with_database(coordinator_url, &name)?;
        Ok(Self {
            name,
            url,
            maintenance_urls,
        })
    }

    /// `CREATE DATABASE <name><options>` on every node, the coordinator first.
    async fn create_on_every_node(&self, options: &str) -> anyhow::Result<()> {
        for maintenance_url in &self.maintenance_urls {
            let mut conn = AsyncPgConnection::establish(maintenance_url)
                .await
                .with_context(|| format!("connecting to the Citus node {maintenance_url}"))?;
            diesel::sql_query(format!("CREATE DATABASE {}{options}", self.name))
                .execute(&mut conn)
                .await
                .with_context(|| format!("creating {} on {maintenance_url}", self.name))?;
        }
        Ok(())
    }

    /// A new database on every node of the Citus cluster whose coordinator `coordinator_url`
    /// names, with the extension and the cluster's nodes registered, but no schema yet.
    pub async fn citus_unmigrated(coordinator_url: &str) -> anyhow::Result<Self> {
        let cluster = CitusCluster::of(coordinator_url).await?;
        swept_once(&SWEPT_CITUS, &cluster.maintenance_urls).await;
        Self::citus_unmigrated_in(coordinator_url, cluster).await
    }

    async fn citus_unmigrated_in(
        coordinator_url: &str,
        cluster: CitusCluster,
    ) -> anyhow::Result<Self> {
        let CitusCluster {
            mut admin,
            nodes,
            maintenance_urls,
        } = cluster;
        let db = Self::new_on_citus(coordinator_url, maintenance_urls)?;
        db.create_on_every_node("").await?;
        for maintenance_url in &db.maintenance_urls {
            let mut conn =
                AsyncPgConnection::establish(&with_database(maintenance_url, &db.name)?).await?;
            diesel::sql_query("CREATE EXTENSION citus")
                .execute(&mut conn)
                .await
                .with_context(|| format!("creating the citus extension on {maintenance_url}"))?;
        }
        let mut conn = AsyncPgConnection::establish(&db.url).await?;
        diesel::sql_query(format!(
            "ALTER DATABASE {} SET citus.shard_count = {CITUS_TEST_SHARD_COUNT}",
            db.name
        ))
        .execute(&mut conn)
        .await?;
        // Registering nodes in two databases at once can fail on a worker ("tuple concurrently
        // updated"): test processes take turns, through a lock on the maintenance database.
        diesel::sql_query("SELECT pg_advisory_lock($1)")
            .bind::<BigInt, _>(CITUS_REGISTRATION_LOCK)
            .execute(&mut admin)
            .await?;
        let registered = db.register_nodes(&mut conn, &nodes).await;
        diesel::sql_query("SELECT pg_advisory_unlock($1)")
            .bind::<BigInt, _>(CITUS_REGISTRATION_LOCK)
            .execute(&mut admin)
            .await?;
        registered?;
        Ok(db)
    }

    /// Registers `nodes` (the coordinator's group 0, then the workers) in the database, over
    /// `conn` to it on the coordinator.
    async fn register_nodes(
        &self,
        conn: &mut AsyncPgConnection,
        nodes: &[Node],
    ) -> anyhow::Result<()> {
        for node in nodes {
            let sql = if node.groupid == 0 {
                "SELECT citus_set_coordinator_host($1, $2)"
            } else {
                "SELECT citus_add_node($1, $2)"
            };
            diesel::sql_query(sql)
                .bind::<Text, _>(&node.nodename)
                .bind::<Integer, _>(node.nodeport)
                .execute(conn)
                .await
                .with_context(|| {
                    format!(
                        "registering {}:{} in {}",
                        node.nodename, node.nodeport, self.name
                    )
                })?;
        }
        Ok(())
    }

    /// The database's URL (the coordinator's, on Citus).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the database is on a Citus cluster.
    pub fn is_citus(&self) -> bool {
        self.maintenance_urls.len() > 1
    }
}

#[derive(diesel::QueryableByName)]
struct PreparedTransaction {
    #[diesel(sql_type = Text)]
    gid: String,
}

/// Rolls back the prepared transactions left in a database (`conn`), which block dropping it. A
/// test's application may still be committing (Citus prepares on the workers, then commits)
/// when the coordinator's database is dropped under it; the coordinator would have finished
/// those transactions, but it is gone, so they are rolled back.
async fn rollback_orphaned_prepared(conn: &mut AsyncPgConnection) -> anyhow::Result<()> {
    let prepared: Vec<PreparedTransaction> =
        diesel::sql_query("SELECT gid FROM pg_prepared_xacts WHERE database = current_database()")
            .load(conn)
            .await?;
    for transaction in prepared {
        let gid = transaction.gid.replace('\'', "''");
        diesel::sql_query(format!("ROLLBACK PREPARED '{gid}'"))
            .execute(conn)
            .await?;
    }
    Ok(())
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let maintenance_urls = self.maintenance_urls.clone();
        let name = self.name.clone();
        // Drop may run inside a runtime that is shutting down: use a thread with its own runtime.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(drop_everywhere(&name, &maintenance_urls))
        })
        .join();
        if let Ok(Err(e)) = dropped {
            eprintln!("warning: could not drop test database {}: {e:#}", self.name);
        }
    }
}

/// Drops database `name` on every server of `maintenance_urls`, each even when another fails.
/// On Citus the coordinator (first) goes first: dropping its database ends its connections to
/// the workers' databases. On every node the prepared transactions left in the database are
/// rolled back first: on the workers those of a commit the coordinator can no longer finish, and
/// on the coordinator too those of a run killed mid-commit (seen blocking a sweep).
async fn drop_everywhere(name: &str, maintenance_urls: &[String]) -> anyhow::Result<()> {
    let mut failures = Vec::new();
    for maintenance_url in maintenance_urls {
        let dropped = async {
            // A node may lack the database (a run killed while creating it): nothing to roll
            // back there, and dropping it if it exists is all that is left.
            if let Ok(mut conn) =
                AsyncPgConnection::establish(&with_database(maintenance_url, name)?).await
            {
                rollback_orphaned_prepared(&mut conn).await?;
            }
            let mut admin = AsyncPgConnection::establish(maintenance_url).await?;
            diesel::sql_query(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut admin)
                .await?;
            anyhow::Ok(())
        };
        if let Err(e) = dropped.await {
            failures.push(format!("on {maintenance_url}: {e:#}"));
        }
    }
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(())
}

/// A new test database's name: `payoutd_<kind>_p<pid>_<uuid>`, with this process's id.
fn new_database_name(kind: &str) -> String {
    format!(
        "payoutd_{kind}_p{}_{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    )
}

/// The id of the process that named a test database `name` ([`new_database_name`]), or `None`
/// for any other name.
fn creator(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix("payoutd_test_p")
        .or_else(|| name.strip_prefix("payoutd_citus_p"))?;
    let (pid, id) = rest.split_once('_')?;
    let digits = |s: &str, hex: bool| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (hex && matches!(b, b'a'..=b'f')))
    };
    if !digits(pid, false) || id.len() != 32 || !digits(id, true) {
        return None;
    }
    pid.parse().ok()
}

/// Whether the server of `url` runs on this machine, so that the processes that made its test
/// databases were this machine's: a loopback address, `localhost`, or a Unix socket (no host).
fn on_this_machine(url: &str) -> bool {
    let Some((_, rest)) = url.split_once("://") else {
        return false;
    };
    let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
        None => host_port.split(':').next().unwrap_or_default(),
    };
    host.is_empty()
        || host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether process `pid` has ended, as this machine's `/proc` tells.
fn has_ended(pid: u32) -> bool {
    pid != std::process::id() && !Path::new("/proc").join(pid.to_string()).exists()
}

#[derive(diesel::QueryableByName)]
struct DatabaseName {
    #[diesel(sql_type = Text)]
    name: String,
}

/// Drops the test databases on the servers of `maintenance_urls` (one server, or a Citus
/// cluster's nodes, the coordinator first) whose creating process has ended: those a killed
/// run left behind. Returns their names. Does nothing unless every server runs on this machine
/// and `/proc` shows its processes, since a process id means nothing elsewhere. A database whose
/// process still runs is never touched, whoever else uses the servers.
pub async fn sweep_leftovers(maintenance_urls: &[String]) -> anyhow::Result<Vec<String>> {
    if !Path::new("/proc/self").exists() || !maintenance_urls.iter().all(|u| on_this_machine(u)) {
        return Ok(Vec::new());
    }
    let mut leftovers = BTreeSet::new();
    for maintenance_url in maintenance_urls {
        let mut conn = AsyncPgConnection::establish(maintenance_url)
            .await
            .with_context(|| format!("connecting to {maintenance_url}"))?;
        let names: Vec<DatabaseName> = diesel::sql_query(
            "SELECT datname::text AS name FROM pg_database \
             WHERE datname LIKE 'payoutd\\_test\\_p%' OR datname LIKE 'payoutd\\_citus\\_p%'",
        )
        .load(&mut conn)
        .await?;
        leftovers.extend(
            names
                .into_iter()
                .map(|n| n.name)
                .filter(|name| creator(name).is_some_and(has_ended)),
        );
    }
    // Each leftover is dropped even when another cannot be.
    let mut failures = Vec::new();
    for name in &leftovers {
        if let Err(e) = drop_everywhere(name, maintenance_urls).await {
            failures.push(format!("{name}: {e:#}"));
        }
    }
    anyhow::ensure!(failures.is_empty(), "{}", failures.join("; "));
    Ok(leftovers.into_iter().collect())
}

/// [`sweep_leftovers`] once per process and `cell`. A sweep that fails is reported, not fatal:
/// the test goes on.
async fn swept_once(cell: &OnceCell<()>, maintenance_urls: &[String]) {
    cell.get_or_init(|| async {
        match sweep_leftovers(maintenance_urls).await {
            Ok(dropped) if !dropped.is_empty() => eprintln!(
                "note: dropped {} test database(s) left by ended test runs",
                dropped.len()
            ),
            Ok(_) => {}
            Err(e) => eprintln!("warning: could not sweep leftover test databases: {e:#}"),
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::{creator, new_database_name, on_this_machine};

    #[test]
    fn a_test_databases_name_carries_its_creators_process_id() {
        let name = new_database_name("test");
        assert_eq!(creator(&name), Some(std::process::id()));
        assert!(
            name.len() <= 63,
            "{name} is longer than an identifier may be"
        );
        assert_eq!(
            creator("payoutd_citus_p17_0123456789abcdef0123456789abcdef"),
            Some(17)
        );
        for other in [
            "payoutd_template_0123456789abcdef",
            "payoutd_test_0123456789abcdef0123456789abcdef",
            "payoutd_test_p_0123456789abcdef0123456789abcdef",
            "payoutd_test_p12_0123456789abcdef0123456789abcde",
            "payoutd_test_p12_0123456789ABCDEF0123456789abcdef",
            "payoutd_test_p1x_0123456789abcdef0123456789abcdef",
            "payoutd_test_p99999999999_0123456789abcdef0123456789abcdef",
            "payoutd_bench_p12_0123456789abcdef0123456789abcdef",
            "payoutd",
        ] {
            assert_eq!(creator(other), None, "{other}");
        }
    }

    #[test]
    fn only_a_server_on_this_machine_is_swept() {
        for local in [
            "postgres://postgres@127.0.0.1:25432/postgres",
            "postgres://u:p@127.9.9.9/db?sslmode=disable",
            "postgres://localhost/db",
            "postgres://postgres@[::1]:5432/db",
            "postgres:///db?host=/var/run/postgresql",
        ] {
            assert!(on_this_machine(local), "{local}");
        }
        for remote in [
            "postgres://postgres@10.0.0.5:5432/db",
            "postgres://db.example.com/db",
            "postgres://postgres@[2001:db8::1]:5432/db",
            "postgres://127.0.0.1@db.example.com/db",
            "not a url",
        ] {
            assert!(!on_this_machine(remote), "{remote}");
        }
    }
}
