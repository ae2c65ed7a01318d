//! The pain.001.001.09 writer: what it computes and writes, and what it refuses.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod iso20022_common;

use bank_formats::iso20022::{
    DebtorAgent, PAIN001_NAMESPACE, Pain001Error,
    pain001::{MAX_AMOUNT_CENTS, MAX_TRANSACTIONS},
    parse_pain002, write_pain001,
};
use iso20022_common::{self as common, batch, file, text, texts, transfer};
use proptest::prelude::*;

#[test]
fn the_group_header_and_one_transaction() {
    let xml = write_pain001(&common::one_transaction()).unwrap();
    let doc = std::str::from_utf8(&xml).unwrap();
    assert!(doc.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
    assert!(doc.contains(&format!("<Document xmlns=\"{PAIN001_NAMESPACE}\">")));
    assert_eq!(text(&xml, "MsgId"), "PAYOUTD-20261125-0001");
    assert_eq!(text(&xml, "CreDtTm"), "2026-11-25T18:00:05Z");
    assert_eq!(texts(&xml, "NbOfTxs"), ["1", "1"]);
    assert_eq!(texts(&xml, "CtrlSum"), ["0.01", "0.01"]);
    assert_eq!(text(&xml, "InstdAmt"), "0.01");
    assert!(doc.contains("<InstdAmt Ccy=\"EUR\">0.01</InstdAmt>"));
    assert_eq!(text(&xml, "PmtInfId"), "BATCH-0001");
    assert_eq!(text(&xml, "PmtMtd"), "TRF");
    assert_eq!(text(&xml, "BtchBookg"), "true");
    assert_eq!(text(&xml, "Cd"), "SEPA");
    assert_eq!(text(&xml, "Dt"), "2026-11-26");
    assert_eq!(text(&xml, "ChrgBr"), "SLEV");
    assert_eq!(texts(&xml, "BICFI"), ["COBADEFFXXX"]);
    assert_eq!(text(&xml, "InstrId"), "INSTR-000001");
    assert_eq!(text(&xml, "EndToEndId"), "E2E-000001");
    assert_eq!(
        texts(&xml, "Nm"),
        ["Payoutd Demo GmbH", "Payoutd Demo GmbH", "Creditor 1"]
    );
    assert_eq!(
        texts(&xml, "IBAN"),
        ["DE89370400440532013000", "FR1420041010050500013M02606"]
    );
    assert_eq!(text(&xml, "Ustrd"), "Payout 1");
    // No creditor agent unless given, no initiating party id unless given.
    assert!(!doc.contains("<CdtrAgt>"));
    assert!(!doc.contains("<OrgId>"));
}

#[test]
fn amounts_are_euros_with_two_decimals() {
    let amounts = [1, 10, 99, 100, 123_456, 100_000, MAX_AMOUNT_CENTS];
    let transactions = amounts
        .iter()
        .enumerate()
        .map(|(n, cents)| transfer(n, *cents))
        .collect();
    let xml = write_pain001(&file(vec![batch("B", transactions)])).unwrap();
    assert_eq!(
        texts(&xml, "InstdAmt"),
        [
            "0.01",
            "0.10",
            "0.99",
            "1.00",
            "1234.56",
            "1000.00",
            "999999999.99"
        ]
    );
    // 0.01 + 0.10 + 0.99 + 1.00 + 1234.56 + 1000.00 + 999999999.99
    assert_eq!(texts(&xml, "CtrlSum"), ["1000002236.65", "1000002236.65"]);
    assert_eq!(texts(&xml, "NbOfTxs"), ["7", "7"]);
}

#[test]
fn counts_and_sums_per_batch_and_for_the_file() {
    let xml = write_pain001(&common::many_transactions()).unwrap();
    // Transfer n is n × 10.01 EUR; batches of 120, 100 and 30 transfers.
    let sum = |from: u64, to: u64| (from..=to).map(|n| n * 1_001).sum::<u64>();
    let euros = |cents: u64| format!("{}.{:02}", cents / 100, cents % 100);
    assert_eq!(texts(&xml, "NbOfTxs"), ["250", "120", "100", "30"]);
    assert_eq!(
        texts(&xml, "CtrlSum"),
        [
            euros(sum(1, 250)),
            euros(sum(1, 120)),
            euros(sum(121, 220)),
            euros(sum(221, 250))
        ]
    );
    assert_eq!(texts(&xml, "CdtTrfTxInf").len(), 250);
    assert_eq!(texts(&xml, "BtchBookg"), ["true", "false", "true"]);
    let compact: String = String::from_utf8(xml).unwrap().split_whitespace().collect();
    let not_provided =
        "<DbtrAgt><FinInstnId><Othr><Id>NOTPROVIDED</Id></Othr></FinInstnId></DbtrAgt>";
    assert_eq!(compact.matches(not_provided).count(), 1);
    assert_eq!(
        compact
            .matches("<DbtrAgt><FinInstnId><BICFI>COBADEFFXXX</BICFI>")
            .count(),
        2
    );
}

#[test]
fn text_is_folded_into_the_sepa_set_and_escaped() {
    let xml = write_pain001(&common::awkward_text()).unwrap();
    assert_eq!(
        texts(&xml, "Nm"),
        [
            "Cafe OEuvre + AEro ApS",
            "Lodz Spolka z o.o.",
            "Zoe O'Brien + Son - .",
            "."
        ]
    );
    // The second transfer's remittance is only whitespace: no RmtInf at all.
    assert_eq!(
        texts(&xml, "Ustrd"),
        ["Rechnung Nr. 42 fur Strasse (5) 'Grosse' .12 . 100. ."]
    );
    // The apostrophe is the only character of the set with meaning in XML; it is written as is
    // in text, which XML allows.
    let doc = String::from_utf8(xml).unwrap();
    assert!(doc.contains("<Nm>Zoe O'Brien + Son - .</Nm>"));
    assert!(doc.is_ascii());
}

#[test]
fn long_text_is_cut_and_ids_at_35_are_kept() {
    let xml = write_pain001(&common::max_length_fields()).unwrap();
    assert_eq!(text(&xml, "MsgId"), "M".repeat(35));
    assert_eq!(text(&xml, "PmtInfId"), "P".repeat(35));
    assert_eq!(texts(&xml, "InstrId")[0], "I".repeat(35));
    assert_eq!(texts(&xml, "EndToEndId")[0], "E".repeat(35));
    let names = texts(&xml, "Nm");
    assert_eq!(names[0], "I".repeat(70));
    assert_eq!(names[1], "D".repeat(70));
    assert_eq!(names[2], "N".repeat(70));
    assert_eq!(names[3], "e".repeat(70));
    let remittance = texts(&xml, "Ustrd");
    assert_eq!(remittance, ["R".repeat(140), "s".repeat(140)]);
    assert_eq!(texts(&xml, "InstdAmt"), ["999999999.99", "999999999.99"]);
    assert_eq!(texts(&xml, "CtrlSum"), ["1999999999.98", "1999999999.98"]);
}

fn error_of(
    change: impl FnOnce(&mut bank_formats::iso20022::CreditTransferInitiation),
) -> Pain001Error {
    let mut f = common::many_transactions();
    change(&mut f);
    write_pain001(&f).unwrap_err()
}

#[test]
fn errors_name_the_field() {
    let err = error_of(|f| f.batches[1].transactions[3].amount_cents = 0);
    assert_eq!(
        err,
        Pain001Error::ZeroAmount {
            field: "batches[1].transactions[3].amount_cents".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "batches[1].transactions[3].amount_cents: the amount is zero"
    );

    let err = error_of(|f| f.batches[0].transactions[0].amount_cents = MAX_AMOUNT_CENTS + 1);
    assert!(matches!(err, Pain001Error::AmountTooLarge { .. }), "{err}");
    assert_eq!(err.field(), "batches[0].transactions[0].amount_cents");

    let err = error_of(|f| {
        f.batches[2].transactions[1].creditor_iban = "DE89 3704 0044 0532 0130 00".into()
    });
    assert_eq!(
        err,
        Pain001Error::BadIban {
            field: "batches[2].transactions[1].creditor_iban".into()
        }
    );
    let err = error_of(|f| f.batches[0].debtor_iban = "DE00370400440532013000".into());
    assert_eq!(err.field(), "batches[0].debtor_iban");
    assert!(matches!(err, Pain001Error::BadIban { .. }));

    let err = error_of(|f| f.batches[0].debtor_agent = DebtorAgent::Bic("COBADEF".into()));
    assert_eq!(
        err,
        Pain001Error::BadBic {
            field: "batches[0].debtor_agent".into()
        }
    );
    let err =
        error_of(|f| f.batches[0].transactions[2].creditor_agent_bic = Some("cobadeff".into()));
    assert_eq!(err.field(), "batches[0].transactions[2].creditor_agent_bic");

    let err = error_of(|f| f.message_id = "M".repeat(36));
    assert_eq!(
        err,
        Pain001Error::TooLong {
            field: "message_id".into(),
            len: 36,
            max: 35
        }
    );
    let err = error_of(|f| f.batches[1].transactions[0].end_to_end_id = "E2E_1".into());
    assert_eq!(
        err,
        Pain001Error::IdCharacter {
            field: "batches[1].transactions[0].end_to_end_id".into(),
            ch: '_'
        }
    );
    let err = error_of(|f| f.batches[1].transactions[0].instruction_id = "Zoë-1".into());
    assert!(
        matches!(err, Pain001Error::IdCharacter { ch: 'ë', .. }),
        "{err}"
    );
    let err = error_of(|f| f.batches[0].payment_info_id = "/B".into());
    assert_eq!(
        err,
        Pain001Error::IdSlashes {
            field: "batches[0].payment_info_id".into()
        }
    );
    let err = error_of(|f| f.initiating_party.id = Some(String::new()));
    assert_eq!(
        err,
        Pain001Error::Empty {
            field: "initiating_party.id".into()
        }
    );
    let err = error_of(|f| f.batches[2].transactions[0].creditor_name = " \t ".into());
    assert_eq!(
        err,
        Pain001Error::Empty {
            field: "batches[2].transactions[0].creditor_name".into()
        }
    );
    let err = error_of(|f| f.initiating_party.name = String::new());
    assert_eq!(err.field(), "initiating_party.name");
}

#[test]
fn ids_must_be_unique_in_the_file() {
    let err = error_of(|f| f.batches[2].transactions[0].end_to_end_id = "E2E-000001".into());
    assert_eq!(
        err,
        Pain001Error::DuplicateId {
            field: "batches[2].transactions[0].end_to_end_id".into(),
            id: "E2E-000001".into()
        }
    );
    let err = error_of(|f| f.batches[1].transactions[5].instruction_id = "INSTR-000002".into());
    assert_eq!(err.field(), "batches[1].transactions[5].instruction_id");
    let err = error_of(|f| f.batches[2].payment_info_id = "BATCH-0001".into());
    assert_eq!(err.field(), "batches[2].payment_info_id");
}

#[test]
fn empty_files_and_batches_are_refused() {
    let err = error_of(|f| f.batches.clear());
    assert_eq!(
        err,
        Pain001Error::NoneGiven {
            field: "batches".into()
        }
    );
    let err = error_of(|f| f.batches[1].transactions.clear());
    assert_eq!(
        err,
        Pain001Error::NoneGiven {
            field: "batches[1].transactions".into()
        }
    );
}

#[test]
fn too_many_transactions_are_refused() {
    let transactions: Vec<_> = (0..=MAX_TRANSACTIONS).map(|n| transfer(n, 1)).collect();
    let err = write_pain001(&file(vec![batch("B", transactions)])).unwrap_err();
    assert_eq!(
        err,
        Pain001Error::TooManyTransactions {
            field: "batches".into(),
            count: MAX_TRANSACTIONS + 1,
            max: MAX_TRANSACTIONS
        }
    );
}

#[test]
fn dates_need_four_digit_years() {
    let err = error_of(|f| {
        f.batches[0].execution_date = chrono::NaiveDate::from_ymd_opt(10_000, 1, 1).unwrap();
    });
    assert_eq!(err.field(), "batches[0].execution_date");
    let err = error_of(|f| {
        f.created_at = chrono::NaiveDate::from_ymd_opt(-1, 1, 1)
            .unwrap()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc();
    });
    assert_eq!(err.field(), "created_at");
}

/// The writer's own output is not a pain.002, and the parser says so rather than panicking.
#[test]
fn a_pain001_is_not_a_status_report() {
    let xml = write_pain001(&common::one_transaction()).unwrap();
    assert!(parse_pain002(&xml).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever the text and ids, the writer returns a document or an error, never panics; a
    /// document holds only the SEPA set (plus markup) and is well-formed.
    #[test]
    fn arbitrary_input_never_panics(
        name in any::<String>(),
        remittance in any::<String>(),
        end_to_end_id in any::<String>(),
        iban in "[A-Z0-9 ]{0,40}",
        cents in any::<u64>(),
    ) {
        let mut tx = transfer(1, cents);
        tx.creditor_name = name;
        tx.remittance = Some(remittance);
        tx.end_to_end_id = end_to_end_id;
        tx.creditor_iban = iban;
        if let Ok(xml) = write_pain001(&file(vec![batch("B", vec![tx])])) {
            let doc = String::from_utf8(xml.clone()).unwrap();
            prop_assert!(doc.is_ascii());
            let nm = texts(&xml, "Nm");
            prop_assert!(nm.iter().all(|n| !n.is_empty() && n.chars().count() <= 70));
            prop_assert!(texts(&xml, "Ustrd").iter().all(|u| u.chars().count() <= 140));
        }
    }
}
