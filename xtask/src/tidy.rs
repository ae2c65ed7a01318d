//! Tidy tests: rules of the workspace's shape that the compiler does not check.
//!
//! - `domain` depends on no framework, database, HTTP or runtime crate (its normal
//!   dependencies; dev-dependencies may use tokio and mockall).
//! - An adapter depends on `domain`, never on another adapter or on `app-actix`.
//! - Nothing links libpq or OpenSSL (`pq-sys`, `openssl-sys`, `native-tls` never in Cargo.lock).

use std::process::Command;

use serde_json::Value;

use crate::paths::workspace_root;

const FORBIDDEN_IN_DOMAIN: &[&str] = &[
    "actix",
    "actix-web",
    "actix-rt",
    "deadpool",
    "diesel",
    "diesel-async",
    "diesel_migrations",
    "hyper",
    "reqwest",
    "sqlx",
    "tokio",
    "tokio-postgres",
    "tracing-subscriber",
];

fn metadata() -> Value {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        other => panic!("cargo metadata failed: {other:?}"),
    };
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("cargo metadata output: {e}"))
}

/// (dependency name, kind) of a workspace package; kind is `normal`, `dev` or `build`.
fn dependencies(metadata: &Value, package: &str) -> Vec<(String, String)> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let Some(found) = packages.iter().find(|p| p["name"] == package) else {
        panic!("package {package} not in the workspace");
    };
    found["dependencies"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|d| {
            let name = d["name"].as_str().unwrap_or_default().to_owned();
            let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
            (name, kind)
        })
        .collect()
}

#[test]
fn domain_depends_on_no_framework_database_http_or_runtime_crate() {
    let metadata = metadata();
    let offending: Vec<String> = dependencies(&metadata, "domain")
        .into_iter()
        .filter(|(name, kind)| kind == "normal" && FORBIDDEN_IN_DOMAIN.contains(&name.as_str()))
        .map(|(name, _)| name)
        .collect();
    assert!(
        offending.is_empty(),
        "domain must stay pure, but depends on {offending:?}"
    );
}

#[test]
fn adapters_depend_on_domain_but_not_on_each_other_or_the_app() {
    let metadata = metadata();
    for adapter in [
        "adapters-postgres",
        "adapters-webhook",
        "adapters-sandbox",
        "adapters-filetransfer",
    ] {
        let deps = dependencies(&metadata, adapter);
        let normal: Vec<&str> = deps
            .iter()
            .filter(|(_, k)| k == "normal")
            .map(|(n, _)| n.as_str())
            .collect();
        let wrong: Vec<&&str> = normal
            .iter()
            .filter(|n| n.starts_with("adapters-") || **n == "app-actix")
            .collect();
        assert!(wrong.is_empty(), "{adapter} depends on {wrong:?}");
    }
}

#[test]
fn nothing_links_libpq_or_openssl() {
    let lock = std::fs::read_to_string(workspace_root().join("Cargo.lock"))
        .unwrap_or_else(|e| panic!("reading Cargo.lock: {e}"));
    for forbidden in ["pq-sys", "openssl-sys", "native-tls"] {
        assert!(
            !lock.contains(&format!("name = \"{forbidden}\"")),
            "Cargo.lock contains {forbidden}"
        );
    }
}

#[test]
fn the_rules_can_fail() {
    // The checks above inspect real data: make sure the data is what they think it is.
    let metadata = metadata();
    let app = dependencies(&metadata, "app-actix");
    assert!(
        app.iter()
            .any(|(name, kind)| name == "actix-web" && kind == "normal")
    );
    assert!(app.iter().any(|(name, _)| name == "adapters-postgres"));
    let domain = dependencies(&metadata, "domain");
    assert!(
        domain
            .iter()
            .any(|(name, kind)| name == "tokio" && kind == "dev")
    );
}
