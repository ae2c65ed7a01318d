//! Duplicate details: refused, writing nothing, also when inserted concurrently.

use std::sync::Arc;

use domain::account::ports::{AccountStore, InsertAccountError};
use domain::account::{AccountField, PayoutMethod};
use domain::events::EventKind;
use domain::idempotency::WriteKey;

use super::{
    SECOND, T0, account, account_created_rows, account_rows_of_receiver, ach, confirmation,
    digital, direct_entry, event, insert, new_receiver, outbox_rows_of, queued, token_of,
    token_rows,
};
use crate::support::{Fixture, at};

#[tokio::test]
async fn the_same_details_for_one_receiver_are_a_duplicate_and_write_nothing() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let first = direct_entry(&owner, "012-002", "123456789", T0);
    insert(&fx, &first).await.unwrap();
    let email = digital(&owner, "jane@example.com", "Jane", T0 + 1);
    insert(&fx, &email).await.unwrap();
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 2);

    // The same values spelled differently normalise alike; the name and description of a
    // digital account are not matchable, so they do not make it different.
    let again = [
        direct_entry(&owner, "012002", " 123456789 ", T0 + SECOND),
        direct_entry(&owner, "012 002", "123456789", T0 + SECOND),
        digital(&owner, "JANE@Example.COM", "Someone Else", T0 + SECOND),
    ];
    for dup in &again {
        let err = insert(&fx, dup).await.unwrap_err();
        assert!(matches!(err, InsertAccountError::Duplicate), "{err:?}");
        // Nothing of it was written: no account, no token, no event.
        assert!(fx.store.find_account(sub, dup.id).await.unwrap().is_none());
        assert!(fx.store.find_token(&token_of(dup)).await.unwrap().is_none());
        assert_eq!(outbox_rows_of(&fx, dup).await, 0);
    }
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 2);
    assert_eq!(token_rows(&fx, sub).await, 2);
    assert_eq!(account_created_rows(&fx, sub).await, 2);

    // Different details of the same receiver are fine: one value differs...
    insert(&fx, &direct_entry(&owner, "012002", "123456780", T0 + 2))
        .await
        .unwrap();
    insert(
        &fx,
        &ach(&owner, "000312345", "1234567", "checking", T0 + 3),
    )
    .await
    .unwrap();
    insert(&fx, &ach(&owner, "000312345", "1234567", "savings", T0 + 4))
        .await
        .unwrap();
    // ...or the method does (an EFT account with exactly the ACH account's values).
    let eft = account(
        &owner,
        PayoutMethod::Eft,
        &[
            ("routing_number", "12345-003"),
            ("account_number", "1234567"),
            ("account_type", "checking"),
        ],
        at(T0 + 5),
    );
    assert_eq!(
        eft.data.expose(AccountField::RoutingNumber),
        Some("000312345"),
        "same normalised routing number as the ACH account"
    );
    insert(&fx, &eft).await.unwrap();
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 6);

    // The same details for another receiver (of this or another subaccount) are fine.
    let other = fx.subaccount("Other").await.id;
    let neighbour = new_receiver(&fx, sub, "grace@example.com").await;
    let foreign = new_receiver(&fx, other, "ada@example.com").await;
    insert(
        &fx,
        &direct_entry(&neighbour, "012-002", "123456789", T0 + 6),
    )
    .await
    .unwrap();
    insert(&fx, &direct_entry(&foreign, "012-002", "123456789", T0 + 7))
        .await
        .unwrap();
    assert_eq!(account_rows_of_receiver(&fx, &neighbour).await, 1);
    assert_eq!(account_rows_of_receiver(&fx, &foreign).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_of_the_same_details_store_exactly_one() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8_i64)
        .map(|i| {
            let store = fx.store.clone();
            let barrier = Arc::clone(&barrier);
            // Different ids and tokens, the same details (spelled two ways).
            let bsb = if i % 2 == 0 { "012-002" } else { "012002" };
            let a = direct_entry(&owner, bsb, "123456789", T0 + i);
            tokio::spawn(async move {
                let token = confirmation(&a);
                let events = [event(EventKind::AccountCreated, &a, a.created_at)];
                barrier.wait().await;
                store
                    .insert_account(&a, &token, &events, &queued(&a), &WriteKey::none())
                    .await
            })
        })
        .collect();
    let mut ok = 0;
    let mut duplicate = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => ok += 1,
            Err(InsertAccountError::Duplicate) => duplicate += 1,
            Err(e) => panic!("unexpected error: {e:?}"),
        }
    }
    assert_eq!((ok, duplicate), (1, 7));
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 1);
    assert_eq!(token_rows(&fx, sub).await, 1);
    assert_eq!(account_created_rows(&fx, sub).await, 1);
    assert_eq!(
        crate::notifications::rows(&fx, sub).await,
        1,
        "only the stored account's confirmation request is queued"
    );
}
