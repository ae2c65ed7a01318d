//! `DeliveryStore` (claims with a lease, conditional recording) and the operator side of the
//! outbox (`set_webhook`, `rotate_webhook_secret`, `list_events`, `resend_events`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use adapters_postgres::PgStore;
use chrono::{DateTime, Utc};
use diesel::sql_types::{Bytea, Integer, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::delivery::history::EventHistoryStore;
use domain::delivery::history::{AttemptSummary, EventStatus, ResendSelection};
use domain::delivery::ports::WebhookEndpointStore;
use domain::delivery::ports::{AttemptRecord, Claim, ClaimedEvent, DeliveryStore};
use domain::delivery::{DeliveryOutcome, NextStep};
use domain::error::OperatorError;
use domain::idempotency::WriteKey;
use domain::ids::{EventId, SubaccountId};
use domain::masking::Secret;
use domain::payout::PayoutStatus;
use domain::payout::ports::{NewPayout, PayoutStore};
use domain::receiver::ports::ReceiverStore;
use uuid::Uuid;

use crate::payout_groups::{grouped, planned, world};
use crate::support::{Fixture, MASTER_KEY, at, audit_entry, created_event, receiver, store_for};

const T0: i64 = 1_700_000_000_000_000;
const LEASE: Duration = Duration::from_secs(60);
const URL: &str = "https://hooks.example.com/payoutd";
const SECRET: &str = "whsec_b2xkLXNpZ25pbmctc2VjcmV0LWJ5dGVzLTAx";
const NEW_SECRET: &str = "whsec_bmV3LXNpZ25pbmctc2VjcmV0LWJ5dGVzLTAy";

/// `T0` plus `secs` seconds.
fn t(secs: i64) -> DateTime<Utc> {
    at(T0 + secs * 1_000_000)
}

fn secret(raw: &str) -> Secret<String> {
    Secret::new(raw.to_owned())
}

fn exposed(event: &ClaimedEvent) -> Vec<String> {
    event.secrets.iter().map(|s| s.expose().clone()).collect()
}

/// Inserts a receiver of `subaccount` created at `created_at` through the store; returns the
/// id of its `receiverCreated` event (due at `created_at`).
async fn event_at(fx: &Fixture, subaccount: SubaccountId, created_at: DateTime<Utc>) -> EventId {
    let email = format!("r-{}@example.com", Uuid::new_v4().simple());
    let r = receiver(subaccount, &email, created_at);
    let event = created_event(&r);
    fx.store
        .insert_receiver(&r, std::slice::from_ref(&event), &WriteKey::none())
        .await
        .unwrap();
    event.id
}

/// A subaccount with a webhook URL and `SECRET`.
async fn hooked(fx: &Fixture, name: &str) -> SubaccountId {
    let sub = fx.subaccount(name).await.id;
    fx.store
        .set_webhook(sub, URL, &secret(SECRET), &audit_entry())
        .await
        .unwrap();
    sub
}

/// The events claimed to be sent at `now`; asserts that none had to be skipped.
async fn claim(fx: &Fixture, now: DateTime<Utc>) -> Vec<ClaimedEvent> {
    let claim = fx.store.claim_due(now, 100, LEASE).await.unwrap();
    assert_eq!(claim.skipped, 0, "{claim:?}");
    claim.events
}

async fn claim_one(fx: &Fixture, now: DateTime<Utc>) -> ClaimedEvent {
    let mut claimed = claim(fx, now).await;
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    claimed.remove(0)
}

fn ids(claimed: &[ClaimedEvent]) -> HashSet<EventId> {
    claimed.iter().map(|c| c.event_id).collect()
}

fn attempt(
    attempted_at: DateTime<Utc>,
    outcome: DeliveryOutcome,
    latency_ms: u64,
    next: NextStep,
) -> AttemptRecord {
    AttemptRecord {
        attempted_at,
        outcome,
        latency: Duration::from_millis(latency_ms),
        next,
    }
}

fn delivered(attempted_at: DateTime<Utc>) -> AttemptRecord {
    attempt(
        attempted_at,
        DeliveryOutcome::Delivered { status: 204 },
        12,
        NextStep::Delivered,
    )
}

fn failed(status: u16, error: &str) -> DeliveryOutcome {
    DeliveryOutcome::Failed {
        status: Some(status),
        retry_after: None,
        error: error.to_owned(),
    }
}

#[derive(diesel::QueryableByName, Debug)]
struct EventRow {
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Integer)]
    attempts: i32,
    #[diesel(sql_type = Timestamptz)]
    next_attempt_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    delivered_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    claimed_until: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    last_error: Option<String>,
}

async fn event_row(fx: &Fixture, id: EventId) -> EventRow {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "SELECT status, attempts, next_attempt_at, delivered_at, claimed_until, last_error \
         FROM outbox_events WHERE id = $1",
    )
    .bind::<SqlUuid, _>(id.as_uuid())
    .get_result(&mut conn)
    .await
    .unwrap()
}

#[derive(diesel::QueryableByName, Debug, PartialEq, Eq)]
struct AttemptRow {
    #[diesel(sql_type = Integer)]
    attempt: i32,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = Timestamptz)]
    attempted_at: DateTime<Utc>,
    #[diesel(sql_type = Text)]
    outcome: String,
    #[diesel(sql_type = Nullable<SmallInt>)]
    status_code: Option<i16>,
    #[diesel(sql_type = Integer)]
    latency_ms: i32,
    #[diesel(sql_type = Nullable<Text>)]
    error: Option<String>,
}

async fn attempt_rows(fx: &Fixture, id: EventId) -> Vec<AttemptRow> {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "SELECT attempt, subaccount_id, attempted_at, outcome, status_code, latency_ms, error \
         FROM webhook_attempts WHERE event_id = $1 ORDER BY id",
    )
    .bind::<SqlUuid, _>(id.as_uuid())
    .load(&mut conn)
    .await
    .unwrap()
}

#[derive(diesel::QueryableByName, Debug)]
struct EndpointRow {
    #[diesel(sql_type = Bytea)]
    secret: Vec<u8>,
    #[diesel(sql_type = Nullable<Bytea>)]
    previous_secret: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    previous_until: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    disabled_at: Option<DateTime<Utc>>,
}

async fn endpoint_row(fx: &Fixture, sub: SubaccountId) -> EndpointRow {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "SELECT secret, previous_secret, previous_until, disabled_at \
         FROM webhook_endpoints WHERE subaccount_id = $1",
    )
    .bind::<SqlUuid, _>(sub.as_uuid())
    .get_result(&mut conn)
    .await
    .unwrap()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

// 1. Claiming.

#[tokio::test]
async fn claim_due_returns_due_events_oldest_first_with_body_url_and_secrets() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let bare = fx.subaccount("Bare").await.id;
    let older = event_at(&fx, bare, t(-1)).await;
    let due = event_at(&fx, sub, t(0)).await;
    let future = event_at(&fx, sub, t(3600)).await;
    let now = t(1);

    // Oldest due first, at most `limit`: the older event, of a subaccount without a URL, is
    // taken and given up (see `an_event_with_nowhere_to_go_is_given_up_by_the_claim`).
    let first = fx.store.claim_due(now, 1, LEASE).await.unwrap();
    assert!(first.events.is_empty(), "{first:?}");
    assert_eq!((first.skipped, first.taken()), (1, 1));
    assert_eq!(event_row(&fx, older).await.status, "exhausted");

    // Then the other due one; the future one is not due yet.
    let claimed = claim_one(&fx, now).await;
    assert_eq!(claimed.event_id, due);
    assert_eq!(claimed.subaccount_id, sub);
    assert_eq!(claimed.attempt, 1);
    assert_eq!(claimed.url, URL);
    assert_eq!(exposed(&claimed), vec![SECRET.to_owned()]);
    let body = String::from_utf8(claimed.body.clone()).unwrap();
    assert!(body.contains(r#""sequence":1"#), "{body}");
    let json: serde_json::Value = serde_json::from_slice(&claimed.body).unwrap();
    assert_eq!(json["event"], "receiverCreated");
    assert_eq!(json["event_id"], due.to_string());
    assert_eq!(json["sequence"], 1);

    // The claim holds the event for the lease.
    let row = event_row(&fx, due).await;
    assert_eq!(row.attempts, 1);
    assert_eq!(row.status, "pending");
    assert_eq!(row.claimed_until, Some(now + LEASE));

    // Everything due is claimed: a second call at the same time gets nothing.
    assert!(claim(&fx, now).await.is_empty());
    // The future event was never touched.
    let row = event_row(&fx, future).await;
    assert_eq!(row.attempts, 0);
    assert_eq!(row.claimed_until, None);
    // It is claimable once due (the others' leases ran out by then too).
    let later = claim(&fx, t(3600)).await;
    assert_eq!(ids(&later), HashSet::from([due, future]));
    let future_claim = later.iter().find(|c| c.event_id == future).unwrap();
    assert_eq!(future_claim.attempt, 1);
}

// 2. Concurrency.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_claimers_claim_every_event_exactly_once() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let bare = fx.subaccount("Bare").await.id;
    let mut all = HashSet::new();
    for i in 0..200 {
        all.insert(event_at(&fx, sub, at(T0 + 2 * i)).await);
    }
    // Interleaved with them, 100 events that have nowhere to go.
    for i in 0..100 {
        event_at(&fx, bare, at(T0 + 4 * i + 1)).await;
    }
    let now = t(10);
    let store = Arc::new(fx.store.clone());
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let store = Arc::clone(&store);
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                let mut mine = Vec::new();
                let mut skipped = 0;
                loop {
                    let batch = store.claim_due(now, 25, LEASE).await.unwrap();
                    if batch.taken() == 0 {
                        break;
                    }
                    assert!(batch.taken() <= 25);
                    skipped += batch.skipped;
                    mine.extend(batch.events);
                }
                (mine, skipped)
            })
        })
        .collect();
    let mut claimed = Vec::new();
    let mut skipped = 0;
    for task in tasks {
        let (mine, given_up) = task.await.unwrap();
        claimed.extend(mine);
        skipped += given_up;
    }
    assert_eq!(claimed.len(), 200, "some event claimed twice or not at all");
    assert_eq!(skipped, 100, "some event given up twice or not at all");
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM webhook_attempts WHERE subaccount_id = $1 AND attempt = 1",
            bare.as_uuid()
        )
        .await,
        100
    );
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM outbox_events WHERE subaccount_id = $1 AND status = 'exhausted' AND attempts = 1",
            bare.as_uuid()
        )
        .await,
        100
    );
    assert_eq!(ids(&claimed), all);
    assert!(claimed.iter().all(|c| c.attempt == 1));
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM outbox_events WHERE subaccount_id = $1 AND attempts = 1",
            sub.as_uuid()
        )
        .await,
        200
    );
    assert!(claim(&fx, now).await.is_empty());
}

// 3. Leases.

#[tokio::test]
async fn a_dead_claimers_event_is_reclaimed_after_its_lease_and_its_late_record_is_refused() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    let now = t(1);
    let first = claim_one(&fx, now).await;
    assert_eq!(first.attempt, 1);

    // The claimer dies. Within the lease nobody else gets the event.
    let lease = chrono::Duration::from_std(LEASE).unwrap();
    let one = chrono::Duration::seconds(1);
    assert!(claim(&fx, now + lease - one).await.is_empty());
    // After it, another worker does, for the next attempt.
    let second = claim_one(&fx, now + lease + one).await;
    assert_eq!(second.event_id, id);
    assert_eq!(second.attempt, 2);

    // The first claimer wakes up: its outcome is not recorded, and nothing was written.
    let late = fx
        .store
        .record_attempt(&first, &delivered(now + lease + one))
        .await
        .unwrap();
    assert!(!late);
    assert!(attempt_rows(&fx, id).await.is_empty());
    let row = event_row(&fx, id).await;
    assert_eq!(row.status, "pending");
    assert_eq!(row.attempts, 2);
    assert_eq!(row.delivered_at, None);

    // The current claimer's outcome is.
    let at2 = now + lease + one + one;
    assert!(
        fx.store
            .record_attempt(&second, &delivered(at2))
            .await
            .unwrap()
    );
    let rows = attempt_rows(&fx, id).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].attempt, 2);
    assert_eq!(event_row(&fx, id).await.status, "delivered");
}

// 4. Recording attempts.

#[tokio::test]
async fn delivered_is_recorded_once() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    let claimed = claim_one(&fx, t(1)).await;
    let record = attempt(
        t(2),
        DeliveryOutcome::Delivered { status: 204 },
        123,
        NextStep::Delivered,
    );
    assert!(fx.store.record_attempt(&claimed, &record).await.unwrap());

    let row = event_row(&fx, id).await;
    assert_eq!(row.status, "delivered");
    assert_eq!(row.delivered_at, Some(t(2)));
    assert_eq!(row.claimed_until, None);
    assert_eq!(row.last_error, None);
    assert_eq!(
        attempt_rows(&fx, id).await,
        vec![AttemptRow {
            attempt: 1,
            subaccount_id: sub.as_uuid(),
            attempted_at: t(2),
            outcome: "delivered".to_owned(),
            status_code: Some(204),
            latency_ms: 123,
            error: None,
        }]
    );

    // Recording it again changes nothing.
    assert!(!fx.store.record_attempt(&claimed, &record).await.unwrap());
    assert_eq!(attempt_rows(&fx, id).await.len(), 1);
    // A delivered event is never claimed again.
    assert!(claim(&fx, t(86_400)).await.is_empty());
}

#[tokio::test]
async fn attempts_recorded_together_apply_each_under_its_own_claim() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let first = event_at(&fx, sub, t(0)).await;
    let second = event_at(&fx, sub, t(0)).await;
    let third = event_at(&fx, sub, t(0)).await;
    let claimed = claim(&fx, t(1)).await;
    assert_eq!(claimed.len(), 3);
    let by_id = |id| claimed.iter().find(|c| c.event_id == id).unwrap().clone();
    // The third was recorded already (say, by the worker before a takeover): its second
    // record must not apply, and must not stop the others from committing.
    assert!(
        fx.store
            .record_attempt(&by_id(third), &delivered(t(2)))
            .await
            .unwrap()
    );
    let retry = attempt(t(2), failed(500, "boom"), 10, NextStep::RetryAt(t(60)));
    let applied = fx
        .store
        .record_attempts(&[
            (by_id(first), delivered(t(2))),
            (by_id(second), retry),
            (by_id(third), delivered(t(3))),
        ])
        .await
        .unwrap();
    assert_eq!(applied, [true, true, false]);
    assert_eq!(event_row(&fx, first).await.status, "delivered");
    let row = event_row(&fx, second).await;
    assert_eq!((row.status.as_str(), row.claimed_until), ("pending", None));
    assert_eq!(attempt_rows(&fx, first).await.len(), 1);
    assert_eq!(attempt_rows(&fx, second).await.len(), 1);
    assert_eq!(
        attempt_rows(&fx, third).await.len(),
        1,
        "no second row for the third"
    );
    assert!(fx.store.record_attempts(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn two_gone_answers_recorded_together_disable_the_endpoint_once() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let other = hooked(&fx, "Other").await;
    let first = event_at(&fx, sub, t(0)).await;
    let second = event_at(&fx, sub, t(0)).await;
    let elsewhere = event_at(&fx, other, t(0)).await;
    let claimed = claim(&fx, t(1)).await;
    assert_eq!(claimed.len(), 3);
    let by_id = |id| claimed.iter().find(|c| c.event_id == id).unwrap().clone();
    let gone = |at| attempt(at, DeliveryOutcome::Gone, 5, NextStep::DisableEndpoint);
    let applied = fx
        .store
        .record_attempts(&[
            (by_id(second), gone(t(3))),
            (by_id(first), gone(t(2))),
            (by_id(elsewhere), delivered(t(2))),
        ])
        .await
        .unwrap();
    assert_eq!(applied, [true, true, true]);
    for id in [first, second] {
        assert_eq!(event_row(&fx, id).await.status, "exhausted");
        let rows = attempt_rows(&fx, id).await;
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].outcome.as_str(), rows[0].status_code),
            ("gone", Some(410))
        );
    }
    // Disabled at the first 410; the other subaccount's endpoint is untouched.
    assert_eq!(endpoint_row(&fx, sub).await.disabled_at, Some(t(2)));
    assert_eq!(endpoint_row(&fx, other).await.disabled_at, None);
    assert_eq!(event_row(&fx, elsewhere).await.status, "delivered");
}

#[tokio::test]
async fn retry_at_keeps_the_event_pending_until_then() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    let claimed = claim_one(&fx, t(1)).await;
    let retry = t(301);
    let record = attempt(
        t(2),
        failed(503, "service unavailable"),
        80,
        NextStep::RetryAt(retry),
    );
    assert!(fx.store.record_attempt(&claimed, &record).await.unwrap());

    let row = event_row(&fx, id).await;
    assert_eq!(row.status, "pending");
    assert_eq!(row.next_attempt_at, retry);
    assert_eq!(row.claimed_until, None);
    assert_eq!(row.last_error.as_deref(), Some("service unavailable"));
    assert_eq!(row.delivered_at, None);
    let rows = attempt_rows(&fx, id).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].outcome, "failed");
    assert_eq!(rows[0].status_code, Some(503));
    assert_eq!(rows[0].error.as_deref(), Some("service unavailable"));

    // Not before `retry` (though the lease is long gone), then with the next attempt number.
    assert!(
        claim(&fx, retry - chrono::Duration::seconds(1))
            .await
            .is_empty()
    );
    let again = claim_one(&fx, retry).await;
    assert_eq!(again.event_id, id);
    assert_eq!(again.attempt, 2);
}

#[tokio::test]
async fn exhausted_gives_the_event_up() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    let claimed = claim_one(&fx, t(1)).await;
    let record = attempt(t(2), failed(500, "boom"), 5, NextStep::Exhausted);
    assert!(fx.store.record_attempt(&claimed, &record).await.unwrap());

    let row = event_row(&fx, id).await;
    assert_eq!(row.status, "exhausted");
    assert_eq!(row.claimed_until, None);
    assert_eq!(row.delivered_at, None);
    assert_eq!(row.last_error.as_deref(), Some("boom"));
    assert_eq!(attempt_rows(&fx, id).await.len(), 1);
    assert!(claim(&fx, t(86_400 * 30)).await.is_empty());
    // Not recordable again either.
    assert!(!fx.store.record_attempt(&claimed, &record).await.unwrap());
}

#[tokio::test]
async fn an_event_with_nowhere_to_go_is_given_up_by_the_claim() {
    let fx = Fixture::new().await;
    let bare = fx.subaccount("Bare").await.id;
    let id = event_at(&fx, bare, t(0)).await;
    let claim = fx.store.claim_due(t(1), 100, LEASE).await.unwrap();
    assert!(claim.events.is_empty());
    assert_eq!(claim.skipped, 1);

    let row = event_row(&fx, id).await;
    assert_eq!(row.status, "exhausted");
    assert_eq!(row.attempts, 1);
    assert_eq!(row.claimed_until, None);
    assert_eq!(row.delivered_at, None);
    assert_eq!(row.next_attempt_at, t(0));
    assert_eq!(row.last_error.as_deref(), Some("no enabled postback URL"));
    assert_eq!(
        attempt_rows(&fx, id).await,
        vec![AttemptRow {
            attempt: 1,
            subaccount_id: bare.as_uuid(),
            attempted_at: t(1),
            outcome: "skipped".to_owned(),
            status_code: None,
            latency_ms: 0,
            error: Some("no enabled postback URL".to_owned()),
        }]
    );
    // Given up for good: nothing is due any more.
    assert_eq!(
        fx.store
            .claim_due(t(86_400), 100, LEASE)
            .await
            .unwrap()
            .taken(),
        0
    );

    // Once the subaccount has a webhook, a resend delivers it as a fresh attempt 1.
    fx.store
        .set_webhook(bare, URL, &secret(SECRET), &audit_entry())
        .await
        .unwrap();
    assert_eq!(
        fx.store
            .resend_events(&ResendSelection::One(id), t(7200), &audit_entry())
            .await
            .unwrap(),
        1
    );
    let claimed = claim_one(&fx, t(7200)).await;
    assert_eq!((claimed.event_id, claimed.attempt), (id, 1));
    assert_eq!(claimed.url, URL);
    assert_eq!(attempt_rows(&fx, id).await.len(), 1, "history kept");
}

/// The event of `new`, a payout written by `store` (the fixture's, or one writing groups).
async fn payout_event(store: &PgStore, new: &NewPayout) -> EventId {
    store
        .insert_payout(&new.payout, &new.entries, &new.events, &WriteKey::none())
        .await
        .unwrap();
    new.events[0].id
}

/// Asserts that the event `id` of `sub` was given up with one `skipped` attempt at `written_at`,
/// as an event with nowhere to go is.
async fn given_up_with_a_skipped_attempt(
    fx: &Fixture,
    sub: SubaccountId,
    id: EventId,
    written_at: DateTime<Utc>,
) {
    let row = event_row(fx, id).await;
    assert_eq!((row.status.as_str(), row.attempts), ("exhausted", 1));
    assert_eq!(row.last_error.as_deref(), Some("no enabled postback URL"));
    assert_eq!(row.claimed_until, None);
    assert_eq!(
        attempt_rows(fx, id).await,
        vec![AttemptRow {
            attempt: 1,
            subaccount_id: sub.as_uuid(),
            attempted_at: written_at,
            outcome: "skipped".to_owned(),
            status_code: None,
            latency_ms: 0,
            error: Some("no enabled postback URL".to_owned()),
        }]
    );
}

/// What the claim at `now` finds of `n` new payouts' events with nowhere to go: nothing on
/// plain PostgreSQL, where the payouts' write gave them up; on Citus, where a set is written
/// statement by statement, it gives them up itself (with `now` as their attempt's time).
async fn left_to_the_claim(fx: &Fixture, now: DateTime<Utc>, n: usize) {
    let claim = fx.store.claim_due(now, 100, LEASE).await.unwrap();
    let expected = if adapters_postgres::test_db::citus_url().is_some() {
        n
    } else {
        0
    };
    assert_eq!(
        (claim.skipped, claim.taken()),
        (expected, expected),
        "{claim:?}"
    );
}

/// A new payout's event whose subaccount has no enabled postback URL is given up in the
/// payout's own write (as the claim would give it up, so nothing is left for the claim; on
/// Citus the claim still does); with a URL it is written due, and once the endpoint is disabled
/// it is given up again.
#[tokio::test]
async fn a_new_payouts_event_with_nowhere_to_go_is_given_up_as_it_is_written() {
    let fx = Fixture::new().await;
    let (sub, owner, account) = world(&fx, "1000").await;
    let payout = || {
        planned(
            sub,
            &owner,
            &account,
            (10, 0),
            None,
            PayoutStatus::Unassessed,
        )
    };
    let written_at = payout().payout.created_at;
    // The receiver's and account's events, written before, are left to the claim.
    let setup = fx.store.claim_due(written_at, 100, LEASE).await.unwrap();
    assert_eq!((setup.skipped, setup.taken()), (2, 2), "{setup:?}");
    // No postback URL: a lone payout and a group of two.
    let lone = payout_event(&fx.store, &payout()).await;
    let groups = grouped(&fx, Duration::from_millis(100));
    let (first, second) = (payout(), payout());
    let (a, b) = tokio::join!(
        payout_event(&groups, &first),
        payout_event(&groups, &second)
    );
    left_to_the_claim(&fx, written_at, 3).await;
    for id in [lone, a, b] {
        given_up_with_a_skipped_attempt(&fx, sub, id, written_at).await;
    }

    // With a URL the event is due, and the claim sends it.
    fx.store
        .set_webhook(sub, URL, &secret(SECRET), &audit_entry())
        .await
        .unwrap();
    let due = payout_event(&groups, &payout()).await;
    let row = event_row(&fx, due).await;
    assert_eq!((row.status.as_str(), row.attempts), ("pending", 0));
    assert!(attempt_rows(&fx, due).await.is_empty());
    assert_eq!(claim_one(&fx, written_at).await.event_id, due);

    // Disabled (as a 410 answer disables it): given up as it is written again.
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE webhook_endpoints SET disabled_at = now() WHERE subaccount_id = $1")
        .bind::<SqlUuid, _>(sub.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    let again = payout_event(&fx.store, &payout()).await;
    left_to_the_claim(&fx, written_at, 1).await;
    given_up_with_a_skipped_attempt(&fx, sub, again, written_at).await;
}

#[tokio::test]
async fn a_secret_that_cannot_be_opened_fails_the_claim_and_the_lease_brings_the_event_back() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    // An instance with the wrong master key cannot open the webhook secret: the claim is an
    // error, never an unsigned delivery.
    let wrong_key = store_for(fx.db.url(), [9; 32]);
    assert!(wrong_key.claim_due(t(1), 100, LEASE).await.is_err());
    // The claim itself committed: the event is held until its lease ends, then taken again.
    let row = event_row(&fx, id).await;
    assert_eq!((row.status.as_str(), row.attempts), ("pending", 1));
    assert_eq!(row.claimed_until, Some(t(1) + LEASE));
    assert!(claim(&fx, t(2)).await.is_empty());
    let again = claim_one(&fx, t(1) + LEASE + chrono::Duration::seconds(1)).await;
    assert_eq!((again.event_id, again.attempt), (id, 2));
    assert_eq!(exposed(&again), vec![SECRET.to_owned()]);
}

#[tokio::test]
async fn disable_endpoint_exhausts_and_disables_until_set_webhook_again() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let other = hooked(&fx, "Other").await;
    let gone = event_at(&fx, sub, t(0)).await;
    let next = event_at(&fx, sub, t(10)).await;
    let elsewhere = event_at(&fx, other, t(10)).await;

    let claimed = claim_one(&fx, t(1)).await;
    assert_eq!(claimed.event_id, gone);
    let record = attempt(t(2), DeliveryOutcome::Gone, 7, NextStep::DisableEndpoint);
    assert!(fx.store.record_attempt(&claimed, &record).await.unwrap());

    let row = event_row(&fx, gone).await;
    assert_eq!(row.status, "exhausted");
    assert_eq!(row.claimed_until, None);
    let rows = attempt_rows(&fx, gone).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].outcome, "gone");
    assert_eq!(rows[0].status_code, Some(410));
    assert_eq!(endpoint_row(&fx, sub).await.disabled_at, Some(t(2)));
    // Only that subaccount's endpoint.
    assert_eq!(endpoint_row(&fx, other).await.disabled_at, None);

    // The disabled endpoint's next event is given up by the claim; the other subaccount's
    // is claimed to be sent.
    let later: Claim = fx.store.claim_due(t(20), 100, LEASE).await.unwrap();
    assert_eq!(later.skipped, 1);
    assert_eq!(ids(&later.events), HashSet::from([elsewhere]));
    assert_eq!(event_row(&fx, next).await.status, "exhausted");
    assert_eq!(attempt_rows(&fx, next).await[0].outcome, "skipped");

    // Setting the webhook again re-enables the endpoint.
    fx.store
        .set_webhook(
            sub,
            "https://hooks.example.com/v2",
            &secret(NEW_SECRET),
            &audit_entry(),
        )
        .await
        .unwrap();
    assert_eq!(endpoint_row(&fx, sub).await.disabled_at, None);
    let fresh = event_at(&fx, sub, t(30)).await;
    let fresh_claim = claim_one(&fx, t(31)).await;
    assert_eq!(fresh_claim.event_id, fresh);
    assert_eq!(fresh_claim.url, "https://hooks.example.com/v2");
    assert_eq!(exposed(&fresh_claim), vec![NEW_SECRET.to_owned()]);
}

// 5. Secret rotation.

#[tokio::test]
async fn rotation_signs_with_new_then_old_until_the_overlap_ends() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    let now = t(1);
    fx.store
        .rotate_webhook_secret(
            sub,
            &secret(NEW_SECRET),
            now + chrono::Duration::hours(1),
            &audit_entry(),
        )
        .await
        .unwrap();

    let claimed = claim_one(&fx, now).await;
    assert_eq!(
        exposed(&claimed),
        vec![NEW_SECRET.to_owned(), SECRET.to_owned()]
    );
    assert_eq!(claimed.url, URL);

    // After the overlap (the first claim's lease is over too), only the new secret.
    let after = claim_one(&fx, now + chrono::Duration::hours(2)).await;
    assert_eq!(after.event_id, id);
    assert_eq!(exposed(&after), vec![NEW_SECRET.to_owned()]);
}

#[tokio::test]
async fn rotation_with_an_overlap_already_over_signs_with_the_new_secret_only() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    event_at(&fx, sub, t(0)).await;
    let now = t(1);
    fx.store
        .rotate_webhook_secret(
            sub,
            &secret(NEW_SECRET),
            now - chrono::Duration::seconds(1),
            &audit_entry(),
        )
        .await
        .unwrap();
    let claimed = claim_one(&fx, now).await;
    assert_eq!(exposed(&claimed), vec![NEW_SECRET.to_owned()]);
}

#[tokio::test]
async fn rotation_needs_an_existing_webhook_and_subaccount() {
    let fx = Fixture::new().await;
    let bare = fx.subaccount("Bare").await.id;
    let err = fx
        .store
        .rotate_webhook_secret(bare, &secret(NEW_SECRET), t(3600), &audit_entry())
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::NoWebhook), "{err:?}");
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM webhook_endpoints WHERE subaccount_id = $1",
            bare.as_uuid()
        )
        .await,
        0
    );

    let unknown = SubaccountId::from_uuid(Uuid::new_v4());
    let err = fx
        .store
        .rotate_webhook_secret(unknown, &secret(NEW_SECRET), t(3600), &audit_entry())
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
}

// 6. Listing events.

#[tokio::test]
async fn list_events_newest_first_with_filters_and_attempts_oldest_first() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let other = hooked(&fx, "Other").await;
    let e1 = event_at(&fx, sub, t(0)).await;
    let e2 = event_at(&fx, sub, t(1)).await;
    let e3 = event_at(&fx, sub, t(2)).await;
    let eo = event_at(&fx, other, t(1)).await;

    let claimed = claim(&fx, t(10)).await;
    assert_eq!(claimed.len(), 4);
    for c in &claimed {
        let record = if c.event_id == e1 {
            attempt(t(10), failed(500, "boom"), 250, NextStep::RetryAt(t(20)))
        } else if c.event_id == e3 {
            let refused = DeliveryOutcome::Refused {
                reason: "loopback address".to_owned(),
            };
            attempt(t(11), refused, 0, NextStep::Exhausted)
        } else {
            attempt(
                t(12),
                DeliveryOutcome::Delivered { status: 200 },
                40,
                NextStep::Delivered,
            )
        };
        assert!(fx.store.record_attempt(c, &record).await.unwrap());
    }
    let retried = claim_one(&fx, t(20)).await;
    assert_eq!((retried.event_id, retried.attempt), (e1, 2));
    let record = attempt(
        t(21),
        DeliveryOutcome::Delivered { status: 201 },
        30,
        NextStep::Delivered,
    );
    assert!(fx.store.record_attempt(&retried, &record).await.unwrap());

    let listed = fx.store.list_events(sub, None, None, 10).await.unwrap();
    assert_eq!(
        listed.iter().map(|e| e.id).collect::<Vec<_>>(),
        vec![e3, e2, e1]
    );
    let first = &listed[2];
    assert_eq!(first.event_type, "receiverCreated");
    assert_eq!(first.sequence, 1);
    assert_eq!(first.status, "delivered");
    assert_eq!(first.created_at, t(0));
    assert_eq!(first.delivered_at, Some(t(21)));
    assert_eq!(
        first.attempts,
        vec![
            AttemptSummary {
                attempted_at: t(10),
                attempt: 1,
                outcome: "failed".to_owned(),
                status_code: Some(500),
                latency_ms: 250,
                error: Some("boom".to_owned()),
            },
            AttemptSummary {
                attempted_at: t(21),
                attempt: 2,
                outcome: "delivered".to_owned(),
                status_code: Some(201),
                latency_ms: 30,
                error: None,
            },
        ]
    );
    let third = &listed[0];
    assert_eq!(third.status, "exhausted");
    assert_eq!(third.last_error.as_deref(), Some("loopback address"));
    assert_eq!(
        third.attempts,
        vec![AttemptSummary {
            attempted_at: t(11),
            attempt: 1,
            outcome: "refused".to_owned(),
            status_code: None,
            latency_ms: 0,
            error: Some("loopback address".to_owned()),
        }]
    );
    assert_eq!(listed[1].status, "delivered");
    assert_eq!(listed[1].attempts.len(), 1);

    let list = async |status, since, limit| {
        fx.store
            .list_events(sub, status, since, limit)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        list(Some(EventStatus::Delivered), None, 10).await,
        vec![e2, e1]
    );
    assert_eq!(list(Some(EventStatus::Exhausted), None, 10).await, vec![e3]);
    assert!(list(Some(EventStatus::Pending), None, 10).await.is_empty());
    assert_eq!(list(None, Some(t(1)), 10).await, vec![e3, e2]);
    assert_eq!(
        list(Some(EventStatus::Delivered), Some(t(1)), 10).await,
        vec![e2]
    );
    assert_eq!(list(None, None, 1).await, vec![e3]);
    assert_eq!(list(None, None, 2).await, vec![e3, e2]);

    // Another subaccount's events are its own.
    let theirs = fx.store.list_events(other, None, None, 10).await.unwrap();
    assert_eq!(theirs.iter().map(|e| e.id).collect::<Vec<_>>(), vec![eo]);
    assert_eq!(theirs[0].attempts.len(), 1);
    assert!(
        fx.store
            .list_events(SubaccountId::from_uuid(Uuid::new_v4()), None, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

// 7. Resending.

#[tokio::test]
async fn resending_one_event_restarts_its_schedule_and_keeps_its_history() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    let claimed = claim_one(&fx, t(1)).await;
    assert!(
        fx.store
            .record_attempt(&claimed, &delivered(t(2)))
            .await
            .unwrap()
    );

    let now = t(3600);
    assert_eq!(
        fx.store
            .resend_events(&ResendSelection::One(id), now, &audit_entry())
            .await
            .unwrap(),
        1
    );
    let row = event_row(&fx, id).await;
    assert_eq!(row.status, "pending");
    assert_eq!(row.attempts, 0);
    assert_eq!(row.next_attempt_at, now);
    assert_eq!(row.delivered_at, None);
    assert_eq!(row.claimed_until, None);
    let listed = fx.store.list_events(sub, None, None, 10).await.unwrap();
    assert_eq!(listed[0].status, "pending");
    assert_eq!(listed[0].attempts.len(), 1, "history kept");

    // Not due before `now`; at `now` it is, as attempt 1 again.
    assert!(
        claim(&fx, now - chrono::Duration::seconds(1))
            .await
            .is_empty()
    );
    let again = claim_one(&fx, now).await;
    assert_eq!((again.event_id, again.attempt), (id, 1));
    assert!(
        fx.store
            .record_attempt(&again, &delivered(now))
            .await
            .unwrap()
    );
    let listed = fx.store.list_events(sub, None, None, 10).await.unwrap();
    assert_eq!(listed[0].status, "delivered");
    assert_eq!(
        listed[0]
            .attempts
            .iter()
            .map(|a| (a.attempted_at, a.attempt))
            .collect::<Vec<_>>(),
        vec![(t(2), 1), (now, 1)]
    );

    let unknown = EventId::from_uuid(Uuid::new_v4());
    assert_eq!(
        fx.store
            .resend_events(&ResendSelection::One(unknown), now, &audit_entry())
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn resending_a_range_requeues_exactly_that_subaccounts_events_in_it() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let other = hooked(&fx, "Other").await;
    let before = event_at(&fx, sub, t(0)).await;
    let from = event_at(&fx, sub, t(1)).await;
    let inside = event_at(&fx, sub, t(2)).await;
    let until = event_at(&fx, sub, t(3)).await;
    let theirs = event_at(&fx, other, t(2)).await;

    let claimed = claim(&fx, t(10)).await;
    assert_eq!(claimed.len(), 5);
    for c in &claimed {
        let record = attempt(t(10), failed(500, "boom"), 1, NextStep::Exhausted);
        assert!(fx.store.record_attempt(c, &record).await.unwrap());
    }

    let now = t(100);
    let selection = ResendSelection::Range {
        subaccount: sub,
        since: t(1),
        until: t(3),
    };
    assert_eq!(
        fx.store
            .resend_events(&selection, now, &audit_entry())
            .await
            .unwrap(),
        2
    );
    for (id, status) in [
        (before, "exhausted"),
        (from, "pending"),
        (inside, "pending"),
        (until, "exhausted"),
        (theirs, "exhausted"),
    ] {
        assert_eq!(event_row(&fx, id).await.status, status, "{id}");
    }
    let again = claim(&fx, now).await;
    assert_eq!(ids(&again), HashSet::from([from, inside]));
    assert!(again.iter().all(|c| c.attempt == 1));
}

// 8. Secrets at rest.

#[tokio::test]
async fn webhook_secrets_are_never_stored_in_plain_text() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let row = endpoint_row(&fx, sub).await;
    assert!(!contains(&row.secret, SECRET));
    assert_eq!(row.previous_secret, None);

    let until = t(3600);
    fx.store
        .rotate_webhook_secret(sub, &secret(NEW_SECRET), until, &audit_entry())
        .await
        .unwrap();
    let row = endpoint_row(&fx, sub).await;
    let previous = row
        .previous_secret
        .expect("the previous secret is kept during the overlap");
    assert_eq!(row.previous_until, Some(until));
    for stored in [&row.secret, &previous] {
        assert!(stored.len() > NEW_SECRET.len());
        assert!(!contains(stored, SECRET));
        assert!(!contains(stored, NEW_SECRET));
    }
    assert_ne!(row.secret, previous);
}

#[tokio::test]
async fn a_claim_taken_over_by_a_resend_cannot_record() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Shop").await;
    let id = event_at(&fx, sub, t(0)).await;
    // Worker A claims attempt 1 and is slow; an operator resends; worker B claims attempt 1 too.
    let stale = claim_one(&fx, t(10)).await;
    assert_eq!(
        fx.store
            .resend_events(&ResendSelection::One(id), t(11), &audit_entry())
            .await
            .unwrap(),
        1
    );
    let fresh = claim_one(&fx, t(12)).await;
    assert_eq!((stale.attempt, fresh.attempt), (1, 1));
    assert!(
        !fx.store
            .record_attempt(&stale, &delivered(t(13)))
            .await
            .unwrap()
    );
    assert!(
        fx.store
            .record_attempt(&fresh, &delivered(t(14)))
            .await
            .unwrap()
    );
    let attempts = attempt_rows(&fx, id).await;
    assert_eq!(
        attempts.len(),
        1,
        "only the live claim recorded: {attempts:?}"
    );
}

#[derive(diesel::QueryableByName)]
struct PreparedRow {
    #[diesel(sql_type = Text)]
    statement: String,
}

/// The statements prepared on the connection of `fx`'s one-connection pool.
async fn prepared_statements(fx: &Fixture) -> Vec<String> {
    let mut conn = fx.store.pool().get().await.unwrap();
    let rows: Vec<PreparedRow> =
        diesel::sql_query("SELECT statement FROM pg_prepared_statements ORDER BY statement")
            .load(&mut *conn)
            .await
            .unwrap();
    rows.into_iter().map(|r| r.statement).collect()
}

/// One event written, claimed and recorded as delivered.
async fn deliver_one(fx: &Fixture, sub: SubaccountId, secs: i64) {
    let id = event_at(fx, sub, t(secs)).await;
    let claimed = claim_one(fx, t(secs)).await;
    assert_eq!(claimed.event_id, id);
    let applied = fx
        .store
        .record_attempts(&[(claimed, delivered(t(secs)))])
        .await
        .unwrap();
    assert_eq!(applied, [true]);
}

#[tokio::test]
async fn the_event_and_delivery_statements_are_prepared_once_per_connection() {
    let db = adapters_postgres::test_db::TestDb::new().await.unwrap();
    let mut config = adapters_postgres::DbConfig::new(db.url());
    config.max_size = 1;
    let pool = adapters_postgres::create_pool(&config).unwrap();
    let vault = adapters_postgres::Vault::new(&Secret::new(MASTER_KEY)).unwrap();
    let store = adapters_postgres::PgStore::new(pool, Arc::new(vault));
    let fx = Fixture { db, store };
    let sub = hooked(&fx, "prepared").await;

    deliver_one(&fx, sub, 0).await;
    let after_one = prepared_statements(&fx).await;
    // diesel would prepare these three afresh on every call (and close them after it): raw SQL
    // is never cached unless marked fixed.
    for start in ["WITH seq AS", "WITH due AS", "WITH input AS"] {
        assert!(
            after_one.iter().any(|s| s.starts_with(start)),
            "no prepared statement starting {start:?} in {after_one:#?}"
        );
    }
    for secs in 1..4 {
        deliver_one(&fx, sub, secs).await;
    }
    assert_eq!(prepared_statements(&fx).await, after_one);
    // The claim turns bitmap scans off for its own transaction only: the pooled session, which
    // every other statement shares, keeps the default.
    assert_eq!(
        crate::support::session_setting(&fx.store, "enable_bitmapscan").await,
        "on"
    );
}
