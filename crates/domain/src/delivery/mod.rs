//! Webhook delivery (docs/WEBHOOKS.md, Delivery): the outbox is drained by workers that claim due
//! events, send each through the [`sender::WebhookSender`] port, and record what happened. The
//! retry policy lives here; the store makes each step durable with conditional updates, so several
//! workers (in one or many instances) never make the same attempt twice.

pub mod history;
pub mod policy;
pub mod ports;
pub mod sender;
pub mod worker;

pub use policy::{NextStep, RETRY_DELAYS, next_step};
pub use sender::{DeliveryAttempt, DeliveryOutcome, WebhookDelivery, WebhookSender};
