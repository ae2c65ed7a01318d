//! Shared by the ISO 20022 test files: sample input for the pain.001 writer, a small reader of
//! its output, and the fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::PathBuf;

use bank_formats::iso20022::{
    CreditTransfer, CreditTransferInitiation, DebtorAgent, InitiatingParty, PaymentBatch,
};
use chrono::{DateTime, NaiveDate, Utc};
use quick_xml::{Reader, events::Event};

/// IBANs with valid check digits, from several SEPA countries.
pub const IBANS: &[&str] = &[
    "DE89370400440532013000",
    "FR1420041010050500013M02606",
    "NL91ABNA0417164300",
    "BE68539007547034",
    "AT611904300234573201",
    "ES9121000418450200051332",
    "IT60X0542811101000000123456",
    "MT84MALT011000012345MTLCAST001S",
];

pub fn created_at() -> DateTime<Utc> {
    NaiveDate::from_ymd_opt(2026, 11, 25)
        .unwrap()
        .and_hms_opt(18, 0, 5)
        .unwrap()
        .and_utc()
}

pub fn execution_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 26).unwrap()
}

/// A transfer of `cents` to creditor `n` (ids derived from `n`, so distinct `n` are unique).
pub fn transfer(n: usize, cents: u64) -> CreditTransfer {
    CreditTransfer {
        instruction_id: format!("INSTR-{n:06}"),
        end_to_end_id: format!("E2E-{n:06}"),
        amount_cents: cents,
        creditor_agent_bic: None,
        creditor_name: format!("Creditor {n}"),
        creditor_iban: IBANS[n % IBANS.len()].to_owned(),
        remittance: Some(format!("Payout {n}")),
    }
}

pub fn batch(id: &str, transactions: Vec<CreditTransfer>) -> PaymentBatch {
    PaymentBatch {
        payment_info_id: id.to_owned(),
        batch_booking: true,
        execution_date: execution_date(),
        debtor_name: "Payoutd Demo GmbH".to_owned(),
        debtor_iban: "DE89370400440532013000".to_owned(),
        debtor_agent: DebtorAgent::Bic("COBADEFFXXX".to_owned()),
        transactions,
    }
}

pub fn file(batches: Vec<PaymentBatch>) -> CreditTransferInitiation {
    CreditTransferInitiation {
        message_id: "PAYOUTD-20261125-0001".to_owned(),
        created_at: created_at(),
        initiating_party: InitiatingParty {
            name: "Payoutd Demo GmbH".to_owned(),
            id: None,
        },
        batches,
    }
}

/// One batch with one transfer of 1 cent.
pub fn one_transaction() -> CreditTransferInitiation {
    file(vec![batch("BATCH-0001", vec![transfer(1, 1)])])
}

/// Three batches (one with `NOTPROVIDED` as debtor agent) and 250 transfers.
pub fn many_transactions() -> CreditTransferInitiation {
    let mut n = 0;
    let mut next = |count: usize| {
        (0..count)
            .map(|_| {
                n += 1;
                transfer(n, (n as u64) * 1_001)
            })
            .collect::<Vec<_>>()
    };
    let first = batch("BATCH-0001", next(120));
    let mut second = batch("BATCH-0002", next(100));
    second.debtor_agent = DebtorAgent::NotProvided;
    second.batch_booking = false;
    let third = batch("BATCH-0003", next(30));
    file(vec![first, second, third])
}

/// Names, remittance information and ids that need folding, replacing or cutting.
pub fn awkward_text() -> CreditTransferInitiation {
    let mut zoe = transfer(1, 12_345);
    zoe.creditor_name = "Zoë O'Brien & Søn — 東京".to_owned();
    zoe.remittance = Some("Rechnung Nr. 42 für Straße <5> \"Größe\" €12 @ 100% ✓".to_owned());
    zoe.creditor_agent_bic = Some("DEUTDEFF".to_owned());
    let mut nobody = transfer(2, 1);
    nobody.creditor_name = "李小龍".to_owned();
    nobody.remittance = Some("\t\n  ".to_owned());
    let mut f = file(vec![batch("BATCH-AWKWARD", vec![zoe, nobody])]);
    f.initiating_party.name = "Café Œuvre & Ærø ApS".to_owned();
    f.batches[0].debtor_name = "Łódź Spółka z o.o.".to_owned();
    f
}

/// Every field at its longest: ids of 35 characters, names of 70 (and longer ones to cut),
/// remittance of 140, the largest amount, 11-character BICs, a 32-character IBAN.
pub fn max_length_fields() -> CreditTransferInitiation {
    let id = |c: char| c.to_string().repeat(35);
    let mut first = transfer(1, 99_999_999_999);
    first.instruction_id = id('I');
    first.end_to_end_id = id('E');
    first.creditor_name = "N".repeat(70);
    first.remittance = Some("R".repeat(140));
    first.creditor_agent_bic = Some("DEUTDEFF500".to_owned());
    first.creditor_iban = "LC55HEMM000100010012001200023015".to_owned();
    let mut second = transfer(2, 99_999_999_999);
    second.creditor_name = format!("{} tail that is cut", "é".repeat(80));
    second.remittance = Some("ß".repeat(100));
    let mut b = batch(&id('P'), vec![first, second]);
    b.debtor_name = "D".repeat(90);
    let mut f = file(vec![b]);
    f.message_id = id('M');
    f.initiating_party = InitiatingParty {
        name: "I".repeat(200),
        id: Some(id('X')),
    };
    f
}

/// The text of every element called `name`, in document order.
pub fn texts(xml: &[u8], name: &str) -> Vec<String> {
    let mut reader = Reader::from_str(std::str::from_utf8(xml).unwrap());
    let mut found = Vec::new();
    let mut inside = false;
    loop {
        match reader.read_event().unwrap() {
            Event::Start(e) if e.local_name().into_inner() == name => {
                inside = true;
                found.push(String::new());
            }
            Event::End(e) if e.local_name().into_inner() == name => inside = false,
            Event::Text(t) if inside => found.last_mut().unwrap().push_str(&t.xml10_content()),
            Event::GeneralRef(r) if inside => {
                let resolved = quick_xml::escape::resolve_predefined_entity(&r).unwrap();
                found.last_mut().unwrap().push_str(resolved);
            }
            Event::Eof => return found,
            _ => {}
        }
    }
}

/// The single text of `name`.
pub fn text(xml: &[u8], name: &str) -> String {
    let all = texts(xml, name);
    assert_eq!(all.len(), 1, "{name}: {all:?}");
    all.into_iter().next().unwrap()
}

/// A fixture from `bank-formats`' `tests/fixtures/iso20022/` (whichever crate's tests use it).
pub fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../bank-formats/tests/fixtures/iso20022")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The pain.002.001.03 fixtures, which the XSD test validates.
pub const PAIN002_V03_FIXTURES: &[&str] = &[
    "pain002_v03_accepted.xml",
    "pain002_v03_rejected_file.xml",
    "pain002_v03_partial.xml",
];

/// Every pain.002 fixture.
pub const PAIN002_FIXTURES: &[&str] = &[
    "pain002_v03_accepted.xml",
    "pain002_v03_rejected_file.xml",
    "pain002_v03_partial.xml",
    "pain002_v09_partial.xml",
    "pain002_v10_accepted.xml",
    "pain002_v10_rejected_file.xml",
    "pain002_v10_partial.xml",
];
