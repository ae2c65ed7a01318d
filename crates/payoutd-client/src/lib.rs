#![doc = include_str!("../README.md")]
#![deny(missing_docs)]

mod client;
mod codes;
mod error;
mod routes;
#[cfg(feature = "sandbox")]
mod sandbox;
pub mod signing;
mod types;
pub mod webhooks;

pub use client::{
    Client, ClientBuilder, IDEMPOTENCY_KEY_HEADER, MAX_ANSWER_BYTES, Post, REPLAYED_HEADER,
    REQUEST_ID_HEADER, RetryPolicy,
};
pub use codes::ErrorCode;
pub use error::{ApiError, Error, ErrorItem};
pub use routes::STREAM_PAGE_SIZE;
#[cfg(feature = "sandbox")]
pub use sandbox::{BatchRun, KycDecision, RailResult, SentNotification, SettleTarget};
pub use signing::{SignatureVersion, Signer};
pub use types::*;
/// The UUID type of the API's ids.
pub use uuid::Uuid;
