//! `NotificationWorker` driven through mocked ports.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Duration as TimeDelta, Utc};
use uuid::Uuid;

use super::*;
use crate::account::AccountField;
use crate::account::notification::NotificationStatus;
use crate::account::notification::ports::MockNotificationStore;
use crate::account::ports::MockNotifier;
use crate::ids::{ReceiverAccountId, SubaccountId};
use crate::masking::Secret;
use crate::ports::{MockClock, MockIdGenerator};

const NOW_MS: i64 = 1_700_000_000_000;
const LINK: &str = "https://pay.example.com/confirm/tok3n";

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(NOW_MS).unwrap_or_default()
}

fn clock() -> Arc<MockClock> {
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    Arc::new(clock)
}

/// Randomness whose first byte is `first`, so jitter is at either end of its range.
fn ids(first: u8) -> Arc<MockIdGenerator> {
    let mut ids = MockIdGenerator::new();
    ids.expect_random_bytes().returning(move || {
        let mut bytes = [first; 32];
        bytes[0] = first;
        bytes
    });
    ids.expect_new_id().returning(|| Uuid::from_u128(7));
    Arc::new(ids)
}

fn notification(attempt: u32) -> Notification {
    Notification {
        id: NotificationId::from_uuid(Uuid::from_u128(attempt.into())),
        channel: Channel::Email,
        request: ConfirmationRequest {
            account_id: ReceiverAccountId::from_uuid(Uuid::from_u128(1)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
            to_email: "ada@example.com".to_owned(),
            to_phone: "+61412345678".to_owned(),
            receiver_name: "Ada Lovelace".to_owned(),
            confirm_url: Secret::new(LINK.to_owned()),
            masked_details: vec![(AccountField::Bsb, "012 ***".to_owned())],
        },
        attempt,
        created_at: now(),
        claimed_until: now(),
    }
}

fn worker(store: MockNotificationStore, notifier: MockNotifier, jitter: u8) -> NotificationWorker {
    NotificationWorker::new(
        Arc::new(store),
        Arc::new(notifier),
        clock(),
        ids(jitter),
        NotificationSettings::default(),
    )
}

type Recorded = Arc<Mutex<Vec<(NotificationId, u32, NotificationOutcome)>>>;

fn recording(applied: bool) -> (MockNotificationStore, Recorded) {
    let recorded: Recorded = Arc::default();
    let seen = recorded.clone();
    let mut store = MockNotificationStore::new();
    store.expect_record_outcome().returning(move |n, outcome| {
        let (id, attempt) = (n.id, n.attempt);
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, attempt, outcome.clone()));
        Ok(applied)
    });
    (store, recorded)
}

fn unavailable() -> NotifyError {
    NotifyError::Port(PortError::Unavailable(anyhow::anyhow!(
        "connection refused by 127.0.0.1:2525"
    )))
}

fn taken(recorded: &Recorded) -> Vec<(NotificationId, u32, NotificationOutcome)> {
    recorded
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

#[tokio::test]
async fn a_sent_request_is_recorded_sent() {
    let (store, recorded) = recording(true);
    let mut notifier = MockNotifier::new();
    notifier
        .expect_send_confirmation()
        .withf(|request| request.confirm_url.expose() == LINK)
        .times(1)
        .returning(|_| Ok(()));
    let outcome = worker(store, notifier, 0).attempt(&notification(1)).await;
    assert_eq!(outcome, NotificationOutcome::Sent { at: now() });
    assert_eq!(
        taken(&recorded),
        [(
            notification(1).id,
            1,
            NotificationOutcome::Sent { at: now() }
        )]
    );
}

#[tokio::test]
async fn a_transient_failure_is_rescheduled_with_growing_delays() {
    let mut last_latest = now();
    for attempt in 1..=7u32 {
        // Jitter at its lowest and at its highest: the ranges of successive attempts follow
        // each other, so every retry waits at least as long as the one before.
        let mut range = Vec::new();
        for jitter in [0u8, 0xFF] {
            let (store, recorded) = recording(true);
            let mut notifier = MockNotifier::new();
            notifier
                .expect_send_confirmation()
                .times(1)
                .returning(|_| Err(unavailable()));
            let outcome = worker(store, notifier, jitter)
                .attempt(&notification(attempt))
                .await;
            let NotificationOutcome::Retry { retry_at, error } = &outcome else {
                panic!("attempt {attempt}: {outcome:?}")
            };
            assert!(error.contains("connection refused"), "{error}");
            assert!(!error.contains("tok3n"));
            assert_eq!(
                taken(&recorded),
                [(notification(attempt).id, attempt, outcome.clone())]
            );
            range.push(*retry_at);
        }
        let full = TimeDelta::seconds(30 * (1 << (attempt - 1))).min(TimeDelta::hours(1));
        assert_eq!(range[0], now() + full / 2, "attempt {attempt}");
        assert!(
            range[1] > range[0] && range[1] <= now() + full,
            "attempt {attempt}"
        );
        assert!(
            range[0] >= last_latest,
            "attempt {attempt} retries sooner than the one before"
        );
        last_latest = range[1];
    }
}

#[tokio::test]
async fn the_delay_is_capped() {
    let (store, _) = recording(true);
    let worker = worker(store, MockNotifier::new(), 0xFF);
    for attempt in [8, 20, 40, u32::MAX] {
        let delay = worker.retry_delay(attempt);
        assert!(
            delay <= std::time::Duration::from_secs(3600),
            "{attempt}: {delay:?}"
        );
        assert!(
            delay >= std::time::Duration::from_secs(1800),
            "{attempt}: {delay:?}"
        );
    }
}

#[tokio::test]
async fn a_permanent_rejection_fails_at_once() {
    let (store, recorded) = recording(true);
    let mut notifier = MockNotifier::new();
    notifier.expect_send_confirmation().times(1).returning(|_| {
        Err(NotifyError::Rejected(
            "550 5.1.1 mailbox unavailable".to_owned(),
        ))
    });
    let outcome = worker(store, notifier, 0).attempt(&notification(1)).await;
    let NotificationOutcome::Failed { at, error } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(*at, now());
    assert!(error.contains("550 5.1.1"), "{error}");
    assert_eq!(outcome.status(), NotificationStatus::Failed);
    assert_eq!(taken(&recorded).len(), 1);
}

#[tokio::test]
async fn the_last_attempt_fails_for_good() {
    let (store, recorded) = recording(true);
    let mut notifier = MockNotifier::new();
    notifier
        .expect_send_confirmation()
        .times(1)
        .returning(|_| Err(unavailable()));
    let max = NotificationSettings::default().max_attempts;
    let outcome = worker(store, notifier, 0).attempt(&notification(max)).await;
    let NotificationOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert!(error.contains("gave up after 8 attempts"), "{error}");
    assert!(error.contains("connection refused"), "{error}");
    assert_eq!(taken(&recorded)[0].1, max);
}

#[tokio::test]
async fn long_errors_are_cut() {
    let (store, _) = recording(true);
    let mut notifier = MockNotifier::new();
    notifier
        .expect_send_confirmation()
        .returning(|_| Err(NotifyError::Rejected("é".repeat(2_000))));
    let outcome = worker(store, notifier, 0).attempt(&notification(1)).await;
    let NotificationOutcome::Failed { error, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(error.chars().count(), 500);
}

#[tokio::test]
async fn a_pass_claims_due_ones_for_one_lease_and_records_each() {
    let mut store = MockNotificationStore::new();
    store
        .expect_claim_due()
        .withf(|at, limit, until| {
            *at == now() && *limit == 16 && *until == now() + TimeDelta::minutes(2)
        })
        .times(1)
        .returning(|_, _, _| Ok(vec![notification(2), notification(3), notification(8)]));
    let recorded: Recorded = Arc::default();
    let seen = recorded.clone();
    store.expect_record_outcome().returning(move |n, outcome| {
        let (id, attempt) = (n.id, n.attempt);
        seen.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, attempt, outcome.clone()));
        // The third outcome cannot be written: it is counted, not lost.
        if attempt == 8 {
            return Err(PortError::Unavailable(anyhow::anyhow!("db down")));
        }
        Ok(true)
    });
    let mut notifier = MockNotifier::new();
    notifier
        .expect_send_confirmation()
        .times(3)
        .returning(|_| Err(unavailable()));
    let report = worker(store, notifier, 0).run_due().await;
    assert_eq!(
        report.ok(),
        Some(PassReport {
            claimed: 3,
            sent: 0,
            retried: 2,
            failed: 0,
            unrecorded: 1,
        })
    );
    let mut attempts: Vec<u32> = taken(&recorded).iter().map(|(_, a, _)| *a).collect();
    attempts.sort_unstable();
    assert_eq!(attempts, [2, 3, 8]);
}

#[tokio::test]
async fn a_failed_claim_is_an_error_and_sends_nothing() {
    let mut store = MockNotificationStore::new();
    store
        .expect_claim_due()
        .returning(|_, _, _| Err(PortError::Unavailable(anyhow::anyhow!("db down"))));
    store.expect_record_outcome().never();
    let mut notifier = MockNotifier::new();
    notifier.expect_send_confirmation().never();
    assert!(matches!(
        worker(store, notifier, 0).run_due().await,
        Err(PortError::Unavailable(_))
    ));
}

#[tokio::test]
async fn an_outcome_refused_by_the_store_is_still_reported() {
    // The claim passed to a later attempt meanwhile: the store writes nothing.
    let (store, recorded) = recording(false);
    let mut notifier = MockNotifier::new();
    notifier.expect_send_confirmation().returning(|_| Ok(()));
    let outcome = worker(store, notifier, 0).attempt(&notification(2)).await;
    assert_eq!(outcome, NotificationOutcome::Sent { at: now() });
    assert_eq!(taken(&recorded).len(), 1);
}

#[test]
fn a_new_notification_is_claimed_by_its_creator_for_one_lease() {
    let (store, _) = recording(true);
    let worker = worker(store, MockNotifier::new(), 0);
    let queued = worker.prepare(
        NotificationId::from_uuid(Uuid::from_u128(9)),
        notification(1).request,
        now(),
    );
    assert_eq!(queued.attempt, 1);
    assert_eq!(queued.channel, Channel::Email);
    assert_eq!(queued.claimed_until, now() + TimeDelta::minutes(2));
}

#[test]
fn statuses_and_channels_have_stored_names() {
    for status in NotificationStatus::ALL {
        assert_eq!(NotificationStatus::parse(status.as_str()), Some(status));
    }
    assert_eq!(NotificationStatus::Failed.as_str(), "failed");
    assert_eq!(NotificationStatus::parse("lost"), None);
    assert_eq!(Channel::parse("email"), Some(Channel::Email));
    assert_eq!(Channel::parse("sms"), None);
}
