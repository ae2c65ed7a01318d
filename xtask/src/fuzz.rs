//! `cargo xtask fuzz`: schema fuzzing of a live payoutd with schemathesis.
//!
//! Provisions PostgreSQL, builds and migrates payoutd (database `payoutd_fuzz`, created for the
//! run and dropped after it), creates a funded subaccount with an API key, starts `payoutd
//! serve` in sandbox mode on a free port, and runs the pinned schemathesis (installed from PyPI
//! into a venv under `<target dir>/fuzz`) against its `/openapi.json`. The hooks in
//! `xtask/fuzz/` sign every request, create real resources first and steer most generated
//! requests to them with values that pass the rules a schema cannot state, and record every
//! response. The run fails on any 5xx, any response that does not match the document (status,
//! content type, headers, schema), or a panic in the server's log. Everything it started is
//! stopped at the end, and it prints per operation what became of the requests: 2xx, refused
//! by a business rule, an id that names nothing, or refused by validation (docs/OPERATIONS.md,
//! Schema fuzzing, has a before/after table).

use std::{
    collections::BTreeMap,
    env,
    fs::{self, File},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    cmd,
    failure::Failure,
    flags::Flags,
    paths,
    postgres::{self, Postgres},
    serve::{Payoutd, field, master_key, with_database},
    tools,
};

/// Generated requests per API operation and phase, unless `--examples` says otherwise; keeps
/// the whole run to a minute or two on two cores.
const DEFAULT_EXAMPLES: &str = "30";

/// The run's database on the PostgreSQL server.
const DATABASE: &str = "payoutd_fuzz";

/// The file (in `<target dir>/fuzz`) where the hooks record every response, one JSON line each.
const RESPONSES: &str = "responses.jsonl";

/// What schemathesis checks: no server error, and every response as documented.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance";

const USAGE: &str = "\
Usage: cargo xtask fuzz [--examples N] [--seed S] [-- SCHEMATHESIS-ARGS...]

Runs schemathesis (pinned in xtask/fuzz/requirements.txt) against a fresh payoutd in sandbox
mode. --examples caps the requests generated per operation (default 30); --seed makes a run
reproducible; arguments after -- go to `st run`.
";

/// Runs the fuzzing session.
pub fn run(args: Vec<String>) -> Result<(), Failure> {
    let (args, extra) = match args.iter().position(|a| a == "--") {
        Some(split) => (args[..split].to_vec(), args[split + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let mut flags = Flags::new(args);
    if flags.switch("--help") || flags.switch("-h") {
        print!("{USAGE}");
        return Ok(());
    }
    let examples = flags
        .value("--examples")?
        .unwrap_or_else(|| DEFAULT_EXAMPLES.to_owned());
    let seed = flags.value("--seed")?;
    flags.finish()?;
    if examples.parse::<u32>().map_or(true, |n| n == 0) {
        return Err(Failure::new(
            "--examples to be a positive number",
            format!("`{examples}`"),
        ));
    }

    let dir = paths::target_dir().join("fuzz");
    fs::create_dir_all(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    // The venv first: it needs no database, and a failed install should not leave one running.
    let st = schemathesis(&dir)?;
    cmd::run(paths::cargo().args(paths::DEBUG_BUILD))?;

    let mut pg = Postgres::provision()?;
    let keep = env::var("PAYOUT_KEEP_PG").is_ok_and(|keep| keep == "1");
    if keep {
        pg.keep_running();
    } else {
        pg.stop_on_exit();
    }
    eprintln!("xtask: fuzzing against {}", pg.describe());
    let result = fuzz(&mut pg, &dir, &st, &examples, seed.as_deref(), &extra);
    pg.shutdown();
    result
}

/// Everything between provisioning the database and stopping it.
fn fuzz(
    pg: &mut Postgres,
    dir: &Path,
    st: &Path,
    examples: &str,
    seed: Option<&str>,
    extra: &[String],
) -> Result<(), Failure> {
    // Tests treat DATABASE_URL as a maintenance database; so does this: the run gets its own,
    // new each time (a run must not inherit an earlier one's data) and dropped at the end.
    drop_database(&pg.url)?;
    let result = fuzz_database(pg, dir, st, examples, seed, extra);
    let dropped = drop_database(&pg.url);
    result?;
    Ok(dropped?)
}

/// Drops the run's database, `payoutd_fuzz`, if it exists.
fn drop_database(url: &str) -> Result<(), String> {
    let psql = postgres::find_client("psql")
        .ok_or_else(|| "psql (PostgreSQL's client) is missing".to_owned())?;
    cmd::stdout(
        Command::new(psql)
            .arg(with_database(url, "postgres"))
            .args([
                "-q",
                "-c",
                &format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"),
            ]),
    )?;
    Ok(())
}

/// The session in database [`DATABASE`]: migrate, fund, serve, fuzz, summarise.
fn fuzz_database(
    pg: &mut Postgres,
    dir: &Path,
    st: &Path,
    examples: &str,
    seed: Option<&str>,
    extra: &[String],
) -> Result<(), Failure> {
    let payoutd = Payoutd {
        bin: paths::target_dir().join("debug").join("payoutd"),
        env: vec![
            ("DATABASE_URL", with_database(&pg.url, DATABASE)),
            ("PAYOUT_SANDBOX", "true".to_owned()),
            ("PAYOUT_MASTER_KEY", master_key()?),
            ("PAYOUT_BIND", "127.0.0.1:0".to_owned()),
            // Fuzzing is a burst of requests from one key: keep the rate limit out of the way.
            ("PAYOUT_RATE_LIMIT_PER_SEC", "100000".to_owned()),
            ("PAYOUT_RATE_LIMIT_BURST", "100000".to_owned()),
            ("PAYOUT_WORKERS", "2".to_owned()),
            ("RUST_LOG", "info".to_owned()),
        ],
    };
    cmd::run(&mut payoutd.command(&["migrate", "--create-database"]))?;
    let created = payoutd.json(&[
        "admin",
        "create-subaccount",
        "--name",
        "Fuzz subaccount",
        "--email",
        "fuzz@example.com",
        // The hooks sign every request with v1: schemathesis explores the API, not the
        // signature versions (docs/API.md, Signature policies).
        "--signature-policy",
        "any",
    ])?;
    let subaccount = field(&created, "subaccount_id")?;
    let key = payoutd.json(&["admin", "issue-key", "--subaccount", &subaccount])?;
    for asset in ["AUD", "USD", "CAD", "EUR", "NZD"] {
        payoutd.json(&[
            "admin",
            "fund",
            "--subaccount",
            &subaccount,
            "--asset",
            asset,
            "--amount",
            "100000000000",
            "--reason",
            "fuzz float",
        ])?;
    }

    let log_path = dir.join("payoutd.log");
    let mut server = Server::start(&payoutd, &log_path)?;
    pg.watch(server.child.id());
    let base = format!("http://127.0.0.1:{}", server.port);
    eprintln!(
        "xtask: payoutd is listening on {base} (log: {})",
        log_path.display()
    );

    let mut run = Command::new(st);
    run.arg("run")
        .arg(format!("{base}/openapi.json"))
        .args(["--checks", CHECKS])
        .args(["--max-examples", examples])
        .args(["--phases", "examples,coverage,fuzzing"])
        .args(["--workers", "1"])
        .args(["--generation-with-security-parameters", "false"])
        .args(["--generation-database", "none"])
        .args(["--request-timeout", "30"])
        .arg("--no-color");
    if let Some(seed) = seed {
        run.args(["--seed", seed]);
    }
    run.args(extra)
        .env("SCHEMATHESIS_HOOKS", "payoutd_hooks")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // The hooks, and the documented Python signing example they sign with
        // (docs/examples/signing/sign.py, itself run against payoutd by the API tests).
        .env(
            "PYTHONPATH",
            std::env::join_paths([
                paths::workspace_root().join("xtask").join("fuzz"),
                paths::workspace_root()
                    .join("docs")
                    .join("examples")
                    .join("signing"),
            ])
            .map_err(|e| Failure::new("a PYTHONPATH of the hooks and sign.py", e.to_string()))?,
        )
        .env("PAYOUTD_BASE_URL", &base)
        .env("PAYOUTD_SUBACCOUNT", &subaccount)
        .env("PAYOUTD_API_KEY", field(&key, "api_key")?)
        .env("PAYOUTD_API_SECRET", field(&key, "api_secret")?)
        .current_dir(dir);
    let responses = dir.join(RESPONSES);
    // A stale file from an earlier run would be summarised as this one.
    let _ = fs::remove_file(&responses);
    eprintln!("xtask: {}", cmd::display(&run));
    let status = run
        .status()
        .map_err(|err| format!("cannot run schemathesis: {err}"));

    let stopped = server.stop();
    let log = fs::read_to_string(&log_path).unwrap_or_default();
    let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
    let status = status?;
    stopped?;
    if let Ok(lines) = fs::read_to_string(&responses) {
        eprintln!(
            "xtask: what became of the requests (from {}):\n{}",
            responses.display(),
            summary(&tally(&lines))
        );
    }
    if !panics.is_empty() {
        return Err(Failure::new(
            "no panic in payoutd",
            format!(
                "{} panic line(s) in its log {}, the first: {}",
                panics.len(),
                log_path.display(),
                panics[0]
            ),
        )
        .with_detail(panics.join("\n")));
    }
    Failure::check_exit("schemathesis to find no problem", &run, status).map_err(|failure| {
        failure.with_detail(format!(
            "xtask: schemathesis found problems (server log: {})",
            log_path.display()
        ))
    })
}

/// The error codes that are a business rule's refusal: the request was well formed and the
/// handler's core decided against it (taken e-mail or reference, insufficient balance, a
/// status that does not allow the step, an idempotency conflict...).
const REFUSALS: &[&str] = &[
    "REVR201", "REVR225", "REVR301", "PAYO205", "PAYO206", "PAYO207", "PAYO301", "PAYO303",
    "PAYO304", "REAC230", "REAC301", "REAC302", "IDEM001", "IDEM002", "IDEM003",
];

/// The error codes that say a well-formed id names nothing of the caller's.
const NOT_FOUND: &[&str] = &[
    "REVR101", "PAYO101", "PAYO102", "PAYO201", "PAYO202", "REAC101", "REAC104", "REAC211",
    "SUBA101",
];

/// What became of one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// 2xx.
    Ok,
    /// A business rule's refusal (only [`REFUSALS`] codes).
    Refused,
    /// An id that names nothing (only [`NOT_FOUND`] and refusal codes; or an HTML 404 of
    /// `/confirm/{token}`).
    NotFound,
    /// Any other 4xx: the body, query or headers failed validation.
    Invalid,
    /// 401: authentication (the hooks sign every request, so this is rare).
    Unauthorized,
    /// 5xx: a server error (schemathesis fails the run on these).
    ServerError,
}

/// The outcome of a response with `status` and the catalogue `codes` of its body.
fn outcome(operation: &str, status: u64, codes: &[&str]) -> Outcome {
    match status {
        200..=299 => Outcome::Ok,
        401 => Outcome::Unauthorized,
        500.. => Outcome::ServerError,
        404 if operation.contains("/confirm/{token}") => Outcome::NotFound,
        _ if codes.is_empty() => Outcome::Invalid,
        _ if codes.iter().all(|c| REFUSALS.contains(c)) => Outcome::Refused,
        _ if codes
            .iter()
            .all(|c| REFUSALS.contains(c) || NOT_FOUND.contains(c)) =>
        {
            Outcome::NotFound
        }
        _ => Outcome::Invalid,
    }
}

/// Responses of one operation by outcome, for positive (schema-conforming) and negative cases.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tally {
    positive: BTreeMap<Outcome, u32>,
    negative: u32,
    negative_reached: u32,
}

/// Per operation, what became of its requests: from the `responses.jsonl` lines the hooks
/// write (`{"operation", "phase", "mode", "status", "codes"}`); unreadable lines are skipped.
fn tally(lines: &str) -> BTreeMap<String, Tally> {
    let mut tallies: BTreeMap<String, Tally> = BTreeMap::new();
    for line in lines.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(operation), Some(status)) = (
            record.get("operation").and_then(Value::as_str),
            record.get("status").and_then(Value::as_u64),
        ) else {
            continue;
        };
        let codes: Vec<&str> = record
            .get("codes")
            .and_then(Value::as_array)
            .map(|codes| codes.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let outcome = outcome(operation, status, &codes);
        let entry = tallies.entry(operation.to_owned()).or_default();
        if record.get("mode").and_then(Value::as_str) == Some("negative") {
            entry.negative += 1;
            if matches!(outcome, Outcome::Ok | Outcome::Refused) {
                entry.negative_reached += 1;
            }
        } else {
            *entry.positive.entry(outcome).or_default() += 1;
        }
    }
    tallies
}

/// The table `cargo xtask fuzz` prints at the end: per operation, the positive cases by
/// outcome, the share that reached the handler's core (2xx or a business refusal), and the
/// negative cases.
fn summary(tallies: &BTreeMap<String, Tally>) -> String {
    let mut out = format!(
        "{:<52} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}  {:>7}\n",
        "operation (positive cases)", "2xx", "rule", "404", "inval", "other", "core", "neg"
    );
    let mut majority = 0;
    for (operation, tally) in tallies {
        let count = |o: Outcome| tally.positive.get(&o).copied().unwrap_or(0);
        let total: u32 = tally.positive.values().sum();
        let core = count(Outcome::Ok) + count(Outcome::Refused);
        let share = (core * 100).checked_div(total).unwrap_or(0);
        if total > 0 && core * 2 > total {
            majority += 1;
        }
        out.push_str(&format!(
            "{operation:<52} {:>5} {:>5} {:>5} {:>5} {:>5} {:>4}%  {:>7}\n",
            count(Outcome::Ok),
            count(Outcome::Refused),
            count(Outcome::NotFound),
            count(Outcome::Invalid),
            count(Outcome::Unauthorized) + count(Outcome::ServerError),
            share,
            format!("{}/{}", tally.negative_reached, tally.negative),
        ));
    }
    out.push_str(&format!(
        "{majority} of {} operations: most positive cases reached the handler's core (2xx or a \
         business-rule refusal); neg = negative cases answered 2xx or refused by a rule / sent\n",
        tallies.len()
    ));
    out
}

/// The schemathesis `st` of a venv in `dir`, created and filled from
/// `xtask/fuzz/requirements.txt` when that file changed since the last install.
fn schemathesis(dir: &Path) -> Result<PathBuf, String> {
    let requirements = paths::workspace_root()
        .join("xtask")
        .join("fuzz")
        .join("requirements.txt");
    let venv = dir.join("venv");
    let st = venv.join("bin").join("st");
    tools::pinned_venv(&requirements, &venv, &st, "schemathesis")?;
    Ok(st)
}

/// A running `payoutd serve`.
struct Server {
    child: Child,
    port: u16,
    logger: Option<thread::JoinHandle<()>>,
}

impl Server {
    /// Starts the server on a free port and waits until it listens (its stderr, JSON lines,
    /// goes to `log_path`; the port comes from its `payoutd listening` line).
    fn start(payoutd: &Payoutd, log_path: &Path) -> Result<Self, String> {
        let mut log = File::create(log_path)
            .map_err(|err| format!("cannot create {}: {err}", log_path.display()))?;
        let mut serve = payoutd.command(&["serve"]);
        serve.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut child = serve
            .spawn()
            .map_err(|err| format!("cannot run `{}`: {err}", cmd::display(&serve)))?;
        let Some(stderr) = child.stderr.take() else {
            let _ = child.kill();
            return Err("payoutd's stderr was not captured".to_owned());
        };
        let (port_tx, port_rx) = mpsc::channel();
        let logger = thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let _ = writeln!(log, "{line}");
                if let Some(port) = listening_port(&line) {
                    let _ = port_tx.send(port);
                }
            }
        });
        let mut server = Self {
            child,
            port: 0,
            logger: Some(logger),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match port_rx.recv_timeout(Duration::from_millis(200)) {
                Ok(port) => {
                    server.port = port;
                    return Ok(server);
                }
                Err(_) if Instant::now() < deadline => {
                    if let Ok(Some(status)) = server.child.try_wait() {
                        return Err(format!(
                            "payoutd exited before listening ({status}); see {}",
                            log_path.display()
                        ));
                    }
                }
                Err(_) => {
                    let _ = server.stop();
                    return Err(format!(
                        "payoutd did not start listening within 60 s; see {}",
                        log_path.display()
                    ));
                }
            }
        }
    }

    /// SIGTERM, then up to 40 s for the graceful shutdown, then SIGKILL.
    fn stop(&mut self) -> Result<(), String> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(40);
        let result = loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break Ok(()),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(100)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break Err("payoutd did not stop within 40 s of SIGTERM".to_owned());
                }
                Err(err) => break Err(format!("waiting for payoutd: {err}")),
            }
        };
        if let Some(logger) = self.logger.take() {
            let _ = logger.join();
        }
        result
    }
}

/// The port of payoutd's `payoutd listening` log line.
fn listening_port(line: &str) -> Option<u16> {
    let value: Value = serde_json::from_str(line).ok()?;
    if value.get("message")?.as_str()? != "payoutd listening" {
        return None;
    }
    u16::try_from(value.get("port")?.as_u64()?).ok()
}

#[cfg(test)]
mod tests {
    use super::{Outcome, listening_port, outcome, summary, tally};

    #[test]
    fn the_port_comes_from_the_listening_line() {
        let line = r#"{"timestamp":"2026-11-21T17:00:00Z","level":"INFO","message":"payoutd listening","port":43123,"sandbox":true,"target":"app_actix::cli"}"#;
        assert_eq!(listening_port(line), Some(43123));
        assert_eq!(listening_port(r#"{"message":"request","port":1}"#), None);
        assert_eq!(listening_port("not json"), None);
    }

    #[test]
    fn outcomes_tell_validation_from_business_rules_and_missing_ids() {
        let op = "POST /api/payout/single";
        assert_eq!(outcome(op, 200, &[]), Outcome::Ok);
        assert_eq!(outcome(op, 400, &["PAYO207"]), Outcome::Refused);
        assert_eq!(outcome(op, 409, &["IDEM002"]), Outcome::Refused);
        assert_eq!(outcome(op, 400, &["PAYO201", "PAYO202"]), Outcome::NotFound);
        // A missing id reported with a malformed field: the body never reached the core.
        assert_eq!(outcome(op, 400, &["PAYO201", "PAYO203"]), Outcome::Invalid);
        assert_eq!(outcome(op, 400, &["REQ005"]), Outcome::Invalid);
        assert_eq!(outcome(op, 400, &[]), Outcome::Invalid);
        assert_eq!(outcome(op, 401, &["AUTH104"]), Outcome::Unauthorized);
        assert_eq!(outcome(op, 500, &["SYS500"]), Outcome::ServerError);
        assert_eq!(outcome("GET /confirm/{token}", 404, &[]), Outcome::NotFound);
        assert_eq!(
            outcome("GET /api/payout/{id}", 404, &["REQ006"]),
            Outcome::Invalid
        );
    }

    #[test]
    fn the_summary_counts_positive_cases_per_operation() {
        let lines = [
            r#"{"operation":"GET /api/payout/{id}","phase":"fuzzing","mode":"positive","status":200,"codes":[]}"#,
            r#"{"operation":"GET /api/payout/{id}","phase":"fuzzing","mode":"positive","status":400,"codes":["PAYO101"]}"#,
            r#"{"operation":"GET /api/payout/{id}","phase":"fuzzing","mode":"positive","status":200,"codes":[]}"#,
            r#"{"operation":"GET /api/payout/{id}","phase":"coverage","mode":"negative","status":400,"codes":["REQ002"]}"#,
            r#"{"operation":"POST /api/receiver","phase":"fuzzing","mode":"positive","status":400,"codes":["REVR214"]}"#,
            "not json",
            r#"{"operation":"POST /api/receiver"}"#,
        ]
        .join("\n");
        let tallies = tally(&lines);
        assert_eq!(tallies.len(), 2);
        let payout = &tallies["GET /api/payout/{id}"];
        assert_eq!(payout.positive.get(&Outcome::Ok), Some(&2));
        assert_eq!(payout.positive.get(&Outcome::NotFound), Some(&1));
        assert_eq!((payout.negative, payout.negative_reached), (1, 0));
        let table = summary(&tallies);
        assert!(table.contains("66%"), "{table}");
        assert!(table.contains("1 of 2 operations"), "{table}");
    }
}
