//! `NotificationStore`: requests queued with their account, sealed at rest, claimed once (also
//! by concurrent claimers), outcomes recorded only for the current attempt, listed for
//! operators.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::Duration;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::account::notification::ports::NotificationStore;
use domain::account::notification::{
    Notification, NotificationId, NotificationOutcome, NotificationStatus,
};
use domain::ids::SubaccountId;
use uuid::Uuid;

use crate::accounts::{direct_entry, insert, link_token, new_receiver, queued};
use crate::support::{Count, Fixture, at};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;

/// How many notifications `subaccount` has.
pub(crate) async fn rows(fx: &Fixture, subaccount: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM notifications WHERE subaccount_id = $1",
        subaccount.as_uuid(),
    )
    .await
}

/// Stores `n` accounts of one new receiver with their requests; returns them, oldest first.
async fn queue(fx: &Fixture, sub: SubaccountId, n: i64) -> Vec<Notification> {
    let owner = new_receiver(fx, sub, &format!("r{}@example.com", Uuid::new_v4())).await;
    let mut queued_ones = Vec::new();
    for i in 0..n {
        let account = direct_entry(&owner, "012-002", &format!("{:09}", 100_000 + i), T0 + i);
        let new = queued(&account);
        fx.store
            .insert_account(
                &account,
                &domain::account::ports::ConfirmationToken {
                    hash: [u8::try_from(i % 250).unwrap(); 32]
                        .map(|b| b ^ 0x5A)
                        .iter()
                        .enumerate()
                        .map(|(j, b)| b.wrapping_add(u8::try_from(j).unwrap()))
                        .collect::<Vec<_>>()
                        .try_into()
                        .unwrap(),
                    expires_at: account.created_at + Duration::days(7),
                },
                &[],
                &new,
                &domain::idempotency::WriteKey::none(),
            )
            .await
            .unwrap();
        queued_ones.push(new);
    }
    queued_ones
}

use domain::account::ports::AccountStore;

#[derive(diesel::QueryableByName)]
struct RowText {
    #[diesel(sql_type = Text)]
    text: String,
}

#[tokio::test]
async fn an_account_queues_its_request_with_the_link_and_recipient_sealed() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let account = direct_entry(&owner, "012-002", "123456789", T0);
    insert(&fx, &account).await.unwrap();

    let mut conn = fx.raw().await;
    let row: RowText = diesel::sql_query(
        "SELECT row_to_json(n)::text || encode(recipient_ciphertext, 'escape') \
                || encode(link_ciphertext, 'escape') AS text \
         FROM notifications n WHERE account_id = $1",
    )
    .bind::<SqlUuid, _>(account.id.as_uuid())
    .get_result(&mut conn)
    .await
    .unwrap();
    // Neither the link (nor its token), nor the e-mail, name or phone, nor the unmasked
    // account number is readable in the table.
    for secret in [
        "confirm/",
        link_token(&account).as_str(),
        "ada@example.com",
        "Lovelace",
        "61412345678",
        "123456789",
    ] {
        assert!(!row.text.contains(secret), "{secret} in {}", row.text);
    }
    assert!(row.text.contains(r#""status":"pending""#), "{}", row.text);
    assert!(row.text.contains(r#""attempts":1"#), "{}", row.text);
    assert!(row.text.contains(r#""channel":"email""#), "{}", row.text);
    assert!(
        row.text.contains(r#"["account_number", "123 ***"]"#),
        "the masked details are kept: {}",
        row.text
    );

    // Due once its creator's claim (a minute) has passed, and opened whole.
    let store = &fx.store;
    assert!(
        store
            .claim_due(at(T0 + 59 * SECOND), 10, at(T0 + 200 * SECOND))
            .await
            .unwrap()
            .is_empty()
    );
    let claimed = store
        .claim_due(at(T0 + 60 * SECOND), 10, at(T0 + 180 * SECOND))
        .await
        .unwrap();
    let expected = queued(&account).request;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].attempt, 2);
    assert_eq!(claimed[0].request.to_email, "ada@example.com");
    assert_eq!(claimed[0].request.receiver_name, "Ada Lovelace");
    assert_eq!(claimed[0].request.to_phone, "+61412345678");
    assert_eq!(claimed[0].request.masked_details, expected.masked_details);
    assert_eq!(
        claimed[0].request.confirm_url.expose(),
        &format!("https://pay.example.com/confirm/{}", link_token(&account))
    );
    // Claimed: not due again before its claim ends.
    assert!(
        store
            .claim_due(at(T0 + 179 * SECOND), 10, at(T0 + 300 * SECOND))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .claim_due(at(T0 + 180 * SECOND), 10, at(T0 + 300 * SECOND))
            .await
            .unwrap()[0]
            .attempt,
        3,
        "a claim whose holder died comes back"
    );
}

#[tokio::test]
async fn outcomes_are_recorded_only_for_the_current_attempt() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let new = queue(&fx, sub, 1).await.remove(0);
    let id = new.id;
    let store = &fx.store;

    let retry_at = at(T0 + 600 * SECOND);
    let retry = NotificationOutcome::Retry {
        retry_at,
        error: "dependency unavailable: connection refused".to_owned(),
    };
    assert!(store.record_outcome(&new, &retry).await.unwrap());
    // Attempt 1 is over: a second record of it (a late duplicate) changes nothing.
    assert!(
        !store
            .record_outcome(&new, &NotificationOutcome::Sent { at: at(T0) })
            .await
            .unwrap()
    );
    assert!(
        store
            .claim_due(at(T0 + 599 * SECOND), 10, at(T0 + 700 * SECOND))
            .await
            .unwrap()
            .is_empty()
    );
    let listed = store
        .list_notifications(Some(NotificationStatus::Pending), None, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].next_attempt_at, Some(retry_at));
    assert_eq!(
        listed[0].last_error.as_deref(),
        Some("dependency unavailable: connection refused")
    );

    let claimed = store
        .claim_due(retry_at, 10, at(T0 + 700 * SECOND))
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].attempt, 2);
    let sent_at = at(T0 + 601 * SECOND);
    // An instance whose claim was taken over cannot record over the new claim.
    let stale = Notification {
        claimed_until: at(T0 + 650 * SECOND),
        ..claimed[0].clone()
    };
    assert!(
        !store
            .record_outcome(&stale, &NotificationOutcome::Sent { at: sent_at })
            .await
            .unwrap()
    );
    assert!(
        store
            .record_outcome(&claimed[0], &NotificationOutcome::Sent { at: sent_at })
            .await
            .unwrap()
    );
    // Sent is final.
    assert!(
        !store
            .record_outcome(
                &claimed[0],
                &NotificationOutcome::Failed {
                    at: sent_at,
                    error: "x".to_owned()
                }
            )
            .await
            .unwrap()
    );
    assert!(
        store
            .claim_due(at(T0 + 10_000 * SECOND), 10, at(T0 + 20_000 * SECOND))
            .await
            .unwrap()
            .is_empty()
    );

    let sent = store
        .list_notifications(Some(NotificationStatus::Sent), None, 10)
        .await
        .unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].id, id);
    assert_eq!(sent[0].attempts, 2);
    assert_eq!(sent[0].sent_at, Some(sent_at));
    assert_eq!(sent[0].next_attempt_at, None);
    assert_eq!(sent[0].account_id, new.request.account_id);
    assert!(
        store
            .list_notifications(Some(NotificationStatus::Failed), None, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn a_failed_notification_is_final_and_listed_with_its_error() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let queued_ones = queue(&fx, sub, 3).await;
    let store = &fx.store;
    let failed = &queued_ones[1];
    let outcome = NotificationOutcome::Failed {
        at: at(T0),
        error: "rejected: 550 5.1.1 no such user".to_owned(),
    };
    assert!(store.record_outcome(failed, &outcome).await.unwrap());
    let listed = store
        .list_notifications(Some(NotificationStatus::Failed), None, 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, failed.id);
    assert_eq!(listed[0].status, NotificationStatus::Failed);
    assert_eq!(
        listed[0].last_error.as_deref(),
        Some("rejected: 550 5.1.1 no such user")
    );
    assert_eq!(listed[0].next_attempt_at, None);
    // Never claimed again; the two others are.
    let claimed = store
        .claim_due(at(T0 + 3_600 * SECOND), 10, at(T0 + 4_000 * SECOND))
        .await
        .unwrap();
    let ids: HashSet<_> = claimed.iter().map(|n| n.id).collect();
    assert_eq!(ids.len(), 2);
    assert!(!ids.contains(&failed.id));
    // All, newest first; a limit is a limit.
    let all = store.list_notifications(None, None, 10).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[0].id, queued_ones[2].id);
    assert_eq!(
        store.list_notifications(None, None, 2).await.unwrap().len(),
        2
    );
    // Keyset pages continue after the previous page's last request, filters kept.
    let second = store
        .list_notifications(None, Some(all[0].id), 10)
        .await
        .unwrap();
    assert_eq!(
        second.iter().map(|n| n.id).collect::<Vec<_>>(),
        all[1..].iter().map(|n| n.id).collect::<Vec<_>>()
    );
    assert!(
        store
            .list_notifications(Some(NotificationStatus::Failed), Some(all[0].id), 10)
            .await
            .unwrap()
            .iter()
            .all(|n| n.status == NotificationStatus::Failed)
    );
    let nowhere = NotificationId::from_uuid(Uuid::new_v4());
    assert!(
        store
            .list_notifications(None, Some(nowhere), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn concurrent_claims_take_each_notification_once() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let queued_ones = queue(&fx, sub, 24).await;
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let store = fx.store.clone();
            let barrier = barrier.clone();
            tokio::spawn(async move {
                barrier.wait().await;
                let mut mine = Vec::new();
                loop {
                    let claimed = store
                        .claim_due(at(T0 + 3_600 * SECOND), 5, at(T0 + 4_000 * SECOND))
                        .await
                        .unwrap();
                    if claimed.is_empty() {
                        return mine;
                    }
                    mine.extend(claimed.into_iter().map(|n| n.id));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let distinct: HashSet<_> = all.iter().copied().collect();
    assert_eq!(all.len(), 24, "each one claimed exactly once");
    assert_eq!(distinct.len(), 24);
    for new in &queued_ones {
        assert!(distinct.contains(&new.id));
    }
    let attempts = fx
        .count_where(
            "SELECT count(*) AS n FROM notifications WHERE subaccount_id = $1 AND attempts = 2",
            sub.as_uuid(),
        )
        .await;
    assert_eq!(attempts, 24);
}

#[tokio::test]
async fn a_link_copied_onto_another_row_does_not_open() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let queued_ones = queue(&fx, sub, 2).await;
    let mut conn = fx.raw().await;
    // Both rows named with their subaccount, so the statement stays on one shard on Citus,
    // which refuses a subquery that joins distributed rows off the distribution column.
    let copied = diesel::sql_query(
        "UPDATE notifications SET link_ciphertext = \
           (SELECT link_ciphertext FROM notifications WHERE subaccount_id = $3 AND id = $1) \
         WHERE subaccount_id = $3 AND id = $2",
    )
    .bind::<SqlUuid, _>(queued_ones[0].id.as_uuid())
    .bind::<SqlUuid, _>(queued_ones[1].id.as_uuid())
    .bind::<SqlUuid, _>(sub.as_uuid())
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(copied, 1);
    let result = fx
        .store
        .claim_due(at(T0 + 3_600 * SECOND), 10, at(T0 + 4_000 * SECOND))
        .await;
    assert!(matches!(result, Err(PortError::Unknown(_))), "{result:?}");
    let _ = Count { n: 0 };
}

#[tokio::test]
async fn a_failed_request_is_sent_again_only_while_its_link_can_confirm() {
    use domain::account::notification::NotificationId;
    use domain::account::notification::ports::Resend;

    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let queued_ones = queue(&fx, sub, 3).await;
    let store = &fx.store;
    for failed in &queued_ones[..2] {
        let outcome = NotificationOutcome::Failed {
            at: at(T0),
            error: "rejected: 550 5.1.1 no such user".to_owned(),
        };
        assert!(store.record_outcome(failed, &outcome).await.unwrap());
    }
    // Every audit row (the test's entries are all alike); the nil id is no entry's.
    let audits = || {
        fx.count_where(
            "SELECT count(*) AS n FROM audit_log WHERE id <> $1",
            Uuid::nil(),
        )
    };
    let hour_later = at(T0 + 3_600 * SECOND);
    let before = audits().await;

    // A failed request with a live link: pending again, due now, no attempts, error cleared.
    let first = queued_ones[0].id;
    assert_eq!(
        store
            .resend_failed(first, hour_later, &crate::support::audit_entry())
            .await
            .unwrap(),
        Resend::Queued
    );
    assert_eq!(audits().await, before + 1);
    let listed = store.list_notifications(None, None, 10).await.unwrap();
    let again = listed.iter().find(|n| n.id == first).unwrap();
    assert_eq!(again.status, NotificationStatus::Pending);
    assert_eq!((again.attempts, again.last_error.as_deref()), (0, None));
    assert_eq!(again.next_attempt_at, Some(hour_later));
    let claimed = store
        .claim_due(at(T0 + 3_601 * SECOND), 10, at(T0 + 4_000 * SECOND))
        .await
        .unwrap();
    assert!(claimed.iter().any(|n| n.id == first));

    // Not failed any more: refused, nothing written.
    assert_eq!(
        store
            .resend_failed(first, hour_later, &crate::support::audit_entry())
            .await
            .unwrap(),
        Resend::NotFailed(NotificationStatus::Pending)
    );
    // A link past its seven days: refused, still failed.
    let second = queued_ones[1].id;
    assert_eq!(
        store
            .resend_failed(
                second,
                at(T0 + 8 * 86_400 * SECOND),
                &crate::support::audit_entry()
            )
            .await
            .unwrap(),
        Resend::LinkSpent
    );
    // Unknown.
    assert_eq!(
        store
            .resend_failed(
                NotificationId::from_uuid(Uuid::new_v4()),
                hour_later,
                &crate::support::audit_entry()
            )
            .await
            .unwrap(),
        Resend::NotFound
    );
    assert_eq!(audits().await, before + 1, "refusals write no audit entry");
    let still = store
        .list_notifications(Some(NotificationStatus::Failed), None, 10)
        .await
        .unwrap();
    assert_eq!(still.iter().map(|n| n.id).collect::<Vec<_>>(), [second]);
}

#[tokio::test]
async fn two_operators_sending_one_failed_request_again_queue_it_once() {
    use domain::account::notification::ports::Resend;

    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let queued_ones = queue(&fx, sub, 1).await;
    let failed = &queued_ones[0];
    let outcome = NotificationOutcome::Failed {
        at: at(T0),
        error: "rejected".to_owned(),
    };
    assert!(fx.store.record_outcome(failed, &outcome).await.unwrap());
    let now = at(T0 + 3_600 * SECOND);
    let (one, other) = (Arc::new(fx.store.clone()), Arc::new(fx.store.clone()));
    let id = failed.id;
    let (a, b) = tokio::join!(
        tokio::spawn(async move {
            one.resend_failed(id, now, &crate::support::audit_entry())
                .await
        }),
        tokio::spawn(async move {
            other
                .resend_failed(id, now, &crate::support::audit_entry())
                .await
        }),
    );
    let mut answers = vec![a.unwrap().unwrap(), b.unwrap().unwrap()];
    answers.sort_by_key(|r| matches!(r, Resend::Queued));
    assert_eq!(
        answers,
        [
            Resend::NotFailed(NotificationStatus::Pending),
            Resend::Queued
        ],
        "the row lock lets one through; the other sees it pending"
    );
}
