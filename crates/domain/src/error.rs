//! The failure every port can report besides its own typed outcomes.

/// An infrastructure failure behind a port.
///
/// Use cases pass it through unchanged; the HTTP layer renders `Unavailable` as 503 `SYS503`
/// and `Unknown` as 500 `SYS500`, logging the cause chain but never sending it.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// The backing service (database, provider) cannot be reached right now; retrying later may
    /// succeed.
    #[error("dependency unavailable: {0:#}")]
    Unavailable(anyhow::Error),
    /// Anything else: a bug or an unexpected state.
    #[error(transparent)]
    Unknown(#[from] anyhow::Error),
}

impl PortError {
    /// An [`Unknown`](Self::Unknown) error with this message: a stored value the domain cannot
    /// read, a request an adapter cannot carry out.
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::Unknown(anyhow::anyhow!(message.into()))
    }
}

/// Why an operator command could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// The subaccount does not exist.
    #[error("subaccount not found")]
    SubaccountNotFound,
    /// The API key does not exist or is already revoked.
    #[error("API key not found or already revoked")]
    KeyNotFound,
    /// The subaccount has no webhook secret yet.
    #[error("the subaccount has no webhook configured; use set-webhook first")]
    NoWebhook,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}
