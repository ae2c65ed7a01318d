//! Snapshots of response bodies (insta), to see the whole shape of what a client gets and to
//! notice any change to it. The other tests check what the values mean; these check that nothing
//! else moved. Generated values (ids, timestamps, keys, cursors) are redacted after their format
//! is checked, so the snapshots are stable; an id the test knows is shown by its name (e.g.
//! `[receiver]`), so a snapshot also shows which object each id points at.
//!
//! A changed body fails with a diff. If the change is intended, review it and accept it:
//! `INSTA_UPDATE=always cargo test -p app-actix --test api bodies` rewrites the `.snap` files
//! under `snapshots/` (or `cargo insta review`, if installed). Under `CI=true` insta never
//! writes snapshots, so a new one must be committed.

use insta::assert_json_snapshot;
use insta::internals::Redaction;
use serde_json::json;

use crate::helpers::{receiver_body, spawn_app, subaccount};

/// A generated id: checked to be a UUID, then shown as `[name]` when it is one of `known`
/// (value, name), else as `[uuid]`.
fn id(known: &[(&str, &str)]) -> Redaction {
    let known: Vec<(String, String)> = known
        .iter()
        .map(|(value, name)| ((*value).to_owned(), format!("[{name}]")))
        .collect();
    insta::dynamic_redaction(move |value, path| {
        let text = value.as_str().unwrap_or_default().to_owned();
        assert!(uuid::Uuid::parse_str(&text).is_ok(), "{path}: {value:?}");
        known
            .iter()
            .find(|(known, _)| *known == text)
            .map_or_else(|| "[uuid]".to_owned(), |(_, name)| name.clone())
    })
}

/// A timestamp in Unix milliseconds as a 13-digit string.
fn millis() -> Redaction {
    insta::dynamic_redaction(|value, path| {
        let text = value.as_str().unwrap_or_default();
        assert!(
            text.len() == 13 && text.bytes().all(|b| b.is_ascii_digit()),
            "{path}: {value:?}"
        );
        "[millis]"
    })
}

/// A generated value: `prefix` and then `rest` (a check of what follows), shown as
/// `<prefix>[shown]`.
fn prefixed(prefix: &'static str, rest: fn(&str) -> bool, shown: &'static str) -> Redaction {
    insta::dynamic_redaction(move |value, path| {
        let text = value.as_str().unwrap_or_default();
        assert!(
            text.strip_prefix(prefix).is_some_and(rest),
            "{path}: {value:?}"
        );
        format!("{prefix}[{shown}]")
    })
}

fn is_uuid(text: &str) -> bool {
    uuid::Uuid::parse_str(text).is_ok()
}

/// The sandbox KYC provider's applicant ids: `sbx_app_` and 32 hex digits.
fn applicant() -> Redaction {
    prefixed(
        "sbx_app_",
        |rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()),
        "hex",
    )
}

/// A sealed `lastkey`: 54 characters of base64url.
fn cursor() -> Redaction {
    prefixed(
        "",
        |rest| {
            rest.len() == 54
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        },
        "cursor",
    )
}

#[tokio::test]
async fn receiver_bodies() {
    let app = spawn_app().await;
    let mut body = receiver_body(&app.a, "Ada@Example.com");
    body["middle_name"] = "Byron".into();
    body["gender"] = "f".into();
    body["reference"] = "crm-1".into();
    body["address2"] = "Level 2".into();
    let created = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(created.status, 200, "{}", created.body);
    let receiver = created.body["payload"]["receiver_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let known = [(receiver.as_str(), "receiver")];
    assert_json_snapshot!("receiver_create", created.body, {
        ".payload.receiver_id" => id(&known),
    });

    let got = app.get(&app.a, &format!("/api/receiver/{receiver}")).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_json_snapshot!("receiver_get", got.body, {
        ".payload.id" => id(&known),
        ".payload.applicant_id" => applicant(),
        ".payload.created_at" => millis(),
        ".payload.updated_at" => millis(),
    });

    let second = app.create_receiver(&app.a, "grace@example.com").await;
    let known = [(receiver.as_str(), "receiver"), (second.as_str(), "second")];
    let listed = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&limit=1",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_json_snapshot!("receiver_list", listed.body, {
        ".lastkey" => cursor(),
        ".payload[].id" => id(&known),
        ".payload[].created_at" => millis(),
        ".payload[].updated_at" => millis(),
    });
}

#[tokio::test]
async fn account_bodies() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let created = app
        .post(
            &app.a,
            "/api/receiver-account/aud/direct-entry",
            &json!({"receiver_id": receiver, "bsb": "012-002", "account_number": "123456789"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let account = created.body["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let known = [
        (receiver.as_str(), "receiver"),
        (account.as_str(), "account"),
    ];
    assert_json_snapshot!("account_create", created.body, {
        ".payload.receiver_account_id" => id(&known),
        ".payload.receiver_id" => id(&known),
    });

    let got = app
        .get(&app.a, &format!("/api/receiver-account/{account}"))
        .await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_json_snapshot!("account_get", got.body, {
        ".payload.id" => id(&known),
        ".payload.receiver_id" => id(&known),
        ".payload.created_at" => millis(),
        ".payload.updated_at" => millis(),
    });

    let listed = app
        .get(
            &app.a,
            &format!("/api/receiver-account/receiver/{receiver}"),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_json_snapshot!("account_list", listed.body, {
        ".payload[].id" => id(&known),
        ".payload[].receiver_id" => id(&known),
        ".payload[].created_at" => millis(),
        ".payload[].updated_at" => millis(),
    });

    let found = app
        .post(
            &app.a,
            "/api/receiver-account/verify",
            &json!({"subaccount_id": app.a.subaccount_id, "account_data": {"bsb": "012 002", "account_number": "123456789"}}),
        )
        .await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_json_snapshot!("account_verify_found", found.body, {
        ".account_id" => id(&known),
        ".receiver_id" => id(&known),
    });
    let missing = app
        .post(
            &app.a,
            "/api/receiver-account/verify",
            &json!({"subaccount_id": app.a.subaccount_id, "account_data": {"account_number": "999999999"}}),
        )
        .await;
    assert_eq!(missing.status, 200, "{}", missing.body);
    assert_json_snapshot!("account_verify_missing", missing.body);
}

#[tokio::test]
async fn payout_and_subaccount_bodies() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    app.admin
        .set_fee(subaccount(&app.a), "AUD", "30", "1.5", "50")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let created = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": 10_000, "currency": "AUD", "reference": "inv-1", "note": "November"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let payout = created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let known = [
        (app.a.subaccount_id.as_str(), "subaccount"),
        (receiver.as_str(), "receiver"),
        (account.as_str(), "account"),
        (payout.as_str(), "payout"),
    ];
    assert_json_snapshot!("payout_create", created.body, {
        ".payload.payout_id" => id(&known),
    });

    let got = app.get(&app.a, &format!("/api/payout/{payout}")).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_json_snapshot!("payout_get", got.body, {
        ".payload.id" => id(&known),
        ".payload.batch_id" => id(&known),
        ".payload.fee_data.feegroup_id" => id(&known),
        ".payload.fee_data.feetemplate_id" => id(&known),
        ".payload.merchant" => prefixed("MERC#", is_uuid, "uuid"),
        ".payload.receiver.id" => id(&known),
        ".payload.receiver_account.id" => id(&known),
        ".payload.subaccount.id" => id(&known),
        ".payload.transactions[].transaction_id" => id(&known),
        ".payload.transactions[].created_at" => millis(),
        ".payload.transactions[].updated_at" => millis(),
        ".payload.created_at" => millis(),
        ".payload.updated_at" => millis(),
    });

    let listed = app
        .get(
            &app.a,
            &format!("/api/payout/?subaccount_id={}&limit=1", app.a.subaccount_id),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_json_snapshot!("payout_list", listed.body, {
        ".payload[].id" => id(&known),
        ".payload[].batch_id" => id(&known),
        ".payload[].fee_data.feegroup_id" => id(&known),
        ".payload[].fee_data.feetemplate_id" => id(&known),
        ".payload[].receiver.id" => id(&known),
        ".payload[].receiver_account.id" => id(&known),
        ".payload[].subaccount.id" => id(&known),
        ".payload[].created_at" => millis(),
        ".payload[].updated_at" => millis(),
    });

    let balance = app
        .get(
            &app.a,
            &format!("/api/subaccount/balance/{}?asset=AUD", app.a.subaccount_id),
        )
        .await;
    assert_eq!(balance.status, 200, "{}", balance.body);
    assert_json_snapshot!("subaccount_balance", balance.body);

    let got = app
        .get(&app.a, &format!("/api/subaccount/{}", app.a.subaccount_id))
        .await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_json_snapshot!("subaccount_get", got.body, {
        ".payload.id" => id(&known),
        ".payload.merchant_id" => id(&known),
        ".payload.created_at" => millis(),
    });
}

#[tokio::test]
async fn error_envelopes() {
    let app = spawn_app().await;
    let invalid = app
        .post(
            &app.a,
            "/api/receiver",
            &json!({"subaccount_id": app.a.subaccount_id, "first_name": "Ada3", "colour": "blue"}),
        )
        .await;
    assert_eq!(invalid.status, 400, "{}", invalid.body);
    assert_json_snapshot!("error_receiver_invalid", invalid.body);

    let not_found = app
        .get(&app.a, "/api/receiver/00000000-0000-4000-8000-000000000000")
        .await;
    assert_eq!(not_found.status, 400, "{}", not_found.body);
    assert_json_snapshot!("error_receiver_not_found", not_found.body);

    let unsigned = app
        .send(app.client.get(format!("{}/api/receiver", app.base)))
        .await;
    assert_eq!(unsigned.status, 401, "{}", unsigned.body);
    assert_json_snapshot!("error_unsigned", unsigned.body);

    let no_route = app
        .send(app.client.get(format!("{}/api/nothing-here", app.base)))
        .await;
    assert_eq!(no_route.status, 404, "{}", no_route.body);
    assert_json_snapshot!("error_unknown_route", no_route.body);

    let wrong_method = app
        .send(app.client.delete(format!("{}/api/receiver", app.base)))
        .await;
    assert_eq!(wrong_method.status, 405, "{}", wrong_method.body);
    assert_json_snapshot!("error_wrong_method", wrong_method.body);

    let verify = app
        .post(
            &app.a,
            "/api/receiver-account/verify",
            &json!({"account_data": {"bsb": "012002"}}),
        )
        .await;
    assert_eq!(verify.status, 400, "{}", verify.body);
    assert_json_snapshot!("error_verify", verify.body);

    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let unfunded = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": 100, "currency": "AUD"}),
        )
        .await;
    assert_eq!(unfunded.status, 400, "{}", unfunded.body);
    assert_json_snapshot!("error_payout_insufficient_balance", unfunded.body);
}
