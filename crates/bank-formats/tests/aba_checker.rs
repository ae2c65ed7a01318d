//! A checker of ABA direct entry files written from the published layout (the ABA / Cemtex
//! direct entry file as the Australian banks' guides lay it out, and NAB's direct entry
//! returns file for the return records), independently of the writer and parser of
//! `bank_formats::aba`: it reads raw bytes and checks record lengths, line endings, record
//! types and order, every field's position, type, justification and padding, the characters of
//! text fields, dates, and the file total record's totals and count. (The ABA layout has no
//! hash total.)
//!
//! The tests run it on the writer's output (fixed files, the golden files, random valid files)
//! and on deliberately broken files, which it must reject. The golden files are compared byte
//! for byte with the writer's output.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use bank_formats::aba::{
    AbaFile, DescriptiveRecord, DetailKind, DetailRecord, Indicator, ReturnCode, TransactionCode,
    parse, write, write_return,
};
use chrono::NaiveDate;
use proptest::prelude::*;

use bank_format_oracles::aba as checker;

use checker::{Kind, check};

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/aba")
        .join(name)
}

/// Compares `bytes` with the golden file `name`. The golden files were composed field by
/// field from the layout (not by the writer), with the values in the tests' comments.
fn golden(name: &str, bytes: &[u8]) {
    let path = golden_path(name);
    let expected = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        expected == bytes,
        "{name} differs:\n--- golden\n{}\n--- written\n{}",
        String::from_utf8_lossy(&expected),
        String::from_utf8_lossy(bytes)
    );
}

fn payment(
    bsb: &str,
    account: &str,
    code: TransactionCode,
    amount: u64,
    title: &str,
    reference: &str,
    remitter: &str,
) -> DetailRecord {
    DetailRecord {
        bsb: bsb.into(),
        account_number: account.into(),
        transaction_code: code,
        amount,
        account_title: title.into(),
        lodgement_reference: reference.into(),
        trace_bsb: "062000".into(),
        trace_account: "10203040".into(),
        remitter_name: remitter.into(),
        kind: DetailKind::Payment {
            indicator: Indicator::None,
            withholding_tax: 0,
        },
    }
}

/// Two credits, no self-balancing record.
///
/// Credit total: 12 345 + 250 000 = 262 345 cents; debit total 0; net total
/// 262 345 − 0 = 262 345; count 2.
fn credits_file() -> AbaFile {
    AbaFile {
        descriptive: DescriptiveRecord {
            reel_sequence: 1,
            bank_mnemonic: "CBA".into(),
            user_name: "PAYOUTD PTY LTD".into(),
            apca_user_id: "301500".into(),
            description: "PAYOUTS".into(),
            processing_date: date(2026, 11, 27),
        },
        details: vec![
            payment(
                "082001",
                "12345",
                TransactionCode::Credit,
                12_345,
                "JANE CITIZEN",
                "5A1F3C9E2B7D4F60A1",
                "PAYOUTD",
            ),
            payment(
                "633000",
                "123456789",
                TransactionCode::Credit,
                250_000,
                "JOHN SMITH",
                "C0FFEE12345678ABCD",
                "PAYOUTD",
            ),
        ],
    }
}

/// Names and references that need cleaning, and a self-balancing debit.
///
/// - `Zoë Ångström-Øberg & Søn Ünïcödé Holdings Pty Ltd` → folded `ZOE ANGSTROM-OBERG`,
///   `&` → `AND`, `SON UNICODE HOLDINGS PTY LTD`: "ZOE ANGSTROM-OBERG AND SON UNICODE HOLDINGS PTY
///   LTD" is 51 characters, cut to 32: `ZOE ANGSTROM-OBERG AND SON UNICO`.
/// - `Seán O’Brien` → `SEAN O'BRIEN` (the typographic apostrophe becomes `'`).
/// - `Иван Петров (Ivan)` → the Cyrillic letters become spaces, collapsed: `(IVAN)`.
/// - `株式会社 Tanaka & Co` → `TANAKA AND CO`.
/// - references: `inv#2026/11–007 “final”` → `INV 2026/11-007 FINAL`, cut to 18:
///   `INV 2026/11-007 FI`; `Ärger & Söhne` → `ARGER AND SOHNE`.
/// - remitter `Payoutd & Co. Ltd` → `PAYOUTD AND CO. LTD` cut to 16: `PAYOUTD AND CO.`;
///   user name `Payoutd Überweisungen GmbH & Co. KG` → `PAYOUTD UBERWEISUNGEN GMBH AND CO. KG`,
///   cut to 26: `PAYOUTD UBERWEISUNGEN GMBH`; description `Payouts – Nov` → `PAYOUTS - NO` (12).
///
/// Credit total: 1 + 99 999 = 100 000; + 4 500 000 = 4 600 000; + 5 400 000 000
/// = 5 404 600 000 cents (ten digits). The balancing debit is that total: debit total
/// 5 404 600 000; net total 5 404 600 000 − 5 404 600 000 = 0; count 5 (four credits and the
/// debit).
fn cleaned_file() -> AbaFile {
    let remitter = "Payoutd & Co. Ltd";
    AbaFile {
        descriptive: DescriptiveRecord {
            reel_sequence: 1,
            bank_mnemonic: "WBC".into(),
            user_name: "Payoutd Überweisungen GmbH & Co. KG".into(),
            apca_user_id: "000042".into(),
            description: "Payouts – Nov".into(),
            processing_date: date(2027, 1, 4),
        },
        details: vec![
            payment(
                "732001",
                "00012",
                TransactionCode::Credit,
                1,
                "Zoë Ångström-Øberg & Søn Ünïcödé Holdings Pty Ltd",
                "inv#2026/11–007 “final”",
                remitter,
            ),
            payment(
                "012003",
                "98765-4321",
                TransactionCode::Credit,
                99_999,
                "Seán O’Brien",
                "Ärger & Söhne",
                remitter,
            )
            .with_account("8765-4321"),
            payment(
                "484799",
                "000000001",
                TransactionCode::Credit,
                4_500_000,
                "Иван Петров (Ivan)",
                "B00000000000000001",
                remitter,
            ),
            payment(
                "944300",
                "55555",
                TransactionCode::Credit,
                5_400_000_000,
                "株式会社 Tanaka & Co",
                "FFFFFFFFFFFFFFFFFF",
                remitter,
            ),
            payment(
                "062000",
                "10203040",
                TransactionCode::Debit,
                5_404_600_000,
                "PAYOUTD PTY LTD",
                "BATCH 7A2E",
                remitter,
            ),
        ],
    }
}

trait WithAccount {
    fn with_account(self, account: &str) -> Self;
}

impl WithAccount for DetailRecord {
    fn with_account(mut self, account: &str) -> Self {
        self.account_number = account.into();
        self
    }
}

#[test]
fn golden_credits_file() {
    let bytes = write(&credits_file()).unwrap();
    check(&bytes, Kind::Originated).unwrap();
    golden("credits.aba", &bytes);
    // Hand-checked fields of the total record: net 262 345, credit 262 345, debit 0, count 2.
    let total = std::str::from_utf8(&bytes)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_owned();
    assert_eq!(&total[20..30], "0000262345");
    assert_eq!(&total[30..40], "0000262345");
    assert_eq!(&total[40..50], "0000000000");
    assert_eq!(&total[74..80], "000002");
}

#[test]
fn golden_cleaned_self_balanced_file() {
    let bytes = write(&cleaned_file()).unwrap();
    check(&bytes, Kind::Originated).unwrap();
    golden("cleaned-balanced.aba", &bytes);
    let text = std::str::from_utf8(&bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[0][30..56], "PAYOUTD UBERWEISUNGEN GMBH");
    assert_eq!(&lines[0][62..74], "PAYOUTS - NO");
    assert_eq!(&lines[1][30..62], "ZOE ANGSTROM-OBERG AND SON UNICO");
    assert_eq!(&lines[1][62..80], "INV 2026/11-007 FI");
    assert_eq!(&lines[1][96..112], "PAYOUTD AND CO. ");
    assert_eq!(&lines[2][8..17], "8765-4321");
    assert_eq!(lines[2][30..62].trim_end(), "SEAN O'BRIEN");
    assert_eq!(lines[2][62..80].trim_end(), "ARGER AND SOHNE");
    assert_eq!(lines[3][30..62].trim_end(), "(IVAN)");
    assert_eq!(lines[4][30..62].trim_end(), "TANAKA AND CO");
    // Net 0, credit and debit 5 404 600 000, count 5.
    assert_eq!(&lines[6][20..30], "0000000000");
    assert_eq!(&lines[6][30..40], "5404600000");
    assert_eq!(&lines[6][40..50], "5404600000");
    assert_eq!(&lines[6][74..80], "000005");
}

/// The credits file with its second credit returned (code 5) and its first (code 3), as the
/// bank writes it on 1 December 2026 (`bank-simulator` decides the same returns and must write
/// the same bytes).
fn returned_file() -> AbaFile {
    let original = credits_file();
    let returned = |entry: usize, return_code| DetailRecord {
        kind: DetailKind::Returned {
            return_code,
            original_processing_day: 27,
            original_user_id: "301500".into(),
        },
        ..original.details[entry].clone()
    };
    AbaFile {
        descriptive: DescriptiveRecord {
            processing_date: date(2026, 12, 1),
            ..original.descriptive.clone()
        },
        details: vec![
            returned(0, ReturnCode::AccountClosed),
            returned(1, ReturnCode::NoAccount),
        ],
    }
}

/// The return file's credit total is 12 345 + 250 000 = 262 345 (both records keep their
/// transaction code 50), debit total 0, net 262 345, count 2; positions 113–114 are `27`
/// (the original processing day, 27 November) and 115–120 the user id `301500`.
#[test]
fn golden_return_file() {
    let bytes = write_return(&returned_file()).unwrap();
    check(&bytes, Kind::Returns).unwrap();
    golden("return.aba", &bytes);
    let parsed = parse(&bytes).unwrap();
    assert_eq!(parsed, returned_file());
    let returns: Vec<_> = parsed.returns().collect();
    assert_eq!(returns.len(), 2);
    assert_eq!(returns[0].lodgement_reference, "5A1F3C9E2B7D4F60A1");
    assert_eq!(returns[0].return_code(), Some(ReturnCode::AccountClosed));
    assert_eq!(returns[1].lodgement_reference, "C0FFEE12345678ABCD");
    assert_eq!(returns[1].return_code(), Some(ReturnCode::NoAccount));
    let text = std::str::from_utf8(&bytes).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(&lines[0][74..80], "011226");
    assert_eq!(&lines[1][17..18], "3");
    assert_eq!(&lines[1][112..120], "27301500");
    assert_eq!(&lines[2][17..18], "5");
    assert_eq!(&lines[3][20..30], "0000262345");
    assert_eq!(&lines[3][74..80], "000002");
}

/// `credits.aba` with `with` at byte `at` (records are 122 bytes apart with their CR LF).
fn broken(at: usize, with: &str) -> Vec<u8> {
    let mut bytes = write(&credits_file()).unwrap();
    bytes.splice(at..at + with.len(), with.bytes());
    bytes
}

#[test]
fn the_checker_rejects_broken_files() {
    let valid = write(&credits_file()).unwrap();
    check(&valid, Kind::Originated).unwrap();
    let total = 3 * 122;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("wrong credit total", broken(total + 30, "0000262346")),
        ("wrong net total", broken(total + 20, "0000262340")),
        ("wrong debit total", broken(total + 40, "0000000001")),
        ("wrong count", broken(total + 74, "000003")),
        ("wrong filler", broken(total + 1, "999-990")),
        ("bad character", broken(122 + 35, "~")),
        ("non-ASCII", broken(122 + 35, "é")),
        ("right-justified text", broken(122 + 30, " JANE CITIZE")),
        ("left-justified account", broken(122 + 8, "12345    ")),
        ("BSB without hyphen", broken(122 + 4, "0")),
        ("letter in an amount", broken(122 + 25, "O")),
        ("unknown transaction code", broken(122 + 18, "22")),
        ("bad indicator", broken(122 + 17, "Q")),
        ("bad date", broken(74, "320126")),
        ("non-blank filler", broken(100, "X")),
        ("record type", broken(122, "2")),
        ("zero amount", broken(122 + 20, "0000000000")),
    ];
    for (name, bytes) in cases {
        assert!(check(&bytes, Kind::Originated).is_err(), "{name}");
    }
    // Record length, line endings, order.
    let text = String::from_utf8(valid.clone()).unwrap();
    let short = text.replacen("JANE CITIZEN ", "JANE CITIZEN", 1);
    assert!(
        check(short.as_bytes(), Kind::Originated).is_err(),
        "short record"
    );
    let lf = text.replace("\r\n", "\n");
    assert!(check(lf.as_bytes(), Kind::Originated).is_err(), "LF only");
    assert!(
        check(text.trim_end().as_bytes(), Kind::Originated).is_err(),
        "no last CRLF"
    );
    let records: Vec<&str> = text.split_terminator("\r\n").collect();
    let swapped = format!(
        "{}\r\n{}\r\n{}\r\n{}\r\n",
        records[1], records[0], records[2], records[3]
    );
    assert!(
        check(swapped.as_bytes(), Kind::Originated).is_err(),
        "order"
    );
    let no_total = format!("{}\r\n{}\r\n{}\r\n", records[0], records[1], records[2]);
    assert!(
        check(no_total.as_bytes(), Kind::Originated).is_err(),
        "no total"
    );
    // An originated file is not a return file.
    assert!(check(&valid, Kind::Returns).is_err(), "kind");
}

#[test]
fn the_checker_rejects_broken_return_files() {
    let valid = write_return(&returned_file()).unwrap();
    check(&valid, Kind::Returns).unwrap();
    for (name, at, with) in [
        ("return code 0", 122 + 17, "0"),
        ("return code 7", 122 + 17, "7"),
        ("day 00", 122 + 112, "00"),
        ("day 32", 122 + 112, "32"),
        ("other user id", 122 + 114, "301501"),
        ("wrong count", 3 * 122 + 74, "000003"),
    ] {
        let mut bytes = valid.clone();
        bytes.splice(at..at + with.len(), with.bytes());
        assert!(check(&bytes, Kind::Returns).is_err(), "{name}");
    }
}

fn clean_text_strategy(width: usize) -> impl Strategy<Value = String> {
    // Any text, accents, symbols and other scripts included: the writer cleans it. The first
    // character is a letter so that something is left.
    proptest::string::string_regex(&format!("[A-Za-z][ -~àéøßÆŒ’–Жж日本]{{0,{}}}", width + 10))
        .unwrap()
}

prop_compose! {
    fn arb_detail()(
        bsb in "[0-9]{6}",
        account in "[0-9]{5,9}",
        amount in 1u64..=99_999_999,
        title in clean_text_strategy(32),
        reference in clean_text_strategy(18),
        remitter in clean_text_strategy(16),
        debit in proptest::bool::weighted(0.1),
    ) -> DetailRecord {
        let code = if debit { TransactionCode::Debit } else { TransactionCode::Credit };
        payment(&bsb, &account, code, amount, &title, &reference, &remitter)
    }
}

prop_compose! {
    fn arb_file()(
        mnemonic in "[A-Z]{3}",
        user in clean_text_strategy(26),
        user_id in "[0-9]{6}",
        description in clean_text_strategy(12),
        day in 0u32..36_500,
        details in proptest::collection::vec(arb_detail(), 1..30),
    ) -> AbaFile {
        AbaFile {
            descriptive: DescriptiveRecord {
                reel_sequence: 1,
                bank_mnemonic: mnemonic,
                user_name: user,
                apca_user_id: user_id,
                description,
                processing_date: date(2000, 1, 1) + chrono::Days::new(u64::from(day)),
            },
            details,
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_valid_files_pass_the_checker(file in arb_file()) {
        let bytes = write(&file).unwrap();
        prop_assert_eq!(check(&bytes, Kind::Originated), Ok(()));
        let day = u8::try_from(chrono::Datelike::day(&file.descriptive.processing_date)).unwrap();
        let returned: Vec<DetailRecord> = file
            .details
            .iter()
            .filter(|d| !d.transaction_code.is_debit())
            .map(|d| DetailRecord {
                kind: DetailKind::Returned {
                    return_code: ReturnCode::ReferToCustomer,
                    original_processing_day: day,
                    original_user_id: file.descriptive.apca_user_id.clone(),
                },
                ..d.clone()
            })
            .collect();
        if !returned.is_empty() {
            let returns = AbaFile { descriptive: file.descriptive.clone(), details: returned };
            let returned = write_return(&returns).unwrap();
            prop_assert_eq!(check(&returned, Kind::Returns), Ok(()));
        }
    }
}
