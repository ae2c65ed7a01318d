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
const PREVIOUS: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
const SMTP_PASSWORD: &str = "correct-horse-battery-staple";
const INTERAC_SECRET: &str = "interac-secret-never-shown";

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

/// The systemd credentials the example's `credential:` settings name, in a directory of their
/// own (each file mode 0600, as systemd gives them), and the environment that points at it.
struct Credentials {
    dir: tempfile::TempDir,
}

impl Credentials {
    fn example() -> Self {
        let credentials = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        credentials.write("smtp-password", &format!("{SMTP_PASSWORD}\n"));
        credentials.write("interac-shared-secret", INTERAC_SECRET);
        for rail in ["ach", "sepa", "aba", "eft", "ib4b"] {
            credentials.write(&format!("{rail}-sftp-key"), &private_key());
        }
        credentials
    }

    fn write(&self, name: &str, content: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        write_private(&path, content);
        path
    }

    /// `CREDENTIALS_DIRECTORY` pointing at them.
    fn env(&self) -> Vec<(String, String)> {
        vec![(
            "CREDENTIALS_DIRECTORY".to_owned(),
            self.dir.path().display().to_string(),
        )]
    }

    /// [`Credentials::env`] and `PAYOUT_CONFIG` naming the example.
    fn with_example(&self) -> Vec<(String, String)> {
        with(self.env(), "PAYOUT_CONFIG", example().to_str().unwrap())
    }

    /// The SFTP keys they hold.
    fn keys(&self) -> Vec<String> {
        ["ach", "sepa", "aba", "eft", "ib4b"]
            .iter()
            .map(|rail| {
                std::fs::read_to_string(self.dir.path().join(format!("{rail}-sftp-key"))).unwrap()
            })
            .collect()
    }
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
    let credentials = Credentials::example();
    let env = credentials.with_example();
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
                .starts_with("[REDACTED] (credential:")
        );
    }
    let digital = &summary["rails"]["cad/digital"]["transport"];
    assert_eq!(digital["kind"], "partner_api");
    assert_eq!(
        digital["shared_secret"],
        "[REDACTED] (credential:interac-shared-secret)"
    );
    assert_eq!(
        summary["smtp"]["password"],
        "[REDACTED] (credential:smtp-password)"
    );
    assert_eq!(summary["smtp"]["host"], "smtp.example.com");
    assert_eq!(summary["smtp"]["port"], 587);
    assert_eq!(summary["smtp"]["tls"], "starttls");
    let everything = format!("{}{stderr}", String::from_utf8_lossy(&output.stdout));
    assert!(!everything.contains(SMTP_PASSWORD));
    assert!(!everything.contains(INTERAC_SECRET));
    for key in credentials.keys() {
        assert!(!everything.contains(key.lines().nth(1).unwrap()));
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
    let credentials = Credentials::example();
    let env = with(credentials.env(), "PAYOUT_CONFIG", file.to_str().unwrap());
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

    // A missing credential names the setting and the credential, never the other secrets.
    std::fs::remove_file(credentials.dir.path().join("smtp-password")).unwrap();
    let env = credentials.with_example();
    let stderr = stderr_of_failure(&payoutd(&env, &["check-config"]));
    assert!(
        stderr.contains("smtp.password: the systemd credential smtp-password is not in"),
        "{stderr}"
    );
    assert!(!stderr.contains("BEGIN PRIVATE KEY"));
    // Outside systemd, without CREDENTIALS_DIRECTORY: every credential setting says so.
    let outside = vec![("PAYOUT_CONFIG".to_owned(), example().display().to_string())];
    let stderr = stderr_of_failure(&payoutd(&outside, &["check-config"]));
    assert!(stderr.contains("has 7 problems"), "{stderr}");
    assert!(
        stderr.contains(
            "rails.\"usd/ach\".transport.private_key: the systemd credential ach-sftp-key cannot be read: CREDENTIALS_DIRECTORY is not set"
        ),
        "{stderr}"
    );

    let stderr = stderr_of_failure(&payoutd(&credentials.env(), &["check-config"]));
    assert!(stderr.contains("PAYOUT_CONFIG is not set"), "{stderr}");
    let absent = dir.path().join("absent.toml");
    let env = with(credentials.env(), "PAYOUT_CONFIG", absent.to_str().unwrap());
    let stderr = stderr_of_failure(&payoutd(&env, &["check-config"]));
    assert!(
        stderr.contains("cannot read") && stderr.contains("absent.toml"),
        "{stderr}"
    );
}

#[test]
fn serve_outside_the_sandbox_checks_the_file_first() {
    let credentials = Credentials::example();
    let base = with(
        with(
            credentials.env(),
            "DATABASE_URL",
            "postgres://127.0.0.1:1/unused",
        ),
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
    let credentials = Credentials::example();
    let env = credentials.with_example();
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

    // The key as the systemd credential PAYOUT_TLS_KEY, the variable unset.
    let in_credential = credentials.write("PAYOUT_TLS_KEY", &made.signing_key.serialize_pem());
    let credential_env: Vec<_> = env
        .iter()
        .filter(|(name, _)| name != "PAYOUT_TLS_KEY")
        .cloned()
        .collect();
    let output = payoutd(&credential_env, &["check-config"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        summary["tls"]["key"],
        "[REDACTED] (credential:PAYOUT_TLS_KEY)"
    );
    // Both the variable and the credential: refused, naming both.
    let stderr = stderr_of_failure(&payoutd(&env, &["check-config"]));
    assert!(
        stderr.contains("PAYOUT_TLS_KEY and the systemd credential PAYOUT_TLS_KEY are both set"),
        "{stderr}"
    );
    std::fs::remove_file(in_credential).unwrap();

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
    let credentials = Credentials::example();
    let env = credentials.with_example();
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
    assert_eq!(keys["current_key"], "[REDACTED] (env:PAYOUT_MASTER_KEY)");
    assert_eq!(
        keys["previous_key"],
        "[REDACTED] (env:PAYOUT_PREVIOUS_MASTER_KEY)"
    );
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

/// The master key's id as check-config reports it, or its stderr on failure.
fn master_key_summary(env: &[(String, String)]) -> Result<Value, String> {
    let output = payoutd(env, &["check-config"]);
    if output.status.success() {
        let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
        Ok(summary["master_keys"].clone())
    } else {
        Err(stderr_of_failure(&output))
    }
}

#[test]
fn the_master_key_comes_from_a_file_or_a_systemd_credential_never_both() {
    let credentials = Credentials::example();
    let env = credentials.with_example();
    let from_variable = master_key_summary(&with(env.clone(), "PAYOUT_MASTER_KEY", MASTER_KEY))
        .expect("the key from its variable");
    assert_eq!(
        from_variable["current_key"],
        "[REDACTED] (env:PAYOUT_MASTER_KEY)"
    );
    let id = from_variable["current_key_id"].as_str().unwrap().to_owned();

    // PAYOUT_MASTER_KEY_FILE: a file holding the key and a newline, as `openssl rand -hex 32 >`
    // writes it.
    let secrets = tempfile::tempdir().unwrap();
    let key_file = secrets.path().join("master-key");
    write_private(&key_file, &format!("{MASTER_KEY}\n"));
    let file_env = with(
        env.clone(),
        "PAYOUT_MASTER_KEY_FILE",
        key_file.to_str().unwrap(),
    );
    let output = payoutd(&file_env, &["check-config"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!String::from_utf8_lossy(&output.stdout).contains(MASTER_KEY));
    let from_file: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        from_file["master_keys"]["current_key"],
        format!("[REDACTED] (file:{})", key_file.display())
    );
    assert_eq!(from_file["master_keys"]["current_key_id"], id.as_str());

    // The systemd credentials PAYOUT_MASTER_KEY and PAYOUT_PREVIOUS_MASTER_KEY.
    credentials.write("PAYOUT_MASTER_KEY", MASTER_KEY);
    credentials.write("PAYOUT_PREVIOUS_MASTER_KEY", PREVIOUS);
    let keys = master_key_summary(&env).expect("the keys from credentials");
    assert_eq!(
        keys["current_key"],
        "[REDACTED] (credential:PAYOUT_MASTER_KEY)"
    );
    assert_eq!(
        keys["previous_key"],
        "[REDACTED] (credential:PAYOUT_PREVIOUS_MASTER_KEY)"
    );
    assert_eq!(keys["current_key_id"], id.as_str());
    assert!(keys["previous_key_id"].is_string());

    // serve reads them the same way: it gets past the keys and the file to the bind.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let serve_env = with(
        with(env.clone(), "DATABASE_URL", "postgres://127.0.0.1:1/unused"),
        "PAYOUT_BIND",
        &address,
    );
    let stderr = stderr_of_failure(&payoutd(&serve_env, &["serve"]));
    assert!(stderr.contains(&format!("binding {address}")), "{stderr}");

    // Given twice (the credential and the variable, or the credential and the file): refused,
    // naming both, before anything else.
    let stderr = master_key_summary(&with(env.clone(), "PAYOUT_MASTER_KEY", MASTER_KEY))
        .expect_err("the key given twice");
    assert!(
        stderr.contains(
            "PAYOUT_MASTER_KEY and the systemd credential PAYOUT_MASTER_KEY are both set"
        ),
        "{stderr}"
    );
    let stderr = master_key_summary(&file_env).expect_err("the key given twice");
    assert!(
        stderr.contains(
            "PAYOUT_MASTER_KEY_FILE and the systemd credential PAYOUT_MASTER_KEY are both set"
        ),
        "{stderr}"
    );
    let stderr = stderr_of_failure(&payoutd(
        &with(serve_env, "PAYOUT_MASTER_KEY", MASTER_KEY),
        &["serve"],
    ));
    assert!(stderr.contains("are both set"), "{stderr}");
    assert!(!stderr.contains(MASTER_KEY), "{stderr}");
}

#[test]
fn a_master_key_file_readable_by_others_is_refused_naming_it() {
    let credentials = Credentials::example();
    let env = credentials.with_example();
    let secrets = tempfile::tempdir().unwrap();
    let key_file = secrets.path().join("master-key");
    std::fs::write(&key_file, MASTER_KEY).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let env = with(env, "PAYOUT_MASTER_KEY_FILE", key_file.to_str().unwrap());
    for command in ["check-config", "serve"] {
        let stderr = stderr_of_failure(&payoutd(
            &with(env.clone(), "DATABASE_URL", "postgres://127.0.0.1:1/unused"),
            &[command],
        ));
        let path = key_file.display();
        assert!(
            stderr.contains(&format!(
                "PAYOUT_MASTER_KEY_FILE is refused: {path} is accessible by its group or others (mode 0644)"
            )),
            "{command}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("chmod 600 {path}")),
            "{command}: {stderr}"
        );
        assert!(!stderr.contains(MASTER_KEY), "{command}: {stderr}");
    }
    // A credential readable by its group: the same.
    let open = credentials.write("PAYOUT_MASTER_KEY", MASTER_KEY);
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o640)).unwrap();
    let stderr = master_key_summary(&credentials.with_example()).expect_err("an open credential");
    assert!(
        stderr.contains(&format!("{} is accessible", open.display()))
            && stderr.contains("(mode 0640)"),
        "{stderr}"
    );
}
