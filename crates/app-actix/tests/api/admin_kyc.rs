//! `payoutd admin kyc` (docs/OPERATIONS.md, `payoutd admin …`) run as the built binary against the
//! app's database: the operator's decision has the provider's effects and is recorded in
//! `kyc_decisions`.

use std::process::{Command, Output};

use diesel::sql_types::{Nullable, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app, subaccount};

/// Runs the binary as the OS user `alice`.
fn payoutd(app: &TestApp, args: &[&str]) -> Output {
    payoutd_as(app, Some("alice"), args)
}

/// Runs the binary on the app's database, with `USER` set to `user` or unset.
fn payoutd_as(app: &TestApp, user: Option<&str>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_payoutd"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.config.database.url)
        .env(
            "PAYOUT_MASTER_KEY",
            hex::encode(app.config.master_key.expose()),
        );
    if let Some(user) = user {
        command.env("USER", user);
    }
    command.output().expect("payoutd runs")
}

fn decide(app: &TestApp, receiver: &str, decision: &str, reason: Option<&str>) -> Output {
    let mut args = vec![
        "admin",
        "kyc",
        "--receiver",
        receiver,
        "--decision",
        decision,
    ];
    if let Some(reason) = reason {
        args.extend(["--reason", reason]);
    }
    payoutd(app, &args)
}

fn success(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

fn failure(output: &Output) -> String {
    assert!(!output.status.success(), "expected a failure");
    assert!(output.stdout.is_empty(), "nothing on stdout on failure");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct AuditRow {
    #[diesel(sql_type = Text)]
    receiver: String,
    #[diesel(sql_type = Text)]
    subaccount: String,
    #[diesel(sql_type = Text)]
    decision: String,
    #[diesel(sql_type = Nullable<Text>)]
    reason: Option<String>,
    #[diesel(sql_type = Text)]
    decided_by: String,
}

async fn audit(app: &TestApp) -> Vec<AuditRow> {
    let mut conn = AsyncPgConnection::establish(&app.config.database.url)
        .await
        .unwrap();
    diesel::sql_query(
        "SELECT receiver_id::text AS receiver, subaccount_id::text AS subaccount, decision, \
         reason, decided_by FROM kyc_decisions ORDER BY decided_at",
    )
    .load(&mut conn)
    .await
    .unwrap()
}

async fn receiver_state(app: &TestApp, id: &str) -> (String, String) {
    let got = app.get(&app.a, &format!("/api/receiver/{id}")).await;
    let r = &got.body["payload"];
    (
        r["status"].as_str().unwrap().to_owned(),
        r["kyc_status"].as_str().unwrap().to_owned(),
    )
}

async fn payout(app: &TestApp, receiver: &str, account: &str, amount: i64) -> String {
    let created = app
        .post(
            &app.a,
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

async fn payout_status(app: &TestApp, id: &str) -> String {
    let got = app.get(&app.a, &format!("/api/payout/{id}")).await;
    got.body["payload"]["status"].as_str().unwrap().to_owned()
}

async fn kyc_events(app: &TestApp, receiver: &str) -> usize {
    app.admin
        .events(subaccount(&app.a), None, None, None, 1000)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.event_type == "receiverKycUpdate" && e.object_id.to_string() == receiver)
        .count()
}

#[tokio::test]
async fn the_operator_decides_kyc_like_the_provider_and_each_decision_is_audited() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    // Both receivers' KYC is pending (no sandbox provider decides by itself here).
    let (ada, ada_account) = app.payee(&app.a, "ada@example.com", false, true).await;
    let (bob, bob_account) = app.payee(&app.a, "bob@example.com", false, false).await;
    let ada_payout = payout(&app, &ada, &ada_account, 1_000).await;
    let before_bob = app.aud_balance(&app.a).await;
    let bob_payout = payout(&app, &bob, &bob_account, 2_000).await;
    assert_eq!(payout_status(&app, &ada_payout).await, "unassessed");
    assert_eq!(payout_status(&app, &bob_payout).await, "unassessed");
    assert_ne!(
        app.aud_balance(&app.a).await,
        before_bob,
        "bob's payout holds"
    );

    // Completed: active, announced, the waiting payout moves on (account confirmed: pending).
    let done = success(&decide(&app, &ada, "completed", Some("passport checked")));
    assert_eq!(
        done,
        json!({"receiver_id": ada, "kyc_status": "completed", "status": "active"})
    );
    assert_eq!(
        receiver_state(&app, &ada).await,
        ("active".to_owned(), "completed".to_owned())
    );
    assert_eq!(payout_status(&app, &ada_payout).await, "pending");
    assert_eq!(kyc_events(&app, &ada).await, 1);

    // Failed: the waiting payout fails and its hold is voided.
    let failed = success(&decide(&app, &bob, "failed", None));
    assert_eq!(
        failed,
        json!({"receiver_id": bob, "kyc_status": "failed", "status": "failed"})
    );
    assert_eq!(payout_status(&app, &bob_payout).await, "failed");
    assert_eq!(app.aud_balance(&app.a).await, before_bob, "hold voided");
    assert_eq!(kyc_events(&app, &bob).await, 1);
    let ledger = success(&payoutd(&app, &["admin", "check-ledger"]));
    assert_eq!(ledger["discrepancies"], json!([]));

    let expected_audit = vec![
        AuditRow {
            receiver: ada.clone(),
            subaccount: app.a.subaccount_id.clone(),
            decision: "completed".to_owned(),
            reason: Some("passport checked".to_owned()),
            decided_by: "operator:alice".to_owned(),
        },
        AuditRow {
            receiver: bob.clone(),
            subaccount: app.a.subaccount_id.clone(),
            decision: "failed".to_owned(),
            reason: None,
            decided_by: "operator:alice".to_owned(),
        },
    ];
    assert_eq!(audit(&app).await, expected_audit);

    // A decided receiver: refused with a clear message, nothing written.
    let again = failure(&decide(&app, &ada, "failed", Some("changed my mind")));
    assert!(again.contains("already decided (completed)"), "{again}");
    assert_eq!(
        receiver_state(&app, &ada).await,
        ("active".to_owned(), "completed".to_owned())
    );
    assert_eq!(kyc_events(&app, &ada).await, 1);
    assert_eq!(audit(&app).await, expected_audit);

    // Unknown receivers and bad arguments: refused, nothing written.
    let unknown = failure(&decide(
        &app,
        &uuid::Uuid::new_v4().to_string(),
        "completed",
        None,
    ));
    assert!(unknown.contains("receiver not found"), "{unknown}");
    let malformed = failure(&decide(&app, "not-a-uuid", "completed", None));
    assert!(
        malformed.contains("--receiver") || malformed.contains("receiver"),
        "{malformed}"
    );
    let (carol, _) = app.payee(&app.a, "carol@example.com", false, false).await;
    let bad = failure(&decide(&app, &carol, "approved", None));
    assert!(bad.contains("--decision"), "{bad}");
    let long = "x".repeat(501);
    let too_long = failure(&decide(&app, &carol, "completed", Some(&long)));
    assert!(too_long.contains("reason"), "{too_long}");
    assert_eq!(
        receiver_state(&app, &carol).await,
        ("pending".to_owned(), "pending".to_owned())
    );
    assert_eq!(audit(&app).await, expected_audit);
}

#[tokio::test]
async fn the_operator_finds_receivers_of_any_subaccount() {
    let app = spawn_app().await;
    let theirs = app.create_receiver(&app.b, "bea@example.com").await;
    // Without USER, the decider is recorded as `operator`.
    let done = success(&payoutd_as(
        &app,
        None,
        &[
            "admin",
            "kyc",
            "--receiver",
            &theirs,
            "--decision",
            "completed",
        ],
    ));
    assert_eq!(done["receiver_id"], theirs.as_str());
    let got = app.get(&app.b, &format!("/api/receiver/{theirs}")).await;
    assert_eq!(got.body["payload"]["kyc_status"], "completed");
    // The API's tenancy is unchanged: tenant A still cannot see it.
    let foreign = app.get(&app.a, &format!("/api/receiver/{theirs}")).await;
    assert_eq!(foreign.codes(), ["REVR101"]);
    let rows = audit(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].subaccount, app.b.subaccount_id);
    assert_eq!(rows[0].decided_by, "operator");
}
