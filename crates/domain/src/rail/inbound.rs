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
//!   stands ([`RailState`]) and what the answer says ([`RailAnswer`]): applied through the
//!   batch runner (a settlement pays a payout `in_progress`; a rejection fails it; a return
//!   fails it, or returns a `successful` one with `payout_return`, fee kept), recorded as
//!   repeated, or recorded as an anomaly with the line it contradicts. Only a real return moves
//!   a settled payout's money.
//! - A report is worked in sets, not line by line: its lines' sent items are read in one
//!   statement, their payouts in one (a further one for the few returns whose newest candidate
//!   is of another amount), the lines that decided failed payouts or that answers contradict in
//!   one; every line is decided in the domain on the payouts as read, and those to apply are
//!   applied as one set ([`BatchRunner::settle_results`]). A file's verdict that settles or
//!   rejects its payouts goes the same way, before the report's items are read. The few
//!   answers whose change was not applied (the payout moved meanwhile, e.g. settled on its
//!   effective date while its return was read), and a later line about a payout an earlier
//!   line of the same report applies, are decided again one by one on the payout as it is
//!   then ([`BatchRunner::settle`]).
//! - Every line is recorded with its resolution: `applied`, `repeated` (already so: a return is
//!   never applied twice), `unmatched`, `noted` (notifications of change) or `anomaly`.
//!
//! Effects are applied before the file is recorded, and each is a conditional change, so a
//! crash in between only makes the next poll read the file again: its lines then find their
//! changes made and are recorded `repeated`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::answers::{AnswerRules, AnswerVerdict, RailAnswer, RailState, ReportNames};
use super::file::{RailFile, RailFileState};
use super::inbound_ports::{
    DecidingReport, InboundFile, InboundOutcome, InboundStore, RecordedReport, ReportKind,
    Resolution, SentItem,
};
use super::ports::RailFileStore;
use super::report::{
    BankFileReader, BankReport, FileMention, FileVerdict, ItemReport, ReadOutcome,
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
    /// How often its inbound directory is read: a [`InboundProcessor::poll`] reads it only
    /// when this long has passed since it last did, so a bank's SFTP server is not listed as
    /// often as a local directory polled beside it.
    pub poll_interval: std::time::Duration,
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
    /// When each of `rails` is next due to be read (`None`: at the next poll).
    next_poll: std::sync::Mutex<Vec<Option<DateTime<Utc>>>>,
    files: Arc<dyn RailFileStore>,
    inbound: Arc<dyn InboundStore>,
    payouts: Arc<dyn PayoutStore>,
    runner: Arc<BatchRunner>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

#[path = "inbound_lines.rs"]
mod lines;
use lines::{ATTEMPTS, Answer, Decision, Line, Payment, Resolved, Search, line_of, rail_state};

/// How many payment lines of a report are matched, decided and applied together
/// ([`InboundProcessor::apply_items`]): as many as the runner applies as one set, so a part's
/// answers are one set.
const REPORT_PART_LINES: usize = crate::batch::runner::SETTLE_SET_RESULTS;

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
            next_poll: std::sync::Mutex::new(vec![None; rails.len()]),
            rails,
            files,
            inbound,
            payouts,
            runner,
            clock,
            ids,
        }
    }

    /// One poll of the inbound directory of every rail that is due ([`InboundRail::poll_interval`]
    /// since it was last read). A rail whose directory cannot be reached is skipped until it is
    /// next due (logged); a store error stops the poll.
    pub async fn poll(&self) -> Result<InboundPass, PortError> {
        let mut pass = InboundPass::default();
        for (index, rail) in self.rails.iter().enumerate() {
            if !self.take_due(index, rail) {
                continue;
            }
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

    /// Whether rail `index` is due to be read now; if so, it is next due a `poll_interval`
    /// from now.
    fn take_due(&self, index: usize, rail: &InboundRail) -> bool {
        let now = self.clock.now();
        let Ok(mut next) = self.next_poll.lock() else {
            return true;
        };
        let Some(slot) = next.get_mut(index) else {
            return true;
        };
        if slot.is_some_and(|due| now < due) {
            return false;
        }
        *slot = chrono::Duration::from_std(rail.poll_interval)
            .ok()
            .and_then(|interval| now.checked_add_signed(interval));
        true
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
        let mut lines = Vec::with_capacity(report.items.len() + 1);
        // The file's verdict first, applied before the items are read: an item then finds its
        // payout as the verdict left it.
        if let Some((mention, verdict)) = report.file {
            lines.push(self.apply_verdict(rail, mention, verdict, mode).await?);
        }
        lines.extend(self.apply_items(rail, report.items, mode).await?);
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

    /// The payouts of `keys` that exist, in one read (none for no keys), by key.
    async fn payouts_of(
        &self,
        keys: &[(SubaccountId, PayoutId)],
    ) -> Result<HashMap<(SubaccountId, PayoutId), Payout>, PortError> {
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        let wanted: HashSet<&(SubaccountId, PayoutId)> = keys.iter().collect();
        Ok(self
            .payouts
            .find_payouts(keys)
            .await?
            .into_iter()
            .map(|p| ((p.subaccount_id, p.id), p))
            .filter(|(key, _)| wanted.contains(key))
            .collect())
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

    /// [`Self::deciding`] for each of `queries`, in one read (none for no queries).
    async fn deciding_all(
        &self,
        queries: &[(Option<PayoutId>, RailFileId)],
    ) -> Result<Vec<Option<DecidingReport>>, PortError> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let reports = self.inbound.deciding_reports(queries).await?;
        if reports.len() != queries.len() {
            return Err(PortError::unknown(format!(
                "asked for the deciding lines of {} payments, got {}",
                queries.len(),
                reports.len()
            )));
        }
        Ok(reports)
    }

    /// Where `payout`, a payment of file `file` (in `file_state`), stands at the rail: `None`
    /// for a payout that never reached it (still waiting, or cancelled).
    async fn state_of(
        &self,
        payout: &Payout,
        file: RailFileId,
        file_state: RailFileState,
    ) -> Result<Option<RailState>, PortError> {
        let deciding = match payout.status {
            PayoutStatus::Failed => self.inbound.deciding_report(Some(payout.id), file).await?,
            _ => None,
        };
        Ok(rail_state(payout, file_state, deciding))
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
        answer: &Answer,
    ) -> Result<Resolved, PortError> {
        self.answer_attempts(rules, payout, file, file_state, answer, ATTEMPTS)
            .await
    }

    /// [`Self::answer_payment`] with `attempts` left.
    async fn answer_attempts(
        &self,
        rules: AnswerRules,
        payout: &Payout,
        file: RailFileId,
        file_state: RailFileState,
        (answer, result): &Answer,
        attempts: usize,
    ) -> Result<Resolved, PortError> {
        let mut current = payout.clone();
        for _ in 0..attempts {
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
            match self.changed(&current).await? {
                Some(fresh) => current = fresh,
                None => return Ok((Resolution::Repeated, None)),
            }
        }
        Ok((Resolution::Repeated, None))
    }

    /// `payout` as it is now when its status changed since it was read; `None` when it did
    /// not (its answer was recorded already) or it is gone.
    async fn changed(&self, payout: &Payout) -> Result<Option<Payout>, PortError> {
        Ok(self
            .payout(payout.subaccount_id, payout.id)
            .await?
            .filter(|fresh| fresh.status != payout.status))
    }

    /// Decides each of `payments` with the rail's table on the payout as read, reading the
    /// lines that decided the failed payouts and those the answers contradict in one read.
    async fn decide_all(
        &self,
        rules: AnswerRules,
        payments: &[Payment],
    ) -> Result<Vec<Decision>, PortError> {
        // `None`: the deciding line is needed first (to tell a returned payout from a rejected
        // one, or to name what the answer contradicts).
        let mut decisions: Vec<Option<Decision>> = payments
            .iter()
            .map(|p| {
                if p.payout.status == PayoutStatus::Failed {
                    return None;
                }
                let Some(state) = rail_state(&p.payout, p.file_state, None) else {
                    return Some(Decision::Done((Resolution::Anomaly, None)));
                };
                match rules.verdict(state, p.answer.0) {
                    AnswerVerdict::Apply => Some(Decision::Apply),
                    AnswerVerdict::Repeated => Some(Decision::Done((Resolution::Repeated, None))),
                    AnswerVerdict::Anomaly => None,
                }
            })
            .collect();
        let asked: Vec<usize> = (0..payments.len())
            .filter(|&i| decisions[i].is_none())
            .collect();
        let queries: Vec<(Option<PayoutId>, RailFileId)> = asked
            .iter()
            .map(|&i| (Some(payments[i].payout.id), payments[i].file))
            .collect();
        let deciding = self.deciding_all(&queries).await?;
        for (&i, report) in asked.iter().zip(deciding) {
            let p = &payments[i];
            let verdict =
                rail_state(&p.payout, p.file_state, report).map(|s| rules.verdict(s, p.answer.0));
            decisions[i] = Some(match verdict {
                Some(AnswerVerdict::Apply) => Decision::Apply,
                Some(AnswerVerdict::Repeated) => Decision::Done((Resolution::Repeated, None)),
                Some(AnswerVerdict::Anomaly) => {
                    Decision::Done((Resolution::Anomaly, report.map(|r| r.id)))
                }
                None => Decision::Done((Resolution::Anomaly, None)),
            });
        }
        Ok(decisions
            .into_iter()
            .map(|d| d.unwrap_or(Decision::Done((Resolution::Anomaly, None))))
            .collect())
    }

    /// Decides each of `payments` on the payouts as read ([`Self::decide_all`]) and applies
    /// those the table applies as one set ([`BatchRunner::settle_results`]). A payment whose
    /// change was not applied (its payout moved meanwhile) is decided again on the payout as it
    /// is now, as [`Self::answer_payment`] does; so is a later answer about a payout an earlier
    /// one of the same report applies, after it. Returns each payment's resolution, in order.
    async fn answer_all(
        &self,
        rules: AnswerRules,
        payments: &[Payment],
    ) -> Result<Vec<Resolved>, PortError> {
        let decisions = self.decide_all(rules, payments).await?;
        // The set: each payout once, for the first answer the table applies to it; every later
        // answer about that payout waits for it.
        let mut in_set = HashSet::new();
        let mut set = Vec::new();
        let mut after = vec![false; payments.len()];
        let mut resolved: Vec<Option<Resolved>> = vec![None; payments.len()];
        for (i, (p, decision)) in payments.iter().zip(&decisions).enumerate() {
            if in_set.contains(&p.payout.id) {
                after[i] = true;
                continue;
            }
            match decision {
                Decision::Apply => {
                    in_set.insert(p.payout.id);
                    set.push(i);
                }
                Decision::Done(done) => resolved[i] = Some(*done),
            }
        }
        if !set.is_empty() {
            let results: Vec<(Payout, RailResult)> = set
                .iter()
                .map(|&i| (payments[i].payout.clone(), payments[i].answer.1.clone()))
                .collect();
            let applied = self.runner.settle_results(&results).await?;
            for (&i, applied) in set.iter().zip(applied) {
                if applied {
                    resolved[i] = Some((Resolution::Applied, None));
                }
            }
        }
        // The few left, one by one in the report's order.
        let mut out = Vec::with_capacity(payments.len());
        for (i, p) in payments.iter().enumerate() {
            let done = match resolved[i] {
                Some(done) => done,
                None if after[i] => {
                    let current = self
                        .payout(p.payout.subaccount_id, p.payout.id)
                        .await?
                        .unwrap_or_else(|| p.payout.clone());
                    self.answer_payment(rules, &current, p.file, p.file_state, &p.answer)
                        .await?
                }
                // Applying it was the first attempt.
                None => match self.changed(&p.payout).await? {
                    Some(fresh) => {
                        self.answer_attempts(
                            rules,
                            &fresh,
                            p.file,
                            p.file_state,
                            &p.answer,
                            ATTEMPTS - 1,
                        )
                        .await?
                    }
                    None => (Resolution::Repeated, None),
                },
            };
            out.push(done);
        }
        Ok(out)
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
        let Some(mut file) = self.files.find_file(batch, rail.method, part).await? else {
            if mode == Mode::Altered {
                line.anomaly(None);
            }
            return Ok(line);
        };
        // Its items and state are what the verdict needs, not its bytes (a file of 100,000
        // payouts is megabytes).
        drop(std::mem::take(&mut file.bytes));
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
            // The file's payouts a part at a time (REPORT_PART_LINES), each part's in one read,
            // decided each, applied as sets: a settlement of a file of 100,000 payouts holds
            // one part's payouts and changes.
            for items in file.items.chunks(REPORT_PART_LINES) {
                let keys: Vec<(SubaccountId, PayoutId)> = items
                    .iter()
                    .map(|item| (file.subaccount_id, item.payout_id))
                    .collect();
                let mut found = self.payouts_of(&keys).await?;
                let payments: Vec<Payment> = keys
                    .iter()
                    .filter_map(|key| found.remove(key))
                    .map(|payout| Payment {
                        payout,
                        file: file.id,
                        file_state: state,
                        answer: answer.clone(),
                    })
                    .collect();
                for (resolution, earlier) in self.answer_all(rail.answers, &payments).await? {
                    match resolution {
                        Resolution::Applied if line.resolution != Resolution::Anomaly => {
                            line.resolution = Resolution::Applied;
                        }
                        // One payout the answer contradicts makes the line an anomaly; the
                        // other payouts are still decided for themselves.
                        Resolution::Anomaly if line.resolution != Resolution::Anomaly => {
                            line.anomaly(earlier);
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(line)
    }

    /// The sent payment each of `lines` names, in one read of the sent items and one of the
    /// payouts per round: its reference's newest file's, or for a return stating an amount, the
    /// newest of that amount (a further round reads the next candidates of the lines whose
    /// newest is of another amount).
    async fn find_sent_all(
        &self,
        method: PayoutMethod,
        lines: &[Line],
    ) -> Result<Vec<Option<(SentItem, Payout)>>, PortError> {
        let mut references: Vec<String> = lines.iter().map(|l| l.reference.clone()).collect();
        references.sort_unstable();
        references.dedup();
        if references.is_empty() {
            return Ok(Vec::new());
        }
        let mut candidates: HashMap<String, Vec<SentItem>> = HashMap::new();
        for (reference, item) in self.inbound.sent_items_of(method, &references).await? {
            candidates.entry(reference).or_default().push(item);
        }
        for items in candidates.values_mut() {
            items.sort_by_key(|item| std::cmp::Reverse(item.file_created_at));
        }
        let mut searches: Vec<Search<'_>> = lines
            .iter()
            .map(|line| Search {
                candidates: candidates.get(&line.reference).map_or(&[], Vec::as_slice),
                amount: line.amount,
                next: 0,
                first: None,
                found: None,
            })
            .collect();
        let mut read: HashMap<(SubaccountId, PayoutId), Option<Payout>> = HashMap::new();
        loop {
            let mut wanted: Vec<(SubaccountId, PayoutId)> = searches
                .iter_mut()
                .filter_map(|search| search.advance(&read))
                .collect();
            if wanted.is_empty() {
                break;
            }
            wanted.sort_unstable();
            wanted.dedup();
            let mut found = self.payouts_of(&wanted).await?;
            for key in wanted {
                read.insert(key, found.remove(&key));
            }
        }
        Ok(searches.into_iter().map(Search::result).collect())
    }

    /// Applies a report's payment lines a part of [`REPORT_PART_LINES`] at a time, in the
    /// report's order ([`Self::apply_part`]): a part's payouts, payments and changes are let go
    /// before the next part is read, so a report of 100,000 lines (a pain.002 answering a whole
    /// cut-off) holds one part's worth. A later part reads its payouts after the earlier parts'
    /// changes, as a later line of one part is decided after an earlier one it follows.
    async fn apply_items(
        &self,
        rail: &InboundRail,
        items: Vec<ItemReport>,
        mode: Mode,
    ) -> Result<Vec<Line>, PortError> {
        let mut lines = Vec::with_capacity(items.len());
        let mut items = items.into_iter();
        loop {
            let part: Vec<ItemReport> = items.by_ref().take(REPORT_PART_LINES).collect();
            if part.is_empty() {
                return Ok(lines);
            }
            lines.extend(self.apply_part(rail, part, mode).await?);
        }
    }

    /// Matches, decides and applies `items` (a part of a report) as sets: one read of the sent
    /// payments they name and one of their payouts, the answers applied through
    /// [`Self::answer_all`].
    async fn apply_part(
        &self,
        rail: &InboundRail,
        items: Vec<ItemReport>,
        mode: Mode,
    ) -> Result<Vec<Line>, PortError> {
        let (mut lines, answers): (Vec<Line>, Vec<Option<Answer>>) =
            items.into_iter().map(line_of).unzip();
        let matches = self.find_sent_all(rail.method, &lines).await?;
        let mut payments = Vec::new();
        let mut paid = Vec::new();
        let mut altered = Vec::new();
        for (i, (found, answer)) in matches.into_iter().zip(answers).enumerate() {
            let line = &mut lines[i];
            let Some((sent, payout)) = found else {
                if mode == Mode::Altered {
                    line.anomaly(None);
                }
                continue;
            };
            line.matched = Some((sent.subaccount_id, Some(sent.payout_id), Some(sent.file_id)));
            match (mode, answer) {
                (Mode::Altered, _) => {
                    line.anomaly(None);
                    altered.push((i, (Some(payout.id), sent.file_id)));
                }
                (Mode::Apply, None) => line.resolution = Resolution::Noted,
                (Mode::Apply, Some(answer)) => {
                    paid.push(i);
                    payments.push(Payment {
                        payout,
                        file: sent.file_id,
                        file_state: sent.file_state,
                        answer,
                    });
                }
            }
        }
        // Every line of an altered document is an anomaly, naming what decided its payout.
        let queries: Vec<(Option<PayoutId>, RailFileId)> =
            altered.iter().map(|(_, q)| *q).collect();
        for ((i, _), deciding) in altered.iter().zip(self.deciding_all(&queries).await?) {
            lines[*i].anomaly(deciding.map(|report| report.id));
        }
        for (i, (resolution, earlier)) in paid
            .into_iter()
            .zip(self.answer_all(rail.answers, &payments).await?)
        {
            lines[i].resolution = resolution;
            lines[i].contradicts = earlier;
        }
        Ok(lines)
    }
}

#[cfg(test)]
#[path = "inbound_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "inbound_answers_tests.rs"]
mod answers_tests;
