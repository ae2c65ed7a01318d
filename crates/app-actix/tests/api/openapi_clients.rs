//! Clients generated from `docs/openapi.json` work against a live payoutd, as a merchant's
//! developer would use them (docs/API.md, "Generated clients"):
//! - openapi-python-client generates a Python client with its default settings and no
//!   warning; `docs/examples/clients/pay.py` uses it, signed by the hook of
//!   `docs/examples/clients/payoutd_signing.py` (the code docs/API.md shows), to create a
//!   receiver, an account and a payout in the sandbox and read them back;
//! - openapi-typescript's types type-check with `tsc --strict`, and so does
//!   `docs/examples/clients/usage.ts`, which uses them;
//! - the Postman collection `docs/examples/postman/` has a request for every operation, and
//!   newman runs its sandbox walkthrough (signed by its pre-request script) to a payout.
//!
//! The generators (pinned in `xtask/openapi-clients/`) are installed under
//! `<target dir>/openapi-clients` by `cargo xtask test`, which passes their places in
//! `PAYOUT_OPENAPI_PYTHON_VENV` and `PAYOUT_OPENAPI_NODE_BIN`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use domain::auth::SignaturePolicy;
use serde_json::Value;

use crate::helpers::{TestApp, spawn_app, subaccount};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

fn repository(path: &str) -> PathBuf {
    Path::new(ROOT).join(path)
}

/// A tool's place, from the variable `cargo xtask test` sets; the failure says how to get it.
fn tool_dir(variable: &str) -> PathBuf {
    let dir = std::env::var_os(variable)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "{variable} is not set: run these tests with `cargo xtask test -p app-actix --test \
             api`, which installs the client generators pinned in xtask/openapi-clients/ under \
             <target dir>/openapi-clients and sets it"
            )
        });
    assert!(
        dir.is_dir(),
        "{variable}={} does not exist; `cargo xtask test` installs it",
        dir.display()
    );
    dir
}

fn python_venv() -> PathBuf {
    tool_dir("PAYOUT_OPENAPI_PYTHON_VENV")
}

fn node_bin() -> PathBuf {
    tool_dir("PAYOUT_OPENAPI_NODE_BIN")
}

/// `PATH` with `dir` first (openapi-python-client runs `ruff` from its venv after generating;
/// the npm tools run `node`).
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// Runs `command`, failing with its output unless it exits 0.
fn run(what: &str, command: &mut Command) -> Output {
    let output = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what} ({e})"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The tenant's environment, as the examples read it.
fn merchant_env<'a>(command: &'a mut Command, app: &TestApp) -> &'a mut Command {
    command
        .env("PAYOUTD_URL", &app.base)
        .env("PAYOUTD_API_KEY", &app.a.api_key)
        .env("PAYOUTD_API_SECRET", &app.a.api_secret)
        .env("PAYOUTD_SUBACCOUNT", &app.a.subaccount_id)
}

/// A live payoutd whose tenant A has the default signature policy and 1,000.00 AUD.
async fn funded_app() -> TestApp {
    let app = spawn_app().await;
    app.admin
        .set_signature_policy(subaccount(&app.a), SignaturePolicy::V2ForPosts)
        .await
        .unwrap();
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    app
}

/// The value after `label: ` on the line starting with it.
fn field<'o>(stdout: &'o str, label: &str) -> &'o str {
    stdout
        .lines()
        .find_map(|line| line.strip_prefix(label)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no `{label}:` line in\n{stdout}"))
}

/// The first fenced block after `heading` in `markdown` (without its fences).
fn code_block_after<'m>(markdown: &'m str, heading: &str) -> &'m str {
    let section = &markdown[markdown
        .find(heading)
        .unwrap_or_else(|| panic!("docs/API.md has no `{heading}`"))..];
    let start = section.find("```python\n").expect("a python block") + "```python\n".len();
    let end = section[start..].find("\n```").expect("its end") + start + 1;
    &section[start..end]
}

#[test]
fn docs_api_md_shows_the_signing_hook_the_test_runs() {
    let doc = std::fs::read_to_string(repository("docs/API.md")).unwrap();
    let hook =
        std::fs::read_to_string(repository("docs/examples/clients/payoutd_signing.py")).unwrap();
    assert_eq!(
        code_block_after(&doc, "### Generated clients"),
        hook,
        "docs/API.md's hook and docs/examples/clients/payoutd_signing.py differ"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_python_client_pays_a_receiver_in_the_sandbox() {
    let venv = python_venv();
    let bin = venv.join("bin");
    let work = tempfile::tempdir().unwrap();
    let client = work.path().join("payoutd-client");

    // Default settings: no config file.
    let generated = tokio::task::block_in_place(|| {
        run(
            "openapi-python-client generate",
            Command::new(bin.join("openapi-python-client"))
                .arg("generate")
                .arg("--path")
                .arg(repository("docs/openapi.json"))
                .arg("--output-path")
                .arg(&client)
                .env("PATH", path_with(&bin)),
        )
    });
    let said = String::from_utf8_lossy(&generated.stdout).into_owned()
        + &String::from_utf8_lossy(&generated.stderr);
    for warning in ["Warning", "Skipping", "Unable", "Error"] {
        assert!(
            !said.contains(warning),
            "openapi-python-client warned about docs/openapi.json:\n{said}"
        );
    }

    let app = funded_app().await;
    let python_path =
        std::env::join_paths([client.clone(), repository("docs/examples/clients")]).unwrap();
    let paid = tokio::task::block_in_place(|| {
        run(
            "docs/examples/clients/pay.py",
            merchant_env(
                Command::new(bin.join("python"))
                    .arg(repository("docs/examples/clients/pay.py"))
                    .env("PYTHONPATH", python_path)
                    .env("PYTHONDONTWRITEBYTECODE", "1"),
                &app,
            ),
        )
    });
    let stdout = String::from_utf8_lossy(&paid.stdout).into_owned();
    assert_eq!(
        field(&stdout, "receiver"),
        "Ada Lovelace, active",
        "{stdout}"
    );
    assert!(
        field(&stdout, "payout").starts_with("pending 10000 AUD invoice-"),
        "{stdout}"
    );

    // What the client created, read back through the API.
    let receiver = app
        .get(
            &app.a,
            &format!("/api/receiver/{}", field(&stdout, "receiver_id")),
        )
        .await;
    assert_eq!(receiver.status, 200, "{}", receiver.body);
    assert_eq!(receiver.body["payload"]["kyc_status"], "completed");
    let payout = app
        .get(
            &app.a,
            &format!("/api/payout/{}", field(&stdout, "payout_id")),
        )
        .await;
    assert_eq!(payout.status, 200, "{}", payout.body);
    assert_eq!(payout.body["payload"]["amount"], 10_000);
    assert_eq!(
        payout.body["payload"]["receiver_account"]["id"],
        field(&stdout, "account_id")
    );
    let (available, pending) = app.aud_balance(&app.a).await;
    assert_eq!(available + pending, 100_000);
    assert!(pending >= 10_000, "{pending}");
}

#[test]
fn generated_typescript_types_type_check_strictly_with_their_example() {
    let bin = node_bin();
    let work = tempfile::tempdir().unwrap();
    let types = work.path().join("payoutd.d.ts");
    run(
        "openapi-typescript",
        Command::new(bin.join("openapi-typescript"))
            .arg(repository("docs/openapi.json"))
            .arg("--output")
            .arg(&types)
            .env("PATH", path_with(&bin)),
    );
    let usage = work.path().join("usage.ts");
    std::fs::copy(repository("docs/examples/clients/usage.ts"), &usage).unwrap();
    // Both files: the example imports the types, so their strict check is part of it.
    run(
        "tsc --strict",
        Command::new(bin.join("tsc"))
            .args([
                "--strict",
                "--noEmit",
                "--target",
                "es2022",
                "--module",
                "esnext",
                "--moduleResolution",
                "bundler",
            ])
            .arg(&types)
            .arg(&usage)
            .env("PATH", path_with(&bin)),
    );
}

/// (METHOD, path template) of every operation of the document.
fn documented_operations() -> BTreeSet<(String, String)> {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(repository("docs/openapi.json")).unwrap())
            .unwrap();
    let mut operations = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            operations.insert((method.to_uppercase(), path.clone()));
        }
    }
    operations
}

fn collection() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(repository(
            "docs/examples/postman/payoutd.postman_collection.json",
        ))
        .unwrap(),
    )
    .unwrap()
}

/// Every request of a collection folder tree: (folder, METHOD, path segments).
fn requests(items: &Value, folder: &str, out: &mut Vec<(String, String, Vec<String>)>) {
    for item in items.as_array().unwrap() {
        if let Some(children) = item.get("item") {
            requests(children, item["name"].as_str().unwrap(), out);
        } else {
            let request = &item["request"];
            let segments = request["url"]["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_owned())
                .collect();
            out.push((
                folder.to_owned(),
                request["method"].as_str().unwrap().to_owned(),
                segments,
            ));
        }
    }
}

/// Whether collection path segments (`{{variable}}` for a parameter) are `template`'s.
fn matches_template(segments: &[String], template: &str) -> bool {
    let parts: Vec<&str> = template.trim_start_matches('/').split('/').collect();
    parts.len() == segments.len()
        && parts.iter().zip(segments).all(|(part, segment)| {
            if part.starts_with('{') {
                segment.starts_with("{{") && segment.ends_with("}}")
            } else {
                part == segment
            }
        })
}

#[test]
fn the_postman_collection_has_a_request_for_every_operation_and_signs_them() {
    let collection = collection();
    let mut all = Vec::new();
    requests(&collection["item"], "", &mut all);
    let documented = documented_operations();
    for (method, template) in &documented {
        assert!(
            all.iter()
                .any(|(_, m, segments)| m == method && matches_template(segments, template)),
            "the collection has no request for {method} {template}; regenerate it with \
             `cargo xtask postman`"
        );
    }
    for (folder, method, segments) in &all {
        assert!(
            documented
                .iter()
                .any(|(m, template)| m == method && matches_template(segments, template)),
            "{folder}: {method} /{} is not an operation of docs/openapi.json",
            segments.join("/")
        );
    }
    let script = collection["event"][0]["script"]["exec"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(collection["event"][0]["listen"], "prerequest");
    for part in ["x-signature-version", "HmacSHA256", "getPathWithQuery"] {
        assert!(script.contains(part), "{part} missing from\n{script}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newman_runs_the_collections_sandbox_walkthrough_to_a_payout() {
    let bin = node_bin();
    let app = funded_app().await;
    let ran = tokio::task::block_in_place(|| {
        let mut newman = Command::new(bin.join("newman"));
        newman
            .arg("run")
            .arg(repository(
                "docs/examples/postman/payoutd.postman_collection.json",
            ))
            .args(["--folder", "Pay a receiver (sandbox)", "--bail"])
            .args(["--reporters", "cli", "--color", "off", "--disable-unicode"])
            .args(["--env-var", &format!("baseUrl={}", app.base)])
            .args(["--env-var", &format!("apiKey={}", app.a.api_key)])
            .args(["--env-var", &format!("apiSecret={}", app.a.api_secret)])
            .args([
                "--env-var",
                &format!("subaccountId={}", app.a.subaccount_id),
            ])
            .env("PATH", path_with(&bin));
        run("newman run", &mut newman)
    });
    let stdout = String::from_utf8_lossy(&ran.stdout);
    // Every step answered 200 (each checks it, and --bail stops at the first that does not).
    assert_eq!(stdout.matches("answers 200").count(), 7, "{stdout}");

    // What the walkthrough made, read back through the API: one payout, to a receiver whose
    // KYC is complete, on a confirmed account.
    let listed = app
        .get(
            &app.a,
            &format!("/api/payout?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let payouts = listed.body["payload"].as_array().unwrap();
    assert_eq!(payouts.len(), 1, "{}", listed.body);
    let payout = app
        .get(
            &app.a,
            &format!("/api/payout/{}", payouts[0]["id"].as_str().unwrap()),
        )
        .await;
    assert_eq!(payout.status, 200, "{}", payout.body);
    let payout = &payout.body["payload"];
    assert_eq!(
        (&payout["status"], &payout["amount"], &payout["asset"]),
        (&"pending".into(), &10_000.into(), &"AUD".into())
    );
    assert!(
        payout["reference"]
            .as_str()
            .unwrap()
            .starts_with("invoice-")
    );
    let receiver = app
        .get(
            &app.a,
            &format!(
                "/api/receiver/{}",
                payout["receiver"]["id"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(receiver.body["payload"]["kyc_status"], "completed");
    let account = app
        .get(
            &app.a,
            &format!(
                "/api/receiver-account/{}",
                payout["receiver_account"]["id"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(account.body["payload"]["confirm_status"], "confirmed");
}
