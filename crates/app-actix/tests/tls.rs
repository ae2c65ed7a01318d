//! Native TLS (docs/DEPLOY.md): with `PAYOUT_TLS_CERT` and `PAYOUT_TLS_KEY` the real binary
//! serves signed API requests over https with a certificate made at test time, refuses plain
//! HTTP on that port, and `check-config` and `serve` refuse a half or wrong configuration
//! naming the variable and the path, never printing the key.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/signing.rs"]
mod signing;
use signing::signature;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use adapters_postgres::test_db::TestDb;
use serde_json::{Value, json};

const MASTER_KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/// A self-signed certificate for 127.0.0.1 and localhost: (certificate PEM, key PEM).
fn self_signed() -> (String, String) {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    (made.cert.pem(), made.signing_key.serialize_pem())
}

struct Files {
    dir: tempfile::TempDir,
    cert: PathBuf,
    key: PathBuf,
    key_pem: String,
}

/// Writes a file readable by its owner only, as a key file must be.
fn write_private(path: &Path, content: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, content).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn files() -> Files {
    let dir = tempfile::tempdir().unwrap();
    let (cert_pem, key_pem) = self_signed();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    write_private(&cert, &cert_pem);
    write_private(&key, &key_pem);
    Files {
        dir,
        cert,
        key,
        key_pem,
    }
}

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

fn admin(db: &TestDb, args: &[&str]) -> Value {
    let output = payoutd(
        &[
            ("DATABASE_URL", db.url()),
            ("PAYOUT_MASTER_KEY", MASTER_KEY),
            ("PAYOUT_SANDBOX", "true"),
        ],
        args,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Kills the server when the test ends, passing or not.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `payoutd serve` on port 0 and returns it with the port it logged; the API serves TLS.
fn serve(env: &[(&str, &str)]) -> (Server, u16) {
    let (server, listening) = serve_logged(env);
    // Every API this file starts serves TLS, and the line says so.
    assert_eq!(listening["tls"], true, "{listening}");
    let port = listening["port"].as_u64().unwrap();
    (server, u16::try_from(port).unwrap())
}

/// Starts `payoutd serve` on port 0 and returns it with its "payoutd listening" log line.
fn serve_logged(env: &[(&str, &str)]) -> (Server, Value) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_payoutd"));
    command
        .arg("serve")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("PAYOUT_BIND", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let server = Server(child);
    let (found, port) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if !sent
                && let Ok(event) = serde_json::from_str::<Value>(&line)
                && event["message"] == "payoutd listening"
            {
                let _ = found.send(event);
                sent = true;
            }
        }
    });
    let listening = port
        .recv_timeout(Duration::from_secs(30))
        .expect("payoutd logged its port");
    (server, listening)
}

/// A client trusting exactly the certificate in `cert` (no system roots).
fn client_trusting(cert: &Path) -> reqwest::Client {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for der in CertificateDer::pem_file_iter(cert).unwrap() {
        roots.add(der.unwrap()).unwrap();
    }
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_signed_requests_over_https_and_refuses_plain_http() {
    adapters_webhook::install_crypto_provider();
    let files = files();
    let db = TestDb::new().await.unwrap();
    let created = admin(&db, &["admin", "create-subaccount", "--name", "Shop"]);
    let sub = created["subaccount_id"].as_str().unwrap().to_owned();
    let key = admin(&db, &["admin", "issue-key", "--subaccount", &sub]);
    let (api_key, secret) = (
        key["api_key"].as_str().unwrap().to_owned(),
        key["api_secret"].as_str().unwrap().to_owned(),
    );
    let (_server, port) = serve(&[
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", MASTER_KEY),
        ("PAYOUT_SANDBOX", "true"),
        ("PAYOUT_WORKERS", "1"),
        ("PAYOUT_TLS_CERT", files.cert.to_str().unwrap()),
        ("PAYOUT_TLS_KEY", files.key.to_str().unwrap()),
    ]);

    let https = client_trusting(&files.cert);
    for host in ["127.0.0.1", "localhost"] {
        let health = https
            .get(format!("https://{host}:{port}/healthz"))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status().as_u16(), 200, "{host}");
    }
    let nonce = chrono::Utc::now().timestamp_millis();
    let body = serde_json::to_vec(&json!({
        "subaccount_id": sub, "first_name": "Ada", "last_name": "Lovelace",
        "email": "ada@example.com", "gender": "F", "dob": "1990-01-31", "dialcode": "61",
        "phone": "0412345678", "address": "12 Smith St", "city": "Sydney",
        "state": "NSW", "country": "AUS", "postcode": "2000"
    }))
    .unwrap();
    let created = https
        .post(format!("https://127.0.0.1:{port}/api/receiver"))
        .header("x-api-key", &api_key)
        .header("x-signature-version", "2")
        .header(
            "signature",
            signature(&api_key, &secret, nonce, "/api/receiver", &body),
        )
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = created.status().as_u16();
    let body: Value = created.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body["payload"]["receiver_id"].is_string(), "{body}");

    // An unsigned request is refused over TLS as over plain HTTP.
    let unsigned = https
        .post(format!("https://127.0.0.1:{port}/api/receiver"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status().as_u16(), 401);

    // Plain HTTP to the TLS port gets no HTTP answer.
    let plain = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
        .get(format!("http://127.0.0.1:{port}/healthz"))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP answered: {plain:?}");

    // A client that trusts another certificate refuses this server's.
    let other = files.dir.path().join("other.pem");
    std::fs::write(&other, self_signed().0).unwrap();
    let untrusted = client_trusting(&other)
        .get(format!("https://127.0.0.1:{port}/healthz"))
        .send()
        .await;
    assert!(untrusted.is_err(), "an untrusted certificate was accepted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_serves_tls_with_its_key_from_a_systemd_credential() {
    adapters_webhook::install_crypto_provider();
    let files = files();
    let db = TestDb::new().await.unwrap();
    let credentials = files.dir.path().join("credentials");
    std::fs::create_dir(&credentials).unwrap();
    write_private(&credentials.join("PAYOUT_CONSOLE_TLS_KEY"), &files.key_pem);
    // The API on plain HTTP; the console with its own certificate, its key a credential.
    let (_server, listening) = serve_logged(&[
        ("DATABASE_URL", db.url()),
        ("PAYOUT_MASTER_KEY", MASTER_KEY),
        ("PAYOUT_SANDBOX", "true"),
        ("PAYOUT_WORKERS", "1"),
        ("PAYOUT_CONSOLE_BIND", "127.0.0.1:0"),
        ("PAYOUT_CONSOLE_TLS_CERT", files.cert.to_str().unwrap()),
        ("CREDENTIALS_DIRECTORY", credentials.to_str().unwrap()),
    ]);
    assert_eq!(listening["tls"], false, "{listening}");
    let console = listening["console_port"].as_u64().unwrap();
    let login = client_trusting(&files.cert)
        .get(format!("https://127.0.0.1:{console}/login"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status().as_u16(), 200);
    let plain = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
        .get(format!("http://127.0.0.1:{console}/login"))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP answered: {plain:?}");

    // The key given both ways is refused, naming the variable, never printing the key.
    let twice = payoutd(
        &[
            ("DATABASE_URL", db.url()),
            ("PAYOUT_MASTER_KEY", MASTER_KEY),
            ("PAYOUT_SANDBOX", "true"),
            ("PAYOUT_BIND", "127.0.0.1:0"),
            ("PAYOUT_CONSOLE_BIND", "127.0.0.1:0"),
            ("PAYOUT_CONSOLE_TLS_CERT", files.cert.to_str().unwrap()),
            ("PAYOUT_CONSOLE_TLS_KEY", files.key.to_str().unwrap()),
            ("CREDENTIALS_DIRECTORY", credentials.to_str().unwrap()),
        ],
        &["serve"],
    );
    let said = failure(&twice);
    assert!(said.contains("PAYOUT_CONSOLE_TLS_KEY"), "{said}");
    assert_no_key_material(&said, &files.key_pem);
}

fn failure(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "succeeded; stderr: {stderr}");
    stderr
}

/// No line of the key's base64 body appears in `text`.
fn assert_no_key_material(text: &str, key_pem: &str) {
    for line in key_pem.lines().filter(|l| !l.starts_with("-----")) {
        assert!(!text.contains(line), "key material in the message: {text}");
    }
}

/// The variables set, the problem expected on stderr, and further words it must contain.
type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, Vec<&'a str>);

#[test]
fn check_config_and_serve_refuse_half_missing_garbage_and_mismatched_tls_files() {
    let files = files();
    let (cert, key) = (files.cert.to_str().unwrap(), files.key.to_str().unwrap());
    let missing = files.dir.path().join("absent.pem");
    let missing = missing.to_str().unwrap();
    let garbage = files.dir.path().join("garbage.pem");
    write_private(&garbage, "this is not PEM at all\n");
    let garbage = garbage.to_str().unwrap();
    let broken = files.dir.path().join("broken.pem");
    write_private(&broken, "-----BEGIN CERTIFICATE-----\nMIIB\n");
    let broken = broken.to_str().unwrap();
    // A valid key, but of another certificate.
    let other_key = files.dir.path().join("other-key.pem");
    let other_key_pem = self_signed().1;
    write_private(&other_key, &other_key_pem);
    let other_key = other_key.to_str().unwrap();
    // The right key, but readable by everyone.
    let exposed_key = files.dir.path().join("exposed-key.pem");
    std::fs::write(&exposed_key, &files.key_pem).unwrap();
    std::fs::set_permissions(
        &exposed_key,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    let exposed_key = exposed_key.to_str().unwrap();
    let chmod = format!("chmod 600 {exposed_key}");

    let cases: Vec<Case> = vec![
        (
            vec![("PAYOUT_TLS_CERT", cert)],
            "PAYOUT_TLS_KEY is not set but PAYOUT_TLS_CERT is",
            vec![],
        ),
        (
            vec![("PAYOUT_TLS_KEY", key)],
            "PAYOUT_TLS_CERT is not set but PAYOUT_TLS_KEY is",
            vec![],
        ),
        (
            vec![("PAYOUT_TLS_CERT", missing), ("PAYOUT_TLS_KEY", key)],
            "PAYOUT_TLS_CERT names",
            vec![missing, "cannot be read"],
        ),
        (
            vec![("PAYOUT_TLS_CERT", cert), ("PAYOUT_TLS_KEY", missing)],
            "PAYOUT_TLS_KEY is refused",
            vec![missing, "cannot be read"],
        ),
        (
            vec![("PAYOUT_TLS_CERT", cert), ("PAYOUT_TLS_KEY", exposed_key)],
            "PAYOUT_TLS_KEY is refused",
            vec![exposed_key, "(mode 0644)", chmod.as_str()],
        ),
        (
            vec![("PAYOUT_TLS_CERT", garbage), ("PAYOUT_TLS_KEY", key)],
            "PAYOUT_TLS_CERT names",
            vec![garbage, "no PEM certificate"],
        ),
        (
            vec![("PAYOUT_TLS_CERT", broken), ("PAYOUT_TLS_KEY", key)],
            "PAYOUT_TLS_CERT names",
            vec![broken, "not valid PEM"],
        ),
        (
            vec![("PAYOUT_TLS_CERT", cert), ("PAYOUT_TLS_KEY", garbage)],
            "PAYOUT_TLS_KEY names",
            vec![garbage, "no PEM private key"],
        ),
        (
            // The certificate given as the key: PEM, but no key in it.
            vec![("PAYOUT_TLS_CERT", cert), ("PAYOUT_TLS_KEY", cert)],
            "PAYOUT_TLS_KEY names",
            vec!["no PEM private key"],
        ),
        (
            vec![("PAYOUT_TLS_CERT", cert), ("PAYOUT_TLS_KEY", other_key)],
            "PAYOUT_TLS_KEY names",
            vec![other_key, "is not the private key of the certificate", cert],
        ),
    ];
    for (env, variable, details) in &cases {
        // check-config reports the TLS problem before reading PAYOUT_CONFIG (unset here).
        let stderr = failure(&payoutd(env, &["check-config"]));
        assert!(stderr.contains(variable), "{env:?}: {stderr}");
        for detail in details {
            assert!(stderr.contains(detail), "{env:?}: {detail:?} in {stderr}");
        }
        assert_no_key_material(&stderr, &files.key_pem);
        assert_no_key_material(&stderr, &other_key_pem);

        // serve refuses the same configuration before it connects or binds.
        let mut serve_env = env.clone();
        serve_env.extend([
            ("DATABASE_URL", "postgres://127.0.0.1:1/unused"),
            ("PAYOUT_MASTER_KEY", MASTER_KEY),
            ("PAYOUT_SANDBOX", "true"),
            ("PAYOUT_BIND", "127.0.0.1:0"),
        ]);
        let stderr = failure(&payoutd(&serve_env, &["serve"]));
        assert!(stderr.contains(variable), "serve {env:?}: {stderr}");
        assert_no_key_material(&stderr, &files.key_pem);
        assert_no_key_material(&stderr, &other_key_pem);
    }
}
