//! `CredentialStore` (with `OperatorStore`'s key commands): encrypted secrets, revocation,
//! nonces.

use std::sync::Arc;

use chrono::Duration;
use diesel::sql_types::{Bool, Bytea, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::auth::ports::ApiKeyStore;
use domain::auth::ports::CredentialStore;
use domain::auth::{NonceDurability, NonceOutcome, SignaturePolicy};
use domain::error::OperatorError;
use domain::ids::{ApiKeyId, SubaccountId};
use domain::masking::Secret;
use domain::subaccount::ports::SubaccountSetupStore;
use uuid::Uuid;

use crate::support::{Fixture, at, audit_entry, store_for};

const NOW: i64 = 1_700_000_000_000_000;

#[derive(diesel::QueryableByName)]
struct Sealed {
    #[diesel(sql_type = Bytea)]
    secret_ciphertext: Vec<u8>,
}

#[derive(diesel::QueryableByName)]
struct RequireV2 {
    #[diesel(sql_type = Bool)]
    require_signature_v2: bool,
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn credential_round_trips_encrypted_and_stops_working_when_revoked() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let id = ApiKeyId::from_uuid(Uuid::new_v4());
    let secret = Secret::new("sk_test_Zm9vYmFyYmF6cXV4c2VjcmV0".to_owned());
    fx.store
        .insert_credential(id, sub, "pk_test_1", &secret, at(NOW), &audit_entry())
        .await
        .unwrap();

    let found = fx
        .store
        .find_credential("pk_test_1")
        .await
        .unwrap()
        .expect("active credential");
    assert_eq!(found.id, id);
    assert_eq!(found.subaccount_id, sub);
    assert_eq!(found.secret.expose(), secret.expose());
    assert_eq!(
        found.signature_policy,
        SignaturePolicy::V2ForPosts,
        "the default"
    );
    assert!(
        fx.store
            .find_credential("pk_other")
            .await
            .unwrap()
            .is_none()
    );

    // The signature policy is a property of the subaccount, visible through its credentials,
    // and written for the previous release as require_signature_v2.
    for policy in SignaturePolicy::ALL
        .iter()
        .chain([&SignaturePolicy::V2Only, &SignaturePolicy::AnyVersion])
    {
        fx.store
            .set_signature_policy(sub, *policy, &audit_entry())
            .await
            .unwrap();
        let found = fx
            .store
            .find_credential("pk_test_1")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.signature_policy, *policy);
        let mut conn = fx.raw().await;
        let previous: RequireV2 =
            diesel::sql_query("SELECT require_signature_v2 FROM subaccounts WHERE id = $1")
                .bind::<SqlUuid, _>(sub.as_uuid())
                .get_result(&mut conn)
                .await
                .unwrap();
        assert_eq!(
            previous.require_signature_v2,
            *policy == SignaturePolicy::V2Only
        );
    }
    // The previous release's require-signature-v2 sets only the old column: v2 it is.
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE subaccounts SET require_signature_v2 = true WHERE id = $1")
        .bind::<SqlUuid, _>(sub.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    let found = fx
        .store
        .find_credential("pk_test_1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.signature_policy, SignaturePolicy::V2Only);

    // Encrypted at rest: the stored bytes do not contain the secret.
    let mut conn = fx.raw().await;
    let stored: Sealed = diesel::sql_query("SELECT secret_ciphertext FROM api_keys WHERE id = $1")
        .bind::<SqlUuid, _>(id.as_uuid())
        .get_result(&mut conn)
        .await
        .unwrap();
    assert!(!stored.secret_ciphertext.is_empty());
    assert!(!contains(
        &stored.secret_ciphertext,
        secret.expose().as_bytes()
    ));

    // A store with another master key cannot open it: an error, never a wrong secret.
    let other_key = store_for(fx.db.url(), [9; 32]);
    let err = other_key.find_credential("pk_test_1").await.unwrap_err();
    assert!(matches!(err, PortError::Unknown(_)), "{err:?}");
    // The message must not carry the secret.
    assert!(!format!("{err:#}").contains(secret.expose().as_str()));

    // Revocation is immediate; a second revocation finds no active key.
    fx.store
        .revoke_credential("pk_test_1", at(NOW + 1), &audit_entry())
        .await
        .unwrap();
    assert!(
        fx.store
            .find_credential("pk_test_1")
            .await
            .unwrap()
            .is_none()
    );
    let err = fx
        .store
        .revoke_credential("pk_test_1", at(NOW + 2), &audit_entry())
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::KeyNotFound), "{err:?}");
    let err = fx
        .store
        .revoke_credential("pk_never_issued", at(NOW + 2), &audit_entry())
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::KeyNotFound), "{err:?}");
}

#[tokio::test]
async fn keys_of_one_subaccount_rotate_with_overlap() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    for (n, key) in ["pk_old", "pk_new"].into_iter().enumerate() {
        fx.store
            .insert_credential(
                ApiKeyId::from_uuid(Uuid::new_v4()),
                sub,
                key,
                &Secret::new(format!("sk_{n}")),
                at(NOW),
                &audit_entry(),
            )
            .await
            .unwrap();
    }
    fx.store
        .revoke_credential("pk_old", at(NOW), &audit_entry())
        .await
        .unwrap();
    assert!(fx.store.find_credential("pk_old").await.unwrap().is_none());
    let new = fx.store.find_credential("pk_new").await.unwrap().unwrap();
    assert_eq!(new.secret.expose(), "sk_1");
}

#[tokio::test]
async fn credential_for_an_unknown_subaccount_is_refused() {
    let fx = Fixture::new().await;
    let err = fx
        .store
        .insert_credential(
            ApiKeyId::from_uuid(Uuid::new_v4()),
            SubaccountId::from_uuid(Uuid::new_v4()),
            "pk_orphan",
            &Secret::new("sk_orphan".to_owned()),
            at(NOW),
            &audit_entry(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
    assert!(
        fx.store
            .find_credential("pk_orphan")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_signature_policy_of_an_unknown_subaccount_is_refused() {
    let fx = Fixture::new().await;
    let err = fx
        .store
        .set_signature_policy(
            SubaccountId::from_uuid(Uuid::new_v4()),
            SignaturePolicy::V2Only,
            &audit_entry(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
}

#[tokio::test]
async fn nonces_are_single_use_per_key_and_purged_by_age() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let key = ApiKeyId::from_uuid(Uuid::new_v4());
    let other_key = ApiKeyId::from_uuid(Uuid::new_v4());
    let old = at(NOW);
    let recent = old + Duration::minutes(30);

    let record_as = async |key, nonce, seen_at, durability| {
        fx.store
            .record_nonce(key, sub, nonce, seen_at, durability)
            .await
            .unwrap()
    };
    let record = async |key, nonce, seen_at| {
        record_as(key, nonce, seen_at, NonceDurability::Immediate).await
    };
    assert_eq!(record(key, 1, old).await, NonceOutcome::Fresh);
    assert_eq!(record(key, 1, recent).await, NonceOutcome::Replayed);
    // Recorded without waiting for the flush, or seen again so: a replay either way.
    let keyed = NonceDurability::WithNextCommit;
    assert_eq!(
        record_as(key, 1, recent, keyed).await,
        NonceOutcome::Replayed
    );
    assert_eq!(record_as(key, 3, old, keyed).await, NonceOutcome::Fresh);
    assert_eq!(record(key, 3, recent).await, NonceOutcome::Replayed);
    assert_eq!(record(other_key, 1, old).await, NonceOutcome::Fresh);
    assert_eq!(record(key, 2, recent).await, NonceOutcome::Fresh);

    // Only rows seen strictly before the cut-off go.
    let purged = fx
        .store
        .purge_nonces(old + Duration::minutes(1))
        .await
        .unwrap();
    assert_eq!(purged, 3);
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM request_nonces WHERE subaccount_id = $1",
            sub.as_uuid()
        )
        .await,
        1
    );
    assert_eq!(record(key, 2, recent).await, NonceOutcome::Replayed);
    assert_eq!(fx.store.purge_nonces(old).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_uses_of_one_nonce_accept_exactly_one() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let key = ApiKeyId::from_uuid(Uuid::new_v4());
    let barrier = Arc::new(tokio::sync::Barrier::new(10));
    let tasks: Vec<_> = (0..10)
        .map(|i| {
            let store = fx.store.clone();
            let barrier = Arc::clone(&barrier);
            // Both ways of recording race: one outcome between them.
            let durability = if i % 2 == 0 {
                NonceDurability::Immediate
            } else {
                NonceDurability::WithNextCommit
            };
            tokio::spawn(async move {
                barrier.wait().await;
                store.record_nonce(key, sub, 42, at(NOW), durability).await
            })
        })
        .collect();
    let mut fresh = 0;
    for task in tasks {
        if task.await.unwrap().unwrap() == NonceOutcome::Fresh {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1);
}

#[tokio::test]
async fn a_nonce_recorded_without_waiting_for_the_flush_leaves_its_connection_as_it_was() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let store = crate::support::one_connection_store(&fx);
    let key = ApiKeyId::from_uuid(Uuid::new_v4());
    let outcome = store
        .record_nonce(key, sub, 7, at(NOW), NonceDurability::WithNextCommit)
        .await
        .unwrap();
    assert_eq!(outcome, NonceOutcome::Fresh);
    assert_eq!(
        crate::support::session_setting(&store, "synchronous_commit").await,
        "on"
    );
}
