//! Printed tables and the JSON results file.

use std::path::Path;

use anyhow::Context;
use serde_json::{Value, json};

use crate::load::{LoadResult, Stats};

/// The percentiles every table and JSON file shows.
pub const QUANTILES: [(&str, f64); 4] =
    [("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999)];

/// One table row: a label and the stats behind it.
pub struct Row<'a> {
    /// First column.
    pub label: String,
    /// The figures.
    pub stats: &'a Stats,
    /// Requests per second, when the row is a whole run.
    pub throughput: Option<f64>,
}

/// Prints `rows` under a header whose first column is `first`.
pub fn print_table(first: &str, rows: &[Row<'_>]) {
    let width = rows
        .iter()
        .map(|row| row.label.len())
        .chain([first.len()])
        .max()
        .unwrap_or(8);
    let mut header = format!("{first:<width$}  {:>9}  {:>8}", "requests", "req/s");
    for (name, _) in QUANTILES {
        header.push_str(&format!("  {:>8}", format!("{name} ms")));
    }
    header.push_str(&format!("  {:>6}  {:>5}", "errors", "wrong"));
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    for row in rows {
        let throughput = row
            .throughput
            .map_or_else(|| "-".to_owned(), |rate| format!("{rate:.0}"));
        let mut line = format!(
            "{:<width$}  {:>9}  {:>8}",
            row.label,
            row.stats.requests(),
            throughput
        );
        for (_, quantile) in QUANTILES {
            line.push_str(&format!("  {:>8.3}", row.stats.millis_at(quantile)));
        }
        line.push_str(&format!(
            "  {:>6}  {:>5}",
            row.stats.errors, row.stats.wrong
        ));
        println!("{line}");
    }
}

/// The JSON of one set of stats: counts, latency percentiles (ms), mean and max.
pub fn stats_json(stats: &Stats) -> Value {
    let mut latency = serde_json::Map::new();
    for (name, quantile) in QUANTILES {
        latency.insert(format!("{name}_ms"), json!(stats.millis_at(quantile)));
    }
    latency.insert("mean_ms".to_owned(), json!(stats.histogram.mean() / 1000.0));
    latency.insert(
        "max_ms".to_owned(),
        json!(stats.histogram.max() as f64 / 1000.0),
    );
    json!({
        "requests": stats.requests(),
        "errors": stats.errors,
        "wrong": stats.wrong,
        "latency": latency,
    })
}

/// The JSON of a whole run: overall figures, throughput, statuses and each kind.
pub fn load_json(result: &LoadResult) -> Value {
    let mut value = stats_json(&result.overall);
    value["requests_per_second"] = json!(result.throughput());
    value["elapsed_s"] = json!(result.elapsed.as_secs_f64());
    value["statuses"] = result
        .statuses
        .iter()
        .map(|(status, count)| (status.to_string(), json!(count)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    value["kinds"] = result
        .per_kind
        .iter()
        .map(|(kind, stats)| ((*kind).to_owned(), stats_json(stats)))
        .collect::<serde_json::Map<_, _>>()
        .into();
    if let Some(problem) = &result.first_problem {
        value["first_problem"] = json!(problem);
    }
    value
}

/// Writes `value`, pretty-printed, to `path`.
pub fn write_json(path: &Path, value: &Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").with_context(|| format!("cannot write {}", path.display()))
}

/// The 1-minute load average (other work on the machine skews the figures).
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Facts about the machine, for the JSON file.
pub fn machine_json() -> Value {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, name)| name.trim().to_owned())
        })
        .unwrap_or_default();
    let memory_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("MemTotal:"))
                .and_then(|line| line.split_whitespace().nth(1))
                .and_then(|kib| kib.parse::<u64>().ok())
        })
        .unwrap_or_default();
    json!({
        "cores": cores,
        "cpu": cpu,
        "memory_gib": (memory_kib as f64 / 1_048_576.0 * 10.0).round() / 10.0,
    })
}
