//! Events that cannot be delivered: nowhere to go (given up by the claim, or as they are
//! written), a secret that cannot be opened, a disabled endpoint.

use std::collections::HashSet;
use std::time::Duration;

use adapters_postgres::PgStore;
use chrono::{DateTime, Utc};
use diesel::sql_types::Uuid as SqlUuid;
use diesel_async::RunQueryDsl;
use domain::delivery::history::{EventHistoryStore, ResendSelection};
use domain::delivery::ports::{Claim, DeliveryStore, WebhookEndpointStore};
use domain::delivery::{DeliveryOutcome, NextStep};
use domain::idempotency::WriteKey;
use domain::ids::{EventId, SubaccountId};
use domain::payout::PayoutStatus;
use domain::payout::ports::{NewPayout, PayoutStore};

use super::{
    AttemptRow, LEASE, NEW_SECRET, SECRET, URL, attempt, attempt_rows, claim, claim_one,
    endpoint_row, event_at, event_row, exposed, hooked, ids, secret, t,
};
use crate::payout_groups::{grouped, planned, world};
use crate::support::{Fixture, audit_entry, store_for};

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
