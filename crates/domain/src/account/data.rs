//! An account's field values: secret in memory, encrypted at rest, masked whenever they leave
//! the service (docs/ARCHITECTURE.md, Encryption at rest).

use std::fmt;

use crate::account::field::{AccountField, Visibility};
use crate::account::input::AccountDetails;
use crate::masking::{MaskedValue, Secret};

/// Field and value pairs in [`AccountField::ALL`] order. `Debug` never shows values.
#[derive(Clone, PartialEq, Eq)]
pub struct AccountData(Vec<(AccountField, Secret<String>)>);

impl AccountData {
    /// The normalised values of parsed details (what is stored and matched).
    pub fn from_details(details: &AccountDetails) -> Self {
        let mut fields: Vec<(AccountField, Secret<String>)> = details
            .values()
            .into_iter()
            .map(|(field, value)| (field, Secret::new(value)))
            .collect();
        fields.sort_by_key(|(field, _)| *field);
        Self(fields)
    }

    /// Rebuilds from stored pairs (decrypted by the store).
    pub fn from_pairs(pairs: Vec<(AccountField, String)>) -> Self {
        Self(
            pairs
                .into_iter()
                .map(|(k, v)| (k, Secret::new(v)))
                .collect(),
        )
    }

    /// The raw pairs, for encryption at rest only.
    pub fn expose_pairs(&self) -> Vec<(AccountField, &str)> {
        self.0
            .iter()
            .map(|(k, v)| (*k, v.expose().as_str()))
            .collect()
    }

    /// The raw value of one field (for fingerprints, matching and payment rails only).
    pub fn expose(&self, field: AccountField) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| *k == field)
            .map(|(_, v)| v.expose().as_str())
    }

    /// The raw matchable values, in stored order (for fingerprints only).
    pub fn expose_matchable(&self) -> impl Iterator<Item = (AccountField, &str)> {
        self.0
            .iter()
            .filter(|(k, _)| k.matchable())
            .map(|(k, v)| (*k, v.expose().as_str()))
    }

    /// Every field as it may be shown: [`Visibility::Masked`] fields masked, the others as
    /// they are.
    pub fn masked(&self) -> Vec<(AccountField, String)> {
        self.0
            .iter()
            .map(|(k, v)| {
                let shown = match k.visibility() {
                    Visibility::Masked => MaskedValue::mask(v.expose()).as_str().to_owned(),
                    Visibility::Shown => v.expose().clone(),
                };
                (*k, shown)
            })
            .collect()
    }
}

impl fmt::Debug for AccountData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|(k, _)| k.name()).collect();
        write!(f, "AccountData({names:?}, values redacted)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> AccountData {
        AccountData::from_pairs(vec![
            (AccountField::Bsb, "012002".to_owned()),
            (AccountField::AccountNumber, "123456789".to_owned()),
            (AccountField::AccountType, "checking".to_owned()),
        ])
    }

    #[test]
    fn identifiers_are_masked_and_the_rest_shown() {
        assert_eq!(
            data().masked(),
            vec![
                (AccountField::Bsb, "012 ***".to_owned()),
                (AccountField::AccountNumber, "123 ***".to_owned()),
                (AccountField::AccountType, "checking".to_owned())
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
