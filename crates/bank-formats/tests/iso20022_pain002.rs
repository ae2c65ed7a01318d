//! The pain.002 parser on realistic reports (accepted, rejected file, partially rejected), and
//! on input that is not one: always an error, never a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod iso20022_common;

use bank_formats::iso20022::{
    Pain002Error, Pain002Version, ReasonCode, Status, StatusReason, pain002::WRONG_ACCOUNT_CODES,
    parse_pain002,
};
use iso20022_common::{self as common, fixture};
use proptest::prelude::*;

fn parse(name: &str) -> bank_formats::iso20022::PaymentStatusReport {
    parse_pain002(&fixture(name)).unwrap_or_else(|err| panic!("{name}: {err}"))
}

fn codes(reasons: &[StatusReason]) -> Vec<&str> {
    reasons
        .iter()
        .filter_map(|r| r.code.as_ref().map(ReasonCode::as_str))
        .collect()
}

#[test]
fn an_accepted_file() {
    let report = parse("pain002_v10_accepted.xml");
    assert_eq!(report.version, Pain002Version::V10);
    assert_eq!(report.message_id, "STS-20261126-000017");
    assert_eq!(report.created_at, "2026-11-26T07:02:11.482+01:00");
    assert_eq!(report.original_message_id, "PAYOUTD-20261125-0001");
    assert_eq!(report.original_message_name, "pain.001.001.09");
    assert_eq!(report.group_status, Some(Status::AcceptedCustomerProfile));
    assert!(report.group_reasons.is_empty());
    assert_eq!(report.payment_infos.len(), 1);
    let block = &report.payment_infos[0];
    assert_eq!(block.original_payment_info_id, "BATCH-0001");
    assert_eq!(block.status, Some(Status::AcceptedCustomerProfile));
    assert!(block.transactions.is_empty());
    // A transaction not listed takes its block's status.
    assert_eq!(
        report.status_for("BATCH-0001", "E2E-anything"),
        Some(&Status::AcceptedCustomerProfile)
    );

    let report = parse("pain002_v03_accepted.xml");
    assert_eq!(report.version, Pain002Version::V03);
    assert_eq!(
        report.group_status,
        Some(Status::AcceptedSettlementCompleted)
    );
    assert!(report.payment_infos.is_empty());
    assert_eq!(
        report.status_for("BATCH-0101", "E2E-1"),
        Some(&Status::AcceptedSettlementCompleted)
    );
}

#[test]
fn a_rejected_file() {
    let report = parse("pain002_v10_rejected_file.xml");
    assert_eq!(report.group_status, Some(Status::Rejected));
    assert!(report.group_status.as_ref().unwrap().is_rejected());
    assert_eq!(report.group_reasons.len(), 1);
    let reason = &report.group_reasons[0];
    assert_eq!(reason.code, Some(ReasonCode::new("FF01")));
    assert_eq!(reason.proprietary, None);
    // Entities are resolved; every AddtlInf line is kept.
    assert_eq!(
        reason.additional_info,
        [
            "File rejected: schema validation failed at line 12 & column 7",
            "Element 'CtrlSum': 12.3 does not match NbOfTxs"
        ]
    );
    assert!(!reason.means_wrong_account());
    assert!(report.payment_infos.is_empty());
    assert_eq!(report.status_for("B", "E"), Some(&Status::Rejected));

    let report = parse("pain002_v03_rejected_file.xml");
    assert_eq!(report.group_status, Some(Status::Rejected));
    assert_eq!(codes(&report.group_reasons), ["DUPL"]);
    assert_eq!(report.payment_infos[0].status, Some(Status::Rejected));
}

#[test]
fn a_partially_rejected_file_with_ac01_and_am04() {
    for name in ["pain002_v10_partial.xml", "pain002_v03_partial.xml"] {
        let report = parse(name);
        assert_eq!(
            report.group_status,
            Some(Status::PartiallyAccepted),
            "{name}"
        );
        let block = &report.payment_infos[0];
        assert_eq!(block.status, Some(Status::PartiallyAccepted));
        let wrong_account = &block.transactions[0];
        assert_eq!(wrong_account.status, Some(Status::Rejected));
        assert_eq!(codes(&wrong_account.reasons), ["AC01"]);
        assert!(wrong_account.means_wrong_account());
        let no_funds = &block.transactions[1];
        assert_eq!(no_funds.status, Some(Status::Rejected));
        assert_eq!(codes(&no_funds.reasons), ["AM04"]);
        assert!(!no_funds.means_wrong_account());
        assert_eq!(no_funds.reasons[0].additional_info[0], "Insufficient funds");
    }

    let report = parse("pain002_v10_partial.xml");
    assert_eq!(report.version, Pain002Version::V10);
    assert_eq!(report.created_at, "2026-11-26T07:02:13Z");
    let txs: Vec<_> = report.transactions().collect();
    assert_eq!(
        txs.len(),
        3,
        "the other namespace's TxSts is not a transaction"
    );
    assert_eq!(txs[0].status_id.as_deref(), Some("STS-19-1"));
    assert_eq!(
        txs[0].original_instruction_id.as_deref(),
        Some("INSTR-0003-1")
    );
    assert_eq!(txs[0].original_end_to_end_id.as_deref(), Some("E2E-0003-1"));
    assert_eq!(
        txs[0].reasons[0].additional_info,
        ["Incorrect account number"]
    );
    assert_eq!(
        txs[1].reasons[0].additional_info,
        ["Insufficient funds", "on the debtor's account"]
    );
    assert_eq!(txs[2].status, Some(Status::AcceptedCustomerProfile));
    assert!(txs[2].reasons.is_empty());
    assert_eq!(
        report.transaction("E2E-0003-2").unwrap().status,
        Some(Status::Rejected)
    );
    assert!(report.transaction("E2E-unknown").is_none());
    assert_eq!(
        report.status_for("BATCH-0003", "E2E-0003-1"),
        Some(&Status::Rejected)
    );
    // PART says nothing about a transaction that is not listed.
    assert_eq!(report.status_for("BATCH-0003", "E2E-0003-9"), None);
    assert_eq!(report.status_for("BATCH-other", "E2E-0003-1"), None);
}

#[test]
fn account_reason_codes_and_several_blocks() {
    let report = parse("pain002_v09_partial.xml");
    assert_eq!(report.version, Pain002Version::V09);
    assert_eq!(report.payment_infos.len(), 2);
    assert_eq!(
        report.status_for("BATCH-A", "E2E-A-1"),
        Some(&Status::AcceptedSettlementCompleted)
    );
    let block = &report.payment_infos[1];
    let by_id = |id: &str| {
        block
            .transactions
            .iter()
            .find(|tx| tx.original_end_to_end_id.as_deref() == Some(id))
            .unwrap()
    };
    assert!(
        by_id("E2E-B-1").means_wrong_account(),
        "AC04 closed account"
    );
    assert!(
        by_id("E2E-B-2").means_wrong_account(),
        "AC06 blocked account"
    );
    assert_eq!(
        by_id("E2E-B-2").reasons[0].additional_info,
        ["Account blocked"]
    );
    assert!(
        !by_id("E2E-B-3").means_wrong_account(),
        "MS03 reason not specified"
    );
    let proprietary = by_id("E2E-B-4");
    assert_eq!(proprietary.reasons[0].code, None);
    assert_eq!(
        proprietary.reasons[0].proprietary.as_deref(),
        Some("BANK-X-17")
    );
    assert!(!proprietary.means_wrong_account());
    assert_eq!(by_id("E2E-B-5").status, Some(Status::Pending));
    assert_eq!(
        report.status_for("BATCH-B", "E2E-B-5"),
        Some(&Status::Pending)
    );
}

#[test]
fn the_wrong_account_list() {
    for code in [
        "AC01", "AC03", "AC04", "AC06", "AC14", "BE01", "MD07", "RC01",
    ] {
        assert!(ReasonCode::new(code).means_wrong_account(), "{code}");
        assert!(WRONG_ACCOUNT_CODES.contains(&code));
    }
    for code in [
        "AC02", "AC05", "AC13", "AM04", "AM05", "BE04", "MS02", "MS03", "FF01", "DUPL", "", "ac01",
    ] {
        assert!(!ReasonCode::new(code).means_wrong_account(), "{code}");
    }
}

#[test]
fn status_codes() {
    for code in [
        "RCVD", "ACTC", "ACCP", "ACSP", "ACSC", "ACCC", "ACWC", "ACWP", "PART", "PDNG", "RJCT",
        "BLCK",
    ] {
        assert_eq!(Status::from_code(code).code(), code);
        assert_eq!(Status::from_code(code).to_string(), code);
    }
    assert_eq!(Status::from_code("BLCK"), Status::Other("BLCK".into()));
    assert!(Status::from_code("ACSC").is_accepted());
    assert!(!Status::from_code("PART").is_accepted());
    assert!(!Status::from_code("PDNG").is_rejected());
}

fn report(body: &str) -> String {
    format!(
        "<Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.002.001.10\"><CstmrPmtStsRpt>{body}</CstmrPmtStsRpt></Document>"
    )
}

const HEADER: &str = "<GrpHdr><MsgId>M</MsgId><CreDtTm>2026-11-26T00:00:00</CreDtTm></GrpHdr>\
                      <OrgnlGrpInfAndSts><OrgnlMsgId>O</OrgnlMsgId><OrgnlMsgNmId>pain.001.001.09</OrgnlMsgNmId>\
                      <GrpSts>ACTC</GrpSts></OrgnlGrpInfAndSts>";

#[test]
fn unknown_elements_comments_cdata_and_a_bom_are_fine() {
    let doc = format!(
        "\u{feff}<?xml version=\"1.0\"?><!-- hi --><Document xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.002.001.10\">\
         <CstmrPmtStsRpt><Unknown><Deep>x</Deep></Unknown>{HEADER}\
         <OrgnlPmtInfAndSts><OrgnlPmtInfId><![CDATA[B-1]]></OrgnlPmtInfId><NewThing/>\
         <TxInfAndSts><OrgnlEndToEndId> E&#x32;E </OrgnlEndToEndId><TxSts>RJCT</TxSts>\
         <StsRsnInf><Rsn><Cd>AC04</Cd></Rsn><AddtlInf/></StsRsnInf></TxInfAndSts>\
         </OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>\n"
    );
    let report = parse_pain002(doc.as_bytes()).unwrap();
    assert_eq!(
        report.group_status,
        Some(Status::AcceptedTechnicalValidation)
    );
    assert_eq!(report.payment_infos[0].original_payment_info_id, "B-1");
    let tx = &report.payment_infos[0].transactions[0];
    assert_eq!(tx.original_end_to_end_id.as_deref(), Some("E2E"));
    assert!(tx.means_wrong_account());
    assert!(tx.reasons[0].additional_info.is_empty());
}

#[test]
fn errors() {
    type Case = (&'static str, Vec<u8>, fn(&Pain002Error) -> bool);
    let cases: Vec<Case> = vec![
        ("empty", Vec::new(), |e| {
            matches!(e, Pain002Error::Malformed { .. })
        }),
        ("not UTF-8", b"<Document>\xff</Document>".to_vec(), |e| {
            *e == Pain002Error::NotUtf8
        }),
        ("truncated", report(HEADER).as_bytes()[..60].to_vec(), |e| {
            matches!(e, Pain002Error::Malformed { .. })
        }),
        (
            "mismatched tags",
            report("<GrpHdr></OrgnlGrpInfAndSts>").into_bytes(),
            |e| matches!(e, Pain002Error::Malformed { .. }),
        ),
        (
            "two roots",
            format!("{}<Document/>", report(HEADER)).into_bytes(),
            |e| matches!(e, Pain002Error::Malformed { .. }),
        ),
        (
            "text after the root",
            format!("{}junk", report(HEADER)).into_bytes(),
            |e| matches!(e, Pain002Error::Malformed { .. }),
        ),
        (
            "unknown entity",
            report(&HEADER.replace(">O<", ">&ouml;<")).into_bytes(),
            |e| matches!(e, Pain002Error::Malformed { .. }),
        ),
        (
            "bad char ref",
            report(&HEADER.replace(">O<", ">&#0;<")).into_bytes(),
            |e| matches!(e, Pain002Error::Malformed { .. }),
        ),
        (
            "bad attribute",
            report(HEADER)
                .replace("<CstmrPmtStsRpt>", "<CstmrPmtStsRpt a=1>")
                .into_bytes(),
            |e| matches!(e, Pain002Error::Malformed { .. }),
        ),
        (
            "unbound prefix",
            report(&HEADER.replace("<MsgId>M</MsgId>", "<x:MsgId>M</x:MsgId>")).into_bytes(),
            |e| matches!(e, Pain002Error::Malformed { .. }),
        ),
        (
            "a pain.001",
            report(HEADER)
                .replace("pain.002.001.10", "pain.001.001.09")
                .into_bytes(),
            |e| matches!(e, Pain002Error::NotPain002 { .. }),
        ),
        (
            "pain.002.001.05",
            report(HEADER)
                .replace("pain.002.001.10", "pain.002.001.05")
                .into_bytes(),
            |e| matches!(e, Pain002Error::NotPain002 { .. }),
        ),
        (
            "no namespace",
            report(HEADER)
                .replace(
                    " xmlns=\"urn:iso:std:iso:20022:tech:xsd:pain.002.001.10\"",
                    "",
                )
                .into_bytes(),
            |e| matches!(e, Pain002Error::NotPain002 { .. }),
        ),
        (
            "another root",
            report(HEADER).replace("Document", "Doc").into_bytes(),
            |e| matches!(e, Pain002Error::NotPain002 { .. }),
        ),
        ("no header", report("").into_bytes(), |e| {
            *e == Pain002Error::Missing {
                path: "GrpHdr".into(),
            }
        }),
        (
            "no MsgId",
            report(&HEADER.replace("<MsgId>M</MsgId>", "<MsgId> </MsgId>")).into_bytes(),
            |e| {
                *e == Pain002Error::Missing {
                    path: "GrpHdr/MsgId".into(),
                }
            },
        ),
        (
            "no OrgnlPmtInfId",
            report(&format!(
                "{HEADER}<OrgnlPmtInfAndSts><PmtInfSts>RJCT</PmtInfSts></OrgnlPmtInfAndSts>"
            ))
            .into_bytes(),
            |e| {
                *e == Pain002Error::Missing {
                    path: "OrgnlPmtInfAndSts[0]/OrgnlPmtInfId".into(),
                }
            },
        ),
        (
            "too deep",
            report(&format!(
                "{HEADER}{}{}",
                "<X>".repeat(100),
                "</X>".repeat(100)
            ))
            .into_bytes(),
            |e| matches!(e, Pain002Error::TooDeep { .. }),
        ),
    ];
    for (what, bytes, expected) in cases {
        let err = parse_pain002(&bytes).expect_err(what);
        assert!(expected(&err), "{what}: {err:?}");
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn very_deep_nesting_is_refused_without_overflowing_the_stack() {
    let depth = 200_000;
    let doc = report(&format!("{}{}", "<X>".repeat(depth), "</X>".repeat(depth)));
    assert!(parse_pain002(doc.as_bytes()).is_err());
    // Inside another namespace's element, where nothing is kept, depth costs nothing.
    let doc = report(&format!(
        "{HEADER}<o:X xmlns:o=\"urn:other\">{}{}</o:X>",
        "<o:X>".repeat(depth),
        "</o:X>".repeat(depth)
    ));
    // quick-xml's own namespace limit may refuse it; either way, no panic.
    let _ = parse_pain002(doc.as_bytes());
}

/// Every prefix of every fixture, and every fixture with any one byte changed in a few ways,
/// parses or fails cleanly.
#[test]
fn damaged_fixtures_never_panic() {
    for name in common::PAIN002_FIXTURES {
        let bytes = fixture(name);
        for end in 0..bytes.len() {
            let _ = parse_pain002(&bytes[..end]);
        }
        for i in 0..bytes.len() {
            for replacement in [b'<', b'>', b'&', b'"', b'/', 0xff, b' '] {
                let mut damaged = bytes.clone();
                damaged[i] = replacement;
                let _ = parse_pain002(&damaged);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse_pain002(&bytes);
    }

    #[test]
    fn arbitrary_text_in_a_report_never_panics(
        text in any::<String>(),
        at in 0usize..6,
    ) {
        let places = ["<MsgId>", "<GrpSts>", "<OrgnlMsgId>", "<CstmrPmtStsRpt>", "</GrpHdr>", "<Document"];
        let doc = report(HEADER).replacen(places[at], &format!("{}{text}", places[at]), 1);
        let _ = parse_pain002(doc.as_bytes());
    }
}
