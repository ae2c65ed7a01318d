//! The payout lifecycle after creation (docs/API.md, Payouts): payouts moving with KYC and
//! confirmation, batches closing and submitting to the rail, results settling the money, and
//! two batch runners on one database.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use adapters_sandbox::SandboxRail;
use app_actix::startup::build_store;
use app_actix::system::{RandomIds, SystemClock};
use async_trait::async_trait;
use domain::PortError;
use domain::batch::Batch;
use domain::batch::ports::{BatchStore, PayoutRail, RailOutcome, RailReceipt};
use domain::batch::runner::BatchRunner;
use domain::ids::PayoutId;
use domain::money::Asset;
use domain::payout::Payout;
use serde_json::{Value, json};

use crate::helpers::{Tenant, TestApp, spawn_app, spawn_app_with, subaccount};

async fn pay(app: &TestApp, tenant: &Tenant, receiver: &str, account: &str, amount: i64) -> String {
    let created = app
        .post(
            tenant,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": amount, "currency": "AUD"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn payout(app: &TestApp, tenant: &Tenant, id: &str) -> Value {
    let got = app.get(tenant, &format!("/api/payout/{id}")).await;
    assert_eq!(got.status, 200, "{}", got.body);
    got.body["payload"].clone()
}

async fn run_batch(app: &TestApp, tenant: &Tenant) -> crate::helpers::Reply {
    app.post(
        tenant,
        "/api/test-helpers/batch/run",
        &json!({"subaccount_id": tenant.subaccount_id, "asset": "aud"}),
    )
    .await
}

async fn set_status(
    app: &TestApp,
    tenant: &Tenant,
    id: &str,
    kind: &str,
    status: &str,
) -> crate::helpers::Reply {
    app.post(
        tenant,
        "/api/test-helpers/status",
        &json!({"id": id, "type": kind, "status": status}),
    )
    .await
}

/// The subaccount's events by type, for one object.
async fn events_of(app: &TestApp, tenant: &Tenant, object: &str) -> Vec<String> {
    let mut events: Vec<_> = app
        .admin
        .events(subaccount(tenant), None, None, None, 1_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.object_id.to_string() == object)
        .collect();
    events.sort_by_key(|e| e.sequence);
    events.into_iter().map(|e| e.event_type).collect()
}

async fn ledger_is_balanced(app: &TestApp) {
    let ledger = app.admin.check_ledger().await.unwrap();
    assert!(ledger.discrepancies.is_empty(), "{ledger:?}");
}

#[tokio::test]
async fn waiting_payouts_move_with_kyc_and_confirmation_in_the_same_change() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    // No KYC yet, account confirmed; KYC done, account not confirmed; neither; neither (fails).
    let (r1, a1) = app.payee(&app.a, "one@example.com", false, true).await;
    let (r2, a2) = app.payee(&app.a, "two@example.com", true, false).await;
    let (r3, a3) = app.payee(&app.a, "three@example.com", false, false).await;
    let (r4, a4) = app.payee(&app.a, "four@example.com", false, true).await;
    let p1 = pay(&app, &app.a, &r1, &a1, 1_000).await;
    let p2 = pay(&app, &app.a, &r2, &a2, 2_000).await;
    let p3 = pay(&app, &app.a, &r3, &a3, 3_000).await;
    let p4 = pay(&app, &app.a, &r4, &a4, 4_000).await;
    for (id, status) in [
        (&p1, "unassessed"),
        (&p2, "awaiting"),
        (&p3, "unassessed"),
        (&p4, "unassessed"),
    ] {
        assert_eq!(payout(&app, &app.a, id).await["status"], status);
    }
    assert_eq!(app.aud_balance(&app.a).await, (90_000, 10_000));

    app.decide_kyc(&app.a, &r1, "completed").await;
    let moved = payout(&app, &app.a, &p1).await;
    assert_eq!(moved["status"], "pending");
    let batch = moved["batch_id"].as_str().unwrap().to_owned();
    assert!(!batch.is_empty(), "a pending payout joins the open batch");

    app.confirm_account(&app.a, &a2).await;
    let moved = payout(&app, &app.a, &p2).await;
    assert_eq!(moved["status"], "pending");
    assert_eq!(
        moved["batch_id"],
        batch.as_str(),
        "same subaccount and asset, same batch"
    );

    // KYC completes before the account is confirmed: awaiting, then pending.
    app.decide_kyc(&app.a, &r3, "completed").await;
    assert_eq!(payout(&app, &app.a, &p3).await["status"], "awaiting");
    app.confirm_account(&app.a, &a3).await;
    assert_eq!(payout(&app, &app.a, &p3).await["status"], "pending");

    // KYC fails: the payout fails and its hold returns.
    app.decide_kyc(&app.a, &r4, "failed").await;
    let failed = payout(&app, &app.a, &p4).await;
    assert_eq!(failed["status"], "failed");
    let amounts: Vec<i64> = failed["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["amount"].as_i64().unwrap())
        .collect();
    assert_eq!(amounts, [-4_000, 4_000]);
    assert_eq!(app.aud_balance(&app.a).await, (94_000, 6_000));
    assert_eq!(
        events_of(&app, &app.a, &p4).await,
        ["payoutCreated", "payoutUpdated", "payoutFailure"]
    );
    assert_eq!(
        events_of(&app, &app.a, &p1).await,
        ["payoutCreated", "payoutUpdated"]
    );
    ledger_is_balanced(&app).await;
}

#[tokio::test]
async fn a_batch_run_submits_its_payouts_and_results_settle_the_money() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    app.admin
        .set_fee(subaccount(&app.a), "AUD", "25", "0", "0")
        .await
        .unwrap();
    let (r, a) = app.payee(&app.a, "paid@example.com", true, true).await;
    let paid = pay(&app, &app.a, &r, &a, 1_000).await;
    let failing = pay(&app, &app.a, &r, &a, 2_000).await;
    let cancelled = pay(&app, &app.a, &r, &a, 3_000).await;
    let cancel = app
        .post(
            &app.a,
            &format!("/api/payout/{cancelled}/cancel"),
            &json!({}),
        )
        .await;
    assert_eq!(cancel.status, 200, "{}", cancel.body);
    assert_eq!(app.aud_balance(&app.a).await, (100_000 - 3_050, 3_050));

    // Another tenant cannot run A's batch, and an unknown asset is refused.
    let foreign = app
        .post(
            &app.b,
            "/api/test-helpers/batch/run",
            &json!({"subaccount_id": app.a.subaccount_id, "asset": "AUD"}),
        )
        .await;
    assert_eq!(foreign.codes(), ["SUBA101"]);
    let bad = app
        .post(
            &app.a,
            "/api/test-helpers/batch/run",
            &json!({"subaccount_id": app.a.subaccount_id, "asset": "XYZ"}),
        )
        .await;
    assert_eq!(bad.codes(), ["SUBA304"]);

    let run = run_batch(&app, &app.a).await;
    assert_eq!(run.status, 200, "{}", run.body);
    let batch = run.body["payload"]["batch_id"].as_str().unwrap().to_owned();
    assert_eq!(run.body["payload"]["status"], "in_progress");
    assert_eq!(
        run.body["payload"]["total_tx"], 2,
        "the cancelled payout is not submitted"
    );
    assert_eq!(run.body["payload"]["amount"], 3_000);
    for id in [&paid, &failing] {
        let p = payout(&app, &app.a, id).await;
        assert_eq!(p["status"], "in_progress");
        assert_eq!(p["batch_id"], batch.as_str());
        let reference = p["provider_reference"].as_str().unwrap();
        assert!(reference.starts_with("SBX-"), "{reference}");
        assert_eq!(p["payout_data"]["transaction_id"], reference);
        assert_eq!(p["payout_data"]["status"], "IN PROGRESS");
    }
    // Submitted payouts cannot be cancelled; nothing is left to run.
    let late = app
        .post(&app.a, &format!("/api/payout/{paid}/cancel"), &json!({}))
        .await;
    assert_eq!(late.codes(), ["PAYO301"]);
    assert_eq!(run_batch(&app, &app.a).await.codes(), ["PAYO304"]);

    // The rail's results: one paid, then the rest of the batch fails.
    let ok = set_status(&app, &app.a, &paid, "payout", "success").await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(
        ok.body["message"],
        "Test helper: Update payout status is successful"
    );
    assert_eq!(payout(&app, &app.a, &paid).await["status"], "successful");
    // Paid: the held 1 025 left pending for good.
    assert_eq!(app.aud_balance(&app.a).await, (100_000 - 3_050, 2_025));
    let again = set_status(&app, &app.a, &paid, "payout", "fail").await;
    assert_eq!(again.codes(), ["PAYO303"]);
    let foreign = set_status(&app, &app.b, &failing, "payout", "fail").await;
    assert_eq!(foreign.codes(), ["PAYO101"]);
    let unknown_batch = set_status(&app, &app.a, &paid, "batch", "fail").await;
    assert_eq!(unknown_batch.codes(), ["PAYO102"]);

    let fail = set_status(&app, &app.a, &batch, "batch", "fail").await;
    assert_eq!(fail.status, 200, "{}", fail.body);
    let failed = payout(&app, &app.a, &failing).await;
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["payout_data"]["accepted"], false);
    assert_eq!(app.aud_balance(&app.a).await, (100_000 - 1_025, 0));

    assert_eq!(
        events_of(&app, &app.a, &batch).await,
        ["batchUpdate", "batchUpdate", "batchUpdate"],
        "queue, in_progress, settled"
    );
    assert_eq!(
        events_of(&app, &app.a, &failing).await,
        [
            "payoutCreated",
            "payoutUpdated",
            "payoutUpdated",
            "payoutFailure"
        ]
    );
    let bad = set_status(&app, &app.a, &paid, "payout", "maybe").await;
    assert_eq!(bad.codes(), ["REQ009"]);
    ledger_is_balanced(&app).await;
}

#[tokio::test]
async fn the_rail_settles_by_itself_and_an_invalid_receiver_fails_the_account() {
    let app = spawn_app_with(|c| {
        c.batches.sandbox_settle = Duration::ZERO;
        c.batches.poll = Duration::from_millis(20);
    })
    .await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (r, a) = app.payee(&app.a, "rail@example.com", true, true).await;
    let paid = pay(&app, &app.a, &r, &a, 1_000).await;
    let rejected = pay(&app, &app.a, &r, &a, 1_013).await;
    assert_eq!(run_batch(&app, &app.a).await.status, 200);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (p, f) = (
            payout(&app, &app.a, &paid).await,
            payout(&app, &app.a, &rejected).await,
        );
        if p["status"] == "successful" && f["status"] == "failed" {
            assert_eq!(f["payout_data"]["receiver_is_invalid"], true);
            assert_eq!(p["payout_data"]["receiver_is_invalid"], false);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{p} {f}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let account = app.get(&app.a, &format!("/api/receiver-account/{a}")).await;
    assert_eq!(
        account.body["payload"]["status"], "failed",
        "{}",
        account.body
    );
    let refused = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": r, "account_id": a, "amount": 500, "currency": "AUD"}),
        )
        .await;
    assert_eq!(refused.codes(), ["PAYO205"]);
    assert_eq!(app.aud_balance(&app.a).await, (100_000 - 1_000, 0));
    ledger_is_balanced(&app).await;
}

/// A rail that counts every payout submitted to it, shared by several runners.
struct CountingRail {
    inner: SandboxRail,
    submitted: Arc<Mutex<HashMap<PayoutId, usize>>>,
}

#[async_trait]
impl PayoutRail for CountingRail {
    async fn submit(
        &self,
        batch: &Batch,
        payouts: &[Payout],
    ) -> Result<Vec<RailReceipt>, PortError> {
        {
            let mut submitted = self.submitted.lock().unwrap();
            for p in payouts {
                *submitted.entry(p.id).or_default() += 1;
            }
        }
        // Widen the window in which the other runner could interfere.
        tokio::time::sleep(Duration::from_millis(5)).await;
        self.inner.submit(batch, payouts).await
    }

    async fn results(&self, limit: u32) -> Result<Vec<RailOutcome>, PortError> {
        self.inner.results(limit).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_batch_runners_never_submit_a_payout_twice_nor_apply_a_result_twice() {
    // The app's own runner sleeps: only the two runners below run batches.
    let app = spawn_app_with(|c| c.batches.poll = Duration::from_secs(3_600)).await;
    let mut payouts = Vec::new();
    for tenant in [&app.a, &app.b] {
        app.admin
            .fund(subaccount(tenant), "AUD", "1000000", "test funding")
            .await
            .unwrap();
        for n in 0..3 {
            let (r, a) = app
                .payee(tenant, &format!("p{n}@example.com"), true, true)
                .await;
            for amount in [100, 200, 300, 400, 500] {
                payouts.push((tenant, pay(&app, tenant, &r, &a, amount + n).await));
            }
        }
    }
    let submitted = Arc::new(Mutex::new(HashMap::new()));
    let runner = || {
        let store = Arc::new(build_store(&app.config).unwrap());
        BatchRunner::new(
            store.clone(),
            store.clone(),
            store.clone(),
            Arc::new(CountingRail {
                inner: SandboxRail::new(Arc::new(SystemClock), Duration::ZERO, store),
                submitted: submitted.clone(),
            }),
            Arc::new(SystemClock),
            Arc::new(RandomIds::default()),
            chrono::Duration::seconds(60),
        )
    };
    let (one, two) = (runner(), runner());
    let store = build_store(&app.config).unwrap();
    for tenant in [&app.a, &app.b] {
        store
            .bring_forward_open_batch(subaccount(tenant), Asset::Aud, chrono::Utc::now())
            .await
            .unwrap()
            .expect("an open batch");
    }
    let mut settled = 0;
    for _ in 0..20 {
        let (x, y) = tokio::join!(one.run_once(), two.run_once());
        let (x, y) = (x.unwrap(), y.unwrap());
        settled += x.settled + y.settled;
        if x.is_idle() && y.is_idle() {
            break;
        }
    }
    let submitted = submitted.lock().unwrap().clone();
    assert_eq!(submitted.len(), payouts.len(), "every payout submitted");
    assert!(submitted.values().all(|n| *n == 1), "{submitted:?}");
    assert_eq!(settled, payouts.len(), "each result applied exactly once");
    for (tenant, id) in &payouts {
        assert_eq!(payout(&app, tenant, id).await["status"], "successful");
        assert_eq!(
            events_of(&app, tenant, id).await,
            ["payoutCreated", "payoutUpdated", "payoutUpdated"],
            "one in_progress and one successful change"
        );
    }
    for tenant in [&app.a, &app.b] {
        assert_eq!(app.aud_balance(tenant).await.1, 0, "every hold posted once");
    }
    ledger_is_balanced(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn payouts_created_while_kyc_completes_are_never_left_unassessed() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000000", "test funding")
        .await
        .unwrap();
    for round in 0..3 {
        let (r, a) = app
            .payee(&app.a, &format!("race{round}@example.com"), false, true)
            .await;
        let creations = (0..8).map(|n| {
            let (app, r, a) = (&app, r.clone(), a.clone());
            async move { pay(app, &app.a, &r, &a, 100 + n).await }
        });
        let (ids, ()) = tokio::join!(
            futures_util::future::join_all(creations),
            app.decide_kyc(&app.a, &r, "completed")
        );
        for id in ids {
            let p = payout(&app, &app.a, &id).await;
            assert_eq!(p["status"], "pending", "round {round}: {p}");
            assert!(!p["batch_id"].as_str().unwrap().is_empty());
        }
    }
    ledger_is_balanced(&app).await;
}
