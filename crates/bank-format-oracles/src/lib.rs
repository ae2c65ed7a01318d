//! Test oracles: checkers of bank files written from each format's published layout, used by the test suite
//! (the writers' output must pass; broken files must not) and by `cargo xtask rails-demo` (every
//! file payoutd sends and every answer the bank simulator writes).
//!
//! The crate depends on nothing but `chrono` (calendar dates): it reads raw bytes with its own position tables, so it cannot
//! share a mistake with `bank-formats`' writers or parsers. NACHA and pain.001 have independent
//! validators elsewhere (the moov fixtures, the ISO 20022 XSD); these formats have none in our
//! registries.

pub mod aba;
pub mod cpa005;
pub mod ib4b;
