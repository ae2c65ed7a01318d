//! The inbound side of the production rails (docs/RAILS.md, Transports; Results and returns):
//! polls each rail's inbound directory, reads every new file with the rail's reader, applies what
//! it says and records it.
//!
//! - A file is recorded once per (method, name, SHA-256) and never read again; a file whose
//!   content changed under the same name is a new file.
//! - A file verdict moves the stored file (`uploaded` → `acknowledged` / `rejected`); a rejected
//!   file fails its payouts, a settled one pays them.
//! - A payment line is matched by its reference among the rail's stored files (the newest file
//!   first, and for a return stating an amount, a payout of that amount) and applied through
//!   [`BatchRunner::settle`]: a settlement pays a payout `in_progress`; a rejection or return
//!   fails a payout `in_progress` or returns a `successful` one (`payout_return`, fee kept), with
//!   the bank's code.
//! - Every line is recorded with its resolution: `applied`, `repeated` (already so: a return is
//!   never applied twice), `unmatched`, `noted` (notifications of change) or `conflicting`.
//!
//! Effects are applied before the file is recorded, and each is a conditional change, so a
//! crash in between only makes the next poll read the file again: its lines then find their
//! changes made and are recorded `repeated`.

use std::sync::Arc;

use super::file::RailFileState;
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
    /// Report lines that contradict what happened.
    pub conflicting: usize,
}

impl InboundPass {
    fn count(&mut self, resolution: Resolution) {
        match resolution {
            Resolution::Applied => self.applied += 1,
            Resolution::Repeated => self.repeated += 1,
            Resolution::Unmatched => self.unmatched += 1,
            Resolution::Noted => self.noted += 1,
            Resolution::Conflicting => self.conflicting += 1,
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
        }
    }
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
        let (outcome, detail, lines) = match rail.reader.read(name, bytes)? {
            ReadOutcome::NotMine => (InboundOutcome::Foreign, None, Vec::new()),
            ReadOutcome::Unreadable(why) => {
                tracing::warn!(method = rail.method.route(), file = %name, reason = %why, "unreadable inbound file");
                pass.unreadable += 1;
                (InboundOutcome::Unreadable, Some(why), Vec::new())
            }
            ReadOutcome::Report(report) => (
                InboundOutcome::Read,
                None,
                self.apply(rail.method, report).await?,
            ),
        };
        let now = self.clock.now();
        let file = InboundFile {
            id: InboundFileId::from_uuid(self.ids.new_id()),
            method: rail.method,
            name: name.to_owned(),
            sha256,
            outcome,
            detail,
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
                created_at: now,
            })
            .collect();
        if self.inbound.record_inbound(&file, &reports).await? {
            pass.files += 1;
            for report in &reports {
                pass.count(report.resolution);
                if matches!(
                    report.resolution,
                    Resolution::Unmatched | Resolution::Conflicting
                ) {
                    tracing::warn!(
                        method = rail.method.route(),
                        file = %name,
                        reference = %report.reference,
                        kind = report.kind.as_str(),
                        resolution = report.resolution.as_str(),
                        "bank report needs an operator"
                    );
                }
            }
        }
        Ok(())
    }

    async fn apply(
        &self,
        method: PayoutMethod,
        report: BankReport,
    ) -> Result<Vec<Line>, PortError> {
        let mut lines = Vec::new();
        if let Some((mention, verdict)) = report.file {
            lines.push(self.apply_verdict(method, mention, verdict).await?);
        }
        for item in report.items {
            lines.push(self.apply_item(method, item).await?);
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

    /// Applies `result` to `payout`, as it is now: the batch runner can move it meanwhile (to
    /// `successful` on its file's effective date, while a return of it is being read), and the
    /// conditional write then finds nothing to do. So when the result was not applied and the
    /// payout has moved since it was read, it is decided again on the payout as it is now.
    async fn settle(&self, payout: &Payout, result: &RailResult) -> Result<Resolution, PortError> {
        let mut current = payout.clone();
        for _ in 0..3 {
            let resolution = self.settle_as_read(&current, result).await?;
            if resolution == Resolution::Applied {
                return Ok(resolution);
            }
            match self.payout(current.subaccount_id, current.id).await? {
                Some(fresh) if fresh.status != current.status => current = fresh,
                _ => return Ok(resolution),
            }
        }
        self.settle_as_read(&current, result).await
    }

    /// Applies `result` to `payout` as read: `applied` when it changed it, `repeated` when the
    /// payout is where the result would put it, `conflicting` otherwise.
    async fn settle_as_read(
        &self,
        payout: &Payout,
        result: &RailResult,
    ) -> Result<Resolution, PortError> {
        let allowed = match result {
            RailResult::Paid => payout.status == PayoutStatus::InProgress,
            RailResult::Failed { .. } => payout.status == PayoutStatus::InProgress,
            RailResult::Returned { .. } => matches!(
                payout.status,
                PayoutStatus::InProgress | PayoutStatus::Successful
            ),
        };
        let already = match result {
            RailResult::Paid => payout.status == PayoutStatus::Successful,
            RailResult::Failed { .. } | RailResult::Returned { .. } => {
                payout.status == PayoutStatus::Failed
            }
        };
        if !allowed {
            return Ok(if already {
                Resolution::Repeated
            } else {
                Resolution::Conflicting
            });
        }
        let (applied, _) = self
            .runner
            .settle(payout, result, &WriteKey::none())
            .await?;
        Ok(if applied {
            Resolution::Applied
        } else {
            Resolution::Repeated
        })
    }

    async fn apply_verdict(
        &self,
        method: PayoutMethod,
        mention: FileMention,
        verdict: FileVerdict,
    ) -> Result<Line, PortError> {
        let (kind, code, reason) = match &verdict {
            FileVerdict::Accepted => (ReportKind::FileAccepted, None, None),
            FileVerdict::Settled => (ReportKind::FileSettled, None, None),
            FileVerdict::Rejected { code, reason } => {
                (ReportKind::FileRejected, code.clone(), Some(reason.clone()))
            }
        };
        let batch = match mention {
            FileMention::Batch(batch) => batch,
            FileMention::Unknown(reference) => {
                return Ok(Line {
                    code,
                    reason,
                    ..Line::new(kind, reference)
                });
            }
        };
        let mut line = Line {
            code,
            reason,
            ..Line::new(kind, batch.as_uuid().simple().to_string())
        };
        let Some(file) = self.files.find_file(batch, method).await? else {
            return Ok(line);
        };
        line.matched = Some((file.subaccount_id, None, Some(file.id)));
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
        let mut resolution = if moved {
            Resolution::Applied
        } else if state == target {
            Resolution::Repeated
        } else {
            Resolution::Conflicting
        };
        // The file's payouts follow a rejection or a settlement of the whole file.
        let result = match verdict {
            FileVerdict::Rejected { code, reason } => Some(match code {
                Some(code) => RailResult::Returned {
                    code,
                    reason: format!("the bank rejected file {}: {reason}", file.name),
                    receiver_is_invalid: false,
                },
                None => RailResult::Failed {
                    receiver_is_invalid: false,
                    reason: format!("the bank rejected file {}: {reason}", file.name),
                },
            }),
            FileVerdict::Settled => Some(RailResult::Paid),
            FileVerdict::Accepted => None,
        };
        if let (Some(result), false) = (result, resolution == Resolution::Conflicting) {
            let mut any = false;
            for item in &file.items {
                let Some(payout) = self.payout(file.subaccount_id, item.payout_id).await? else {
                    continue;
                };
                // A rejection never undoes a payout the bank reported paid meanwhile.
                if payout.status == PayoutStatus::InProgress {
                    any |= self.settle(&payout, &result).await? == Resolution::Applied;
                }
            }
            if any {
                resolution = Resolution::Applied;
            }
        }
        line.resolution = resolution;
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

    async fn apply_item(&self, method: PayoutMethod, item: ItemReport) -> Result<Line, PortError> {
        let (mut line, result) = match item.outcome {
            ItemOutcome::Settled => (
                Line::new(ReportKind::Settled, item.reference),
                Some(RailResult::Paid),
            ),
            ItemOutcome::Rejected(reason) => (
                Line::with_reason(ReportKind::Rejected, item.reference, &reason, None),
                Some(returned(reason)),
            ),
            ItemOutcome::Returned { reason, amount } => (
                Line::with_reason(
                    ReportKind::Returned,
                    item.reference,
                    &reason,
                    amount.map(|a| a.get()),
                ),
                Some(returned(reason)),
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
        let Some((sent, payout)) = self.find_sent(method, &line.reference, line.amount).await?
        else {
            return Ok(line);
        };
        line.matched = Some((sent.subaccount_id, Some(sent.payout_id), Some(sent.file_id)));
        line.resolution = match result {
            None => Resolution::Noted,
            Some(result) => self.settle(&payout, &result).await?,
        };
        Ok(line)
    }
}

fn returned(reason: super::report::ReturnReason) -> RailResult {
    RailResult::Returned {
        code: reason.code,
        reason: reason.reason,
        receiver_is_invalid: reason.account_is_invalid,
    }
}

#[cfg(test)]
#[path = "inbound_tests.rs"]
mod tests;
