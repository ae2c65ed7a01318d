//! `IdempotencyStore`: claims, replays, takeovers, and the key applied by the request's own
//! business transaction (committed, and completed with its response when it renders).

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use domain::auth::ports::CredentialStore;
use domain::auth::{NonceDurability, NonceOutcome, NonceUse};
use domain::idempotency::{
    ClaimOutcome, IdempotencyKey, IdempotencyStore, KeyClaim, KeyMode, LEASE, StoredResponse,
    WriteKey, fingerprint,
};
use domain::ids::{ApiKeyId, SubaccountId};
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
        KeyMode::Claimed(claim.clone()),
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

fn nonce_use(sub: SubaccountId, api_key: ApiKeyId, nonce: i64, keyed: bool) -> NonceUse {
    NonceUse {
        api_key,
        subaccount: sub,
        nonce,
        seen_at: Utc::now(),
        durability: if keyed {
            NonceDurability::WithNextCommit
        } else {
            NonceDurability::Immediate
        },
    }
}

async fn keys_of(fx: &Fixture, sub: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM idempotency_keys WHERE subaccount_id = $1",
        sub.as_uuid(),
    )
    .await
}

#[tokio::test]
async fn a_nonce_and_its_key_are_recorded_together_and_a_replayed_nonce_claims_nothing() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let api_key = ApiKeyId::from_uuid(uuid::Uuid::new_v4());
    let now = Utc::now();
    let fp = fingerprint("POST", "/api/payout/single", b"{\"amount\":1}");
    let nonce = |n, keyed| nonce_use(sub, api_key, n, keyed);

    let first = fx
        .store
        .claim_with_nonce(&nonce(1, true), &key("k-1"), fp, now)
        .await
        .unwrap();
    let k1 = claim_of(sub, "k-1", first.unwrap());
    // Both are recorded: the nonce is used, and the key is this request's.
    assert_eq!(
        fx.store
            .record_nonce(api_key, sub, 1, now, NonceDurability::Immediate)
            .await
            .unwrap(),
        NonceOutcome::Replayed
    );
    assert_eq!(
        fx.store.claim(sub, &key("k-1"), fp, now).await.unwrap(),
        ClaimOutcome::InFlight
    );

    // The same nonce again, with another key: a replay, and that key is never created.
    assert_eq!(
        fx.store
            .claim_with_nonce(&nonce(1, true), &key("k-2"), fp, now)
            .await
            .unwrap(),
        None
    );
    assert_eq!(keys_of(&fx, sub).await, 1);

    // A fresh nonce with a key seen before: the key's own rule answers, and the nonce is used.
    assert!(fx.store.complete(&k1, &answered(200, b"{}")).await.unwrap());
    assert_eq!(
        fx.store
            .claim_with_nonce(&nonce(2, true), &key("k-1"), fp, now)
            .await
            .unwrap(),
        Some(ClaimOutcome::Replay {
            status: 200,
            body: b"{}".to_vec()
        })
    );
    let other = fingerprint("POST", "/api/payout/single", b"{\"amount\":2}");
    assert_eq!(
        fx.store
            .claim_with_nonce(&nonce(3, true), &key("k-1"), other, now)
            .await
            .unwrap(),
        Some(ClaimOutcome::Mismatch)
    );
    for used in [2, 3] {
        assert_eq!(
            fx.store
                .claim_with_nonce(&nonce(used, true), &key("k-9"), fp, now)
                .await
                .unwrap(),
            None,
            "nonce {used}"
        );
    }
    // An expired key is taken over; a nonce that must be on disk at once claims the same way.
    let day_later = now + domain::idempotency::RETENTION + Duration::seconds(1);
    assert!(matches!(
        fx.store
            .claim_with_nonce(&nonce(4, false), &key("k-1"), other, day_later)
            .await
            .unwrap(),
        Some(ClaimOutcome::Claimed { .. })
    ));
    // Another subaccount's key of the same name is its own.
    let other_sub = fx.subaccount("Other").await.id;
    let theirs = nonce_use(
        other_sub,
        ApiKeyId::from_uuid(uuid::Uuid::new_v4()),
        1,
        true,
    );
    assert!(matches!(
        fx.store
            .claim_with_nonce(&theirs, &key("k-1"), fp, now)
            .await
            .unwrap(),
        Some(ClaimOutcome::Claimed { .. })
    ));
    assert_eq!(keys_of(&fx, sub).await, 1);
    assert_eq!(keys_of(&fx, other_sub).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_uses_of_one_nonce_with_their_keys_claim_exactly_one() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let api_key = ApiKeyId::from_uuid(uuid::Uuid::new_v4());
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = fx.store.clone();
            let barrier = Arc::clone(&barrier);
            let nonce = nonce_use(sub, api_key, 42, i % 2 == 0);
            tokio::spawn(async move {
                let fp = fingerprint("POST", "/api/payout/single", b"{}");
                barrier.wait().await;
                store
                    .claim_with_nonce(&nonce, &key(&format!("k-{i}")), fp, Utc::now())
                    .await
            })
        })
        .collect();
    let mut claimed = 0;
    for task in tasks {
        match task.await.unwrap().unwrap() {
            Some(ClaimOutcome::Claimed { .. }) => claimed += 1,
            None => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(claimed, 1);
    assert_eq!(keys_of(&fx, sub).await, 1);
}

#[tokio::test]
async fn a_nonce_and_claim_recorded_together_leave_their_connection_as_it_was() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Idem").await.id;
    let store = crate::support::one_connection_store(&fx);
    let api_key = ApiKeyId::from_uuid(uuid::Uuid::new_v4());
    let fp = fingerprint("POST", "/api/receiver", b"{}");
    for (n, keyed) in [(1, true), (2, false)] {
        let outcome = store
            .claim_with_nonce(
                &nonce_use(sub, api_key, n, keyed),
                &key(&format!("k-{n}")),
                fp,
                Utc::now(),
            )
            .await
            .unwrap();
        assert!(
            matches!(outcome, Some(ClaimOutcome::Claimed { .. })),
            "{outcome:?}"
        );
        assert_eq!(
            crate::support::session_setting(&store, "synchronous_commit").await,
            "on"
        );
    }
}
