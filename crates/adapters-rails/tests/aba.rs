//! The `aud/direct-entry` rail: the ABA writer from credit instructions to a file parsed back
//! field by field, its refusals and settings, and the reader of the bank's return files
//! (written by `bank_formats::aba`'s bank side from the writer's own file).
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A split is a list of ranges: one file is a list of one range.
#![allow(clippy::single_range_in_vec_init)]

use adapters_rails::aba::{
    self, AbaReader, AbaSettings, AbaWriter, lodgement_reference, looks_like_aba,
};
use bank_formats::aba::{DetailKind, Indicator, ReturnCode, TransactionCode, parse};
use bank_simulator::aba::{ReturnDecision, write_return_file};
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

fn settings(self_balancing: bool) -> AbaSettings {
    AbaSettings {
        bank_mnemonic: "CBA".into(),
        user_name: "PAYOUTD PTY LTD".into(),
        apca_user_id: "301500".into(),
        description: "PAYOUTS".into(),
        remitter_name: "PAYOUTD".into(),
        trace_bsb: "062000".into(),
        trace_account: "10203040".into(),
        self_balancing,
    }
}

fn payout_id(n: u128) -> PayoutId {
    // n in the first hex digits, so that each payout has its own lodgement reference.
    PayoutId::from_uuid(Uuid::from_u128(
        0x5A1F_3C9E_2B7D_4F60_A1B2_C3D4_E5F6_0000 + (n << 112),
    ))
}

fn instruction(n: u128, amount: i64, bsb: &str, account: &str, name: &str) -> CreditInstruction {
    CreditInstruction {
        payout_id: payout_id(n),
        amount: MinorUnits::new(amount).unwrap(),
        payee_name: name.to_owned(),
        receiving_bank: Some(Secret::new(bsb.to_owned())),
        account: Secret::new(account.to_owned()),
        account_kind: None,
        remittance: format!("Invoice {n}"),
    }
}

fn request(asset: Asset, instructions: Vec<CreditInstruction>) -> FileRequest {
    FileRequest {
        batch_id: BatchId::from_uuid(Uuid::from_u128(0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0)),
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(5)),
        method: PayoutMethod::DirectEntry,
        asset,
        part: 1,
        created_at: Utc.with_ymd_and_hms(2026, 11, 25, 21, 7, 0).unwrap(),
        effective_date: NaiveDate::from_ymd_opt(2026, 11, 27).unwrap(),
        sequence: 3,
        instructions,
    }
}

fn aud_request() -> FileRequest {
    request(
        Asset::Aud,
        vec![
            instruction(1, 125_050, "082001", "12345", "Jane Citizen"),
            instruction(2, 99, "633000", "123456789", "Seán O’Brien & Co"),
            instruction(3, 1_000_000, "012003", "000123", "Иван Petrov"),
        ],
    )
}

#[test]
fn a_file_from_instructions_parses_back_to_its_fields() {
    let writer = AbaWriter::new(settings(false)).unwrap();
    let written = writer.write(&aud_request()).unwrap();
    assert_eq!(written.extension, "aba");
    let text = std::str::from_utf8(&written.bytes).unwrap();
    assert!(text.split_terminator("\r\n").all(|r| r.len() == 120));
    let file = parse(&written.bytes).unwrap();

    let d = &file.descriptive;
    assert_eq!(d.reel_sequence, 1);
    assert_eq!(d.bank_mnemonic, "CBA");
    assert_eq!(d.user_name, "PAYOUTD PTY LTD");
    assert_eq!(d.apca_user_id, "301500");
    assert_eq!(d.description, "PAYOUTS");
    assert_eq!(
        d.processing_date,
        NaiveDate::from_ymd_opt(2026, 11, 27).unwrap()
    );
    // The effective date, DDMMYY, at positions 75-80.
    assert_eq!(&text[74..80], "271126");

    assert_eq!(file.details.len(), 3);
    let expected = [
        ("082001", "12345", 125_050, "JANE CITIZEN"),
        ("633000", "123456789", 99, "SEAN O'BRIEN AND CO"),
        ("012003", "000123", 1_000_000, "PETROV"),
    ];
    for (n, (detail, (bsb, account, amount, title))) in
        file.details.iter().zip(expected).enumerate()
    {
        assert_eq!(detail.bsb, bsb);
        assert_eq!(detail.account_number, account);
        assert_eq!(detail.transaction_code, TransactionCode::Credit);
        assert_eq!(detail.amount, amount);
        assert_eq!(detail.account_title, title);
        assert_eq!(detail.trace_bsb, "062000");
        assert_eq!(detail.trace_account, "10203040");
        assert_eq!(detail.remitter_name, "PAYOUTD");
        assert_eq!(
            detail.kind,
            DetailKind::Payment {
                indicator: Indicator::None,
                withholding_tax: 0
            }
        );
        assert_eq!(detail.lodgement_reference, written.references[n]);
    }
    // The references: the payout ids' first 18 hex digits.
    assert_eq!(
        written.references,
        [
            "5A203C9E2B7D4F60A1",
            "5A213C9E2B7D4F60A1",
            "5A223C9E2B7D4F60A1"
        ]
    );
    assert_eq!(written.references[0], lodgement_reference(&payout_id(1)));
    let total = file.total();
    assert_eq!(total.credit_total, 1_125_149);
    assert_eq!((total.debit_total, total.net_total), (0, 1_125_149));
    // Deterministic.
    assert_eq!(writer.write(&aud_request()).unwrap(), written);
}

#[test]
fn references_are_the_payout_ids_first_hex_digits() {
    let id = PayoutId::from_uuid(Uuid::parse_str("0f8e7d6c-5b4a-4398-8776-655443322110").unwrap());
    assert_eq!(lodgement_reference(&id), "0F8E7D6C5B4A439887");
    // Payout ids alike in their first 18 hex digits would share a reference: such a file is
    // refused (random v4 ids differ there but for a chance of about n^2 / 2^69).
    let a = instruction(1, 100, "082001", "12345", "A");
    let mut b = instruction(2, 100, "082001", "12345", "B");
    b.payout_id = PayoutId::from_uuid(Uuid::from_u128(a.payout_id.as_uuid().as_u128() + 1));
    let message = refusal(&request(Asset::Aud, vec![a.clone(), b.clone()]));
    assert!(
        message.contains("share the lodgement reference"),
        "{message}"
    );
    assert!(message.contains(&b.payout_id.to_string()), "{message}");
}

#[test]
fn a_self_balanced_file_ends_with_a_debit_of_the_trace_account() {
    let written = AbaWriter::new(settings(true))
        .unwrap()
        .write(&aud_request())
        .unwrap();
    assert_eq!(written.references.len(), 3, "one reference per payout");
    let file = parse(&written.bytes).unwrap();
    assert_eq!(file.details.len(), 4);
    let debit = &file.details[3];
    assert_eq!(debit.transaction_code, TransactionCode::Debit);
    assert_eq!(debit.bsb, "062000");
    assert_eq!(debit.account_number, "10203040");
    assert_eq!(debit.amount, 125_050 + 99 + 1_000_000);
    assert_eq!(debit.account_title, "PAYOUTD PTY LTD");
    assert_eq!(debit.lodgement_reference, "123456789ABCDEF012");
    let total = file.total();
    assert_eq!(
        (total.net_total, total.credit_total, total.debit_total),
        (0, 1_125_149, 1_125_149)
    );
    assert_eq!(total.record_count, 4);
}

fn refusal(request: &FileRequest) -> String {
    AbaWriter::new(settings(false))
        .unwrap()
        .write(request)
        .unwrap_err()
        .to_string()
}

#[test]
fn the_writer_refuses_what_an_aba_file_cannot_carry() {
    let mut usd = aud_request();
    usd.asset = Asset::Usd;
    assert!(refusal(&usd).contains("AUD, not USD"), "{}", refusal(&usd));

    let mut no_bank = instruction(7, 100, "082001", "12345", "Jane");
    no_bank.receiving_bank = None;
    let message = refusal(&request(Asset::Aud, vec![no_bank]));
    assert!(message.contains(&payout_id(7).to_string()), "{message}");
    assert!(message.contains("BSB"), "{message}");

    let cases = [
        (
            instruction(8, 10_000_000_000, "082001", "12345", "Jane"),
            "amount",
        ),
        (
            instruction(9, 100, "082001", "9876543210", "Jane"),
            "account number",
        ),
        (instruction(10, 100, "08200X", "12345", "Jane"), "BSB"),
        (
            instruction(11, 100, "082001", "12345", "Иван 山田"),
            "payee name",
        ),
    ];
    for (bad, field) in cases {
        let id = bad.payout_id;
        let message = refusal(&request(Asset::Aud, vec![bad]));
        assert!(message.contains(&id.to_string()), "{message}");
        assert!(message.contains(field), "{message}");
        // No account data in the message.
        for secret in ["9876543210", "08200X", "12345"] {
            assert!(!message.contains(secret), "{message}");
        }
    }

    // A self-balancing total wider than ten digits.
    let big = request(
        Asset::Aud,
        vec![
            instruction(12, 9_000_000_000, "082001", "12345", "A"),
            instruction(13, 9_000_000_000, "082001", "12345", "B"),
        ],
    );
    let message = AbaWriter::new(settings(true))
        .unwrap()
        .write(&big)
        .unwrap_err()
        .to_string();
    assert!(message.contains("credit total"), "{message}");
}

/// A change that breaks [`settings`].
type Change = fn(&mut AbaSettings);

#[test]
fn settings_are_checked_one_by_one() {
    assert_eq!(settings(true).validate(), Ok(()));
    let cases: [(&str, Change); 14] = [
        ("bank_mnemonic", |s| s.bank_mnemonic = "CB".into()),
        ("bank_mnemonic", |s| s.bank_mnemonic = "cba".into()),
        ("user_name", |s| s.user_name = " ".into()),
        ("user_name", |s| s.user_name = "A".repeat(27)),
        ("user_name", |s| s.user_name = "Payoutd".into()),
        ("apca_user_id", |s| s.apca_user_id = "30150".into()),
        ("apca_user_id", |s| s.apca_user_id = "30150A".into()),
        ("description", |s| {
            s.description = "PAYOUTS TO PAYEES".into()
        }),
        ("description", |s| s.description = "PAY & CO".into()),
        ("remitter_name", |s| s.remitter_name = String::new()),
        ("remitter_name", |s| s.remitter_name = "P".repeat(17)),
        ("trace_bsb", |s| s.trace_bsb = "062-000".into()),
        ("trace_account", |s| s.trace_account = "1234".into()),
        ("trace_account", |s| s.trace_account = "1234567890".into()),
    ];
    for (setting, change) in cases {
        let mut s = settings(false);
        change(&mut s);
        let error = s.validate().unwrap_err();
        assert_eq!(error.settings(), [setting], "{error}");
        assert!(AbaWriter::new(s).is_err());
    }
    // Account values are not repeated, nor shown by Debug.
    let shown = format!("{:?}", AbaWriter::new(settings(false)).unwrap());
    assert!(
        !shown.contains("10203040") && !shown.contains("062000"),
        "{shown}"
    );
    let mut s = settings(false);
    s.trace_account = "1234567890".into();
    assert!(!s.validate().unwrap_err().to_string().contains("1234567890"));
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
fn the_reader_reports_the_bank_returns_of_the_writers_file() {
    let written = AbaWriter::new(settings(true))
        .unwrap()
        .write(&aud_request())
        .unwrap();
    let original = parse(&written.bytes).unwrap();
    let decisions = [
        ReturnDecision {
            entry: 0,
            code: ReturnCode::AccountClosed,
        },
        ReturnDecision {
            entry: 1,
            code: ReturnCode::ReferToCustomer,
        },
        ReturnDecision {
            entry: 2,
            code: ReturnCode::NoAccount,
        },
    ];
    let day = NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
    let bytes = write_return_file(&original, &decisions, day).unwrap();
    let ReadOutcome::Report(report) = AbaReader.read("returns.aba", &bytes).unwrap() else {
        panic!("not a report");
    };
    assert_eq!(
        report,
        BankReport {
            file: None,
            items: vec![
                returned(&written.references[0], "3", "Account closed", true, 125_050),
                returned(&written.references[1], "6", "Refer to customer", false, 99),
                returned(
                    &written.references[2],
                    "5",
                    "No account or incorrect account number",
                    true,
                    1_000_000
                ),
            ],
        }
    );
}

#[test]
fn the_reader_leaves_other_files_alone() {
    let nacha = format!("101 011000015 1234567890261125{}\n", " ".repeat(64));
    assert_eq!(
        AbaReader.read("x.ach", nacha.as_bytes()).unwrap(),
        ReadOutcome::NotMine
    );
    let pain = br#"<?xml version="1.0" encoding="UTF-8"?><Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.09"/>"#;
    assert_eq!(AbaReader.read("x.xml", pain).unwrap(), ReadOutcome::NotMine);
    assert_eq!(AbaReader.read("empty", b"").unwrap(), ReadOutcome::NotMine);
    // The writer's own originated file, whole or damaged, is not a return file.
    let written = AbaWriter::new(settings(false))
        .unwrap()
        .write(&aud_request())
        .unwrap();
    assert!(looks_like_aba(&written.bytes));
    assert_eq!(
        AbaReader.read("out.aba", &written.bytes).unwrap(),
        ReadOutcome::NotMine
    );
    let mut damaged = written.bytes.clone();
    damaged.truncate(200);
    assert_eq!(
        AbaReader.read("out.aba", &damaged).unwrap(),
        ReadOutcome::NotMine
    );
}

#[test]
fn a_broken_return_file_is_unreadable() {
    let written = AbaWriter::new(settings(false))
        .unwrap()
        .write(&aud_request())
        .unwrap();
    let original = parse(&written.bytes).unwrap();
    let day = NaiveDate::from_ymd_opt(2026, 12, 1).unwrap();
    let decisions = [ReturnDecision {
        entry: 0,
        code: ReturnCode::InvalidBsb,
    }];
    let mut bytes = write_return_file(&original, &decisions, day).unwrap();
    // The credit total of the total record (line 3, positions 31-40) off by one cent.
    let at = 2 * 122 + 39;
    bytes[at] = if bytes[at] == b'9' {
        b'8'
    } else {
        bytes[at] + 1
    };
    match AbaReader.read("returns.aba", &bytes).unwrap() {
        ReadOutcome::Unreadable(reason) => {
            assert!(reason.contains("file credit total amount"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn rail_constants() {
    assert_eq!(aba::NUMBERING, FileNumbering::Overall);
    assert_eq!(aba::SETTLEMENT, Settlement::OnEffectiveDate);
    assert_eq!(aba::EXTENSION, "aba");
}

/// Plans `instructions` into parts by the rail's [`aba::LIMITS`] and writes each part.
fn write_parts(writer: &AbaWriter, instructions: Vec<CreditInstruction>) -> Vec<Vec<u8>> {
    let parts = aba::LIMITS
        .split(instructions.iter().map(|i| (i.payout_id, i.amount.get())))
        .unwrap();
    parts
        .into_iter()
        .enumerate()
        .map(|(n, range)| {
            let mut part = request(Asset::Aud, instructions[range].to_vec());
            part.part = u32::try_from(n + 1).unwrap();
            writer.write(&part).unwrap().bytes
        })
        .collect()
}

#[test]
fn the_limits_are_the_file_total_records_fields() {
    assert_eq!(aba::LIMITS.max_total, Some(9_999_999_999));
    assert_eq!(
        u64::try_from(aba::LIMITS.max_total.unwrap()).unwrap(),
        bank_formats::aba::MAX_AMOUNT
    );
    // One record of the six-digit count is kept for the self-balancing debit.
    assert_eq!(
        u64::try_from(aba::LIMITS.max_items).unwrap() + 1,
        bank_formats::aba::MAX_RECORDS
    );
    assert_eq!(
        adapters_rails::unit(PayoutMethod::DirectEntry).limits,
        aba::LIMITS
    );
}

#[test]
fn credits_totalling_the_ten_digit_total_make_one_file_and_one_cent_more_two() {
    for self_balancing in [false, true] {
        let writer = AbaWriter::new(settings(self_balancing)).unwrap();
        let at_limit = vec![
            instruction(1, 5_000_000_000, "082001", "12345", "Jane Citizen"),
            instruction(2, 4_999_999_999, "633000", "123456789", "John Citizen"),
        ];
        let files = write_parts(&writer, at_limit.clone());
        assert_eq!(files.len(), 1, "{self_balancing}");
        bank_format_oracles::aba::check(&files[0], bank_format_oracles::aba::Kind::Originated)
            .unwrap();
        assert_eq!(
            parse(&files[0]).unwrap().details.len(),
            2 + usize::from(self_balancing)
        );

        let mut one_over = at_limit;
        one_over[1].amount = MinorUnits::new(5_000_000_000).unwrap();
        // One file cannot carry it...
        assert!(
            writer
                .write(&request(Asset::Aud, one_over.clone()))
                .is_err()
        );
        // ...two can, each valid, each payout in one of them.
        let files = write_parts(&writer, one_over);
        assert_eq!(files.len(), 2);
        for file in &files {
            bank_format_oracles::aba::check(file, bank_format_oracles::aba::Kind::Originated)
                .unwrap();
            let credits = parse(file)
                .unwrap()
                .details
                .iter()
                .filter(|d| d.transaction_code == TransactionCode::Credit)
                .count();
            assert_eq!(credits, 1);
        }
    }
}

#[test]
fn the_record_count_splits_at_999_998_credits() {
    let ids = |n: u128| (0..n).map(|k| (PayoutId::from_uuid(Uuid::from_u128(k + 1)), 1));
    assert_eq!(aba::LIMITS.split(ids(999_998)).unwrap().len(), 1);
    assert_eq!(
        aba::LIMITS.split(ids(999_999)).unwrap(),
        vec![0..999_998, 999_998..999_999]
    );
}
