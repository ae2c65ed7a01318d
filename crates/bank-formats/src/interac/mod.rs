//! The Interac e-Transfer partner protocol: the JSON documents payoutd and a partner bank
//! exchange over the partner's HTTPS bulk API, and the HMAC-SHA256 signature on every message.
//!
//! Interac e-Transfer has no public file standard; each partner bank publishes its own API.
//! This protocol is payoutd's own, shaped after the Interac e-Transfer payment parameters that
//! banks publish (J.P. Morgan's "Interac e-Transfer payment parameters": CAD only, an amount
//! above zero of at most 25,000.00, an end-to-end id of 1 to 35 characters, a creditor name of
//! 1 to 30 characters; VoPay's "Interac bulk payout" reference: an expiry of 1 to 30 days and a
//! message to the recipient). The message limit is Interac's 400 characters.
//!
//! Documents (every one a JSON object with `"type"` and `"version": 1`):
//!
//! - [`BatchRequest`] (`batch_request`): what payoutd posts, one per closed batch;
//! - [`BatchReceipt`] (`batch_receipt`): the partner's answer to a posted batch;
//! - [`StatusReport`] (`status_report`): the partner's word on a batch and its payments,
//!   polled and pushed as callbacks;
//! - [`ReportList`] (`report_list`): the ids of the reports after a cursor;
//! - [`ErrorAnswer`] (`error`): the partner's refusal of a request.
//!
//! Parsing is strict: an unknown type, version or field, a missing field, an amount that is not
//! a positive integer of cents, a duplicate payment id, a malformed identifier or e-mail, or a
//! control character in a text is refused with a typed [`InteracError`] that names the field,
//! never its value. Writing is canonical: fields in a fixed order, no insignificant white space,
//! timestamps in whole seconds UTC (`2026-11-25T21:07:00Z`), so the same document is always the
//! same bytes (and the same signature and SHA-256).
//!
//! Signatures: [`sign`] and [`verify_signature`] (see [`signature`]); a pushed report is
//! checked whole by [`verify_callback`], or its signature header first by
//! [`check_callback_head`] and its body afterwards by [`CallbackHead::verify_body`].

mod callback;
mod documents;
pub mod signature;

pub use callback::{CallbackError, CallbackHead, check_callback_head, verify_callback};
pub use documents::{
    BatchReceipt, BatchRequest, BatchVerdict, Currency, ErrorAnswer, FailureCode, InteracError,
    MAX_AMOUNT, MAX_EXPIRY_DAYS, MAX_PAYMENTS, MEMO_MAX, NAME_MAX, Payment, PaymentStatus,
    PaymentUpdate, ReportList, StatusReport, VERSION, clean_memo, clean_name, is_email,
    is_identifier, looks_like_status_report,
};
pub use signature::{
    DEFAULT_TOLERANCE_SECONDS, SIGNATURE_HEADER, SignatureError, SignatureHeader, sign,
    verify_signature,
};
