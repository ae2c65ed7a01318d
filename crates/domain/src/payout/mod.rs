//! Payouts: money sent from a subaccount's balance to a receiver's account.

pub mod fee;
pub mod status;

pub use fee::fee;
pub use status::{
    IllegalTransition, PayoutEvent, PayoutStatus, TRANSITIONS, initial_status, transition,
};
