//! Payouts: money sent from a subaccount's balance to a receiver's account.

pub mod bulk;
pub mod change;
pub mod fee;
pub mod model;
pub mod operator;
pub mod ports;
pub mod query;
pub mod service;
pub mod status;

pub use fee::fee;
pub use model::Payout;
pub use status::{
    IllegalTransition, PayoutStatus, PayoutTrigger, TRANSITIONS, initial_status, transition,
};
