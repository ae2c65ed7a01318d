//! The outbox: `accountCreated` with masked identifiers, `accountUpdate` with the next sequence.

use domain::account::ports::AccountStore;
use domain::events::EventKind;
use domain::idempotency::WriteKey;

use super::{
    SECOND, T0, ach, confirmation, confirmed, confirmed_reaction, digital, direct_entry, event,
    events_of, insert, new_receiver, queued, sepa, token_of, values,
};
use crate::support::Fixture;

#[tokio::test]
async fn inserting_writes_an_account_created_event_with_masked_identifiers() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012-002", "123456789", T0);
    let created = event(EventKind::AccountCreated, &a, a.created_at);
    fx.store
        .insert_account(
            &a,
            &confirmation(&a),
            std::slice::from_ref(&created),
            &queued(&a),
            &WriteKey::none(),
        )
        .await
        .unwrap();

    let rows = events_of(&fx, &a).await;
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.id, created.id.as_uuid());
    assert_eq!(row.subaccount_id, sub.as_uuid());
    assert_eq!(row.event_type, "accountCreated");
    assert_eq!(row.sequence, 1);
    let p = &row.payload;
    assert_eq!(p["sequence"], serde_json::json!(1));
    assert_eq!(p["event"], "accountCreated");
    assert_eq!(p["receiver_account_id"], a.id.to_string());
    assert_eq!(p["receiver_id"], owner.id.to_string());
    assert_eq!(p["subaccount_id"], sub.to_string());
    assert_eq!(p["subccount_id"], sub.to_string());
    assert_eq!(p["status"], "pending");
    assert_eq!(p["confirm_status"], "unconfirmed");
    assert_eq!(p["bsb"], "012 ***");
    assert_eq!(p["account_number"], "123 ***");
    let text = p.to_string();
    for value in values(&a) {
        assert!(!text.contains(&value), "payload shows {value}: {text}");
    }

    // Other methods: identifiers masked, nothing raw anywhere in the payload.
    let others = [
        sepa(&owner, T0 + 1),
        ach(&owner, "021000021", "000123456789", "checking", T0 + 2),
        digital(&owner, "Jane.Doe@Example.com", "Jane Doe", T0 + 3),
    ];
    for a in &others {
        insert(&fx, a).await.unwrap();
        let rows = events_of(&fx, a).await;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].sequence, 1);
        let text = rows[0].payload.to_string();
        for value in values(a) {
            assert!(!text.contains(&value), "payload shows {value}: {text}");
        }
    }
    assert_eq!(
        events_of(&fx, &others[0]).await[0].payload["iban"],
        "DE8 ***"
    );
    assert_eq!(
        events_of(&fx, &others[2]).await[0].payload["recipient"],
        "jan ***"
    );
}

#[tokio::test]
async fn confirming_writes_an_account_update_event_with_the_next_sequence() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012-002", "123456789", T0);
    insert(&fx, &a).await.unwrap();
    let (updated, update) = confirmed(&a, T0 + SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated,
                Some(token_of(&a)),
                std::slice::from_ref(&update),
                &confirmed_reaction(),
                &WriteKey::none(),
            )
            .await
            .unwrap()
    );

    let rows = events_of(&fx, &a).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].event_type, "accountCreated");
    let row = &rows[1];
    assert_eq!(row.id, update.id.as_uuid());
    assert_eq!(row.event_type, "accountUpdate");
    assert_eq!(row.sequence, 2);
    assert_eq!(row.payload["sequence"], serde_json::json!(2));
    assert_eq!(row.payload["event"], "accountUpdate");
    assert_eq!(row.payload["confirm_status"], "confirmed");
    assert_eq!(row.payload["status"], "completed");
    assert_eq!(row.payload["receiver_account_id"], a.id.to_string());
    assert_eq!(row.payload["bsb"], "012 ***");
    let text = row.payload.to_string();
    for value in values(&a) {
        assert!(!text.contains(&value), "payload shows {value}: {text}");
    }
}
