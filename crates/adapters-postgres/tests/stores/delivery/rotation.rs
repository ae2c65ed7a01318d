//! Webhook secret rotation: new then old until the overlap ends.

use domain::delivery::ports::WebhookEndpointStore;
use domain::error::OperatorError;
use domain::ids::SubaccountId;
use uuid::Uuid;

use super::{NEW_SECRET, SECRET, URL, claim_one, event_at, exposed, hooked, secret, t};
use crate::support::{Fixture, audit_entry};

#[tokio::test]
async fn rotation_signs_with_new_then_old_until_the_overlap_ends() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let id = event_at(&fx, sub, t(0)).await;
    let now = t(1);
    fx.store
        .rotate_webhook_secret(
            sub,
            &secret(NEW_SECRET),
            now + chrono::Duration::hours(1),
            &audit_entry(),
        )
        .await
        .unwrap();

    let claimed = claim_one(&fx, now).await;
    assert_eq!(
        exposed(&claimed),
        vec![NEW_SECRET.to_owned(), SECRET.to_owned()]
    );
    assert_eq!(claimed.url, URL);

    // After the overlap (the first claim's lease is over too), only the new secret.
    let after = claim_one(&fx, now + chrono::Duration::hours(2)).await;
    assert_eq!(after.event_id, id);
    assert_eq!(exposed(&after), vec![NEW_SECRET.to_owned()]);
}

#[tokio::test]
async fn rotation_with_an_overlap_already_over_signs_with_the_new_secret_only() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    event_at(&fx, sub, t(0)).await;
    let now = t(1);
    fx.store
        .rotate_webhook_secret(
            sub,
            &secret(NEW_SECRET),
            now - chrono::Duration::seconds(1),
            &audit_entry(),
        )
        .await
        .unwrap();
    let claimed = claim_one(&fx, now).await;
    assert_eq!(exposed(&claimed), vec![NEW_SECRET.to_owned()]);
}

#[tokio::test]
async fn rotation_needs_an_existing_webhook_and_subaccount() {
    let fx = Fixture::new().await;
    let bare = fx.subaccount("Bare").await.id;
    let err = fx
        .store
        .rotate_webhook_secret(bare, &secret(NEW_SECRET), t(3600), &audit_entry())
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::NoWebhook), "{err:?}");
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM webhook_endpoints WHERE subaccount_id = $1",
            bare.as_uuid()
        )
        .await,
        0
    );

    let unknown = SubaccountId::from_uuid(Uuid::new_v4());
    let err = fx
        .store
        .rotate_webhook_secret(unknown, &secret(NEW_SECRET), t(3600), &audit_entry())
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
}
