//! The loops that run the background jobs next to the HTTP server, one module per job: batch
//! passes ([`batches`]), webhook delivery ([`delivery`]), housekeeping ([`housekeeping`]),
//! confirmation request retries ([`notifications`]), the production rails' inbound files
//! ([`inbound`]) and the sandbox KYC provider's decisions ([`sandbox_kyc`]). The jobs
//! themselves are the domain's (`BatchRunner`, `DeliveryWorker`, `NotificationWorker`,
//! `InboundProcessor`); these loops only schedule them, on tokio. `startup` wires them.

pub mod batches;
pub mod credential_changes;
pub mod delivery;
pub mod housekeeping;
pub mod inbound;
pub mod notifications;
pub mod sandbox_kyc;
