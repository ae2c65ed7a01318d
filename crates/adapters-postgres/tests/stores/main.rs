//! Integration tests of the PostgreSQL store adapters against a real server (`DATABASE_URL`).
//! Each test gets its own freshly migrated database (`TestDb`), dropped when the test ends.
//! Every assertion checks a line of a port contract in `domain::ports` (or the adapter's own
//! documented behaviour for `check_ready`, `purge_nonces` and the pool).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod accounts;
mod admission;
mod batch_sets;
mod bulk_payouts;
mod console;
mod credentials;
mod cutoff;
mod delivery;
mod idempotency;
mod inbound;
mod kyc_decisions;
mod notifications;
mod operator;
mod overview;
mod payout_groups;
mod payout_story;
mod payouts;
mod rail_files;
mod receivers;
mod rotation;
mod sets_at_once;
mod subaccount_directory;
mod support;
mod test_databases;
