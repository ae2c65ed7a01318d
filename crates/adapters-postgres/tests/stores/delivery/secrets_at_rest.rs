//! Webhook secrets at rest: never stored in plain text.

use domain::delivery::ports::WebhookEndpointStore;

use super::{NEW_SECRET, SECRET, contains, endpoint_row, hooked, secret, t};
use crate::support::{Fixture, audit_entry};

#[tokio::test]
async fn webhook_secrets_are_never_stored_in_plain_text() {
    let fx = Fixture::new().await;
    let sub = hooked(&fx, "Acme").await;
    let row = endpoint_row(&fx, sub).await;
    assert!(!contains(&row.secret, SECRET));
    assert_eq!(row.previous_secret, None);

    let until = t(3600);
    fx.store
        .rotate_webhook_secret(sub, &secret(NEW_SECRET), until, &audit_entry())
        .await
        .unwrap();
    let row = endpoint_row(&fx, sub).await;
    let previous = row
        .previous_secret
        .expect("the previous secret is kept during the overlap");
    assert_eq!(row.previous_until, Some(until));
    for stored in [&row.secret, &previous] {
        assert!(stored.len() > NEW_SECRET.len());
        assert!(!contains(stored, SECRET));
        assert!(!contains(stored, NEW_SECRET));
    }
    assert_ne!(row.secret, previous);
}
