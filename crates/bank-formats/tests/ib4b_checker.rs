//! A checker of IB4B direct credit files and payoutd's dishonour files written from the
//! published layout (BNZ's "Internet Banking for Business — file format guide", direct credit
//! import file) and payoutd's dishonour layout (docs/rails/ib4b.md), independently of the
//! writer and the parser: it reads raw bytes. Then: the writer's output passes it (fixed cases,
//! golden files, and random valid files), and it rejects broken files.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use bank_formats::ib4b::{
    self, DirectCreditFile, Dishonour, DishonourFile, DishonourHeader, DishonourReason, Header,
    Ib4bFile, StatementDetails, Transaction, TransactionCode,
};
use chrono::NaiveDate;
use proptest::prelude::*;

/// The checker: no code of `bank_formats` is used here.
use bank_format_oracles::ib4b as checker;

use checker::{Kind, check};

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

#[allow(clippy::too_many_arguments)]
fn transaction(
    account: &str,
    amount: u64,
    name: &str,
    reference: &str,
    particulars: &str,
    your_name: &str,
) -> Transaction {
    Transaction {
        account: account.into(),
        transaction_code: TransactionCode::DirectCredit,
        amount,
        other_party_name: name.into(),
        other_party: StatementDetails {
            particulars: particulars.into(),
            code: String::new(),
            reference: reference.into(),
        },
        other_party_alpha_reference: String::new(),
        your_name: your_name.into(),
        yours: StatementDetails {
            particulars: String::new(),
            code: "PAYOUTS".into(),
            reference: reference.into(),
        },
    }
}

/// The file of `golden/ib4b/basic.csv`.
fn basic_file() -> DirectCreditFile {
    DirectCreditFile {
        header: Header {
            originating_account: "0102420100194000".into(),
            due_date: date(2026, 11, 27),
            creation_date: date(2026, 11, 25),
        },
        transactions: vec![
            transaction(
                "0109020068389000",
                12345,
                "Ada Lovelace",
                "0A1B2C3D4E5F",
                "Invoice 1001",
                "Payoutd Ltd",
            ),
            transaction(
                "0865231954512001",
                500,
                "Grace Hopper",
                "FEDCBA987654",
                "Refund 7",
                "Payoutd Ltd",
            ),
        ],
    }
}

/// The file of `golden/ib4b/cleaned.csv`: names and texts that need folding, replacing and
/// cutting, the largest amount, and a hash total that overflows 11 digits.
fn cleaned_file() -> DirectCreditFile {
    let your_name = "Payoutd & Co,,,";
    DirectCreditFile {
        header: Header {
            originating_account: "0102420100194000".into(),
            due_date: date(2027, 1, 5),
            creation_date: date(2026, 12, 31),
        },
        transactions: vec![
            transaction(
                "2626000320871032",
                9_999_999_999,
                "Zoë O’Brien-Šťastná & Søn, Ltd",
                "0A1B2C3D4E5F",
                "Facture n° 42, été",
                your_name,
            ),
            transaction(
                "1174260024124000",
                1,
                "Иван Petrov & Co.",
                "112233445566",
                "Rechnung: Größe#5",
                your_name,
            ),
            transaction(
                "0865231954512001",
                250_000,
                "王伟 (Wang Wei) “Ltd”",
                "ABCDEF0123456789",
                "100% done; thanks!",
                your_name,
            ),
        ],
    }
}

fn golden(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/golden/ib4b/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

// ---- golden files --------------------------------------------------------------------------

#[test]
fn golden_basic_is_written_byte_for_byte() {
    // Control record, by hand:
    // total amount = 12345 + 500 = 12845; count = 2;
    // hash total: 0109020068389000 -> branch 0902 + base 0068389 = 09020068389,
    //             0865231954512001 -> branch 6523 + base 1954512 = 65231954512,
    //             09020068389 + 65231954512 = 74252022901 (11 digits, kept as is).
    let written = ib4b::write(&basic_file()).unwrap();
    let expected = golden("basic.csv");
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(check(&written), Ok(Kind::DirectCredit));
    assert_eq!(
        ib4b::parse(&expected).unwrap(),
        Ib4bFile::DirectCredit(basic_file())
    );
}

#[test]
fn golden_cleaned_is_written_byte_for_byte() {
    // Text, by hand (clean, then cut to the width; trailing spaces dropped):
    // "Zoë O’Brien-Šťastná & Søn, Ltd" -> "Zoe O'Brien-Stastna & Son Ltd" -> 20: "Zoe O'Brien-Stastna "
    //   -> "Zoe O'Brien-Stastna" (19);
    // "Иван Petrov & Co." -> Cyrillic letters become spaces, collapsed -> "Petrov & Co.";
    // "王伟 (Wang Wei) “Ltd”" -> CJK and parentheses become spaces, quotes fold to ' ->
    //   "Wang Wei 'Ltd'";
    // "Facture n° 42, été" -> "Facture n 42 ete" -> 12: "Facture n 42";
    // "Rechnung: Größe#5" -> "Rechnung: Grosse#5" -> 12: "Rechnung: Gr";
    // "100% done; thanks!" -> "100 done thanks" -> 12: "100 done tha";
    // "ABCDEF0123456789" -> 12: "ABCDEF012345"; "Payoutd & Co,,," -> "Payoutd & Co".
    // Control record, by hand:
    // total = 9999999999 + 1 + 250000 = 10000250000 (11 digits); count = 3;
    // hash: 2626000320871032 -> 26000320871; 1174260024124000 -> 74260024124;
    //       0865231954512001 -> 65231954512;
    //       26000320871 + 74260024124 = 100260344995; + 65231954512 = 165492299507;
    //       rightmost 11 digits: 65492299507.
    let written = ib4b::write(&cleaned_file()).unwrap();
    let expected = golden("cleaned.csv");
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(check(&written), Ok(Kind::DirectCredit));
}

/// A dishonour of `transaction` for `reason`, as the bank reports it.
fn dishonour(transaction: &Transaction, reason: DishonourReason) -> Dishonour {
    Dishonour {
        account: transaction.account.clone(),
        transaction_code: transaction.transaction_code,
        amount: transaction.amount,
        other_party_name: transaction.other_party_name.clone(),
        your_code: transaction.yours.code.clone(),
        your_reference: transaction.yours.reference.clone(),
        reason,
        reason_text: reason.meaning().to_owned(),
    }
}

#[test]
fn golden_dishonour_is_written_and_parsed_back() {
    // Dishonoured: the second credit (no account) and the first (refused), in that order, of
    // `basic.csv`, reported on 30 November 2026 (`bank-simulator` decides the same and must
    // write the same bytes).
    let original = match ib4b::parse(&golden("basic.csv")).unwrap() {
        Ib4bFile::DirectCredit(file) => file,
        other => panic!("{other:?}"),
    };
    let file = DishonourFile {
        header: DishonourHeader {
            originating_account: original.header.originating_account.clone(),
            due_date: original.header.due_date,
            report_date: date(2026, 11, 30),
        },
        dishonours: vec![
            dishonour(&original.transactions[1], DishonourReason::NoAccount),
            dishonour(&original.transactions[0], DishonourReason::PaymentRefused),
        ],
    };
    let written = ib4b::write_dishonours(&file).unwrap();
    let expected = golden("dishonour.csv");
    assert_eq!(
        String::from_utf8_lossy(&written),
        String::from_utf8_lossy(&expected)
    );
    assert_eq!(check(&written), Ok(Kind::Dishonour));
    let Ib4bFile::Dishonour(parsed) = ib4b::parse(&expected).unwrap() else {
        panic!("not a dishonour file");
    };
    assert_eq!(parsed.header.originating_account, "0102420100194000");
    assert_eq!(parsed.header.due_date, date(2026, 11, 27));
    assert_eq!(parsed.header.report_date, date(2026, 11, 30));
    let seen: Vec<(&str, u64, DishonourReason, &str)> = parsed
        .dishonours
        .iter()
        .map(|d| {
            (
                d.your_reference.as_str(),
                d.amount,
                d.reason,
                d.reason_text.as_str(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "FEDCBA987654",
                500,
                DishonourReason::NoAccount,
                "No account"
            ),
            (
                "0A1B2C3D4E5F",
                12345,
                DishonourReason::PaymentRefused,
                "Payment refused by account holder"
            ),
        ]
    );
}

// ---- the checker rejects broken files --------------------------------------------------------

fn replace_line(bytes: &[u8], line: usize, new: &str) -> Vec<u8> {
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let mut lines: Vec<String> = text.split("\r\n").map(str::to_owned).collect();
    lines[line] = new.to_owned();
    lines.join("\r\n").into_bytes()
}

#[test]
fn the_checker_rejects_broken_files() {
    let good = golden("basic.csv");
    assert_eq!(check(&good), Ok(Kind::DirectCredit));
    let header = "1,,,,0102420100194000,7,261127,261125,";
    let t1 = "2,0109020068389000,50,12345,Ada Lovelace,0A1B2C3D4E5F,,,Invoice 1001,Payoutd Ltd,PAYOUTS,0A1B2C3D4E5F,";
    let broken: Vec<(&str, Vec<u8>)> = vec![
        (
            "wrong total",
            replace_line(&good, 3, "3,12846,2,74252022901"),
        ),
        (
            "wrong count",
            replace_line(&good, 3, "3,12845,3,74252022901"),
        ),
        (
            "wrong hash",
            replace_line(&good, 3, "3,12845,2,74252022902"),
        ),
        ("short hash", replace_line(&good, 3, "3,12845,2,4252022901")),
        ("missing control", replace_line(&good, 3, "")),
        ("extra field", replace_line(&good, 1, &format!("{t1},"))),
        (
            "missing field",
            replace_line(&good, 0, "1,,,,0102420100194000,7,261127,261125"),
        ),
        (
            "name too long",
            replace_line(
                &good,
                1,
                &t1.replace("Ada Lovelace", "Ada Augusta Lovelace King"),
            ),
        ),
        (
            "bad character",
            replace_line(&good, 1, &t1.replace("Ada Lovelace", "Ada Lovelace!")),
        ),
        (
            "non-ASCII",
            replace_line(&good, 1, &t1.replace("Ada Lovelace", "Adé Lovelace")),
        ),
        (
            "short account",
            replace_line(&good, 1, &t1.replace("0109020068389000", "010902006838900")),
        ),
        (
            "wrong transaction code",
            replace_line(&good, 1, &t1.replace(",50,", ",52,")),
        ),
        (
            "amount with a decimal point",
            replace_line(&good, 1, &t1.replace(",12345,", ",123.45,")),
        ),
        (
            "bad month",
            replace_line(&good, 0, &header.replace("261127", "261327")),
        ),
        (
            "bad day",
            replace_line(&good, 0, &header.replace("261127", "260231")),
        ),
        (
            "batch type of a debit",
            replace_line(&good, 0, &header.replace(",7,", ",6,")),
        ),
        (
            "record type out of place",
            replace_line(&good, 1, &t1.replacen('2', "4", 1)),
        ),
        (
            "LF only",
            String::from_utf8(good.clone())
                .unwrap()
                .replace("\r\n", "\n")
                .into_bytes(),
        ),
        ("no final CRLF", good[..good.len() - 2].to_vec()),
        (
            "record after control",
            [good.clone(), b"3,0,0,00000000000\r\n".to_vec()].concat(),
        ),
    ];
    for (what, bytes) in broken {
        assert!(check(&bytes).is_err(), "{what}: accepted");
        // The parser refuses them too (except the line endings it reads leniently).
        if !matches!(what, "LF only" | "no final CRLF") {
            assert!(ib4b::parse(&bytes).is_err(), "{what}: parsed");
        }
    }
}

#[test]
fn the_checker_rejects_broken_dishonour_files() {
    let good = golden("dishonour.csv");
    assert_eq!(check(&good), Ok(Kind::Dishonour));
    let item = "2,0865231954512001,50,500,Grace Hopper,PAYOUTS,FEDCBA987654,02,No account";
    let broken: Vec<(&str, Vec<u8>)> = vec![
        (
            "unknown reason code",
            replace_line(&good, 1, &item.replace(",02,", ",10,")),
        ),
        (
            "blank reference",
            replace_line(&good, 1, &item.replace("FEDCBA987654", "")),
        ),
        (
            "wrong hash",
            replace_line(&good, 3, "3,12845,2,74252022900"),
        ),
        (
            "wrong total",
            replace_line(&good, 3, "3,12844,2,74252022901"),
        ),
        (
            "bad report date",
            replace_line(&good, 0, "1,DISHONOUR,0102420100194000,261127,261300"),
        ),
        (
            "missing field",
            replace_line(&good, 1, &item.replace(",No account", "")),
        ),
    ];
    for (what, bytes) in broken {
        assert!(check(&bytes).is_err(), "{what}: accepted");
        assert!(ib4b::parse(&bytes).is_err(), "{what}: parsed");
    }
}

// ---- writer output passes the checker ----------------------------------------------------------

#[test]
fn one_transaction_file_passes() {
    let mut file = basic_file();
    file.transactions.truncate(1);
    let written = ib4b::write(&file).unwrap();
    assert_eq!(check(&written), Ok(Kind::DirectCredit));
    assert!(written.ends_with(b"3,12345,1,09020068389\r\n"));
}

fn account() -> impl Strategy<Value = String> {
    "[0-9]{16}"
}

fn day() -> impl Strategy<Value = NaiveDate> {
    (0i64..36_524).prop_map(|d| date(2000, 1, 1) + chrono::Duration::days(d))
}

prop_compose! {
    fn any_transaction()(
        account in account(),
        amount in 1u64..=9_999_999_999,
        name in "[A-Za-z][^\\x00]{0,30}",
        reference in "\\PC{0,20}",
        code in "\\PC{0,20}",
        particulars in "\\PC{0,20}",
        your_name in "[A-Za-z0-9][\\PC]{0,25}",
        your_code in "[A-Z0-9 ,.-]{0,14}",
        your_reference in "[0-9A-F]{12}",
    ) -> Transaction {
        Transaction {
            account,
            transaction_code: TransactionCode::DirectCredit,
            amount,
            other_party_name: name,
            other_party: StatementDetails { particulars, code, reference },
            other_party_alpha_reference: String::new(),
            your_name,
            yours: StatementDetails {
                particulars: String::new(),
                code: your_code,
                reference: your_reference,
            },
        }
    }
}

prop_compose! {
    fn any_file()(
        originating_account in account(),
        due_date in day(),
        creation_date in day(),
        transactions in prop::collection::vec(any_transaction(), 1..12),
    ) -> DirectCreditFile {
        DirectCreditFile {
            header: Header { originating_account, due_date, creation_date },
            transactions,
        }
    }
}

proptest! {
    #[test]
    fn random_valid_files_pass_the_checker_and_parse_back(file in any_file()) {
        let written = ib4b::write(&file).unwrap();
        prop_assert_eq!(check(&written), Ok(Kind::DirectCredit));
        let Ib4bFile::DirectCredit(parsed) = ib4b::parse(&written).unwrap() else {
            panic!("not a direct credit file");
        };
        prop_assert_eq!(parsed.control(), file.control());
        prop_assert_eq!(&parsed.header, &file.header);
        for (p, t) in parsed.transactions.iter().zip(&file.transactions) {
            prop_assert_eq!(&p.account, &t.account);
            prop_assert_eq!(p.amount, t.amount);
            prop_assert_eq!(&p.other_party_name, &ib4b::clean_text(&t.other_party_name, 20));
            prop_assert_eq!(&p.yours.reference, &t.yours.reference);
        }
        // Writing what was parsed gives the same bytes.
        prop_assert_eq!(ib4b::write(&parsed).unwrap(), written);
    }

    #[test]
    fn random_dishonours_pass_the_checker(
        file in any_file(),
        picks in prop::collection::vec((any::<prop::sample::Index>(), 0usize..9), 0..12),
        report in day(),
    ) {
        let Ib4bFile::DirectCredit(original) = ib4b::parse(&ib4b::write(&file).unwrap()).unwrap() else {
            panic!("not a direct credit file");
        };
        // A bank dishonours a transaction once: each picked at most once (picking one twice
        // could also sum past the control total's width, which no real file does).
        let mut seen = std::collections::BTreeSet::new();
        let decisions: Vec<Dishonour> = picks
            .into_iter()
            .filter_map(|(index, reason)| {
                let at = index.index(original.transactions.len());
                seen.insert(at).then(|| {
                    dishonour(&original.transactions[at], DishonourReason::ALL[reason])
                })
            })
            .collect();
        let dishonours = DishonourFile {
            header: DishonourHeader {
                originating_account: original.header.originating_account.clone(),
                due_date: original.header.due_date,
                report_date: report,
            },
            dishonours: decisions.clone(),
        };
        let written = ib4b::write_dishonours(&dishonours).unwrap();
        prop_assert_eq!(check(&written), Ok(Kind::Dishonour));
        let Ib4bFile::Dishonour(parsed) = ib4b::parse(&written).unwrap() else {
            panic!("not a dishonour file");
        };
        prop_assert_eq!(parsed.dishonours.len(), decisions.len());
        for (d, decision) in parsed.dishonours.iter().zip(&decisions) {
            prop_assert_eq!(&d.your_reference, &decision.your_reference);
            prop_assert_eq!(d.reason, decision.reason);
        }
    }
}
