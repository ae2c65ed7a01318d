//! Webhook delivery adapters. For now: Standard Webhooks signing (contract §8.2), used by the
//! delivery worker that lands with the webhook-delivery work.

pub mod signing;
