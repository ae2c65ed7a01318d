//! Where inbound bank files and what they said are recorded.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use strum::{EnumString, IntoStaticStr, VariantArray};

use super::file::RailFileState;
use crate::account::PayoutMethod;
use crate::error::PortError;
use crate::ids::{BankReportId, InboundFileId, PayoutId, RailFileId, SubaccountId};

/// What reading an inbound file gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray, IntoStaticStr, EnumString)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub enum InboundOutcome {
    /// A report in the rail's format.
    Read,
    /// Not the rail's format: left alone.
    Foreign,
    /// The rail's format, but broken.
    Unreadable,
    /// A document under a name the rail gives each document once (an Interac `report_id`),
    /// with other content than the document first read under it: an anomaly, not a new report.
    /// Its lines are recorded as anomalies; nothing of it is applied.
    Altered,
}

impl InboundOutcome {
    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The outcome with this stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }
}

/// A file read from a rail's inbound directory. Recorded once per method, name and content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundFile {
    /// Identifier.
    pub id: InboundFileId,
    /// The rail it came from.
    pub method: PayoutMethod,
    /// Its name in the inbound directory.
    pub name: String,
    /// SHA-256 of its bytes.
    pub sha256: [u8; 32],
    /// What reading it gave.
    pub outcome: InboundOutcome,
    /// Why it could not be read, when it could not; for an altered document, what it alters.
    pub detail: Option<String>,
    /// For an [`InboundOutcome::Altered`] document, the document first read under its name.
    pub original: Option<InboundFileId>,
    /// The document's bytes, kept for operators (not kept for a foreign file, which is
    /// another rail's).
    pub bytes: Option<Vec<u8>>,
    /// When it was read.
    pub received_at: DateTime<Utc>,
}

/// What one line of a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray, IntoStaticStr, EnumString)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub enum ReportKind {
    /// The bank accepted a file.
    FileAccepted,
    /// The bank settled every payment of a file.
    FileSettled,
    /// The bank rejected a file.
    FileRejected,
    /// A payment was settled.
    Settled,
    /// A payment was refused before it was paid.
    Rejected,
    /// A paid payment came back.
    Returned,
    /// A notice to record only (notification of change, dishonored return).
    Notice,
}

impl ReportKind {
    /// Every kind.
    pub const ALL: &'static [ReportKind] = Self::VARIANTS;

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The kind with this stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }
}

/// What payoutd did with a line of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray, IntoStaticStr, EnumString)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub enum Resolution {
    /// It changed the payout or the file.
    Applied,
    /// The payout or file was so already (a report read twice, a repeated return): nothing was
    /// applied again.
    Repeated,
    /// No file or payout of ours has that reference.
    Unmatched,
    /// Recorded only.
    Noted,
    /// It contradicts what happened (a rejection of a settled payout, a settlement of a
    /// rejected one, a return on a rail without returns, a line of an altered document):
    /// nothing was applied; recorded with the line it contradicts, for an operator. Stored as
    /// `anomaly`; the previous release's `conflicting` reads as this.
    #[strum(to_string = "anomaly", serialize = "conflicting")]
    Anomaly,
}

impl Resolution {
    /// Every resolution.
    pub const ALL: &'static [Resolution] = Self::VARIANTS;

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The resolution with this stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }

    /// Every name it may be stored under: its own, and for [`Resolution::Anomaly`] the
    /// previous release's `conflicting`.
    pub const fn stored_names(self) -> &'static [&'static str] {
        match self {
            Self::Applied => &["applied"],
            Self::Repeated => &["repeated"],
            Self::Unmatched => &["unmatched"],
            Self::Noted => &["noted"],
            Self::Anomaly => &["anomaly", "conflicting"],
        }
    }
}

/// One line of what an inbound file said, with what it matched and what was done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedReport {
    /// Identifier.
    pub id: BankReportId,
    /// Its place in the file, from 0.
    pub position: u32,
    /// What it is about.
    pub kind: ReportKind,
    /// The payment's reference, or the file's identifier for file lines.
    pub reference: String,
    /// The bank's code.
    pub code: Option<String>,
    /// Its meaning.
    pub reason: Option<String>,
    /// The code says the account is wrong.
    pub account_invalid: bool,
    /// The amount the report states, minor units.
    pub amount: Option<i64>,
    /// The subaccount of what it matched.
    pub subaccount_id: Option<SubaccountId>,
    /// The payout it matched.
    pub payout_id: Option<PayoutId>,
    /// The file it matched (or the payout's file).
    pub rail_file_id: Option<RailFileId>,
    /// What was done.
    pub resolution: Resolution,
    /// For an anomaly, the applied line that put the payout or file where it is (the other
    /// document of the contradiction), when a report did (not a settlement on the effective
    /// date).
    pub contradicts: Option<BankReportId>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// A payment of a stored file, found by its reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentItem {
    /// The file.
    pub file_id: RailFileId,
    /// When the file was written.
    pub file_created_at: DateTime<Utc>,
    /// Where the file is.
    pub file_state: RailFileState,
    /// The payout's subaccount.
    pub subaccount_id: SubaccountId,
    /// The payout.
    pub payout_id: PayoutId,
}

/// A recorded report line with the name of the file it came in, for operators.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportListing {
    /// The rail.
    pub method: PayoutMethod,
    /// The inbound file it came in.
    pub inbound_file_id: InboundFileId,
    /// The inbound file's name.
    pub file_name: String,
    /// The line.
    pub report: RecordedReport,
    /// For an anomaly, the document of the line it contradicts.
    pub contradicted_file: Option<InboundFileId>,
}

/// An applied line that decided a payout or a file: what a later answer is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecidingReport {
    /// The line.
    pub id: BankReportId,
    /// What it said.
    pub kind: ReportKind,
}

/// Inbound files and their reports (docs/RAILS.md, Transports; Results and returns).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait InboundStore: Send + Sync {
    /// Whether a file of `method` with this name and content was recorded already.
    async fn inbound_known(
        &self,
        method: PayoutMethod,
        name: &str,
        sha256: [u8; 32],
    ) -> Result<bool, PortError>;

    /// The document of `method` first read under `name` (outcome `read`), whatever its
    /// content: what a document of the same name and other content alters, on a rail whose
    /// names are unique.
    async fn read_under(
        &self,
        method: PayoutMethod,
        name: &str,
    ) -> Result<Option<InboundFileId>, PortError>;

    /// The newest applied line that decided `payout` of file `file`: a line naming the payout,
    /// or a settlement or rejection of the whole file; without `payout`, the newest applied line
    /// about the whole file. `Ok(None)` when no report did (a payout settled on its file's
    /// effective date, or still as it was sent).
    async fn deciding_report(
        &self,
        payout: Option<PayoutId>,
        file: RailFileId,
    ) -> Result<Option<DecidingReport>, PortError>;

    /// [`Self::deciding_report`] of each (payout, file) of `queries`, in one read: one answer per
    /// query, in the order of `queries`.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn deciding_reports(
        &self,
        queries: &[(Option<PayoutId>, RailFileId)],
    ) -> Result<Vec<Option<DecidingReport>>, PortError>;

    /// The payments of `method`'s stored files whose reference is one of `references`, each
    /// with its reference, in one read (a whole report's lines at once); a reference's
    /// payments newest file first (NACHA trace numbers repeat from one day to the next).
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    async fn sent_items_of(
        &self,
        method: PayoutMethod,
        references: &[String],
    ) -> Result<Vec<(String, SentItem)>, PortError>;

    /// Records `file` and its `reports` in one transaction. `Ok(false)` when the file (method,
    /// name, content) was recorded already; then nothing was written.
    async fn record_inbound(
        &self,
        file: &InboundFile,
        reports: &[RecordedReport],
    ) -> Result<bool, PortError>;

    /// Recorded report lines, newest first (a document's lines in order), optionally only
    /// those with `resolution` and of `kind`, after `before` (the last line of the previous
    /// page: none when it is not a line), at most `limit`.
    async fn list_reports(
        &self,
        resolution: Option<Resolution>,
        kind: Option<ReportKind>,
        before: Option<BankReportId>,
        limit: u32,
    ) -> Result<Vec<ReportListing>, PortError>;

    /// Every recorded line about `file` or one of its payouts, oldest first (at most 10,000).
    async fn reports_of_file(&self, file: RailFileId) -> Result<Vec<ReportListing>, PortError>;

    /// Recorded inbound files without their bytes, newest first, optionally only those with
    /// `outcome`, at most `limit`.
    async fn list_inbound(
        &self,
        outcome: Option<InboundOutcome>,
        limit: u32,
    ) -> Result<Vec<InboundFile>, PortError>;

    /// One recorded inbound file with its bytes (when they were kept) and its lines in order.
    /// `Ok(None)` when there is none with that id.
    async fn get_inbound(
        &self,
        id: InboundFileId,
    ) -> Result<Option<(InboundFile, Vec<RecordedReport>)>, PortError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_resolution_reads_back_from_each_name_it_is_stored_under() {
        for resolution in Resolution::ALL {
            assert_eq!(resolution.stored_names()[0], resolution.as_str());
            for name in resolution.stored_names() {
                assert_eq!(Resolution::parse(name), Some(*resolution), "{name}");
            }
        }
        assert_eq!(Resolution::Anomaly.as_str(), "anomaly");
    }
}
