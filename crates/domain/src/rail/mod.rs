//! Production payout rails: bank files and the transports that carry them (docs/RAILS.md).

pub mod answers;
pub mod bank_files;
pub mod calendar;
pub mod file;
pub mod file_rail;
pub mod inbound;
pub mod inbound_ports;
pub mod instruction;
pub mod limits;
pub mod ports;
pub mod report;
pub mod schedule;
pub mod transport;
