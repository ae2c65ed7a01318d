//! The transaction core every store that moves payouts shares: applying a planned change (or
//! a set of them) inside the caller's transaction, with its batch, balance movement, ledger
//! entries, account failure and events; the reactions of a KYC decision or a confirmation; and
//! joining the open batch. The payout, receiver, account and batch stores call in here; it
//! calls none of them.

use std::borrow::Cow;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::account::{AccountStatus, ConfirmStatus};
use domain::batch::BatchStatus;
use domain::events::OutboxEvent;
use domain::idempotency::{KeyAdmission, KeyCommit, WriteKey};
use domain::ids::{BatchId, PayoutId};
use domain::ledger::LedgerEntry;
use domain::money::Asset;
use domain::payout::change::{AccountFailure, PayoutChange, PayoutReaction};
use domain::payout::{Payout, PayoutStatus};
use domain::rail::schedule::BatchSchedule;
use uuid::Uuid;

use super::outbox::insert_events;
use super::statements;
use crate::cached::{BoxedSql, CachedExt};
use crate::errors::{TxError, from_tx};
use crate::rows::PayoutRow;
use crate::schema::{balances, batches, payouts, receiver_accounts};

/// Appends `entries` to the ledger in their order (their `seq` follows it): one statement, or
/// one per [`SET_STATEMENT_ROWS`](crate::stores::SET_STATEMENT_ROWS) of them.
pub(crate) async fn insert_entries(
    conn: &mut AsyncPgConnection,
    entries: &[LedgerEntry],
) -> Result<(), diesel::result::Error> {
    for entries in entries.chunks(crate::stores::SET_STATEMENT_ROWS) {
        bind_entries(
            diesel::sql_query(statements::INSERT_ENTRIES).into_boxed(),
            entries,
        )
        .cached()
        .execute(conn)
        .await?;
    }
    Ok(())
}

/// Binds `entries` as the eight arrays `sql/insert_entries.sql` unnests (its header lists them;
/// `sql/write_set.sql` takes them as `$25`–`$32`) (ids, subaccounts,
/// assets, kinds, available and pending deltas, payouts, times), as the next parameters.
pub(crate) fn bind_entries<'f>(query: BoxedSql<'f>, entries: &[LedgerEntry]) -> BoxedSql<'f> {
    use diesel::sql_types::{Array, BigInt, Nullable, Timestamptz};
    let ids: Vec<Uuid> = entries.iter().map(|e| e.id.as_uuid()).collect();
    let subaccounts: Vec<Uuid> = entries.iter().map(|e| e.subaccount_id.as_uuid()).collect();
    let assets: Vec<&'static str> = entries.iter().map(|e| e.asset.code()).collect();
    let kinds: Vec<&'static str> = entries.iter().map(|e| e.kind.as_str()).collect();
    let available: Vec<i64> = entries.iter().map(|e| e.available_delta).collect();
    let pending: Vec<i64> = entries.iter().map(|e| e.pending_delta).collect();
    let payouts: Vec<Option<Uuid>> = entries
        .iter()
        .map(|e| e.payout_id.map(|p| p.as_uuid()))
        .collect();
    let created: Vec<DateTime<Utc>> = entries.iter().map(|e| e.created_at).collect();
    query
        .bind::<Array<SqlUuid>, _>(ids)
        .bind::<Array<SqlUuid>, _>(subaccounts)
        .bind::<Array<Text>, _>(assets)
        .bind::<Array<Text>, _>(kinds)
        .bind::<Array<BigInt>, _>(available)
        .bind::<Array<BigInt>, _>(pending)
        .bind::<Array<Nullable<SqlUuid>>, _>(payouts)
        .bind::<Array<Timestamptz>, _>(created)
}

/// Why a payout transaction rolled back.
#[derive(Debug)]
pub(crate) enum PayoutAbort {
    /// A query failed or an invariant broke.
    Tx(TxError),
    /// The balance cannot absorb the change (a hold beyond `available`; for a later transition,
    /// a ledger that disagrees with its balance).
    InsufficientBalance,
    /// The payout is no longer in the status the change expects.
    Superseded,
    /// The receiver or account changed since the payout was planned.
    Stale,
    /// A request the write was to admit could not be: its nonce or key is there already, or
    /// the write cannot admit requests (see `domain::idempotency::Admission`).
    NotAdmitted,
}

impl PayoutAbort {
    /// The port error for an abort where none of the named cases is expected.
    pub(crate) fn into_port(self, what: &str) -> PortError {
        match self {
            PayoutAbort::Tx(e) => from_tx(e),
            other => PortError::unknown(format!("{what}: unexpected {other:?}")),
        }
    }
}

impl From<diesel::result::Error> for PayoutAbort {
    fn from(e: diesel::result::Error) -> Self {
        Self::Tx(TxError::Db(e))
    }
}

impl From<TxError> for PayoutAbort {
    fn from(e: TxError) -> Self {
        Self::Tx(e)
    }
}

#[derive(QueryableByName)]
struct OpenBatch {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Timestamptz)]
    batch_run_time: DateTime<Utc>,
}

/// The open batch of (subaccount, asset), if there is one (`sql/open_batch.sql`), locked
/// `FOR SHARE` as
/// [`join_open_batch`] locks it: its id and run time. Takes the connection shared, so that it
/// can be sent together with other statements ([`write_whole`](super::whole::write_whole)).
pub(crate) async fn open_batch(
    mut conn: &AsyncPgConnection,
    subaccount: Uuid,
    asset: &str,
) -> QueryResult<Option<(Uuid, DateTime<Utc>)>> {
    let open: Option<OpenBatch> = diesel::sql_query(statements::OPEN_BATCH)
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Text, _>(asset)
        .cached()
        .get_result(&mut conn)
        .await
        .optional()?;
    Ok(open.map(|open| (open.id, open.batch_run_time)))
}

/// The open batch of (subaccount, asset), locked `FOR SHARE` so it cannot close before this
/// transaction commits (closing waits for it, then sees the payout); created, to run
/// `interval` from `now`, when there is none. Returns its id and run time.
pub(crate) async fn join_open_batch(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    asset: &str,
    now: DateTime<Utc>,
    schedule: &BatchSchedule,
) -> Result<(Uuid, DateTime<Utc>), TxError> {
    // Two rounds suffice: a concurrent creator's batch is visible once its insert has made ours
    // wait and do nothing. A third round means that batch closed at once; try again anyway.
    for _ in 0..3 {
        if let Some(open) = open_batch(conn, subaccount, asset).await? {
            return Ok(open);
        }
        let id = Uuid::new_v4();
        let run_at = Asset::parse(asset).map_or_else(
            || schedule.without_calendar(now),
            |asset| schedule.run_time(asset, now),
        );
        let created = diesel::insert_into(batches::table)
            .values((
                batches::id.eq(id),
                batches::subaccount_id.eq(subaccount),
                batches::asset.eq(asset),
                batches::status.eq(BatchStatus::Open.as_str()),
                batches::batch_run_time.eq(run_at),
                batches::created_at.eq(now),
                batches::updated_at.eq(now),
            ))
            .on_conflict_do_nothing()
            .execute(conn)
            .await?;
        if created == 1 {
            return Ok((id, run_at));
        }
    }
    Err(TxError::Invariant(anyhow::anyhow!(
        "no open batch could be joined or created"
    )))
}

/// `events` with the batch's id and run time in the payloads of `payout`'s events: copies of
/// those with a batch to fill in, the others as they are (a batch's close moves payouts that
/// are in it already, and copying their events' JSON trees cost a part's worth of memory).
pub(crate) fn with_batch(
    events: &[OutboxEvent],
    payout: PayoutId,
    batch: Option<(Uuid, DateTime<Utc>)>,
) -> Vec<Cow<'_, OutboxEvent>> {
    events
        .iter()
        .map(|event| match batch {
            Some((id, run_at)) if event.object_id == payout.as_uuid() => {
                let mut event = event.clone();
                event.payload["batch_id"] = id.to_string().into();
                event.payload["batch_run_time"] = domain::time::unix_millis(run_at).into();
                Cow::Owned(event)
            }
            Some(_) | None => Cow::Borrowed(event),
        })
        .collect()
}

/// Applies `changes` inside the caller's transaction with the outcome of [`apply_change`] on
/// each in turn, but with one statement per kind of write rather than several per payout
/// where that gives the same result: every payout already in a batch, none audited, each
/// payout once, and each balance column moving one way only (so one guarded sum stays above
/// zero exactly when every step would). Closing a batch of thousands of payouts then holds the
/// batch's row for a handful of statements. The accounts the changes fail are failed in one
/// statement too, each announced once (by the first change failing it), only where it was not
/// failed already, as one by one. Anything else goes one by one.
pub(crate) async fn apply_changes(
    conn: &mut AsyncPgConnection,
    changes: &[PayoutChange],
    schedule: &BatchSchedule,
) -> Result<(), PayoutAbort> {
    use diesel::sql_types::{Array, Bool, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
    let Some(movements) = set_movements(changes) else {
        for change in changes {
            apply_change(conn, change, schedule, &WriteKey::none()).await?;
        }
        return Ok(());
    };
    let mut batch_ids: Vec<Uuid> = changes
        .iter()
        .filter_map(|c| c.payout.batch_id.map(|b| b.as_uuid()))
        .collect();
    batch_ids.sort_unstable();
    batch_ids.dedup();
    let run_times: HashMap<Uuid, DateTime<Utc>> = batches::table
        .filter(batches::id.eq_any(&batch_ids))
        .select((batches::id, batches::batch_run_time))
        .load::<(Uuid, DateTime<Utc>)>(conn)
        .await?
        .into_iter()
        .collect();
    // As `apply_change`: a batch that is gone leaves the payout without one.
    let batch_of = |c: &PayoutChange| {
        c.payout
            .batch_id
            .map(|b| b.as_uuid())
            .and_then(|b| run_times.get(&b).map(|run_at| (b, *run_at)))
    };
    // One statement per SET_STATEMENT_ROWS changes (a batch's close moves all its payouts).
    let mut moved = 0;
    for chunk in changes.chunks(crate::stores::SET_STATEMENT_ROWS) {
        let ps = chunk.iter().map(|c| &c.payout);
        moved += diesel::sql_query(statements::APPLY_CHANGES)
            .bind::<Array<SqlUuid>, _>(ps.clone().map(|p| p.id.as_uuid()).collect::<Vec<_>>())
            .bind::<Array<SqlUuid>, _>(
                ps.clone()
                    .map(|p| p.subaccount_id.as_uuid())
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<SmallInt>, _>(
                chunk
                    .iter()
                    .map(|c| i16::from(c.expected.code()))
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<SmallInt>, _>(
                ps.clone()
                    .map(|p| i16::from(p.status.code()))
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<Timestamptz>, _>(ps.clone().map(|p| p.updated_at).collect::<Vec<_>>())
            .bind::<Array<Nullable<SqlUuid>>, _>(
                chunk
                    .iter()
                    .map(|c| batch_of(c).map(|(b, _)| b))
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<Nullable<Timestamptz>>, _>(
                ps.clone().map(|p| p.submitted_at).collect::<Vec<_>>(),
            )
            .bind::<Array<Bool>, _>(
                ps.clone()
                    .map(|p| p.receiver_is_invalid)
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<Nullable<Text>>, _>(
                ps.clone()
                    .map(|p| p.failure_reason.as_deref())
                    .collect::<Vec<_>>(),
            )
            .bind::<Array<Nullable<Text>>, _>(
                ps.map(|p| p.return_code.as_deref()).collect::<Vec<_>>(),
            )
            .cached()
            .execute(conn)
            .await?;
    }
    if moved != changes.len() {
        return Err(PayoutAbort::Superseded);
    }
    for m in movements {
        move_balance(
            conn,
            (m.subaccount, m.asset),
            (m.available, m.pending),
            m.at,
        )
        .await?;
    }
    let entries: Vec<LedgerEntry> = changes.iter().flat_map(|c| c.entries.clone()).collect();
    insert_entries(conn, &entries).await?;
    let mut events: Vec<Cow<'_, OutboxEvent>> = changes
        .iter()
        .flat_map(|c| with_batch(&c.events, c.payout.id, batch_of(c)))
        .collect();
    events.extend(
        fail_accounts(conn, changes)
            .await?
            .into_iter()
            .map(Cow::Owned),
    );
    insert_events(conn, &events, None).await?;
    Ok(())
}

/// Fails the accounts of `changes`' account failures in one statement, each where it is not
/// failed already, and returns the `accountUpdate` of each account it failed: the first
/// change's that names it, as applying them in turn would write.
async fn fail_accounts(
    conn: &mut AsyncPgConnection,
    changes: &[PayoutChange],
) -> Result<Vec<OutboxEvent>, diesel::result::Error> {
    use diesel::sql_types::{Array, Timestamptz};
    let mut seen = std::collections::HashSet::new();
    let failures: Vec<(&PayoutChange, &AccountFailure)> = changes
        .iter()
        .filter_map(|c| c.account_failure.as_ref().map(|f| (c, f)))
        .filter(|(_, f)| seen.insert(f.account_id))
        .collect();
    if failures.is_empty() {
        return Ok(Vec::new());
    }
    let failed: Vec<FailedAccount> = diesel::sql_query(statements::FAIL_ACCOUNTS)
        .bind::<Array<SqlUuid>, _>(
            failures
                .iter()
                .map(|(_, f)| f.account_id.as_uuid())
                .collect::<Vec<_>>(),
        )
        .bind::<Array<SqlUuid>, _>(
            failures
                .iter()
                .map(|(c, _)| c.payout.subaccount_id.as_uuid())
                .collect::<Vec<_>>(),
        )
        .bind::<Array<Timestamptz>, _>(
            failures
                .iter()
                .map(|(_, f)| f.updated_at)
                .collect::<Vec<_>>(),
        )
        .bind::<Text, _>(AccountStatus::Failed.as_str())
        .cached()
        .load(conn)
        .await?;
    let failed: std::collections::HashSet<Uuid> = failed.into_iter().map(|a| a.id).collect();
    Ok(failures
        .into_iter()
        .filter(|(_, f)| failed.contains(&f.account_id.as_uuid()))
        .map(|(_, f)| f.event.clone())
        .collect())
}

/// An account [`fail_accounts`] failed.
#[derive(QueryableByName)]
struct FailedAccount {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
}

/// Adds (available, pending) to a balance, both sides guarded so that a transition can never
/// take either below zero (`InsufficientBalance` otherwise); nothing to do for (0, 0).
async fn move_balance(
    conn: &mut AsyncPgConnection,
    (subaccount, asset): (Uuid, &str),
    (available, pending): (i64, i64),
    at: DateTime<Utc>,
) -> Result<(), PayoutAbort> {
    if available == 0 && pending == 0 {
        return Ok(());
    }
    let applied = diesel::update(balances::table.find((subaccount, asset)))
        .filter(balances::available.ge(-available))
        .filter(balances::pending.ge(-pending))
        .set((
            balances::available.eq(balances::available + available),
            balances::pending.eq(balances::pending + pending),
            balances::updated_at.eq(at),
        ))
        .cached()
        .execute(conn)
        .await?;
    if applied == 1 {
        Ok(())
    } else {
        Err(PayoutAbort::InsufficientBalance)
    }
}

/// What a set of changes moves on one balance.
struct Movement {
    subaccount: Uuid,
    asset: &'static str,
    available: i64,
    pending: i64,
    /// The latest change's time.
    at: DateTime<Utc>,
    /// The signs the available and pending deltas took so far (-1, 0, 1).
    signs: (i64, i64),
}

/// The balance movements of `changes` summed per (subaccount, asset), when [`apply_changes`]
/// may apply them as a set; `None` when they must go one by one.
fn set_movements(changes: &[PayoutChange]) -> Option<Vec<Movement>> {
    if changes.len() < 2 {
        return None;
    }
    let mut seen = std::collections::HashSet::new();
    let mut movements: Vec<Movement> = Vec::new();
    for change in changes {
        let p = &change.payout;
        if p.batch_id.is_none() || change.audit.is_some() || !seen.insert(p.id) {
            return None;
        }
        let (subaccount, asset) = (p.subaccount_id.as_uuid(), p.asset.code());
        let index = match movements
            .iter()
            .position(|m| m.subaccount == subaccount && m.asset == asset)
        {
            Some(index) => index,
            None => {
                movements.push(Movement {
                    subaccount,
                    asset,
                    available: 0,
                    pending: 0,
                    at: p.updated_at,
                    signs: (0, 0),
                });
                movements.len() - 1
            }
        };
        let m = &mut movements[index];
        let (available, pending) = change.balance_delta();
        for (sign, delta) in [(&mut m.signs.0, available), (&mut m.signs.1, pending)] {
            match (*sign, delta.signum()) {
                (_, 0) => {}
                (0, s) => *sign = s,
                (was, s) if was != s => return None,
                _ => {}
            }
        }
        m.available = m.available.checked_add(available)?;
        m.pending = m.pending.checked_add(pending)?;
        m.at = m.at.max(p.updated_at);
    }
    Some(movements)
}

/// Applies one planned change inside the caller's transaction: the conditional status update
/// (with the fields the change sets), the batch a payout becoming `pending` joins, the balance
/// movement of its entries, the entries, the account it fails and its events, applying `key`
/// with them.
pub(crate) async fn apply_change(
    conn: &mut AsyncPgConnection,
    change: &PayoutChange,
    schedule: &BatchSchedule,
    key: &WriteKey<Payout>,
) -> Result<(), PayoutAbort> {
    let p = &change.payout;
    let (id, subaccount, at) = (p.id.as_uuid(), p.subaccount_id.as_uuid(), p.updated_at);
    let asset = p.asset.code();
    let batch = match p.batch_id {
        None if p.status == PayoutStatus::Pending => {
            Some(join_open_batch(conn, subaccount, asset, at, schedule).await?)
        }
        None => None,
        Some(batch) => batches::table
            .find(batch.as_uuid())
            .select(batches::batch_run_time)
            .first(conn)
            .await
            .optional()?
            .map(|run_at| (batch.as_uuid(), run_at)),
    };
    let moved = diesel::update(payouts::table)
        .filter(payouts::id.eq(id))
        .filter(payouts::subaccount_id.eq(subaccount))
        .filter(payouts::status.eq(i16::from(change.expected.code())))
        .set((
            payouts::status.eq(i16::from(p.status.code())),
            payouts::updated_at.eq(at),
            payouts::batch_id.eq(batch.map(|(b, _)| b)),
            payouts::submitted_at.eq(p.submitted_at),
            payouts::receiver_is_invalid.eq(p.receiver_is_invalid),
            payouts::failure_reason.eq(&p.failure_reason),
            payouts::return_code.eq(&p.return_code),
        ))
        .cached()
        .execute(conn)
        .await?;
    if moved != 1 {
        return Err(PayoutAbort::Superseded);
    }
    let (available, pending) = change.balance_delta();
    move_balance(conn, (subaccount, asset), (available, pending), at).await?;
    insert_entries(conn, &change.entries).await?;
    let mut events = with_batch(&change.events, p.id, batch);
    if let Some(failure) = &change.account_failure {
        let failed = diesel::update(receiver_accounts::table)
            .filter(receiver_accounts::id.eq(failure.account_id.as_uuid()))
            .filter(receiver_accounts::subaccount_id.eq(subaccount))
            .filter(receiver_accounts::status.ne(AccountStatus::Failed.as_str()))
            .set((
                receiver_accounts::status.eq(AccountStatus::Failed.as_str()),
                receiver_accounts::updated_at.eq(failure.updated_at),
            ))
            .cached()
            .execute(conn)
            .await?;
        if failed == 1 {
            events.push(Cow::Borrowed(&failure.event));
        }
    }
    if let Some(audit) = &change.audit {
        crate::stores::console::insert_audit(conn, audit).await?;
    }
    let commit = written_key(key, p, batch);
    insert_events(conn, &events, commit.as_ref()).await?;
    Ok(())
}

/// Whose waiting payouts a reaction moves.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Waiting {
    /// The receiver's (a KYC decision).
    OfReceiver(Uuid),
    /// The account's (a confirmation).
    OfAccount(Uuid),
}

/// Inside the caller's transaction (which has just changed the receiver or account): locks the
/// payouts waiting for the change and applies `reaction` to each.
pub(crate) async fn react(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    waiting: Waiting,
    reaction: &PayoutReaction,
    schedule: &BatchSchedule,
) -> Result<(), PayoutAbort> {
    let waiting_status = i16::from(reaction.waiting_status().code());
    // Two statements rather than one with optional tests: a cached generic plan of the latter
    // could not use either index.
    let base = payouts::table
        .filter(payouts::subaccount_id.eq(subaccount))
        .filter(payouts::status.eq(waiting_status))
        .select(PayoutRow::as_select())
        .order(payouts::created_at.asc());
    let rows: Vec<PayoutRow> = match waiting {
        Waiting::OfReceiver(id) => {
            base.filter(payouts::receiver_id.eq(id))
                .for_update()
                .load(conn)
                .await?
        }
        Waiting::OfAccount(id) => {
            base.filter(payouts::account_id.eq(id))
                .for_update()
                .load(conn)
                .await?
        }
    };
    if rows.is_empty() {
        return Ok(());
    }
    let account_ids: Vec<Uuid> = rows.iter().map(|r| r.account_id).collect();
    let confirmed: Vec<Uuid> = receiver_accounts::table
        .filter(receiver_accounts::id.eq_any(&account_ids))
        .filter(receiver_accounts::confirm_status.eq(ConfirmStatus::Confirmed.as_str()))
        .select(receiver_accounts::id)
        .load(conn)
        .await?;
    for row in rows {
        let account_confirmed = confirmed.contains(&row.account_id);
        let payout = Payout::try_from(row).map_err(TxError::invariant)?;
        let change = reaction
            .plan(&payout, account_confirmed)
            .map_err(TxError::invariant)?;
        apply_change(conn, &change, schedule, &WriteKey::none()).await?;
    }
    Ok(())
}

/// `key`'s commit for `payout` as written, in `batch` (the response may show the batch). The
/// payout is copied only when the request carries a key.
pub(crate) fn written_key<'k>(
    key: &'k WriteKey<Payout>,
    payout: &Payout,
    batch: Option<(Uuid, DateTime<Utc>)>,
) -> Option<KeyCommit<'k>> {
    key.claim()?;
    key.commit(&in_batch(payout, batch))
}

/// `key`'s admission for `payout` as written, in `batch` (see [`written_key`]): `None` when the
/// request is not admitted by its write, `Some(Err(NotAdmitted))` when it is but its response
/// does not render (the write then cannot admit it).
pub(crate) fn written_admission<'k>(
    key: &'k WriteKey<Payout>,
    payout: &Payout,
    batch: Option<(Uuid, DateTime<Utc>)>,
) -> Option<Result<KeyAdmission<'k>, PayoutAbort>> {
    key.admission()?;
    Some(
        key.admit(&in_batch(payout, batch))
            .ok_or(PayoutAbort::NotAdmitted),
    )
}

/// A copy of `payout` in `batch`.
fn in_batch(payout: &Payout, batch: Option<(Uuid, DateTime<Utc>)>) -> Payout {
    Payout {
        batch_id: batch.map(|(id, _)| BatchId::from_uuid(id)),
        ..payout.clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use chrono::{DateTime, Utc};
    use domain::builders::PayoutBuilder;
    use domain::events::OutboxEvent;
    use domain::ids::{BatchId, PayoutId, ReceiverAccountId, ReceiverId, SubaccountId};
    use domain::ledger::{LedgerEntry, LedgerEntryKind};
    use domain::money::Asset;
    use domain::payout::PayoutStatus;
    use domain::payout::change::{AccountFailure, PayoutChange};
    use uuid::Uuid;

    use super::set_movements;

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
    }

    /// A change of a payout of `sub` in `asset`, in a batch, moving (available, pending).
    fn change(
        sub: Uuid,
        asset: Asset,
        secs: i64,
        (available, pending): (i64, i64),
    ) -> PayoutChange {
        let id = PayoutId::from_uuid(Uuid::new_v4());
        let entry = LedgerEntry {
            id: domain::ids::LedgerEntryId::from_uuid(Uuid::new_v4()),
            subaccount_id: SubaccountId::from_uuid(sub),
            asset,
            kind: LedgerEntryKind::PayoutVoid,
            available_delta: available,
            pending_delta: pending,
            payout_id: Some(id),
            created_at: at(secs),
        };
        PayoutChange {
            expected: PayoutStatus::InProgress,
            payout: PayoutBuilder::new()
                .id(id)
                .subaccount(SubaccountId::from_uuid(sub))
                .receiver(ReceiverId::from_uuid(Uuid::new_v4()))
                .account(ReceiverAccountId::from_uuid(Uuid::new_v4()))
                .asset(asset)
                .status(PayoutStatus::Failed)
                .batch(BatchId::from_uuid(Uuid::new_v4()))
                .created_at(at(0))
                .updated_at(at(secs))
                .build(),
            entries: if (available, pending) == (0, 0) {
                Vec::new()
            } else {
                vec![entry]
            },
            events: Vec::new(),
            account_failure: None,
            audit: None,
        }
    }

    #[test]
    fn movements_are_summed_per_balance_with_the_latest_time() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let changes = [
            change(a, Asset::Aud, 1, (100, -100)),
            change(a, Asset::Aud, 3, (0, 0)),
            change(b, Asset::Aud, 2, (0, -50)),
            change(a, Asset::Usd, 4, (7, -7)),
            change(a, Asset::Aud, 2, (25, -25)),
        ];
        let sums: Vec<_> = set_movements(&changes)
            .unwrap()
            .into_iter()
            .map(|m| (m.subaccount, m.asset, m.available, m.pending, m.at))
            .collect();
        assert_eq!(
            sums,
            [
                (a, "AUD", 125, -125, at(3)),
                (b, "AUD", 0, -50, at(2)),
                (a, "USD", 7, -7, at(4)),
            ]
        );
    }

    #[test]
    fn changes_that_a_sum_would_not_guard_the_same_way_go_one_by_one() {
        let a = Uuid::new_v4();
        let one = change(a, Asset::Aud, 1, (100, -100));
        // A single change gains nothing from a set statement.
        assert!(set_movements(std::slice::from_ref(&one)).is_none());
        // A column moving both ways: order decides whether a step would go below zero.
        assert!(set_movements(&[one.clone(), change(a, Asset::Aud, 2, (-100, 100))]).is_none());
        assert!(set_movements(&[one.clone(), change(a, Asset::Aud, 2, (0, 10))]).is_none());
        // The same payout twice.
        assert!(set_movements(&[one.clone(), one.clone()]).is_none());
        // A payout without a batch (it joins one: a statement of its own).
        let mut unbatched = change(a, Asset::Aud, 2, (0, 0));
        unbatched.payout.batch_id = None;
        assert!(set_movements(&[one.clone(), unbatched]).is_none());
        // A payout failing its account goes in the set (its account failed by one statement).
        let mut failing = change(a, Asset::Aud, 2, (0, 0));
        failing.account_failure = Some(AccountFailure {
            account_id: failing.payout.account_id,
            updated_at: at(2),
            event: OutboxEvent {
                id: domain::ids::EventId::from_uuid(Uuid::new_v4()),
                subaccount_id: SubaccountId::from_uuid(a),
                object_id: Uuid::new_v4(),
                kind: domain::events::EventKind::AccountUpdate,
                payload: serde_json::json!({}),
                occurred_at: at(2),
            },
        });
        assert!(set_movements(&[one.clone(), failing]).is_some());
        // Different balances may move different ways.
        let other = Uuid::new_v4();
        assert!(set_movements(&[one, change(other, Asset::Aud, 2, (-5, 5))]).is_some());
    }
}
