//! The business identifier code (BIC, ISO 9362, "SWIFT code"): 4 letters (the institution), a
//! country, 2 letters or digits (the location) and optionally 3 more (the branch).

/// Why a text is not a BIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BicError {
    /// Empty or only whitespace.
    Empty,
    /// Not 8 or 11 letters and digits in the BIC's order, or a country that is not one.
    Format,
}

/// The BIC `raw` in upper case (`deutdeff` → `DEUTDEFF`): 4 letters, an assigned ISO 3166-1
/// alpha-2 country (or `XK`, which SWIFT uses for Kosovo), 2 letters or digits and optionally 3
/// letters or digits. Surrounding whitespace is ignored; the 11-character form is kept as
/// given (`DEUTDEFFXXX` is not shortened).
///
/// # Errors
/// Empty, or not a BIC.
pub fn parse(raw: &str) -> Result<String, BicError> {
    let text = raw.trim();
    if text.is_empty() {
        return Err(BicError::Empty);
    }
    let mut code = String::with_capacity(11);
    for c in text.chars() {
        if !c.is_ascii_alphanumeric() || code.len() == 11 {
            return Err(BicError::Format);
        }
        code.push(c.to_ascii_uppercase());
    }
    if code.len() != 8 && code.len() != 11 {
        return Err(BicError::Format);
    }
    let (Some(institution), Some(country)) = (code.get(0..4), code.get(4..6)) else {
        return Err(BicError::Format);
    };
    if !institution.chars().all(|c| c.is_ascii_uppercase()) || !is_bic_country(country) {
        return Err(BicError::Format);
    }
    Ok(code)
}

/// Whether `value` is already a BIC as [`parse`] gives it (upper case, no blanks).
#[must_use]
pub fn is_normalised(value: &str) -> bool {
    parse(value).is_ok_and(|bic| bic == value)
}

/// Whether `code` is a country a BIC may carry: an officially assigned ISO 3166-1 alpha-2
/// code, or `XK`.
#[must_use]
pub fn is_bic_country(code: &str) -> bool {
    is_assigned_country(code) || EXTRA_BIC_COUNTRIES.contains(&code)
}

/// Whether `code` is an officially assigned ISO 3166-1 alpha-2 code (upper case).
#[must_use]
pub fn is_assigned_country(code: &str) -> bool {
    ASSIGNED_ALPHA2.binary_search(&code).is_ok()
}

/// Every officially assigned ISO 3166-1 alpha-2 code, sorted so it can be binary-searched.
const ASSIGNED_ALPHA2: [&str; 249] = [
    "AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ",
    "BA", "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS",
    "BT", "BV", "BW", "BY", "BZ", "CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN",
    "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM", "DO", "DZ", "EC", "EE",
    "EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR", "GA", "GB", "GD", "GE", "GF",
    "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY", "HK", "HM",
    "HN", "HR", "HT", "HU", "ID", "IE", "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT", "JE", "JM",
    "JO", "JP", "KE", "KG", "KH", "KI", "KM", "KN", "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC",
    "LI", "LK", "LR", "LS", "LT", "LU", "LV", "LY", "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK",
    "ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA",
    "NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU", "NZ", "OM", "PA", "PE", "PF", "PG",
    "PH", "PK", "PL", "PM", "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS", "RU", "RW",
    "SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS",
    "ST", "SV", "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO",
    "TR", "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI",
    "VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW",
];

/// Country codes a BIC may carry besides the assigned ISO ones: SWIFT issues BICs for Kosovo
/// under the user-assigned code `XK`.
const EXTRA_BIC_COUNTRIES: [&str; 1] = ["XK"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_country_table_is_sorted_and_upper_case() {
        assert!(ASSIGNED_ALPHA2.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(
            ASSIGNED_ALPHA2
                .iter()
                .chain(EXTRA_BIC_COUNTRIES.iter())
                .all(|code| code.len() == 2 && code.chars().all(|c| c.is_ascii_uppercase()))
        );
        assert!(
            !EXTRA_BIC_COUNTRIES
                .iter()
                .any(|code| is_assigned_country(code))
        );
    }

    #[test]
    fn eight_and_eleven_characters_in_any_case() {
        for (raw, code) in [
            ("DEUTDEFF", "DEUTDEFF"),
            ("DEUTDEFF500", "DEUTDEFF500"),
            ("deutdeff", "DEUTDEFF"),
            (" NWBKGB2L ", "NWBKGB2L"),
            ("NTSBDEB1", "NTSBDEB1"),
            ("RBKOXKPR", "RBKOXKPR"),
        ] {
            assert_eq!(parse(raw).as_deref(), Ok(code), "{raw}");
        }
        assert!(is_normalised("COBADEFFXXX"));
        assert!(!is_normalised("cobadeffxxx"));
    }

    #[test]
    fn anything_else_is_refused() {
        assert_eq!(parse("\n"), Err(BicError::Empty));
        for raw in [
            "DEUTDEF",
            "DEUTDEFF5",
            "DEUTDEFF50",
            "DEUTDEFF5000",
            "DEU1DEFF",
            "DEUTXXFF",
            "DEUTUKFF",
            "DEUT1EFF",
            "DEUT DEFF",
            "DEUTDEFFX0XX",
            "ＤＥＵＴＤＥＦＦ",
            "DÉUTDEFF",
        ] {
            assert_eq!(parse(raw), Err(BicError::Format), "{raw}");
        }
        assert_eq!(parse(&"A".repeat(100_000)), Err(BicError::Format));
    }
}
