//! Bank files for operators (`payoutd admin rail-file`, the console's bank files pages): the
//! files with what the bank answered about each, and their bytes as sent, a download that is
//! always audited. One copy of those rules for every driving adapter.

use std::sync::Arc;

use serde_json::json;

use super::file::{RailFile, RailFileState};
use super::inbound_ports::{InboundStore, ReportKind, ReportListing, Resolution};
use super::ports::{RailFileStore, RailFileSummary};
use crate::audit::{AuditAction, AuditContext, AuditLog};
use crate::error::PortError;
use crate::ids::{BankReportId, RailFileId};
use crate::ports::{Clock, IdGenerator};

/// Why a bank file could not be shown.
#[derive(Debug, thiserror::Error)]
pub enum BankFileError {
    /// No file has this id (or the text is not a file id).
    #[error("No bank file has this id.")]
    NotFound,
    /// A store could not be read or the audit entry written.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// A file with what the bank answered about it and its payouts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnsweredFile {
    /// The file, with its items (and its bytes).
    pub file: RailFile,
    /// Every answer line about it or one of its payouts, oldest first.
    pub answers: Vec<ReportListing>,
}

/// The ports bank file reads need.
#[derive(Clone)]
pub struct BankFilePorts {
    /// The files.
    pub files: Arc<dyn RailFileStore>,
    /// The bank's answers.
    pub inbound: Arc<dyn InboundStore>,
    /// Where downloads are recorded.
    pub audit: Arc<dyn AuditLog>,
    /// The time of an audit entry.
    pub clock: Arc<dyn Clock>,
    /// Audit entry ids.
    pub ids: Arc<dyn IdGenerator>,
}

/// Bank files as operators read them.
#[derive(Clone)]
pub struct BankFiles {
    ports: BankFilePorts,
}

impl BankFiles {
    /// Over `ports`.
    pub fn new(ports: BankFilePorts) -> Self {
        Self { ports }
    }

    /// The files, newest first, optionally only those in `state`, after `before` (the last
    /// file of the previous page), at most `limit`.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    pub async fn list(
        &self,
        state: Option<RailFileState>,
        before: Option<RailFileId>,
        limit: u32,
    ) -> Result<Vec<RailFileSummary>, PortError> {
        self.ports.files.list_files(state, before, limit).await
    }

    /// The bank's answer lines, newest first, optionally only those with `resolution` and of
    /// `kind` (returns, notices of change, …), at most `limit`.
    ///
    /// # Errors
    /// `PortError` when the store cannot be read.
    pub async fn answers(
        &self,
        resolution: Option<Resolution>,
        kind: Option<ReportKind>,
        before: Option<BankReportId>,
        limit: u32,
    ) -> Result<Vec<ReportListing>, PortError> {
        self.ports
            .inbound
            .list_reports(resolution, kind, before, limit)
            .await
    }

    /// The file whose id is `raw`, with every answer about it.
    ///
    /// # Errors
    /// [`BankFileError::NotFound`] when `raw` is not a file id (nothing is read) or no file has
    /// it; [`BankFileError::Port`] when a store fails.
    pub async fn file(&self, raw: &str) -> Result<AnsweredFile, BankFileError> {
        let file = self.find(raw).await?;
        let answers = self.ports.inbound.reports_of_file(file.id).await?;
        Ok(AnsweredFile { file, answers })
    }

    /// The file whose id is `raw`, to hand out its bytes as sent: recorded in the audit log
    /// (who, which file, its name, size and SHA-256) before it is returned, so no download goes
    /// unrecorded.
    ///
    /// # Errors
    /// As [`BankFiles::file`]; `Port` also when the audit entry cannot be written (then the
    /// bytes are not handed out).
    pub async fn download(
        &self,
        raw: &str,
        context: &AuditContext,
    ) -> Result<RailFile, BankFileError> {
        let file = self.find(raw).await?;
        let entry = context.entry(
            self.ports.ids.as_ref(),
            self.ports.clock.as_ref(),
            AuditAction::BankFileDownloaded,
            "rail_file",
            file.id,
            None,
            Some(json!({
                "name": file.name,
                "size": file.bytes.len(),
                "sha256": hex::encode(file.sha256),
            })),
        );
        self.ports.audit.append(&entry).await?;
        Ok(file)
    }

    async fn find(&self, raw: &str) -> Result<RailFile, BankFileError> {
        let id = RailFileId::parse(raw.trim()).ok_or(BankFileError::NotFound)?;
        self.ports
            .files
            .get_file(id)
            .await?
            .ok_or(BankFileError::NotFound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::account::PayoutMethod;
    use crate::audit::MockAuditLog;
    use crate::ids::{BatchId, SubaccountId};
    use crate::ports::{MockClock, MockIdGenerator};
    use crate::rail::inbound_ports::MockInboundStore;
    use crate::rail::ports::MockRailFileStore;
    use chrono::{NaiveDate, TimeZone, Utc};
    use uuid::Uuid;

    fn a_file() -> RailFile {
        let batch = BatchId::from_uuid(Uuid::from_u128(2));
        RailFile {
            id: RailFileId::from_uuid(Uuid::from_u128(1)),
            batch_id: batch,
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(3)),
            method: PayoutMethod::Ach,
            part: 1,
            name: RailFile::name_for("PAYOUTD", batch, PayoutMethod::Ach, 1, "ach"),
            sha256: RailFile::digest(b"101 file"),
            bytes: b"101 file".to_vec(),
            state: RailFileState::Uploaded,
            effective_date: NaiveDate::from_ymd_opt(2026, 11, 30).unwrap_or_default(),
            items: Vec::new(),
            reason: None,
            created_at: Utc
                .timestamp_opt(1_800_000_000, 0)
                .single()
                .unwrap_or_default(),
            uploaded_at: None,
            answered_at: None,
        }
    }

    struct Mocks {
        files: MockRailFileStore,
        inbound: MockInboundStore,
        audit: MockAuditLog,
    }

    impl Mocks {
        fn new() -> Self {
            Self {
                files: MockRailFileStore::new(),
                inbound: MockInboundStore::new(),
                audit: MockAuditLog::new(),
            }
        }

        fn service(self) -> BankFiles {
            let mut clock = MockClock::new();
            clock.expect_now().returning(Utc::now);
            let mut ids = MockIdGenerator::new();
            ids.expect_new_id().returning(Uuid::new_v4);
            BankFiles::new(BankFilePorts {
                files: Arc::new(self.files),
                inbound: Arc::new(self.inbound),
                audit: Arc::new(self.audit),
                clock: Arc::new(clock),
                ids: Arc::new(ids),
            })
        }
    }

    #[tokio::test]
    async fn text_that_is_not_a_file_id_reads_nothing_and_records_nothing() {
        let mut mocks = Mocks::new();
        mocks.files.expect_get_file().never();
        mocks.inbound.expect_reports_of_file().never();
        mocks.audit.expect_append().never();
        let files = mocks.service();
        for raw in ["", "x", "../etc/passwd"] {
            assert!(matches!(
                files.file(raw).await,
                Err(BankFileError::NotFound)
            ));
            assert!(matches!(
                files.download(raw, &AuditContext::cli(None)).await,
                Err(BankFileError::NotFound)
            ));
        }
    }

    #[tokio::test]
    async fn a_download_is_recorded_with_the_file_s_name_size_and_digest_before_it_is_handed_out() {
        let file = a_file();
        let mut mocks = Mocks::new();
        let stored = file.clone();
        mocks
            .files
            .expect_get_file()
            .times(1)
            .returning(move |_| Ok(Some(stored.clone())));
        let (name, id) = (file.name.clone(), file.id.to_string());
        mocks
            .audit
            .expect_append()
            .withf(move |entry| {
                entry.action == AuditAction::BankFileDownloaded
                    && entry.object_id == id
                    && entry.actor.name() == "cli:ops"
                    && entry.after.as_ref().is_some_and(|after| {
                        after["name"] == name.as_str()
                            && after["size"] == 8
                            && after["sha256"] == hex::encode(RailFile::digest(b"101 file"))
                    })
            })
            .times(1)
            .returning(|_| Ok(()));
        let got = mocks
            .service()
            .download(&file.id.to_string(), &AuditContext::cli(Some("ops")))
            .await;
        assert_eq!(got.ok().map(|f| f.bytes), Some(b"101 file".to_vec()));
    }

    #[tokio::test]
    async fn no_bytes_leave_when_the_audit_entry_cannot_be_written() {
        let file = a_file();
        let mut mocks = Mocks::new();
        let stored = file.clone();
        mocks
            .files
            .expect_get_file()
            .returning(move |_| Ok(Some(stored.clone())));
        mocks
            .audit
            .expect_append()
            .returning(|_| Err(PortError::unknown("down")));
        let got = mocks
            .service()
            .download(&file.id.to_string(), &AuditContext::cli(None))
            .await;
        assert!(matches!(got, Err(BankFileError::Port(_))));
    }

    #[tokio::test]
    async fn a_file_comes_with_its_answers_and_an_unknown_one_is_not_found() {
        let file = a_file();
        let mut mocks = Mocks::new();
        let stored = file.clone();
        let known = file.id;
        mocks
            .files
            .expect_get_file()
            .returning(move |id| Ok((id == known).then(|| stored.clone())));
        mocks
            .inbound
            .expect_reports_of_file()
            .withf(move |id| *id == known)
            .times(1)
            .returning(|_| Ok(Vec::new()));
        let files = mocks.service();
        let answered = files.file(&format!(" {} ", file.id)).await;
        assert_eq!(answered.ok().map(|a| a.file.id), Some(file.id));
        let other = RailFileId::from_uuid(Uuid::from_u128(9)).to_string();
        assert!(matches!(
            files.file(&other).await,
            Err(BankFileError::NotFound)
        ));
    }
}
