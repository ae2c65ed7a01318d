//! Deterministic, realistic test data: receiver `i` and its account `i` are pure functions of `i`
//! (and the generator's salt), so a load generator can rebuild any seeded account to query it,
//! and indices at or past the seeded count give details that exist nowhere.
//!
//! Every account goes through the service's own parsing and normalisation
//! ([`AccountInput::parse`], [`AccountData::from_details`]), so it holds exactly what a create
//! request with the same fields would store.
//!
//! Shape of the data: six payout methods in realistic proportions; bank identifiers (BSB, ABA
//! and Canadian routing numbers, German bank codes and BICs, New Zealand bank and branch) drawn
//! from small pools, so many accounts share them; account numbers, IBANs and e-mail recipients
//! unique (a bijective scramble of `i`), except that 1 in 100 Australian accounts reuses an
//! older account's number (at a branch drawn independently). `account_type` is `checking` for
//! 70 %.

use anyhow::Context;
use chrono::{DateTime, Duration, NaiveDate, Utc};
use domain::account::input::{AccountInput, RawAccount};
use domain::account::{AccountData, AccountField, AccountStatus, ConfirmStatus, PayoutMethod};
use uuid::Uuid;

/// SplitMix64's finaliser: a good 64-bit mix.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// `i` scrambled bijectively within `0..modulus` (`modulus` a power of ten: 3^18 is coprime to
/// it, so multiplying by it permutes the residues).
fn scramble(i: u64, modulus: u64) -> u64 {
    let product = (u128::from(i) * 387_420_489 + 123_456_789) % u128::from(modulus);
    // The remainder is below `modulus`, a u64.
    u64::try_from(product).unwrap_or_default()
}

/// First names (receivers and digital payees).
const FIRST_NAMES: [&str; 24] = [
    "Olivia",
    "Noah",
    "Charlotte",
    "Oliver",
    "Amelia",
    "William",
    "Isla",
    "Jack",
    "Mia",
    "Leo",
    "Ava",
    "Henry",
    "Grace",
    "Lucas",
    "Chloe",
    "Thomas",
    "Zoe",
    "James",
    "Ruby",
    "Ethan",
    "Sofia",
    "Mateo",
    "Aroha",
    "Wiremu",
];

/// Last names.
const LAST_NAMES: [&str; 24] = [
    "Smith", "Jones", "Williams", "Brown", "Wilson", "Taylor", "Nguyen", "Johnson", "Martin",
    "White", "Anderson", "Walker", "Thompson", "Harris", "Lee", "Ryan", "Robinson", "Kelly",
    "King", "O'Brien", "Müller", "Tremblay", "Ngata", "Kowalski",
];

/// Streets.
const STREETS: [&str; 12] = [
    "George Street",
    "Collins Street",
    "Queen Street",
    "King William Street",
    "Hay Street",
    "Elizabeth Street",
    "Bourke Street",
    "Pitt Street",
    "Flinders Lane",
    "Murray Street",
    "Adelaide Terrace",
    "Smith Street",
];

/// City, state, postcode.
const CITIES: [(&str, &str, &str); 8] = [
    ("Sydney", "NSW", "2000"),
    ("Melbourne", "VIC", "3000"),
    ("Brisbane", "QLD", "4000"),
    ("Perth", "WA", "6000"),
    ("Adelaide", "SA", "5000"),
    ("Hobart", "TAS", "7000"),
    ("Canberra", "ACT", "2600"),
    ("Darwin", "NT", "0800"),
];

/// BSB prefixes of large Australian banks (bank and state digits).
const BSB_PREFIXES: [&str; 16] = [
    "012", "013", "014", "032", "033", "034", "062", "063", "064", "065", "082", "083", "084",
    "182", "484", "633",
];
/// Distinct BSBs (branches) in use.
const BSB_POOL: u64 = 400;

/// Federal Reserve routing symbols (first two digits) of ABA numbers.
const ABA_SYMBOLS: [u64; 14] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 21, 26];
/// Distinct ABA routing numbers in use.
const ABA_POOL: u64 = 60;

/// Canadian institution numbers (all in the service's list).
const CA_INSTITUTIONS: [&str; 10] = [
    "001", "002", "003", "004", "006", "010", "016", "030", "039", "219",
];
/// Distinct Canadian routing numbers (institution and transit) in use.
const CA_POOL: u64 = 60;

/// German banks: bank code (BLZ) and BIC.
const DE_BANKS: [(&str, &str); 10] = [
    ("10070000", "DEUTDEBBXXX"),
    ("37040044", "COBADEFFXXX"),
    ("50010517", "INGDDEFFXXX"),
    ("70020270", "HYVEDEMMXXX"),
    ("20050550", "HASPDEHHXXX"),
    ("60050101", "SOLADEST600"),
    ("10010010", "PBNKDEFFXXX"),
    ("43060967", "GENODEM1GLS"),
    ("12030000", "BYLADEM1001"),
    ("50070010", "DEUTDEFFXXX"),
];

/// New Zealand banks (all checked with algorithm A or B) and the valid branch range of each.
const NZ_BANKS: [(u64, u64, u64); 7] = [
    (1, 1, 999),
    (2, 1, 999),
    (3, 1, 999),
    (6, 1, 999),
    (11, 5000, 6499),
    (12, 3000, 3299),
    (38, 9000, 9499),
];

/// A receiver row's values (what `payoutd` stores for a created receiver).
#[derive(Debug, Clone)]
pub struct ReceiverSeed {
    pub id: Uuid,
    pub first_name: String,
    pub last_name: String,
    pub email: String,
    pub gender: Option<String>,
    pub dob: NaiveDate,
    pub dialcode: String,
    pub phone: String,
    pub address: String,
    pub city: String,
    pub state: String,
    pub country: String,
    pub postcode: String,
    pub reference: Option<String>,
    pub applicant_id: String,
    pub status: i16,
    pub kyc_status: i16,
    pub created_at: DateTime<Utc>,
}

/// An account: the fields a client sends, and what the service makes of them.
#[derive(Debug, Clone)]
pub struct AccountSeed {
    pub id: Uuid,
    pub receiver_id: Uuid,
    pub method: PayoutMethod,
    /// The fields as a client would send them (formatting varies, e.g. `062-000`).
    pub raw: Vec<(&'static str, String)>,
    /// The parsed, normalised values.
    pub data: AccountData,
    pub status: AccountStatus,
    pub confirm_status: ConfirmStatus,
    pub created_at: DateTime<Utc>,
}

impl AccountSeed {
    /// The raw value of `field`, as a client would send it.
    pub fn raw(&self, field: &str) -> Option<&str> {
        self.raw
            .iter()
            .find(|(name, _)| *name == field)
            .map(|(_, value)| value.as_str())
    }
}

/// Generates the data of one bench database.
#[derive(Debug, Clone)]
pub struct Generator {
    /// Accounts (and receivers) seeded: indices `0..seeded`.
    pub seeded: u64,
    salt: u64,
    /// `created_at` of index 0; later indices are newer.
    start: DateTime<Utc>,
    /// Time between consecutive indices.
    step: Duration,
    /// With [`Generator::with_sql_ids`]: the tag of ids SQL can compute.
    sql_ids: Option<String>,
    /// With [`Generator::only`]: every account of this method.
    only: Option<PayoutMethod>,
}

/// The id `md5(tag || kind || i)::uuid`, which SQL (a pgbench script, a bulk insert) computes
/// from the index alone: `md5('<tag>' || 'r' || 42)::uuid`.
pub fn sql_uuid(tag: &str, kind: &str, i: u64) -> Uuid {
    use md5::{Digest, Md5};
    let digest: [u8; 16] = Md5::digest(format!("{tag}{kind}{i}").as_bytes()).into();
    Uuid::from_bytes(digest)
}

impl Generator {
    /// Data for `seeded` receivers with one account each, created over the last two years.
    pub fn new(seeded: u64, salt: u64) -> Self {
        let span = Duration::days(730);
        let per = i64::try_from(seeded.max(1)).unwrap_or(i64::MAX);
        Self {
            seeded,
            salt,
            start: Utc::now() - span - Duration::days(1),
            step: Duration::microseconds(span.num_microseconds().unwrap_or(0) / per),
            sql_ids: None,
            only: None,
        }
    }

    /// The same data, but receiver `i` gets the id [`sql_uuid`]`(tag, "r", i)` and its account
    /// [`sql_uuid`]`(tag, "a", i)`, so that SQL can pick a random seeded row without a lookup.
    pub fn with_sql_ids(mut self, tag: &str) -> Self {
        self.sql_ids = Some(tag.to_owned());
        self
    }

    /// The same data, but every account of `method` (a rail's file holds one method).
    pub fn only(mut self, method: PayoutMethod) -> Self {
        self.only = Some(method);
        self
    }

    /// A pseudo-random number for index `i` and purpose `stream`.
    fn hash(&self, i: u64, stream: u64) -> u64 {
        mix(i ^ mix(stream.wrapping_mul(0x1000_0000_01B3) ^ self.salt))
    }

    /// A random-looking version-4 UUID for index `i` and purpose `stream`.
    fn uuid(&self, i: u64, stream: u64) -> Uuid {
        let high = self.hash(i, stream);
        let low = self.hash(i, stream + 1000);
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&high.to_be_bytes());
        bytes[8..].copy_from_slice(&low.to_be_bytes());
        uuid::Builder::from_random_bytes(bytes).into_uuid()
    }

    /// Receiver `i`'s id.
    pub fn receiver_id(&self, i: u64) -> Uuid {
        match &self.sql_ids {
            Some(tag) => sql_uuid(tag, "r", i),
            None => self.uuid(i, 1),
        }
    }

    /// Account `i`'s id.
    pub fn account_id(&self, i: u64) -> Uuid {
        match &self.sql_ids {
            Some(tag) => sql_uuid(tag, "a", i),
            None => self.uuid(i, 2),
        }
    }

    /// When receiver `i` was created.
    fn created_at(&self, i: u64) -> DateTime<Utc> {
        self.start + self.step * i32::try_from(i).unwrap_or(i32::MAX)
    }

    /// Receiver `i`.
    pub fn receiver(&self, i: u64) -> ReceiverSeed {
        let h = self.hash(i, 10);
        let first = FIRST_NAMES[(h % 24) as usize];
        let last = LAST_NAMES[((h >> 8) % 24) as usize];
        let (city, state, postcode) = CITIES[((h >> 16) % 8) as usize];
        let pending = (h >> 24).is_multiple_of(10);
        let dob = NaiveDate::from_ymd_opt(1950, 1, 1).unwrap_or_default()
            + Duration::days(((h >> 28) % 18_000) as i64);
        let email_local = format!("{first}.{last}.{i}")
            .to_lowercase()
            .replace(['\'', 'ü'], "");
        ReceiverSeed {
            id: self.receiver_id(i),
            first_name: first.to_owned(),
            last_name: last.to_owned(),
            email: format!("{email_local}@example.com"),
            gender: match (h >> 40) % 5 {
                0 => None,
                1 | 2 => Some("F".to_owned()),
                _ => Some("M".to_owned()),
            },
            dob,
            dialcode: "61".to_owned(),
            phone: format!("4{:08}", scramble(i, 100_000_000)),
            address: format!(
                "{} {}",
                1 + (h >> 44) % 400,
                STREETS[((h >> 52) % 12) as usize]
            ),
            city: city.to_owned(),
            state: state.to_owned(),
            country: "AUS".to_owned(),
            postcode: postcode.to_owned(),
            reference: ((h >> 56) % 10 < 7).then(|| format!("CUST-{i:08}")),
            applicant_id: format!("sbx_app_{}", self.uuid(i, 3).simple()),
            status: if pending { 1 } else { 2 },
            kyc_status: if pending { 0 } else { 1 },
            created_at: self.created_at(i),
        }
    }

    /// The payout method of account `i` ([`Generator::only`]'s, if given): 35 % direct entry, 25 % ACH, 10 % EFT, 15 % SEPA,
    /// 10 % NZ direct credit, 5 % digital.
    pub fn method(&self, i: u64) -> PayoutMethod {
        if let Some(method) = self.only {
            return method;
        }
        match self.hash(i, 20) % 100 {
            0..35 => PayoutMethod::DirectEntry,
            35..60 => PayoutMethod::Ach,
            60..70 => PayoutMethod::Eft,
            70..85 => PayoutMethod::Sepa,
            85..95 => PayoutMethod::DirectCredit,
            _ => PayoutMethod::Digital,
        }
    }

    /// Account `i` (of receiver `i`).
    pub fn account(&self, i: u64) -> anyhow::Result<AccountSeed> {
        let method = self.method(i);
        let h = self.hash(i, 21);
        let account_type = if h % 10 < 7 { "checking" } else { "savings" };
        let raw: Vec<(&'static str, String)> = match method {
            PayoutMethod::DirectEntry => {
                // One in 100 reuses the number of an older account (at whatever branch).
                let number_of = if i % 100 == 37 && i < self.seeded {
                    i - 37
                } else {
                    i
                };
                let bsb = bsb(self.hash(i, 22) % BSB_POOL);
                let bsb = if h.is_multiple_of(2) {
                    format!("{}-{}", &bsb[..3], &bsb[3..])
                } else {
                    bsb
                };
                vec![
                    ("bsb", bsb),
                    (
                        "account_number",
                        format!("{:09}", scramble(number_of, 1_000_000_000)),
                    ),
                ]
            }
            PayoutMethod::Ach => vec![
                ("routing_number", aba(self.hash(i, 22) % ABA_POOL)),
                (
                    "account_number",
                    format!("{:010}", scramble(i, 10_000_000_000)),
                ),
                ("account_type", account_type.to_owned()),
            ],
            PayoutMethod::Eft => {
                let routing = canadian(self.hash(i, 22) % CA_POOL);
                // Half in the paper form TTTTT-III, which the service normalises.
                let routing = if h.is_multiple_of(2) {
                    format!("{}-{}", &routing[4..], &routing[1..4])
                } else {
                    routing
                };
                vec![
                    ("routing_number", routing),
                    (
                        "account_number",
                        format!("{:010}", scramble(i, 10_000_000_000)),
                    ),
                    ("account_type", account_type.to_owned()),
                ]
            }
            PayoutMethod::Sepa => {
                let (blz, bic) = DE_BANKS[(self.hash(i, 22) % 10) as usize];
                let iban = german_iban(blz, scramble(i, 10_000_000_000));
                let iban = if h.is_multiple_of(2) {
                    paper_iban(&iban)
                } else {
                    iban
                };
                vec![("iban", iban), ("bic", bic.to_owned())]
            }
            PayoutMethod::DirectCredit => vec![("account_number", self.nz_account(i)?)],
            PayoutMethod::Digital => {
                let first = FIRST_NAMES[(h % 24) as usize];
                let last = LAST_NAMES[((h >> 8) % 24) as usize];
                let local = format!("{first}.{last}.pay{i}")
                    .to_lowercase()
                    .replace(['\'', 'ü'], "");
                vec![
                    ("recipient", format!("{local}@example.net")),
                    ("name", format!("{first} {last}")),
                ]
            }
        };
        let receiver_id = self.receiver_id(i);
        let mut fields = RawAccount {
            receiver_id: Some(receiver_id.to_string()),
            ..RawAccount::default()
        };
        for (name, value) in &raw {
            let field = AccountField::from_name(name)
                .with_context(|| format!("generated account {i} has unknown field {name}"))?;
            *fields.slot(field) = Some(value.clone());
        }
        let input = AccountInput::parse(method, &fields).map_err(|errors| {
            anyhow::anyhow!(
                "generated account {i} ({}) is invalid: {errors:?}",
                method.name()
            )
        })?;
        let (status, confirm_status) = match (h >> 8) % 100 {
            0..80 => (AccountStatus::Completed, ConfirmStatus::Confirmed),
            80..98 => (AccountStatus::Pending, ConfirmStatus::Unconfirmed),
            _ => (AccountStatus::Failed, ConfirmStatus::Confirmed),
        };
        Ok(AccountSeed {
            id: self.account_id(i),
            receiver_id,
            method,
            raw,
            data: AccountData::from_details(&input.details),
            status,
            confirm_status,
            created_at: self.created_at(i) + Duration::minutes(5),
        })
    }

    /// A valid New Zealand account number, unique per index: a bijective scramble of `i` picks
    /// the bank and branch (100 of them) and a block of 100 bases (100 000 blocks each); the last
    /// two base digits are searched for the check digit (algorithms A and B weigh them 2 and 1,
    /// so every block has a valid number).
    fn nz_account(&self, i: u64) -> anyhow::Result<String> {
        let slot = scramble(i, 10_000_000);
        let block = slot % 100_000;
        let branch_slot = slot / 100_000;
        let banks = NZ_BANKS.len() as u64;
        let (bank, low, _) = NZ_BANKS[(branch_slot % banks) as usize];
        // At most 15 branches per bank, and every range is wider than that.
        let branch = low + branch_slot / banks;
        let suffix = ["00", "01", "02", "025"][(self.hash(i, 23) % 4) as usize];
        for last in 0..100 {
            let candidate = format!("{bank:02}-{branch:04}-{:07}-{suffix}", block * 100 + last);
            if domain::account::nz::NzAccountNumber::parse(&candidate).is_ok() {
                return Ok(candidate);
            }
        }
        anyhow::bail!("no valid New Zealand account number in block {block} of {bank}-{branch}")
    }
}

/// BSB number `k` of the pool: a bank prefix and three branch digits.
fn bsb(k: u64) -> String {
    format!(
        "{}{:03}",
        BSB_PREFIXES[(k % 16) as usize],
        mix(k ^ 0xB5B) % 1000
    )
}

/// ABA routing number `k` of the pool: a routing symbol, six digits, and the 3-7-1 check digit.
fn aba(k: u64) -> String {
    let body = format!(
        "{:02}{:06}",
        ABA_SYMBOLS[(k % 14) as usize],
        mix(k ^ 0xABA) % 1_000_000
    );
    let digits: Vec<u64> = body.bytes().map(|b| u64::from(b - b'0')).collect();
    let weighted: u64 = digits
        .iter()
        .zip([3, 7, 1].iter().cycle())
        .map(|(digit, weight)| digit * weight)
        .sum();
    // The ninth digit has weight 1: it makes the sum a multiple of 10.
    format!("{body}{}", (10 - weighted % 10) % 10)
}

/// Canadian routing number `k` of the pool, electronic form `0IIITTTTT`.
fn canadian(k: u64) -> String {
    format!(
        "0{}{:05}",
        CA_INSTITUTIONS[(k % 10) as usize],
        mix(k ^ 0xCA) % 100_000
    )
}

/// A German IBAN for bank code `blz` and account `account` (10 digits), with its check digits.
fn german_iban(blz: &str, account: u64) -> String {
    let bban = format!("{blz}{account:010}");
    // Check digits: 98 - (BBAN, then "DE00" as digits D=13 E=14) mod 97.
    let remainder = format!("{bban}131400")
        .bytes()
        .fold(0u64, |r, b| (r * 10 + u64::from(b - b'0')) % 97);
    format!("DE{:02}{bban}", 98 - remainder)
}

/// The paper form of an IBAN: groups of four separated by spaces.
fn paper_iban(iban: &str) -> String {
    iban.as_bytes()
        .chunks(4)
        .map(|chunk| String::from_utf8_lossy(chunk).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_generates_valid_accounts() {
        let generator = Generator::new(10_000, 7);
        for i in 0..5_000 {
            if let Err(e) = generator.account(i) {
                panic!("{e:#}");
            }
        }
        let mut methods: Vec<&str> = (0..1000).map(|i| generator.method(i).name()).collect();
        methods.sort_unstable();
        methods.dedup();
        assert_eq!(methods.len(), 6);
    }

    #[test]
    fn only_one_method_when_asked() {
        for &method in PayoutMethod::ALL {
            let generator = Generator::new(100, 7).only(method);
            for i in 0..100 {
                let account = generator.account(i).unwrap_or_else(|e| panic!("{e:#}"));
                assert_eq!(account.method, method);
            }
        }
    }

    #[test]
    fn sql_ids_are_what_postgres_computes() {
        // PostgreSQL 15: SELECT md5('t1' || 'r' || 42)::uuid
        assert_eq!(
            sql_uuid("t1", "r", 42).to_string(),
            "77f9d8e5-8c47-3c75-a53a-0dde90bacb02"
        );
        let generator = Generator::new(10, 7).with_sql_ids("t1");
        assert_eq!(generator.receiver_id(3), sql_uuid("t1", "r", 3));
        assert_eq!(
            generator.account(3).map(|a| a.id).ok(),
            Some(sql_uuid("t1", "a", 3))
        );
    }

    #[test]
    fn known_check_digits() {
        assert_eq!(
            german_iban("37040044", 532_013_000),
            "DE89370400440532013000"
        );
        assert_eq!(aba(0).len(), 9);
    }

    #[test]
    fn account_numbers_and_recipients_are_unique() {
        // Nothing seeded, so no account reuses an older one's number.
        let generator = Generator::new(0, 7);
        let mut seen = std::collections::HashSet::new();
        for i in 0..20_000 {
            let account = generator.account(i).unwrap_or_else(|e| panic!("{e:#}"));
            for field in [
                AccountField::AccountNumber,
                AccountField::Iban,
                AccountField::Recipient,
            ] {
                if let Some(value) = account.data.expose(field) {
                    assert!(
                        seen.insert(value.to_owned()),
                        "{field:?} {value} repeats at {i}"
                    );
                }
            }
        }
    }
}
