//! PostgreSQL provisioning shared by every command that needs a database.
//!
//! A server is found in this order:
//!
//! 1. `DATABASE_URL`, used as given;
//! 2. a server already listening on `localhost:5432`;
//! 3. a private cluster built from the installed server binaries, kept in
//!    `<target dir>/pg` (`data/`, `log`, `sock/`) and reused across runs.
//!
//! As root, cluster commands run as the `postgres` system user, because
//! `initdb` and `postgres` refuse to run as root.
//!
//! Several xtask commands may use the private cluster at once (`cargo xtask test` while
//! `cargo xtask serve` runs): each holds a lease on it ([`lease`]), and the cluster is stopped
//! only once the last of them is done, if the command that started it asked for that
//! ([`Postgres::stop_on_exit`]), or by `cargo xtask db-stop` when nobody uses it. A cluster
//! whose server binary was replaced under it (a package upgrade) is restarted when nobody uses
//! it, and refused while somebody does ([`server_binary`]).

mod lease;
mod server_binary;

use std::{
    env,
    fs::{self, OpenOptions},
    io::{self, Write},
    net::{TcpStream, ToSocketAddrs},
    os::unix::fs::{PermissionsExt, chown},
    path::{Path, PathBuf},
    process::Command,
    thread,
    time::{Duration, Instant},
};

use sha2::{Digest, Sha256};

pub(crate) use self::lease::{Lease, Lock, hold_alone, live_users};
pub use self::lease::{REAPER_COMMAND, reap};
use self::{
    lease::{Reaper, Released, STOP_WHEN_UNUSED, pid_alive},
    server_binary::ServerBinary,
};
use crate::{
    cmd::{self, find_on_path, is_executable, sh_quote},
    failure::expected_saw,
    paths,
};

/// Port of the private cluster unless `PAYOUT_PG_PORT` says otherwise. It lies below Linux's
/// ephemeral range (32768–60999 by default): a client that keeps reconnecting while the server
/// is down (the service during `chaos`'s outage) is given ephemeral local ports, and a connect
/// from 127.0.0.1:P to 127.0.0.1:P with nothing listening connects the socket to itself. Such a
/// socket holds P, so PostgreSQL could not bind it again when it restarts.
const DEFAULT_PORT: u16 = 25432;

/// The commands (argv) that stop a server and start it again, for fault tests.
pub type ControlArgv = (Vec<String>, Vec<String>);

/// A PostgreSQL server ready for connections.
pub struct Postgres {
    /// URL of the maintenance database `postgres`, or `DATABASE_URL` verbatim.
    pub url: String,
    source: Source,
}

/// Where the server came from.
enum Source {
    /// `DATABASE_URL` from the environment.
    Env,
    /// A server that was already listening on `localhost:5432`.
    Localhost,
    /// The private cluster.
    Private {
        cluster: Cluster,
        /// Whether this process started it.
        started: bool,
        /// This command's use of it.
        lease: Lease,
        /// Releases the lease should xtask die without doing so.
        reaper: Option<Reaper>,
    },
}

impl Postgres {
    /// Finds or starts a server, as described in the module docs.
    pub fn provision() -> Result<Self, String> {
        if let Some(url) = env::var("DATABASE_URL").ok().filter(|url| !url.is_empty()) {
            return Ok(Self::new(url, Source::Env));
        }
        if listening("localhost", 5432) {
            let url = "postgres://postgres@localhost:5432/postgres".to_owned();
            return Ok(Self::new(url, Source::Localhost));
        }
        let mut pg = Self::private(Cluster::locate()?, requested_port()?)?;
        if let Source::Private {
            cluster,
            lease,
            reaper,
            ..
        } = &mut pg.source
        {
            match Reaper::spawn(&cluster.base, lease.path()) {
                Ok(spawned) => *reaper = Some(spawned),
                Err(err) => eprintln!(
                    "xtask: warning: {err}; if xtask is interrupted, stop PostgreSQL with \
                     `cargo xtask db-stop`"
                ),
            }
        }
        Ok(pg)
    }

    /// The private cluster `cluster`, started on `port` unless it runs already, with a lease on
    /// it for this command (and no reaper: [`Postgres::provision`] adds one).
    fn private(cluster: Cluster, port: u16) -> Result<Self, String> {
        let running = cluster.ensure_running_with(port, "", "cargo xtask db-stop")?;
        let url = format!(
            "postgres://postgres@127.0.0.1:{}/postgres",
            running.postmaster.port
        );
        Ok(Self::new(
            url,
            Source::Private {
                cluster,
                started: running.started,
                lease: running.lease,
                reaper: None,
            },
        ))
    }

    fn new(url: String, source: Source) -> Self {
        Self { url, source }
    }

    /// Whether the URL came from the user's `DATABASE_URL`.
    pub fn is_from_env(&self) -> bool {
        matches!(self.source, Source::Env)
    }

    /// Whether this process started the server.
    pub fn started_here(&self) -> bool {
        matches!(self.source, Source::Private { started: true, .. })
    }

    /// One line saying which server this is, without any password.
    pub fn describe(&self) -> String {
        let url = redact(&self.url);
        match &self.source {
            Source::Env => format!("PostgreSQL at {url} (from DATABASE_URL)"),
            Source::Localhost => {
                format!("PostgreSQL at {url} (already listening on localhost:5432)")
            }
            Source::Private {
                cluster, started, ..
            } => format!(
                "PostgreSQL at {url} (private cluster in {}, {})",
                cluster.data().display(),
                if *started {
                    "started by this run"
                } else {
                    "already running"
                }
            ),
        }
    }

    /// Asks for a private cluster this process started to be stopped once no xtask command
    /// uses it any more: by this one's [`Postgres::shutdown`], or by the last user's, or by a
    /// [`Reaper`] should xtask die first (say, on Ctrl-C). A cluster found running keeps
    /// whatever its starter asked.
    pub fn stop_on_exit(&mut self) {
        if let Source::Private {
            cluster,
            started: true,
            ..
        } = &self.source
        {
            let mark = cluster.base.join(STOP_WHEN_UNUSED);
            if let Err(err) = fs::write(&mark, "") {
                eprintln!(
                    "xtask: warning: cannot write {}: {err}; `cargo xtask db-stop` stops the \
                     cluster",
                    mark.display()
                );
            }
        }
    }

    /// Asks for the private cluster to be left running once no xtask command uses it
    /// (`cargo xtask db`, `PAYOUT_KEEP_PG=1`), whoever started it.
    pub fn keep_running(&mut self) {
        if let Source::Private { cluster, .. } = &self.source {
            let _ = fs::remove_file(cluster.base.join(STOP_WHEN_UNUSED));
        }
    }

    /// Keeps this command's lease alive while process `pid` (a child xtask waits for) runs,
    /// should xtask die before it.
    pub fn watch(&mut self, pid: u32) {
        if let Source::Private { lease, .. } = &self.source
            && let Err(err) = lease.watch(pid)
        {
            eprintln!("xtask: warning: {err}");
        }
    }

    /// The commands (argv) that stop and start this server again, for fault tests; `None`
    /// unless it is the private cluster (xtask does not stop other people's servers). This
    /// command then holds the cluster alone ([`lease::hold_alone`]): refused while another
    /// command uses it, and no other may start using it meanwhile.
    pub fn control_argv(&self) -> Result<Option<ControlArgv>, String> {
        let Source::Private { cluster, lease, .. } = &self.source else {
            return Ok(None);
        };
        lease::hold_alone(cluster, lease, "stops and starts during its fault tests")?;
        Ok(cluster.control_argv("fast").ok())
    }

    /// Releases this command's lease on the private cluster, and stops the cluster if this was
    /// its last user and it is to be stopped (see [`Postgres::stop_on_exit`]).
    pub fn shutdown(self) {
        let Source::Private {
            cluster,
            lease,
            reaper,
            ..
        } = self.source
        else {
            return;
        };
        if let Some(reaper) = reaper {
            reaper.disarm();
        }
        match lease::release(&cluster, lease) {
            Ok(Released::Stopped) => {
                eprintln!("xtask: stopped PostgreSQL in {}", cluster.data().display());
            }
            Ok(Released::InUse(users)) => eprintln!(
                "xtask: left PostgreSQL in {} running for {}",
                cluster.data().display(),
                users.join(", ")
            ),
            Ok(Released::Kept) => {}
            Err(err) => eprintln!("xtask: warning: could not stop PostgreSQL: {err}"),
        }
    }
}

/// `cargo xtask db-stop [--force]`: stops the private cluster wherever it lives, unless an
/// xtask command uses it (`--force` stops it anyway).
pub fn stop_private(force: bool) -> Result<(), String> {
    let mut found = false;
    for base in [paths::target_dir().join("pg"), fallback_base()] {
        if !base.join("data").join("PG_VERSION").is_file() {
            continue;
        }
        found = true;
        let cluster = Cluster::new(base, Bins::find()?, Runner::detect()?);
        let _lock = Lock::acquire(&cluster.lock_path())?;
        let users = lease::live_users(&cluster.users_dir(), None)?;
        if !users.is_empty() && !force {
            return Err(expected_saw(
                "no xtask command using the cluster (or --force)",
                &format!("{} using it", users.join(", ")),
            ));
        }
        if cluster.running()?.is_some() {
            cluster.stop()?;
            println!("xtask: stopped PostgreSQL in {}", cluster.data().display());
        } else {
            println!(
                "xtask: PostgreSQL in {} is not running",
                cluster.data().display()
            );
        }
        let _ = fs::remove_file(cluster.base.join(STOP_WHEN_UNUSED));
    }
    if !found {
        println!("xtask: no private PostgreSQL cluster found");
    }
    Ok(())
}

/// The binaries that make up a PostgreSQL server installation.
pub(crate) struct Bins {
    initdb: String,
    pg_ctl: String,
    postgres: String,
}

impl Bins {
    /// Looks on `PATH`, then in the newest `/usr/lib/postgresql/*/bin`.
    pub(crate) fn find() -> Result<Self, String> {
        if let (Some(initdb), Some(pg_ctl), Some(postgres)) = (
            find_on_path("initdb"),
            find_on_path("pg_ctl"),
            find_on_path("postgres"),
        ) {
            return Self::from_paths(&initdb, &pg_ctl, &postgres);
        }
        let newest = fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|dir| {
                ["initdb", "pg_ctl", "postgres"]
                    .iter()
                    .all(|bin| is_executable(&dir.join("bin").join(bin)))
            })
            .max_by_key(|dir| version_key(&dir.file_name().unwrap_or_default().to_string_lossy()));
        match newest {
            Some(dir) => {
                let bin = dir.join("bin");
                Self::from_paths(
                    &bin.join("initdb"),
                    &bin.join("pg_ctl"),
                    &bin.join("postgres"),
                )
            }
            None => Err(
                "PostgreSQL server binaries (initdb, pg_ctl, postgres) are not on PATH \
                 or in /usr/lib/postgresql/*/bin.\n\
                 Install them (Debian/Ubuntu: `apt-get install postgresql`), \
                 or set DATABASE_URL to an existing server."
                    .to_owned(),
            ),
        }
    }

    /// Checks the paths can go on a command line.
    fn from_paths(initdb: &Path, pg_ctl: &Path, postgres: &Path) -> Result<Self, String> {
        Ok(Self {
            initdb: utf8(initdb)?.to_owned(),
            pg_ctl: utf8(pg_ctl)?.to_owned(),
            postgres: utf8(postgres)?.to_owned(),
        })
    }
}

/// A PostgreSQL client program such as `pgbench`, found the way [`Bins::find`] finds the server
/// binaries: on `PATH`, else in the newest `/usr/lib/postgresql/*/bin`.
pub fn find_client(name: &str) -> Option<PathBuf> {
    find_on_path(name).or_else(|| {
        fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|dir| is_executable(&dir.join("bin").join(name)))
            .max_by_key(|dir| version_key(&dir.file_name().unwrap_or_default().to_string_lossy()))
            .map(|dir| dir.join("bin").join(name))
    })
}

/// Sort key for version directory names like `15` or `9.6`.
fn version_key(name: &str) -> Vec<u32> {
    name.split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

/// How cluster commands are run.
pub(crate) enum Runner {
    /// As the current user.
    Direct,
    /// As the `postgres` system user (we are root), via `runuser` if it
    /// exists, else `su`; `uid` and `gid` are that user's.
    AsPostgres {
        runuser: Option<PathBuf>,
        uid: u32,
        gid: u32,
    },
}

impl Runner {
    /// Direct for ordinary users; as `postgres` for root.
    pub(crate) fn detect() -> Result<Self, String> {
        let uid = cmd::stdout(Command::new("id").arg("-u"))?;
        if uid.trim() != "0" {
            return Ok(Self::Direct);
        }
        let id = |flag| -> Result<u32, String> {
            cmd::stdout(Command::new("id").args([flag, "postgres"]))
                .map_err(|err| {
                    format!(
                        "running as root needs a `postgres` system user to run PostgreSQL as \
                         (installing the postgresql package creates one), or set DATABASE_URL: {err}"
                    )
                })?
                .trim()
                .parse()
                .map_err(|_| "`id` printed something unexpected".to_owned())
        };
        let runuser = find_on_path("runuser").or_else(|| {
            ["/usr/sbin/runuser", "/sbin/runuser"]
                .iter()
                .map(PathBuf::from)
                .find(|path| is_executable(path))
        });
        Ok(Self::AsPostgres {
            runuser,
            uid: id("-u")?,
            gid: id("-g")?,
        })
    }

    /// `program args...`, run as the right user.
    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut command = match self {
            Self::Direct => {
                let mut command = Command::new(program);
                command.args(args);
                command
            }
            Self::AsPostgres {
                runuser: Some(runuser),
                ..
            } => {
                let mut command = Command::new(runuser);
                command.args(["-u", "postgres", "--", program]).args(args);
                command
            }
            Self::AsPostgres { runuser: None, .. } => {
                let line = std::iter::once(program)
                    .chain(args.iter().copied())
                    .map(sh_quote)
                    .collect::<Vec<_>>()
                    .join(" ");
                let mut command = Command::new("su");
                command.args(["postgres", "-s", "/bin/sh", "-c", &line]);
                command
            }
        };
        // PostgreSQL tools fail early if they cannot resolve the current
        // directory, and the postgres user may not be able to enter ours.
        command.current_dir("/");
        command
    }

    /// Hands `path` to the postgres user when we run as root.
    fn own(&self, path: &Path) -> Result<(), String> {
        if let Self::AsPostgres { uid, gid, .. } = self {
            chown(path, Some(*uid), Some(*gid))
                .map_err(|err| format!("cannot chown {} to postgres: {err}", path.display()))?;
        }
        Ok(())
    }

    /// Whether the user running the cluster can write to `dir`.
    fn can_write(&self, dir: &Path) -> Result<bool, String> {
        match self {
            Self::Direct => Ok(true),
            Self::AsPostgres { .. } => {
                let mut test = self.command("test", &["-w", utf8(dir)?]);
                Ok(cmd::output(&mut test)?.status.success())
            }
        }
    }
}

/// The private cluster: where it lives, which binaries run it, and as whom.
pub(crate) struct Cluster {
    base: PathBuf,
    bins: Bins,
    runner: Runner,
}

/// A running cluster as [`Cluster::ensure_running_with`] leaves it for a command.
pub(crate) struct Running {
    pub(crate) postmaster: Postmaster,
    /// Whether this call started it.
    pub(crate) started: bool,
    /// The command's use of it, released on drop.
    pub(crate) lease: Lease,
}

/// What `postmaster.pid` says about a running server.
#[derive(Clone, Copy)]
pub(crate) struct Postmaster {
    pid: u32,
    /// The port it listens on.
    pub(crate) port: u16,
}

impl Cluster {
    /// The cluster in `base`, which need not exist yet.
    pub(crate) fn new(base: PathBuf, bins: Bins, runner: Runner) -> Self {
        Self { base, bins, runner }
    }

    /// Finds the binaries and picks (creating it if needed) a cluster
    /// directory that the user running the cluster can write to.
    fn locate() -> Result<Self, String> {
        Self::locate_at(paths::target_dir().join("pg"), fallback_base())
    }

    /// Finds the binaries and picks `preferred` as the cluster directory, or `fallback` (a
    /// private directory under `/tmp`) when the user running the cluster cannot write to it.
    pub(crate) fn locate_at(preferred: PathBuf, fallback: PathBuf) -> Result<Self, String> {
        let bins = Bins::find()?;
        let runner = Runner::detect()?;
        create_dir(&preferred)?;
        runner.own(&preferred)?;
        if runner.can_write(&preferred)? {
            return Ok(Self::new(preferred, bins, runner));
        }
        if fs::symlink_metadata(&fallback).is_ok_and(|meta| !meta.is_dir()) {
            return Err(format!(
                "{} exists and is not a directory",
                fallback.display()
            ));
        }
        create_dir(&fallback)?;
        runner.own(&fallback)?;
        fs::set_permissions(&fallback, fs::Permissions::from_mode(0o700))
            .map_err(|err| format!("cannot chmod {}: {err}", fallback.display()))?;
        if !runner.can_write(&fallback)? {
            return Err(format!(
                "the postgres user can write neither {} nor {}",
                preferred.display(),
                fallback.display()
            ));
        }
        eprintln!(
            "xtask: the postgres user cannot write {}; using {} instead",
            preferred.display(),
            fallback.display()
        );
        Ok(Self::new(fallback, bins, runner))
    }

    /// The commands (argv) that stop this server (`pg_ctl stop -m <stop_mode>`, waiting) and
    /// start it again with its settings and log, for fault tests.
    pub(crate) fn control_argv(&self, stop_mode: &str) -> Result<ControlArgv, String> {
        let (data, log) = (self.data(), self.log());
        let (data, log) = (utf8(&data)?, utf8(&log)?);
        let stop = self.pg_ctl(&[
            "stop",
            "-D",
            data,
            "-m",
            stop_mode,
            "-w",
            "-t",
            PG_CTL_WAIT_SECONDS,
        ]);
        let start = self.pg_ctl(&[
            "start",
            "-w",
            "-t",
            PG_CTL_WAIT_SECONDS,
            "-D",
            data,
            "-l",
            log,
            "-p",
            &self.bins.postgres,
        ]);
        let argv = |command: &Command| -> Vec<String> {
            std::iter::once(command.get_program())
                .chain(command.get_args())
                .map(|part| part.to_string_lossy().into_owned())
                .collect()
        };
        Ok((argv(&stop), argv(&start)))
    }

    /// The data directory (`initdb -D`).
    pub(crate) fn data(&self) -> PathBuf {
        self.base.join("data")
    }

    /// The server log (`pg_ctl -l`).
    fn log(&self) -> PathBuf {
        self.base.join("log")
    }

    /// The Unix socket directory.
    fn sock(&self) -> PathBuf {
        self.base.join("sock")
    }

    /// The [`Lock`] file guarding setup, leases and shutdown.
    pub(crate) fn lock_path(&self) -> PathBuf {
        self.base.join("xtask.lock")
    }

    /// Where the [`Lease`]s of the commands using the cluster are.
    pub(crate) fn users_dir(&self) -> PathBuf {
        self.base.join("users")
    }

    /// `pg_ctl args...`, run as the right user.
    fn pg_ctl(&self, args: &[&str]) -> Command {
        self.runner.command(&self.bins.pg_ctl, args)
    }

    /// Reuses the running cluster or starts it on `port` with `extra_settings` (lines of
    /// `postgresql.conf`) added to ours, creating it first if needed, and takes a [`Lease`] on
    /// it for this command; `stop_command` is what the user runs to restart a cluster that is
    /// already running on another port. A running cluster whose server binary was replaced
    /// ([`server_binary`]) is restarted when no other command uses it, and refused otherwise.
    pub(crate) fn ensure_running_with(
        &self,
        port: u16,
        extra_settings: &str,
        stop_command: &str,
    ) -> Result<Running, String> {
        let _lock = Lock::acquire(&self.lock_path())?;
        if let Some(holder) = lease::held_alone_by(&self.users_dir())? {
            return Err(expected_saw(
                &format!(
                    "the cluster in {} free to use, not held alone by another command",
                    self.base.display()
                ),
                &format!(
                    "{holder} holding it alone (it stops and starts the cluster as it runs); run \
                     this again once it is done"
                ),
            ));
        }
        if let Some(postmaster) = self.running()? {
            match server_binary::replaced(
                &self.base,
                postmaster.pid,
                Path::new(&self.bins.postgres),
            ) {
                None => {
                    if postmaster.port != port {
                        eprintln!(
                            "xtask: note: the cluster in {} is already running on port {}; \
                             run `{stop_command}` to restart it on port {port}",
                            self.base.display(),
                            postmaster.port
                        );
                    }
                    wait_listening(postmaster.port)?;
                    return Ok(Running {
                        postmaster,
                        started: false,
                        lease: Lease::take(&self.users_dir(), &lease::this_command())?,
                    });
                }
                Some(why) => {
                    let users = lease::live_users(&self.users_dir(), None)?;
                    if !users.is_empty() {
                        return Err(expected_saw(
                            &format!(
                                "the cluster in {} running the installed server binary, or \
                                 unused so that it can be restarted",
                                self.base.display()
                            ),
                            &format!(
                                "{why}, and {} using it; run this again once they are done",
                                users.join(", ")
                            ),
                        ));
                    }
                    eprintln!(
                        "xtask: {why}; restarting the cluster in {}",
                        self.base.display()
                    );
                    self.stop()?;
                }
            }
        }
        if !self.data().join("PG_VERSION").is_file() {
            self.init()?;
        }
        let postmaster = self.start(port, extra_settings)?;
        wait_listening(postmaster.port)?;
        Ok(Running {
            postmaster,
            started: true,
            lease: Lease::take(&self.users_dir(), &lease::this_command())?,
        })
    }

    /// The running server, if any. Clears a stale `postmaster.pid` so that a
    /// server that died without cleaning up can start again.
    pub(crate) fn running(&self) -> Result<Option<Postmaster>, String> {
        let data = self.data();
        if !data.join("PG_VERSION").is_file() {
            return Ok(None);
        }
        let mut status = self.pg_ctl(&["status", "-D", utf8(&data)?]);
        let out = cmd::output(&mut status)?;
        let pid_file = data.join("postmaster.pid");
        match out.status.code() {
            Some(0) => {
                let postmaster = read_postmaster(&data).ok_or_else(|| {
                    format!(
                        "pg_ctl says PostgreSQL is running but {} is unreadable",
                        pid_file.display()
                    )
                })?;
                // pg_ctl only checks that the PID is alive; after a crash or
                // reboot it may belong to an unrelated process.
                if is_postgres_process(postmaster.pid) {
                    return Ok(Some(postmaster));
                }
                eprintln!(
                    "xtask: removing stale {} (PID {} is not PostgreSQL)",
                    pid_file.display(),
                    postmaster.pid
                );
            }
            // 3 means "not running"; a leftover pid file belongs to a dead server.
            Some(3) => {}
            _ => return Err(cmd::failure(&status, &out)),
        }
        match fs::remove_file(&pid_file) {
            Ok(()) => Ok(None),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(format!("cannot remove {}: {err}", pid_file.display())),
        }
    }

    /// Creates the cluster with `initdb`.
    fn init(&self) -> Result<(), String> {
        let data = self.data();
        // Without PG_VERSION this is the remains of an interrupted initdb.
        if data.exists() {
            fs::remove_dir_all(&data)
                .map_err(|err| format!("cannot remove incomplete {}: {err}", data.display()))?;
        }
        eprintln!("xtask: creating a PostgreSQL cluster in {}", data.display());
        let mut initdb = self.runner.command(
            &self.bins.initdb,
            &[
                "-D",
                utf8(&data)?,
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                // Independent of whatever locales the machine has installed.
                "--locale=C",
                "--no-sync",
            ],
        );
        let out = cmd::output(&mut initdb)?;
        if out.status.success() {
            Ok(())
        } else {
            Err(cmd::failure(&initdb, &out))
        }
    }

    /// Writes our settings (and `extra_settings`) and starts the server on `port`.
    fn start(&self, port: u16, extra_settings: &str) -> Result<Postmaster, String> {
        self.write_settings(port, extra_settings)?;
        ServerBinary::of(Path::new(&self.bins.postgres))?.record(&self.base)?;
        let (data, log) = (self.data(), self.log());
        eprintln!(
            "xtask: starting PostgreSQL on 127.0.0.1:{port} (log: {})",
            log.display()
        );
        let mut start = self.pg_ctl(&[
            "start",
            "-w",
            "-t",
            PG_CTL_WAIT_SECONDS,
            "-D",
            utf8(&data)?,
            "-l",
            utf8(&log)?,
            "-p",
            &self.bins.postgres,
        ]);
        let out = cmd::output(&mut start)?;
        if !out.status.success() {
            return Err(format!(
                "{}\n--- end of {} ---\n{}\n---\nIf port {port} is taken, set PAYOUT_PG_PORT to a free port; \
                 to start from scratch, delete {}.",
                cmd::failure(&start, &out),
                log.display(),
                tail(&log, 15),
                self.base.display()
            ));
        }
        read_postmaster(&data).ok_or_else(|| {
            format!(
                "PostgreSQL started but {}/postmaster.pid is unreadable",
                data.display()
            )
        })
    }

    /// Regenerates `xtask.conf` (included from `postgresql.conf`) so that the
    /// port and socket directory follow the environment and the checkout.
    fn write_settings(&self, port: u16, extra_settings: &str) -> Result<(), String> {
        let data = self.data();
        let main_conf = data.join("postgresql.conf");
        let include = "include 'xtask.conf'";
        let current = fs::read_to_string(&main_conf)
            .map_err(|err| format!("cannot read {}: {err}", main_conf.display()))?;
        if !current.lines().any(|line| line.trim() == include) {
            OpenOptions::new()
                .append(true)
                .open(&main_conf)
                .and_then(|mut file| writeln!(file, "\n# Added by cargo xtask.\n{include}"))
                .map_err(|err| format!("cannot write {}: {err}", main_conf.display()))?;
        }

        let sock = self.sock();
        create_dir(&sock)?;
        self.runner.own(&sock)?;
        let sock = utf8(&sock)?;
        // A Unix socket path must fit in 108 bytes. Clients connect over TCP,
        // so a deep checkout goes without the socket rather than fail.
        let sock = if sock.len() + "/.s.PGSQL.65535".len() < 108 {
            sock
        } else {
            ""
        };
        let settings = format!(
            "# Written by cargo xtask before every start; edit xtask/src/postgres.rs instead.\n\
             listen_addresses = '127.0.0.1'\n\
             port = {port}\n\
             unix_socket_directories = '{}'\n\
             max_connections = 300\n\
             {extra_settings}",
            sock.replace('\'', "''")
        );
        let conf = data.join("xtask.conf");
        fs::write(&conf, settings)
            .map_err(|err| format!("cannot write {}: {err}", conf.display()))?;
        self.runner.own(&conf)
    }

    /// Stops the server (`pg_ctl stop -m fast`).
    pub(crate) fn stop(&self) -> Result<(), String> {
        let mut stop = self.pg_ctl(&[
            "stop",
            "-D",
            utf8(&self.data())?,
            "-m",
            "fast",
            "-w",
            "-t",
            PG_CTL_WAIT_SECONDS,
        ]);
        let out = cmd::output(&mut stop)?;
        if out.status.success() {
            Ok(())
        } else {
            Err(cmd::failure(&stop, &out))
        }
    }
}

/// How long `pg_ctl start` and `pg_ctl stop` wait. A server stopped as a crash would stop it
/// (fault tests, a killed run) first replays its WAL since its last checkpoint when it starts,
/// up to `max_wal_size`; a server stopping writes a checkpoint first (`-m fast`), or waits for
/// its children to go (`-m immediate`, seen taking 55 s behind a busy disk). A busy 2-core
/// machine can take minutes over either.
const PG_CTL_WAIT_SECONDS: &str = "300";

/// Where the cluster lives when the postgres user cannot reach the target
/// dir (e.g. a checkout in a 0700 home directory): unique per workspace.
pub(crate) fn fallback_base() -> PathBuf {
    let root = paths::workspace_root();
    let hash = Sha256::digest(root.as_os_str().as_encoded_bytes());
    PathBuf::from(format!("/tmp/payoutd-pg-{}", hex::encode(&hash[..4])))
}

/// The port for a newly started cluster.
fn requested_port() -> Result<u16, String> {
    match env::var("PAYOUT_PG_PORT") {
        Ok(port) if !port.is_empty() => port
            .parse()
            .map_err(|_| format!("PAYOUT_PG_PORT must be a port number, got `{port}`")),
        _ => Ok(DEFAULT_PORT),
    }
}

/// Reads the PID (line 1) and port (line 4) from `postmaster.pid`.
fn read_postmaster(data: &Path) -> Option<Postmaster> {
    let text = fs::read_to_string(data.join("postmaster.pid")).ok()?;
    let lines: Vec<&str> = text.lines().collect();
    Some(Postmaster {
        pid: lines.first()?.trim().parse().ok()?,
        port: lines.get(3)?.trim().parse().ok()?,
    })
}

/// Whether `pid` is a live PostgreSQL server process.
fn is_postgres_process(pid: u32) -> bool {
    if !Path::new("/proc").is_dir() {
        return pid_alive(pid);
    }
    pid_alive(pid)
        && fs::read_to_string(format!("/proc/{pid}/comm"))
            .is_ok_and(|comm| matches!(comm.trim(), "postgres" | "postmaster"))
}

/// Whether something accepts TCP connections on `host:port`.
pub(crate) fn listening(host: &str, port: u16) -> bool {
    (host, port).to_socket_addrs().is_ok_and(|mut addrs| {
        addrs.any(|addr| TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok())
    })
}

/// Waits (briefly) until the cluster accepts TCP connections.
fn wait_listening(port: u16) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !listening("127.0.0.1", port) {
        if Instant::now() >= deadline {
            return Err(format!(
                "PostgreSQL does not accept connections on 127.0.0.1:{port}"
            ));
        }
        thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// Hides the password in a URL like `postgres://user:password@host/db`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_owned(),
    }
}

/// The last `lines` lines of a file, for error messages.
fn tail(path: &Path, lines: usize) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `mkdir -p`, with the path in the error.
pub(crate) fn create_dir(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))
}

/// `path` as text for command lines; PostgreSQL paths must be UTF-8 here.
fn utf8(path: &Path) -> Result<&str, String> {
    path.to_str()
        .ok_or_else(|| format!("path is not valid UTF-8: {}", path.display()))
}

#[cfg(test)]
mod cluster_tests;

#[cfg(test)]
mod tests {
    use super::{redact, version_key};

    #[test]
    fn versions_sort_numerically() {
        let mut versions = vec!["9.6", "15", "10", "16"];
        versions.sort_by_key(|v| version_key(v));
        assert_eq!(versions, ["9.6", "10", "15", "16"]);
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("postgres://app:s3cret@db:5432/payoutd?sslmode=require"),
            "postgres://app:***@db:5432/payoutd?sslmode=require"
        );
        assert_eq!(
            redact("postgres://postgres@127.0.0.1:25432/postgres"),
            "postgres://postgres@127.0.0.1:25432/postgres"
        );
    }
}
