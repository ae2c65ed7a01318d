//! `DeliveryStore` (claims with a lease, conditional recording) and the operator side of the
//! outbox (`set_webhook`, `rotate_webhook_secret`, `list_events`, `resend_events`); one module per
//! part, with the helpers they share here.

use std::collections::HashSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Bytea, Integer, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::delivery::ports::WebhookEndpointStore;
use domain::delivery::ports::{AttemptRecord, ClaimedEvent, DeliveryStore};
use domain::delivery::{DeliveryOutcome, NextStep};
use domain::idempotency::WriteKey;
use domain::ids::{EventId, SubaccountId};
use domain::masking::Secret;
use domain::receiver::ports::ReceiverStore;
use uuid::Uuid;

use crate::support::{Fixture, at, audit_entry, created_event, receiver};

mod claims;
mod listing;
mod prepared_statements;
mod recording;
mod resending;
mod rotation;
mod secrets_at_rest;
mod undeliverable;

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
