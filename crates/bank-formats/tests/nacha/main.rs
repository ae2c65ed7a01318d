//! Tests of `bank_formats::nacha`, one module per concern.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
mod writer;
