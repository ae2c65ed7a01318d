//! Who is using a private cluster, so that it is stopped only once nobody is.
//!
//! Every xtask command that uses a private cluster holds a [`Lease`] on it: a file in
//! `<cluster>/users/` naming the command and the processes that keep it in use (xtask itself,
//! and the children it waits for, such as `cargo test` or `payoutd serve`, which may outlive an
//! interrupted xtask). Each process is named by its pid and its start time, so a pid the system
//! gave to an unrelated process later is not taken for the user. A lease none of whose processes
//! is alive is stale: it is ignored and removed.
//!
//! A command that starts the cluster for itself (not `cargo xtask db`, nor a run with
//! `PAYOUT_KEEP_PG=1`) marks it [`STOP_WHEN_UNUSED`]; whoever then releases the last live lease,
//! that command or a later one that joined it, stops the cluster. A command that wants the
//! cluster kept removes the mark. Taking, releasing and stopping happen under the cluster's
//! [`Lock`], so a command cannot join a cluster that another is stopping.
//!
//! A command that stops and starts the cluster itself while it runs (the fault tests of
//! `cargo xtask chaos`) holds its lease alone ([`hold_alone`]): only when nobody else uses the
//! cluster, and nobody may join it meanwhile.

use std::{
    env,
    fs::{self, OpenOptions},
    io::{self, BufRead, Write},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{self, Child, Command, Stdio},
    sync::atomic::{AtomicU32, Ordering},
    thread,
    time::{Duration, Instant},
};

use super::{Bins, Cluster, Runner};
use crate::failure::expected_saw;

/// How long to wait for another xtask that is setting up or stopping the cluster.
const LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// The line of a lease held alone ([`hold_alone`]).
const ALONE: &str = "alone";

/// The file whose presence says the cluster is to be stopped once no lease is left.
pub(crate) const STOP_WHEN_UNUSED: &str = "stop-when-unused";

/// Hidden command that runs the [`Reaper`].
pub const REAPER_COMMAND: &str = "__pg-reaper";

/// Leases taken by this process so far, for unique file names (one process may hold several,
/// one per cluster, or two in a test).
static TAKEN: AtomicU32 = AtomicU32::new(0);

/// One xtask command's use of a cluster; the file is removed on drop.
#[derive(Debug)]
pub(crate) struct Lease {
    path: PathBuf,
}

impl Lease {
    /// Takes a lease in `dir` for this process, for `command` (a description for messages).
    /// Call it under the cluster's [`Lock`].
    pub(crate) fn take(dir: &Path, command: &str) -> Result<Self, String> {
        fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        let pid = process::id();
        let n = TAKEN.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{pid}-{n}"));
        let holder = Holder::of(pid).line();
        fs::write(&path, format!("{}\n{holder}\n", one_line(command)))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        Ok(Self { path })
    }

    /// The lease file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Adds `pid` (a child xtask waits for) to the processes that keep this lease alive.
    pub(crate) fn watch(&self, pid: u32) -> Result<(), String> {
        OpenOptions::new()
            .append(true)
            .open(&self.path)
            .and_then(|mut file| writeln!(file, "{}", Holder::of(pid).line()))
            .map_err(|err| format!("cannot write {}: {err}", self.path.display()))
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// A process named in a lease: its pid and, where `/proc` tells, its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Holder {
    pid: u32,
    /// Clock ticks after boot (`/proc/<pid>/stat`, field 22).
    started: Option<u64>,
}

impl Holder {
    /// The process `pid` as it is now.
    fn of(pid: u32) -> Self {
        Self {
            pid,
            started: start_time(pid),
        }
    }

    /// `pid start-time` (`-` when unknown).
    fn line(self) -> String {
        match self.started {
            Some(started) => format!("{} {started}", self.pid),
            None => format!("{} -", self.pid),
        }
    }

    /// Reads [`Holder::line`]'s format.
    fn parse(line: &str) -> Option<Self> {
        let mut parts = line.split_whitespace();
        let pid = parts.next()?.parse().ok()?;
        let started = match parts.next()? {
            "-" => None,
            ticks => Some(ticks.parse().ok()?),
        };
        Some(Self { pid, started })
    }

    /// Whether it is still the same running process: alive, and started when it was then.
    fn alive(self) -> bool {
        pid_alive(self.pid)
            && match (self.started, start_time(self.pid)) {
                (Some(then), Some(now)) => then == now,
                _ => true,
            }
    }
}

/// What a lease file says: the command, its processes, and whether it is held alone.
#[derive(Debug, PartialEq, Eq)]
struct LeaseFile {
    command: String,
    holders: Vec<Holder>,
    alone: bool,
}

impl LeaseFile {
    fn parse(text: &str) -> Self {
        let mut lines = text.lines();
        let command = lines.next().unwrap_or_default().to_owned();
        let rest: Vec<&str> = lines.collect();
        Self {
            command,
            holders: rest.iter().copied().filter_map(Holder::parse).collect(),
            alone: rest.contains(&ALONE),
        }
    }

    /// The command and its processes, for messages.
    fn describe(&self) -> String {
        let pids: Vec<String> = self.holders.iter().map(|h| h.pid.to_string()).collect();
        format!("`{}` (pid {})", self.command, pids.join(", "))
    }

    /// Alive while any process it names is. Leases are written and read under the cluster's
    /// lock, so one without any is the remains of an interrupted write: stale.
    fn alive(&self) -> bool {
        self.holders.iter().any(|holder| holder.alive())
    }
}

/// The commands holding live leases in `dir`, except the lease at `except`; stale leases are
/// removed. Call it under the cluster's [`Lock`].
pub(crate) fn live_users(dir: &Path, except: Option<&Path>) -> Result<Vec<String>, String> {
    Ok(live_leases(dir, except)?
        .iter()
        .map(LeaseFile::describe)
        .collect())
}

/// The command holding the cluster alone, if one does (see [`hold_alone`]). Call it under the
/// cluster's [`Lock`].
pub(crate) fn held_alone_by(dir: &Path) -> Result<Option<String>, String> {
    Ok(live_leases(dir, None)?
        .iter()
        .find(|lease| lease.alone)
        .map(LeaseFile::describe))
}

/// Makes `lease` the only use of `cluster` until it is released: refused while another command
/// uses the cluster; a command that comes to use it meanwhile is refused (the cluster's
/// `ensure_running_with`). For a command that stops and starts the cluster as it runs.
pub(crate) fn hold_alone(cluster: &Cluster, lease: &Lease, why: &str) -> Result<(), String> {
    let _lock = Lock::acquire(&cluster.lock_path())?;
    let others = live_users(&cluster.users_dir(), Some(lease.path()))?;
    if !others.is_empty() {
        return Err(expected_saw(
            &format!(
                "no other xtask command using the cluster in {}, which this one {why}",
                cluster.base.display()
            ),
            &format!(
                "{} using it; run this again once they are done",
                others.join(", ")
            ),
        ));
    }
    OpenOptions::new()
        .append(true)
        .open(lease.path())
        .and_then(|mut file| writeln!(file, "{ALONE}"))
        .map_err(|err| format!("cannot write {}: {err}", lease.path().display()))
}

/// The live leases in `dir` but the one at `except`, removing stale ones.
fn live_leases(dir: &Path, except: Option<&Path>) -> Result<Vec<LeaseFile>, String> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(format!("cannot list {}: {err}", dir.display())),
    };
    let mut leases = Vec::new();
    for entry in entries {
        let path = entry
            .map_err(|err| format!("cannot list {}: {err}", dir.display()))?
            .path();
        if except == Some(path.as_path()) {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue; // removed meanwhile
        };
        let lease = LeaseFile::parse(&text);
        if lease.alive() {
            leases.push(lease);
        } else {
            let _ = fs::remove_file(&path);
        }
    }
    leases.sort_by_key(LeaseFile::describe);
    Ok(leases)
}

/// The start time of process `pid` in clock ticks after boot, if `/proc` says.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may contain anything; field 3 follows
    // the last `)`, so field 22 is the 20th after it.
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `pid` is a live process.
pub(crate) fn pid_alive(pid: u32) -> bool {
    let proc = Path::new("/proc");
    if !proc.is_dir() {
        return Command::new("kill")
            .args(["-0", &pid.to_string()])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
    }
    // A zombie has exited; its parent (possibly gone) just has not reaped it.
    fs::read_to_string(proc.join(pid.to_string()).join("stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// `text` on one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The xtask command line, for leases: `xtask test -p domain`.
pub(crate) fn this_command() -> String {
    let args: Vec<String> = env::args().skip(1).collect();
    format!("xtask {}", args.join(" "))
}

/// What releasing a lease came to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Released {
    /// The cluster was stopped: this was the last lease and the cluster was to be stopped.
    Stopped,
    /// The cluster keeps running for these other users.
    InUse(Vec<String>),
    /// Nobody uses it, but it was started to be kept (`cargo xtask db`, `PAYOUT_KEEP_PG=1`).
    Kept,
}

/// Releases `lease` on `cluster` and stops the cluster if it was the last live lease and the
/// cluster is marked [`STOP_WHEN_UNUSED`].
pub(crate) fn release(cluster: &Cluster, lease: Lease) -> Result<Released, String> {
    let _lock = Lock::acquire(&cluster.lock_path())?;
    drop(lease);
    stop_if_unused(cluster)
}

/// Stops `cluster` if no live lease is left and it is marked [`STOP_WHEN_UNUSED`]. Call it under
/// the cluster's [`Lock`].
fn stop_if_unused(cluster: &Cluster) -> Result<Released, String> {
    let users = live_users(&cluster.users_dir(), None)?;
    if !users.is_empty() {
        return Ok(Released::InUse(users));
    }
    let mark = cluster.base.join(STOP_WHEN_UNUSED);
    if !mark.is_file() {
        return Ok(Released::Kept);
    }
    if cluster.running()?.is_some() {
        cluster.stop()?;
    }
    let _ = fs::remove_file(&mark);
    Ok(Released::Stopped)
}

/// Serialises setup, leases and shutdown between concurrent xtask processes.
pub(crate) struct Lock {
    path: PathBuf,
}

impl Lock {
    /// Creates the lock file, waiting for another holder for up to a minute.
    /// A lock left behind by a process that died is taken over.
    pub(crate) fn acquire(path: &Path) -> Result<Self, String> {
        let deadline = Instant::now() + LOCK_TIMEOUT;
        let mut told = false;
        loop {
            match OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    // The PID lets a later run recognise an abandoned lock.
                    let _ = write!(file, "{}", process::id());
                    return Ok(Self {
                        path: path.to_owned(),
                    });
                }
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                    let holder = fs::read_to_string(path)
                        .ok()
                        .and_then(|pid| pid.trim().parse::<u32>().ok());
                    if holder.is_some_and(|pid| !pid_alive(pid)) {
                        let _ = fs::remove_file(path);
                        continue;
                    }
                    if Instant::now() >= deadline {
                        return Err(format!(
                            "timed out waiting for {}; if no other xtask is running, delete it",
                            path.display()
                        ));
                    }
                    if !told {
                        eprintln!("xtask: waiting for another xtask to finish with PostgreSQL...");
                        told = true;
                    }
                    thread::sleep(Duration::from_millis(200));
                }
                Err(err) => return Err(format!("cannot create {}: {err}", path.display())),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// A helper process that releases xtask's lease, and stops the cluster if it was the last,
/// when xtask exits without doing so.
///
/// Xtask cannot catch Ctrl-C without extra dependencies, so the reaper runs in its own process
/// group (out of reach of the terminal's SIGINT) and learns of xtask's death from end-of-file
/// on its stdin. It then waits until every process of the lease is gone (the children xtask
/// was waiting for, say a server still shutting down), and releases it.
pub(crate) struct Reaper {
    child: Child,
}

impl Reaper {
    /// Starts `xtask __pg-reaper` for the lease at `lease` on the cluster in `base`.
    pub(crate) fn spawn(base: &Path, lease: &Path) -> Result<Self, String> {
        let exe =
            env::current_exe().map_err(|err| format!("cannot find the xtask binary: {err}"))?;
        let mut command = Command::new(exe);
        command
            .arg(REAPER_COMMAND)
            .arg(base)
            .arg(lease)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        let child = command
            .spawn()
            .map_err(|err| format!("cannot start the PostgreSQL reaper: {err}"))?;
        Ok(Self { child })
    }

    /// Dismisses the reaper: xtask releases its lease itself.
    pub(crate) fn disarm(mut self) {
        if let Some(mut stdin) = self.child.stdin.take() {
            let _ = writeln!(stdin, "disarm");
        }
        let _ = self.child.wait();
    }
}

/// The reaper's side: `__pg-reaper <cluster dir> <lease file>`.
pub fn reap(args: &[String]) -> Result<(), String> {
    let [base, lease] = args else {
        return Err(format!(
            "usage: {REAPER_COMMAND} <cluster dir> <lease file>"
        ));
    };
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line == "disarm" {
            return Ok(());
        }
    }
    // xtask is gone; its children may not be yet.
    let lease = PathBuf::from(lease);
    while fs::read_to_string(&lease).is_ok_and(|text| LeaseFile::parse(&text).alive()) {
        thread::sleep(Duration::from_millis(200));
    }
    let cluster = Cluster::new(PathBuf::from(base), Bins::find()?, Runner::detect()?);
    release(&cluster, Lease { path: lease }).map(drop)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::process::{self, Command};

    use super::{Holder, LeaseFile, live_users, start_time};

    #[test]
    fn a_lease_lives_while_any_of_its_processes_does() {
        let me = Holder::of(process::id());
        assert!(
            me.started.is_some(),
            "/proc gives this process's start time"
        );
        assert!(me.alive());
        assert_eq!(Holder::parse(&me.line()), Some(me));
        let mut child = Command::new("true").spawn().unwrap();
        let gone = Holder::of(child.id());
        child.wait().unwrap();
        assert!(!gone.alive(), "an exited child");
        let recycled = Holder {
            started: me.started.map(|ticks| ticks + 1),
            ..me
        };
        assert!(!recycled.alive(), "the pid of a process that started later");
        let lease = LeaseFile::parse(&format!("xtask test\n{}\n{}\n", gone.line(), me.line()));
        assert_eq!(lease.command, "xtask test");
        assert!(lease.alive());
        assert!(!LeaseFile::parse(&format!("xtask serve\n{}\n", gone.line())).alive());
        assert!(!LeaseFile::parse("").alive(), "an interrupted write");
        let alone = LeaseFile::parse(&format!("xtask chaos\n{}\nalone\n", me.line()));
        assert!(alone.alone && alone.alive() && alone.holders == [me]);
    }

    #[test]
    fn stale_leases_are_removed_and_live_ones_named() {
        let dir = std::env::temp_dir().join(format!("xtask-leases-{}", process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut child = Command::new("true").spawn().unwrap();
        let gone = Holder::of(child.id());
        child.wait().unwrap();
        std::fs::write(
            dir.join("stale"),
            format!("xtask bench api\n{}\n", gone.line()),
        )
        .unwrap();
        let me = Holder::of(process::id()).line();
        std::fs::write(dir.join("live"), format!("xtask rails-demo\n{me}\n")).unwrap();
        std::fs::write(dir.join("mine"), format!("xtask test\n{me}\n")).unwrap();
        let users = live_users(&dir, Some(&dir.join("mine"))).unwrap();
        assert_eq!(
            users,
            [format!("`xtask rails-demo` (pid {})", process::id())]
        );
        assert!(!dir.join("stale").exists());
        assert!(dir.join("mine").exists());
        assert!(start_time(u32::MAX).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
