//! `IdempotencyStore`: claims, replays, takeovers, and the commit marker written by the
//! request's own business transaction.

use adapters_postgres::{ClaimSlot, within_claim_slot};
use chrono::{Duration, Utc};
use domain::idempotency::{ClaimOutcome, IdempotencyKey, IdempotencyStore, LEASE, fingerprint};
use domain::ports::ReceiverStore;

use crate::support::{Fixture, created_event, receiver};

fn key(raw: &str) -> IdempotencyKey {
    IdempotencyKey::parse(raw).unwrap()
}

#[tokio::test]
async fn a_claim_is_marked_committed_only_by_a_write_that_commits() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let now = Utc::now();
    let fp = fingerprint("POST", "/api/receiver", b"{}");
    let r = receiver(sub, "idem@example.com", now);
    let written = within_claim_slot(ClaimSlot::default(), async {
        let claimed = fx.store.claim(sub, &key("k1"), fp, now).await.unwrap();
        assert!(matches!(claimed, ClaimOutcome::Claimed { .. }));
        fx.store.insert_receiver(&r, &[created_event(&r)]).await
    })
    .await;
    assert!(written.is_ok());
    // Written but no response stored: in flight within the lease; once the lease ends (the
    // holder died), never run again, and answered as lost.
    assert_eq!(
        fx.store.claim(sub, &key("k1"), fp, now).await.unwrap(),
        ClaimOutcome::InFlight
    );
    let later = now + LEASE + Duration::seconds(1);
    let retry = fx.store.claim(sub, &key("k1"), fp, later).await.unwrap();
    assert_eq!(retry, ClaimOutcome::ResponseLost);

    // A claim whose request wrote nothing is taken over once its lease ends...
    let slow_request = ClaimSlot::default();
    let first = within_claim_slot(slow_request.clone(), async {
        fx.store.claim(sub, &key("k2"), fp, now).await.unwrap()
    })
    .await;
    let ClaimOutcome::Claimed { lease_until: old } = first else {
        panic!("{first:?}");
    };
    assert_eq!(
        fx.store.claim(sub, &key("k2"), fp, now).await.unwrap(),
        ClaimOutcome::InFlight
    );
    let took = fx.store.claim(sub, &key("k2"), fp, later).await.unwrap();
    assert!(matches!(took, ClaimOutcome::Claimed { lease_until } if lease_until > old));
    // ...and the first request, should it wake up, can no longer write: its write rolls back,
    // nor store its response.
    let slow = receiver(sub, "slow@example.com", now);
    let late_write = within_claim_slot(slow_request, async {
        fx.store
            .insert_receiver(&slow, &[created_event(&slow)])
            .await
    })
    .await;
    assert!(late_write.is_err());
    assert!(
        fx.store
            .find_receiver(sub, slow.id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        !fx.store
            .complete(sub, &key("k2"), old, 200, b"{}")
            .await
            .unwrap()
    );
}

#[tokio::test]
async fn completed_keys_replay_and_released_keys_run_again() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let now = Utc::now();
    let fp = fingerprint("POST", "/api/payout/single", b"{\"amount\":1}");
    let ClaimOutcome::Claimed { lease_until } =
        fx.store.claim(sub, &key("a"), fp, now).await.unwrap()
    else {
        panic!("claim");
    };
    assert!(
        fx.store
            .complete(sub, &key("a"), lease_until, 201, b"{\"ok\":true}")
            .await
            .unwrap()
    );
    assert_eq!(
        fx.store.claim(sub, &key("a"), fp, now).await.unwrap(),
        ClaimOutcome::Replay {
            status: 201,
            body: b"{\"ok\":true}".to_vec()
        }
    );
    let other = fingerprint("POST", "/api/payout/single", b"{\"amount\":2}");
    assert_eq!(
        fx.store.claim(sub, &key("a"), other, now).await.unwrap(),
        ClaimOutcome::Mismatch
    );
    // Another subaccount's "a" is its own.
    let other_sub = fx.subaccount("Other").await.id;
    assert!(matches!(
        fx.store
            .claim(other_sub, &key("a"), other, now)
            .await
            .unwrap(),
        ClaimOutcome::Claimed { .. }
    ));

    // Released after a server error: the retry runs afresh.
    let ClaimOutcome::Claimed { lease_until } =
        fx.store.claim(sub, &key("b"), fp, now).await.unwrap()
    else {
        panic!("claim");
    };
    fx.store.release(sub, &key("b"), lease_until).await.unwrap();
    assert!(matches!(
        fx.store.claim(sub, &key("b"), fp, now).await.unwrap(),
        ClaimOutcome::Claimed { .. }
    ));

    // Expired keys are purged, and then new.
    let day_later = now + domain::idempotency::RETENTION + Duration::seconds(1);
    assert!(fx.store.purge_expired(day_later).await.unwrap() >= 3);
    assert!(matches!(
        fx.store
            .claim(sub, &key("a"), other, day_later)
            .await
            .unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
}
