//! The rails' readers of inbound files: NACHA returns and notifications of change (the moov
//! fixtures under `bank-formats/tests/fixtures/nacha`, written by another implementation) and
//! pain.002 status reports, in payoutd's terms.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use adapters_rails::nacha::NachaReader;
use adapters_rails::sepa::Pain002Reader;
use domain::ids::BatchId;
use domain::money::MinorUnits;
use domain::rail::report::{
    BankFileReader, BankReport, FileMention, FileVerdict, ItemOutcome, ItemReport, ReadOutcome,
    ReturnReason,
};
use uuid::Uuid;

fn fixture(path: &str) -> Vec<u8> {
    let at = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bank-formats/tests/fixtures")
        .join(path);
    std::fs::read(&at).unwrap_or_else(|e| panic!("{}: {e}", at.display()))
}

fn report(reader: &dyn BankFileReader, bytes: &[u8]) -> BankReport {
    match reader.read("inbound", bytes).unwrap() {
        ReadOutcome::Report(report) => report,
        other => panic!("not a report: {other:?}"),
    }
}

fn returned(reference: &str, code: &str, reason: &str, invalid: bool, cents: i64) -> ItemReport {
    ItemReport {
        reference: reference.into(),
        outcome: ItemOutcome::Returned {
            reason: ReturnReason {
                code: code.into(),
                reason: reason.into(),
                account_is_invalid: invalid,
            },
            amount: Some(MinorUnits::new(cents).unwrap()),
        },
    }
}

#[test]
fn nacha_returns_name_the_returned_entries_by_trace_number() {
    let got = report(&NachaReader, &fixture("nacha/return-WEB.ach"));
    assert_eq!(
        got.file, None,
        "a return file names entries, not a file of ours"
    );
    assert_eq!(
        got.items,
        vec![
            returned(
                "091400600000001",
                "R01",
                "Insufficient funds",
                false,
                12_354
            ),
            returned(
                "091400600000003",
                "R03",
                "No account / unable to locate account",
                true,
                4_565
            ),
        ]
    );
}

#[test]
fn unassigned_return_codes_keep_their_code() {
    let got = report(
        &NachaReader,
        &fixture("nacha/return-PPD-custom-reason-code.ach"),
    );
    assert_eq!(got.items.len(), 1);
    let ItemOutcome::Returned { reason, .. } = &got.items[0].outcome else {
        panic!("{:?}", got.items[0]);
    };
    assert_eq!(reason.code, "R97");
    assert_eq!(reason.reason, "return reason R97");
    assert!(!reason.account_is_invalid);
}

#[test]
fn notifications_of_change_and_dishonored_returns_are_notices() {
    let cor = report(&NachaReader, &fixture("nacha/cor-example.ach"));
    assert_eq!(cor.items.len(), 1);
    assert_eq!(cor.items[0].reference, "121042880000001");
    assert!(matches!(&cor.items[0].outcome, ItemOutcome::Notice { code, .. } if code == "C01"));
    let contested = report(&NachaReader, &fixture("nacha/contested-return.ach"));
    let codes: Vec<_> = contested
        .items
        .iter()
        .map(|i| match &i.outcome {
            ItemOutcome::Returned { reason, .. } => format!("return {}", reason.code),
            ItemOutcome::Notice { code, .. } => format!("notice {code}"),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(codes, ["return R07", "notice R68", "notice R71"]);
    let dishonored = report(&NachaReader, &fixture("nacha/dishonored-return.ach"));
    assert!(!dishonored.items.is_empty());
    assert!(
        dishonored
            .items
            .iter()
            .any(|i| matches!(&i.outcome, ItemOutcome::Notice { code, .. } if code == "R68")),
        "{:?}",
        dishonored.items
    );
}

#[test]
fn an_originated_nacha_file_is_not_the_readers() {
    // Credits another implementation originated.
    assert_eq!(
        NachaReader
            .read("ppd-credit.ach", &fixture("nacha/ppd-credit.ach"))
            .unwrap(),
        ReadOutcome::NotMine
    );
}

#[test]
fn other_files_are_not_the_nacha_readers_and_broken_ones_are_unreadable() {
    assert_eq!(
        NachaReader
            .read("x.xml", &fixture("iso20022/pain002_v09_partial.xml"))
            .unwrap(),
        ReadOutcome::NotMine
    );
    let mut broken = fixture("nacha/return-WEB.ach");
    broken.truncate(94 * 4 + 3);
    let ReadOutcome::Unreadable(why) = NachaReader.read("r.ach", &broken).unwrap() else {
        panic!("a truncated file is read");
    };
    assert!(why.contains("NACHA"), "{why}");
    assert_eq!(
        Pain002Reader
            .read("r.ach", &fixture("nacha/return-WEB.ach"))
            .unwrap(),
        ReadOutcome::NotMine
    );
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
fn a_partial_pain002_rejects_its_listed_transactions() {
    let got = report(&Pain002Reader, &fixture("iso20022/pain002_v09_partial.xml"));
    assert_eq!(
        got.file,
        Some((
            FileMention::Unknown("PAYOUTD-20261126-0001".into()),
            FileVerdict::Accepted
        )),
        "a message id that is no batch id is kept for the unmatched report"
    );
    assert_eq!(
        got.items[..4],
        [
            rejected("E2E-B-1", "AC04", "Closed account number", true),
            rejected("E2E-B-2", "AC06", "Blocked account", true),
            rejected(
                "E2E-B-3",
                "MS03",
                "Reason not specified, by the bank",
                false
            ),
            rejected("E2E-B-4", "RJCT", "BANK-X-17", false),
        ]
    );
    assert!(
        !got.items.iter().any(|i| i.reference == "E2E-B-5"),
        "pending transactions say nothing yet"
    );
}

#[test]
fn a_rejected_pain002_file_and_an_accepted_one() {
    let got = report(
        &Pain002Reader,
        &fixture("iso20022/pain002_v03_rejected_file.xml"),
    );
    let Some((_, FileVerdict::Rejected { code, reason })) = got.file else {
        panic!("{:?}", got.file);
    };
    assert!(code.is_some());
    assert!(!reason.is_empty());
    let got = report(
        &Pain002Reader,
        &fixture("iso20022/pain002_v10_accepted.xml"),
    );
    assert!(matches!(
        got.file,
        Some((_, FileVerdict::Accepted | FileVerdict::Settled))
    ));
}

#[test]
fn a_status_report_on_our_own_file_names_its_batch_and_payouts() {
    let batch = Uuid::from_u128(0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0);
    let paid = Uuid::from_u128(1).simple().to_string();
    let refused = Uuid::from_u128(2).simple().to_string();
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.09"><CstmrPmtStsRpt>
<GrpHdr><MsgId>STS-1</MsgId><CreDtTm>2026-11-27T06:00:00</CreDtTm></GrpHdr>
<OrgnlGrpInfAndSts><OrgnlMsgId>{batch}</OrgnlMsgId><OrgnlMsgNmId>pain.001.001.09</OrgnlMsgNmId><GrpSts>PART</GrpSts></OrgnlGrpInfAndSts>
<OrgnlPmtInfAndSts><OrgnlPmtInfId>{batch}-1</OrgnlPmtInfId><PmtInfSts>PART</PmtInfSts>
<TxInfAndSts><OrgnlEndToEndId>{paid}</OrgnlEndToEndId><TxSts>ACSC</TxSts></TxInfAndSts>
<TxInfAndSts><OrgnlEndToEndId>{refused}</OrgnlEndToEndId><TxSts>RJCT</TxSts><StsRsnInf><Rsn><Cd>AC01</Cd></Rsn></StsRsnInf></TxInfAndSts>
</OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>"#,
        batch = batch.simple()
    );
    let got = report(&Pain002Reader, xml.as_bytes());
    assert_eq!(
        got,
        BankReport {
            file: Some((
                FileMention::Batch {
                    batch: BatchId::from_uuid(batch),
                    part: 1
                },
                FileVerdict::Accepted
            )),
            items: vec![
                ItemReport {
                    reference: paid,
                    outcome: ItemOutcome::Settled
                },
                rejected(&refused, "AC01", "Incorrect account number", true),
            ],
        }
    );
    // A batch's second file is `<batch>-2`: the report names that part.
    let second = xml.replace(
        &format!("<OrgnlMsgId>{}</OrgnlMsgId>", batch.simple()),
        &format!("<OrgnlMsgId>{}-2</OrgnlMsgId>", batch.simple()),
    );
    assert_eq!(
        report(&Pain002Reader, second.as_bytes()).file,
        Some((
            FileMention::Batch {
                batch: BatchId::from_uuid(batch),
                part: 2
            },
            FileVerdict::Accepted
        ))
    );
    let broken = xml.replace("</Document>", "");
    assert!(matches!(
        Pain002Reader.read("s.xml", broken.as_bytes()).unwrap(),
        ReadOutcome::Unreadable(_)
    ));
}
