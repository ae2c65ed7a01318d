//! Recording attempts: each once, under its own claim, retries and exhaustion.

use domain::delivery::ports::DeliveryStore;
use domain::delivery::{DeliveryOutcome, NextStep};

use super::{
    AttemptRow, attempt, attempt_rows, claim, claim_one, delivered, endpoint_row, event_at,
    event_row, failed, hooked, t,
};
use crate::support::Fixture;

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
