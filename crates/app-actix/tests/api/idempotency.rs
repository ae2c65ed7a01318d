//! `idempotency-key` (docs/API.md, Idempotency keys): replays byte for byte, refuses a different
//! request or a retry while the first runs, and never writes twice, also under concurrent retries.

use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use crate::helpers::{
    Tenant, TestApp, now_ms, receiver_body, sign, spawn_app, spawn_app_with, subaccount,
};

/// What came back, with the raw body.
struct Raw {
    status: u16,
    headers: HeaderMap,
    bytes: Vec<u8>,
}

impl Raw {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap()
    }

    fn replayed(&self) -> bool {
        self.headers
            .get("idempotent-replayed")
            .is_some_and(|v| v == "true")
    }

    fn codes(&self) -> Vec<String> {
        self.json()["error"]
            .as_array()
            .map(|e| {
                e.iter()
                    .map(|i| i["code"].as_str().unwrap_or_default().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// A freshly signed POST with an idempotency key.
async fn post_with_key(app: &TestApp, tenant: &Tenant, path: &str, key: &str, body: &Value) -> Raw {
    post_signed_with_key(app, tenant, &sign(tenant, now_ms(), None), path, key, body).await
}

/// A POST with this signature and idempotency key.
async fn post_signed_with_key(
    app: &TestApp,
    tenant: &Tenant,
    signature: &str,
    path: &str,
    key: &str,
    body: &Value,
) -> Raw {
    let response = app
        .client
        .post(format!("{}{path}", app.base))
        .header("x-api-key", &tenant.api_key)
        .header("signature", signature)
        .header("content-type", "application/json")
        .header("idempotency-key", key)
        .body(serde_json::to_vec(body).unwrap())
        .send()
        .await
        .unwrap();
    Raw {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        bytes: response.bytes().await.unwrap().to_vec(),
    }
}

async fn payout_count(app: &TestApp, tenant: &Tenant) -> usize {
    let list = app
        .get(
            tenant,
            &format!("/api/payout/?subaccount_id={}", tenant.subaccount_id),
        )
        .await;
    list.body["payload"]["items"]
        .as_array()
        .or_else(|| list.body["payload"].as_array())
        .map_or(0, Vec::len)
}

#[tokio::test]
async fn a_retry_replays_the_first_response_byte_for_byte_and_writes_nothing() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    let (r, a) = app.payee(&app.a, "idem@example.com", true, false).await;
    let body = json!({"receiver_id": r, "account_id": a, "amount": 1500, "currency": "AUD"});
    let first = post_with_key(&app, &app.a, "/api/payout/single", "order-1", &body).await;
    assert_eq!(first.status, 200, "{}", first.json());
    assert!(!first.replayed());
    for _ in 0..3 {
        let again = post_with_key(&app, &app.a, "/api/payout/single", "order-1", &body).await;
        assert_eq!(again.status, 200);
        assert!(again.replayed());
        assert_eq!(again.bytes, first.bytes, "byte for byte");
    }
    assert_eq!(payout_count(&app, &app.a).await, 1);
    assert_eq!(app.aud_balance(&app.a).await.0, 8_500, "held once");

    // The same key with another request is refused, and changes nothing.
    let other = json!({"receiver_id": r, "account_id": a, "amount": 1600, "currency": "AUD"});
    let refused = post_with_key(&app, &app.a, "/api/payout/single", "order-1", &other).await;
    assert_eq!(refused.status, 409);
    assert_eq!(refused.codes(), ["IDEM002"]);
    let elsewhere = post_with_key(&app, &app.a, "/api/receiver", "order-1", &body).await;
    assert_eq!(
        elsewhere.codes(),
        ["IDEM002"],
        "another route is another request"
    );
    assert_eq!(app.aud_balance(&app.a).await.0, 8_500);

    // Keys belong to their subaccount: B's "order-1" is B's own.
    let b_receiver = receiver_body(&app.b, "bo@example.com");
    let b = post_with_key(&app, &app.b, "/api/receiver", "order-1", &b_receiver).await;
    assert!(!b.replayed());
    assert_eq!(b.status, 200, "{}", b.json());
}

/// Forbids storing a response in a transaction after the one that wrote: completing a key
/// already marked committed. Only a response stored in the write's own transaction (marked and
/// completed by one statement) gets through. Two statements, run one at a time: Citus
/// propagates each to the workers and refuses them as one string.
const COMPLETE_ONLY_WITH_THE_WRITE: [&str; 2] = [
    "CREATE FUNCTION forbid_late_completion() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       IF OLD.committed AND OLD.state = 'in_progress' AND NEW.state = 'completed' THEN \
         RAISE EXCEPTION 'response stored after its write committed'; \
       END IF; \
       RETURN NEW; \
     END $$",
    "CREATE TRIGGER forbid_late_completion BEFORE UPDATE ON idempotency_keys \
     FOR EACH ROW EXECUTE FUNCTION forbid_late_completion()",
];

#[tokio::test]
async fn every_keyed_write_stores_its_response_in_its_own_transaction() {
    let app = spawn_app().await;
    for statement in COMPLETE_ONLY_WITH_THE_WRITE {
        app.execute_sql(statement).await;
    }
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    let receiver = post_with_key(
        &app,
        &app.a,
        "/api/receiver",
        "w-receiver",
        &receiver_body(&app.a, "own-tx@example.com"),
    )
    .await;
    assert_eq!(receiver.status, 200, "{}", receiver.json());
    let r = receiver.json()["payload"]["receiver_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let kyc = json!({"receiver_id": r, "kyc_status": "completed"});
    let decided = post_with_key(&app, &app.a, "/api/test-helpers/kyc", "w-kyc", &kyc).await;
    assert_eq!(decided.status, 200, "{}", decided.json());
    let account_body = json!({
        "receiver_id": r, "bsb": "012-002", "account_number": "123456789",
    });
    let path = "/api/receiver-account/aud/direct-entry";
    let account = post_with_key(&app, &app.a, path, "w-account", &account_body).await;
    assert_eq!(account.status, 200, "{}", account.json());
    let a = account.json()["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({"receiver_id": r, "account_id": a, "amount": 700, "currency": "AUD"});
    let payout = post_with_key(&app, &app.a, "/api/payout/single", "w-payout", &body).await;
    assert_eq!(payout.status, 200, "{}", payout.json());
    let p = payout.json()["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let cancel_path = format!("/api/payout/{p}/cancel");
    let cancelled = post_with_key(&app, &app.a, &cancel_path, "w-cancel", &json!({})).await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.json());
    // Each retry replays: the response was stored with the write (a later completion would
    // have been refused by the trigger, leaving the key in flight).
    for (path, key, body, first) in [
        (
            "/api/receiver",
            "w-receiver",
            receiver_body(&app.a, "own-tx@example.com"),
            &receiver,
        ),
        ("/api/test-helpers/kyc", "w-kyc", kyc.clone(), &decided),
        (path, "w-account", account_body.clone(), &account),
        ("/api/payout/single", "w-payout", body.clone(), &payout),
        (cancel_path.as_str(), "w-cancel", json!({}), &cancelled),
    ] {
        let again = post_with_key(&app, &app.a, path, key, &body).await;
        assert!(again.replayed(), "{path}: {}", again.json());
        assert_eq!(again.bytes, first.bytes, "{path}: byte for byte");
    }
}

#[tokio::test]
async fn failed_validations_are_replayed_too_and_bad_keys_are_refused() {
    let app = spawn_app().await;
    let bad = json!({"receiver_id": "nope", "account_id": "nope", "amount": 0, "currency": "AUD"});
    let first = post_with_key(&app, &app.a, "/api/payout/single", "k", &bad).await;
    assert_eq!(first.status, 400);
    let again = post_with_key(&app, &app.a, "/api/payout/single", "k", &bad).await;
    assert!(again.replayed());
    assert_eq!((again.status, again.bytes), (first.status, first.bytes));

    // (Leading spaces never arrive: HTTP strips them from header values.)
    // Keys are visible ASCII only (docs/API.md): no space inside either.
    for key in [
        "x".repeat(256),
        String::new(),
        "tab\tkey".to_owned(),
        "a key".to_owned(),
    ] {
        let refused = post_with_key(&app, &app.a, "/api/payout/single", &key, &bad).await;
        assert_eq!(refused.status, 400, "{key:?}");
        assert_eq!(refused.codes(), ["IDEM201"], "{key:?}");
    }
    // Unauthenticated requests never reach the key.
    let response = app
        .client
        .post(format!("{}/api/payout/single", app.base))
        .header("x-api-key", "nope")
        .header("signature", "nope")
        .header("idempotency-key", "k2")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let later = post_with_key(&app, &app.a, "/api/payout/single", "k2", &bad).await;
    assert!(
        !later.replayed(),
        "k2 was not claimed by the rejected request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_retries_create_one_payout() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    let (r, a) = app.payee(&app.a, "idem@example.com", true, false).await;
    let body = json!({"receiver_id": r, "account_id": a, "amount": 700, "currency": "AUD"});
    let attempts =
        (0..12).map(|_| post_with_key(&app, &app.a, "/api/payout/single", "burst", &body));
    let replies = futures_util::future::join_all(attempts).await;
    let ok: Vec<&Raw> = replies.iter().filter(|r| r.status == 200).collect();
    assert!(!ok.is_empty());
    assert!(
        ok.iter().all(|r| r.bytes == ok[0].bytes),
        "one payout id answered"
    );
    for r in replies.iter().filter(|r| r.status != 200) {
        assert_eq!(r.status, 409);
        assert_eq!(r.codes(), ["IDEM001"]);
    }
    assert_eq!(payout_count(&app, &app.a).await, 1);
    assert_eq!(app.aud_balance(&app.a).await.0, 9_300);
}

#[tokio::test]
async fn a_replayed_signature_is_refused_before_its_key_is_touched() {
    let app = spawn_app().await;
    let body = receiver_body(&app.a, "nonce@example.com");
    let signature = sign(&app.a, now_ms(), None);
    let path = "/api/receiver";
    let first = post_signed_with_key(&app, &app.a, &signature, path, "r-1", &body).await;
    assert_eq!(first.status, 200, "{}", first.json());
    // The same signed request again, with its key or another: its nonce is spent.
    for key in ["r-1", "r-2"] {
        let replayed = post_signed_with_key(&app, &app.a, &signature, path, key, &body).await;
        assert_eq!(replayed.status, 401, "{key}");
        assert_eq!(replayed.codes(), ["AUTH106"], "{key}");
        assert!(!replayed.replayed());
    }
    // "r-2" was never claimed: a freshly signed request with it runs (and is refused only for
    // the e-mail "r-1" registered), rather than finding it in flight or answered.
    let fresh = post_with_key(&app, &app.a, path, "r-2", &body).await;
    assert!(!fresh.replayed());
    assert!(
        !fresh.codes().iter().any(|c| c.starts_with("IDEM")),
        "{}",
        fresh.json()
    );
    assert_ne!(fresh.status, 401, "{}", fresh.json());
    // And "r-1" still replays its first answer.
    let again = post_with_key(&app, &app.a, path, "r-1", &body).await;
    assert!(again.replayed());
    assert_eq!(again.bytes, first.bytes);
}

#[tokio::test]
async fn a_rate_limited_request_gives_its_key_up_so_a_retry_runs_afresh() {
    use std::num::NonZeroU32;
    let app = spawn_app_with(|c| {
        c.rate_limit = (NonZeroU32::new(1).unwrap(), NonZeroU32::new(1).unwrap());
    })
    .await;
    let path = "/api/receiver";
    let first = post_with_key(
        &app,
        &app.a,
        path,
        "k-1",
        &receiver_body(&app.a, "a@example.com"),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.json());
    let body = receiver_body(&app.a, "b@example.com");
    let limited = post_with_key(&app, &app.a, path, "k-2", &body).await;
    assert_eq!(limited.status, 429, "{}", limited.json());
    assert_eq!(limited.codes(), ["REQ010"]);
    // Neither stored as the key's answer nor left in flight: once the bucket refills, the
    // retry runs and writes.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    let retry = post_with_key(&app, &app.a, path, "k-2", &body).await;
    assert_eq!(retry.status, 200, "{}", retry.json());
    assert!(!retry.replayed());
}

#[tokio::test]
async fn a_replayed_payout_signature_is_refused_and_writes_nothing() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    let (r, a) = app.payee(&app.a, "replay@example.com", true, false).await;
    let path = "/api/payout/single";
    let body = json!({"receiver_id": r, "account_id": a, "amount": 700, "currency": "AUD"});
    let signature = sign(&app.a, now_ms(), None);
    let first = post_signed_with_key(&app, &app.a, &signature, path, "p-1", &body).await;
    assert_eq!(first.status, 200, "{}", first.json());
    // The payout's write recorded the nonce with the payout: the same signed request, with its
    // key or another, is a replay.
    for key in ["p-1", "p-2"] {
        let replayed = post_signed_with_key(&app, &app.a, &signature, path, key, &body).await;
        assert_eq!(replayed.status, 401, "{key}: {}", replayed.json());
        assert_eq!(replayed.codes(), ["AUTH106"], "{key}");
        assert!(!replayed.replayed());
    }
    assert_eq!(payout_count(&app, &app.a).await, 1);
    assert_eq!(app.aud_balance(&app.a).await.0, 9_300);
    // "p-2" was never claimed, and "p-1" answers its retries.
    let fresh = post_with_key(&app, &app.a, path, "p-2", &body).await;
    assert_eq!(fresh.status, 200, "{}", fresh.json());
    assert!(!fresh.replayed());
    let again = post_with_key(&app, &app.a, path, "p-1", &body).await;
    assert!(again.replayed());
    assert_eq!(again.bytes, first.bytes);

    // A refused request's nonce is recorded too, and its refusal stored under its key.
    let large = json!({"receiver_id": r, "account_id": a, "amount": 50_000, "currency": "AUD"});
    let signature = sign(&app.a, now_ms(), None);
    let short = post_signed_with_key(&app, &app.a, &signature, path, "p-3", &large).await;
    assert_eq!(short.status, 400, "{}", short.json());
    assert_eq!(short.codes(), ["PAYO207"]);
    let replayed = post_signed_with_key(&app, &app.a, &signature, path, "p-3", &large).await;
    assert_eq!(replayed.codes(), ["AUTH106"]);
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let retry = post_with_key(&app, &app.a, path, "p-3", &large).await;
    assert!(retry.replayed(), "the refusal is the key's answer");
    assert_eq!((retry.status, retry.bytes), (short.status, short.bytes));
    assert_eq!(payout_count(&app, &app.a).await, 2);
}

/// Forbids claiming a key before its request runs (an `in_progress` key): only a key inserted
/// already completed, by its request's own write, gets through.
const NO_CLAIM_BEFORE_THE_WRITE: [&str; 2] = [
    "CREATE FUNCTION forbid_claims() RETURNS trigger LANGUAGE plpgsql AS $$ \
     BEGIN \
       IF NEW.state = 'in_progress' THEN \
         RAISE EXCEPTION 'a key claimed before its write'; \
       END IF; \
       RETURN NEW; \
     END $$",
    "CREATE TRIGGER forbid_claims BEFORE INSERT ON idempotency_keys \
     FOR EACH ROW EXECUTE FUNCTION forbid_claims()",
];

#[tokio::test]
async fn a_keyed_payout_is_admitted_by_its_own_write() {
    let app = spawn_app().await;
    if app.is_citus() {
        return; // On Citus requests are admitted before they run.
    }
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    let (r, a) = app
        .payee(&app.a, "own-write@example.com", true, false)
        .await;
    for statement in NO_CLAIM_BEFORE_THE_WRITE {
        app.execute_sql(statement).await;
    }
    let path = "/api/payout/single";
    let body = json!({"receiver_id": r, "account_id": a, "amount": 700, "currency": "AUD"});
    let first = post_with_key(&app, &app.a, path, "w-1", &body).await;
    assert_eq!(first.status, 200, "{}", first.json());
    // Another route's key is still claimed before its request runs (and here refused by the
    // trigger: 5xx, the key given up).
    let receiver = receiver_body(&app.a, "claimed@example.com");
    let other = post_with_key(&app, &app.a, "/api/receiver", "w-2", &receiver).await;
    assert!(other.status >= 500, "{}", other.json());
    // A retry is admitted on its own (a claim attempt, which finds the key): it replays.
    app.execute_sql("DROP TRIGGER forbid_claims ON idempotency_keys")
        .await;
    let again = post_with_key(&app, &app.a, path, "w-1", &body).await;
    assert!(again.replayed());
    assert_eq!(again.bytes, first.bytes);
    assert_eq!(payout_count(&app, &app.a).await, 1);
}

#[tokio::test]
async fn a_rate_limited_payout_leaves_its_key_free() {
    use std::num::NonZeroU32;
    let app = spawn_app_with(|c| {
        c.rate_limit = (NonZeroU32::new(1).unwrap(), NonZeroU32::new(3).unwrap());
    })
    .await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000", "test funding")
        .await
        .unwrap();
    let (r, a) = app.payee(&app.a, "limited@example.com", true, false).await;
    // A payout's write records its nonce and key; one refused for its rate (counted on
    // arrival) has recorded neither. Payouts until the bucket is empty.
    let body = json!({"receiver_id": r, "account_id": a, "amount": 700, "currency": "AUD"});
    let path = "/api/payout/single";
    let (mut limited, mut created) = (None, 0);
    for n in 0..5 {
        let key = format!("p-{n}");
        let reply = post_with_key(&app, &app.a, path, &key, &body).await;
        if reply.status == 429 {
            assert_eq!(reply.codes(), ["REQ010"]);
            limited = Some(key);
            break;
        }
        assert_eq!(reply.status, 200, "{}", reply.json());
        created += 1;
    }
    let key = limited.expect("the bucket of 3 ran out within 5 payouts");
    // (Each request below waits for a token: reads count too.)
    let refill = std::time::Duration::from_millis(1_100);
    tokio::time::sleep(refill).await;
    let retry = post_with_key(&app, &app.a, path, &key, &body).await;
    assert_eq!(retry.status, 200, "{}", retry.json());
    assert!(!retry.replayed(), "the refused request left its key free");
    tokio::time::sleep(refill).await;
    assert_eq!(payout_count(&app, &app.a).await, created + 1);
}
