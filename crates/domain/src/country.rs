//! ISO 3166-1 alpha-3 country codes.
//!
//! Only the 249 officially assigned codes are accepted; reserved, transitional and user-assigned
//! codes (e.g. `XXX`) are not.

use std::fmt;

/// Every officially assigned ISO 3166-1 alpha-3 code, sorted so it can be binary-searched.
const ASSIGNED: [&str; 249] = [
    "ABW", "AFG", "AGO", "AIA", "ALA", "ALB", "AND", "ARE", "ARG", "ARM", "ASM", "ATA", "ATF",
    "ATG", "AUS", "AUT", "AZE", "BDI", "BEL", "BEN", "BES", "BFA", "BGD", "BGR", "BHR", "BHS",
    "BIH", "BLM", "BLR", "BLZ", "BMU", "BOL", "BRA", "BRB", "BRN", "BTN", "BVT", "BWA", "CAF",
    "CAN", "CCK", "CHE", "CHL", "CHN", "CIV", "CMR", "COD", "COG", "COK", "COL", "COM", "CPV",
    "CRI", "CUB", "CUW", "CXR", "CYM", "CYP", "CZE", "DEU", "DJI", "DMA", "DNK", "DOM", "DZA",
    "ECU", "EGY", "ERI", "ESH", "ESP", "EST", "ETH", "FIN", "FJI", "FLK", "FRA", "FRO", "FSM",
    "GAB", "GBR", "GEO", "GGY", "GHA", "GIB", "GIN", "GLP", "GMB", "GNB", "GNQ", "GRC", "GRD",
    "GRL", "GTM", "GUF", "GUM", "GUY", "HKG", "HMD", "HND", "HRV", "HTI", "HUN", "IDN", "IMN",
    "IND", "IOT", "IRL", "IRN", "IRQ", "ISL", "ISR", "ITA", "JAM", "JEY", "JOR", "JPN", "KAZ",
    "KEN", "KGZ", "KHM", "KIR", "KNA", "KOR", "KWT", "LAO", "LBN", "LBR", "LBY", "LCA", "LIE",
    "LKA", "LSO", "LTU", "LUX", "LVA", "MAC", "MAF", "MAR", "MCO", "MDA", "MDG", "MDV", "MEX",
    "MHL", "MKD", "MLI", "MLT", "MMR", "MNE", "MNG", "MNP", "MOZ", "MRT", "MSR", "MTQ", "MUS",
    "MWI", "MYS", "MYT", "NAM", "NCL", "NER", "NFK", "NGA", "NIC", "NIU", "NLD", "NOR", "NPL",
    "NRU", "NZL", "OMN", "PAK", "PAN", "PCN", "PER", "PHL", "PLW", "PNG", "POL", "PRI", "PRK",
    "PRT", "PRY", "PSE", "PYF", "QAT", "REU", "ROU", "RUS", "RWA", "SAU", "SDN", "SEN", "SGP",
    "SGS", "SHN", "SJM", "SLB", "SLE", "SLV", "SMR", "SOM", "SPM", "SRB", "SSD", "STP", "SUR",
    "SVK", "SVN", "SWE", "SWZ", "SXM", "SYC", "SYR", "TCA", "TCD", "TGO", "THA", "TJK", "TKL",
    "TKM", "TLS", "TON", "TTO", "TUN", "TUR", "TUV", "TWN", "TZA", "UGA", "UKR", "UMI", "URY",
    "USA", "UZB", "VAT", "VCT", "VEN", "VGB", "VIR", "VNM", "VUT", "WLF", "WSM", "YEM", "ZAF",
    "ZMB", "ZWE",
];

/// Why a country code was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CountryCodeError {
    /// The input was empty or only whitespace.
    #[error("country code is empty")]
    Empty,
    /// The input is not an officially assigned ISO 3166-1 alpha-3 code.
    #[error("country code is not an assigned ISO 3166-1 alpha-3 code")]
    Unknown,
}

/// An officially assigned ISO 3166-1 alpha-3 country code, stored upper-case (e.g. `AUS`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CountryCode(&'static str);

impl CountryCode {
    /// Parses a code case-insensitively, ignoring surrounding whitespace.
    pub fn parse(raw: &str) -> Result<Self, CountryCodeError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(CountryCodeError::Empty);
        }
        // Only plain ASCII letters can match; this also keeps the upper-casing one-to-one
        // (some non-ASCII characters upper-case to several characters, e.g. `ß` to `SS`).
        if !trimmed.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(CountryCodeError::Unknown);
        }
        let upper = trimmed.to_ascii_uppercase();
        ASSIGNED
            .binary_search(&upper.as_str())
            .map(|index| CountryCode(ASSIGNED[index]))
            .map_err(|_| CountryCodeError::Unknown)
    }

    /// The upper-case three-letter code.
    pub fn as_str(&self) -> &str {
        self.0
    }
}

impl fmt::Display for CountryCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_unique_and_complete() {
        assert_eq!(ASSIGNED.len(), 249);
        assert!(ASSIGNED.windows(2).all(|pair| pair[0] < pair[1]));
        assert!(
            ASSIGNED
                .iter()
                .all(|code| code.len() == 3 && code.chars().all(|c| c.is_ascii_uppercase()))
        );
    }

    #[test]
    fn accepts_real_codes() {
        for code in [
            "AUS", "USA", "NZL", "DEU", "CAN", "GBR", "ALA", "CIV", "ABW", "ZWE",
        ] {
            assert_eq!(CountryCode::parse(code).unwrap().as_str(), code);
        }
    }

    #[test]
    fn is_case_insensitive_and_trims() {
        assert_eq!(CountryCode::parse("aus").unwrap().as_str(), "AUS");
        assert_eq!(CountryCode::parse("nZl").unwrap().as_str(), "NZL");
        assert_eq!(CountryCode::parse("  deu\t").unwrap().to_string(), "DEU");
    }

    #[test]
    fn rejects_empty_input() {
        assert_eq!(CountryCode::parse(""), Err(CountryCodeError::Empty));
        assert_eq!(CountryCode::parse(" \t\n"), Err(CountryCodeError::Empty));
    }

    #[test]
    fn rejects_unknown_codes() {
        for code in [
            "XXX", "AU", "AUSS", "A", "ZZZ", "UK", "EUR", "A US", "AU1", "123",
        ] {
            assert_eq!(
                CountryCode::parse(code),
                Err(CountryCodeError::Unknown),
                "{code}"
            );
        }
    }

    #[test]
    fn odd_unicode_never_panics_and_is_rejected() {
        let long = "A".repeat(10_000);
        for code in [
            "ÅLA",
            "ＡＵＳ",
            "🇦🇺",
            "AU\u{0301}S",
            "\u{0000}US",
            "ßAU",
            long.as_str(),
        ] {
            assert_eq!(
                CountryCode::parse(code),
                Err(CountryCodeError::Unknown),
                "{code}"
            );
        }
    }
}
