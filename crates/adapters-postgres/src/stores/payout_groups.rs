//! Group commit of new payouts.
//!
//! Every payout of a subaccount in one currency holds from the same balance row, so their
//! transactions commit one after another whatever the service does. Group commit turns that
//! queue into fewer, larger transactions: requests that arrive while an earlier group of the
//! same subaccount and currency is being written (or within the configured window) are written
//! together, in arrival order, in one transaction of set statements: one statement for all
//! their parties, one for their references, one lock and one update of the balance, one
//! statement each for the payouts, their ledger entries, their idempotency keys and their
//! events, and one commit (one WAL flush) for all of them.
//!
//! Each request still gets exactly its own answer. Its parties are checked as a single
//! payout's are (a stale one is told to plan again); a reference taken before, or by an earlier
//! request of the group, is its own `DuplicateReference`; the balance is taken in arrival order,
//! so the first request it no longer covers, and only that one, gets `InsufficientBalance`
//! (a later, smaller one may still fit, exactly as when they arrive one by one). If the set
//! transaction fails as a whole (a reference another instance inserted meanwhile, a key that
//! is no longer its request's, a lost connection), nothing of it is written and the group's
//! requests are written again one by one, each in its own transaction, so one request can never
//! fail the others.
//!
//! The groups are shared by every HTTP worker's store ([`PayoutGroups`] is cloned into each);
//! a group is written by a task spawned on the runtime of the request that opened it, with that
//! request's store, so a request that goes away (a client that disconnects) never strands the
//! others waiting behind it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Bytea, Integer, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::account::{AccountStatus, ConfirmStatus};
use domain::events::OutboxEvent;
use domain::idempotency::{KeyCommit, WriteKey};
use domain::ids::BatchId;
use domain::ledger::LedgerEntry;
use domain::payout::initial_status;
use domain::payout::ports::InsertPayoutError;
use domain::payout::{Payout, PayoutStatus};
use domain::receiver::{KycStatus, ReceiverStatus};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::PgStore;
use super::outbox::insert_events;
use super::transitions::{PayoutAbort, insert_entries, join_open_batch, with_batch, written_key};
use crate::cached::CachedExt;
use crate::errors::TxError;
use crate::rows::PayoutRow;
use crate::schema::{balances, payouts, receiver_accounts, receivers};

/// How requests are grouped: `PAYOUT_GROUP_COMMIT_WINDOW_US` and `PAYOUT_GROUP_COMMIT_MAX`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupCommitSettings {
    /// How long the first request of a group waits for others before the group is written
    /// (zero: not at all; groups then form only while an earlier group of the same subaccount
    /// and currency is being written).
    pub window: Duration,
    /// The most requests one transaction writes; more wait for the next group.
    pub max_group: usize,
}

impl Default for GroupCommitSettings {
    fn default() -> Self {
        Self {
            window: Duration::ZERO,
            max_group: 64,
        }
    }
}

/// What a request learns of its payout's insert.
type InsertResult = Result<Option<BatchId>, InsertPayoutError>;

/// One request's planned payout, owned so the task writing its group can carry it.
struct Submitted {
    payout: Payout,
    entries: Vec<LedgerEntry>,
    events: Vec<OutboxEvent>,
    key: WriteKey<Payout>,
    answer: oneshot::Sender<InsertResult>,
}

/// The requests of one subaccount and currency waiting to be written.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Submitted>,
    /// Whether a task is writing this queue's groups (it takes new arrivals too).
    writing: bool,
}

type GroupKey = (Uuid, &'static str);

/// The groups being formed, shared by every HTTP worker's store.
pub struct PayoutGroups {
    settings: GroupCommitSettings,
    queues: Mutex<HashMap<GroupKey, Queue>>,
}

impl std::fmt::Debug for PayoutGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PayoutGroups")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl PayoutGroups {
    /// Groups formed as `settings` say (a `max_group` of 0 counts as 1).
    pub fn new(settings: GroupCommitSettings) -> Arc<Self> {
        Arc::new(Self {
            settings: GroupCommitSettings {
                max_group: settings.max_group.max(1),
                ..settings
            },
            queues: Mutex::new(HashMap::new()),
        })
    }

    /// The settings in force.
    pub fn settings(&self) -> GroupCommitSettings {
        self.settings
    }

    fn queues(&self) -> MutexGuard<'_, HashMap<GroupKey, Queue>> {
        // Nothing under this lock can panic half-way (pushes and drains only), so a poisoned
        // lock still holds consistent queues.
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `payout` for the next group of its subaccount and currency and waits for its
    /// own answer, starting the task that writes the groups when none is running.
    pub(crate) async fn submit(
        self: &Arc<Self>,
        store: &PgStore,
        payout: &Payout,
        entries: &[LedgerEntry],
        events: &[OutboxEvent],
        key: &WriteKey<Payout>,
    ) -> InsertResult {
        let (answer, answered) = oneshot::channel();
        let group = (payout.subaccount_id.as_uuid(), payout.asset.code());
        let start_writer = {
            let mut queues = self.queues();
            let queue = queues.entry(group).or_default();
            queue.waiting.push_back(Submitted {
                payout: payout.clone(),
                entries: entries.to_vec(),
                events: events.to_vec(),
                key: key.clone(),
                answer,
            });
            !std::mem::replace(&mut queue.writing, true)
        };
        if start_writer {
            tokio::spawn(write_groups(Arc::clone(self), store.clone(), group));
        }
        answered.await.unwrap_or_else(|_| {
            // The writing task went away before answering (the runtime shut down): whether the
            // payout was written is unknown; the idempotency key tells a retry.
            Err(InsertPayoutError::Port(PortError::Unavailable(
                anyhow::anyhow!("the payout's group was abandoned before it was written"),
            )))
        })
    }

    /// The next group of `key`'s queue (up to `max_group` requests, in arrival order), or
    /// `None` when the queue is empty: the writer then stops, and the next arrival starts one.
    fn next_group(&self, key: GroupKey) -> Option<Vec<Submitted>> {
        let mut queues = self.queues();
        let queue = queues.get_mut(&key)?;
        if queue.waiting.is_empty() {
            queues.remove(&key);
            return None;
        }
        let n = queue.waiting.len().min(self.settings.max_group);
        Some(queue.waiting.drain(..n).collect())
    }

    fn waiting(&self, key: GroupKey) -> usize {
        self.queues().get(&key).map_or(0, |q| q.waiting.len())
    }
}

/// Ends a writer: removes its queue, so the requests still in it get an answer (their channel
/// closes) rather than wait for ever, and the next arrival starts a new writer. Runs when the
/// writing task ends for any reason, including its runtime shutting down.
struct WriterGuard {
    groups: Arc<PayoutGroups>,
    key: GroupKey,
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        let abandoned = self.groups.queues().remove(&self.key);
        drop(abandoned);
    }
}

/// Writes `key`'s groups one after another until its queue is empty.
async fn write_groups(groups: Arc<PayoutGroups>, store: PgStore, key: GroupKey) {
    let _guard = WriterGuard {
        groups: Arc::clone(&groups),
        key,
    };
    let settings = groups.settings();
    loop {
        if !settings.window.is_zero() && groups.waiting(key) < settings.max_group {
            tokio::time::sleep(settings.window).await;
        }
        let Some(group) = groups.next_group(key) else {
            return;
        };
        let answers = store.insert_group(&group).await;
        for (submitted, answer) in group.into_iter().zip(answers) {
            // A request that went away no longer listens; its payout is written all the same,
            // as a single payout's is when its client disconnects during the commit.
            let _ = submitted.answer.send(answer);
        }
    }
}

/// What the set transaction decided for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Written,
    Stale,
    DuplicateReference,
    InsufficientBalance,
}

impl PgStore {
    /// Writes `group` (requests of one subaccount and currency, in arrival order): one request
    /// alone as a single payout; more in one set transaction, or one by one when that fails.
    async fn insert_group(&self, group: &[Submitted]) -> Vec<InsertResult> {
        if let [one] = group {
            return vec![
                self.insert_payout_alone(&one.payout, &one.entries, &one.events, &one.key)
                    .await,
            ];
        }
        match self.insert_set(group).await {
            Ok(answers) => answers,
            Err(e) => {
                tracing::debug!(
                    requests = group.len(),
                    reason = %abort_reason(&e),
                    "a payout group could not be written as one; writing its requests one by one"
                );
                let mut answers = Vec::with_capacity(group.len());
                for one in group {
                    answers.push(
                        self.insert_payout_alone(&one.payout, &one.entries, &one.events, &one.key)
                            .await,
                    );
                }
                answers
            }
        }
    }

    /// The set transaction of a group (see the module documentation).
    async fn insert_set(&self, group: &[Submitted]) -> Result<Vec<InsertResult>, PayoutAbort> {
        let schedule = &self.batch_schedule;
        let mut conn = match self.conn().await {
            Ok(conn) => conn,
            // No connection: every request gets the pool's answer (503 after its wait).
            Err(e) => return Ok(group.iter().map(|_| Err(copied(&e))).collect()),
        };
        let result = conn
            .transaction::<_, PayoutAbort, _>(async |conn| {
                let verdicts = decide(conn, group).await?;
                let written: Vec<&Submitted> = group
                    .iter()
                    .zip(&verdicts)
                    .filter(|(_, v)| **v == Verdict::Written)
                    .map(|(s, _)| s)
                    .collect();
                let batch = write_group(conn, &written, schedule).await?;
                Ok(verdicts
                    .into_iter()
                    .zip(group)
                    .map(|(verdict, submitted)| match verdict {
                        Verdict::Written => Ok(batch
                            .filter(|_| submitted.payout.status == PayoutStatus::Pending)
                            .map(|(id, _)| BatchId::from_uuid(id))),
                        Verdict::Stale => Err(InsertPayoutError::Stale),
                        Verdict::DuplicateReference => Err(InsertPayoutError::DuplicateReference),
                        Verdict::InsufficientBalance => Err(InsertPayoutError::InsufficientBalance),
                    })
                    .collect::<Vec<_>>())
            })
            .await;
        self.after_commit(result)
    }
}

/// The same port error for another request of the group (the error itself is not `Clone`).
fn copied(e: &PortError) -> InsertPayoutError {
    InsertPayoutError::Port(match e {
        PortError::Unavailable(cause) => PortError::Unavailable(anyhow::anyhow!("{cause:#}")),
        PortError::Unknown(cause) => PortError::Unknown(anyhow::anyhow!("{cause:#}")),
    })
}

/// A group failure in words for the log: the constraint or error kind, never a value.
fn abort_reason(abort: &PayoutAbort) -> String {
    match abort {
        PayoutAbort::Tx(TxError::KeyNotOwn) => {
            "an idempotency key is no longer its request's".into()
        }
        PayoutAbort::Tx(e) => match e.unique_violation() {
            Some(constraint) => format!("unique violation of {constraint}"),
            None => "a statement failed".into(),
        },
        other => format!("{other:?}"),
    }
}

/// Decides each request's fate under the locks that keep it true until the commit: parties
/// `FOR SHARE` (as a single payout takes them), the references already taken, then the balance
/// row `FOR UPDATE`, taken in arrival order.
async fn decide(
    conn: &mut AsyncPgConnection,
    group: &[Submitted],
) -> Result<Vec<Verdict>, PayoutAbort> {
    let first = &group[0].payout;
    let (subaccount, asset) = (first.subaccount_id.as_uuid(), first.asset.code());
    let accounts: Vec<Uuid> = group
        .iter()
        .map(|s| s.payout.account_id.as_uuid())
        .collect();
    let parties: Vec<(Uuid, Uuid, i16, i16, String, String)> = receivers::table
        .inner_join(receiver_accounts::table)
        .filter(receivers::subaccount_id.eq(subaccount))
        .filter(receiver_accounts::id.eq_any(&accounts))
        .select((
            receiver_accounts::id,
            receivers::id,
            receivers::status,
            receivers::kyc_status,
            receiver_accounts::status,
            receiver_accounts::confirm_status,
        ))
        .for_share()
        .cached()
        .load(conn)
        .await?;
    let parties: HashMap<Uuid, (Uuid, PayoutStatus, bool)> = parties
        .into_iter()
        .map(
            |(account, receiver, receiver_status, kyc, account_status, confirm)| {
                let payable = ![ReceiverStatus::Failed, ReceiverStatus::Inactive]
                    .iter()
                    .any(|s| i16::from(s.code()) == receiver_status)
                    && account_status != AccountStatus::Failed.as_str();
                let status = initial_status(
                    kyc == i16::from(KycStatus::Completed.code()),
                    confirm == ConfirmStatus::Confirmed.as_str(),
                );
                (account, (receiver, status, payable))
            },
        )
        .collect();
    let references: Vec<&str> = group
        .iter()
        .filter_map(|s| s.payout.reference.as_deref())
        .collect();
    let mut taken: HashSet<String> = if references.is_empty() {
        HashSet::new()
    } else {
        payouts::table
            .filter(payouts::subaccount_id.eq(subaccount))
            .filter(payouts::reference.eq_any(&references))
            .select(payouts::reference.assume_not_null())
            .cached()
            .load::<String>(conn)
            .await?
            .into_iter()
            .collect()
    };
    let available: Option<i64> = balances::table
        .find((subaccount, asset))
        .select(balances::available)
        .for_update()
        .cached()
        .get_result(conn)
        .await
        .optional()?;
    let mut left = available.unwrap_or(0);
    Ok(group
        .iter()
        .map(|s| {
            let payout = &s.payout;
            let current = parties.get(&payout.account_id.as_uuid());
            if !current.is_some_and(|(receiver, status, payable)| {
                *receiver == payout.receiver_id.as_uuid() && *payable && *status == payout.status
            }) {
                return Verdict::Stale;
            }
            if let Some(reference) = &payout.reference
                && taken.contains(reference)
            {
                return Verdict::DuplicateReference;
            }
            let total = payout.total();
            if available.is_none() || total > left {
                return Verdict::InsufficientBalance;
            }
            left -= total;
            if let Some(reference) = &payout.reference {
                taken.insert(reference.clone());
            }
            Verdict::Written
        })
        .collect())
}

/// Writes the group's accepted payouts with set statements: the open batch joined once for
/// those that start `pending`, the payouts, their ledger entries, their keys marked committed
/// with their answers, their events, and the hold of their sum. Returns the batch joined.
async fn write_group(
    conn: &mut AsyncPgConnection,
    written: &[&Submitted],
    schedule: &domain::rail::schedule::BatchSchedule,
) -> Result<Option<(Uuid, DateTime<Utc>)>, PayoutAbort> {
    let Some(first) = written.first() else {
        return Ok(None);
    };
    let (subaccount, asset) = (
        first.payout.subaccount_id.as_uuid(),
        first.payout.asset.code(),
    );
    let batch = match written
        .iter()
        .find(|s| s.payout.status == PayoutStatus::Pending)
    {
        Some(s) => {
            Some(join_open_batch(conn, subaccount, asset, s.payout.created_at, schedule).await?)
        }
        None => None,
    };
    let rows: Vec<PayoutRow> = written
        .iter()
        .map(|s| PayoutRow {
            batch_id: batch
                .filter(|_| s.payout.status == PayoutStatus::Pending)
                .map(|(id, _)| id),
            ..PayoutRow::from(&s.payout)
        })
        .collect();
    insert_payout_rows(conn, &rows).await?;
    let entries: Vec<LedgerEntry> = written
        .iter()
        .flat_map(|s| s.entries.iter().cloned())
        .collect();
    insert_entries(conn, &entries).await?;
    let batch_of = |s: &Submitted| batch.filter(|_| s.payout.status == PayoutStatus::Pending);
    let commits: Vec<KeyCommit<'_>> = written
        .iter()
        .filter_map(|s| written_key(&s.key, &s.payout, batch_of(s)))
        .collect();
    mark_keys_committed(conn, &commits).await?;
    let events: Vec<OutboxEvent> = written
        .iter()
        .flat_map(|s| with_batch(&s.events, s.payout.id, batch_of(s)))
        .collect();
    insert_events(conn, &events, None).await?;
    let total: i64 = written.iter().map(|s| s.payout.total()).sum();
    let last = written
        .iter()
        .map(|s| s.payout.created_at)
        .max()
        .unwrap_or(first.payout.created_at);
    let held = diesel::update(balances::table.find((subaccount, asset)))
        .filter(balances::available.ge(total))
        .set((
            balances::available.eq(balances::available - total),
            balances::pending.eq(balances::pending + total),
            balances::updated_at.eq(last),
        ))
        .cached()
        .execute(conn)
        .await?;
    if held != 1 {
        // The row is locked since the decisions: it cannot have changed.
        return Err(PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!(
            "the balance locked for a payout group no longer covers it"
        ))));
    }
    Ok(batch)
}

/// Inserts new payout rows with one statement (arrays, so its text never varies).
async fn insert_payout_rows(
    conn: &mut AsyncPgConnection,
    rows: &[PayoutRow],
) -> Result<(), TxError> {
    macro_rules! column {
        ($field:ident) => {
            rows.iter().map(|r| r.$field.clone()).collect::<Vec<_>>()
        };
    }
    let inserted = diesel::sql_query(INSERT_PAYOUTS)
        .bind::<Array<SqlUuid>, _>(column!(id))
        .bind::<Array<SqlUuid>, _>(column!(subaccount_id))
        .bind::<Array<SqlUuid>, _>(column!(receiver_id))
        .bind::<Array<SqlUuid>, _>(column!(account_id))
        .bind::<Array<Text>, _>(column!(asset))
        .bind::<Array<BigInt>, _>(column!(amount))
        .bind::<Array<BigInt>, _>(column!(fee))
        .bind::<Array<Nullable<SqlUuid>>, _>(column!(fee_template_id))
        .bind::<Array<Nullable<SqlUuid>>, _>(column!(fee_group_id))
        .bind::<Array<Nullable<BigInt>>, _>(column!(fee_fixed))
        .bind::<Array<Nullable<Integer>>, _>(column!(fee_percentage))
        .bind::<Array<Nullable<BigInt>>, _>(column!(fee_min_amount))
        .bind::<Array<Nullable<Text>>, _>(column!(reference))
        .bind::<Array<Text>, _>(column!(note))
        .bind::<Array<SmallInt>, _>(column!(status))
        .bind::<Array<Nullable<SqlUuid>>, _>(column!(batch_id))
        .bind::<Array<Text>, _>(column!(provider_reference))
        .bind::<Array<Bool>, _>(column!(duplicate))
        .bind::<Array<Timestamptz>, _>(column!(created_at))
        .bind::<Array<Timestamptz>, _>(column!(updated_at))
        .bind::<Array<Nullable<Timestamptz>>, _>(column!(submitted_at))
        .bind::<Array<Bool>, _>(column!(receiver_is_invalid))
        .bind::<Array<Nullable<Text>>, _>(column!(failure_reason))
        .bind::<Array<Nullable<Text>>, _>(column!(return_code))
        .cached()
        .execute(conn)
        .await?;
    if inserted == rows.len() {
        Ok(())
    } else {
        Err(TxError::invariant(anyhow::anyhow!(
            "{inserted} of {} payouts inserted",
            rows.len()
        )))
    }
}

const INSERT_PAYOUTS: &str = "\
    INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
      fee_template_id, fee_group_id, fee_fixed, fee_percentage, fee_min_amount, reference, note, \
      status, batch_id, provider_reference, duplicate, created_at, updated_at, submitted_at, \
      receiver_is_invalid, failure_reason, return_code) \
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], \
      $6::int8[], $7::int8[], $8::uuid[], $9::uuid[], $10::int8[], $11::int4[], $12::int8[], \
      $13::text[], $14::text[], $15::int2[], $16::uuid[], $17::text[], $18::bool[], \
      $19::timestamptz[], $20::timestamptz[], $21::timestamptz[], $22::bool[], $23::text[], \
      $24::text[])";

/// Marks every request's key committed, storing its answer (completing it) where it renders,
/// with one statement; each only while the claim is still its request's. Any key that is not
/// rolls the whole group back (`KeyNotOwn`): written one by one, only that request fails.
async fn mark_keys_committed(
    conn: &mut AsyncPgConnection,
    commits: &[KeyCommit<'_>],
) -> Result<(), TxError> {
    if commits.is_empty() {
        return Ok(());
    }
    let subaccounts: Vec<Uuid> = commits
        .iter()
        .map(|c| c.claim.subaccount.as_uuid())
        .collect();
    let keys: Vec<&str> = commits.iter().map(|c| c.claim.key.as_str()).collect();
    let leases: Vec<DateTime<Utc>> = commits.iter().map(|c| c.claim.lease_until).collect();
    let statuses: Vec<Option<i16>> = commits
        .iter()
        .map(|c| c.response.as_ref().map(super::idempotency::status_column))
        .collect();
    let bodies: Vec<Option<&[u8]>> = commits
        .iter()
        .map(|c| c.response.as_ref().map(|r| r.body.as_slice()))
        .collect();
    let marked = diesel::sql_query(MARK_KEYS_COMMITTED)
        .bind::<Array<SqlUuid>, _>(subaccounts)
        .bind::<Array<Text>, _>(keys)
        .bind::<Array<Timestamptz>, _>(leases)
        .bind::<Array<Nullable<SmallInt>>, _>(statuses)
        .bind::<Array<Nullable<Bytea>>, _>(bodies)
        .cached()
        .execute(conn)
        .await?;
    if marked == commits.len() {
        Ok(())
    } else {
        Err(TxError::KeyNotOwn)
    }
}

/// The set form of the key marking a single payout's event statement does.
const MARK_KEYS_COMMITTED: &str = "\
    UPDATE idempotency_keys i SET committed = true, \
      state = CASE WHEN k.status IS NULL THEN i.state ELSE 'completed' END, \
      response_status = k.status, response_body = k.body, \
      locked_until = CASE WHEN k.status IS NULL THEN i.locked_until END \
    FROM unnest($1::uuid[], $2::text[], $3::timestamptz[], $4::int2[], $5::bytea[]) \
      AS k(subaccount_id, idempotency_key, lease, status, body) \
    WHERE i.subaccount_id = k.subaccount_id AND i.idempotency_key = k.idempotency_key \
      AND i.locked_until = k.lease AND i.state = 'in_progress'";
