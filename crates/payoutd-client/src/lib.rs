//! The Rust client of the payoutd payout API.
//!
//! * **Every route, typed**: subaccount and balance, receivers, receiver accounts of the six
//!   payout methods, payouts single and bulk, with request and response types.
//! * **Signing done for you**: v2 signatures (bound to method, path and body) on every request
//!   by default, v1 on request; nonces that never repeat per API key, even within a millisecond.
//! * **Safe retries**: every POST carries an idempotency key (a random UUID unless you give
//!   one), so transport errors, 429 (after its `retry-after`), 503 and `IDEM001` are retried
//!   with the same key and can never create anything twice ([`RetryPolicy`]).
//! * **Lists as streams** over the keyset cursor ([`Client::list_receivers`],
//!   [`Client::list_payouts`]), or page by page.
//! * **Errors with the API's codes**: [`Error::Api`] carries the failure envelope, each
//!   problem's [`ErrorCode`], message and field.
//! * **Webhook verification** ([`webhooks::Verifier`]): Standard Webhooks signatures,
//!   constant-time, both secrets during a rotation.
//! * **Sandbox helpers** behind the `sandbox` feature: KYC decisions, account confirmation,
//!   batch runs and rail results for integration tests.
//!
//! Pay a receiver in the sandbox (`cargo run -p payoutd-client --example pay_a_receiver`
//! against `cargo xtask serve` runs the whole of this):
//!
//! ```no_run
//! # async fn run() -> Result<(), payoutd_client::Error> {
//! use payoutd_client::{Asset, AudDirectEntry, Client, NewPayout, NewReceiver};
//!
//! let subaccount = "cea098be-aaf9-4c64-ae5c-8aae94da812e".parse().expect("a UUID");
//! let client = Client::new("http://127.0.0.1:8080", "pk_…", "sk_…", subaccount)?;
//! let receiver = client.create_receiver(&NewReceiver {
//!     first_name: "Ada".into(), last_name: "Lovelace".into(), email: "ada@example.com".into(),
//!     dob: "1990-12-10".into(), dialcode: "61".into(), phone: "412345678".into(),
//!     address: "1 Example Street".into(), city: "Sydney".into(), state: "NSW".into(),
//!     postcode: "2000".into(), country: "AUS".into(), ..NewReceiver::default()
//! }).await?;
//! let account = client.create_receiver_account(AudDirectEntry {
//!     receiver_id: receiver.receiver_id, bsb: "012002".into(), account_number: "123456789".into(),
//! }).await?;
//! let payout = NewPayout::new(receiver.receiver_id, account.receiver_account_id, 1_000, Asset::Aud);
//! let created = client.create_payout(&payout.reference("invoice-1001")).await?;
//! println!("{:?}", client.get_payout(created.payout_id).await?.status);
//! # Ok(()) }
//! ```
//!
//! TLS is rustls with the `ring` provider (installed as the process default when no other is)
//! and the platform's certificate verifier; there is no OpenSSL in the build.
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
    Client, ClientBuilder, IDEMPOTENCY_KEY_HEADER, Post, REPLAYED_HEADER, REQUEST_ID_HEADER,
    RetryPolicy,
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
