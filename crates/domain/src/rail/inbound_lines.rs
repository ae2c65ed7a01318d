//! The lines of a bank report before they are recorded, and the pure steps of deciding them:
//! where a payment stands at the rail, what an item answers, and the search for a line's sent
//! payment among its reference's candidates.

use std::collections::HashMap;

use super::super::answers::{RailAnswer, RailState};
use super::super::file::RailFileState;
use super::super::inbound_ports::{DecidingReport, ReportKind, Resolution, SentItem};
use super::super::report::{ItemOutcome, ItemReport, ReturnReason};
use crate::batch::ports::RailResult;
use crate::ids::{BankReportId, PayoutId, RailFileId, SubaccountId};
use crate::payout::{Payout, PayoutStatus};

/// A report line before it is recorded.
pub(super) struct Line {
    pub(super) kind: ReportKind,
    pub(super) reference: String,
    pub(super) code: Option<String>,
    pub(super) reason: Option<String>,
    pub(super) account_invalid: bool,
    pub(super) amount: Option<i64>,
    pub(super) matched: Option<(SubaccountId, Option<PayoutId>, Option<RailFileId>)>,
    pub(super) resolution: Resolution,
    pub(super) contradicts: Option<BankReportId>,
}

impl Line {
    pub(super) fn with_reason(
        kind: ReportKind,
        reference: String,
        reason: &ReturnReason,
        amount: Option<i64>,
    ) -> Self {
        Self {
            code: Some(reason.code.clone()),
            reason: Some(reason.reason.clone()),
            account_invalid: reason.account_is_invalid,
            amount,
            ..Self::new(kind, reference)
        }
    }

    pub(super) fn new(kind: ReportKind, reference: String) -> Self {
        Self {
            kind,
            reference,
            code: None,
            reason: None,
            account_invalid: false,
            amount: None,
            matched: None,
            resolution: Resolution::Unmatched,
            contradicts: None,
        }
    }

    /// Records the line as an anomaly contradicting `earlier`.
    pub(super) fn anomaly(&mut self, earlier: Option<BankReportId>) {
        self.resolution = Resolution::Anomaly;
        self.contradicts = earlier;
    }
}

/// What a line of a report answers, and the result applying it gives.
pub(super) type Answer = (RailAnswer, RailResult);

/// A line's resolution and, for an anomaly, the line it contradicts.
pub(super) type Resolved = (Resolution, Option<BankReportId>);

/// An answer about one payment, to decide on the payout as read.
pub(super) struct Payment {
    pub(super) payout: Payout,
    pub(super) file: RailFileId,
    pub(super) file_state: RailFileState,
    pub(super) answer: Answer,
}

/// What the rail's table makes of a [`Payment`] on the payout as read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    /// To apply.
    Apply,
    /// Nothing to apply: the line's resolution.
    Done(Resolved),
}

/// How many times an answer is decided for one payout that keeps moving meanwhile.
pub(super) const ATTEMPTS: usize = 3;

/// Where `payout`, a payment of a file in `file_state`, stands at the rail: `None` for a payout
/// that never reached it (still waiting, or cancelled). `deciding` is the applied line that
/// decided the payout, asked only for a failed one: a failed payout was returned when a
/// return decided it, and rejected otherwise (by a rejection, its file's rejection, or the
/// rail at submission).
pub(super) fn rail_state(
    payout: &Payout,
    file_state: RailFileState,
    deciding: Option<DecidingReport>,
) -> Option<RailState> {
    match payout.status {
        PayoutStatus::InProgress => Some(match file_state {
            RailFileState::Acknowledged => RailState::Acknowledged,
            RailFileState::Generated | RailFileState::Uploaded | RailFileState::Rejected => {
                RailState::Sent
            }
        }),
        PayoutStatus::Successful => Some(RailState::Settled),
        PayoutStatus::Failed => Some(match deciding {
            Some(report) if report.kind == ReportKind::Returned => RailState::Returned,
            _ => RailState::Rejected,
        }),
        PayoutStatus::Awaiting
        | PayoutStatus::Pending
        | PayoutStatus::Unassessed
        | PayoutStatus::Cancelled
        | PayoutStatus::SuccessfulPendingKyc => None,
    }
}

/// The line an item of a report becomes, and the answer it gives (none for a notice).
pub(super) fn line_of(item: ItemReport) -> (Line, Option<Answer>) {
    match item.outcome {
        ItemOutcome::Settled => (
            Line::new(ReportKind::Settled, item.reference),
            Some((RailAnswer::Settled, RailResult::Paid)),
        ),
        ItemOutcome::Rejected(reason) => (
            Line::with_reason(ReportKind::Rejected, item.reference, &reason, None),
            Some((
                RailAnswer::Rejected,
                RailResult::Failed {
                    code: Some(reason.code),
                    reason: reason.reason,
                    receiver_is_invalid: reason.account_is_invalid,
                },
            )),
        ),
        ItemOutcome::Returned { reason, amount } => (
            Line::with_reason(
                ReportKind::Returned,
                item.reference,
                &reason,
                amount.map(|a| a.get()),
            ),
            Some((
                RailAnswer::Returned,
                RailResult::Returned {
                    code: reason.code,
                    reason: reason.reason,
                    receiver_is_invalid: reason.account_is_invalid,
                },
            )),
        ),
        ItemOutcome::Notice { code, reason } => (
            Line {
                code: Some(code),
                reason: Some(reason),
                ..Line::new(ReportKind::Notice, item.reference)
            },
            None,
        ),
    }
}

/// The search for one line's sent payment among its reference's candidates, newest file
/// first: the first whose payout has the amount the line states (any, when it states none),
/// else the first whose payout exists.
pub(super) struct Search<'a> {
    pub(super) candidates: &'a [SentItem],
    pub(super) amount: Option<i64>,
    pub(super) next: usize,
    pub(super) first: Option<(SentItem, Payout)>,
    pub(super) found: Option<(SentItem, Payout)>,
}

impl Search<'_> {
    /// Goes through the candidates whose payouts were read (`read`: by key, `None` for one
    /// that does not exist); returns the key of the next one to read, or `None` when the search
    /// is over.
    pub(super) fn advance(
        &mut self,
        read: &HashMap<(SubaccountId, PayoutId), Option<Payout>>,
    ) -> Option<(SubaccountId, PayoutId)> {
        while self.found.is_none() {
            let item = self.candidates.get(self.next)?;
            let key = (item.subaccount_id, item.payout_id);
            match read.get(&key) {
                None => return Some(key),
                Some(None) => {}
                Some(Some(payout)) => {
                    let found = (item.clone(), payout.clone());
                    if self.amount.is_none_or(|a| a == payout.amount.get()) {
                        self.found = Some(found);
                    } else {
                        self.first.get_or_insert(found);
                    }
                }
            }
            self.next += 1;
        }
        None
    }

    pub(super) fn result(self) -> Option<(SentItem, Payout)> {
        self.found.or(self.first)
    }
}
