//! The planning reads of single payouts, several requests in one statement.
//!
//! Before a payout is written, the service reads what planning it needs: the receiver, the
//! account, the currency's fee template and whether the account was paid the same amount in the
//! last day (the duplicate warning). Each statement PostgreSQL runs costs it a bind, an executor
//! start and end, an implicit transaction and a reply, and the service an encoded request and a
//! decoded answer, whatever the statement reads; measured with pgbench on a database of 10 000
//! receivers, one request's facts per statement took about 125 µs of the machine per request,
//! two per statement about 74 µs, four about 49 µs and eight about 36 µs.
//!
//! So the reads of one subaccount's create-payout requests that arrive while an earlier read of
//! that subaccount is running wait for it to finish and are then read together, in one
//! statement ([`PlanningStatement`]): one row per request, in the order they arrived, each
//! answered exactly as a read of its own would be. Nothing waits on purpose: a lone request is
//! read at once. The reads are shared by every HTTP worker's store (through
//! [`PayoutGroups`](super::groups::PayoutGroups)); a subaccount's statements are run, one after
//! another, by a task spawned on the runtime of the request that found no read running, so a
//! request that goes away never strands the others waiting behind it.
//!
//! On Citus the statement compares every table's subaccount with `= $1` instead, which routes
//! it, like every other statement of one subaccount, to that subaccount's shard: one task on one
//! worker for the requests it carries.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{BigInt, Bool, Integer, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::money::{Asset, MinorUnits};
use tokio::sync::oneshot;
use uuid::Uuid;

use super::PgStore;
use crate::errors::from_diesel;
use crate::rows::ReceiverRow;
use crate::schema::fee_templates;
use crate::stores::account_rows::AccountRow;

/// The most requests one statement reads; more wait for the next. Each number of requests is a
/// statement of its own text, prepared once per connection, so this also bounds how many such
/// statements a connection keeps.
pub(crate) const MAX_READS_PER_STATEMENT: usize = 16;

/// A fee template's columns as the planning reads select them ([`template_columns`]): asset,
/// id, group, fixed, percentage, minimum.
pub(crate) type TemplateRow = (String, Uuid, Uuid, i64, i32, i64);

/// The columns of a [`TemplateRow`], one list for every read that selects them.
pub(crate) type TemplateColumns = (
    fee_templates::asset,
    fee_templates::id,
    fee_templates::group_id,
    fee_templates::fixed,
    fee_templates::percentage,
    fee_templates::min_amount,
);

/// The [`TemplateColumns`] to select (diesel's columns are unit values).
pub(crate) fn template_columns() -> TemplateColumns {
    TemplateColumns::default()
}

/// What one payout's planning asks: one receiver, one account, and the currency and amount of
/// the payout (its fee template, and whether the account was paid that amount since `since`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlanningRead {
    pub(crate) receiver: Uuid,
    pub(crate) account: Uuid,
    pub(crate) asset: Asset,
    pub(crate) amount: MinorUnits,
    pub(crate) since: DateTime<Utc>,
}

/// What one payout's planning finds: the receiver and the account if they are the subaccount's,
/// the subaccount's fee template of the currency if it has one, and whether the account was
/// paid the same amount in the same currency since the read's `since`.
pub(crate) type PlanningRow = (
    Option<ReceiverRow>,
    Option<AccountRow>,
    Option<TemplateRow>,
    bool,
);

/// The columns a [`PlanningStatement`] selects besides its request's number and the duplicate
/// check, as diesel renders and reads them: the lists the other reads of these rows use.
type ReceiverSelection = diesel::dsl::AsSelect<Option<ReceiverRow>, Pg>;
type AccountSelection = diesel::dsl::AsSelect<Option<AccountRow>, Pg>;
type TemplateSelection = diesel::dsl::Nullable<TemplateColumns>;
type Selection = (ReceiverSelection, AccountSelection, TemplateSelection);

/// The planning facts of `reads` (all of subaccount `sub`), one row per read, in one statement:
///
/// ```sql
/// SELECT q.i, <receiver columns>, <account columns>, <fee template columns>,
///        EXISTS (a payout of s.sub to q.account of q.amount in q.asset since q.since)
/// FROM (SELECT $1 AS sub) s
/// CROSS JOIN (VALUES (0, $2, $3, $4, $5, $6), (1, …), …)
///   AS q (i, receiver, account, asset, amount, since)
/// LEFT JOIN receivers ON receivers.id = q.receiver
///   AND receivers.subaccount_id IS NOT DISTINCT FROM s.sub
/// LEFT JOIN receiver_accounts ON … (likewise)
/// LEFT JOIN fee_templates ON fee_templates.subaccount_id = s.sub AND fee_templates.asset = q.asset
/// ```
///
/// Every value is a scalar parameter, never an array: PostgreSQL plans a prepared statement
/// with an array afresh on every call (its generic plan, costed for an array of unknown length,
/// never looks cheaper than one planned for the array at hand), while with scalars it settles on
/// the generic plan. Its text depends only on the number of reads (and the kind of database),
/// so it is prepared once per connection for each number. On plain PostgreSQL the parties'
/// subaccount is compared with `IS NOT DISTINCT FROM` (the same for these non-null columns) so
/// that no index on the subaccount can serve it: the generic plan is costed for the average
/// subaccount, and with `=` a large subaccount's receiver would be found by scanning all of the
/// subaccount's receivers instead of by its primary key. On Citus every table, the payouts of
/// the duplicate check too, is compared with `= $1`, which routes the statement to the
/// subaccount's shard (Citus reads a single relation's `ON` conditions of a `LEFT JOIN` as its
/// filters); there each shard is a fraction of the table, and the plan is the worker's.
struct PlanningStatement {
    sub: Uuid,
    /// Whether the database is Citus (see the type's documentation).
    citus: bool,
    /// The reads' values as bound (the binds borrow them for the statement's life).
    binds: Vec<(Uuid, Uuid, &'static str, i64, DateTime<Utc>)>,
    selection: Selection,
}

impl PlanningStatement {
    fn new(sub: Uuid, reads: &[PlanningRead], citus: bool) -> Self {
        Self {
            sub,
            citus,
            binds: reads
                .iter()
                .map(|r| {
                    (
                        r.receiver,
                        r.account,
                        r.asset.code(),
                        r.amount.get(),
                        r.since,
                    )
                })
                .collect(),
            selection: (
                Option::<ReceiverRow>::as_select(),
                Option::<AccountRow>::as_select(),
                template_columns().nullable(),
            ),
        }
    }
}

impl QueryFragment<Pg> for PlanningStatement {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("SELECT q.i, ");
        self.selection.walk_ast(out.reborrow())?;
        // How the parties' subaccount, and the other tables', are compared. The subaccount is
        // the first parameter, `$1`.
        let (parties, others) = if self.citus {
            ("= $1", "= $1")
        } else {
            ("IS NOT DISTINCT FROM s.sub", "= s.sub")
        };
        out.push_sql(", EXISTS (SELECT 1 FROM payouts p WHERE p.subaccount_id ");
        out.push_sql(others);
        out.push_sql(
            " AND p.account_id = q.account AND p.amount = q.amount AND p.asset = q.asset \
             AND p.created_at >= q.since) \
             FROM (SELECT ",
        );
        out.push_bind_param::<diesel::sql_types::Uuid, _>(&self.sub)?;
        out.push_sql(" AS sub) s CROSS JOIN (VALUES ");
        for (i, (receiver, account, asset, amount, since)) in self.binds.iter().enumerate() {
            if i > 0 {
                out.push_sql(", ");
            }
            out.push_sql(&format!("({i}, "));
            out.push_bind_param::<diesel::sql_types::Uuid, _>(receiver)?;
            out.push_sql(", ");
            out.push_bind_param::<diesel::sql_types::Uuid, _>(account)?;
            out.push_sql(", ");
            out.push_bind_param::<Text, _>(asset)?;
            out.push_sql(", ");
            out.push_bind_param::<BigInt, _>(amount)?;
            out.push_sql(", ");
            out.push_bind_param::<Timestamptz, _>(since)?;
            out.push_sql(")");
        }
        out.push_sql(
            ") AS q (i, receiver, account, asset, amount, since) \
             LEFT JOIN receivers ON receivers.id = q.receiver AND receivers.subaccount_id ",
        );
        out.push_sql(parties);
        out.push_sql(
            " LEFT JOIN receiver_accounts ON receiver_accounts.id = q.account \
             AND receiver_accounts.subaccount_id ",
        );
        out.push_sql(parties);
        out.push_sql(" LEFT JOIN fee_templates ON fee_templates.subaccount_id ");
        out.push_sql(others);
        out.push_sql(" AND fee_templates.asset = q.asset");
        Ok(())
    }

    /// The text depends only on the number of reads (see the type's documentation).
    fn is_safe_to_cache_prepared(&self, _backend: &Pg) -> QueryResult<bool> {
        Ok(true)
    }
}

/// No static id: the connection's statement cache is keyed by the text and the bind types.
impl QueryId for PlanningStatement {
    type QueryId = ();

    const HAS_STATIC_QUERY_ID: bool = false;
}

impl Query for PlanningStatement {
    type SqlType = (
        Integer,
        diesel::dsl::SqlTypeOf<ReceiverSelection>,
        diesel::dsl::SqlTypeOf<AccountSelection>,
        diesel::dsl::SqlTypeOf<TemplateSelection>,
        Bool,
    );
}

/// Reads the planning facts of `reads`, all of subaccount `sub`, in one statement (its form for
/// Citus when `citus`): the row of each read, in the order of `reads`.
pub(crate) async fn read_planning(
    conn: &AsyncPgConnection,
    sub: Uuid,
    reads: &[PlanningRead],
    citus: bool,
) -> QueryResult<Vec<PlanningRow>> {
    if reads.is_empty() {
        return Ok(Vec::new());
    }
    let mut conn = conn;
    let rows: Vec<NumberedRow> = PlanningStatement::new(sub, reads, citus)
        .load(&mut conn)
        .await?;
    let mut by_read: Vec<Option<PlanningRow>> = (0..reads.len()).map(|_| None).collect();
    for (i, receiver, account, template, paid) in rows {
        let slot = usize::try_from(i)
            .ok()
            .and_then(|i| by_read.get_mut(i))
            .ok_or_else(|| unexpected(format!("a planning read answered for request {i}")))?;
        *slot = Some((receiver, account, template, paid));
    }
    by_read
        .into_iter()
        .enumerate()
        .map(|(i, row)| row.ok_or_else(|| unexpected(format!("request {i} had no planning row"))))
        .collect()
}

/// A [`PlanningStatement`]'s row: the number of its read, then that read's [`PlanningRow`].
type NumberedRow = (
    i32,
    Option<ReceiverRow>,
    Option<AccountRow>,
    Option<TemplateRow>,
    bool,
);

/// A statement that answered otherwise than its text allows (a bug, not a state of the data).
fn unexpected(what: String) -> diesel::result::Error {
    diesel::result::Error::DeserializationError(what.into())
}

/// What a request learns of its read.
type ReadResult = Result<PlanningRow, PortError>;

/// One request's read waiting in its subaccount's queue.
struct Waiting {
    read: PlanningRead,
    answer: oneshot::Sender<ReadResult>,
}

/// The reads waiting, by subaccount, shared by every HTTP worker's store. A subaccount has a
/// queue exactly while a task is reading its statements.
#[derive(Default)]
pub(crate) struct PlanningReads {
    queues: Mutex<HashMap<Uuid, Vec<Waiting>>>,
}

impl PlanningReads {
    fn queues(&self) -> MutexGuard<'_, HashMap<Uuid, Vec<Waiting>>> {
        // Nothing under this lock can panic half-way (pushes and drains only), so a poisoned
        // lock still holds consistent queues.
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads `read` (of subaccount `sub`) in the next statement of its subaccount, starting the
    /// task that runs them when none is running, and waits for its own row. `citus` says
    /// whether the store's database is Citus (the same for every request of a store).
    pub(crate) async fn read(
        self: &Arc<Self>,
        store: &PgStore,
        sub: Uuid,
        read: PlanningRead,
        citus: bool,
    ) -> ReadResult {
        let (answer, answered) = oneshot::channel();
        let start_reader = {
            let mut queues = self.queues();
            let reading = queues.contains_key(&sub);
            queues
                .entry(sub)
                .or_default()
                .push(Waiting { read, answer });
            !reading
        };
        if start_reader {
            tokio::spawn(read_statements(Arc::clone(self), store.clone(), sub, citus));
        }
        answered.await.unwrap_or_else(|_| {
            Err(PortError::Unavailable(anyhow::anyhow!(
                "the payout's planning read was abandoned before it was run"
            )))
        })
    }

    /// The next reads of `sub` (up to [`MAX_READS_PER_STATEMENT`], in arrival order), or `None`
    /// when none wait: the queue is then removed, and the next arrival starts a new task.
    fn next_reads(&self, sub: Uuid) -> Option<Vec<Waiting>> {
        let mut queues = self.queues();
        let queue = queues.get_mut(&sub)?;
        if queue.is_empty() {
            queues.remove(&sub);
            return None;
        }
        let n = queue.len().min(MAX_READS_PER_STATEMENT);
        Some(queue.drain(..n).collect())
    }
}

/// Ends a reading task that stops before its queue is empty (its runtime shutting down):
/// removes the queue, so the reads in it are answered (their channel closes) rather than wait
/// for ever. Disarmed when the task found its queue empty and removed it itself, since a new
/// queue under the same key then belongs to another task.
struct ReaderGuard {
    reads: Arc<PlanningReads>,
    sub: Uuid,
    armed: bool,
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        if self.armed {
            let abandoned = self.reads.queues().remove(&self.sub);
            drop(abandoned);
        }
    }
}

/// Runs `sub`'s statements one after another until no read waits.
async fn read_statements(reads: Arc<PlanningReads>, store: PgStore, sub: Uuid, citus: bool) {
    let mut guard = ReaderGuard {
        reads: Arc::clone(&reads),
        sub,
        armed: true,
    };
    loop {
        let Some(batch) = reads.next_reads(sub) else {
            guard.armed = false;
            return;
        };
        let asked: Vec<PlanningRead> = batch.iter().map(|w| w.read).collect();
        let result = match store.conn().await {
            Ok(conn) => read_planning(&conn, sub, &asked, citus)
                .await
                .map_err(from_diesel),
            Err(e) => Err(e),
        };
        match result {
            Ok(rows) => {
                for (waiting, row) in batch.into_iter().zip(rows) {
                    // A request that went away no longer listens.
                    let _ = waiting.answer.send(Ok(row));
                }
            }
            Err(e) => {
                for waiting in batch {
                    let _ = waiting
                        .answer
                        .send(Err(crate::stores::copied_port_error(&e)));
                }
            }
        }
    }
}
