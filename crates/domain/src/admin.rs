//! Operator commands (admin CLI; docs/OPERATIONS.md, `payoutd admin …`): subaccounts, keys,
//! webhooks, funding, fees.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::auth::SignaturePolicy;
use crate::auth::ports::ApiKeyStore;
use crate::delivery::history::EventHistoryStore;
use crate::delivery::history::{EventStatus, EventSummary, ResendSelection};
use crate::delivery::ports::WebhookEndpointStore;
use crate::error::OperatorError;
use crate::error::PortError;
use crate::ids::{
    ApiKeyId, EventId, FeeGroupId, FeeTemplateId, LedgerEntryId, MerchantId, SubaccountId,
};
use crate::ledger::LedgerStore;
use crate::ledger::{LedgerCheck, LedgerEntry, LedgerEntryKind};
use crate::masking::Secret;
use crate::money::{Asset, MinorUnits, Percentage};
use crate::ports::{Clock, IdGenerator};
use crate::receiver::values::EmailAddress;
use crate::subaccount::ports::NewSubaccount;
use crate::subaccount::ports::SubaccountSetupStore;
use crate::subaccount::{Balance, FeeTemplate, Subaccount, SubaccountAddress};

/// Why an operator command failed; the message is what the CLI prints.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// An argument is invalid.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The argument.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The subaccount does not exist.
    #[error("subaccount not found")]
    SubaccountNotFound,
    /// The API key does not exist or is already revoked.
    #[error("API key not found or already revoked")]
    KeyNotFound,
    /// The subaccount has no webhook secret to rotate.
    #[error("the subaccount has no webhook configured; use set-webhook first")]
    NoWebhook,
    /// The event does not exist.
    #[error("event not found")]
    EventNotFound,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

impl From<OperatorError> for AdminError {
    fn from(e: OperatorError) -> Self {
        match e {
            OperatorError::SubaccountNotFound => AdminError::SubaccountNotFound,
            OperatorError::KeyNotFound => AdminError::KeyNotFound,
            OperatorError::NoWebhook => AdminError::NoWebhook,
            OperatorError::Port(e) => AdminError::Port(e),
        }
    }
}

/// A newly issued API credential. The secret is shown once and stored only encrypted.
#[derive(Debug)]
pub struct IssuedKey {
    /// The public key (`x-api-key`).
    pub api_key: String,
    /// The signing secret.
    pub api_secret: Secret<String>,
}

/// The stores the operator commands use, one per job.
#[derive(Clone)]
pub struct AdminPorts {
    /// Subaccounts, fee templates and the signature policy.
    pub subaccounts: Arc<dyn SubaccountSetupStore>,
    /// API credentials.
    pub keys: Arc<dyn ApiKeyStore>,
    /// Webhook endpoints.
    pub webhooks: Arc<dyn WebhookEndpointStore>,
    /// Funding and the ledger check.
    pub ledger: Arc<dyn LedgerStore>,
    /// The outbox's history and resends.
    pub events: Arc<dyn EventHistoryStore>,
}

impl AdminPorts {
    /// Every job served by one store that implements them all (the PostgreSQL adapter).
    pub fn all<S>(store: Arc<S>) -> Self
    where
        S: SubaccountSetupStore
            + ApiKeyStore
            + WebhookEndpointStore
            + LedgerStore
            + EventHistoryStore
            + 'static,
    {
        Self {
            subaccounts: store.clone(),
            keys: store.clone(),
            webhooks: store.clone(),
            ledger: store.clone(),
            events: store,
        }
    }
}

/// Runs operator commands.
pub struct AdminService {
    ports: AdminPorts,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

fn invalid(field: &'static str, reason: &'static str) -> AdminError {
    AdminError::Invalid { field, reason }
}

/// Checks a postback URL: absolute `http` or `https`, no spaces, at most 2048 characters.
pub fn parse_postback_url(raw: &str) -> Result<String, AdminError> {
    let raw = raw.trim();
    let rest = raw
        .strip_prefix("https://")
        .or_else(|| raw.strip_prefix("http://"))
        .ok_or_else(|| invalid("url", "must start with http:// or https://"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty()
        || raw.len() > 2048
        || raw.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(invalid(
            "url",
            "must be an absolute URL with a host and no spaces",
        ));
    }
    Ok(raw.to_owned())
}

impl AdminService {
    /// Wires the service to its ports.
    pub fn new(ports: AdminPorts, clock: Arc<dyn Clock>, ids: Arc<dyn IdGenerator>) -> Self {
        Self { ports, clock, ids }
    }

    /// Creates a subaccount (and a merchant id for it).
    pub async fn create_subaccount(
        &self,
        name: &str,
        email: Option<&str>,
        postback_url: Option<&str>,
    ) -> Result<Subaccount, AdminError> {
        let name = name.trim();
        if name.is_empty() || name.chars().count() > 255 {
            return Err(invalid("name", "must be 1 to 255 characters"));
        }
        let email = match email {
            Some(raw) => EmailAddress::parse(raw)
                .map_err(|_| invalid("email", "is not a valid e-mail address"))?
                .as_str()
                .to_owned(),
            None => String::new(),
        };
        let postback_url = postback_url.map(parse_postback_url).transpose()?;
        let subaccount = Subaccount {
            id: SubaccountId::from_uuid(self.ids.new_id()),
            merchant_id: MerchantId::from_uuid(self.ids.new_id()),
            name: name.to_owned(),
            title: String::new(),
            first_name: String::new(),
            last_name: String::new(),
            support_email: email.clone(),
            email,
            dob: None,
            provider_status: "ACCEPTED".to_owned(),
            business_name: name.to_owned(),
            business_or_individual: "B".to_owned(),
            mobile_dialcode: String::new(),
            mobile: String::new(),
            home_phone_dialcode: String::new(),
            home_telephone: String::new(),
            address: SubaccountAddress::default(),
            has_passed_kyc: "N/A".to_owned(),
            kyc_status: "pending".to_owned(),
            postback_url,
            signature_policy: SignaturePolicy::default(),
            created_at: self.clock.now(),
        };
        self.ports
            .subaccounts
            .create_subaccount(&NewSubaccount {
                subaccount: subaccount.clone(),
            })
            .await?;
        Ok(subaccount)
    }

    /// Issues a new API key and secret for the subaccount; earlier keys stay valid (rotation
    /// with overlap) until revoked.
    pub async fn issue_key(&self, subaccount: SubaccountId) -> Result<IssuedKey, AdminError> {
        let key_bytes = self.ids.random_bytes();
        let api_key = format!("pk_{}", hex::encode(&key_bytes[..16]));
        let api_secret = Secret::new(format!(
            "sk_{}",
            URL_SAFE_NO_PAD.encode(self.ids.random_bytes())
        ));
        self.ports
            .keys
            .insert_credential(
                ApiKeyId::from_uuid(self.ids.new_id()),
                subaccount,
                &api_key,
                &api_secret,
                self.clock.now(),
            )
            .await?;
        Ok(IssuedKey {
            api_key,
            api_secret,
        })
    }

    /// Revokes an API key; it stops working at once.
    pub async fn revoke_key(&self, api_key: &str) -> Result<(), AdminError> {
        Ok(self
            .ports
            .keys
            .revoke_credential(api_key.trim(), self.clock.now())
            .await?)
    }

    /// Sets the postback URL and issues a new webhook signing secret (`whsec_<base64>`).
    pub async fn set_webhook(
        &self,
        subaccount: SubaccountId,
        url: &str,
    ) -> Result<(String, Secret<String>), AdminError> {
        let url = parse_postback_url(url)?;
        let secret = Secret::new(format!(
            "whsec_{}",
            STANDARD.encode(self.ids.random_bytes())
        ));
        self.ports
            .webhooks
            .set_webhook(subaccount, &url, &secret)
            .await?;
        Ok((url, secret))
    }

    /// Issues a new webhook signing secret; the current one stays valid for `overlap` (both
    /// signatures are sent meanwhile), so receivers can switch without losing a delivery.
    pub async fn rotate_webhook_secret(
        &self,
        subaccount: SubaccountId,
        overlap: std::time::Duration,
    ) -> Result<Secret<String>, AdminError> {
        let overlap =
            chrono::Duration::from_std(overlap).map_err(|_| invalid("overlap", "is too long"))?;
        let secret = Secret::new(format!(
            "whsec_{}",
            STANDARD.encode(self.ids.random_bytes())
        ));
        self.ports
            .webhooks
            .rotate_webhook_secret(subaccount, &secret, self.clock.now() + overlap)
            .await?;
        Ok(secret)
    }

    /// The subaccount's events (newest first, at most `limit`) with their attempts.
    pub async fn events(
        &self,
        subaccount: SubaccountId,
        status: Option<&str>,
        since: Option<DateTime<Utc>>,
        limit: u32,
    ) -> Result<Vec<EventSummary>, AdminError> {
        let status = status
            .map(|raw| {
                EventStatus::parse(raw)
                    .ok_or_else(|| invalid("status", "must be pending, delivered or exhausted"))
            })
            .transpose()?;
        Ok(self
            .ports
            .events
            .list_events(subaccount, status, since, limit)
            .await?)
    }

    /// Compares every balance with the sum of its ledger entries.
    pub async fn check_ledger(&self) -> Result<LedgerCheck, AdminError> {
        Ok(self.ports.ledger.check_ledger().await?)
    }

    /// Queues one event for delivery again, with a fresh retry schedule.
    pub async fn resend_event(&self, event: EventId) -> Result<u64, AdminError> {
        match self
            .ports
            .events
            .resend_events(&ResendSelection::One(event), self.clock.now())
            .await?
        {
            0 => Err(AdminError::EventNotFound),
            n => Ok(n),
        }
    }

    /// Queues every event of the subaccount created in `[since, until)` again.
    pub async fn resend_range(
        &self,
        subaccount: SubaccountId,
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<u64, AdminError> {
        if since >= until {
            return Err(invalid("since", "must be before --until"));
        }
        let selection = ResendSelection::Range {
            subaccount,
            since,
            until,
        };
        Ok(self
            .ports
            .events
            .resend_events(&selection, self.clock.now())
            .await?)
    }

    /// Credits `amount` minor units to the subaccount's available balance, as a ledger entry.
    pub async fn fund(
        &self,
        subaccount: SubaccountId,
        asset: &str,
        amount: &str,
    ) -> Result<Balance, AdminError> {
        let asset = Asset::parse(asset)
            .ok_or_else(|| invalid("asset", "must be one of AUD, USD, CAD, EUR, NZD"))?;
        let amount = MinorUnits::parse(amount)
            .map_err(|_| invalid("amount", "must be a whole number from 1 to 10^12"))?;
        let entry = LedgerEntry {
            id: LedgerEntryId::from_uuid(self.ids.new_id()),
            subaccount_id: subaccount,
            asset,
            kind: LedgerEntryKind::Funding,
            available_delta: amount.get(),
            pending_delta: 0,
            payout_id: None,
            created_at: self.clock.now(),
        };
        Ok(self.ports.ledger.apply_ledger_entry(&entry).await?)
    }

    /// Sets the subaccount's fee template for an asset.
    pub async fn set_fee(
        &self,
        subaccount: SubaccountId,
        asset: &str,
        fixed: &str,
        percentage: &str,
        min_amount: &str,
    ) -> Result<FeeTemplate, AdminError> {
        let asset = Asset::parse(asset)
            .ok_or_else(|| invalid("asset", "must be one of AUD, USD, CAD, EUR, NZD"))?;
        let minor = |raw: &str, field| {
            let raw = raw.trim();
            if raw == "0" {
                return Ok(0);
            }
            MinorUnits::parse(raw)
                .map(MinorUnits::get)
                .map_err(|_| invalid(field, "must be a whole number from 0 to 10^12"))
        };
        let template = FeeTemplate {
            id: FeeTemplateId::from_uuid(self.ids.new_id()),
            group_id: FeeGroupId::from_uuid(Uuid::from_u128(0)),
            asset,
            fixed: minor(fixed, "fixed")?,
            percentage: Percentage::parse(percentage)
                .map_err(|_| invalid("percentage", "must be 0 to 100 with at most 4 decimals"))?,
            min_amount: minor(min_amount, "min-amount")?,
        };
        let template = FeeTemplate {
            group_id: FeeGroupId::from_uuid(self.ids.new_id()),
            ..template
        };
        self.ports
            .subaccounts
            .upsert_fee_template(subaccount, &template)
            .await?;
        Ok(template)
    }

    /// Sets which signature versions the subaccount's requests may use (docs/API.md,
    /// Signature policies).
    pub async fn set_signature_policy(
        &self,
        subaccount: SubaccountId,
        policy: SignaturePolicy,
    ) -> Result<(), AdminError> {
        Ok(self
            .ports
            .subaccounts
            .set_signature_policy(subaccount, policy)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postback_urls() {
        assert!(parse_postback_url("https://example.com/hooks").is_ok());
        assert!(parse_postback_url("http://127.0.0.1:9000").is_ok());
        for bad in [
            "",
            "ftp://x",
            "https://",
            "https:// x.com",
            "example.com",
            "https:///path",
        ] {
            assert!(parse_postback_url(bad).is_err(), "{bad}");
        }
    }
}
