//! The `payoutd` binary as an operator uses it: JSON on stdout, a message on stderr and a
//! non-zero exit on failure, configuration problems naming the variable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Output};

use adapters_postgres::test_db::TestDb;
use serde_json::Value;

const MASTER_KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn payoutd(env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_payoutd"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().expect("payoutd runs")
}

fn json(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("stdout is JSON")
}

fn failure(output: &Output) -> String {
    assert!(!output.status.success());
    assert!(output.stdout.is_empty(), "nothing on stdout on failure");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn admin_commands_print_json_and_fail_with_a_message() {
    let db = TestDb::new().await.unwrap();
    let env = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", MASTER_KEY),
    ];
    let run = |args: &[&str]| payoutd(&env, args);

    assert_eq!(json(&run(&["migrate"]))["applied"], serde_json::json!([]));
    let created = json(&run(&[
        "admin",
        "create-subaccount",
        "--name",
        "Shop",
        "--email",
        "ops@example.com",
    ]));
    let id = created["subaccount_id"].as_str().unwrap().to_owned();
    assert!(created["merchant_id"].is_string());

    let key = json(&run(&["admin", "issue-key", "--subaccount", &id]));
    assert!(key["api_key"].as_str().unwrap().starts_with("pk_"));
    assert!(key["api_secret"].as_str().unwrap().starts_with("sk_"));
    let funded = json(&run(&[
        "admin",
        "fund",
        "--subaccount",
        &id,
        "--asset",
        "aud",
        "--amount",
        "250",
    ]));
    assert_eq!(
        funded,
        serde_json::json!({"asset": "AUD", "available": 250, "pending": 0})
    );
    let fee = json(&run(&[
        "admin",
        "set-fee",
        "--subaccount",
        &id,
        "--asset",
        "AUD",
        "--fixed",
        "30",
        "--percentage",
        "1.25",
        "--min-amount",
        "50",
    ]));
    assert_eq!(
        (fee["fixed"].as_i64(), fee["percentage"].as_f64()),
        (Some(30), Some(1.25))
    );
    let hook = json(&run(&[
        "admin",
        "set-webhook",
        "--subaccount",
        &id,
        "--url",
        "https://example.com/hooks",
    ]));
    assert!(
        hook["webhook_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    assert_eq!(
        json(&run(&[
            "admin",
            "require-signature-v2",
            "--subaccount",
            &id
        ]))["require_signature_v2"],
        true
    );
    let hooked = json(&run(&[
        "admin",
        "create-subaccount",
        "--name",
        "Hooked",
        "--postback-url",
        "https://example.com/hooks",
    ]));
    assert_eq!(hooked["postback_url"], "https://example.com/hooks");
    assert!(
        hooked["webhook_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    let refused = failure(&run(&[
        "admin",
        "create-subaccount",
        "--name",
        "Bad",
        "--postback-url",
        "ftp://x",
    ]));
    assert!(refused.contains("url"), "{refused}");
    let api_key = key["api_key"].as_str().unwrap();
    assert_eq!(
        json(&run(&["admin", "revoke-key", "--api-key", api_key]))["revoked"],
        true
    );

    assert!(
        failure(&run(&["admin", "revoke-key", "--api-key", api_key]))
            .contains("not found or already revoked")
    );
    assert!(
        failure(&run(&[
            "admin",
            "fund",
            "--subaccount",
            &id,
            "--asset",
            "GBP",
            "--amount",
            "1"
        ]))
        .contains("asset")
    );
    assert!(
        failure(&run(&[
            "admin",
            "fund",
            "--subaccount",
            &id,
            "--asset",
            "AUD",
            "--amount",
            "-1"
        ]))
        .contains("amount")
    );
    let unknown = "00000000-0000-4000-8000-000000000000";
    assert!(
        failure(&run(&["admin", "issue-key", "--subaccount", unknown]))
            .contains("subaccount not found")
    );
    assert!(
        failure(&run(&["admin", "issue-key", "--subaccount", "nope"])).contains("--subaccount")
    );
    assert!(
        failure(&run(&[
            "admin",
            "set-webhook",
            "--subaccount",
            &id,
            "--url",
            "ftp://x"
        ]))
        .contains("url")
    );
    // Targets payoutd could never send to are refused when set, not only when sent to; the
    // message never repeats a password.
    for (url, message) in [
        ("http://127.0.0.1:9000/hooks", "loopback"),
        ("http://[::ffff:127.0.0.1]/hooks", "loopback"),
        ("http://169.254.169.254/latest", "link-local"),
        ("https://198.18.0.1/", "benchmarking"),
        ("https://[64:ff9b::a9fe:a9fe]/", "link-local"),
        ("https://user:hunter2@hooks.example.com/", "password"),
        ("https://hooks.example.com:0/", "port"),
    ] {
        let refused = failure(&run(&[
            "admin",
            "set-webhook",
            "--subaccount",
            &id,
            "--url",
            url,
        ]));
        assert!(refused.contains("--url"), "{url}: {refused}");
        assert!(refused.to_lowercase().contains(message), "{url}: {refused}");
        assert!(!refused.contains("hunter2"), "{refused}");
    }
    let refused = failure(&run(&[
        "admin",
        "create-subaccount",
        "--name",
        "Internal",
        "--postback-url",
        "http://10.0.0.5/hooks",
    ]));
    assert!(refused.contains("private"), "{refused}");
    // Allowed explicitly (local development), a loopback receiver is accepted.
    let mut local = env.to_vec();
    local.push(("PAYOUT_WEBHOOK_ALLOW_PRIVATE", "true"));
    let set = json(&payoutd(
        &local,
        &[
            "admin",
            "set-webhook",
            "--subaccount",
            &id,
            "--url",
            "http://127.0.0.1:9000/hooks",
        ],
    ));
    assert_eq!(set["postback_url"], "http://127.0.0.1:9000/hooks");
}

#[test]
fn configuration_problems_name_the_variable() {
    let missing = failure(&payoutd(&[], &["migrate"]));
    assert!(missing.contains("DATABASE_URL"), "{missing}");
    let url = [("DATABASE_URL", "postgres://127.0.0.1:1/x")];
    let no_key = failure(&payoutd(&url, &["admin", "issue-key", "--subaccount", "x"]));
    assert!(no_key.contains("PAYOUT_MASTER_KEY"), "{no_key}");
    let bad_key = failure(&payoutd(
        &[
            ("DATABASE_URL", "postgres://127.0.0.1:1/x"),
            ("PAYOUT_MASTER_KEY", "short"),
        ],
        &["serve"],
    ));
    assert!(
        bad_key.contains("PAYOUT_MASTER_KEY") && !bad_key.contains("short"),
        "{bad_key}"
    );
    let bad_bind = failure(&payoutd(
        &[
            ("DATABASE_URL", "postgres://127.0.0.1:1/x"),
            ("PAYOUT_MASTER_KEY", MASTER_KEY),
            ("PAYOUT_BIND", "nowhere"),
        ],
        &["serve"],
    ));
    assert!(bad_bind.contains("PAYOUT_BIND"), "{bad_bind}");
    let bad_url = failure(&payoutd(&[("DATABASE_URL", "mysql://x")], &["migrate"]));
    assert!(bad_url.contains("DATABASE_URL"), "{bad_url}");
}

#[tokio::test]
async fn check_ledger_passes_on_a_consistent_ledger_and_reports_a_tampered_balance() {
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

    let db = TestDb::new().await.unwrap();
    let env = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", MASTER_KEY),
    ];
    let run = |args: &[&str]| payoutd(&env, args);
    let created = json(&run(&["admin", "create-subaccount", "--name", "Shop"]));
    let id = created["subaccount_id"].as_str().unwrap().to_owned();
    json(&run(&[
        "admin",
        "fund",
        "--subaccount",
        &id,
        "--asset",
        "AUD",
        "--amount",
        "500",
    ]));
    json(&run(&[
        "admin",
        "fund",
        "--subaccount",
        &id,
        "--asset",
        "NZD",
        "--amount",
        "70",
    ]));
    let clean = json(&run(&["admin", "check-ledger"]));
    assert_eq!(
        clean,
        serde_json::json!({"balances_checked": 2, "discrepancies": []})
    );

    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    diesel::sql_query("UPDATE balances SET available = available + 1 WHERE asset = 'AUD'")
        .execute(&mut conn)
        .await
        .unwrap();
    let tampered = run(&["admin", "check-ledger"]);
    assert!(!tampered.status.success());
    let report: Value = serde_json::from_slice(&tampered.stdout).unwrap();
    assert_eq!(
        report["discrepancies"],
        serde_json::json!([{"subaccount_id": id, "asset": "AUD", "available": 501, "pending": 0,
                            "ledger_available": 500, "ledger_pending": 0}])
    );
    assert!(String::from_utf8_lossy(&tampered.stderr).contains("1 balance(s) differ"));
}
