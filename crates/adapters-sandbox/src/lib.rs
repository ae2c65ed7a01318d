//! Sandbox simulators of the outside world, for `PAYOUT_SANDBOX=true`.
//!
//! They behave like the real services as far as the core can tell: asynchronous and fallible.

pub mod kyc;
pub mod notifier;
pub mod rail;

pub use kyc::{SandboxDecision, SandboxKyc};
pub use notifier::SandboxNotifier;
pub use rail::SandboxRail;
