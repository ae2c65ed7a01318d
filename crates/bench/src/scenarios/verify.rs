//! `verify`: `POST /api/receiver-account/verify` latency at a small and a large number of
//! accounts in one subaccount.
//!
//! For each size: a fresh database `payoutd_bench_<n>` (migrated by payoutd), one subaccount
//! with one API key per load worker, `n` receivers with one account each seeded in bulk, then
//! `VACUUM (ANALYZE)`, and a `payoutd serve` of its own (sandbox, fresh master key). Both sizes
//! are warmed up, then measured in alternating rounds (small, large, large, small, ...), so that
//! anything else running on the machine weighs on both alike. Requests cycle through four kinds,
//! a quarter each:
//!
//! - `exact`: every field of an existing account, as a client would send them;
//! - `shared_routing`: only the routing number of an existing ACH or EFT account, a value
//!   shared by many accounts (partial match; the answer is the oldest of them);
//! - `unique_number`: only the account number of an existing account (partial match);
//! - `no_match`: every field of an account that does not exist (the usual check before creating
//!   one).
//!
//! Every answer is checked (`exists`, and for `exact` the account id), so a seeding mistake
//! shows up as `wrong` rather than as fast "not found" answers. The figure of merit is
//! p50(large) / p50(small), which should stay under `--max-ratio` (1.5): verify is an index
//! lookup whose cost must not grow with the number of accounts.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use domain::account::{AccountField, PayoutMethod};
use serde_json::{Value, json};
use uuid::Uuid;

use adapters_postgres::Vault;

use crate::Env;
use crate::db::BenchDb;
use crate::load::{self, Credentials, LoadConfig, LoadResult, Request, Workload};
use crate::report::{self, Row};
use crate::seed::generate::Generator;
use crate::seed::{self, SeedReport};
use crate::server::{Payoutd, Server, new_master_key};

/// Options of `verify`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Accounts in the small configuration.
    #[arg(long, default_value_t = 10_000)]
    accounts_small: u64,
    /// Accounts in the large configuration.
    #[arg(long, default_value_t = 1_000_000)]
    accounts_large: u64,
    /// Measured requests per configuration.
    #[arg(long, default_value_t = 20_000)]
    requests: u64,
    /// Requests in flight at once (one API key each).
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// The measured requests are split into this many rounds, alternating between the sizes.
    #[arg(long, default_value_t = 4)]
    rounds: u64,
    /// Unmeasured requests first, per size (default: a fifth of --requests, 100 to 5000).
    #[arg(long)]
    warmup: Option<u64>,
    /// Largest acceptable p50(large) / p50(small).
    #[arg(long, default_value_t = 1.5)]
    max_ratio: f64,
    /// Report the ratio verdict without failing on it (tiny smoke runs are too noisy to judge).
    #[arg(long)]
    advisory_ratio: bool,
    /// After each measured run, print EXPLAIN (ANALYZE, BUFFERS) of one query of each kind:
    /// the statements the account store runs, with their binds.
    #[arg(long)]
    explain: bool,
    /// Serve as during a master key rotation: payoutd also holds a previous key
    /// (`PAYOUT_PREVIOUS_MASTER_KEY`, one no row uses), so every verify looks up once per key.
    #[arg(long)]
    previous_key: bool,
}

/// The request kinds, in the order requests cycle through them.
const KINDS: [&str; 4] = ["exact", "shared_routing", "unique_number", "no_match"];

/// How a verify answer is judged.
enum Expect {
    /// `exists: true`, and this account when known (the oldest with those details).
    Found(Option<Uuid>),
    /// `exists: false`.
    Missing,
}

/// The verify requests of one configuration.
struct VerifyWorkload {
    generator: Generator,
    subaccount_id: String,
}

/// Fresh (never seeded) indices used for `no_match` lie in `seeded..seeded + FRESH`.
const FRESH: u64 = 1_000_000;

impl VerifyWorkload {
    /// The first seeded index from `start` on whose method satisfies `wanted`.
    fn find(&self, start: u64, wanted: impl Fn(PayoutMethod) -> bool) -> Option<u64> {
        let n = self.generator.seeded;
        (0..n.min(10_000))
            .map(|step| (start + step) % n)
            .find(|i| wanted(self.generator.method(*i)))
    }

    /// The matchable fields of account `i` as a client would send them.
    fn all_fields(&self, i: u64) -> anyhow::Result<Vec<(String, String)>> {
        let account = self.generator.account(i)?;
        Ok(account
            .raw
            .iter()
            .filter(|(field, _)| {
                AccountField::from_name(field).is_some_and(AccountField::matchable)
            })
            .map(|(field, value)| ((*field).to_owned(), value.clone()))
            .collect())
    }

    /// One query of kind `kind` picked by `h`: its `account_data` and the expected answer.
    fn query(&self, kind: usize, h: u64) -> anyhow::Result<(Vec<(String, String)>, Expect)> {
        let n = self.generator.seeded.max(1);
        let one_field = |i: u64, field: &str| -> anyhow::Result<Vec<(String, String)>> {
            let account = self.generator.account(i)?;
            let value = account
                .raw(field)
                .with_context(|| format!("account {i} has no {field}"))?;
            Ok(vec![(field.to_owned(), value.to_owned())])
        };
        match kind {
            0 => {
                let i = h % n;
                // One Australian account in 100 reuses an older one's number; if the branch is
                // the same too, the older account is the answer.
                let shared = i % 100 == 37 && self.generator.method(i) == PayoutMethod::DirectEntry;
                let expected = (!shared).then(|| self.generator.account_id(i));
                Ok((self.all_fields(i)?, Expect::Found(expected)))
            }
            1 => match self.find(h % n, |m| {
                matches!(m, PayoutMethod::Ach | PayoutMethod::Eft)
            }) {
                Some(i) => Ok((one_field(i, "routing_number")?, Expect::Found(None))),
                None => self.query(0, h),
            },
            2 => match self.find(h % n, |m| {
                !matches!(m, PayoutMethod::Sepa | PayoutMethod::Digital)
            }) {
                Some(i) => Ok((one_field(i, "account_number")?, Expect::Found(None))),
                None => self.query(0, h),
            },
            _ => {
                let i = self.generator.seeded + h % FRESH;
                Ok((self.all_fields(i)?, Expect::Missing))
            }
        }
    }
}

/// A pseudo-random number for request `seq`.
fn request_hash(seq: u64) -> u64 {
    let mut x = seq.wrapping_add(0x005E_ED0F_BE7C);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Workload for VerifyWorkload {
    type Tag = Expect;

    fn kinds(&self) -> &[&'static str] {
        &KINDS
    }

    fn request(&self, seq: u64) -> Request<Expect> {
        let kind = (seq % KINDS.len() as u64) as usize;
        let (fields, expect) = match self.query(kind, request_hash(seq)) {
            Ok(query) => query,
            // Generation was checked before the run; should it still fail, send an empty
            // query, which the service refuses (400) and the report counts as an error.
            Err(_) => (Vec::new(), Expect::Missing),
        };
        let account_data: serde_json::Map<String, Value> = fields
            .into_iter()
            .map(|(field, value)| (field, Value::String(value)))
            .collect();
        let body = json!({
            "subaccount_id": self.subaccount_id,
            "account_data": account_data,
        });
        Request {
            method: reqwest::Method::POST,
            path: "/api/receiver-account/verify".to_owned(),
            body: serde_json::to_vec(&body).unwrap_or_default(),
            headers: Vec::new(),
            kind,
            tag: expect,
        }
    }

    fn check(&self, expect: &Expect, body: &[u8]) -> bool {
        let Ok(answer) = serde_json::from_slice::<Value>(body) else {
            return false;
        };
        let exists = answer.get("exists").and_then(Value::as_bool);
        match expect {
            Expect::Missing => exists == Some(false),
            Expect::Found(None) => exists == Some(true),
            Expect::Found(Some(id)) => {
                exists == Some(true)
                    && answer.get("account_id").and_then(Value::as_str) == Some(&id.to_string())
            }
        }
    }
}

/// One size, seeded and served, and what was measured on it.
struct Prepared {
    accounts: u64,
    db: BenchDb,
    seed: SeedReport,
    vault: Arc<Vault>,
    subaccount: Uuid,
    workload: Arc<VerifyWorkload>,
    keys: Vec<Credentials>,
    server: Option<Server>,
    load: Option<LoadResult>,
    /// Per round: (p50 ms, requests per second, 1-minute load average before it).
    rounds: Vec<(f64, f64, Option<f64>)>,
    explain: Option<String>,
}

/// Runs the scenario: both sizes, the tables, the JSON file, the verdict.
pub async fn run(env: &Env, args: &Args) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(args.concurrency > 0, "--concurrency must be at least 1");
    anyhow::ensure!(
        args.accounts_small > 0 && args.accounts_large > args.accounts_small,
        "--accounts-large must be more than --accounts-small, which must be at least 1"
    );
    anyhow::ensure!(args.rounds > 0, "--rounds must be at least 1");
    let warmup = args
        .warmup
        .unwrap_or_else(|| (args.requests / 5).clamp(100, 5000));
    let sizes = [args.accounts_small, args.accounts_large];
    let dbs = sizes
        .iter()
        .map(|n| BenchDb::new(&env.server_url, &format!("payoutd_bench_{n}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let outcome = measure_all(env, args, &dbs, warmup).await;
    for db in &dbs {
        if env.keep_databases {
            eprintln!("payoutd-bench: kept database {} ({})", db.name, db.url);
        } else if let Err(e) = db.drop_if_exists().await {
            eprintln!("payoutd-bench: warning: could not drop {}: {e:#}", db.name);
        }
    }
    let measured = outcome?;
    report_all(env, args, warmup, &measured)
}

/// Prints the tables and the verdict, writes the JSON file, and picks the exit code.
fn report_all(
    env: &Env,
    args: &Args,
    warmup: u64,
    measured: &[Prepared],
) -> anyhow::Result<ExitCode> {
    let loads = measured
        .iter()
        .map(|m| m.load.as_ref().context("a size was not measured"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    println!();
    println!(
        "verify: POST /api/receiver-account/verify, {} requests per size in {} alternating rounds, \
         concurrency {}, warm-up {warmup}",
        args.requests, args.rounds, args.concurrency
    );
    for (m, load) in measured.iter().zip(&loads) {
        println!();
        println!(
            "{} accounts (seeded in {:.1} s, VACUUM ANALYZE {:.1} s)",
            m.accounts,
            m.seed.insert.as_secs_f64(),
            m.seed.vacuum_analyze.as_secs_f64()
        );
        let mut rows = vec![Row {
            label: "all".to_owned(),
            stats: &load.overall,
            throughput: Some(load.throughput()),
        }];
        rows.extend(load.per_kind.iter().map(|(kind, stats)| Row {
            label: (*kind).to_owned(),
            stats,
            throughput: None,
        }));
        report::print_table("query", &rows);
        if let Some(problem) = &load.first_problem {
            println!("first unexpected answer: {problem}");
        }
    }

    println!();
    let rows: Vec<Row<'_>> = measured
        .iter()
        .zip(&loads)
        .map(|(m, load)| Row {
            label: m.accounts.to_string(),
            stats: &load.overall,
            throughput: Some(load.throughput()),
        })
        .collect();
    report::print_table("accounts", &rows);
    let (small, large) = (&loads[0].overall, &loads[1].overall);
    let ratio = large.millis_at(0.5) / small.millis_at(0.5).max(1e-9);
    let pass = ratio <= args.max_ratio;
    let verdict = if pass { "PASS" } else { "FAIL" };
    println!(
        "p50({}) / p50({}) = {ratio:.2} (limit {}, {}): {verdict}{}",
        measured[1].accounts,
        measured[0].accounts,
        args.max_ratio,
        if args.previous_key {
            "two master keys, as during a rotation"
        } else {
            "one master key"
        },
        if args.advisory_ratio {
            " (advisory: at these sizes a lookup that sorts the accounts sharing a value costs \
             too little to show; the store's plan test catches it, the full run measures it)"
        } else {
            ""
        }
    );
    for m in measured {
        if let Some(explain) = &m.explain {
            println!("\nEXPLAIN ANALYZE with {} accounts:\n{explain}", m.accounts);
        }
    }

    let json = json!({
        "scenario": "verify",
        "endpoint": "POST /api/receiver-account/verify",
        "machine": report::machine_json(),
        "config": {
            "requests": args.requests,
            "rounds": args.rounds,
            "concurrency": args.concurrency,
            "warmup": warmup,
            "kinds": KINDS,
            "max_ratio": args.max_ratio,
            "master_keys": if args.previous_key { 2 } else { 1 },
        },
        "sizes": measured.iter().zip(&loads).map(|(m, load)| json!({
            "accounts": m.accounts,
            "seed": {
                "rows": m.seed.rows,
                "insert_s": m.seed.insert.as_secs_f64(),
                "rows_per_s": m.seed.rows as f64 / m.seed.insert.as_secs_f64().max(1e-9),
                "vacuum_analyze_s": m.seed.vacuum_analyze.as_secs_f64(),
            },
            "load": report::load_json(load),
            "rounds": m.rounds.iter().map(|(p50, rate, load_average)| json!({
                "p50_ms": p50,
                "requests_per_second": rate,
                "load_average_before": load_average,
            })).collect::<Vec<_>>(),
            "explain": m.explain,
        })).collect::<Vec<_>>(),
        "ratio": {
            "p50_large_over_small": ratio,
            "limit": args.max_ratio,
            "verdict": verdict,
            "advisory": args.advisory_ratio,
        },
    });
    let path = env.out_dir.join("verify.json");
    report::write_json(&path, &json)?;
    println!("\nresults: {}", path.display());

    let bad_answers: u64 = loads
        .iter()
        .map(|load| load.overall.errors + load.overall.wrong)
        .sum();
    if bad_answers > 0 {
        eprintln!("payoutd-bench: {bad_answers} requests failed or got a wrong answer");
        return Ok(ExitCode::FAILURE);
    }
    Ok(if pass || args.advisory_ratio {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Prepares both sizes, then measures them in alternating rounds (small then large, then large
/// then small, ...), so that whatever else the machine is doing weighs on both alike.
async fn measure_all(
    env: &Env,
    args: &Args,
    dbs: &[BenchDb],
    warmup: u64,
) -> anyhow::Result<Vec<Prepared>> {
    let mut prepared = Vec::new();
    for (db, accounts) in dbs.iter().zip([args.accounts_small, args.accounts_large]) {
        db.drop_if_exists().await?;
        prepared.push(prepare(env, args, db, accounts).await?);
    }
    for p in &prepared {
        let server = p.server.as_ref().context("server not running")?;
        eprintln!(
            "payoutd-bench: [{}] warming up ({warmup} requests)",
            p.accounts
        );
        let config = LoadConfig {
            rate: None,
            base_url: server.base_url.clone(),
            concurrency: args.concurrency,
            requests: warmup,
            duration: None,
            first_seq: 1 << 40,
            keys: p.keys.clone(),
        };
        load::run(Arc::clone(&p.workload), &config).await?;
    }
    let rounds = args.rounds;
    for round in 0..rounds {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let first = args.requests * round / rounds;
        let count = args.requests * (round + 1) / rounds - first;
        for index in order {
            let p = &mut prepared[index];
            let server = p.server.as_ref().context("server not running")?;
            let config = LoadConfig {
                rate: None,
                base_url: server.base_url.clone(),
                concurrency: args.concurrency,
                requests: count,
                duration: None,
                first_seq: first,
                keys: p.keys.clone(),
            };
            let load_average = report::load_average();
            let result = load::run(Arc::clone(&p.workload), &config).await?;
            let (p50, rate) = (result.overall.millis_at(0.5), result.throughput());
            eprintln!(
                "payoutd-bench: [{}] round {}/{rounds}: {count} requests, {rate:.0} req/s, p50 {p50:.3} ms (load average {})",
                p.accounts,
                round + 1,
                load_average.map_or_else(|| "?".to_owned(), |l| format!("{l:.2}"))
            );
            p.rounds.push((p50, rate, load_average));
            match &mut p.load {
                Some(total) => total.merge(result)?,
                None => p.load = Some(result),
            }
        }
    }
    for p in &mut prepared {
        if let Some(server) = p.server.take() {
            server.stop().await?;
        }
        if args.explain {
            p.explain = Some(explain(&p.db, &p.vault, p.subaccount, &p.workload).await?);
        }
    }
    Ok(prepared)
}

/// One size, from an empty database to a served, seeded one.
async fn prepare(env: &Env, args: &Args, db: &BenchDb, accounts: u64) -> anyhow::Result<Prepared> {
    let master_key = new_master_key();
    let previous_key = args.previous_key.then(new_master_key);
    let mut payoutd = Payoutd::new(&env.payoutd, &db.url, &master_key);
    if let Some(previous) = &previous_key {
        payoutd = payoutd.with_env("PAYOUT_PREVIOUS_MASTER_KEY", previous);
    }
    eprintln!(
        "payoutd-bench: [{accounts}] creating and migrating {}",
        db.name
    );
    payoutd.migrate().await?;
    let tenant = payoutd.tenant("Bench subaccount", args.concurrency).await?;
    let subaccount = Uuid::parse_str(&tenant.subaccount_id)?;

    let generator = Generator::new(accounts, 0x00BE_0C4A_11ED ^ accounts);
    let workload = Arc::new(VerifyWorkload {
        generator: generator.clone(),
        subaccount_id: tenant.subaccount_id.clone(),
    });
    // Every query the runs will send must be buildable (a cheap check of the generator).
    for seq in (0..args.requests).step_by(97) {
        for kind in 0..KINDS.len() {
            workload.query(kind, request_hash(seq))?;
        }
    }

    eprintln!("payoutd-bench: [{accounts}] seeding {accounts} receivers and accounts");
    let vault = Arc::new(seed::vault(&master_key)?);
    let seeded = seed::seed(db, Arc::clone(&vault), subaccount, &generator).await?;
    // What payoutd's store holds: the lookups --explain shows are the ones it runs.
    let serving_vault = match &previous_key {
        Some(previous) => Arc::new(seed::vault_rotating(&master_key, previous)?),
        None => Arc::clone(&vault),
    };
    eprintln!(
        "payoutd-bench: [{accounts}] seeded in {:.1} s ({:.0} rows/s), VACUUM ANALYZE {:.1} s",
        seeded.insert.as_secs_f64(),
        seeded.rows as f64 / seeded.insert.as_secs_f64().max(1e-9),
        seeded.vacuum_analyze.as_secs_f64()
    );
    seed::check_with_store(db, Arc::clone(&vault), subaccount, &generator).await?;

    if env.keep_databases {
        write_env_file(env, db, &master_key, &tenant)?;
    }
    let log = env.out_dir.join(format!("payoutd-verify-{accounts}.log"));
    let server = payoutd.serve(&log).await?;
    Ok(Prepared {
        accounts,
        db: db.clone(),
        seed: seeded,
        vault: serving_vault,
        subaccount,
        workload,
        keys: tenant.keys,
        server: Some(server),
        load: None,
        rounds: Vec::new(),
        explain: None,
    })
}

/// `<out dir>/<database>.env` (owner-only): what it takes to serve or query a kept database
/// again (its master key, subaccount and first API key).
fn write_env_file(
    env: &Env,
    db: &BenchDb,
    master_key: &str,
    tenant: &crate::server::Tenant,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;

    let path = env.out_dir.join(format!("{}.env", db.name));
    let mut text = format!(
        "DATABASE_URL={}\nPAYOUT_MASTER_KEY={master_key}\nBENCH_SUBACCOUNT={}\n",
        db.url, tenant.subaccount_id
    );
    if let Some(key) = tenant.keys.first() {
        text.push_str(&format!(
            "BENCH_API_KEY={}\nBENCH_API_SECRET={}\n",
            key.api_key, key.api_secret
        ));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!(
        "payoutd-bench: [{}] credentials of the kept database: {}",
        db.name,
        path.display()
    );
    Ok(())
}

/// EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) of one query of each kind, as the account store runs
/// it (`PgStore::explain_first_match`: its own statement text and binds, one statement per
/// configured key).
async fn explain(
    db: &BenchDb,
    vault: &Arc<Vault>,
    subaccount: Uuid,
    workload: &VerifyWorkload,
) -> anyhow::Result<String> {
    let mut config = adapters_postgres::DbConfig::new(db.url.clone());
    config.max_size = 1;
    let store = adapters_postgres::PgStore::new(
        adapters_postgres::create_pool(&config)?,
        Arc::clone(vault),
    );
    let subaccount = domain::ids::SubaccountId::from_uuid(subaccount);
    let mut out = String::new();
    for (kind, name) in KINDS.iter().enumerate() {
        let (raw, _) = workload.query(kind, request_hash(12_345 + kind as u64))?;
        // As verify asks the store: matchable fields, normalized as the domain does.
        let fields: Vec<(AccountField, String)> = raw
            .iter()
            .filter_map(|(field, value)| {
                let field = AccountField::from_name(field)?;
                Some((field, field.normalize_for_match(value)?))
            })
            .collect();
        let plans = store
            .explain_first_match(subaccount, &fields, adapters_postgres::Explain::Analyze)
            .await
            .map_err(|e| anyhow::anyhow!("explaining {name}: {e}"))?;
        let shown: Vec<&str> = fields.iter().map(|(field, _)| field.name()).collect();
        for (key, plan) in plans.iter().enumerate() {
            writeln!(
                out,
                "-- {name}: {} (key {} of {})",
                shown.join(", "),
                key + 1,
                plans.len()
            )?;
            writeln!(out, "{plan}")?;
        }
    }
    Ok(out)
}
