//! The bank's side of the formats payoutd writes, for a local bank simulator (`cargo xtask
//! bank`, `cargo xtask rails-demo`) and for tests: given a file payoutd sent (parsed with
//! `bank-formats`) and the bank's decisions, the answer the bank sends back, laid out with
//! `bank-formats`' writers.
//!
//! | format | answer | module |
//! |---|---|---|
//! | NACHA | return and notification-of-change files | [`nacha`] |
//! | ISO 20022 pain.001 | pain.002.001.09 status reports | [`iso20022`] |
//! | ABA direct entry | return files (NAB's layout) | [`aba`] |
//! | Payments Canada Standard 005 | files of returned items | [`cpa005`] |
//! | BNZ IB4B | dishonour files (payoutd's layout) | [`ib4b`] |
//!
//! `cad/digital` has no files: [`interac_partner`] is a local Interac e-Transfer partner bank
//! (the partner side of `bank_formats::interac`'s protocol, on loopback).
//!
//! Not a product crate: payoutd never depends on it; xtask, the benchmarks and the tests do.

pub mod aba;
pub mod cpa005;
pub mod ib4b;
pub mod interac_partner;
pub mod iso20022;
pub mod nacha;
