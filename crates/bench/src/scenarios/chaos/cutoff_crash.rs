//! The cut-off crash checks: `kill -9` of payoutd while the cut-off's NACHA file is being
//! generated, while it is being uploaded over SFTP, and after the upload before it is recorded;
//! then a restart, which must finish the
//! same cut-off: every file at the bank once and as stored, every payout in exactly one file and
//! paid once at the bank, every payout `in_progress`, the ledger balanced, every event delivered.
//!
//! The world is the cutoff scenario's (`cargo xtask bench cutoff`): a fresh database with one
//! funded subaccount whose payouts (seeded in bulk) wait in its open batch, payoutd in
//! production mode with the `usd/ach` rail over SFTP to the local bank (OpenSSH's sshd on
//! loopback, whose outbound directory the check watches), and `payoutd admin run-cutoff`.
//!
//! Where the kill lands is watched, not guessed: during generation, the batch is `queue` with a
//! runner's lease and no file is stored (the database, polled); during the upload, the file is
//! stored and its temporary `.<name>.part` is at the bank with some of its bytes; before the
//! record, the file is at the bank under its name (the bank's directory, polled on a thread of
//! its own). After the kill the check confirms it landed there (no file stored; the `.part`
//! still at the bank and the file not marked uploaded; the file at the bank still `generated`);
//! a kill that landed after its window is retried on a fresh world, and the check fails if none
//! of its attempts lands.

use std::collections::{BTreeMap, HashSet};
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Bytea, Text};
use diesel_async::RunQueryDsl;
use domain::account::PayoutMethod;
use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::world::{all_delivered, check_ledger};
use super::{Args, SERVER_ENV};
use crate::Env;
use crate::db::BenchDb;
use crate::receiver::Receiver;
use crate::scenarios::cutoff::bank::{self, BenchRail};
use crate::scenarios::cutoff::setup::{self, Prepared, Seeding, SftpBank};

/// The rail the checks cut off: NACHA over SFTP.
const METHOD: PayoutMethod = PayoutMethod::Ach;

/// Worlds a check seeds before it gives up on landing its kill in the window.
const ATTEMPTS: usize = 3;

/// The batch lease payoutd runs with (`PAYOUT_BATCH_LEASE_SECS`, 60 by default): how long after
/// the kill the restarted server takes the killed runner's batch over.
const LEASE_SECS: u64 = 10;

/// How long the watcher waits for its window before calling the attempt missed.
const WINDOW_TIMEOUT: Duration = Duration::from_secs(120);

/// Where a check kills payoutd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Window {
    /// While the cut-off's file is being generated: the batch is leased, no file is stored.
    Generation,
    /// While the stored file is being uploaded: its `.part` is at the bank, with some bytes.
    Upload,
    /// After the upload, before it is recorded: the file is at the bank under its name and
    /// still `generated` in the database (the restart's upload finds it there).
    Record,
}

impl Window {
    fn name(self) -> &'static str {
        match self {
            Self::Generation => "generation",
            Self::Upload => "upload",
            Self::Record => "record",
        }
    }
}

/// One kill-and-restart check at `window`.
pub(super) async fn cutoff_crash(
    env: &Env,
    args: &Args,
    window: Window,
    bank: &SftpBank,
) -> anyhow::Result<Result<String, String>> {
    let mut missed = Vec::new();
    for attempt in 1..=ATTEMPTS {
        let receiver = Receiver::start(1_000).await?;
        let seeding = Seeding {
            database: format!("payoutd_chaos_cutoff_{}", window.name()),
            dir: env.out_dir.join("chaos-cutoff").join(window.name()),
            rail: BenchRail::of(METHOD),
            payouts: args.cutoff_payouts,
            subaccounts: 1,
            faketime: args.faketime.clone(),
            citus: None,
        };
        let prepared = setup::prepare(env, &seeding, &receiver, Some(bank)).await?;
        let outcome = attempt_once(env, &prepared, &seeding, &receiver, window, attempt).await;
        let keep = env.keep_databases;
        if !keep && let Err(e) = prepared.db.drop_if_exists().await {
            eprintln!(
                "payoutd-bench: warning: could not drop {}: {e:#}",
                prepared.db.name
            );
        }
        match outcome? {
            Attempt::Checked(verdict) => return Ok(verdict),
            Attempt::Missed(why) => {
                eprintln!(
                    "payoutd-bench: [chaos] cut-off {}: attempt {attempt} missed the window: {why}",
                    window.name()
                );
                missed.push(why);
            }
        }
    }
    Ok(Err(format!(
        "no kill of {ATTEMPTS} attempts landed during the {}: {}",
        window.name(),
        missed.join("; ")
    )))
}

/// How an attempt ended.
enum Attempt {
    /// The kill landed in the window and the restart was checked.
    Checked(Result<String, String>),
    /// The kill did not land in the window (nothing was checked).
    Missed(String),
}

async fn attempt_once(
    env: &Env,
    prepared: &Prepared,
    seeding: &Seeding,
    receiver: &Receiver,
    window: Window,
    attempt: usize,
) -> anyhow::Result<Attempt> {
    let name = window.name();
    // The chaos servers' settings, and the short lease.
    let lease_secs = LEASE_SECS.to_string();
    let mut vars = SERVER_ENV.to_vec();
    vars.push(("PAYOUT_BATCH_LEASE_SECS", &lease_secs));
    let log = env
        .out_dir
        .join(format!("payoutd-chaos-cutoff-{name}-{attempt}.log"));
    let server = prepared.payoutd.serve_with(&log, &vars).await?;
    let pid = server.pid().context("payoutd has no pid")?;
    let pid = Pid::from_raw(i32::try_from(pid).context("payoutd's pid")?);

    let killed = match window {
        Window::Generation => {
            let watch = tokio::spawn(kill_when_generating(
                prepared.db.clone(),
                prepared.batches.clone(),
                pid,
            ));
            let ran = prepared
                .payoutd
                .admin(&["run-cutoff", "--method", &METHOD.route()])
                .await;
            if ran.is_err() {
                watch.abort();
            }
            ran?;
            watch.await??
        }
        Window::Upload | Window::Record => {
            let stop = Arc::new(AtomicBool::new(false));
            let outbound = prepared.counterparty.drop()?.outbound.clone();
            let watching = Arc::clone(&stop);
            let watch = tokio::task::spawn_blocking(move || {
                kill_at_the_bank(&outbound, window, pid, &watching)
            });
            let ran = prepared
                .payoutd
                .admin(&["run-cutoff", "--method", &METHOD.route()])
                .await;
            if ran.is_err() {
                stop.store(true, Ordering::SeqCst);
            }
            let killed = watch.await??;
            ran?;
            killed
        }
    };
    // The process is gone (or, on a miss, stopped now).
    drop(server);
    let after = match killed {
        Ok(after) => after,
        Err(why) => return Ok(Attempt::Missed(why)),
    };
    let landed = match landed_in(prepared, window).await? {
        Ok(landed) => landed,
        Err(why) => return Ok(Attempt::Missed(why)),
    };

    let log = env.out_dir.join(format!(
        "payoutd-chaos-cutoff-{name}-{attempt}-restarted.log"
    ));
    let server = prepared.payoutd.serve_with(&log, &vars).await?;
    let checked = after_restart(prepared, seeding, receiver).await;
    server.stop().await?;
    Ok(Attempt::Checked(checked?.map(|kept| {
        format!(
            "killed {:.2} s after the cut-off, {landed}; after the restart: {kept}",
            after.as_secs_f64()
        )
    })))
}

/// What the restarted server must do: finish the cut-off, keep everything, deliver every event.
async fn after_restart(
    prepared: &Prepared,
    seeding: &Seeding,
    receiver: &Receiver,
) -> anyhow::Result<Result<String, String>> {
    if let Err(failure) = wait_submitted(prepared, seeding.payouts).await? {
        return Ok(Err(failure));
    }
    let kept = match kept_everything(prepared, seeding).await? {
        Ok(kept) => kept,
        Err(failure) => return Ok(Err(failure)),
    };
    Ok(
        all_delivered(&prepared.db, receiver, Duration::from_secs(120))
            .await?
            .map(|delivered| format!("{kept}, {delivered} events delivered, check-ledger clean")),
    )
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Queued batches of the run leased by a runner without a file stored: the file is being
/// generated.
const GENERATING: &str = "\
SELECT count(*) AS n FROM batches b
 WHERE b.id = ANY ($1::uuid[]) AND b.status = 'queue' AND b.claimed_until IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM rail_files f
                    WHERE f.subaccount_id = b.subaccount_id AND f.batch_id = b.id)";

/// Files stored for the run's batches.
const STORED: &str = "\
SELECT count(*) AS n FROM rail_files f JOIN batches b
    ON b.subaccount_id = f.subaccount_id AND b.id = f.batch_id
 WHERE b.id = ANY ($1::uuid[])";

/// Kills `pid` as soon as a batch of the run is leased with no file stored; `Err` (a miss)
/// when a file is stored first, or nothing happens within [`WINDOW_TIMEOUT`].
async fn kill_when_generating(
    db: BenchDb,
    batches: Vec<String>,
    pid: Pid,
) -> anyhow::Result<Result<Duration, String>> {
    let started = Instant::now();
    let mut conn = db.connect().await?;
    loop {
        let generating = diesel::sql_query(GENERATING)
            .bind::<Array<Text>, _>(&batches)
            .get_result::<Count>(&mut conn)
            .await?
            .n;
        if generating > 0 {
            kill(pid, Signal::SIGKILL).context("kill -9 payoutd")?;
            return Ok(Ok(started.elapsed()));
        }
        let stored = diesel::sql_query(STORED)
            .bind::<Array<Text>, _>(&batches)
            .get_result::<Count>(&mut conn)
            .await?
            .n;
        if stored > 0 {
            return Ok(Err(
                "the file was stored before the watcher saw the batch leased".to_owned(),
            ));
        }
        if started.elapsed() > WINDOW_TIMEOUT {
            return Ok(Err(format!(
                "no batch was leased within {WINDOW_TIMEOUT:?} of the cut-off"
            )));
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Kills `pid` as soon as `outbound` shows `window`: bytes written to a temporary upload
/// (`.<name>.part`, [`Window::Upload`]), or a complete file ([`Window::Record`]). The directory
/// is watched with inotify, so the kill follows the bank's change within microseconds. `Err` (a
/// miss) when a complete file arrives first ([`Window::Upload`]), nothing happens within
/// [`WINDOW_TIMEOUT`], or `stop` is set.
fn kill_at_the_bank(
    outbound: &Path,
    window: Window,
    pid: Pid,
    stop: &AtomicBool,
) -> anyhow::Result<Result<Duration, String>> {
    let started = Instant::now();
    let inotify =
        Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).context("inotify_init1")?;
    // A complete file arrives by a rename, or a link and an unlink (OpenSSH's plain rename).
    inotify
        .add_watch(
            outbound,
            AddWatchFlags::IN_MODIFY | AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO,
        )
        .with_context(|| format!("cannot watch {}", outbound.display()))?;
    loop {
        let mut ready = [PollFd::new(inotify.as_fd(), PollFlags::POLLIN)];
        poll(&mut ready, PollTimeout::from(100u16)).context("poll on inotify")?;
        let events = match inotify.read_events() {
            Ok(events) => events,
            Err(Errno::EAGAIN) => Vec::new(),
            Err(e) => return Err(e).context("reading inotify events"),
        };
        for event in events {
            let Some(name) = event.name.and_then(|n| n.into_string().ok()) else {
                continue;
            };
            let transferring = name.starts_with('.')
                && name.ends_with(".part")
                && event.mask.contains(AddWatchFlags::IN_MODIFY);
            let arrived = !name.starts_with('.')
                && event
                    .mask
                    .intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO);
            let hit = match window {
                Window::Upload => transferring,
                Window::Record => arrived,
                Window::Generation => false,
            };
            if hit {
                kill(pid, Signal::SIGKILL).context("kill -9 payoutd")?;
                return Ok(Ok(started.elapsed()));
            }
            if arrived {
                return Ok(Err(format!(
                    "{name} was at the bank before the watcher saw its upload"
                )));
            }
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(Err("the cut-off did not run".to_owned()));
        }
        if started.elapsed() > WINDOW_TIMEOUT {
            return Ok(Err(format!(
                "no upload began within {WINDOW_TIMEOUT:?} of the cut-off"
            )));
        }
    }
}

#[derive(QueryableByName)]
struct StoredFile {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    state: String,
    #[diesel(sql_type = Bytea)]
    bytes: Vec<u8>,
}

/// The run's stored files.
async fn stored_files(prepared: &Prepared) -> anyhow::Result<Vec<StoredFile>> {
    let mut conn = prepared.db.connect().await?;
    diesel::sql_query(
        "SELECT f.name, f.state, f.bytes FROM rail_files f JOIN batches b \
             ON b.subaccount_id = f.subaccount_id AND b.id = f.batch_id \
          WHERE b.id = ANY ($1::uuid[]) ORDER BY f.name",
    )
    .bind::<Array<Text>, _>(&prepared.batches)
    .load::<StoredFile>(&mut conn)
    .await
    .context("reading the stored files")
}

/// Everything in the bank's outbound directory, dot files too.
fn at_bank(outbound: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(outbound)
        .with_context(|| format!("cannot list {}", outbound.display()))?
    {
        if let Ok(name) = entry?.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Confirms the kill landed in `window`, saying what the bank and the database show; `Err` (a
/// miss) when it landed after it.
async fn landed_in(prepared: &Prepared, window: Window) -> anyhow::Result<Result<String, String>> {
    let files = stored_files(prepared).await?;
    let bank = at_bank(&prepared.counterparty.drop()?.outbound)?;
    Ok(match window {
        Window::Generation => {
            if files.is_empty() && bank.is_empty() {
                Ok(
                    "during generation: the batch leased, no file stored, nothing at the bank"
                        .to_owned(),
                )
            } else {
                Err(format!(
                    "the kill landed after generation: {} file(s) stored",
                    files.len()
                ))
            }
        }
        Window::Upload => {
            let partial = bank.iter().find(|n| n.ends_with(".part"));
            let generated = files.iter().filter(|f| f.state == "generated").count();
            match partial {
                Some(part) if generated > 0 => {
                    let size = std::fs::metadata(prepared.counterparty.drop()?.outbound.join(part))
                        .map_or(0, |m| m.len());
                    let whole = files.iter().map(|f| f.bytes.len()).max().unwrap_or(0);
                    Ok(format!(
                        "during the upload: {part} at the bank with {size} of {whole} bytes, \
                         {generated} file(s) stored and not marked uploaded"
                    ))
                }
                _ => Err(format!(
                    "the kill landed after the upload: {}, {generated} file(s) not marked \
                     uploaded",
                    listing(&bank)
                )),
            }
        }
        Window::Record => {
            let unrecorded = files
                .iter()
                .find(|f| f.state == "generated" && bank.contains(&f.name));
            match unrecorded {
                Some(file) => Ok(format!(
                    "after the upload, before its record: {} at the bank and still generated",
                    file.name
                )),
                None => Err(format!(
                    "the kill landed after the upload was recorded: {}",
                    listing(&bank)
                )),
            }
        }
    })
}

/// The bank's outbound directory, in words.
fn listing(bank: &[String]) -> String {
    if bank.is_empty() {
        "nothing at the bank".to_owned()
    } else {
        format!("{} at the bank", bank.join(", "))
    }
}

#[derive(QueryableByName)]
struct Submitted {
    #[diesel(sql_type = BigInt)]
    in_progress: i64,
    #[diesel(sql_type = BigInt)]
    not_uploaded: i64,
}

/// Waits until every payout of the run is submitted with its reference (`in_progress`, or
/// `successful` once its file's effective date has come) and every stored file is marked
/// uploaded; `Err` when that does not happen within the batch lease ([`LEASE_SECS`]) plus a
/// minute and a second per thousand payouts.
async fn wait_submitted(prepared: &Prepared, payouts: u64) -> anyhow::Result<Result<(), String>> {
    let within = Duration::from_secs(LEASE_SECS + 60 + payouts / 1_000);
    let deadline = Instant::now() + within;
    let mut conn = prepared.db.connect().await?;
    loop {
        let now = diesel::sql_query(
            "SELECT (SELECT count(*) FROM payouts p WHERE p.batch_id = ANY ($1::uuid[]) \
                       AND p.status IN (3, 4) AND p.provider_reference <> '') AS in_progress, \
                    (SELECT count(*) FROM rail_files f JOIN batches b \
                        ON b.subaccount_id = f.subaccount_id AND b.id = f.batch_id \
                      WHERE b.id = ANY ($1::uuid[]) AND f.state <> 'uploaded') AS not_uploaded",
        )
        .bind::<Array<Text>, _>(&prepared.batches)
        .get_result::<Submitted>(&mut conn)
        .await?;
        if u64::try_from(now.in_progress).ok() == Some(payouts) && now.not_uploaded == 0 {
            return Ok(Ok(()));
        }
        if Instant::now() > deadline {
            return Ok(Err(format!(
                "after the restart, {} of {payouts} payouts submitted and {} file(s) not \
                 uploaded within {within:?}",
                now.in_progress, now.not_uploaded
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The checks after the restart: every stored file at the bank once with its stored bytes and
/// nothing else there (no duplicate under another name, no temporary upload left); every payout
/// in exactly one file and paid once at the bank; the ledger balanced. `Ok` says what was found.
async fn kept_everything(
    prepared: &Prepared,
    seeding: &Seeding,
) -> anyhow::Result<Result<String, String>> {
    let files = stored_files(prepared).await?;
    let bank_names = at_bank(&prepared.counterparty.drop()?.outbound)?;
    let stored: BTreeMap<&str, &StoredFile> = files.iter().map(|f| (f.name.as_str(), f)).collect();
    if let Some(extra) = bank_names.iter().find(|n| !stored.contains_key(n.as_str())) {
        return Ok(Err(format!(
            "{extra} is at the bank but is no stored file (a duplicate or a leftover upload); \
             the bank has {}",
            bank_names.join(", ")
        )));
    }
    let mut references = Vec::new();
    for file in &files {
        if !bank_names.contains(&file.name) {
            return Ok(Err(format!("{} never reached the bank", file.name)));
        }
        let bytes = prepared.counterparty.drop()?.read(&file.name)?;
        if bytes != file.bytes {
            return Ok(Err(format!(
                "{} at the bank is not the file stored ({} bytes, stored {})",
                file.name,
                bytes.len(),
                file.bytes.len()
            )));
        }
        references.extend(bank::payments(seeding.rail, &bytes)?);
    }
    let distinct: HashSet<&String> = references.iter().collect();
    if u64::try_from(references.len()).ok() != Some(seeding.payouts)
        || distinct.len() != references.len()
    {
        return Ok(Err(format!(
            "{} payments at the bank ({} distinct) for {} payouts",
            references.len(),
            distinct.len(),
            seeding.payouts
        )));
    }
    let mut conn = prepared.db.connect().await?;
    let not_in_one_file = diesel::sql_query(
        "SELECT count(*) AS n FROM payouts p WHERE p.batch_id = ANY ($1::uuid[]) \
            AND (SELECT count(*) FROM rail_file_items i WHERE i.payout_id = p.id) <> 1",
    )
    .bind::<Array<Text>, _>(&prepared.batches)
    .get_result::<Count>(&mut conn)
    .await?
    .n;
    if not_in_one_file > 0 {
        return Ok(Err(format!(
            "{not_in_one_file} payouts are in no file or in more than one"
        )));
    }
    if check_ledger(&prepared.payoutd).await.is_err() {
        return Ok(Err("check-ledger reports a discrepancy".to_owned()));
    }
    Ok(Ok(format!(
        "{} file(s) at the bank once each and as stored, {} payments once each, every payout in \
         one file and submitted",
        files.len(),
        references.len()
    )))
}
