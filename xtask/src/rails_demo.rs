//! `cargo xtask rails-demo`: payoutd in production mode against the local bank.
//!
//! Provisions PostgreSQL, builds payoutd, starts the bank simulator ([`crate::bank`]) in this
//! process, the Interac partner simulator ([`bank_simulator::interac_partner`]) calling payoutd back, and
//! a mail catcher (Debian's aiosmtpd), writes a production configuration enabling all six
//! methods (the five file rails over SFTP to the bank, `cad/digital` over the partner's API; a
//! cut-off every minute, same-day settlement), runs `payoutd serve` without sandbox, and drives
//! it as an operator and a client would: a subaccount, funds, receivers, KYC decided with
//! `payoutd admin kyc`, an account of each method confirmed through the e-mailed links,
//! payouts. It waits until every payout is final and the bank's returns after settlement are
//! applied, validates every file payoutd sent and every answer of the bank (pain.001 against
//! the XSD with xmllint, NACHA with the project's parser, ABA, Standard 005 and IB4B with the
//! independent `bank-format-oracles`, Interac batch requests with the protocol's parser), checks
//! the ledger and prints one JSON line. Bank file rails settle on weekdays only: run on a
//! Saturday or Sunday, the demo runs payoutd on the last weekday's date under libfaketime
//! (Debian's `libfaketime`, installed when missing and root) and its own side by the same clock
//! ([`crate::clock`]). Copies: `target/rails-demo/sent/` and `target/rails-demo/received/`.

use std::{
    fs,
    net::{SocketAddr, TcpStream},
    process::{Child, Command},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{
    bank::{self, Bank, Responder, Tally},
    clock, cmd,
    failure::Failure,
    flags::Flags,
    iso20022, paths,
    postgres::{self, Postgres},
    serve::{Payoutd, master_key, with_database},
    tools,
};
use bank_simulator::interac_partner::{PartnerOptions, PartnerSimulator};
use config::render_config;
use drive::drive;
use files::{check_answer, collect_sent};
use mail::start_smtp;
use waits::{Wait, wait_until};

mod accounts;
mod api;
mod config;
mod console;
mod drive;
mod files;
mod mail;
mod waits;

/// What the demo expects, unless a failure says more precisely.
pub const GOAL: &str =
    "every payout final as the bank and the partner decided, every file valid, the ledger balanced";

/// The database the demo uses (dropped and created again on each run).
const DATABASE: &str = "payoutd_rails_demo";

/// [`DATABASE`] followed by a short hash of the target dir: on a server several checkouts share,
/// one checkout's demo does not drop the database of another's running demo.
fn database() -> String {
    let target = paths::target_dir();
    let hash = Sha256::digest(target.as_os_str().as_encoded_bytes());
    format!("{DATABASE}_{}", hex::encode(&hash[..4]))
}
/// Everything must be done within this, counted once the tools are there and payoutd is built.
const OVERALL_TIMEOUT: Duration = Duration::from_secs(300);
/// How often a wait says where it stands.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);
/// Receivers created; each gets one ACH and one SEPA account.
const RECEIVERS: usize = 4;

/// The receivers' last names.
const LAST_NAMES: [&str; 4] = ["Lovelace", "Hopper", "Noether", "Turing"];

/// The demo's options.
struct Options {
    per_method: usize,
    share: f64,
    late_after: Duration,
    /// `--console`: where the console listens, kept open after the checks until Ctrl-C.
    console: Option<String>,
}

/// Who answers payoutd: the bank's responder (file rails) and the Interac partner.
#[derive(Clone, Copy)]
struct Counterparties<'a> {
    responder: &'a ResponderThread,
    partner: &'a PartnerSimulator,
}

pub fn run(args: Vec<String>) -> Result<(), Failure> {
    let mut flags = Flags::new(args);
    let per_method = flags
        .value("--payouts")?
        .map(|raw| {
            raw.parse::<usize>()
                .ok()
                .filter(|n| (1..=500).contains(n))
                .ok_or_else(|| format!("--payouts must be 1 to 500, got {raw:?}"))
        })
        .transpose()?
        .unwrap_or(10);
    let share = flags
        .value("--return-share")?
        .map_or(Ok(bank::DEFAULT_RETURN_SHARE), |raw| {
            bank::parse_share(&raw)
        })?;
    let console = flags.switch("--console");
    flags.finish()?;
    let options = Options {
        per_method,
        share,
        late_after: Duration::from_secs(10),
        console: console.then(console::bind).transpose()?,
    };
    // The tools and the build first: on a fresh machine they take minutes, which the demo's
    // own deadline must not count.
    let helpers = Helpers {
        xml: iso20022::provision()?,
        python: tools::ensure_debian_python_module("aiosmtpd", "python3-aiosmtpd")?,
    };
    tools::ensure_debian_tool("/usr/sbin/sshd", "openssh-server")?;
    tools::ensure_debian_tool("ssh-keygen", "openssh-client")?;
    cmd::run(paths::cargo().args(paths::DEBUG_BUILD))?;
    let mut pg = Postgres::provision()?;
    pg.stop_on_exit();
    eprintln!("rails-demo: using {}", pg.describe());
    let started = Instant::now();
    let result = demo(&pg, &options, &helpers, started);
    pg.shutdown();
    // What the run came to, kept beside payoutd's log for when the output is gone.
    let outcome = paths::target_dir().join("rails-demo").join("outcome");
    let line = match &result {
        Ok(summary) => summary_line(summary),
        Err(failure) => failure.last_line("rails-demo", GOAL),
    };
    let _ = fs::write(&outcome, format!("{line}\n"));
    result?;
    // With `--console` the line was printed before the console opened.
    if options.console.is_none() {
        println!("{line}");
    }
    eprintln!(
        "rails-demo: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A child process killed on drop.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The responder running on its own thread, stopped on drop.
struct ResponderThread {
    stop: Arc<AtomicBool>,
    state: Arc<Mutex<(Tally, Option<String>)>>,
    handle: Option<thread::JoinHandle<()>>,
}

impl ResponderThread {
    fn start(mut responder: Responder) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let state = Arc::new(Mutex::new((Tally::default(), None)));
        let (stop2, state2) = (stop.clone(), state.clone());
        let handle = thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                let result = responder.poll();
                if let Ok(mut state) = state2.lock() {
                    state.0 = responder.tally().clone();
                    if let Err(err) = result {
                        state.1 = Some(err);
                        return;
                    }
                }
                thread::sleep(Duration::from_millis(300));
            }
        });
        Self {
            stop,
            state,
            handle: Some(handle),
        }
    }

    /// The bank's tally, or the error that stopped it.
    fn tally(&self) -> Result<Tally, String> {
        let state = self
            .state
            .lock()
            .map_err(|_| "the bank's responder panicked".to_owned())?;
        match &state.1 {
            Some(err) => Err(format!("the bank's responder stopped: {err}")),
            None => Ok(state.0.clone()),
        }
    }
}

impl Drop for ResponderThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// What the demo runs besides payoutd: xmllint and the XSDs, and a python3 with aiosmtpd.
struct Helpers {
    xml: iso20022::Tools,
    python: std::path::PathBuf,
}

fn demo(
    pg: &Postgres,
    options: &Options,
    helpers: &Helpers,
    started: Instant,
) -> Result<Value, Failure> {
    let root = paths::target_dir().join("rails-demo");
    if root.exists() {
        fs::remove_dir_all(&root)
            .map_err(|err| format!("cannot empty {}: {err}", root.display()))?;
    }
    let (sent_dir, received_dir) = (root.join("sent"), root.join("received"));
    for dir in [&sent_dir, &received_dir] {
        fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    }
    let database = database();
    let database_url = with_database(&pg.url, &database);
    drop_database(&pg.url, &database)?;

    // Bank file rails settle on weekdays only: on a weekend, the demo's clocks go back to the
    // last weekday (payoutd's under libfaketime, this process's by `clock`).
    let days_back = clock::days_back_to_weekdays(chrono::Utc::now(), OVERALL_TIMEOUT);
    clock::set_days_back(days_back);
    if days_back > 0 {
        eprintln!(
            "rails-demo: a weekend: payoutd and the bank run {days_back} day(s) back, on {}",
            clock::now().date_naive()
        );
    }

    // The bank and the mail catcher.
    let mut bank = Bank::start(&root.join("bank"), None)?;
    let responder = ResponderThread::start(Responder::new(
        bank.rails.clone(),
        options.share,
        options.late_after,
    ));
    let mail_dir = root.join("mail");
    fs::create_dir_all(&mail_dir)
        .map_err(|err| format!("cannot create {}: {err}", mail_dir.display()))?;
    let (smtp, smtp_port) = start_smtp(&helpers.python, &mail_dir)?;

    // payoutd, production mode, and the Interac partner calling it back.
    let port = bank::free_port()?;
    let bind = format!("127.0.0.1:{port}");
    let secret = bank::fresh_secret();
    let partner = PartnerSimulator::start(PartnerOptions {
        callback_url: Some(format!("http://{bind}/rail/interac/callback")),
        final_delay: Duration::from_secs(3),
        clock: crate::clock::now,
        ..PartnerOptions::new(secret.clone())
    })?;
    let config_path = root.join("payoutd.toml");
    fs::write(
        &config_path,
        render_config(&bank, &partner.base_url(), smtp_port)?,
    )
    .map_err(|err| format!("cannot write {}: {err}", config_path.display()))?;
    let mut env = vec![
        ("DATABASE_URL", database_url.clone()),
        ("PAYOUT_MASTER_KEY", master_key()?),
        ("PAYOUT_CONFIG", config_path.display().to_string()),
        ("PAYOUT_BIND", bind.clone()),
        ("PAYOUT_BATCH_INTERVAL_SECS", "5".to_owned()),
        ("PAYOUT_SANDBOX", "false".to_owned()),
        ("PAYOUT_INTERAC_SECRET", secret),
    ];
    env.extend(weekday_clock(days_back)?);
    if let Some(bind) = &options.console {
        env.push(("PAYOUT_CONSOLE_BIND", bind.clone()));
    }
    let payoutd = Payoutd {
        bin: paths::target_dir().join("debug").join("payoutd"),
        env,
    };
    // Captured: stdout is for the summary line only.
    cmd::stdout(&mut payoutd.command(&["migrate", "--create-database"]))?;
    cmd::stdout(&mut payoutd.command(&["check-config"]))?;
    let log_path = root.join("payoutd.log");
    let log = fs::File::create(&log_path)
        .map_err(|err| format!("cannot create {}: {err}", log_path.display()))?;
    let log_err = log
        .try_clone()
        .map_err(|err| format!("{}: {err}", log_path.display()))?;
    let mut serve = payoutd.command(&["serve"]);
    let server =
        Guard(Some(serve.stdout(log).stderr(log_err).spawn().map_err(
            |err| format!("cannot run `{}`: {err}", cmd::display(&serve)),
        )?));
    let addr: SocketAddr = bind.parse().map_err(|err| format!("{bind}: {err}"))?;
    wait_until(started, &format!("payoutd to listen on {addr}"), || {
        Ok(
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                Wait::Done
            } else {
                Wait::Pending("nothing listening".to_owned())
            },
        )
    })
    .map_err(|failure| failure.with_detail(format!("payoutd's log: {}", log_path.display())))?;

    let outcome = drive(
        &payoutd,
        &database_url,
        addr,
        &mail_dir,
        &Counterparties {
            responder: &responder,
            partner: &partner,
        },
        options,
        started,
    )
    .map_err(|failure| {
        failure.with_detail(format!(
            "payoutd's log: {}\nthe bank: {}",
            log_path.display(),
            bank.dir.display()
        ))
    });
    // Every payout is final once `drive` is done. Without `--console`, payoutd stops before
    // the files are collected, so nothing can change under us; with it, everything keeps
    // running for the person at the console, and nothing is left to change.
    let keep = options.console.is_some() && outcome.is_ok();
    let mut server = Some(server);
    let mut smtp = Some(smtp);
    if !keep {
        drop(server.take());
        drop(smtp.take());
    }
    let partner_counters = partner.counters();
    let mut partner = Some(partner);
    if !keep && let Some(partner) = partner.take() {
        partner.stop();
    }
    let mut outcome = outcome?;
    let tally = responder.tally()?;
    let mut responder = Some(responder);
    if !keep {
        drop(responder.take());
        bank.stop();
    }

    let sent = collect_sent(&payoutd, &bank, &sent_dir, &helpers.xml)?;
    let mut received = 0;
    for rail in &bank.rails {
        for name in bank::complete_files(&rail.written)? {
            let path = rail.written.join(&name);
            let bytes =
                fs::read(&path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
            check_answer(rail.kind, &bytes)
                .map_err(|err| format!("the bank wrote {name}: {err}"))?;
            bank::copy_into(&received_dir, &name, &bytes)?;
            received += 1;
        }
    }
    if sent.files != tally.files_read || received != tally.files_written {
        return Err(Failure::new(
            "the bank to read every file payoutd sent and the demo to copy every answer",
            format!(
                "payoutd sent {} files and the bank read {}; the bank wrote {} and {received} were \
                 copied",
                sent.files, tally.files_read, tally.files_written
            ),
        ));
    }
    if u64::try_from(sent.batch_requests).ok() != Some(partner_counters.batches) {
        return Err(Failure::new(
            format!(
                "the partner to accept the {} Interac batch requests payoutd stored",
                sent.batch_requests
            ),
            format!("it accepted {}", partner_counters.batches),
        ));
    }
    let ledger = payoutd.command(&["admin", "check-ledger"]).output();
    let ledger_ok = ledger.as_ref().is_ok_and(|out| out.status.success());
    if !ledger_ok {
        return Err(Failure::new(
            "`payoutd admin check-ledger` to find the ledger balanced",
            format!("{ledger:?}"),
        ));
    }
    if partner_counters.bad_signatures > 0 || partner_counters.conflicts > 0 {
        return Err(Failure::new(
            "the partner to accept every request of payoutd",
            format!("bad signatures or conflicts: {partner_counters:?}"),
        ));
    }
    outcome["files"] = json!(sent.files);
    outcome["partner_batches"] = json!(partner_counters.batches);
    outcome["callbacks"] = json!(partner_counters.callbacks_delivered);
    outcome["ledger"] = json!("ok");
    if let (Some(bind), Some(Guard(Some(child)))) = (&options.console, server.as_mut()) {
        println!("{}", summary_line(&outcome));
        console::open(&payoutd, bind, days_back, &root, sent.files)
            .map_err(|err| format!("opening the console: {err}"))?;
        let status = child
            .wait()
            .map_err(|err| format!("waiting for payoutd: {err}"))?;
        eprintln!("rails-demo: payoutd ended ({status}); stopping the bank and the partner");
        drop(smtp);
        drop(responder);
        if let Some(partner) = partner {
            partner.stop();
        }
        bank.stop();
    }
    Ok(outcome)
}

/// The summary as one JSON line, its fields in a fixed order.
fn summary_line(summary: &Value) -> String {
    let fields = [
        "methods",
        "payouts",
        "successful",
        "failed",
        "returned",
        "files",
        "partner_batches",
        "callbacks",
        "ledger",
    ];
    let parts: Vec<String> = fields
        .iter()
        .map(|name| format!("\"{name}\":{}", summary.get(name).unwrap_or(&Value::Null)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// The libfaketime environment that runs payoutd `days` days back (none for 0): its wall clock
/// only, the monotonic clock its timers use left alone.
fn weekday_clock(days: u32) -> Result<Vec<(&'static str, String)>, String> {
    if days == 0 {
        return Ok(Vec::new());
    }
    let library = tools::ensure_debian_file(
        &[
            "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
            "/usr/lib/faketime/libfaketime.so.1",
        ],
        "libfaketime",
    )?;
    Ok(vec![
        ("LD_PRELOAD", library.display().to_string()),
        ("FAKETIME", format!("-{days}d")),
        ("FAKETIME_DONT_FAKE_MONOTONIC", "1".to_owned()),
    ])
}

/// Drops the demo's database so each run starts empty.
fn drop_database(url: &str, database: &str) -> Result<(), String> {
    let psql = postgres::find_client("psql")
        .ok_or_else(|| "psql (PostgreSQL's client) is missing".to_owned())?;
    cmd::stdout(
        Command::new(psql)
            .arg(with_database(url, "postgres"))
            .args([
                "-q",
                "-c",
                &format!("DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"),
            ]),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_keeps_its_order() {
        let summary = json!({"ledger": "ok", "files": 2, "returned": 1, "failed": 3, "successful": 17, "payouts": 20, "methods": 6, "partner_batches": 1, "callbacks": 2});
        assert_eq!(
            summary_line(&summary),
            r#"{"methods":6,"payouts":20,"successful":17,"failed":3,"returned":1,"files":2,"partner_batches":1,"callbacks":2,"ledger":"ok"}"#
        );
    }
}
