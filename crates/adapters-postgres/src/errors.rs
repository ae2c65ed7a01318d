//! Translation of storage failures into the domain's `PortError`.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::pooled_connection::deadpool::PoolError;
use domain::PortError;

/// A pool checkout failure: the database is unreachable or saturated (503).
pub(crate) fn from_pool(e: PoolError) -> PortError {
    PortError::Unavailable(anyhow::anyhow!("database connection unavailable: {e}"))
}

/// A query failure. Lost connections and timeouts are `Unavailable`; anything else `Unknown`.
pub(crate) fn from_diesel(e: DieselError) -> PortError {
    match &e {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, _)
        | DieselError::BrokenTransactionManager => PortError::Unavailable(anyhow::Error::new(e)),
        DieselError::DatabaseError(_, info) if info.message().contains("statement timeout") => {
            PortError::Unavailable(anyhow::Error::new(e))
        }
        _ => PortError::Unknown(anyhow::Error::new(e)),
    }
}

/// The constraint (or unique index) a unique violation hit, if that is what `e` is.
pub(crate) fn unique_violation(e: &DieselError) -> Option<&str> {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => {
            info.constraint_name()
        }
        _ => None,
    }
}

/// Whether `e` is a foreign-key violation.
pub(crate) fn is_foreign_key_violation(e: &DieselError) -> bool {
    matches!(
        e,
        DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _)
    )
}
