//! Measuring one run: the cut-off, then each step until the database (cheap counts, polled) or
//! the drop says it is complete, with payoutd's peak resident memory over it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Bool, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

use bank_formats::interac::FailureCode;
use bank_simulator::interac_partner::Fate;

use super::bank::{self, BenchRail, Settles};
use super::setup::{Counterparty, Prepared};
use crate::procfs;
use crate::receiver::Receiver;

/// How often a step's completion is polled at most.
const POLL: Duration = Duration::from_millis(20);
/// The poll sleeps at least this many times as long as its counts took, so that it takes at most
/// a fifth of one core from payoutd and PostgreSQL: at 100 000 payouts the counts take about
/// 0.1 s, and polled every 20 ms they kept one of the machine's two cores busy (the settlement
/// step measured 5.6 times its reference, mostly this).
const POLL_QUIET: u32 = 4;
/// How often a long wait says where it stands.
const PROGRESS_EVERY: Duration = Duration::from_secs(15);

/// A measured step.
#[derive(Debug, Clone)]
pub struct Step {
    /// Its name.
    pub name: &'static str,
    /// When it started counting, what it measures.
    pub span: &'static str,
    /// payoutd's time.
    pub seconds: f64,
    /// payoutd's peak resident memory over the step, KiB (`VmHWM`, reset at the step's start;
    /// the first three steps share the cut-off's start).
    pub peak_rss_kib: Option<u64>,
    /// The reference scripts whose times add up to its reference.
    pub references: &'static [&'static str],
}

/// What a run measured, and what it checked.
#[derive(Debug, Clone, Default)]
pub struct Measured {
    pub steps: Vec<Step>,
    /// Files payoutd stored (and the bank received).
    pub files: usize,
    /// Payments in the files at the bank's drop.
    pub payments_at_bank: usize,
    /// Payouts returned (file rails) or rejected (the partner's), and how many of their accounts
    /// the codes failed.
    pub returned: u64,
    pub rejected: u64,
    pub accounts_failed: u64,
    /// Events in the outbox at the end, all delivered.
    pub events: i64,
}

#[derive(QueryableByName, Debug, Default)]
struct Counts {
    #[diesel(sql_type = BigInt)]
    files: i64,
    #[diesel(sql_type = BigInt)]
    items: i64,
    #[diesel(sql_type = BigInt)]
    referenced: i64,
    #[diesel(sql_type = BigInt)]
    successful: i64,
    #[diesel(sql_type = BigInt)]
    failed: i64,
    #[diesel(sql_type = BigInt)]
    inbound_read: i64,
}

/// Every count the steps wait for, in one statement: each count a subquery of its own, which
/// Citus plans apart (on plain PostgreSQL the same plan as scalar subqueries).
const COUNTS: &str = "\
SELECT f.files, it.items, r.inbound_read, p.referenced, p.successful, p.failed
FROM (SELECT count(*) AS files FROM rail_files WHERE method = $1) f,
     (SELECT count(*) AS items FROM rail_file_items i
        JOIN rail_files rf ON rf.id = i.file_id AND rf.subaccount_id = i.subaccount_id
       WHERE rf.method = $1) it,
     (SELECT count(*) AS inbound_read FROM inbound_files
       WHERE method = $1 AND outcome = 'read') r,
     (SELECT count(*) FILTER (WHERE status IN (3, 4, 6) AND provider_reference <> '')
               AS referenced,
             count(*) FILTER (WHERE status = 4) AS successful,
             count(*) FILTER (WHERE status = 6) AS failed
        FROM payouts WHERE batch_id = ANY ($2::uuid[])) p";

async fn counts(
    conn: &mut AsyncPgConnection,
    method: &str,
    batches: &[uuid::Uuid],
) -> anyhow::Result<Counts> {
    let mut rows: Vec<Counts> = diesel::sql_query(COUNTS)
        .bind::<Text, _>(method)
        .bind::<Array<diesel::sql_types::Uuid>, _>(batches)
        .load(conn)
        .await
        .context("counting the payouts' progress")?;
    rows.pop().context("no counts")
}

#[derive(QueryableByName)]
struct Events {
    #[diesel(sql_type = BigInt)]
    events: i64,
    #[diesel(sql_type = BigInt)]
    undelivered: i64,
}

#[derive(QueryableByName)]
struct Chosen {
    #[diesel(sql_type = Text)]
    reference: String,
    #[diesel(sql_type = Bool)]
    account: bool,
}

/// The payments the bank returns, or the partner does not deposit: a tenth of the payouts
/// (those whose reference `INV-<j>` has j divisible by 10), with a code that fails the account
/// for half of them (j divisible by 20), as the reference scripts `cutoff_returned.sql` and
/// `cutoff_rejected.sql` pick them; by their references in the files.
const A_TENTH: &str = "\
SELECT i.reference, split_part(p.reference, '-', 2)::bigint % 20 = 0 AS account
FROM rail_file_items i JOIN payouts p ON p.id = i.payout_id AND p.subaccount_id = i.subaccount_id
WHERE p.batch_id = ANY ($1::uuid[]) AND split_part(p.reference, '-', 2)::bigint % 10 = 0";

/// A wait with a deadline, telling where it stands now and then.
struct Wait {
    what: String,
    started: Instant,
    deadline: Instant,
    told: Instant,
    /// When the last tick's sleep ended (the poll's work since then is what the next sleep is
    /// scaled by).
    woke: Instant,
}

impl Wait {
    fn new(what: impl Into<String>, timeout: Duration) -> Self {
        let now = Instant::now();
        Self {
            what: what.into(),
            started: now,
            deadline: now + timeout,
            told: now,
            woke: now,
        }
    }

    /// Sleeps a poll ([`POLL`], or [`POLL_QUIET`] times the work since the last one when that is
    /// longer); fails past the deadline with `state`.
    async fn tick(&mut self, state: impl FnOnce() -> String) -> anyhow::Result<()> {
        if Instant::now() > self.deadline {
            anyhow::bail!(
                "{} not done within {:?}: {}",
                self.what,
                self.deadline - self.started,
                state()
            );
        }
        if self.told.elapsed() >= PROGRESS_EVERY {
            eprintln!(
                "payoutd-bench: [cutoff]   {} after {:.0} s: {}",
                self.what,
                self.started.elapsed().as_secs_f64(),
                state()
            );
            self.told = Instant::now();
        }
        tokio::time::sleep(POLL.max(self.woke.elapsed() * POLL_QUIET)).await;
        self.woke = Instant::now();
        Ok(())
    }
}

/// A step that started at `since` and is over now.
fn step(
    name: &'static str,
    span: &'static str,
    since: Instant,
    references: &'static [&'static str],
    peak_rss_kib: Option<u64>,
) -> Step {
    Step {
        name,
        span,
        seconds: since.elapsed().as_secs_f64(),
        peak_rss_kib,
        references,
    }
}

/// payoutd's peak RSS so far (since the last reset), KiB.
fn peak(pid: u32) -> Option<u64> {
    procfs::status_kib(pid, "VmHWM")
}

/// Runs the cut-off and measures every step; payoutd (`pid`) is serving `prepared`.
pub async fn measure(
    prepared: &Prepared,
    rail: BenchRail,
    payouts: u64,
    pid: u32,
    receiver: &Receiver,
    timeout: Duration,
) -> anyhow::Result<Measured> {
    let method = rail.method.route();
    let n = i64::try_from(payouts)?;
    let batches: Vec<uuid::Uuid> = prepared
        .batches
        .iter()
        .map(|b| uuid::Uuid::parse_str(b))
        .collect::<Result<_, _>>()?;
    let mut conn = prepared.db.connect().await?;
    let mut measured = Measured::default();

    // The cut-off: the operator's command, as at a scheduled cut-off (the batches' run time
    // brought to now); the batch job files them at its next pass.
    procfs::reset_peak_rss(pid);
    prepared
        .payoutd
        .admin(&["run-cutoff", "--method", &method])
        .await?;
    let cutoff = Instant::now();
    let mut wait = Wait::new(
        format!("{method}: the files and every payout in progress"),
        timeout,
    );
    let (mut generated, mut sent) = (false, false);
    loop {
        let c = counts(&mut conn, &method, &batches).await?;
        // A batch's payouts may be split over several files at a format's limits: a step is
        // over when every payout is in a stored file, and every stored file at the drop.
        if !generated && c.items >= n {
            generated = true;
            measured.steps.push(step(
                "generated",
                "cut-off → every payout in a stored file",
                cutoff,
                &["cutoff_generated"],
                peak(pid),
            ));
        }
        if !sent && generated && i64::try_from(prepared.counterparty.files_received()?)? >= c.files
        {
            sent = true;
            measured.steps.push(step(
                "sent",
                if rail.has_partner() {
                    "cut-off → every batch request accepted by the partner"
                } else {
                    "cut-off → every file's bytes at the drop"
                },
                cutoff,
                &["cutoff_generated"],
                peak(pid),
            ));
        }
        if generated && sent && c.referenced >= n {
            measured.steps.push(step(
                "in_progress",
                "cut-off → every payout in_progress with its reference",
                cutoff,
                &["cutoff_generated", "cutoff_in_progress"],
                peak(pid),
            ));
            break;
        }
        wait.tick(|| {
            format!(
                "{} files ({} payouts) stored, {} payouts with their reference",
                c.files, c.items, c.referenced
            )
        })
        .await?;
    }
    measured.files = prepared.counterparty.files_received()?;

    // Settlement: on the effective date (today) for the rails without confirmations; on the
    // bank's pain.002 for SEPA; on the partner's final reports for Interac, which reject a tenth.
    let mut rejected = 0;
    let settling = match rail.settles {
        Settles::OnEffectiveDate => {
            procfs::reset_peak_rss(pid);
            Instant::now()
        }
        Settles::OnReport => {
            let drop = prepared.counterparty.drop()?;
            let now = payoutd_now(prepared.days_back);
            let mut reports = Vec::new();
            for name in &drop.sent()? {
                reports.push(bank::settlement_report(name, &drop.read(name)?, now)?);
            }
            procfs::reset_peak_rss(pid);
            let started = Instant::now();
            for (name, bytes) in &reports {
                drop.answer(name, bytes)?;
            }
            started
        }
        Settles::ByPartner => {
            let Counterparty::Partner(partner) = &prepared.counterparty else {
                anyhow::bail!("{method} settles by the partner's reports, and has no partner");
            };
            let chosen = a_tenth(&mut conn, &batches).await?;
            rejected = u64::try_from(chosen.len())?;
            measured.rejected = rejected;
            measured.accounts_failed = chosen.iter().filter(|c| c.account).count() as u64;
            // The partner's payment ids are the references payoutd stored in its requests.
            partner.decide(chosen.into_iter().map(|c| {
                let fate = if c.account {
                    Fate::Failed(FailureCode::InvalidRecipient)
                } else {
                    Fate::Declined
                };
                (c.reference, fate)
            }));
            procfs::reset_peak_rss(pid);
            let started = Instant::now();
            partner.release_final_reports();
            started
        }
    };
    let rejected = i64::try_from(rejected)?;
    let mut wait = Wait::new(format!("{method}: every payout settled"), timeout);
    loop {
        let c = counts(&mut conn, &method, &batches).await?;
        if c.successful >= n - rejected && c.failed >= rejected {
            break;
        }
        wait.tick(|| {
            format!(
                "{} of {} successful, {} of {rejected} rejected",
                c.successful,
                n - rejected,
                c.failed
            )
        })
        .await?;
    }
    measured.steps.push(step(
        "settled",
        match rail.settles {
            Settles::OnEffectiveDate => {
                "every payout in_progress → every payout successful (effective date today)"
            }
            Settles::OnReport => "the bank's pain.002 (ACSC) → every payout successful",
            Settles::ByPartner => {
                "the partner's final reports → every payout final (nine tenths deposited, \
                 successful; a tenth declined or failed, failed)"
            }
        },
        settling,
        match rail.settles {
            Settles::OnEffectiveDate => &["cutoff_settled"],
            Settles::OnReport => &["cutoff_settled", "cutoff_settled_report"],
            Settles::ByPartner => &[
                "cutoff_rejected",
                "cutoff_settled",
                "cutoff_settled_report",
                "cutoff_accounts_failed",
            ],
        },
        peak(pid),
    ));

    // Returns: a tenth of the payouts come back.
    if rail.has_returns {
        let drop = prepared.counterparty.drop()?;
        let returned = a_tenth(&mut conn, &batches).await?;
        measured.returned = returned.len() as u64;
        measured.accounts_failed = returned.iter().filter(|r| r.account).count() as u64;
        let returned: HashMap<String, bool> = returned
            .into_iter()
            .map(|r| (r.reference, r.account))
            .collect();
        let now = payoutd_now(prepared.days_back);
        let mut answers = Vec::new();
        for name in &drop.sent()? {
            if let Some(answer) = bank::return_file(
                rail,
                name,
                &drop.read(name)?,
                &returned,
                now.date_naive(),
                now,
            )? {
                answers.push(answer);
            }
        }
        let expected_failed = i64::try_from(measured.returned)?;
        let expected_read = i64::try_from(answers.len())?;
        procfs::reset_peak_rss(pid);
        let started = Instant::now();
        for (name, bytes) in &answers {
            drop.answer(name, bytes)?;
        }
        let mut wait = Wait::new(format!("{method}: every return applied"), timeout);
        loop {
            let c = counts(&mut conn, &method, &batches).await?;
            if c.failed >= expected_failed && c.inbound_read >= expected_read {
                break;
            }
            wait.tick(|| {
                format!(
                    "{} of {expected_failed} returned, {} of {expected_read} return files read",
                    c.failed, c.inbound_read
                )
            })
            .await?;
        }
        measured.steps.push(step(
            "returned",
            "return files in the drop → every return applied and its file recorded",
            started,
            &["cutoff_returned", "cutoff_accounts_failed"],
            peak(pid),
        ));
    }

    // Every event of the run delivered to the receiver.
    procfs::reset_peak_rss(pid);
    let draining = Instant::now();
    let mut wait = Wait::new(format!("{method}: every event delivered"), timeout);
    loop {
        let mut rows: Vec<Events> = diesel::sql_query(
            "SELECT count(*) AS events, count(*) FILTER (WHERE status <> 'delivered') AS \
             undelivered FROM outbox_events",
        )
        .load(&mut conn)
        .await
        .context("counting the events")?;
        let e = rows.pop().context("no event counts")?;
        let received = receiver.distinct();
        if e.undelivered == 0 && i64::try_from(received)? >= e.events {
            measured.events = e.events;
            break;
        }
        wait.tick(|| {
            format!(
                "{} of {} events delivered, {received} received",
                e.events - e.undelivered,
                e.events
            )
        })
        .await?;
    }
    // Delivery runs all along: its step is payoutd's whole time from the cut-off (the bench's
    // own pauses between the steps left out) until the last event arrived.
    let payoutd_time: f64 = measured
        .steps
        .iter()
        .filter(|s| matches!(s.name, "in_progress" | "settled" | "returned"))
        .map(|s| s.seconds)
        .sum();
    let drain = draining.elapsed().as_secs_f64();
    measured.steps.push(Step {
        name: "delivered",
        span: "payoutd's time from the cut-off (the steps above) + the drain after the last → \
               every event delivered to the receiver",
        seconds: payoutd_time + drain,
        peak_rss_kib: peak(pid),
        references: &[
            "cutoff_generated",
            "cutoff_in_progress",
            "cutoff_rejected",
            "cutoff_settled",
            "cutoff_settled_report",
            "cutoff_returned",
            "cutoff_accounts_failed",
            "cutoff_delivered",
        ],
    });
    Ok(measured)
}

/// The tenth of the payouts the bank returns or the partner rejects ([`A_TENTH`]).
async fn a_tenth(
    conn: &mut AsyncPgConnection,
    batches: &[uuid::Uuid],
) -> anyhow::Result<Vec<Chosen>> {
    diesel::sql_query(A_TENTH)
        .bind::<Array<diesel::sql_types::Uuid>, _>(batches)
        .load(conn)
        .await
        .context("choosing the payouts returned or rejected")
}

/// payoutd's wall clock: now, `days_back` days back (libfaketime on weekends).
pub fn payoutd_now(days_back: u32) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() - chrono::Duration::days(i64::from(days_back))
}
