//! pgbench, the database's ceiling: the SQL that payoutd runs for one request, replayed by
//! pgbench's C client over the same loopback, with nothing else in the way.
//!
//! The scripts live in `crates/bench/sql/` (each says which store code it mirrors) and are
//! compiled into the harness; a run writes them to the out dir and runs
//! `pgbench -n -M prepared -r -l -c <clients> -j <threads> -T <seconds> -D name=value... -f script@w`
//! with the output kept in a log file. `-M prepared` matches the service, whose store prepares
//! each statement once per connection. A run can also use `-M simple` (pgbench's default: each
//! statement sent as text with its values in it, parsed and planned on every call), the
//! protocol of the stack notes' baseline, for reference. `-l` logs every transaction's latency (a line each,
//! a few µs of pgbench's CPU), read back into a histogram, so that the database's own
//! percentiles stand beside payoutd's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use hdrhistogram::Histogram;

/// The pgbench binary.
#[derive(Debug, Clone)]
pub struct Pgbench {
    bin: PathBuf,
}

/// One script of a run and its figures.
#[derive(Debug, Clone, Default)]
pub struct ScriptStats {
    /// The script's name (its file stem).
    pub name: String,
    /// Transactions that ran.
    pub transactions: u64,
    /// Transactions per second (without the connection time).
    pub tps: f64,
    /// Mean latency of a transaction, ms.
    pub latency_avg_ms: f64,
}

/// The outcome of a run (or of several runs added together).
#[derive(Debug, Clone, Default)]
pub struct PgbenchResult {
    /// Transactions that ran.
    pub transactions: u64,
    /// Transactions that failed.
    pub failed: u64,
    /// Seconds the transactions took (transactions / tps), summed over added runs.
    pub busy_seconds: f64,
    /// Mean latency of a transaction, ms.
    pub latency_avg_ms: f64,
    /// Per script, in the order given.
    pub scripts: Vec<ScriptStats>,
    /// Every transaction's latency, µs (from pgbench's `-l` logs).
    pub latencies: Option<Histogram<u64>>,
}

impl PgbenchResult {
    /// Transactions per second over every added run.
    pub fn tps(&self) -> f64 {
        self.transactions as f64 / self.busy_seconds.max(1e-9)
    }

    /// The latency at `quantile` (0.99 for p99) in ms, when the transactions were logged.
    pub fn millis_at(&self, quantile: f64) -> Option<f64> {
        self.latencies
            .as_ref()
            .filter(|h| !h.is_empty())
            .map(|h| h.value_at_quantile(quantile) as f64 / 1000.0)
    }

    /// Adds another run of the same scripts (latencies weighted by transactions).
    pub fn merge(&mut self, other: &PgbenchResult) -> anyhow::Result<()> {
        match (&mut self.latencies, &other.latencies) {
            (Some(mine), Some(theirs)) => mine.add(theirs).context("adding pgbench latencies")?,
            (mine @ None, Some(theirs)) => *mine = Some(theirs.clone()),
            (_, None) => {}
        }
        let weighted = |a: f64, na: u64, b: f64, nb: u64| {
            (a * na as f64 + b * nb as f64) / (na + nb).max(1) as f64
        };
        self.latency_avg_ms = weighted(
            self.latency_avg_ms,
            self.transactions,
            other.latency_avg_ms,
            other.transactions,
        );
        if self.scripts.is_empty() {
            self.scripts = other.scripts.clone();
        } else {
            for (mine, theirs) in self.scripts.iter_mut().zip(&other.scripts) {
                let seconds = mine.transactions as f64 / mine.tps.max(1e-9)
                    + theirs.transactions as f64 / theirs.tps.max(1e-9);
                mine.latency_avg_ms = weighted(
                    mine.latency_avg_ms,
                    mine.transactions,
                    theirs.latency_avg_ms,
                    theirs.transactions,
                );
                mine.transactions += theirs.transactions;
                mine.tps = mine.transactions as f64 / seconds.max(1e-9);
            }
        }
        self.transactions += other.transactions;
        self.failed += other.failed;
        self.busy_seconds += other.busy_seconds;
        Ok(())
    }
}

/// Reads pgbench's per-transaction logs (`-l`: one file per thread, named `<prefix>.<pid>` and
/// `<prefix>.<pid>.<thread>`) into a histogram of µs, deleting them.
fn read_latency_logs(dir: &Path, prefix: &str, lag: bool) -> anyhow::Result<Histogram<u64>> {
    let mut histogram = Histogram::new_with_bounds(1, 60_000_000, 3)?;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        let ours = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('.'))
        });
        if !ours {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        add_latency_lines(&mut histogram, &text, lag)
            .with_context(|| format!("in {}", path.display()))?;
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(histogram)
}

/// Adds the latencies of a pgbench transaction log: `client_id transaction_no time script_no
/// time_epoch time_us [schedule_lag] retries`, `time` in µs (`failed` or `skipped` for
/// transactions without one, which are left out; `retries` because every run allows
/// [`MAX_TRIES`]). With `--rate` (`lag`) the schedule lag (how late the transaction started)
/// follows `time_us`, and is added: the latency then counts from when the transaction was due,
/// as pgbench's own summary counts it.
fn add_latency_lines(histogram: &mut Histogram<u64>, text: &str, lag: bool) -> anyhow::Result<()> {
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let field = fields
            .get(2)
            .with_context(|| format!("short line {line:?}"))?;
        let lag = if lag {
            fields
                .get(6)
                .and_then(|lag| lag.parse::<u64>().ok())
                .unwrap_or(0)
        } else {
            0
        };
        if let Ok(micros) = field.parse::<u64>() {
            histogram.saturating_record((micros + lag).max(1));
        }
    }
    Ok(())
}

/// The number after `prefix` on the first line that holds it.
fn number_after(text: &str, prefix: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = &line[line.find(prefix)? + prefix.len()..];
        rest.split(|c: char| c.is_whitespace() || c == ')' || c == ',')
            .find(|word| !word.is_empty())?
            .parse()
            .ok()
    })
}

/// Parses pgbench's report.
fn parse(output: &str, scripts: usize) -> anyhow::Result<PgbenchResult> {
    let transactions = number_after(output, "number of transactions actually processed:")
        .context("pgbench printed no transaction count")?;
    let tps = number_after(output, "tps =").context("pgbench printed no tps")?;
    let mut result = PgbenchResult {
        transactions: transactions as u64,
        failed: number_after(output, "number of failed transactions:").unwrap_or(0.0) as u64,
        busy_seconds: transactions / tps.max(1e-9),
        latency_avg_ms: number_after(output, "latency average =").unwrap_or(0.0),
        scripts: Vec::new(),
        latencies: None,
    };
    if scripts > 1 {
        // Sections start with "SQL script N: <path>".
        let sections: Vec<&str> = output.split("SQL script ").skip(1).collect();
        for section in sections {
            let name = section
                .lines()
                .next()
                .and_then(|line| line.split_once(": "))
                .map(|(_, path)| {
                    Path::new(path.trim())
                        .file_stem()
                        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
                })
                .unwrap_or_default();
            let count = section.lines().find_map(|line| {
                let rest = line.trim_start().strip_prefix("- ")?;
                let (count, tail) = rest.split_once(" transactions (")?;
                Some((
                    count.parse::<u64>().ok()?,
                    number_after(tail, "of total, tps =")?,
                ))
            });
            let (transactions, tps) = count.unwrap_or_default();
            result.scripts.push(ScriptStats {
                name,
                transactions,
                tps,
                latency_avg_ms: number_after(section, "- latency average =").unwrap_or(0.0),
            });
        }
    } else {
        result.scripts.push(ScriptStats {
            name: String::new(),
            transactions: result.transactions,
            tps,
            latency_avg_ms: result.latency_avg_ms,
        });
    }
    Ok(result)
}

/// How pgbench sends each statement (`-M`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Parsed and planned once per connection, then only bound and executed, as payoutd's
    /// store does.
    Prepared,
    /// The statement's text with the values in it, parsed and planned on every call.
    Simple,
}

impl Protocol {
    /// pgbench's name for it.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Prepared => "prepared",
            Protocol::Simple => "simple",
        }
    }

    /// A `-D` value as this protocol needs it. With `simple`, pgbench pastes a variable's text
    /// into the statement, so a value that is not a number becomes a quoted SQL literal; with
    /// `prepared` it is a bound parameter and stays as it is.
    pub fn variable(self, value: &str) -> String {
        match self {
            Protocol::Simple if value.parse::<i64>().is_err() => {
                format!("'{}'", value.replace('\'', "''"))
            }
            _ => value.to_owned(),
        }
    }
}

/// How many times pgbench runs a transaction that PostgreSQL rolled back to break a deadlock
/// (or a serialization failure) before counting it failed (`--max-tries`): three, as payoutd
/// runs a single payout's transaction again up to three times in all. Without retries, a
/// script whose clients deadlock now and then (sets of 100 payouts, say) loses each such
/// transaction and waits out the deadlock timeout, and its rate no longer says what the
/// database can do.
const MAX_TRIES: u32 = 3;

/// How to run pgbench once.
pub struct PgbenchRun<'a> {
    /// Database URL.
    pub url: &'a str,
    /// Scripts (paths) and their weights.
    pub scripts: &'a [(PathBuf, u32)],
    /// Connections, each running transactions back to back.
    pub clients: usize,
    /// pgbench threads.
    pub threads: usize,
    /// How long.
    pub duration: Duration,
    /// Variables (`-D name=value`).
    pub vars: &'a [(String, String)],
    /// Where pgbench's report goes.
    pub log: &'a Path,
    /// Open loop (`--rate`): transactions due at this many per second, latency counted from
    /// when each was due. `None`: each client runs transactions back to back.
    pub rate: Option<f64>,
    /// `-M`.
    pub protocol: Protocol,
}

impl Pgbench {
    /// `bin` when it runs (`pgbench --version`), else `None`.
    pub fn find(bin: &Path) -> Option<Self> {
        let works = Command::new(bin)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success());
        works.then(|| Self {
            bin: bin.to_path_buf(),
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.bin
    }

    /// Runs pgbench and parses its report (also written to `run.log`).
    pub async fn run(&self, run: &PgbenchRun<'_>) -> anyhow::Result<PgbenchResult> {
        let mut command = Command::new(&self.bin);
        let log_dir = run.log.parent().unwrap_or(Path::new("."));
        let log_prefix = format!(
            "{}-tx",
            run.log
                .file_stem()
                .map_or_else(|| "pgbench".into(), |s| s.to_string_lossy())
        );
        command.args(["-n", "-M", run.protocol.name(), "-r", "-l"]);
        command.arg(format!("--max-tries={MAX_TRIES}"));
        command.arg("--log-prefix").arg(log_dir.join(&log_prefix));
        command
            .arg("-c")
            .arg(run.clients.to_string())
            .arg("-j")
            .arg(run.threads.clamp(1, run.clients.max(1)).to_string())
            .arg("-T")
            .arg(run.duration.as_secs().max(1).to_string());
        if let Some(rate) = run.rate.filter(|rate| *rate > 0.0) {
            command.arg("--rate").arg(format!("{rate:.1}"));
        }
        for (name, value) in run.vars {
            command
                .arg("-D")
                .arg(format!("{name}={}", run.protocol.variable(value)));
        }
        for (script, weight) in run.scripts {
            command
                .arg("-f")
                .arg(format!("{}@{weight}", script.display()));
        }
        command.arg(run.url);
        let out = tokio::task::spawn_blocking(move || command.output())
            .await?
            .context("cannot run pgbench")?;
        let report = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::write(run.log, &report)
            .with_context(|| format!("cannot write {}", run.log.display()))?;
        anyhow::ensure!(
            out.status.success(),
            "pgbench failed ({}); see {}:\n{}",
            out.status,
            run.log.display(),
            report.lines().rev().take(5).collect::<Vec<_>>().join("\n")
        );
        let mut result = parse(&report, run.scripts.len())?;
        result.latencies = Some(read_latency_logs(
            log_dir,
            &log_prefix,
            run.rate.is_some_and(|rate| rate > 0.0),
        )?);
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_protocol_variables_are_sql_literals_and_prepared_ones_stay_raw() {
        let sub = "771b3bea-f0aa-469e-8136-cda5de320ec0";
        assert_eq!(Protocol::Simple.variable(sub), format!("'{sub}'"));
        assert_eq!(Protocol::Simple.variable("o'brien"), "'o''brien'");
        assert_eq!(Protocol::Simple.variable("10000"), "10000");
        assert_eq!(Protocol::Prepared.variable(sub), sub);
        assert_eq!(Protocol::Prepared.variable("o'brien"), "o'brien");
    }

    const TWO_SCRIPTS: &str = "\
number of transactions actually processed: 28917
number of failed transactions: 0 (0.000%)
latency average = 0.068 ms
initial connection time = 21.011 ms
tps = 29405.992245 (without initial connection time)
SQL script 1: /tmp/list_first.sql
 - weight: 1 (targets 50.0% of total)
 - 14534 transactions (50.3% of total, tps = 14779.772843)
 - number of failed transactions: 0 (0.000%)
 - latency average = 0.038 ms
 - latency stddev = 0.347 ms
SQL script 2: /tmp/list_after.sql
 - weight: 1 (targets 50.0% of total)
 - 14377 transactions (49.7% of total, tps = 14620.117941)
 - number of failed transactions: 0 (0.000%)
 - latency average = 0.041 ms
";

    #[test]
    fn parses_the_report() -> anyhow::Result<()> {
        let result = parse(TWO_SCRIPTS, 2)?;
        assert_eq!(result.transactions, 28917);
        assert!((result.tps() - 29405.99).abs() < 0.1);
        assert_eq!(result.scripts.len(), 2);
        assert_eq!(result.scripts[1].name, "list_after");
        assert_eq!(result.scripts[1].transactions, 14377);
        assert!((result.scripts[0].latency_avg_ms - 0.038).abs() < 1e-9);
        let mut total = result.clone();
        total.merge(&result)?;
        assert_eq!(total.transactions, 2 * 28917);
        assert!((total.tps() - 29405.99).abs() < 0.1);
        assert!((total.scripts[0].tps - 14779.77).abs() < 0.1);
        Ok(())
    }

    #[test]
    fn reads_transaction_latencies_and_merges_them() -> anyhow::Result<()> {
        let mut histogram = Histogram::new_with_bounds(1, 60_000_000, 3)?;
        // Two scripts, one failed transaction (no latency), each line ending with its retries,
        // which are not a latency: 1.5 ms retried once is 1.5 ms.
        add_latency_lines(
            &mut histogram,
            "0 0 1500 0 1732200000 12 1\n1 0 2500 1 1732200000 15 0\n\n             2 0 failed 0 1732200000 20 2\n",
            false,
        )?;
        // With `--rate`, a lag column before the retries, which counts: 40 ms of transaction
        // 2 ms late is 42 ms from when it was due.
        add_latency_lines(&mut histogram, "3 0 40000 0 1732200001 1 2000 0\n", true)?;
        assert_eq!(histogram.len(), 3);
        assert!((histogram.value_at_quantile(0.0) as f64 - 1500.0).abs() < 2.0);
        let mut result = parse(TWO_SCRIPTS, 2)?;
        result.latencies = Some(histogram);
        assert!((result.millis_at(0.5).unwrap_or(0.0) - 2.5).abs() < 0.01);
        assert!((result.millis_at(1.0).unwrap_or(0.0) - 42.0).abs() < 0.05);
        let mut total = result.clone();
        total.merge(&result)?;
        assert_eq!(total.latencies.map(|h| h.len()), Some(6));
        assert!(add_latency_lines(&mut Histogram::new(3)?, "0 1\n", false).is_err());
        Ok(())
    }

    #[test]
    fn reads_only_its_own_log_files_and_removes_them() -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!("pgbench-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("case-1-tx.4242"), "0 0 1000 0 1 1 0\n")?;
        std::fs::write(dir.join("case-1-tx.4242.1"), "1 0 3000 0 1 1 0\n")?;
        std::fs::write(dir.join("case-1-txt.4242"), "0 0 9000000 0 1 1 0\n")?;
        std::fs::write(dir.join("case-1.log"), "report")?;
        let histogram = read_latency_logs(&dir, "case-1-tx", false)?;
        assert_eq!(histogram.len(), 2);
        let mut left: Vec<String> = std::fs::read_dir(&dir)?
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<_, _>>()?;
        left.sort();
        assert_eq!(left, ["case-1-txt.4242", "case-1.log"]);
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
