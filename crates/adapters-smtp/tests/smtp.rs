//! `SmtpNotifier` against a real SMTP server (aiosmtpd) on 127.0.0.1: the delivered message,
//! AUTH, STARTTLS with a pinned self-signed CA, and how each failure is classified.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use adapters_smtp::{SmtpConfigError, SmtpNotifier, TlsMode};
use domain::PortError;
use domain::account::AccountField;
use domain::account::ports::{ConfirmationRequest, Notifier, NotifyError};
use domain::ids::{ReceiverAccountId, SubaccountId};
use domain::masking::Secret;
use uuid::Uuid;

use support::{Options, SmtpServer, credentials, free_port, notifier, self_signed, settings};

const TOKEN: &str = "Zk9xQ2h3bW5hY2tzLXRva2VuLTI1Ni1iaXRz";

fn request(email: &str) -> ConfirmationRequest {
    ConfirmationRequest {
        account_id: ReceiverAccountId::from_uuid(Uuid::from_u128(1)),
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(2)),
        to_email: email.to_owned(),
        to_phone: "+61412345678".to_owned(),
        receiver_name: "Ada Lovelace".to_owned(),
        confirm_url: Secret::new(format!("https://pay.example.com/confirm/{TOKEN}")),
        masked_details: vec![
            (AccountField::Bsb, "012 ***".to_owned()),
            (AccountField::AccountNumber, "123 ***".to_owned()),
        ],
    }
}

/// `text` with quoted-printable soft line breaks and `=XX` escapes undone (headers are plain).
fn quoted_printable_decoded(text: &str) -> String {
    let joined = text.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'=', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unavailable(result: Result<(), NotifyError>) -> String {
    match result {
        Err(NotifyError::Port(PortError::Unavailable(e))) => format!("{e:#}"),
        other => panic!("expected Unavailable, got {other:?}"),
    }
}

#[tokio::test]
async fn the_delivered_message_has_the_link_and_only_masked_details() {
    let server = SmtpServer::start(&Options::default());
    notifier(&settings(server.port, TlsMode::None))
        .send_confirmation(&request("ada@example.com"))
        .await
        .unwrap();
    let received = server.wait_for(1);
    assert_eq!(received.len(), 1);
    let message = &received[0];
    assert_eq!(message["mail_from"], "payouts@example.com");
    assert_eq!(message["rcpt_tos"], serde_json::json!(["ada@example.com"]));
    let data = &quoted_printable_decoded(message["data"].as_str().unwrap());
    assert!(
        data.contains("From: Payouts <payouts@example.com>"),
        "{data}"
    );
    assert!(
        data.contains("To: \"Ada Lovelace\" <ada@example.com>"),
        "{data}"
    );
    assert!(
        data.contains("Subject: Confirm your bank details"),
        "{data}"
    );
    assert!(data.contains("multipart/alternative"), "{data}");
    // Both parts are 7-bit text here, so the link and the details are readable as sent.
    assert_eq!(
        data.matches(&format!("https://pay.example.com/confirm/{TOKEN}"))
            .count(),
        2,
        "the link in the text and in the HTML part: {data}"
    );
    assert!(data.contains("Hello Ada Lovelace,"), "{data}");
    assert!(data.contains("Account number: 123 ***"), "{data}");
    assert!(data.contains("012 ***"), "{data}");
    assert!(data.contains("expires in 7 days"), "{data}");
    // No unmasked account value (the stored ones would be 012002 and 123456789).
    assert!(
        !data.contains("012002") && !data.contains("123456789"),
        "{data}"
    );
    assert_eq!(message["authenticated"], false);
}

#[tokio::test]
async fn auth_with_the_right_credentials_is_accepted_and_the_wrong_ones_are_unavailable() {
    let server = SmtpServer::start(&Options {
        credentials: Some(("payoutd".to_owned(), "s3cret-pass".to_owned())),
        ..Options::default()
    });
    let mut good = settings(server.port, TlsMode::None);
    good.credentials = credentials("payoutd", "s3cret-pass");
    notifier(&good)
        .send_confirmation(&request("ada@example.com"))
        .await
        .unwrap();
    let received = server.wait_for(1);
    assert_eq!(received[0]["authenticated"], true);

    // A refused AUTH (535) is the relay's configuration, not this recipient: retried.
    let mut bad = good.clone();
    bad.credentials = credentials("payoutd", "wrong");
    let error = unavailable(
        notifier(&bad)
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    assert!(error.contains("535"), "{error}");
    assert!(
        !error.contains("wrong") && !error.contains(TOKEN),
        "{error}"
    );
    // Without credentials the server refuses the mail (530): also not this recipient's fault.
    let none = settings(server.port, TlsMode::None);
    unavailable(
        notifier(&none)
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn starttls_with_a_pinned_ca_delivers_over_tls_and_refuses_other_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = self_signed(dir.path());
    let server = SmtpServer::start(&Options {
        credentials: Some(("payoutd".to_owned(), "s3cret-pass".to_owned())),
        tls: Some((cert, key)),
        ..Options::default()
    });
    let mut pinned = settings(server.port, TlsMode::Starttls);
    pinned.credentials = credentials("payoutd", "s3cret-pass");
    pinned.ca_certificate_pem = Some(std::fs::read(&ca).unwrap());
    notifier(&pinned)
        .send_confirmation(&request("ada@example.com"))
        .await
        .unwrap();
    let received = server.wait_for(1);
    assert_eq!(received[0]["tls"], true);
    assert_eq!(received[0]["authenticated"], true);

    // The system's roots do not know the self-signed certificate: nothing is sent.
    let mut system = pinned.clone();
    system.ca_certificate_pem = None;
    unavailable(
        notifier(&system)
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    // Another CA pinned: refused too.
    let other = tempfile::tempdir().unwrap();
    let (other_ca, _, _) = self_signed(other.path());
    let mut wrong = pinned.clone();
    wrong.ca_certificate_pem = Some(std::fs::read(other_ca).unwrap());
    unavailable(
        notifier(&wrong)
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    // Implicit TLS against a server that speaks plain SMTP first fails without sending.
    let mut implicit = pinned.clone();
    implicit.tls = TlsMode::Implicit;
    unavailable(
        notifier(&implicit)
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn starttls_required_but_not_offered_sends_nothing() {
    let server = SmtpServer::start(&Options::default());
    let error = unavailable(
        notifier(&settings(server.port, TlsMode::Starttls))
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    assert!(!error.contains(TOKEN), "{error}");
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn a_server_that_is_down_is_unavailable_until_it_is_up() {
    let port = free_port();
    let notifier = notifier(&settings(port, TlsMode::None));
    let error = unavailable(
        notifier
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    assert!(!error.contains(TOKEN), "{error}");
    let server = SmtpServer::start_on(port, &Options::default());
    notifier
        .send_confirmation(&request("ada@example.com"))
        .await
        .unwrap();
    assert_eq!(server.wait_for(1).len(), 1);
}

#[tokio::test]
async fn a_refused_recipient_is_rejected_for_good_and_a_deferred_one_is_unavailable() {
    let server = SmtpServer::start(&Options {
        reject: vec!["gone@example.com".to_owned()],
        defer: vec!["busy@example.com".to_owned()],
        ..Options::default()
    });
    let notifier = notifier(&settings(server.port, TlsMode::None));
    match notifier
        .send_confirmation(&request("gone@example.com"))
        .await
    {
        Err(NotifyError::Rejected(reason)) => {
            assert!(reason.contains("550"), "{reason}");
            // The server quoted the address; the recorded reason does not.
            assert!(!reason.contains("gone@example.com"), "{reason}");
            assert!(!reason.contains(TOKEN), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    let error = unavailable(
        notifier
            .send_confirmation(&request("busy@example.com"))
            .await,
    );
    assert!(error.contains("451"), "{error}");
    // An address no server could take is refused before connecting.
    assert!(matches!(
        notifier.send_confirmation(&request("not an address")).await,
        Err(NotifyError::Rejected(_))
    ));
    assert!(server.received().is_empty());
}

#[tokio::test]
async fn a_silent_server_times_out_as_unavailable() {
    // Accepts connections and never answers.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let mut s = settings(port, TlsMode::None);
    s.timeout = std::time::Duration::from_millis(300);
    let started = std::time::Instant::now();
    unavailable(
        notifier(&s)
            .send_confirmation(&request("ada@example.com"))
            .await,
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    drop(listener);
}

#[test]
fn settings_are_checked() {
    assert!(matches!("starttls".parse(), Ok(TlsMode::Starttls)));
    assert!(matches!("implicit".parse(), Ok(TlsMode::Implicit)));
    assert!(matches!("none".parse(), Ok(TlsMode::None)));
    assert!(matches!(
        "tls".parse::<TlsMode>(),
        Err(SmtpConfigError::TlsMode)
    ));
    let mut s = settings(25, TlsMode::Starttls);
    s.from = "not a mailbox".to_owned();
    assert!(matches!(
        SmtpNotifier::new(&s),
        Err(SmtpConfigError::From(_))
    ));
    let mut s = settings(25, TlsMode::Starttls);
    s.host = " ".to_owned();
    assert!(matches!(SmtpNotifier::new(&s), Err(SmtpConfigError::Host)));
    let mut s = settings(25, TlsMode::Starttls);
    s.ca_certificate_pem = Some(b"not a certificate".to_vec());
    assert!(matches!(
        SmtpNotifier::new(&s),
        Err(SmtpConfigError::Tls(_))
    ));
    let mut s = settings(25, TlsMode::Starttls);
    s.credentials = credentials("u", "hunter2");
    assert!(
        !format!("{s:?}").contains("hunter2"),
        "the password is a Secret"
    );
}
