//! PostgreSQL adapters of payoutd's store ports (diesel + diesel-async, no libpq).
//!
//! Each store call that changes state runs in one transaction together with the outbox events
//! it is given. Storage errors are translated here: a unique violation becomes the port's
//! duplicate outcome, a missing row `Ok(None)`, a pool or connection failure
//! `PortError::Unavailable`; `diesel::result::Error` never leaves this crate.

mod cached;
pub mod citus;
pub mod credential_changes;
pub mod email_keys;
mod errors;
pub mod migrate;
pub mod pool;
mod rows;
#[allow(missing_docs)]
mod schema;
mod stores;

#[cfg(feature = "test-db")]
pub mod test_db;
pub mod vault;

pub use email_keys::{EmailRekey, rekey_receiver_emails};
pub use migrate::{create_database_if_missing, run_migrations};
pub use pool::{DbConfig, DbPool, create_pool};
pub use stores::accounts::Explain;
pub use stores::credentials::NONCE_RETENTION;
pub use stores::rotation::{
    RotationBatch, RotationFailure, RotationMarker, RotationSummary, SealedTable, TableRotation,
};
pub use stores::{GroupCommitSettings, OperationalCounts, PayoutGroups, PgStore};
pub use vault::Vault;
