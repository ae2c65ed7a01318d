//! Black-box HTTP tests: the real application on port 0 over a fresh database per test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod accounts;
mod admin_kyc;
mod auth;
mod batches;
mod bodies;
mod bulk_payouts;
mod confirm;
mod connections;
mod envelope;
mod fuzz_regressions;
mod helpers;
mod idempotency;
mod kyc;
mod master_key;
mod metrics;
mod payouts;
mod production;
mod production_rails;
mod rate_limit;
mod receivers;
mod subaccounts;
mod tenancy;
mod webhook_examples;
mod webhook_sink;
mod webhooks;
