//! `cad/eft`: the Standard 005 writer end to end (request → bytes → parse), its refusals and
//! settings, and the reader on the bank's returned items written by `bank_formats`' bank side
//! from the writer's own file.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A split is a list of ranges: one file is a list of one range.
#![allow(clippy::single_range_in_vec_init)]

use bank_format_oracles::cpa005 as checker;

use adapters_rails::cpa005::{
    self, Cpa005Reader, Cpa005Settings, Cpa005Writer, RecordEnd, file_creation_number, reference,
};
use bank_formats::cpa005::{RecordType, ReturnCode, WriteOptions, parse};
use bank_simulator::cpa005::{ReturnDecision, ReturnFileOptions, write_return_file};
use chrono::{NaiveDate, TimeZone, Utc};
use domain::account::PayoutMethod;
use domain::ids::{BatchId, PayoutId, SubaccountId};
use domain::masking::Secret;
use domain::money::{Asset, MinorUnits};
use domain::rail::file_rail::{FileNumbering, Settlement};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest};
use domain::rail::report::{
    BankFileReader, BankReport, ItemOutcome, ItemReport, ReadOutcome, ReturnReason,
};
use uuid::Uuid;

fn settings() -> Cpa005Settings {
    Cpa005Settings {
        originator_id: "PAYOUTD001".into(),
        data_centre: "00310".into(),
        originator_short_name: "PAYOUTD".into(),
        originator_long_name: "PAYOUTD PAYMENTS INC.".into(),
        direct_clearer_user_id: None,
        return_institution: "000312345".into(),
        return_account: "7654321".into(),
        transaction_code: 450,
        line_ending: RecordEnd::CrLf,
    }
}

fn writer() -> Cpa005Writer {
    Cpa005Writer::new(settings()).unwrap()
}

/// A v4-looking payout id (version digit 4, variant digit 8) whose first eight hex digits are
/// `01234567 + n`.
fn payout(n: u128) -> PayoutId {
    PayoutId::from_uuid(Uuid::from_u128(
        0x0123_4567_89AB_4DEF_8123_4567_89AB_CDEF + (n << 96),
    ))
}

fn instruction(n: u128, amount: i64, bank: &str, account: &str) -> CreditInstruction {
    CreditInstruction {
        payout_id: payout(n),
        amount: MinorUnits::new(amount).unwrap(),
        payee_name: format!("Élise Côté {n}"),
        receiving_bank: Some(Secret::new(bank.to_owned())),
        account: Secret::new(account.to_owned()),
        account_kind: None,
        remittance: format!("Invoice {n}"),
    }
}

fn request(asset: Asset, sequence: u32, instructions: Vec<CreditInstruction>) -> FileRequest {
    FileRequest {
        batch_id: BatchId::from_uuid(Uuid::from_u128(0x1234_5678_9ABC_4EF0_9234_5678_9ABC_DEF0)),
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(5)),
        method: PayoutMethod::Eft,
        asset,
        part: 1,
        created_at: Utc.with_ymd_and_hms(2026, 11, 25, 21, 7, 0).unwrap(),
        effective_date: NaiveDate::from_ymd_opt(2026, 11, 27).unwrap(),
        sequence,
        instructions,
    }
}

fn eft_request(sequence: u32) -> FileRequest {
    request(
        Asset::Cad,
        sequence,
        (1..=8)
            .map(|n| instruction(n, 1000 * i64::try_from(n).unwrap(), "000300002", "1234567"))
            .collect(),
    )
}

#[test]
fn the_constants_say_how_the_rail_works() {
    assert_eq!(cpa005::NUMBERING, FileNumbering::Overall);
    assert_eq!(cpa005::SETTLEMENT, Settlement::OnEffectiveDate);
    assert_eq!(cpa005::EXTENSION, "cpa");
}

#[test]
fn a_request_becomes_a_standard_005_file() {
    let request = eft_request(42);
    let written = writer().write(&request).unwrap();
    assert_eq!(written.extension, "cpa");
    // Deterministic.
    assert_eq!(writer().write(&request).unwrap(), written);

    let file = parse(&written.bytes).unwrap();
    assert_eq!(file.header.originator_id, "PAYOUTD001");
    assert_eq!(file.header.file_creation_number, 42);
    assert_eq!(
        file.header.creation_date,
        NaiveDate::from_ymd_opt(2026, 11, 25).unwrap()
    );
    assert_eq!(file.header.destination_data_centre, "00310");
    assert_eq!(file.header.currency, "CAD");
    assert_eq!(file.transactions.len(), 8);
    assert_eq!(written.references.len(), 8);
    for (n, (t, reference)) in file
        .transactions
        .iter()
        .zip(&written.references)
        .enumerate()
    {
        let n = n + 1;
        assert_eq!(t.record_type, RecordType::Credit);
        assert_eq!(t.transaction_type, 450);
        assert_eq!(t.amount, 1000 * u64::try_from(n).unwrap());
        assert_eq!(t.due_date, request.effective_date);
        assert_eq!(t.institution_id, "000300002");
        assert_eq!(t.account_number, "1234567");
        assert_eq!(t.item_trace_number, "0".repeat(22));
        assert_eq!(t.payee_name, format!("ELISE COTE {n}"));
        assert_eq!(t.originator_short_name, "PAYOUTD");
        assert_eq!(t.originator_long_name, "PAYOUTD PAYMENTS INC.");
        assert_eq!(t.direct_clearer_user_id, "PAYOUTD001");
        assert_eq!(t.return_institution_id, "000312345");
        assert_eq!(t.return_account_number, "7654321");
        assert_eq!(t.sundry_information, format!("INVOICE {n}"));
        assert_eq!(&t.cross_reference, reference);
        assert_eq!(reference.len(), 19);
    }
    // Eight credits: one record of six segments and one of two; CRLF after every record.
    let text = String::from_utf8(written.bytes).unwrap();
    assert_eq!(text.split_terminator("\r\n").count(), 4);
    assert!(text.ends_with("\r\n"));
}

#[test]
fn the_written_file_and_its_returns_pass_the_layout_checker() {
    let written = writer().write(&eft_request(9)).unwrap();
    let summary = checker::check(&written.bytes, b"\r\n").unwrap();
    assert_eq!(summary.credit_count, 8);
    // 1000 + 2000 + ... + 8000 cents.
    assert_eq!(summary.credit_value, 36_000);
    let references: Vec<String> = summary.items.iter().map(|(_, r)| r.clone()).collect();
    assert_eq!(references, written.references);
    let returns = returns_of(&written.bytes, &[(2, 905)]);
    let summary = checker::check(&returns, b"\r\n").unwrap();
    assert_eq!(summary.items, vec![('I', written.references[2].clone())]);
}

#[test]
fn references_leave_out_the_uuid_version_and_variant_digits() {
    // 01234568-89AB-4DEF-8123-456789ABCDEF: version digit 4 and variant digit 8 left out.
    assert_eq!(reference(payout(1)), "0123456889ABDEF1234");
    assert_eq!(reference(payout(2)), "0123456989ABDEF1234");
    let random = PayoutId::from_uuid(Uuid::new_v4());
    assert_eq!(reference(random).len(), 19);
}

#[test]
fn a_payout_twice_in_one_file_is_refused() {
    let twice = vec![
        instruction(1, 100, "000300002", "1234567"),
        instruction(1, 200, "000300002", "1234567"),
    ];
    let why = refusal(&request(Asset::Cad, 1, twice));
    assert!(why.contains("same reference"), "{why}");
}

#[test]
fn file_creation_numbers_wrap_after_9999() {
    assert_eq!(file_creation_number(0), None);
    assert_eq!(file_creation_number(1), Some(1));
    assert_eq!(file_creation_number(9999), Some(9999));
    assert_eq!(file_creation_number(10_000), Some(1));
    assert_eq!(file_creation_number(20_000), Some(2));
    let file = parse(&writer().write(&eft_request(10_001)).unwrap().bytes).unwrap();
    assert_eq!(file.header.file_creation_number, 2);
}

#[test]
fn the_direct_clearer_user_id_and_line_ending_come_from_the_settings() {
    let writer = Cpa005Writer::new(Cpa005Settings {
        direct_clearer_user_id: Some("CLEARER01".into()),
        line_ending: RecordEnd::Lf,
        ..settings()
    })
    .unwrap();
    let written = writer.write(&eft_request(1)).unwrap();
    assert!(!written.bytes.contains(&b'\r'));
    let file = parse(&written.bytes).unwrap();
    assert_eq!(file.transactions[0].direct_clearer_user_id, "CLEARER01");
}

fn refusal(request: &FileRequest) -> String {
    match writer().write(request) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("written"),
    }
}

#[test]
fn the_writer_refuses_what_standard_005_cannot_carry() {
    let why = refusal(&request(
        Asset::Usd,
        1,
        vec![instruction(1, 100, "000300002", "1234567")],
    ));
    assert!(why.contains("CAD"), "{why}");

    let mut missing = instruction(1, 100, "000300002", "1234567");
    missing.receiving_bank = None;
    let why = refusal(&request(Asset::Cad, 1, vec![missing]));
    assert!(why.contains(&payout(1).to_string()), "{why}");
    assert!(why.contains("institution"), "{why}");

    // An account longer than twelve digits: the payout and the field are named, not the value.
    let why = refusal(&request(
        Asset::Cad,
        1,
        vec![instruction(2, 100, "000300002", "9876543210987")],
    ));
    assert!(why.contains(&payout(2).to_string()), "{why}");
    assert!(why.contains("account number"), "{why}");
    assert!(!why.contains("9876543210987"), "{why}");

    let why = refusal(&request(
        Asset::Cad,
        1,
        vec![instruction(3, 100, "12345-003", "1234567")],
    ));
    assert!(why.contains("institutional identification number"), "{why}");
    assert!(!why.contains("12345-003"), "{why}");

    let mut cjk = instruction(4, 100, "000300002", "1234567");
    cjk.payee_name = "山田太郎".into();
    let why = refusal(&request(Asset::Cad, 1, vec![cjk]));
    assert!(why.contains("payee name is required"), "{why}");

    // The largest amount fits; one cent more does not.
    let big = instruction(5, 9_999_999_999, "000300002", "1234567");
    assert!(writer().write(&request(Asset::Cad, 1, vec![big])).is_ok());

    assert!(refusal(&eft_request(0)).contains("file number 0"));
}

#[test]
fn settings_are_checked_one_by_one() {
    let wrong = |change: fn(&mut Cpa005Settings), setting: &str| {
        let mut s = settings();
        change(&mut s);
        let error = s.validate().unwrap_err();
        assert_eq!(error.settings(), [setting], "{error}");
        assert!(Cpa005Writer::new(s).is_err());
    };
    assert!(settings().validate().is_ok());
    wrong(|s| s.originator_id = String::new(), "originator_id");
    wrong(|s| s.originator_id = "PAYOUTD0001".into(), "originator_id");
    wrong(|s| s.originator_id = "payoutd".into(), "originator_id");
    wrong(|s| s.data_centre = "310".into(), "data_centre");
    wrong(|s| s.data_centre = "0031A".into(), "data_centre");
    wrong(
        |s| s.originator_short_name = " ".into(),
        "originator_short_name",
    );
    wrong(
        |s| s.originator_short_name = "PAYOUTD PAYMENTS".into(),
        "originator_short_name",
    );
    wrong(
        |s| s.originator_short_name = "O'PAY".into(),
        "originator_short_name",
    );
    wrong(
        |s| s.originator_long_name = "PAYOUTD & CO".into(),
        "originator_long_name",
    );
    wrong(
        |s| s.originator_long_name = "PAYOUTD PAYMENTS INCORPORATED CA".into(),
        "originator_long_name",
    );
    wrong(
        |s| s.direct_clearer_user_id = Some(String::new()),
        "direct_clearer_user_id",
    );
    wrong(
        |s| s.return_institution = "12345-003".into(),
        "return_institution",
    );
    wrong(
        |s| s.return_institution = "099912345".into(),
        "return_institution",
    );
    wrong(
        |s| s.return_institution = "00031234".into(),
        "return_institution",
    );
    wrong(
        |s| s.return_account = "1234567890123".into(),
        "return_account",
    );
    wrong(|s| s.return_account = "12-345".into(), "return_account");
    wrong(|s| s.transaction_code = 0, "transaction_code");
    wrong(|s| s.transaction_code = 1000, "transaction_code");
}

// --- The reader. ---

fn returns_of(written: &[u8], decisions: &[(usize, u16)]) -> Vec<u8> {
    let original = parse(written).unwrap();
    let decisions: Vec<_> = decisions
        .iter()
        .map(|&(item, code)| ReturnDecision {
            item,
            reason: ReturnCode::new(code).unwrap(),
        })
        .collect();
    write_return_file(
        &original,
        &decisions,
        &ReturnFileOptions {
            creation_date: NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
            file_creation_number: 17,
            trace_prefix: "000300002".into(),
            write: WriteOptions::default(),
        },
    )
    .unwrap()
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
fn returned_items_name_the_writers_references() {
    let written = writer().write(&eft_request(3)).unwrap();
    let bytes = returns_of(&written.bytes, &[(6, 912), (0, 905), (3, 911), (7, 999)]);
    let ReadOutcome::Report(report) = Cpa005Reader.read("returns.cpa", &bytes).unwrap() else {
        panic!("not a report");
    };
    let r = &written.references;
    assert_eq!(
        report,
        BankReport {
            file: None,
            items: vec![
                returned(&r[0], "905", "Account closed", true, 1000),
                returned(&r[3], "911", "Account frozen", false, 4000),
                returned(&r[6], "912", "Invalid/incorrect account number", true, 7000),
                returned(&r[7], "999", "return reason 999", false, 8000),
            ],
        }
    );
}

#[test]
fn an_empty_file_of_returns_reports_nothing() {
    let written = writer().write(&eft_request(3)).unwrap();
    let bytes = returns_of(&written.bytes, &[]);
    assert_eq!(
        Cpa005Reader.read("returns.cpa", &bytes).unwrap(),
        ReadOutcome::Report(BankReport::default())
    );
}

#[test]
fn other_files_and_origination_files_are_not_the_readers() {
    let written = writer().write(&eft_request(3)).unwrap();
    assert_eq!(
        Cpa005Reader.read("ours.cpa", &written.bytes).unwrap(),
        ReadOutcome::NotMine
    );
    let nacha = format!(
        "101 011000015 1234567892611251807A094101FEDERAL RESERVE BANK   PAYOUTD PROVIDER       \n{}",
        "9".repeat(94)
    );
    assert_eq!(
        Cpa005Reader.read("r.ach", nacha.as_bytes()).unwrap(),
        ReadOutcome::NotMine
    );
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.09"/>"#;
    assert_eq!(
        Cpa005Reader.read("r.xml", xml).unwrap(),
        ReadOutcome::NotMine
    );
    assert_eq!(
        Cpa005Reader.read("empty", b"").unwrap(),
        ReadOutcome::NotMine
    );
}

#[test]
fn broken_files_of_returns_are_unreadable() {
    let written = writer().write(&eft_request(3)).unwrap();
    let mut bytes = returns_of(&written.bytes, &[(1, 905)]);
    bytes.truncate(1466 * 2);
    let ReadOutcome::Unreadable(why) = Cpa005Reader.read("r.cpa", &bytes).unwrap() else {
        panic!("a truncated file is read");
    };
    assert!(why.contains("Standard 005"), "{why}");
    // No account number in the reason.
    assert!(!why.contains("1234567"), "{why}");
}

#[test]
fn the_limits_are_the_trailers_count_and_value_fields() {
    assert_eq!(
        cpa005::LIMITS.max_items,
        99_999_999,
        "eight digits of credit count"
    );
    assert_eq!(
        cpa005::LIMITS.max_total,
        Some(99_999_999_999_999),
        "fourteen digits of credit value"
    );
    assert_eq!(
        adapters_rails::unit(PayoutMethod::Eft).limits,
        cpa005::LIMITS
    );
    let ids = |n: usize| (0..n).map(|k| (payout(k as u128), 1));
    assert_eq!(cpa005::LIMITS.split(ids(3)).unwrap().len(), 1);
}

#[test]
fn credits_totalling_the_fourteen_digit_value_make_one_file_and_one_cent_more_two() {
    // 10,000 credits of the largest amount and one of 9,999 cents: 99,999,999,999,999 cents.
    let mut at_limit: Vec<CreditInstruction> = (0..10_000)
        .map(|n| instruction(n, 9_999_999_999, "000300002", "1234567"))
        .collect();
    at_limit.push(instruction(10_000, 9_999, "000300002", "1234567"));
    let plan = |instructions: &[CreditInstruction]| {
        cpa005::LIMITS
            .split(instructions.iter().map(|i| (i.payout_id, i.amount.get())))
            .unwrap()
    };
    assert_eq!(plan(&at_limit), [0..10_001]);
    let written = writer()
        .write(&request(Asset::Cad, 1, at_limit.clone()))
        .unwrap();
    let summary = checker::check(&written.bytes, b"\r\n").unwrap();
    assert_eq!(summary.credit_count, 10_001);
    assert_eq!(summary.credit_value, 99_999_999_999_999);

    let mut one_over = at_limit;
    one_over[10_000].amount = MinorUnits::new(10_000).unwrap();
    assert!(
        writer()
            .write(&request(Asset::Cad, 1, one_over.clone()))
            .is_err(),
        "one file cannot carry it"
    );
    let parts = plan(&one_over);
    assert_eq!(parts, vec![0..10_000, 10_000..10_001]);
    // Each part is its own file with the next file creation number, valid on its own.
    let mut seen = 0;
    for (n, range) in parts.into_iter().enumerate() {
        let sequence = u32::try_from(n).unwrap() + 9_999;
        let mut part = request(Asset::Cad, sequence, one_over[range].to_vec());
        part.part = u32::try_from(n + 1).unwrap();
        let written = writer().write(&part).unwrap();
        let summary = checker::check(&written.bytes, b"\r\n").unwrap();
        seen += summary.credit_count;
        let file = parse(&written.bytes).unwrap();
        assert_eq!(
            file.header.file_creation_number,
            file_creation_number(sequence).unwrap()
        );
    }
    assert_eq!(seen, 10_001);
}
