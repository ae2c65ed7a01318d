//! Round trip, tenancy and listing.

use domain::account::ports::AccountStore;
use domain::account::{AccountField, PayoutMethod};
use domain::ids::ReceiverAccountId;
use uuid::Uuid;

use super::{
    SECOND, T0, account, ach, assert_same, digital, direct_entry, ids, insert, new_receiver, sepa,
};
use crate::support::{Fixture, at};

#[tokio::test]
async fn inserted_account_is_found_by_its_own_subaccount_only() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;

    let accounts = [
        direct_entry(&owner, "012-002", "123456789", T0),
        ach(&owner, "021000021", "000123456789", "Checking", T0 + 1),
        account(
            &owner,
            PayoutMethod::Eft,
            &[
                ("routing_number", "12345-003"),
                ("account_number", "1234567"),
                ("account_type", "SAVINGS"),
            ],
            at(T0 + 2),
        ),
        digital(&owner, "Jane.Doe@Example.com", " Jane Doe ", T0 + 3),
        sepa(&owner, T0 + 4),
        account(
            &owner,
            PayoutMethod::DirectCredit,
            &[("account_number", "01-902-0068389-00")],
            at(T0 + 5),
        ),
    ];
    for a in &accounts {
        insert(&fx, a).await.unwrap();
    }
    for a in &accounts {
        let found = fx
            .store
            .find_account(sub, a.id)
            .await
            .unwrap()
            .expect("stored account");
        assert_same(&found, a);
        // Tenancy: another subaccount does not see it.
        assert!(fx.store.find_account(other, a.id).await.unwrap().is_none());
    }
    // In one read: every account asked for, decrypted as one by one; an unknown id and
    // another subaccount's accounts are left out.
    let mut asked: Vec<ReceiverAccountId> = accounts.iter().map(|a| a.id).collect();
    asked.push(ReceiverAccountId::from_uuid(Uuid::new_v4()));
    let found = fx.store.find_accounts(sub, &asked).await.unwrap();
    assert_eq!(found.len(), accounts.len());
    for a in &accounts {
        assert_same(found.iter().find(|f| f.id == a.id).expect("in the set"), a);
    }
    assert!(
        fx.store
            .find_accounts(other, &asked)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(fx.store.find_accounts(sub, &[]).await.unwrap().is_empty());
    // The normalised values are what is stored.
    let de = fx.store.find_account(sub, accounts[0].id).await.unwrap();
    assert_eq!(
        de.unwrap().data.expose_pairs(),
        vec![
            (AccountField::Bsb, "012002"),
            (AccountField::AccountNumber, "123456789")
        ]
    );
    // Unknown id.
    let unknown = ReceiverAccountId::from_uuid(Uuid::new_v4());
    assert!(fx.store.find_account(sub, unknown).await.unwrap().is_none());
}

#[tokio::test]
async fn list_accounts_returns_the_receivers_accounts_oldest_first() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let neighbour = new_receiver(&fx, sub, "grace@example.com").await;
    let foreign = new_receiver(&fx, other, "ada@example.com").await;

    // Inserted out of time order: the listing must sort by creation time.
    let newest = direct_entry(&owner, "012002", "11111111", T0 + 3 * SECOND);
    let oldest = sepa(&owner, T0);
    let middle = ach(&owner, "021000021", "22222222", "savings", T0 + SECOND);
    for a in [&newest, &oldest, &middle] {
        insert(&fx, a).await.unwrap();
    }
    // Accounts of another receiver of the subaccount and of a receiver of another subaccount,
    // interleaved in time.
    insert(
        &fx,
        &direct_entry(&neighbour, "012002", "33333333", T0 + 2 * SECOND),
    )
    .await
    .unwrap();
    insert(&fx, &sepa(&foreign, T0 - SECOND)).await.unwrap();

    let listed = fx.store.list_accounts(sub, owner.id).await.unwrap();
    assert_eq!(ids(&listed), vec![oldest.id, middle.id, newest.id]);
    for (found, expected) in listed.iter().zip([&oldest, &middle, &newest]) {
        assert_same(found, expected);
    }

    assert_eq!(
        fx.store
            .list_accounts(sub, neighbour.id)
            .await
            .unwrap()
            .len(),
        1
    );
    // Another subaccount sees nothing of this receiver, and this one nothing of theirs.
    assert!(
        fx.store
            .list_accounts(other, owner.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        fx.store
            .list_accounts(sub, foreign.id)
            .await
            .unwrap()
            .is_empty()
    );
    let theirs = fx.store.list_accounts(other, foreign.id).await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].subaccount_id, other);
    // A receiver without accounts.
    let lonely = new_receiver(&fx, sub, "lonely@example.com").await;
    assert!(
        fx.store
            .list_accounts(sub, lonely.id)
            .await
            .unwrap()
            .is_empty()
    );
}
