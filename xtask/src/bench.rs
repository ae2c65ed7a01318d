//! `cargo xtask bench <scenario> [flags]`: benchmarks of payoutd against a real PostgreSQL.
//!
//! Provisions PostgreSQL the way `cargo xtask test` does (stopping a cluster it started unless
//! `PAYOUT_KEEP_PG=1`), builds `payoutd` and the `payoutd-bench` harness in release mode
//! (`--smoke`: debug, tiny sizes, for CI), and runs the harness with the server URL, the payoutd
//! binary and `<target dir>/bench` for results. Scenario flags are passed through.
//!
//! `chaos --citus` runs the fault tests against the local Citus cluster instead, started as
//! `cargo xtask citus` starts it (and left running): the crash check on distributed tables and
//! one worker stopped and started again during a load. `cargo xtask bench api --citus` also
//! starts that cluster (leaving it running; `cargo xtask citus-stop` stops it) and has the
//! harness run the cases on plain PostgreSQL and then on Citus, printing Citus' overhead and
//! per-node costs ([`CITUS_SMOKE_FLAGS`] are added to the smoke sizes).
//!
//! Scenarios live in `crates/bench` (`payoutd-bench <scenario> --help`); adding one there and
//! to [`SCENARIOS`] is all xtask needs.

use std::env;

use crate::{
    citus, cmd,
    failure::Failure,
    paths,
    postgres::{Postgres, find_client},
};

/// The switch that runs `chaos` against the local Citus cluster, and `api` on it too.
const CITUS_FLAG: &str = "--citus";

/// What `--smoke` adds to `api --citus`, after the smoke sizes: post-payout at one concurrency
/// (replacing the smoke sizes' list, which would otherwise be extended), no warm-up (it only
/// sizes the bare endpoint's answer, which this mode leaves out) and few shards, so that placing
/// the tables and both runs take under two minutes.
const CITUS_SMOKE_FLAGS: &[&str] = &[
    "--payout-clients",
    "4",
    "--warmup-seconds",
    "0",
    "--citus-shards",
    "4",
];

/// Scenarios, with the flags `--smoke` adds to each.
const SCENARIOS: &[(&str, &[&str])] = &[
    (
        "verify",
        &[
            "--accounts-small",
            "200",
            "--accounts-large",
            "2000",
            "--requests",
            "200",
            "--warmup",
            "40",
            "--advisory-ratio",
        ],
    ),
    (
        "delivery",
        &[
            "--events",
            "500",
            "--rate",
            "100",
            "--duration",
            "2",
            "--advisory",
        ],
    ),
    (
        "api",
        &[
            "--receivers",
            "200",
            "--payouts",
            "1000",
            "--page-size",
            "10",
            "--clients",
            "4",
            "--payout-clients",
            "4,8",
            "--seconds",
            "1",
            "--rounds",
            "1",
            "--warmup-seconds",
            "1",
            "--advisory",
        ],
    ),
    (
        "cutoff",
        &[
            "--payouts",
            "200",
            "--payouts-small",
            "0",
            "--subaccounts",
            "2",
            "--advisory",
        ],
    ),
    (
        "chaos",
        &[
            "--clients",
            "4",
            "--kill-after-ms",
            "700",
            "--outage-ms",
            "1500",
            "--payouts",
            "40",
            "--replays",
            "10",
            "--cutoff-payouts",
            "2000",
        ],
    ),
];

/// Flags of each scenario that take a value, and switches, that xtask accepts.
const VALUE_FLAGS: &[&str] = &[
    "--accounts-small",
    "--accounts-large",
    "--requests",
    "--concurrency",
    "--rounds",
    "--warmup",
    "--max-ratio",
    "--events",
    "--rate",
    "--duration",
    "--min-throughput",
    "--max-latency-ms",
    "--cases",
    "--clients",
    "--payout-clients",
    "--receivers",
    "--payouts",
    "--page-size",
    "--seconds",
    "--warmup-seconds",
    "--pgbench-threads",
    "--kill-after-ms",
    "--outage-ms",
    "--replays",
    "--citus-shards",
    "--payouts-small",
    "--subaccounts",
    "--rails",
    "--max-rss-ratio",
    "--step-timeout-secs",
    "--cutoff-payouts",
];
const SWITCHES: &[&str] = &[
    "--explain",
    "--previous-key",
    "--keep-databases",
    "--advisory-ratio",
    "--advisory",
];

/// Runs `cargo xtask bench ARGS...`.
pub fn run(mut args: Vec<String>) -> Result<(), Failure> {
    if args.is_empty() || matches!(args[0].as_str(), "help" | "--help" | "-h") {
        print_usage();
        return Ok(());
    }
    let scenario = args.remove(0);
    let Some((_, smoke_flags)) = SCENARIOS.iter().find(|(name, _)| *name == scenario) else {
        return Err(Failure::new(
            "a scenario `cargo xtask bench help` lists",
            format!("`{scenario}`"),
        ));
    };
    let smoke = take_switch(&mut args, "--smoke");
    let on_citus = take_switch(&mut args, CITUS_FLAG);
    if on_citus && !matches!(scenario.as_str(), "chaos" | "api" | "cutoff") {
        return Err(Failure::new(
            format!("{CITUS_FLAG} only with `chaos`, `api` or `cutoff`"),
            format!("{CITUS_FLAG} with `{scenario}`"),
        ));
    }
    let transport = take_value(&mut args, "--transport")?
        .map(|raw| crate::bank::Transport::parse(&raw))
        .transpose()?;
    if transport.is_some() && scenario != "cutoff" {
        return Err(Failure::new(
            "--transport only with `cutoff`",
            format!("--transport with `{scenario}`"),
        ));
    }
    check_flags(&args)?;
    if on_citus && scenario == "chaos" {
        return run_chaos_on_citus(smoke, smoke_flags, &args);
    }
    // The cluster first: it fails fast when Citus is missing, before the long build.
    let citus = if on_citus {
        let citus = citus::start()?;
        eprintln!("xtask: the Citus cluster stays running; `cargo xtask citus-stop` stops it");
        Some(citus)
    } else {
        None
    };

    let mut pg = Postgres::provision()?;
    let keep = env::var("PAYOUT_KEEP_PG").is_ok_and(|keep| keep == "1");
    if keep {
        pg.keep_running();
    } else {
        pg.stop_on_exit();
    }
    eprintln!("xtask: benchmarking against {}", pg.describe());
    let mut harness_args = Vec::new();
    if scenario == "chaos"
        && let Some((stop, start)) = pg.control_argv()?
    {
        harness_args.extend([
            "--pg-stop".to_owned(),
            json_array(&stop),
            "--pg-start".to_owned(),
            json_array(&start),
        ]);
    }
    // The SFTP bank (sshd on loopback) lives until the harness is done: the cutoff bench's with
    // `--transport sftp`, and the chaos checks' at the cut-off.
    let mut _sftp_bank = None;
    if scenario == "cutoff" {
        harness_args.extend(cutoff_tools()?);
    }
    if scenario == "chaos" {
        harness_args.extend(faketime_tool()?);
    }
    if (scenario == "cutoff" && transport == Some(crate::bank::Transport::Sftp))
        || scenario == "chaos"
    {
        let bank = crate::bank::Bank::start(
            &paths::target_dir()
                .join("bench")
                .join(format!("{scenario}-sftp-bank")),
            None,
        )?;
        eprintln!(
            "xtask: the {scenario} run sends its files over SFTP to sshd on 127.0.0.1:{}",
            bank.port
        );
        harness_args.extend(["--sftp-bank".to_owned(), bank.describe().to_string()]);
        _sftp_bank = Some(bank);
    }
    let mut smoke_sizes: Vec<&str> = smoke_flags.to_vec();
    if let Some(citus) = &citus {
        harness_args.extend(["--citus-url".to_owned(), citus.maintenance_url()]);
        if scenario == "api" {
            smoke_sizes = without_flags(smoke_flags, CITUS_SMOKE_FLAGS);
            smoke_sizes.extend(CITUS_SMOKE_FLAGS);
        }
    }
    let url = pg.url.clone();
    let result = build_and_run(
        &scenario,
        &url,
        &harness_args,
        smoke.then_some(smoke_sizes.as_slice()),
        &args,
        |pid| pg.watch(pid),
    );
    if keep && pg.started_here() {
        eprintln!(
            "xtask: leaving PostgreSQL running (PAYOUT_KEEP_PG=1); `cargo xtask db-stop` stops it"
        );
    }
    pg.shutdown();
    result
}

/// What the cutoff scenario runs besides payoutd: psql for its reference scripts, and on a
/// weekend libfaketime (installed when missing and root), under which payoutd runs on the last
/// weekday's date, as bank file rails settle on weekdays only.
fn cutoff_tools() -> Result<Vec<String>, Failure> {
    let mut args = Vec::new();
    let psql = find_client("psql").ok_or_else(|| {
        Failure::new(
            "psql (PostgreSQL's client), which runs the cutoff references",
            "none on PATH or in /usr/lib/postgresql/*/bin",
        )
    })?;
    args.extend(["--psql".to_owned(), psql.display().to_string()]);
    args.extend(faketime_tool()?);
    Ok(args)
}

/// On a weekend, `--faketime` and libfaketime (installed when missing and root): bank file
/// rails settle on weekdays only, so the cut-off's payoutd runs on the last weekday's date.
fn faketime_tool() -> Result<Vec<String>, Failure> {
    let mut args = Vec::new();
    let weekend = crate::clock::days_back_to_weekdays(
        chrono::Utc::now(),
        std::time::Duration::from_secs(3600),
    ) > 0;
    if weekend {
        let library = crate::tools::ensure_debian_file(
            &[
                "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
                "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
                "/usr/lib/faketime/libfaketime.so.1",
            ],
            "libfaketime",
        )?;
        args.extend(["--faketime".to_owned(), library.display().to_string()]);
    }
    Ok(args)
}

/// `cargo xtask chaos --citus`: starts the Citus cluster as `cargo xtask citus` does (leaving it
/// running for the next run; `cargo xtask citus-stop` stops it) and runs the chaos scenario
/// against its coordinator, handing it the commands that stop and start the last worker.
fn run_chaos_on_citus(smoke: bool, smoke_flags: &[&str], args: &[String]) -> Result<(), Failure> {
    let citus = citus::start()?;
    let url = citus.maintenance_url();
    let worker = citus.last_worker_control()?;
    eprintln!(
        "xtask: chaos against the Citus cluster at {url}, stopping the worker on port {} \
         (the cluster stays up afterwards; `cargo xtask citus-stop` stops it)",
        worker.port
    );
    let harness_args = [
        CITUS_FLAG.to_owned(),
        "--worker-stop".to_owned(),
        json_array(&worker.stop),
        "--worker-start".to_owned(),
        json_array(&worker.start),
        "--worker-port".to_owned(),
        worker.port.to_string(),
    ];
    build_and_run(
        "chaos",
        &url,
        &harness_args,
        smoke.then_some(smoke_flags),
        args,
        |_| {},
    )
}

/// Builds payoutd and the harness (release, or debug for a smoke run, which gives `smoke_flags`)
/// and runs `payoutd-bench <scenario>` against `server_url` with `harness_args`, then the
/// smoke flags, then the user's `args` (which win); `watch` is told the harness's pid.
fn build_and_run(
    scenario: &str,
    server_url: &str,
    harness_args: &[String],
    smoke_flags: Option<&[&str]>,
    args: &[String],
    watch: impl FnOnce(u32),
) -> Result<(), Failure> {
    let smoke = smoke_flags.is_some();
    let profile = if smoke { "debug" } else { "release" };
    let build = if smoke {
        paths::DEBUG_BUILD.as_slice()
    } else {
        paths::RELEASE_BUILD.as_slice()
    };
    cmd::run(paths::cargo().args(build))?;
    let bin_dir = paths::target_dir().join(profile);
    let out_dir = paths::target_dir().join("bench");
    let mut bench = std::process::Command::new(bin_dir.join("payoutd-bench"));
    bench
        .arg(scenario)
        .arg("--database-url")
        .arg(server_url)
        .arg("--payoutd")
        .arg(bin_dir.join("payoutd"))
        .arg("--out-dir")
        .arg(&out_dir)
        .current_dir(paths::workspace_root());
    if let Some(pgbench) = find_client("pgbench") {
        bench.arg("--pgbench").arg(pgbench);
    }
    bench.args(harness_args);
    if let Some(smoke_flags) = smoke_flags {
        // Smoke sizes first: flags given on the command line come later and win.
        bench.args(smoke_flags);
    }
    bench.args(args);
    let mut child = bench
        .spawn()
        .map_err(|err| format!("cannot run `{}`: {err}", cmd::display(&bench)))?;
    watch(child.id());
    let status = child
        .wait()
        .map_err(|err| format!("waiting for payoutd-bench: {err}"))?;
    Failure::check_exit(
        format!("payoutd-bench {scenario} to pass (its verdicts are above)"),
        &bench,
        status,
    )
}

/// `flags` (names each followed by its value, or switches) without the flags `replaced` names
/// (its values are skipped): a list flag given twice extends the list rather than replace it.
fn without_flags<'a>(flags: &[&'a str], replaced: &[&str]) -> Vec<&'a str> {
    let names: Vec<&str> = replaced
        .iter()
        .copied()
        .filter(|flag| flag.starts_with("--"))
        .collect();
    let mut kept = Vec::with_capacity(flags.len());
    let mut rest = flags.iter().copied().peekable();
    while let Some(flag) = rest.next() {
        if names.contains(&flag) {
            // Skip its value too, unless the next item is another flag.
            if rest.peek().is_some_and(|next| !next.starts_with("--")) {
                rest.next();
            }
        } else {
            kept.push(flag);
        }
    }
    kept
}

/// `parts` as a JSON array of strings.
fn json_array(parts: &[String]) -> String {
    let quoted: Vec<String> = parts
        .iter()
        .map(|part| {
            let mut out = String::from("\"");
            for c in part.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        })
        .collect();
    format!("[{}]", quoted.join(","))
}

/// Removes the switch `name` from `args`, reporting whether it was there.
/// Removes `name VALUE` or `name=VALUE` from `args`; the value (the last one given).
fn take_value(args: &mut Vec<String>, name: &str) -> Result<Option<String>, String> {
    let mut value = None;
    let mut kept = Vec::with_capacity(args.len());
    let mut rest = std::mem::take(args).into_iter();
    while let Some(arg) = rest.next() {
        if arg == name {
            value = Some(rest.next().ok_or_else(|| format!("{name} needs a value"))?);
        } else if let Some(given) = arg
            .strip_prefix(name)
            .and_then(|tail| tail.strip_prefix('='))
        {
            value = Some(given.to_owned());
        } else {
            kept.push(arg);
        }
    }
    *args = kept;
    Ok(value)
}

fn take_switch(args: &mut Vec<String>, name: &str) -> bool {
    let before = args.len();
    args.retain(|arg| arg != name);
    args.len() != before
}

/// Accepts only known flags (with a value where one is needed), so a typo fails before the
/// long build instead of after it.
fn check_flags(args: &[String]) -> Result<(), String> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let name = arg.split_once('=').map_or(arg.as_str(), |(name, _)| name);
        if VALUE_FLAGS.contains(&name) {
            if !arg.contains('=') && rest.next().is_none() {
                return Err(format!("{name} needs a value"));
            }
        } else if !SWITCHES.contains(&arg.as_str()) {
            return Err(format!(
                "unexpected argument `{arg}`; see `cargo xtask bench help`"
            ));
        }
    }
    Ok(())
}

fn print_usage() {
    print!(
        "\
Usage: cargo xtask bench <scenario> [--smoke] [flags]

Scenarios:
  verify   POST /api/receiver-account/verify latency with a small and a large
           number of accounts in one subaccount; PASS when
           p50(large) / p50(small) <= --max-ratio
             --accounts-small N   (default 10000)
             --accounts-large N   (default 1000000)
             --requests N         measured requests per size (default 20000)
             --concurrency N      requests in flight (default 4)
             --rounds N           alternating rounds per size (default 4)
             --warmup N           unmeasured requests per size first
             --max-ratio R        (default 1.5)
             --explain            print EXPLAIN ANALYZE of each query kind, as
                                  the account store runs it (its statements, binds)
             --previous-key       serve with a second (previous) master key, as
                                  during a rotation: one lookup per key
             --keep-databases     keep payoutd_bench_<N> for inspection
  delivery webhook delivery to a receiver in the harness: throughput draining
           a backlog, and commit-to-delivery latency at a steady insert rate;
           PASS when events/s >= --min-throughput and p50, p99 <= --max-latency-ms
             --events N           backlog delivered for throughput (default 20000)
             --rate R             events/s inserted for latency (default 300)
             --duration S         seconds of steady inserts (default 20)
             --min-throughput R   (default 1000)
             --max-latency-ms MS  limit of p50 and p99 (default 500)
             --advisory           report the verdicts without failing on them
             --keep-databases     keep payoutd_bench_delivery for inspection
  api      GET/POST receiver, GET/POST payout and list pages 1 vs last, each
           against pgbench running the same SQL (crates/bench/sql) and a bare
           actix-web endpoint, with payoutd's peak RSS; PASS when the issue's
           targets hold (ratios, p99, page cost, RSS)
             --cases LIST         get-receiver,get-payout,list,post-receiver,post-payout
             --clients N          requests in flight (default 16)
             --payout-clients L   concurrencies of post-payout (default 16,64)
             --receivers N        seeded receivers (default 10000)
             --payouts N          seeded payouts (default 100000)
             --page-size N        list limit (default 100: the last page is 1000)
             --seconds S          measured seconds per system and case (default 10)
             --rounds N           alternating rounds (default 2)
             --warmup-seconds S   unmeasured load first (default 2)
             --pgbench-threads N  pgbench -j (default 2)
             --advisory           report the verdicts without failing on them
             --keep-databases     keep payoutd_bench_api for inspection
             --citus              also start the local Citus cluster (as `cargo xtask
                                  citus`, $PAYOUT_CITUS_PORT) and run the cases on plain
                                  PostgreSQL, then on Citus: prints payoutd Citus / plain
                                  (throughput, p50, p99), pgbench through the coordinator,
                                  and CPU per request of payoutd, the coordinator and each
                                  worker with the shard queries routed per request. No
                                  verdicts: one machine cannot show scale-out (every node
                                  shares its cores). With --smoke: about two minutes.
             --citus-shards N     shards per distributed table (default 32)

  cutoff   one cut-off of many payouts per production rail (release build,
           production mode, the bank's drop as local directories; cad/digital to
           the local Interac partner): payoutd's time and peak RSS from the
           cut-off to every file stored, to every file at the drop (or batch
           request accepted), to every payout in_progress; settlement (on
           cad/digital the partner's final reports, a tenth rejected); a return
           file of a tenth of the payouts to every return applied; every event
           delivered.
           Each step against SQL doing the same rows (crates/bench/sql/cutoff_*.sql,
           psql); PASS when every step <= --max-ratio x its reference, peak RSS at
           --payouts <= --max-rss-ratio x at --payouts-small, and nothing is lost
           (check-ledger clean, every payout in exactly one file)
             --payouts N          payouts waiting for the cut-off (default 100000)
             --payouts-small N    the smaller size for the RSS ratio (default 10000;
                                  0 runs --payouts only)
             --subaccounts N      subaccounts sharing them (default 4)
             --rails LIST         routes (default the five file rails and cad/digital)
             --transport T        directory (default) or sftp: the bank's drop served
                                  by a real sshd on loopback (as `cargo xtask bank`)
             --max-ratio R        (default 2)
             --max-rss-ratio R    (default 2)
             --step-timeout-secs S  a step not done by then fails (default 1800)
             --advisory           report the verdicts without failing on them
             --keep-databases     keep payoutd_bench_cutoff_<rail>_<N>
             --citus              also start the local Citus cluster (as `cargo xtask
                                  citus`, $PAYOUT_CITUS_PORT) and run each rail's
                                  --payouts again on it: each step's time on Citus /
                                  on plain PostgreSQL, no verdict but nothing lost
             --citus-shards N     shards per distributed table (default 32)

  chaos    fault tests (also `cargo xtask chaos`): kill -9 during payout and bulk
           load, PostgreSQL stopped during load, two instances on one database,
           kill -9 at the cut-off (during a NACHA file's generation, during its
           SFTP upload to a local sshd, and before its upload is recorded);
           a pass/fail table
             --clients N          concurrent clients (default 8)
             --kill-after-ms MS   load before the fault (default 2000)
             --outage-ms MS       how long the database stays down (default 3000)
             --payouts N          payouts of the two-instance check (default 300)
             --replays N          signed requests sent to both instances (default 50)
             --cutoff-payouts N   payouts of the cut-off checks' one batch (default
                                  100000; 0 skips them)
             --citus              against the local Citus cluster (started as
                                  `cargo xtask citus` does, on $PAYOUT_CITUS_PORT,
                                  and left running): kill -9 on distributed tables,
                                  and its last worker stopped (-m immediate) during
                                  load: its subaccounts must get 503 SYS503, the
                                  others be served, all be served once it is back

--smoke runs tiny sizes on debug builds (seconds, for CI); without it both
binaries are built in release mode. Results go to <target dir>/bench/<scenario>.json,
server logs beside them. pgbench is looked for on PATH, then in the newest
/usr/lib/postgresql/*/bin. See docs/BENCHMARKS.md.
"
    );
}

#[cfg(test)]
mod tests {
    use super::{check_flags, take_switch, take_value, without_flags};

    fn args(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn a_value_is_taken_out_of_the_flags() {
        let mut given = args(&["--payouts", "10", "--transport", "sftp", "--advisory"]);
        assert_eq!(
            take_value(&mut given, "--transport"),
            Ok(Some("sftp".to_owned()))
        );
        assert_eq!(given, args(&["--payouts", "10", "--advisory"]));
        let mut given = args(&["--transport=directory"]);
        assert_eq!(
            take_value(&mut given, "--transport"),
            Ok(Some("directory".to_owned()))
        );
        assert!(given.is_empty());
        assert_eq!(take_value(&mut given, "--transport"), Ok(None));
        assert!(take_value(&mut args(&["--transport"]), "--transport").is_err());
        let refused = super::run(args(&["verify", "--transport", "sftp", "--smoke"]));
        assert_eq!(
            refused.map_err(|failure| failure.last_line("bench", "")),
            Err("xtask bench: expected --transport only with `cutoff`; saw --transport with `verify`".to_owned())
        );
    }

    #[test]
    fn citus_is_a_flag_of_chaos_api_and_cutoff_only() {
        let refused = super::run(args(&["verify", "--citus", "--smoke"]));
        assert_eq!(
            refused.map_err(|failure| failure.last_line("bench", "")),
            Err(
                "xtask bench: expected --citus only with `chaos`, `api` or `cutoff`; saw \
                 --citus with `verify`"
                    .to_owned()
            )
        );
    }

    #[test]
    fn flags_are_checked_before_building() {
        assert!(check_flags(&args(&["--requests", "10", "--explain"])).is_ok());
        assert!(check_flags(&args(&["--requests=10", "--concurrency", "2"])).is_ok());
        assert!(check_flags(&args(&["--requests"])).is_err());
        assert!(check_flags(&args(&["--reqests", "10"])).is_err());
    }

    #[test]
    fn smoke_is_taken_out() {
        let mut a = args(&["--smoke", "--requests", "5"]);
        assert!(take_switch(&mut a, "--smoke"));
        assert_eq!(a, args(&["--requests", "5"]));
    }

    #[test]
    fn citus_shards_take_a_value() {
        assert!(check_flags(&args(&["--citus-shards", "4"])).is_ok());
        assert!(check_flags(&args(&["--citus-shards"])).is_err());
        // `--citus` is taken out before the check; the harness' own flag is not xtask's.
        assert!(check_flags(&args(&["--citus-url", "postgres://x"])).is_err());
    }

    #[test]
    fn replaced_smoke_flags_are_left_out_with_their_values() {
        let smoke = [
            "--clients",
            "4",
            "--payout-clients",
            "4,8",
            "--advisory",
            "--seconds",
            "1",
        ];
        assert_eq!(
            without_flags(&smoke, &["--payout-clients", "4", "--citus-shards", "4"]),
            ["--clients", "4", "--advisory", "--seconds", "1"]
        );
        assert_eq!(without_flags(&smoke, &[]), smoke);
        // A replaced switch has no value to skip.
        assert_eq!(
            without_flags(&["--advisory", "--seconds", "1"], &["--advisory"]),
            ["--seconds", "1"]
        );
    }
}
