//! Every console route against every role and no session (allowed or refused), the KYC queue
//! decided in the console with its audit entry, and no secret in any page.

use domain::audit::{AuditAction, AuditLog, AuditQuery};
use domain::operators::{Role, SessionPolicy};

use crate::console::{Browser, enrol, sign_in, spawn_console_app};

/// (method, path, least role allowed); `None`: any signed-in operator.
const ROUTES: &[(&str, &str, Option<Role>)] = &[
    ("GET", "/", Some(Role::Viewer)),
    ("GET", "/kyc", Some(Role::Viewer)),
    (
        "POST",
        "/kyc/00000000-0000-4000-8000-000000000001",
        Some(Role::Operator),
    ),
    ("GET", "/payouts", Some(Role::Viewer)),
    (
        "GET",
        "/payouts/00000000-0000-4000-8000-000000000001",
        Some(Role::Viewer),
    ),
    (
        "POST",
        "/payouts/00000000-0000-4000-8000-000000000001/cancel",
        Some(Role::Operator),
    ),
    ("GET", "/files", Some(Role::Viewer)),
    (
        "GET",
        "/files/00000000-0000-4000-8000-000000000001",
        Some(Role::Viewer),
    ),
    (
        "POST",
        "/files/00000000-0000-4000-8000-000000000001/download",
        Some(Role::Operator),
    ),
    ("GET", "/ledger?run=1", Some(Role::Viewer)),
    ("GET", "/answers", Some(Role::Viewer)),
    ("GET", "/confirmations", Some(Role::Viewer)),
    (
        "POST",
        "/confirmations/00000000-0000-4000-8000-000000000001/resend",
        Some(Role::Operator),
    ),
    ("GET", "/operators", Some(Role::Admin)),
    ("POST", "/operators", Some(Role::Admin)),
    (
        "POST",
        "/operators/00000000-0000-4000-8000-000000000001/role",
        Some(Role::Admin),
    ),
    (
        "POST",
        "/operators/00000000-0000-4000-8000-000000000001/disable",
        Some(Role::Admin),
    ),
    ("GET", "/audit", Some(Role::Admin)),
    ("GET", "/webhooks", Some(Role::Viewer)),
    ("POST", "/webhooks/resend", Some(Role::Operator)),
    ("GET", "/funding", Some(Role::Admin)),
    ("POST", "/funding", Some(Role::Admin)),
    ("GET", "/subaccounts", Some(Role::Viewer)),
    ("POST", "/subaccounts", Some(Role::Admin)),
    (
        "GET",
        "/subaccounts/00000000-0000-4000-8000-000000000001",
        Some(Role::Viewer),
    ),
    (
        "POST",
        "/subaccounts/00000000-0000-4000-8000-000000000001/fund",
        Some(Role::Admin),
    ),
    (
        "POST",
        "/subaccounts/00000000-0000-4000-8000-000000000001/fees",
        Some(Role::Admin),
    ),
    (
        "POST",
        "/subaccounts/00000000-0000-4000-8000-000000000001/policy",
        Some(Role::Admin),
    ),
    (
        "POST",
        "/subaccounts/00000000-0000-4000-8000-000000000001/keys",
        Some(Role::Admin),
    ),
    (
        "POST",
        "/subaccounts/00000000-0000-4000-8000-000000000001/keys/revoke",
        Some(Role::Admin),
    ),
    (
        "POST",
        "/subaccounts/00000000-0000-4000-8000-000000000001/webhook",
        Some(Role::Admin),
    ),
    (
        "POST",
        "/subaccounts/00000000-0000-4000-8000-000000000001/webhook/rotate",
        Some(Role::Admin),
    ),
    ("POST", "/webhooks/resend-range", Some(Role::Operator)),
    ("GET", "/account", Some(Role::Viewer)),
    ("POST", "/account/time-zone", Some(Role::Viewer)),
];

async fn call(browser: &mut Browser, method: &str, path: &str, csrf: &str) -> crate::console::Page {
    match method {
        "GET" => browser.get(path).await,
        _ => {
            browser
                .post(
                    path,
                    &[
                        ("csrf", csrf),
                        ("decision", "completed"),
                        ("role", "viewer"),
                        ("email", "new@example.com"),
                        ("event", "00000000-0000-4000-8000-000000000001"),
                        ("subaccount", "00000000-0000-4000-8000-000000000001"),
                        ("asset", "AUD"),
                        ("amount", "1"),
                        ("reason", "role table"),
                        // Every form parses; none of these changes anything (an empty name,
                        // an unknown subaccount, a range that is not one), so an allowed
                        // role is answered without a redirect.
                        ("name", ""),
                        ("fixed", "0"),
                        ("percentage", "0"),
                        ("min_amount", "0"),
                        ("policy", "v2"),
                        ("api_key", "pk_role_table"),
                        ("url", "http://127.0.0.1:9/role-table"),
                        ("overlap_hours", "1"),
                        ("since", "not a time"),
                        ("until", "not a time"),
                        ("time_zone", "Not/A_Zone"),
                    ],
                )
                .await
        }
    }
}

#[tokio::test]
async fn every_route_is_allowed_exactly_to_the_roles_the_table_names() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    for role in Role::ALL {
        let who = enrol(&app, &format!("{}@example.com", role.as_str()), role).await;
        let mut browser = sign_in(&console, &who).await;
        let csrf = browser.get("/").await.input("csrf").unwrap();
        for (method, path, least) in ROUTES {
            let page = call(&mut browser, method, path, &csrf).await;
            let allowed = least.is_none_or(|least| role >= least);
            if allowed {
                assert!(
                    page.status != 403 && page.status != 303,
                    "{role} {method} {path}: {} {}",
                    page.status,
                    page.body
                );
            } else {
                assert_eq!(page.status, 403, "{role} {method} {path}: {}", page.body);
                assert!(page.body.contains("may not"), "{}", page.body);
            }
        }
        // The navigation offers only what the role may open.
        let home = browser.get("/").await.body;
        assert_eq!(
            home.contains("href=\"/operators\""),
            role == Role::Admin,
            "{role}"
        );
        assert_eq!(
            home.contains("href=\"/audit\""),
            role == Role::Admin,
            "{role}"
        );
    }
    // Without a session every route sends to sign-in (and nothing runs).
    let mut nobody = Browser::new(&console);
    for (method, path, _) in ROUTES {
        let page = call(&mut nobody, method, path, "x").await;
        assert_eq!(page.status, 303, "{method} {path}");
        assert!(
            page.location().unwrap().starts_with("/login"),
            "{method} {path}"
        );
    }
    // A wrong CSRF token is refused on every form, even for an admin.
    let admin = enrol(&app, "root@example.com", Role::Admin).await;
    let mut browser = sign_in(&console, &admin).await;
    for (method, path, _) in ROUTES.iter().filter(|(m, _, _)| *m == "POST") {
        let page = call(&mut browser, method, path, "forged").await;
        assert_eq!(page.status, 403, "{method} {path}");
        assert!(page.body.contains("Form expired"), "{}", page.body);
    }
}

#[tokio::test]
async fn an_operator_approves_a_kyc_in_the_queue_and_the_audit_log_shows_it() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    let queue = as_viewer.get("/kyc").await;
    assert!(queue.body.contains(&receiver), "{}", queue.body);
    assert!(!queue.body.contains("Approve"), "a viewer gets no buttons");

    let ops = enrol(&app, "ops@example.com", Role::Operator).await;
    let mut browser = sign_in(&console, &ops).await;
    let queue = browser.get("/kyc").await;
    let csrf = queue.input("csrf").unwrap();
    let done = browser
        .post(
            &format!("/kyc/{receiver}"),
            &[
                ("csrf", &csrf),
                ("decision", "completed"),
                ("reason", "passport <checked>"),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location(), Some("/kyc?done=completed"));
    let after = browser.get("/kyc?done=completed").await;
    assert!(!after.body.contains(&receiver));
    assert!(after.body.contains("Nobody is waiting"));
    let read = app.get(&app.a, &format!("/api/receiver/{receiver}")).await;
    assert_eq!(
        read.body["payload"]["kyc_status"], "completed",
        "{}",
        read.body
    );
    // Deciding again changes nothing and says so.
    let again = browser
        .post(
            &format!("/kyc/{receiver}"),
            &[("csrf", &csrf), ("decision", "failed")],
        )
        .await;
    assert_eq!(again.status, 400);
    assert!(again.body.contains("already decided"), "{}", again.body);

    let store = app_actix::startup::build_store(&app.config).unwrap();
    let entries = store
        .list(&AuditQuery {
            action: Some(AuditAction::KycDecided),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].actor.name(), "ops@example.com");
    assert_eq!(entries[0].object_id, receiver);
    assert_eq!(
        entries[0].after.as_ref().unwrap()["reason"],
        "passport <checked>"
    );
    // The admin sees it in the audit log, escaped.
    let admin = enrol(&app, "admin@example.com", Role::Admin).await;
    let mut as_admin = sign_in(&console, &admin).await;
    let log = as_admin.get("/audit?action=receiver.kyc").await;
    assert_eq!(log.status, 200);
    assert!(log.body.contains("ops@example.com") && log.body.contains(&receiver));
    assert!(log.body.contains("passport &lt;checked&gt;") && !log.body.contains("<checked>"));
}

#[tokio::test]
async fn no_page_shows_a_secret_a_session_token_or_an_api_secret() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    // A merchant-set field with markup, shown in the KYC queue.
    let mut body = crate::helpers::receiver_body(&app.a, "xss@example.com");
    body["reference"] = "<script>alert(1)</script>".into();
    let created = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(created.status, 200, "{}", created.body);
    app.create_receiver(&app.a, "bob@example.com").await;
    let admin = enrol(&app, "admin@example.com", Role::Admin).await;
    let mut browser = sign_in(&console, &admin).await;
    let session = browser
        .cookies
        .get("__Host-payoutd_session")
        .cloned()
        .unwrap();
    // An operator added in the console: its link is shown once, on the page that made it.
    let csrf = browser.get("/operators").await.input("csrf").unwrap();
    let made = browser
        .post(
            "/operators",
            &[
                ("csrf", &csrf),
                ("email", "new@example.com"),
                ("role", "viewer"),
            ],
        )
        .await;
    assert_eq!(made.status, 200, "{}", made.body);
    let link = made
        .body
        .split("/enrol/")
        .nth(1)
        .and_then(|r| r.split('<').next())
        .unwrap()
        .to_owned();
    let mut secrets = vec![
        app.a.api_secret.clone(),
        app.b.api_secret.clone(),
        session.clone(),
        link.clone(),
        admin.secret.base32(),
    ];
    secrets.retain(|s| s.len() > 8);
    for path in [
        "/",
        "/kyc",
        "/payouts",
        "/files",
        "/ledger?run=1",
        "/answers",
        "/confirmations",
        "/webhooks",
        "/funding",
        "/operators",
        "/audit",
        "/login",
    ] {
        let page = browser.get(path).await;
        assert_eq!(page.status, 200, "{path}");
        for secret in &secrets {
            assert!(
                !page.body.contains(secret.as_str()),
                "{path} shows a secret"
            );
        }
        assert!(
            !page.body.contains("<script>alert"),
            "{path} is not escaped"
        );
    }
}

#[tokio::test]
async fn an_operator_resends_a_webhook_event_in_the_console_and_the_audit_log_shows_it() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    app.create_receiver(&app.a, "ada@example.com").await;
    let events = app
        .admin
        .events(crate::helpers::subaccount(&app.a), None, None, None, 10)
        .await
        .unwrap();
    let event = events.first().unwrap().id.to_string();

    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    let page = as_viewer.get("/webhooks").await;
    assert_eq!(page.status, 200);
    assert!(
        !page.body.contains("Resend the event"),
        "a viewer gets no form"
    );

    let ops = enrol(&app, "ops@example.com", Role::Operator).await;
    let mut browser = sign_in(&console, &ops).await;
    let csrf = browser.get("/webhooks").await.input("csrf").unwrap();
    let done = browser
        .post("/webhooks/resend", &[("csrf", &csrf), ("event", &event)])
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    let back = done.location().unwrap().to_owned();
    assert_eq!(back, format!("/webhooks?queued={event}"));
    assert!(browser.get(&back).await.body.contains(&event));
    // An unknown event or a malformed id is refused in words and writes nothing.
    for (raw, says) in [
        (
            "00000000-0000-4000-8000-000000000009",
            "No event has this id",
        ),
        ("not-an-id", "is a UUID"),
    ] {
        let refused = browser
            .post("/webhooks/resend", &[("csrf", &csrf), ("event", raw)])
            .await;
        assert_eq!(refused.status, 400, "{raw}");
        assert!(refused.body.contains(says), "{}", refused.body);
    }

    let store = app_actix::startup::build_store(&app.config).unwrap();
    let entries = store
        .list(&AuditQuery {
            action: Some(AuditAction::WebhookResent),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(entries.len(), 1, "one entry, for the event that was queued");
    assert_eq!(entries[0].actor.name(), "ops@example.com");
    assert_eq!(entries[0].object_id, event);
    assert!(entries[0].request_id.is_some(), "the console's request id");
    assert!(entries[0].client_address.is_some(), "the client's address");
}

#[tokio::test]
async fn an_admin_funds_a_subaccount_with_a_reason_and_the_audit_log_shows_it() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let subaccount = app.a.subaccount_id.clone();
    let (before, _) = app.aud_balance(&app.a).await;

    let admin = enrol(&app, "admin@example.com", Role::Admin).await;
    let mut browser = sign_in(&console, &admin).await;
    let csrf = browser.get("/funding").await.input("csrf").unwrap();
    let done = browser
        .post(
            "/funding",
            &[
                ("csrf", &csrf),
                ("subaccount", &subaccount),
                ("asset", "AUD"),
                ("amount", "2500"),
                ("reason", "top-up <wire 42>"),
            ],
        )
        .await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.location(), Some("/funding?done=1"));
    assert_eq!(app.aud_balance(&app.a).await.0, before + 2_500);
    // Without a reason, or for no subaccount, nothing is credited and the page says why.
    for (reason, target, says) in [
        (" ", subaccount.as_str(), "reason"),
        ("x", "00000000-0000-4000-8000-000000000009", "No subaccount"),
    ] {
        let refused = browser
            .post(
                "/funding",
                &[
                    ("csrf", &csrf),
                    ("subaccount", target),
                    ("asset", "AUD"),
                    ("amount", "1"),
                    ("reason", reason),
                ],
            )
            .await;
        assert_eq!(refused.status, 400, "{says}");
        assert!(refused.body.contains(says), "{}", refused.body);
    }
    assert_eq!(app.aud_balance(&app.a).await.0, before + 2_500);

    let store = app_actix::startup::build_store(&app.config).unwrap();
    let entries = store
        .list(&AuditQuery {
            action: Some(AuditAction::Funded),
            actor: Some("admin@example.com".to_owned()),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].object_id, subaccount);
    let after = entries[0].after.as_ref().unwrap();
    assert_eq!(after["reason"], "top-up <wire 42>");
    assert_eq!(after["amount"], 2_500);
    assert!(entries[0].request_id.is_some());
}
