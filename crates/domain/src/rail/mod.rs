//! Production payout rails: bank files and the transports that carry them (contract §15).

pub mod transport;
