//! Claiming: due events oldest first with their body, URL and secrets; every event claimed exactly
//! once by concurrent claimers; a dead claimer's event reclaimed after its lease.

use std::collections::HashSet;
use std::sync::Arc;

use domain::delivery::ports::DeliveryStore;

use super::{
    LEASE, SECRET, T0, URL, attempt_rows, claim, claim_one, delivered, event_at, event_row,
    exposed, hooked, ids, t,
};
use crate::support::{Fixture, at};

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
