//! Receiver accounts: the payout destinations of a receiver, one of six payout methods.
//!
//! A method is described once ([`method`]), and so is every field its accounts carry
//! ([`field`]); the rest of the service derives from those descriptions.

pub mod data;
pub mod field;
pub mod method;
pub mod notification;
pub mod ports;
pub mod service;
pub mod status;

pub mod au;
pub mod ca;
pub mod input;
pub mod nz;
pub mod sepa;
pub mod us;

use chrono::{DateTime, Utc};

use crate::ids::{ReceiverAccountId, ReceiverId, SubaccountId};
pub use data::AccountData;
pub use field::{AccountField, PayoutAccountSlot, RailRole, Visibility};
pub use method::{FieldSpec, MethodSpec, PayoutMethod};
pub use status::{AccountStatus, ConfirmStatus};

/// A payout destination of a receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverAccount {
    /// Identifier.
    pub id: ReceiverAccountId,
    /// The owning receiver.
    pub receiver_id: ReceiverId,
    /// The receiver's subaccount.
    pub subaccount_id: SubaccountId,
    /// How it is paid (its asset follows from it).
    pub method: PayoutMethod,
    /// The account's fields, normalised; secret (encrypted at rest, masked when shown).
    pub data: AccountData,
    /// Whether it can be paid.
    pub status: AccountStatus,
    /// Whether the receiver confirmed the details.
    pub confirm_status: ConfirmStatus,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}
