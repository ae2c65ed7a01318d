//! Payouts over HTTP (docs/API.md, Payouts): create with every check, the hold, read back.

use serde_json::{Value, json};

use crate::helpers::{spawn_app, subaccount};

fn body(receiver: &str, account: &str, amount: Value, currency: &str) -> Value {
    json!({"receiver_id": receiver, "account_id": account, "amount": amount, "currency": currency})
}

#[tokio::test]
async fn a_payout_holds_amount_and_fee_and_reads_back_in_the_providers_shape() {
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
    let mut request = body(&receiver, &account, json!(10_000), "aud");
    request["reference"] = "inv-1".into();
    request["note"] = "November".into();
    let created = app.post(&app.a, "/api/payout/single", &request).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.body["message"], "Payout created successfully");
    let id = created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(app.aud_balance(&app.a).await, (100_000 - 10_180, 10_180));

    let got = app.get(&app.a, &format!("/api/payout/{id}")).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.body["message"], "Payout found");
    let p = &got.body["payload"];
    assert_eq!(
        (
            p["status"].as_str(),
            p["amount"].as_i64(),
            p["asset"].as_str()
        ),
        (Some("pending"), Some(10_000), Some("AUD"))
    );
    assert_eq!(
        (p["reference"].as_str(), p["note"].as_str()),
        (Some("inv-1"), Some("November"))
    );
    assert_eq!(p["fee_data"]["fee_value"], "180");
    assert_eq!(
        (
            p["fee_data"]["fixed"].as_i64(),
            p["fee_data"]["percentage"].as_f64()
        ),
        (Some(30), Some(1.5))
    );
    assert!(p["merchant"].as_str().unwrap().starts_with("MERC#"));
    assert_eq!(p["receiver"]["firstname"], "Ada");
    assert_eq!(p["receiver_account"]["account_number"], "123 ***");
    assert_eq!(p["receiver_account"]["bsb"], "012 ***");
    assert_eq!(p["payout_data"]["transaction_is_duplicated"], false);
    let transactions: Vec<_> = p["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["transaction_type"].clone(), t["amount"].clone()))
        .collect();
    assert_eq!(
        transactions,
        [
            (json!("payout"), json!(-10_000)),
            (json!("fee"), json!(-180))
        ]
    );
    assert!(!got.body.to_string().contains("123456789"));

    // The same account, amount and currency again: accepted, flagged as a likely duplicate.
    let again = app
        .post(
            &app.a,
            "/api/payout/single",
            &body(&receiver, &account, json!("10000"), "AUD"),
        )
        .await;
    let again_id = again.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let flagged = app.get(&app.a, &format!("/api/payout/{again_id}")).await;
    assert_eq!(
        flagged.body["payload"]["payout_data"]["transaction_is_duplicated"],
        true
    );
    let reused = app.post(&app.a, "/api/payout/single", &request).await;
    assert_eq!(reused.codes(), ["PAYO206"]);
}

#[tokio::test]
async fn new_payouts_wait_for_kyc_and_confirmation() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    for (email, kyc, confirm, expected) in [
        ("a@example.com", false, true, "unassessed"),
        ("b@example.com", true, false, "awaiting"),
        ("c@example.com", true, true, "pending"),
    ] {
        let (receiver, account) = app.payee(&app.a, email, kyc, confirm).await;
        let created = app
            .post(
                &app.a,
                "/api/payout/single",
                &body(&receiver, &account, json!(100), "AUD"),
            )
            .await;
        let id = created.body["payload"]["payout_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let got = app.get(&app.a, &format!("/api/payout/{id}")).await;
        assert_eq!(got.body["payload"]["status"], expected, "{email}");
    }
}

#[tokio::test]
async fn every_check_answers_its_code_and_nothing_is_held() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let (other_receiver, other_account) = app.payee(&app.a, "bob@example.com", true, true).await;
    let (b_receiver, b_account) = app.payee(&app.b, "ben@example.com", true, true).await;
    let unknown = "00000000-0000-4000-8000-000000000000";
    for (request, expected) in [
        (body(unknown, &account, json!(100), "AUD"), vec!["PAYO201"]),
        (
            body(&b_receiver, &b_account, json!(100), "AUD"),
            vec!["PAYO201"],
        ),
        (
            body(&receiver, &other_account, json!(100), "AUD"),
            vec!["PAYO202"],
        ),
        (body(&receiver, unknown, json!(100), "AUD"), vec!["PAYO202"]),
        (
            body(&receiver, &account, json!(1.5), "AUD"),
            vec!["PAYO203"],
        ),
        (
            body(&receiver, &account, json!("12abc"), "AUD"),
            vec!["PAYO203"],
        ),
        (body(&receiver, &account, json!(0), "AUD"), vec!["PAYO203"]),
        (
            body(&receiver, &account, json!(1_000_000_000_001i64), "AUD"),
            vec!["PAYO203"],
        ),
        (
            body(&receiver, &account, json!(100), "USD"),
            vec!["PAYO204"],
        ),
        (
            body(&receiver, &account, json!(100), "XYZ"),
            vec!["PAYO204"],
        ),
        (
            body(&receiver, &account, json!(5000), "AUD"),
            vec!["PAYO207"],
        ),
        (
            body(unknown, &account, json!(-1), "GBP"),
            vec!["PAYO201", "PAYO203", "PAYO204"],
        ),
    ] {
        let reply = app.post(&app.a, "/api/payout/single", &request).await;
        let mut codes = reply.codes();
        codes.sort();
        assert_eq!(codes, expected, "{request}");
        assert_eq!(reply.body["message"], "Create payout failed");
    }
    let failed = app
        .post(
            &app.a,
            "/api/test-helpers/kyc",
            &json!({"receiver_id": other_receiver, "kyc_status": "failed"}),
        )
        .await;
    assert_eq!(failed.codes(), ["REVR301"], "already completed");
    assert_eq!(app.aud_balance(&app.a).await, (1000, 0), "nothing was held");
    let missing = app.get(&app.a, &format!("/api/payout/{unknown}")).await;
    assert_eq!(missing.codes(), ["PAYO101"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_payouts_against_a_balance_for_ten_exactly_ten_succeed() {
    let app = spawn_app().await;
    app.admin
        .set_fee(subaccount(&app.a), "AUD", "10", "0", "0")
        .await
        .unwrap();
    app.admin
        .fund(subaccount(&app.a), "AUD", "1100", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let request = body(&receiver, &account, json!(100), "AUD");
    let replies = futures_util::future::join_all(
        (0..50).map(|_| app.post(&app.a, "/api/payout/single", &request)),
    )
    .await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let poor = replies.iter().filter(|r| r.codes() == ["PAYO207"]).count();
    assert_eq!((ok, poor), (10, 40), "{replies:?}");
    assert_eq!(
        app.aud_balance(&app.a).await,
        (0, 1100),
        "never below zero, every cent accounted for"
    );
    let ledger = app.admin.check_ledger().await.unwrap();
    assert!(
        ledger.discrepancies.is_empty(),
        "balance equals its ledger: {ledger:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cancelling_releases_the_hold_once_and_shows_the_reversal() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    app.admin
        .set_fee(subaccount(&app.a), "AUD", "25", "0", "0")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let created = app
        .post(
            &app.a,
            "/api/payout/single",
            &body(&receiver, &account, json!(1000), "AUD"),
        )
        .await;
    let id = created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(app.aud_balance(&app.a).await, (8975, 1025));

    let path = format!("/api/payout/{id}/cancel");
    let replies =
        futures_util::future::join_all((0..8).map(|_| app.post_raw(&app.a, &path, b"{}".to_vec())))
            .await;
    let cancelled: Vec<_> = replies.iter().filter(|r| r.status == 200).collect();
    assert_eq!(cancelled.len(), 1, "{replies:?}");
    assert_eq!(
        cancelled[0].body["message"],
        "Payout cancelled successfully"
    );
    assert_eq!(cancelled[0].body["payload"]["status"], "cancelled");
    for refused in replies.iter().filter(|r| r.status != 200) {
        assert_eq!(refused.codes(), ["PAYO301"]);
        assert_eq!(
            refused.body["error"][0]["message"],
            "Payout cannot be cancelled in status cancelled"
        );
    }
    assert_eq!(
        app.aud_balance(&app.a).await,
        (10000, 0),
        "released exactly once"
    );
    assert!(
        app.admin
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );

    let got = app.get(&app.a, &format!("/api/payout/{id}")).await;
    assert_eq!(got.body["payload"]["status"], "cancelled");
    let amounts: Vec<_> = got.body["payload"]["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["amount"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [-1000, -25, 1000, 25]);
    assert_eq!(
        app.post_raw(&app.b, &path, b"{}".to_vec()).await.codes(),
        ["PAYO101"]
    );
    let missing = app
        .post_raw(&app.a, "/api/payout/not-a-uuid/cancel", b"{}".to_vec())
        .await;
    assert_eq!(missing.codes(), ["PAYO101"]);
}

#[tokio::test]
async fn payouts_list_newest_first_with_filters_and_keyset_paging() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let mut ids = Vec::new();
    for (n, amount) in [100, 200, 300].into_iter().enumerate() {
        let mut request = body(&receiver, &account, json!(amount), "AUD");
        request["reference"] = format!("ref-{n}").into();
        let created = app.post(&app.a, "/api/payout/single", &request).await;
        ids.push(
            created.body["payload"]["payout_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let cancelled = app
        .post_raw(
            &app.a,
            &format!("/api/payout/{}/cancel", ids[0]),
            b"{}".to_vec(),
        )
        .await;
    assert_eq!(cancelled.status, 200);
    let sub = app.a.subaccount_id.clone();
    let list = |query: String| {
        let app = &app;
        async move {
            app.get(
                &app.a,
                &format!(
                    "/api/payout/?subaccount_id={sub}&{query}",
                    sub = app.a.subaccount_id
                ),
            )
            .await
        }
    };
    let listed_ids = |reply: &crate::helpers::Reply| -> Vec<String> {
        reply.body["payload"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap().to_owned())
            .collect()
    };

    let first = list("limit=2".to_owned()).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body["message"], "Payouts found");
    assert_eq!(listed_ids(&first), [ids[2].clone(), ids[1].clone()]);
    let item = &first.body["payload"][0];
    assert_eq!(item["amount"], "300", "a string in the list");
    assert!(item.get("transactions").is_none() && item.get("merchant").is_none());
    assert!(item["fee_data"].get("fee_value").is_none());
    assert_eq!(item["receiver_account"]["account_number"], "123 ***");
    let lastkey = first.body["lastkey"].as_str().unwrap().to_owned();
    let second = list(format!("limit=2&lastkey={lastkey}")).await;
    assert_eq!(listed_ids(&second), [ids[0].clone()]);
    assert!(second.body["lastkey"].is_null());

    assert_eq!(
        listed_ids(&list("status=5".to_owned()).await),
        [ids[0].clone()]
    );
    assert_eq!(listed_ids(&list("status=1".to_owned()).await).len(), 2);
    assert_eq!(
        listed_ids(&list("reference=ref-1".to_owned()).await),
        [ids[1].clone()]
    );
    assert_eq!(
        listed_ids(&list("from=2000-01-01%2000:00".to_owned()).await).len(),
        3
    );
    assert_eq!(
        listed_ids(&list("to=2000-01-01%2000:00".to_owned()).await).len(),
        0
    );
    let now = chrono::Utc::now().format("%Y-%m-%d%%20%H:%M").to_string();
    assert_eq!(
        listed_ids(&list(format!("to={now}")).await).len(),
        3,
        "to is inclusive to the minute"
    );

    assert_eq!(list("from=yesterday".to_owned()).await.codes(), ["PAYO302"]);
    assert_eq!(list("status=9".to_owned()).await.codes(), ["REQ002"]);
    assert_eq!(list("colour=red".to_owned()).await.codes(), ["REQ005"]);
    let foreign = app
        .get(&app.b, &format!("/api/payout/?subaccount_id={sub}"))
        .await;
    assert_eq!(foreign.codes(), ["SUBA101"]);
    let stolen = app
        .get(
            &app.b,
            &format!(
                "/api/payout/?subaccount_id={}&lastkey={lastkey}",
                app.b.subaccount_id
            ),
        )
        .await;
    assert_eq!(stolen.codes(), ["REQ003"]);
    assert_eq!(app.get(&app.a, "/api/payout/").await.codes(), ["REQ002"]);
    let b_list = app
        .get(
            &app.b,
            &format!("/api/payout/?subaccount_id={}", app.b.subaccount_id),
        )
        .await;
    assert_eq!(
        b_list.body["payload"].as_array().map(Vec::len),
        Some(0),
        "B sees none of A's payouts"
    );
}

#[tokio::test]
async fn reference_and_note_follow_the_text_rules_and_a_nul_amount_is_req009() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    // Look-alikes of `inv-1` (a bidi override, zero-width characters, a control, a line
    // separator) are refused, in a single payout and in a bulk item alike.
    for (field, text) in [
        ("reference", "inv-1\u{202E}"),
        ("reference", "inv\u{200B}-1"),
        ("reference", "\u{FEFF}inv-1"),
        ("note", "line\u{0007}bell"),
        ("note", "one\u{2028}two"),
        ("note", "a\u{2066}b\u{2069}"),
    ] {
        let mut request = body(&receiver, &account, json!(100), "AUD");
        request[field] = text.into();
        let refused = app.post(&app.a, "/api/payout/single", &request).await;
        assert_eq!(
            (refused.status, refused.codes()),
            (400, vec!["REQ009".to_owned()]),
            "{field} {text:?}: {}",
            refused.body
        );
        assert_eq!(refused.body["error"][0]["field"], field);
        let mut item = request.clone();
        if field == "note" {
            item["reference"] = "bulk-1".into();
        }
        let bulk = app
            .post(&app.a, "/api/payout/bulk", &json!({"payouts": [item]}))
            .await;
        assert_eq!(bulk.status, 200, "{}", bulk.body);
        assert_eq!(
            bulk.body["payload"]["items"][0]["error"][0]["code"], "REQ009",
            "{field} {text:?}: {}",
            bulk.body
        );
    }
    // Any script stays allowed.
    let mut request = body(&receiver, &account, json!(100), "AUD");
    request["reference"] = "Rechnung Nr. 42 – Zoë".into();
    request["note"] = "山田 太郎 🙂".into();
    let created = app.post(&app.a, "/api/payout/single", &request).await;
    assert_eq!(created.status, 200, "{}", created.body);

    // A NUL is REQ009 in `amount` too, as in every other text (docs/API.md, Values).
    let refused = app
        .post(
            &app.a,
            "/api/payout/single",
            &body(&receiver, &account, json!("1\u{0000}00"), "AUD"),
        )
        .await;
    assert_eq!(
        (refused.status, refused.codes()),
        (400, vec!["REQ009".to_owned()]),
        "{}",
        refused.body
    );
    assert_eq!(refused.body["error"][0]["field"], "amount");
    assert_eq!(
        app.aud_balance(&app.a).await.1,
        100,
        "only the plain payout"
    );
}
