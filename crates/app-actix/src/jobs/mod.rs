//! The loops that run the background jobs next to the HTTP server, one module per job: batch
//! passes ([`batches`]), webhook delivery ([`delivery`]), housekeeping ([`housekeeping`]),
//! confirmation request retries ([`notifications`]) and the sandbox KYC provider's decisions
//! ([`sandbox_kyc`]). The jobs themselves are the domain's (`BatchRunner`, `DeliveryWorker`,
//! `NotificationWorker`); these loops only schedule them, on tokio. `startup` wires them.

pub mod batches;
pub mod delivery;
pub mod housekeeping;
pub mod notifications;
pub mod sandbox_kyc;
