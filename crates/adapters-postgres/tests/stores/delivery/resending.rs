//! Resending: one event or a range, history kept, and a claim taken over by a resend cannot
//! record.

use std::collections::HashSet;

use domain::delivery::NextStep;
use domain::delivery::history::{EventHistoryStore, ResendSelection};
use domain::delivery::ports::DeliveryStore;
use domain::ids::EventId;
use uuid::Uuid;

use super::{
    attempt, attempt_rows, claim, claim_one, delivered, event_at, event_row, failed, hooked, ids, t,
};
use crate::support::{Fixture, audit_entry};

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
    let listed = fx
        .store
        .list_events(sub, None, None, None, 10)
        .await
        .unwrap();
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
    let listed = fx
        .store
        .list_events(sub, None, None, None, 10)
        .await
        .unwrap();
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
