//! Canadian EFT account details: the routing number (institution and transit) and the account
//! number.
//!
//! Each type can only be built through its `parse`, which trims surrounding whitespace first.
//! The errors say what is wrong with the value only; mapping them to API error codes is the
//! caller's business.

use std::fmt;

use bank_codes::digits::is_ascii_digits;

/// Financial institution numbers assigned by Payments Canada, sorted so they can be
/// binary-searched, each with the institution's name as listed.
///
/// Sources: the union of two transcriptions of Payments Canada's financial institution list (the
/// MICR "Financial Institutions" members list): an older one (repository `smmratnow/xxxdmo`,
/// `financial-institutions/all-Institution-data.js`, matching the Wikipedia "Routing number
/// (Canada)" table) and a newer one adding, among others, 362 Wells Fargo, 370 Wealth One, 374
/// Motus and 383 Peoples Bank. Numbers that have since been retired are kept: rejecting a live
/// institution would block a payout, while a retired number is refused by the clearing system
/// anyway.
const INSTITUTIONS: &[(&str, &str)] = &[
    ("001", "Bank of Montreal"),
    ("002", "The Bank of Nova Scotia"),
    ("003", "Royal Bank of Canada"),
    ("004", "The Toronto-Dominion Bank"),
    ("006", "National Bank of Canada"),
    ("010", "Canadian Imperial Bank of Commerce"),
    ("016", "HSBC Bank Canada"),
    ("030", "Canadian Western Bank"),
    ("039", "Laurentian Bank of Canada"),
    ("177", "Bank of Canada"),
    ("219", "ATB Financial"),
    ("240", "Royal Bank of Scotland N.V. (Canada Branch)"),
    ("241", "Bank of America, National Association"),
    ("242", "The Bank of New York Mellon"),
    ("245", "MUFG Bank, Ltd., Canada Branch"),
    ("250", "BNP Paribas"),
    ("260", "Citibank Canada"),
    ("265", "Deutsche Bank AG"),
    ("269", "Mega International Commercial Bank Co., Ltd."),
    ("270", "JPMorgan Chase Bank, National Association"),
    ("275", "KEB Hana Bank Canada"),
    ("277", "Mizuho Bank Ltd."),
    ("290", "UBS Bank (Canada)"),
    ("292", "Societe Generale (Canada Branch)"),
    ("294", "SBI Canada Bank"),
    ("301", "Sumitomo Mitsui Banking Corporation, Canada Branch"),
    ("303", "Amex Bank of Canada"),
    ("307", "Industrial and Commercial Bank of China (Canada)"),
    ("308", "Bank of China (Canada)"),
    ("309", "Vancity Community Investment Bank"),
    ("310", "First Nations Bank of Canada"),
    ("311", "BofA Canada Bank"),
    ("314", "J.P. Morgan Bank Canada"),
    ("315", "CTBC Bank Corp. (Canada)"),
    ("318", "U.S. Bank National Association"),
    ("320", "President's Choice Bank"),
    ("321", "Habib Canadian Bank"),
    ("322", "Rabobank Canada"),
    ("323", "Capital One Bank (Canada Branch)"),
    ("326", "President's Choice Financial"),
    ("327", "State Street"),
    ("328", "Citibank, N.A."),
    ("330", "Comerica Bank"),
    ("332", "First Commercial Bank"),
    ("333", "HSBC Bank USA National Association"),
    ("334", "VersaBank"),
    ("335", "United Overseas Bank Limited"),
    ("336", "Maple Bank"),
    ("338", "Canadian Tire Bank"),
    ("339", "UBS AG Canada Branch"),
    ("340", "ICICI Bank Canada"),
    ("342", "Bank West"),
    ("343", "ADS Canadian Bank"),
    ("344", "General Bank of Canada"),
    ("345", "Fifth Third Bank, National Association"),
    ("346", "Societe Generale (Canada Branch)"),
    ("347", "Bridgewater Bank"),
    ("349", "The Northern Trust Company, Canada Branch"),
    ("352", "Digital Commerce Bank"),
    ("354", "Jameson Bank"),
    ("355", "Shinhan Bank Canada"),
    ("356", "Citco Bank Canada"),
    ("357", "M&T Bank"),
    ("358", "HomEquity Bank"),
    ("359", "Duo Bank of Canada"),
    ("360", "Barclays Bank PLC, Canada Branch"),
    ("361", "Home Bank"),
    (
        "362",
        "Wells Fargo Bank, National Association, Canadian Branch",
    ),
    ("365", "PNC Bank Canada Branch"),
    ("366", "China Construction Bank Toronto Branch"),
    ("368", "Rogers Bank"),
    ("370", "Wealth One Bank of Canada"),
    ("372", "Bank of China, Toronto Branch"),
    ("374", "Motus Bank"),
    ("376", "Exchange Bank of Canada"),
    ("377", "RFA Bank of Canada"),
    ("378", "Cidel Bank Canada"),
    ("381", "Haventree Bank"),
    ("382", "Coast Capital Savings Federal Credit Union"),
    ("383", "Peoples Bank of Canada"),
    ("507", "Community Trust Company"),
    ("509", "The Canada Trust Company"),
    ("522", "Trust La Laurentienne du Canada Inc."),
    ("532", "Effort Trust Company"),
    ("536", "Investors Group Trust Co. Ltd."),
    ("540", "Manulife Bank of Canada"),
    ("548", "CIBC Trust Corporation"),
    ("550", "Montreal Trust Company of Canada"),
    ("551", "Sun Life Financial Trust Inc."),
    ("568", "Peace Hills Trust Company"),
    ("570", "The Royal Trust Company"),
    ("580", "Royal Trust Corporation of Canada"),
    ("590", "National Trust Company"),
    ("592", "Royal Bank Mortgage Corporation"),
    ("597", "TD Mortgage Corporation"),
    ("603", "TD Pacific Mortgage Corporation"),
    ("604", "HSBC Mortgage Corporation (Canada)"),
    ("606", "Scotia Mortgage Corporation"),
    ("608", "CS Alterna Bank"),
    ("612", "Natcan Trust Company"),
    ("614", "Tangerine Bank"),
    ("618", "B2B Bank"),
    ("620", "ResMor Trust Company"),
    ("621", "Peoples Trust Company"),
    ("623", "Equitable Bank"),
    ("625", "Industrial Alliance Trust Inc."),
    ("626", "Manulife Trust Company"),
    ("627", "Home Trust Company"),
    ("630", "Household Trust Company"),
    ("701", "Edward Jones"),
    ("702", "The Manufacturers Life Insurance Company"),
    ("703", "Wealthsimple Investments Inc."),
    ("803", "Latvian Credit Union Limited"),
    ("807", "Communication Technologies Credit Union Limited"),
    ("808", "Arnstein Community Credit Union Limited"),
    ("809", "Central 1 Credit Union (British Columbia)"),
    ("810", "All Trans Financial Services Credit Union Limited"),
    ("815", "Federation des caisses Desjardins du Quebec"),
    ("819", "Caisse Populaire Group Financier Ltee"),
    ("828", "Central 1 Credit Union (Ontario)"),
    ("829", "Caisse Desjardins Ontario Credit Union Inc."),
    ("830", "Airline Financial Credit Union Limited"),
    ("837", "Meridian Credit Union"),
    ("839", "Atlantic Central"),
    ("840", "Dundalk District Credit Union Limited"),
    ("842", "Alterna Savings and Credit Union"),
    ("844", "Goderich Community Credit Union Limited"),
    ("846", "Ontario Civil Service Credit Union Limited"),
    ("849", "Atlantic Central"),
    ("853", "Concentra Bank"),
    ("854", "Golden Horseshoe Credit Union Limited"),
    ("865", "Caisse populaire acadienne ltee"),
    ("869", "Central 1 Credit Union"),
    ("879", "Credit Union Central of Manitoba Limited"),
    ("889", "Credit Union Central of Saskatchewan"),
    ("890", "Caisse populaire Alliance Limitee"),
    ("899", "Credit Union Central Alberta Limited"),
];

// ---------------------------------------------------------------------------------------------

/// Why a Canadian routing number was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CaRoutingNumberError {
    /// The input was empty or only whitespace.
    #[error("routing number is empty")]
    Empty,
    /// The input is neither `0IIITTTTT` nor `TTTTT-III`.
    #[error("routing number must be 0IIITTTTT or TTTTT-III")]
    Format,
    /// The institution number is not one Payments Canada has assigned.
    #[error("financial institution number is unknown")]
    UnknownInstitution,
}

/// A Canadian routing number in its electronic form `0IIITTTTT`: a leading zero, the 3-digit
/// financial institution number and the 5-digit branch transit number (e.g. `000312345` for
/// transit 12345 of institution 003).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CaRoutingNumber(String);

impl CaRoutingNumber {
    /// Parses the electronic form `0IIITTTTT` (e.g. `000312345`) or the paper (MICR) form
    /// `TTTTT-III` (e.g. `12345-003`), which is normalised to the electronic form.
    ///
    /// Fails with [`Format`](CaRoutingNumberError::Format) for anything else and with
    /// [`UnknownInstitution`](CaRoutingNumberError::UnknownInstitution) when the institution
    /// number is not in Payments Canada's list.
    pub fn parse(raw: &str) -> Result<Self, CaRoutingNumberError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(CaRoutingNumberError::Empty);
        }
        let electronic = if let Some((transit, institution)) = text.split_once('-') {
            if !is_ascii_digits(transit, 5..=5) || !is_ascii_digits(institution, 3..=3) {
                return Err(CaRoutingNumberError::Format);
            }
            format!("0{institution}{transit}")
        } else {
            if !is_ascii_digits(text, 9..=9) || !text.starts_with('0') {
                return Err(CaRoutingNumberError::Format);
            }
            text.to_owned()
        };
        let institution = &electronic[1..4];
        if INSTITUTIONS
            .binary_search_by(|(number, _)| (*number).cmp(institution))
            .is_err()
        {
            return Err(CaRoutingNumberError::UnknownInstitution);
        }
        Ok(Self(electronic))
    }

    /// The electronic form `0IIITTTTT`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The 3-digit financial institution number (e.g. `003`).
    pub fn institution(&self) -> &str {
        // The value is 9 ASCII digits, so these byte ranges are character boundaries.
        &self.0[1..4]
    }

    /// The 5-digit branch transit number (e.g. `12345`).
    pub fn transit(&self) -> &str {
        &self.0[4..9]
    }
}

impl fmt::Display for CaRoutingNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------

/// Why a Canadian account number was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CaAccountNumberError {
    /// The input was empty or only whitespace.
    #[error("account number is empty")]
    Empty,
    /// The input is not 7 to 12 ASCII digits.
    #[error("account number must be 7 to 12 digits")]
    Format,
}

/// A Canadian bank account number: 7 to 12 ASCII digits, leading zeros kept.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CaAccountNumber(String);

impl CaAccountNumber {
    /// Parses an account number such as `1234567`.
    pub fn parse(raw: &str) -> Result<Self, CaAccountNumberError> {
        let text = raw.trim();
        if text.is_empty() {
            return Err(CaAccountNumberError::Empty);
        }
        if !is_ascii_digits(text, 7..=12) {
            return Err(CaAccountNumberError::Format);
        }
        Ok(Self(text.to_owned()))
    }

    /// The digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CaAccountNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_institution_table_is_sorted_unique_and_well_formed() {
        assert!(INSTITUTIONS.windows(2).all(|pair| pair[0].0 < pair[1].0));
        assert!(
            INSTITUTIONS
                .iter()
                .all(|(number, name)| is_ascii_digits(number, 3..=3) && !name.is_empty())
        );
        for required in [
            "001", "002", "003", "004", "006", "010", "016", "030", "039", "177", "219", "260",
            "614", "815", "828", "829", "837", "839", "865", "879", "889", "899",
        ] {
            assert!(
                INSTITUTIONS.iter().any(|(number, _)| *number == required),
                "{required}"
            );
        }
    }

    #[test]
    fn accepts_the_electronic_form() {
        // BMO transit 25039 and CIBC transit 02282, as published in the branch directories.
        let bmo = CaRoutingNumber::parse("000125039").unwrap();
        assert_eq!(bmo.as_str(), "000125039");
        assert_eq!(bmo.institution(), "001");
        assert_eq!(bmo.transit(), "25039");
        let cibc = CaRoutingNumber::parse(" 001002282 ").unwrap();
        assert_eq!(cibc.institution(), "010");
        assert_eq!(cibc.transit(), "02282");
        assert_eq!(cibc.to_string(), "001002282");
    }

    #[test]
    fn normalises_the_paper_form() {
        for (raw, electronic, institution, transit) in [
            ("12345-003", "000312345", "003", "12345"),
            ("25039-001", "000125039", "001", "25039"),
            ("00011-815", "081500011", "815", "00011"),
            ("\t60172-828 ", "082860172", "828", "60172"),
        ] {
            let number = CaRoutingNumber::parse(raw).unwrap();
            assert_eq!(number.as_str(), electronic, "{raw}");
            assert_eq!(number.institution(), institution);
            assert_eq!(number.transit(), transit);
            assert_eq!(CaRoutingNumber::parse(electronic).unwrap(), number);
        }
    }

    #[test]
    fn rejects_unknown_institutions() {
        for raw in [
            "099912345",
            "12345-999",
            "000012345",
            "12345-005",
            "070012345",
        ] {
            assert_eq!(
                CaRoutingNumber::parse(raw),
                Err(CaRoutingNumberError::UnknownInstitution),
                "{raw}"
            );
        }
    }

    #[test]
    fn rejects_bad_format() {
        assert_eq!(CaRoutingNumber::parse(""), Err(CaRoutingNumberError::Empty));
        assert_eq!(
            CaRoutingNumber::parse(" \n"),
            Err(CaRoutingNumberError::Empty)
        );
        for raw in [
            "100312345",
            "00031234",
            "0003123456",
            "12345003",
            "1234-003",
            "123456-003",
            "12345-03",
            "12345-0003",
            "12345--003",
            "-12345003",
            "12345 003",
            "12345-00a",
            "0003-12345",
            "０００３１２３４５",
            "１２３４５-００３",
            "12345-003\u{0301}",
            "🍁",
        ] {
            assert_eq!(
                CaRoutingNumber::parse(raw),
                Err(CaRoutingNumberError::Format),
                "{raw}"
            );
        }
        assert_eq!(
            CaRoutingNumber::parse(&"0".repeat(100_000)),
            Err(CaRoutingNumberError::Format)
        );
        let long_paper = format!("{}-003", "1".repeat(100_000));
        assert_eq!(
            CaRoutingNumber::parse(&long_paper),
            Err(CaRoutingNumberError::Format)
        );
    }

    #[test]
    fn account_number_accepts_seven_to_twelve_digits() {
        for raw in ["1234567", "123456789012", "0001234"] {
            assert_eq!(CaAccountNumber::parse(raw).unwrap().as_str(), raw);
        }
        assert_eq!(
            CaAccountNumber::parse(" 7654321\t").unwrap().to_string(),
            "7654321"
        );
    }

    #[test]
    fn account_number_rejects_other_input() {
        assert_eq!(CaAccountNumber::parse(""), Err(CaAccountNumberError::Empty));
        for raw in [
            "123456",
            "1234567890123",
            "123-4567",
            "1234 567",
            "12345678a",
            "１２３４５６７",
        ] {
            assert_eq!(
                CaAccountNumber::parse(raw),
                Err(CaAccountNumberError::Format),
                "{raw}"
            );
        }
        assert_eq!(
            CaAccountNumber::parse(&"3".repeat(100_000)),
            Err(CaAccountNumberError::Format)
        );
    }
}
