//! Production payout rails: bank files and the transports that carry them (contract §15).

pub mod calendar;
pub mod file;
pub mod file_rail;
pub mod instruction;
pub mod ports;
pub mod transport;
