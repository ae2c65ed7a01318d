//! `POST /rail/interac/callback` is checked before it is read: a missing, malformed or stale
//! `X-Partner-Signature` and an oversized `Content-Length` are answered before the body arrives
//! (seen from raw TCP clients that never send it), only a few bodies are read at once, and the
//! refusals are counted in `/metrics` rather than logged one by one.

use std::time::Duration;

use bank_formats::interac;
use chrono::Utc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::TestApp;
use crate::production_rails::{SECRET, callback, interac_app};

/// Far longer than any answer takes: only a server that waits for the body runs into it. (20 s
/// once ran out in a full run on 2 cores at a load average of 10, before the eight held
/// callbacks had all been admitted; waits end as soon as the answer comes.)
const PATIENCE: Duration = Duration::from_secs(60);

/// What each request announces: 4 MiB, the most a callback may carry.
const ANNOUNCED: usize = 4 * 1024 * 1024;

/// Opens a connection and sends a callback's head (announcing `length` bytes) and `sent` bytes
/// of its body, no more.
async fn start_callback(
    app: &TestApp,
    signature: Option<&str>,
    length: usize,
    sent: &[u8],
) -> TcpStream {
    let address = app.base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).await.unwrap();
    let mut head = format!(
        "POST /rail/interac/callback HTTP/1.1\r\nHost: payoutd.test\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n"
    );
    if let Some(signature) = signature {
        head.push_str(&format!("X-Partner-Signature: {signature}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(sent).await.unwrap();
    stream
}

/// Reads one response: its head (lower-cased) and its body as JSON.
async fn response(stream: &mut TcpStream) -> (String, serde_json::Value) {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&read[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse().unwrap());
            if read.len() >= end + 4 + length {
                let body = serde_json::from_slice(&read[end + 4..end + 4 + length])
                    .unwrap_or(serde_json::Value::Null);
                return (head, body);
            }
        }
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("the server answers without waiting for the body")
            .unwrap();
        assert!(
            n > 0,
            "the connection closed without an answer: {:?}",
            String::from_utf8_lossy(&read)
        );
        read.extend_from_slice(&buf[..n]);
    }
}

/// A well-formed signature header dated `at`, over a body that is never sent.
fn signature_at(at: i64) -> String {
    interac::sign(SECRET.as_bytes(), at, b"a body never sent").unwrap()
}

/// The value of `name` in a Prometheus text, for a series whose labels hold `labels`.
fn series_value(text: &str, name: &str, labels: &str) -> Option<u64> {
    text.lines()
        .filter(|line| line.starts_with(name) && line.contains(labels))
        .find_map(|line| line.rsplit(' ').next()?.parse().ok())
}

#[tokio::test]
async fn callbacks_without_a_usable_signature_or_too_long_are_answered_before_their_body() {
    let (app, _notifier, _partner) = interac_app().await;
    let now = Utc::now().timestamp();
    let cases: Vec<(Option<String>, usize, u16, &str)> = vec![
        (None, ANNOUNCED, 401, "AUTH101"),
        (Some("nonsense".to_owned()), ANNOUNCED, 401, "AUTH104"),
        (Some(format!("t={now},v1=zz")), ANNOUNCED, 401, "AUTH104"),
        (Some(signature_at(now - 3_600)), ANNOUNCED, 401, "AUTH104"),
        (Some(signature_at(now + 3_600)), ANNOUNCED, 401, "AUTH104"),
        (Some(signature_at(now)), ANNOUNCED + 1, 413, "REQ008"),
    ];
    let before = scrape(&app).await;
    // 48 at once, each announcing its body and sending none of it: every one is answered.
    let mut requests = Vec::new();
    for n in 0..48 {
        let (signature, length, status, code) = cases[n % cases.len()].clone();
        let app = &app;
        requests.push(async move {
            let mut stream = start_callback(app, signature.as_deref(), length, b"").await;
            let (head, body) = response(&mut stream).await;
            assert!(
                head.starts_with(&format!("http/1.1 {status}")),
                "{signature:?}: {head}"
            );
            assert_eq!(body["error"][0]["code"], code, "{signature:?}: {body}");
        });
    }
    futures_util::future::join_all(requests).await;

    // Counted, by reason, rather than logged one by one (the counts are the process's: other
    // tests may add to them meanwhile).
    let after = scrape(&app).await;
    let refusals = "payoutd_rail_callback_refusals_total";
    for (reason, count) in [
        ("unsigned", 8),
        ("malformed_signature", 16),
        ("stale_signature", 16),
        ("too_large", 8),
    ] {
        let label = format!("reason=\"{reason}\"");
        let was = series_value(&before, refusals, &label).unwrap_or(0);
        let now = series_value(&after, refusals, &label).unwrap_or(0);
        assert!(now >= was + count, "{reason}: {was} then {now} in\n{after}");
    }
}

async fn scrape(app: &TestApp) -> String {
    app.client
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn an_unsigned_callback_is_told_which_header_is_missing() {
    let (app, _notifier, _partner) = interac_app().await;
    let (status, reply) = callback(&app, None, b"{}".to_vec()).await;
    assert_eq!(
        (status, &reply["error"][0]["code"]),
        (401, &"AUTH101".into())
    );
    let message = reply["error"][0]["message"].as_str().unwrap();
    assert!(message.contains("X-Partner-Signature"), "{message}");
    assert!(!message.contains("x-api-key"), "{message}");
}

/// How many callback bodies `app` is reading now, from its metrics.
async fn bodies_held(app: &TestApp) -> u64 {
    let text = scrape(app).await;
    series_value(&text, "payoutd_rail_callback_bodies_held", "")
        .unwrap_or_else(|| panic!("no bodies-reading gauge in {text}"))
}

/// Waits until `app` reads `expected` callback bodies at once, failing with what the server
/// answered if it answers one of the `held` callbacks (which send no more of their body).
async fn wait_for_bodies_held(app: &TestApp, expected: u64, held: &[TcpStream]) {
    let patience = tokio::time::Instant::now() + PATIENCE;
    let mut reading = bodies_held(app).await;
    while reading != expected && tokio::time::Instant::now() < patience {
        for (n, stream) in held.iter().enumerate() {
            let mut buf = [0u8; 512];
            match stream.try_read(&mut buf) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                answer => panic!(
                    "held callback {n} was answered before its body was sent: {:?}",
                    answer.map(|read| String::from_utf8_lossy(&buf[..read]).into_owned())
                ),
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        reading = bodies_held(app).await;
    }
    assert_eq!(reading, expected, "callback bodies being read");
}

#[tokio::test]
async fn only_a_few_callback_bodies_are_read_at_once_and_the_rest_are_told_to_retry() {
    let (app, _notifier, _partner) = interac_app().await;
    let readers = app_actix::partner_callbacks::MAX_CALLBACK_READERS;
    assert_eq!(bodies_held(&app).await, 0);
    // As many callbacks as may be read at once, each with a signature that passes every check
    // made before the body, sending a little of it and then nothing. They start in their own
    // time: the gauge says when every reader is held.
    let mut held = Vec::new();
    for _ in 0..readers {
        held.push(
            start_callback(
                &app,
                Some(&signature_at(Utc::now().timestamp())),
                ANNOUNCED,
                &[b' '; 1024],
            )
            .await,
        );
    }
    wait_for_bodies_held(&app, u64::try_from(readers).unwrap(), &held).await;

    // One more, complete but signed over another body: refused with 503 and `retry-after`,
    // never read.
    let body = b"{\"report_id\":\"rpt_x\"}".to_vec();
    let wrong = signature_at(Utc::now().timestamp());
    let mut stream = start_callback(&app, Some(&wrong), body.len(), &body).await;
    let (head, reply) = response(&mut stream).await;
    assert!(head.starts_with("http/1.1 503"), "{head}");
    assert!(head.contains("\r\nretry-after: 1"), "{head}");
    assert_eq!(reply["error"][0]["code"], "SYS503", "{reply}");

    // The held callbacks give up: their readers are free again, and the same callback is now
    // read and refused for its signature.
    drop(held);
    wait_for_bodies_held(&app, 0, &[]).await;
    let mut stream = start_callback(&app, Some(&wrong), body.len(), &body).await;
    let (head, reply) = response(&mut stream).await;
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert_eq!(reply["error"][0]["code"], "AUTH104", "{reply}");
}
