//! What every console handler shares: the domain services it calls.

use std::sync::Arc;

use domain::audit::AuditLog;
use domain::operators::service::OperatorService;
use domain::ports::IdGenerator;

/// The console's services.
pub struct Console {
    /// Operators, sessions and sign-in.
    pub operators: Arc<OperatorService>,
    /// The audit log.
    pub audit: Arc<dyn AuditLog>,
    /// Randomness (pre-session form secrets).
    pub ids: Arc<dyn IdGenerator>,
}
