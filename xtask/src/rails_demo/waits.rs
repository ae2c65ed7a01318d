//! Waiting for the results: until every payout is final and every answer of the bank and the
//! partner is applied, saying where the payouts stand meanwhile.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use super::{OVERALL_TIMEOUT, PROGRESS_EVERY};
use crate::bank::Tally;
use crate::failure::Failure;
use crate::{cmd, postgres};

/// Where a wait stands.
pub(super) enum Wait {
    Done,
    /// Not yet: what is still missing, for the failure should the deadline pass.
    Pending(String),
}

/// Calls `check` every second until it is done; [`OVERALL_TIMEOUT`] after `started`, a failure
/// expecting `what` and saying where it stood.
pub(super) fn wait_until(
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
pub(super) fn failed_references(last: &BTreeMap<String, (String, String)>) -> BTreeSet<String> {
    last.values()
        .filter(|(status, _)| status == "failed")
        .map(|(_, reference)| reference.clone())
        .collect()
}

/// The references the bank refused or returned (before or after settlement, as far as it has
/// written them) and the payments the partner reported not deposited in a final report.
pub(super) fn refused(tally: &Tally, partner: &BTreeMap<String, &'static str>) -> BTreeSet<String> {
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
pub(super) fn still_waiting(
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
pub(super) fn payout_progress(
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
pub(super) fn unreadable(tally: &Tally) -> Failure {
    Failure::new(
        "the bank to read every file payoutd sent",
        format!(
            "it could not read {:?} (its reasons above)",
            tally.unreadable
        ),
    )
}

/// How many payouts were returned after settlement: those with a `payout_return` ledger entry.
pub(super) fn returned_payouts(database_url: &str) -> Result<usize, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
