//! Webhook delivery as the core sees it: one attempt of one event to one endpoint.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::ids::EventId;
use crate::masking::Secret;

/// One delivery attempt.
#[derive(Debug, Clone)]
pub struct WebhookDelivery {
    /// The subaccount's postback URL.
    pub url: String,
    /// The event id: the `webhook-id` header, stable across retries.
    pub event_id: EventId,
    /// When the attempt is made (`webhook-timestamp`, seconds).
    pub attempted_at: DateTime<Utc>,
    /// The JSON body, exactly as signed and sent.
    pub body: Vec<u8>,
    /// The signing secrets (`whsec_…`): the current one first, then the previous one during a
    /// rotation. Each produces one signature in `webhook-signature`.
    pub secrets: Vec<Secret<String>>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeliveryOutcome {
    /// The endpoint answered 2xx.
    Delivered {
        /// The status code.
        status: u16,
    },
    /// The endpoint answered 410 Gone: it asks never to be called again.
    Gone,
    /// Any other answer, a timeout, or a connection failure: retry later.
    Failed {
        /// The status code, when the endpoint answered.
        status: Option<u16>,
        /// The endpoint's `retry-after`, when it sent one.
        retry_after: Option<Duration>,
        /// A short, secret-free description (at most 500 characters of the response body or
        /// the error).
        error: String,
    },
    /// The URL was not attempted: it is malformed, not http(s), or resolves to an address the
    /// configuration forbids (loopback, private, link-local, unspecified).
    Refused {
        /// Why.
        reason: String,
    },
}

/// The outcome of one attempt and how long it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryAttempt {
    /// What happened.
    pub outcome: DeliveryOutcome,
    /// Time from the start of the attempt to its end.
    pub latency: Duration,
}

/// Sends webhooks.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// Makes one attempt: POST `body` to `url` with `content-type: application/json`, a
    /// `user-agent` naming the service and its version, and the Standard Webhooks headers
    /// `webhook-id`, `webhook-timestamp` and `webhook-signature`. Never follows redirects (a 3xx
    /// is `Failed`); gives up after the configured timeout (`Failed` with no status). Never
    /// returns an error: every way an attempt can end is a [`DeliveryOutcome`].
    async fn send(&self, delivery: &WebhookDelivery) -> DeliveryAttempt;
}
