//! Receiver accounts over HTTP (docs/API.md, Receiver accounts): six methods, validation, masking,
//! duplicates, tenancy, verify and confirmation.

use domain::account::AccountField;
use serde_json::{Value, json};

use crate::helpers::{Reply, Tenant, TestApp, spawn_app};

/// A valid create body per route, and the raw identifiers that must never be shown.
fn valid_bodies(receiver: &str) -> Vec<(&'static str, Value, Vec<&'static str>)> {
    vec![
        (
            "aud/direct-entry",
            json!({"receiver_id": receiver, "bsb": "012-002", "account_number": "123456789"}),
            vec!["012002", "123456789"],
        ),
        (
            "usd/ach",
            json!({"receiver_id": receiver, "routing_number": "021000021", "account_number": "987654321", "account_type": "checking"}),
            vec!["021000021", "987654321"],
        ),
        (
            "cad/eft",
            json!({"receiver_id": receiver, "routing_number": "12345-003", "account_number": "7654321", "account_type": "savings"}),
            vec!["000312345", "7654321"],
        ),
        (
            "cad/digital",
            json!({"receiver_id": receiver, "recipient": "ada.pay@example.com", "name": "Ada Lovelace"}),
            vec!["ada.pay@example.com"],
        ),
        (
            "eur/sepa",
            json!({"receiver_id": receiver, "iban": "DE89 3704 0044 0532 0130 00", "bic": "COBADEFFXXX"}),
            vec!["DE89370400440532013000"],
        ),
        (
            "nzd/direct-credit",
            json!({"receiver_id": receiver, "account_number": "01-902-0068389-00"}),
            vec!["0109020068389000"],
        ),
    ]
}

async fn create(app: &TestApp, tenant: &Tenant, route: &str, body: &Value) -> Reply {
    app.post(tenant, &format!("/api/receiver-account/{route}"), body)
        .await
}

fn assert_hidden(reply: &Reply, raws: &[&str]) {
    let text = reply.body.to_string();
    for raw in raws {
        assert!(!text.contains(raw), "{raw} leaked in {text}");
    }
}

#[tokio::test]
async fn every_method_creates_an_account_that_reads_back_masked() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let mut ids = Vec::new();
    for (route, body, raws) in valid_bodies(&receiver) {
        let created = create(&app, &app.a, route, &body).await;
        assert_eq!(created.status, 200, "{route}: {}", created.body);
        assert_eq!(
            created.body["message"],
            "Receiver account created successfully"
        );
        let payload = &created.body["payload"];
        assert_eq!(
            (
                payload["status"].as_str(),
                payload["confirm_status"].as_str()
            ),
            (Some("pending"), Some("unconfirmed"))
        );
        assert_eq!(payload["receiver_id"], receiver.as_str());
        let id = payload["receiver_account_id"].as_str().unwrap().to_owned();
        let got = app
            .get(&app.a, &format!("/api/receiver-account/{id}"))
            .await;
        assert_eq!(got.status, 200, "{}", got.body);
        let account = &got.body["payload"];
        let (asset, method) = route.split_once('/').unwrap();
        assert_eq!(account["asset"], asset.to_uppercase());
        assert_eq!(account["method_name"], method);
        assert_eq!(account["email"], "ada@example.com");
        assert_eq!(account["address_data"]["country"], "AUS");
        assert_hidden(&got, &raws);
        for (field, value) in account["account_data"].as_object().unwrap() {
            if [
                "bsb",
                "account_number",
                "routing_number",
                "iban",
                "recipient",
            ]
            .contains(&field.as_str())
            {
                let shown = value.as_str().unwrap();
                assert!(
                    shown.ends_with(" ***") && shown.chars().count() == 7,
                    "{field}: {shown}"
                );
            }
        }
        ids.push(id);
    }
    let direct = app
        .get(&app.a, &format!("/api/receiver-account/{}", ids[0]))
        .await;
    assert_eq!(
        direct.body["payload"]["account_data"],
        json!({"bsb": "012 ***", "account_number": "123 ***"})
    );
    let listed = app
        .get(
            &app.a,
            &format!("/api/receiver-account/receiver/{receiver}"),
        )
        .await;
    assert_eq!(listed.body["message"], "Receiver accounts found");
    let listed_ids: Vec<_> = listed.body["payload"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed_ids, ids);
}

#[tokio::test]
async fn invalid_details_report_every_problem() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let bad = create(
        &app,
        &app.a,
        "usd/ach",
        &json!({"receiver_id": receiver, "routing_number": "021000022", "account_number": "12", "account_type": "cheque"}),
    )
    .await;
    let mut codes = bad.codes();
    codes.sort();
    assert_eq!(codes, ["REAC205", "REAC208", "REAC212"], "{}", bad.body);
    assert_eq!(bad.body["message"], "Create receiver account failed");

    let empty = create(&app, &app.a, "eur/sepa", &json!({})).await;
    let mut codes = empty.codes();
    codes.sort();
    assert_eq!(codes, ["REAC201", "REAC213", "REAC217"]);

    let wrong_field = create(
        &app,
        &app.a,
        "aud/direct-entry",
        &json!({"receiver_id": receiver, "bsb": "012002", "account_number": "123456", "iban": "x"}),
    )
    .await;
    assert_eq!(wrong_field.codes(), ["REQ005"]);
    let not_sepa = create(
        &app,
        &app.a,
        "eur/sepa",
        &json!({"receiver_id": receiver, "iban": "GB82WEST12345698765433", "bic": "NWBKGB2L"}),
    )
    .await;
    assert_eq!(not_sepa.codes(), ["REAC215"]);
}

#[tokio::test]
async fn unknown_and_foreign_receivers_are_reac211_and_duplicates_reac230() {
    let app = spawn_app().await;
    let a_receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let body = |receiver: &str| json!({"receiver_id": receiver, "bsb": "012-002", "account_number": "123456789"});
    for receiver in [
        "00000000-0000-4000-8000-000000000000",
        "junk",
        a_receiver.as_str(),
    ] {
        let tenant = if receiver == a_receiver {
            &app.b
        } else {
            &app.a
        };
        let reply = create(&app, tenant, "aud/direct-entry", &body(receiver)).await;
        assert_eq!(reply.codes(), ["REAC211"], "{receiver}");
        assert_eq!(
            reply.body["error"][0]["message"],
            "Receiver ID is not valid"
        );
    }
    assert_eq!(
        create(&app, &app.a, "aud/direct-entry", &body(&a_receiver))
            .await
            .status,
        200
    );
    // The same details in another written form are the same account.
    let again = create(
        &app,
        &app.a,
        "aud/direct-entry",
        &json!({"receiver_id": a_receiver, "bsb": "012002", "account_number": "123456789"}),
    )
    .await;
    assert_eq!(again.codes(), ["REAC230"]);
}

#[tokio::test]
async fn accounts_are_invisible_to_other_tenants() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let created = create(
        &app,
        &app.a,
        "aud/direct-entry",
        &json!({"receiver_id": receiver, "bsb": "012002", "account_number": "123456789"}),
    )
    .await;
    let id = created.body["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let foreign = app
        .get(&app.b, &format!("/api/receiver-account/{id}"))
        .await;
    let missing = app
        .get(
            &app.b,
            "/api/receiver-account/00000000-0000-4000-8000-000000000000",
        )
        .await;
    assert_eq!(
        (foreign.status, &foreign.body),
        (missing.status, &missing.body)
    );
    assert_eq!(foreign.codes(), ["REAC104"]);
    let list = app
        .get(
            &app.b,
            &format!("/api/receiver-account/receiver/{receiver}"),
        )
        .await;
    assert_eq!(list.codes(), ["REAC101"]);
    let helper = app
        .post(
            &app.b,
            "/api/test-helpers/account",
            &json!({"receiver_account_id": id, "confirm_status": "confirmed"}),
        )
        .await;
    assert_eq!(helper.codes(), ["REAC104"]);
}

async fn verify(app: &TestApp, tenant: &Tenant, body: Value) -> Reply {
    app.post(tenant, "/api/receiver-account/verify", &body)
        .await
}

#[tokio::test]
async fn verify_matches_partially_or_exactly_the_oldest_account() {
    let app = spawn_app().await;
    let first = app.create_receiver(&app.a, "first@example.com").await;
    let second = app.create_receiver(&app.a, "second@example.com").await;
    let ach = |receiver: &str, number: &str, kind: &str| json!({"receiver_id": receiver, "routing_number": "021000021", "account_number": number, "account_type": kind});
    let older = create(
        &app,
        &app.a,
        "usd/ach",
        &ach(&first, "11111111", "checking"),
    )
    .await;
    create(
        &app,
        &app.a,
        "usd/ach",
        &ach(&second, "22222222", "savings"),
    )
    .await;
    let sub = app.a.subaccount_id.clone();

    let partial = verify(
        &app,
        &app.a,
        json!({"subaccount_id": sub, "account_data": {"routing_number": "021000021"}}),
    )
    .await;
    assert_eq!(partial.status, 200);
    assert_eq!(partial.body["exists"], true);
    assert_eq!(partial.body["receiver_id"], first.as_str());
    assert_eq!(
        partial.body["account_id"],
        older.body["payload"]["receiver_account_id"]
    );
    assert!(partial.body.get("message").is_none() && partial.body.get("payload").is_none());
    assert_eq!(partial.body["account_data"]["routing_number"], "021 ***");

    let exact = verify(
        &app,
        &app.a,
        json!({"subaccount_id": sub, "account_data": {"routing_number": "021000021", "account_number": "22222222", "account_type": "savings"}}),
    )
    .await;
    assert_eq!(exact.body["receiver_id"], second.as_str());
    let none = verify(
        &app,
        &app.a,
        json!({"subaccount_id": sub, "account_data": {"account_number": "33333333"}}),
    )
    .await;
    assert_eq!((none.status, &none.body), (200, &json!({"exists": false})));
    let impossible = verify(
        &app,
        &app.a,
        json!({"subaccount_id": sub, "account_data": {"bsb": "12"}}),
    )
    .await;
    assert_eq!(impossible.body, json!({"exists": false}));
    // Tenant B sees nothing of A's accounts, even with the same values.
    let b = verify(&app, &app.b, json!({"subaccount_id": app.b.subaccount_id, "account_data": {"routing_number": "021000021"}})).await;
    assert_eq!(b.body, json!({"exists": false}));
}

#[tokio::test]
async fn verify_refuses_bad_requests_with_only_a_message() {
    let app = spawn_app().await;
    let sub = app.a.subaccount_id.clone();
    for body in [
        json!({"account_data": {"bsb": "012002"}}),
        json!({"subaccount_id": app.b.subaccount_id, "account_data": {"bsb": "012002"}}),
        json!({"subaccount_id": sub, "account_data": "bsb"}),
        json!({"subaccount_id": sub, "account_data": {}}),
        json!({"subaccount_id": sub, "account_data": {"colour": "blue"}}),
        json!({"subaccount_id": sub, "account_data": {"bsb": 12}}),
        json!({"subaccount_id": sub, "account_data": {"bsb": "012002"}, "extra": 1}),
        json!([1]),
    ] {
        let reply = verify(&app, &app.a, body.clone()).await;
        assert_eq!(reply.status, 400, "{body}");
        assert_eq!(
            reply.body,
            json!({"message": "Missing or invalid subaccount_id or account_data"}),
            "{body}"
        );
    }
}

#[tokio::test]
async fn the_confirmation_link_confirms_once_and_the_helper_too() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let created = create(
        &app,
        &app.a,
        "aud/direct-entry",
        &json!({"receiver_id": receiver, "bsb": "012002", "account_number": "123456789"}),
    )
    .await;
    let id = created.body["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let sent = app.sandbox().notifier.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].to_email, "ada@example.com");
    assert_eq!(
        sent[0].masked_details,
        vec![
            (AccountField::Bsb, "012 ***".to_owned()),
            (AccountField::AccountNumber, "123 ***".to_owned())
        ]
    );
    let url = sent[0].confirm_url.expose().clone();
    let token = url
        .strip_prefix("http://payoutd.test/confirm/")
        .unwrap()
        .to_owned();

    // The form's post confirms (opening the link only shows the page: tests/api/confirm.rs).
    let page = |path: String| {
        let client = app.client.clone();
        async move {
            let response = client.post(path).send().await.unwrap();
            let status = response.status().as_u16();
            let kind = response.headers()["content-type"]
                .to_str()
                .unwrap()
                .to_owned();
            (status, kind, response.text().await.unwrap())
        }
    };
    let bogus = page(format!("{}/confirm/not-a-token", app.base)).await;
    assert_eq!(bogus.0, 404);
    assert!(bogus.1.starts_with("text/html") && bogus.2.contains("not valid"));
    let confirmed = page(format!("{}/confirm/{token}", app.base)).await;
    assert_eq!(confirmed.0, 200, "{}", confirmed.2);
    assert!(confirmed.2.contains("confirmed"));
    let account = app
        .get(&app.a, &format!("/api/receiver-account/{id}"))
        .await;
    assert_eq!(
        (
            account.body["payload"]["status"].as_str(),
            account.body["payload"]["confirm_status"].as_str()
        ),
        (Some("completed"), Some("confirmed"))
    );
    let again = page(format!("{}/confirm/{token}", app.base)).await;
    assert_eq!(again.0, 200, "a second post shows the account confirmed");

    let second = create(&app, &app.a, "usd/ach", &json!({"receiver_id": receiver, "routing_number": "021000021", "account_number": "987654321", "account_type": "checking"})).await;
    let second_id = second.body["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let helper = app
        .post(
            &app.a,
            "/api/test-helpers/account",
            &json!({"receiver_account_id": second_id, "confirm_status": "confirmed"}),
        )
        .await;
    assert_eq!(helper.status, 200, "{}", helper.body);
    assert_eq!(
        helper.body["message"],
        "Test helper: Update account status is successful"
    );
    let account = app
        .get(&app.a, &format!("/api/receiver-account/{second_id}"))
        .await;
    assert_eq!(account.body["payload"]["confirm_status"], "confirmed");
    let bad = app
        .post(
            &app.a,
            "/api/test-helpers/account",
            &json!({"receiver_account_id": second_id, "confirm_status": "unconfirmed"}),
        )
        .await;
    assert_eq!(bad.codes(), ["REQ009"]);
}
