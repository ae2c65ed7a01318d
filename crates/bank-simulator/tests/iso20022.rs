//! The bank's side of ISO 20022: reading the fields of payoutd's pain.001 and writing the
//! pain.002.001.09 status report that answers it, checked by parsing it back with
//! `parse_pain002` (the XSD package the tests use ships no pain.002.001.09 schema).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../bank-formats/tests/iso20022_common/mod.rs"]
mod iso20022_common;

use bank_formats::iso20022::{
    Pain002Version, ReasonCode, Status, StatusReason, parse_pain002, write_pain001,
};
use bank_simulator::iso20022::{
    Pain001ReadError, Pain002WriteError, ReportDecisions, TransactionDecision, read_pain001,
    status_report, write_pain002,
};
use chrono::NaiveDate;
use iso20022_common as common;
use proptest::prelude::*;

/// Two blocks: BATCH-A with E2E-000001 (12.34) and E2E-000002 (0.05), BATCH-B with
/// E2E-000003 (999999999.99) — written by payoutd's writer.
fn pain001() -> Vec<u8> {
    write_pain001(&common::file(vec![
        common::batch(
            "BATCH-A",
            vec![common::transfer(1, 1_234), common::transfer(2, 5)],
        ),
        common::batch("BATCH-B", vec![common::transfer(3, 99_999_999_999)]),
    ]))
    .unwrap()
}

fn reason(code: &str, info: &[&str]) -> StatusReason {
    StatusReason {
        code: Some(ReasonCode::new(code)),
        proprietary: None,
        additional_info: info.iter().map(|s| (*s).to_owned()).collect(),
    }
}

fn decide(end_to_end_id: &str, status: Status, reasons: Vec<StatusReason>) -> TransactionDecision {
    TransactionDecision {
        end_to_end_id: end_to_end_id.to_owned(),
        status,
        reasons,
    }
}

fn decisions(group: Status, transactions: Vec<TransactionDecision>) -> ReportDecisions {
    ReportDecisions {
        message_id: "BANK-STS-0001".into(),
        created_at: NaiveDate::from_ymd_opt(2026, 11, 26)
            .unwrap()
            .and_hms_opt(6, 30, 0)
            .unwrap(),
        group_status: group,
        group_reasons: Vec::new(),
        transactions,
    }
}

#[test]
fn reads_the_fields_of_payoutds_pain001() {
    let summary = read_pain001(&pain001()).unwrap();
    assert_eq!(summary.message_name, "pain.001.001.09");
    assert_eq!(summary.message_id, "PAYOUTD-20261125-0001");
    let got: Vec<_> = summary
        .transactions()
        .map(|(block, tx)| {
            (
                block.to_owned(),
                tx.instruction_id.clone().unwrap(),
                tx.end_to_end_id.clone(),
                tx.amount_cents,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "BATCH-A".into(),
                "INSTR-000001".into(),
                "E2E-000001".into(),
                1_234
            ),
            (
                "BATCH-A".into(),
                "INSTR-000002".into(),
                "E2E-000002".into(),
                5
            ),
            (
                "BATCH-B".into(),
                "INSTR-000003".into(),
                "E2E-000003".into(),
                99_999_999_999
            ),
        ]
    );
}

#[test]
fn reading_refuses_what_is_not_a_pain001() {
    assert!(matches!(
        read_pain001(b"\xff"),
        Err(Pain001ReadError::Xml(_))
    ));
    assert!(matches!(
        read_pain001(b"<Document>"),
        Err(Pain001ReadError::Xml(_))
    ));
    // A pain.002 is not a pain.001.
    assert!(matches!(
        read_pain001(&common::fixture("pain002_v09_partial.xml")),
        Err(Pain001ReadError::NotPain001 { .. })
    ));
    let xml = String::from_utf8(pain001()).unwrap();
    let without_e2e = xml.replacen("<EndToEndId>E2E-000002</EndToEndId>", "", 1);
    assert_eq!(
        read_pain001(without_e2e.as_bytes()),
        Err(Pain001ReadError::Missing {
            path: "PmtInf[0]/CdtTrfTxInf[1]/PmtId/EndToEndId".into()
        })
    );
    let bad_amount = xml.replacen(">0.05<", ">0.055<", 1);
    assert_eq!(
        read_pain001(bad_amount.as_bytes()),
        Err(Pain001ReadError::BadAmount {
            path: "PmtInf[0]/CdtTrfTxInf[1]/Amt/InstdAmt".into(),
            found: "0.055".into()
        })
    );
    let no_msg_id = xml.replacen(
        "<MsgId>PAYOUTD-20261125-0001</MsgId>",
        "<MsgId> </MsgId>",
        1,
    );
    assert_eq!(
        read_pain001(no_msg_id.as_bytes()),
        Err(Pain001ReadError::Missing {
            path: "GrpHdr/MsgId".into()
        })
    );
}

#[test]
fn a_partial_report_round_trips_through_parse_pain002() {
    let summary = read_pain001(&pain001()).unwrap();
    let mut d = decisions(
        Status::PartiallyAccepted,
        vec![
            decide("E2E-000001", Status::AcceptedSettlementCompleted, vec![]),
            decide(
                "E2E-000002",
                Status::Rejected,
                vec![reason("AC04", &["Account closed", "since 2026-01-01"])],
            ),
            decide("E2E-000003", Status::AcceptedSettlementCompleted, vec![]),
        ],
    );
    d.group_reasons = vec![StatusReason {
        code: None,
        proprietary: Some("BANK-PART-1".into()),
        additional_info: vec![],
    }];
    let report = status_report(&summary, &d).unwrap();
    let xml = write_pain002(&report).unwrap();
    let parsed = parse_pain002(&xml).unwrap();
    assert_eq!(parsed, report);

    // And what the parsed report says, field by field.
    assert_eq!(parsed.version, Pain002Version::V09);
    assert_eq!(parsed.message_id, "BANK-STS-0001");
    assert_eq!(parsed.created_at, "2026-11-26T06:30:00");
    assert_eq!(parsed.original_message_id, "PAYOUTD-20261125-0001");
    assert_eq!(parsed.original_message_name, "pain.001.001.09");
    assert_eq!(parsed.group_status, Some(Status::PartiallyAccepted));
    assert_eq!(
        parsed.group_reasons[0].proprietary.as_deref(),
        Some("BANK-PART-1")
    );
    assert_eq!(parsed.payment_infos.len(), 2);
    assert_eq!(parsed.payment_infos[0].original_payment_info_id, "BATCH-A");
    assert_eq!(
        parsed.payment_infos[0].status,
        Some(Status::PartiallyAccepted)
    );
    assert_eq!(
        parsed.payment_infos[1].status,
        Some(Status::AcceptedSettlementCompleted)
    );
    let rejected = parsed.transaction("E2E-000002").unwrap();
    assert_eq!(
        rejected.original_instruction_id.as_deref(),
        Some("INSTR-000002")
    );
    assert_eq!(rejected.status, Some(Status::Rejected));
    assert!(rejected.means_wrong_account());
    assert_eq!(
        rejected.reasons[0].additional_info,
        vec!["Account closed", "since 2026-01-01"]
    );
    assert_eq!(
        parsed.status_for("BATCH-A", "E2E-000001"),
        Some(&Status::AcceptedSettlementCompleted)
    );
    assert_eq!(
        parsed.status_for("BATCH-A", "E2E-000002"),
        Some(&Status::Rejected)
    );

    // The XML itself: the v09 namespace, elements in the schema's order.
    let text = String::from_utf8(xml).unwrap();
    assert!(text.contains("xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.002.001.09\""));
    let order = [
        "<GrpHdr>",
        "<MsgId>",
        "<CreDtTm>",
        "<OrgnlGrpInfAndSts>",
        "<OrgnlMsgId>",
        "<OrgnlMsgNmId>",
        "<GrpSts>",
        "<StsRsnInf>",
        "<OrgnlPmtInfAndSts>",
        "<OrgnlPmtInfId>",
        "<PmtInfSts>",
        "<TxInfAndSts>",
        "<OrgnlInstrId>",
        "<OrgnlEndToEndId>",
        "<TxSts>",
    ];
    let positions: Vec<usize> = order.iter().map(|tag| text.find(tag).unwrap()).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
}

#[test]
fn group_statuses_and_listed_transactions_only() {
    let summary = read_pain001(&pain001()).unwrap();
    for group in [
        Status::AcceptedTechnicalValidation,
        Status::AcceptedCustomerProfile,
        Status::AcceptedSettlementCompleted,
    ] {
        let report = status_report(&summary, &decisions(group.clone(), vec![])).unwrap();
        let parsed = parse_pain002(&write_pain002(&report).unwrap()).unwrap();
        assert_eq!(parsed.group_status, Some(group.clone()));
        assert!(parsed.payment_infos.is_empty());
        assert_eq!(parsed.status_for("BATCH-A", "E2E-000001"), Some(&group));
    }

    // A rejected file: group RJCT with its reason, nothing listed.
    let mut d = decisions(Status::Rejected, vec![]);
    d.group_reasons = vec![reason("FF01", &["Invalid file format"])];
    let parsed =
        parse_pain002(&write_pain002(&status_report(&summary, &d).unwrap()).unwrap()).unwrap();
    assert_eq!(parsed.group_status, Some(Status::Rejected));
    assert_eq!(parsed.group_reasons[0].code, Some(ReasonCode::new("FF01")));

    // Only one transaction of BATCH-A listed: the block's status is left out.
    let d = decisions(
        Status::PartiallyAccepted,
        vec![decide(
            "E2E-000002",
            Status::Rejected,
            vec![reason("AC04", &[])],
        )],
    );
    let parsed =
        parse_pain002(&write_pain002(&status_report(&summary, &d).unwrap()).unwrap()).unwrap();
    assert_eq!(parsed.payment_infos.len(), 1);
    assert_eq!(parsed.payment_infos[0].status, None);
    assert_eq!(parsed.transactions().count(), 1);
    assert_eq!(parsed.status_for("BATCH-A", "E2E-000001"), None);
}

#[test]
fn bad_decisions_and_values_are_refused() {
    let summary = read_pain001(&pain001()).unwrap();
    let ok = Status::AcceptedSettlementCompleted;
    assert_eq!(
        status_report(
            &summary,
            &decisions(ok.clone(), vec![decide("E2E-999", ok.clone(), vec![])])
        ),
        Err(Pain002WriteError::UnknownEndToEndId {
            end_to_end_id: "E2E-999".into()
        })
    );
    assert_eq!(
        status_report(
            &summary,
            &decisions(
                ok.clone(),
                vec![
                    decide("E2E-000001", ok.clone(), vec![]),
                    decide("E2E-000001", Status::Rejected, vec![])
                ]
            )
        ),
        Err(Pain002WriteError::DuplicateEndToEndId {
            end_to_end_id: "E2E-000001".into()
        })
    );

    let good = status_report(
        &summary,
        &decisions(ok.clone(), vec![decide("E2E-000001", ok.clone(), vec![])]),
    )
    .unwrap();
    let refused = |edit: &dyn Fn(&mut bank_formats::iso20022::PaymentStatusReport)| {
        let mut report = good.clone();
        edit(&mut report);
        match write_pain002(&report) {
            Err(Pain002WriteError::Field { path, .. }) => path,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(refused(&|r| r.message_id = String::new()), "GrpHdr/MsgId");
    assert_eq!(refused(&|r| r.message_id = "M".repeat(36)), "GrpHdr/MsgId");
    assert_eq!(
        refused(&|r| r.created_at = "yesterday".into()),
        "GrpHdr/CreDtTm"
    );
    assert_eq!(
        refused(&|r| r.group_status = Some(Status::Other("TOOLONG".into()))),
        "OrgnlGrpInfAndSts/GrpSts"
    );
    assert_eq!(
        refused(
            &|r| r.payment_infos[0].transactions[0].reasons = vec![StatusReason {
                code: Some(ReasonCode::new("AC04")),
                proprietary: Some("X".into()),
                additional_info: vec![],
            }]
        ),
        "OrgnlPmtInfAndSts[0]/TxInfAndSts[0]/StsRsnInf[0]/Rsn"
    );
    assert_eq!(
        refused(&|r| r.payment_infos[0].transactions[0].reasons =
            vec![reason("AC04", &[&"x".repeat(106)])]),
        "OrgnlPmtInfAndSts[0]/TxInfAndSts[0]/StsRsnInf[0]/AddtlInf[0]"
    );
    assert_eq!(
        refused(&|r| r.payment_infos[0].transactions[0].reasons = vec![reason("A C4", &[])]),
        "OrgnlPmtInfAndSts[0]/TxInfAndSts[0]/StsRsnInf[0]/Rsn/Cd"
    );
    assert_eq!(
        refused(&|r| r.payment_infos[0].original_payment_info_id = " BATCH-A".into()),
        "OrgnlPmtInfAndSts[0]/OrgnlPmtInfId"
    );

    let mut v10 = good.clone();
    v10.version = Pain002Version::V10;
    assert_eq!(
        write_pain002(&v10),
        Err(Pain002WriteError::Version {
            version: Pain002Version::V10
        })
    );
    // An existing v09 report from a bank, parsed, is written back to the same report.
    let bank = parse_pain002(&common::fixture("pain002_v09_partial.xml")).unwrap();
    assert_eq!(parse_pain002(&write_pain002(&bank).unwrap()).unwrap(), bank);
}

proptest! {
    /// Any text in the fields: the writer either refuses it or writes XML that parses back to
    /// the same report; it never panics.
    #[test]
    fn arbitrary_values_round_trip_or_are_refused(
        msg_id in prop_oneof!["[A-Za-z0-9/+-]{1,35}", ".{0,40}"],
        code in prop_oneof!["[A-Z0-9]{1,4}", ".{0,6}"],
        info in prop::collection::vec(prop_oneof!["[^ ]|[^ ].{0,103}[^ ]", ".{0,120}"], 0..3),
        e2e in prop_oneof!["[A-Za-z0-9/+-]{1,35}", ".{0,40}"],
    ) {
        let summary = read_pain001(&pain001()).unwrap();
        let good = status_report(
            &summary,
            &decisions(Status::Rejected, vec![decide("E2E-000003", Status::Rejected, vec![])]),
        )
        .unwrap();
        let mut report = good;
        report.message_id = msg_id;
        report.payment_infos[0].transactions[0].original_end_to_end_id = Some(e2e);
        report.payment_infos[0].transactions[0].reasons = vec![StatusReason {
            code: Some(ReasonCode::new(code)),
            proprietary: None,
            additional_info: info,
        }];
        if let Ok(xml) = write_pain002(&report) {
            prop_assert_eq!(parse_pain002(&xml).unwrap(), report);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_pain001_reader(bytes in prop::collection::vec(any::<u8>(), 0..500)) {
        let _ = read_pain001(&bytes);
    }
}
