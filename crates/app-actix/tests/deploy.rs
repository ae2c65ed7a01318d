//! The deployment kit of docs/DEPLOY.md, checked mechanically: the systemd unit passes
//! `systemd-analyze verify` and names only commands and variables payoutd has; the database
//! roles of `docs/examples/roles.sql` run a real flow with the runtime role unable to change the
//! schema; and new migrations stay tolerable to the release still running (expand/contract).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/signing.rs"]
mod signing;
use signing::signature;
#[path = "support/database_url.rs"]
mod database_url;
use database_url::with_database;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const MASTER_KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(repo().join(relative)).unwrap()
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

// ---------------------------------------------------------------------------------------------
// The systemd unit
// ---------------------------------------------------------------------------------------------

#[test]
fn the_systemd_unit_passes_systemd_analyze_verify() {
    let Some(analyze) = on_path("systemd-analyze") else {
        eprintln!("skipped: systemd-analyze is not on PATH, so the unit cannot be verified here");
        return;
    };
    let unit = read("docs/examples/payoutd.service");
    assert!(unit.contains("ExecStart=/usr/local/bin/payoutd serve"));
    // verify checks that the executables exist: point them at the binary just built.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("payoutd.service");
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/payoutd", env!("CARGO_BIN_EXE_payoutd")),
    )
    .unwrap();
    let output = Command::new(analyze)
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "systemd-analyze verify: {stderr}");
    // Unknown keys and bad values are warnings (exit 0) naming the file.
    assert!(
        !stderr.contains("payoutd.service"),
        "systemd-analyze verify warns: {stderr}"
    );

    // A unit pointing at a binary that does not exist is refused, so the check above means
    // something.
    std::fs::write(
        &path,
        unit.replace("/usr/local/bin/payoutd", "/nonexistent/payoutd"),
    )
    .unwrap();
    let broken = Command::new(on_path("systemd-analyze").unwrap())
        .arg("verify")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        !broken.status.success() || !broken.stderr.is_empty(),
        "verify accepted a missing executable"
    );
}

#[test]
fn the_unit_stops_after_payoutds_graceful_shutdown() {
    let unit = read("docs/examples/payoutd.service");
    let setting = |key: &str| -> Vec<String> {
        unit.lines()
            .filter_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(setting("KillSignal"), ["SIGTERM"]);
    let stop: u64 = setting("TimeoutStopSec")[0]
        .trim_end_matches('s')
        .parse()
        .unwrap();
    // The HTTP drain, then a webhook attempt at its default timeout, must fit.
    assert!(
        stop > app_actix::startup::SHUTDOWN_TIMEOUT_SECS + 15,
        "{stop}"
    );
    assert_eq!(setting("EnvironmentFile"), ["/etc/payoutd/payoutd.env"]);
    for hardening in [
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "CapabilityBoundingSet=",
        "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
        "MemoryDenyWriteExecute=yes",
        "SystemCallFilter=@system-service",
        "Restart=on-failure",
    ] {
        assert!(unit.lines().any(|l| l == hardening), "{hardening} missing");
    }
}

/// Every `payoutd <command>` and `PAYOUT_*` variable the unit and DEPLOY.md mention exists:
/// commands in the binary's `--help`, variables in the configuration table of config.rs (or
/// named by the production file example).
#[test]
fn the_unit_and_deploy_md_name_only_commands_and_variables_payoutd_has() {
    let help = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_payoutd"))
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(output.status.success());
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let commands = |text: &str| -> BTreeSet<String> {
        // clap's help lists each command indented by two spaces.
        text.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .collect()
    };
    let top = commands(&help(&[]));
    let admin = commands(&help(&["admin"]));
    assert!(
        top.contains("serve") && admin.contains("issue-key"),
        "{top:?} {admin:?}"
    );

    let config = read("crates/app-actix/src/config.rs");
    let production_example = read("docs/examples/payoutd.toml");
    let known_variable = |name: &str| {
        config.contains(&format!("`{name}`")) || production_example.contains(&format!("env:{name}"))
    };

    for document in ["docs/examples/payoutd.service", "docs/DEPLOY.md"] {
        let text = read(document);
        let mut seen = 0;
        for (at, _) in text.match_indices("payoutd ") {
            let before = &text[..at];
            // Only invocations: `payoutd <word>` after a path or a backtick.
            if !(before.ends_with('/') || before.ends_with('`')) {
                continue;
            }
            let mut words =
                text[at + "payoutd ".len()..].split(|c: char| c.is_whitespace() || c == '`');
            let Some(command) = words.next() else {
                continue;
            };
            // A word, not a path or an option (`install target/release/payoutd /usr/...`).
            if !command.starts_with(|c: char| c.is_ascii_lowercase())
                || !command.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            {
                continue;
            }
            assert!(
                top.contains(command),
                "{document}: payoutd {command} is not a command"
            );
            let after = text.get(at + "payoutd admin".len()..).unwrap_or_default();
            if command == "admin" && after.starts_with(' ') {
                let sub = words.next().unwrap_or_default();
                if !sub.starts_with(|c: char| c.is_ascii_lowercase()) {
                    continue;
                }
                assert!(
                    admin.contains(sub),
                    "{document}: payoutd admin {sub} is not a command"
                );
            }
            seen += 1;
        }
        assert!(seen > 0, "{document} names no command");
        for (at, _) in text.match_indices("PAYOUT_") {
            let name: String = text[at..]
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            let name = name.trim_end_matches('_');
            if name == "PAYOUT" {
                continue;
            }
            assert!(
                known_variable(name),
                "{document}: {name} is not a payoutd variable"
            );
        }
    }
}

/// The `LoadCredential=` names of the unit (commented-out lines excluded).
fn unit_credentials() -> BTreeSet<String> {
    read("docs/examples/payoutd.service")
        .lines()
        .filter_map(|l| l.strip_prefix("LoadCredential="))
        .map(|l| l.split(':').next().unwrap().to_owned())
        .collect()
}

/// The environment file of DEPLOY.md: the here-document the `sh` block after the sentence that
/// introduces it writes to `/etc/payoutd/payoutd.env`.
fn deploy_env_sample() -> Vec<(String, String)> {
    let text = read("docs/DEPLOY.md");
    let at = text
        .find("`/etc/payoutd/payoutd.env` then holds settings only")
        .expect("DEPLOY.md introduces the environment file");
    let block = &text[at..];
    let opening = "sudo tee /etc/payoutd/payoutd.env > /dev/null <<'ENV'\n";
    let start = block.find(opening).expect("the block writes the file") + opening.len();
    let end = start + block[start..].find("\nENV\n").unwrap();
    block[start..end]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (name, value) = l.split_once('=').expect("NAME=value");
            (name.to_owned(), value.to_owned())
        })
        .collect()
}

/// A fresh ed25519 private key as PKCS#8 PEM.
fn sftp_key() -> String {
    use base64::Engine;
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let body = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")
}

/// DEPLOY.md's environment file holds no secret, the unit loads every credential the example
/// configuration names (and only those payoutd reads), and together, with those credentials
/// written as DEPLOY.md says, they pass `payoutd check-config`, every secret shown as its
/// credential.
#[test]
fn the_documented_environment_unit_and_configuration_pass_check_config_together() {
    use std::os::unix::fs::PermissionsExt;
    let sample = deploy_env_sample();
    let secrets = [
        "DATABASE_URL",
        "PAYOUT_MASTER_KEY",
        "PAYOUT_PREVIOUS_MASTER_KEY",
        "PAYOUT_TLS_KEY",
    ];
    for (name, value) in &sample {
        assert!(
            !secrets.contains(&name.as_str()) && !value.contains("PASSWORD"),
            "DEPLOY.md's environment file holds a secret: {name}"
        );
    }
    assert!(sample.iter().any(|(name, _)| name == "PAYOUT_CONFIG"));

    let example = read("docs/examples/payoutd.toml");
    let named: BTreeSet<String> = example
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split("\"credential:").nth(1))
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect();
    assert!(named.len() >= 7, "{named:?}");
    let loaded = unit_credentials();
    let missing: Vec<_> = named.difference(&loaded).collect();
    assert!(missing.is_empty(), "the unit does not load {missing:?}");
    for extra in loaded.difference(&named) {
        assert!(
            secrets.contains(&extra.as_str()),
            "the unit loads {extra}, which nothing reads"
        );
    }

    // The host of DEPLOY.md, under a temporary directory instead of /etc/payoutd.
    let etc = tempfile::tempdir().unwrap();
    let root = etc.path().display().to_string();
    let credentials = etc.path().join("credentials");
    std::fs::create_dir_all(etc.path().join("tls")).unwrap();
    std::fs::create_dir(&credentials).unwrap();
    std::fs::copy(
        repo().join("docs/examples/payoutd.toml"),
        etc.path().join("payoutd.toml"),
    )
    .unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(etc.path().join("tls/fullchain.pem"), made.cert.pem()).unwrap();
    for name in &loaded {
        let content = match name.as_str() {
            "DATABASE_URL" => {
                "postgres://payoutd_app:runtime-pw@db.internal:5432/payoutd".to_owned()
            }
            "PAYOUT_MASTER_KEY" => format!("{MASTER_KEY}\n"),
            "PAYOUT_PREVIOUS_MASTER_KEY" => "ab".repeat(32),
            "PAYOUT_TLS_KEY" => made.signing_key.serialize_pem(),
            sftp if sftp.ends_with("-sftp-key") => sftp_key(),
            _ => format!("secret-of-{name}"),
        };
        let path = credentials.join(name);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    }
    let mut command = Command::new(env!("CARGO_BIN_EXE_payoutd"));
    command
        .arg("check-config")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("CREDENTIALS_DIRECTORY", &credentials);
    for (name, value) in &sample {
        command.env(name, value.replace("/etc/payoutd", &root));
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    for (secret, source) in [
        ("/database/url", "DATABASE_URL"),
        ("/master_keys/current_key", "PAYOUT_MASTER_KEY"),
        ("/tls/key", "PAYOUT_TLS_KEY"),
        ("/smtp/password", "smtp-password"),
        ("/rails/usd~1ach/transport/private_key", "ach-sftp-key"),
        (
            "/rails/cad~1digital/transport/shared_secret",
            "interac-shared-secret",
        ),
    ] {
        assert_eq!(
            summary.pointer(secret),
            Some(&json!(format!("[REDACTED] (credential:{source})"))),
            "{secret}"
        );
    }
    assert!(!stdout.contains("runtime-pw") && !stdout.contains(MASTER_KEY));
    assert!(!stdout.contains("secret-of-") && !stdout.contains("PRIVATE KEY"));
}

// ---------------------------------------------------------------------------------------------
// Migrations: expand/contract
// ---------------------------------------------------------------------------------------------

/// The newest migration when the rule was introduced: it and every older one are grandfathered.
const GRANDFATHERED_THROUGH: &str = "2026-11-26-000050_maintenance_markers";

/// The marker a contracting migration carries, with the reason the previous release no longer
/// uses what it removes or tightens.
const CONTRACT_MARKER: &str = "-- contract:";

/// Destructive statements of `sql` (comments and case ignored), as found.
fn destructive_statements(sql: &str) -> Vec<&'static str> {
    let code: String = sql
        .lines()
        .map(|l| l.split("--").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase();
    let words: Vec<&str> = code.split_whitespace().collect();
    let code = words.join(" ");
    [
        ("DROP COLUMN", "DROP COLUMN"),
        ("DROP TABLE", "DROP TABLE"),
        ("DROP VIEW", "DROP VIEW"),
        ("DROP TYPE", "DROP TYPE"),
        ("DROP CONSTRAINT", "DROP CONSTRAINT"),
        (" RENAME ", "RENAME"),
        (" TYPE ", "ALTER COLUMN ... TYPE"),
        ("SET NOT NULL", "SET NOT NULL"),
        ("ADD CONSTRAINT", "ADD CONSTRAINT"),
        ("TRUNCATE", "TRUNCATE"),
        ("ADD COLUMN", "ADD COLUMN ... NOT NULL without DEFAULT"),
    ]
    .into_iter()
    .filter(|(pattern, _)| {
        if *pattern == "ADD COLUMN" {
            // A new NOT NULL column without a default breaks the old release's inserts.
            code.split(';').any(|statement| {
                statement.contains("ADD COLUMN")
                    && statement.contains("NOT NULL")
                    && !statement.contains("DEFAULT")
            })
        } else if *pattern == " TYPE " {
            // ALTER TABLE ... ALTER COLUMN c TYPE t (also SET DATA TYPE).
            code.split(';').any(|statement| {
                statement.contains("ALTER TABLE")
                    && statement.contains(" ALTER ")
                    && statement.contains(" TYPE ")
            })
        } else {
            code.contains(pattern)
        }
    })
    .map(|(_, name)| name)
    .collect()
}

#[test]
fn new_migrations_are_tolerated_by_the_previous_release_or_say_why_not() {
    let mut problems = Vec::new();
    let mut names: Vec<String> = std::fs::read_dir(repo().join("migrations"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.iter().any(|n| n == GRANDFATHERED_THROUGH),
        "the grandfathered migration {GRANDFATHERED_THROUGH} is gone"
    );
    for name in names.iter().filter(|n| n.as_str() > GRANDFATHERED_THROUGH) {
        let up = repo().join("migrations").join(name).join("up.sql");
        let sql = std::fs::read_to_string(&up).unwrap_or_default();
        let found = destructive_statements(&sql);
        let marked = sql
            .lines()
            .filter_map(|l| l.trim().strip_prefix(CONTRACT_MARKER))
            .any(|why| !why.trim().is_empty());
        if !found.is_empty() && !marked {
            problems.push(format!(
                "{name}/up.sql: {} without a `{CONTRACT_MARKER} <why the previous release no \
                 longer uses it>` comment (docs/DEPLOY.md, Upgrades)",
                found.join(", ")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_migration_check_finds_destructive_statements_and_ignores_comments() {
    assert_eq!(
        destructive_statements("ALTER TABLE a DROP COLUMN b;"),
        ["DROP COLUMN"]
    );
    assert_eq!(
        destructive_statements("drop table old_things;"),
        ["DROP TABLE"]
    );
    assert_eq!(
        destructive_statements("ALTER TABLE a RENAME COLUMN b TO c;"),
        ["RENAME"]
    );
    assert_eq!(
        destructive_statements("ALTER TABLE a\n  ALTER COLUMN b TYPE bigint;"),
        ["ALTER COLUMN ... TYPE"]
    );
    assert_eq!(
        destructive_statements("ALTER TABLE a ALTER COLUMN b SET NOT NULL;"),
        ["SET NOT NULL"]
    );
    assert_eq!(
        destructive_statements("ALTER TABLE a DROP CONSTRAINT a_b_check;"),
        ["DROP CONSTRAINT"]
    );
    assert_eq!(
        destructive_statements("ALTER TABLE a ADD COLUMN b text NOT NULL;"),
        ["ADD COLUMN ... NOT NULL without DEFAULT"]
    );
    assert!(
        destructive_statements("ALTER TABLE a ADD COLUMN b text NOT NULL DEFAULT 'x';").is_empty()
    );
    // Expanding is fine, and a comment is not a statement.
    assert!(
        destructive_statements(
            "-- we never DROP TABLE here\nCREATE TABLE t (id uuid PRIMARY KEY, kind text);\n\
             ALTER TABLE a ADD COLUMN note text;\nCREATE INDEX CONCURRENTLY i ON a (note);"
        )
        .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Database roles
// ---------------------------------------------------------------------------------------------

fn database_url() -> Option<String> {
    std::env::var("DATABASE_URL").ok()
}

/// `url` with another user (and password) and database.
fn url_as(url: &str, user: &str, password: &str, database: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = host.split('/').next().unwrap_or(host);
    format!("postgres://{user}:{password}@{host}/{database}")
}

fn psql(url: &str, args: &[&str]) -> Output {
    Command::new("psql")
        .arg(url)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1"])
        .args(args)
        .output()
        .expect("psql runs")
}

fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Drops the database and the roles when the test ends.
struct Cleanup {
    admin_url: String,
    database: String,
    roles: [String; 2],
    server: Option<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = server.kill();
            let _ = server.wait();
        }
        let _ = psql(
            &self.admin_url,
            &[
                "-c",
                &format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.database),
            ],
        );
        for role in &self.roles {
            let _ = psql(
                &self.admin_url,
                &["-c", &format!("DROP ROLE IF EXISTS \"{role}\"")],
            );
        }
    }
}

fn payoutd(url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_payoutd"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", url)
        .env("PAYOUT_MASTER_KEY", MASTER_KEY)
        .env("PAYOUT_SANDBOX", "true")
        .output()
        .unwrap()
}

fn json_of(output: Output) -> Value {
    serde_json::from_str(&ok(output)).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runtime_role_runs_payoutd_and_cannot_change_the_schema() {
    adapters_webhook::install_crypto_provider();
    let Some(admin_url) = database_url() else {
        eprintln!("skipped: DATABASE_URL is not set (a PostgreSQL server to create roles in)");
        return;
    };
    if on_path("psql").is_none() {
        eprintln!("skipped: psql is not on PATH (roles.sql is a psql script)");
        return;
    }
    let unique = uuid::Uuid::new_v4().simple().to_string()[..12].to_owned();
    let (database, migrator, runtime) = (
        format!("payoutd_roles_{unique}"),
        format!("payoutd_migrator_{unique}"),
        format!("payoutd_app_{unique}"),
    );
    let (migrator_password, runtime_password) = ("migrator-pw-test", "runtime-pw-test");
    let mut cleanup = Cleanup {
        admin_url: admin_url.clone(),
        database: database.clone(),
        roles: [migrator.clone(), runtime.clone()],
        server: None,
    };
    ok(psql(
        &admin_url,
        &["-c", &format!("CREATE DATABASE \"{database}\"")],
    ));
    let superuser = with_database(&admin_url, &database);
    let roles_sql = repo().join("docs/examples/roles.sql");
    ok(psql(
        &superuser,
        &[
            "-v",
            &format!("database={database}"),
            "-v",
            &format!("migrator={migrator}"),
            "-v",
            &format!("runtime={runtime}"),
            "-v",
            &format!("migrator_password={migrator_password}"),
            "-v",
            &format!("runtime_password={runtime_password}"),
            "-f",
            roles_sql.to_str().unwrap(),
        ],
    ));
    let migrator_url = url_as(&admin_url, &migrator, migrator_password, &database);
    let runtime_url = url_as(&admin_url, &runtime, runtime_password, &database);

    // The runtime role cannot migrate (it may not create tables) ...
    let refused = payoutd(&runtime_url, &["migrate"]);
    assert!(!refused.status.success(), "the runtime role migrated");
    // ... the migrator can, and owns every table it made.
    let applied = json_of(payoutd(&migrator_url, &["migrate"]));
    assert!(
        applied["applied"].as_array().is_some_and(|a| !a.is_empty()),
        "{applied}"
    );
    let foreign = ok(psql(
        &superuser,
        &[
            "-At",
            "-c",
            &format!(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tableowner <> '{migrator}'"
            ),
        ],
    ));
    assert_eq!(foreign.trim(), "0");

    // Operator commands as the runtime role.
    let created = json_of(payoutd(
        &runtime_url,
        &["admin", "create-subaccount", "--name", "Shop"],
    ));
    let sub = created["subaccount_id"].as_str().unwrap().to_owned();
    let key = json_of(payoutd(
        &runtime_url,
        &["admin", "issue-key", "--subaccount", &sub],
    ));
    let (api_key, secret) = (
        key["api_key"].as_str().unwrap().to_owned(),
        key["api_secret"].as_str().unwrap().to_owned(),
    );
    json_of(payoutd(
        &runtime_url,
        &[
            "admin",
            "fund",
            "--subaccount",
            &sub,
            "--asset",
            "AUD",
            "--amount",
            "100000",
            "--reason",
            "deploy test",
        ],
    ));

    // The service as the runtime role, on port 0.
    let mut server = Command::new(env!("CARGO_BIN_EXE_payoutd"))
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &runtime_url)
        .env("PAYOUT_MASTER_KEY", MASTER_KEY)
        .env("PAYOUT_SANDBOX", "true")
        .env("PAYOUT_BIND", "127.0.0.1:0")
        .env("PAYOUT_WORKERS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = server.stderr.take().unwrap();
    cleanup.server = Some(server);
    let (found, port) = std::sync::mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let kept = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if let Ok(event) = serde_json::from_str::<Value>(&line)
                && event["message"] == "payoutd listening"
                && let Some(port) = event["port"].as_u64()
            {
                let _ = found.send(port);
            }
            kept.lock().unwrap().push(line);
        }
    });
    let port = port
        .recv_timeout(Duration::from_secs(30))
        .expect("payoutd started");
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let ready_by = Instant::now() + Duration::from_secs(20);
    loop {
        let ready = client.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        assert!(Instant::now() < ready_by, "not ready as the runtime role");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let nonce = std::sync::atomic::AtomicI64::new(chrono::Utc::now().timestamp_millis());
    let post = |path: &str, body: Value| {
        let n = nonce.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let body = serde_json::to_vec(&body).unwrap();
        client
            .post(format!("{base}{path}"))
            .header("x-api-key", &api_key)
            .header("x-signature-version", "2")
            .header("signature", signature(&api_key, &secret, n, path, &body))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let call = |path: &'static str, body: Value| {
        let sent = post(path, body);
        async move {
            let reply = sent.await.unwrap();
            let status = reply.status().as_u16();
            let body: Value = reply.json().await.unwrap();
            assert_eq!(status, 200, "{path}: {body}");
            body["payload"].clone()
        }
    };
    let receiver = call(
        "/api/receiver",
        json!({
            "subaccount_id": sub, "first_name": "Ada", "last_name": "Lovelace",
            "email": "ada@example.com", "gender": "F", "dob": "1990-01-31", "dialcode": "61",
            "phone": "0412345678", "address": "12 Smith St", "city": "Sydney",
            "state": "NSW", "country": "AUS", "postcode": "2000"
        }),
    )
    .await["receiver_id"]
        .as_str()
        .unwrap()
        .to_owned();
    call(
        "/api/test-helpers/kyc",
        json!({"receiver_id": receiver, "kyc_status": "completed"}),
    )
    .await;
    let account = call(
        "/api/receiver-account/aud/direct-entry",
        json!({"receiver_id": receiver, "bsb": "012002", "account_number": "123456789"}),
    )
    .await["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    call(
        "/api/test-helpers/account",
        json!({"receiver_account_id": account, "confirm_status": "confirmed"}),
    )
    .await;
    let payout = call(
        "/api/payout/single",
        json!({"receiver_id": receiver, "account_id": account, "amount": 10_000, "currency": "aud"}),
    )
    .await;
    assert!(payout["payout_id"].is_string(), "{payout}");
    // The second joins the batch the first opened, written at once by the one statement that
    // raises `payout_set_refused` when a check fails: the runtime role may call it.
    let second = call(
        "/api/payout/single",
        json!({"receiver_id": receiver, "account_id": account, "amount": 10_000, "currency": "aud"}),
    )
    .await;
    assert!(second["payout_id"].is_string(), "{second}");
    let may_refuse = ok(psql(
        &runtime_url,
        &[
            "-tAc",
            "SELECT has_function_privilege('payout_set_refused(text)', 'EXECUTE')",
        ],
    ));
    assert_eq!(may_refuse.trim(), "t");
    // Nothing the service did was refused by the database.
    let denied: Vec<String> = log
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.contains("permission denied"))
        .cloned()
        .collect();
    assert!(denied.is_empty(), "{denied:?}");

    // The runtime role cannot change the schema.
    for statement in [
        "CREATE TABLE intruder (id int)",
        "DROP TABLE payouts",
        "ALTER TABLE payouts ADD COLUMN intruder int",
        "TRUNCATE payouts",
        "CREATE TEMPORARY TABLE scratch (id int)",
    ] {
        let refused = psql(&runtime_url, &["-c", statement]);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{statement} succeeded");
        assert!(
            stderr.contains("permission denied") || stderr.contains("must be owner"),
            "{statement}: {stderr}"
        );
    }
    drop(cleanup);
}

#[test]
fn url_as_swaps_user_password_and_database() {
    assert_eq!(
        url_as(
            "postgres://postgres@127.0.0.1:25432/postgres",
            "a",
            "b",
            "c"
        ),
        "postgres://a:b@127.0.0.1:25432/c"
    );
    assert_eq!(
        url_as(
            "postgresql://u:p@db.internal:5432/x?sslmode=require",
            "a",
            "b",
            "c"
        ),
        "postgres://a:b@db.internal:5432/c"
    );
    assert_eq!(
        with_database("postgres://u:p@h:1/x?sslmode=require", "c"),
        "postgres://u:p@h:1/c?sslmode=require"
    );
}
