//! Confirmation tokens and confirming: once, every token spent, concurrent confirmations
//! applied exactly once.

use std::sync::Arc;

use diesel::sql_types::{Bytea, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::account::ports::AccountStore;
use domain::account::service::token_hash;
use domain::account::{AccountStatus, ConfirmStatus, ReceiverAccount};
use domain::idempotency::WriteKey;

use super::{
    SECOND, T0, assert_same, confirmation, confirmed, confirmed_reaction, direct_entry, events_of,
    insert, new_receiver, outbox_rows_of, sepa, token_of,
};
use crate::support::{Fixture, at};

#[tokio::test]
async fn find_token_returns_the_account_and_the_tokens_state() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = sepa(&owner, T0);
    let b = direct_entry(&owner, "012002", "123456789", T0 + 1);
    insert(&fx, &a).await.unwrap();
    insert(&fx, &b).await.unwrap();

    let found = fx
        .store
        .find_token(&token_of(&a))
        .await
        .unwrap()
        .expect("token");
    assert_same(&found.account, &a);
    assert_eq!(found.expires_at, confirmation(&a).expires_at);
    assert!(!found.used);
    let found = fx.store.find_token(&token_of(&b)).await.unwrap().unwrap();
    assert_eq!(found.account.id, b.id);

    // Unknown hashes.
    assert!(
        fx.store
            .find_token(&token_hash("no such token"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(fx.store.find_token(&[0; 32]).await.unwrap().is_none());
}

#[tokio::test]
async fn confirm_account_applies_once_then_writes_nothing() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012002", "123456789", T0);
    let b = sepa(&owner, T0 + 1);
    insert(&fx, &a).await.unwrap();
    insert(&fx, &b).await.unwrap();
    let hash = token_of(&a);

    // Another account's token does not confirm this one, and is not used up.
    let (updated, update) = confirmed(&a, T0 + SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &updated,
                Some(token_of(&b)),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    assert!(
        !fx.store
            .find_token(&token_of(&b))
            .await
            .unwrap()
            .unwrap()
            .used
    );
    assert_eq!(outbox_rows_of(&fx, &a).await, 1);

    let (updated, update) = confirmed(&a, T0 + 2 * SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated,
                Some(hash),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    let token = fx.store.find_token(&hash).await.unwrap().unwrap();
    assert!(token.used);
    assert_same(&token.account, &updated);
    let stored = fx.store.find_account(sub, a.id).await.unwrap().unwrap();
    assert_eq!(stored.status, AccountStatus::Completed);
    assert_eq!(stored.confirm_status, ConfirmStatus::Confirmed);
    assert_eq!(stored.updated_at, at(T0 + 2 * SECOND));
    assert_same(&stored, &updated);
    assert_eq!(outbox_rows_of(&fx, &a).await, 2);

    // The same call again: the token is used, nothing is written.
    let (again, update) = confirmed(&a, T0 + 3 * SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &again,
                Some(hash),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    // Without a token, on the confirmed account: refused too.
    let (again, update) = confirmed(&a, T0 + 4 * SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &again,
                None,
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    assert_eq!(outbox_rows_of(&fx, &a).await, 2);
    let stored = fx.store.find_account(sub, a.id).await.unwrap().unwrap();
    assert_eq!(stored.updated_at, at(T0 + 2 * SECOND), "not written again");

    // Without a token (the sandbox helper): confirms, and spends the account's token too.
    let (updated_b, update) = confirmed(&b, T0 + 5 * SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated_b,
                None,
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    let token = fx.store.find_token(&token_of(&b)).await.unwrap().unwrap();
    assert!(token.used, "a confirmed account's links are spent");
    assert_eq!(token.account.confirm_status, ConfirmStatus::Confirmed);
    // Its token cannot confirm it a second time.
    let (again, update) = confirmed(&b, T0 + 6 * SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &again,
                Some(token_of(&b)),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    assert_eq!(outbox_rows_of(&fx, &b).await, 2);
}

/// Adds another confirmation token (text `text`) to `account`, as a resent link would.
async fn add_token(fx: &Fixture, account: &ReceiverAccount, text: &str) {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "INSERT INTO account_confirmations (token_hash, account_id, subaccount_id, expires_at, created_at) \
         VALUES ($1, $2, $3, now() + interval '7 days', now())",
    )
    .bind::<Bytea, _>(token_hash(text).to_vec())
    .bind::<SqlUuid, _>(account.id.as_uuid())
    .bind::<SqlUuid, _>(account.subaccount_id.as_uuid())
    .execute(&mut conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn confirming_spends_every_token_of_the_account_and_looking_one_up_spends_none() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012002", "123456789", T0);
    let other = sepa(&owner, T0 + 1);
    insert(&fx, &a).await.unwrap();
    insert(&fx, &other).await.unwrap();
    add_token(&fx, &a, "second link").await;

    // Looking tokens up, however often, spends nothing.
    for _ in 0..3 {
        assert!(
            !fx.store
                .find_token(&token_of(&a))
                .await
                .unwrap()
                .unwrap()
                .used
        );
        let second = fx.store.find_token(&token_hash("second link")).await;
        assert!(!second.unwrap().unwrap().used);
    }

    let (updated, update) = confirmed(&a, T0 + SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated,
                Some(token_of(&a)),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    for hash in [token_of(&a), token_hash("second link")] {
        let token = fx.store.find_token(&hash).await.unwrap().unwrap();
        assert!(token.used);
        assert_eq!(token.account.confirm_status, ConfirmStatus::Confirmed);
    }
    // Another account's token is untouched.
    assert!(
        !fx.store
            .find_token(&token_of(&other))
            .await
            .unwrap()
            .unwrap()
            .used
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_confirmations_apply_exactly_once() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    // Both with the token, both without, one of each; a few rounds each.
    let rounds: [(bool, bool); 6] = [
        (true, true),
        (true, true),
        (true, true),
        (false, false),
        (true, false),
        (false, true),
    ];
    for (round, (first_token, second_token)) in (0_i64..).zip(rounds) {
        let a = direct_entry(&owner, "012002", &(10_000_000 + round).to_string(), T0);
        insert(&fx, &a).await.unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let tasks: Vec<_> = [first_token, second_token]
            .into_iter()
            .map(|with_token| {
                let store = fx.store.clone();
                let barrier = Arc::clone(&barrier);
                let (updated, update) = confirmed(&a, T0 + SECOND);
                let token = with_token.then(|| token_of(&a));
                tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .confirm_account(
                            &updated,
                            token,
                            &[update],
                            &confirmed_reaction(),
                            &WriteKey::none(),
                        )
                        .await
                })
            })
            .collect();
        let mut applied = 0;
        for task in tasks {
            if task.await.unwrap().unwrap() {
                applied += 1;
            }
        }
        assert_eq!(applied, 1, "round {round}");
        let updates = events_of(&fx, &a)
            .await
            .into_iter()
            .filter(|e| e.event_type == "accountUpdate")
            .count();
        assert_eq!(updates, 1, "round {round}");
        let stored = fx.store.find_account(sub, a.id).await.unwrap().unwrap();
        assert_eq!(stored.confirm_status, ConfirmStatus::Confirmed);
        assert_eq!(stored.status, AccountStatus::Completed);
    }
}
