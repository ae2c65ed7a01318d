//! Bank file formats payoutd writes and reads, each from its published layout: pure functions
//! from typed file contents to bytes and back, with no I/O and no knowledge of payoutd's domain
//! (the rails adapter maps payouts and account fields onto these types).

pub mod aba;
pub mod cpa005;
pub mod ib4b;
pub mod interac;
pub mod iso20022;
pub mod nacha;
mod text;
