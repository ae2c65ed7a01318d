//! `nzd/direct-credit`: the IB4B writer end to end (request, bytes, parsed back), its
//! refusals, its settings, and the reader of dishonour files written by the bank side from the
//! writer's own file.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A split is a list of ranges: one file is a list of one range.
#![allow(clippy::single_range_in_vec_init)]

use adapters_rails::ib4b::{self, Ib4bReader, Ib4bSettings, Ib4bWriter};
use bank_formats::ib4b::{DishonourReason, Ib4bFile, TransactionCode, parse};
use bank_simulator::ib4b::{DishonourDecision, write_dishonour_file};
use chrono::{NaiveDate, TimeZone, Utc};
use domain::account::PayoutMethod;
use domain::ids::{BatchId, PayoutId, SubaccountId};
use domain::masking::Secret;
use domain::money::{Asset, MinorUnits};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest};
use domain::rail::report::{
    BankFileReader, BankReport, ItemOutcome, ItemReport, ReadOutcome, ReturnReason,
};
use uuid::Uuid;

const ADA: &str = "3f2504e0-4f89-41d3-9a0c-0305e82c3301";
const GRACE: &str = "9c5b94b1-35ad-49bb-b118-8e8fc24abf80";

fn settings() -> Ib4bSettings {
    Ib4bSettings {
        originating_account: "0102420100194000".into(),
        originator_name: "Payoutd Ltd".into(),
    }
}

fn instruction(
    id: &str,
    cents: i64,
    name: &str,
    account: &str,
    remittance: &str,
) -> CreditInstruction {
    CreditInstruction {
        payout_id: PayoutId::from_uuid(Uuid::parse_str(id).unwrap()),
        amount: MinorUnits::new(cents).unwrap(),
        payee_name: name.into(),
        receiving_bank: None,
        account: Secret::new(account.into()),
        account_kind: None,
        remittance: remittance.into(),
    }
}

fn request(asset: Asset, instructions: Vec<CreditInstruction>) -> FileRequest {
    FileRequest {
        batch_id: BatchId::from_uuid(Uuid::from_u128(0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0)),
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(5)),
        method: PayoutMethod::DirectCredit,
        asset,
        part: 1,
        created_at: Utc.with_ymd_and_hms(2026, 11, 25, 21, 7, 0).unwrap(),
        effective_date: NaiveDate::from_ymd_opt(2026, 11, 27).unwrap(),
        sequence: 7,
        instructions,
    }
}

fn two_credits() -> FileRequest {
    request(
        Asset::Nzd,
        vec![
            instruction(
                ADA,
                12_345,
                "Ada Lovelace",
                "0109020068389000",
                "Invoice 1001, Nov",
            ),
            instruction(
                GRACE,
                500,
                "Grâce O'Hopper, Esq.",
                "0865231954512001",
                "Refund",
            ),
        ],
    )
}

fn writer() -> Ib4bWriter {
    Ib4bWriter::new(settings()).unwrap()
}

#[test]
fn a_request_becomes_a_file_with_every_field_in_place() {
    let written = writer().write(&two_credits()).unwrap();
    assert_eq!(written.extension, "csv");
    assert_eq!(written.references, ["3F2504E04F89", "9C5B94B135AD"]);
    // Same request, same bytes.
    assert_eq!(writer().write(&two_credits()).unwrap(), written);
    let text = String::from_utf8(written.bytes.clone()).unwrap();
    assert_eq!(
        text,
        "1,,,,0102420100194000,7,261127,261125,\r\n\
         2,0109020068389000,50,12345,Ada Lovelace,3F2504E04F89,,,Invoice 1001,Payoutd Ltd,123456789ABC,3F2504E04F89,FILE7\r\n\
         2,0865231954512001,50,500,Grace O'Hopper Esq.,9C5B94B135AD,,,Refund,Payoutd Ltd,123456789ABC,9C5B94B135AD,FILE7\r\n\
         3,12845,2,74252022901\r\n"
    );
    let Ib4bFile::DirectCredit(file) = parse(&written.bytes).unwrap() else {
        panic!("not a direct credit file");
    };
    assert_eq!(file.header.originating_account, "0102420100194000");
    assert_eq!(
        file.header.due_date,
        NaiveDate::from_ymd_opt(2026, 11, 27).unwrap()
    );
    assert_eq!(
        file.header.creation_date,
        NaiveDate::from_ymd_opt(2026, 11, 25).unwrap()
    );
    let t = &file.transactions[1];
    assert_eq!(t.account, "0865231954512001");
    assert_eq!(t.transaction_code, TransactionCode::DirectCredit);
    assert_eq!(t.amount, 500);
    assert_eq!(t.other_party_name, "Grace O'Hopper Esq.");
    assert_eq!(t.other_party.particulars, "Refund");
    assert_eq!(t.other_party.reference, written.references[1]);
    assert_eq!(t.yours.reference, written.references[1]);
    assert_eq!(t.your_name, "Payoutd Ltd");
    let control = file.control();
    assert_eq!((control.total_amount, control.count), (12_845, 2));
}

#[test]
fn a_hyphenated_account_and_a_matching_receiving_bank_are_accepted() {
    let mut credit = instruction(ADA, 100, "Ada", "01-0902-0068389-00", "x");
    credit.receiving_bank = Some(Secret::new("01-0902".into()));
    let written = writer().write(&request(Asset::Nzd, vec![credit])).unwrap();
    assert!(
        String::from_utf8(written.bytes)
            .unwrap()
            .contains(",0109020068389000,50,100,")
    );
}

fn refusal(request: &FileRequest) -> String {
    writer().write(request).unwrap_err().to_string()
}

#[test]
fn requests_the_format_cannot_carry_are_refused() {
    // Wrong asset.
    assert!(refusal(&request(Asset::Usd, two_credits().instructions)).contains("NZD"));
    // An account without bank and branch (no receiving bank to be found).
    let no_bank = instruction(ADA, 100, "Ada", "0068389", "x");
    let message = refusal(&request(Asset::Nzd, vec![no_bank]));
    assert!(
        message.contains(ADA) && message.contains("bank"),
        "{message}"
    );
    assert!(!message.contains("0068389"), "account data in {message}");
    // Bad check digits.
    let bad = instruction(ADA, 100, "Ada", "0109020068388000", "x");
    assert!(refusal(&request(Asset::Nzd, vec![bad])).contains(ADA));
    // A receiving bank that is not the account's.
    let mut other_bank = instruction(ADA, 100, "Ada", "0109020068389000", "x");
    other_bank.receiving_bank = Some(Secret::new("020001".into()));
    let message = refusal(&request(Asset::Nzd, vec![other_bank]));
    assert!(message.contains("receiving bank"), "{message}");
    assert!(!message.contains("020001"), "{message}");
    // An amount of eleven digits.
    let big = instruction(ADA, 10_000_000_000, "Ada", "0109020068389000", "x");
    assert!(refusal(&request(Asset::Nzd, vec![big])).contains("cents"));
    // A name with no character the format carries.
    let cjk = instruction(ADA, 100, "王伟", "0109020068389000", "x");
    assert!(refusal(&request(Asset::Nzd, vec![cjk])).contains("payee name"));
    // Two payouts with one reference.
    let twin = "3f2504e0-4f89-4000-8000-000000000000";
    let twins = vec![
        instruction(ADA, 1, "A", "0109020068389000", "x"),
        instruction(twin, 2, "B", "0109020068389000", "y"),
    ];
    let message = refusal(&request(Asset::Nzd, twins));
    assert!(
        message.contains("reference") && message.contains(twin),
        "the second payout of a reference is named: {message}"
    );
    // A file number beyond FILE99999999.
    let mut late = two_credits();
    late.sequence = 100_000_000;
    assert!(refusal(&late).contains("file"));
}

#[test]
fn each_setting_is_checked_by_name() {
    assert_eq!(settings().validate(), Ok(()));
    let cases: Vec<(Ib4bSettings, &str)> = vec![
        (
            Ib4bSettings {
                originating_account: "01-0242-0100194-000".into(),
                ..settings()
            },
            "originating_account",
        ),
        (
            Ib4bSettings {
                originating_account: "010242010019400".into(),
                ..settings()
            },
            "originating_account",
        ),
        (
            Ib4bSettings {
                originating_account: "0102420100195000".into(),
                ..settings()
            },
            "originating_account",
        ),
        (
            Ib4bSettings {
                originator_name: " ".into(),
                ..settings()
            },
            "originator_name",
        ),
        (
            Ib4bSettings {
                originator_name: "Payoutd Limited Partnership".into(),
                ..settings()
            },
            "originator_name",
        ),
        (
            Ib4bSettings {
                originator_name: "Payoutd, Ltd".into(),
                ..settings()
            },
            "originator_name",
        ),
        (
            Ib4bSettings {
                originator_name: "Payoutd Ltée".into(),
                ..settings()
            },
            "originator_name",
        ),
    ];
    for (s, setting) in cases {
        let e = Ib4bWriter::new(s.clone()).unwrap_err();
        assert_eq!(e.settings(), [setting], "{s:?}");
        assert!(!e.to_string().contains("0102420100"), "account data in {e}");
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
fn dishonours_of_the_writers_file_find_its_references() {
    let written = writer().write(&two_credits()).unwrap();
    let Ib4bFile::DirectCredit(original) = parse(&written.bytes).unwrap() else {
        panic!("not a direct credit file");
    };
    let decisions = [
        DishonourDecision {
            your_reference: written.references[1].clone(),
            reason: DishonourReason::AccountClosed,
        },
        DishonourDecision {
            your_reference: written.references[0].clone(),
            reason: DishonourReason::PaymentRefused,
        },
    ];
    let answer = write_dishonour_file(
        &original,
        &decisions,
        NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
    )
    .unwrap();
    let outcome = Ib4bReader.read("dishonours.csv", &answer).unwrap();
    assert_eq!(
        outcome,
        ReadOutcome::Report(BankReport {
            file: None,
            items: vec![
                returned(&written.references[1], "01", "Account closed", true, 500),
                returned(
                    &written.references[0],
                    "05",
                    "Payment refused by account holder",
                    false,
                    12_345
                ),
            ],
        })
    );
    // A report that nothing came back.
    let none = write_dishonour_file(
        &original,
        &[],
        NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
    )
    .unwrap();
    assert_eq!(
        Ib4bReader.read("none.csv", &none).unwrap(),
        ReadOutcome::Report(BankReport::default())
    );
}

#[test]
fn other_files_are_not_mine_and_broken_dishonour_files_are_unreadable() {
    let nacha =
        "101 091000019 1234567891611251207A094101FEDERAL RESERVE BANK   PAYOUTD PROVIDER       \n";
    let pain = r#"<?xml version="1.0" encoding="UTF-8"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.09"></Document>"#;
    let own = writer().write(&two_credits()).unwrap().bytes;
    for bytes in [nacha.as_bytes(), pain.as_bytes(), &own, b"", b"1,"] {
        assert_eq!(
            Ib4bReader.read("inbound", bytes).unwrap(),
            ReadOutcome::NotMine,
            "{:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    let broken = "1,DISHONOUR,0102420100194000,261127,261130\r\n\
        2,0865231954512001,50,500,Grace Hopper,PAYOUTS,9C5B94B135AD,01,Account closed\r\n\
        3,501,1,65231954512\r\n";
    let ReadOutcome::Unreadable(reason) = Ib4bReader.read("inbound", broken.as_bytes()).unwrap()
    else {
        panic!("read a broken file");
    };
    assert!(reason.contains("total amount"), "{reason}");
    assert!(!reason.contains("0865"), "account data in {reason}");
}

#[test]
fn the_rail_constants() {
    assert_eq!(ib4b::EXTENSION, "csv");
    assert_eq!(
        ib4b::SETTLEMENT,
        domain::rail::file_rail::Settlement::OnEffectiveDate
    );
    assert_eq!(
        ib4b::NUMBERING,
        domain::rail::file_rail::FileNumbering::Overall
    );
    assert_eq!(
        ib4b::reference(&PayoutId::from_uuid(Uuid::parse_str(GRACE).unwrap())),
        "9C5B94B135AD"
    );
}

/// A payout id whose first 12 hex digits (the IB4B reference) hold `n`.
fn numbered(n: u128) -> String {
    Uuid::from_u128(0x1000_0000_0000_4000_8000_0000_0000_0000 + (n << 80)).to_string()
}

#[test]
fn the_limits_are_the_control_records_count_and_total_fields() {
    assert_eq!(ib4b::LIMITS.max_items, 999_999, "six digits of count");
    assert_eq!(
        ib4b::LIMITS.max_items.to_string().len(),
        bank_formats::ib4b::COUNT_DIGITS
    );
    assert_eq!(
        ib4b::LIMITS.max_total.unwrap().to_string().len(),
        bank_formats::ib4b::TOTAL_DIGITS
    );
    assert_eq!(ib4b::LIMITS.max_total, Some(99_999_999_999));
    assert_eq!(
        adapters_rails::unit(PayoutMethod::DirectCredit).limits,
        ib4b::LIMITS
    );
    let ids = |n: u128| (0..n).map(|k| (PayoutId::from_uuid(Uuid::from_u128(k + 1)), 1));
    assert_eq!(ib4b::LIMITS.split(ids(999_999)).unwrap().len(), 1);
    assert_eq!(
        ib4b::LIMITS.split(ids(1_000_000)).unwrap(),
        vec![0..999_999, 999_999..1_000_000]
    );
}

#[test]
fn credits_totalling_the_eleven_digit_total_make_one_file_and_one_cent_more_two() {
    let writer = Ib4bWriter::new(settings()).unwrap();
    // Ten credits of the largest amount and one of 9 cents: 99,999,999,999 cents.
    let ids: Vec<String> = (0..11).map(numbered).collect();
    let mut at_limit: Vec<CreditInstruction> = ids
        .iter()
        .map(|id| {
            instruction(
                id,
                ib4b::MAX_AMOUNT,
                "Ada Lovelace",
                "0109020068389000",
                "Pay",
            )
        })
        .collect();
    at_limit[10].amount = MinorUnits::new(9).unwrap();
    let plan = |instructions: &[CreditInstruction]| {
        ib4b::LIMITS
            .split(instructions.iter().map(|i| (i.payout_id, i.amount.get())))
            .unwrap()
    };
    assert_eq!(plan(&at_limit), [0..11]);
    let written = writer
        .write(&request(Asset::Nzd, at_limit.clone()))
        .unwrap();
    bank_format_oracles::ib4b::check(&written.bytes).unwrap();

    let mut one_over = at_limit;
    one_over[10].amount = MinorUnits::new(10).unwrap();
    assert!(
        writer
            .write(&request(Asset::Nzd, one_over.clone()))
            .is_err()
    );
    let parts = plan(&one_over);
    assert_eq!(parts, vec![0..10, 10..11]);
    for (n, range) in parts.into_iter().enumerate() {
        let mut part = request(Asset::Nzd, one_over[range].to_vec());
        part.part = u32::try_from(n + 1).unwrap();
        part.sequence = 7 + part.part;
        let written = writer.write(&part).unwrap();
        bank_format_oracles::ib4b::check(&written.bytes).unwrap();
        let text = String::from_utf8(written.bytes).unwrap();
        assert!(text.contains(&format!("FILE{}", part.sequence)), "{text}");
    }
}
