//! Rotating the master key while serving (docs/OPERATIONS.md, Rotating the master key): an
//! instance with the new key and the previous one answers for accounts and API keys made
//! under either, before and after `rotate-master-key`; afterwards the new key alone does;
//! list cursors sealed under the old key expire.

use std::sync::Arc;
use std::time::Duration;

use adapters_postgres::PgStore;
use app_actix::startup::build_store;
use app_actix::system::{RandomIds, SystemClock};
use domain::admin::{AdminPorts, AdminService};
use domain::masking::Secret;
use serde_json::json;

use crate::helpers::{TestApp, spawn_app, tenant};

fn admin_of(store: PgStore) -> AdminService {
    AdminService::new(
        AdminPorts::all(
            Arc::new(store),
            Arc::new(adapters_webhook::guard::TargetGuard::new(true)),
        ),
        Arc::new(SystemClock),
        Arc::new(RandomIds::default()),
        domain::audit::AuditContext::cli(Some("test")),
    )
}

/// `app`'s account, read through its current base URL.
async fn account_reads(app: &TestApp, tenant: &crate::helpers::Tenant, id: &str) {
    let reply = app
        .get(tenant, &format!("/api/receiver-account/{id}"))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["payload"]["id"], id);
    assert_eq!(reply.body["payload"]["method_name"], "direct-entry");
}

#[tokio::test]
async fn an_instance_with_both_keys_serves_old_and_new_data_through_the_rotation() {
    let mut app = spawn_app().await;
    // Under the old key: tenant A's API key, an account, a list cursor.
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    app.create_receiver(&app.a, "bob@example.com").await;
    let old_account = app.create_account(&app.a, &receiver).await;
    let page = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&limit=1",
                app.a.subaccount_id
            ),
        )
        .await;
    let old_cursor = page.body["lastkey"].as_str().unwrap().to_owned();

    // Every instance restarts with a new current key and the old one as previous.
    let old_key = app.config.master_key.clone();
    app.config.master_key = Secret::new([0x5a; 32]);
    app.config.previous_master_key = Some(old_key);
    app.base = app.second_instance();
    app.admin = admin_of(build_store(&app.config).unwrap());
    account_reads(&app, &app.a, &old_account).await;
    let c = tenant(&app.admin, "Tenant C").await;
    let c_receiver = app.create_receiver(&c, "carol@example.com").await;
    let new_account = app.create_account(&c, &c_receiver).await;
    account_reads(&app, &c, &new_account).await;
    // Duplicates of accounts fingerprinted under the old key are still duplicates.
    let again = app
        .post(
            &app.a,
            "/api/receiver-account/aud/direct-entry",
            &json!({"receiver_id": receiver, "bsb": "012-002", "account_number": "123456789"}),
        )
        .await;
    assert_eq!(again.codes(), ["REAC230"]);
    verify_finds(&app, &old_account).await;
    // List cursors are sealed by the current key only: one from before the restart expires
    // (the client starts the listing again).
    let expired = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&lastkey={old_cursor}",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(expired.codes(), ["REQ003"], "{}", expired.body);

    // The rotation, while the instance serves.
    let summary = build_store(&app.config)
        .unwrap()
        .rotate_master_key(1, Duration::ZERO, |_, _| {})
        .await
        .unwrap();
    assert!(summary.complete(), "{summary:?}");
    account_reads(&app, &app.a, &old_account).await;
    account_reads(&app, &c, &new_account).await;

    // The previous key removed: everything made under either key still serves.
    app.config.previous_master_key = None;
    app.base = app.second_instance();
    account_reads(&app, &app.a, &old_account).await;
    account_reads(&app, &app.b, &{
        let r = app.create_receiver(&app.b, "dan@example.com").await;
        app.create_account(&app.b, &r).await
    })
    .await;
    account_reads(&app, &c, &new_account).await;
    verify_finds(&app, &old_account).await;
}

/// Verify (a fingerprint lookup) finds tenant A's account by its details.
async fn verify_finds(app: &TestApp, account: &str) {
    let verified = app
        .post(
            &app.a,
            "/api/receiver-account/verify",
            &json!({
                "subaccount_id": app.a.subaccount_id,
                "account_data": {"bsb": "012002", "account_number": "123456789"},
            }),
        )
        .await;
    assert_eq!(verified.status, 200, "{}", verified.body);
    assert_eq!(verified.body["exists"], true, "{}", verified.body);
    assert_eq!(verified.body["account_id"], account);
}
