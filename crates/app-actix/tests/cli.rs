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
    assert_eq!(created["signature_policy"], "v2_for_posts", "the default");

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
        "--reason",
        "CLI test",
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
    assert_eq!(
        json(&run(&[
            "admin",
            "signature-policy",
            "--subaccount",
            &id,
            "--policy",
            "any"
        ])),
        serde_json::json!({"subaccount_id": id, "signature_policy": "any"})
    );
    let odd = failure(&run(&[
        "admin",
        "signature-policy",
        "--subaccount",
        &id,
        "--policy",
        "v1",
    ]));
    assert!(odd.contains("expected any, v2_for_posts or v2"), "{odd}");
    let legacy = json(&run(&[
        "admin",
        "create-subaccount",
        "--name",
        "Legacy client",
        "--signature-policy",
        "any",
    ]));
    assert_eq!(legacy["signature_policy"], "any");
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
    assert!(refused.contains("invalid url"), "{refused}");
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
            "1",
            "--reason",
            "CLI test",
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
            "-1",
            "--reason",
            "CLI test",
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
        assert!(refused.contains("invalid postback URL"), "{url}: {refused}");
        assert!(refused.to_lowercase().contains(message), "{url}: {refused}");
        assert!(!refused.contains("hunter2"), "{refused}");
    }
    // The hint to allow private targets comes only where allowing them would help: not for
    // an address that is never one receiver, nor for one that is not a private network's.
    for (url, range, hinted) in [
        ("http://127.0.0.1:9000/hooks", "loopback", true),
        ("http://10.0.0.5/hooks", "private", true),
        ("http://[fe80::1]/hooks", "link-local", true),
        ("http://224.0.0.1/hooks", "multicast", false),
        ("http://[ff02::1]/hooks", "multicast", false),
        ("http://0.0.0.0/hooks", "unspecified", false),
        ("http://240.0.0.1/hooks", "reserved", false),
        ("http://255.255.255.255/hooks", "broadcast", false),
        ("http://192.0.2.1/hooks", "documentation", false),
    ] {
        let refused = failure(&run(&[
            "admin",
            "set-webhook",
            "--subaccount",
            &id,
            "--url",
            url,
        ]));
        assert!(refused.contains(range), "{url}: {refused}");
        assert_eq!(
            refused.contains("PAYOUT_WEBHOOK_ALLOW_PRIVATE"),
            hinted,
            "{url}: {refused}"
        );
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

#[tokio::test]
async fn every_admin_change_is_audited_as_the_cli_user_and_a_refused_one_is_not() {
    let db = TestDb::new().await.unwrap();
    let env = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", MASTER_KEY),
        ("USER", "ann"),
    ];
    let run = |args: &[&str]| payoutd(&env, args);
    json(&run(&["migrate"]));
    let created = json(&run(&["admin", "create-subaccount", "--name", "Shop <b>"]));
    let id = created["subaccount_id"].as_str().unwrap().to_owned();
    let key = json(&run(&["admin", "issue-key", "--subaccount", &id]));
    let api_key = key["api_key"].as_str().unwrap().to_owned();
    let api_secret = key["api_secret"].as_str().unwrap().to_owned();
    json(&run(&["admin", "revoke-key", "--api-key", &api_key]));
    let hook = json(&run(&[
        "admin",
        "set-webhook",
        "--subaccount",
        &id,
        "--url",
        "https://hooks.example.com/payoutd",
    ]));
    let rotated = json(&run(&[
        "admin",
        "rotate-webhook-secret",
        "--subaccount",
        &id,
    ]));
    json(&run(&[
        "admin",
        "set-fee",
        "--subaccount",
        &id,
        "--asset",
        "AUD",
        "--fixed",
        "30",
        "--percentage",
        "1.5",
        "--min-amount",
        "0",
    ]));
    json(&run(&[
        "admin",
        "fund",
        "--subaccount",
        &id,
        "--asset",
        "AUD",
        "--amount",
        "500",
        "--reason",
        "initial float",
    ]));
    json(&run(&[
        "admin",
        "signature-policy",
        "--subaccount",
        &id,
        "--policy",
        "v2",
    ]));
    // The same policy again changes nothing; a refused funding writes nothing.
    json(&run(&[
        "admin",
        "signature-policy",
        "--subaccount",
        &id,
        "--policy",
        "v2",
    ]));
    let blank = failure(&run(&[
        "admin",
        "fund",
        "--subaccount",
        &id,
        "--asset",
        "AUD",
        "--amount",
        "5",
        "--reason",
        " ",
    ]));
    assert!(blank.contains("reason"), "{blank}");
    assert!(
        failure(&run(&[
            "admin",
            "fund",
            "--subaccount",
            &id,
            "--asset",
            "AUD",
            "--amount",
            "5"
        ]))
        .contains("--reason")
    );

    let log = json(&run(&["admin", "audit"]));
    let entries = log.as_array().unwrap();
    let actions: Vec<&str> = entries
        .iter()
        .rev()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "subaccount.create",
            "api_key.issue",
            "api_key.revoke",
            "webhook.set",
            "webhook.rotate_secret",
            "fee.set",
            "balance.fund",
            "subaccount.signature_policy",
        ]
    );
    for entry in entries {
        assert_eq!(entry["actor"]["name"], "cli:ann", "{entry}");
        assert_eq!(entry["actor"]["kind"], "cli", "{entry}");
    }
    assert_eq!(entries[1]["after"]["reason"], "initial float");
    assert_eq!(entries[1]["after"]["amount"], 500);
    assert_eq!(entries[1]["object"]["id"], id.as_str());
    assert_eq!(entries[7]["after"]["name"], "Shop <b>");
    let text = log.to_string();
    for secret in [
        api_secret.as_str(),
        hook["webhook_secret"].as_str().unwrap(),
        rotated["webhook_secret"].as_str().unwrap(),
    ] {
        assert!(!text.contains(secret), "the audit log holds no secret");
    }
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
    for (variable, value, expected) in [
        (
            "PAYOUT_HTTP_KEEP_ALIVE_SECS",
            "forever",
            "seconds from 0 to 3600",
        ),
        (
            "PAYOUT_HTTP_KEEP_ALIVE_SECS",
            "3601",
            "seconds from 0 to 3600",
        ),
        (
            "PAYOUT_HTTP_REQUEST_TIMEOUT_MS",
            "99",
            "milliseconds from 100 to 60000",
        ),
        (
            "PAYOUT_HTTP_REQUEST_TIMEOUT_MS",
            "-1",
            "milliseconds from 100 to 60000",
        ),
    ] {
        let bad = failure(&payoutd(
            &[
                ("DATABASE_URL", "postgres://127.0.0.1:1/x"),
                ("PAYOUT_MASTER_KEY", MASTER_KEY),
                ("PAYOUT_BIND", "127.0.0.1:0"),
                (variable, value),
            ],
            &["serve"],
        ));
        assert!(
            bad.contains(&format!("{variable} must be {expected}, got {value:?}")),
            "{bad}"
        );
    }
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
        "--reason",
        "CLI test",
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
        "--reason",
        "CLI test",
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

const NEW_MASTER_KEY: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

/// How many API secrets are sealed under `key` (their ciphertext starts with its header).
async fn api_keys_under(db: &TestDb, key: &str) -> i64 {
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let parsed = payoutd_key(key);
    let header = adapters_postgres::Vault::new(&parsed)
        .unwrap()
        .current_header();
    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    diesel::sql_query(
        "SELECT count(*) AS n FROM api_keys WHERE substring(secret_ciphertext from 1 for 5) = $1",
    )
    .bind::<diesel::sql_types::Bytea, _>(header.to_vec())
    .get_result::<Count>(&mut conn)
    .await
    .unwrap()
    .n
}

fn payoutd_key(hex_key: &str) -> domain::masking::Secret<[u8; 32]> {
    let mut key = [0u8; 32];
    hex::decode_to_slice(hex_key, &mut key).unwrap();
    domain::masking::Secret::new(key)
}

#[tokio::test]
async fn rotate_master_key_killed_midway_completes_when_run_again() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let db = TestDb::new().await.unwrap();
    let old = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", MASTER_KEY),
    ];
    json(&payoutd(&old, &["migrate"]));
    let sub = json(&payoutd(
        &old,
        &["admin", "create-subaccount", "--name", "Shop"],
    ));
    let sub = sub["subaccount_id"].as_str().unwrap().to_owned();
    let mut keys = Vec::new();
    for _ in 0..8 {
        let key = json(&payoutd(
            &old,
            &["admin", "issue-key", "--subaccount", &sub],
        ));
        keys.push(key["api_key"].as_str().unwrap().to_owned());
    }
    assert_eq!(api_keys_under(&db, MASTER_KEY).await, 8);
    let both = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", NEW_MASTER_KEY),
        ("PAYOUT_PREVIOUS_MASTER_KEY", MASTER_KEY),
    ];

    // One key per transaction, slowly; SIGKILL once the first batch has committed.
    let mut child = Command::new(env!("CARGO_BIN_EXE_payoutd"))
        .args([
            "admin",
            "rotate-master-key",
            "--batch-size",
            "1",
            "--pause-ms",
            "400",
        ])
        .env_clear()
        .envs(both)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("api_keys: 1 row(s) re-sealed"), "{line}");
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
    let moved = api_keys_under(&db, NEW_MASTER_KEY).await;
    assert!((1..8).contains(&moved), "partial progress: {moved}");
    assert_eq!(api_keys_under(&db, MASTER_KEY).await, 8 - moved);

    let summary = json(&payoutd(&both, &["admin", "rotate-master-key"]));
    assert_eq!(summary["complete"], true);
    assert_eq!(summary["remaining"], 0);
    assert_eq!(summary["failures"], serde_json::json!([]));
    assert_eq!(summary["tables"]["api_keys"]["rotated"], 8 - moved);
    assert_eq!(summary["tables"]["api_keys"]["remaining"], 0);
    assert_eq!(api_keys_under(&db, NEW_MASTER_KEY).await, 8);
    // Again: nothing left to do.
    let again = json(&payoutd(&both, &["admin", "rotate-master-key"]));
    assert_eq!(
        (again["rotated"].as_u64(), again["complete"].as_bool()),
        (Some(0), Some(true))
    );

    // The new key alone now serves every key, e.g. a webhook secret issued for the subaccount
    // and the API secrets (revoking one opens nothing, so read them through the vault).
    let new_only = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", NEW_MASTER_KEY),
    ];
    json(&payoutd(
        &new_only,
        &["admin", "revoke-key", "--api-key", &keys[0]],
    ));
    let store = adapters_postgres::PgStore::new(
        adapters_postgres::create_pool(&adapters_postgres::DbConfig::new(db.url())).unwrap(),
        std::sync::Arc::new(adapters_postgres::Vault::new(&payoutd_key(NEW_MASTER_KEY)).unwrap()),
    );
    use domain::auth::ports::CredentialStore;
    for key in &keys[1..] {
        assert!(store.find_credential(key).await.unwrap().is_some(), "{key}");
    }
}

#[tokio::test]
async fn rotate_master_key_names_rows_it_cannot_open_and_refuses_bad_keys() {
    let db = TestDb::new().await.unwrap();
    let old = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", MASTER_KEY),
    ];
    json(&payoutd(&old, &["migrate"]));
    let sub = json(&payoutd(
        &old,
        &["admin", "create-subaccount", "--name", "Shop"],
    ));
    let sub = sub["subaccount_id"].as_str().unwrap().to_owned();
    json(&payoutd(
        &old,
        &["admin", "issue-key", "--subaccount", &sub],
    ));

    // The previous key equal to the current one, or malformed: refused without printing it.
    let same = failure(&payoutd(
        &[
            ("DATABASE_URL", db.url()),
            ("PAYOUT_MASTER_KEY", MASTER_KEY),
            ("PAYOUT_PREVIOUS_MASTER_KEY", MASTER_KEY),
        ],
        &["admin", "rotate-master-key"],
    ));
    assert!(
        same.contains("PAYOUT_PREVIOUS_MASTER_KEY") && !same.contains(MASTER_KEY),
        "{same}"
    );
    let malformed = "0123456789abcdef0123456789abcdefXX";
    let bad = failure(&payoutd(
        &[
            ("DATABASE_URL", db.url()),
            ("PAYOUT_MASTER_KEY", NEW_MASTER_KEY),
            ("PAYOUT_PREVIOUS_MASTER_KEY", malformed),
        ],
        &["serve"],
    ));
    assert!(
        bad.contains("PAYOUT_PREVIOUS_MASTER_KEY") && !bad.contains(malformed),
        "{bad}"
    );

    // Rotating with a wrong previous key: the key cannot be opened; named by table and id.
    let wrong = [
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", NEW_MASTER_KEY),
        (
            "PAYOUT_PREVIOUS_MASTER_KEY",
            "1111111111111111111111111111111111111111111111111111111111111111",
        ),
    ];
    let output = payoutd(&wrong, &["admin", "rotate-master-key"]);
    assert!(!output.status.success());
    let summary: Value = serde_json::from_slice(&output.stdout).expect("summary on stdout");
    assert_eq!(summary["complete"], false);
    assert_eq!(summary["remaining"], 1);
    let row = summary["failures"][0]["row"].as_str().unwrap().to_owned();
    assert_eq!(summary["failures"][0]["table"], "api_keys");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("api_keys {row}")), "{stderr}");
    assert!(!stderr.contains("sk_"), "{stderr}");
}
