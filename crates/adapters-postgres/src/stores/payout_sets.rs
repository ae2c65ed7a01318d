//! Many new payouts of one subaccount written with set statements, in one transaction: the
//! writes of a group commit and of a bulk request.
//!
//! [`decide`] settles every payout's fate under the locks that keep it true until the commit,
//! in the order given: its parties checked (`FOR SHARE`, as a single payout takes them), its
//! reference against those already taken (by earlier payouts, or earlier in the set), then its
//! total against what its balance has left (each balance row locked `FOR UPDATE` once, in
//! currency order). [`write_set`] then writes the accepted ones: the open batch of each
//! currency joined once, then the payouts, their ledger entries, their idempotency keys, their
//! events and one update of the balances by each currency's sum, in one statement on plain
//! PostgreSQL ([`WRITE_SET`]) and one statement each on Citus.
//!
//! A set expected to be accepted whole (a group of single requests, one alone, or a bulk
//! request) skips [`decide`] on plain PostgreSQL: [`write_whole`] locks and checks the parties
//! itself, in its own transaction, and the write fails as a whole when anything would refuse a
//! payout; the caller then decides the set afresh. Its balance row is locked only by the write
//! statement's last part, the guarded update, where [`decide`] locks it before the writes.
//! Such a set is written in three round trips: `BEGIN` with its planning setting sent together
//! with one statement that locks the parties and looks up the open batch
//! ([`PARTIES_AND_OPEN_BATCH`]); the writes; `COMMIT`. Waiting for each statement took five,
//! and deciding first seven. Once the open batch of each currency its payouts join is known,
//! a set is written in one: `BEGIN`, one statement that locks and checks the parties and the
//! batches as it writes and raises an error when a check fails
//! ([`WRITE_SET_AT_ONCE`]), and `COMMIT`, sent together ([`write_whole_at_once`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use diesel::connection::TransactionDepthChange;
use diesel::prelude::*;
use diesel::result::DatabaseErrorKind;
use diesel::sql_types::{
    Array, BigInt, Bool, Bytea, Integer, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{
    AnsiTransactionManager, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection,
    TransactionManager,
};
use domain::account::{AccountStatus, ConfirmStatus};
use domain::events::OutboxEvent;
use domain::idempotency::{KeyAdmission, KeyCommit, WriteKey};
use domain::ledger::LedgerEntry;
use domain::payout::initial_status;
use domain::payout::ports::InsertPayoutError;
use domain::payout::{Payout, PayoutStatus};
use domain::rail::schedule::BatchSchedule;
use domain::receiver::{KycStatus, ReceiverStatus};
use futures_util::future::{join, join_all, join3};
use uuid::Uuid;

use super::delivery::{NO_ENDPOINT, deliverable_endpoint};
use super::outbox::{bind_events, events_input, insert_events, insert_many, sequenced_events};
use super::transitions::{
    PayoutAbort, bind_entries, entries_in_order, insert_entries, insert_entries_from,
    join_open_batch, open_batch, with_batch, written_admission, written_key,
};
use crate::cached::{BoxedSql, CachedExt};
use crate::errors::TxError;
use crate::rows::PayoutRow;
use crate::schema::balances;

/// Why [`WRITE_SET_AT_ONCE`] refuses a set whose open batch is not the one it expected (the
/// batch closed, or another replaced it): the batches remembered for the subaccount in the
/// set's currencies are then forgotten.
macro_rules! other_batch {
    () => {
        "the open batch is not the one expected"
    };
}

/// A planned new payout of a set, with the idempotency key of its own request, if any.
#[derive(Clone, Copy)]
pub(crate) struct Planned<'a> {
    pub(crate) payout: &'a Payout,
    pub(crate) entries: &'a [LedgerEntry],
    pub(crate) events: &'a [OutboxEvent],
    pub(crate) key: Option<&'a WriteKey<Payout>>,
}

/// What [`decide`] settled for one payout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// To write.
    Write,
    /// Refused: what a single payout's insert would have answered.
    Refuse(Refusal),
}

/// Why a payout of a set is not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Stale,
    DuplicateReference,
    InsufficientBalance,
}

impl Refusal {
    /// The error a single payout's insert gives for it.
    pub(crate) fn error(self) -> InsertPayoutError {
        match self {
            Refusal::Stale => InsertPayoutError::Stale,
            Refusal::DuplicateReference => InsertPayoutError::DuplicateReference,
            Refusal::InsufficientBalance => InsertPayoutError::InsufficientBalance,
        }
    }
}

/// Settles each payout's fate, in the order given (see the module documentation), in a
/// transaction begun by [`in_set_transaction`] with the same `plans`. Every payout is of
/// `subaccount`.
pub(crate) async fn decide(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    set: &[Planned<'_>],
    plans: SetPlans,
) -> Result<Vec<Verdict>, PayoutAbort> {
    let on_citus = plans == SetPlans::AsChosen;
    let accounts: Vec<Uuid> = set.iter().map(|p| p.payout.account_id.as_uuid()).collect();
    let parties = lock_parties(conn, subaccount, &accounts, plans).await?;
    let references: Vec<&str> = set
        .iter()
        .filter_map(|p| p.payout.reference.as_deref())
        .collect();
    let mut taken: HashSet<String> = if references.is_empty() {
        HashSet::new()
    } else {
        diesel::sql_query(if on_citus {
            TAKEN_REFERENCES
        } else {
            TAKEN_REFERENCES_BY_KEY
        })
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Array<Text>, _>(&references)
        .cached()
        .load::<TakenReference>(conn)
        .await?
        .into_iter()
        .map(|row| row.reference)
        .collect()
    };
    let mut assets: Vec<&str> = set.iter().map(|p| p.payout.asset.code()).collect();
    assets.sort_unstable();
    assets.dedup();
    // Locked in currency order, so two sets of the same subaccount never wait for each other
    // in a circle.
    let mut left: HashMap<String, i64> = balances::table
        .filter(balances::subaccount_id.eq(subaccount))
        .filter(balances::asset.eq_any(&assets))
        .order(balances::asset.asc())
        .select((balances::asset, balances::available))
        .for_update()
        .cached()
        .load::<(String, i64)>(conn)
        .await?
        .into_iter()
        .collect();
    Ok(set
        .iter()
        .map(|p| {
            let payout = p.payout;
            if !parties.as_planned(payout) {
                return Verdict::Refuse(Refusal::Stale);
            }
            if let Some(reference) = &payout.reference
                && taken.contains(reference)
            {
                return Verdict::Refuse(Refusal::DuplicateReference);
            }
            let total = payout.total();
            match left.get_mut(payout.asset.code()) {
                Some(available) if total <= *available => *available -= total,
                _ => return Verdict::Refuse(Refusal::InsufficientBalance),
            }
            if let Some(reference) = &payout.reference {
                taken.insert(reference.clone());
            }
            Verdict::Write
        })
        .collect())
}

/// The payouts of `set` that [`decide`] accepted (its `verdicts`, in the same order).
pub(crate) fn accepted<'a>(set: &[Planned<'a>], verdicts: &[Verdict]) -> Vec<Planned<'a>> {
    set.iter()
        .zip(verdicts)
        .filter(|(_, v)| **v == Verdict::Write)
        .map(|(p, _)| *p)
        .collect()
}

/// How a set transaction's statements are planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SetPlans {
    /// Every statement with its generic plan (the transaction begins with
    /// [`BEGIN_WITH_GENERIC_PLANS`]), the reads by the set's keys in their forms that only the
    /// keys' indexes can serve ([`PARTIES_BY_KEY`], [`TAKEN_REFERENCES_BY_KEY`]), the writes in
    /// one statement ([`WRITE_SET`]): on plain PostgreSQL.
    Generic,
    /// As PostgreSQL chooses, which for these statements is afresh on every call, with the
    /// reads comparing the subaccount with `=` ([`PARTIES`], [`TAKEN_REFERENCES`]) so that
    /// they are routed to its shard: on Citus, whose coordinator failed to run the set
    /// transaction with generic plans (every group fell back to writing its requests one by
    /// one).
    AsChosen,
}

impl SetPlans {
    /// The planning for a database that is (`true`) or is not a Citus cluster.
    pub(crate) fn on_citus(citus: bool) -> Self {
        if citus { Self::AsChosen } else { Self::Generic }
    }
}

/// How a set transaction begins on plain PostgreSQL: every statement after `BEGIN` runs its
/// generic plan, and both go in one round trip (one simple query). Each statement takes arrays
/// as long as the set, and PostgreSQL costs a generic plan for an array of unknown length above
/// one made for the array given, so it would plan them afresh for every group (about 0.35 ms a
/// group, 13 % of PostgreSQL's statement time under the payout benchmark). None of the plans
/// depends on the subaccount's size: the reads by the set's keys compare the subaccount in a
/// form no index serves (see [`PARTIES_BY_KEY`]), the balances are read and updated by their
/// primary key, [`MARK_KEYS_COMMITTED`] finds the keys through the primary key of
/// `idempotency_keys`, which leads with the key, and the rest are inserts. The unit tests below
/// check these generic plans for a large subaccount among many small ones. The setting ends
/// with the transaction.
const BEGIN_WITH_GENERIC_PLANS: &str = "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan";

/// Runs `callback` in a transaction planned as `plans` says (see [`BEGIN_WITH_GENERIC_PLANS`]),
/// committed when it returns `Ok` and rolled back otherwise, as
/// [`AsyncConnection::transaction`](diesel_async::AsyncConnection::transaction) does.
pub(crate) async fn in_set_transaction<R, E, F>(
    conn: &mut AsyncPgConnection,
    plans: SetPlans,
    callback: F,
) -> Result<R, E>
where
    F: AsyncFnOnce(&mut AsyncPgConnection) -> Result<R, E>,
    E: From<diesel::result::Error>,
{
    match plans {
        // Setting a valid value of `plan_cache_mode` cannot fail, so the query either begins
        // the transaction with it or fails at `BEGIN`, leaving no transaction open that the
        // transaction manager does not know of.
        SetPlans::Generic => {
            AnsiTransactionManager::begin_transaction_sql(conn, BEGIN_WITH_GENERIC_PLANS).await?;
        }
        SetPlans::AsChosen => AnsiTransactionManager::begin_transaction(conn).await?,
    }
    let result = callback(&mut *conn).await;
    end_transaction(conn, result).await
}

/// Ends the open transaction: commits it when `result` is `Ok`, rolls it back otherwise.
async fn end_transaction<R, E>(conn: &mut AsyncPgConnection, result: Result<R, E>) -> Result<R, E>
where
    E: From<diesel::result::Error>,
{
    match result {
        Ok(value) => {
            AnsiTransactionManager::commit_transaction(conn).await?;
            Ok(value)
        }
        Err(e) => match AnsiTransactionManager::rollback_transaction(conn).await {
            // A broken transaction manager is most likely the failure's own doing.
            Ok(()) | Err(diesel::result::Error::BrokenTransactionManager) => Err(e),
            Err(rollback) => Err(rollback.into()),
        },
    }
}

/// Each locked account's receiver, the status a new payout to them starts in, and whether
/// they may be paid at all: what a planned payout is checked against.
pub(crate) struct Parties(HashMap<Uuid, (Uuid, PayoutStatus, bool)>);

impl Parties {
    fn of(rows: impl IntoIterator<Item = PartyRow>) -> Self {
        Self(
            rows.into_iter()
                .map(|row| {
                    let (status, payable) = party_status(
                        row.receiver_status,
                        row.kyc_status,
                        &row.account_status,
                        &row.confirm_status,
                    );
                    (row.account_id, (row.receiver_id, status, payable))
                })
                .collect(),
        )
    }

    /// Whether `payout`'s account is still its receiver's, both may still be paid, and a new
    /// payout to them still starts in the status it was planned with.
    pub(crate) fn as_planned(&self, payout: &Payout) -> bool {
        self.0
            .get(&payout.account_id.as_uuid())
            .is_some_and(|(receiver, status, payable)| {
                *receiver == payout.receiver_id.as_uuid() && *payable && *status == payout.status
            })
    }
}

/// Locks the parties of `accounts` (the subaccount's own only) `FOR SHARE`, as a single payout
/// locks them, and reads what [`Parties`] checks.
async fn lock_parties(
    mut conn: &AsyncPgConnection,
    subaccount: Uuid,
    accounts: &[Uuid],
    plans: SetPlans,
) -> Result<Parties, TxError> {
    let rows: Vec<PartyRow> = diesel::sql_query(match plans {
        SetPlans::AsChosen => PARTIES,
        SetPlans::Generic => PARTIES_BY_KEY,
    })
    .bind::<SqlUuid, _>(subaccount)
    .bind::<Array<SqlUuid>, _>(accounts)
    .cached()
    .load(&mut conn)
    .await?;
    Ok(Parties::of(rows))
}

/// The receiver and account of each account id of the array `$accounts`, the subaccount
/// `$sub`'s only, locked `FOR SHARE` as a single payout locks them; `$same` compares a row's
/// subaccount with `$sub`.
macro_rules! parties {
    ($same:literal, $sub:literal, $accounts:literal) => {
        concat!(
            "SELECT ra.id AS account_id, r.id AS receiver_id, r.status AS receiver_status, \
               r.kyc_status, ra.status AS account_status, ra.confirm_status \
             FROM receivers r JOIN receiver_accounts ra ON ra.receiver_id = r.id \
             WHERE r.subaccount_id ",
            $same,
            " ",
            $sub,
            " AND ra.id = ANY(",
            $accounts,
            "::uuid[]) AND ra.subaccount_id ",
            $same,
            " ",
            $sub,
            " FOR SHARE"
        )
    };
}

/// [`parties!`] on Citus: `ra.subaccount_id = $1` is implied by the receivers' subaccount; it
/// is said so that Citus routes the lock to one shard.
const PARTIES: &str = parties!("=", "$1", "$2");

/// [`parties!`] on plain PostgreSQL, comparing the subaccount with `IS NOT DISTINCT FROM` (the
/// same as `=` for these non-null columns), which no index serves. A generic plan estimates "the
/// rows of this subaccount" as the average subaccount's; for a merchant much larger than the
/// average, a scan of all its receivers by an index on `subaccount_id` then looked cheaper than
/// a lookup per key, and read thousands of rows to find a handful. In this form the accounts
/// are found by primary key whatever the subaccount's size.
const PARTIES_BY_KEY: &str = parties!("IS NOT DISTINCT FROM", "$1", "$2");

/// What a set written whole on plain PostgreSQL reads first, in one statement: its parties as
/// [`PARTIES_BY_KEY`] reads and locks them (`$1`, `$2`), and the open batch of the currency `$3`
/// locked `FOR SHARE` as `open_batch` locks it (`'open'` in the text, so that the generic plan
/// uses the partial index `batches_open`). One row per party, each carrying the batch (or one
/// row of nulls but the batch, when no party is the subaccount's): a statement fewer per group
/// than reading them apart.
const PARTIES_AND_OPEN_BATCH: &str = concat!(
    "WITH parties AS (",
    parties!("IS NOT DISTINCT FROM", "$1", "$2"),
    "), open_batch AS ( \
       SELECT id, batch_run_time FROM batches \
       WHERE subaccount_id = $1 AND asset = $3 AND status = 'open' FOR SHARE) \
     SELECT p.account_id, p.receiver_id, p.receiver_status, p.kyc_status, p.account_status, \
       p.confirm_status, b.id AS batch_id, b.batch_run_time \
     FROM (VALUES (1)) AS one (n) LEFT JOIN parties p ON true LEFT JOIN open_batch b ON true"
);

/// A row of [`PARTIES_AND_OPEN_BATCH`].
#[derive(QueryableByName)]
struct PartyAndBatchRow {
    #[diesel(sql_type = Nullable<SqlUuid>)]
    account_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    receiver_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<SmallInt>)]
    receiver_status: Option<i16>,
    #[diesel(sql_type = Nullable<SmallInt>)]
    kyc_status: Option<i16>,
    #[diesel(sql_type = Nullable<Text>)]
    account_status: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    confirm_status: Option<String>,
    #[diesel(sql_type = Nullable<SqlUuid>)]
    batch_id: Option<Uuid>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    batch_run_time: Option<DateTime<Utc>>,
}

impl PartyAndBatchRow {
    /// The party of the row, unless it is the row of nulls that carries only the batch.
    fn party(self) -> Option<PartyRow> {
        Some(PartyRow {
            account_id: self.account_id?,
            receiver_id: self.receiver_id?,
            receiver_status: self.receiver_status?,
            kyc_status: self.kyc_status?,
            account_status: self.account_status?,
            confirm_status: self.confirm_status?,
        })
    }
}

/// The open batch of a set's only currency with its parties locked (the reads that open
/// [`write_whole`]), one statement in all ([`PARTIES_AND_OPEN_BATCH`]).
async fn lock_parties_and_open_batch(
    mut conn: &AsyncPgConnection,
    subaccount: Uuid,
    accounts: &[Uuid],
    asset: &str,
) -> Result<(Parties, Option<(Uuid, DateTime<Utc>)>), TxError> {
    let rows: Vec<PartyAndBatchRow> = diesel::sql_query(PARTIES_AND_OPEN_BATCH)
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Array<SqlUuid>, _>(accounts)
        .bind::<Text, _>(asset)
        .cached()
        .load(&mut conn)
        .await?;
    let batch = rows
        .iter()
        .find_map(|row| row.batch_id.zip(row.batch_run_time));
    Ok((
        Parties::of(rows.into_iter().filter_map(PartyAndBatchRow::party)),
        batch,
    ))
}

/// The reads that open [`write_whole`]: the set's parties locked, and the open batch of each
/// currency that joins one (in one statement when there is one such currency, as for every
/// group and lone payout).
async fn opening_reads(
    conn: &AsyncPgConnection,
    subaccount: Uuid,
    accounts: &[Uuid],
    joining: &[(&str, DateTime<Utc>)],
) -> Result<(Parties, Vec<Option<(Uuid, DateTime<Utc>)>>), TxError> {
    if let [(asset, _)] = joining {
        let (parties, batch) =
            lock_parties_and_open_batch(conn, subaccount, accounts, asset).await?;
        return Ok((parties, vec![batch]));
    }
    let (parties, open) = join(
        lock_parties(conn, subaccount, accounts, SetPlans::Generic),
        join_all(
            joining
                .iter()
                .map(|(asset, _)| open_batch(conn, subaccount, asset)),
        ),
    )
    .await;
    let open = open.into_iter().collect::<QueryResult<Vec<_>>>()?;
    Ok((parties?, open))
}

#[derive(QueryableByName)]
struct PartyRow {
    #[diesel(sql_type = SqlUuid)]
    account_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    receiver_id: Uuid,
    #[diesel(sql_type = SmallInt)]
    receiver_status: i16,
    #[diesel(sql_type = SmallInt)]
    kyc_status: i16,
    #[diesel(sql_type = Text)]
    account_status: String,
    #[diesel(sql_type = Text)]
    confirm_status: String,
}

/// Which references of `$2` the subaccount `$1` has already given a payout (through the partial
/// unique index on references, `payouts_reference_unique`, whose `reference IS NOT NULL` the
/// strict `= ANY` implies in any plan), on Citus: `=` routes it to the subaccount's shard.
const TAKEN_REFERENCES: &str = "\
    SELECT reference FROM payouts WHERE subaccount_id = $1 AND reference = ANY($2::text[])";

/// [`TAKEN_REFERENCES`] on plain PostgreSQL, comparing the subaccount as [`PARTIES_BY_KEY`]
/// does: the generic plan finds the references through `payouts_reference_unique`, which leads
/// with the reference, never by scanning the subaccount's payouts.
const TAKEN_REFERENCES_BY_KEY: &str = "\
    SELECT reference FROM payouts \
    WHERE subaccount_id IS NOT DISTINCT FROM $1 AND reference = ANY($2::text[])";

#[derive(QueryableByName)]
struct TakenReference {
    #[diesel(sql_type = Text)]
    reference: String,
}

/// What the written payouts of one currency need: the time a new batch would open at (the
/// earliest `pending` payout's, if any starts `pending`), the sum to hold, and the latest
/// payout's time (the balance's `updated_at`).
struct CurrencyTotal {
    opens_batch_at: Option<DateTime<Utc>>,
    total: i64,
    last: DateTime<Utc>,
}

/// The statuses of a receiver that may not be paid.
const UNPAYABLE_RECEIVERS: [ReceiverStatus; 2] = [ReceiverStatus::Failed, ReceiverStatus::Inactive];

/// From the stored statuses of a payout's receiver (status, KYC) and account (status,
/// confirmation): the status a new payout to them starts in, and whether they may be paid at
/// all.
pub(crate) fn party_status(
    receiver_status: i16,
    kyc: i16,
    account_status: &str,
    confirm: &str,
) -> (PayoutStatus, bool) {
    let payable = !UNPAYABLE_RECEIVERS
        .iter()
        .any(|s| i16::from(s.code()) == receiver_status)
        && account_status != AccountStatus::Failed.as_str();
    let status = initial_status(
        kyc == i16::from(KycStatus::Completed.code()),
        confirm == ConfirmStatus::Confirmed.as_str(),
    );
    (status, payable)
}

/// The open batch a written payout joined (its id and run time), if it starts `pending`.
pub(crate) type Joined = Option<(Uuid, DateTime<Utc>)>;

/// Writes the payouts given, all of `subaccount`, accepted by [`decide`] earlier in the
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

/// Writes a set expected to be accepted whole (a group of single requests, or one alone), all
/// of `subaccount`, on plain PostgreSQL, in a transaction of its own, committed when it is
/// written and rolled back otherwise.
///
/// When the open batch of each currency its `pending` payouts join is known (`open_batches`:
/// the batch the last set of the subaccount joined in that currency), it is written in one
/// round trip ([`write_whole_at_once`]); if that is refused (anything below, or a batch no
/// longer open), it is written as follows. Either way the batches joined are remembered for
/// the next set.
///
/// The transaction's `BEGIN` (with its generic plans) and the
/// lock and read of the payouts' parties with the lookup of the open batch of the currency the
/// payouts join (one statement, [`PARTIES_AND_OPEN_BATCH`], for a set of one currency) are sent
/// together and answered in one round trip; then come the writes, one
/// statement ([`WRITE_SET`], which also admits the requests whose admission their keys carry),
/// and the commit: three round trips, where waiting for each statement took five when a payout
/// starts `pending`. Returns the batch each payout joined, in the order given.
///
/// Fails as a whole, for the caller to decide the set afresh, when a party is no longer as
/// planned ([`PayoutAbort::Stale`]), a key is no longer its request's ([`TxError::KeyNotOwn`]),
/// a request cannot be admitted ([`PayoutAbort::NotAdmitted`]), a balance does not cover its
/// currency's sum ([`PayoutAbort::InsufficientBalance`]) or a reference is taken (a unique
/// violation of `payouts_reference_unique`), in that order when more than one holds.
pub(crate) async fn write_whole(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    schedule: &BatchSchedule,
    open_batches: &OpenBatches,
) -> Result<Vec<Joined>, PayoutAbort> {
    if let Some(expected) = open_batches.expected(subaccount, written) {
        match write_whole_at_once(conn, subaccount, written, &expected).await {
            AtOnce::Written(joined) => return Ok(joined),
            AtOnce::InDoubt(abort) => return Err(abort),
            AtOnce::NotWritten(why) => {
                tracing::debug!(
                    payouts = written.len(),
                    reason = %why,
                    "a payout set was not written at once; writing it in three round trips"
                );
                if why == other_batch!() {
                    open_batches.forget(subaccount, &expected.batches);
                }
            }
        }
    }
    let joined = write_whole_then(conn, subaccount, written, schedule, async |_| Ok(())).await?;
    open_batches.remember(subaccount, written, &joined);
    Ok(joined)
}

/// What a set written at once ([`write_whole_at_once`]) expects to find: the open batch of
/// each currency whose payouts join one (some start `pending`), in currency order, as
/// (currency code, batch, run time).
struct Expected {
    batches: Vec<OpenBatch>,
}

/// A currency's open batch: (currency code, batch, run time).
type OpenBatch = (&'static str, Uuid, DateTime<Utc>);

/// The open batch that the last set written whole of each subaccount and currency joined, so
/// that the next can be written in one round trip ([`write_whole_at_once`], which checks that
/// each batch is still the open one). Shared by a store's clones. It holds at most
/// [`OpenBatches::MOST`] subaccounts and currencies, and starts afresh when full.
#[derive(Debug, Default)]
pub(crate) struct OpenBatches(Mutex<BatchesByCurrency>);

/// Each subaccount and currency's open batch, by (subaccount, currency code).
type BatchesByCurrency = HashMap<(Uuid, &'static str), (Uuid, DateTime<Utc>)>;

impl OpenBatches {
    const MOST: usize = 10_000;

    fn lock(&self) -> MutexGuard<'_, BatchesByCurrency> {
        // Inserts and removals only: a poisoned lock still holds a consistent map.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `written` (payouts of `subaccount`) expects when written at once, or `None` when it
    /// cannot be: it is empty, or the open batch of a currency some of its payouts join
    /// (starting `pending`) is not known.
    fn expected(&self, subaccount: Uuid, written: &[Planned<'_>]) -> Option<Expected> {
        if written.is_empty() {
            return None;
        }
        let joining: BTreeSet<&'static str> = written
            .iter()
            .filter(|p| p.payout.status == PayoutStatus::Pending)
            .map(|p| p.payout.asset.code())
            .collect();
        let known = self.lock();
        let batches = joining
            .into_iter()
            .map(|asset| {
                let (id, run_time) = known.get(&(subaccount, asset))?;
                Some((asset, *id, *run_time))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Expected { batches })
    }

    /// Records the batches the payouts of `written` (of `subaccount`, in the batches of
    /// `joined`) joined, one per currency.
    fn remember(&self, subaccount: Uuid, written: &[Planned<'_>], joined: &[Joined]) {
        let mut batches = self.lock();
        for (p, batch) in written.iter().zip(joined) {
            let Some(batch) = batch else { continue };
            let key = (subaccount, p.payout.asset.code());
            if batches.len() >= Self::MOST && !batches.contains_key(&key) {
                batches.clear();
            }
            batches.insert(key, *batch);
        }
    }

    /// Forgets the batches of `subaccount` in the currencies of `expected`.
    fn forget(&self, subaccount: Uuid, expected: &[OpenBatch]) {
        let mut batches = self.lock();
        for (asset, _, _) in expected {
            batches.remove(&(subaccount, *asset));
        }
    }
}

/// How a set written at once ended.
enum AtOnce {
    /// Written and committed: the batch each payout joined.
    Written(Vec<Joined>),
    /// Rolled back as a whole (a check of [`WRITE_SET_AT_ONCE`] failed, or the statement did),
    /// or never sent: why, in words that carry no value of the set.
    NotWritten(String),
    /// Failed in a way that leaves the commit in doubt (a lost connection).
    InDoubt(PayoutAbort),
}

/// Writes `written` (payouts of `subaccount`, in the open batches `expected` says) whole, in
/// one round trip: `BEGIN` with its planning setting ([`BEGIN_WITH_GENERIC_PLANS`]),
/// [`WRITE_SET_AT_ONCE`] and `COMMIT`, sent together. The statement checks everything the
/// three round trips of [`write_whole_then`] check in between (parties, open batches, keys,
/// admissions, counts, balances) and raises an error when a check fails, which aborts the
/// transaction; the `COMMIT` then rolls it back. Should the statement be sent after the
/// `COMMIT` (it is prepared on its first use on a connection, and the `COMMIT` does not wait),
/// it runs as a transaction of its own, with the same checks.
async fn write_whole_at_once(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    expected: &Expected,
) -> AtOnce {
    let currencies = currency_totals(written);
    let batches: HashMap<&str, (Uuid, DateTime<Utc>)> = expected
        .batches
        .iter()
        .map(|&(asset, id, run_time)| (asset, (id, run_time)))
        .collect();
    let joined = joined_batches(written, &batches);
    let built = match BuiltSet::of(subaccount, written, &joined, &currencies, true) {
        Ok(built) => built,
        Err(abort) => return AtOnce::NotWritten(format!("{abort:?}")),
    };
    let open = &expected.batches;
    let query = bind_party_rule(bind_set(WRITE_SET_AT_ONCE, subaccount, &built.rows()))
        .bind::<Array<Text>, _>(open.iter().map(|b| b.0).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(open.iter().map(|b| b.1).collect::<Vec<_>>())
        .bind::<Array<Timestamptz>, _>(open.iter().map(|b| b.2).collect::<Vec<_>>())
        .cached();
    // Counted as begun before `BEGIN` is sent, as in `write_whole_then`: a connection left
    // midway is one the pool discards.
    if let Err(e) = AnsiTransactionManager::transaction_manager_status_mut(conn)
        .transaction_state()
        .and_then(|state| state.change_transaction_depth(TransactionDepthChange::IncreaseDepth))
    {
        return AtOnce::NotWritten(format!("the connection cannot begin a transaction: {e}"));
    }
    let shared: &AsyncPgConnection = conn;
    let (_, wrote, ended) = join3(
        async {
            let mut shared = shared;
            shared.batch_execute(BEGIN_WITH_GENERIC_PLANS).await
        },
        async {
            let mut shared = shared;
            query.get_result::<Refused>(&mut shared).await
        },
        async {
            let mut shared = shared;
            shared.batch_execute("COMMIT").await
        },
    )
    .await;
    // `BEGIN`'s own outcome changes nothing: had it failed, the statement ran alone and the
    // `COMMIT` found no transaction (a warning), which the statement's outcome covers.
    if ended.is_ok() {
        // The transaction is over (committed, or rolled back after the statement's error).
        // A manager that cannot count it so is broken, and the pool discards its connection.
        if let Ok(state) =
            AnsiTransactionManager::transaction_manager_status_mut(conn).transaction_state()
        {
            drop(state.change_transaction_depth(TransactionDepthChange::DecreaseDepth));
        }
    }
    match (wrote, ended) {
        (Ok(row), Ok(())) if row.refused == 0 => AtOnce::Written(joined),
        (Ok(_), Ok(())) => AtOnce::InDoubt(PayoutAbort::Tx(TxError::invariant(anyhow::anyhow!(
            "a set written at once answered a refusal without raising it"
        )))),
        (Ok(_), Err(e)) => AtOnce::InDoubt(PayoutAbort::Tx(e.into())),
        (Err(e), _) if reported_by_server(&e) => AtOnce::NotWritten(refusal(&e)),
        (Err(e), _) => AtOnce::InDoubt(PayoutAbort::Tx(e.into())),
    }
}

/// [`WRITE_SET_AT_ONCE`]'s answer: 0 (a refusal raises an error instead).
#[derive(QueryableByName)]
struct Refused {
    #[diesel(sql_type = BigInt)]
    refused: i64,
}

/// Whether `error` came from the server about the statement (which then wrote nothing, its
/// transaction aborted), rather than from a connection that failed.
fn reported_by_server(error: &diesel::result::Error) -> bool {
    matches!(
        error,
        diesel::result::Error::DatabaseError(kind, _)
            if !matches!(
                kind,
                DatabaseErrorKind::UnableToSendCommand | DatabaseErrorKind::ClosedConnection
            )
    )
}

/// Why a set written at once was refused, in words that carry no value of the set: the check
/// that failed, the constraint a unique violation hit, or the kind of error.
fn refusal(error: &diesel::result::Error) -> String {
    match error {
        diesel::result::Error::DatabaseError(kind, info) => {
            if let Some(why) = info.message().strip_prefix(REFUSED) {
                why.to_owned()
            } else if let Some(constraint) = crate::errors::unique_violation(error) {
                format!("unique violation of {constraint}")
            } else {
                format!("{kind:?}")
            }
        }
        other => format!("{other:?}"),
    }
}

/// How the message of `payout_set_refused`'s error begins.
const REFUSED: &str = "payout set refused: ";

/// [`write_whole`], with `then` run in its transaction once the payouts are written, before
/// the commit (a bulk request's own key marked committed with its answer): when `then` fails,
/// nothing is written.
pub(crate) async fn write_whole_then<F>(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    schedule: &BatchSchedule,
    then: F,
) -> Result<Vec<Joined>, PayoutAbort>
where
    F: AsyncFnOnce(&mut AsyncPgConnection) -> Result<(), PayoutAbort>,
{
    // The transaction manager counts the transaction as begun before its `BEGIN` is sent, so
    // that a connection left midway (this future dropped while the statements are in flight)
    // is one the pool discards, never one it lends again with a transaction open.
    AnsiTransactionManager::transaction_manager_status_mut(conn)
        .transaction_state()?
        .change_transaction_depth(TransactionDepthChange::IncreaseDepth)?;
    let result = match write_whole_begun(conn, subaccount, written, schedule).await {
        Ok(joined) => then(&mut *conn).await.map(|()| joined),
        Err(e) => Err(e),
    };
    end_transaction(conn, result).await
}

/// [`write_whole`] once the transaction manager counts its transaction as begun: sends the
/// `BEGIN` with the reads that open the transaction, then writes.
async fn write_whole_begun(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    written: &[Planned<'_>],
    schedule: &BatchSchedule,
) -> Result<Vec<Joined>, PayoutAbort> {
    let currencies = currency_totals(written);
    let accounts: Vec<Uuid> = written
        .iter()
        .map(|p| p.payout.account_id.as_uuid())
        .collect();
    let joining: Vec<(&str, DateTime<Utc>)> = currencies
        .iter()
        .filter_map(|(asset, currency)| currency.opens_batch_at.map(|at| (*asset, at)))
        .collect();
    // Sent in this order on the first poll (each future sends its statement when first
    // polled, or after the statement it prepares, which the others wait for), so the reads run
    // after `BEGIN`, in its transaction. Should `BEGIN` fail, the reads may have run on their
    // own; nothing is written before it is known to have begun.
    let opening: &AsyncPgConnection = conn;
    let (begun, read) = join(
        async {
            let mut opening = opening;
            opening.batch_execute(BEGIN_WITH_GENERIC_PLANS).await
        },
        opening_reads(opening, subaccount, &accounts, &joining),
    )
    .await;
    begun?;
    let (parties, open) = read?;
    if !written.iter().all(|p| parties.as_planned(p.payout)) {
        return Err(PayoutAbort::Stale);
    }
    let mut batches: HashMap<&str, (Uuid, DateTime<Utc>)> = HashMap::new();
    for ((asset, at), open) in joining.iter().zip(open) {
        let batch = match open {
            Some(batch) => batch,
            // No batch is open: one is created (or joined, if another transaction created it
            // meanwhile), as a decided set's is.
            None => join_open_batch(conn, subaccount, asset, *at, schedule).await?,
        };
        batches.insert(asset, batch);
    }
    write_joined(
        conn,
        subaccount,
        written,
        &currencies,
        &batches,
        SetPlans::Generic,
        true,
    )
    .await
}

/// Each currency's [`CurrencyTotal`] of the payouts of `written`.
fn currency_totals<'p>(written: &[Planned<'p>]) -> BTreeMap<&'p str, CurrencyTotal> {
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
/// joined. `admits` says whether the statement may admit requests (only [`WRITE_SET`] does,
/// and only in a set written whole); a request to admit otherwise fails the set with
/// [`PayoutAbort::NotAdmitted`].
async fn write_joined(
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
fn joined_batches(
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
struct BuiltSet<'k> {
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
    fn of(
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

    fn rows(&self) -> SetRows<'_, 'k> {
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
struct SetRows<'s, 'k> {
    payouts: &'s [PayoutRow],
    entries: &'s [LedgerEntry],
    keys: &'s [KeyCommit<'k>],
    admissions: &'s [KeyAdmission<'k>],
    events: &'s [OutboxEvent],
    sums: &'s Sums<'s>,
}

/// Each currency's total held by a set, and the time of its last payout.
struct Sums<'a> {
    assets: Vec<&'a str>,
    totals: Vec<i64>,
    times: Vec<DateTime<Utc>>,
}

impl SetRows<'_, '_> {
    /// What the writes must have touched: every payout, entry and event, every key (else one is
    /// no longer its request's), and every currency's balance (else it no longer covers the
    /// set: never for a set [`decide`] locked the balances for, but a set written without it
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

/// A set's writes as one statement ([`WRITE_SET`]) on plain PostgreSQL: one round trip, and
/// one statement's overhead in PostgreSQL, for what took five or six.
async fn write_in_one_statement(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    set: &SetRows<'_, '_>,
) -> Result<(), PayoutAbort> {
    let counts: SetWritten = bind_set(WRITE_SET, subaccount, set)
        .cached()
        .get_result(conn)
        .await
        .map_err(|e| PayoutAbort::Tx(e.into()))?;
    set.check(&counts)
}

/// `sql` ([`WRITE_SET`] or [`WRITE_SET_AT_ONCE`]) with the rows of `set` and the subaccount
/// bound as `$1`–`$56`.
fn bind_set<'f>(sql: &'static str, subaccount: Uuid, set: &SetRows<'f, 'f>) -> BoxedSql<'f> {
    let query = bind_payout_rows(diesel::sql_query(sql).into_boxed(), set.payouts);
    let query = bind_entries(query, set.entries);
    let query = bind_key_commits(query, set.keys);
    let query = bind_events(query, set.events);
    let query = bind_sums(query, set.sums).bind::<SqlUuid, _>(subaccount);
    bind_admissions(query, set.admissions).bind::<Text, _>(NO_ENDPOINT)
}

/// A set's writes one statement after another: on Citus. Citus runs the data-modifying parts
/// of a statement like [`WRITE_SET`] one after another, each checking its foreign keys as it
/// ends (seen with an outbox event and its delivery attempt written by one statement), so the
/// ledger entries could be checked before their payouts exist; WRITE_SET is not used there.
async fn write_statement_by_statement(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    set: &SetRows<'_, '_>,
) -> Result<(), PayoutAbort> {
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let payouts = bind_payout_rows(diesel::sql_query(INSERT_PAYOUTS).into_boxed(), set.payouts)
        .cached()
        .execute(conn)
        .await?;
    insert_entries(conn, set.entries).await?;
    let keys = if set.keys.is_empty() {
        0
    } else {
        bind_key_commits(
            diesel::sql_query(MARK_KEYS_COMMITTED)
                .into_boxed()
                .bind::<SqlUuid, _>(subaccount),
            set.keys,
        )
        .cached()
        .execute(conn)
        .await?
    };
    match set.events {
        [] => {}
        [_] => insert_events(conn, set.events, None).await?,
        events => insert_many(conn, events).await?,
    }
    let balances = bind_sums(
        diesel::sql_query(HOLD_SUMS)
            .into_boxed()
            .bind::<SqlUuid, _>(subaccount),
        set.sums,
    )
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

/// Binds the sums of [`Sums`] (assets, totals, times) as the next parameters.
fn bind_sums<'f>(query: BoxedSql<'f>, sums: &Sums<'_>) -> BoxedSql<'f> {
    let assets: Vec<String> = sums.assets.iter().map(|a| (*a).to_owned()).collect();
    query
        .bind::<Array<Text>, _>(assets)
        .bind::<Array<BigInt>, _>(sums.totals.clone())
        .bind::<Array<Timestamptz>, _>(sums.times.clone())
}

/// Each currency's sum moved from `available` to `pending`, never below zero.
const HOLD_SUMS: &str = "\
    UPDATE balances b SET available = b.available - h.total, pending = b.pending + h.total, \
      updated_at = h.at \
    FROM unnest($2::text[], $3::int8[], $4::timestamptz[]) AS h(asset, total, at) \
    WHERE b.subaccount_id = $1 AND b.asset = h.asset AND b.available >= h.total";

/// Binds new payout rows as the 24 arrays [`insert_payouts!`] unnests, as the next parameters.
fn bind_payout_rows<'f>(query: BoxedSql<'f>, rows: &[PayoutRow]) -> BoxedSql<'f> {
    macro_rules! column {
        ($field:ident) => {
            rows.iter().map(|r| r.$field.clone()).collect::<Vec<_>>()
        };
    }
    query
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
}

/// New payout rows, given as arrays (`$1`–`$24`, [`bind_payout_rows`]). A macro so that
/// [`WRITE_SET`] can begin with it.
macro_rules! insert_payouts {
    () => {
        "INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
           fee_template_id, fee_group_id, fee_fixed, fee_percentage, fee_min_amount, reference, \
           note, status, batch_id, provider_reference, duplicate, created_at, updated_at, \
           submitted_at, receiver_is_invalid, failure_reason, return_code) \
         SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], \
           $6::int8[], $7::int8[], $8::uuid[], $9::uuid[], $10::int8[], $11::int4[], $12::int8[], \
           $13::text[], $14::text[], $15::int2[], $16::uuid[], $17::text[], $18::bool[], \
           $19::timestamptz[], $20::timestamptz[], $21::timestamptz[], $22::bool[], $23::text[], \
           $24::text[])"
    };
}

/// New payout rows ([`insert_payouts!`]).
const INSERT_PAYOUTS: &str = insert_payouts!();

/// Binds the keys to mark committed as the four arrays [`MARK_KEYS_COMMITTED`] unnests (keys,
/// leases, answer statuses and bodies, null where the answer does not render), as the next
/// parameters.
fn bind_key_commits<'f>(query: BoxedSql<'f>, commits: &[KeyCommit<'_>]) -> BoxedSql<'f> {
    let keys: Vec<String> = commits
        .iter()
        .map(|c| c.claim.key.as_str().to_owned())
        .collect();
    let leases: Vec<DateTime<Utc>> = commits.iter().map(|c| c.claim.lease_until).collect();
    let statuses: Vec<Option<i16>> = commits
        .iter()
        .map(|c| c.response.as_ref().map(super::idempotency::status_column))
        .collect();
    let bodies: Vec<Option<Vec<u8>>> = commits
        .iter()
        .map(|c| c.response.as_ref().map(|r| r.body.clone()))
        .collect();
    query
        .bind::<Array<Text>, _>(keys)
        .bind::<Array<Timestamptz>, _>(leases)
        .bind::<Array<Nullable<SmallInt>>, _>(statuses)
        .bind::<Array<Nullable<Bytea>>, _>(bodies)
}

/// Binds the requests a set admits ([`KeyAdmission`]) as the nine arrays [`WRITE_SET`] unnests
/// (`$47`–`$55`: the nonces' API keys, nonces and times seen; the keys, the fingerprints of
/// their requests, when they were recorded and until when they answer retries, and their
/// answers' statuses and bodies), as the next parameters.
fn bind_admissions<'f>(query: BoxedSql<'f>, admissions: &[KeyAdmission<'_>]) -> BoxedSql<'f> {
    macro_rules! column {
        ($value:expr) => {
            admissions.iter().map($value).collect::<Vec<_>>()
        };
    }
    query
        .bind::<Array<SqlUuid>, _>(column!(|a| a.admission.nonce.api_key.as_uuid()))
        .bind::<Array<BigInt>, _>(column!(|a| a.admission.nonce.nonce))
        .bind::<Array<Timestamptz>, _>(column!(|a| a.admission.nonce.seen_at))
        .bind::<Array<Text>, _>(column!(|a| a.admission.key.as_str().to_owned()))
        .bind::<Array<Bytea>, _>(column!(|a| a.admission.fingerprint.to_vec()))
        .bind::<Array<Timestamptz>, _>(column!(|a| a.admission.at))
        .bind::<Array<Timestamptz>, _>(column!(|a| a.admission.expires_at()))
        .bind::<Array<SmallInt>, _>(column!(|a| super::idempotency::status_column(&a.response)))
        .bind::<Array<Bytea>, _>(column!(|a| a.response.body.clone()))
}

/// The set form of the key marking a single payout's event statement does. The subaccount is
/// one value (`$1`), not a column of the set, so on Citus the statement goes to that
/// subaccount's shard alone.
///
/// `i.idempotency_key = ANY($2)` repeats the join's condition so that both columns of the
/// primary key bound the scan of `idempotency_keys` in any plan. Without it, the generic plan
/// PostgreSQL settled on for this prepared statement while the table was small read every key
/// of the subaccount (a bitmap scan on `subaccount_id = $1` alone) and matched them to the set
/// afterwards: 2.4 ms per group, growing with the subaccount's keys, against 0.1 ms.
const MARK_KEYS_COMMITTED: &str = mark_keys_committed!("$1", "$2", "$3", "$4", "$5");

/// The text of [`MARK_KEYS_COMMITTED`] with the parameters numbered as given (subaccount,
/// then the four arrays of [`bind_key_commits`]).
macro_rules! mark_keys_committed {
    ($sub:literal, $keys:literal, $leases:literal, $statuses:literal, $bodies:literal) => {
        concat!(
            "UPDATE idempotency_keys i SET committed = true, \
               state = CASE WHEN k.status IS NULL THEN i.state ELSE 'completed' END, \
               response_status = k.status, response_body = k.body, \
               locked_until = CASE WHEN k.status IS NULL THEN i.locked_until END \
             FROM unnest(",
            $keys,
            "::text[], ",
            $leases,
            "::timestamptz[], ",
            $statuses,
            "::int2[], ",
            $bodies,
            "::bytea[]) AS k(idempotency_key, lease, status, body) \
             WHERE i.subaccount_id = ",
            $sub,
            " AND i.idempotency_key = ANY(",
            $keys,
            "::text[]) AND i.idempotency_key = k.idempotency_key \
               AND i.locked_until = k.lease AND i.state = 'in_progress'"
        )
    };
}
use mark_keys_committed;

/// The parts of [`WRITE_SET`] and [`WRITE_SET_AT_ONCE`] that write, as a list of `WITH`
/// queries (see [`WRITE_SET`]).
macro_rules! write_set_parts {
    () => {
        concat!(
            "written_payouts AS (",
            insert_payouts!(),
            " RETURNING 1), \
             written_entries AS (",
            insert_entries_from!(),
            "$25::uuid[], $26::uuid[], $27::text[], $28::text[], $29::int8[], $30::int8[], \
                 $31::uuid[], $32::timestamptz[]",
            entries_in_order!(),
            " RETURNING 1), \
             marked_keys AS (",
            mark_keys_committed!("$46", "$33", "$34", "$35", "$36"),
            " RETURNING 1), \
             admitted_nonces AS ( \
               INSERT INTO request_nonces (api_key_id, nonce, subaccount_id, seen_at) \
               SELECT n.api_key_id, n.nonce, $46, n.seen_at \
               FROM unnest($47::uuid[], $48::int8[], $49::timestamptz[]) \
                 AS n(api_key_id, nonce, seen_at) \
               ON CONFLICT DO NOTHING RETURNING 1), \
             admitted_keys AS ( \
               INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, \
                 response_status, response_body, created_at, expires_at, locked_until, committed) \
               SELECT $46, k.idempotency_key, k.request_hash, 'completed', k.status, k.body, k.at, \
                 k.expires_at, NULL, true \
               FROM unnest($50::text[], $51::bytea[], $52::timestamptz[], $53::timestamptz[], \
                 $54::int2[], $55::bytea[]) \
                 AS k(idempotency_key, request_hash, at, expires_at, status, body) \
               ON CONFLICT DO NOTHING RETURNING 1), ",
            events_input!("$37", "$38", "$39", "$40", "$41", "$42"),
            ", ",
            sequenced_events!(),
            ", delivery AS MATERIALIZED (SELECT coalesce((",
            deliverable_endpoint!("$46"),
            "), true) AS deliverable), \
             written_events AS ( \
               INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, \
                 payload, \
                 created_at, next_attempt_at, status, attempts, last_error) \
               SELECT n.id, n.subaccount_id, n.object_id, n.sequence, n.event_type, \
                 n.payload || jsonb_build_object('sequence', n.sequence), n.created_at, \
                 n.created_at, \
                 CASE WHEN d.deliverable THEN 'pending' ELSE 'exhausted' END, \
                 CASE WHEN d.deliverable THEN 0 ELSE 1 END, \
                 CASE WHEN d.deliverable THEN NULL ELSE $56 END \
               FROM numbered n CROSS JOIN delivery d ORDER BY n.n \
               RETURNING id, subaccount_id, created_at, status), \
             skipped_attempts AS ( \
               INSERT INTO webhook_attempts (event_id, attempt, subaccount_id, attempted_at, \
                 outcome, \
                 status_code, latency_ms, error) \
               SELECT id, 1, subaccount_id, created_at, 'skipped', NULL, 0, $56 \
               FROM written_events WHERE status = 'exhausted'), \
             balances_in_order AS ( \
               SELECT asset FROM balances WHERE subaccount_id = $46 AND asset = ANY($43::text[]) \
               ORDER BY asset FOR NO KEY UPDATE), \
             held AS ( \
               UPDATE balances b SET available = b.available - h.total, \
                 pending = b.pending + h.total, updated_at = h.at \
               FROM unnest($43::text[], $44::int8[], $45::timestamptz[]) AS h(asset, total, at), \
                 balances_in_order o \
               WHERE b.subaccount_id = $46 AND b.asset = h.asset AND o.asset = h.asset \
                 AND b.available >= h.total \
               RETURNING 1)"
        )
    };
}

/// A set's writes as one statement, on plain PostgreSQL, for the subaccount `$46`:
///
/// - the payouts ([`insert_payouts!`], `$1`–`$24`) and their ledger entries (`$25`–`$32`);
/// - the requests' keys marked committed with their answers (`$33`–`$36`, as
///   [`MARK_KEYS_COMMITTED`] does);
/// - the events with their sequence numbers (`$37`–`$42`). When the subaccount has no enabled
///   postback URL they are given up as they are written: exhausted, with a `skipped` attempt
///   whose error is `$56`, as the delivery claim would give them up at once (a new event is due
///   as it is written). That spares each one an update of its row and a claim;
/// - each currency's sum held (`$43`–`$45`, as [`HOLD_SUMS`] does), each balance row locked
///   first in currency order, as [`decide`] locks them. One update of several rows locks them
///   in the order its plan meets them, which follows where their latest versions lie, so two
///   sets of the same currencies written at once could otherwise each hold the row the other
///   waits for;
/// - the requests it admits (`$47`–`$55`, [`bind_admissions`]): their nonces recorded and their
///   keys inserted, completed with their answers. A nonce or key there already (committed, or
///   written by a transaction this statement waited for) is left alone and shows in the counts.
///
/// It answers how many rows each part touched ([`SetWritten`]). The foreign keys of the
/// entries, events and attempts are checked as the statement ends, when its payouts and events
/// are written.
const WRITE_SET: &str = concat!(
    "WITH ",
    write_set_parts!(),
    " \
     SELECT (SELECT count(*) FROM written_payouts) AS payouts, \
       (SELECT count(*) FROM written_entries) AS entries, \
       (SELECT count(*) FROM marked_keys) AS keys, \
       (SELECT count(*) FROM admitted_nonces) AS nonces, \
       (SELECT count(*) FROM admitted_keys) AS admitted_keys, \
       (SELECT count(*) FROM written_events) AS events, \
       (SELECT count(*) FROM held) AS balances"
);

/// Whether the party `p` (a row of [`parties!`]) still gives the payout `w` the status it was
/// planned with (`w.status`) and may be paid, as [`party_status`] decides: the receiver's status
/// none of `$unpayable`, the account's not `$failed`, and the status the table `$initial`
/// gives, indexed by whether the KYC is `$completed` and the account `$confirmed` (the values
/// [`bind_party_rule`] binds).
macro_rules! as_planned_by {
    (
        $unpayable:literal,
        $failed:literal,
        $initial:literal,
        $completed:literal,
        $confirmed:literal
    ) => {
        concat!(
            "p.receiver_status <> ALL (",
            $unpayable,
            "::int2[]) AND p.account_status <> ",
            $failed,
            "::text AND w.status = (",
            $initial,
            "::int2[])[1 + 2 * (p.kyc_status = ",
            $completed,
            "::int2)::int + (p.confirm_status = ",
            $confirmed,
            "::text)::int]"
        )
    };
}

/// Binds what [`as_planned_by!`] compares with, from the rule of [`party_status`], as the next
/// five parameters.
fn bind_party_rule(query: BoxedSql<'_>) -> BoxedSql<'_> {
    let initial = [(false, false), (false, true), (true, false), (true, true)]
        .map(|(kyc, confirmed)| i16::from(initial_status(kyc, confirmed).code()));
    query
        .bind::<Array<SmallInt>, _>(UNPAYABLE_RECEIVERS.map(|s| i16::from(s.code())).to_vec())
        .bind::<Text, _>(AccountStatus::Failed.as_str())
        .bind::<Array<SmallInt>, _>(initial.to_vec())
        .bind::<SmallInt, _>(i16::from(KycStatus::Completed.code()))
        .bind::<Text, _>(ConfirmStatus::Confirmed.as_str())
}

/// A set written whole in one round trip, on plain PostgreSQL: [`WRITE_SET`]'s writes, after
/// the reads that otherwise open its transaction, and checking itself instead of answering
/// counts, so that it can be sent together with the transaction's `BEGIN` and `COMMIT`
/// ([`write_whole_at_once`]):
///
/// - the parties of the payouts (the accounts of `$4`) locked as [`PARTIES_BY_KEY`] locks them,
///   and each payout checked against them as [`Parties::as_planned`] checks it: its account
///   still its receiver's (`$3`), both still payable (the receiver's status none of `$57`, the
///   account's not `$58`), and the status it was planned with (`$15`) still the one a new
///   payout to them starts in (`$59`, indexed by whether the KYC is `$60` and the account
///   `$61`);
/// - the open batch of each currency of `$62` (those whose payouts start `pending`; none when
///   no payout does), locked `FOR SHARE` in currency order as [`PARTIES_AND_OPEN_BATCH`] and
///   `open_batch` lock them, still the batch of `$63` that runs at the time of `$64` (the same
///   position), which the payouts, their events and their answers were given (`$62` holds
///   each currency once and `batches_open` allows one open batch per currency, so every one
///   matches exactly when as many rows match as `$62` has);
/// - then every count [`SetRows::check`] checks, the balances' last, so their rows are locked
///   for the shortest time.
///
/// The first check that fails raises `payout set refused: <why>` (the function
/// `payout_set_refused`), which aborts the transaction: the `COMMIT` sent after it then rolls
/// it back, and nothing of the set is written.
const WRITE_SET_AT_ONCE: &str = concat!(
    "WITH parties AS MATERIALIZED (",
    parties!("IS NOT DISTINCT FROM", "$46", "$4"),
    "), as_planned AS MATERIALIZED ( \
       SELECT count(*) AS n \
       FROM unnest($4::uuid[], $3::uuid[], $15::int2[]) AS w(account_id, receiver_id, status) \
       JOIN parties p ON p.account_id = w.account_id AND p.receiver_id = w.receiver_id \
       WHERE ",
    as_planned_by!("$57", "$58", "$59", "$60", "$61"),
    "), \
     joined_batches AS MATERIALIZED ( \
       SELECT asset, id, batch_run_time FROM batches \
       WHERE subaccount_id = $46 AND asset = ANY($62::text[]) AND status = 'open' \
       ORDER BY asset FOR SHARE), \
     as_expected AS MATERIALIZED ( \
       SELECT count(*) AS n FROM joined_batches j \
       JOIN unnest($62::text[], $63::uuid[], $64::timestamptz[]) AS e(asset, id, run_time) \
         ON j.asset = e.asset AND j.id = e.id AND j.batch_run_time = e.run_time), ",
    write_set_parts!(),
    " \
     SELECT CASE \
       WHEN (SELECT n FROM as_planned) <> cardinality($4::uuid[]) \
         THEN payout_set_refused('a party changed since it was planned') \
       WHEN (SELECT n FROM as_expected) <> cardinality($62::text[]) \
         THEN payout_set_refused('",
    other_batch!(),
    "') \
       WHEN (SELECT count(*) FROM marked_keys) <> cardinality($33::text[]) \
         THEN payout_set_refused('an idempotency key is no longer its request''s') \
       WHEN (SELECT count(*) FROM admitted_nonces) <> cardinality($47::uuid[]) \
           OR (SELECT count(*) FROM admitted_keys) <> cardinality($50::text[]) \
         THEN payout_set_refused('a request could not be admitted') \
       WHEN (SELECT count(*) FROM written_payouts) <> cardinality($1::uuid[]) \
           OR (SELECT count(*) FROM written_entries) <> cardinality($25::uuid[]) \
           OR (SELECT count(*) FROM written_events) <> cardinality($37::uuid[]) \
         THEN payout_set_refused('a part wrote fewer rows than it must') \
       WHEN (SELECT count(*) FROM held) <> cardinality($43::text[]) \
         THEN payout_set_refused('the balance does not cover the set') \
       ELSE 0 END AS refused"
);

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use diesel::sql_types::Text;
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};

    use super::{MARK_KEYS_COMMITTED, PARTIES_BY_KEY, TAKEN_REFERENCES_BY_KEY};
    use crate::test_db::TestDb;

    const SUB: &str = "00000000-0000-0000-0000-000000000001";

    #[derive(diesel::QueryableByName)]
    struct PlanLine {
        #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
        line: String,
    }

    /// A database where one subaccount has 2 000 receivers, each with an account, 2 000
    /// payouts with references and 5 000 idempotency keys, and 2 000 other subaccounts have one
    /// of each; every subaccount has an open batch and two settled ones in each of two
    /// currencies; all analysed. A generic plan estimates the rows of "this subaccount" as the
    /// average subaccount's (about 2 here), so the crowded one looks small on paper: the shape
    /// of a large merchant among many small ones, in which a plan that reads every row of the
    /// subaccount looks cheap.
    async fn crowded() -> (TestDb, AsyncPgConnection) {
        let db = TestDb::postgres().await.unwrap();
        let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
        conn.batch_execute(&format!(
            "INSERT INTO subaccounts (id, merchant_id, name, created_at, updated_at) \
               VALUES ('{SUB}', '{SUB}', 'crowd', now(), now()); \
             INSERT INTO receivers (id, subaccount_id, first_name, last_name, email, \
               email_normalized, dob, dialcode, phone, address, city, state, country, postcode, \
               applicant_id, status, kyc_status, created_at, updated_at) \
             SELECT gen_random_uuid(), '{SUB}', 'A', 'B', 'r' || g || '@example.com', \
               'r' || g || '@example.com', '1990-01-01', '1', '5550100', 'x', 'x', 'x', 'US', \
               '1', '', 1, 0, now(), now() FROM generate_series(1, 2000) g; \
             INSERT INTO receiver_accounts (id, subaccount_id, receiver_id, method, asset, \
               status, confirm_status, data_ciphertext, details_fingerprint, created_at, \
               updated_at) \
             SELECT gen_random_uuid(), subaccount_id, id, 'ach', 'USD', 'pending', \
               'unconfirmed', '\\x00', decode(md5(id::text), 'hex'), now(), now() \
             FROM receivers; \
             INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
               reference, status, duplicate, created_at, updated_at) \
             SELECT gen_random_uuid(), subaccount_id, receiver_id, id, 'USD', 100, 0, \
               'ref-' || md5(id::text), 0, false, now(), now() FROM receiver_accounts; \
             INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, \
               created_at, expires_at, committed) \
             SELECT '{SUB}', 'key-' || g, '\\x00', 'completed', now(), \
               now() + interval '1 day', true FROM generate_series(1, 5000) g; \
             CREATE TEMP TABLE others AS SELECT gen_random_uuid() AS sub, gen_random_uuid() AS \
               receiver, gen_random_uuid() AS account, g FROM generate_series(1, 2000) g; \
             INSERT INTO subaccounts (id, merchant_id, name, created_at, updated_at) \
               SELECT sub, sub, 'small', now(), now() FROM others; \
             INSERT INTO receivers (id, subaccount_id, first_name, last_name, email, \
               email_normalized, dob, dialcode, phone, address, city, state, country, postcode, \
               applicant_id, status, kyc_status, created_at, updated_at) \
             SELECT receiver, sub, 'A', 'B', 'o' || g || '@example.com', \
               'o' || g || '@example.com', '1990-01-01', '1', '5550100', 'x', 'x', 'x', 'US', \
               '1', '', 1, 0, now(), now() FROM others; \
             INSERT INTO receiver_accounts (id, subaccount_id, receiver_id, method, asset, \
               status, confirm_status, data_ciphertext, details_fingerprint, created_at, \
               updated_at) \
             SELECT account, sub, receiver, 'ach', 'USD', 'pending', 'unconfirmed', '\\x00', \
               decode(md5(account::text), 'hex'), now(), now() FROM others; \
             INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee, \
               reference, status, duplicate, created_at, updated_at) \
             SELECT gen_random_uuid(), sub, receiver, account, 'USD', 100, 0, 'ref-o' || g, 0, \
               false, now(), now() FROM others; \
             INSERT INTO idempotency_keys (subaccount_id, idempotency_key, request_hash, state, \
               created_at, expires_at, committed) \
             SELECT sub, 'key-' || g, '\\x00', 'completed', now(), now() + interval '1 day', true \
             FROM others; \
             INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, created_at, \
               updated_at) \
             SELECT gen_random_uuid(), s.id, a.asset, b.status, now(), now(), now() \
             FROM subaccounts s, (VALUES ('USD'), ('EUR')) AS a(asset), \
               (VALUES ('open'), ('settled'), ('settled')) AS b(status); \
             ANALYZE;"
        ))
        .await
        .unwrap();
        (db, conn)
    }

    /// The plan of `statement` (prepared as `name` with `types`) for `arguments`, as a set
    /// transaction plans it: `mode` is its setting of `plan_cache_mode`.
    async fn plan_in_mode(
        conn: &mut AsyncPgConnection,
        mode: &str,
        (name, types, statement): (&str, &str, &str),
        arguments: &str,
    ) -> String {
        conn.batch_execute(&format!(
            "SET plan_cache_mode = {mode}; PREPARE {name}({types}) AS {statement}"
        ))
        .await
        .unwrap();
        let plan: Vec<PlanLine> = diesel::sql_query(format!("EXPLAIN EXECUTE {name}({arguments})"))
            .load(conn)
            .await
            .unwrap();
        plan.into_iter()
            .map(|l| l.line)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether some index condition of `plan` has every one of `conditions`.
    fn index_condition_with(plan: &str, conditions: &[&str]) -> bool {
        plan.lines()
            .any(|line| line.contains("Index Cond") && conditions.iter().all(|c| line.contains(c)))
    }

    /// The plans a set transaction runs on plain PostgreSQL, all generic, read the large
    /// subaccount's rows of the set's own keys through an index, never every row of the
    /// subaccount.
    #[tokio::test]
    async fn a_set_transactions_reads_use_the_sets_keys_for_a_large_subaccount() {
        let (_db, mut conn) = crowded().await;
        let generic = super::BEGIN_WITH_GENERIC_PLANS
            .rsplit("plan_cache_mode = ")
            .next()
            .unwrap();

        let parties = plan_in_mode(
            &mut conn,
            generic,
            ("parties", "uuid, uuid[]", PARTIES_BY_KEY),
            &format!("'{SUB}', ARRAY['{SUB}', '{SUB}']::uuid[]"),
        )
        .await;
        assert!(
            index_condition_with(&parties, &["id = ANY"])
                && !index_condition_with(&parties, &["subaccount_id"]),
            "{parties}"
        );

        // The same parties read with the open batch, as a set written whole reads them: the
        // parties by their keys, the batch through the partial index of open batches.
        let opening = plan_in_mode(
            &mut conn,
            generic,
            (
                "opening",
                "uuid, uuid[], text",
                super::PARTIES_AND_OPEN_BATCH,
            ),
            &format!("'{SUB}', ARRAY['{SUB}', '{SUB}']::uuid[], 'USD'"),
        )
        .await;
        assert!(
            index_condition_with(&opening, &["id = ANY"]) && opening.contains("batches_open"),
            "{opening}"
        );

        let references = plan_in_mode(
            &mut conn,
            generic,
            ("taken", "uuid, text[]", TAKEN_REFERENCES_BY_KEY),
            &format!("'{SUB}', ARRAY['ref-a', 'ref-b']"),
        )
        .await;
        assert!(
            references.contains("payouts_reference_unique")
                && index_condition_with(&references, &["reference = ANY"])
                && !index_condition_with(&references, &["subaccount_id"]),
            "{references}"
        );

        // Both columns of the primary key bound the scan, not the subaccount alone (the plan
        // PostgreSQL settled on when the key was the primary key's second column).
        let marking = plan_in_mode(
            &mut conn,
            generic,
            (
                "mark",
                "uuid, text[], timestamptz[], int2[], bytea[]",
                MARK_KEYS_COMMITTED,
            ),
            &format!(
                "'{SUB}', ARRAY['key-1', 'key-2'], ARRAY[now(), now()], \
                 ARRAY[NULL, NULL]::int2[], ARRAY[NULL, NULL]::bytea[]"
            ),
        )
        .await;
        assert!(
            index_condition_with(
                &marking,
                &["idempotency_key = ANY ($2)", "subaccount_id = $1"]
            ),
            "{marking}"
        );

        // The same marking inside the set's one write statement.
        let types = "uuid[], uuid[], uuid[], uuid[], text[], int8[], int8[], uuid[], uuid[], \
            int8[], int4[], int8[], text[], text[], int2[], uuid[], text[], bool[], \
            timestamptz[], timestamptz[], timestamptz[], bool[], text[], text[], \
            uuid[], uuid[], text[], text[], int8[], int8[], uuid[], timestamptz[], \
            text[], timestamptz[], int2[], bytea[], \
            uuid[], uuid[], uuid[], text[], jsonb[], timestamptz[], \
            text[], int8[], timestamptz[], uuid, \
            uuid[], int8[], timestamptz[], text[], bytea[], timestamptz[], timestamptz[], \
            int2[], bytea[], text";
        let arrays = vec!["'{}'"; 45].join(", ");
        let admissions = ["'{}'"; 9].join(", ");
        let writing = plan_in_mode(
            &mut conn,
            generic,
            ("write_set", types, super::WRITE_SET),
            &format!("{arrays}, '{SUB}', {admissions}, 'no endpoint'"),
        )
        .await;
        assert!(
            index_condition_with(
                &writing,
                &["idempotency_key = ANY ($33)", "subaccount_id = $46"]
            ),
            "{writing}"
        );

        // The same writes at once: the parties by their keys, the batches through the partial
        // index of open batches, the keys by the primary key.
        let at_once = plan_in_mode(
            &mut conn,
            generic,
            (
                "write_set_at_once",
                &format!(
                    "{types}, int2[], text, int2[], int2, text, text[], uuid[], timestamptz[]"
                ),
                super::WRITE_SET_AT_ONCE,
            ),
            &format!(
                "{arrays}, '{SUB}', {admissions}, 'no endpoint', '{{3,4}}', 'failed', \
                 '{{1,1,0,2}}', 1, 'confirmed', '{{AUD,USD}}', '{{{SUB},{SUB}}}', \
                 ARRAY[now(), now()]"
            ),
        )
        .await;
        assert!(
            index_condition_with(&at_once, &["id = ANY ($4)"])
                && at_once.contains("Index Scan using receivers_pkey")
                && at_once.contains("batches_open")
                && index_condition_with(
                    &at_once,
                    &["idempotency_key = ANY ($33)", "subaccount_id = $46"]
                ),
            "{at_once}"
        );
    }

    /// What the migration's `payout_set_refused` raises is what a set written at once reads
    /// back: an error the server reported (so the set is known not to be written) whose words
    /// after [`super::REFUSED`] are the check's, the same text the forgetting of a batch
    /// compares with. A connection that failed is not such an error.
    #[tokio::test]
    async fn the_refusal_raised_in_the_database_is_the_one_the_writer_reads() {
        use diesel::result::{DatabaseErrorKind, Error as DieselError};

        let db = TestDb::postgres().await.unwrap();
        let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
        let raised = diesel::sql_query(concat!(
            "SELECT payout_set_refused('",
            other_batch!(),
            "') AS refused"
        ))
        .get_result::<super::Refused>(&mut conn)
        .await
        .err()
        .unwrap();
        assert!(super::reported_by_server(&raised));
        assert_eq!(super::refusal(&raised), other_batch!());
        let lost = DieselError::DatabaseError(
            DatabaseErrorKind::UnableToSendCommand,
            Box::new("connection closed".to_owned()),
        );
        assert!(!super::reported_by_server(&lost));
    }

    /// The check a set written at once makes of each payout against its parties
    /// ([`super::as_planned_by!`]) accepts exactly what [`super::party_status`] accepts, for
    /// every combination of the statuses of a receiver, its KYC, an account and its
    /// confirmation, and every status a payout could have been planned with.
    #[tokio::test]
    async fn the_at_once_party_check_agrees_with_party_status() {
        use diesel::sql_types::{Array, BigInt, SmallInt};
        use domain::account::{AccountStatus, ConfirmStatus};
        use domain::payout::PayoutStatus;
        use domain::receiver::{KycStatus, ReceiverStatus};

        #[derive(diesel::QueryableByName)]
        struct Accepted {
            #[diesel(sql_type = BigInt)]
            n: i64,
            #[diesel(sql_type = SmallInt)]
            status: i16,
        }

        let db = TestDb::postgres().await.unwrap();
        let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
        let mut parties: Vec<(i16, i16, &str, &str)> = Vec::new();
        for receiver in ReceiverStatus::ALL {
            for kyc in KycStatus::ALL {
                for account in AccountStatus::ALL {
                    for confirm in ConfirmStatus::ALL {
                        parties.push((
                            i16::from(receiver.code()),
                            i16::from(kyc.code()),
                            account.as_str(),
                            confirm.as_str(),
                        ));
                    }
                }
            }
        }
        let statuses: Vec<i16> = PayoutStatus::ALL
            .iter()
            .map(|s| i16::from(s.code()))
            .collect();
        let query = super::bind_party_rule(
            diesel::sql_query(concat!(
                "SELECT p.n, w.status FROM unnest($6::int2[], $7::int2[], $8::text[], \
                   $9::text[]) WITH ORDINALITY \
                   AS p(receiver_status, kyc_status, account_status, confirm_status, n) \
                 CROSS JOIN unnest($10::int2[]) AS w(status) \
                 WHERE ",
                as_planned_by!("$1", "$2", "$3", "$4", "$5"),
                " ORDER BY p.n, w.status"
            ))
            .into_boxed(),
        )
        .bind::<Array<SmallInt>, _>(parties.iter().map(|p| p.0).collect::<Vec<_>>())
        .bind::<Array<SmallInt>, _>(parties.iter().map(|p| p.1).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(parties.iter().map(|p| p.2).collect::<Vec<_>>())
        .bind::<Array<Text>, _>(parties.iter().map(|p| p.3).collect::<Vec<_>>())
        .bind::<Array<SmallInt>, _>(statuses.clone());
        let accepted: Vec<(i64, i16)> = query
            .load::<Accepted>(&mut conn)
            .await
            .unwrap()
            .into_iter()
            .map(|a| (a.n, a.status))
            .collect();
        let mut expected = Vec::new();
        for (n, (receiver, kyc, account, confirm)) in (1_i64..).zip(&parties) {
            let (status, payable) = super::party_status(*receiver, *kyc, account, confirm);
            for planned in &statuses {
                if payable && i16::from(status.code()) == *planned {
                    expected.push((n, *planned));
                }
            }
        }
        assert!(!expected.is_empty());
        assert_eq!(accepted, expected);
    }
}
