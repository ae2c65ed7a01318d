//! Many new payouts of one subaccount written with set statements, in one transaction: the
//! writes of a group commit and of a bulk request.
//!
//! `decide` settles every payout's fate under the locks that keep it true until the commit,
//! in the order given: its parties checked (`FOR SHARE`, as a single payout takes them), its
//! reference against those already taken (by earlier payouts, or earlier in the set), then its
//! total against what its balance has left (each balance row locked `FOR UPDATE` once, in
//! currency order). [`write_set`] then writes the accepted ones: the open batch of each
//! currency joined once, then the payouts, their ledger entries, their idempotency keys, their
//! events and one update of the balances by each currency's sum, in one statement on plain
//! PostgreSQL (`sql/write_set.sql`) and one statement each on Citus.
//!
//! A set expected to be accepted whole (a group of single requests, one alone, or a bulk
//! request) skips `decide` on plain PostgreSQL: `whole::write_whole` locks and checks the parties
//! itself, in its own transaction, and the write fails as a whole when anything would refuse a
//! payout; the caller then decides the set afresh. Its balance row is locked only by the write
//! statement's last part, the guarded update, where `decide` locks it before the writes.
//! Such a set is written in three round trips: `BEGIN` with its planning setting sent together
//! with one statement that locks the parties and looks up the open batch
//! (`sql/parties_and_open_batch.sql`); the writes; `COMMIT`. Waiting for each statement took five,
//! and deciding first seven. Once the open batch of each currency its payouts join is known,
//! a set is written in one: `BEGIN`, one statement that locks and checks the parties and the
//! batches as it writes and raises an error when a check fails
//! (`sql/write_set_at_once.sql`), and `COMMIT`, sent together (`at_once`).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::BigInt;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::events::OutboxEvent;
use domain::idempotency::{KeyAdmission, KeyCommit};
use domain::ledger::LedgerEntry;
use domain::payout::PayoutStatus;
use domain::rail::schedule::BatchSchedule;
use uuid::Uuid;

use super::outbox::{insert_events, insert_many};
use super::params;
use super::set_transaction::SetPlans;
use super::transitions::{
    PayoutAbort, insert_entries, join_open_batch, with_batch, written_admission, written_key,
};
use super::{Joined, Planned};
use crate::cached::CachedExt;
use crate::errors::TxError;
use crate::rows::PayoutRow;

/// What the written payouts of one currency need: the time a new batch would open at (the
/// earliest `pending` payout's, if any starts `pending`), the sum to hold, and the latest
/// payout's time (the balance's `updated_at`).
pub(crate) struct CurrencyTotal {
    pub(crate) opens_batch_at: Option<DateTime<Utc>>,
    pub(crate) total: i64,
    pub(crate) last: DateTime<Utc>,
}

/// Writes the payouts given, all of `subaccount`, accepted by [`decide`](super::decide::decide) earlier in the
/// transaction begun by [`in_set_transaction`] with the same `plans` (see the module
/// documentation): joins each currency's open batch, then writes. Returns the batch each
/// payout joined, in the order given. The requests of a decided set were admitted before (its
/// callers leave out the others): a request it would admit fails it
/// ([`PayoutAbort::NotAdmitted`]).
pub(crate) async fn write_set(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    schedule: &BatchSchedule,
    plans: SetPlans,
) -> Result<Vec<Joined>, PayoutAbort> {
    if written.is_empty() {
        return Ok(Vec::new());
    }
    let currencies = currency_totals(written);
    let mut batches: HashMap<&str, (Uuid, DateTime<Utc>)> = HashMap::new();
    for (asset, currency) in &currencies {
        if let Some(at) = currency.opens_batch_at {
            batches.insert(
                asset,
                join_open_batch(conn, subaccount, asset, at, schedule).await?,
            );
        }
    }
    write_joined(
        conn,
        subaccount,
        written,
        &currencies,
        &batches,
        plans,
        false,
    )
    .await
}

/// Each currency's [`CurrencyTotal`] of the payouts of `written`.
pub(crate) fn currency_totals<'p>(written: &[Planned<'p>]) -> BTreeMap<&'p str, CurrencyTotal> {
    let mut currencies: BTreeMap<&'p str, CurrencyTotal> = BTreeMap::new();
    for p in written {
        let payout = p.payout;
        let entry = currencies
            .entry(payout.asset.code())
            .or_insert(CurrencyTotal {
                opens_batch_at: None,
                total: 0,
                last: payout.created_at,
            });
        if payout.status == PayoutStatus::Pending {
            entry.opens_batch_at = Some(
                entry
                    .opens_batch_at
                    .map_or(payout.created_at, |t| t.min(payout.created_at)),
            );
        }
        entry.total += payout.total();
        entry.last = entry.last.max(payout.created_at);
    }
    currencies
}

/// Writes the payouts given, their currencies' open batches joined (`batches`, by currency):
/// one statement on plain PostgreSQL, one per table on Citus. Returns the batch each payout
/// joined. `admits` says whether the statement may admit requests (only `sql/write_set.sql` does,
/// and only in a set written whole); a request to admit otherwise fails the set with
/// [`PayoutAbort::NotAdmitted`].
pub(crate) async fn write_joined(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    currencies: &BTreeMap<&str, CurrencyTotal>,
    batches: &HashMap<&str, (Uuid, DateTime<Utc>)>,
    plans: SetPlans,
    admits: bool,
) -> Result<Vec<Joined>, PayoutAbort> {
    let joined = joined_batches(written, batches);
    let built = BuiltSet::of(
        subaccount,
        written,
        &joined,
        currencies,
        admits && plans == SetPlans::Generic,
    )?;
    let set = built.rows();
    match plans {
        SetPlans::Generic => write_in_one_statement(conn, subaccount, &set).await?,
        SetPlans::AsChosen => write_statement_by_statement(conn, subaccount, &set).await?,
    }
    Ok(joined)
}

/// The batch each payout of `written` joins: its currency's of `batches` if it starts
/// `pending`, none otherwise.
pub(crate) fn joined_batches(
    written: &[Planned<'_>],
    batches: &HashMap<&str, (Uuid, DateTime<Utc>)>,
) -> Vec<Joined> {
    written
        .iter()
        .map(|p| {
            (p.payout.status == PayoutStatus::Pending)
                .then(|| batches.get(p.payout.asset.code()).copied())
                .flatten()
        })
        .collect()
}

/// The rows a set writes, its payouts in the batches they join (`joined`), owned.
pub(crate) struct BuiltSet<'k> {
    rows: Vec<PayoutRow>,
    entries: Vec<LedgerEntry>,
    commits: Vec<KeyCommit<'k>>,
    admissions: Vec<KeyAdmission<'k>>,
    events: Vec<OutboxEvent>,
    sums: Sums<'k>,
}

impl<'k> BuiltSet<'k> {
    /// The rows of `written`, all of `subaccount`, each payout in its batch of `joined`, and
    /// the sums of `currencies`. A request to admit fails the set with
    /// [`PayoutAbort::NotAdmitted`] unless `admits`, or when it is another subaccount's.
    pub(crate) fn of(
        subaccount: Uuid,
        written: &[Planned<'k>],
        joined: &[Joined],
        currencies: &BTreeMap<&'k str, CurrencyTotal>,
        admits: bool,
    ) -> Result<Self, PayoutAbort> {
        let rows: Vec<PayoutRow> = written
            .iter()
            .zip(joined)
            .map(|(p, batch)| PayoutRow {
                batch_id: batch.map(|(id, _)| id),
                ..PayoutRow::from(p.payout)
            })
            .collect();
        let entries: Vec<LedgerEntry> = written
            .iter()
            .flat_map(|p| p.entries.iter().cloned())
            .collect();
        let commits: Vec<KeyCommit<'k>> = written
            .iter()
            .zip(joined)
            .filter_map(|(p, batch)| written_key(p.key?, p.payout, *batch))
            .collect();
        let admissions: Vec<KeyAdmission<'k>> = written
            .iter()
            .zip(joined)
            .filter_map(|(p, batch)| written_admission(p.key?, p.payout, *batch))
            .collect::<Result<_, _>>()?;
        if !admissions.is_empty()
            && (!admits
                || admissions
                    .iter()
                    .any(|a| a.admission.subaccount().as_uuid() != subaccount))
        {
            return Err(PayoutAbort::NotAdmitted);
        }
        let events: Vec<OutboxEvent> = written
            .iter()
            .zip(joined)
            .flat_map(|(p, batch)| with_batch(p.events, p.payout.id, *batch))
            .map(std::borrow::Cow::into_owned)
            .collect();
        let sums = Sums {
            assets: currencies.keys().copied().collect(),
            totals: currencies.values().map(|c| c.total).collect(),
            times: currencies.values().map(|c| c.last).collect(),
        };
        Ok(Self {
            rows,
            entries,
            commits,
            admissions,
            events,
            sums,
        })
    }

    pub(crate) fn rows(&self) -> SetRows<'_, 'k> {
        SetRows {
            payouts: &self.rows,
            entries: &self.entries,
            keys: &self.commits,
            admissions: &self.admissions,
            events: &self.events,
            sums: &self.sums,
        }
    }
}

/// What a set writes, once its payouts have joined their batches.
pub(crate) struct SetRows<'s, 'k> {
    pub(crate) payouts: &'s [PayoutRow],
    pub(crate) entries: &'s [LedgerEntry],
    pub(crate) keys: &'s [KeyCommit<'k>],
    pub(crate) admissions: &'s [KeyAdmission<'k>],
    pub(crate) events: &'s [OutboxEvent],
    pub(crate) sums: &'s Sums<'s>,
}

/// Each currency's total held by a set, and the time of its last payout.
pub(crate) struct Sums<'a> {
    pub(crate) assets: Vec<&'a str>,
    pub(crate) totals: Vec<i64>,
    pub(crate) times: Vec<DateTime<Utc>>,
}

impl SetRows<'_, '_> {
    /// What the writes must have touched: every payout, entry and event, every key (else one is
    /// no longer its request's), and every currency's balance (else it no longer covers the
    /// set: never for a set `decide` locked the balances for, but a set written without it
    /// takes its first lock of the balance in its hold).
    fn check(&self, written: &SetWritten) -> Result<(), PayoutAbort> {
        let expected = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        if written.keys != expected(self.keys.len()) {
            return Err(PayoutAbort::Tx(TxError::KeyNotOwn));
        }
        let admitted = expected(self.admissions.len());
        if written.nonces != admitted || written.admitted_keys != admitted {
            return Err(PayoutAbort::NotAdmitted);
        }
        if written.balances != expected(self.sums.assets.len()) {
            return Err(PayoutAbort::InsufficientBalance);
        }
        let counts = [
            ("payouts", written.payouts, self.payouts.len()),
            ("ledger entries", written.entries, self.entries.len()),
            ("events", written.events, self.events.len()),
        ];
        for (what, done, wanted) in counts {
            if done != expected(wanted) {
                return Err(PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!(
                    "a set wrote {done} of its {wanted} {what}"
                ))));
            }
        }
        Ok(())
    }
}

/// How many rows each part of a set's writes touched.
#[derive(QueryableByName)]
struct SetWritten {
    #[diesel(sql_type = BigInt)]
    payouts: i64,
    #[diesel(sql_type = BigInt)]
    entries: i64,
    #[diesel(sql_type = BigInt)]
    keys: i64,
    #[diesel(sql_type = BigInt)]
    nonces: i64,
    #[diesel(sql_type = BigInt)]
    admitted_keys: i64,
    #[diesel(sql_type = BigInt)]
    events: i64,
    #[diesel(sql_type = BigInt)]
    balances: i64,
}

/// A set's writes as one statement (`sql/write_set.sql`) on plain PostgreSQL: one round trip, and
/// one statement's overhead in PostgreSQL, for what took five or six.
async fn write_in_one_statement(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    set: &SetRows<'_, '_>,
) -> Result<(), PayoutAbort> {
    let counts: SetWritten = params::write_set(subaccount, set)
        .cached()
        .get_result(conn)
        .await
        .map_err(|e| PayoutAbort::Tx(e.into()))?;
    set.check(&counts)
}

/// A set's writes one statement after another: on Citus. Citus runs the data-modifying parts
/// of a statement like `sql/write_set.sql` one after another, each checking its foreign keys as it
/// ends (seen with an outbox event and its delivery attempt written by one statement), so the
/// ledger entries could be checked before their payouts exist; `sql/write_set.sql` is not used there.
async fn write_statement_by_statement(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    set: &SetRows<'_, '_>,
) -> Result<(), PayoutAbort> {
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let payouts = params::insert_payouts(set.payouts)
        .cached()
        .execute(conn)
        .await?;
    insert_entries(conn, set.entries).await?;
    let keys = if set.keys.is_empty() {
        0
    } else {
        params::mark_keys_committed(subaccount, set.keys)
            .cached()
            .execute(conn)
            .await?
    };
    match set.events {
        [] => {}
        [_] => insert_events(conn, set.events, None).await?,
        events => insert_many(conn, events).await?,
    }
    let balances = params::hold_sums(subaccount, set.sums)
        .cached()
        .execute(conn)
        .await?;
    // Only the one statement admits requests (`write_joined` refuses them here).
    let counts = SetWritten {
        payouts: count(payouts),
        entries: count(set.entries.len()),
        keys: count(keys),
        nonces: 0,
        admitted_keys: 0,
        events: count(set.events.len()),
        balances: count(balances),
    };
    set.check(&counts)
}
