//! [`SubaccountBuilder`].

use chrono::{DateTime, NaiveDate, Utc};
use uuid::Uuid;

use super::BUILT_AT_SECS;
use crate::auth::SignaturePolicy;
use crate::ids::{MerchantId, SubaccountId};
use crate::subaccount::{Subaccount, SubaccountAddress};

/// Builds a [`Subaccount`]. Unless set: "Acme Payroll", a business of Sydney, Australia,
/// `ACCEPTED` upstream with its own KYC not yet assessed, contact Ms Grace Hopper
/// (`ops@example.com`, born 1985-06-15) with a mobile and a home phone, no postback URL, the default signature policy, with id 2 and merchant
/// 5 (UUIDs from those numbers; 2 is the subaccount of [`super::PayoutBuilder`]'s payout),
/// created at [`BUILT_AT_SECS`]. The fields the admin CLI does not ask for start as it leaves
/// them (`has_passed_kyc` `N/A`, `kyc_status` `pending`).
#[derive(Debug, Clone)]
pub struct SubaccountBuilder {
    subaccount: Subaccount,
}

impl Default for SubaccountBuilder {
    fn default() -> Self {
        Self {
            subaccount: Subaccount {
                id: SubaccountId::from_uuid(Uuid::from_u128(2)),
                merchant_id: MerchantId::from_uuid(Uuid::from_u128(5)),
                name: "Acme Payroll".to_owned(),
                title: "Ms".to_owned(),
                first_name: "Grace".to_owned(),
                last_name: "Hopper".to_owned(),
                email: "ops@example.com".to_owned(),
                dob: NaiveDate::from_ymd_opt(1985, 6, 15),
                provider_status: "ACCEPTED".to_owned(),
                business_name: "Acme Payroll Pty Ltd".to_owned(),
                business_or_individual: "B".to_owned(),
                support_email: "support@example.com".to_owned(),
                mobile_dialcode: "+61".to_owned(),
                mobile: "412345678".to_owned(),
                home_phone_dialcode: "+61".to_owned(),
                home_telephone: "291234567".to_owned(),
                address: SubaccountAddress {
                    address: "1 Example Street".to_owned(),
                    suburb: "Sydney".to_owned(),
                    state: "NSW".to_owned(),
                    country: "AUS".to_owned(),
                    postcode: "2000".to_owned(),
                },
                has_passed_kyc: "N/A".to_owned(),
                kyc_status: "pending".to_owned(),
                postback_url: None,
                signature_policy: SignaturePolicy::default(),
                created_at: DateTime::from_timestamp(BUILT_AT_SECS, 0).unwrap_or_default(),
            },
        }
    }
}

impl SubaccountBuilder {
    /// The default subaccount (see [`SubaccountBuilder`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The subaccount's id.
    pub fn id(mut self, id: SubaccountId) -> Self {
        self.subaccount.id = id;
        self
    }

    /// The owning merchant.
    pub fn merchant(mut self, merchant: MerchantId) -> Self {
        self.subaccount.merchant_id = merchant;
        self
    }

    /// The display name (`suba_name`).
    pub fn name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.subaccount.name);
        self
    }

    /// The registered business name.
    pub fn business_name(mut self, name: &str) -> Self {
        name.clone_into(&mut self.subaccount.business_name);
        self
    }

    /// The contact e-mail.
    pub fn email(mut self, email: &str) -> Self {
        email.clone_into(&mut self.subaccount.email);
        self
    }

    /// Where webhooks go.
    pub fn postback_url(mut self, url: &str) -> Self {
        self.subaccount.postback_url = Some(url.to_owned());
        self
    }

    /// Which signature versions its requests may use.
    pub fn signature_policy(mut self, policy: SignaturePolicy) -> Self {
        self.subaccount.signature_policy = policy;
        self
    }

    /// When it was created.
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.subaccount.created_at = at;
        self
    }

    /// The subaccount.
    pub fn build(self) -> Subaccount {
        self.subaccount
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::PayoutBuilder;

    #[test]
    fn defaults_are_the_built_payouts_accepted_business_subaccount() {
        let subaccount = SubaccountBuilder::new().build();
        assert_eq!(subaccount.id, PayoutBuilder::new().build().subaccount_id);
        assert_eq!(
            (
                subaccount.provider_status.as_str(),
                subaccount.business_or_individual.as_str(),
                subaccount.has_passed_kyc.as_str()
            ),
            ("ACCEPTED", "B", "N/A")
        );
        assert_eq!(subaccount.postback_url, None);
        assert_eq!(subaccount.signature_policy, SignaturePolicy::V2ForPosts);
        assert_eq!(subaccount.created_at.timestamp(), BUILT_AT_SECS);
    }

    #[test]
    fn setters_change_only_their_field() {
        let built = SubaccountBuilder::new()
            .name("Other")
            .postback_url("https://hooks.example.com/p")
            .signature_policy(SignaturePolicy::V2Only)
            .build();
        assert_eq!(
            built,
            Subaccount {
                name: "Other".to_owned(),
                postback_url: Some("https://hooks.example.com/p".to_owned()),
                signature_policy: SignaturePolicy::V2Only,
                ..SubaccountBuilder::new().build()
            }
        );
    }
}
