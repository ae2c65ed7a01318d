//! The inbound side of the production rails (docs/RAILS.md, Transports; Results and returns):
//! polls each rail's inbound directory, reads every new file with the rail's reader, applies what
//! it says and records it.
//!
//! - A file is recorded once per (method, name, SHA-256) and never read again. On a rail whose
//!   names are documents' identities ([`ReportNames::Unique`]: the Interac `report_id`), other
//!   content under a name already read is an altered document: recorded with its bytes, every
//!   line an anomaly, nothing applied. In a drop directory ([`ReportNames::Reusable`]) it is a
//!   new file.
//! - A file verdict moves the stored file forward only (`uploaded` → `acknowledged` /
//!   `rejected`); a rejected file rejects its payouts, a settled one pays them.
//! - A payment line is matched by its reference among the rail's stored files (the newest file
//!   first, and for a return stating an amount, a payout of that amount).
//! - Whether an answer is applied is the rail's [`AnswerRules`] table over where the payment
//!   stands ([`RailState`]) and what the answer says ([`RailAnswer`]): applied through
//!   [`BatchRunner::settle`] (a settlement pays a payout `in_progress`; a rejection fails it; a
//!   return fails it, or returns a `successful` one with `payout_return`, fee kept), recorded as
//!   repeated, or recorded as an anomaly with the line it contradicts. Only a real return moves
//!   a settled payout's money.
//! - Every line is recorded with its resolution: `applied`, `repeated` (already so: a return is
//!   never applied twice), `unmatched`, `noted` (notifications of change) or `anomaly`.
//!
//! Effects are applied before the file is recorded, and each is a conditional change, so a
//! crash in between only makes the next poll read the file again: its lines then find their
//! changes made and are recorded `repeated`.

use std::sync::Arc;

use super::answers::{AnswerRules, AnswerVerdict, RailAnswer, RailState, ReportNames};
use super::file::{RailFile, RailFileState};
use super::inbound_ports::{
    InboundFile, InboundOutcome, InboundStore, RecordedReport, ReportKind, Resolution, SentItem,
};
use super::ports::RailFileStore;
use super::report::{
    BankFileReader, BankReport, FileMention, FileVerdict, ItemOutcome, ItemReport, ReadOutcome,
};
use super::transport::FileTransport;
use crate::account::PayoutMethod;
use crate::batch::ports::RailResult;
use crate::batch::runner::BatchRunner;
use crate::error::PortError;
use crate::idempotency::WriteKey;
use crate::ids::{BankReportId, InboundFileId, PayoutId, RailFileId, SubaccountId};
use crate::payout::ports::PayoutStore;
use crate::payout::{Payout, PayoutStatus};
use crate::ports::{Clock, IdGenerator};

/// One rail's inbound side: its directory and its reader.
pub struct InboundRail {
    /// The method.
    pub method: PayoutMethod,
    /// The bank's file drop.
    pub transport: Arc<dyn FileTransport>,
    /// The format's reader.
    pub reader: Arc<dyn BankFileReader>,
    /// Which of its answers may follow which, and how it names its documents.
    pub answers: AnswerRules,
}

/// What one poll did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InboundPass {
    /// New files read.
    pub files: usize,
    /// New files that could not be read.
    pub unreadable: usize,
    /// Report lines applied.
    pub applied: usize,
    /// Report lines already applied.
    pub repeated: usize,
    /// Report lines that matched nothing.
    pub unmatched: usize,
    /// Report lines recorded only.
    pub noted: usize,
    /// Report lines that contradict what happened (anomalies).
    pub anomalies: usize,
    /// New documents that alter one read before under the same name (their lines are
    /// anomalies too).
    pub altered: usize,
}

impl InboundPass {
    fn count(&mut self, resolution: Resolution) {
        match resolution {
            Resolution::Applied => self.applied += 1,
            Resolution::Repeated => self.repeated += 1,
            Resolution::Unmatched => self.unmatched += 1,
            Resolution::Noted => self.noted += 1,
            Resolution::Anomaly => self.anomalies += 1,
        }
    }
}

/// Reads the rails' inbound files.
pub struct InboundProcessor {
    rails: Vec<InboundRail>,
    files: Arc<dyn RailFileStore>,
    inbound: Arc<dyn InboundStore>,
    payouts: Arc<dyn PayoutStore>,
    runner: Arc<BatchRunner>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

/// A report line before it is recorded.
struct Line {
    kind: ReportKind,
    reference: String,
    code: Option<String>,
    reason: Option<String>,
    account_invalid: bool,
    amount: Option<i64>,
    matched: Option<(SubaccountId, Option<PayoutId>, Option<RailFileId>)>,
    resolution: Resolution,
    contradicts: Option<BankReportId>,
}

impl Line {
    fn with_reason(
        kind: ReportKind,
        reference: String,
        reason: &super::report::ReturnReason,
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

    fn new(kind: ReportKind, reference: String) -> Self {
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
    fn anomaly(&mut self, earlier: Option<BankReportId>) {
        self.resolution = Resolution::Anomaly;
        self.contradicts = earlier;
    }
}

/// What a line of a report answers, and the result applying it gives.
type Answer = (RailAnswer, RailResult);

/// Whether a report's lines are applied or, for an altered document, only matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Apply,
    Altered,
}

impl InboundProcessor {
    /// Wires the processor.
    pub fn new(
        rails: Vec<InboundRail>,
        files: Arc<dyn RailFileStore>,
        inbound: Arc<dyn InboundStore>,
        payouts: Arc<dyn PayoutStore>,
        runner: Arc<BatchRunner>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            rails,
            files,
            inbound,
            payouts,
            runner,
            clock,
            ids,
        }
    }

    /// One poll of every rail's inbound directory. A rail whose directory cannot be reached is
    /// skipped until the next poll (logged); a store error stops the poll.
    pub async fn poll(&self) -> Result<InboundPass, PortError> {
        let mut pass = InboundPass::default();
        for rail in &self.rails {
            let names = match rail.transport.list_inbound().await {
                Ok(names) => names,
                Err(e) => {
                    tracing::warn!(method = rail.method.route(), error = %e, "inbound directory unavailable");
                    continue;
                }
            };
            for name in names {
                let bytes = match rail.transport.fetch_inbound(&name).await {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        tracing::warn!(method = rail.method.route(), file = %name, error = %e, "inbound file unavailable");
                        continue;
                    }
                };
                self.process(rail, &name, &bytes, &mut pass).await?;
            }
        }
        Ok(pass)
    }

    /// Whether `method` has a rail here (a pushed report for another method is refused).
    pub fn has_rail(&self, method: PayoutMethod) -> bool {
        self.rails.iter().any(|rail| rail.method == method)
    }

    /// Reads, applies and records one document the rail's partner pushed (a status callback,
    /// whose signature the caller verified), exactly as if it had been read from the rail's
    /// inbound directory under `name`: the same document again (pushed twice, or pushed and
    /// also polled) has no second effect. `Ok(None)` when `method` has no rail.
    pub async fn receive(
        &self,
        method: PayoutMethod,
        name: &str,
        bytes: &[u8],
    ) -> Result<Option<InboundPass>, PortError> {
        let Some(rail) = self.rails.iter().find(|rail| rail.method == method) else {
            return Ok(None);
        };
        let mut pass = InboundPass::default();
        self.process(rail, name, bytes, &mut pass).await?;
        Ok(Some(pass))
    }

    /// Reads, applies and records one inbound file unless it was recorded already.
    pub async fn process(
        &self,
        rail: &InboundRail,
        name: &str,
        bytes: &[u8],
        pass: &mut InboundPass,
    ) -> Result<(), PortError> {
        let sha256 = super::file::RailFile::digest(bytes);
        if self
            .inbound
            .inbound_known(rail.method, name, sha256)
            .await?
        {
            return Ok(());
        }
        let original = match rail.answers.names {
            ReportNames::Unique => self.inbound.read_under(rail.method, name).await?,
            ReportNames::Reusable => None,
        };
        let (outcome, detail, lines) = match rail.reader.read(name, bytes)? {
            ReadOutcome::NotMine => (InboundOutcome::Foreign, None, Vec::new()),
            ReadOutcome::Unreadable(why) => {
                tracing::warn!(method = rail.method.route(), file = %name, reason = %why, "unreadable inbound file");
                pass.unreadable += 1;
                (InboundOutcome::Unreadable, Some(why), Vec::new())
            }
            ReadOutcome::Report(report) => match original {
                None => (
                    InboundOutcome::Read,
                    None,
                    self.apply(rail, report, Mode::Apply).await?,
                ),
                Some(first) => (
                    InboundOutcome::Altered,
                    Some(format!(
                        "{name} was first read as inbound file {first} with other content: \
                         this version is not applied"
                    )),
                    self.apply(rail, report, Mode::Altered).await?,
                ),
            },
        };
        let now = self.clock.now();
        let file = InboundFile {
            id: InboundFileId::from_uuid(self.ids.new_id()),
            method: rail.method,
            name: name.to_owned(),
            sha256,
            outcome,
            detail,
            original: original.filter(|_| outcome == InboundOutcome::Altered),
            // A foreign file is another rail's: not ours to keep.
            bytes: (outcome != InboundOutcome::Foreign).then(|| bytes.to_vec()),
            received_at: now,
        };
        let reports: Vec<RecordedReport> = lines
            .into_iter()
            .enumerate()
            .map(|(position, line)| RecordedReport {
                id: BankReportId::from_uuid(self.ids.new_id()),
                position: u32::try_from(position).unwrap_or(u32::MAX),
                kind: line.kind,
                reference: line.reference,
                code: line.code,
                reason: line.reason,
                account_invalid: line.account_invalid,
                amount: line.amount,
                subaccount_id: line.matched.map(|(s, _, _)| s),
                payout_id: line.matched.and_then(|(_, p, _)| p),
                rail_file_id: line.matched.and_then(|(_, _, f)| f),
                resolution: line.resolution,
                contradicts: line.contradicts,
                created_at: now,
            })
            .collect();
        if self.inbound.record_inbound(&file, &reports).await? {
            pass.files += 1;
            if let Some(first) = file.original {
                pass.altered += 1;
                tracing::warn!(
                    method = rail.method.route(),
                    file = %name,
                    inbound_file = %file.id,
                    original = %first,
                    "bank report altered: a document with the name of one already read and other content; not applied"
                );
            }
            for report in &reports {
                pass.count(report.resolution);
                if matches!(
                    report.resolution,
                    Resolution::Unmatched | Resolution::Anomaly
                ) {
                    tracing::warn!(
                        method = rail.method.route(),
                        file = %name,
                        reference = %report.reference,
                        kind = report.kind.as_str(),
                        resolution = report.resolution.as_str(),
                        contradicts = report.contradicts.map(tracing::field::display),
                        "bank report needs an operator"
                    );
                }
            }
        }
        Ok(())
    }

    async fn apply(
        &self,
        rail: &InboundRail,
        report: BankReport,
        mode: Mode,
    ) -> Result<Vec<Line>, PortError> {
        let mut lines = Vec::new();
        if let Some((mention, verdict)) = report.file {
            lines.push(self.apply_verdict(rail, mention, verdict, mode).await?);
        }
        for item in report.items {
            lines.push(self.apply_item(rail, item, mode).await?);
        }
        Ok(lines)
    }

    async fn payout(
        &self,
        subaccount: SubaccountId,
        id: PayoutId,
    ) -> Result<Option<Payout>, PortError> {
        Ok(self
            .payouts
            .find_payout(subaccount, id)
            .await?
            .map(|(p, _)| p))
    }

    /// The applied line that put `payout` (or, without one, file `file`) where it is.
    async fn deciding(
        &self,
        payout: Option<PayoutId>,
        file: RailFileId,
    ) -> Result<Option<BankReportId>, PortError> {
        Ok(self
            .inbound
            .deciding_report(payout, file)
            .await?
            .map(|report| report.id))
    }

    /// Where `payout`, a payment of file `file` (in `file_state`), stands at the rail: `None`
    /// for a payout that never reached it (still waiting, or cancelled).
    async fn state_of(
        &self,
        payout: &Payout,
        file: RailFileId,
        file_state: RailFileState,
    ) -> Result<Option<RailState>, PortError> {
        Ok(match payout.status {
            PayoutStatus::InProgress => Some(match file_state {
                RailFileState::Acknowledged => RailState::Acknowledged,
                RailFileState::Generated | RailFileState::Uploaded | RailFileState::Rejected => {
                    RailState::Sent
                }
            }),
            PayoutStatus::Successful => Some(RailState::Settled),
            // A failed payout was returned when a return decided it, and rejected otherwise (by
            // a rejection, its file's rejection, or the rail at submission).
            PayoutStatus::Failed => Some(
                match self.inbound.deciding_report(Some(payout.id), file).await? {
                    Some(report) if report.kind == ReportKind::Returned => RailState::Returned,
                    _ => RailState::Rejected,
                },
            ),
            PayoutStatus::Awaiting
            | PayoutStatus::Pending
            | PayoutStatus::Unassessed
            | PayoutStatus::Cancelled
            | PayoutStatus::SuccessfulPendingKyc => None,
        })
    }

    /// Decides `answer` for `payout` with the rail's table and applies it when the table says
    /// so, on the payout as it is now: the batch runner can move it meanwhile (to `successful`
    /// on its file's effective date, while a return of it is being read), and the conditional
    /// write then finds nothing to do; the answer is then decided again on the payout as it is.
    /// Returns the line's resolution and, for an anomaly, the line it contradicts.
    async fn answer_payment(
        &self,
        rules: AnswerRules,
        payout: &Payout,
        file: RailFileId,
        file_state: RailFileState,
        (answer, result): &Answer,
    ) -> Result<(Resolution, Option<BankReportId>), PortError> {
        let mut current = payout.clone();
        for _ in 0..3 {
            let Some(state) = self.state_of(&current, file, file_state).await? else {
                return Ok((Resolution::Anomaly, None));
            };
            match rules.verdict(state, *answer) {
                AnswerVerdict::Repeated => return Ok((Resolution::Repeated, None)),
                AnswerVerdict::Anomaly => {
                    let earlier = self.deciding(Some(current.id), file).await?;
                    return Ok((Resolution::Anomaly, earlier));
                }
                AnswerVerdict::Apply => {
                    let (applied, _) = self
                        .runner
                        .settle(&current, result, &WriteKey::none())
                        .await?;
                    if applied {
                        return Ok((Resolution::Applied, None));
                    }
                }
            }
            match self.payout(current.subaccount_id, current.id).await? {
                Some(fresh) if fresh.status != current.status => current = fresh,
                _ => return Ok((Resolution::Repeated, None)),
            }
        }
        Ok((Resolution::Repeated, None))
    }

    async fn apply_verdict(
        &self,
        rail: &InboundRail,
        mention: FileMention,
        verdict: FileVerdict,
        mode: Mode,
    ) -> Result<Line, PortError> {
        let (kind, code, reason) = match &verdict {
            FileVerdict::Accepted => (ReportKind::FileAccepted, None, None),
            FileVerdict::Settled => (ReportKind::FileSettled, None, None),
            FileVerdict::Rejected { code, reason } => {
                (ReportKind::FileRejected, code.clone(), Some(reason.clone()))
            }
        };
        let (batch, part) = match mention {
            FileMention::Batch { batch, part } => (batch, part),
            FileMention::Unknown(reference) => {
                let mut line = Line {
                    code,
                    reason,
                    ..Line::new(kind, reference)
                };
                if mode == Mode::Altered {
                    line.anomaly(None);
                }
                return Ok(line);
            }
        };
        let mut line = Line {
            code,
            reason,
            ..Line::new(kind, RailFile::batch_file_id(batch, part))
        };
        let Some(file) = self.files.find_file(batch, rail.method, part).await? else {
            if mode == Mode::Altered {
                line.anomaly(None);
            }
            return Ok(line);
        };
        line.matched = Some((file.subaccount_id, None, Some(file.id)));
        if mode == Mode::Altered {
            line.anomaly(self.deciding(None, file.id).await?);
            return Ok(line);
        }
        let now = self.clock.now();
        let target = match verdict {
            FileVerdict::Rejected { .. } => RailFileState::Rejected,
            FileVerdict::Accepted | FileVerdict::Settled => RailFileState::Acknowledged,
        };
        // The bank answering a file still recorded `generated` has it: its runner uploaded it
        // and stopped before recording the upload. Record it now.
        let mut state = file.state;
        if state == RailFileState::Generated
            && self
                .files
                .move_file(
                    file.id,
                    RailFileState::Generated,
                    RailFileState::Uploaded,
                    now,
                    None,
                )
                .await?
        {
            state = RailFileState::Uploaded;
        }
        // A file moves forward only: an answer that would move it back (an acceptance of a
        // rejected file, a rejection of an accepted one) contradicts an earlier answer.
        let moved = state == RailFileState::Uploaded
            && self
                .files
                .move_file(
                    file.id,
                    RailFileState::Uploaded,
                    target,
                    now,
                    line.reason.clone(),
                )
                .await?;
        if !moved && state != target {
            line.anomaly(self.deciding(None, file.id).await?);
            return Ok(line);
        }
        line.resolution = if moved {
            Resolution::Applied
        } else {
            Resolution::Repeated
        };
        // The file's payouts follow a rejection or a settlement of the whole file, each as the
        // rail's table decides for where it stands.
        let answer = match verdict {
            FileVerdict::Rejected { code, reason } => Some((
                RailAnswer::Rejected,
                RailResult::Failed {
                    code,
                    receiver_is_invalid: false,
                    reason: format!("the bank rejected file {}: {reason}", file.name),
                },
            )),
            FileVerdict::Settled => Some((RailAnswer::Settled, RailResult::Paid)),
            FileVerdict::Accepted => None,
        };
        if let Some(answer) = answer {
            for item in &file.items {
                let Some(payout) = self.payout(file.subaccount_id, item.payout_id).await? else {
                    continue;
                };
                let (resolution, earlier) = self
                    .answer_payment(rail.answers, &payout, file.id, state, &answer)
                    .await?;
                match resolution {
                    Resolution::Applied if line.resolution != Resolution::Anomaly => {
                        line.resolution = Resolution::Applied;
                    }
                    // One payout the answer contradicts makes the line an anomaly; the other
                    // payouts are still decided for themselves.
                    Resolution::Anomaly if line.resolution != Resolution::Anomaly => {
                        line.anomaly(earlier);
                    }
                    _ => {}
                }
            }
        }
        Ok(line)
    }

    /// The sent payment `reference` names: the newest file's, or for a return stating an
    /// amount, the newest of that amount.
    async fn find_sent(
        &self,
        method: PayoutMethod,
        reference: &str,
        amount: Option<i64>,
    ) -> Result<Option<(SentItem, Payout)>, PortError> {
        let mut candidates = self.inbound.sent_items(method, reference).await?;
        candidates.sort_by_key(|item| std::cmp::Reverse(item.file_created_at));
        let mut first = None;
        for item in candidates {
            let Some(payout) = self.payout(item.subaccount_id, item.payout_id).await? else {
                continue;
            };
            if amount.is_none_or(|a| a == payout.amount.get()) {
                return Ok(Some((item, payout)));
            }
            first.get_or_insert((item, payout));
        }
        Ok(first)
    }

    async fn apply_item(
        &self,
        rail: &InboundRail,
        item: ItemReport,
        mode: Mode,
    ) -> Result<Line, PortError> {
        let (mut line, answer) = match item.outcome {
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
        };
        let Some((sent, payout)) = self
            .find_sent(rail.method, &line.reference, line.amount)
            .await?
        else {
            if mode == Mode::Altered {
                line.anomaly(None);
            }
            return Ok(line);
        };
        line.matched = Some((sent.subaccount_id, Some(sent.payout_id), Some(sent.file_id)));
        match (mode, answer) {
            (Mode::Altered, _) => {
                line.anomaly(self.deciding(Some(payout.id), sent.file_id).await?);
            }
            (Mode::Apply, None) => line.resolution = Resolution::Noted,
            (Mode::Apply, Some(answer)) => {
                let (resolution, earlier) = self
                    .answer_payment(
                        rail.answers,
                        &payout,
                        sent.file_id,
                        sent.file_state,
                        &answer,
                    )
                    .await?;
                line.resolution = resolution;
                line.contradicts = earlier;
            }
        }
        Ok(line)
    }
}

#[cfg(test)]
#[path = "inbound_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "inbound_answers_tests.rs"]
mod answers_tests;
