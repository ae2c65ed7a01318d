//! Translation of storage failures into the domain's `PortError`.

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::pooled_connection::deadpool::PoolError;
use domain::PortError;

/// A pool checkout failure: the database is unreachable or saturated (503).
pub(crate) fn from_pool(e: PoolError) -> PortError {
    PortError::Unavailable(anyhow::anyhow!("database connection unavailable: {e}"))
}

/// What the server says when it cannot serve a query right now: it is shutting down or starting
/// up (SQLSTATE class 57, operator intervention), it ended the session, or the statement ran out
/// of time. diesel reports these with the message only, so the message decides.
const UNAVAILABLE_MESSAGES: &[&str] = &[
    "statement timeout",
    "terminating connection",
    "the database system is shutting down",
    "the database system is starting up",
    "the database system is in recovery mode",
    "server closed the connection",
    "connection closed",
    "connection reset",
    "broken pipe",
];

/// A query failure. Lost connections, a server going away or coming back, and timeouts are
/// `Unavailable` (503, worth retrying); anything else `Unknown`.
pub(crate) fn from_diesel(e: DieselError) -> PortError {
    match &e {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, _)
        | DieselError::BrokenTransactionManager => PortError::Unavailable(anyhow::Error::new(e)),
        DieselError::DatabaseError(_, info) if is_unavailable(info.message()) => {
            PortError::Unavailable(anyhow::Error::new(e))
        }
        _ => PortError::Unknown(anyhow::Error::new(e)),
    }
}

fn is_unavailable(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    UNAVAILABLE_MESSAGES.iter().any(|m| message.contains(m))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_going_away_is_unavailable_and_a_bug_is_not() {
        for message in [
            "canceling statement due to statement timeout",
            "terminating connection due to administrator command",
            "FATAL: the database system is shutting down",
            "the database system is starting up",
            "Connection reset by peer (os error 104)",
        ] {
            assert!(is_unavailable(message), "{message}");
        }
        for message in [
            "syntax error at or near \"SELEC\"",
            "null value in column \"id\" violates not-null constraint",
        ] {
            assert!(!is_unavailable(message), "{message}");
        }
    }
}
