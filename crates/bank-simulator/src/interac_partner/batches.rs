//! Batches and their reports: accepting an upload, each payment's fate, the reports kept and
//! their list.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use bank_formats::interac::{
    BatchReceipt, BatchRequest, BatchVerdict, FailureCode, PaymentStatus, PaymentUpdate,
    ReportList, StatusReport,
};
use chrono::SubsecRound;
use sha2::{Digest, Sha256};

use super::callbacks::deliver;
use super::wire::{Answer, Request, error};
use super::{Book, Fate, PAGE_SIZE, PartnerOptions, Shared, bump};

pub(super) fn post_batch(request: &Request, shared: &Arc<Shared>) -> Answer {
    let Some(key) = request.header("Idempotency-Key").map(str::to_owned) else {
        bump(&shared.counters.invalid);
        return error(
            400,
            "MISSING_IDEMPOTENCY_KEY",
            "the Idempotency-Key header is required",
        );
    };
    let mut book = shared.book();
    if let Some((body, receipt)) = book.by_key.get(&key) {
        return if *body == request.body {
            bump(&shared.counters.repeats);
            Answer {
                status: 200,
                body: receipt.clone(),
            }
        } else {
            bump(&shared.counters.conflicts);
            error(
                409,
                "IDEMPOTENCY_CONFLICT",
                "this key was used with another body",
            )
        };
    }
    let batch = match BatchRequest::parse(&request.body) {
        Ok(batch) => batch,
        Err(e) => {
            bump(&shared.counters.invalid);
            let message: String = e.to_string().chars().take(200).collect();
            return error(400, "INVALID_BATCH", &message);
        }
    };
    if book.batches.contains_key(&batch.batch_id) {
        bump(&shared.counters.conflicts);
        return error(
            409,
            "DUPLICATE_BATCH",
            "this batch id came with another key",
        );
    }
    let receipt = BatchReceipt::of(&batch, (shared.options.clock)().trunc_subsecs(0)).to_bytes();
    book.by_key
        .insert(key.clone(), (request.body.clone(), receipt.clone()));
    book.batches.insert(batch.batch_id.clone(), key);
    bump(&shared.counters.batches);
    // The first report is there before the upload is answered, so a poll right after the upload
    // finds it.
    let sent = report_for(
        &batch,
        &mut book,
        shared,
        Some(BatchVerdict::Accepted),
        |_| (PaymentStatus::Sent, None),
    );
    drop(book);
    shared.spawn(move |shared| {
        if let Some(sent) = sent {
            deliver(shared, &sent);
        }
        let due = Instant::now() + shared.options.final_delay;
        while Instant::now() < due && !shared.released.load(Ordering::SeqCst) {
            if shared.stopping.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(
                Duration::from_millis(10).min(due.saturating_duration_since(Instant::now())),
            );
        }
        let mut book = shared.book();
        let given = std::mem::take(&mut book.fates);
        let finals = report_for(&batch, &mut book, shared, None, |payment| {
            status_of(given.get(&payment.payment_id).copied().unwrap_or_else(|| {
                fate(
                    &shared.options,
                    &payment.payment_id,
                    &payment.recipient_email,
                )
            }))
        });
        book.fates = given;
        drop(book);
        if let Some(finals) = finals {
            deliver(shared, &finals);
        }
    });
    Answer {
        status: 201,
        body: receipt,
    }
}

/// Writes and keeps a report on `batch` with the batch verdict `verdict` and each payment's
/// status from `status_of`; returns its bytes.
pub(super) fn report_for(
    batch: &BatchRequest,
    book: &mut Book,
    shared: &Shared,
    verdict: Option<BatchVerdict>,
    status_of: impl Fn(&bank_formats::interac::Payment) -> (PaymentStatus, Option<FailureOrCode>),
) -> Option<Vec<u8>> {
    let now = (shared.options.clock)().trunc_subsecs(0);
    let report_id = format!("rpt_{:08}", book.reports.len() + 1);
    let payments = batch
        .payments
        .iter()
        .map(|payment| {
            let (status, code) = status_of(payment);
            book.statuses.insert(payment.payment_id.clone(), status);
            PaymentUpdate {
                payment_id: payment.payment_id.clone(),
                status,
                code: code.map(|c| c.code().to_owned()),
                reason: code.map(|c| c.reason().to_owned()),
                updated_at: now,
            }
        })
        .collect();
    let report = StatusReport {
        report_id: report_id.clone(),
        batch_id: batch.batch_id.clone(),
        created_at: now,
        batch_status: verdict,
        payments,
    };
    let bytes = report.to_bytes().ok()?;
    book.reports.push((report_id, bytes.clone()));
    bump(&shared.counters.reports);
    Some(bytes)
}

/// The code a final status carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FailureOrCode {
    Failure(FailureCode),
    Declined,
    Expired,
}

impl FailureOrCode {
    pub(super) fn code(self) -> &'static str {
        match self {
            Self::Failure(code) => code.code(),
            Self::Declined => "DECLINED",
            Self::Expired => "EXPIRED",
        }
    }

    pub(super) fn reason(self) -> &'static str {
        match self {
            Self::Failure(code) => code.reason(),
            Self::Declined => "the recipient declined the transfer",
            Self::Expired => "the recipient did not deposit the transfer before it expired",
        }
    }
}

/// The status a fate is reported with, and its code.
pub(super) fn status_of(fate: Fate) -> (PaymentStatus, Option<FailureOrCode>) {
    match fate {
        Fate::Deposited => (PaymentStatus::Deposited, None),
        Fate::Declined => (PaymentStatus::Declined, Some(FailureOrCode::Declined)),
        Fate::Expired => (PaymentStatus::Expired, Some(FailureOrCode::Expired)),
        Fate::Failed(code) => (PaymentStatus::Failed, Some(FailureOrCode::Failure(code))),
    }
}

/// A payment's drawn fate: `failed` for an `invalid...` recipient, else by the hash of its id
/// over the shares.
pub(super) fn fate(options: &PartnerOptions, payment_id: &str, recipient_email: &str) -> Fate {
    let local = recipient_email
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if local.starts_with("invalid") {
        return Fate::Failed(FailureCode::InvalidRecipient);
    }
    let digest = Sha256::digest(payment_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let deposited = u64::from(options.deposited_share);
    let declined = u64::from(options.declined_share);
    let total = deposited + declined + u64::from(options.expired_share);
    let point = u64::from_be_bytes(first) % total.max(1);
    if point < deposited {
        Fate::Deposited
    } else if point < deposited + declined {
        Fate::Declined
    } else {
        Fate::Expired
    }
}

pub(super) fn list_reports(query: &str, shared: &Shared) -> Answer {
    let after = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "after")
        .map(|(_, value)| value.to_owned());
    let book = shared.book();
    let start = match after {
        None => 0,
        Some(after) => match book.reports.iter().position(|(id, _)| *id == after) {
            Some(at) => at + 1,
            None => return error(400, "UNKNOWN_CURSOR", "no report of that id"),
        },
    };
    let report_ids: Vec<String> = book
        .reports
        .iter()
        .skip(start)
        .take(PAGE_SIZE)
        .map(|(id, _)| id.clone())
        .collect();
    let has_more = start + report_ids.len() < book.reports.len();
    Answer {
        status: 200,
        body: ReportList {
            report_ids,
            has_more,
        }
        .to_bytes(),
    }
}
