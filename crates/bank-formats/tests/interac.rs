//! The Interac e-Transfer partner protocol: documents written and read back byte for byte,
//! every refusal of the strict parsers, signatures verified, tampered, expired, early and
//! malformed, and random bytes that never panic a parser.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_formats::interac::{
    BatchReceipt, BatchRequest, BatchVerdict, Currency, ErrorAnswer, FailureCode, InteracError,
    MEMO_MAX, Payment, PaymentStatus, PaymentUpdate, ReportList, SignatureError, StatusReport,
    clean_memo, clean_name, is_email, looks_like_status_report, sign, verify_signature,
};
use bank_formats::interac::{CallbackError, check_callback_head, verify_callback};
use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use proptest::prelude::*;

fn at(h: u32, m: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, h, m, 0).unwrap()
}

fn payment(n: u32, amount: u64) -> Payment {
    Payment {
        payment_id: format!("pay{n:029}"),
        amount,
        currency: Currency::Cad,
        recipient_name: format!("Ada Lovelace {n}"),
        recipient_email: format!("ada{n}@example.ca"),
        memo: format!("Invoice {n}"),
        expires_at: at(21, 7) + TimeDelta::days(30),
    }
}

fn request() -> BatchRequest {
    BatchRequest {
        batch_id: "12345678123412341234123456789abc".into(),
        created_at: at(21, 7),
        originator: "CUST-0042".into(),
        sender_name: "Payoutd Demo".into(),
        payments: vec![payment(1, 1_250), payment(2, 99)],
    }
}

fn report() -> StatusReport {
    StatusReport {
        report_id: "rpt_0001".into(),
        batch_id: "12345678123412341234123456789abc".into(),
        created_at: at(22, 0),
        batch_status: Some(BatchVerdict::Accepted),
        payments: vec![
            PaymentUpdate {
                payment_id: "pay1".into(),
                status: PaymentStatus::Deposited,
                code: None,
                reason: None,
                updated_at: at(21, 59),
            },
            PaymentUpdate {
                payment_id: "pay2".into(),
                status: PaymentStatus::Failed,
                code: Some("INVALID_RECIPIENT".into()),
                reason: Some("the recipient's e-mail address is not valid".into()),
                updated_at: at(21, 58),
            },
        ],
    }
}

#[test]
fn a_batch_request_round_trips_in_canonical_bytes() {
    let bytes = request().to_bytes().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.starts_with(
            r#"{"type":"batch_request","version":1,"batch_id":"12345678123412341234123456789abc","created_at":"2026-11-25T21:07:00Z","originator":"CUST-0042","sender_name":"Payoutd Demo","payments":[{"payment_id":"pay00000000000000000000000000001","amount":1250,"currency":"CAD","recipient_name":"Ada Lovelace 1","recipient_email":"ada1@example.ca","memo":"Invoice 1","expires_at":"2026-12-25T21:07:00Z"}"#
        ),
        "{text}"
    );
    let parsed = BatchRequest::parse(&bytes).unwrap();
    assert_eq!(parsed, request());
    assert_eq!(parsed.to_bytes().unwrap(), bytes);
    assert_eq!(parsed.total_amount(), 1_349);
}

#[test]
fn the_other_documents_round_trip() {
    let bytes = report().to_bytes().unwrap();
    assert!(looks_like_status_report(&bytes));
    assert_eq!(StatusReport::parse(&bytes).unwrap(), report());
    assert_eq!(
        StatusReport::parse(&bytes).unwrap().to_bytes().unwrap(),
        bytes
    );

    let rejected = StatusReport {
        batch_status: Some(BatchVerdict::Rejected {
            code: "ORIGINATOR_SUSPENDED".into(),
            reason: "the sender's account is suspended".into(),
        }),
        payments: vec![],
        ..report()
    };
    let bytes = rejected.to_bytes().unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains(
        r#""batch_status":{"status":"rejected","code":"ORIGINATOR_SUSPENDED","reason":"the sender's account is suspended"}"#
    ));
    assert_eq!(StatusReport::parse(&bytes).unwrap(), rejected);

    let receipt = BatchReceipt::of(&request(), at(21, 8));
    assert_eq!(receipt.payment_count, 2);
    assert_eq!(receipt.total_amount, 1_349);
    assert_eq!(BatchReceipt::parse(&receipt.to_bytes()).unwrap(), receipt);

    let list = ReportList {
        report_ids: vec!["rpt_0001".into(), "rpt_0002".into()],
        has_more: true,
    };
    assert_eq!(ReportList::parse(&list.to_bytes()).unwrap(), list);

    let error = ErrorAnswer {
        code: "IDEMPOTENCY_CONFLICT".into(),
        message: "this key was used with another body".into(),
    };
    assert_eq!(ErrorAnswer::parse(&error.to_bytes()).unwrap(), error);
}

fn with(change: impl FnOnce(&mut serde_json::Value)) -> Result<BatchRequest, InteracError> {
    let mut value: serde_json::Value =
        serde_json::from_slice(&request().to_bytes().unwrap()).unwrap();
    change(&mut value);
    BatchRequest::parse(&serde_json::to_vec(&value).unwrap())
}

fn field_error(result: Result<BatchRequest, InteracError>) -> String {
    match result {
        Err(InteracError::Invalid { field, .. }) => field,
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[test]
fn unknown_versions_types_and_fields_are_refused() {
    assert_eq!(
        with(|v| v["version"] = 2.into()),
        Err(InteracError::UnsupportedVersion(2))
    );
    assert_eq!(field_error(with(|v| v["version"] = "1".into())), "version");
    assert!(matches!(
        with(|v| v["type"] = "status_report".into()),
        Err(InteracError::WrongDocument { .. })
    ));
    assert!(matches!(
        with(|v| v["extra"] = true.into()),
        Err(InteracError::Malformed { .. })
    ));
    assert!(matches!(
        with(|v| v["payments"][0]["fee"] = 1.into()),
        Err(InteracError::Malformed { .. })
    ));
    assert!(matches!(
        with(|v| v["payments"][0]["currency"] = "USD".into()),
        Err(InteracError::Malformed { .. })
    ));
    assert!(matches!(
        BatchRequest::parse(b"[1,2]"),
        Err(InteracError::Malformed { .. })
    ));
    assert!(matches!(
        BatchRequest::parse(b""),
        Err(InteracError::Malformed { .. })
    ));
}

#[test]
fn amounts_must_be_positive_whole_cents_within_the_limit() {
    for bad in [
        serde_json::json!(0),
        serde_json::json!(-5),
        serde_json::json!(12.5),
        serde_json::json!("1250"),
        serde_json::json!(2_500_001),
    ] {
        let result = with(|v| v["payments"][1]["amount"] = bad.clone());
        assert!(
            matches!(
                &result,
                Err(InteracError::Malformed { .. } | InteracError::Invalid { .. })
            ),
            "{bad}: {result:?}"
        );
    }
    assert!(with(|v| v["payments"][1]["amount"] = 2_500_000.into()).is_ok());
}

#[test]
fn payment_rules_are_checked_and_errors_hide_values() {
    let duplicate =
        with(|v| v["payments"][1]["payment_id"] = v["payments"][0]["payment_id"].clone());
    assert_eq!(
        duplicate,
        Err(InteracError::DuplicatePayment(
            "pay00000000000000000000000000001".into()
        ))
    );
    let bad_email = with(|v| v["payments"][0]["recipient_email"] = "secret-no-at".into());
    assert_eq!(
        field_error(bad_email.clone()),
        "payments[0].recipient_email"
    );
    assert!(!bad_email.unwrap_err().to_string().contains("secret-no-at"));
    assert_eq!(
        field_error(with(|v| v["payments"][0]["memo"] = "line\nbreak".into())),
        "payments[0].memo"
    );
    assert_eq!(
        field_error(with(|v| v["payments"][0]["memo"] = "x".repeat(401).into())),
        "payments[0].memo"
    );
    assert_eq!(
        field_error(with(|v| v["payments"][1]["recipient_name"] = " ".into())),
        "payments[1].recipient_name"
    );
    assert_eq!(
        field_error(with(|v| v["payments"][0]["payment_id"] = "a/b".into())),
        "payments[0].payment_id"
    );
    assert_eq!(
        field_error(with(
            |v| v["payments"][0]["expires_at"] = "2026-12-26T21:07:01Z".into()
        )),
        "payments[0].expires_at"
    );
    assert_eq!(
        field_error(with(
            |v| v["payments"][0]["expires_at"] = "2026-11-25T21:07:00Z".into()
        )),
        "payments[0].expires_at"
    );
    assert_eq!(
        field_error(with(|v| v["payments"] = serde_json::json!([]))),
        "payments"
    );
    assert_eq!(field_error(with(|v| v["batch_id"] = "".into())), "batch_id");
    assert!(matches!(
        with(|v| v["created_at"] = "yesterday".into()),
        Err(InteracError::Malformed { .. })
    ));
    // An invalid request is never written either.
    let mut bad = request();
    bad.payments[0].amount = 0;
    assert!(bad.to_bytes().is_err());
}

#[test]
fn report_rules_are_checked() {
    let mut twice = report();
    twice.payments[1].payment_id = "pay1".into();
    assert_eq!(
        twice.to_bytes(),
        Err(InteracError::DuplicatePayment("pay1".into()))
    );
    let text = String::from_utf8(report().to_bytes().unwrap()).unwrap();
    for (from, to) in [
        (r#""status":"deposited""#, r#""status":"paid""#),
        (r#""report_id":"rpt_0001""#, r#""report_id":"../etc""#),
        (r#""code":"INVALID_RECIPIENT""#, r#""code":"lower""#),
        (r#""version":1"#, r#""version":7"#),
    ] {
        let changed = text.replace(from, to);
        assert_ne!(changed, text);
        assert!(StatusReport::parse(changed.as_bytes()).is_err(), "{to}");
        assert!(looks_like_status_report(changed.as_bytes()));
    }
    assert!(!looks_like_status_report(b"101 094000"));
    assert!(!looks_like_status_report(br#"{"type":"batch_request"}"#));
    let list =
        r#"{"type":"report_list","version":1,"report_ids":["ok","no/slash"],"has_more":false}"#;
    assert!(ReportList::parse(list.as_bytes()).is_err());
}

#[test]
fn failure_codes_say_when_the_recipient_is_invalid() {
    for code in FailureCode::ALL {
        assert_eq!(FailureCode::from_code(code.code()), Some(code));
    }
    assert!(FailureCode::InvalidRecipient.means_invalid_recipient());
    assert!(FailureCode::Undeliverable.means_invalid_recipient());
    assert!(!FailureCode::LimitExceeded.means_invalid_recipient());
    assert_eq!(FailureCode::from_code("OTHER"), None);
    assert!(PaymentStatus::Declined.is_final());
    assert!(!PaymentStatus::Sent.is_final());
}

#[test]
fn texts_are_cleaned_and_emails_checked() {
    assert_eq!(
        clean_memo("  Invoice\t42\r\n\u{7}paid  "),
        "Invoice 42 paid"
    );
    assert_eq!(clean_memo(&"é".repeat(500)).chars().count(), MEMO_MAX);
    assert_eq!(
        clean_name("A very long name that goes on and on"),
        "A very long name that goes on"
    );
    for good in ["a@b.ca", "first.last+tag@mail.example.com"] {
        assert!(is_email(good), "{good}");
    }
    for bad in [
        "", "a@b", "@b.ca", "a@.ca", "a b@c.ca", "a@b..ca", "a@-b.ca", "a@b.c_a",
    ] {
        assert!(!is_email(bad), "{bad}");
    }
}

const SECRET: &[u8] = b"whsec_partner_test";

#[test]
fn a_signature_verifies_and_every_change_breaks_it() {
    let body = report().to_bytes().unwrap();
    let header = sign(SECRET, 1_764_104_820, &body).unwrap();
    assert!(header.starts_with("t=1764104820,v1="));
    assert_eq!(
        verify_signature(&header, &body, SECRET, 1_764_104_900, 300),
        Ok(1_764_104_820)
    );
    let mut tampered = body.clone();
    tampered[10] ^= 1;
    assert_eq!(
        verify_signature(&header, &tampered, SECRET, 1_764_104_900, 300),
        Err(SignatureError::Mismatch)
    );
    assert_eq!(
        verify_signature(&header, &body, b"another secret", 1_764_104_900, 300),
        Err(SignatureError::Mismatch)
    );
    // The timestamp is signed: moving it breaks the match.
    let moved = header.replace("t=1764104820", "t=1764104821");
    assert_eq!(
        verify_signature(&moved, &body, SECRET, 1_764_104_900, 300),
        Err(SignatureError::Mismatch)
    );
    // A rotated secret: either of two signatures matches.
    let old = sign(b"old secret", 1_764_104_820, &body).unwrap();
    let both = format!("{old},{}", header.split_once(',').unwrap().1);
    assert!(verify_signature(&both, &body, SECRET, 1_764_104_820, 300).is_ok());
}

#[test]
fn old_and_future_signatures_are_refused() {
    let header = sign(SECRET, 1_000_000, b"{}").unwrap();
    assert!(verify_signature(&header, b"{}", SECRET, 1_000_300, 300).is_ok());
    assert!(verify_signature(&header, b"{}", SECRET, 999_700, 300).is_ok());
    assert_eq!(
        verify_signature(&header, b"{}", SECRET, 1_000_301, 300),
        Err(SignatureError::Expired {
            age: 301,
            tolerance: 300
        })
    );
    assert_eq!(
        verify_signature(&header, b"{}", SECRET, 999_699, 300),
        Err(SignatureError::FromTheFuture {
            ahead: 301,
            tolerance: 300
        })
    );
}

#[test]
fn malformed_headers_and_empty_secrets_are_refused() {
    let good = sign(SECRET, 1_000_000, b"{}").unwrap();
    let tag = good.split_once(",v1=").unwrap().1.to_owned();
    for bad in [
        String::new(),
        "garbage".to_owned(),
        format!("v1={tag}"),
        "t=1000000".to_owned(),
        format!("t=-5,v1={tag}"),
        format!("t=1000000,t=1000000,v1={tag}"),
        format!("t=1000000,v1={}", &tag[..63]),
        format!("t=1000000,v1={}zz", &tag[..62]),
        format!("t=99999999999999999999,v1={tag}"),
        format!("t=1000000,v1={tag},{}", "x=y,".repeat(300)),
    ] {
        assert!(
            matches!(
                verify_signature(&bad, b"{}", SECRET, 1_000_000, 300),
                Err(SignatureError::Malformed(_))
            ),
            "{bad}"
        );
    }
    assert_eq!(sign(b"", 1, b"{}"), Err(SignatureError::EmptySecret));
    assert_eq!(
        verify_signature(&good, b"{}", b"", 1_000_000, 300),
        Err(SignatureError::EmptySecret)
    );
}

#[test]
fn a_pushed_report_is_checked_signature_first() {
    let body = report().to_bytes().unwrap();
    let header = sign(SECRET, 1_000_000, &body).unwrap();
    let got = verify_callback(Some(&header), &body, SECRET, 1_000_010, 300).unwrap();
    assert_eq!(got.report_id, "rpt_0001");
    assert_eq!(
        verify_callback(None, &body, SECRET, 1_000_010, 300),
        Err(CallbackError::Unsigned)
    );
    assert!(matches!(
        verify_callback(Some(&header), &body, SECRET, 1_000_301, 300),
        Err(CallbackError::Signature(SignatureError::Expired { .. }))
    ));
    let junk = b"{\"type\":\"status_report\"}";
    let signed_junk = sign(SECRET, 1_000_000, junk).unwrap();
    assert!(matches!(
        verify_callback(Some(&signed_junk), junk, SECRET, 1_000_000, 300),
        Err(CallbackError::NotAReport(_))
    ));
    assert!(matches!(
        verify_callback(Some(&header), junk, SECRET, 1_000_000, 300),
        Err(CallbackError::Signature(SignatureError::Mismatch))
    ));
}

#[test]
fn a_callbacks_head_is_judged_without_its_body_and_its_body_after() {
    let body = report().to_bytes().unwrap();
    let header = sign(SECRET, 1_000_000, &body).unwrap();
    // Everything but the match is decided from the header alone.
    assert_eq!(
        check_callback_head(None, 1_000_000, 300),
        Err(CallbackError::Unsigned)
    );
    for malformed in ["", "nonsense", "t=1000000", "t=x,v1=00", "v1=zz,t=1000000"] {
        assert!(
            matches!(
                check_callback_head(Some(malformed), 1_000_000, 300),
                Err(CallbackError::Signature(SignatureError::Malformed(_)))
            ),
            "{malformed}"
        );
    }
    assert!(matches!(
        check_callback_head(Some(&header), 1_000_301, 300),
        Err(CallbackError::Signature(SignatureError::Expired { .. }))
    ));
    assert!(matches!(
        check_callback_head(Some(&header), 999_699, 300),
        Err(CallbackError::Signature(
            SignatureError::FromTheFuture { .. }
        ))
    ));
    // A head that passes says nothing about the body: that is checked once it is read.
    let head = check_callback_head(Some(&header), 1_000_300, 300).unwrap();
    assert_eq!(
        head.verify_body(&body, SECRET).unwrap().report_id,
        "rpt_0001"
    );
    assert!(matches!(
        head.verify_body(b"{}", SECRET),
        Err(CallbackError::Signature(SignatureError::Mismatch))
    ));
    assert!(matches!(
        head.verify_body(&body, b"another secret"),
        Err(CallbackError::Signature(SignatureError::Mismatch))
    ));
}

proptest! {
    #[test]
    fn random_bytes_never_panic_the_parsers(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = BatchRequest::parse(&bytes);
        let _ = StatusReport::parse(&bytes);
        let _ = BatchReceipt::parse(&bytes);
        let _ = ReportList::parse(&bytes);
        let _ = ErrorAnswer::parse(&bytes);
        let _ = looks_like_status_report(&bytes);
        let _ = verify_signature(&String::from_utf8_lossy(&bytes), &bytes, SECRET, 0, 300);
    }

    #[test]
    fn mutated_documents_never_panic_the_parsers(
        position in 0usize..600,
        byte in any::<u8>(),
    ) {
        for mut bytes in [request().to_bytes().unwrap(), report().to_bytes().unwrap()] {
            let at = position % bytes.len();
            bytes[at] = byte;
            let _ = BatchRequest::parse(&bytes);
            let _ = StatusReport::parse(&bytes);
        }
    }
}
