//! Readings from `/proc`: the resident memory of a server and the CPU time that the load
//! generator, the server and PostgreSQL spend on a run.
//!
//! CPU times come from `/proc/<pid>/stat` in clock ticks (`USER_HZ`, 100 per second on Linux),
//! so a reading is good to 10 ms per process; runs of seconds make that small. PostgreSQL's
//! processes are the ones `pg_stat_activity` lists (backends and background processes alike),
//! read at the start and the end of a run.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use diesel::QueryableByName;
use diesel::sql_types::Integer;
use diesel_async::AsyncPgConnection;

/// Clock ticks per second in `/proc/<pid>/stat` (`USER_HZ`, 100 on every Linux port in use).
const TICKS_PER_SECOND: f64 = 100.0;

/// A `/proc/<pid>/status` field in KiB (`VmRSS`, `VmHWM`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Resets the process's peak resident set (`VmHWM`) to its current size (`clear_refs` mode 5,
/// Linux 4.0 and later; needs the right to write the file, e.g. being its owner or root).
/// `false` when that is not possible: `VmHWM` is then the peak since the process started.
pub fn reset_peak_rss(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Fields of `/proc/<pid>/stat` from the third (`state`) on; the command name, which may hold
/// spaces and parentheses, is skipped.
fn stat_fields(pid: &str) -> Option<Vec<u64>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // `state` is a letter; the numeric fields follow it.
    Some(
        rest.split_whitespace()
            .skip(1)
            .map(|field| field.parse().unwrap_or(0))
            .collect(),
    )
}

/// The parent of a process (field 4 of stat).
fn parent_of(pid: u32) -> Option<u32> {
    let fields = stat_fields(&pid.to_string())?;
    u32::try_from(*fields.first()?).ok()
}

/// `utime + stime` of a process, and `cutime + cstime` (children it has waited for), in ticks.
fn cpu_ticks(pid: &str) -> Option<(u64, u64)> {
    // Fields 14-17 of stat(5); this vector starts at field 4.
    let fields = stat_fields(pid)?;
    Some((
        fields.get(10)? + fields.get(11)?,
        fields.get(12)? + fields.get(13)?,
    ))
}

fn seconds(ticks: u64) -> f64 {
    ticks as f64 / TICKS_PER_SECOND
}

#[derive(QueryableByName)]
struct Pid {
    #[diesel(sql_type = Integer)]
    pid: i32,
}

/// CPU ticks of PostgreSQL's processes: each process the server lists, plus the postmaster
/// (their parent), and the ticks of the postmaster's children that have exited.
#[derive(Default)]
struct PostgresTicks {
    processes: HashMap<u32, u64>,
    exited_children: u64,
}

async fn postgres_ticks(conn: &mut AsyncPgConnection) -> PostgresTicks {
    use diesel_async::RunQueryDsl;
    let pids: Vec<Pid> = diesel::sql_query("SELECT pid FROM pg_stat_activity")
        .load(conn)
        .await
        .unwrap_or_default();
    let mut processes: HashMap<u32, u64> = pids
        .into_iter()
        .filter_map(|Pid { pid }| {
            let pid = u32::try_from(pid).ok()?;
            Some((pid, cpu_ticks(&pid.to_string())?.0))
        })
        .collect();
    // The parent of any of them (field 4 of stat) is the postmaster.
    let postmaster = processes.keys().next().and_then(|pid| parent_of(*pid));
    let mut exited_children = 0;
    if let Some(pid) = postmaster
        && let Some((own, children)) = cpu_ticks(&pid.to_string())
    {
        processes.insert(pid, own);
        exited_children = children;
    }
    PostgresTicks {
        processes,
        exited_children,
    }
}

/// The CPU time of one PostgreSQL server's processes over a run (see [`PostgresMeter::stop`]).
pub struct PostgresMeter {
    before: PostgresTicks,
}

impl PostgresMeter {
    /// Readings now of the server behind `conn`.
    pub async fn start(conn: &mut AsyncPgConnection) -> Self {
        Self {
            before: postgres_ticks(conn).await,
        }
    }

    /// CPU seconds the server's processes spent since [`PostgresMeter::start`]. A process that
    /// started meanwhile counts in full; one that ended meanwhile (a pgbench connection, a
    /// Citus connection between nodes) through the postmaster's exited children, less what it
    /// had spent before the start.
    pub async fn stop(self, conn: &mut AsyncPgConnection) -> f64 {
        let now = postgres_ticks(conn).await;
        let before = &self.before;
        let alive: u64 = now
            .processes
            .iter()
            .map(|(pid, ticks)| {
                ticks.saturating_sub(before.processes.get(pid).copied().unwrap_or(0))
            })
            .sum();
        let gone_before: u64 = before
            .processes
            .iter()
            .filter(|(pid, _)| !now.processes.contains_key(pid))
            .map(|(_, ticks)| ticks)
            .sum();
        let exited = now
            .exited_children
            .saturating_sub(before.exited_children)
            .saturating_sub(gone_before);
        seconds(alive + exited)
    }
}

/// CPU readings at the start of a run.
pub struct CpuMeter {
    started: Instant,
    own: (u64, u64),
    server: Option<(u32, u64)>,
    postgres: PostgresMeter,
}

/// CPU seconds spent during a run, by whom.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuUse {
    /// Wall time of the run.
    pub wall: Duration,
    /// The load generator: this process, plus children it waited for (pgbench).
    pub client: f64,
    /// The HTTP server under test (payoutd or the bare endpoint); 0 for pgbench.
    pub server: f64,
    /// Every PostgreSQL process.
    pub postgres: f64,
}

impl CpuUse {
    /// Adds another run's figures.
    pub fn add(&mut self, other: &CpuUse) {
        self.wall += other.wall;
        self.client += other.client;
        self.server += other.server;
        self.postgres += other.postgres;
    }

    /// Share of `cores` cores busy over the run, 0..=1.
    pub fn busy(&self, cores: usize) -> f64 {
        (self.client + self.server + self.postgres)
            / (self.wall.as_secs_f64() * cores.max(1) as f64).max(1e-9)
    }
}

impl CpuMeter {
    /// Readings now, for a run against `server` (a pid) and the PostgreSQL behind `conn`.
    pub async fn start(conn: &mut AsyncPgConnection, server: Option<u32>) -> Self {
        let postgres = PostgresMeter::start(conn).await;
        Self {
            started: Instant::now(),
            own: cpu_ticks("self").unwrap_or_default(),
            server: server.and_then(|pid| Some((pid, cpu_ticks(&pid.to_string())?.0))),
            postgres,
        }
    }

    /// What was spent since [`CpuMeter::start`], PostgreSQL's share as
    /// [`PostgresMeter::stop`] counts it. The run is taken to have ended at `ended` (the
    /// readings may be taken later, once exiting processes are reaped).
    pub async fn stop(self, conn: &mut AsyncPgConnection, ended: Instant) -> CpuUse {
        let wall = ended.saturating_duration_since(self.started);
        let own = cpu_ticks("self").unwrap_or_default();
        let server = self.server.map_or(0, |(pid, before)| {
            cpu_ticks(&pid.to_string()).map_or(0, |(now, _)| now.saturating_sub(before))
        });
        let postgres = self.postgres.stop(conn).await;
        CpuUse {
            wall,
            client: seconds(own.0.saturating_sub(self.own.0) + own.1.saturating_sub(self.own.1)),
            server: seconds(server),
            postgres,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() {
        let pid = std::process::id();
        assert!(status_kib(pid, "VmRSS").is_some_and(|kib| kib > 0));
        assert!(cpu_ticks("self").is_some());
    }
}
