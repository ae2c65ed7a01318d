//! The partner simulator over loopback: uploads and their idempotency, reports, fates, signed
//! callbacks with retries, and the loopback guard.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use bank_formats::interac::{
    BatchReceipt, BatchRequest, BatchVerdict, Currency, ErrorAnswer, Payment, PaymentStatus,
    ReportList, SIGNATURE_HEADER, StatusReport, sign, verify_signature,
};
use chrono::{SubsecRound, TimeDelta};

use super::batches::fate;
use super::wire::read_request;
use super::*;

const SECRET: &str = "partner-test-secret";

fn unix_now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn batch(batch_id: &str, emails: &[&str]) -> BatchRequest {
    let created = chrono::Utc::now().trunc_subsecs(0);
    BatchRequest {
        batch_id: batch_id.into(),
        created_at: created,
        originator: "CUST-1".into(),
        sender_name: "Payoutd".into(),
        payments: emails
            .iter()
            .enumerate()
            .map(|(i, email)| Payment {
                payment_id: format!("{batch_id}p{i}"),
                amount: 100 + i as u64,
                currency: Currency::Cad,
                recipient_name: "Ada".into(),
                recipient_email: (*email).into(),
                memo: "Invoice".into(),
                expires_at: created + TimeDelta::days(30),
            })
            .collect(),
    }
}

/// One raw HTTP/1.1 exchange; returns the status, the signature header and the body.
fn exchange(
    addr: SocketAddr,
    method: &str,
    target: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> (u16, Option<String>, Vec<u8>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8(answer[..at].to_vec()).unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let signature = head
        .split("\r\n")
        .filter_map(|l| l.split_once(':'))
        .find(|(n, _)| n.eq_ignore_ascii_case(SIGNATURE_HEADER))
        .map(|(_, v)| v.trim().to_owned());
    (status, signature, answer[at + 4..].to_vec())
}

fn signed_headers(payload: &[u8], key: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![(
        SIGNATURE_HEADER,
        sign(SECRET.as_bytes(), unix_now(), payload).unwrap(),
    )];
    if let Some(key) = key {
        headers.push(("Idempotency-Key", key.to_owned()));
    }
    headers
}

fn post(addr: SocketAddr, key: Option<&str>, body: &[u8]) -> (u16, Vec<u8>) {
    let (status, signature, answer) = exchange(
        addr,
        "POST",
        "/v1/batches",
        &signed_headers(body, key),
        body,
    );
    assert_verified(signature.as_deref(), &answer);
    (status, answer)
}

fn get(addr: SocketAddr, target: &str) -> (u16, Vec<u8>) {
    let (status, signature, answer) = exchange(
        addr,
        "GET",
        target,
        &signed_headers(target.as_bytes(), None),
        b"",
    );
    assert_verified(signature.as_deref(), &answer);
    (status, answer)
}

fn assert_verified(signature: Option<&str>, body: &[u8]) {
    let signature = signature.expect("every answer is signed");
    verify_signature(signature, body, SECRET.as_bytes(), unix_now(), 300).unwrap();
}

fn reports(addr: SocketAddr) -> Vec<StatusReport> {
    let (status, list) = get(addr, "/v1/reports");
    assert_eq!(status, 200);
    ReportList::parse(&list)
        .unwrap()
        .report_ids
        .iter()
        .map(|id| {
            let (status, bytes) = get(addr, &format!("/v1/reports/{id}"));
            assert_eq!(status, 200);
            StatusReport::parse(&bytes).unwrap()
        })
        .collect()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

fn options() -> PartnerOptions {
    PartnerOptions {
        final_delay: Duration::from_millis(100),
        ..PartnerOptions::new(SECRET)
    }
}

/// [`options`] where every valid recipient deposits.
fn all_deposited() -> PartnerOptions {
    PartnerOptions {
        deposited_share: 1,
        declined_share: 0,
        expired_share: 0,
        ..options()
    }
}

#[test]
fn uploads_are_idempotent_by_key_and_checked() {
    let partner = PartnerSimulator::start(options()).unwrap();
    let addr = partner.addr;
    assert_eq!(partner.base_url(), format!("http://{addr}"));
    let body = batch("b1", &["ada@example.ca"]).to_bytes().unwrap();
    let (status, first) = post(addr, Some("F1.json"), &body);
    assert_eq!(status, 201);
    let receipt = BatchReceipt::parse(&first).unwrap();
    assert_eq!(
        (receipt.batch_id.as_str(), receipt.payment_count),
        ("b1", 1)
    );
    assert_eq!(post(addr, Some("F1.json"), &body), (200, first));

    let other = batch("b1", &["grace@example.ca", "ada@example.ca"])
        .to_bytes()
        .unwrap();
    let (status, answer) = post(addr, Some("F1.json"), &other);
    assert_eq!(status, 409);
    assert_eq!(
        ErrorAnswer::parse(&answer).unwrap().code,
        "IDEMPOTENCY_CONFLICT"
    );
    assert_eq!(
        post(addr, Some("F2.json"), &body).0,
        409,
        "same batch, new key"
    );
    assert_eq!(post(addr, None, &body).0, 400);
    assert_eq!(
        post(addr, Some("F3.json"), b"{\"type\":\"batch_request\"}").0,
        400
    );

    // A bad signature, a stale one, none.
    let forged = vec![(SIGNATURE_HEADER, sign(b"wrong", unix_now(), &body).unwrap())];
    assert_eq!(exchange(addr, "POST", "/v1/batches", &forged, &body).0, 401);
    let stale = vec![(
        SIGNATURE_HEADER,
        sign(SECRET.as_bytes(), unix_now() - 600, &body).unwrap(),
    )];
    assert_eq!(exchange(addr, "POST", "/v1/batches", &stale, &body).0, 401);
    assert_eq!(exchange(addr, "GET", "/v1/reports", &[], b"").0, 401);

    let counters = partner.counters();
    assert_eq!(
        (counters.batches, counters.repeats, counters.conflicts),
        (1, 1, 2)
    );
    assert_eq!((counters.invalid, counters.bad_signatures), (2, 3));
    partner.stop();
}

#[test]
fn a_batch_gets_a_sent_report_then_final_statuses() {
    let partner = PartnerSimulator::start(all_deposited()).unwrap();
    let addr = partner.addr;
    let body = batch("b7", &["ada@example.ca", "Invalid.bob@example.ca"])
        .to_bytes()
        .unwrap();
    assert_eq!(post(addr, Some("F7.json"), &body).0, 201);
    let first = reports(addr);
    assert_eq!(first[0].batch_id, "b7");
    assert_eq!(first[0].batch_status, Some(BatchVerdict::Accepted));
    assert!(
        first[0]
            .payments
            .iter()
            .all(|p| p.status == PaymentStatus::Sent)
    );
    wait_for("the final report", || partner.counters().reports == 2);
    let all = reports(addr);
    let [_, finals] = all.as_slice() else {
        panic!("{all:?}")
    };
    assert_eq!(finals.batch_status, None);
    assert_eq!(finals.payments[0].status, PaymentStatus::Deposited);
    assert_eq!(finals.payments[1].status, PaymentStatus::Failed);
    assert_eq!(
        finals.payments[1].code.as_deref(),
        Some("INVALID_RECIPIENT")
    );

    let (status, page) = get(addr, &format!("/v1/reports?after={}", all[0].report_id));
    assert_eq!(status, 200);
    assert_eq!(
        ReportList::parse(&page).unwrap().report_ids,
        vec![finals.report_id.clone()]
    );
    assert_eq!(get(addr, "/v1/reports?after=nope").0, 400);
    assert_eq!(get(addr, "/v1/reports/rpt_99999999").0, 404);
    partner.stop();
}

#[test]
fn held_final_reports_come_when_released_with_the_fates_given() {
    let partner = PartnerSimulator::start(PartnerOptions {
        final_delay: Duration::from_secs(3_600),
        ..all_deposited()
    })
    .unwrap();
    let addr = partner.addr;
    let emails = [
        "ada@example.ca",
        "bob@example.ca",
        "cy@example.ca",
        "dee@example.ca",
    ];
    let body = batch("b9", &emails).to_bytes().unwrap();
    assert_eq!(post(addr, Some("F9.json"), &body).0, 201);
    partner.decide([
        ("b9p1".to_owned(), Fate::Declined),
        (
            "b9p2".to_owned(),
            Fate::Failed(FailureCode::InvalidRecipient),
        ),
        ("b9p3".to_owned(), Fate::Expired),
        ("elsewhere".to_owned(), Fate::Declined),
    ]);
    thread::sleep(Duration::from_millis(300));
    assert_eq!(partner.counters().reports, 1, "the final report is held");

    partner.release_final_reports();
    wait_for("the final report", || partner.counters().reports == 2);
    let all = reports(addr);
    let statuses: Vec<_> = all[1]
        .payments
        .iter()
        .map(|p| (p.status, p.code.as_deref()))
        .collect();
    assert_eq!(
        statuses,
        [
            (PaymentStatus::Deposited, None),
            (PaymentStatus::Declined, Some("DECLINED")),
            (PaymentStatus::Failed, Some("INVALID_RECIPIENT")),
            (PaymentStatus::Expired, Some("EXPIRED")),
        ]
    );
    // Released, a later batch's final report comes at once.
    let body = batch("b10", &["eve@example.ca"]).to_bytes().unwrap();
    assert_eq!(post(addr, Some("F10.json"), &body).0, 201);
    wait_for("the later batch's final report", || {
        partner.counters().reports == 4
    });
    assert_eq!(partner.statuses()["b10p0"], "deposited");
    partner.stop();
}

#[test]
fn the_partner_goes_by_its_clock() {
    fn a_day_back() -> chrono::DateTime<chrono::Utc> {
        chrono::Utc::now() - TimeDelta::days(1)
    }
    let partner = PartnerSimulator::start(PartnerOptions {
        clock: a_day_back,
        ..options()
    })
    .unwrap();
    let body = batch("b11", &["ada@example.ca"]).to_bytes().unwrap();
    // Signed by the system clock: a day off the partner's.
    let now = signed_headers(&body, Some("F11.json"));
    assert_eq!(
        exchange(partner.addr, "POST", "/v1/batches", &now, &body).0,
        401
    );
    let day_back = vec![
        (
            SIGNATURE_HEADER,
            sign(SECRET.as_bytes(), a_day_back().timestamp(), &body).unwrap(),
        ),
        ("Idempotency-Key", "F11.json".to_owned()),
    ];
    let (status, signature, answer) =
        exchange(partner.addr, "POST", "/v1/batches", &day_back, &body);
    assert_eq!(status, 201);
    // The answer is signed by the partner's clock too.
    verify_signature(
        &signature.unwrap(),
        &answer,
        SECRET.as_bytes(),
        a_day_back().timestamp(),
        300,
    )
    .unwrap();
    let receipt = BatchReceipt::parse(&answer).unwrap();
    assert!(receipt.received_at < chrono::Utc::now() - TimeDelta::hours(23));
    partner.stop();
}

#[test]
fn fates_follow_the_shares_and_never_change() {
    let options = PartnerOptions::new(SECRET);
    let mut seen = HashMap::new();
    for n in 0..1_000 {
        let id = format!("payment{n}");
        let drawn = fate(&options, &id, "ada@example.ca");
        assert_eq!(fate(&options, &id, "ada@example.ca"), drawn);
        *seen.entry(format!("{drawn:?}")).or_insert(0u32) += 1;
    }
    let deposited = seen["Deposited"];
    assert!((700..=900).contains(&deposited), "{seen:?}");
    assert!(seen["Declined"] > 50, "{seen:?}");
    assert!(seen["Expired"] > 50, "{seen:?}");
    let all_declined = PartnerOptions {
        deposited_share: 0,
        declined_share: 1,
        expired_share: 0,
        ..options
    };
    assert_eq!(fate(&all_declined, "x", "a@b.ca"), Fate::Declined);
    assert_eq!(
        fate(&all_declined, "x", "INVALID@b.ca"),
        Fate::Failed(FailureCode::InvalidRecipient)
    );
}

/// The callbacks a receiver accepted: signature header and body.
type Pushed = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A callback receiver on loopback: answers 500 to the first `failures` posts, then 204;
/// keeps the bodies it accepted with their signatures.
fn receiver(failures: usize) -> (String, Pushed) {
    receiver_refusing(failures, "500 X\r\n")
}

/// [`receiver`] refusing with `refusal` (the status line's rest and any header lines).
fn receiver_refusing(failures: usize, refusal: &'static str) -> (String, Pushed) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/rail/interac/callback",
        listener.local_addr().unwrap()
    );
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = got.clone();
    thread::spawn(move || {
        let mut refused = 0;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Some(request) = read_request(&mut stream) else {
                continue;
            };
            assert_eq!(request.target, "/rail/interac/callback");
            let status = if refused < failures {
                refused += 1;
                refusal
            } else {
                let signature = request.header(SIGNATURE_HEADER).unwrap().to_owned();
                keep.lock().unwrap().push((signature, request.body));
                "204 X\r\n"
            };
            let _ = stream.write_all(
                format!("HTTP/1.1 {status}content-length: 0\r\nconnection: close\r\n\r\n")
                    .as_bytes(),
            );
        }
    });
    (url, got)
}

#[test]
fn reports_are_pushed_as_signed_callbacks_with_retries() {
    let (url, got) = receiver(1);
    let partner = PartnerSimulator::start(PartnerOptions {
        callback_url: Some(url),
        ..options()
    })
    .unwrap();
    let addr = partner.addr;
    let body = batch("b9", &["ada@example.ca"]).to_bytes().unwrap();
    assert_eq!(post(addr, Some("F9.json"), &body).0, 201);
    wait_for("two callbacks", || got.lock().unwrap().len() == 2);
    let polled = reports(addr);
    for ((signature, pushed), report) in got.lock().unwrap().iter().zip(&polled) {
        verify_signature(signature, pushed, SECRET.as_bytes(), unix_now(), 300).unwrap();
        assert_eq!(
            *pushed,
            report.to_bytes().unwrap(),
            "pushed and polled are one"
        );
    }
    let counters = partner.counters();
    assert_eq!(
        (counters.callbacks_delivered, counters.callbacks_failed),
        (2, 0)
    );
    partner.stop();
}

#[test]
fn a_callback_told_to_retry_later_waits_as_told() {
    let (url, got) = receiver_refusing(1, "503 Busy\r\nretry-after: 1\r\n");
    let partner = PartnerSimulator::start(PartnerOptions {
        callback_url: Some(url),
        final_delay: Duration::from_secs(3_600),
        ..options()
    })
    .unwrap();
    let body = batch("b12", &["ada@example.ca"]).to_bytes().unwrap();
    let posted = Instant::now();
    assert_eq!(post(partner.addr, Some("F12.json"), &body).0, 201);
    wait_for("the callback, retried", || got.lock().unwrap().len() == 1);
    assert!(
        posted.elapsed() >= Duration::from_secs(1),
        "retried after {:?}, before the second payoutd asked for",
        posted.elapsed()
    );
    assert_eq!(partner.counters().callbacks_delivered, 1);
    partner.stop();
}

#[test]
fn a_callback_nobody_takes_is_given_up() {
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let partner = PartnerSimulator::start(PartnerOptions {
        callback_url: Some(format!("http://{closed}/cb")),
        callback_attempts: 2,
        ..options()
    })
    .unwrap();
    let body = batch("b3", &["ada@example.ca"]).to_bytes().unwrap();
    assert_eq!(post(partner.addr, Some("F.json"), &body).0, 201);
    wait_for("two given-up callbacks", || {
        partner.counters().callbacks_failed == 2
    });
    partner.stop();
}

#[test]
fn only_loopback_is_served_or_called() {
    for url in [
        "http://10.0.0.1:80/cb",
        "https://127.0.0.1:80/cb",
        "http://example.com:80/cb",
        "http://127.0.0.1/cb",
    ] {
        let options = PartnerOptions {
            callback_url: Some(url.to_owned()),
            ..options()
        };
        assert!(PartnerSimulator::start(options).is_err(), "{url}");
    }
    for url in [
        "http://127.0.0.1:9/cb",
        "http://[::1]:9",
        "http://localhost:9/x",
    ] {
        assert!(loopback_callback(url).is_ok(), "{url}");
    }
    let public = PartnerOptions {
        bind: SocketAddr::from(([0, 0, 0, 0], 0)),
        ..options()
    };
    assert!(PartnerSimulator::start(public).is_err());
    assert!(PartnerSimulator::start(PartnerOptions::new("")).is_err());
}
