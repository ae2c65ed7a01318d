use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use mockall::predicate::eq;

use super::*;
use crate::audit::AuditContext;
use crate::operators::password::MockPasswordHasher;
use crate::operators::ports::{MockLoginThrottleStore, MockOperatorStore, MockSessionStore};
use crate::operators::{FailureWindow, PasswordHash, TokenHash};
use crate::ports::{MockClock, MockIdGenerator};

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
}

fn secret() -> TotpSecret {
    TotpSecret::from_bytes(vec![9; 20]).unwrap_or_else(|| unreachable!())
}

fn active(email: &str) -> Operator {
    Operator {
        id: OperatorId::from_uuid(uuid::Uuid::from_u128(1)),
        email: OperatorEmail::parse(email).unwrap_or_else(|| unreachable!()),
        role: Role::Operator,
        status: OperatorStatus::Active,
        password_hash: Some(PasswordHash("$argon2id$stored".to_owned())),
        totp_secret: secret(),
        last_totp_step: None,
        time_zone: OperatorTimeZone::UTC,
        created_at: now() - Duration::days(1),
        enrolled_at: Some(now() - Duration::days(1)),
        disabled_at: None,
    }
}

struct Mocks {
    operators: MockOperatorStore,
    sessions: MockSessionStore,
    throttle: MockLoginThrottleStore,
    passwords: MockPasswordHasher,
    at: DateTime<Utc>,
}

impl Mocks {
    fn new() -> Self {
        Self {
            operators: MockOperatorStore::new(),
            sessions: MockSessionStore::new(),
            throttle: MockLoginThrottleStore::new(),
            passwords: MockPasswordHasher::new(),
            at: now(),
        }
    }

    fn service(self) -> OperatorService {
        let mut clock = MockClock::new();
        clock.expect_now().return_const(self.at);
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(uuid::Uuid::new_v4);
        ids.expect_random_bytes().returning(|| {
            let mut bytes = [0; 32];
            bytes[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
            bytes[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
            bytes
        });
        OperatorService::new(
            OperatorPorts {
                operators: Arc::new(self.operators),
                sessions: Arc::new(self.sessions),
                throttle: Arc::new(self.throttle),
                passwords: Arc::new(self.passwords),
            },
            Arc::new(clock),
            Arc::new(ids),
            SessionPolicy::default(),
            ThrottlePolicy::default(),
        )
    }

    fn no_failures_yet(&mut self) {
        self.throttle
            .expect_failure_windows()
            .returning(|_| Ok(vec![]));
    }
}

fn address() -> Option<std::net::IpAddr> {
    Some(std::net::IpAddr::from([192, 0, 2, 1]))
}

#[tokio::test]
async fn signs_in_with_password_and_code_and_stores_only_the_token_hash() {
    let mut m = Mocks::new();
    m.no_failures_yet();
    let operator = active("ann@example.com");
    let found = operator.clone();
    m.operators
        .expect_operator_by_email()
        .with(eq("ann@example.com"))
        .returning(move |_| Ok(Some(found.clone())));
    m.passwords.expect_verify().returning(|p, h| {
        Ok(p.expose() == "right password" && h.is_some_and(|h| h.0 == "$argon2id$stored"))
    });
    let step = u64::try_from(now().timestamp() / 30).unwrap_or(0);
    m.operators
        .expect_use_totp_step()
        .with(eq(operator.id), eq(step))
        .returning(|_, _| Ok(true));
    m.throttle
        .expect_clear_failures()
        .withf(|s| s.as_str() == "account:ann@example.com")
        .returning(|_| Ok(()));
    let stored = Arc::new(std::sync::Mutex::new(None));
    let keep = stored.clone();
    m.sessions
        .expect_create_session()
        .returning(move |session, audit| {
            assert_eq!(audit.action, AuditAction::SignedIn);
            assert_eq!(audit.client_address.as_deref(), Some("192.0.2.1"));
            *keep.lock().unwrap_or_else(|e| e.into_inner()) = Some(session.clone());
            Ok(())
        });
    let code = secret().code_at(now());
    let signed_in = m
        .service()
        .sign_in(
            " Ann@Example.com ",
            "right password",
            &code,
            address(),
            None,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let session = stored
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(|| unreachable!());
    assert_eq!(session.key, signed_in.token.key());
    assert_eq!(session.expires_at, now() + Duration::hours(12));
}

#[tokio::test]
async fn a_wrong_password_an_unknown_account_and_a_reused_code_all_answer_refused_and_count() {
    // Wrong password.
    let mut m = Mocks::new();
    m.no_failures_yet();
    let found = active("ann@example.com");
    m.operators
        .expect_operator_by_email()
        .returning(move |_| Ok(Some(found.clone())));
    m.passwords.expect_verify().returning(|_, _| Ok(false));
    m.operators.expect_use_totp_step().never();
    m.throttle
        .expect_record_failure()
        .withf(|subjects, _| {
            subjects.len() == 2
                && subjects[0].0.as_str() == "account:ann@example.com"
                && subjects[1].0.as_str() == "address:192.0.2.1"
        })
        .times(1)
        .returning(|_, _| Ok(()));
    m.sessions.expect_create_session().never();
    let code = secret().code_at(now());
    let e = m
        .service()
        .sign_in("ann@example.com", "wrong", &code, address(), None)
        .await;
    assert!(matches!(e, Err(SignInError::Refused)), "{e:?}");

    // Unknown account: the hasher still works (against no hash), the answer is the same.
    let mut m = Mocks::new();
    m.no_failures_yet();
    m.operators
        .expect_operator_by_email()
        .returning(|_| Ok(None));
    m.passwords
        .expect_verify()
        .withf(|_, hash| hash.is_none())
        .times(1)
        .returning(|_, _| Ok(false));
    m.throttle
        .expect_record_failure()
        .times(1)
        .returning(|_, _| Ok(()));
    let e = m
        .service()
        .sign_in("nobody@example.com", "x", "123456", address(), None)
        .await;
    assert!(matches!(e, Err(SignInError::Refused)), "{e:?}");

    // Right password and code, but the code's step was used already.
    let mut m = Mocks::new();
    m.no_failures_yet();
    let found = active("ann@example.com");
    m.operators
        .expect_operator_by_email()
        .returning(move |_| Ok(Some(found.clone())));
    m.passwords.expect_verify().returning(|_, _| Ok(true));
    m.operators
        .expect_use_totp_step()
        .returning(|_, _| Ok(false));
    m.throttle
        .expect_record_failure()
        .times(1)
        .returning(|_, _| Ok(()));
    m.sessions.expect_create_session().never();
    let e = m
        .service()
        .sign_in("ann@example.com", "right", &code, address(), None)
        .await;
    assert!(matches!(e, Err(SignInError::Refused)), "{e:?}");
}

#[tokio::test]
async fn disabled_and_invited_operators_cannot_sign_in() {
    for status in [OperatorStatus::Disabled, OperatorStatus::Invited] {
        let mut m = Mocks::new();
        m.no_failures_yet();
        let found = Operator {
            status,
            ..active("ann@example.com")
        };
        m.operators
            .expect_operator_by_email()
            .returning(move |_| Ok(Some(found.clone())));
        m.passwords
            .expect_verify()
            .withf(|_, hash| hash.is_none())
            .returning(|_, _| Ok(false));
        m.throttle.expect_record_failure().returning(|_, _| Ok(()));
        m.sessions.expect_create_session().never();
        let code = secret().code_at(now());
        let e = m
            .service()
            .sign_in("ann@example.com", "right", &code, None, None)
            .await;
        assert!(matches!(e, Err(SignInError::Refused)), "{status:?}: {e:?}");
    }
}

#[tokio::test]
async fn a_throttled_account_or_address_is_refused_before_any_password_check() {
    for subject in ["account:ann@example.com", "address:192.0.2.1"] {
        let mut m = Mocks::new();
        let failures = if subject.starts_with("account") {
            5
        } else {
            20
        };
        m.throttle
            .expect_failure_windows()
            .returning(move |subjects| {
                Ok(subjects
                    .iter()
                    .filter(|s| s.as_str() == subject)
                    .map(|s| {
                        (
                            s.clone(),
                            FailureWindow {
                                failures,
                                started_at: now() - Duration::minutes(5),
                            },
                        )
                    })
                    .collect())
            });
        m.operators.expect_operator_by_email().never();
        m.passwords.expect_verify().never();
        let e = m
            .service()
            .sign_in("ann@example.com", "right", "000000", address(), None)
            .await;
        match e {
            Err(SignInError::Throttled { until }) => {
                assert_eq!(until, now() + Duration::minutes(10))
            }
            other => panic!("{subject}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn authentication_ends_idle_sessions_and_ignores_inactive_operators() {
    let token = BrowserSecret::parse(&"a".repeat(43)).unwrap_or_else(|| unreachable!());
    let session = |last_seen: DateTime<Utc>| Session {
        key: token.key(),
        operator_id: active("ann@example.com").id,
        created_at: now() - Duration::hours(1),
        last_seen_at: last_seen,
        expires_at: now() + Duration::hours(11),
        client_address: None,
    };

    let mut m = Mocks::new();
    let idle = session(now() - Duration::minutes(31));
    m.sessions
        .expect_session()
        .returning(move |_| Ok(Some((idle.clone(), active("ann@example.com")))));
    m.sessions
        .expect_end_session()
        .withf(|_, _, audit| audit.is_none())
        .times(1)
        .returning(|_, _, _| Ok(true));
    assert!(
        m.service()
            .authenticate(&token)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_none()
    );

    let mut m = Mocks::new();
    let fresh = session(now() - Duration::minutes(2));
    let disabled = Operator {
        status: OperatorStatus::Disabled,
        ..active("ann@example.com")
    };
    m.sessions
        .expect_session()
        .returning(move |_| Ok(Some((fresh.clone(), disabled.clone()))));
    m.sessions.expect_touch_session().never();
    assert!(
        m.service()
            .authenticate(&token)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
            .is_none()
    );

    let mut m = Mocks::new();
    let fresh = session(now() - Duration::minutes(2));
    let admin = Operator {
        role: Role::Admin,
        ..active("ann@example.com")
    };
    m.sessions
        .expect_session()
        .returning(move |_| Ok(Some((fresh.clone(), admin.clone()))));
    m.sessions
        .expect_touch_session()
        .times(1)
        .returning(|_, _| Ok(()));
    let signed_in = m
        .service()
        .authenticate(&token)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(signed_in.map(|s| s.operator.role), Some(Role::Admin));
}

#[tokio::test]
async fn enrolment_needs_a_live_link_a_good_password_and_the_current_code() {
    let token = BrowserSecret::parse(&"b".repeat(43)).unwrap_or_else(|| unreachable!());
    let invited = Operator {
        status: OperatorStatus::Invited,
        password_hash: None,
        enrolled_at: None,
        ..active("ann@example.com")
    };
    let code = secret().code_at(now());

    // Expired link: nothing is checked further.
    let mut m = Mocks::new();
    let stale = invited.clone();
    m.operators
        .expect_operator_by_enrolment()
        .returning(move |_| Ok(Some((stale.clone(), now() - Duration::seconds(1)))));
    m.passwords.expect_hash().never();
    let e = m
        .service()
        .enrol(
            token.expose(),
            "long enough pass",
            "long enough pass",
            &code,
            None,
            None,
        )
        .await;
    assert!(matches!(e, Err(EnrolError::NotValid)), "{e:?}");

    // Wrong code.
    let mut m = Mocks::new();
    let live = invited.clone();
    m.operators
        .expect_operator_by_enrolment()
        .returning(move |_| Ok(Some((live.clone(), now() + Duration::hours(1)))));
    m.passwords.expect_hash().never();
    let e = m
        .service()
        .enrol(
            token.expose(),
            "long enough pass",
            "long enough pass",
            "000000",
            None,
            None,
        )
        .await;
    assert_ne!(code, "000000");
    assert!(matches!(e, Err(EnrolError::WrongCode)), "{e:?}");

    // Weak password.
    let mut m = Mocks::new();
    let live = invited.clone();
    m.operators
        .expect_operator_by_enrolment()
        .returning(move |_| Ok(Some((live.clone(), now() + Duration::hours(1)))));
    let e = m
        .service()
        .enrol(token.expose(), "short", "short", &code, None, None)
        .await;
    assert!(
        matches!(e, Err(EnrolError::Password(PasswordError::TooShort))),
        "{e:?}"
    );

    // Good: the hash and the step are stored with the audit entry.
    let mut m = Mocks::new();
    let live = invited.clone();
    m.operators
        .expect_operator_by_enrolment()
        .with(eq(token.key()))
        .returning(move |_| Ok(Some((live.clone(), now() + Duration::hours(1)))));
    m.passwords
        .expect_hash()
        .returning(|_| Ok(PasswordHash("$argon2id$new".to_owned())));
    let step = u64::try_from(now().timestamp() / 30).unwrap_or(0);
    m.operators
        .expect_complete_enrolment()
        .withf(move |_, key, hash, s, _, audit| {
            *key == BrowserSecret::parse(&"b".repeat(43))
                .map(|t| t.key())
                .unwrap_or(TokenHash([0; 32]))
                && hash.0 == "$argon2id$new"
                && *s == step
                && audit.action == AuditAction::OperatorEnrolled
        })
        .returning(|_, _, _, _, _, _| Ok(true));
    let enrolled = m
        .service()
        .enrol(
            token.expose(),
            "long enough pass",
            "long enough pass",
            &code,
            None,
            None,
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(enrolled.status, OperatorStatus::Active);
}

#[tokio::test]
async fn the_enrolment_page_writes_nothing_and_shows_the_secret() {
    let mut m = Mocks::new();
    let invited = Operator {
        status: OperatorStatus::Invited,
        ..active("ann@example.com")
    };
    m.operators
        .expect_operator_by_enrolment()
        .returning(move |_| Ok(Some((invited.clone(), now() + Duration::hours(3)))));
    m.operators.expect_complete_enrolment().never();
    let view = m
        .service()
        .enrolment(&"c".repeat(43))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(view.totp_base32.expose(), &secret().base32());
    assert!(view.otpauth_uri.expose().contains("ann%40example.com"));
    let malformed = Mocks::new().service().enrolment("short").await;
    assert!(matches!(malformed, Err(EnrolError::NotValid)));
}

#[tokio::test]
async fn invitations_refuse_duplicates_and_bad_addresses() {
    let mut m = Mocks::new();
    m.operators
        .expect_insert_operator()
        .withf(|operator, _, expires, audit| {
            operator.status == OperatorStatus::Invited
                && *expires == now() + Duration::hours(24)
                && audit.action == AuditAction::OperatorCreated
                && audit.actor.name() == "cli:root"
        })
        .returning(|_, _, _, _| Ok(false));
    let e = m
        .service()
        .invite(
            "ann@example.com",
            Role::Admin,
            &AuditContext::cli(Some("root")),
        )
        .await;
    assert!(matches!(e, Err(OperatorAdminError::Exists)), "{e:?}");
    let e = Mocks::new()
        .service()
        .invite("nope", Role::Admin, &AuditContext::cli(None))
        .await;
    assert!(matches!(e, Err(OperatorAdminError::InvalidEmail)), "{e:?}");
}

#[tokio::test]
async fn admins_cannot_change_or_disable_themselves_from_the_console() {
    let me = active("ann@example.com");
    let mut m = Mocks::new();
    let found = me.clone();
    m.operators
        .expect_operator_by_email()
        .returning(move |_| Ok(Some(found.clone())));
    m.operators.expect_disable_operator().never();
    m.operators.expect_change_role().never();
    let service = m.service();
    let context = Authenticated {
        operator: me.clone(),
        session: Session {
            key: TokenHash([0; 32]),
            operator_id: me.id,
            created_at: now(),
            last_seen_at: now(),
            expires_at: now(),
            client_address: None,
        },
    }
    .audit_context(None, None);
    assert!(matches!(
        service.disable("ann@example.com", &context).await,
        Err(OperatorAdminError::OwnAccount)
    ));
    assert!(matches!(
        service
            .change_role("ann@example.com", Role::Viewer, &context)
            .await,
        Err(OperatorAdminError::OwnAccount)
    ));
}

#[tokio::test]
async fn disabling_ends_sessions_through_the_store_with_an_audit_entry() {
    let mut m = Mocks::new();
    let found = active("bob@example.com");
    let id = found.id;
    m.operators
        .expect_operator()
        .with(eq(id))
        .returning(move |_| Ok(Some(found.clone())));
    m.operators
        .expect_disable_operator()
        .withf(move |target, _, audit| {
            *target == id
                && audit.action == AuditAction::OperatorDisabled
                && audit
                    .before
                    .as_ref()
                    .is_some_and(|b| b["status"] == "active")
                && audit
                    .after
                    .as_ref()
                    .is_some_and(|a| a["status"] == "disabled")
        })
        .times(1)
        .returning(|_, _, _| Ok(true));
    let disabled = m
        .service()
        .disable(&id.to_string(), &AuditContext::cli(None))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(disabled.status, OperatorStatus::Disabled);
}

#[tokio::test]
async fn an_operator_sets_its_own_time_zone_with_an_audit_entry_naming_both_zones() {
    let me = active("ann@example.com");
    let id = me.id;
    let mut m = Mocks::new();
    m.operators
        .expect_set_time_zone()
        .withf(move |target, zone, audit| {
            *target == id
                && zone.name() == "America/Toronto"
                && audit.action == AuditAction::OperatorTimeZoneSet
                && audit
                    .before
                    .as_ref()
                    .is_some_and(|b| b["time_zone"] == "UTC")
                && audit
                    .after
                    .as_ref()
                    .is_some_and(|a| a["time_zone"] == "America/Toronto")
        })
        .times(1)
        .returning(|_, _, _| Ok(true));
    let service = m.service();
    let context = AuditContext::cli(None);
    let changed = service
        .set_time_zone(&me, " America/Toronto ", &context)
        .await
        .map(|o| o.time_zone.name());
    assert_eq!(changed.ok(), Some("America/Toronto"));
}

#[tokio::test]
async fn an_unknown_or_unchanged_time_zone_writes_nothing() {
    let me = active("ann@example.com");
    let mut m = Mocks::new();
    m.operators.expect_set_time_zone().never();
    let service = m.service();
    let context = AuditContext::cli(None);
    assert!(matches!(
        service.set_time_zone(&me, "Mars/Olympus_Mons", &context).await,
        Err(OperatorAdminError::UnknownTimeZone(name)) if name == "Mars/Olympus_Mons"
    ));
    assert!(matches!(
        service.set_time_zone(&me, &"x".repeat(10_000), &context).await,
        Err(OperatorAdminError::UnknownTimeZone(name)) if name.len() == 64
    ));
    assert!(matches!(
        service.set_time_zone(&me, "UTC", &context).await,
        Err(OperatorAdminError::Unchanged(_))
    ));
}

#[tokio::test]
async fn a_time_zone_the_store_did_not_change_is_reported_unchanged() {
    let me = active("ann@example.com");
    let mut m = Mocks::new();
    m.operators
        .expect_set_time_zone()
        .times(1)
        .returning(|_, _, _| Ok(false));
    let service = m.service();
    assert!(matches!(
        service
            .set_time_zone(&me, "Europe/Berlin", &AuditContext::cli(None))
            .await,
        Err(OperatorAdminError::Unchanged(_))
    ));
}
