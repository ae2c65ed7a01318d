//! The signature verification examples of docs/WEBHOOKS.md (docs/examples/webhooks/) run
//! against a real delivery: each one accepts it and rejects forgeries. Rust runs in-process,
//! Python and JavaScript as the programs a merchant would run (`python3` and `node` must be
//! installed: a missing one fails the test).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};
use sha2::Sha256;

use crate::helpers::{spawn_app, subaccount};
use crate::webhook_sink::WebhookSink;

#[allow(dead_code)] // its `main` is for running it standalone
#[path = "../../../../docs/examples/webhooks/verify.rs"]
mod verify;

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/examples/webhooks");

/// What a verifier is given: the secret, the three headers and the raw body.
#[derive(Clone, Debug)]
struct Delivery {
    secret: String,
    id: String,
    timestamp: String,
    signatures: String,
    body: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
enum Example {
    Rust,
    Python,
    JavaScript,
}

impl Example {
    /// `Ok` when the example accepts the delivery, else why it refused it (`"timestamp"` or
    /// `"signature"`).
    fn verify(self, d: &Delivery) -> Result<(), String> {
        let (program, file) = match self {
            Example::Rust => {
                return verify::verify(&d.secret, &d.id, &d.timestamp, &d.signatures, &d.body)
                    .map_err(|why| format!("{why:?}").to_lowercase());
            }
            Example::Python => ("python3", "verify.py"),
            Example::JavaScript => ("node", "verify.js"),
        };
        let mut child = Command::new(program)
            .arg(format!("{EXAMPLES}/{file}"))
            .args([&d.secret, &d.id, &d.timestamp, &d.signatures])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot run `{program}` ({e}): it is needed to test docs/examples/webhooks/{file}")
            });
        // The raw bytes on stdin, as an HTTP framework hands them over.
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&d.body).unwrap();
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        match output.status.code() {
            Some(0) => Ok(()),
            // A refusal says why; anything else (a crash, a usage error) fails the test.
            Some(1) if stderr.starts_with("rejected: ") => {
                Err(stderr.trim_start_matches("rejected: ").trim().to_owned())
            }
            _ => panic!("{file} failed: {}\n{stderr}", output.status),
        }
    }
}

/// `v1,<base64 HMAC-SHA256>` of `<id>.<timestamp>.<body>`, computed here independently.
fn sign(secret: &str, id: &str, timestamp: &str, body: &[u8]) -> String {
    let key = STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap();
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

/// Receives one real `receiverCreated` delivery and returns it with its secret.
async fn a_real_delivery() -> Delivery {
    let app = spawn_app().await;
    let endpoint = WebhookSink::start(&[200]);
    let (_, secret) = app
        .admin
        .set_webhook(subaccount(&app.a), &endpoint.url)
        .await
        .unwrap();
    app.create_receiver(&app.a, "ada@example.com").await;
    let got = endpoint.wait_for(1, Duration::from_secs(20)).await;
    let received = got.first().expect("the receiverCreated delivery arrives");
    let header = |name: &str| {
        received
            .header(name)
            .unwrap_or_else(|| panic!("no {name} header"))
            .to_owned()
    };
    Delivery {
        secret: secret.expose().clone(),
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signatures: header("webhook-signature"),
        body: received.body.to_vec(),
    }
}

#[tokio::test]
async fn the_verification_examples_accept_a_real_delivery_and_reject_forgeries() {
    let genuine = a_real_delivery().await;
    // The independent signer agrees with the server, so the forgeries below are signed right.
    let server_signed = sign(
        &genuine.secret,
        &genuine.id,
        &genuine.timestamp,
        &genuine.body,
    );
    assert_eq!(genuine.signatures, server_signed);

    let mut tampered = genuine.clone();
    let sequence = tampered
        .body
        .windows(12)
        .position(|w| w == b"\"sequence\":1")
        .expect("the body has \"sequence\":1")
        + 11;
    tampered.body[sequence] = b'2';

    let wrong_secret = format!("whsec_{}", STANDARD.encode([0x5a; 32]));
    let wrong_key = Delivery {
        secret: wrong_secret.clone(),
        ..genuine.clone()
    };

    // Correctly signed, so only the age check can refuse them.
    let at = |offset: i64| {
        let timestamp = (chrono::Utc::now().timestamp() + offset).to_string();
        Delivery {
            signatures: sign(&genuine.secret, &genuine.id, &timestamp, &genuine.body),
            timestamp,
            ..genuine.clone()
        }
    };
    let stale = at(-6 * 60);
    let future = at(6 * 60);

    // As during a rotation: a signature by another secret first, then the right one.
    let rotated = Delivery {
        signatures: format!(
            "{} {}",
            sign(
                &wrong_secret,
                &genuine.id,
                &genuine.timestamp,
                &genuine.body
            ),
            genuine.signatures
        ),
        ..genuine.clone()
    };

    let cases: [(&str, &Delivery, Result<(), &str>); 6] = [
        ("the genuine delivery", &genuine, Ok(())),
        ("a body with one byte changed", &tampered, Err("signature")),
        ("a wrong secret", &wrong_key, Err("signature")),
        ("a timestamp 6 minutes old", &stale, Err("timestamp")),
        ("a timestamp 6 minutes ahead", &future, Err("timestamp")),
        ("a wrong signature, then the right one", &rotated, Ok(())),
    ];
    let mut wrong = Vec::new();
    for example in [Example::Rust, Example::Python, Example::JavaScript] {
        for (case, delivery, expected) in &cases {
            let got = example.verify(delivery);
            if got != expected.map_err(str::to_owned) {
                wrong.push(format!(
                    "{example:?} on {case}: {got:?}, expected {expected:?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Every code block of the "Verifying a delivery" section of docs/WEBHOOKS.md is a verbatim
/// excerpt of the example file in its language, so what the page shows is what is tested.
#[test]
fn the_webhooks_page_quotes_the_tested_examples() {
    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/WEBHOOKS.md");
    let page = std::fs::read_to_string(page).unwrap();
    let section = page
        .split("\n## ")
        .find(|s| s.starts_with("Verifying a delivery"))
        .expect("docs/WEBHOOKS.md has a \"Verifying a delivery\" section");
    let mut quoted = Vec::new();
    // Odd pieces are inside fences: the language, a newline, then the code.
    for block in section.split("```").skip(1).step_by(2) {
        let (language, code) = block.split_once('\n').unwrap();
        let file = match language {
            "rust" => "verify.rs",
            "python" => "verify.py",
            "javascript" => "verify.js",
            _ => continue,
        };
        let source = std::fs::read_to_string(format!("{EXAMPLES}/{file}")).unwrap();
        assert!(
            source.contains(code),
            "this block of docs/WEBHOOKS.md is not in docs/examples/webhooks/{file}:\n{code}"
        );
        quoted.push(file);
    }
    assert_eq!(quoted, ["verify.rs", "verify.py", "verify.js"]);
}
