//! The six payout methods (contract §5.1): which currency each pays in and which fields its
//! accounts have.

use crate::money::Asset;

/// How a receiver account is paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayoutMethod {
    /// Australian direct entry (BECS): BSB and account number, AUD.
    DirectEntry,
    /// US ACH: ABA routing number, account number and type, USD.
    Ach,
    /// Canadian EFT: routing number (institution and transit), account number and type, CAD.
    Eft,
    /// Canadian digital payment to an e-mail recipient, CAD.
    Digital,
    /// SEPA credit transfer: IBAN and BIC, EUR.
    Sepa,
    /// New Zealand direct credit: `BB-bbbb-AAAAAAA-SS(S)`, NZD.
    DirectCredit,
}

impl PayoutMethod {
    /// Every method.
    pub const ALL: [PayoutMethod; 6] = [
        PayoutMethod::DirectEntry,
        PayoutMethod::Ach,
        PayoutMethod::Eft,
        PayoutMethod::Digital,
        PayoutMethod::Sepa,
        PayoutMethod::DirectCredit,
    ];

    /// `method_name` on the wire.
    pub const fn name(self) -> &'static str {
        match self {
            PayoutMethod::DirectEntry => "direct-entry",
            PayoutMethod::Ach => "ach",
            PayoutMethod::Eft => "eft",
            PayoutMethod::Digital => "digital",
            PayoutMethod::Sepa => "sepa",
            PayoutMethod::DirectCredit => "direct-credit",
        }
    }

    /// The method with this `method_name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The currency the method pays in.
    pub const fn asset(self) -> Asset {
        match self {
            PayoutMethod::DirectEntry => Asset::Aud,
            PayoutMethod::Ach => Asset::Usd,
            PayoutMethod::Eft | PayoutMethod::Digital => Asset::Cad,
            PayoutMethod::Sepa => Asset::Eur,
            PayoutMethod::DirectCredit => Asset::Nzd,
        }
    }

    /// The create route below `/api/receiver-account/`, e.g. `aud/direct-entry`.
    pub fn route(self) -> String {
        format!(
            "{}/{}",
            self.asset().code().to_ascii_lowercase(),
            self.name()
        )
    }

    /// The account fields of the method's create body, besides `receiver_id`.
    pub const fn fields(self) -> &'static [&'static str] {
        match self {
            PayoutMethod::DirectEntry => &["bsb", "account_number"],
            PayoutMethod::Ach | PayoutMethod::Eft => {
                &["routing_number", "account_number", "account_type"]
            }
            PayoutMethod::Digital => &["recipient", "name", "description"],
            PayoutMethod::Sepa => &["iban", "bic"],
            PayoutMethod::DirectCredit => &["account_number"],
        }
    }
}

/// Every field name any method's `account_data` can carry (verify accepts exactly these).
pub const MATCHABLE_FIELDS: [&str; 7] = [
    "bsb",
    "account_number",
    "routing_number",
    "account_type",
    "iban",
    "bic",
    "recipient",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_names_and_assets_follow_the_contract() {
        let routes: Vec<String> = PayoutMethod::ALL.iter().map(|m| m.route()).collect();
        assert_eq!(
            routes,
            [
                "aud/direct-entry",
                "usd/ach",
                "cad/eft",
                "cad/digital",
                "eur/sepa",
                "nzd/direct-credit"
            ]
        );
        for method in PayoutMethod::ALL {
            assert_eq!(PayoutMethod::from_name(method.name()), Some(method));
        }
        assert_eq!(PayoutMethod::from_name("wire"), None);
    }
}
