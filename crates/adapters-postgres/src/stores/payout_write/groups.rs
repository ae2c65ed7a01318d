//! Group commit of new payouts.
//!
//! Every payout of a subaccount in one currency holds from the same balance row, so their
//! transactions commit one after another whatever the service does, and a transaction costs
//! the database about as much for one payout as for several. Group commit turns that queue into
//! fewer, larger transactions: requests that arrive while an earlier group of the same
//! subaccount is being written (or within the configured window) are written together, whatever
//! their currencies, in arrival order, in one transaction of set statements, with one commit
//! (one WAL flush) for all of them. Grouping by subaccount rather than by currency makes the
//! groups larger when a subaccount pays in several currencies at once; the balance rows of a
//! group are locked in currency order, as every set's are.
//!
//! On plain PostgreSQL a group is first written whole (`whole::write_whole`): its parties
//! locked with its currencies' open batches (in one statement for one currency), sent with the
//! transaction's `BEGIN`, and checked; then the payouts, their ledger entries, their
//! idempotency keys, their events and the update of the balances in one statement. Once the
//! open batch of each of its currencies is known, all of it is one statement sent with the
//! `BEGIN` and the `COMMIT`, which checks the parties and the batches itself and raises an
//! error when one fails (and the group is then written the first way). If anything would
//! refuse one of its requests (a party changed, a reference taken, a balance short), that
//! transaction rolls back and the group is decided request by request in a second one: one
//! statement for all their parties, one for their references, one lock of the balances, then
//! the writes of the accepted ones
//! (`set_write::write_set`: one statement on plain PostgreSQL, five on Citus). On Citus every
//! group is decided first.

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
//!
//! The same shared value carries the requests' planning reads, several to a statement on plain
//! PostgreSQL (`super::planning_reads`), since they too are one statement per request otherwise.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use diesel_async::AsyncPgConnection;
use domain::PortError;
use domain::events::OutboxEvent;
use domain::idempotency::WriteKey;
use domain::ids::BatchId;
use domain::ledger::LedgerEntry;
use domain::payout::Payout;
use domain::payout::ports::InsertPayoutError;
use tokio::sync::oneshot;
use uuid::Uuid;

use super::alone::rolled_back_whole;
use super::decide::{Verdict, accepted, decide};
use super::planning_reads::PlanningReads;
use super::set_transaction::{SetPlans, in_set_transaction};
use super::set_write::write_set;
use super::transitions::PayoutAbort;
use super::whole::write_whole;
use super::{PgStore, Planned, Strategy, Write, strategy};
use crate::errors::TxError;

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

/// The requests of one subaccount waiting to be written.
#[derive(Default)]
struct Queue {
    waiting: VecDeque<Submitted>,
    /// Whether a task is writing this queue's groups (it takes new arrivals too).
    writing: bool,
}

/// A group's subaccount: its requests may be of any of the subaccount's currencies.
type GroupKey = Uuid;

/// The groups being formed, shared by every HTTP worker's store.
pub struct PayoutGroups {
    settings: GroupCommitSettings,
    queues: Mutex<HashMap<GroupKey, Queue>>,
    /// The planning reads of the requests, several in one statement.
    planning_reads: Arc<PlanningReads>,
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
            planning_reads: Arc::default(),
        })
    }

    /// The planning reads of new payouts, read several requests at a time
    /// ([`super::planning_reads`]).
    pub(crate) fn planning_reads(&self) -> &Arc<PlanningReads> {
        &self.planning_reads
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

    /// Queues `payout` for the next group of its subaccount and waits for its
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
        let group = payout.subaccount_id.as_uuid();
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
                anyhow::anyhow!("the writer of the payout's group stopped before answering"),
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

/// Ends a writer that stops before its queue is empty (its runtime shutting down, say): removes
/// its queue, so the requests still in it get an answer (their channel closes) rather than wait
/// for ever, and the next arrival starts a new writer. A writer that found its queue empty
/// disarms it first: the queue is gone already, and by the time the writer ends a request on
/// another worker thread may have opened a new queue under the same key and started its own
/// writer, whose queue must stay.
struct WriterGuard {
    groups: Arc<PayoutGroups>,
    key: GroupKey,
    armed: bool,
}

impl Drop for WriterGuard {
    fn drop(&mut self) {
        if self.armed {
            let abandoned = self.groups.queues().remove(&self.key);
            drop(abandoned);
        }
    }
}

/// Writes `key`'s groups one after another until its queue is empty.
async fn write_groups(groups: Arc<PayoutGroups>, store: PgStore, key: GroupKey) {
    let mut guard = WriterGuard {
        groups: Arc::clone(&groups),
        key,
        armed: true,
    };
    let settings = groups.settings();
    loop {
        if !settings.window.is_zero() && groups.waiting(key) < settings.max_group {
            tokio::time::sleep(settings.window).await;
        }
        let Some(group) = groups.next_group(key) else {
            guard.armed = false;
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

impl PgStore {
    /// Writes `group` (requests of one subaccount, in arrival order): one request
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
        // Before this transaction's connection is taken: the first detection takes one of its
        // own, and writers holding theirs while they all waited for another could empty the pool.
        let citus = match self.detect_citus().await {
            Ok(citus) => citus,
            Err(e) => return Ok(group.iter().map(|_| Err(copied(&e))).collect()),
        };
        let mut conn = match self.conn().await {
            Ok(conn) => conn,
            // No connection: every request gets the pool's answer (503 after its wait).
            Err(e) => return Ok(group.iter().map(|_| Err(copied(&e))).collect()),
        };
        let set: Vec<Planned<'_>> = group
            .iter()
            .map(|s| Planned {
                payout: &s.payout,
                entries: &s.entries,
                events: &s.events,
                key: Some(&s.key),
            })
            .collect();
        let subaccount = group[0].payout.subaccount_id.as_uuid();
        // Why the commit of the attempt below may have happened after all, if it may.
        let mut in_doubt: Option<String> = None;
        let at_once = match strategy(Write::Group, citus, subaccount, &set, &self.open_batches) {
            Strategy::AtOnce(expected) => Some(Some(expected)),
            Strategy::ThreeRoundTrips => Some(None),
            Strategy::Decided(_) | Strategy::Citus | Strategy::NotAdmitted => None,
        };
        if let Some(at_once) = at_once {
            // Most groups are accepted whole: written at once, their parties locked and checked
            // by `write_whole` itself, without reading the references or the balance first.
            // Anything that would refuse a request fails the attempt as a whole, and the group
            // is then decided request by request below.
            let attempt = write_whole(
                &mut conn,
                subaccount,
                &set,
                schedule,
                &self.open_batches,
                at_once,
            )
            .await;
            match attempt {
                Ok(joined) => {
                    return self.after_commit(Ok(joined
                        .into_iter()
                        .map(|batch| Ok(batch.map(|(id, _)| BatchId::from_uuid(id))))
                        .collect()));
                }
                Err(e) => {
                    tracing::debug!(
                        requests = group.len(),
                        reason = %abort_reason(&e),
                        "a payout group was not accepted whole; deciding its requests one by one"
                    );
                    if !rolled_back_whole(&e) {
                        in_doubt = Some(abort_reason(&e));
                    }
                }
            }
        }
        // The requests their write was to admit are admitted on their own and run again (see
        // `InsertPayoutError::NotAdmitted`); the others are decided.
        let admitting = |p: &Planned<'_>| p.key.is_some_and(|k| k.admission().is_some());
        let decided: Vec<Planned<'_>> = set.iter().filter(|p| !admitting(p)).copied().collect();
        let result = if decided.is_empty() {
            Ok(Vec::new())
        } else {
            let plans = SetPlans::on_citus(citus);
            self.decide_and_write(&mut conn, subaccount, &decided, plans)
                .await
        };
        let mut answers = match self.after_commit(result) {
            Ok(answers) => answers.into_iter(),
            Err(e) => return Err(e),
        };
        Ok(set
            .iter()
            .map(|p| {
                if admitting(p) {
                    // Admitted on its own and run again; but when the attempt's commit may have
                    // happened, the request's own nonce could be recorded by it: the port's
                    // answer instead (503), and a retry finds the key.
                    match &in_doubt {
                        None => Err(InsertPayoutError::NotAdmitted),
                        Some(cause) => Err(InsertPayoutError::Port(PortError::Unavailable(
                            anyhow::anyhow!("a payout group's write failed: {cause}"),
                        ))),
                    }
                } else {
                    answers.next().unwrap_or_else(|| {
                        Err(InsertPayoutError::Port(PortError::unknown(
                            "a decided payout group answered fewer requests than it has",
                        )))
                    })
                }
            })
            .collect())
    }

    /// The second transaction of a group's set (see the module documentation): `set` decided
    /// request by request, the accepted ones written.
    async fn decide_and_write(
        &self,
        conn: &mut AsyncPgConnection,
        subaccount: Uuid,
        set: &[Planned<'_>],
        plans: SetPlans,
    ) -> Result<Vec<InsertResult>, PayoutAbort> {
        let schedule = &self.batch_schedule;
        in_set_transaction::<_, PayoutAbort, _>(conn, plans, async |conn| {
            let verdicts = decide(conn, subaccount, set, plans).await?;
            let written = accepted(set, &verdicts);
            let mut joined = write_set(conn, subaccount, &written, schedule, plans)
                .await?
                .into_iter();
            Ok(verdicts
                .into_iter()
                .map(|verdict| match verdict {
                    Verdict::Write => Ok(joined
                        .next()
                        .flatten()
                        .map(|(id, _)| BatchId::from_uuid(id))),
                    Verdict::Refuse(refusal) => Err(refusal.error()),
                })
                .collect::<Vec<_>>())
        })
        .await
    }
}

/// The same port error for another request of the group.
fn copied(e: &PortError) -> InsertPayoutError {
    InsertPayoutError::Port(crate::stores::copied_port_error(e))
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
