//! The audit log: who changed what, from the console or with `payoutd admin`. Entries are
//! appended, never changed (the table refuses updates and deletes); a change's entry is written
//! in the change's own transaction wherever its store takes one, so a change is never without
//! its entry.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::PortError;
use crate::ids::{AuditEntryId, OperatorId};
use crate::ports::{Clock, IdGenerator};

/// Who made a change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A signed-in console operator.
    Operator {
        /// The operator.
        id: OperatorId,
        /// Their e-mail address when they acted.
        email: String,
    },
    /// `payoutd admin` (`cli`, or `cli:<OS user>` when `USER` is set).
    Cli {
        /// What the log shows.
        name: String,
    },
}

impl Actor {
    /// `operator` or `cli`.
    pub const fn kind(&self) -> &'static str {
        match self {
            Actor::Operator { .. } => "operator",
            Actor::Cli { .. } => "cli",
        }
    }

    /// What the log shows: the e-mail, or `cli…`.
    pub fn name(&self) -> &str {
        match self {
            Actor::Operator { email, .. } => email,
            Actor::Cli { name } => name,
        }
    }

    /// The operator, if one acted.
    pub const fn operator_id(&self) -> Option<OperatorId> {
        match self {
            Actor::Operator { id, .. } => Some(*id),
            Actor::Cli { .. } => None,
        }
    }
}

/// What was done. The stored names are dotted, object first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuditAction {
    /// An operator was created (enrolment link issued).
    OperatorCreated,
    /// An operator set a password and enrolled a second factor.
    OperatorEnrolled,
    /// An operator's role changed.
    OperatorRoleChanged,
    /// An operator was disabled (sessions ended).
    OperatorDisabled,
    /// An operator chose the time zone the console shows it times in.
    OperatorTimeZoneSet,
    /// An operator signed in.
    SignedIn,
    /// An operator signed out.
    SignedOut,
    /// A receiver's KYC was decided.
    KycDecided,
    /// A payout was cancelled.
    PayoutCancelled,
    /// One webhook event was queued again.
    WebhookResent,
    /// A subaccount's events of a time range were queued again.
    WebhooksResent,
    /// A confirmation request was sent again.
    ConfirmationResent,
    /// A bank file's bytes were downloaded.
    BankFileDownloaded,
    /// A subaccount was created.
    SubaccountCreated,
    /// An API key was issued.
    ApiKeyIssued,
    /// An API key was revoked.
    ApiKeyRevoked,
    /// A fee template was set.
    FeeSet,
    /// A webhook URL was set (with a new secret).
    WebhookSet,
    /// A webhook secret was rotated.
    WebhookSecretRotated,
    /// A subaccount's signature policy was set.
    SignaturePolicySet,
    /// A balance was credited (with a reason).
    Funded,
    /// Sealed secrets were moved to the current master key.
    MasterKeyRotated,
    /// A document read from a rail was downloaded as received.
    InboundFileDownloaded,
    /// A rail's open batches were brought forward to run now, as at a cut-off.
    CutoffRun,
}

impl AuditAction {
    /// Every action.
    pub const ALL: [AuditAction; 24] = [
        AuditAction::OperatorCreated,
        AuditAction::OperatorEnrolled,
        AuditAction::OperatorRoleChanged,
        AuditAction::OperatorDisabled,
        AuditAction::OperatorTimeZoneSet,
        AuditAction::SignedIn,
        AuditAction::SignedOut,
        AuditAction::KycDecided,
        AuditAction::PayoutCancelled,
        AuditAction::WebhookResent,
        AuditAction::WebhooksResent,
        AuditAction::ConfirmationResent,
        AuditAction::BankFileDownloaded,
        AuditAction::SubaccountCreated,
        AuditAction::ApiKeyIssued,
        AuditAction::ApiKeyRevoked,
        AuditAction::FeeSet,
        AuditAction::WebhookSet,
        AuditAction::WebhookSecretRotated,
        AuditAction::SignaturePolicySet,
        AuditAction::Funded,
        AuditAction::MasterKeyRotated,
        AuditAction::InboundFileDownloaded,
        AuditAction::CutoffRun,
    ];

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            AuditAction::OperatorCreated => "operator.create",
            AuditAction::OperatorEnrolled => "operator.enrol",
            AuditAction::OperatorRoleChanged => "operator.role",
            AuditAction::OperatorDisabled => "operator.disable",
            AuditAction::OperatorTimeZoneSet => "operator.time_zone",
            AuditAction::SignedIn => "session.sign_in",
            AuditAction::SignedOut => "session.sign_out",
            AuditAction::KycDecided => "receiver.kyc",
            AuditAction::PayoutCancelled => "payout.cancel",
            AuditAction::WebhookResent => "event.resend",
            AuditAction::WebhooksResent => "event.resend_range",
            AuditAction::ConfirmationResent => "notification.resend",
            AuditAction::BankFileDownloaded => "rail_file.download",
            AuditAction::SubaccountCreated => "subaccount.create",
            AuditAction::ApiKeyIssued => "api_key.issue",
            AuditAction::ApiKeyRevoked => "api_key.revoke",
            AuditAction::FeeSet => "fee.set",
            AuditAction::WebhookSet => "webhook.set",
            AuditAction::WebhookSecretRotated => "webhook.rotate_secret",
            AuditAction::SignaturePolicySet => "subaccount.signature_policy",
            AuditAction::Funded => "balance.fund",
            AuditAction::MasterKeyRotated => "vault.rotate_master_key",
            AuditAction::InboundFileDownloaded => "inbound_file.download",
            AuditAction::CutoffRun => "rail.run_cutoff",
        }
    }

    /// The action stored as `raw`.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == raw)
    }
}

/// Who acts, and from where: what every entry of one request (or command) shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditContext {
    /// Who.
    pub actor: Actor,
    /// The console request's `x-request-id` (none for the CLI).
    pub request_id: Option<String>,
    /// The client's address (none for the CLI).
    pub client_address: Option<String>,
}

impl AuditContext {
    /// A command of `payoutd admin`, run by the OS user `user` when known.
    pub fn cli(user: Option<&str>) -> Self {
        let name = match user.map(str::trim).filter(|u| {
            !u.is_empty() && u.chars().count() <= 64 && !u.chars().any(char::is_control)
        }) {
            Some(user) => format!("cli:{user}"),
            None => "cli".to_owned(),
        };
        Self {
            actor: Actor::Cli { name },
            request_id: None,
            client_address: None,
        }
    }

    /// The entry recording `action` on `object` (kind and id), with the state before and after.
    #[allow(clippy::too_many_arguments)]
    pub fn entry(
        &self,
        ids: &dyn IdGenerator,
        clock: &dyn Clock,
        action: AuditAction,
        object_kind: &str,
        object_id: impl ToString,
        before: Option<Value>,
        after: Option<Value>,
    ) -> AuditEntry {
        AuditEntry {
            id: AuditEntryId::from_uuid(ids.new_id()),
            at: clock.now(),
            actor: self.actor.clone(),
            action,
            object_kind: object_kind.to_owned(),
            object_id: object_id.to_string(),
            before,
            after,
            request_id: self.request_id.clone(),
            client_address: self.client_address.clone(),
        }
    }
}

/// One row of the audit log.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Its id.
    pub id: AuditEntryId,
    /// When.
    pub at: DateTime<Utc>,
    /// Who.
    pub actor: Actor,
    /// What.
    pub action: AuditAction,
    /// The kind of object changed (`receiver`, `payout`, `subaccount`, `operator`, …).
    pub object_kind: String,
    /// Its id (or name).
    pub object_id: String,
    /// Its state before, as far as it matters (never a secret).
    pub before: Option<Value>,
    /// Its state after (never a secret).
    pub after: Option<Value>,
    /// The request's id.
    pub request_id: Option<String>,
    /// The client's address.
    pub client_address: Option<String>,
}

/// Which entries to list: newest first, optionally filtered, after a position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    /// Only this action.
    pub action: Option<AuditAction>,
    /// Only entries whose actor's name contains this.
    pub actor: Option<String>,
    /// Only entries about this object id.
    pub object_id: Option<String>,
    /// Only entries older than this one (the last of the previous page).
    pub before: Option<AuditEntryId>,
    /// At most this many (1..=500).
    pub limit: u32,
}

/// The audit log.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Appends `entry` on its own (for actions whose store writes no audit row itself, and
    /// reads worth recording such as a bank file download).
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn append(&self, entry: &AuditEntry) -> Result<(), PortError>;

    /// Entries newest first (by time, then id), as `query` says.
    ///
    /// # Errors
    /// `PortError` when they cannot be read.
    async fn list(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, PortError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_names_round_trip_and_are_unique() {
        let mut names: Vec<&str> = AuditAction::ALL.iter().map(|a| a.as_str()).collect();
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.as_str()), Some(action));
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), AuditAction::ALL.len());
    }

    #[test]
    fn the_cli_names_its_user_when_sane() {
        assert_eq!(AuditContext::cli(Some("ann")).actor.name(), "cli:ann");
        assert_eq!(AuditContext::cli(None).actor.name(), "cli");
        assert_eq!(AuditContext::cli(Some(" ")).actor.name(), "cli");
        assert_eq!(AuditContext::cli(Some("a\nb")).actor.name(), "cli");
        assert_eq!(AuditContext::cli(None).actor.kind(), "cli");
    }
}
