//! Operator commands (the admin CLI, docs/OPERATIONS.md `payoutd admin …`, and the console):
//! subaccounts, keys, webhooks, funding, fees. Every change is audited: the service acts for
//! one [`AuditContext`] (the CLI's user, or a console operator's request) and hands each store
//! the change's audit entry, written in the change's own transaction.

use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::audit::{AuditAction, AuditContext, AuditEntry};
use crate::auth::SignaturePolicy;
use crate::auth::ports::ApiKeyStore;
use crate::delivery::history::EventHistoryStore;
use crate::delivery::history::{EventStatus, EventSummary, ResendSelection};
use crate::delivery::ports::{WebhookEndpointStore, WebhookTargetGuard};
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
    /// The webhook URL is one the delivery worker would refuse to send to.
    #[error("invalid postback URL: {0}")]
    TargetRefused(String),
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
    /// The delivery worker's address guard, asked before a webhook URL is stored.
    pub targets: Arc<dyn WebhookTargetGuard>,
}

impl AdminPorts {
    /// Every store job served by one store that implements them all (the PostgreSQL adapter),
    /// with the webhook address guard `targets`.
    pub fn all<S>(store: Arc<S>, targets: Arc<dyn WebhookTargetGuard>) -> Self
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
            targets,
        }
    }
}

/// Runs operator commands for one actor.
#[derive(Clone)]
pub struct AdminService {
    ports: AdminPorts,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    context: AuditContext,
}

/// The longest funding reason kept.
pub const MAX_FUNDING_REASON_CHARS: usize = 500;

/// Why a balance is credited, as the audit log keeps it: 1 to 500 characters after trimming,
/// no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FundingReason(String);

impl FundingReason {
    /// Parses `raw`.
    ///
    /// # Errors
    /// [`AdminError::Invalid`] for a blank, too long or control-character reason.
    pub fn parse(raw: &str) -> Result<Self, AdminError> {
        let reason = raw.trim();
        if reason.is_empty()
            || reason.chars().count() > MAX_FUNDING_REASON_CHARS
            || reason.chars().any(char::is_control)
        {
            return Err(invalid(
                "reason",
                "must be 1 to 500 characters without control characters",
            ));
        }
        Ok(Self(reason.to_owned()))
    }

    /// The reason.
    pub fn as_str(&self) -> &str {
        &self.0
    }
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
    /// Wires the service to its ports, acting for `context` (who is audited for its changes).
    pub fn new(
        ports: AdminPorts,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        context: AuditContext,
    ) -> Self {
        Self {
            ports,
            clock,
            ids,
            context,
        }
    }

    /// The same service acting for `context` (a console request's operator).
    pub fn acting_for(&self, context: AuditContext) -> Self {
        Self {
            context,
            ..self.clone()
        }
    }

    /// The audit entry of `action` on `object`.
    fn audit(
        &self,
        action: AuditAction,
        kind: &str,
        object: impl ToString,
        before: Option<serde_json::Value>,
        after: serde_json::Value,
    ) -> AuditEntry {
        self.context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            action,
            kind,
            object,
            before,
            Some(after),
        )
    }

    /// `raw` as a webhook URL payoutd may deliver to: an absolute http(s) URL
    /// ([`parse_postback_url`]) that the delivery worker's address guard accepts.
    ///
    /// # Errors
    /// [`AdminError::Invalid`] for a malformed URL, [`AdminError::TargetRefused`] for one the
    /// guard refuses.
    pub fn check_webhook_target(&self, raw: &str) -> Result<String, AdminError> {
        let url = parse_postback_url(raw)?;
        self.ports
            .targets
            .check_target(&url)
            .map_err(|refused| AdminError::TargetRefused(refused.0))?;
        Ok(url)
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
        let postback_url = postback_url
            .map(|url| self.check_webhook_target(url))
            .transpose()?;
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
        let audit = self.audit(
            AuditAction::SubaccountCreated,
            "subaccount",
            subaccount.id,
            None,
            serde_json::json!({
                "name": subaccount.name,
                "email": subaccount.email,
                "merchant_id": subaccount.merchant_id.to_string(),
                "signature_policy": subaccount.signature_policy.as_str(),
            }),
        );
        self.ports
            .subaccounts
            .create_subaccount(
                &NewSubaccount {
                    subaccount: subaccount.clone(),
                },
                &audit,
            )
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
        let audit = self.audit(
            AuditAction::ApiKeyIssued,
            "api_key",
            &api_key,
            None,
            serde_json::json!({"subaccount_id": subaccount.to_string(), "active": true}),
        );
        self.ports
            .keys
            .insert_credential(
                ApiKeyId::from_uuid(self.ids.new_id()),
                subaccount,
                &api_key,
                &api_secret,
                self.clock.now(),
                &audit,
            )
            .await?;
        Ok(IssuedKey {
            api_key,
            api_secret,
        })
    }

    /// Revokes an API key; it stops working at once.
    pub async fn revoke_key(&self, api_key: &str) -> Result<(), AdminError> {
        let api_key = api_key.trim();
        let audit = self.audit(
            AuditAction::ApiKeyRevoked,
            "api_key",
            api_key,
            Some(serde_json::json!({"active": true})),
            serde_json::json!({"active": false}),
        );
        Ok(self
            .ports
            .keys
            .revoke_credential(api_key, self.clock.now(), &audit)
            .await?)
    }

    /// Sets the postback URL and issues a new webhook signing secret (`whsec_<base64>`).
    pub async fn set_webhook(
        &self,
        subaccount: SubaccountId,
        url: &str,
    ) -> Result<(String, Secret<String>), AdminError> {
        let url = self.check_webhook_target(url)?;
        let secret = Secret::new(format!(
            "whsec_{}",
            STANDARD.encode(self.ids.random_bytes())
        ));
        let audit = self.audit(
            AuditAction::WebhookSet,
            "subaccount",
            subaccount,
            None,
            serde_json::json!({"postback_url": url, "secret": "new"}),
        );
        self.ports
            .webhooks
            .set_webhook(subaccount, &url, &secret, &audit)
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
        let previous_until = self.clock.now() + overlap;
        let audit = self.audit(
            AuditAction::WebhookSecretRotated,
            "subaccount",
            subaccount,
            None,
            serde_json::json!({"secret": "new", "previous_valid_until": previous_until.to_rfc3339()}),
        );
        self.ports
            .webhooks
            .rotate_webhook_secret(subaccount, &secret, previous_until, &audit)
            .await?;
        Ok(secret)
    }

    /// The subaccount's events (newest first, after `before`, at most `limit`) with their
    /// attempts.
    pub async fn events(
        &self,
        subaccount: SubaccountId,
        status: Option<&str>,
        since: Option<DateTime<Utc>>,
        before: Option<EventId>,
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
            .list_events(subaccount, status, since, before, limit)
            .await?)
    }

    /// Compares every balance with the sum of its ledger entries.
    pub async fn check_ledger(&self) -> Result<LedgerCheck, AdminError> {
        Ok(self.ports.ledger.check_ledger().await?)
    }

    /// Queues one event for delivery again, with a fresh retry schedule.
    pub async fn resend_event(&self, event: EventId) -> Result<u64, AdminError> {
        let audit = self.audit(
            AuditAction::WebhookResent,
            "event",
            event,
            None,
            serde_json::json!({"queued": 1}),
        );
        match self
            .ports
            .events
            .resend_events(&ResendSelection::One(event), self.clock.now(), &audit)
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
        let audit = self.audit(
            AuditAction::WebhooksResent,
            "subaccount",
            subaccount,
            None,
            serde_json::json!({"since": since.to_rfc3339(), "until": until.to_rfc3339()}),
        );
        Ok(self
            .ports
            .events
            .resend_events(&selection, self.clock.now(), &audit)
            .await?)
    }

    /// Credits `amount` minor units to the subaccount's available balance, as a ledger entry,
    /// for `reason` (kept in the audit log).
    pub async fn fund(
        &self,
        subaccount: SubaccountId,
        asset: &str,
        amount: &str,
        reason: &str,
    ) -> Result<Balance, AdminError> {
        let asset = Asset::parse(asset)
            .ok_or_else(|| invalid("asset", "must be one of AUD, USD, CAD, EUR, NZD"))?;
        let amount = MinorUnits::parse(amount)
            .map_err(|_| invalid("amount", "must be a whole number from 1 to 10^12"))?;
        let reason = FundingReason::parse(reason)?;
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
        let audit = self.audit(
            AuditAction::Funded,
            "subaccount",
            subaccount,
            None,
            serde_json::json!({
                "asset": asset.code(),
                "amount": amount.get(),
                "reason": reason.as_str(),
                "ledger_entry_id": entry.id.to_string(),
            }),
        );
        Ok(self.ports.ledger.apply_ledger_entry(&entry, &audit).await?)
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
        let audit = self.audit(
            AuditAction::FeeSet,
            "subaccount",
            subaccount,
            None,
            serde_json::json!({
                "asset": template.asset.code(),
                "fixed": template.fixed,
                "percentage": template.percentage.as_f64(),
                "min_amount": template.min_amount,
            }),
        );
        self.ports
            .subaccounts
            .upsert_fee_template(subaccount, &template, &audit)
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
        let audit = self.audit(
            AuditAction::SignaturePolicySet,
            "subaccount",
            subaccount,
            None,
            serde_json::json!({"signature_policy": policy.as_str()}),
        );
        Ok(self
            .ports
            .subaccounts
            .set_signature_policy(subaccount, policy, &audit)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::ports::MockApiKeyStore;
    use crate::delivery::history::MockEventHistoryStore;
    use crate::delivery::ports::{MockWebhookEndpointStore, MockWebhookTargetGuard, TargetRefused};
    use crate::ledger::MockLedgerStore;
    use crate::ports::{MockClock, MockIdGenerator};
    use crate::subaccount::ports::MockSubaccountSetupStore;

    fn service(ledger: MockLedgerStore) -> AdminService {
        with_ports(
            ledger,
            MockWebhookEndpointStore::new(),
            MockWebhookTargetGuard::new(),
        )
    }

    fn with_ports(
        ledger: MockLedgerStore,
        webhooks: MockWebhookEndpointStore,
        targets: MockWebhookTargetGuard,
    ) -> AdminService {
        let mut clock = MockClock::new();
        clock
            .expect_now()
            .returning(|| DateTime::from_timestamp_millis(1_700_000_000_000).unwrap_or_default());
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(Uuid::new_v4);
        AdminService::new(
            AdminPorts {
                subaccounts: Arc::new(MockSubaccountSetupStore::new()),
                keys: Arc::new(MockApiKeyStore::new()),
                webhooks: Arc::new(webhooks),
                ledger: Arc::new(ledger),
                events: Arc::new(MockEventHistoryStore::new()),
                targets: Arc::new(targets),
            },
            Arc::new(clock),
            Arc::new(ids),
            AuditContext::cli(Some("ann")),
        )
    }

    #[tokio::test]
    async fn funding_is_written_with_its_reason_and_actor_in_one_store_call() {
        let sub = SubaccountId::from_uuid(Uuid::from_u128(7));
        let mut ledger = MockLedgerStore::new();
        ledger
            .expect_apply_ledger_entry()
            .withf(move |entry, audit| {
                entry.available_delta == 2_500
                    && entry.subaccount_id == sub
                    && audit.action == AuditAction::Funded
                    && audit.actor.name() == "cli:ann"
                    && audit.object_id == sub.to_string()
                    && audit.after.as_ref().is_some_and(|a| {
                        a["reason"] == "initial float"
                            && a["amount"] == 2_500
                            && a["ledger_entry_id"] == entry.id.to_string()
                    })
            })
            .times(1)
            .returning(|entry, _| {
                Ok(Balance {
                    asset: entry.asset,
                    available: entry.available_delta,
                    pending: 0,
                })
            });
        let balance = service(ledger)
            .fund(sub, "AUD", "2500", "  initial float ")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(balance.available, 2_500);
    }

    #[tokio::test]
    async fn funding_without_a_reason_never_reaches_the_ledger() {
        let sub = SubaccountId::from_uuid(Uuid::from_u128(7));
        for reason in ["", "   ", "a\nb", &"x".repeat(501)] {
            let mut ledger = MockLedgerStore::new();
            ledger.expect_apply_ledger_entry().never();
            let refused = service(ledger).fund(sub, "AUD", "1", reason).await;
            assert!(
                matches!(
                    refused,
                    Err(AdminError::Invalid {
                        field: "reason",
                        ..
                    })
                ),
                "{reason:?}"
            );
        }
        assert!(FundingReason::parse(&"x".repeat(500)).is_ok());
    }

    #[tokio::test]
    async fn a_webhook_url_the_guard_refuses_is_never_stored() {
        let sub = SubaccountId::from_uuid(Uuid::from_u128(7));
        let mut webhooks = MockWebhookEndpointStore::new();
        webhooks.expect_set_webhook().never();
        let mut targets = MockWebhookTargetGuard::new();
        targets
            .expect_check_target()
            .withf(|url| url == "http://10.0.0.5/hooks")
            .times(1)
            .returning(|_| Err(TargetRefused("10.0.0.5 is a private address".to_owned())));
        let admin = with_ports(MockLedgerStore::new(), webhooks, targets);
        let refused = admin.set_webhook(sub, " http://10.0.0.5/hooks ").await;
        assert!(
            matches!(&refused, Err(AdminError::TargetRefused(why)) if why.contains("private")),
            "{refused:?}"
        );
        // A malformed URL is refused before the guard is asked.
        let mut targets = MockWebhookTargetGuard::new();
        targets.expect_check_target().never();
        let mut webhooks = MockWebhookEndpointStore::new();
        webhooks.expect_set_webhook().never();
        let admin = with_ports(MockLedgerStore::new(), webhooks, targets);
        assert!(matches!(
            admin.set_webhook(sub, "ftp://x").await,
            Err(AdminError::Invalid { field: "url", .. })
        ));
    }

    #[tokio::test]
    async fn a_webhook_url_the_guard_accepts_is_stored_with_a_new_secret() {
        let sub = SubaccountId::from_uuid(Uuid::from_u128(7));
        let mut targets = MockWebhookTargetGuard::new();
        targets.expect_check_target().times(1).returning(|_| Ok(()));
        let mut webhooks = MockWebhookEndpointStore::new();
        webhooks
            .expect_set_webhook()
            .withf(move |s, url, secret, audit| {
                *s == sub
                    && url == "https://hooks.example.com/p"
                    && secret.expose().starts_with("whsec_")
                    && audit.action == AuditAction::WebhookSet
            })
            .times(1)
            .returning(|_, _, _, _| Ok(()));
        let mut admin = with_ports(MockLedgerStore::new(), webhooks, targets);
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(Uuid::new_v4);
        ids.expect_random_bytes().returning(|| [7; 32]);
        admin.ids = Arc::new(ids);
        let (url, _) = admin
            .set_webhook(sub, "https://hooks.example.com/p")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(url, "https://hooks.example.com/p");
    }

    #[test]
    fn another_actor_is_audited_through_the_same_service() {
        let admin = service(MockLedgerStore::new());
        let console = admin.acting_for(AuditContext {
            actor: crate::audit::Actor::Cli {
                name: "other".to_owned(),
            },
            request_id: Some("r".to_owned()),
            client_address: None,
        });
        let entry = console.audit(
            AuditAction::FeeSet,
            "subaccount",
            "x",
            None,
            serde_json::json!({}),
        );
        assert_eq!(entry.actor.name(), "other");
        assert_eq!(entry.request_id.as_deref(), Some("r"));
    }

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
