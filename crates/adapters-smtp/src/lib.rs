//! The SMTP notifier: sends confirmation requests by e-mail ([`SmtpNotifier`], the domain's
//! `Notifier` port) with lettre over rustls (ring), with STARTTLS, implicit TLS or (for a relay
//! on the same host only) no TLS, and optional AUTH.
//!
//! The message carries the receiver's name, the masked account details and the confirmation
//! link, as plain text with an HTML alternative. The link (and so the token) is never logged
//! and never part of an error.

mod message;
mod notifier;
mod settings;

pub use message::SUBJECT;
pub use notifier::SmtpNotifier;
pub use settings::{SmtpConfigError, SmtpCredentials, SmtpSettings, TlsMode};
