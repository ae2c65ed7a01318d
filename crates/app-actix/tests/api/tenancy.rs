//! Tenancy (docs/API.md, Tenancy): a tenant sees only its own receivers, balances and subaccount,
//! and another tenant's resources answer exactly like missing ones.

use crate::helpers::{receiver_body, spawn_app, subaccount};

#[tokio::test]
async fn each_tenant_sees_only_its_own_resources() {
    let app = spawn_app().await;
    let a_receiver = app.create_receiver(&app.a, "a@example.com").await;
    let b_receiver = app.create_receiver(&app.b, "b@example.com").await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();

    let foreign = app
        .get(&app.b, &format!("/api/receiver/{a_receiver}"))
        .await;
    let missing = app
        .get(&app.b, "/api/receiver/00000000-0000-4000-8000-000000000000")
        .await;
    assert_eq!(foreign.status, missing.status);
    assert_eq!(foreign.body, missing.body);
    assert_eq!(foreign.codes(), ["REVR101"]);

    let b_list = app
        .get(
            &app.b,
            &format!("/api/receiver?subaccount_id={}", app.b.subaccount_id),
        )
        .await;
    let listed: Vec<_> = b_list.body["payload"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].clone())
        .collect();
    assert_eq!(listed, [serde_json::Value::from(b_receiver)]);
    let a_list_by_b = app
        .get(
            &app.b,
            &format!("/api/receiver?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(a_list_by_b.codes(), ["SUBA101"]);

    let unknown = "00000000-0000-4000-8000-000000000000";
    for path in [
        format!("/api/subaccount/{}", app.a.subaccount_id),
        format!("/api/subaccount/{unknown}"),
        format!("/api/subaccount/balance/{}?asset=AUD", app.a.subaccount_id),
        format!("/api/subaccount/balance/{unknown}?asset=AUD"),
    ] {
        let reply = app.get(&app.b, &path).await;
        assert_eq!(
            (reply.status, reply.codes()),
            (400, vec!["SUBA101".to_owned()]),
            "{path}"
        );
    }

    let into_a = app
        .post(
            &app.b,
            "/api/receiver",
            &receiver_body(&app.a, "intruder@example.com"),
        )
        .await;
    assert_eq!(into_a.codes(), ["SUBA101"]);
    let a_list = app
        .get(
            &app.a,
            &format!("/api/receiver?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(a_list.body["payload"].as_array().map(Vec::len), Some(1));
}
