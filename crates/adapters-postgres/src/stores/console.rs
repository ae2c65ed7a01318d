//! The console's stores on PostgreSQL: operators (TOTP secrets sealed by the vault), sessions
//! by the hash of their token, sign-in failures, and the append-only audit log. Each change is
//! written with its audit entry in one transaction.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::audit::{Actor, AuditAction, AuditEntry, AuditLog, AuditQuery};
use domain::ids::{AuditEntryId, OperatorId};
use domain::operators::ports::{LoginThrottleStore, OperatorStore, SessionStore};
use domain::operators::{
    FailureWindow, Operator, OperatorEmail, OperatorStatus, OperatorTimeZone, PasswordHash, Role,
    Session, ThrottleSubject, TokenHash, TotpSecret,
};
use uuid::Uuid;

use super::PgStore;
use crate::errors::{from_diesel, unique_violation};
use crate::schema::{audit_log, login_failures, operator_sessions, operators};

/// The associated data of an operator's sealed TOTP secret.
pub(crate) fn totp_context(id: Uuid) -> Vec<u8> {
    [b"operator-totp:".as_slice(), id.as_bytes()].concat()
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = operators)]
#[diesel(check_for_backend(diesel::pg::Pg))]
struct OperatorRow {
    id: Uuid,
    email: String,
    role: String,
    status: String,
    password_hash: Option<String>,
    totp_secret_ciphertext: Vec<u8>,
    last_totp_step: Option<i64>,
    created_at: DateTime<Utc>,
    enrolled_at: Option<DateTime<Utc>>,
    disabled_at: Option<DateTime<Utc>>,
    time_zone: String,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = operator_sessions)]
#[diesel(check_for_backend(diesel::pg::Pg))]
struct SessionRow {
    token_hash: Vec<u8>,
    operator_id: Uuid,
    created_at: DateTime<Utc>,
    last_seen_at: DateTime<Utc>,
    expires_at: DateTime<Utc>,
    client_address: Option<String>,
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = audit_log)]
#[diesel(check_for_backend(diesel::pg::Pg))]
struct AuditRow {
    id: Uuid,
    at: DateTime<Utc>,
    actor_kind: String,
    actor_id: Option<Uuid>,
    actor_name: String,
    action: String,
    object_kind: String,
    object_id: String,
    before: Option<serde_json::Value>,
    after: Option<serde_json::Value>,
    request_id: Option<String>,
    client_address: Option<String>,
}

fn invariant(what: impl Into<String>) -> PortError {
    PortError::unknown(what)
}

impl PgStore {
    fn operator_from_row(&self, row: OperatorRow) -> Result<Operator, PortError> {
        let secret = self
            .vault
            .open(&row.totp_secret_ciphertext, &totp_context(row.id))
            .map_err(|e| invariant(format!("opening operator {}'s TOTP secret: {e}", row.id)))?;
        Ok(Operator {
            id: OperatorId::from_uuid(row.id),
            email: OperatorEmail::parse(&row.email)
                .ok_or_else(|| invariant(format!("operator {} has a bad e-mail", row.id)))?,
            role: Role::parse(&row.role)
                .ok_or_else(|| invariant(format!("operator {} has role {:?}", row.id, row.role)))?,
            status: OperatorStatus::parse(&row.status).ok_or_else(|| {
                invariant(format!("operator {} has status {:?}", row.id, row.status))
            })?,
            password_hash: row.password_hash.map(PasswordHash),
            totp_secret: TotpSecret::from_bytes(secret)
                .ok_or_else(|| invariant(format!("operator {} has a bad TOTP secret", row.id)))?,
            last_totp_step: row.last_totp_step.and_then(|s| u64::try_from(s).ok()),
            // A name a newer tz database dropped reads as UTC rather than locking the operator
            // out of the console.
            time_zone: OperatorTimeZone::parse(&row.time_zone).unwrap_or_else(|| {
                tracing::warn!(operator = %row.id, "unknown stored time zone; showing UTC");
                OperatorTimeZone::UTC
            }),
            created_at: row.created_at,
            enrolled_at: row.enrolled_at,
            disabled_at: row.disabled_at,
        })
    }
}

fn step_value(step: u64) -> Result<i64, PortError> {
    i64::try_from(step).map_err(|_| invariant("a TOTP step beyond i64"))
}

/// Appends `entry` on `conn` (inside the caller's transaction).
pub(crate) async fn insert_audit(
    conn: &mut AsyncPgConnection,
    entry: &AuditEntry,
) -> QueryResult<usize> {
    diesel::insert_into(audit_log::table)
        .values((
            audit_log::id.eq(entry.id.as_uuid()),
            audit_log::at.eq(entry.at),
            audit_log::actor_kind.eq(entry.actor.kind()),
            audit_log::actor_id.eq(entry.actor.operator_id().map(|id| id.as_uuid())),
            audit_log::actor_name.eq(entry.actor.name()),
            audit_log::action.eq(entry.action.as_str()),
            audit_log::object_kind.eq(&entry.object_kind),
            audit_log::object_id.eq(&entry.object_id),
            audit_log::before.eq(&entry.before),
            audit_log::after.eq(&entry.after),
            audit_log::request_id.eq(&entry.request_id),
            audit_log::client_address.eq(&entry.client_address),
        ))
        .execute(conn)
        .await
}

#[async_trait]
impl OperatorStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(operator = %operator.id))]
    async fn insert_operator(
        &self,
        operator: &Operator,
        enrolment: &TokenHash,
        enrolment_expires_at: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<bool, PortError> {
        let id = operator.id.as_uuid();
        let sealed = self
            .vault
            .seal(operator.totp_secret.expose(), &totp_context(id))
            .map_err(|e| invariant(format!("sealing a TOTP secret: {e}")))?;
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                diesel::insert_into(operators::table)
                    .values((
                        operators::id.eq(id),
                        operators::email.eq(operator.email.as_str()),
                        operators::role.eq(operator.role.as_str()),
                        operators::status.eq(operator.status.as_str()),
                        operators::totp_secret_ciphertext.eq(&sealed),
                        operators::enrolment_token_hash.eq(enrolment.0.as_slice()),
                        operators::enrolment_expires_at.eq(enrolment_expires_at),
                        operators::created_at.eq(operator.created_at),
                        operators::time_zone.eq(operator.time_zone.name()),
                    ))
                    .execute(conn)
                    .await?;
                insert_audit(conn, audit).await?;
                Ok(())
            })
            .await;
        match result {
            Ok(()) => Ok(true),
            Err(e) if unique_violation(&e) == Some("operators_email_unique") => Ok(false),
            Err(e) => Err(from_diesel(e)),
        }
    }

    async fn operator_by_email(&self, email: &str) -> Result<Option<Operator>, PortError> {
        let mut conn = self.conn().await?;
        let row = operators::table
            .filter(operators::email.eq(email))
            .select(OperatorRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        row.map(|r| self.operator_from_row(r)).transpose()
    }

    async fn operator(&self, id: OperatorId) -> Result<Option<Operator>, PortError> {
        let mut conn = self.conn().await?;
        let row = operators::table
            .find(id.as_uuid())
            .select(OperatorRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        row.map(|r| self.operator_from_row(r)).transpose()
    }

    async fn operator_by_enrolment(
        &self,
        enrolment: &TokenHash,
    ) -> Result<Option<(Operator, DateTime<Utc>)>, PortError> {
        let mut conn = self.conn().await?;
        let row: Option<(OperatorRow, Option<DateTime<Utc>>)> = operators::table
            .filter(operators::enrolment_token_hash.eq(enrolment.0.as_slice()))
            .select((OperatorRow::as_select(), operators::enrolment_expires_at))
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        match row {
            Some((row, Some(expires))) => Ok(Some((self.operator_from_row(row)?, expires))),
            _ => Ok(None),
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(operator = %id))]
    async fn complete_enrolment(
        &self,
        id: OperatorId,
        enrolment: &TokenHash,
        password: &PasswordHash,
        totp_step: u64,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<bool, PortError> {
        let step = step_value(totp_step)?;
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let changed: bool = {
                let updated = diesel::update(operators::table.find(id.as_uuid()))
                    .filter(operators::status.eq(OperatorStatus::Invited.as_str()))
                    .filter(operators::enrolment_token_hash.eq(enrolment.0.as_slice()))
                    .filter(operators::enrolment_expires_at.gt(now))
                    .set((
                        operators::status.eq(OperatorStatus::Active.as_str()),
                        operators::password_hash.eq(&password.0),
                        operators::last_totp_step.eq(step),
                        operators::enrolment_token_hash.eq(None::<Vec<u8>>),
                        operators::enrolment_expires_at.eq(None::<DateTime<Utc>>),
                        operators::enrolled_at.eq(now),
                    ))
                    .execute(conn)
                    .await?;
                updated == 1
            };
            if changed {
                insert_audit(conn, audit).await?;
            }
            Ok(changed)
        })
        .await
        .map_err(from_diesel)
    }

    async fn use_totp_step(&self, id: OperatorId, step: u64) -> Result<bool, PortError> {
        let step = step_value(step)?;
        let mut conn = self.conn().await?;
        let updated = diesel::update(operators::table.find(id.as_uuid()))
            .filter(
                operators::last_totp_step
                    .is_null()
                    .or(operators::last_totp_step.lt(step)),
            )
            .set(operators::last_totp_step.eq(step))
            .execute(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(updated == 1)
    }

    async fn list_operators(&self) -> Result<Vec<Operator>, PortError> {
        let mut conn = self.conn().await?;
        let rows = operators::table
            .order(operators::email.asc())
            .select(OperatorRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|r| self.operator_from_row(r))
            .collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(operator = %id))]
    async fn change_role(
        &self,
        id: OperatorId,
        role: Role,
        audit: &AuditEntry,
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let changed: bool = {
                let updated = diesel::update(operators::table.find(id.as_uuid()))
                    .filter(operators::role.ne(role.as_str()))
                    .set(operators::role.eq(role.as_str()))
                    .execute(conn)
                    .await?;
                updated == 1
            };
            if changed {
                insert_audit(conn, audit).await?;
            }
            Ok(changed)
        })
        .await
        .map_err(from_diesel)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(operator = %id))]
    async fn set_time_zone(
        &self,
        id: OperatorId,
        zone: OperatorTimeZone,
        audit: &AuditEntry,
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let updated = diesel::update(operators::table.find(id.as_uuid()))
                .filter(operators::time_zone.ne(zone.name()))
                .set(operators::time_zone.eq(zone.name()))
                .execute(conn)
                .await?;
            if updated == 1 {
                insert_audit(conn, audit).await?;
            }
            Ok(updated == 1)
        })
        .await
        .map_err(from_diesel)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(operator = %id))]
    async fn disable_operator(
        &self,
        id: OperatorId,
        now: DateTime<Utc>,
        audit: &AuditEntry,
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let updated = diesel::update(operators::table.find(id.as_uuid()))
                .filter(operators::status.ne(OperatorStatus::Disabled.as_str()))
                .set((
                    operators::status.eq(OperatorStatus::Disabled.as_str()),
                    operators::disabled_at.eq(now),
                    // An unused enrolment link dies with the account.
                    operators::enrolment_token_hash.eq(None::<Vec<u8>>),
                    operators::enrolment_expires_at.eq(None::<DateTime<Utc>>),
                ))
                .execute(conn)
                .await?;
            if updated != 1 {
                return Ok(false);
            }
            diesel::update(operator_sessions::table)
                .filter(operator_sessions::operator_id.eq(id.as_uuid()))
                .filter(operator_sessions::ended_at.is_null())
                .set(operator_sessions::ended_at.eq(now))
                .execute(conn)
                .await?;
            insert_audit(conn, audit).await?;
            Ok(true)
        })
        .await
        .map_err(from_diesel)
    }
}

#[async_trait]
impl SessionStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(operator = %session.operator_id))]
    async fn create_session(&self, session: &Session, audit: &AuditEntry) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            diesel::insert_into(operator_sessions::table)
                .values((
                    operator_sessions::token_hash.eq(session.key.0.as_slice()),
                    operator_sessions::operator_id.eq(session.operator_id.as_uuid()),
                    operator_sessions::created_at.eq(session.created_at),
                    operator_sessions::last_seen_at.eq(session.last_seen_at),
                    operator_sessions::expires_at.eq(session.expires_at),
                    operator_sessions::client_address.eq(&session.client_address),
                ))
                .execute(conn)
                .await?;
            insert_audit(conn, audit).await?;
            Ok(())
        })
        .await
        .map_err(from_diesel)
    }

    async fn session(&self, key: &TokenHash) -> Result<Option<(Session, Operator)>, PortError> {
        let mut conn = self.conn().await?;
        let row: Option<(SessionRow, OperatorRow)> = operator_sessions::table
            .inner_join(operators::table)
            .filter(operator_sessions::token_hash.eq(key.0.as_slice()))
            .filter(operator_sessions::ended_at.is_null())
            .select((SessionRow::as_select(), OperatorRow::as_select()))
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some((session, operator)) = row else {
            return Ok(None);
        };
        let key = <[u8; 32]>::try_from(session.token_hash.as_slice())
            .map_err(|_| invariant("a session key that is not 32 bytes"))?;
        Ok(Some((
            Session {
                key: TokenHash(key),
                operator_id: OperatorId::from_uuid(session.operator_id),
                created_at: session.created_at,
                last_seen_at: session.last_seen_at,
                expires_at: session.expires_at,
                client_address: session.client_address,
            },
            self.operator_from_row(operator)?,
        )))
    }

    async fn touch_session(&self, key: &TokenHash, now: DateTime<Utc>) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        diesel::update(operator_sessions::table.find(key.0.as_slice()))
            .filter(operator_sessions::ended_at.is_null())
            .filter(operator_sessions::last_seen_at.lt(now))
            .set(operator_sessions::last_seen_at.eq(now))
            .execute(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(())
    }

    async fn end_session<'a>(
        &self,
        key: &TokenHash,
        now: DateTime<Utc>,
        audit: Option<&'a AuditEntry>,
    ) -> Result<bool, PortError> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let ended = diesel::update(operator_sessions::table.find(key.0.as_slice()))
                .filter(operator_sessions::ended_at.is_null())
                .set(operator_sessions::ended_at.eq(now))
                .execute(conn)
                .await?;
            if ended == 1
                && let Some(audit) = audit
            {
                insert_audit(conn, audit).await?;
            }
            Ok(ended == 1)
        })
        .await
        .map_err(from_diesel)
    }
}

#[async_trait]
impl LoginThrottleStore for PgStore {
    async fn failure_windows(
        &self,
        subjects: &[ThrottleSubject],
    ) -> Result<Vec<(ThrottleSubject, FailureWindow)>, PortError> {
        let names: Vec<&str> = subjects.iter().map(ThrottleSubject::as_str).collect();
        let mut conn = self.conn().await?;
        let rows: Vec<(String, i32, DateTime<Utc>)> = login_failures::table
            .filter(login_failures::subject.eq_any(&names))
            .select((
                login_failures::subject,
                login_failures::failures,
                login_failures::window_started_at,
            ))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(rows
            .into_iter()
            .filter_map(|(subject, failures, started_at)| {
                let subject = subjects.iter().find(|s| s.as_str() == subject)?.clone();
                let failures = u32::try_from(failures).unwrap_or(0);
                Some((
                    subject,
                    FailureWindow {
                        failures,
                        started_at,
                    },
                ))
            })
            .collect())
    }

    async fn record_failure(
        &self,
        subjects: &[(ThrottleSubject, Duration)],
        now: DateTime<Utc>,
    ) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        for (subject, window) in subjects {
            // One statement per subject: a window that started too long ago starts again now.
            let fresh_after = now - *window;
            diesel::insert_into(login_failures::table)
                .values((
                    login_failures::subject.eq(subject.as_str()),
                    login_failures::failures.eq(1),
                    login_failures::window_started_at.eq(now),
                ))
                .on_conflict(login_failures::subject)
                .do_update()
                .set((
                    login_failures::failures.eq(diesel::dsl::sql::<diesel::sql_types::Integer>(
                        "CASE WHEN login_failures.window_started_at > ",
                    )
                    .bind::<diesel::sql_types::Timestamptz, _>(fresh_after)
                    .sql(" THEN least(login_failures.failures + 1, 1000000) ELSE 1 END")),
                    login_failures::window_started_at.eq(diesel::dsl::sql::<
                        diesel::sql_types::Timestamptz,
                    >(
                        "CASE WHEN login_failures.window_started_at > ",
                    )
                    .bind::<diesel::sql_types::Timestamptz, _>(fresh_after)
                    .sql(" THEN login_failures.window_started_at ELSE ")
                    .bind::<diesel::sql_types::Timestamptz, _>(now)
                    .sql(" END")),
                ))
                .execute(&mut conn)
                .await
                .map_err(from_diesel)?;
        }
        Ok(())
    }

    async fn clear_failures(&self, subject: &ThrottleSubject) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        diesel::delete(login_failures::table.find(subject.as_str()))
            .execute(&mut conn)
            .await
            .map_err(from_diesel)?;
        Ok(())
    }
}

fn entry_from_row(row: AuditRow) -> Result<AuditEntry, PortError> {
    let actor = match (row.actor_kind.as_str(), row.actor_id) {
        ("operator", Some(id)) => Actor::Operator {
            id: OperatorId::from_uuid(id),
            email: row.actor_name,
        },
        ("cli", None) => Actor::Cli {
            name: row.actor_name,
        },
        (kind, _) => {
            return Err(invariant(format!(
                "audit entry {} has actor {kind:?}",
                row.id
            )));
        }
    };
    Ok(AuditEntry {
        id: AuditEntryId::from_uuid(row.id),
        at: row.at,
        actor,
        action: AuditAction::parse(&row.action).ok_or_else(|| {
            invariant(format!(
                "audit entry {} has action {:?}",
                row.id, row.action
            ))
        })?,
        object_kind: row.object_kind,
        object_id: row.object_id,
        before: row.before,
        after: row.after,
        request_id: row.request_id,
        client_address: row.client_address,
    })
}

#[async_trait]
impl AuditLog for PgStore {
    async fn append(&self, entry: &AuditEntry) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        insert_audit(&mut conn, entry).await.map_err(from_diesel)?;
        Ok(())
    }

    async fn list(&self, query: &AuditQuery) -> Result<Vec<AuditEntry>, PortError> {
        let mut conn = self.conn().await?;
        let mut select = audit_log::table
            .select(AuditRow::as_select())
            .order((audit_log::at.desc(), audit_log::id.desc()))
            .limit(i64::from(query.limit.clamp(1, 500)))
            .into_boxed();
        if let Some(action) = query.action {
            select = select.filter(audit_log::action.eq(action.as_str()));
        }
        if let Some(actor) = query.actor.as_deref().filter(|a| !a.is_empty()) {
            let pattern = format!(
                "%{}%",
                actor
                    .replace('\\', "\\\\")
                    .replace('%', "\\%")
                    .replace('_', "\\_")
            );
            select = select.filter(audit_log::actor_name.like(pattern));
        }
        if let Some(object) = query.object_id.as_deref().filter(|o| !o.is_empty()) {
            select = select.filter(audit_log::object_id.eq(object.to_owned()));
        }
        if let Some(id) = query.before {
            let at: Option<DateTime<Utc>> = audit_log::table
                .find(id.as_uuid())
                .select(audit_log::at)
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
            // An unknown position pages from nothing.
            let Some(at) = at else {
                return Ok(Vec::new());
            };
            select = select.filter(
                audit_log::at
                    .lt(at)
                    .or(audit_log::at.eq(at).and(audit_log::id.lt(id.as_uuid()))),
            );
        }
        let rows = select.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter().map(entry_from_row).collect()
    }
}
