//! `PartnerApiTransport` against a real HTTP server on 127.0.0.1 (a few lines of tokio playing
//! the partner): signed uploads with their idempotency key, the partner's answers mapped to
//! upload outcomes and errors, answers whose signature fails refused, reports listed page by
//! page from a cursor and fetched, timeouts and oversized answers.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use adapters_filetransfer::{PartnerApiConfigError, PartnerApiSettings, PartnerApiTransport};
use bank_formats::interac::{
    BatchReceipt, BatchRequest, Currency, ErrorAnswer, Payment, PaymentStatus, PaymentUpdate,
    ReportList, StatusReport, sign, verify_signature,
};
use chrono::{TimeDelta, TimeZone, Utc};
use domain::PortError;
use domain::masking::Secret;
use domain::rail::transport::{FileTransport, UploadOutcome};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const SECRET: &str = "partner-shared-secret";

/// A request as the partner saw it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

/// What the partner answers.
struct Answer {
    status: u16,
    body: Vec<u8>,
    signature: Option<String>,
    delay: Duration,
}

fn now() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs(),
    )
    .unwrap()
}

fn signed(status: u16, body: Vec<u8>) -> Answer {
    Answer {
        status,
        signature: Some(sign(SECRET.as_bytes(), now(), &body).unwrap()),
        body,
        delay: Duration::ZERO,
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Answer + Send + Sync>;

/// The partner: serves each connection with `handler`, records every request.
struct Partner {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Partner {
    async fn start(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Handler = Arc::new(handler);
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let handler = handler.clone();
                let record = record.clone();
                tokio::spawn(async move {
                    let Some(request) = read_request(&mut stream).await else {
                        return;
                    };
                    record.lock().unwrap().push(request.clone());
                    let answer = handler(&request);
                    tokio::time::sleep(answer.delay).await;
                    let mut head = format!(
                        "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                        answer.status,
                        answer.body.len()
                    );
                    if let Some(signature) = answer.signature {
                        head.push_str(&format!("x-partner-signature: {signature}\r\n"));
                    }
                    head.push_str("\r\n");
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&answer.body).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { addr, seen }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
    };
    let head = String::from_utf8(data[..head_end].to_vec()).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = data[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    Some(Seen {
        method,
        target,
        headers,
        body,
    })
}

fn settings(base_url: String) -> PartnerApiSettings {
    PartnerApiSettings::new(base_url, Secret::new(SECRET.to_owned()))
}

fn transport(partner: &Partner) -> PartnerApiTransport {
    PartnerApiTransport::new(settings(partner.url())).unwrap()
}

fn batch(batch_id: &str, amount: u64) -> BatchRequest {
    let created = Utc.with_ymd_and_hms(2026, 11, 25, 21, 7, 0).unwrap();
    BatchRequest {
        batch_id: batch_id.into(),
        created_at: created,
        originator: "CUST-1".into(),
        sender_name: "Payoutd".into(),
        payments: vec![Payment {
            payment_id: "p1".into(),
            amount,
            currency: Currency::Cad,
            recipient_name: "Ada".into(),
            recipient_email: "ada@example.ca".into(),
            memo: "Invoice 1".into(),
            expires_at: created + TimeDelta::days(30),
        }],
    }
}

/// Checks a request's signature as the partner does: over the body of a POST, the target of a
/// GET.
fn verified(seen: &Seen) -> bool {
    let payload = if seen.method == "GET" {
        seen.target.as_bytes().to_vec()
    } else {
        seen.body.clone()
    };
    seen.headers
        .get("x-partner-signature")
        .is_some_and(|h| verify_signature(h, &payload, SECRET.as_bytes(), now(), 300).is_ok())
}

/// A partner that keeps batches by idempotency key.
async fn batch_partner() -> Partner {
    let kept: Mutex<HashMap<String, Vec<u8>>> = Mutex::new(HashMap::new());
    Partner::start(move |seen| {
        if !verified(seen) {
            return signed(401, Vec::new());
        }
        let Ok(request) = BatchRequest::parse(&seen.body) else {
            return signed(400, Vec::new());
        };
        let key = seen
            .headers
            .get("idempotency-key")
            .cloned()
            .unwrap_or_default();
        let receipt = BatchReceipt::of(&request, Utc::now()).to_bytes();
        let mut kept = kept.lock().unwrap();
        match kept.get(&key) {
            None => {
                kept.insert(key, seen.body.clone());
                signed(201, receipt)
            }
            Some(body) if *body == seen.body => signed(200, receipt),
            Some(_) => signed(
                409,
                ErrorAnswer {
                    code: "IDEMPOTENCY_CONFLICT".into(),
                    message: "another body".into(),
                }
                .to_bytes(),
            ),
        }
    })
    .await
}

fn is_unknown(result: &Result<impl std::fmt::Debug, PortError>) -> bool {
    matches!(result, Err(PortError::Unknown(_)))
}

fn is_unavailable(result: &Result<impl std::fmt::Debug, PortError>) -> bool {
    matches!(result, Err(PortError::Unavailable(_)))
}

#[tokio::test]
async fn an_upload_is_created_then_already_there_and_another_body_conflicts() {
    let partner = batch_partner().await;
    let transport = transport(&partner);
    let body = batch("b1", 1_000).to_bytes().unwrap();
    assert_eq!(
        transport.upload("PAYOUTD_1.json", &body).await.unwrap(),
        UploadOutcome::Uploaded
    );
    assert_eq!(
        transport.upload("PAYOUTD_1.json", &body).await.unwrap(),
        UploadOutcome::AlreadyThere
    );
    let other = batch("b1", 2_000).to_bytes().unwrap();
    let conflict = transport.upload("PAYOUTD_1.json", &other).await;
    assert!(is_unknown(&conflict), "{conflict:?}");
    assert!(conflict.unwrap_err().to_string().contains("409"));

    let seen = partner.seen();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].target, "/v1/batches");
    assert_eq!(seen[0].headers["idempotency-key"], "PAYOUTD_1.json");
    assert_eq!(seen[0].headers["content-type"], "application/json");
    assert_eq!(seen[0].body, body);
}

#[tokio::test]
async fn what_is_not_a_batch_or_a_plain_name_is_never_sent() {
    let partner = batch_partner().await;
    let transport = transport(&partner);
    let body = batch("b1", 1_000).to_bytes().unwrap();
    assert!(is_unknown(&transport.upload("../x.json", &body).await));
    assert!(is_unknown(
        &transport.upload("x.json", b"{\"not\":1}").await
    ));
    assert!(is_unknown(&transport.fetch_inbound("a/b").await));
    assert!(is_unknown(&transport.fetch_inbound("has space").await));
    assert!(partner.seen().is_empty());
}

#[tokio::test]
async fn answers_that_are_unsigned_badly_signed_or_for_another_batch_are_refused() {
    let body = batch("b1", 1_000).to_bytes().unwrap();
    let receipt = BatchReceipt::of(&batch("b1", 1_000), Utc::now()).to_bytes();

    let forged = receipt.clone();
    let partner = Partner::start(move |_| Answer {
        signature: Some(sign(b"another secret", now(), &forged).unwrap()),
        ..signed(201, forged.clone())
    })
    .await;
    let result = transport(&partner).upload("a.json", &body).await;
    assert!(is_unknown(&result), "{result:?}");
    assert!(result.unwrap_err().to_string().contains("does not match"));

    let unsigned = receipt.clone();
    let partner = Partner::start(move |_| Answer {
        signature: None,
        ..signed(201, unsigned.clone())
    })
    .await;
    assert!(is_unknown(
        &transport(&partner).upload("a.json", &body).await
    ));

    let stale = receipt.clone();
    let partner = Partner::start(move |_| Answer {
        signature: Some(sign(SECRET.as_bytes(), now() - 3_600, &stale).unwrap()),
        ..signed(201, stale.clone())
    })
    .await;
    assert!(is_unknown(
        &transport(&partner).upload("a.json", &body).await
    ));

    let elsewhere = BatchReceipt::of(&batch("b2", 1_000), Utc::now()).to_bytes();
    let partner = Partner::start(move |_| signed(201, elsewhere.clone())).await;
    let result = transport(&partner).upload("a.json", &body).await;
    assert!(
        result
            .unwrap_err()
            .to_string()
            .contains("not the batch sent")
    );
}

#[tokio::test]
async fn refusals_are_errors_and_outages_are_unavailable() {
    let body = batch("b1", 1_000).to_bytes().unwrap();
    for (status, unavailable) in [
        (400, false),
        (401, false),
        (422, false),
        (429, true),
        (500, true),
        (503, true),
    ] {
        let partner = Partner::start(move |_| signed(status, Vec::new())).await;
        let result = transport(&partner).upload("a.json", &body).await;
        assert_eq!(is_unavailable(&result), unavailable, "{status}: {result:?}");
        assert!(result.is_err());
    }
    // Nobody listening.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    let transport = PartnerApiTransport::new(settings(format!("http://{closed}"))).unwrap();
    assert!(is_unavailable(&transport.upload("a.json", &body).await));
}

#[tokio::test]
async fn a_partner_too_slow_times_out() {
    let body = batch("b1", 1_000).to_bytes().unwrap();
    let receipt = BatchReceipt::of(&batch("b1", 1_000), Utc::now()).to_bytes();
    let partner = Partner::start(move |_| Answer {
        delay: Duration::from_secs(3),
        ..signed(201, receipt.clone())
    })
    .await;
    let mut slow = settings(partner.url());
    slow.timeout = Duration::from_millis(300);
    let transport = PartnerApiTransport::new(slow).unwrap();
    let started = std::time::Instant::now();
    let result = transport.upload("a.json", &body).await;
    assert!(is_unavailable(&result), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn an_oversized_answer_is_refused() {
    let partner = Partner::start(|_| signed(200, vec![b' '; 10_000])).await;
    let mut small = settings(partner.url());
    small.max_response_bytes = 1_000;
    let transport = PartnerApiTransport::new(small).unwrap();
    let result = transport.list_inbound().await;
    assert!(
        result
            .unwrap_err()
            .to_string()
            .contains("longer than 1000 bytes")
    );
}

fn report(id: &str) -> Vec<u8> {
    StatusReport {
        report_id: id.into(),
        batch_id: "b1".into(),
        created_at: Utc::now(),
        batch_status: None,
        payments: vec![PaymentUpdate {
            payment_id: "p1".into(),
            status: PaymentStatus::Sent,
            code: None,
            reason: None,
            updated_at: Utc::now(),
        }],
    }
    .to_bytes()
    .unwrap()
}

/// A partner with reports `rpt_1..` (more appear when `count` grows), two ids a page.
async fn report_partner(count: Arc<Mutex<usize>>) -> Partner {
    Partner::start(move |seen| {
        if !verified(seen) {
            return signed(401, Vec::new());
        }
        let count = *count.lock().unwrap();
        let ids: Vec<String> = (1..=count).map(|n| format!("rpt_{n}")).collect();
        if let Some(id) = seen.target.strip_prefix("/v1/reports/") {
            return if id == "rpt_wrong" {
                signed(200, report("rpt_1"))
            } else if ids.iter().any(|i| i == id) {
                signed(200, report(id))
            } else {
                signed(404, Vec::new())
            };
        }
        let after = seen
            .target
            .split_once("?after=")
            .map(|(_, after)| after.to_owned());
        let start = after
            .and_then(|a| ids.iter().position(|i| *i == a).map(|p| p + 1))
            .unwrap_or(0);
        let page: Vec<String> = ids.iter().skip(start).take(2).cloned().collect();
        let has_more = start + page.len() < ids.len();
        signed(
            200,
            ReportList {
                report_ids: page,
                has_more,
            }
            .to_bytes(),
        )
    })
    .await
}

#[tokio::test]
async fn reports_are_listed_from_a_cursor_and_fetched() {
    let count = Arc::new(Mutex::new(3));
    let partner = report_partner(count.clone()).await;
    let transport = transport(&partner);

    assert_eq!(
        transport.list_inbound().await.unwrap(),
        vec!["rpt_1", "rpt_2", "rpt_3"]
    );
    let targets: Vec<String> = partner.seen().iter().map(|s| s.target.clone()).collect();
    assert_eq!(targets, vec!["/v1/reports", "/v1/reports?after=rpt_2"]);

    assert_eq!(
        transport.fetch_inbound("rpt_1").await.unwrap(),
        report("rpt_1")
    );
    // Fetched reports are not listed again; the others are until fetched; the cursor moves on.
    *count.lock().unwrap() = 4;
    assert_eq!(
        transport.list_inbound().await.unwrap(),
        vec!["rpt_2", "rpt_3", "rpt_4"]
    );
    assert_eq!(
        partner.seen().last().unwrap().target,
        "/v1/reports?after=rpt_3"
    );
    for id in ["rpt_2", "rpt_3", "rpt_4"] {
        transport.fetch_inbound(id).await.unwrap();
    }
    assert!(transport.list_inbound().await.unwrap().is_empty());
    assert_eq!(
        partner.seen().last().unwrap().target,
        "/v1/reports?after=rpt_4"
    );

    assert!(is_unknown(&transport.fetch_inbound("rpt_9").await));
    let wrong = transport.fetch_inbound("rpt_wrong").await;
    assert!(
        wrong
            .unwrap_err()
            .to_string()
            .contains("answered with report rpt_1")
    );
}

#[tokio::test]
async fn listing_reads_a_bounded_number_of_pages() {
    let partner = report_partner(Arc::new(Mutex::new(9))).await;
    let mut few = settings(partner.url());
    few.max_pages = 2;
    let transport = PartnerApiTransport::new(few).unwrap();
    assert_eq!(transport.list_inbound().await.unwrap().len(), 4);
    assert_eq!(transport.list_inbound().await.unwrap().len(), 8);
    assert_eq!(transport.list_inbound().await.unwrap().len(), 9);
}

#[test]
fn the_base_url_must_be_https_unless_on_loopback() {
    for good in [
        "https://partner.example/api",
        "http://127.0.0.1:8080",
        "http://[::1]:9000/",
        "http://localhost:1",
    ] {
        assert!(
            PartnerApiTransport::new(settings(good.to_owned())).is_ok(),
            "{good}"
        );
    }
    for bad in [
        "http://partner.example",
        "http://10.0.0.1",
        "ftp://127.0.0.1",
        "not a url",
        "https://user:pw@partner.example",
        "https://partner.example/?q=1",
    ] {
        assert!(
            matches!(
                PartnerApiTransport::new(settings(bad.to_owned())),
                Err(PartnerApiConfigError::BaseUrl(_))
            ),
            "{bad}"
        );
    }
    assert!(matches!(
        PartnerApiTransport::new(PartnerApiSettings::new(
            "https://partner.example",
            Secret::new(String::new())
        )),
        Err(PartnerApiConfigError::EmptySecret)
    ));
    let debug = format!("{:?}", settings("https://partner.example".into()));
    assert!(!debug.contains(SECRET), "{debug}");
}
