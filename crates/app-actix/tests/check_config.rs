//! `payoutd check-config` and `payoutd serve` outside sandbox mode, as an operator runs them:
//! the production configuration file named by `PAYOUT_CONFIG` is checked, summarised on
//! stdout, and every problem is reported on stderr naming its setting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine;
use serde_json::Value;

const MASTER_KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const SMTP_PASSWORD: &str = "correct-horse-battery-staple";

fn example() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/examples/payoutd.toml"
    ))
}

/// A fresh ed25519 private key as PKCS#8 PEM.
fn private_key() -> String {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let body = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")
}

/// The variables the example's `env:` settings name.
fn secrets() -> Vec<(String, String)> {
    let mut variables = vec![
        ("PAYOUT_SMTP_PASSWORD".to_owned(), SMTP_PASSWORD.to_owned()),
        (
            "PAYOUT_INTERAC_SECRET".to_owned(),
            "interac-secret-never-shown".to_owned(),
        ),
    ];
    for rail in ["ACH", "SEPA", "ABA", "EFT", "IB4B"] {
        variables.push((format!("PAYOUT_{rail}_SFTP_KEY"), private_key()));
    }
    variables
}

/// Writes a file readable by its owner only, as a secret file must be.
fn write_private(path: &Path, content: &str) {
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn payoutd(env: &[(String, String)], args: &[&str]) -> Output {
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

fn with(mut env: Vec<(String, String)>, name: &str, value: &str) -> Vec<(String, String)> {
    env.push((name.to_owned(), value.to_owned()));
    env
}

fn stderr_of_failure(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "succeeded; stderr: {stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout on failure");
    stderr
}

#[test]
fn check_config_prints_the_summary_of_the_example_without_secrets() {
    let env = with(secrets(), "PAYOUT_CONFIG", example().to_str().unwrap());
    let output = payoutd(&env, &["check-config"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    let summary: Value = serde_json::from_slice(&output.stdout).expect("stdout is JSON");
    assert_eq!(
        summary["enabled_methods"],
        serde_json::json!([
            "aud/direct-entry",
            "usd/ach",
            "cad/eft",
            "cad/digital",
            "eur/sepa",
            "nzd/direct-credit"
        ])
    );
    for route in [
        "aud/direct-entry",
        "usd/ach",
        "cad/eft",
        "eur/sepa",
        "nzd/direct-credit",
    ] {
        let rail = &summary["rails"][route];
        assert_eq!(rail["transport"]["kind"], "sftp", "{route}");
        let next = rail["next_cutoff"].as_str().expect("a next cut-off");
        let next = chrono::DateTime::parse_from_rfc3339(next).unwrap();
        assert!(next > chrono::Utc::now(), "{route}: {next}");
        assert!(
            rail["transport"]["private_key"]
                .as_str()
                .unwrap()
                .starts_with("[REDACTED] (env:")
        );
    }
    let digital = &summary["rails"]["cad/digital"]["transport"];
    assert_eq!(digital["kind"], "partner_api");
    assert_eq!(
        digital["shared_secret"],
        "[REDACTED] (env:PAYOUT_INTERAC_SECRET)"
    );
    assert_eq!(summary["smtp"]["host"], "smtp.example.com");
    assert_eq!(summary["smtp"]["port"], 587);
    assert_eq!(summary["smtp"]["tls"], "starttls");
    let everything = format!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
    assert!(!everything.contains(SMTP_PASSWORD));
    assert!(!everything.contains("interac-secret-never-shown"));
    for (name, value) in &env {
        if name.ends_with("_SFTP_KEY") {
            assert!(
                !everything.contains(value.lines().nth(1).unwrap()),
                "{name}"
            );
        }
    }
    assert!(!everything.contains("BEGIN PRIVATE KEY"));
}

#[test]
fn check_config_fails_on_a_broken_file_naming_every_setting() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("payoutd.toml");
    let text = std::fs::read_to_string(example())
        .unwrap()
        .replacen("company_id = \"1234567890\"", "company_id = \"12345\"", 1)
        .replacen("tls = \"starttls\"", "tls = \"none\"", 1);
    std::fs::write(&file, text).unwrap();
    let env = with(secrets(), "PAYOUT_CONFIG", file.to_str().unwrap());
    let stderr = stderr_of_failure(&payoutd(&env, &["check-config"]));
    assert!(stderr.contains("has 2 problems"), "{stderr}");
    assert!(
        stderr.contains("rails.\"usd/ach\".company_id: must be 10 characters, got 5"),
        "{stderr}"
    );
    assert!(
        stderr.contains("smtp.tls: \"none\" is allowed only for a loopback host"),
        "{stderr}"
    );

    // A missing env: variable names the setting and the variable, never the other secrets.
    let env: Vec<_> = secrets()
        .into_iter()
        .filter(|(name, _)| name != "PAYOUT_SMTP_PASSWORD")
        .chain([("PAYOUT_CONFIG".to_owned(), example().display().to_string())])
        .collect();
    let stderr = stderr_of_failure(&payoutd(&env, &["check-config"]));
    assert!(
        stderr.contains("smtp.password: environment variable PAYOUT_SMTP_PASSWORD is not set"),
        "{stderr}"
    );
    assert!(!stderr.contains("BEGIN PRIVATE KEY"));

    let stderr = stderr_of_failure(&payoutd(&secrets(), &["check-config"]));
    assert!(stderr.contains("PAYOUT_CONFIG is not set"), "{stderr}");
    let absent = dir.path().join("absent.toml");
    let env = with(secrets(), "PAYOUT_CONFIG", absent.to_str().unwrap());
    let stderr = stderr_of_failure(&payoutd(&env, &["check-config"]));
    assert!(
        stderr.contains("cannot read") && stderr.contains("absent.toml"),
        "{stderr}"
    );
}

#[test]
fn serve_outside_the_sandbox_checks_the_file_first() {
    let base = with(
        with(secrets(), "DATABASE_URL", "postgres://127.0.0.1:1/unused"),
        "PAYOUT_MASTER_KEY",
        MASTER_KEY,
    );
    let stderr = stderr_of_failure(&payoutd(&base, &["serve"]));
    assert!(stderr.contains("PAYOUT_CONFIG is not set"), "{stderr}");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("payoutd.toml");
    let text =
        std::fs::read_to_string(example())
            .unwrap()
            .replacen("\"021000021\"", "\"021000022\"", 1);
    std::fs::write(&file, text).unwrap();
    let env = with(base.clone(), "PAYOUT_CONFIG", file.to_str().unwrap());
    let stderr = stderr_of_failure(&payoutd(&env, &["serve"]));
    assert!(
        stderr.contains("rails.\"usd/ach\".immediate_destination"),
        "{stderr}"
    );

    // A valid file: the production adapters are built and the server binds (here an address
    // already taken, so it stops there instead of serving).
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let env = with(
        with(base, "PAYOUT_CONFIG", example().to_str().unwrap()),
        "PAYOUT_BIND",
        &address,
    );
    let stderr = stderr_of_failure(&payoutd(&env, &["serve"]));
    assert!(stderr.contains(&format!("binding {address}")), "{stderr}");
}

#[test]
fn check_config_checks_and_lists_the_tls_files() {
    let dir = tempfile::tempdir().unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    write_private(&key, &made.signing_key.serialize_pem());
    let env = with(secrets(), "PAYOUT_CONFIG", example().to_str().unwrap());
    let without = payoutd(&env, &["check-config"]);
    assert!(without.status.success());
    let summary: Value = serde_json::from_slice(&without.stdout).unwrap();
    assert_eq!(
        summary["tls"],
        Value::Null,
        "plain HTTP without the variables"
    );

    let env = with(env, "PAYOUT_TLS_CERT", cert.to_str().unwrap());
    let env = with(env, "PAYOUT_TLS_KEY", key.to_str().unwrap());
    let output = payoutd(&env, &["check-config"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stderr: {stderr}");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["tls"]["certificate"], cert.to_str().unwrap());
    assert_eq!(
        summary["tls"]["key"],
        format!("[REDACTED] (file:{})", key.display())
    );
    assert_eq!(summary["tls"]["chain_length"], 1);
    assert!(!String::from_utf8_lossy(&output.stdout).contains("PRIVATE KEY"));

    // A key that is not the certificate's stops check-config before the file is read.
    let other = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    write_private(&key, &other.signing_key.serialize_pem());
    let stderr = stderr_of_failure(&payoutd(&env, &["check-config"]));
    assert!(stderr.contains("PAYOUT_TLS_KEY"), "{stderr}");
    assert!(
        stderr.contains("is not the private key of the certificate"),
        "{stderr}"
    );
}

#[test]
fn check_config_shows_the_master_key_ids_and_refuses_a_bad_previous_key() {
    const PREVIOUS: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
    let env = with(secrets(), "PAYOUT_CONFIG", example().to_str().unwrap());
    // Without PAYOUT_MASTER_KEY: no key section.
    let output = payoutd(&env, &["check-config"]);
    assert!(output.status.success());
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(summary.get("master_keys").is_none());

    let current = with(env, "PAYOUT_MASTER_KEY", MASTER_KEY);
    let output = payoutd(
        &with(current.clone(), "PAYOUT_PREVIOUS_MASTER_KEY", PREVIOUS),
        &["check-config"],
    );
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    let keys = &summary["master_keys"];
    let (now, before) = (
        keys["current_key_id"].as_str().unwrap(),
        keys["previous_key_id"].as_str().unwrap(),
    );
    assert_eq!((now.len(), before.len()), (8, 8));
    assert_ne!(now, before);
    assert!(keys["note"].as_str().unwrap().contains("rotate-master-key"));
    assert!(!stdout.contains(MASTER_KEY) && !stdout.contains(PREVIOUS));

    let output = payoutd(&current, &["check-config"]);
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(summary["master_keys"]["current_key_id"], now);
    assert_eq!(summary["master_keys"]["previous_key_id"], Value::Null);

    for bad in [MASTER_KEY, "not hex at all"] {
        let stderr = stderr_of_failure(&payoutd(
            &with(current.clone(), "PAYOUT_PREVIOUS_MASTER_KEY", bad),
            &["check-config"],
        ));
        assert!(stderr.contains("PAYOUT_PREVIOUS_MASTER_KEY"), "{stderr}");
        assert!(
            !stderr.contains(bad) && !stderr.contains(MASTER_KEY),
            "{stderr}"
        );
    }
}
