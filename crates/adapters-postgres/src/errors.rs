//! Translation of storage failures into the domain's `PortError`, and the error of the stores'
//! transactions (`TxError`).

use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::pooled_connection::deadpool::PoolError;
use domain::PortError;

/// Why a store transaction rolled back: a query failed, or something the transaction relies on
/// did not hold. Each has its own variant, so a store's own failure is never dressed up as a
/// diesel error; `?` on a query converts, so `conn.transaction::<_, TxError, _>` works as it
/// does with diesel's error. [`from_tx`] is the one place it becomes a `PortError`.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TxError {
    /// A query failed (including `RollbackTransaction`, a rollback asked for on purpose).
    #[error(transparent)]
    Db(#[from] DieselError),
    /// The running request's idempotency key is no longer its own (it outlived its lease and a
    /// retry took the key over): its write must not commit.
    #[error("the request's idempotency key is no longer its own; not writing")]
    KeyNotOwn,
    /// Something the store or the domain guarantees did not hold: a stored row the domain
    /// refuses, a transition the domain's table does not allow, a statement that touched fewer
    /// rows than it must.
    #[error("{0:#}")]
    Invariant(anyhow::Error),
}

impl TxError {
    /// A broken invariant, described by the error that found it.
    pub(crate) fn invariant(cause: impl Into<anyhow::Error>) -> Self {
        Self::Invariant(cause.into())
    }

    /// The constraint (or unique index) a unique violation hit, if the query failed with one.
    pub(crate) fn unique_violation(&self) -> Option<&str> {
        match self {
            TxError::Db(e) => unique_violation(e),
            TxError::KeyNotOwn | TxError::Invariant(_) => None,
        }
    }

    /// Whether PostgreSQL rolled the transaction back to break a deadlock or a serialization
    /// conflict with another one: nothing of it was written, and running it again is how such
    /// a conflict is meant to be resolved.
    pub(crate) fn lost_a_conflict(&self) -> bool {
        match self {
            TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _)) => {
                true
            }
            TxError::Db(DieselError::DatabaseError(_, info)) => {
                let message = info.message().to_ascii_lowercase();
                CONFLICT_MESSAGES.iter().any(|m| message.contains(m))
            }
            TxError::Db(_) | TxError::KeyNotOwn | TxError::Invariant(_) => false,
        }
    }
}

/// How PostgreSQL (and Citus, across nodes) says it cancelled a transaction to break a deadlock
/// (SQLSTATE 40P01, which diesel does not name).
const CONFLICT_MESSAGES: &[&str] = &["deadlock detected", "involved in a distributed deadlock"];

/// A store transaction's failure: a query failure as [`from_diesel`] sorts it; a lost
/// idempotency key or a broken invariant is `Unknown` (500).
pub(crate) fn from_tx(e: TxError) -> PortError {
    match e {
        TxError::Db(e) => from_diesel(e),
        other @ (TxError::KeyNotOwn | TxError::Invariant(_)) => {
            PortError::Unknown(anyhow::Error::new(other))
        }
    }
}

/// A pool checkout failure: the database is unreachable or saturated (503).
pub(crate) fn from_pool(e: PoolError) -> PortError {
    PortError::Unavailable(anyhow::anyhow!("database connection unavailable: {e}"))
}

/// What the server says when it cannot serve a query right now: it is shutting down or starting
/// up (SQLSTATE class 57, operator intervention), it ended the session, or the statement ran out
/// of time; on Citus, the coordinator cannot reach the worker holding the query's shards. diesel
/// reports these with the message only, so the message decides.
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
    // Citus, a worker down or unreachable (SQLSTATE 08006 and XX000, told apart by message
    // only): refused or failed connection, no connection within `citus.node_connection_timeout`,
    // a cached connection found dead, and the connection lost while committing (the outcome is
    // unknown: an idempotent retry finds out).
    "connection to the remote node",
    "could not establish any connections to the node",
    "could not establish connection after",
    "could not connect to any active placements",
    "connection not open",
    "ssl syscall error",
    "could not commit transaction for shard",
];

/// A query failure. Lost connections, a server going away or coming back, timeouts, and a
/// transaction rolled back to resolve a deadlock or a serialization conflict are `Unavailable`
/// (503, worth retrying); anything else `Unknown`.
pub(crate) fn from_diesel(e: DieselError) -> PortError {
    match &e {
        DieselError::DatabaseError(DatabaseErrorKind::ClosedConnection, _)
        | DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _)
        | DieselError::BrokenTransactionManager => PortError::Unavailable(anyhow::Error::new(e)),
        DieselError::DatabaseError(_, info) if is_unavailable(info.message()) => {
            PortError::Unavailable(anyhow::Error::new(e))
        }
        _ => PortError::Unknown(anyhow::Error::new(e)),
    }
}

/// A transaction cancelled to break a deadlock ([`CONFLICT_MESSAGES`]) is unavailable too: it
/// was rolled back as a whole, and running it again may well succeed.
fn is_unavailable(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    UNAVAILABLE_MESSAGES
        .iter()
        .chain(CONFLICT_MESSAGES)
        .any(|m| message.contains(m))
}

/// The constraint (or unique index) a unique violation hit, if that is what `e` is.
///
/// Citus relays a worker's violation without the constraint field, and its message names the
/// shard's constraint, the table's followed by `_<shard id>`: the name is then taken from the
/// message (`… violates unique constraint "<name>"`, PostgreSQL's English wording) and the
/// suffix removed, so callers compare the names the migrations give (none of which ends in
/// `_<digits>`). A violation a worker reports from a `COPY` into a shard (how Citus runs a
/// multi-row `INSERT … SELECT`) reaches the client with the worker's message but no SQLSTATE
/// of its own (an internal error, diesel's `Unknown`): it is recognised by its message.
pub(crate) fn unique_violation(e: &DieselError) -> Option<&str> {
    match e {
        DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, info) => info
            .constraint_name()
            .or_else(|| constraint_in_message(info.message()))
            .map(without_shard_suffix),
        DieselError::DatabaseError(DatabaseErrorKind::Unknown, info)
            if info.message().starts_with(UNIQUE_VIOLATION) =>
        {
            constraint_in_message(info.message()).map(without_shard_suffix)
        }
        _ => None,
    }
}

/// How PostgreSQL's message of a unique violation begins.
const UNIQUE_VIOLATION: &str = "duplicate key value violates unique constraint \"";

/// The quoted constraint name of a unique violation's message.
fn constraint_in_message(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("violates unique constraint \"")?;
    rest.split_once('"').map(|(name, _)| name)
}

/// `name` without a trailing `_<digits>` (a Citus shard's suffix), or as it is.
fn without_shard_suffix(name: &str) -> &str {
    match name.rsplit_once('_') {
        Some((base, shard))
            if !base.is_empty()
                && !shard.is_empty()
                && shard.bytes().all(|b| b.is_ascii_digit()) =>
        {
            base
        }
        _ => name,
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

    /// How [`from_diesel`] sorts a server error (of no more specific kind) with `message`.
    fn sorted(message: &str) -> PortError {
        from_diesel(DieselError::DatabaseError(
            DatabaseErrorKind::Unknown,
            Box::new(message.to_owned()),
        ))
    }

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

    /// What Citus 13 answered, word for word, with one worker of a local cluster stopped
    /// (`pg_ctl stop -m immediate`): the first statement routed to it, and a commit that was
    /// under way on it.
    #[test]
    fn a_citus_worker_out_of_reach_is_unavailable() {
        for message in [
            "connection to the remote node postgres@127.0.0.1:25452 failed with the following \
             error: Connection refused\n\tIs the server running on that host and accepting \
             TCP/IP connections?",
            "could not commit transaction for shard 102011 on at least one active node",
            "could not establish any connections to the node 10.0.0.7:5432 after 3000 ms",
            "connection to the remote node postgres@127.0.0.1:25452 failed with the following \
             error: server closed the connection unexpectedly",
            "SSL SYSCALL error: EOF detected",
        ] {
            assert!(is_unavailable(message), "{message}");
            assert!(
                matches!(sorted(message), PortError::Unavailable(_)),
                "{message}"
            );
        }
        // Citus refusing a query it cannot plan is the query's fault, not the cluster's.
        for message in [
            "complex joins are only supported when all distributed tables are joined on their \
             distribution columns with equal operator",
            "cannot execute a distributed query from a query on a shard",
        ] {
            assert!(
                matches!(sorted(message), PortError::Unknown(_)),
                "{message}"
            );
        }
    }

    /// A deadlock victim, on one server or across Citus nodes (the message Citus 13 gave when a
    /// single payout and a bulk request of one subaccount met), and a serialization failure:
    /// rolled back whole, so retrying is safe and may succeed.
    #[test]
    fn a_transaction_cancelled_to_break_a_deadlock_is_unavailable() {
        for message in [
            "deadlock detected",
            "canceling the transaction since it was involved in a distributed deadlock",
        ] {
            assert!(
                matches!(sorted(message), PortError::Unavailable(_)),
                "{message}"
            );
        }
        let e = DieselError::DatabaseError(
            DatabaseErrorKind::SerializationFailure,
            Box::new("could not serialize access due to concurrent update".to_owned()),
        );
        assert!(matches!(from_diesel(e), PortError::Unavailable(_)));
    }

    /// The conflicts a single payout's transaction is run again for: a deadlock victim (one
    /// server or Citus) and a serialization failure; not a lost connection, a unique violation
    /// or a broken invariant.
    #[test]
    fn only_a_transaction_that_lost_a_conflict_is_run_again() {
        let db = |kind, message: &str| {
            TxError::Db(DieselError::DatabaseError(
                kind,
                Box::new(message.to_owned()),
            ))
        };
        for lost in [
            db(DatabaseErrorKind::Unknown, "deadlock detected"),
            db(
                DatabaseErrorKind::Unknown,
                "canceling the transaction since it was involved in a distributed deadlock",
            ),
            db(
                DatabaseErrorKind::SerializationFailure,
                "could not serialize access due to concurrent update",
            ),
        ] {
            assert!(lost.lost_a_conflict(), "{lost}");
        }
        for other in [
            db(DatabaseErrorKind::ClosedConnection, "connection closed"),
            db(
                DatabaseErrorKind::UniqueViolation,
                "duplicate key value violates unique constraint",
            ),
            TxError::KeyNotOwn,
            TxError::invariant(anyhow::anyhow!("1 of 2 payouts inserted")),
        ] {
            assert!(!other.lost_a_conflict(), "{other}");
        }
    }

    #[test]
    fn a_citus_shards_constraint_is_named_as_the_tables() {
        assert_eq!(
            without_shard_suffix("receivers_email_unique_102027"),
            "receivers_email_unique"
        );
        assert_eq!(
            without_shard_suffix("receivers_email_unique"),
            "receivers_email_unique"
        );
        assert_eq!(without_shard_suffix("payouts_"), "payouts_");
        assert_eq!(without_shard_suffix("_12"), "_12");
        assert_eq!(without_shard_suffix("v2"), "v2");
        assert_eq!(
            constraint_in_message(
                "duplicate key value violates unique constraint \"receivers_email_unique_102027\""
            ),
            Some("receivers_email_unique_102027")
        );
        assert_eq!(constraint_in_message("deadlock detected"), None);
    }

    /// A unique violation is recognised with its constraint's name whether the error carries
    /// its SQLSTATE, or comes from a Citus worker's `COPY` into a shard, which has none; no
    /// other unknown error is one.
    #[test]
    fn a_unique_violation_relayed_without_its_sqlstate_is_recognised() {
        let db =
            |kind, message: &str| DieselError::DatabaseError(kind, Box::new(message.to_owned()));
        let message =
            "duplicate key value violates unique constraint \"payouts_reference_unique_102079\"";
        for kind in [
            DatabaseErrorKind::UniqueViolation,
            DatabaseErrorKind::Unknown,
        ] {
            assert_eq!(
                unique_violation(&db(kind, message)),
                Some("payouts_reference_unique")
            );
        }
        assert_eq!(
            unique_violation(&db(DatabaseErrorKind::Unknown, "deadlock detected")),
            None
        );
        assert_eq!(
            unique_violation(&db(
                DatabaseErrorKind::Unknown,
                "the row \"x\" violates unique constraint \"y\" somehow"
            )),
            None
        );
        assert_eq!(
            unique_violation(&db(DatabaseErrorKind::ForeignKeyViolation, message)),
            None
        );
    }
}
