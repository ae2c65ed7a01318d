//! The payout write path: everything that writes a new payout or moves one, and the reads its
//! planning takes.
//!
//! A new payout is written in one of a few ways, and [`strategy`] is the one place that
//! chooses among them, from what is written ([`Write`]), the database (plain PostgreSQL or
//! Citus) and what the store remembers of the open batches ([`open_batches`]):
//!
//! | write                         | plain PostgreSQL                    | Citus            |
//! |-------------------------------|-------------------------------------|------------------|
//! | one payout (alone, or a group of one) | [`Strategy::AtOnce`] if its open batch is known, else [`Strategy::ThreeRoundTrips`] | [`Strategy::Citus`]; [`Strategy::NotAdmitted`] for a request its write was to admit |
//! | a group of single requests    | as one payout                       | [`Strategy::Decided`] |
//! | a bulk request                | [`Strategy::ThreeRoundTrips`]; [`Strategy::Decided`] when atomic with a rejected item | [`Strategy::Decided`] |
//!
//! When a strategy fails as a whole, the write falls back, always toward the more careful:
//! at once → three round trips (`whole`); written whole → decided (`groups`, `bulk`); a set that
//! fails as a whole → its requests one by one (`groups`) or its items one by one (`bulk`).
//!
//! The modules:
//!
//! - `store`: the [`PayoutStore`](domain::payout::ports::PayoutStore) port (its reads and
//!   transitions, and the entry points of new payouts);
//! - `planning`, `planning_reads`: what a new payout is planned with;
//! - `alone`: one payout in a transaction of its own; `groups`: group commit; `bulk`: a bulk
//!   request;
//! - `whole` (three round trips), `at_once` (one), `decide` and `set_write` (a decided set,
//!   and the writes every set shares), `set_transaction` (how a set's transaction begins and
//!   ends), `open_batches` (the open-batch cache);
//! - `params`: the parameters of the set statements, in the order their `.sql` files name them;
//! - `transitions`: the transaction core every store that moves payouts shares;
//! - `sql/`: every statement, each file's header naming its parameters.

mod alone;
mod at_once;
mod bulk;
mod decide;
pub(crate) mod groups;
mod open_batches;
mod params;
#[cfg(test)]
mod plan_tests;
mod planning;
mod planning_reads;
mod set_transaction;
mod set_write;
mod statements;
mod store;
pub(crate) mod transitions;
mod whole;

use chrono::{DateTime, Utc};
use domain::events::OutboxEvent;
use domain::idempotency::WriteKey;
use domain::ledger::LedgerEntry;
use domain::payout::Payout;
use uuid::Uuid;

pub(crate) use open_batches::OpenBatches;

use super::{PgStore, delivery, idempotency, outbox};
use open_batches::Expected;
use set_transaction::SetPlans;

/// A planned new payout of a set, with the idempotency key of its own request, if any.
#[derive(Clone, Copy)]
pub(crate) struct Planned<'a> {
    pub(crate) payout: &'a Payout,
    pub(crate) entries: &'a [LedgerEntry],
    pub(crate) events: &'a [OutboxEvent],
    pub(crate) key: Option<&'a WriteKey<Payout>>,
}

/// The open batch a written payout joined (its id and run time), if it starts `pending`.
pub(crate) type Joined = Option<(Uuid, DateTime<Utc>)>;

/// What a write of new payouts writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Write {
    /// One payout in a transaction of its own; `admitting` when its request is to be admitted
    /// by the write (see `domain::idempotency::KeyMode::AdmittedByWrite`).
    Alone {
        /// Whether the write is to admit its request.
        admitting: bool,
    },
    /// A group of single requests of one subaccount (group commit), more than one.
    Group,
    /// A bulk request's accepted items; `refuses_some` when it is atomic and has a rejected
    /// item (so it can never be written whole).
    Bulk {
        /// Whether an item is refused already and the request is atomic.
        refuses_some: bool,
    },
}

/// How a write of new payouts is carried out (see the module documentation).
#[derive(Debug)]
pub(crate) enum Strategy {
    /// One round trip: `BEGIN`, `sql/write_set_at_once.sql` and `COMMIT` sent together, the
    /// set's open batches expected to be these ([`at_once`]).
    AtOnce(Expected),
    /// Written whole in three round trips: `BEGIN` with `sql/parties_and_open_batch.sql`, then
    /// `sql/write_set.sql`, then `COMMIT` ([`whole`]).
    ThreeRoundTrips,
    /// Every payout decided under locks, then the accepted ones written ([`decide`],
    /// [`set_write`]), with these plans.
    Decided(SetPlans),
    /// One payout on Citus: its parties checked, its writes and its hold one statement after
    /// another in one transaction ([`alone`]).
    Citus,
    /// Not written: the request was to be admitted by its write, which this database cannot
    /// do (Citus writes statement by statement). The request is admitted first and run again.
    NotAdmitted,
}

/// The strategy of a write: `write` of `set` (payouts of `subaccount`), on Citus when `citus`,
/// with the open batches `open_batches` remembers.
pub(crate) fn strategy(
    write: Write,
    citus: bool,
    subaccount: Uuid,
    set: &[Planned<'_>],
    open_batches: &OpenBatches,
) -> Strategy {
    match (citus, write) {
        (true, Write::Alone { admitting: true }) => Strategy::NotAdmitted,
        (true, Write::Alone { admitting: false }) => Strategy::Citus,
        (true, Write::Group | Write::Bulk { .. }) => Strategy::Decided(SetPlans::AsChosen),
        (false, Write::Bulk { refuses_some: true }) => Strategy::Decided(SetPlans::Generic),
        // A bulk request marks its own key after its payouts, in the same transaction: a
        // statement of its own, so never at once.
        (
            false,
            Write::Bulk {
                refuses_some: false,
            },
        ) => Strategy::ThreeRoundTrips,
        (false, Write::Alone { .. } | Write::Group) => open_batches
            .expected(subaccount, set)
            .map_or(Strategy::ThreeRoundTrips, Strategy::AtOnce),
    }
}

#[cfg(test)]
mod strategy_tests {
    use super::{OpenBatches, SetPlans, Strategy, Write, strategy};

    #[test]
    fn citus_decides_every_set_and_writes_one_payout_statement_by_statement() {
        let none = OpenBatches::default();
        let sub = uuid::Uuid::nil();
        let on_citus = |write| strategy(write, true, sub, &[], &none);
        assert!(matches!(
            on_citus(Write::Alone { admitting: false }),
            Strategy::Citus
        ));
        assert!(matches!(
            on_citus(Write::Alone { admitting: true }),
            Strategy::NotAdmitted
        ));
        for write in [
            Write::Group,
            Write::Bulk {
                refuses_some: false,
            },
            Write::Bulk { refuses_some: true },
        ] {
            assert!(matches!(
                on_citus(write),
                Strategy::Decided(SetPlans::AsChosen)
            ));
        }
    }

    #[test]
    fn plain_postgres_writes_whole_unless_an_atomic_bulk_request_refuses_an_item() {
        let none = OpenBatches::default();
        let sub = uuid::Uuid::nil();
        let plain = |write| strategy(write, false, sub, &[], &none);
        // Nothing remembered (and an empty set is never written at once).
        for write in [
            Write::Alone { admitting: true },
            Write::Alone { admitting: false },
            Write::Group,
            Write::Bulk {
                refuses_some: false,
            },
        ] {
            assert!(
                matches!(plain(write), Strategy::ThreeRoundTrips),
                "{write:?}"
            );
        }
        assert!(matches!(
            plain(Write::Bulk { refuses_some: true }),
            Strategy::Decided(SetPlans::Generic)
        ));
    }
}
