//! The `cad/digital` rail: credit instructions become a signed-protocol batch request that the
//! protocol's own parser reads back field by field, and the partner's status reports become
//! settlements and rejections by payment id.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A split is a list of ranges: one file is a list of one range.
#![allow(clippy::single_range_in_vec_init)]

use adapters_rails::interac::{
    self, InteracReader, InteracSettings, InteracWriter, bank_report, payment_id,
};
use bank_formats::interac::{
    BatchRequest, BatchVerdict, PaymentStatus, PaymentUpdate, StatusReport,
};
use chrono::{TimeZone, Utc};
use domain::account::PayoutMethod;
use domain::ids::{BatchId, PayoutId, SubaccountId};
use domain::masking::Secret;
use domain::money::{Asset, MinorUnits};
use domain::rail::file_rail::Settlement;
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest};
use domain::rail::report::{
    BankFileReader, FileMention, FileVerdict, ItemOutcome, ItemReport, ReadOutcome, ReturnReason,
};
use uuid::Uuid;

const BATCH: u128 = 0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0;

fn settings() -> InteracSettings {
    InteracSettings {
        partner_customer_id: "CUST-0042".into(),
        sender_name: "Payoutd Demo".into(),
        expiry_days: 30,
    }
}

fn instruction(n: u128, amount: i64, email: &str) -> CreditInstruction {
    CreditInstruction {
        payout_id: PayoutId::from_uuid(Uuid::from_u128(
            0xABCD_0000_0000_0000_0000_0000_0000_0000 + n,
        )),
        amount: MinorUnits::new(amount).unwrap(),
        payee_name: format!("Ada Lovelace {n}"),
        receiving_bank: None,
        account: Secret::new(email.to_owned()),
        account_kind: None,
        remittance: format!("Invoice {n}"),
    }
}

fn request(asset: Asset, instructions: Vec<CreditInstruction>) -> FileRequest {
    FileRequest {
        batch_id: BatchId::from_uuid(Uuid::from_u128(BATCH)),
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(5)),
        method: PayoutMethod::Digital,
        asset,
        part: 1,
        created_at: Utc.with_ymd_and_hms(2026, 11, 25, 21, 7, 0).unwrap()
            + chrono::TimeDelta::milliseconds(250),
        effective_date: chrono::NaiveDate::from_ymd_opt(2026, 11, 25).unwrap(),
        sequence: 3,
        instructions,
    }
}

fn writer() -> InteracWriter {
    InteracWriter::new(settings()).unwrap()
}

#[test]
fn a_batch_becomes_a_request_the_protocol_parser_reads_back() {
    let mut long = instruction(2, 99, " grace@example.ca ");
    long.payee_name = "Grace Brewster Murray Hopper of the Navy".into();
    long.remittance = "Refund\nfor\t order  7".into();
    let req = request(
        Asset::Cad,
        vec![instruction(1, 12_345, "ada@example.ca"), long],
    );
    let written = writer().write(&req).unwrap();
    assert_eq!(written.extension, "json");
    assert_eq!(
        written.references,
        vec![
            "abcd0000000000000000000000000001".to_owned(),
            "abcd0000000000000000000000000002".to_owned()
        ]
    );
    assert_eq!(
        writer().write(&req).unwrap(),
        written,
        "same request, same bytes"
    );
    let parsed = BatchRequest::parse(&written.bytes).unwrap();
    assert_eq!(parsed.batch_id, "123456789abcdef0123456789abcdef0");
    assert_eq!(
        parsed.created_at,
        Utc.with_ymd_and_hms(2026, 11, 25, 21, 7, 0).unwrap()
    );
    assert_eq!(parsed.originator, "CUST-0042");
    assert_eq!(parsed.sender_name, "Payoutd Demo");
    let [first, second] = parsed.payments.as_slice() else {
        panic!("{:?}", parsed.payments)
    };
    assert_eq!(first.payment_id, written.references[0]);
    assert_eq!(first.amount, 12_345);
    assert_eq!(first.recipient_email, "ada@example.ca");
    assert_eq!(first.recipient_name, "Ada Lovelace 1");
    assert_eq!(first.memo, "Invoice 1");
    assert_eq!(
        first.expires_at,
        Utc.with_ymd_and_hms(2026, 12, 25, 21, 7, 0).unwrap()
    );
    assert_eq!(second.recipient_email, "grace@example.ca");
    assert_eq!(second.recipient_name, "Grace Brewster Murray Hopper o");
    assert_eq!(second.memo, "Refund for order 7");
    assert_eq!(
        payment_id(&instruction(1, 1, "a@b.ca")),
        written.references[0]
    );
    assert_eq!(interac::SETTLEMENT, Settlement::OnConfirmation);
}

#[test]
fn what_interac_cannot_carry_is_refused_without_the_address() {
    let usd = writer().write(&request(Asset::Usd, vec![instruction(1, 100, "a@b.ca")]));
    assert!(usd.unwrap_err().to_string().contains("CAD"));

    let bad = writer()
        .write(&request(
            Asset::Cad,
            vec![instruction(1, 100, "secret-address")],
        ))
        .unwrap_err()
        .to_string();
    assert!(
        bad.contains("abcd0000-0000-0000-0000-000000000001"),
        "{bad}"
    );
    assert!(!bad.contains("secret-address"), "{bad}");

    for cents in [2_500_001, 9_000_000] {
        let error = writer()
            .write(&request(Asset::Cad, vec![instruction(1, cents, "a@b.ca")]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("25000.00"), "{error}");
    }

    let twice = writer()
        .write(&request(
            Asset::Cad,
            vec![instruction(1, 100, "a@b.ca"), instruction(1, 200, "c@d.ca")],
        ))
        .unwrap_err()
        .to_string();
    assert!(twice.contains("more than once"), "{twice}");

    assert!(writer().write(&request(Asset::Cad, vec![])).is_err());
}

/// A change that breaks one setting.
type Breaks = fn(&mut InteracSettings);

#[test]
fn settings_are_checked_by_name() {
    let cases: [(Breaks, &str); 6] = [
        (
            |s| s.partner_customer_id = String::new(),
            "partner_customer_id",
        ),
        (
            |s| s.partner_customer_id = "has space".into(),
            "partner_customer_id",
        ),
        (|s| s.sender_name = "  ".into(), "sender_name"),
        (|s| s.sender_name = "x".repeat(31), "sender_name"),
        (|s| s.expiry_days = 0, "expiry_days"),
        (|s| s.expiry_days = 31, "expiry_days"),
    ];
    for (change, setting) in cases {
        let mut s = settings();
        change(&mut s);
        assert_eq!(s.validate().unwrap_err().settings(), [setting]);
        assert!(InteracWriter::new(s).is_err());
    }
    assert!(settings().validate().is_ok());
}

fn update(id: &str, status: PaymentStatus, code: Option<&str>) -> PaymentUpdate {
    PaymentUpdate {
        payment_id: id.into(),
        status,
        code: code.map(str::to_owned),
        reason: None,
        updated_at: Utc.with_ymd_and_hms(2026, 11, 26, 9, 0, 0).unwrap(),
    }
}

fn status_report(batch_status: Option<BatchVerdict>, payments: Vec<PaymentUpdate>) -> StatusReport {
    StatusReport {
        report_id: "rpt_7".into(),
        batch_id: "123456789abcdef0123456789abcdef0".into(),
        created_at: Utc.with_ymd_and_hms(2026, 11, 26, 9, 1, 0).unwrap(),
        batch_status,
        payments,
    }
}

fn read(bytes: &[u8]) -> ReadOutcome {
    InteracReader.read("rpt_7", bytes).unwrap()
}

fn rejected(reference: &str, code: &str, reason: &str, invalid: bool) -> ItemReport {
    ItemReport {
        reference: reference.into(),
        outcome: ItemOutcome::Rejected(ReturnReason {
            code: code.into(),
            reason: reason.into(),
            account_is_invalid: invalid,
        }),
    }
}

#[test]
fn final_statuses_settle_or_reject_and_sent_changes_nothing() {
    let report = status_report(
        Some(BatchVerdict::Accepted),
        vec![
            update("p_sent", PaymentStatus::Sent, None),
            update("p_dep", PaymentStatus::Deposited, None),
            update("p_dec", PaymentStatus::Declined, None),
            update("p_exp", PaymentStatus::Expired, None),
            update("p_can", PaymentStatus::Cancelled, None),
            update("p_inv", PaymentStatus::Failed, Some("INVALID_RECIPIENT")),
            update("p_bnc", PaymentStatus::Failed, Some("UNDELIVERABLE")),
            update("p_lim", PaymentStatus::Failed, Some("LIMIT_EXCEEDED")),
            update("p_new", PaymentStatus::Failed, Some("NEW_PARTNER_CODE")),
            update("p_dcx", PaymentStatus::Declined, Some("INVALID_RECIPIENT")),
        ],
    );
    let ReadOutcome::Report(got) = read(&report.to_bytes().unwrap()) else {
        panic!("not a report")
    };
    assert_eq!(
        got.file,
        Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(Uuid::from_u128(BATCH)),
                part: 1,
            },
            FileVerdict::Accepted
        ))
    );
    assert_eq!(
        got.items,
        vec![
            ItemReport {
                reference: "p_dep".into(),
                outcome: ItemOutcome::Settled
            },
            rejected(
                "p_dec",
                "DECLINED",
                "the recipient declined the transfer",
                false
            ),
            rejected(
                "p_exp",
                "EXPIRED",
                "the recipient did not deposit the transfer before it expired",
                false
            ),
            rejected(
                "p_can",
                "CANCELLED",
                "the transfer was cancelled before it was deposited",
                false
            ),
            rejected(
                "p_inv",
                "INVALID_RECIPIENT",
                "the recipient's e-mail address is not valid",
                true
            ),
            rejected(
                "p_bnc",
                "UNDELIVERABLE",
                "the notification could not be delivered to the recipient",
                true
            ),
            rejected(
                "p_lim",
                "LIMIT_EXCEEDED",
                "a sending or receiving limit was exceeded",
                false
            ),
            rejected(
                "p_new",
                "NEW_PARTNER_CODE",
                "the partner could not send the transfer",
                false
            ),
            rejected(
                "p_dcx",
                "INVALID_RECIPIENT",
                "the recipient's e-mail address is not valid",
                false
            ),
        ]
    );
}

#[test]
fn a_rejected_batch_and_a_stranger_batch_id() {
    let mut report = status_report(
        Some(BatchVerdict::Rejected {
            code: "ORIGINATOR_SUSPENDED".into(),
            reason: "the sender's account is suspended".into(),
        }),
        vec![],
    );
    report.batch_id = "not-one-of-ours".into();
    let got = bank_report(&report);
    assert_eq!(
        got.file,
        Some((
            FileMention::Unknown("not-one-of-ours".into()),
            FileVerdict::Rejected {
                code: Some("ORIGINATOR_SUSPENDED".into()),
                reason: "the sender's account is suspended".into()
            }
        ))
    );
    assert!(got.items.is_empty());
    let no_verdict = bank_report(&status_report(None, vec![]));
    assert_eq!(no_verdict.file, None);
}

#[test]
fn other_documents_are_not_mine_and_broken_reports_are_unreadable() {
    let batch = writer()
        .write(&request(Asset::Cad, vec![instruction(1, 100, "a@b.ca")]))
        .unwrap();
    for other in [
        &b"101 091000019 1234567890"[..],
        b"<?xml version=\"1.0\"?><Document/>",
        b"",
        b"[]",
        &batch.bytes,
    ] {
        assert_eq!(read(other), ReadOutcome::NotMine);
    }
    let good = String::from_utf8(
        status_report(None, vec![update("p1", PaymentStatus::Deposited, None)])
            .to_bytes()
            .unwrap(),
    )
    .unwrap();
    for broken in [
        good.replace("\"version\":1", "\"version\":2"),
        good.replace("deposited", "teleported"),
        good.replace("\"payments\":[", "\"payments\":[{},"),
    ] {
        assert!(
            matches!(read(broken.as_bytes()), ReadOutcome::Unreadable(_)),
            "{broken}"
        );
    }
}

#[test]
fn ten_thousand_payments_make_one_request_and_one_more_two_each_with_its_own_batch_id() {
    assert_eq!(
        interac::LIMITS.max_items,
        bank_formats::interac::MAX_PAYMENTS
    );
    assert_eq!(
        adapters_rails::unit(PayoutMethod::Digital).limits,
        interac::LIMITS
    );
    let payments: Vec<CreditInstruction> = (0..10_001)
        .map(|n| instruction(n, 100, "ada@example.ca"))
        .collect();
    let plan = |instructions: &[CreditInstruction]| {
        interac::LIMITS
            .split(instructions.iter().map(|i| (i.payout_id, i.amount.get())))
            .unwrap()
    };
    assert_eq!(plan(&payments[..10_000]), [0..10_000]);
    writer()
        .write(&request(Asset::Cad, payments[..10_000].to_vec()))
        .unwrap();
    assert!(
        writer()
            .write(&request(Asset::Cad, payments.clone()))
            .is_err(),
        "one request cannot carry 10,001"
    );
    let parts = plan(&payments);
    assert_eq!(parts, vec![0..10_000, 10_000..10_001]);
    let mut second = request(Asset::Cad, payments[parts[1].clone()].to_vec());
    second.part = 2;
    let written = writer().write(&second).unwrap();
    let parsed = BatchRequest::parse(&written.bytes).unwrap();
    assert_eq!(
        parsed.batch_id,
        format!("{}-2", Uuid::from_u128(BATCH).simple())
    );
    // The partner's report on that request names the batch's second request.
    let report = StatusReport {
        report_id: "rpt_2".into(),
        batch_id: parsed.batch_id.clone(),
        created_at: Utc.with_ymd_and_hms(2026, 11, 26, 9, 0, 0).unwrap(),
        batch_status: Some(BatchVerdict::Accepted),
        payments: Vec::new(),
    };
    assert_eq!(
        bank_report(&report).file,
        Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(Uuid::from_u128(BATCH)),
                part: 2
            },
            FileVerdict::Accepted
        ))
    );
}
