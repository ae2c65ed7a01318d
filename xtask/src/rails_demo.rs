//! `cargo xtask rails-demo`: payoutd in production mode against the local bank.
//!
//! Provisions PostgreSQL, builds payoutd, starts the bank simulator ([`crate::bank`]) in this
//! process, the Interac partner simulator ([`crate::interac_partner`]) calling payoutd back, and
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
    collections::{BTreeMap, BTreeSet},
    fs,
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use domain::account::PayoutMethod;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::interac_partner::{PartnerOptions, PartnerSimulator};
use crate::{
    bank::{self, Bank, RailKind, Responder, Tally},
    clock, cmd,
    failure::Failure,
    flags::Flags,
    iso20022, paths,
    postgres::{self, Postgres},
    serve::{Payoutd, field, master_key, with_database},
    tools,
};
use payoutd_client::signing::{SignatureVersion, SignedRequest, Signer};

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
}

/// The account of the `i`th receiver for `method`, without its `receiver_id`.
fn method_account_body(method: PayoutMethod, i: usize) -> Value {
    match RailKind::of(method) {
        Some(kind) => account_body(kind, i),
        // The partner fails a transfer to an address whose local part starts with `invalid`
        // (the last receiver's).
        None => json!({
            "recipient": if i + 1 == RECEIVERS {
                format!("invalid.payee{i}@example.com")
            } else {
                format!("payee{i}@example.com")
            },
            "name": format!("Demo {}", LAST_NAMES[i % LAST_NAMES.len()]),
            "description": "Rails demo"
        }),
    }
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
    flags.finish()?;
    let options = Options {
        per_method,
        share,
        late_after: Duration::from_secs(10),
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
    println!("{line}");
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
    // Stop payoutd before collecting the files, so nothing changes under us.
    drop(server);
    drop(smtp);
    let partner_counters = partner.counters();
    partner.stop();
    let mut outcome = outcome?;
    let tally = responder.tally()?;
    drop(responder);
    bank.stop();

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

/// Everything a client and an operator do, then the wait for the results; the summary
/// without `files` and `ledger`.
fn drive(
    payoutd: &Payoutd,
    database_url: &str,
    addr: SocketAddr,
    mail_dir: &Path,
    others: &Counterparties<'_>,
    options: &Options,
    started: Instant,
) -> Result<Value, Failure> {
    let Counterparties { responder, partner } = *others;
    let created = payoutd.json(&[
        "admin",
        "create-subaccount",
        "--name",
        "Rails demo",
        "--email",
        "rails-demo@example.com",
        // The demo's client signs with v1 (docs/API.md, Signature policies).
        "--signature-policy",
        "any",
    ])?;
    let subaccount = field(&created, "subaccount_id")?;
    let key = payoutd.json(&["admin", "issue-key", "--subaccount", &subaccount])?;
    let mut api = Api::new(addr, &field(&key, "api_key")?, &field(&key, "api_secret")?);
    let currencies: BTreeSet<&str> = PayoutMethod::ALL.iter().map(|m| m.asset().code()).collect();
    for asset in currencies {
        payoutd.json(&[
            "admin",
            "fund",
            "--subaccount",
            &subaccount,
            "--asset",
            asset,
            "--amount",
            "10000000",
            "--reason",
            "rails demo float",
        ])?;
    }

    // Receivers, KYC by the operator, one account of each method each.
    let mut accounts: BTreeMap<PayoutMethod, Vec<(String, String)>> = BTreeMap::new();
    for i in 0..RECEIVERS {
        let receiver = api.post(
            "/api/receiver",
            &json!({
                "subaccount_id": subaccount, "first_name": "Demo", "last_name": LAST_NAMES[i % LAST_NAMES.len()],
                "email": format!("receiver{i}@example.com"), "dob": "1990-12-10", "dialcode": "1",
                "phone": "2025550100", "address": "1 Example Street", "city": "Springfield",
                "state": "IL", "postcode": "62701", "country": "USA"
            }),
        )?;
        let receiver = payload_str(&receiver, "receiver_id")?;
        let decided = payoutd.json(&[
            "admin",
            "kyc",
            "--receiver",
            &receiver,
            "--decision",
            "completed",
        ])?;
        if field(&decided, "kyc_status")? != "completed" {
            return Err(Failure::new(
                "`payoutd admin kyc --decision completed` to complete KYC",
                format!("{decided}"),
            ));
        }
        for &method in PayoutMethod::ALL {
            let mut body = method_account_body(method, i);
            body["receiver_id"] = json!(receiver);
            let account = api.post(&format!("/api/receiver-account/{}", method.route()), &body)?;
            accounts.entry(method).or_default().push((
                receiver.clone(),
                payload_str(&account, "receiver_account_id")?,
            ));
        }
    }

    // The confirmation e-mails: one per account; POST each link.
    let expected = PayoutMethod::ALL.len() * RECEIVERS;
    let mut links = Vec::new();
    wait_until(started, &format!("{expected} confirmation e-mails"), || {
        links = confirmation_links(mail_dir)?;
        Ok(if links.len() >= expected {
            Wait::Done
        } else {
            Wait::Pending(format!("{} in {}", links.len(), mail_dir.display()))
        })
    })?;
    for link in &links {
        let path = link
            .strip_prefix(&format!("http://{addr}"))
            .ok_or_else(|| {
                format!("the link {link:?} does not point at payoutd (http://{addr})")
            })?;
        let (status, body) = http(addr, "POST", path, &[], b"")?;
        if status != 200 {
            return Err(Failure::new(
                "200 to the POST of a confirmation link",
                format!("{status}: {body}"),
            ));
        }
    }
    for (_, account) in accounts.values().flatten() {
        let shown = api.get(&format!("/api/receiver-account/{account}"))?;
        let status = payload_str(&shown, "confirm_status")?;
        if status != "confirmed" {
            return Err(Failure::new(
                format!("account {account} confirmed once its link was posted"),
                format!("it is {status}"),
            ));
        }
    }

    // The payouts.
    let mut payouts = Vec::new();
    for &method in PayoutMethod::ALL {
        let accounts = accounts
            .get(&method)
            .ok_or_else(|| format!("no {} accounts", method.route()))?;
        let currency = method.asset().code();
        for n in 0..options.per_method {
            let (receiver, account) = &accounts[n % accounts.len()];
            let created = api.post(
                "/api/payout/single",
                &json!({"receiver_id": receiver, "account_id": account, "amount": 1000 + n, "currency": currency}),
            )?;
            payouts.push(payload_str(&created, "payout_id")?);
        }
    }
    eprintln!(
        "rails-demo: [{:>3} s] {} payouts created; waiting for the cut-offs and the bank's \
         answers",
        started.elapsed().as_secs(),
        payouts.len()
    );

    // Wait: every payout final, and every refusal and return of the bank and the partner
    // applied. "Final" alone is not enough: with same-day settlement a payout is successful
    // before the bank's first answer, which fails it (a return after settlement) only once
    // payoutd reads that answer. payoutd reads a rail's inbound files in name order, so when one
    // pass finds both of the bank's answers, `…-late-returns` comes before `…-returns`: waiting
    // only for the late returns ended the wait between the two, and the check below then found
    // the first answer's refusals not applied (one run in five in CI).
    let mut seen_successful = BTreeSet::new();
    let mut last: BTreeMap<String, (String, String)> = BTreeMap::new();
    let expected = format!(
        "all {} payouts final, the bank's and the partner's answers applied",
        payouts.len()
    );
    wait_until(started, &expected, || {
        let tally = responder.tally()?;
        if !tally.unreadable.is_empty() {
            return Err(unreadable(&tally));
        }
        for id in &payouts {
            let shown = api.get(&format!("/api/payout/{id}"))?;
            let status = payload_str(&shown, "status")?;
            let reference = shown["payload"]["provider_reference"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if status == "successful" {
                seen_successful.insert(id.clone());
            }
            last.insert(id.clone(), (status, reference));
        }
        Ok(
            match still_waiting(&last, &tally, &partner.statuses(), payouts.len()) {
                None => Wait::Done,
                Some(progress) => Wait::Pending(format!(
                    "{progress}; the slowest API call so far: {}",
                    api.slowest()
                )),
            },
        )
    })?;
    let tally = responder.tally()?;
    if !tally.unreadable.is_empty() {
        return Err(unreadable(&tally));
    }
    let successful = last.values().filter(|(s, _)| s == "successful").count();
    let failed = last.values().filter(|(s, _)| s == "failed").count();
    let seen_returned = last
        .iter()
        .filter(|(id, (s, _))| s == "failed" && seen_successful.contains(*id))
        .count();
    // payoutd's results must be the bank's decisions: every refusal and return applied (the
    // wait saw to that), and no other payout failed.
    let failed_refs = failed_references(&last);
    let bank_failed = refused(&tally, &partner.statuses());
    if failed_refs != bank_failed {
        return Err(Failure::new(
            format!(
                "payoutd to fail the payouts the bank and the partner refused or returned, {bank_failed:?}"
            ),
            format!("it failed {failed_refs:?}"),
        ));
    }
    // Returned: failed after settlement, with the amount credited back (`payout_return`).
    let returned = returned_payouts(database_url)?;
    if returned < tally.returned_late.len().max(seen_returned) || returned > failed {
        return Err(Failure::new(
            format!(
                "a payout_return ledger entry for at least the {} payouts the bank returned after \
                 settlement and the {seen_returned} seen successful then failed, and for at most \
                 the {failed} failed",
                tally.returned_late.len()
            ),
            format!("{returned}"),
        ));
    }
    Ok(json!({
        "methods": PayoutMethod::ALL.len(),
        "payouts": payouts.len(),
        "successful": successful,
        "failed": failed,
        "returned": returned,
    }))
}

/// Copies every file payoutd sent (its stored bytes) to `sent_dir`, checks each is what the
/// bank received, and validates it; the number of files.
/// What payoutd sent: files to the bank, batch requests to the Interac partner.
struct Sent {
    files: usize,
    batch_requests: usize,
}

fn collect_sent(
    payoutd: &Payoutd,
    bank: &Bank,
    sent_dir: &Path,
    xml_tools: &iso20022::Tools,
) -> Result<Sent, String> {
    let mut sent = Sent {
        files: 0,
        batch_requests: 0,
    };
    let mut command = payoutd.command(&["admin", "rail-files", "--limit", "1000"]);
    let listing = cmd::stdout(&mut command)?;
    let files: Vec<Value> = serde_json::from_str(listing.trim())
        .map_err(|err| format!("`admin rail-files` printed no list: {err}"))?;
    for file in &files {
        let id = field(file, "id")?;
        let name = field(file, "name")?;
        let method = field(file, "method")?;
        let raw = payoutd
            .command(&["admin", "rail-file", "--id", &id, "--raw"])
            .output()
            .map_err(|err| format!("cannot run payoutd admin rail-file: {err}"))?;
        if !raw.status.success() {
            return Err(format!("`payoutd admin rail-file --id {id} --raw` failed"));
        }
        bank::copy_into(sent_dir, &name, &raw.stdout)?;
        let method = PayoutMethod::from_route(&method).ok_or_else(|| {
            format!("file {name} is of method {method}, which payoutd does not have")
        })?;
        let Some(kind) = RailKind::of(method) else {
            bank_formats::interac::BatchRequest::parse(&raw.stdout)
                .map_err(|err| format!("{name} is not a valid Interac batch request: {err}"))?;
            sent.batch_requests += 1;
            continue;
        };
        sent.files += 1;
        let rail = bank
            .rail(kind)
            .ok_or_else(|| format!("no rail {}", kind.route()))?;
        let at_bank = rail.read.join(&name);
        if fs::read(&at_bank).ok().as_deref() != Some(raw.stdout.as_slice()) {
            return Err(format!(
                "{name}: the bank did not receive the bytes payoutd stored"
            ));
        }
        check_sent(kind, &raw.stdout, &sent_dir.join(&name), xml_tools)
            .map_err(|err| format!("{name}: {err}"))?;
    }
    Ok(sent)
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

/// The production configuration: every rail of the bank over SFTP, a cut-off every minute on
/// weekdays (bank file rails never open their weekends; `cad/digital`'s partner works every
/// day), same-day settlement, the mail catcher on loopback, manual KYC.
fn render_config(bank: &Bank, partner_url: &str, smtp_port: u16) -> Result<String, String> {
    let rails = RailKind::all()
        .map(|kind| {
            let rail = bank
                .rail(kind)
                .ok_or_else(|| format!("the bank has no {} rail", kind.route()))?;
            Ok((
                kind,
                rail.outbound.display().to_string(),
                rail.inbound.display().to_string(),
            ))
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(config_text(&ConfigInputs {
        port: bank.port,
        user: bank.user.clone(),
        private_key: bank.client_key.display().to_string(),
        host_key: bank.host_key.clone(),
        rails,
        partner_url: partner_url.to_owned(),
        smtp_port,
    }))
}

struct ConfigInputs {
    port: u16,
    user: String,
    private_key: String,
    host_key: String,
    /// Each rail with its outbound and inbound directories.
    rails: Vec<(RailKind, String, String)>,
    /// The Interac partner's API.
    partner_url: String,
    smtp_port: u16,
}

/// A TOML basic string.
fn toml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// The originator settings of the rail of `kind` (TOML lines).
fn format_settings(kind: RailKind) -> &'static str {
    match kind {
        RailKind::Ach => {
            "immediate_destination = \"021000021\"\n\
             immediate_destination_name = \"BANK SIMULATOR\"\n\
             immediate_origin = \"1234567890\"\n\
             immediate_origin_name = \"PAYOUTD DEMO\"\n\
             company_name = \"PAYOUTD DEMO\"\n\
             company_id = \"1234567890\"\n\
             odfi_routing = \"02100002\"\n\
             entry_description = \"PAYOUT\"\n"
        }
        RailKind::Sepa => {
            "debtor_name = \"Payoutd Demo GmbH\"\n\
             debtor_iban = \"DE89370400440532013000\"\n\
             debtor_bic = \"COBADEFFXXX\"\n\
             initiating_party_name = \"Payoutd Demo GmbH\"\n"
        }
        RailKind::DirectEntry => {
            "bank_mnemonic = \"CBA\"\n\
             user_name = \"PAYOUTD DEMO PTY LTD\"\n\
             apca_user_id = \"301500\"\n\
             description = \"PAYOUTS\"\n\
             remitter_name = \"PAYOUTD DEMO\"\n\
             trace_bsb = \"062000\"\n\
             trace_account = \"10203040\"\n\
             self_balancing = true\n"
        }
        RailKind::Eft => {
            "originator_id = \"PAYOUTD001\"\n\
             data_centre = \"00310\"\n\
             originator_short_name = \"PAYOUTD DEMO\"\n\
             originator_long_name = \"PAYOUTD DEMO INC\"\n\
             return_institution = \"000312345\"\n\
             return_account = \"1234567\"\n\
             transaction_code = 450\n"
        }
        RailKind::DirectCredit => {
            "originating_account = \"0109020068389099\"\n\
             originator_name = \"PAYOUTD DEMO\"\n"
        }
    }
}

fn config_text(c: &ConfigInputs) -> String {
    let cutoffs: Vec<String> = (0..24 * 60)
        .map(|m| format!("\"{:02}:{:02}\"", m / 60, m % 60))
        .collect();
    let cutoffs = cutoffs.join(", ");
    let mut text =
        String::from("# Written by `cargo xtask rails-demo`: the local bank simulator's rails.\n");
    for (kind, outbound, inbound) in &c.rails {
        let route = kind.route();
        text.push_str(&format!(
            "[rails.\"{route}\"]\n\
             file_prefix = \"DEMO\"\n\
             cutoffs = [{cutoffs}]\n\
             settlement_days = 0\n\
             {format}\
             \n[rails.\"{route}\".transport]\n\
             kind = \"sftp\"\nhost = \"127.0.0.1\"\nport = {port}\nuser = {user}\nprivate_key = {key}\n\
             host_key = {host_key}\noutbound_dir = {outbound}\ninbound_dir = {inbound}\npoll_interval_secs = 10\n\n",
            format = format_settings(*kind),
            port = c.port,
            user = toml_string(&c.user),
            key = toml_string(&c.private_key),
            host_key = toml_string(&c.host_key),
            outbound = toml_string(outbound),
            inbound = toml_string(inbound),
        ));
    }
    text.push_str(&format!(
        "[rails.\"{route}\"]\n\
         file_prefix = \"DEMO\"\n\
         cutoffs = [{cutoffs}]\n\
         open_on_weekends = true\n\
         settlement_days = 0\n\
         partner_customer_id = \"PAYOUTD-DEMO\"\n\
         sender_name = \"Payoutd Demo\"\n\
         expiry_days = 30\n\
         \n[rails.\"{route}\".transport]\n\
         kind = \"partner_api\"\n\
         base_url = {url}\n\
         shared_secret = \"env:PAYOUT_INTERAC_SECRET\"\n\
         poll_interval_secs = 10\n\n",
        route = PayoutMethod::Digital.route(),
        url = toml_string(&c.partner_url),
    ));
    text.push_str(&format!(
        "[smtp]\n\
         host = \"127.0.0.1\"\n\
         port = {smtp_port}\n\
         tls = \"none\"\n\
         from = \"payouts@example.com\"\n\
         timeout_secs = 10\n\
         \n[kyc]\n\
         provider = \"manual\"\n",
        smtp_port = c.smtp_port,
    ));
    text
}

/// Checks a file payoutd sent on the rail of `kind` (its copy at `path`).
fn check_sent(
    kind: RailKind,
    bytes: &[u8],
    path: &Path,
    xml_tools: &iso20022::Tools,
) -> Result<(), String> {
    match kind {
        RailKind::Ach => bank_formats::nacha::parse(bytes)
            .map(drop)
            .map_err(|err| format!("not a valid NACHA file: {err}")),
        RailKind::Sepa => xml_tools.validate_pain001(path),
        RailKind::DirectEntry => {
            bank_format_oracles::aba::check(bytes, bank_format_oracles::aba::Kind::Originated)?;
            bank_formats::aba::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid ABA file: {err}"))
        }
        RailKind::Eft => {
            bank_format_oracles::cpa005::check(bytes, b"\r\n").map_err(|errs| errs.join("; "))?;
            bank_formats::cpa005::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid Standard 005 file: {err}"))
        }
        RailKind::DirectCredit => match bank_format_oracles::ib4b::check(bytes)? {
            bank_format_oracles::ib4b::Kind::DirectCredit => bank_formats::ib4b::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid IB4B file: {err}")),
            bank_format_oracles::ib4b::Kind::Dishonour => {
                Err("a dishonour file, not a direct credit file".to_owned())
            }
        },
    }
}

/// Checks a file the bank wrote on the rail of `kind`.
fn check_answer(kind: RailKind, bytes: &[u8]) -> Result<(), String> {
    match kind {
        RailKind::Ach => bank_formats::nacha::parse(bytes)
            .map(drop)
            .map_err(|err| format!("not a valid NACHA file: {err}")),
        RailKind::Sepa => bank_formats::iso20022::parse_pain002(bytes)
            .map(drop)
            .map_err(|err| format!("not a valid pain.002: {err}")),
        RailKind::DirectEntry => {
            bank_format_oracles::aba::check(bytes, bank_format_oracles::aba::Kind::Returns)?;
            bank_formats::aba::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid ABA return file: {err}"))
        }
        RailKind::Eft => {
            bank_format_oracles::cpa005::check(bytes, b"\r\n").map_err(|errs| errs.join("; "))?;
            bank_formats::cpa005::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid Standard 005 file: {err}"))
        }
        RailKind::DirectCredit => match bank_format_oracles::ib4b::check(bytes)? {
            bank_format_oracles::ib4b::Kind::Dishonour => bank_formats::ib4b::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid IB4B dishonour file: {err}")),
            bank_format_oracles::ib4b::Kind::DirectCredit => {
                Err("a direct credit file, not a dishonour file".to_owned())
            }
        },
    }
}

/// The account of the `i`th receiver for `kind`, without its `receiver_id`.
fn account_body(kind: RailKind, i: usize) -> Value {
    match kind {
        RailKind::Ach => json!({
            "routing_number": "021000021",
            "account_number": format!("{}", 100_200_300 + i),
            "account_type": "checking"
        }),
        RailKind::Sepa => json!({
            "iban": german_iban("37040044", 532_013_000 + i as u64),
            "bic": "COBADEFFXXX"
        }),
        RailKind::DirectEntry => json!({
            "bsb": "012-002",
            "account_number": format!("{}", 12_345_670 + i)
        }),
        RailKind::Eft => json!({
            "routing_number": "12345-003",
            "account_number": format!("{}", 7_654_321 + i),
            "account_type": "checking"
        }),
        // The suffix is not covered by the check digits of bank 01.
        RailKind::DirectCredit => json!({"account_number": format!("01-902-0068389-{i:02}")}),
    }
}

/// A German IBAN for bank code `blz` (8 digits) and `account` (up to 10 digits).
fn german_iban(blz: &str, account: u64) -> String {
    let bban = format!("{blz}{account:010}");
    // Check digits: BBAN + "DE00" as digits (D = 13, E = 14), mod 97.
    let digits = format!("{bban}131400");
    let remainder = digits
        .bytes()
        .fold(0u32, |acc, b| (acc * 10 + u32::from(b - b'0')) % 97);
    format!("DE{:02}{bban}", 98 - remainder)
}

/// Starts the mail catcher on a free port: `(process, port)`.
fn start_smtp(python: &Path, out: &Path) -> Result<(Guard, u16), String> {
    let script = paths::workspace_root().join("crates/adapters-smtp/tests/support/smtp_server.py");
    let port = bank::free_port()?;
    let mut child = Command::new(python)
        .arg(&script)
        .arg("--port")
        .arg(port.to_string())
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|err| {
            format!(
                "cannot run {} {}: {err}",
                python.display(),
                script.display()
            )
        })?;
    let stdout = child.stdout.take();
    let guard = Guard(Some(child));
    let mut line = String::new();
    if let Some(stdout) = stdout {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    if line.trim() != "READY" {
        return Err(format!("the SMTP server did not start (it said {line:?})"));
    }
    Ok((guard, port))
}

/// The confirmation links in the captured messages.
fn confirmation_links(dir: &Path) -> Result<Vec<String>, String> {
    let mut links = Vec::new();
    for name in bank::complete_files(dir)? {
        let path = dir.join(&name);
        let text = fs::read_to_string(&path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        let record: Value =
            serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?;
        let data = record["data"].as_str().unwrap_or_default();
        if let Some(link) = find_link(data) {
            links.push(link);
        }
    }
    Ok(links)
}

/// The first `http…/confirm/<token>` link in a message (soft line breaks of quoted-printable
/// removed).
fn find_link(message: &str) -> Option<String> {
    let text = message.replace("=\r\n", "").replace("=\n", "");
    let at = text.find("/confirm/")?;
    let start = text[..at].rfind("http")?;
    let end = text[at + "/confirm/".len()..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map_or(text.len(), |i| at + "/confirm/".len() + i);
    Some(text[start..end].to_owned())
}

/// Where a wait stands.
enum Wait {
    Done,
    /// Not yet: what is still missing, for the failure should the deadline pass.
    Pending(String),
}

/// Calls `check` every second until it is done; [`OVERALL_TIMEOUT`] after `started`, a failure
/// expecting `what` and saying where it stood.
fn wait_until(
    started: Instant,
    what: &str,
    mut check: impl FnMut() -> Result<Wait, Failure>,
) -> Result<(), Failure> {
    let deadline = started + OVERALL_TIMEOUT;
    let mut told = Instant::now();
    loop {
        let pending = match check()? {
            Wait::Done => return Ok(()),
            Wait::Pending(pending) => pending,
        };
        if told.elapsed() >= PROGRESS_EVERY {
            eprintln!(
                "rails-demo: [{:>3} s] waiting for {what}: {pending}",
                started.elapsed().as_secs()
            );
            told = Instant::now();
        }
        if Instant::now() > deadline {
            return Err(Failure::new(
                format!("{what} within {} s of the start", OVERALL_TIMEOUT.as_secs()),
                pending,
            ));
        }
        thread::sleep(Duration::from_secs(1));
    }
}

/// The references of the payouts payoutd shows failed.
fn failed_references(last: &BTreeMap<String, (String, String)>) -> BTreeSet<String> {
    last.values()
        .filter(|(status, _)| status == "failed")
        .map(|(_, reference)| reference.clone())
        .collect()
}

/// The references the bank refused or returned (before or after settlement, as far as it has
/// written them) and the payments the partner reported not deposited in a final report.
fn refused(tally: &Tally, partner: &BTreeMap<String, &'static str>) -> BTreeSet<String> {
    tally
        .rejected
        .iter()
        .chain(&tally.returned_late)
        .cloned()
        .chain(
            partner
                .iter()
                .filter(|(_, status)| !matches!(**status, "sent" | "deposited"))
                .map(|(payment, _)| payment.clone()),
        )
        .collect()
}

/// Where the wait stands, or `None` once it is over: every payout final, every file and
/// partner payment answered, no late return still held by the bank, and every refusal and
/// return of the bank and the partner applied by payoutd. `last` holds each payout's status and
/// reference as payoutd shows them.
fn still_waiting(
    last: &BTreeMap<String, (String, String)>,
    tally: &Tally,
    partner: &BTreeMap<String, &'static str>,
    payouts: usize,
) -> Option<String> {
    let all_final = last
        .values()
        .all(|(status, _)| status == "successful" || status == "failed");
    let partner_final = partner.values().filter(|status| **status != "sent").count();
    let failed = failed_references(last);
    let unapplied: Vec<String> = refused(tally, partner)
        .into_iter()
        .filter(|reference| !failed.contains(reference))
        .collect();
    let answered = tally.late_pending == 0 && tally.payments + partner_final == payouts;
    (!(all_final && answered && unapplied.is_empty()))
        .then(|| payout_progress(last, tally, partner_final, &unapplied))
}

/// Where the payouts stand: how many in each status, the answers not applied yet, and a few of
/// the payouts still waiting.
fn payout_progress(
    last: &BTreeMap<String, (String, String)>,
    tally: &Tally,
    partner_final: usize,
    unapplied: &[String],
) -> String {
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for (status, _) in last.values() {
        *by_status.entry(status).or_default() += 1;
    }
    let counts: Vec<String> = by_status
        .iter()
        .map(|(status, n)| format!("{n} {status}"))
        .collect();
    let waiting: Vec<String> = last
        .iter()
        .filter(|(_, (status, _))| status != "successful" && status != "failed")
        .take(3)
        .map(|(id, (status, reference))| format!("{id} {status} ({reference})"))
        .collect();
    format!(
        "payouts {}; the bank answered {} payments in {} files and holds {} late returns; the \
         partner finished {partner_final}; refusals and returns not applied by payoutd yet: \
         {}{}",
        counts.join(", "),
        tally.payments,
        tally.files_read,
        tally.late_pending,
        if unapplied.is_empty() {
            "none".to_owned()
        } else {
            format!("{} ({})", unapplied.len(), unapplied.join(", "))
        },
        if waiting.is_empty() {
            String::new()
        } else {
            format!("; waiting: {}", waiting.join(", "))
        }
    )
}

/// The failure for files the bank could not read.
fn unreadable(tally: &Tally) -> Failure {
    Failure::new(
        "the bank to read every file payoutd sent",
        format!(
            "it could not read {:?} (its reasons above)",
            tally.unreadable
        ),
    )
}

/// How many payouts were returned after settlement: those with a `payout_return` ledger entry.
fn returned_payouts(database_url: &str) -> Result<usize, String> {
    let psql = postgres::find_client("psql")
        .ok_or_else(|| "psql (PostgreSQL's client) is missing".to_owned())?;
    let out = cmd::stdout(Command::new(psql).arg(database_url).args([
        "-Atc",
        "SELECT count(DISTINCT payout_id) FROM ledger_entries WHERE kind = 'payout_return'",
    ]))?;
    out.trim()
        .parse()
        .map_err(|_| format!("psql printed {out:?} for the count of returns"))
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

/// Signed calls to payoutd's API (v2 signatures, by the client crate's signer).
struct Api {
    addr: SocketAddr,
    signer: Signer,
    /// The slowest call so far, as the client saw it: how long, and which.
    slowest: Option<(Duration, String)>,
}

impl Api {
    fn new(addr: SocketAddr, key: &str, secret: &str) -> Self {
        Self {
            addr,
            signer: Signer::new(key, secret),
            slowest: None,
        }
    }

    /// The slowest call so far, for progress lines.
    fn slowest(&self) -> String {
        self.slowest.as_ref().map_or_else(
            || "none".to_owned(),
            |(took, call)| format!("{call} in {:.2} s", took.as_secs_f64()),
        )
    }

    fn call(&mut self, method: &str, path: &str, body: &[u8]) -> Result<Value, Failure> {
        // payoutd may run days back (a weekend): the nonce is by the demo's clock, which is
        // payoutd's, so it is inside the freshness window.
        let now = clock::unix_millis().map_err(|err| Failure::new("a clock", err))?;
        let nonce = self.signer.next_nonce_at(now);
        let signature = self.signer.signature(
            nonce,
            SignatureVersion::V2,
            &SignedRequest {
                method,
                path_and_query: path,
                body,
            },
        );
        let headers = [
            ("x-api-key", self.signer.api_key().to_owned()),
            ("x-signature-version", "2".to_owned()),
            ("signature", signature),
            ("content-type", "application/json".to_owned()),
        ];
        let sent = Instant::now();
        let answer = http(self.addr, method, path, &headers, body);
        let took = sent.elapsed();
        if self
            .slowest
            .as_ref()
            .is_none_or(|(slowest, _)| took > *slowest)
        {
            self.slowest = Some((took, format!("{method} {path}")));
        }
        let (status, text) = answer.map_err(|err| {
            Failure::new(
                format!("an answer to {method} {path}"),
                format!("{err} after {:.1} s", took.as_secs_f64()),
            )
        })?;
        if status != 200 {
            return Err(Failure::new(
                format!("200 to {method} {path}"),
                format!("{status}: {text}"),
            ));
        }
        serde_json::from_str(&text).map_err(|err| {
            Failure::new(
                format!("JSON in the answer to {method} {path}"),
                format!("{err}: {text}"),
            )
        })
    }

    fn get(&mut self, path: &str) -> Result<Value, Failure> {
        self.call("GET", path, b"")
    }

    fn post(&mut self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.call("POST", path, body.to_string().as_bytes())
    }
}

/// `payload.<name>` of an answer, as a string.
fn payload_str(answer: &Value, name: &str) -> Result<String, String> {
    answer["payload"][name]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no payload.{name} in {answer}"))
}

/// One HTTP/1.1 request over loopback: `(status, body)`.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<(u16, String), String> {
    let fail = |err: std::io::Error| format!("{method} {path}: {err}");
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(fail)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(fail)?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).map_err(fail)?;
    stream.write_all(body).map_err(fail)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(fail)?;
    parse_response(&answer).ok_or_else(|| format!("{method} {path}: not an HTTP response"))
}

fn parse_response(answer: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.contains("chunked"));
    if !chunked {
        return Some((status, body.to_owned()));
    }
    let mut rest = body;
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some((status, out));
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
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

    #[test]
    fn the_wait_lasts_until_every_refusal_is_applied_not_only_until_all_are_final() {
        // The run that failed: same-day settlement made every payout final at once; the
        // partner's and the late returns were applied, the bank's first answer (a refusal of
        // NZ-2, settled already) was not read yet.
        let payout = |status: &str, reference: &str| (status.to_owned(), reference.to_owned());
        let mut last = BTreeMap::from([
            ("p1".to_owned(), payout("successful", "NZ-1")),
            ("p2".to_owned(), payout("successful", "NZ-2")),
            ("p3".to_owned(), payout("failed", "NZ-3")),
            ("p4".to_owned(), payout("failed", "pay-4")),
        ]);
        let tally = Tally {
            files_read: 1,
            files_written: 2,
            payments: 3,
            rejected: vec!["NZ-2".to_owned()],
            returned_late: vec!["NZ-3".to_owned()],
            late_pending: 0,
            ..Tally::default()
        };
        let partner = BTreeMap::from([("pay-4".to_owned(), "declined")]);
        let waiting = still_waiting(&last, &tally, &partner, 4);
        assert!(
            waiting
                .as_deref()
                .is_some_and(|w| w.contains("not applied by payoutd yet: 1 (NZ-2)")),
            "{waiting:?}"
        );
        last.insert("p2".to_owned(), payout("failed", "NZ-2"));
        assert_eq!(still_waiting(&last, &tally, &partner, 4), None);
        // Nor is it over while the partner has not decided, or the bank holds a late return.
        let sent = BTreeMap::from([("pay-4".to_owned(), "sent")]);
        assert!(still_waiting(&last, &tally, &sent, 4).is_some());
        let holding = Tally {
            late_pending: 1,
            ..tally.clone()
        };
        assert!(still_waiting(&last, &holding, &partner, 4).is_some());
    }

    #[test]
    fn ibans_have_valid_check_digits() {
        assert_eq!(
            german_iban("37040044", 532_013_000),
            "DE89370400440532013000"
        );
        let other = german_iban("37040044", 532_013_001);
        assert!(other.starts_with("DE") && other.len() == 22, "{other}");
        assert!(bank_codes::iban::is_electronic(&other), "{other}");
    }

    #[test]
    fn the_config_enables_every_rail_over_sftp() {
        let text = config_text(&ConfigInputs {
            port: 2222,
            user: "demo".to_owned(),
            private_key: "/b/ssh/client_ed25519".to_owned(),
            host_key: "ssh-ed25519 AAAA payoutd-bank".to_owned(),
            rails: RailKind::all()
                .map(|kind| {
                    (
                        kind,
                        format!("/b/{}/outbound", kind.dir_name()),
                        format!("/b/{}/inbound", kind.dir_name()),
                    )
                })
                .collect(),
            partner_url: "http://127.0.0.1:4000".to_owned(),
            smtp_port: 2525,
        });
        assert!(text.contains(
            "[rails.\"usd/ach\".transport]\nkind = \"sftp\"\nhost = \"127.0.0.1\"\nport = 2222\n"
        ));
        assert!(text.contains("[rails.\"eur/sepa\".transport]"));
        assert!(text.contains("outbound_dir = \"/b/eur-sepa/outbound\""));
        assert!(text.contains("host_key = \"ssh-ed25519 AAAA payoutd-bank\""));
        assert_eq!(
            text.matches("settlement_days = 0").count(),
            PayoutMethod::ALL.len()
        );
        assert!(text.contains(
            "[rails.\"cad/digital\".transport]\nkind = \"partner_api\"\nbase_url = \"http://127.0.0.1:4000\"\n"
        ));
        // Only cad/digital opens its weekends: the bank's rails settle on weekdays.
        assert_eq!(text.matches("open_on_weekends = true").count(), 1);
        assert!(text.contains("[rails.\"cad/digital\"]\nfile_prefix = \"DEMO\"\ncutoffs"));
        assert!(text.contains("\"00:00\", \"00:01\""));
        assert!(text.contains("\"23:59\"]"));
        assert!(text.contains("port = 2525\ntls = \"none\""));
    }

    #[test]
    fn confirmation_links_are_found() {
        let plain =
            "Confirm them by opening this link:\nhttp://127.0.0.1:8080/confirm/abc_DEF-1\n\nThe";
        assert_eq!(
            find_link(plain).as_deref(),
            Some("http://127.0.0.1:8080/confirm/abc_DEF-1")
        );
        let wrapped = "link:\nhttp://127.0.0.1:8080/confirm/abc=\r\n_DEF\n";
        assert_eq!(
            find_link(wrapped).as_deref(),
            Some("http://127.0.0.1:8080/confirm/abc_DEF")
        );
        assert_eq!(find_link("no link here"), None);
    }

    #[test]
    fn responses_plain_and_chunked() {
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"),
            Some((200, "{}".to_owned()))
        );
        assert_eq!(
            parse_response(b"HTTP/1.1 400 Bad\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"),
            Some((400, "abcde".to_owned()))
        );
        assert_eq!(parse_response(b"garbage"), None);
    }
}
