//! Builders of domain entities for tests, in the manner of crates.io's test-utils builders:
//! every field starts at a plausible value, and a test sets only the fields it is about, so a
//! new field is added here once rather than in every test that builds the entity.
//!
//! Compiled for the domain's own tests and, through the `mock` feature, for other crates'
//! tests (which enable it only as a dev-dependency).

mod account;
mod batch;
mod payout;
mod receiver;
mod subaccount;

pub use account::ReceiverAccountBuilder;
pub use batch::BatchBuilder;
pub use payout::{BUILT_AT_SECS, PayoutBuilder};
pub use receiver::ReceiverBuilder;
pub use subaccount::SubaccountBuilder;
