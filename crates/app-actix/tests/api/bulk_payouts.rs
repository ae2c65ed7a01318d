//! `POST /api/payout/bulk` over HTTP (docs/API.md, Payouts): partial and atomic modes, the item
//! limits, the body limit, one idempotency key for the whole request, tenancy, and a bulk racing
//! single payouts on one balance.

use serde_json::{Value, json};

use crate::helpers::{TestApp, now_ms, sign, spawn_app, subaccount};

const BULK: &str = "/api/payout/bulk";

fn item(receiver: &str, account: &str, amount: i64, reference: &str) -> Value {
    json!({"receiver_id": receiver, "account_id": account, "amount": amount,
           "currency": "AUD", "reference": reference})
}

/// The codes of each item's `error` (empty for a created item).
fn item_codes(reply: &Value) -> Vec<Vec<String>> {
    reply["payload"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["error"]
                .as_array()
                .map(|e| {
                    e.iter()
                        .map(|e| e["code"].as_str().unwrap().to_owned())
                        .collect()
                })
                .unwrap_or_default()
        })
        .collect()
}

async fn pending_payouts(app: &TestApp) -> usize {
    let reply = app
        .get(
            &app.a,
            &format!(
                "/api/payout/?subaccount_id={}&limit=100",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["payload"].as_array().unwrap().len()
}

#[tokio::test]
async fn partial_mode_creates_what_passes_in_order_and_reports_the_rest() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let existing = app
        .post(
            &app.a,
            "/api/payout/single",
            &item(&receiver, &account, 100, "taken"),
        )
        .await;
    assert_eq!(existing.status, 200, "{}", existing.body);
    let mut no_reference = item(&receiver, &account, 10, "x");
    no_reference.as_object_mut().unwrap().remove("reference");
    let body = json!({"payouts": [
        item(&receiver, &account, 500, "a"),
        item(&receiver, &account, 500, "b"),
        item(&receiver, &account, 300, "c"),
        item(&receiver, &account, 10, "a"),
        item(&receiver, &account, 10, "taken"),
        no_reference,
        item(&receiver, &account, 0, "d"),
        "not an object",
        item(&receiver, &account, 100, "e"),
    ]});
    let reply = app.post(&app.a, BULK, &body).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["message"], "Bulk payout processed");
    assert_eq!(
        item_codes(&reply.body),
        [
            vec![],
            vec!["PAYO207".to_owned()],
            vec![],
            vec!["PAYO206".to_owned()],
            vec!["PAYO206".to_owned()],
            vec!["PAYO210".to_owned()],
            vec!["PAYO203".to_owned()],
            vec!["REQ004".to_owned()],
            vec![],
        ]
    );
    let payload = &reply.body["payload"];
    assert_eq!(
        (payload["created"].as_i64(), payload["failed"].as_i64()),
        (Some(3), Some(6))
    );
    let items = payload["items"].as_array().unwrap();
    assert!(items.iter().enumerate().all(|(i, it)| it["index"] == i));
    assert_eq!(items[1]["error"][0]["field"], "amount");
    assert_eq!(items[7]["error"][0]["field"], "payouts[7]");
    let id = items[0]["payout_id"].as_str().unwrap();
    let got = app.get(&app.a, &format!("/api/payout/{id}")).await;
    assert_eq!(
        (
            got.body["payload"]["reference"].as_str(),
            got.body["payload"]["status"].as_str()
        ),
        (Some("a"), Some("pending"))
    );
    // 1000 funded, 100 held by the single payout, then 500 + 300 + 100: all of it.
    assert_eq!(app.aud_balance(&app.a).await, (0, 1000));
    assert_eq!(pending_payouts(&app).await, 4);
}

#[tokio::test]
async fn atomic_mode_creates_all_or_nothing() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let refused = app
        .post(
            &app.a,
            BULK,
            &json!({"atomic": true, "payouts": [
                item(&receiver, &account, 600, "a"),
                item(&receiver, &account, 600, "b"),
            ]}),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert_eq!(refused.codes(), ["PAYO209"]);
    assert_eq!(refused.body["message"], "Bulk payout failed");
    assert_eq!(
        refused.body["error"][0]["message"],
        "Bulk payout not created"
    );
    assert_eq!(
        item_codes(&refused.body),
        [vec![], vec!["PAYO207".to_owned()]]
    );
    assert_eq!(refused.body["payload"]["created"], 0);
    assert!(
        refused.body["payload"]["items"][0]
            .get("payout_id")
            .is_none()
    );
    assert_eq!(app.aud_balance(&app.a).await, (1000, 0), "nothing held");
    assert_eq!(pending_payouts(&app).await, 0);

    let created = app
        .post(
            &app.a,
            BULK,
            &json!({"atomic": true, "payouts": [
                item(&receiver, &account, 600, "a"),
                item(&receiver, &account, 400, "b"),
            ]}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.body["payload"]["created"], 2);
    assert_eq!(app.aud_balance(&app.a).await, (0, 1000));
}

#[tokio::test]
async fn a_thousand_items_pass_none_or_a_thousand_and_one_do_not_and_the_body_is_capped() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let items = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| item(&receiver, &account, 100, &format!("run-{i}")))
            .collect()
    };
    for (payouts, what) in [(vec![], "none"), (items(1001), "1001")] {
        let reply = app.post(&app.a, BULK, &json!({ "payouts": payouts })).await;
        assert_eq!(reply.status, 400, "{what}: {}", reply.body);
        assert_eq!(reply.codes(), ["PAYO212"], "{what}");
    }
    for body in [
        json!({}),
        json!({"payouts": "x"}),
        json!({"payouts": [], "extra": 1}),
    ] {
        let reply = app.post(&app.a, BULK, &body).await;
        assert_eq!(reply.status, 400, "{body}: {}", reply.body);
    }
    assert_eq!(app.aud_balance(&app.a).await, (100_000, 0));

    let reply = app
        .post(&app.a, BULK, &json!({ "payouts": items(1000) }))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        (
            reply.body["payload"]["created"].as_i64(),
            reply.body["payload"]["failed"].as_i64()
        ),
        (Some(1000), Some(0))
    );
    assert_eq!(app.aud_balance(&app.a).await, (0, 100_000));
    let ledger = app.admin.check_ledger().await.unwrap();
    assert!(ledger.discrepancies.is_empty(), "{ledger:?}");

    // Over 64 KiB is fine here; over 1 MiB is not.
    let mut big = json!({"payouts": [item(&receiver, &account, 1, "big")]});
    big["payouts"][0]["note"] = "n".repeat(200).into();
    let over = serde_json::to_vec(&json!({"payouts": [big["payouts"][0].clone()],
                                          "pad": "p".repeat(1024 * 1024)}))
    .unwrap();
    let reply = app.post_raw(&app.a, BULK, over).await;
    assert_eq!(reply.status, 413, "{}", reply.body);
    assert_eq!(reply.codes(), ["REQ008"]);
    let under = serde_json::to_vec(&json!({"payouts": [big["payouts"][0].clone()],
                                           "pad": "p".repeat(100 * 1024)}))
    .unwrap();
    let reply = app.post_raw(&app.a, BULK, under).await;
    assert_eq!(reply.codes(), ["REQ005"], "read, not refused for its size");
}

#[tokio::test]
async fn one_key_replays_the_whole_answer_and_refuses_another_body() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let body = json!({"payouts": [
        item(&receiver, &account, 700, "a"),
        item(&receiver, &account, 700, "b"),
    ]});
    let send = |body: &Value| {
        app.client
            .post(format!("{}{BULK}", app.base))
            .header("x-api-key", &app.a.api_key)
            .header("signature", sign(&app.a, now_ms(), None))
            .header("content-type", "application/json")
            .header("idempotency-key", "payroll-11")
            .body(serde_json::to_vec(body).unwrap())
            .send()
    };
    let first = send(&body).await.unwrap();
    assert_eq!(first.status(), 200);
    let first = first.bytes().await.unwrap();
    let again = send(&body).await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    assert_eq!(again.bytes().await.unwrap(), first, "byte for byte");
    assert_eq!(app.aud_balance(&app.a).await, (300, 700), "held once");
    let other = json!({"payouts": [item(&receiver, &account, 1, "c")]});
    let mismatch = send(&other).await.unwrap();
    assert_eq!(mismatch.status(), 409);
    let mismatch: Value = mismatch.json().await.unwrap();
    assert_eq!(mismatch["error"][0]["code"], "IDEM002");
    assert_eq!(pending_payouts(&app).await, 1);
}

#[tokio::test]
async fn an_atomic_refusal_is_stored_under_its_key_and_replayed_after_the_balance_grows() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let body = json!({"atomic": true, "payouts": [
        item(&receiver, &account, 600, "a"),
        item(&receiver, &account, 600, "b"),
    ]});
    let send = || {
        app.client
            .post(format!("{}{BULK}", app.base))
            .header("x-api-key", &app.a.api_key)
            .header("signature", sign(&app.a, now_ms(), None))
            .header("content-type", "application/json")
            .header("idempotency-key", "payroll-atomic-1")
            .body(serde_json::to_vec(&body).unwrap())
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), 400);
    let first = first.bytes().await.unwrap();
    // Enough money now: a retry with the same key is still the stored refusal, not a new run.
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let again = send().await.unwrap();
    assert_eq!(again.status(), 400);
    assert_eq!(again.bytes().await.unwrap(), first, "byte for byte");
    assert_eq!(app.aud_balance(&app.a).await, (2000, 0), "nothing held");
    assert_eq!(pending_payouts(&app).await, 0);
}

#[tokio::test]
async fn another_subaccounts_receiver_fails_only_its_item() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let (theirs, their_account) = app.payee(&app.b, "bob@example.com", true, true).await;
    let reply = app
        .post(
            &app.a,
            BULK,
            &json!({"payouts": [
                item(&theirs, &their_account, 100, "a"),
                item(&receiver, &account, 100, "b"),
            ]}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        item_codes(&reply.body),
        [vec!["PAYO201".to_owned()], vec![]]
    );
    assert_eq!(app.aud_balance(&app.a).await, (900, 100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bulk_racing_single_payouts_never_overdraws_and_loses_nothing() {
    let app = spawn_app().await;
    const FUNDING: i64 = 5_000;
    app.admin
        .fund(
            subaccount(&app.a),
            "AUD",
            &FUNDING.to_string(),
            "test funding",
        )
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let bulk = json!({"payouts": (0..40)
        .map(|i| item(&receiver, &account, 100, &format!("bulk-{i}")))
        .collect::<Vec<_>>()});
    let app = &app;
    let singles = (0..40).map(|i| {
        let body = item(&receiver, &account, 100, &format!("single-{i}"));
        async move { app.post(&app.a, "/api/payout/single", &body).await }
    });
    let (bulk_reply, single_replies) = tokio::join!(
        app.post(&app.a, BULK, &bulk),
        futures_util::future::join_all(singles)
    );
    assert_eq!(bulk_reply.status, 200, "{}", bulk_reply.body);
    let bulk_created = bulk_reply.body["payload"]["created"].as_i64().unwrap();
    let singles_created = single_replies.iter().filter(|r| r.status == 200).count() as i64;
    assert!(
        single_replies
            .iter()
            .all(|r| r.status == 200 || r.codes() == ["PAYO207"]),
        "{single_replies:?}"
    );
    let held = 100 * (bulk_created + singles_created);
    assert!(held <= FUNDING, "holds never exceed the funding");
    assert_eq!(
        held, FUNDING,
        "80 payouts of 100 against 5 000: the balance is used up"
    );
    let (available, pending) = app.aud_balance(&app.a).await;
    assert!(available >= 0);
    assert_eq!((available + pending, pending), (FUNDING, held));
    let ledger = app.admin.check_ledger().await.unwrap();
    assert!(
        ledger.discrepancies.is_empty(),
        "every created payout has its hold: {ledger:?}"
    );
}

/// The problems an answer lists, over all its items.
fn listed_problems(reply: &Value) -> usize {
    item_codes(reply).iter().map(Vec::len).sum()
}

#[tokio::test]
async fn an_answer_lists_at_most_fifty_problems_and_counts_the_rest() {
    let app = spawn_app().await;
    // 1000 items that are not objects (a 2 KB request): one problem each.
    let body = format!("{{\"payouts\":[{}]}}", vec!["1"; 1000].join(","));
    let request_size = body.len();
    let reply = app.post_raw(&app.a, BULK, body.into_bytes()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let payload = &reply.body["payload"];
    assert_eq!(
        (payload["created"].as_i64(), payload["failed"].as_i64()),
        (Some(0), Some(1000))
    );
    let items = payload["items"].as_array().unwrap();
    assert_eq!(items.len(), 1000, "one entry per item still");
    assert_eq!(listed_problems(&reply.body), 50);
    assert_eq!(items[0]["error"][0]["code"], "REQ004");
    assert_eq!(items[0]["error"][0]["field"], "payouts[0]");
    // Failed items past the limit say so with an empty list; the answer counts what it left out.
    assert_eq!(items[999]["error"], json!([]));
    assert_eq!(payload["unlisted_errors"], 950);
    let answer_size = reply.body.to_string().len();
    assert!(
        answer_size < 20 * request_size,
        "{answer_size} bytes answered {request_size}"
    );

    // One item with thousands of unknown fields: its first 50 problems.
    let fields: Vec<String> = (0..4_000).map(|i| format!("\"k{i}\":\"v\"")).collect();
    let body = format!("{{\"payouts\":[{{{}}},{{\"k\":\"v\"}}]}}", fields.join(","));
    let request_size = body.len();
    let reply = app.post_raw(&app.a, BULK, body.into_bytes()).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let payload = &reply.body["payload"];
    assert_eq!(item_codes(&reply.body)[0].len(), 50);
    assert_eq!(item_codes(&reply.body)[1].len(), 0);
    assert!(payload["unlisted_errors"].as_u64().unwrap() > 4_000 - 50);
    let answer_size = reply.body.to_string().len();
    assert!(
        answer_size < request_size / 4,
        "{answer_size} bytes answered {request_size}"
    );

    // An answer whose problems all fit says nothing more.
    let body = json!({"payouts": [{"amount": 1}]});
    let reply = app.post(&app.a, BULK, &body).await;
    assert!(
        reply.body["payload"].get("unlisted_errors").is_none(),
        "{}",
        reply.body
    );
}
