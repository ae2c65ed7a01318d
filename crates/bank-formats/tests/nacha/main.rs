//! Tests of `bank_formats::nacha`, one module per concern.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bad_input;
mod fixtures;
mod roundtrip;
mod support;
mod writer;
