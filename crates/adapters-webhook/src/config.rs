//! The sender's configuration. The app reads it from the environment; this crate only defines
//! it.

use std::time::Duration;

/// How [`crate::HttpWebhookSender`] delivers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSenderConfig {
    /// The deadline of one attempt, from connecting until the response body is read (15 s by
    /// default). Connecting alone gets at most [`WebhookSenderConfig::CONNECT_TIMEOUT_CAP`].
    /// Read from `PAYOUT_WEBHOOK_TIMEOUT_MS` (milliseconds).
    pub timeout: Duration,
    /// Whether postback URLs may reach addresses that are not globally reachable (loopback,
    /// private, link-local, CGNAT, documentation, benchmarking, reserved...; see
    /// [`crate::guard`]). Unspecified, broadcast and multicast addresses stay refused either
    /// way: they are never one receiver. `false` in production; the app turns it on in sandbox
    /// mode. Read from `PAYOUT_WEBHOOK_ALLOW_PRIVATE` (`true`/`false`).
    pub allow_private_targets: bool,
    /// The `user-agent` header: `payoutd/<version>`. Not read from the environment.
    pub user_agent: String,
}

impl WebhookSenderConfig {
    /// The default per-attempt timeout (docs/WEBHOOKS.md, Delivery).
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
    /// The longest time spent resolving and connecting, whatever the overall timeout.
    pub const CONNECT_TIMEOUT_CAP: Duration = Duration::from_secs(5);
    /// `payoutd/<version>`.
    pub const DEFAULT_USER_AGENT: &'static str = concat!("payoutd/", env!("CARGO_PKG_VERSION"));

    /// The timeout of the connect phase: shorter than the whole attempt.
    pub fn connect_timeout(&self) -> Duration {
        self.timeout.min(Self::CONNECT_TIMEOUT_CAP)
    }
}

impl Default for WebhookSenderConfig {
    fn default() -> Self {
        Self {
            timeout: Self::DEFAULT_TIMEOUT,
            allow_private_targets: false,
            user_agent: Self::DEFAULT_USER_AGENT.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_documented_values() {
        let config = WebhookSenderConfig::default();
        assert_eq!(config.timeout, Duration::from_secs(15));
        assert!(!config.allow_private_targets);
        assert!(config.user_agent.starts_with("payoutd/"));
        assert!(config.connect_timeout() < config.timeout);
    }

    #[test]
    fn connect_timeout_never_exceeds_the_attempt_timeout() {
        let config = WebhookSenderConfig {
            timeout: Duration::from_millis(300),
            ..WebhookSenderConfig::default()
        };
        assert_eq!(config.connect_timeout(), Duration::from_millis(300));
    }
}
