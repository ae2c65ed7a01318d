//! `cargo xtask citus`: a local Citus cluster (a coordinator and two workers) for running
//! payoutd on distributed tables.
//!
//! The Citus extension is taken from the installed PostgreSQL server when it has one
//! (`<sharedir>/extension/citus.control`). Otherwise it is built from a Citus source tree:
//! `PAYOUT_CITUS_SOURCE`, else a `shared/vendor/citus` directory next to one of the checkout's
//! ancestors, holding `citus-<version>.tar.gz` and optionally `*.patch` files applied with
//! `patch -p1`. The build runs in `<target dir>/citus-build/` and installs into the server's
//! directories, so it needs root (and installs Debian's build packages when they are missing).
//! `postgresql-server-dev-<major>` is installed at the installed server's own version when the
//! archive still has it: the newest one wants the newest server package, and apt would upgrade
//! the server under every cluster running on it. When it must upgrade anyway, xtask says which
//! packages before installing (from `apt-get install -s`); its own clusters notice the new
//! binary when next used (`postgres::server_binary`). The build is also installed under
//! `<target dir>/citus-install/<key>` (`DESTDIR`), the key naming the server's exact version,
//! the tarball and the patches: on a fresh machine whose target dir was kept (as CI keeps it),
//! those files are copied into place instead, with no build packages and no compiling.
//!
//! The three nodes are private clusters in `<target dir>/citus/{coordinator,worker1,worker2}`,
//! started like `cargo xtask db`'s (as the `postgres` system user when run as root) with
//! `shared_preload_libraries = 'citus'` and `max_worker_processes = 64`, on 127.0.0.1 ports
//! `$PAYOUT_CITUS_PORT` (default 25440) and the next two. Every step is idempotent: running
//! nodes, databases, the extension and registered workers are reused.

use std::{
    env, fs, io,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use crate::{
    cmd::{self, find_on_path, sh_quote},
    failure::Failure,
    flags::Flags,
    paths,
    postgres::{self, Cluster, Lock},
};

/// Port of the coordinator unless `PAYOUT_CITUS_PORT` says otherwise; the workers take the next
/// two. Below the ephemeral range, like the plain cluster's port.
const DEFAULT_PORT: u16 = 25440;

/// The nodes, in start order: the coordinator, then the workers.
const NODES: [&str; 3] = ["coordinator", "worker1", "worker2"];

/// Settings of every node. Citus runs a maintenance background worker per database that has
/// the extension, and the HTTP tests on Citus keep a few such databases per test thread: the
/// default of 8 background workers runs out, and registering a node then fails. A worker that
/// stops in the middle of a two-phase commit keeps the transaction prepared, with its row
/// locks, when it starts again, until the coordinator's maintenance daemon resolves it: every
/// `citus.recover_2pc_interval`, 60 s by default, during which requests that need those rows
/// (a subaccount's balance row) time out. 2 s brings a restarted worker back to service at
/// once.
const NODE_SETTINGS: &str = "shared_preload_libraries = 'citus'\nmax_worker_processes = 64\n\
                             citus.recover_2pc_interval = '2s'\n";

/// The database payoutd uses.
const DATABASE: &str = "payoutd";

/// Debian packages the build needs, besides the compiler and make; `{major}` is PostgreSQL's
/// major version.
const BUILD_PACKAGES: [&str; 4] = [
    "postgresql-server-dev-{major}",
    "liblz4-dev",
    "libzstd-dev",
    "libkrb5-dev",
];

/// `cargo xtask citus`: installs Citus if needed, starts the three nodes, creates the databases
/// with the extension, registers the workers and prints the URLs.
pub fn run(args: Vec<String>) -> Result<(), Failure> {
    Flags::new(args).finish()?;
    let cluster = start()?;
    print!("{}", output(cluster.coordinator));
    Ok(())
}

/// The running Citus cluster, in use by this command until dropped.
pub struct Citus {
    /// The coordinator's port.
    pub coordinator: u16,
    /// This command's use of each node, in [`NODES`]' order: `cargo xtask citus-stop` stops
    /// none while a lease lives.
    leases: Vec<postgres::Lease>,
}

impl Citus {
    /// The coordinator's maintenance database, as [`maintenance_url`] gives it.
    pub fn maintenance_url(&self) -> String {
        maintenance_url(self.coordinator)
    }

    /// The control of the cluster's last worker, for fault tests, which this command then holds
    /// alone: refused while another command uses that worker, and no other may start using it
    /// meanwhile.
    pub fn last_worker_control(&self) -> Result<WorkerControl, String> {
        let node = NODES[NODES.len() - 1];
        let cluster = node_cluster(node)?;
        let lease = self
            .leases
            .last()
            .ok_or_else(|| format!("this command holds no lease on the Citus {node}"))?;
        postgres::hold_alone(&cluster, lease, "stops and starts during its fault tests")?;
        let postmaster = cluster
            .running()?
            .ok_or_else(|| format!("the Citus {node} is not running"))?;
        let (stop, start) = cluster.control_argv("immediate")?;
        Ok(WorkerControl {
            port: postmaster.port,
            stop,
            start,
        })
    }
}

/// The coordinator's maintenance database (`postgres`, with the extension and the workers
/// registered) on `coordinator`'s port: what `PAYOUT_CITUS_URL` and `PAYOUT_TEST_CITUS_URL`
/// take.
pub fn maintenance_url(coordinator: u16) -> String {
    format!("postgres://postgres@127.0.0.1:{coordinator}/postgres")
}

/// What `cargo xtask citus` does before printing: the cluster installed, running and set up,
/// reusing whatever already is, with a lease on each node for this command.
pub fn start() -> Result<Citus, String> {
    ensure_installed()?;
    let base_port = base_port()?;
    let mut ports = Vec::new();
    let mut leases = Vec::new();
    for (offset, node) in (0u16..).zip(NODES) {
        let cluster = node_cluster(node)?;
        let port = base_port
            .checked_add(offset)
            .ok_or_else(|| format!("PAYOUT_CITUS_PORT {base_port} leaves no room for {node}"))?;
        let running = cluster.ensure_running_with(port, NODE_SETTINGS, "cargo xtask citus-stop")?;
        eprintln!(
            "xtask: Citus {node} on 127.0.0.1:{} ({})",
            running.postmaster.port,
            if running.started {
                "started by this run"
            } else {
                "already running"
            }
        );
        ports.push(running.postmaster.port);
        leases.push(running.lease);
    }
    let psql = Psql::find()?;
    let [coordinator, workers @ ..] = ports.as_slice() else {
        return Err("no Citus nodes were started".to_owned());
    };
    // Tests create their databases from the maintenance database, so it is a Citus database too.
    for database in ["postgres", DATABASE] {
        for &port in &ports {
            psql.create_database(port, database)?;
            psql.run(port, database, "CREATE EXTENSION IF NOT EXISTS citus")?;
        }
        register_workers(&psql, *coordinator, workers, database)?;
    }
    Ok(Citus {
        coordinator: *coordinator,
        leases,
    })
}

/// A running worker of the cluster, for fault tests: its port and the commands (argv) that stop
/// it at once (`pg_ctl stop -m immediate`, as a crash would) and start it again.
pub struct WorkerControl {
    /// The port it listens on.
    pub port: u16,
    /// Stops it.
    pub stop: Vec<String>,
    /// Starts it again, with its settings.
    pub start: Vec<String>,
}

/// `cargo xtask citus-stop [--force]`: stops whichever of the three nodes are running, unless
/// an xtask command uses the cluster (`--force` stops them anyway).
pub fn stop(args: Vec<String>) -> Result<(), Failure> {
    let mut flags = Flags::new(args);
    let force = flags.switch("--force");
    flags.finish()?;
    let mut found = false;
    for node in NODES {
        let base = paths::target_dir().join("citus").join(node);
        let fallback = fallback_base(node);
        for base in [base, fallback] {
            if !base.join("data").join("PG_VERSION").is_file() {
                continue;
            }
            found = true;
            let cluster = Cluster::new(base, postgres::Bins::find()?, postgres::Runner::detect()?);
            let _lock = Lock::acquire(&cluster.lock_path())?;
            let users = postgres::live_users(&cluster.users_dir(), None)?;
            if !users.is_empty() && !force {
                return Err(Failure::new(
                    "no xtask command using the Citus cluster (or --force)",
                    format!("{} using its {node}", users.join(", ")),
                ));
            }
            if cluster.running()?.is_some() {
                cluster.stop()?;
                println!(
                    "xtask: stopped Citus {node} in {}",
                    cluster.data().display()
                );
            } else {
                println!(
                    "xtask: Citus {node} in {} is not running",
                    cluster.data().display()
                );
            }
        }
    }
    if !found {
        println!("xtask: no Citus cluster found");
    }
    Ok(())
}

/// What `cargo xtask citus` prints: shell assignments, as `cargo xtask db` does.
fn output(coordinator: u16) -> String {
    let server_url = format!("postgres://postgres@127.0.0.1:{coordinator}/{DATABASE}");
    let maintenance_url = maintenance_url(coordinator);
    format!(
        "# payoutd (migrate, serve, admin): the Citus coordinator's `{DATABASE}` database;\n\
         # `payoutd migrate` distributes the tables\n\
         DATABASE_URL={}\n\
         # the coordinator's maintenance database (with the citus extension and the workers);\n\
         # PAYOUT_CITUS_URL=\"$MAINTENANCE_DATABASE_URL\" runs the Citus tests of adapters-postgres\n\
         MAINTENANCE_DATABASE_URL={}\n",
        sh_quote(&server_url),
        sh_quote(&maintenance_url)
    )
}

/// The coordinator's port, from `PAYOUT_CITUS_PORT` or the default.
fn base_port() -> Result<u16, String> {
    match env::var("PAYOUT_CITUS_PORT") {
        Ok(port) if !port.is_empty() => port
            .parse()
            .map_err(|_| format!("PAYOUT_CITUS_PORT must be a port number, got `{port}`")),
        _ => Ok(DEFAULT_PORT),
    }
}

/// The cluster of one node, in `<target dir>/citus/<node>` (or under `/tmp` when the postgres
/// user cannot write there).
fn node_cluster(node: &str) -> Result<Cluster, String> {
    let parent = paths::target_dir().join("citus");
    postgres::create_dir(&parent)?;
    Cluster::locate_at(parent.join(node), fallback_base(node))
}

/// Where a node lives when the postgres user cannot reach the target dir.
fn fallback_base(node: &str) -> PathBuf {
    let mut dir = postgres::fallback_base().into_os_string();
    dir.push(format!("-citus-{node}"));
    PathBuf::from(dir)
}

/// Registers the coordinator and each worker in `database` on the coordinator, unless they
/// already are.
fn register_workers(
    psql: &Psql,
    coordinator: u16,
    workers: &[u16],
    database: &str,
) -> Result<(), String> {
    psql.run(
        coordinator,
        database,
        &format!("SELECT citus_set_coordinator_host('127.0.0.1', {coordinator})"),
    )?;
    for &worker in workers {
        let known = psql.query(
            coordinator,
            database,
            &format!(
                "SELECT count(*) FROM pg_dist_node \
                 WHERE nodename = '127.0.0.1' AND nodeport = {worker}"
            ),
        )?;
        if known.trim() == "0" {
            psql.run(
                coordinator,
                database,
                &format!("SELECT citus_add_node('127.0.0.1', {worker})"),
            )?;
        }
    }
    let active = psql.query(
        coordinator,
        database,
        "SELECT count(*) FROM citus_get_active_worker_nodes()",
    )?;
    eprintln!(
        "xtask: database `{database}`: {} active Citus worker(s)",
        active.trim()
    );
    Ok(())
}

/// `psql` against the nodes, as the `postgres` database user over TCP.
struct Psql {
    program: PathBuf,
}

impl Psql {
    /// Finds PostgreSQL's client.
    fn find() -> Result<Self, String> {
        let program = postgres::find_client("psql")
            .ok_or_else(|| "psql (PostgreSQL's client) is missing".to_owned())?;
        Ok(Self { program })
    }

    /// `psql` running `sql` in `database` on `port`, stopping at the first error.
    fn command(&self, port: u16, database: &str, sql: &str) -> Command {
        let mut command = Command::new(&self.program);
        command.args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-U",
            "postgres",
            "-d",
            database,
            "-c",
            sql,
        ]);
        command
    }

    /// Runs `sql`, discarding its output.
    fn run(&self, port: u16, database: &str, sql: &str) -> Result<(), String> {
        self.query(port, database, sql).map(drop)
    }

    /// Runs `sql` and returns what it printed (unaligned, tuples only).
    fn query(&self, port: u16, database: &str, sql: &str) -> Result<String, String> {
        cmd::stdout(&mut self.command(port, database, sql))
    }

    /// Creates `database` on the node at `port` unless it exists.
    fn create_database(&self, port: u16, database: &str) -> Result<(), String> {
        let exists = self.query(
            port,
            "postgres",
            &format!("SELECT count(*) FROM pg_database WHERE datname = '{database}'"),
        )?;
        if exists.trim() == "0" {
            self.run(port, "postgres", &format!("CREATE DATABASE \"{database}\""))?;
        }
        Ok(())
    }
}

/// Builds and installs Citus unless the server already has it.
fn ensure_installed() -> Result<(), String> {
    let major = server_major_version()?;
    if let Some(control) = installed_control(&major) {
        eprintln!("xtask: Citus is installed ({})", control.display());
        return Ok(());
    }
    let source = find_source()?;
    let tarball = tarball(&source)?;
    eprintln!(
        "xtask: Citus is not installed for PostgreSQL {major}; installing it from {}",
        tarball.display()
    );
    if !is_root()? {
        return Err(format!(
            "installing Citus into the PostgreSQL {major} server needs root (it writes to the \
             server's lib and share directories); run `cargo xtask citus` as root, or install \
             Citus 13.x for PostgreSQL {major} from your own packages"
        ));
    }
    let cache = install_cache(&source, &tarball)?;
    if cache.is_dir() {
        eprintln!(
            "xtask: installing the Citus built earlier for this server and source from {}",
            cache.display()
        );
        cmd::run(to_stderr("cp").arg("-a").arg(cache.join(".")).arg("/"))?;
        if installed_control(&major).is_some() {
            return Ok(());
        }
        eprintln!("xtask: the kept build did not install citus.control; building afresh");
    }
    eprintln!(
        "xtask: building Citus (kept afterwards in {})",
        cache.display()
    );
    install_build_packages(&major)?;
    build_and_install(&source, &tarball, &cache)?;
    installed_control(&major).map(drop).ok_or_else(|| {
        format!("`make install` finished but PostgreSQL {major} still has no citus.control")
    })
}

/// Where a build's installed files are kept (`make install DESTDIR=…`) under the target dir,
/// named by what the build depends on (the server's exact version, the source tarball and
/// patches, by name and SHA-256): a fresh machine whose target dir was kept (CI's) copies them
/// into place instead of installing the build packages and compiling Citus again.
fn install_cache(source: &Path, tarball: &Path) -> Result<PathBuf, String> {
    use sha2::{Digest, Sha256};
    let postgres = postgres::find_client("postgres")
        .ok_or_else(|| "the PostgreSQL server (`postgres`) is not installed".to_owned())?;
    let mut inputs = vec![tarball.to_path_buf()];
    inputs.extend(patches(source)?);
    let mut key = Sha256::new();
    key.update(cmd::stdout(Command::new(postgres).arg("--version"))?.trim());
    for input in &inputs {
        let bytes =
            fs::read(input).map_err(|err| format!("cannot read {}: {err}", input.display()))?;
        key.update(
            input
                .file_name()
                .map(|n| n.as_encoded_bytes())
                .unwrap_or_default(),
        );
        key.update(Sha256::digest(&bytes));
    }
    let key = hex::encode(key.finalize());
    Ok(paths::target_dir()
        .join("citus-install")
        .join(key.get(..16).unwrap_or(&key)))
}

/// The source directory's patches, in the order they apply.
fn patches(source: &Path) -> Result<Vec<PathBuf>, String> {
    let mut patches: Vec<PathBuf> = fs::read_dir(source)
        .map_err(|err| format!("cannot read {}: {err}", source.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "patch"))
        .collect();
    patches.sort();
    Ok(patches)
}

/// The major version of the server binaries xtask runs (`postgres --version`).
fn server_major_version() -> Result<String, String> {
    let postgres = postgres::find_client("postgres").ok_or_else(|| {
        "the PostgreSQL server (`postgres`) is not installed; Debian/Ubuntu: \
         `apt-get install postgresql`"
            .to_owned()
    })?;
    let version = cmd::stdout(Command::new(postgres).arg("--version"))?;
    // "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    version
        .split_whitespace()
        .nth(2)
        .and_then(|number| number.split('.').next())
        .filter(|major| !major.is_empty() && major.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .ok_or_else(|| format!("cannot read a version in `postgres --version`: {version:?}"))
}

/// The server's `citus.control`, if Citus is installed: under `pg_config --sharedir` when
/// `pg_config` is of the same major version, else under Debian's share directory.
fn installed_control(major: &str) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(pg_config) = postgres::find_client("pg_config") {
        let same_major = cmd::stdout(Command::new(&pg_config).arg("--version"))
            .is_ok_and(|version| version_major(&version) == Some(major));
        if same_major && let Ok(share) = cmd::stdout(Command::new(&pg_config).arg("--sharedir")) {
            candidates.push(PathBuf::from(share.trim()));
        }
    }
    candidates.push(Path::new("/usr/share/postgresql").join(major));
    candidates
        .into_iter()
        .map(|share| share.join("extension").join("citus.control"))
        .find(|control| control.is_file())
}

/// The major version in `pg_config --version`'s "PostgreSQL 15.18 (...)".
fn version_major(version: &str) -> Option<&str> {
    version.split_whitespace().nth(1)?.split('.').next()
}

/// The Citus source directory: `PAYOUT_CITUS_SOURCE`, else `shared/vendor/citus` beside an
/// ancestor of the workspace.
fn find_source() -> Result<PathBuf, String> {
    if let Some(dir) = env::var_os("PAYOUT_CITUS_SOURCE").filter(|dir| !dir.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.is_dir() {
            Ok(dir)
        } else {
            Err(format!(
                "PAYOUT_CITUS_SOURCE={} is not a directory",
                dir.display()
            ))
        };
    }
    let root = paths::workspace_root();
    root.ancestors()
        .skip(1)
        .map(|dir| dir.join("shared").join("vendor").join("citus"))
        .find(|dir| dir.is_dir())
        .ok_or_else(|| {
            format!(
                "Citus is not installed and no Citus source was found (no shared/vendor/citus \
                 beside any parent of {}). Install Citus 13.x for PostgreSQL 15 from your own \
                 packages, or set PAYOUT_CITUS_SOURCE to a directory holding \
                 citus-<version>.tar.gz (and any *.patch to apply)",
                root.display()
            )
        })
}

/// The one `citus-*.tar.gz` in the source directory.
fn tarball(source: &Path) -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = fs::read_dir(source)
        .map_err(|err| format!("cannot read {}: {err}", source.display()))?
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("citus-") && name.ends_with(".tar.gz"))
        })
        .collect();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(format!("{} holds no citus-*.tar.gz", source.display())),
        _ => Err(format!(
            "{} holds several citus-*.tar.gz; keep one",
            source.display()
        )),
    }
}

/// Whether we run as root.
fn is_root() -> Result<bool, String> {
    Ok(cmd::stdout(Command::new("id").arg("-u"))?.trim() == "0")
}

/// Installs the Debian packages the build needs that are not installed yet.
fn install_build_packages(major: &str) -> Result<(), String> {
    let missing: Vec<String> = BUILD_PACKAGES
        .iter()
        .map(|package| package.replace("{major}", major))
        .filter(|package| !package_installed(package))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    if find_on_path("apt-get").is_none() {
        return Err(format!(
            "building Citus needs {} (or your system's equivalents); install them and rerun",
            missing.join(" ")
        ));
    }
    // The server's headers at the server's own version where the archive still has it: the
    // newest postgresql-server-dev-15 wants the newest postgresql-15, and apt would upgrade the
    // server under every cluster running on it.
    let server = format!("postgresql-{major}");
    let pinned: Vec<String> = match installed_version(&server) {
        Some(version) => missing
            .iter()
            .map(|package| {
                if package.starts_with("postgresql-server-dev-") {
                    format!("{package}={version}")
                } else {
                    package.clone()
                }
            })
            .collect(),
        None => missing.clone(),
    };
    let (packages, plan) = match simulate(&pinned) {
        Ok(plan) => (pinned, plan),
        Err(err) => {
            eprintln!("xtask: note: {err}; installing the newest versions instead");
            let plan = simulate(&missing)?;
            (missing, plan)
        }
    };
    let upgrades = postgresql_upgrades(&plan);
    if !upgrades.is_empty() {
        eprintln!(
            "xtask: warning: installing {} upgrades {} under every PostgreSQL server running on \
             this machine. A server started before keeps its old binary and fails to load the \
             new libraries (`could not load library \".../plpgsql.so\": undefined symbol`): \
             xtask restarts its own private clusters when next used (and refuses one while a \
             command uses it); restart any other yourself.",
            packages.join(" "),
            upgrades.join(", ")
        );
    }
    eprintln!(
        "xtask: installing the Citus build packages: {}",
        packages.join(" ")
    );
    cmd::run(
        to_stderr("apt-get")
            .args(["install", "-y", "--no-install-recommends"])
            .args(&packages)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// The version dpkg has installed of `package`, if any.
fn installed_version(package: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", package])
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    (out.status.success() && !version.is_empty()).then_some(version)
}

/// What `apt-get install` of `packages` would do (`apt-get install -s`), or why it cannot.
fn simulate(packages: &[String]) -> Result<String, String> {
    cmd::stdout(
        Command::new("apt-get")
            .args(["install", "-s", "--no-install-recommends"])
            .args(packages),
    )
}

/// The installed PostgreSQL packages a simulated install (`apt-get install -s`) upgrades, as
/// `name old → new`: the lines `Inst NAME [OLD] (NEW …)`.
fn postgresql_upgrades(plan: &str) -> Vec<String> {
    plan.lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("Inst ")?;
            let (name, rest) = rest.split_once(' ')?;
            let old = rest.strip_prefix('[')?.split(']').next()?;
            let new = rest.split_once('(')?.1.split_whitespace().next()?;
            name.starts_with("postgresql")
                .then(|| format!("{name} {old} → {new}"))
        })
        .collect()
}

/// Whether dpkg has `package` installed.
fn package_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}", package])
        .output()
        .is_ok_and(|out| {
            out.status.success() && String::from_utf8_lossy(&out.stdout).ends_with(" installed")
        })
}

/// `program`, with its output on xtask's stderr: stdout carries only the URLs.
fn to_stderr(program: &str) -> Command {
    let mut command = Command::new(program);
    command.stdout(Stdio::from(io::stderr()));
    command
}

/// Unpacks the source afresh under `<target dir>/citus-build/`, applies the patches, builds and
/// installs it, and installs it again under `cache` (`DESTDIR`) for the next fresh machine.
fn build_and_install(source: &Path, tarball: &Path, cache: &Path) -> Result<(), String> {
    let build = paths::target_dir().join("citus-build");
    if build.exists() {
        fs::remove_dir_all(&build)
            .map_err(|err| format!("cannot remove {}: {err}", build.display()))?;
    }
    postgres::create_dir(&build)?;
    cmd::run(
        to_stderr("tar")
            .arg("xzf")
            .arg(tarball)
            .arg("-C")
            .arg(&build),
    )?;
    let tree = fs::read_dir(&build)
        .map_err(|err| format!("cannot read {}: {err}", build.display()))?
        .flatten()
        .map(|entry| entry.path())
        .find(|path| path.join("configure").is_file())
        .ok_or_else(|| {
            format!(
                "{} unpacked no directory with a configure script",
                tarball.display()
            )
        })?;
    for patch in patches(source)? {
        eprintln!("xtask: applying {}", patch.display());
        cmd::run(
            to_stderr("patch")
                .args(["-p1", "-i"])
                .arg(&patch)
                .current_dir(&tree),
        )?;
    }
    cmd::run(
        to_stderr("./configure")
            .arg("--without-libcurl")
            .current_dir(&tree),
    )?;
    cmd::run(to_stderr("make").arg("-j2").current_dir(&tree))?;
    cmd::run(to_stderr("make").arg("install").current_dir(&tree))?;
    // Kept only once complete: a run stopped halfway leaves no cache to copy.
    let staging = cache.with_extension("partial");
    if staging.exists() {
        fs::remove_dir_all(&staging)
            .map_err(|err| format!("cannot remove {}: {err}", staging.display()))?;
    }
    cmd::run(
        to_stderr("make")
            .arg("install")
            .arg(format!("DESTDIR={}", staging.display()))
            .current_dir(&tree),
    )?;
    if cache.exists() {
        fs::remove_dir_all(cache)
            .map_err(|err| format!("cannot remove {}: {err}", cache.display()))?;
    }
    fs::rename(&staging, cache)
        .map_err(|err| format!("cannot keep the Citus build as {}: {err}", cache.display()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{output, version_major};

    #[test]
    fn a_kept_citus_build_is_found_again_only_for_the_same_source_and_patches() {
        if crate::postgres::find_client("postgres").is_none() {
            eprintln!("skipped: no PostgreSQL server installed");
            return;
        }
        let source = std::env::temp_dir().join(format!("citus-key-{}", std::process::id()));
        std::fs::create_dir_all(&source).unwrap();
        let tarball = source.join("citus-13.2.2.tar.gz");
        std::fs::write(&tarball, b"source").unwrap();
        std::fs::write(source.join("a.patch"), b"one").unwrap();
        let key = || super::install_cache(&source, &tarball).unwrap();
        let first = key();
        assert_eq!(key(), first, "the same inputs name the same build");
        std::fs::write(source.join("a.patch"), b"two").unwrap();
        let patched = key();
        assert_ne!(patched, first, "a changed patch is another build");
        std::fs::write(source.join("b.patch"), b"one").unwrap();
        assert_ne!(key(), patched, "so is another patch");
        std::fs::write(&tarball, b"other source").unwrap();
        assert!(![first, patched].contains(&key()), "and another tarball");
        std::fs::remove_dir_all(&source).unwrap();
    }

    #[test]
    fn upgrades_of_installed_postgresql_packages_are_read_from_apt_s_plan() {
        let plan = "NOTE: This is only a simulation!\n\
            Inst libpq5 [15.18-0+deb12u1] (15.20-0+deb12u1 Debian-Security:12/oldstable-security [amd64])\n\
            Inst liblz4-dev (1.9.4-1 Debian:12.15/oldstable [amd64])\n\
            Inst postgresql-client-15 [15.18-0+deb12u1] (15.20-0+deb12u1 Debian-Security:12/oldstable-security [amd64])\n\
            Inst postgresql-15 [15.18-0+deb12u1] (15.20-0+deb12u1 Debian-Security:12/oldstable-security [amd64])\n\
            Inst postgresql-server-dev-15 (15.20-0+deb12u1 Debian-Security:12/oldstable-security [amd64])\n\
            Conf postgresql-15 (15.20-0+deb12u1 Debian-Security:12/oldstable-security [amd64])\n";
        assert_eq!(
            super::postgresql_upgrades(plan),
            [
                "postgresql-client-15 15.18-0+deb12u1 → 15.20-0+deb12u1",
                "postgresql-15 15.18-0+deb12u1 → 15.20-0+deb12u1",
            ]
        );
        assert!(
            super::postgresql_upgrades(
                "Inst postgresql-server-dev-15 (15.18-0+deb12u1 Debian:12.15/oldstable [amd64])"
            )
            .is_empty()
        );
    }

    #[test]
    fn pg_config_versions() {
        assert_eq!(
            version_major("PostgreSQL 15.18 (Debian 15.18-0+deb12u1)"),
            Some("15")
        );
        assert_eq!(version_major("PostgreSQL 16.4"), Some("16"));
        assert_eq!(version_major(""), None);
    }

    #[test]
    fn prints_the_coordinator_urls_as_shell_assignments() {
        let printed = output(25440);
        let assignments: Vec<&str> = printed
            .lines()
            .filter(|line| !line.starts_with('#'))
            .collect();
        assert_eq!(
            assignments,
            [
                "DATABASE_URL=postgres://postgres@127.0.0.1:25440/payoutd",
                "MAINTENANCE_DATABASE_URL=postgres://postgres@127.0.0.1:25440/postgres",
            ]
        );
    }
}
