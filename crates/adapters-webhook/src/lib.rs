//! Webhook delivery (docs/WEBHOOKS.md, Delivery): Standard Webhooks signing and the HTTP sender
//! that implements the core's [`domain::delivery::WebhookSender`] port, with an SSRF guard that
//! refuses targets resolving to any address the IANA special-purpose registries do not mark
//! globally reachable (loopback, private, link-local and the rest; see [`guard`]).

pub mod config;
pub mod guard;
mod response;
pub mod sender;
pub mod signing;

pub use config::WebhookSenderConfig;
pub use sender::{HttpWebhookSender, SenderBuildError};

/// Installs rustls's `ring` provider as the process default, unless one is installed already.
///
/// reqwest is built with `rustls-no-provider`, so building ANY `reqwest::Client` in a process
/// without a default provider panics. [`HttpWebhookSender::new`] calls this itself; call it
/// before building other clients in a binary or test that links this crate (cargo unifies
/// reqwest's features, so their clients need a provider too).
pub fn install_crypto_provider() {
    // `Err` only means a provider is already installed, which is all that is needed.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
