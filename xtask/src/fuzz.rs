//! `cargo xtask fuzz`: schema fuzzing of a live payoutd with schemathesis.
//!
//! Provisions PostgreSQL, builds and migrates payoutd (database `payoutd_fuzz`), creates a
//! funded subaccount with an API key, starts `payoutd serve` in sandbox mode on a free port,
//! and runs the pinned schemathesis (installed from PyPI into a venv under
//! `<target dir>/fuzz`) against its `/openapi.json`. The hooks in `xtask/fuzz/` sign every
//! request and steer ids towards real resources. The run fails on any 5xx, any response that
//! does not match the document (status, content type, headers, schema), or a panic in the
//! server's log. Everything it started is stopped at the end.

use std::{
    env,
    fs::{self, File},
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, ExitCode, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::{
    cmd,
    flags::Flags,
    paths,
    postgres::Postgres,
    serve::{Payoutd, field, master_key, with_database},
};

/// Generated requests per API operation and phase, unless `--examples` says otherwise; keeps
/// the whole run to a minute or two on two cores.
const DEFAULT_EXAMPLES: &str = "30";

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
pub fn run(args: Vec<String>) -> Result<ExitCode, String> {
    let (args, extra) = match args.iter().position(|a| a == "--") {
        Some(split) => (args[..split].to_vec(), args[split + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let mut flags = Flags::new(args);
    if flags.switch("--help") || flags.switch("-h") {
        print!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    let examples = flags
        .value("--examples")?
        .unwrap_or_else(|| DEFAULT_EXAMPLES.to_owned());
    let seed = flags.value("--seed")?;
    flags.finish()?;
    if examples.parse::<u32>().map_or(true, |n| n == 0) {
        return Err(format!(
            "--examples must be a positive number, got `{examples}`"
        ));
    }

    let dir = paths::target_dir().join("fuzz");
    fs::create_dir_all(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    // The venv first: it needs no database, and a failed install should not leave one running.
    let st = schemathesis(&dir)?;
    cmd::run(paths::cargo().args(["build", "-p", "app-actix", "--bin", "payoutd"]))?;

    let mut pg = Postgres::provision()?;
    let keep = env::var("PAYOUT_KEEP_PG").is_ok_and(|keep| keep == "1");
    if !keep {
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
) -> Result<ExitCode, String> {
    // Tests treat DATABASE_URL as a maintenance database; so does this: the run gets its own.
    let payoutd = Payoutd {
        bin: paths::target_dir().join("debug").join("payoutd"),
        env: vec![
            ("DATABASE_URL", with_database(&pg.url, "payoutd_fuzz")),
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
        .env(
            "PYTHONPATH",
            paths::workspace_root().join("xtask").join("fuzz"),
        )
        .env("PAYOUTD_BASE_URL", &base)
        .env("PAYOUTD_SUBACCOUNT", &subaccount)
        .env("PAYOUTD_API_KEY", field(&key, "api_key")?)
        .env("PAYOUTD_API_SECRET", field(&key, "api_secret")?)
        .current_dir(dir);
    eprintln!("xtask: {}", cmd::display(&run));
    let status = run
        .status()
        .map_err(|err| format!("cannot run schemathesis: {err}"));

    let stopped = server.stop();
    let log = fs::read_to_string(&log_path).unwrap_or_default();
    let panics: Vec<&str> = log.lines().filter(|l| l.contains("panicked")).collect();
    let status = status?;
    stopped?;
    if !panics.is_empty() {
        return Err(format!(
            "payoutd panicked while fuzzed:\n{}",
            panics.join("\n")
        ));
    }
    if !status.success() {
        eprintln!(
            "xtask: schemathesis found problems (server log: {})",
            log_path.display()
        );
    }
    Ok(cmd::exit_code(status))
}

/// The schemathesis `st` of a venv in `dir`, created and filled from
/// `xtask/fuzz/requirements.txt` when that file changed since the last install.
fn schemathesis(dir: &Path) -> Result<PathBuf, String> {
    let requirements = paths::workspace_root()
        .join("xtask")
        .join("fuzz")
        .join("requirements.txt");
    let wanted = fs::read_to_string(&requirements)
        .map_err(|err| format!("cannot read {}: {err}", requirements.display()))?;
    let venv = dir.join("venv");
    let st = venv.join("bin").join("st");
    let stamp = venv.join("installed-requirements.txt");
    if fs::read_to_string(&stamp).is_ok_and(|installed| installed == wanted) && st.is_file() {
        return Ok(st);
    }
    eprintln!(
        "xtask: installing schemathesis into {} (from PyPI)",
        venv.display()
    );
    let python = cmd::find_on_path("python3").ok_or(
        "python3 is not on PATH; install Python 3 with its venv module (Debian: python3-venv)",
    )?;
    cmd::run(
        Command::new(python)
            .args(["-m", "venv", "--clear"])
            .arg(&venv),
    )?;
    cmd::run(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
    )?;
    fs::write(&stamp, wanted).map_err(|err| format!("cannot write {}: {err}", stamp.display()))?;
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
    use super::listening_port;

    #[test]
    fn the_port_comes_from_the_listening_line() {
        let line = r#"{"timestamp":"2026-11-21T17:00:00Z","level":"INFO","message":"payoutd listening","port":43123,"sandbox":true,"target":"app_actix::cli"}"#;
        assert_eq!(listening_port(line), Some(43123));
        assert_eq!(listening_port(r#"{"message":"request","port":1}"#), None);
        assert_eq!(listening_port("not json"), None);
    }
}
