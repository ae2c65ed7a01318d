//! Listing events: newest first, with filters, attempts oldest first.

use domain::delivery::history::{AttemptSummary, EventHistoryStore, EventStatus};
use domain::delivery::ports::DeliveryStore;
use domain::delivery::{DeliveryOutcome, NextStep};
use domain::ids::SubaccountId;
use uuid::Uuid;

use super::{attempt, claim, claim_one, event_at, failed, hooked, t};
use crate::support::Fixture;

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

    let listed = fx
        .store
        .list_events(sub, None, None, None, 10)
        .await
        .unwrap();
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
            .list_events(sub, status, since, None, limit)
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

    // Keyset pages continue after the previous page's last event, filters kept; another
    // subaccount's event is no position here.
    let page_after = async |status, before| {
        fx.store
            .list_events(sub, status, None, Some(before), 10)
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(page_after(None, e3).await, vec![e2, e1]);
    assert_eq!(page_after(None, e2).await, vec![e1]);
    assert_eq!(
        page_after(Some(EventStatus::Delivered), e3).await,
        vec![e2, e1]
    );
    assert!(page_after(None, eo).await.is_empty());

    // Another subaccount's events are its own.
    let theirs = fx
        .store
        .list_events(other, None, None, None, 10)
        .await
        .unwrap();
    assert_eq!(theirs.iter().map(|e| e.id).collect::<Vec<_>>(), vec![eo]);
    assert_eq!(theirs[0].attempts.len(), 1);
    assert!(
        fx.store
            .list_events(
                SubaccountId::from_uuid(Uuid::new_v4()),
                None,
                None,
                None,
                10
            )
            .await
            .unwrap()
            .is_empty()
    );
}
