//! The request signing examples of docs/API.md (docs/examples/signing/) run against a live
//! payoutd, as a merchant's developer would run them: each makes a v1-signed GET and a v2-signed
//! POST with an idempotency key, sent twice, and must see the retry replayed. The subaccount has
//! the default signature policy (`v2_for_posts`), so a POST signed with v1 would be refused.
//!
//! Python and Node are required (the webhook examples' test needs them too). Go, and the shell's
//! `curl` and `openssl`, are optional: where one is missing its example is skipped with a message
//! saying so.

use std::process::Command;

use domain::auth::SignaturePolicy;

use crate::helpers::{TestApp, spawn_app, subaccount};

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/examples/signing");

/// Whether `program` runs (`program --version` or `program version`).
fn installed(program: &str, version_arg: &str) -> bool {
    Command::new(program)
        .arg(version_arg)
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Runs one example against `app`'s tenant A; returns its stdout, failing with its output unless
/// it exits 0.
fn run(app: &TestApp, program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(EXAMPLES)
        .env("PAYOUTD_URL", &app.base)
        .env("PAYOUTD_API_KEY", &app.a.api_key)
        .env("PAYOUTD_API_SECRET", &app.a.api_secret)
        .env("PAYOUTD_SUBACCOUNT", &app.a.subaccount_id)
        // Go's build cache, where a test may write.
        .env("GOCACHE", std::env::temp_dir().join("payoutd-go-cache"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{program}` ({e})"));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{program} {args:?} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// What every example prints for a run that worked: the GET, both POSTs (the retry replayed),
/// and the receiver they created, which exists once.
async fn assert_worked(app: &TestApp, example: &str, stdout: &str) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{example}:\n{stdout}");
    assert_eq!(
        lines[0],
        format!("GET /api/subaccount/{} (v1): 200", app.a.subaccount_id),
        "{example}"
    );
    assert_eq!(
        lines[1], "POST /api/receiver (v2, first): 200, idempotent-replayed: false",
        "{example}"
    );
    assert_eq!(
        lines[2], "POST /api/receiver (v2, retry): 200, idempotent-replayed: true",
        "{example}"
    );
    let id = lines[3]
        .strip_prefix("receiver_id: ")
        .unwrap_or_else(|| panic!("{example}: {}", lines[3]));
    let read = app.get(&app.a, &format!("/api/receiver/{id}")).await;
    assert_eq!(read.status, 200, "{example}: {}", read.body);
    assert_eq!(read.body["payload"]["first_name"], "Ada", "{example}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_signing_example_gets_signs_and_retries_a_post_against_a_live_payoutd() {
    let app = spawn_app().await;
    // The default policy of a new subaccount: v1 for GETs, v2 for POSTs.
    app.admin
        .set_signature_policy(subaccount(&app.a), SignaturePolicy::V2ForPosts)
        .await
        .unwrap();

    let mut examples: Vec<(&str, &str, Vec<&str>)> = vec![
        ("sign.py", "python3", vec!["sign.py"]),
        ("sign.js", "node", vec!["sign.js"]),
    ];
    if installed("go", "version") {
        examples.push(("sign.go", "go", vec!["run", "sign.go"]));
    } else {
        eprintln!("signing_examples: `go` is not installed: docs/examples/signing/sign.go skipped");
    }
    if installed("curl", "--version") && installed("openssl", "version") {
        examples.push(("sign.sh", "sh", vec!["sign.sh"]));
    } else {
        eprintln!(
            "signing_examples: `curl` or `openssl` is not installed: docs/examples/signing/sign.sh skipped"
        );
    }
    for (example, program, args) in examples {
        let stdout = tokio::task::block_in_place(|| run(&app, program, &args));
        assert_worked(&app, example, &stdout).await;
    }
}

#[test]
fn each_example_refuses_to_run_without_its_settings() {
    // Exit 2 and the variable's name: not a request signed with an empty secret.
    for (program, args) in [("python3", vec!["sign.py"]), ("node", vec!["sign.js"])] {
        let output = Command::new(program)
            .args(&args)
            .current_dir(EXAMPLES)
            .env_remove("PAYOUTD_API_KEY")
            .output()
            .unwrap_or_else(|e| panic!("cannot run `{program}` ({e})"));
        assert_eq!(output.status.code(), Some(2), "{program}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("PAYOUTD_API_KEY"),
            "{program}"
        );
    }
}
