//! SEPA credit-transfer account details: the IBAN and the BIC, and whether the two agree.
//!
//! Each type can only be built through its `parse`, which trims surrounding whitespace first.
//! The errors say what is wrong with the value only; mapping them to API error codes is the
//! caller's business.
//!
//! The IBAN's country formats and check digits and the BIC's shape are `bank_codes`' (one copy
//! of each rule, which the bank file formats apply too); SEPA membership and which BIC
//! countries go with which IBAN countries are this module's own tables.

use std::fmt;

use bank_codes::{bic, iban};

/// The IBAN country codes of the SEPA schemes' geographical scope (EPC409-09, the European
/// Payments Council's list), sorted so they can be binary-searched.
///
/// - the 27 EU member states;
/// - the other EEA states: Iceland, Liechtenstein, Norway;
/// - Switzerland, the United Kingdom, Monaco, San Marino, Vatican City, Andorra;
/// - Gibraltar, the one territory with its own IBAN prefix (Guernsey, Jersey and the Isle of Man
///   use `GB` IBANs; the French overseas departments and collectivities in SEPA use `FR`; Åland
///   uses `FI`; the Azores and Madeira `PT`; the Canary Islands, Ceuta and Melilla `ES`);
/// - the enlargement countries the EPC admitted in 2024-2025: Albania and Montenegro (November
///   2024), Moldova and North Macedonia (March 2025) and Serbia (May 2025).
const SEPA_COUNTRIES: [&str; 42] = [
    "AD", "AL", "AT", "BE", "BG", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GB", "GI",
    "GR", "HR", "HU", "IE", "IS", "IT", "LI", "LT", "LU", "LV", "MC", "MD", "ME", "MK", "MT", "NL",
    "NO", "PL", "PT", "RO", "RS", "SE", "SI", "SK", "SM", "VA",
];

/// Territories whose banks have BICs under their own ISO code but issue IBANs of another
/// country: (IBAN country, BIC country).
///
/// Guernsey, Jersey and the Isle of Man use `GB` IBANs; the French overseas departments and
/// collectivities inside SEPA (French Guiana, Guadeloupe, Martinique, Réunion, Mayotte,
/// Saint-Pierre-et-Miquelon, Saint-Barthélemy, Saint-Martin) use `FR` IBANs; Åland uses `FI`
/// IBANs.
const TERRITORY_BICS: [(&str, &str); 12] = [
    ("FI", "AX"),
    ("FR", "BL"),
    ("FR", "GF"),
    ("FR", "GP"),
    ("FR", "MF"),
    ("FR", "MQ"),
    ("FR", "PM"),
    ("FR", "RE"),
    ("FR", "YT"),
    ("GB", "GG"),
    ("GB", "IM"),
    ("GB", "JE"),
];

// ---------------------------------------------------------------------------------------------

/// Why an IBAN was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IbanError {
    /// The input was empty or only whitespace.
    #[error("IBAN is empty")]
    Empty,
    /// Wrong characters, an unknown country, or a length or BBAN format that is not the
    /// country's.
    #[error("IBAN format or length is not valid for its country")]
    Format,
    /// The format is right but the mod-97 check digits are not.
    #[error("IBAN check digits are not valid")]
    CheckDigits,
    /// A valid IBAN of a country outside the SEPA schemes' scope.
    #[error("IBAN country is not in the SEPA area")]
    NotSepa,
}

/// A valid IBAN of a SEPA country, stored in its electronic form: upper-case, without spaces
/// (e.g. `DE89370400440532013000`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Iban(String);

impl Iban {
    /// Parses an IBAN in electronic or paper form, in any letter case, e.g.
    /// `DE89370400440532013000` or `de89 3704 0044 0532 0130 00`.
    ///
    /// Whitespace anywhere is removed and letters are upper-cased. Checks, in order: the
    /// country's length and BBAN format ([`Format`](IbanError::Format)), the mod-97 check digits
    /// ([`CheckDigits`](IbanError::CheckDigits)), then SEPA membership
    /// ([`NotSepa`](IbanError::NotSepa)).
    pub fn parse(raw: &str) -> Result<Self, IbanError> {
        let compact = iban::parse(raw).map_err(|e| match e {
            iban::IbanError::Empty => IbanError::Empty,
            iban::IbanError::Format => IbanError::Format,
            iban::IbanError::CheckDigits => IbanError::CheckDigits,
        })?;
        let country = compact.get(0..2).unwrap_or_default();
        if SEPA_COUNTRIES.binary_search(&country).is_err() {
            return Err(IbanError::NotSepa);
        }
        Ok(Self(compact))
    }

    /// The electronic form: upper-case, without spaces.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The two-letter country code the IBAN starts with (e.g. `DE`).
    pub fn country(&self) -> &str {
        // The value is ASCII, so these byte ranges are character boundaries.
        &self.0[0..2]
    }
}

impl fmt::Display for Iban {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a BIC was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BicError {
    /// The input was empty or only whitespace.
    #[error("BIC is empty")]
    Empty,
    /// The input is not a BIC: 4 letters, an existing 2-letter country, 2 letters or digits,
    /// and optionally 3 more.
    #[error("BIC format is not valid")]
    Format,
}

/// A business identifier code (ISO 9362, "SWIFT code"), upper-case, 8 or 11 characters (e.g.
/// `DEUTDEFF` or `DEUTDEFF500`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bic(String);

impl Bic {
    /// Parses a BIC in any letter case: 4 letters (the institution), an assigned ISO 3166-1
    /// alpha-2 country (or `XK`, which SWIFT uses for Kosovo), 2 letters or digits (the
    /// location) and optionally 3 letters or digits (the branch).
    ///
    /// The 11-character form is kept as given: `DEUTDEFFXXX` is not shortened to `DEUTDEFF`.
    pub fn parse(raw: &str) -> Result<Self, BicError> {
        bic::parse(raw).map(Self).map_err(|e| match e {
            bic::BicError::Empty => BicError::Empty,
            bic::BicError::Format => BicError::Format,
        })
    }

    /// The code, upper-case.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The two-letter country code (characters 5 and 6, e.g. `DE`).
    pub fn country(&self) -> &str {
        // The value is ASCII, so these byte ranges are character boundaries.
        &self.0[4..6]
    }
}

impl fmt::Display for Bic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// True when `bic` can belong to the bank holding `iban`.
///
/// Accepted: the same country, or a territory whose banks' BICs carry the territory's own ISO
/// code while its IBANs carry the parent country's: a `GG`, `JE` or `IM` BIC with a `GB` IBAN,
/// an `AX` BIC with an `FI` IBAN, and a BIC of a French overseas department or collectivity in
/// SEPA (`GF`, `GP`, `MQ`, `RE`, `YT`, `PM`, `BL`, `MF`) with an `FR` IBAN. Nothing else: a
/// bank's BIC and IBAN country may legitimately differ in other rare cases (a branch abroad),
/// and those are refused.
pub fn bic_matches_iban(bic: &Bic, iban: &Iban) -> bool {
    bic.country() == iban.country() || TERRITORY_BICS.contains(&(iban.country(), bic.country()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// `iban` with its check digits recomputed, for building vectors.
    fn with_correct_check_digits(iban: &str) -> String {
        let digits = bank_codes::iban::check_digits(&iban[0..2], &iban[4..]);
        format!("{}{digits:02}{}", &iban[0..2], &iban[4..])
    }

    #[test]
    fn the_tables_are_sorted_and_unique() {
        assert!(SEPA_COUNTRIES.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(
            SEPA_COUNTRIES
                .iter()
                .all(|code| bic::is_assigned_country(code))
        );
        assert!(
            TERRITORY_BICS.iter().all(|(iban, bic)| {
                SEPA_COUNTRIES.contains(iban) && bic::is_assigned_country(bic)
            })
        );
    }

    #[test]
    fn vectors_get_the_iso_7064_check_digits() {
        assert_eq!(
            with_correct_check_digits("GB00WEST12345698765432"),
            "GB82WEST12345698765432"
        );
    }

    #[test]
    fn accepts_sepa_ibans_in_either_form() {
        for (raw, electronic, country) in [
            ("DE89370400440532013000", "DE89370400440532013000", "DE"),
            ("GB82WEST12345698765432", "GB82WEST12345698765432", "GB"),
            (
                "de89 3704 0044 0532 0130 00",
                "DE89370400440532013000",
                "DE",
            ),
            (
                "  GB82 WEST 1234 5698 7654 32\n",
                "GB82WEST12345698765432",
                "GB",
            ),
            ("gb82west12345698765432", "GB82WEST12345698765432", "GB"),
            (
                "DE89\u{00A0}3704\t0044 0532 0130 00",
                "DE89370400440532013000",
                "DE",
            ),
            // The SWIFT IBAN registry's example IBANs.
            (
                "FR1420041010050500013M02606",
                "FR1420041010050500013M02606",
                "FR",
            ),
            ("NL91ABNA0417164300", "NL91ABNA0417164300", "NL"),
            ("CH9300762011623852957", "CH9300762011623852957", "CH"),
            ("GI75NWBK000000007099453", "GI75NWBK000000007099453", "GI"),
            ("NO9386011117947", "NO9386011117947", "NO"),
            ("LI21088100002324013AA", "LI21088100002324013AA", "LI"),
            (
                "MT84MALT011000012345MTLCAST001S",
                "MT84MALT011000012345MTLCAST001S",
                "MT",
            ),
            (
                "AL47212110090000000235698741",
                "AL47212110090000000235698741",
                "AL",
            ),
            ("RS35260005601001611379", "RS35260005601001611379", "RS"),
        ] {
            let iban = Iban::parse(raw).unwrap();
            assert_eq!(iban.as_str(), electronic, "{raw}");
            assert_eq!(iban.to_string(), electronic);
            assert_eq!(iban.country(), country);
        }
    }

    #[test]
    fn rejects_bad_check_digits() {
        for raw in [
            "GB82WEST12345698765433",
            "DE88370400440532013000",
            "DE89370400440532013001",
            "DE00370400440532013000",
            "DE01370400440532013000",
            "GB82 WEST 1234 5698 7654 23",
        ] {
            assert_eq!(Iban::parse(raw), Err(IbanError::CheckDigits), "{raw}");
        }
    }

    #[test]
    fn rejects_check_digits_99() {
        // Find a DE account whose correct check digits are 02, then write them as 99, which
        // passes mod-97 too.
        let with_02 = (0..100_000)
            .map(|n| with_correct_check_digits(&format!("DE0037040044{n:010}")))
            .find(|iban| &iban[2..4] == "02")
            .unwrap();
        assert!(Iban::parse(&with_02).is_ok());
        let with_99 = format!("DE99{}", &with_02[4..]);
        assert_eq!(Iban::parse(&with_99), Err(IbanError::CheckDigits));
    }

    #[test]
    fn rejects_bad_format() {
        assert_eq!(Iban::parse(""), Err(IbanError::Empty));
        assert_eq!(Iban::parse(" \t "), Err(IbanError::Empty));
        let mut cases: Vec<String> = [
            // Too short and too long for Germany, with wrong check digits.
            "DE8937040044053201300",
            "DE893704004405320130000",
            // A country that issues no IBANs (a US account written like one).
            "US64SVBKUS6S3300958879",
            // Not IBAN characters, or not in IBAN order.
            "DE89-3704-0044-0532-0130-00",
            "DE89370400440532013000!",
            "ＤＥ89370400440532013000",
            "DE89370400440532013000\u{0301}",
            "DE8937040044053201300ß",
            "💶",
            "89DE370400440532013000",
            "D",
            "DE",
            "DE89",
        ]
        .map(str::to_owned)
        .to_vec();
        // The same mistakes with correct check digits: too short, too long, a letter where
        // Germany has digits, and countries that issue no IBANs.
        for bad in [
            "DE0037040044053201300",
            "DE003704004405320130000",
            "DE0037040044053201300A",
            "XX00370400440532013000",
            "ZZ00123456789",
        ] {
            cases.push(with_correct_check_digits(bad));
        }
        for raw in &cases {
            assert_eq!(Iban::parse(raw), Err(IbanError::Format), "{raw}");
        }
        assert_eq!(Iban::parse(&"A".repeat(100_000)), Err(IbanError::Format));
        assert_eq!(
            Iban::parse(&format!("DE89{}", "0".repeat(100_000))),
            Err(IbanError::Format)
        );
    }

    #[test]
    fn rejects_valid_ibans_outside_sepa() {
        // The IBAN registry's examples for Türkiye, Brazil, Saudi Arabia, Kosovo and Ukraine.
        for raw in [
            "TR330006100519786457841326",
            "BR1800360305000010009795493C1",
            "SA0380000000608010167519",
            "XK051212012345678906",
            "UA213223130000026007233566001",
        ] {
            assert_eq!(Iban::parse(raw), Err(IbanError::NotSepa), "{raw}");
        }
    }

    #[test]
    fn bic_accepts_eight_and_eleven_characters() {
        for (raw, code, country) in [
            ("DEUTDEFF", "DEUTDEFF", "DE"),
            ("DEUTDEFF500", "DEUTDEFF500", "DE"),
            ("deutdeff", "DEUTDEFF", "DE"),
            (" NWBKGB2L ", "NWBKGB2L", "GB"),
            ("BNPAFRPPXXX", "BNPAFRPPXXX", "FR"),
            ("RBKOXKPR", "RBKOXKPR", "XK"),
        ] {
            let bic = Bic::parse(raw).unwrap();
            assert_eq!(bic.as_str(), code, "{raw}");
            assert_eq!(bic.to_string(), code);
            assert_eq!(bic.country(), country);
        }
    }

    #[test]
    fn bic_rejects_bad_format() {
        assert_eq!(Bic::parse(""), Err(BicError::Empty));
        assert_eq!(Bic::parse("\n"), Err(BicError::Empty));
        for raw in [
            "DEUTDEF",
            "DEUTDEFF5",
            "DEUTDEFF50",
            "DEUTDEFF5000",
            "DEU1DEFF",
            "DEUTXXFF",
            "DEUTUKFF",
            "DEUT1EFF",
            "DEUT-DEFF",
            "DEUT DEFF",
            "DEUTDEF_",
            "DEUTDEFF50!",
            "ＤＥＵＴＤＥＦＦ",
            "DÉUTDEFF",
            "DEUTDEFẞ",
            "🏦🏦🏦🏦🏦🏦🏦🏦",
        ] {
            assert_eq!(Bic::parse(raw), Err(BicError::Format), "{raw}");
        }
        assert_eq!(Bic::parse(&"A".repeat(100_000)), Err(BicError::Format));
    }

    #[test]
    fn bic_matches_iban_by_country_and_known_territories() {
        let iban = |raw: &str| Iban::parse(raw).unwrap();
        let bic = |raw: &str| Bic::parse(raw).unwrap();
        let de = iban("DE89370400440532013000");
        let gb = iban("GB82WEST12345698765432");
        let fr = iban("FR1420041010050500013M02606");
        assert!(bic_matches_iban(&bic("DEUTDEFF"), &de));
        assert!(bic_matches_iban(&bic("DEUTDEFF500"), &de));
        assert!(bic_matches_iban(&bic("NWBKGB2L"), &gb));
        assert!(bic_matches_iban(&bic("ABCDJESH"), &gb));
        assert!(bic_matches_iban(&bic("ABCDGGSP"), &gb));
        assert!(bic_matches_iban(&bic("ABCDIMDX"), &gb));
        assert!(bic_matches_iban(&bic("ABCDGPGX"), &fr));
        assert!(bic_matches_iban(&bic("ABCDRERX"), &fr));
        assert!(!bic_matches_iban(&bic("NWBKGB2L"), &de));
        assert!(!bic_matches_iban(&bic("DEUTDEFF"), &gb));
        assert!(!bic_matches_iban(&bic("ABCDJESH"), &de));
        assert!(!bic_matches_iban(&bic("ABCDNCNX"), &fr));
        assert!(!bic_matches_iban(&bic("BNPAFRPP"), &gb));
    }
}
