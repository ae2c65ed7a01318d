//! Server bugs that `cargo xtask fuzz` (schemathesis) found or led to, kept fixed.

use serde_json::json;

use crate::helpers::{receiver_body, spawn_app, subaccount};

/// Was 500 `SYS500`: PostgreSQL refused the NUL in the filter ("invalid byte sequence").
#[tokio::test]
async fn a_nul_in_a_query_parameter_is_400_not_500() {
    let app = spawn_app().await;
    for path in [
        format!(
            "/api/receiver?subaccount_id={}&city=%00J",
            app.a.subaccount_id
        ),
        format!(
            "/api/payout/?subaccount_id={}&reference=a%00",
            app.a.subaccount_id
        ),
    ] {
        let reply = app.get(&app.a, &path).await;
        assert_eq!(reply.status, 400, "{path}: {}", reply.body);
        assert_eq!(reply.codes(), ["REQ002"], "{path}");
    }
}

/// A NUL in a body string would have reached PostgreSQL (a 500) in any free-text field.
#[tokio::test]
async fn a_nul_in_a_body_string_is_400_req009() {
    let app = spawn_app().await;
    let mut body = receiver_body(&app.a, "nul@example.com");
    body["state"] = json!("N\u{0}SW");
    let reply = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.codes(), ["REQ009"]);
    assert_eq!(reply.body["error"][0]["field"], "state");

    let (receiver, account) = app.payee(&app.a, "payee@example.com", true, false).await;
    let reply = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": 100,
                    "currency": "AUD", "note": "\u{0}"}),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.codes(), ["REQ009"]);

    let verify = app
        .post(
            &app.a,
            "/api/receiver-account/verify",
            &json!({"subaccount_id": app.a.subaccount_id, "account_data": {"bsb": "01\u{0}"}}),
        )
        .await;
    assert_eq!(verify.status, 400, "{}", verify.body);
}

/// Was: the receiver was stored, then the request answered 400 `REQ005`; the corrected retry
/// then failed with `REVR201` (e-mail taken).
#[tokio::test]
async fn a_receiver_body_with_an_unknown_field_stores_nothing() {
    let app = spawn_app().await;
    let mut body = receiver_body(&app.a, "once@example.com");
    body["nickname"] = json!("Ada");
    let reply = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.codes(), ["REQ005"]);

    let listed = app
        .get(
            &app.a,
            &format!("/api/receiver?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(listed.body["payload"], json!([]), "nothing was stored");
    let retry = app
        .post(
            &app.a,
            "/api/receiver",
            &receiver_body(&app.a, "once@example.com"),
        )
        .await;
    assert_eq!(retry.status, 200, "{}", retry.body);

    // Shape problems are still reported together with the field checks.
    let mut both = receiver_body(&app.a, "not-an-email");
    both["first_name"] = json!(5);
    let reply = app.post(&app.a, "/api/receiver", &both).await;
    assert_eq!(reply.codes(), ["REQ004", "REVR214"], "{}", reply.body);
}

/// Was: the payout was stored and its money held, then the request answered 400.
#[tokio::test]
async fn a_payout_body_with_an_unknown_field_holds_nothing() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "payee@example.com", true, false).await;
    let reply = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": 100,
                    "currency": "AUD", "extra": "x"}),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.codes(), ["REQ005"]);
    let listed = app
        .get(
            &app.a,
            &format!("/api/payout/?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(listed.body["payload"], json!([]), "nothing was stored");
    let balance = app
        .get(
            &app.a,
            &format!("/api/subaccount/balance/{}?asset=AUD", app.a.subaccount_id),
        )
        .await;
    assert_eq!(balance.body["payload"]["available"], 100_000);
    assert_eq!(balance.body["payload"]["pending"], 0);
}

/// Was: the account was stored (and its confirmation sent), then the request answered 400.
#[tokio::test]
async fn an_account_body_with_an_unknown_field_stores_nothing() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "acct@example.com").await;
    let reply = app
        .post(
            &app.a,
            "/api/receiver-account/aud/direct-entry",
            &json!({"receiver_id": receiver, "bsb": "012002", "account_number": "123456789",
                    "iban": "x"}),
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.codes(), ["REQ005"]);
    let listed = app
        .get(
            &app.a,
            &format!("/api/receiver-account/receiver/{receiver}"),
        )
        .await;
    assert_eq!(listed.body["payload"], json!([]), "nothing was stored");
}
