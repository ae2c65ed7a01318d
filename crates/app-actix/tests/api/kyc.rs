//! KYC (docs/API.md, `POST /api/test-helpers/kyc`): the provider's decision moves the receiver,
//! once, and is announced.

use std::time::Duration;

use domain::receiver::KycOutcome;
use serde_json::json;

use crate::helpers::{TestApp, spawn_app, spawn_app_with, subaccount};
use crate::webhook_sink::WebhookSink;

async fn receiver_state(app: &TestApp, id: &str) -> (String, String) {
    let got = app.get(&app.a, &format!("/api/receiver/{id}")).await;
    let r = &got.body["payload"];
    (
        r["status"].as_str().unwrap().to_owned(),
        r["kyc_status"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn the_helper_decides_kyc_once_and_each_change_is_announced() {
    let app = spawn_app().await;
    let endpoint = WebhookSink::start(&[200]);
    app.admin
        .set_webhook(subaccount(&app.a), &endpoint.url)
        .await
        .unwrap();
    let completed = app.create_receiver(&app.a, "ada@example.com").await;
    let failed = app.create_receiver(&app.a, "bob@example.com").await;
    let decide = |id: &str, status: &str| json!({"receiver_id": id, "kyc_status": status});

    let ok = app
        .post(
            &app.a,
            "/api/test-helpers/kyc",
            &decide(&completed, "completed"),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(
        ok.body["message"],
        "Test helper: Update KYC status is successful"
    );
    assert_eq!(
        receiver_state(&app, &completed).await,
        ("active".to_owned(), "completed".to_owned())
    );
    app.post(&app.a, "/api/test-helpers/kyc", &decide(&failed, "failed"))
        .await;
    assert_eq!(
        receiver_state(&app, &failed).await,
        ("failed".to_owned(), "failed".to_owned())
    );

    let again = app
        .post(
            &app.a,
            "/api/test-helpers/kyc",
            &decide(&completed, "failed"),
        )
        .await;
    assert_eq!(again.codes(), ["REVR301"]);
    assert_eq!(
        receiver_state(&app, &completed).await.1,
        "completed",
        "a decided check stays decided"
    );
    let bad = app
        .post(
            &app.a,
            "/api/test-helpers/kyc",
            &decide(&completed, "approved"),
        )
        .await;
    assert_eq!(bad.codes(), ["REQ009"]);
    let foreign = app
        .post(
            &app.b,
            "/api/test-helpers/kyc",
            &decide(&completed, "completed"),
        )
        .await;
    assert_eq!(foreign.codes(), ["REVR101"]);

    // Two receiverCreated and two receiverKycUpdate events, in order per receiver.
    let got = endpoint.wait_for(4, Duration::from_secs(20)).await;
    let updates: Vec<_> = got
        .iter()
        .map(|r| r.json())
        .filter(|b| b["event"] == "receiverKycUpdate")
        .collect();
    assert_eq!(updates.len(), 2);
    let ada = updates
        .iter()
        .find(|b| b["receiver_id"] == completed.as_str())
        .unwrap();
    assert_eq!(
        (ada["kyc_status"].as_str(), ada["status"].as_str()),
        (Some("completed"), Some("active"))
    );
    assert_eq!(
        ada["sequence"], 2,
        "the update follows receiverCreated (sequence 1)"
    );
    let filtered = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&kyc_status=1",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(filtered.body["payload"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn the_sandbox_provider_decides_by_itself_after_its_delay() {
    let app = spawn_app_with(|config| {
        config.sandbox_kyc = Some((Duration::from_millis(100), KycOutcome::Completed));
    })
    .await;
    let id = app.create_receiver(&app.a, "ada@example.com").await;
    // Ample for a loaded machine: the loop ends as soon as the decision is recorded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while receiver_state(&app, &id).await.1 != "completed" && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        receiver_state(&app, &id).await,
        ("active".to_owned(), "completed".to_owned())
    );
}
