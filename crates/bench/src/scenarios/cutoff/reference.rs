//! The references: what the database can do for each step's rows. The scripts in
//! `crates/bench/sql/cutoff_*.sql` write the rows payoutd writes for each step, in set
//! statements; psql runs them one after the other in one transaction on the bench database,
//! before the cut-off, and rolls it back, timing each statement (`\timing`). A step's reference
//! is the sum of its script's statements.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context;

/// The scripts, in the order they run: each starts from the state the previous one left.
pub const SCRIPTS: [(&str, &str); 8] = [
    (
        "cutoff_generated",
        include_str!("../../../sql/cutoff_generated.sql"),
    ),
    (
        "cutoff_in_progress",
        include_str!("../../../sql/cutoff_in_progress.sql"),
    ),
    (
        "cutoff_rejected",
        include_str!("../../../sql/cutoff_rejected.sql"),
    ),
    (
        "cutoff_settled",
        include_str!("../../../sql/cutoff_settled.sql"),
    ),
    (
        "cutoff_settled_report",
        include_str!("../../../sql/cutoff_settled_report.sql"),
    ),
    (
        "cutoff_returned",
        include_str!("../../../sql/cutoff_returned.sql"),
    ),
    (
        "cutoff_accounts_failed",
        include_str!("../../../sql/cutoff_accounts_failed.sql"),
    ),
    (
        "cutoff_delivered",
        include_str!("../../../sql/cutoff_delivered.sql"),
    ),
];

/// Each script's time in ms (the sum of its statements'), in [`SCRIPTS`] order; `None` for a
/// script that was not run.
#[derive(Debug, Clone, Default)]
pub struct ReferenceTimes {
    pub ms: [Option<f64>; SCRIPTS.len()],
}

impl ReferenceTimes {
    /// The time of script `name`.
    pub fn of(&self, name: &str) -> Option<f64> {
        SCRIPTS
            .iter()
            .position(|(script, _)| *script == name)
            .and_then(|i| self.ms[i])
    }
}

/// Writes the scripts to `dir`; their paths, in [`SCRIPTS`] order.
pub fn write_scripts(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    SCRIPTS
        .iter()
        .map(|(name, text)| {
            let path = dir.join(format!("{name}.sql"));
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

/// What the scripts are told.
pub struct Variables<'a> {
    /// The batches the cut-off closes.
    pub batches: &'a [String],
    /// Every subaccount of the run.
    pub subaccounts: &'a [String],
    /// The method's route.
    pub method: &'a str,
    /// Bytes of a payment's line in the reports that settle it (`cutoff_settled_report.sql`).
    pub report_line_bytes: usize,
}

/// Runs `scripts` (in order; `skip` names scripts left out, e.g. the returns on a rail without
/// them) with psql in one transaction on `url`, rolled back; psql's output goes to `log`.
pub async fn run(
    psql: &Path,
    url: &str,
    scripts: &[PathBuf],
    skip: &[&str],
    vars: &Variables<'_>,
    log: &Path,
) -> anyhow::Result<ReferenceTimes> {
    let mut command = Command::new(psql);
    command
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1"])
        .arg("-v")
        .arg(format!("batches={{{}}}", vars.batches.join(",")))
        .arg("-v")
        .arg(format!("subaccounts={{{}}}", vars.subaccounts.join(",")))
        .arg("-v")
        .arg(format!("method={}", vars.method))
        .arg("-v")
        .arg(format!("report_line_bytes={}", vars.report_line_bytes))
        .args(["-c", "\\timing on", "-c", "BEGIN"]);
    for ((name, _), path) in SCRIPTS.iter().zip(scripts) {
        if skip.contains(name) {
            continue;
        }
        command
            .arg("-c")
            .arg(format!("\\echo @script {name}"))
            .arg("-f")
            .arg(path);
    }
    command
        .args(["-c", "\\echo @end", "-c", "ROLLBACK"])
        .arg(url);
    let out = tokio::task::spawn_blocking(move || command.output())
        .await?
        .with_context(|| format!("cannot run {}", psql.display()))?;
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(log, &report).with_context(|| format!("cannot write {}", log.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "the reference scripts failed ({}); see {}:\n{}",
        out.status,
        log.display(),
        report.lines().rev().take(5).collect::<Vec<_>>().join("\n")
    );
    parse(&report)
}

/// Sums psql's `Time: <ms> ms` lines under each `@script <name>` line.
fn parse(report: &str) -> anyhow::Result<ReferenceTimes> {
    let mut times = ReferenceTimes::default();
    let mut current: Option<usize> = None;
    for line in report.lines() {
        if line == "@end" {
            current = None;
        } else if let Some(name) = line.strip_prefix("@script ") {
            current = SCRIPTS
                .iter()
                .position(|(script, _)| *script == name.trim());
            if let Some(i) = current {
                times.ms[i] = Some(0.0);
            }
        } else if let Some(rest) = line.strip_prefix("Time: ")
            && let Some(i) = current
        {
            let ms: f64 = rest
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .with_context(|| format!("psql printed {line:?}"))?;
            times.ms[i] = Some(times.ms[i].unwrap_or(0.0) + ms);
        }
    }
    Ok(times)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_summed_per_script() {
        let report = "Timing is on.\nTime: 0.3 ms\n@script cutoff_generated\nTime: 12.5 ms\n\
                      Time: 1.5 ms\n@script cutoff_in_progress\nTime: 3.25 ms (00:00.003)\n\
                      @end\nTime: 0.2 ms\n";
        let times = parse(report).unwrap_or_default();
        assert_eq!(times.of("cutoff_generated"), Some(14.0));
        assert_eq!(times.of("cutoff_in_progress"), Some(3.25));
        assert_eq!(times.of("cutoff_settled"), None);
        assert!(parse("@script cutoff_settled\nTime: x ms\n").is_err());
    }
}
