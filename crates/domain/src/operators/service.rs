//! The operator use cases: create (invite), enrol, sign in, authenticate a request's session,
//! sign out, change a role, disable. The console and `payoutd admin` both call these.

use std::net::IpAddr;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde_json::json;

use crate::audit::{Actor, AuditAction, AuditContext};
use crate::error::PortError;
use crate::ids::OperatorId;
use crate::masking::Secret;
use crate::ports::{Clock, IdGenerator};

use super::ports::{LoginThrottleStore, OperatorStore, SessionStore};
use super::{
    BrowserSecret, NewPassword, Operator, OperatorEmail, OperatorStatus, OperatorTimeZone,
    PasswordError, PasswordHasher, Role, Session, SessionPolicy, SessionVerdict, ThrottlePolicy,
    ThrottleSubject, TotpSecret,
};

/// How long an enrolment link stays valid.
pub const ENROLMENT_VALIDITY: Duration = Duration::hours(24);

/// The stores and the password hasher the use cases need.
#[derive(Clone)]
pub struct OperatorPorts {
    /// Accounts.
    pub operators: Arc<dyn OperatorStore>,
    /// Sessions.
    pub sessions: Arc<dyn SessionStore>,
    /// Sign-in failures.
    pub throttle: Arc<dyn LoginThrottleStore>,
    /// Password hashing.
    pub passwords: Arc<dyn PasswordHasher>,
}

impl OperatorPorts {
    /// Every store from one value that implements them all (the PostgreSQL adapter).
    pub fn with_store<S>(store: Arc<S>, passwords: Arc<dyn PasswordHasher>) -> Self
    where
        S: OperatorStore + SessionStore + LoginThrottleStore + 'static,
    {
        Self {
            operators: store.clone(),
            sessions: store.clone(),
            throttle: store,
            passwords,
        }
    }
}

/// Why an account change (create, role, disable) failed; the message is what the CLI prints
/// and the console shows.
#[derive(Debug, thiserror::Error)]
pub enum OperatorAdminError {
    /// The e-mail address is not one.
    #[error("invalid e-mail address")]
    InvalidEmail,
    /// An operator with this e-mail exists.
    #[error("an operator with this e-mail address exists already")]
    Exists,
    /// No such operator.
    #[error("operator not found")]
    NotFound,
    /// Nothing to change (same role, disabled already).
    #[error("nothing to change: {0}")]
    Unchanged(&'static str),
    /// Operators may not change their own role or disable themselves (an admin cannot lock the
    /// last admin out by mistake from the console).
    #[error("you cannot change or disable your own account")]
    OwnAccount,
    /// The time zone is not one of the tz database's names.
    #[error("no time zone is called {0:?}; name one as the tz database does, like Europe/Berlin")]
    UnknownTimeZone(String),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// A new operator and the one-time enrolment token for its link (shown once).
#[derive(Debug)]
pub struct Invitation {
    /// The operator.
    pub operator: Operator,
    /// The token of the enrolment link.
    pub token: BrowserSecret,
    /// When the link stops working.
    pub expires_at: DateTime<Utc>,
}

/// What the enrolment page shows.
#[derive(Debug)]
pub struct EnrolmentView {
    /// The operator's e-mail.
    pub email: String,
    /// Its role.
    pub role: Role,
    /// Its TOTP secret in base32 (for typing into an app).
    pub totp_base32: Secret<String>,
    /// The `otpauth://` URI (for a link or QR code).
    pub otpauth_uri: Secret<String>,
    /// When the link stops working.
    pub expires_at: DateTime<Utc>,
}

/// Why an enrolment was refused.
#[derive(Debug, thiserror::Error)]
pub enum EnrolError {
    /// The link is unknown, used or expired.
    #[error("this enrolment link is not valid: it may have been used already or have expired")]
    NotValid,
    /// The password breaks the rule.
    #[error(transparent)]
    Password(#[from] PasswordError),
    /// The code is not the app's current one.
    #[error("the code is not the one your authenticator app shows now")]
    WrongCode,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why a sign-in was refused. The messages never say which of e-mail, password or code was
/// wrong, nor whether the account exists.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// Something was wrong.
    #[error("the e-mail address, password or code is not right")]
    Refused,
    /// Too many failures for the account or the client address.
    #[error("too many failed sign-ins: try again after {}", .until.format("%H:%M UTC"))]
    Throttled {
        /// When it may be tried again.
        until: DateTime<Utc>,
    },
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// A session just started: the token for the cookie, and who it is.
#[derive(Debug)]
pub struct SignedIn {
    /// The session token (the cookie's value).
    pub token: BrowserSecret,
    /// The operator.
    pub operator: Operator,
}

/// A request's signed-in operator.
#[derive(Debug, Clone)]
pub struct Authenticated {
    /// The operator as stored now.
    pub operator: Operator,
    /// The session.
    pub session: Session,
}

impl Authenticated {
    /// The audit context of this operator's request.
    pub fn audit_context(
        &self,
        request_id: Option<String>,
        client_address: Option<String>,
    ) -> AuditContext {
        AuditContext {
            actor: Actor::Operator {
                id: self.operator.id,
                email: self.operator.email.as_str().to_owned(),
            },
            request_id,
            client_address,
        }
    }
}

/// The operator use cases.
pub struct OperatorService {
    ports: OperatorPorts,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    sessions: SessionPolicy,
    throttle: ThrottlePolicy,
}

fn operator_json(operator: &Operator) -> serde_json::Value {
    json!({
        "email": operator.email.as_str(),
        "role": operator.role.as_str(),
        "status": operator.status.as_str(),
    })
}

impl OperatorService {
    /// Wires the use cases.
    pub fn new(
        ports: OperatorPorts,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        sessions: SessionPolicy,
        throttle: ThrottlePolicy,
    ) -> Self {
        Self {
            ports,
            clock,
            ids,
            sessions,
            throttle,
        }
    }

    /// The session policy in force.
    pub fn session_policy(&self) -> SessionPolicy {
        self.sessions
    }

    /// Creates an invited operator with a fresh TOTP secret and a one-time enrolment token,
    /// valid for [`ENROLMENT_VALIDITY`].
    ///
    /// # Errors
    /// [`OperatorAdminError::InvalidEmail`], [`OperatorAdminError::Exists`], or a port error.
    pub async fn invite(
        &self,
        email: &str,
        role: Role,
        context: &AuditContext,
    ) -> Result<Invitation, OperatorAdminError> {
        let email = OperatorEmail::parse(email).ok_or(OperatorAdminError::InvalidEmail)?;
        let now = self.clock.now();
        let operator = Operator {
            id: OperatorId::from_uuid(self.ids.new_id()),
            email,
            role,
            status: OperatorStatus::Invited,
            password_hash: None,
            totp_secret: TotpSecret::generate(self.ids.as_ref()),
            last_totp_step: None,
            time_zone: OperatorTimeZone::UTC,
            created_at: now,
            enrolled_at: None,
            disabled_at: None,
        };
        let token = BrowserSecret::generate(self.ids.as_ref());
        let expires_at = now + ENROLMENT_VALIDITY;
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::OperatorCreated,
            "operator",
            operator.id,
            None,
            Some(operator_json(&operator)),
        );
        if !self
            .ports
            .operators
            .insert_operator(&operator, &token.key(), expires_at, &audit)
            .await?
        {
            return Err(OperatorAdminError::Exists);
        }
        Ok(Invitation {
            operator,
            token,
            expires_at,
        })
    }

    async fn invited_by(
        &self,
        token: &str,
    ) -> Result<(Operator, BrowserSecret, DateTime<Utc>), EnrolError> {
        let token = BrowserSecret::parse(token).ok_or(EnrolError::NotValid)?;
        let (operator, expires_at) = self
            .ports
            .operators
            .operator_by_enrolment(&token.key())
            .await?
            .ok_or(EnrolError::NotValid)?;
        if operator.status != OperatorStatus::Invited || self.clock.now() >= expires_at {
            return Err(EnrolError::NotValid);
        }
        Ok((operator, token, expires_at))
    }

    /// What the enrolment page of `token` shows. Writes nothing (links are fetched by mail
    /// scanners).
    ///
    /// # Errors
    /// [`EnrolError::NotValid`] or a port error.
    pub async fn enrolment(&self, token: &str) -> Result<EnrolmentView, EnrolError> {
        let (operator, _, expires_at) = self.invited_by(token).await?;
        Ok(EnrolmentView {
            email: operator.email.as_str().to_owned(),
            role: operator.role,
            totp_base32: Secret::new(operator.totp_secret.base32()),
            otpauth_uri: Secret::new(operator.totp_secret.otpauth_uri(operator.email.as_str())),
            expires_at,
        })
    }

    /// Enrols the operator of `token`: sets its password (entered twice) once `code` proves its
    /// authenticator app holds the secret. The operator then signs in.
    ///
    /// # Errors
    /// See [`EnrolError`].
    pub async fn enrol(
        &self,
        token: &str,
        password: &str,
        confirmation: &str,
        code: &str,
        request_id: Option<String>,
        client_address: Option<String>,
    ) -> Result<Operator, EnrolError> {
        let (operator, token, _) = self.invited_by(token).await?;
        let password = NewPassword::parse(password, confirmation, operator.email.as_str())?;
        let now = self.clock.now();
        let step = operator
            .totp_secret
            .verify(code, now)
            .ok_or(EnrolError::WrongCode)?;
        let hash = self.ports.passwords.hash(password.secret()).await?;
        let context = AuditContext {
            actor: Actor::Operator {
                id: operator.id,
                email: operator.email.as_str().to_owned(),
            },
            request_id,
            client_address,
        };
        let enrolled = Operator {
            status: OperatorStatus::Active,
            password_hash: Some(hash.clone()),
            last_totp_step: Some(step),
            enrolled_at: Some(now),
            ..operator.clone()
        };
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::OperatorEnrolled,
            "operator",
            operator.id,
            Some(operator_json(&operator)),
            Some(operator_json(&enrolled)),
        );
        if !self
            .ports
            .operators
            .complete_enrolment(operator.id, &token.key(), &hash, step, now, &audit)
            .await?
        {
            return Err(EnrolError::NotValid);
        }
        Ok(enrolled)
    }

    /// Signs in with e-mail, password and the authenticator's code, throttled per account and
    /// per client address. Every failure answers the same [`SignInError::Refused`].
    ///
    /// # Errors
    /// See [`SignInError`].
    pub async fn sign_in(
        &self,
        email: &str,
        password: &str,
        code: &str,
        client: Option<IpAddr>,
        request_id: Option<String>,
    ) -> Result<SignedIn, SignInError> {
        let now = self.clock.now();
        let parsed = OperatorEmail::parse(email);
        // An address that is not one is still counted (as typed), like any unknown account.
        let account_key = parsed
            .as_ref()
            .map_or_else(|| email.trim().to_lowercase(), |e| e.as_str().to_owned());
        let account_key: String = account_key.chars().take(320).collect();
        let mut subjects = vec![(
            ThrottleSubject::account(&account_key),
            self.throttle.account,
        )];
        if let Some(address) = client {
            subjects.push((ThrottleSubject::address(address), self.throttle.address));
        }
        let names: Vec<ThrottleSubject> = subjects.iter().map(|(s, _)| s.clone()).collect();
        let windows = self.ports.throttle.failure_windows(&names).await?;
        let blocked = windows
            .iter()
            .filter_map(|(subject, window)| {
                let (_, limit) = subjects.iter().find(|(s, _)| s == subject)?;
                limit.blocked_until(window, now)
            })
            .max();
        if let Some(until) = blocked {
            return Err(SignInError::Throttled { until });
        }
        let operator = match &parsed {
            Some(email) => {
                self.ports
                    .operators
                    .operator_by_email(email.as_str())
                    .await?
            }
            None => None,
        }
        .filter(|o| o.status == OperatorStatus::Active);
        let password = Secret::new(password.to_owned());
        let password_ok = self
            .ports
            .passwords
            .verify(
                &password,
                operator.as_ref().and_then(|o| o.password_hash.as_ref()),
            )
            .await?;
        let step = operator
            .as_ref()
            .and_then(|o| o.totp_secret.verify(code, now));
        let accepted = match (&operator, password_ok, step) {
            (Some(operator), true, Some(step)) => {
                self.ports
                    .operators
                    .use_totp_step(operator.id, step)
                    .await?
            }
            _ => false,
        };
        let Some(operator) = operator.filter(|_| accepted) else {
            let windows: Vec<(ThrottleSubject, Duration)> = subjects
                .iter()
                .map(|(s, limit)| (s.clone(), limit.window))
                .collect();
            self.ports.throttle.record_failure(&windows, now).await?;
            return Err(SignInError::Refused);
        };
        self.ports
            .throttle
            .clear_failures(&ThrottleSubject::account(&account_key))
            .await?;
        let token = BrowserSecret::generate(self.ids.as_ref());
        let session = self
            .sessions
            .start(&token, operator.id, client.map(|a| a.to_string()), now);
        let signed_in = Authenticated {
            operator: operator.clone(),
            session: session.clone(),
        };
        let audit = signed_in
            .audit_context(request_id, client.map(|a| a.to_string()))
            .entry(
                self.ids.as_ref(),
                self.clock.as_ref(),
                AuditAction::SignedIn,
                "operator",
                operator.id,
                None,
                None,
            );
        self.ports.sessions.create_session(&session, &audit).await?;
        Ok(SignedIn { token, operator })
    }

    /// The signed-in operator of a request presenting `token`, or `None` when the token names
    /// no live session, the session timed out (it is then ended), or the operator is no longer
    /// active. Records the use (at most once a minute).
    ///
    /// # Errors
    /// A port error.
    pub async fn authenticate(
        &self,
        token: &BrowserSecret,
    ) -> Result<Option<Authenticated>, PortError> {
        let key = token.key();
        let Some((session, operator)) = self.ports.sessions.session(&key).await? else {
            return Ok(None);
        };
        let now = self.clock.now();
        match self.sessions.judge(&session, now) {
            SessionVerdict::Idle | SessionVerdict::Expired => {
                self.ports.sessions.end_session(&key, now, None).await?;
                Ok(None)
            }
            SessionVerdict::Active { .. } if operator.status != OperatorStatus::Active => Ok(None),
            SessionVerdict::Active { touch } => {
                if touch {
                    self.ports.sessions.touch_session(&key, now).await?;
                }
                Ok(Some(Authenticated { operator, session }))
            }
        }
    }

    /// Ends the session of `signed_in` (sign-out).
    ///
    /// # Errors
    /// A port error.
    pub async fn sign_out(
        &self,
        token: &BrowserSecret,
        signed_in: &Authenticated,
        context: &AuditContext,
    ) -> Result<(), PortError> {
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::SignedOut,
            "operator",
            signed_in.operator.id,
            None,
            None,
        );
        self.ports
            .sessions
            .end_session(&token.key(), self.clock.now(), Some(&audit))
            .await?;
        Ok(())
    }

    /// Every operator.
    ///
    /// # Errors
    /// A port error.
    pub async fn list(&self) -> Result<Vec<Operator>, PortError> {
        self.ports.operators.list_operators().await
    }

    async fn target(
        &self,
        who: &str,
        context: &AuditContext,
    ) -> Result<Operator, OperatorAdminError> {
        let found = match OperatorId::parse(who) {
            Some(id) => self.ports.operators.operator(id).await?,
            None => match OperatorEmail::parse(who) {
                Some(email) => {
                    self.ports
                        .operators
                        .operator_by_email(email.as_str())
                        .await?
                }
                None => return Err(OperatorAdminError::NotFound),
            },
        }
        .ok_or(OperatorAdminError::NotFound)?;
        if context.actor.operator_id() == Some(found.id) {
            return Err(OperatorAdminError::OwnAccount);
        }
        Ok(found)
    }

    /// Gives the operator `who` (an id or e-mail) `role`; it applies to its next request.
    ///
    /// # Errors
    /// See [`OperatorAdminError`].
    pub async fn change_role(
        &self,
        who: &str,
        role: Role,
        context: &AuditContext,
    ) -> Result<Operator, OperatorAdminError> {
        let operator = self.target(who, context).await?;
        if operator.role == role {
            return Err(OperatorAdminError::Unchanged(
                "the operator has this role already",
            ));
        }
        let changed = Operator {
            role,
            ..operator.clone()
        };
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::OperatorRoleChanged,
            "operator",
            operator.id,
            Some(operator_json(&operator)),
            Some(operator_json(&changed)),
        );
        if !self
            .ports
            .operators
            .change_role(operator.id, role, &audit)
            .await?
        {
            return Err(OperatorAdminError::Unchanged(
                "the operator has this role already",
            ));
        }
        Ok(changed)
    }

    /// Disables the operator `who` (an id or e-mail) and ends its sessions; its next request
    /// on any instance is signed out.
    ///
    /// # Errors
    /// See [`OperatorAdminError`].
    pub async fn disable(
        &self,
        who: &str,
        context: &AuditContext,
    ) -> Result<Operator, OperatorAdminError> {
        let operator = self.target(who, context).await?;
        if operator.status == OperatorStatus::Disabled {
            return Err(OperatorAdminError::Unchanged(
                "the operator is disabled already",
            ));
        }
        let now = self.clock.now();
        let disabled = Operator {
            status: OperatorStatus::Disabled,
            disabled_at: Some(now),
            ..operator.clone()
        };
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::OperatorDisabled,
            "operator",
            operator.id,
            Some(operator_json(&operator)),
            Some(operator_json(&disabled)),
        );
        if !self
            .ports
            .operators
            .disable_operator(operator.id, now, &audit)
            .await?
        {
            return Err(OperatorAdminError::Unchanged(
                "the operator is disabled already",
            ));
        }
        Ok(disabled)
    }

    /// Sets the time zone `operator` (the one signed in: everyone chooses their own) reads
    /// the console's times in to the one named `raw`.
    ///
    /// # Errors
    /// [`OperatorAdminError::UnknownTimeZone`] (nothing is written),
    /// [`OperatorAdminError::Unchanged`] when it is the zone already, or a port error.
    pub async fn set_time_zone(
        &self,
        operator: &Operator,
        raw: &str,
        context: &AuditContext,
    ) -> Result<Operator, OperatorAdminError> {
        let zone = OperatorTimeZone::parse(raw).ok_or_else(|| {
            OperatorAdminError::UnknownTimeZone(raw.trim().chars().take(64).collect())
        })?;
        let unchanged = OperatorAdminError::Unchanged("this is your time zone already");
        if operator.time_zone == zone {
            return Err(unchanged);
        }
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::OperatorTimeZoneSet,
            "operator",
            operator.id,
            Some(json!({"time_zone": operator.time_zone.name()})),
            Some(json!({"time_zone": zone.name()})),
        );
        if !self
            .ports
            .operators
            .set_time_zone(operator.id, zone, &audit)
            .await?
        {
            return Err(unchanged);
        }
        Ok(Operator {
            time_zone: zone,
            ..operator.clone()
        })
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
