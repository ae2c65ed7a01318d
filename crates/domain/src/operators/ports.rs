//! The stores of operators, sessions and sign-in failures.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

use crate::audit::AuditEntry;
use crate::error::PortError;
use crate::ids::OperatorId;

use super::{
    FailureWindow, Operator, OperatorTimeZone, PasswordHash, Role, Session, ThrottleSubject,
    TokenHash,
};

/// Operators' accounts. Each change is written with its audit entry in one transaction.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait OperatorStore: Send + Sync {
    /// Inserts `operator` (status invited, its TOTP secret sealed) with its enrolment token's
    /// hash, valid until `enrolment_expires_at`, and `audit`. `Ok(false)` when an operator with
    /// its e-mail exists; then nothing was written.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn insert_operator(
        &self,
        operator: &Operator,
        enrolment: &TokenHash,
        enrolment_expires_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<bool, PortError>;

    /// The operator with this (normalised) e-mail, whatever its status.
    ///
    /// # Errors
    /// `PortError` when it cannot be read.
    async fn operator_by_email(&self, email: &str) -> Result<Option<Operator>, PortError>;

    /// The operator with this id.
    ///
    /// # Errors
    /// `PortError` when it cannot be read.
    async fn operator(&self, id: OperatorId) -> Result<Option<Operator>, PortError>;

    /// The invited operator whose unused enrolment token hashes to `enrolment`, with the
    /// token's expiry (expired ones too: the caller judges).
    ///
    /// # Errors
    /// `PortError` when it cannot be read.
    async fn operator_by_enrolment(
        &self,
        enrolment: &TokenHash,
    ) -> Result<Option<(Operator, DateTime<Utc>)>, PortError>;

    /// Makes the operator active with `password`, spends the enrolment token and records
    /// `totp_step` as used, with `audit`, only while it is still invited with this token
    /// unexpired at `now`. `Ok(false)` otherwise; then nothing was written.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn complete_enrolment(
        &self,
        id: OperatorId,
        enrolment: &TokenHash,
        password: &PasswordHash,
        totp_step: u64,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<bool, PortError>;

    /// Records `step` as the operator's last TOTP step used, only when it is later than the
    /// one recorded (so each code is accepted once, even by two instances at the same moment).
    /// `Ok(false)` when it was not later.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn use_totp_step(&self, id: OperatorId, step: u64) -> Result<bool, PortError>;

    /// Every operator, by e-mail.
    ///
    /// # Errors
    /// `PortError` when they cannot be read.
    async fn list_operators(&self) -> Result<Vec<Operator>, PortError>;

    /// Sets the role, with `audit`, when it differs. `Ok(false)` when no operator has `id` or
    /// its role already is `role`; then nothing was written.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn change_role(
        &self,
        id: OperatorId,
        role: Role,
        audit: &AuditEntry,
    ) -> Result<bool, PortError>;

    /// Disables the operator at `now` and ends every session of it, with `audit`. `Ok(false)`
    /// when no operator has `id` or it is disabled already; then nothing was written.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn disable_operator(
        &self,
        id: OperatorId,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<bool, PortError>;

    /// Sets the operator's time zone, with `audit`, when it differs. `Ok(false)` when no
    /// operator has `id` or its zone already is `zone`; then nothing was written.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn set_time_zone(
        &self,
        id: OperatorId,
        zone: OperatorTimeZone,
        audit: &AuditEntry,
    ) -> Result<bool, PortError>;
}

/// Console sessions, by the hash of their token.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Stores a new session with `audit` (the sign-in).
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn create_session(&self, session: &Session, audit: &AuditEntry) -> Result<(), PortError>;

    /// The session with this key that has not ended, and its operator as stored now (so a
    /// role change or a disable applies to the next request on every instance).
    ///
    /// # Errors
    /// `PortError` when it cannot be read.
    async fn session(&self, key: &TokenHash) -> Result<Option<(Session, Operator)>, PortError>;

    /// Records a use of the session at `now`.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn touch_session(&self, key: &TokenHash, now: DateTime<Utc>) -> Result<(), PortError>;

    /// Ends the session at `now`, with `audit` when given (sign-out; a timed-out session ends
    /// without one). `Ok(false)` when it had ended already.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn end_session<'a>(
        &self,
        key: &TokenHash,
        now: DateTime<Utc>,
        audit: Option<&'a AuditEntry>,
    ) -> Result<bool, PortError>;
}

/// Sign-in failures per subject, in fixed windows.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait LoginThrottleStore: Send + Sync {
    /// The current window of each subject that has one.
    ///
    /// # Errors
    /// `PortError` when they cannot be read.
    async fn failure_windows(
        &self,
        subjects: &[ThrottleSubject],
    ) -> Result<Vec<(ThrottleSubject, FailureWindow)>, PortError>;

    /// Counts a failure at `now` for each subject: in its window when that started less than
    /// its `window` ago, else in a new window starting at `now`.
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn record_failure(
        &self,
        subjects: &[(ThrottleSubject, Duration)],
        now: DateTime<Utc>,
    ) -> Result<(), PortError>;

    /// Forgets the subject's failures (after a successful sign-in).
    ///
    /// # Errors
    /// `PortError` when it could not be written.
    async fn clear_failures(&self, subject: &ThrottleSubject) -> Result<(), PortError>;
}
