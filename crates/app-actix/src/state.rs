//! What every handler shares: the use-case services and the readiness probe.

use async_trait::async_trait;
use domain::PortError;
use domain::account::service::AccountService;
use domain::auth::AuthService;
use domain::payout::service::PayoutService;
use domain::receiver::service::ReceiverService;
use domain::subaccount::service::SubaccountService;

/// Whether the service can take traffic (database reachable, schema current).
#[async_trait]
pub trait Readiness: Send + Sync {
    /// `Ok` when ready.
    async fn check(&self) -> Result<(), PortError>;
}

#[async_trait]
impl Readiness for adapters_postgres::PgStore {
    async fn check(&self) -> Result<(), PortError> {
        self.check_ready().await
    }
}

/// Shared handler state.
pub struct AppState {
    /// Authentication.
    pub auth: AuthService,
    /// Receiver use cases.
    pub receivers: ReceiverService,
    /// Subaccount use cases.
    pub subaccounts: SubaccountService,
    /// Receiver-account use cases.
    pub accounts: AccountService,
    /// Payout use cases.
    pub payouts: PayoutService,
    /// Batches: the runner the background job and the sandbox helpers drive.
    pub batches: std::sync::Arc<domain::batch::runner::BatchRunner>,
    /// Requests per API key.
    pub rate_limit: std::sync::Arc<crate::http::rate_limit::ApiKeyLimiter>,
    /// Idempotency keys.
    pub idempotency: domain::idempotency::IdempotencyService,
    /// Metrics of the process.
    pub metrics: std::sync::Arc<crate::metrics::Metrics>,
    /// Where `/metrics` samples the database from.
    pub sampler: std::sync::Arc<dyn crate::metrics::Sampler>,
    /// Readiness probe.
    pub readiness: Box<dyn Readiness>,
    /// The sandbox notifier, whose sent requests `GET /api/test-helpers/notifications` shows
    /// (sandbox mode only).
    pub sandbox_notifier: Option<std::sync::Arc<adapters_sandbox::SandboxNotifier>>,
    /// The partner callbacks of the `cad/digital` rail (production mode with that rail only).
    pub rail_callbacks: Option<std::sync::Arc<crate::partner_callbacks::RailCallbacks>>,
    /// The notifiers this deployment sends confirmation requests through, as a subaccount's
    /// `sms_provider` and `email_provider` report them.
    pub providers: NotificationProviders,
}

/// The names of the notifiers a deployment is configured with: what `GET /api/subaccount/<id>`
/// reports as `sms_provider` and `email_provider` (the configuration decides, not the mode the
/// subaccount was created in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationProviders {
    /// `"sandbox"`, or `"none"` where no SMS is sent.
    pub sms: &'static str,
    /// `"sandbox"` or `"smtp"`.
    pub email: &'static str,
}

impl NotificationProviders {
    /// Sandbox mode: the sandbox notifier records every request, by either channel.
    pub const SANDBOX: Self = Self {
        sms: "sandbox",
        email: "sandbox",
    };
    /// Production mode: confirmation requests go by e-mail through `[smtp]`; no SMS is sent.
    pub const PRODUCTION: Self = Self {
        sms: "none",
        email: "smtp",
    };
}
