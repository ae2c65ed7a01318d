//! `IdempotencyStore`: claims, replays, takeovers, and the key applied by the request's own
//! business transaction (committed, and completed with its response when it renders).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use domain::idempotency::{
    ClaimOutcome, IdempotencyKey, IdempotencyStore, KeyClaim, LEASE, StoredResponse, WriteKey,
    fingerprint,
};
use domain::ids::SubaccountId;
use domain::receiver::Receiver;
use domain::receiver::ports::ReceiverStore;

use crate::support::{Fixture, created_event, receiver};

fn key(raw: &str) -> IdempotencyKey {
    IdempotencyKey::parse(raw).unwrap()
}

fn claim_of(sub: SubaccountId, raw: &str, outcome: ClaimOutcome) -> KeyClaim {
    let ClaimOutcome::Claimed { lease_until } = outcome else {
        panic!("{outcome:?}");
    };
    KeyClaim {
        subaccount: sub,
        key: key(raw),
        lease_until,
    }
}

fn answered(status: u16, body: &[u8]) -> StoredResponse {
    StoredResponse {
        status,
        body: body.to_vec(),
    }
}

/// A write key rendering the receiver's e-mail as the response body.
fn rendering(claim: &KeyClaim) -> WriteKey<Receiver> {
    WriteKey::new(
        Some(claim.clone()),
        Arc::new(|r: &Receiver| Some(answered(200, r.email.as_bytes()))),
    )
}

async fn claim(fx: &Fixture, sub: SubaccountId, raw: &str, now: DateTime<Utc>) -> KeyClaim {
    let fp = fingerprint("POST", "/api/receiver", b"{}");
    claim_of(
        sub,
        raw,
        fx.store.claim(sub, &key(raw), fp, now).await.unwrap(),
    )
}

#[tokio::test]
async fn a_write_stores_its_response_with_it_so_a_crash_after_commit_still_replays() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let now = Utc::now();
    let fp = fingerprint("POST", "/api/receiver", b"{}");
    let k = claim(&fx, sub, "k0", now).await;
    let r = receiver(sub, "replayed@example.com", now);
    fx.store
        .insert_receiver(&r, &[created_event(&r)], &rendering(&k))
        .await
        .unwrap();
    // The holder dies here, before anything else: the retry (even before the lease ends) is
    // answered with the response stored in the write's transaction, byte for byte.
    assert_eq!(
        fx.store.claim(sub, &key("k0"), fp, now).await.unwrap(),
        ClaimOutcome::Replay {
            status: 200,
            body: b"replayed@example.com".to_vec()
        }
    );
    // The key is complete: a late completion by the middleware changes nothing.
    assert!(!fx.store.complete(&k, &answered(500, b"")).await.unwrap());
    // A write without events applies the key alone, with the same effect.
    let k2 = claim(&fx, sub, "k0b", now).await;
    let decided = receiver(sub, "decided@example.com", now);
    fx.store
        .insert_receiver(&decided, &[], &rendering(&k2))
        .await
        .unwrap();
    assert_eq!(
        fx.store.claim(sub, &key("k0b"), fp, now).await.unwrap(),
        ClaimOutcome::Replay {
            status: 200,
            body: b"decided@example.com".to_vec()
        }
    );
}

#[tokio::test]
async fn a_write_that_fails_leaves_its_key_unmarked_and_uncompleted() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let now = Utc::now();
    let first = receiver(sub, "taken@example.com", now);
    fx.store
        .insert_receiver(&first, &[created_event(&first)], &WriteKey::none())
        .await
        .unwrap();
    let k = claim(&fx, sub, "dup", now).await;
    let dup = receiver(sub, "taken@example.com", now);
    assert!(
        fx.store
            .insert_receiver(&dup, &[created_event(&dup)], &rendering(&k))
            .await
            .is_err()
    );
    // Nothing was written, so the refusal's response is the middleware's to store, and a
    // server error would release the key.
    assert!(fx.store.complete(&k, &answered(400, b"dup")).await.unwrap());
    let k2 = claim(&fx, sub, "dup2", now).await;
    assert!(
        fx.store
            .insert_receiver(&dup, &[created_event(&dup)], &rendering(&k2))
            .await
            .is_err()
    );
    fx.store.release(&k2).await.unwrap();
    assert!(matches!(
        fx.store
            .claim(
                sub,
                &key("dup2"),
                fingerprint("POST", "/api/receiver", b"{}"),
                now
            )
            .await
            .unwrap(),
        ClaimOutcome::Claimed { .. }
    ));
}

#[tokio::test]
async fn a_claim_is_marked_committed_only_by_a_write_that_commits() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let now = Utc::now();
    let fp = fingerprint("POST", "/api/receiver", b"{}");
    let r = receiver(sub, "idem@example.com", now);
    let k1 = claim(&fx, sub, "k1", now).await;
    // A write whose response comes later only marks the key committed.
    let written = fx
        .store
        .insert_receiver(&r, &[created_event(&r)], &WriteKey::committing(Some(k1)))
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
    let slow_request = claim(&fx, sub, "k2", now).await;
    assert_eq!(
        fx.store.claim(sub, &key("k2"), fp, now).await.unwrap(),
        ClaimOutcome::InFlight
    );
    let took = fx.store.claim(sub, &key("k2"), fp, later).await.unwrap();
    assert!(
        matches!(took, ClaimOutcome::Claimed { lease_until } if lease_until > slow_request.lease_until)
    );
    // ...and the first request, should it wake up, can no longer write: its write rolls back
    // (with or without a response to store, with or without events), nor store its response.
    for (n, key) in [
        rendering(&slow_request),
        WriteKey::committing(Some(slow_request.clone())),
    ]
    .iter()
    .enumerate()
    {
        let slow = receiver(sub, &format!("slow{n}@example.com"), now);
        for events in [vec![created_event(&slow)], vec![]] {
            assert!(fx.store.insert_receiver(&slow, &events, key).await.is_err());
        }
        assert!(
            fx.store
                .find_receiver(sub, slow.id)
                .await
                .unwrap()
                .is_none()
        );
    }
    assert!(
        !fx.store
            .complete(&slow_request, &answered(200, b"{}"))
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
    let a = claim_of(
        sub,
        "a",
        fx.store.claim(sub, &key("a"), fp, now).await.unwrap(),
    );
    assert!(
        fx.store
            .complete(&a, &answered(201, b"{\"ok\":true}"))
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
    let b = claim_of(
        sub,
        "b",
        fx.store.claim(sub, &key("b"), fp, now).await.unwrap(),
    );
    fx.store.release(&b).await.unwrap();
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

#[tokio::test]
async fn a_new_claim_commits_without_waiting_for_the_flush_and_leaves_its_connection_as_it_was() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let store = crate::support::one_connection_store(&fx);
    let fp = fingerprint("POST", "/api/receiver", b"{}");
    let now = Utc::now();
    let first = store.claim(sub, &key("k-1"), fp, now).await.unwrap();
    assert!(matches!(first, ClaimOutcome::Claimed { .. }), "{first:?}");
    // Visible at once to the next request with the key, as a durable claim would be.
    let again = fx.store.claim(sub, &key("k-1"), fp, now).await.unwrap();
    assert_eq!(again, ClaimOutcome::InFlight);
    assert_eq!(
        crate::support::session_setting(&store, "synchronous_commit").await,
        "on"
    );
}
