//! payoutd's pure core.
//!
//! Entities, parsed value types, status machines, masking, the error-code catalogue, domain
//! events, the port traits through which the core reaches the outside world, and the use-case
//! services that drive them. This crate depends on no framework, database, HTTP or runtime crate
//! (a tidy test in `xtask` enforces it): adapters implement its ports, `app-actix` wires them.

pub mod account;
pub mod admin;
pub mod audit;
pub mod auth;
pub mod batch;
#[cfg(any(test, feature = "mock"))]
pub mod builders;
mod coded_status;
pub mod codes;
pub mod country;
pub mod delivery;
pub mod error;
pub mod events;
pub mod idempotency;
pub mod ids;
pub mod ledger;
pub mod masking;
pub mod money;
pub mod operators;
pub mod overview;
pub mod paging;
pub mod payout;
pub mod payout_story;
pub mod ports;
pub mod rail;
pub mod receiver;
pub mod subaccount;
pub mod text;
pub mod time;
pub mod validation;

pub use codes::ErrorCode;
pub use error::PortError;
