//! Group commit (`PgStore::with_payout_groups`): concurrent new payouts of one subaccount
//! written in one transaction, each request with exactly its own answer, and a group
//! that cannot be written as one written request by request.

use std::sync::Arc;
use std::time::Duration;

use adapters_postgres::{GroupCommitSettings, PayoutGroups, PgStore};
use chrono::Utc;
use diesel::sql_types::{BigInt, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::account::{ConfirmStatus, ReceiverAccount};
use domain::builders::PayoutBuilder;
use domain::events::{EventKind, OutboxEvent};
use domain::idempotency::{
    ClaimOutcome, IdempotencyKey, IdempotencyStore, KeyClaim, KeyMode, StoredResponse, WriteKey,
    fingerprint,
};
use domain::ids::{EventId, LedgerEntryId, PayoutId, SubaccountId};
use domain::ledger::{LedgerEntry, LedgerEntryKind};
use domain::money::Asset;
use domain::payout::ports::{InsertPayoutError, NewPayout, PayoutStore};
use domain::payout::{Payout, PayoutStatus};
use domain::receiver::ports::ReceiverStore;
use domain::receiver::{KycStatus, Receiver};
use domain::subaccount::ports::{SubaccountSetupStore, SubaccountStore};
use futures_util::future::join_all;
use uuid::Uuid;

use crate::accounts::{ach, insert, new_receiver};
use crate::support::{Fixture, admin, at, audit_entry};

const T0: i64 = 1_700_000_000_123_456;

/// The fixture's store writing new payouts in groups; `window` long enough that every request
/// a test submits at once joins the first group.
pub(crate) fn grouped(fx: &Fixture, window: Duration) -> PgStore {
    grouping(fx.store.clone(), window)
}

/// `store` writing new payouts in groups, as [`grouped`].
pub(crate) fn grouping(store: PgStore, window: Duration) -> PgStore {
    store.with_payout_groups(PayoutGroups::new(GroupCommitSettings {
        window,
        max_group: 64,
    }))
}

/// What the planning of a single payout of `amount` USD cents to `owner`'s `account` asks of
/// the store, with the duplicate warning's window of the day before `T0`.
fn single_payout_query(
    owner: &Receiver,
    account: &ReceiverAccount,
    amount: i64,
) -> domain::payout::ports::PlanningQuery {
    domain::payout::ports::PlanningQuery {
        receivers: vec![owner.id],
        accounts: vec![account.id],
        assets: vec![Asset::Usd],
        similar: vec![(
            account.id,
            domain::money::MinorUnits::new(amount).unwrap(),
            Asset::Usd,
        )],
        since: at(T0) - chrono::Duration::hours(24),
    }
}

/// A subaccount funded with `funding` USD, and a receiver with an ACH account.
pub(crate) async fn world(
    fx: &Fixture,
    funding: &str,
) -> (SubaccountId, Receiver, ReceiverAccount) {
    let sub = fx.subaccount("groups").await.id;
    admin(&fx.store)
        .fund(sub, "USD", funding, "test funding")
        .await
        .expect("fund");
    let owner = new_receiver(fx, sub, "payee@example.com").await;
    let account = ach(&owner, "011000015", "123456789", "checking", T0);
    insert(fx, &account).await.expect("account");
    (sub, owner, account)
}

/// The receiver's KYC completed and the account confirmed, so new payouts to them start
/// `pending` (and join the open batch).
pub(crate) async fn payable_at_once(fx: &Fixture, owner: &Receiver, account: &ReceiverAccount) {
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE receivers SET kyc_status = $2 WHERE id = $1")
        .bind::<SqlUuid, _>(owner.id.as_uuid())
        .bind::<diesel::sql_types::SmallInt, _>(i16::from(KycStatus::Completed.code()))
        .execute(&mut conn)
        .await
        .unwrap();
    diesel::sql_query("UPDATE receiver_accounts SET confirm_status = $2 WHERE id = $1")
        .bind::<SqlUuid, _>(account.id.as_uuid())
        .bind::<diesel::sql_types::Text, _>(ConfirmStatus::Confirmed.as_str())
        .execute(&mut conn)
        .await
        .unwrap();
}

/// A planned payout of `amount` + `fee` USD cents with its holds and `payoutCreated`.
pub(crate) fn planned(
    sub: SubaccountId,
    owner: &Receiver,
    account: &ReceiverAccount,
    amounts: (i64, i64),
    reference: Option<&str>,
    status: PayoutStatus,
) -> NewPayout {
    planned_in(Asset::Usd, sub, owner, account, amounts, reference, status)
}

/// [`planned`] in `asset` (the account's currency).
pub(crate) fn planned_in(
    asset: Asset,
    sub: SubaccountId,
    owner: &Receiver,
    account: &ReceiverAccount,
    (amount, fee): (i64, i64),
    reference: Option<&str>,
    status: PayoutStatus,
) -> NewPayout {
    let mut builder = PayoutBuilder::new()
        .id(PayoutId::from_uuid(Uuid::new_v4()))
        .subaccount(sub)
        .receiver(owner.id)
        .account(account.id)
        .asset(asset)
        .amount(amount)
        .fee(fee)
        .status(status)
        .created_at(at(T0))
        .updated_at(at(T0));
    if let Some(reference) = reference {
        builder = builder.reference(reference);
    }
    let payout = builder.build();
    let hold = |kind, delta: i64| LedgerEntry {
        id: LedgerEntryId::from_uuid(Uuid::new_v4()),
        subaccount_id: sub,
        asset,
        kind,
        available_delta: -delta,
        pending_delta: delta,
        payout_id: Some(payout.id),
        created_at: at(T0),
    };
    let mut entries = vec![hold(LedgerEntryKind::PayoutHold, amount)];
    if fee > 0 {
        entries.push(hold(LedgerEntryKind::FeeHold, fee));
    }
    let events = vec![OutboxEvent::payout(
        EventKind::PayoutCreated,
        EventId::from_uuid(Uuid::new_v4()),
        &payout,
        at(T0),
    )];
    NewPayout {
        payout,
        entries,
        events,
    }
}

/// Another receiver of `sub` (`email`) with an ACH account, failed (status 3) after it was
/// created: a payout planned to it before is stale.
async fn failed_receiver(
    fx: &Fixture,
    sub: SubaccountId,
    email: &str,
) -> (Receiver, ReceiverAccount) {
    let failed = new_receiver(fx, sub, email).await;
    let account = ach(&failed, "011000015", "987654321", "checking", T0);
    insert(fx, &account).await.unwrap();
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE receivers SET status = 3 WHERE id = $1")
        .bind::<SqlUuid, _>(failed.id.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    (failed, account)
}

/// A claimed idempotency key whose stored answer names the payout.
pub(crate) async fn claimed(store: &PgStore, sub: SubaccountId, name: &str) -> WriteKey<Payout> {
    let key = IdempotencyKey::parse(name).unwrap();
    let fp = fingerprint("POST", "/api/payout/single", name.as_bytes());
    let ClaimOutcome::Claimed { lease_until } =
        store.claim(sub, &key, fp, Utc::now()).await.unwrap()
    else {
        panic!("not claimed");
    };
    WriteKey::new(
        KeyMode::Claimed(KeyClaim {
            subaccount: sub,
            key,
            lease_until,
        }),
        Arc::new(|p: &Payout| {
            Some(StoredResponse {
                status: 200,
                body: format!("payout {} batch {:?}", p.id, p.batch_id).into_bytes(),
            })
        }),
    )
}

/// Submits every payout at once (each joins its queue on its first poll, so in this order).
pub(crate) async fn submit_all(
    store: &PgStore,
    items: &[(NewPayout, WriteKey<Payout>)],
) -> Vec<Result<Option<domain::ids::BatchId>, InsertPayoutError>> {
    join_all(
        items
            .iter()
            .map(|(new, key)| store.insert_payout(&new.payout, &new.entries, &new.events, key)),
    )
    .await
}

/// How many transactions wrote the subaccount's payouts (`xmin` is the writing transaction).
async fn writing_transactions(fx: &Fixture, sub: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(DISTINCT xmin::text) AS n FROM payouts WHERE subaccount_id = $1",
        sub.as_uuid(),
    )
    .await
}

async fn count(fx: &Fixture, sql: &str, sub: SubaccountId) -> i64 {
    fx.count_where(sql, sub.as_uuid()).await
}

pub(crate) fn outcome(
    result: &Result<Option<domain::ids::BatchId>, InsertPayoutError>,
) -> &'static str {
    match result {
        Ok(_) => "written",
        Err(InsertPayoutError::Stale) => "stale",
        Err(InsertPayoutError::DuplicateReference) => "duplicate reference",
        Err(InsertPayoutError::InsufficientBalance) => "insufficient balance",
        Err(InsertPayoutError::NotAdmitted) => "not admitted",
        Err(InsertPayoutError::Port(_)) => "port error",
    }
}

async fn ledger_is_balanced(store: &PgStore) {
    let report = admin(store).check_ledger().await.unwrap();
    assert!(report.discrepancies.is_empty(), "{report:?}");
}

#[tokio::test]
async fn concurrent_payouts_are_written_in_one_transaction_each_with_its_own_answer() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    // Another receiver of the subaccount, failed since the payout was planned: its request
    // must plan again, and only it.
    let (failed, failed_account) = failed_receiver(&fx, sub, "gone@example.com").await;
    let existing = planned(
        sub,
        &owner,
        &account,
        (10, 0),
        Some("inv-0"),
        PayoutStatus::Unassessed,
    );
    fx.store
        .insert_payout(
            &existing.payout,
            &existing.entries,
            &existing.events,
            &WriteKey::none(),
        )
        .await
        .unwrap();

    let store = grouped(&fx, Duration::from_millis(200));
    let unassessed = PayoutStatus::Unassessed;
    let plans = [
        planned(sub, &owner, &account, (590, 10), Some("inv-1"), unassessed),
        planned(sub, &owner, &account, (5, 0), Some("inv-1"), unassessed),
        planned(sub, &owner, &account, (5, 0), Some("inv-0"), unassessed),
        planned(sub, &owner, &account, (400, 0), None, unassessed),
        planned(sub, &failed, &failed_account, (5, 0), None, unassessed),
        planned(sub, &owner, &account, (300, 0), Some("inv-3"), unassessed),
        planned(sub, &owner, &account, (91, 0), Some("inv-4"), unassessed),
        // Planned `pending` though the receiver's KYC is still pending: stale.
        planned(sub, &owner, &account, (1, 0), None, PayoutStatus::Pending),
    ];
    let mut items = Vec::new();
    for (n, new) in plans.into_iter().enumerate() {
        let key = claimed(&store, sub, &format!("group-{n}")).await;
        items.push((new, key));
    }
    let results = submit_all(&store, &items).await;
    assert_eq!(
        results.iter().map(outcome).collect::<Vec<_>>(),
        [
            "written",
            "duplicate reference",
            "duplicate reference",
            "insufficient balance",
            "stale",
            "written",
            "insufficient balance",
            "stale",
        ],
        "each request in arrival order: 600 of 990 held, inv-1 taken by the first, inv-0 by \
         the earlier payout, 400 no longer covered but the 300 after it is, 91 of the 90 left is not"
    );
    assert_eq!(
        writing_transactions(&fx, sub).await,
        2,
        "the earlier payout, then the whole group in one transaction"
    );
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (90, 910));
    assert_eq!(
        count(
            &fx,
            "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1",
            sub
        )
        .await,
        3
    );
    assert_eq!(
        count(
            &fx,
            "SELECT count(*) AS n FROM outbox_events WHERE subaccount_id = $1 \
             AND event_type = 'payoutCreated'",
            sub
        )
        .await,
        3
    );
    // The written requests' keys are complete with their own answers; the refused ones are
    // still the requests' to release or complete (as with a single payout).
    for ((new, key), result) in items.iter().zip(&results) {
        let claim = key.claim().unwrap();
        let fp = fingerprint("POST", "/api/payout/single", claim.key.as_str().as_bytes());
        let replay = store.claim(sub, &claim.key, fp, Utc::now()).await.unwrap();
        match result {
            Ok(batch) => assert_eq!(
                replay,
                ClaimOutcome::Replay {
                    status: 200,
                    body: format!("payout {} batch {batch:?}", new.payout.id).into_bytes(),
                }
            ),
            Err(_) => assert_eq!(replay, ClaimOutcome::InFlight),
        }
    }
    ledger_is_balanced(&fx.store).await;
}

#[tokio::test]
async fn pending_payouts_of_a_group_join_one_open_batch() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    payable_at_once(&fx, &owner, &account).await;
    let store = grouped(&fx, Duration::from_millis(200));
    let mut items = Vec::new();
    for n in 0..5 {
        let new = planned(sub, &owner, &account, (100, 5), None, PayoutStatus::Pending);
        items.push((new, claimed(&store, sub, &format!("pending-{n}")).await));
    }
    let results = submit_all(&store, &items).await;
    let batches: Vec<_> = results.iter().map(|r| *r.as_ref().unwrap()).collect();
    assert!(batches[0].is_some());
    assert!(batches.iter().all(|b| *b == batches[0]), "{batches:?}");
    assert_eq!(writing_transactions(&fx, sub).await, 1);
    let in_batch: i64 = fx
        .count_where(
            "SELECT count(*) AS n FROM payouts WHERE batch_id = $1",
            batches[0].unwrap().as_uuid(),
        )
        .await;
    assert_eq!(in_batch, 5);
    // The events carry the batch, as a single payout's do.
    let with_batch = count(
        &fx,
        "SELECT count(*) AS n FROM outbox_events WHERE subaccount_id = $1 \
         AND payload->>'batch_id' IS NOT NULL",
        sub,
    )
    .await;
    assert_eq!(with_batch, 5);
    ledger_is_balanced(&fx.store).await;
}

#[tokio::test]
async fn a_group_that_cannot_be_written_as_one_is_written_request_by_request() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    let store = grouped(&fx, Duration::from_millis(200));
    let mut items = Vec::new();
    for n in 0..4 {
        let new = planned(
            sub,
            &owner,
            &account,
            (100, 0),
            None,
            PayoutStatus::Unassessed,
        );
        items.push((new, claimed(&store, sub, &format!("own-{n}")).await));
    }
    // The third request outlived its lease: a retry took its key over. (The new lease is
    // computed here, not as `locked_until + interval …` in SQL: Citus refuses a STABLE
    // function, as `timestamptz + interval` is, applied to a column in an UPDATE.)
    let taken = items[2].1.claim().unwrap().clone();
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "UPDATE idempotency_keys SET locked_until = $3 \
         WHERE subaccount_id = $1 AND idempotency_key = $2",
    )
    .bind::<SqlUuid, _>(sub.as_uuid())
    .bind::<diesel::sql_types::Text, _>(taken.key.as_str())
    .bind::<diesel::sql_types::Timestamptz, _>(taken.lease_until + chrono::Duration::minutes(1))
    .execute(&mut conn)
    .await
    .unwrap();
    let results = submit_all(&store, &items).await;
    assert_eq!(
        results.iter().map(outcome).collect::<Vec<_>>(),
        ["written", "written", "port error", "written"]
    );
    assert_eq!(
        writing_transactions(&fx, sub).await,
        3,
        "the group rolled back and its requests were written one by one"
    );
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (9_700, 300));
    ledger_is_balanced(&fx.store).await;
}

#[tokio::test]
async fn many_concurrent_requests_never_overdraw_and_form_groups() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "5000").await;
    // No window: groups form only while the previous one is written.
    let store = grouped(&fx, Duration::ZERO);
    let mut tasks = Vec::new();
    for _ in 0..80 {
        let store = store.clone();
        let new = planned(
            sub,
            &owner,
            &account,
            (95, 5),
            None,
            PayoutStatus::Unassessed,
        );
        tasks.push(tokio::spawn(async move {
            store
                .insert_payout(&new.payout, &new.entries, &new.events, &WriteKey::none())
                .await
        }));
    }
    let mut written = 0;
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => written += 1,
            Err(InsertPayoutError::InsufficientBalance) => refused += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    assert_eq!((written, refused), (50, 30));
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (0, 5000));
    let transactions = writing_transactions(&fx, sub).await;
    assert!(
        transactions < 50,
        "{transactions} transactions wrote 50 payouts: requests arriving while a group was \
         written should have been grouped"
    );
    ledger_is_balanced(&fx.store).await;
    let mut conn = fx.raw().await;
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let holds: N =
        diesel::sql_query("SELECT count(*) AS n FROM ledger_entries WHERE subaccount_id = $1")
            .bind::<SqlUuid, _>(sub.as_uuid())
            .get_result(&mut conn)
            .await
            .unwrap();
    assert_eq!(holds.n, 100 + 1, "two holds per payout, and the funding");
}

#[tokio::test]
async fn a_reference_written_meanwhile_by_another_transaction_fails_only_its_request() {
    use diesel_async::SimpleAsyncConnection;
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    let model = planned(
        sub,
        &owner,
        &account,
        (10, 0),
        Some("model"),
        PayoutStatus::Unassessed,
    );
    fx.store
        .insert_payout(
            &model.payout,
            &model.entries,
            &model.events,
            &WriteKey::none(),
        )
        .await
        .unwrap();
    let mut other = fx.raw().await;
    crate::bulk_payouts::hold_reference(&mut other, model.payout.id, "race").await;
    let store = grouped(&fx, Duration::from_millis(100));
    let mut items = Vec::new();
    for (n, reference) in ["calm-1", "race", "calm-2"].into_iter().enumerate() {
        let new = planned(
            sub,
            &owner,
            &account,
            (100, 0),
            Some(reference),
            PayoutStatus::Unassessed,
        );
        items.push((new, claimed(&store, sub, &format!("race-{n}")).await));
    }
    let requests = tokio::spawn(async move {
        submit_all(&store, &items)
            .await
            .iter()
            .map(outcome)
            .collect::<Vec<_>>()
    });
    // The group waits for "race" at its insert when the other transaction commits it.
    until_a_session_waits_for_a_lock(&fx).await;
    other.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        requests.await.unwrap(),
        ["written", "duplicate reference", "written"]
    );
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!((balance.available, balance.pending), (10_000 - 210, 210));
}

/// Two subaccounts, each with a receiver and an account; the first with a USD fee template and
/// a payout of 700 to its account at `T0` (for the duplicate warning).
struct FactsWorld {
    sub: SubaccountId,
    owner: Receiver,
    account: ReceiverAccount,
    template: domain::subaccount::FeeTemplate,
    other_sub: SubaccountId,
    stranger: Receiver,
    strangers_account: ReceiverAccount,
}

impl FactsWorld {
    async fn new(fx: &Fixture) -> Self {
        use domain::ids::{FeeGroupId, FeeTemplateId};
        use domain::money::Percentage;

        let (sub, owner, account) = world(fx, "10000").await;
        let (other_sub, stranger, strangers_account) = world(fx, "10000").await;
        let template = domain::subaccount::FeeTemplate {
            id: FeeTemplateId::from_uuid(Uuid::new_v4()),
            group_id: FeeGroupId::from_uuid(Uuid::new_v4()),
            asset: Asset::Usd,
            fixed: 30,
            percentage: Percentage::parse("1.25").unwrap(),
            min_amount: 50,
        };
        fx.store
            .upsert_fee_template(sub, &template, &audit_entry())
            .await
            .unwrap();
        let paid = planned(
            sub,
            &owner,
            &account,
            (700, 0),
            None,
            PayoutStatus::Unassessed,
        );
        fx.store
            .insert_payout(&paid.payout, &paid.entries, &paid.events, &WriteKey::none())
            .await
            .unwrap();
        Self {
            sub,
            owner,
            account,
            template,
            other_sub,
            stranger,
            strangers_account,
        }
    }
}

#[tokio::test]
async fn planning_facts_are_the_subaccounts_own_and_answer_every_request_at_once() {
    use domain::money::MinorUnits;
    use domain::payout::ports::PlanningQuery;

    let fx = Fixture::new().await;
    let FactsWorld {
        sub,
        owner,
        account,
        template,
        other_sub,
        stranger,
        strangers_account,
    } = FactsWorld::new(&fx).await;
    let amount = |n| MinorUnits::new(n).unwrap();
    let query = PlanningQuery {
        receivers: vec![owner.id, stranger.id],
        accounts: vec![account.id, strangers_account.id],
        assets: vec![Asset::Usd, Asset::Eur],
        similar: vec![
            (account.id, amount(700), Asset::Usd),
            (account.id, amount(701), Asset::Usd),
            (strangers_account.id, amount(700), Asset::Usd),
        ],
        since: at(T0) - chrono::Duration::hours(24),
    };
    let facts = fx.store.planning_facts(sub, &query).await.unwrap();
    assert_eq!(facts.receivers.keys().collect::<Vec<_>>(), [&owner.id]);
    assert_eq!(facts.accounts.keys().collect::<Vec<_>>(), [&account.id]);
    assert_eq!(facts.fee_templates.get(&Asset::Usd), Some(&template));
    assert_eq!(facts.fee_templates.len(), 1);
    assert_eq!(
        facts.paid_since.iter().collect::<Vec<_>>(),
        [&(account.id, amount(700), Asset::Usd)]
    );
    // Outside the window, the earlier payout no longer counts.
    let later = PlanningQuery {
        since: at(T0) + chrono::Duration::seconds(1),
        ..query.clone()
    };
    assert!(
        fx.store
            .planning_facts(sub, &later)
            .await
            .unwrap()
            .paid_since
            .is_empty()
    );
    // The other subaccount sees only its own.
    let theirs = fx.store.planning_facts(other_sub, &query).await.unwrap();
    assert_eq!(theirs.receivers.keys().collect::<Vec<_>>(), [&stranger.id]);
    assert!(theirs.fee_templates.is_empty() && theirs.paid_since.is_empty());
    // Nothing asked, nothing read.
    let empty = PlanningQuery {
        receivers: vec![],
        accounts: vec![],
        assets: vec![],
        similar: vec![],
        since: at(T0),
    };
    let none = fx.store.planning_facts(sub, &empty).await.unwrap();
    assert!(none.receivers.is_empty() && none.accounts.is_empty());

    // One payout's facts (one receiver, account, currency and amount) are read in one joined
    // statement; it answers the same way.
    let one = |receiver, account, asset, amount| PlanningQuery {
        receivers: vec![receiver],
        accounts: vec![account],
        assets: vec![asset],
        similar: vec![(account, MinorUnits::new(amount).unwrap(), asset)],
        since: at(T0) - chrono::Duration::hours(24),
    };
    let mine = fx
        .store
        .planning_facts(sub, &one(owner.id, account.id, Asset::Usd, 700))
        .await
        .unwrap();
    assert_eq!(mine.receivers.keys().collect::<Vec<_>>(), [&owner.id]);
    assert_eq!(mine.accounts.keys().collect::<Vec<_>>(), [&account.id]);
    assert_eq!(mine.fee_templates.get(&Asset::Usd), Some(&template));
    assert_eq!(
        mine.paid_since.iter().collect::<Vec<_>>(),
        [&(account.id, amount(700), Asset::Usd)]
    );
    // Another amount was not paid; another currency has no template.
    let other_amount = fx
        .store
        .planning_facts(sub, &one(owner.id, account.id, Asset::Eur, 701))
        .await
        .unwrap();
    assert!(other_amount.paid_since.is_empty() && other_amount.fee_templates.is_empty());
    assert_eq!(other_amount.accounts.len(), 1);
    // Another subaccount's receiver or account is not found, alone or beside one's own.
    let mixed = fx
        .store
        .planning_facts(sub, &one(owner.id, strangers_account.id, Asset::Usd, 700))
        .await
        .unwrap();
    assert_eq!(mixed.receivers.keys().collect::<Vec<_>>(), [&owner.id]);
    assert!(mixed.accounts.is_empty() && mixed.paid_since.is_empty());
    let foreign = fx
        .store
        .planning_facts(other_sub, &one(owner.id, account.id, Asset::Usd, 700))
        .await
        .unwrap();
    assert!(
        foreign.receivers.is_empty()
            && foreign.accounts.is_empty()
            && foreign.fee_templates.is_empty()
            && foreign.paid_since.is_empty(),
        "{foreign:?}"
    );
    // An unknown subaccount (no row to join to) finds nothing either.
    let nobody = SubaccountId::from_uuid(Uuid::new_v4());
    let unknown = fx
        .store
        .planning_facts(nobody, &one(owner.id, account.id, Asset::Usd, 700))
        .await
        .unwrap();
    assert!(unknown.receivers.is_empty() && unknown.accounts.is_empty());
}

/// With group commit, the planning reads of single payouts of one subaccount that arrive
/// together are read in one statement, and each request gets exactly the facts a read of its
/// own gives: its own receiver and account only if they are the subaccount's, its currency's fee
/// template, and its own duplicate warning (its account, amount, currency and window).
#[tokio::test]
async fn concurrent_planning_reads_share_one_statement_and_each_gets_its_own_facts() {
    use domain::ids::ReceiverId;
    use domain::money::MinorUnits;
    use domain::payout::ports::PlanningQuery;

    let fx = Fixture::new().await;
    let FactsWorld {
        sub,
        owner,
        account,
        template,
        other_sub,
        stranger,
        strangers_account,
    } = FactsWorld::new(&fx).await;
    let day_before = at(T0) - chrono::Duration::hours(24);
    let one = |receiver, account, asset, amount, since| PlanningQuery {
        receivers: vec![receiver],
        accounts: vec![account],
        assets: vec![asset],
        similar: vec![(account, MinorUnits::new(amount).unwrap(), asset)],
        since,
    };
    let nobody = ReceiverId::from_uuid(Uuid::new_v4());
    let asked = [
        (sub, one(owner.id, account.id, Asset::Usd, 700, day_before)),
        (sub, one(owner.id, account.id, Asset::Usd, 701, day_before)),
        (sub, one(owner.id, account.id, Asset::Eur, 700, day_before)),
        (
            sub,
            one(owner.id, strangers_account.id, Asset::Usd, 700, day_before),
        ),
        (
            sub,
            one(stranger.id, account.id, Asset::Usd, 700, day_before),
        ),
        (sub, one(owner.id, account.id, Asset::Usd, 700, day_before)),
        (sub, one(nobody, account.id, Asset::Usd, 700, day_before)),
        (
            sub,
            one(
                owner.id,
                account.id,
                Asset::Usd,
                700,
                at(T0) + chrono::Duration::seconds(1),
            ),
        ),
        (
            other_sub,
            one(
                stranger.id,
                strangers_account.id,
                Asset::Usd,
                700,
                day_before,
            ),
        ),
        (
            other_sub,
            one(owner.id, account.id, Asset::Usd, 700, day_before),
        ),
    ];
    // On Citus a statement that runs on more than one shard fails the test: each statement
    // must go to its subaccount's shard alone (read by the store's connection, made after this).
    if adapters_postgres::test_db::citus_url().is_some() {
        let mut conn = fx.raw().await;
        diesel::sql_query(format!(
            "ALTER DATABASE {} SET citus.multi_task_query_log_level = 'error'",
            fx.db.name()
        ))
        .execute(&mut conn)
        .await
        .unwrap();
    }
    // One connection, so the statements it prepared are those of every read; all the requests
    // are queued before the first statement runs (the test's runtime has one thread, and the
    // task that reads them runs once they all wait).
    let store = crate::support::one_connection_store(&fx)
        .with_payout_groups(PayoutGroups::new(GroupCommitSettings::default()));
    let together = join_all(
        asked
            .iter()
            .map(|(sub, query)| store.planning_facts(*sub, query)),
    )
    .await;
    for ((sub, query), facts) in asked.iter().zip(together) {
        let facts = facts.unwrap();
        let alone = fx.store.planning_facts(*sub, query).await.unwrap();
        assert_eq!(format!("{facts:?}"), format!("{alone:?}"), "{query:?}");
    }
    // What each read found, spelled out for the first ones.
    let first = fx.store.planning_facts(sub, &asked[0].1).await.unwrap();
    assert_eq!(first.receivers.keys().collect::<Vec<_>>(), [&owner.id]);
    assert_eq!(first.accounts.keys().collect::<Vec<_>>(), [&account.id]);
    assert_eq!(first.fee_templates.get(&Asset::Usd), Some(&template));
    assert_eq!(first.paid_since.len(), 1);
    let foreign = fx
        .store
        .planning_facts(other_sub, &asked[9].1)
        .await
        .unwrap();
    assert!(
        foreign.receivers.is_empty()
            && foreign.accounts.is_empty()
            && foreign.paid_since.is_empty(),
        "{foreign:?}"
    );
    // The eight reads of `sub` took one statement, and the two of `other_sub` another. (On
    // Citus the coordinator plans them and counts no plans of its own: each ran once all the
    // same, one statement of each size being prepared.)
    let plans = crate::support::plans_of(&store, "SELECT q.i, ").await;
    let mut sizes: Vec<usize> = plans
        .iter()
        .map(|p| p.statement.matches("), (").count() + 1)
        .collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [2, 8], "{plans:?}");
    if adapters_postgres::test_db::citus_url().is_none() {
        let runs: Vec<i64> = plans
            .iter()
            .map(|p| p.generic_plans + p.custom_plans)
            .collect();
        assert_eq!(runs, [1, 1], "{plans:?}");
    }
}

/// A shared planning statement that fails answers every request waiting for it with the
/// error (none is left waiting), and the next reads run afresh.
#[tokio::test]
async fn a_failed_shared_planning_read_answers_every_waiting_request_and_the_next_read_works() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    let store = crate::support::one_connection_store(&fx)
        .with_payout_groups(PayoutGroups::new(GroupCommitSettings::default()));
    let query = single_payout_query(&owner, &account, 700);
    // One read first, so that the store knows whether the database is Citus.
    assert!(store.planning_facts(sub, &query).await.is_ok());
    let mut conn = fx.raw().await;
    diesel::sql_query("ALTER TABLE fee_templates RENAME TO fee_templates_away")
        .execute(&mut conn)
        .await
        .unwrap();
    let failed = tokio::time::timeout(
        Duration::from_secs(20),
        join_all((0..3).map(|_| store.planning_facts(sub, &query))),
    )
    .await
    .expect("every waiting request is answered");
    assert!(failed.iter().all(Result::is_err), "{failed:?}");
    diesel::sql_query("ALTER TABLE fee_templates_away RENAME TO fee_templates")
        .execute(&mut conn)
        .await
        .unwrap();
    let again = join_all((0..3).map(|_| store.planning_facts(sub, &query))).await;
    for facts in again {
        assert_eq!(facts.unwrap().accounts.len(), 1);
    }
}

/// A reading task that stops mid-statement (its runtime shut down, as at shutdown) answers the
/// reads queued behind it `Unavailable` instead of leaving them waiting, and the next read of
/// the subaccount starts a new task.
#[tokio::test]
async fn reads_queued_behind_a_reading_task_that_dies_answer_unavailable_and_the_next_starts_afresh()
 {
    use diesel_async::SimpleAsyncConnection;

    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    let store = grouped(&fx, Duration::ZERO);
    let query = single_payout_query(&owner, &account, 700);
    // One read first, so that the store knows whether the database is Citus.
    assert!(store.planning_facts(sub, &query).await.is_ok());
    // Another transaction holds the fee templates, so the next statement waits on them.
    let mut other = fx.raw().await;
    other
        .batch_execute("BEGIN; LOCK TABLE fee_templates IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    // The first read runs on a runtime of its own, so its reading task does too.
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (first_store, first_query) = (store.clone(), query.clone());
    let _first = doomed.spawn(async move { first_store.planning_facts(sub, &first_query).await });
    until_a_session_waits_for_a_lock(&fx).await;
    // Two more queue behind that statement (one poll each puts them in the queue).
    let mut queued: Vec<_> = (0..2)
        .map(|_| Box::pin(store.planning_facts(sub, &query)))
        .collect();
    for read in &mut queued {
        assert!(futures_util::FutureExt::now_or_never(read).is_none());
    }
    // The reading task's runtime stops: the task is dropped while its statement waits.
    doomed.shutdown_background();
    let answers = tokio::time::timeout(Duration::from_secs(5), join_all(queued))
        .await
        .expect("the queued reads are answered, not left waiting");
    for answer in &answers {
        assert!(
            matches!(answer, Err(domain::PortError::Unavailable(_))),
            "{answer:?}"
        );
    }
    other.batch_execute("ROLLBACK").await.unwrap();
    // The next reads find no reading task and start one, and get their facts.
    let again = join_all((0..3).map(|_| store.planning_facts(sub, &query))).await;
    for facts in again {
        assert_eq!(facts.unwrap().accounts.len(), 1);
    }
}

/// On plain PostgreSQL a group's transaction runs its set statements with their generic plans
/// (it sets `plan_cache_mode` for itself; on Citus it leaves planning to the coordinator): the
/// pooled session every other statement shares keeps the default, and the group's payouts are
/// written with their own answers all the same.
#[tokio::test]
async fn a_group_forces_generic_plans_for_its_own_transaction_only() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    let store = crate::support::one_connection_store(&fx).with_payout_groups(PayoutGroups::new(
        GroupCommitSettings {
            window: Duration::from_millis(200),
            max_group: 64,
        },
    ));
    // Three requests with references generic-0 to generic-2, each claimed under its own key.
    let requests = async |key_prefix: &str| {
        let mut items = Vec::new();
        for n in 0..3 {
            let reference = format!("generic-{n}");
            let new = planned(
                sub,
                &owner,
                &account,
                (100, 0),
                Some(reference.as_str()),
                PayoutStatus::Unassessed,
            );
            items.push((
                new,
                claimed(&store, sub, &format!("{key_prefix}-{n}")).await,
            ));
        }
        items
    };
    let results = submit_all(&store, &requests("first").await).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    assert_eq!(writing_transactions(&fx, sub).await, 1);
    assert_eq!(
        crate::support::session_setting(&store, "plan_cache_mode").await,
        "auto"
    );
    // The same references again: each its own duplicate, decided by the generic plans.
    let results = submit_all(&store, &requests("again").await).await;
    assert_eq!(
        results.iter().map(outcome).collect::<Vec<_>>(),
        ["duplicate reference"; 3]
    );
    ledger_is_balanced(&fx.store).await;
}

/// A single payout's reads (one statement: the receiver, the account, the fee template and the
/// duplicate warning together) and its party lock with its batch lookup are prepared once and, after PostgreSQL's
/// first five calls, run with their generic plan rather than planned afresh on every call
/// (which cost a payout about 0.3 ms of PostgreSQL's CPU when they compared with arrays or
/// bound the batch's status).
#[tokio::test]
async fn a_single_payouts_statements_settle_on_their_generic_plans() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    payable_at_once(&fx, &owner, &account).await;
    // A crowd of 2 000 other receivers and accounts, analysed, so that the planner's costs
    // are those of a real table: on a near-empty one a plan for an array costs no more than
    // one for a value.
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "INSERT INTO receivers SELECT (jsonb_populate_record(NULL::receivers, to_jsonb(r) \
           || jsonb_build_object('id', gen_random_uuid(), 'reference', NULL, \
                'email', 'crowd' || g || '@example.com', \
                'email_normalized', 'crowd' || g || '@example.com'))).* \
         FROM receivers r, generate_series(1, 2000) g WHERE r.id = $1",
    )
    .bind::<SqlUuid, _>(owner.id.as_uuid())
    .execute(&mut conn)
    .await
    .unwrap();
    diesel::sql_query(
        "INSERT INTO receiver_accounts \
         SELECT (jsonb_populate_record(NULL::receiver_accounts, to_jsonb(a) \
           || jsonb_build_object('id', gen_random_uuid(), \
                'details_fingerprint', '\\x' || md5(g::text)))).* \
         FROM receiver_accounts a, generate_series(1, 2000) g WHERE a.id = $1",
    )
    .bind::<SqlUuid, _>(account.id.as_uuid())
    .execute(&mut conn)
    .await
    .unwrap();
    // On Citus the coordinator plans a statement with a subquery on a distributed table (the
    // duplicate warning's, in the one read of a single payout's facts) for each call's
    // parameters, to route it; its generic plan is PostgreSQL's alone to settle on.
    let on_citus = adapters_postgres::test_db::citus_url().is_some();
    // On plain PostgreSQL, 20 000 other subaccounts of one receiver each: a generic plan then
    // costs "the subaccount's receivers" at about one row, the shape in which a plan that
    // scans the subaccount looks as cheap as the primary key (see the plans checked below).
    if !on_citus {
        diesel::sql_query(
            "WITH small AS ( \
           INSERT INTO subaccounts SELECT (jsonb_populate_record(NULL::subaccounts, to_jsonb(s) \
             || jsonb_build_object('id', gen_random_uuid()))).* \
           FROM subaccounts s, generate_series(1, 20000) g WHERE s.id = $1 RETURNING id) \
         INSERT INTO receivers SELECT (jsonb_populate_record(NULL::receivers, to_jsonb(r) \
           || jsonb_build_object('id', gen_random_uuid(), 'subaccount_id', small.id, \
                'reference', NULL))).* \
         FROM receivers r, small WHERE r.id = $2",
        )
        .bind::<SqlUuid, _>(sub.as_uuid())
        .bind::<SqlUuid, _>(owner.id.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    diesel::sql_query("ANALYZE subaccounts, receivers, receiver_accounts")
        .execute(&mut conn)
        .await
        .unwrap();
    let store = crate::support::one_connection_store(&fx);
    let one = single_payout_query(&owner, &account, 100);
    let mut batches = Vec::new();
    for n in 0..8 {
        let facts = store.planning_facts(sub, &one).await.unwrap();
        assert_eq!(facts.receivers.keys().collect::<Vec<_>>(), [&owner.id]);
        assert_eq!(facts.accounts.keys().collect::<Vec<_>>(), [&account.id]);
        // The duplicate warning's read: nothing paid before the first payout, then the one
        // just written.
        assert_eq!(facts.paid_since.len(), usize::from(n > 0), "call {n}");
        let new = planned(sub, &owner, &account, (100, 0), None, PayoutStatus::Pending);
        let batch = store
            .insert_payout(&new.payout, &new.entries, &new.events, &WriteKey::none())
            .await
            .unwrap();
        batches.push(batch.expect("a pending payout joins the open batch"));
    }
    assert!(batches.iter().all(|b| *b == batches[0]), "{batches:?}");
    for (prefix, on_plain, on_citus_too) in [
        // The facts' read: on plain PostgreSQL the statement of `planning_reads`; Citus plans
        // it for each call, to route it.
        ("SELECT q.i, ", true, false),
        // On plain PostgreSQL the payouts after the first are written at once, in one
        // statement that locks and checks their parties and the open batch the first joined;
        // on Citus the batch is looked up alone.
        (
            "WITH parties AS MATERIALIZED (SELECT ra.id AS account_id",
            true,
            false,
        ),
        ("SELECT id, batch_run_time FROM batches", false, true),
    ] {
        if !(if on_citus { on_citus_too } else { on_plain }) {
            continue;
        }
        let plans = crate::support::plans_of(&store, prefix).await;
        assert_eq!(plans.len(), 1, "{prefix}");
        let plan = &plans[0];
        assert!(
            plan.custom_plans <= 5 && plan.generic_plans >= 3,
            "{}: {} custom plans, {} generic",
            plan.statement,
            plan.custom_plans,
            plan.generic_plans
        );
    }
    if !on_citus {
        // The first payout, whose batch was not known yet, was written in three round trips:
        // its parties locked with the open batch's lookup, then its writes. Every later one was
        // written at once.
        let opening =
            crate::support::plans_of(&store, "WITH parties AS (SELECT ra.id AS account_id").await;
        let at_once =
            crate::support::plans_of(&store, "WITH parties AS MATERIALIZED (SELECT ra.id").await;
        let runs = |plans: &[crate::support::PlanCounts]| {
            plans
                .iter()
                .map(|p| p.custom_plans + p.generic_plans)
                .sum::<i64>()
        };
        assert_eq!((runs(&opening), runs(&at_once)), (1, 7));
    }
    if !on_citus {
        // The generic plans of the facts' read and of the write's party lock find the receiver
        // and the account by their primary keys, although the average subaccount holds about
        // one receiver and this one 2 001; the lock's statement finds the open batch through
        // the partial index of open batches.
        let locking = crate::support::generic_plan_with(
            &store,
            "WITH parties AS (SELECT ra.id AS account_id",
            &format!(
                "'{sub}', ARRAY['{account}']::uuid[], 'USD'",
                account = account.id
            ),
        )
        .await;
        assert!(
            locking.contains("receivers_pkey")
                && locking.contains("receiver_accounts_pkey")
                && locking.contains("batches_open"),
            "{locking}"
        );
        let facts = crate::support::generic_plan_with(
            &store,
            "SELECT q.i, ",
            &format!(
                "'{sub}', '{owner}', '{account}', 'USD', 100, now() - interval '1 day'",
                owner = owner.id,
                account = account.id
            ),
        )
        .await;
        assert!(
            facts.contains("receivers_pkey") && facts.contains("receiver_accounts_pkey"),
            "{facts}"
        );
    }
    if !on_citus {
        // GET receiver's read, likewise (a store of its own, whose one prepared statement
        // starting so is that read).
        let reader = crate::support::one_connection_store(&fx);
        for _ in 0..8 {
            let found = reader.find_receiver(sub, owner.id).await.unwrap();
            assert_eq!(found.map(|r| r.id), Some(owner.id));
        }
        let plan = crate::support::generic_plan_of(
            &reader,
            "SELECT \"receivers\".\"id\", \"receivers\".\"subaccount_id\"",
            |table, column| match (table, column) {
                ("receivers", "id") => format!("'{}'", owner.id),
                ("receivers", "subaccount_id") => format!("'{sub}'"),
                _ => panic!("unexpected parameter {table}.{column}"),
            },
        )
        .await;
        assert!(plan.contains("receivers_pkey"), "{plan}");
    }
    // The facts took one statement: none of the reads a larger query pipelines was prepared.
    for prefix in [
        "SELECT \"receiver_accounts\".\"id\"",
        "SELECT \"fee_templates\".",
        "SELECT $3::uuid AS account_id",
    ] {
        let plans = crate::support::plans_of(&store, prefix).await;
        assert!(plans.is_empty(), "{prefix}: {plans:?}");
    }
}

#[derive(diesel::QueryableByName)]
struct Waiting {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Waits until a session of the test database waits for a lock (on Citus, on any node: the
/// balance row is locked on the worker that holds its shard).
pub(crate) async fn until_a_session_waits_for_a_lock(fx: &Fixture) {
    let activity = if adapters_postgres::test_db::citus_url().is_some() {
        "citus_stat_activity"
    } else {
        "pg_stat_activity"
    };
    let mut conn = fx.raw().await;
    for _ in 0..500 {
        let waiting: Waiting = diesel::sql_query(format!(
            "SELECT count(*) AS n FROM {activity} \
             WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ))
        .get_result(&mut conn)
        .await
        .unwrap();
        if waiting.n > 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no session ever waited for the balance row");
}

/// How many times a deadlock test sets its scenario up before giving up.
pub(crate) const DEADLOCK_SCENARIO_ATTEMPTS: usize = 5;

/// Whether a test's own transaction, which closed a lock cycle with the store's, was the one
/// PostgreSQL rolled back. Each waiting session runs one deadlock check, `deadlock_timeout`
/// (1 s) after it starts to wait. The store's session waits first, so its check normally finds
/// the cycle and it is the victim; but on a machine slow enough that the test closes the cycle
/// more than a second later, the store's check has already run and found nothing, and the
/// test's own check later finds the cycle. The test then sets its scenario up again. Any other
/// failure panics.
pub(crate) fn the_test_lost_the_deadlock(closing: Result<(), diesel::result::Error>) -> bool {
    match closing {
        Ok(()) => false,
        Err(diesel::result::Error::DatabaseError(_, info))
            if info.message().contains("deadlock") =>
        {
            true
        }
        Err(other) => panic!("the test's transaction failed: {other}"),
    }
}

#[tokio::test]
async fn requests_queued_behind_a_writer_that_dies_answer_unavailable_and_the_next_starts_afresh() {
    use diesel_async::SimpleAsyncConnection;
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "10000").await;
    // Another transaction holds the balance row, so the first request's write waits on it.
    let mut other = holding_the_balance_row(&fx, sub).await;
    let store = grouped(&fx, Duration::ZERO);
    let payout = |reference| {
        planned(
            sub,
            &owner,
            &account,
            (100, 0),
            Some(reference),
            PayoutStatus::Unassessed,
        )
    };
    // The first request runs on a runtime of its own, so its group's writer task does too.
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let first = payout("first");
    let writer_store = store.clone();
    let _first = doomed.spawn(async move {
        writer_store
            .insert_payout(
                &first.payout,
                &first.entries,
                &first.events,
                &WriteKey::none(),
            )
            .await
    });
    until_a_session_waits_for_a_lock(&fx).await;
    // The second request queues behind that writer (one poll puts it in the queue).
    let second = payout("second");
    let no_key = WriteKey::none();
    let mut queued =
        Box::pin(store.insert_payout(&second.payout, &second.entries, &second.events, &no_key));
    assert!(futures_util::FutureExt::now_or_never(&mut queued).is_none());
    // The writer's runtime stops (as at shutdown): the writer task is dropped mid-write.
    doomed.shutdown_background();
    let answer = tokio::time::timeout(Duration::from_secs(5), queued)
        .await
        .expect("a queued request is answered, not left waiting");
    assert!(
        matches!(
            answer,
            Err(InsertPayoutError::Port(domain::PortError::Unavailable(_)))
        ),
        "{}",
        outcome(&answer)
    );
    other.batch_execute("ROLLBACK").await.unwrap();
    // The next request finds no writer and starts one.
    let third = payout("third");
    store
        .insert_payout(
            &third.payout,
            &third.entries,
            &third.events,
            &WriteKey::none(),
        )
        .await
        .expect("a new writer");
    // The queued request was never written. The dead writer's own payout was sent with its
    // transaction's COMMIT (a set written at once), so it may have been written once the
    // balance row was free, whole or not at all, like any write whose server stops after
    // sending its commit; the third payout waited for it.
    let of = |reference: &str| {
        format!(
            "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1 AND reference = '{reference}'"
        )
    };
    assert_eq!(count(&fx, &of("second"), sub).await, 0);
    assert_eq!(count(&fx, &of("third"), sub).await, 1);
    let written = count(
        &fx,
        "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1",
        sub,
    )
    .await;
    assert!(written == 1 || written == 2, "{written} payouts");
    let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!(
        (balance.available, balance.pending),
        (10_000 - 100 * written, 100 * written)
    );
    ledger_is_balanced(&fx.store).await;
}

/// A raw connection in a transaction that holds `sub`'s balance row (`FOR UPDATE`) until it
/// commits or is dropped.
pub(crate) async fn holding_the_balance_row(fx: &Fixture, sub: SubaccountId) -> AsyncPgConnection {
    use diesel_async::SimpleAsyncConnection;
    let mut other = fx.raw().await;
    other
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM balances WHERE subaccount_id = '{}' FOR UPDATE",
            sub.as_uuid()
        ))
        .await
        .unwrap();
    other
}

/// A single payout that PostgreSQL rolls back to break a deadlock is written again rather than
/// answered 503. Here the payout creates its currency's open batch and then waits for the
/// balance row, which another transaction holds while it waits to create the same batch (what a
/// group or bulk request of the subaccount does). The payout waited first, so its deadlock check
/// runs first and it is the one rolled back; when the machine was too slow for that (see
/// `the_test_lost_the_deadlock`), the scenario is set up again in a new subaccount.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_payout_that_loses_a_deadlock_is_written_again() {
    use diesel_async::SimpleAsyncConnection;
    let fx = Fixture::new().await;
    for _ in 0..DEADLOCK_SCENARIO_ATTEMPTS {
        let (sub, owner, account) = world(&fx, "10000").await;
        payable_at_once(&fx, &owner, &account).await;
        let mut other = holding_the_balance_row(&fx, sub).await;
        let new = planned(sub, &owner, &account, (100, 0), None, PayoutStatus::Pending);
        let store = fx.store.clone();
        let payout = new.payout.clone();
        let single = tokio::spawn(async move {
            store
                .insert_payout(&new.payout, &new.entries, &new.events, &WriteKey::none())
                .await
        });
        // The payout has created the open batch and waits for the balance row.
        until_a_session_waits_for_a_lock(&fx).await;
        let closing = other
            .batch_execute(&format!(
                "INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, \
                   created_at, updated_at) \
                 VALUES (gen_random_uuid(), '{}', 'USD', 'open', now() + interval '1 day', \
                   now(), now()) \
                 ON CONFLICT DO NOTHING; \
                 COMMIT",
                sub.as_uuid()
            ))
            .await;
        if the_test_lost_the_deadlock(closing) {
            drop(other);
            single
                .await
                .unwrap()
                .expect("written once the test gave way");
            continue;
        }
        let batch = single
            .await
            .unwrap()
            .expect("written again after the deadlock")
            .expect("a pending payout joins the open batch");
        // Its second run joined the batch the other transaction created.
        let batches = count(
            &fx,
            "SELECT count(*) AS n FROM batches WHERE subaccount_id = $1",
            sub,
        )
        .await;
        assert_eq!(batches, 1);
        assert_eq!(
            fx.count_where(
                "SELECT count(*) AS n FROM payouts WHERE batch_id = $1",
                batch.as_uuid()
            )
            .await,
            1
        );
        let stored = fx.store.find_payout(sub, payout.id).await.unwrap();
        assert!(stored.is_some());
        let balance = fx.store.balance(sub, Asset::Usd).await.unwrap();
        assert_eq!((balance.available, balance.pending), (10_000 - 100, 100));
        ledger_is_balanced(&fx.store).await;
        return;
    }
    panic!("the payout never lost the deadlock in {DEADLOCK_SCENARIO_ATTEMPTS} attempts");
}

#[tokio::test]
async fn a_lone_payout_short_of_balance_with_a_taken_reference_or_stale_writes_nothing() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    // Without groups every payout is written alone (one statement for its writes).
    let store = fx.store.clone();
    let before = store.balance(sub, Asset::Usd).await.unwrap();
    let payout = |amount, reference| {
        planned(
            sub,
            &owner,
            &account,
            (amount, 0),
            reference,
            PayoutStatus::Unassessed,
        )
    };
    let short = payout(before.available + 1, None);
    let key = claimed(&store, sub, "short").await;
    let refused = store
        .insert_payout(&short.payout, &short.entries, &short.events, &key)
        .await;
    assert_eq!(outcome(&refused), "insufficient balance");
    assert_eq!(writing_transactions(&fx, sub).await, 0, "nothing written");
    assert_eq!(store.balance(sub, Asset::Usd).await.unwrap(), before);
    // Its key was not marked committed: it is still in flight, then free after its lease.
    let again = store
        .claim(
            sub,
            &key.claim().unwrap().key,
            fingerprint("POST", "/api/payout/single", b"short"),
            Utc::now(),
        )
        .await
        .unwrap();
    assert_eq!(again, ClaimOutcome::InFlight);
    assert_eq!(
        count(
            &fx,
            "SELECT count(*) AS n FROM idempotency_keys WHERE subaccount_id = $1 AND committed",
            sub
        )
        .await,
        0
    );

    let first = payout(100, Some("inv-1"));
    let written = store
        .insert_payout(
            &first.payout,
            &first.entries,
            &first.events,
            &WriteKey::none(),
        )
        .await;
    assert_eq!(outcome(&written), "written");
    let taken = payout(100, Some("inv-1"));
    let refused = store
        .insert_payout(
            &taken.payout,
            &taken.entries,
            &taken.events,
            &WriteKey::none(),
        )
        .await;
    assert_eq!(outcome(&refused), "duplicate reference");
    assert_eq!(writing_transactions(&fx, sub).await, 1);

    // Stale parties, which the write statement itself locks and checks: a payout planned
    // `pending` while the receiver's KYC is still pending, one to a receiver failed since it
    // was planned, and one planned `pending` to another subaccount's payable account (its lock
    // finds no party of this subaccount, only the currency's batch lookup). Each is told to plan
    // again, with nothing written and its key in flight.
    let planned_pending = planned(sub, &owner, &account, (100, 0), None, PayoutStatus::Pending);
    let (failed, failed_account) = failed_receiver(&fx, sub, "failed-later@example.com").await;
    let to_failed = planned(
        sub,
        &failed,
        &failed_account,
        (100, 0),
        None,
        PayoutStatus::Unassessed,
    );
    let (_, stranger, strangers_account) = world(&fx, "1").await;
    // Payable, so that only its subaccount makes it stale.
    payable_at_once(&fx, &stranger, &strangers_account).await;
    let to_stranger = planned(
        sub,
        &stranger,
        &strangers_account,
        (100, 0),
        None,
        PayoutStatus::Pending,
    );
    for (name, stale) in [
        ("pending", planned_pending),
        ("failed", to_failed),
        ("stranger", to_stranger),
    ] {
        let key = claimed(&store, sub, name).await;
        let refused = store
            .insert_payout(&stale.payout, &stale.entries, &stale.events, &key)
            .await;
        assert_eq!(outcome(&refused), "stale", "{name}");
        let again = store
            .claim(
                sub,
                &key.claim().unwrap().key,
                fingerprint("POST", "/api/payout/single", name.as_bytes()),
                Utc::now(),
            )
            .await
            .unwrap();
        assert_eq!(again, ClaimOutcome::InFlight, "{name}");
    }
    assert_eq!(writing_transactions(&fx, sub).await, 1);
    let after = store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!(after.available, before.available - 100);
    ledger_is_balanced(&fx.store).await;
}

#[derive(diesel::QueryableByName)]
struct Session {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pid: i32,
}

#[derive(diesel::QueryableByName)]
struct SessionState {
    #[diesel(sql_type = diesel::sql_types::Text)]
    state: String,
}

/// A payout whose request goes away while its transaction is open (its `BEGIN` sent with the
/// reads that open it, one of them waiting for a lock) leaves no transaction open on the
/// connection the pool lends next: the pool discards that connection, and the next payout is
/// written in a transaction of its own.
#[tokio::test]
async fn a_payout_dropped_in_its_transaction_leaves_no_transaction_to_the_next_request() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    payable_at_once(&fx, &owner, &account).await;
    let store = crate::support::one_connection_store(&fx);
    let before = store.balance(sub, Asset::Usd).await.unwrap();
    let mut blocker = fx.raw().await;
    diesel::sql_query("BEGIN")
        .execute(&mut blocker)
        .await
        .unwrap();
    // The subaccount routes the lock to one shard on Citus.
    diesel::sql_query(
        "SELECT 1 FROM receiver_accounts WHERE id = $1 AND subaccount_id = $2 FOR UPDATE",
    )
    .bind::<SqlUuid, _>(account.id.as_uuid())
    .bind::<SqlUuid, _>(sub.as_uuid())
    .execute(&mut blocker)
    .await
    .unwrap();
    let dropped = planned(sub, &owner, &account, (100, 0), None, PayoutStatus::Pending);
    let none = WriteKey::none();
    tokio::select! {
        written = store.insert_payout(&dropped.payout, &dropped.entries, &dropped.events, &none) => {
            panic!("the payout was written past a locked account: {written:?}");
        }
        () = until_a_session_waits_for_a_lock(&fx) => {}
    }
    diesel::sql_query("ROLLBACK")
        .execute(&mut blocker)
        .await
        .unwrap();
    // The session the pool lends next, once its statement is done, is idle: not idle in a
    // transaction left open.
    let lent = {
        let mut conn = store.pool().get().await.unwrap();
        diesel::sql_query("SELECT pg_backend_pid() AS pid")
            .get_result::<Session>(&mut *conn)
            .await
            .unwrap()
            .pid
    };
    let lent: SessionState = diesel::sql_query("SELECT state FROM pg_stat_activity WHERE pid = $1")
        .bind::<diesel::sql_types::Integer, _>(lent)
        .get_result(&mut blocker)
        .await
        .unwrap();
    assert_eq!(
        lent.state, "idle",
        "the pool lent a connection inside a transaction"
    );
    let next = planned(sub, &owner, &account, (200, 0), None, PayoutStatus::Pending);
    let written = store
        .insert_payout(&next.payout, &next.entries, &next.events, &none)
        .await;
    assert!(
        written.unwrap().is_some(),
        "the next payout joins the open batch"
    );
    assert_eq!(
        count(
            &fx,
            "SELECT count(*) AS n FROM payouts WHERE subaccount_id = $1",
            sub
        )
        .await,
        1
    );
    let balance = store.balance(sub, Asset::Usd).await.unwrap();
    assert_eq!(balance.available, before.available - 200);
    ledger_is_balanced(&fx.store).await;
}
