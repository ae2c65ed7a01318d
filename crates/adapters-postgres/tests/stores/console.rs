//! The console's stores: operators (sealed TOTP secrets, one e-mail each, enrolment once),
//! sessions (by token hash; ended by sign-out and by disabling the operator), sign-in failure
//! windows, and the audit log (written with each change, append-only, listed newest first).

use chrono::{Duration, Utc};
use domain::audit::{AuditAction, AuditContext, AuditLog, AuditQuery};
use domain::ids::OperatorId;
use domain::operators::ports::{LoginThrottleStore, OperatorStore, SessionStore};
use domain::operators::{
    BrowserSecret, Operator, OperatorEmail, OperatorStatus, OperatorTimeZone, PasswordHash, Role,
    SessionPolicy, ThrottleSubject, TotpSecret,
};
use domain::ports::{Clock, IdGenerator};

use crate::support::{Fixture, RandomIds};

struct Now;

impl Clock for Now {
    fn now(&self) -> chrono::DateTime<Utc> {
        Utc::now()
    }
}

fn ids() -> Box<dyn IdGenerator> {
    Box::new(RandomIds)
}

fn now_clock() -> Box<dyn Clock> {
    Box::new(Now)
}

fn operator(email: &str) -> Operator {
    Operator {
        id: OperatorId::from_uuid(uuid::Uuid::new_v4()),
        email: OperatorEmail::parse(email).unwrap(),
        role: Role::Operator,
        status: OperatorStatus::Invited,
        password_hash: None,
        totp_secret: TotpSecret::from_bytes(vec![3; 20]).unwrap(),
        last_totp_step: None,
        time_zone: OperatorTimeZone::UTC,
        // PostgreSQL keeps microseconds.
        created_at: chrono::SubsecRound::trunc_subsecs(Utc::now(), 6),
        enrolled_at: None,
        disabled_at: None,
    }
}

fn context() -> AuditContext {
    AuditContext::cli(Some("tester"))
}

fn entry(action: AuditAction, object: &str) -> domain::audit::AuditEntry {
    let ids = ids();
    let clock = now_clock();
    context().entry(
        ids.as_ref(),
        clock.as_ref(),
        action,
        "operator",
        object,
        None,
        None,
    )
}

#[tokio::test]
async fn an_operator_is_stored_with_its_secret_sealed_once_per_e_mail_and_enrols_once() {
    let fx = Fixture::new().await;
    let ann = operator("ann@example.com");
    let token = BrowserSecret::generate(ids().as_ref());
    let expires = Utc::now() + Duration::hours(24);
    let audit = entry(AuditAction::OperatorCreated, &ann.id.to_string());
    assert!(
        fx.store
            .insert_operator(&ann, &token.key(), expires, &audit)
            .await
            .unwrap()
    );
    // The e-mail is taken: nothing written, not even the audit entry.
    let again = operator("ann@example.com");
    let audit2 = entry(AuditAction::OperatorCreated, &again.id.to_string());
    assert!(
        !fx.store
            .insert_operator(&again, &token.key(), expires, &audit2)
            .await
            .unwrap()
    );
    let listed = fx
        .store
        .list(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, audit.id);
    assert_eq!(listed[0].actor.name(), "cli:tester");

    // The secret is sealed: the raw column is not the secret.
    let sealed = fx
        .count_where(
            "SELECT count(*) AS n FROM operators WHERE id = $1 \
             AND position('\\x030303030303'::bytea in totp_secret_ciphertext) = 0",
            ann.id.as_uuid(),
        )
        .await;
    assert_eq!(sealed, 1);
    let (found, found_expires) = fx
        .store
        .operator_by_enrolment(&token.key())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found, ann);
    assert_eq!(found_expires.timestamp_micros(), expires.timestamp_micros());

    let hash = PasswordHash("$argon2id$v=19$m=1,t=1,p=1$x$y".to_owned());
    let enrol = entry(AuditAction::OperatorEnrolled, &ann.id.to_string());
    let now = Utc::now();
    assert!(
        fx.store
            .complete_enrolment(ann.id, &token.key(), &hash, 42, now, &enrol)
            .await
            .unwrap()
    );
    // The link is spent.
    assert!(
        !fx.store
            .complete_enrolment(ann.id, &token.key(), &hash, 43, now, &enrol)
            .await
            .unwrap()
    );
    assert!(
        fx.store
            .operator_by_enrolment(&token.key())
            .await
            .unwrap()
            .is_none()
    );
    let active = fx
        .store
        .operator_by_email("ann@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(active.status, OperatorStatus::Active);
    assert_eq!(active.password_hash, Some(hash));
    assert_eq!(active.last_totp_step, Some(42));

    // Each TOTP step once, and only forward.
    assert!(!fx.store.use_totp_step(ann.id, 42).await.unwrap());
    assert!(fx.store.use_totp_step(ann.id, 43).await.unwrap());
    assert!(!fx.store.use_totp_step(ann.id, 43).await.unwrap());
}

#[tokio::test]
async fn an_expired_enrolment_link_enrols_nobody() {
    let fx = Fixture::new().await;
    let bob = operator("bob@example.com");
    let token = BrowserSecret::generate(ids().as_ref());
    let expires = Utc::now() - Duration::seconds(1);
    let audit = entry(AuditAction::OperatorCreated, "bob");
    fx.store
        .insert_operator(&bob, &token.key(), expires, &audit)
        .await
        .unwrap();
    let hash = PasswordHash("$argon2id$h".to_owned());
    let enrol = entry(AuditAction::OperatorEnrolled, "bob");
    assert!(
        !fx.store
            .complete_enrolment(bob.id, &token.key(), &hash, 1, Utc::now(), &enrol)
            .await
            .unwrap()
    );
}

async fn active_operator(fx: &Fixture, email: &str) -> Operator {
    let op = operator(email);
    let token = BrowserSecret::generate(ids().as_ref());
    let expires = Utc::now() + Duration::hours(1);
    fx.store
        .insert_operator(
            &op,
            &token.key(),
            expires,
            &entry(AuditAction::OperatorCreated, email),
        )
        .await
        .unwrap();
    let hash = PasswordHash("$argon2id$h".to_owned());
    fx.store
        .complete_enrolment(
            op.id,
            &token.key(),
            &hash,
            1,
            Utc::now(),
            &entry(AuditAction::OperatorEnrolled, email),
        )
        .await
        .unwrap();
    fx.store.operator(op.id).await.unwrap().unwrap()
}

#[tokio::test]
async fn an_operators_time_zone_is_utc_until_set_and_each_change_is_audited_once() {
    let fx = Fixture::new().await;
    let ann = active_operator(&fx, "ann@example.com").await;
    assert_eq!(ann.time_zone, OperatorTimeZone::UTC);
    let toronto = OperatorTimeZone::parse("America/Toronto").unwrap();
    let set = |zone| {
        let store = fx.store.clone();
        async move {
            store
                .set_time_zone(
                    ann.id,
                    zone,
                    &entry(AuditAction::OperatorTimeZoneSet, "ann"),
                )
                .await
                .unwrap()
        }
    };
    assert!(set(toronto).await);
    assert!(!set(toronto).await, "the same zone again changes nothing");
    assert_eq!(
        fx.store.operator(ann.id).await.unwrap().unwrap().time_zone,
        toronto
    );
    let audited = fx
        .store
        .list(&AuditQuery {
            action: Some(AuditAction::OperatorTimeZoneSet),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(audited.len(), 1);
    let nobody = OperatorId::from_uuid(uuid::Uuid::new_v4());
    assert!(
        !fx.store
            .set_time_zone(
                nobody,
                toronto,
                &entry(AuditAction::OperatorTimeZoneSet, "x")
            )
            .await
            .unwrap()
    );
    // A name the tz database no longer has reads as UTC instead of failing the sign-in.
    let mut raw = fx.raw().await;
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query("UPDATE operators SET time_zone = 'Mars/Olympus_Mons' WHERE id = $1")
            .bind::<diesel::sql_types::Uuid, _>(ann.id.as_uuid()),
        &mut raw,
    )
    .await
    .unwrap();
    assert_eq!(
        fx.store.operator(ann.id).await.unwrap().unwrap().time_zone,
        OperatorTimeZone::UTC
    );
}

#[tokio::test]
async fn sessions_are_found_by_hash_with_their_operator_as_it_is_now_and_end() {
    let fx = Fixture::new().await;
    let ann = active_operator(&fx, "ann@example.com").await;
    let token = BrowserSecret::generate(ids().as_ref());
    let session =
        SessionPolicy::default().start(&token, ann.id, Some("192.0.2.1".to_owned()), Utc::now());
    fx.store
        .create_session(&session, &entry(AuditAction::SignedIn, "ann"))
        .await
        .unwrap();
    let (found, op) = fx.store.session(&token.key()).await.unwrap().unwrap();
    assert_eq!(found.operator_id, ann.id);
    assert_eq!(op.role, Role::Operator);
    // The token itself is stored nowhere.
    let mut raw = fx.raw().await;
    #[derive(diesel::QueryableByName)]
    struct Hit {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let hit: Hit = diesel_async::RunQueryDsl::get_result(
        diesel::sql_query(
            "SELECT count(*) AS n FROM operator_sessions WHERE position(convert_to($1, 'UTF8') in token_hash) > 0",
        )
        .bind::<diesel::sql_types::Text, _>(token.expose()),
        &mut raw,
    )
    .await
    .unwrap();
    assert_eq!(hit.n, 0);

    // A role change shows with the session at once.
    assert!(
        fx.store
            .change_role(
                ann.id,
                Role::Admin,
                &entry(AuditAction::OperatorRoleChanged, "ann")
            )
            .await
            .unwrap()
    );
    assert!(
        !fx.store
            .change_role(
                ann.id,
                Role::Admin,
                &entry(AuditAction::OperatorRoleChanged, "ann")
            )
            .await
            .unwrap()
    );
    assert_eq!(
        fx.store
            .session(&token.key())
            .await
            .unwrap()
            .unwrap()
            .1
            .role,
        Role::Admin
    );

    let later = Utc::now() + Duration::minutes(2);
    fx.store.touch_session(&token.key(), later).await.unwrap();
    let touched = fx.store.session(&token.key()).await.unwrap().unwrap().0;
    assert_eq!(
        touched.last_seen_at.timestamp_micros(),
        later.timestamp_micros()
    );

    assert!(
        fx.store
            .end_session(
                &token.key(),
                Utc::now(),
                Some(&entry(AuditAction::SignedOut, "ann"))
            )
            .await
            .unwrap()
    );
    assert!(fx.store.session(&token.key()).await.unwrap().is_none());
    assert!(
        !fx.store
            .end_session(&token.key(), Utc::now(), None)
            .await
            .unwrap()
    );
    let actions: Vec<AuditAction> = fx
        .store
        .list(&AuditQuery {
            limit: 50,
            ..AuditQuery::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.action)
        .collect();
    // Newest first; the refused second role change wrote nothing.
    assert_eq!(
        actions,
        [
            AuditAction::SignedOut,
            AuditAction::OperatorRoleChanged,
            AuditAction::SignedIn,
            AuditAction::OperatorEnrolled,
            AuditAction::OperatorCreated,
        ]
    );
}

#[tokio::test]
async fn disabling_an_operator_ends_all_its_sessions() {
    let fx = Fixture::new().await;
    let ann = active_operator(&fx, "ann@example.com").await;
    let tokens: Vec<BrowserSecret> = (0..2)
        .map(|_| BrowserSecret::generate(ids().as_ref()))
        .collect();
    for token in &tokens {
        let session = SessionPolicy::default().start(token, ann.id, None, Utc::now());
        fx.store
            .create_session(&session, &entry(AuditAction::SignedIn, "ann"))
            .await
            .unwrap();
    }
    assert!(
        fx.store
            .disable_operator(
                ann.id,
                Utc::now(),
                &entry(AuditAction::OperatorDisabled, "ann")
            )
            .await
            .unwrap()
    );
    assert!(
        !fx.store
            .disable_operator(
                ann.id,
                Utc::now(),
                &entry(AuditAction::OperatorDisabled, "ann")
            )
            .await
            .unwrap()
    );
    for token in &tokens {
        assert!(fx.store.session(&token.key()).await.unwrap().is_none());
    }
    assert_eq!(
        fx.store.operator(ann.id).await.unwrap().unwrap().status,
        OperatorStatus::Disabled
    );
}

#[tokio::test]
async fn failures_count_in_windows_that_start_again_once_over() {
    let fx = Fixture::new().await;
    let account = ThrottleSubject::account("ann@example.com");
    let address = ThrottleSubject::address("192.0.2.9".parse().unwrap());
    let t0 = Utc::now();
    let window = Duration::minutes(15);
    for i in 0..3 {
        fx.store
            .record_failure(
                &[(account.clone(), window), (address.clone(), window)],
                t0 + Duration::seconds(i),
            )
            .await
            .unwrap();
    }
    let windows = fx
        .store
        .failure_windows(&[account.clone(), address.clone()])
        .await
        .unwrap();
    assert_eq!(windows.len(), 2);
    for (_, w) in &windows {
        assert_eq!(w.failures, 3);
        assert_eq!(w.started_at.timestamp_micros(), t0.timestamp_micros());
    }
    // After the window, a failure starts a new one.
    let later = t0 + Duration::minutes(16);
    fx.store
        .record_failure(&[(account.clone(), window)], later)
        .await
        .unwrap();
    let windows = fx
        .store
        .failure_windows(std::slice::from_ref(&account))
        .await
        .unwrap();
    assert_eq!(windows[0].1.failures, 1);
    assert_eq!(
        windows[0].1.started_at.timestamp_micros(),
        later.timestamp_micros()
    );
    fx.store.clear_failures(&account).await.unwrap();
    assert!(
        fx.store
            .failure_windows(&[account])
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(fx.store.failure_windows(&[address]).await.unwrap().len(), 1);
}

#[tokio::test]
async fn the_audit_log_refuses_changes_and_pages_newest_first() {
    let fx = Fixture::new().await;
    let clock = now_clock();
    let ids = ids();
    let mut written = Vec::new();
    for i in 0..5 {
        let e = context().entry(
            ids.as_ref(),
            clock.as_ref(),
            AuditAction::Funded,
            "subaccount",
            format!("s{i}"),
            None,
            Some(serde_json::json!({"amount": i})),
        );
        fx.store.append(&e).await.unwrap();
        written.push(e);
    }
    let first = fx
        .store
        .list(&AuditQuery {
            limit: 2,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(first.len(), 2);
    let last = first.last().unwrap();
    let second = fx
        .store
        .list(&AuditQuery {
            limit: 10,
            before: Some(last.id),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(first.len() + second.len(), 5);
    assert!(second.iter().all(|e| !first.iter().any(|f| f.id == e.id)));
    let about = fx
        .store
        .list(&AuditQuery {
            limit: 10,
            object_id: Some("s3".to_owned()),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(about.len(), 1);
    assert_eq!(about[0].after, Some(serde_json::json!({"amount": 3})));
    let by_actor = fx
        .store
        .list(&AuditQuery {
            limit: 10,
            actor: Some("tester".to_owned()),
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(by_actor.len(), 5);
    let mut raw = fx.raw().await;
    for sql in [
        "UPDATE audit_log SET actor_name = 'x'",
        "DELETE FROM audit_log",
    ] {
        let refused = diesel_async::RunQueryDsl::execute(diesel::sql_query(sql), &mut raw).await;
        let message = format!("{:?}", refused.unwrap_err());
        assert!(message.contains("append-only"), "{message}");
    }
}
