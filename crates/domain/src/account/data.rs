//! An account's field values: secret in memory, encrypted at rest, masked whenever they leave
//! the service (contract §5.3).

use std::fmt;

use crate::account::input::AccountDetails;
use crate::masking::{MaskedValue, Secret};

/// The fields whose values identify an account and are therefore masked when shown.
pub const MASKED_FIELDS: [&str; 5] = [
    "bsb",
    "account_number",
    "routing_number",
    "iban",
    "recipient",
];

/// Field name and value pairs: the matchable fields in `MATCHABLE_FIELDS` order, then (digital)
/// `name` and `description`. `Debug` never shows values.
#[derive(Clone, PartialEq, Eq)]
pub struct AccountData(Vec<(String, Secret<String>)>);

impl AccountData {
    /// The normalised values of parsed details (what is stored and matched).
    pub fn from_details(details: &AccountDetails) -> Self {
        let mut fields: Vec<(String, Secret<String>)> = details
            .matchable()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), Secret::new(value)))
            .collect();
        if let AccountDetails::Digital {
            name, description, ..
        } = details
        {
            fields.push(("name".to_owned(), Secret::new(name.clone())));
            if let Some(description) = description {
                fields.push(("description".to_owned(), Secret::new(description.clone())));
            }
        }
        Self(fields)
    }

    /// Rebuilds from stored pairs (decrypted by the store).
    pub fn from_pairs(pairs: Vec<(String, String)>) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k, Secret::new(v)))
                .collect(),
        )
    }

    /// The raw pairs, for encryption at rest only.
    pub fn expose_pairs(&self) -> Vec<(&str, &str)> {
        self.0
            .iter()
            .map(|(k, v)| (k.as_str(), v.expose().as_str()))
            .collect()
    }

    /// The raw value of one field (for fingerprints and matching only).
    pub fn expose(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == field)
            .map(|(_, v)| v.expose().as_str())
    }

    /// Every field as it may be shown: identifiers masked, the others (account type, BIC,
    /// name, description) as they are.
    pub fn masked(&self) -> Vec<(&str, String)> {
        self.0
            .iter()
            .map(|(k, v)| {
                let shown = if MASKED_FIELDS.contains(&k.as_str()) {
                    MaskedValue::mask(v.expose()).as_str().to_owned()
                } else {
                    v.expose().clone()
                };
                (k.as_str(), shown)
            })
            .collect()
    }
}

impl fmt::Debug for AccountData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|(k, _)| k.as_str()).collect();
        write!(f, "AccountData({names:?}, values redacted)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> AccountData {
        AccountData::from_pairs(vec![
            ("bsb".to_owned(), "012002".to_owned()),
            ("account_number".to_owned(), "123456789".to_owned()),
            ("account_type".to_owned(), "checking".to_owned()),
        ])
    }

    #[test]
    fn identifiers_are_masked_and_the_rest_shown() {
        assert_eq!(
            data().masked(),
            vec![
                ("bsb", "012 ***".to_owned()),
                ("account_number", "123 ***".to_owned()),
                ("account_type", "checking".to_owned())
            ]
        );
    }

    #[test]
    fn debug_never_shows_values() {
        let shown = format!("{:?}", data());
        assert!(
            !shown.contains("012002") && !shown.contains("123456789"),
            "{shown}"
        );
        assert!(shown.contains("account_number"));
    }
}
