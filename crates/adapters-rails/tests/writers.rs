//! The rails' writers, end to end: a batch's credit instructions become a NACHA file checked
//! field by field at its NACHA positions and parsed back with the project's parser, and a
//! pain.001.001.09 file validated against the official ISO 20022 XSD by libxml2's `xmllint`
//! (`cargo xtask test` provides it and the XSD: `PAYOUTD_XMLLINT`, `PAYOUTD_PAIN001_XSD`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
// A split is a list of ranges: one file is a list of one range.
#![allow(clippy::single_range_in_vec_init)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use adapters_rails::nacha::{self, EntryClass, NachaReader, NachaSettings, NachaWriter};
use adapters_rails::sepa::{SepaSettings, SepaWriter};
use bank_formats::nacha::{Addenda, LineEnding, SecCode, ServiceClass, TransactionCode};
use chrono::{NaiveDate, TimeZone, Utc};
use domain::account::PayoutMethod;
use domain::account::us::AccountType;
use domain::ids::{BatchId, PayoutId, SubaccountId};
use domain::masking::Secret;
use domain::money::{Asset, MinorUnits};
use domain::rail::instruction::{BankFileWriter, CreditInstruction, FileRequest};
use domain::rail::report::{BankFileReader, ReadOutcome};
use uuid::Uuid;

fn nacha_settings() -> NachaSettings {
    NachaSettings {
        immediate_destination: "011000015".into(),
        immediate_destination_name: "FEDERAL RESERVE BANK".into(),
        immediate_origin: "1234567890".into(),
        immediate_origin_name: "PAYOUTD PROVIDER".into(),
        company_name: "PAYOUTD".into(),
        company_id: "1234567890".into(),
        odfi_routing: "09100001".into(),
        entry_description: "PAYOUT".into(),
        entry_class: EntryClass::Ppd,
        line_ending: LineEnding::Lf,
    }
}

fn instruction(
    n: u128,
    amount: i64,
    bank: &str,
    account: &str,
    kind: Option<AccountType>,
) -> CreditInstruction {
    CreditInstruction {
        payout_id: PayoutId::from_uuid(Uuid::from_u128(
            0xABCD_0000_0000_0000_0000_0000_0000_0000 + n,
        )),
        amount: MinorUnits::new(amount).unwrap(),
        payee_name: format!("Ada Lovelace {n}"),
        receiving_bank: Some(Secret::new(bank.to_owned())),
        account: Secret::new(account.to_owned()),
        account_kind: kind,
        remittance: format!("Invoice {n}"),
    }
}

fn request(
    method: PayoutMethod,
    asset: Asset,
    sequence: u32,
    instructions: Vec<CreditInstruction>,
) -> FileRequest {
    FileRequest {
        batch_id: BatchId::from_uuid(Uuid::from_u128(0x1234_5678_9ABC_DEF0_1234_5678_9ABC_DEF0)),
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(5)),
        method,
        asset,
        part: 1,
        created_at: Utc.with_ymd_and_hms(2026, 11, 25, 21, 7, 0).unwrap(),
        effective_date: NaiveDate::from_ymd_opt(2026, 11, 27).unwrap(),
        sequence,
        instructions,
    }
}

fn ach_request(sequence: u32) -> FileRequest {
    request(
        PayoutMethod::Ach,
        Asset::Usd,
        sequence,
        vec![
            instruction(
                1,
                125_050,
                "011000015",
                "123456789",
                Some(AccountType::Checking),
            ),
            instruction(
                2,
                99,
                "021000021",
                "000111222333",
                Some(AccountType::Savings),
            ),
            instruction(3, 1_000_000, "091000019", "55-66", None),
        ],
    )
}

#[test]
fn a_nacha_file_field_by_field() {
    let writer = NachaWriter::new(nacha_settings()).unwrap();
    let written = writer.write(&ach_request(2)).unwrap();
    assert_eq!(written.extension, "ach");
    // The file payoutd sends is not the bank's answer, should it reach the inbound directory.
    assert_eq!(
        NachaReader.read("sent.ach", &written.bytes).unwrap(),
        ReadOutcome::NotMine
    );
    let text = String::from_utf8(written.bytes.clone()).unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    // 1 header, 1 batch header, 3 entries with an addenda each, batch control, file control:
    // 10 records, exactly one block of ten, no padding needed.
    assert_eq!(lines.len(), 10);
    assert!(
        lines.iter().all(|l| l.len() == 94),
        "every record is 94 characters"
    );
    assert!(!text.ends_with('\n'));

    let h = lines[0];
    assert_eq!(&h[0..1], "1");
    assert_eq!(&h[1..3], "01", "priority code");
    assert_eq!(&h[3..13], " 011000015", "immediate destination");
    assert_eq!(&h[13..23], "1234567890", "immediate origin");
    assert_eq!(&h[23..29], "261125", "file creation date");
    assert_eq!(&h[29..33], "2107", "file creation time");
    assert_eq!(&h[33..34], "B", "file id modifier of the day's second file");
    assert_eq!(&h[34..37], "094");
    assert_eq!(&h[37..39], "10");
    assert_eq!(&h[39..40], "1");
    assert_eq!(&h[40..63], "FEDERAL RESERVE BANK   ");
    assert_eq!(&h[63..86], "PAYOUTD PROVIDER       ");
    assert_eq!(
        &h[86..94],
        "12345678",
        "reference code: the batch id's first digits"
    );

    let b = lines[1];
    assert_eq!(&b[0..4], "5220", "credits only");
    assert_eq!(&b[4..20], "PAYOUTD         ");
    assert_eq!(&b[20..40], "123456789ABCDEF01234", "the payoutd batch id");
    assert_eq!(&b[40..50], "1234567890");
    assert_eq!(&b[50..53], "PPD");
    assert_eq!(&b[53..63], "PAYOUT    ");
    assert_eq!(&b[69..75], "261127", "effective entry date");
    assert_eq!(&b[78..79], "1");
    assert_eq!(&b[79..87], "09100001");
    assert_eq!(&b[87..94], "0000001");

    let e = lines[2];
    assert_eq!(&e[0..1], "6");
    assert_eq!(&e[1..3], "22", "checking credit");
    assert_eq!(&e[3..12], "011000015", "receiving DFI and check digit");
    assert_eq!(&e[12..29], "123456789        ");
    assert_eq!(&e[29..39], "0000125050");
    assert_eq!(
        &e[39..54],
        "ABCD00000000000",
        "the payout id's first 15 digits"
    );
    assert_eq!(&e[54..76], "ADA LOVELACE 1        ");
    assert_eq!(&e[78..79], "1", "addenda follows");
    assert_eq!(
        &e[79..94],
        "091000010100001",
        "trace: ODFI, then file 2's first sequence"
    );
    let a = lines[3];
    assert_eq!(&a[0..3], "705");
    assert_eq!(a[3..83].trim_end(), "INVOICE 1");
    assert_eq!(&a[83..87], "0001");
    assert_eq!(&a[87..94], "0100001");
    assert_eq!(&lines[4][1..3], "32", "savings credit");
    assert_eq!(&lines[6][1..3], "22", "no account type: checking");

    let c = lines[8];
    assert_eq!(&c[0..4], "8220");
    assert_eq!(&c[4..10], "000006", "entries and addenda");
    // Entry hash: the receiving DFIs' first eight digits summed.
    let hash: u64 = 1_100_001 + 2_100_002 + 9_100_001;
    assert_eq!(&c[10..20], format!("{hash:010}"));
    assert_eq!(&c[20..32], "000000000000", "no debits");
    assert_eq!(&c[32..44], format!("{:012}", 125_050 + 99 + 1_000_000));
    assert_eq!(&c[44..54], "1234567890");
    assert_eq!(&c[79..87], "09100001");
    assert_eq!(&c[87..94], "0000001");

    let f = lines[9];
    assert_eq!(&f[0..1], "9");
    assert_eq!(&f[1..7], "000001", "batch count");
    assert_eq!(&f[7..13], "000001", "block count");
    assert_eq!(&f[13..21], "00000006");
    assert_eq!(&f[21..31], format!("{hash:010}"));
    assert_eq!(&f[43..55], format!("{:012}", 125_050 + 99 + 1_000_000));

    assert_eq!(
        written.references,
        vec!["091000010100001", "091000010100002", "091000010100003"]
    );

    // The project's parser reads it back, control totals checked.
    let parsed = bank_formats::nacha::parse(&written.bytes).unwrap();
    let batch = &parsed.batches[0];
    assert_eq!(parsed.header.file_id_modifier, 'B');
    assert_eq!(batch.header.service_class, ServiceClass::CreditsOnly);
    assert_eq!(batch.header.sec_code, SecCode::Ppd);
    assert_eq!(
        batch.header.effective_entry_date,
        NaiveDate::from_ymd_opt(2026, 11, 27)
    );
    let codes: Vec<_> = batch.entries.iter().map(|e| e.transaction_code).collect();
    assert_eq!(
        codes,
        vec![
            TransactionCode::CheckingCredit,
            TransactionCode::SavingsCredit,
            TransactionCode::CheckingCredit
        ]
    );
    assert_eq!(batch.entries[1].account_number, "000111222333");
    assert_eq!(batch.entries[1].amount, 99);
    assert!(
        matches!(&batch.entries[2].addenda[0], Addenda::PaymentRelated(p)
        if p.payment_related_information == "INVOICE 3")
    );
    let traces: Vec<_> = batch
        .entries
        .iter()
        .map(|e| e.trace_number.clone())
        .collect();
    assert_eq!(traces, written.references);
}

#[test]
fn a_longer_nacha_file_is_padded_with_nines_to_whole_blocks() {
    let writer = NachaWriter::new(nacha_settings()).unwrap();
    let instructions = (0..5)
        .map(|n| {
            instruction(
                n,
                100 + i64::try_from(n).unwrap(),
                "011000015",
                "1",
                Some(AccountType::Checking),
            )
        })
        .collect();
    let written = writer
        .write(&request(PayoutMethod::Ach, Asset::Usd, 1, instructions))
        .unwrap();
    let text = String::from_utf8(written.bytes.clone()).unwrap();
    let lines: Vec<&str> = text.split('\n').collect();
    // 2 + 5 × 2 + 2 = 14 records: 6 lines of nines make two blocks.
    assert_eq!(lines.len(), 20);
    assert!(lines[14..].iter().all(|l| *l == "9".repeat(94)));
    assert_eq!(&lines[13][7..13], "000002", "block count");
    assert_eq!(&lines[0][33..34], "A");
    assert_eq!(written.references[0], "091000010000001");
    bank_formats::nacha::parse(&written.bytes).unwrap();
}

#[test]
fn the_same_request_gives_the_same_bytes() {
    let writer = NachaWriter::new(nacha_settings()).unwrap();
    assert_eq!(
        writer.write(&ach_request(1)).unwrap(),
        writer.write(&ach_request(1)).unwrap()
    );
}

#[test]
fn file_id_modifiers_and_trace_sequences() {
    assert_eq!(nacha::file_id_modifier(1), Some('A'));
    assert_eq!(nacha::file_id_modifier(26), Some('Z'));
    assert_eq!(nacha::file_id_modifier(27), Some('0'));
    assert_eq!(nacha::file_id_modifier(36), Some('9'));
    assert_eq!(nacha::file_id_modifier(0), None);
    assert_eq!(nacha::file_id_modifier(37), None);
    assert_eq!(nacha::trace_sequence(1, 0), Some(1));
    assert_eq!(nacha::trace_sequence(36, 99_998), Some(3_599_999));
    assert_eq!(nacha::trace_sequence(1, 99_999), None);
    assert_eq!(nacha::trace_sequence(37, 0), None);
}

#[test]
fn what_nacha_cannot_carry_is_refused_without_account_data() {
    let writer = NachaWriter::new(nacha_settings()).unwrap();
    let message = |r: FileRequest| writer.write(&r).unwrap_err().to_string();

    assert!(
        message(request(
            PayoutMethod::Ach,
            Asset::Eur,
            1,
            ach_request(1).instructions
        ))
        .contains("USD")
    );
    assert!(message(ach_request(37)).contains("36 files a day"));
    let mut no_bank = ach_request(1);
    no_bank.instructions[1].receiving_bank = None;
    assert!(message(no_bank).contains("no routing number"));
    let mut bad_routing = ach_request(1);
    bad_routing.instructions[0].receiving_bank = Some(Secret::new("011000016".into()));
    let refused = message(bad_routing);
    assert!(!refused.contains("011000016"), "{refused}");
    let mut bad_account = ach_request(1);
    bad_account.instructions[0].account = Secret::new("12345678901234567890".into());
    let refused = message(bad_account);
    assert!(!refused.contains("12345678901234567890"), "{refused}");
    let mut empty = ach_request(1);
    empty.instructions.clear();
    message(empty);
}

#[test]
fn nacha_settings_are_checked_by_name() {
    let wrong = |change: fn(&mut NachaSettings)| {
        let mut s = nacha_settings();
        change(&mut s);
        let error = NachaWriter::new(s).unwrap_err();
        let [setting] = error.settings()[..] else {
            panic!("one problem: {error}")
        };
        setting
    };
    assert_eq!(
        wrong(|s| s.immediate_destination = "011000016".into()),
        "immediate_destination"
    );
    assert_eq!(
        wrong(|s| s.immediate_origin = "12345".into()),
        "immediate_origin"
    );
    assert_eq!(
        wrong(|s| s.company_name = "A COMPANY NAME TOO LONG".into()),
        "company_name"
    );
    assert_eq!(wrong(|s| s.company_id = String::new()), "company_id");
    assert_eq!(wrong(|s| s.odfi_routing = "0910000".into()), "odfi_routing");
    assert_eq!(
        wrong(|s| s.entry_description = "PAYOUT\u{e9}".into()),
        "entry_description"
    );
    assert_eq!(
        wrong(|s| s.immediate_origin_name = " ".into()),
        "immediate_origin_name"
    );
}

#[test]
fn ccd_batches_when_set() {
    let writer = NachaWriter::new(NachaSettings {
        entry_class: EntryClass::Ccd,
        line_ending: LineEnding::CrLf,
        ..nacha_settings()
    })
    .unwrap();
    let written = writer.write(&ach_request(1)).unwrap();
    let text = String::from_utf8(written.bytes.clone()).unwrap();
    assert_eq!(&text.split("\r\n").nth(1).unwrap()[50..53], "CCD");
    assert_eq!(
        bank_formats::nacha::parse(&written.bytes).unwrap().batches[0]
            .header
            .sec_code,
        SecCode::Ccd
    );
}

fn sepa_settings() -> SepaSettings {
    SepaSettings {
        initiating_party_name: "Payoutd Provider GmbH".into(),
        initiating_party_id: Some("DE98ZZZ09999999999".into()),
        debtor_name: "Payoutd Provider GmbH".into(),
        debtor_iban: "DE02 1203 0000 0000 2020 51".into(),
        debtor_bic: Some("bylademm".into()),
        batch_booking: true,
    }
}

fn sepa_request() -> FileRequest {
    let mut second = instruction(2, 50, "", "fr14 2004 1010 0505 0001 3m02 606", None);
    second.receiving_bank = None;
    second.payee_name = "Zoë Ärger & Söhne <GmbH>".into();
    request(
        PayoutMethod::Sepa,
        Asset::Eur,
        1,
        vec![
            instruction(1, 123_456, "deutdeff", "DE89 3704 0044 0532 0130 00", None),
            second,
        ],
    )
}

/// A path `cargo xtask test` provides.
fn provided(var: &str) -> PathBuf {
    let path = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        panic!("{var} is not set: run the tests with `cargo xtask test`, which installs xmllint and fetches the ISO 20022 XSDs")
    });
    assert!(path.is_file(), "{var}={} is not a file", path.display());
    path
}

fn xmllint(xml: &[u8]) -> Result<(), String> {
    let mut child = Command::new(provided("PAYOUTD_XMLLINT"))
        .args(["--noout", "--nonet", "--schema"])
        .arg(provided("PAYOUTD_PAIN001_XSD"))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("xmllint runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = xml.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn a_sepa_file_is_valid_against_the_iso_20022_xsd() {
    let writer = SepaWriter::new(sepa_settings()).unwrap();
    let written = writer.write(&sepa_request()).unwrap();
    assert_eq!(written.extension, "xml");
    if let Err(messages) = xmllint(&written.bytes) {
        panic!("{messages}\n{}", String::from_utf8_lossy(&written.bytes));
    }
    let xml = String::from_utf8(written.bytes.clone()).unwrap();
    for expected in [
        "<MsgId>123456789abcdef0123456789abcdef0</MsgId>",
        "<CreDtTm>2026-11-25T21:07:00Z</CreDtTm>",
        "<NbOfTxs>2</NbOfTxs>",
        "<CtrlSum>1235.06</CtrlSum>",
        "<PmtInfId>123456789abcdef0123456789abcdef0-1</PmtInfId>",
        "<Dt>2026-11-27</Dt>",
        "<IBAN>DE02120300000000202051</IBAN>",
        "<BICFI>BYLADEMM</BICFI>",
        "<EndToEndId>abcd0000000000000000000000000001</EndToEndId>",
        "<InstdAmt Ccy=\"EUR\">1234.56</InstdAmt>",
        "<BICFI>DEUTDEFF</BICFI>",
        "<IBAN>DE89370400440532013000</IBAN>",
        "<IBAN>FR1420041010050500013M02606</IBAN>",
        "<Ustrd>Invoice 1</Ustrd>",
    ] {
        assert!(xml.contains(expected), "{expected} missing from\n{xml}");
    }
    assert!(!xml.contains("<GmbH>"), "text is escaped");
    assert_eq!(
        written.references,
        vec![
            "abcd0000000000000000000000000001",
            "abcd0000000000000000000000000002"
        ]
    );
}

#[test]
fn a_sepa_file_without_debtor_bic_is_valid_too() {
    let writer = SepaWriter::new(SepaSettings {
        debtor_bic: None,
        initiating_party_id: None,
        batch_booking: false,
        ..sepa_settings()
    })
    .unwrap();
    let written = writer.write(&sepa_request()).unwrap();
    xmllint(&written.bytes).unwrap();
    assert!(
        String::from_utf8(written.bytes)
            .unwrap()
            .contains("NOTPROVIDED")
    );
}

#[test]
fn what_sepa_cannot_carry_is_refused_without_account_data() {
    let writer = SepaWriter::new(sepa_settings()).unwrap();
    let mut usd = sepa_request();
    usd.asset = Asset::Usd;
    assert!(writer.write(&usd).unwrap_err().to_string().contains("EUR"));
    let mut bad_iban = sepa_request();
    bad_iban.instructions[0].account = Secret::new("DE89370400440532013001".into());
    let refused = writer.write(&bad_iban).unwrap_err().to_string();
    assert!(refused.contains("IBAN"), "{refused}");
    assert!(!refused.contains("DE89370400440532013001"), "{refused}");
}

#[test]
fn sepa_settings_are_checked_by_name() {
    let wrong = |change: fn(&mut SepaSettings)| {
        let mut s = sepa_settings();
        change(&mut s);
        let error = SepaWriter::new(s).unwrap_err();
        let [setting] = error.settings()[..] else {
            panic!("one problem: {error}")
        };
        setting
    };
    assert_eq!(
        wrong(|s| s.debtor_iban = "DE02120300000000202052".into()),
        "debtor_iban"
    );
    assert_eq!(wrong(|s| s.debtor_bic = Some("BYLA".into())), "debtor_bic");
    assert_eq!(wrong(|s| s.debtor_name = "  ".into()), "debtor_name");
    assert_eq!(
        wrong(|s| s.initiating_party_name = String::new()),
        "initiating_party_name"
    );
    assert_eq!(
        wrong(|s| s.initiating_party_id = Some("x".repeat(36))),
        "initiating_party_id"
    );
}

/// The file control record (type 9, before the padding of nines) of a NACHA file's text.
fn file_control(text: &str) -> String {
    text.split('\n')
        .rfind(|line| line.starts_with('9') && *line != "9".repeat(94))
        .unwrap()
        .to_owned()
}

/// ACH instructions `0..n` of `amount` cents each.
fn ach_instructions(n: u128, amount: i64) -> Vec<CreditInstruction> {
    (0..n)
        .map(|k| instruction(k, amount, "011000015", "1", Some(AccountType::Checking)))
        .collect()
}

fn ach_plan(instructions: &[CreditInstruction]) -> Vec<std::ops::Range<usize>> {
    nacha::LIMITS
        .split(instructions.iter().map(|i| (i.payout_id, i.amount.get())))
        .unwrap()
}

#[test]
fn the_nacha_limits_are_its_trace_numbering_and_control_fields() {
    assert_eq!(nacha::LIMITS.max_items, nacha::MAX_ENTRIES_PER_FILE);
    assert_eq!(nacha::LIMITS.max_total, Some(999_999_999_999));
    assert_eq!(nacha::LIMITS.max_parts, nacha::MAX_FILES_PER_DAY);
    assert_eq!(
        adapters_rails::unit(PayoutMethod::Ach).limits,
        nacha::LIMITS
    );
}

#[test]
fn ninety_nine_thousand_nine_hundred_ninety_nine_entries_make_one_nacha_file_and_one_more_two() {
    let writer = NachaWriter::new(nacha_settings()).unwrap();
    let at_limit = ach_instructions(99_999, 1);
    assert_eq!(ach_plan(&at_limit), [0..99_999]);
    let written = writer
        .write(&request(PayoutMethod::Ach, Asset::Usd, 1, at_limit))
        .unwrap();
    let file = bank_formats::nacha::parse(&written.bytes).unwrap();
    assert_eq!(file.batches[0].entries.len(), 99_999);
    let text = String::from_utf8(written.bytes).unwrap();
    let control = file_control(&text);
    assert_eq!(&control[13..21], "00199998", "entry/addenda count");
    assert_eq!(&control[7..13], "020001", "block count");
    assert_eq!(written.references.last().unwrap(), "091000010099999");

    let one_over = ach_instructions(100_000, 1);
    // One file cannot carry it: the 100,000th entry has no trace number of the file's own.
    assert_eq!(nacha::trace_sequence(1, 99_999), None);
    let parts = ach_plan(&one_over);
    assert_eq!(parts, vec![0..99_999, 99_999..100_000]);
    // The second part is the day's next file: its own modifier and trace numbers.
    let second = writer
        .write(&request(
            PayoutMethod::Ach,
            Asset::Usd,
            2,
            one_over[parts[1].clone()].to_vec(),
        ))
        .unwrap();
    let file = bank_formats::nacha::parse(&second.bytes).unwrap();
    assert_eq!(file.header.file_id_modifier, 'B');
    assert_eq!(second.references, vec!["091000010100001"]);
}

#[test]
fn entries_totalling_the_twelve_digit_total_make_one_nacha_file_and_one_cent_more_two() {
    let writer = NachaWriter::new(nacha_settings()).unwrap();
    // 100 entries of the largest amount (ten digits) and one of 99 cents: 999,999,999,999.
    let mut at_limit = ach_instructions(101, 9_999_999_999);
    at_limit[100].amount = MinorUnits::new(99).unwrap();
    assert_eq!(ach_plan(&at_limit), [0..101]);
    let written = writer
        .write(&request(PayoutMethod::Ach, Asset::Usd, 1, at_limit.clone()))
        .unwrap();
    bank_formats::nacha::parse(&written.bytes).unwrap();
    let control = file_control(&String::from_utf8(written.bytes).unwrap());
    assert_eq!(&control[43..55], "999999999999", "total credit");

    let mut one_over = at_limit;
    one_over[100].amount = MinorUnits::new(100).unwrap();
    assert!(
        writer
            .write(&request(PayoutMethod::Ach, Asset::Usd, 1, one_over.clone()))
            .is_err()
    );
    let parts = ach_plan(&one_over);
    assert_eq!(parts, vec![0..100, 100..101]);
    for (n, range) in parts.into_iter().enumerate() {
        let sequence = u32::try_from(n + 1).unwrap();
        let written = writer
            .write(&request(
                PayoutMethod::Ach,
                Asset::Usd,
                sequence,
                one_over[range].to_vec(),
            ))
            .unwrap();
        bank_formats::nacha::parse(&written.bytes).unwrap();
    }
}

/// A transfer with every field at its longest: 70-character name, 140-character remittance, an
/// 11-character BIC, the largest amount, a 32-character IBAN (the longest of `bank_codes`'
/// registry below 34 is counted up to 34 in the sizes).
fn longest_transfer(n: u128) -> CreditInstruction {
    let mut transfer = instruction(
        n,
        99_999_999_999,
        "DEUTDEFF500",
        "LC55HEMM000100010012001200023015",
        None,
    );
    transfer.payee_name = "N".repeat(70);
    transfer.remittance = "R".repeat(140);
    transfer
}

fn longest_sepa_settings() -> SepaSettings {
    SepaSettings {
        initiating_party_name: "I".repeat(70),
        initiating_party_id: Some("P".repeat(35)),
        debtor_name: "D".repeat(70),
        debtor_iban: "LC55HEMM000100010012001200023015".into(),
        debtor_bic: Some("BYLADEMMXXX".into()),
        batch_booking: true,
    }
}

#[test]
fn a_pain001_file_at_its_limits_stays_within_its_byte_limit() {
    use adapters_rails::sepa::{LIMITS, MAX_ENVELOPE_BYTES, MAX_TRANSFER_BYTES};
    let writer = SepaWriter::new(longest_sepa_settings()).unwrap();
    let size = |n: u128| {
        let transfers = (0..n).map(longest_transfer).collect();
        writer
            .write(&request(PayoutMethod::Sepa, Asset::Eur, 1, transfers))
            .unwrap()
            .bytes
            .len()
    };
    let (one, two) = (size(1), size(2));
    // Two characters for an IBAN of 34.
    let transfer = two - one + 2;
    assert!(
        transfer <= MAX_TRANSFER_BYTES,
        "a transfer at its longest takes {transfer} bytes"
    );
    // The envelope grows with the counts and sums (NbOfTxs, CtrlSum, twice): 64 bytes more.
    let envelope = one - transfer + 2 + 64;
    assert!(
        envelope <= MAX_ENVELOPE_BYTES,
        "the envelope takes {envelope} bytes"
    );
    // (That many transfers at their longest fit MAX_FILE_BYTES: a compile-time assertion in
    // sepa.rs.)
    assert_eq!(LIMITS.max_items, 20_476);
    assert_eq!(adapters_rails::unit(PayoutMethod::Sepa).limits, LIMITS);
    let ids = |n: usize| (0..n).map(|k| (PayoutId::from_uuid(Uuid::from_u128(k as u128 + 1)), 1));
    assert_eq!(LIMITS.split(ids(20_476)).unwrap().len(), 1);
    assert_eq!(
        LIMITS.split(ids(20_477)).unwrap(),
        vec![0..20_476, 20_476..20_477]
    );
}

#[test]
fn a_batchs_second_pain001_file_has_its_own_ids_and_is_valid() {
    let writer = SepaWriter::new(sepa_settings()).unwrap();
    let mut second = sepa_request();
    second.part = 2;
    second.sequence = 2;
    let written = writer.write(&second).unwrap();
    if let Err(messages) = xmllint(&written.bytes) {
        panic!("{messages}\n{}", String::from_utf8_lossy(&written.bytes));
    }
    let xml = String::from_utf8(written.bytes).unwrap();
    assert!(
        xml.contains("<MsgId>123456789abcdef0123456789abcdef0-2</MsgId>"),
        "{xml}"
    );
    assert!(
        xml.contains("<PmtInfId>123456789abcdef0123456789abcdef0-2</PmtInfId>"),
        "{xml}"
    );
    // Part 99 is the last whose MsgId fits 35 characters.
    second.part = 99;
    assert!(writer.write(&second).is_ok());
    second.part = 100;
    assert!(
        writer
            .write(&second)
            .unwrap_err()
            .to_string()
            .contains("99 parts")
    );
}
