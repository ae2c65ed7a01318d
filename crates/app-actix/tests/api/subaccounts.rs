//! Subaccount and balance reads.

use crate::helpers::{spawn_app, subaccount};

#[tokio::test]
async fn the_callers_subaccount_in_the_seed_shape() {
    let app = spawn_app().await;
    let reply = app
        .get(&app.a, &format!("/api/subaccount/{}", app.a.subaccount_id))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["message"], "Subaccount found");
    let s = &reply.body["payload"];
    assert_eq!(s["id"], app.a.subaccount_id.as_str());
    assert_eq!(s["suba_name"], "Tenant A");
    assert_eq!(s["kassi_status"], "ACCEPTED");
    assert_eq!(s["has_passed_kyc"], "N/A");
    for key in [
        "merchant_id",
        "address_data",
        "postback_url",
        "home_phone_international_dialcode",
        "created_at",
    ] {
        assert!(s.get(key).is_some(), "missing {key}");
    }
}

#[tokio::test]
async fn balances_by_asset() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "12345", "test funding")
        .await
        .unwrap();
    app.admin
        .fund(subaccount(&app.a), "aud", "5", "test funding")
        .await
        .unwrap();
    let path = |asset: &str| {
        format!(
            "/api/subaccount/balance/{}?asset={asset}",
            app.a.subaccount_id
        )
    };
    let aud = app.get(&app.a, &path("aud")).await;
    assert_eq!(aud.status, 200);
    assert_eq!(aud.body["message"], "Balance found");
    assert_eq!(
        aud.body["payload"],
        serde_json::json!({"available": 12350, "pending": 0, "asset": "AUD"})
    );
    let nzd = app.get(&app.a, &path("NZD")).await;
    assert_eq!(
        nzd.body["payload"],
        serde_json::json!({"available": 0, "pending": 0, "asset": "NZD"})
    );
    assert_eq!(app.get(&app.a, &path("GBP")).await.codes(), ["SUBA304"]);
    assert_eq!(app.get(&app.a, &path("")).await.codes(), ["SUBA303"]);
    let no_asset = app
        .get(
            &app.a,
            &format!("/api/subaccount/balance/{}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(no_asset.codes(), ["SUBA303"]);
}

#[tokio::test]
async fn balance_queries_take_one_asset_and_nothing_else() {
    let app = spawn_app().await;
    let base = format!("/api/subaccount/balance/{}", app.a.subaccount_id);
    let unknown = app
        .get(&app.a, &format!("{base}?asset=AUD&currency=AUD"))
        .await;
    assert_eq!(
        (unknown.status, unknown.codes()),
        (400, vec!["REQ005".to_owned()])
    );
    let twice = app
        .get(&app.a, &format!("{base}?asset=AUD&asset=USD"))
        .await;
    assert_eq!(twice.codes(), ["REQ002"]);
}
