//! The sender against real HTTP receivers on 127.0.0.1 (so private targets are allowed, except
//! in the tests that prove the SSRF guard refuses them).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use adapters_webhook::{HttpWebhookSender, WebhookSenderConfig};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, TimeZone, Utc};
use domain::delivery::{DeliveryOutcome, WebhookDelivery, WebhookSender};
use domain::ids::EventId;
use domain::masking::Secret;
use hmac::{KeyInit, Mac};
use sha2::Sha256;
use support::{Receiver, Recorded, Reply};
use uuid::Uuid;

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const PREVIOUS_SECRET: &str = "whsec_c2VjcmV0LWJlZm9yZS10aGUtcm90YXRpb24tMzJieXRlcw==";
const BODY: &[u8] =
    br#"{"event":"payoutCreated","payout_id":"p_1","amount":1250,"currency":"AUD"}"#;

fn sender(timeout: Duration, allow_private_targets: bool) -> HttpWebhookSender {
    HttpWebhookSender::new(WebhookSenderConfig {
        timeout,
        allow_private_targets,
        ..WebhookSenderConfig::default()
    })
    .unwrap()
}

fn local_sender() -> HttpWebhookSender {
    sender(Duration::from_secs(5), true)
}

fn attempted_at() -> DateTime<Utc> {
    Utc.timestamp_opt(1_761_000_000, 0).unwrap()
}

fn delivery(url: String, secrets: &[&str]) -> WebhookDelivery {
    WebhookDelivery {
        url,
        event_id: EventId::from_uuid(Uuid::new_v4()),
        attempted_at: attempted_at(),
        body: BODY.to_vec(),
        secrets: secrets.iter().map(|s| Secret::new(s.to_string())).collect(),
    }
}

/// Checks one `v1,<base64>` signature from first principles, not through the crate's signer.
fn verifies(secret: &str, request: &Recorded, signature: &str) -> bool {
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(request.header("webhook-id").as_bytes());
    mac.update(b".");
    mac.update(request.header("webhook-timestamp").as_bytes());
    mac.update(b".");
    mac.update(&request.body);
    let Some(encoded) = signature.strip_prefix("v1,") else {
        return false;
    };
    let Ok(tag) = STANDARD.decode(encoded) else {
        return false;
    };
    mac.verify_slice(&tag).is_ok()
}

fn assert_refused(outcome: &DeliveryOutcome, needle: &str) {
    match outcome {
        DeliveryOutcome::Refused { reason } => {
            assert!(reason.contains(needle), "{reason:?} lacks {needle:?}")
        }
        other => panic!("expected Refused, got {other:?}"),
    }
}

#[tokio::test]
async fn a_2xx_is_delivered_with_every_header_and_a_verifiable_signature() {
    let receiver = Receiver::start(vec![Reply::with_body(200, "ok")]).await;
    let delivery = delivery(receiver.url("/hooks/payouts?tenant=7"), &[SECRET]);

    let attempt = local_sender().send(&delivery).await;

    assert_eq!(attempt.outcome, DeliveryOutcome::Delivered { status: 200 });
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hooks/payouts");
    assert_eq!(request.body, BODY);
    assert_eq!(request.header("content-type"), "application/json");
    assert_eq!(
        request.header("user-agent"),
        format!("payoutd/{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(request.header("webhook-id"), delivery.event_id.to_string());
    assert_eq!(request.header("webhook-timestamp"), "1761000000");
    assert_eq!(request.header("content-length"), BODY.len().to_string());
    let signature = request.header("webhook-signature");
    assert!(!signature.contains(' '), "{signature}");
    assert!(verifies(SECRET, request, signature), "{signature}");
    assert!(!verifies(PREVIOUS_SECRET, request, signature));

    let mut names: Vec<&str> = request.headers.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "accept",
            "content-length",
            "content-type",
            "host",
            "user-agent",
            "webhook-id",
            "webhook-signature",
            "webhook-timestamp",
        ]
    );
    assert!(attempt.latency < Duration::from_secs(5));
}

#[tokio::test]
async fn a_failure_then_a_success_keeps_the_webhook_id() {
    let receiver = Receiver::start(vec![
        Reply::with_body(500, "database is down"),
        Reply::status(204),
    ])
    .await;
    let sender = local_sender();
    let mut delivery = delivery(receiver.url("/"), &[SECRET]);

    let first = sender.send(&delivery).await;
    delivery.attempted_at = attempted_at() + chrono::Duration::seconds(5);
    let second = sender.send(&delivery).await;

    assert_eq!(
        first.outcome,
        DeliveryOutcome::Failed {
            status: Some(500),
            retry_after: None,
            error: "database is down".to_owned(),
        }
    );
    assert_eq!(second.outcome, DeliveryOutcome::Delivered { status: 204 });
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2);
    let id = delivery.event_id.to_string();
    assert_eq!(requests[0].header("webhook-id"), id);
    assert_eq!(requests[1].header("webhook-id"), id);
    assert_eq!(requests[1].header("webhook-timestamp"), "1761000005");
    for request in &requests {
        assert!(verifies(
            SECRET,
            request,
            request.header("webhook-signature")
        ));
    }
}

#[tokio::test]
async fn a_receiver_that_never_answers_fails_without_status_after_the_timeout() {
    let receiver = Receiver::start(vec![Reply::Hang]).await;
    let timeout = Duration::from_millis(300);

    let attempt = sender(timeout, true)
        .send(&delivery(receiver.url("/"), &[SECRET]))
        .await;

    match &attempt.outcome {
        DeliveryOutcome::Failed {
            status: None,
            retry_after: None,
            error,
        } => assert!(error.contains("timed out"), "{error}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(attempt.latency >= timeout, "{:?}", attempt.latency);
    assert!(
        attempt.latency < timeout + Duration::from_secs(1),
        "{:?}",
        attempt.latency
    );
    assert_eq!(receiver.requests().len(), 1);
}

#[tokio::test]
async fn a_410_is_gone() {
    let receiver = Receiver::start(vec![Reply::with_body(410, "endpoint deleted")]).await;

    let attempt = local_sender()
        .send(&delivery(receiver.url("/"), &[SECRET]))
        .await;

    assert_eq!(attempt.outcome, DeliveryOutcome::Gone);
    assert_eq!(receiver.requests().len(), 1);
}

#[tokio::test]
async fn redirects_are_failures_and_never_followed() {
    let target = Receiver::start(vec![Reply::status(200)]).await;
    let redirecting =
        Receiver::start(vec![Reply::with_header(302, "location", &target.url("/"))]).await;

    let attempt = local_sender()
        .send(&delivery(redirecting.url("/"), &[SECRET]))
        .await;

    match &attempt.outcome {
        DeliveryOutcome::Failed {
            status: Some(302),
            retry_after: None,
            error,
        } => assert!(error.contains("302"), "{error}"),
        other => panic!("expected Failed 302, got {other:?}"),
    }
    assert_eq!(redirecting.requests().len(), 1);
    Receiver::settle().await;
    assert_eq!(target.connections(), 0);
    assert!(target.requests().is_empty());
}

#[tokio::test]
async fn a_503_with_retry_after_in_seconds_is_parsed() {
    let receiver = Receiver::start(vec![Reply::with_header(503, "retry-after", "120")]).await;

    let attempt = local_sender()
        .send(&delivery(receiver.url("/"), &[SECRET]))
        .await;

    assert_eq!(
        attempt.outcome,
        DeliveryOutcome::Failed {
            status: Some(503),
            retry_after: Some(Duration::from_secs(120)),
            error: "HTTP 503 Service Unavailable".to_owned(),
        }
    );
}

#[tokio::test]
async fn a_503_with_retry_after_as_an_http_date_is_parsed() {
    let in_a_minute = std::time::SystemTime::now() + Duration::from_secs(61);
    let date = httpdate::fmt_http_date(in_a_minute);
    let receiver = Receiver::start(vec![Reply::with_header(503, "retry-after", &date)]).await;

    let attempt = local_sender()
        .send(&delivery(receiver.url("/"), &[SECRET]))
        .await;

    match attempt.outcome {
        DeliveryOutcome::Failed {
            status: Some(503),
            retry_after: Some(after),
            ..
        } => assert!(
            after > Duration::from_secs(55) && after <= Duration::from_secs(61),
            "{after:?}"
        ),
        other => panic!("expected Failed 503 with retry-after, got {other:?}"),
    }
}

#[tokio::test]
async fn two_secrets_give_two_verifiable_signatures_current_first() {
    let receiver = Receiver::start(vec![Reply::status(200)]).await;

    let attempt = local_sender()
        .send(&delivery(receiver.url("/"), &[SECRET, PREVIOUS_SECRET]))
        .await;

    assert_eq!(attempt.outcome, DeliveryOutcome::Delivered { status: 200 });
    let request = &receiver.requests()[0];
    let signatures: Vec<&str> = request.header("webhook-signature").split(' ').collect();
    assert_eq!(signatures.len(), 2, "{signatures:?}");
    assert!(verifies(SECRET, request, signatures[0]));
    assert!(verifies(PREVIOUS_SECRET, request, signatures[1]));
    assert!(!verifies(SECRET, request, signatures[1]));
}

#[tokio::test]
async fn error_bodies_are_cut_to_500_characters_and_never_echo_a_secret() {
    let body = format!("signature mismatch, expected key {SECRET} ") + &"x".repeat(2_000);
    let receiver = Receiver::start(vec![Reply::with_body(400, body)]).await;

    let attempt = local_sender()
        .send(&delivery(receiver.url("/"), &[SECRET]))
        .await;

    match &attempt.outcome {
        DeliveryOutcome::Failed {
            status: Some(400),
            error,
            ..
        } => {
            assert_eq!(error.chars().count(), 500);
            assert!(error.starts_with("signature mismatch, expected key [REDACTED] xxx"));
            assert!(!error.contains("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"));
        }
        other => panic!("expected Failed 400, got {other:?}"),
    }
}

#[tokio::test]
async fn a_closed_port_fails_without_status() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    drop(listener);

    let attempt = local_sender().send(&delivery(url, &[SECRET])).await;

    match &attempt.outcome {
        DeliveryOutcome::Failed {
            status: None,
            retry_after: None,
            error,
        } => {
            assert!(error.starts_with("could not connect"), "{error}");
            assert!(!error.contains("127.0.0.1"), "{error}");
        }
        other => panic!("expected a connection failure, got {other:?}"),
    }
}

#[tokio::test]
async fn loopback_is_refused_without_a_connection_unless_allowed() {
    let receiver = Receiver::start(vec![Reply::status(200)]).await;
    let guarded = sender(Duration::from_secs(5), false);

    let literal = guarded.send(&delivery(receiver.url("/"), &[SECRET])).await;
    let by_name = guarded
        .send(&delivery(receiver.localhost_url("/"), &[SECRET]))
        .await;
    let mapped = guarded
        .send(&delivery(
            format!("http://[::ffff:127.0.0.1]:{}/", receiver.port()),
            &[SECRET],
        ))
        .await;

    assert_refused(&literal.outcome, "127.0.0.1 is a loopback address");
    assert_refused(&by_name.outcome, "localhost resolves to");
    assert_refused(&by_name.outcome, "loopback");
    assert_refused(&mapped.outcome, "loopback");
    Receiver::settle().await;
    assert_eq!(receiver.connections(), 0);

    // The same URLs go through once the configuration allows private targets.
    let allowed = local_sender();
    let literal = allowed.send(&delivery(receiver.url("/"), &[SECRET])).await;
    let by_name = allowed
        .send(&delivery(receiver.localhost_url("/"), &[SECRET]))
        .await;
    assert_eq!(literal.outcome, DeliveryOutcome::Delivered { status: 200 });
    assert_eq!(by_name.outcome, DeliveryOutcome::Delivered { status: 200 });
}

#[tokio::test]
async fn ipv6_forms_carrying_loopback_and_urls_with_credentials_are_refused_without_a_connection() {
    let receiver = Receiver::start(vec![Reply::status(200)]).await;
    let port = receiver.port();
    let guarded = sender(Duration::from_secs(5), false);
    for url in [
        format!("http://[::127.0.0.1]:{port}/"),
        format!("http://[::ffff:0:7f00:1]:{port}/"),
        format!("http://[64:ff9b::7f00:1]:{port}/"),
        format!("http://[2002:7f00:1::1]:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://2130706433:{port}/"),
    ] {
        let attempt = guarded.send(&delivery(url, &[SECRET])).await;
        assert_refused(&attempt.outcome, "loopback");
    }
    // Never sendable, even with private targets allowed: the receiver's own address with
    // credentials, port 0, the unspecified address.
    let local = local_sender();
    let cases = [
        (
            format!("http://merchant:hunter2@127.0.0.1:{port}/"),
            "user name or password",
        ),
        ("http://127.0.0.1:0/".to_owned(), "port 0"),
        (format!("http://0.0.0.0:{port}/"), "unspecified"),
        (format!("http://[::]:{port}/"), "unspecified"),
    ];
    for (url, needle) in &cases {
        let attempt = local.send(&delivery(url.clone(), &[SECRET])).await;
        assert_refused(&attempt.outcome, needle);
        if let DeliveryOutcome::Refused { reason } = &attempt.outcome {
            assert!(!reason.contains("hunter2"), "{reason}");
        }
    }
    Receiver::settle().await;
    assert_eq!(receiver.connections(), 0);
}

#[tokio::test]
async fn unusable_urls_and_secrets_are_refused_without_a_connection() {
    let receiver = Receiver::start(vec![Reply::status(200)]).await;
    let sender = local_sender();

    let cases = [
        (delivery("not a url".to_owned(), &[SECRET]), "malformed"),
        (
            delivery(receiver.url("/").replace("http", "ftp"), &[SECRET]),
            "not http or https",
        ),
        (
            delivery(receiver.url("/"), &["whsec_!!!not-base64"]),
            "webhook secret #1 is unusable",
        ),
        (
            delivery(receiver.url("/"), &[SECRET, "sk_live_plain"]),
            "webhook secret #2 is unusable",
        ),
        (delivery(receiver.url("/"), &[]), "no webhook secret"),
    ];
    for (delivery, needle) in &cases {
        let attempt = sender.send(delivery).await;
        assert_refused(&attempt.outcome, needle);
        if let DeliveryOutcome::Refused { reason } = &attempt.outcome {
            assert!(!reason.contains("not-base64") && !reason.contains("sk_live"));
        }
    }
    Receiver::settle().await;
    assert_eq!(receiver.connections(), 0);
}

#[tokio::test]
async fn one_sender_serves_concurrent_attempts() {
    let receiver = Receiver::start(vec![Reply::status(200)]).await;
    let sender = local_sender();

    let handles: Vec<_> = (0..8)
        .map(|_| {
            let sender = sender.clone();
            let delivery = delivery(receiver.url("/"), &[SECRET]);
            tokio::spawn(async move { sender.send(&delivery).await })
        })
        .collect();
    for handle in handles {
        let attempt = handle.await.unwrap();
        assert_eq!(attempt.outcome, DeliveryOutcome::Delivered { status: 200 });
    }

    assert_eq!(receiver.requests().len(), 8);
}
