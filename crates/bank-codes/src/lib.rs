//! The check rules of bank identifiers, one copy of each, for every crate that checks them:
//! `domain` (the API's account checks) and `bank-formats` (what a file may carry), and through
//! them the rails' settings.
//!
//! - [`digits`]: strings of ASCII digits of a length within a range.
//! - [`us_routing`]: the check digit of a US ABA routing transit number.
//! - [`iban`]: an IBAN's country format, length and check digits, and its electronic form.
//! - [`bic`]: a business identifier code's shape and country.
//!
//! Each answers for the value only (no API error codes, no file positions): the caller says what
//! a failure means where it is.

pub mod bic;
pub mod digits;
pub mod iban;
pub mod us_routing;
