//! The console's subaccount pages: an admin adds a subaccount, funds it, sets its fee, policy
//! and webhook (through the delivery worker's address guard), issues a key whose secret is
//! shown once and revokes it; each change is audited with the operator. A viewer reads the
//! profile without a form; names are escaped; a key of another subaccount is not revoked from
//! this one's page. The webhooks page shows a subaccount's events and resends one and a range.

use domain::audit::{AuditAction, AuditLog, AuditQuery};
use domain::operators::{Role, SessionPolicy};

use crate::console::{Browser, enrol, sign_in, spawn_console_app};

/// The newest 500 audit entries.
async fn audit_log(app: &crate::helpers::TestApp) -> Vec<domain::audit::AuditEntry> {
    let store = app_actix::startup::build_store(&app.config).unwrap();
    store
        .list(&AuditQuery {
            limit: 500,
            ..AuditQuery::default()
        })
        .await
        .unwrap()
}

/// The id in a `/subaccounts/<id>?done=…` location.
fn created_id(location: &str) -> String {
    location
        .trim_start_matches("/subaccounts/")
        .split('?')
        .next()
        .unwrap()
        .to_owned()
}

/// The text of the first `<p class="secret-once">` on a page.
fn secret_on(body: &str) -> String {
    body.split("<p class=\"secret-once\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap_or_else(|| panic!("no secret on the page: {body}"))
        .to_owned()
}

async fn post(
    browser: &mut Browser,
    path: &str,
    csrf: &str,
    fields: &[(&str, &str)],
) -> crate::console::Page {
    let mut form = vec![("csrf", csrf)];
    form.extend_from_slice(fields);
    browser.post(path, &form).await
}

#[tokio::test]
async fn an_admin_sets_a_subaccount_up_and_every_change_is_audited() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let admin = enrol(&app, "admin@example.com", Role::Admin).await;
    let mut browser = sign_in(&console, &admin).await;
    let csrf = browser.get("/subaccounts").await.input("csrf").unwrap();

    let created = post(
        &mut browser,
        "/subaccounts",
        &csrf,
        &[
            ("name", "<script>alert(1)</script> Pty"),
            ("email", "ops@merchant.example"),
        ],
    )
    .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let id = created_id(created.location().unwrap());
    let profile_path = format!("/subaccounts/{id}");

    let page = browser.get(&format!("{profile_path}?done=created")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt; Pty")
    );
    assert!(!page.body.contains("<script>alert(1)"));
    assert!(page.body.contains("The subaccount was created"));
    let list = browser.get("/subaccounts?name=%3Cscript").await;
    assert!(list.body.contains(&id), "found by name: {}", list.body);
    assert!(
        !browser
            .get("/subaccounts?name=nobody-has-this")
            .await
            .body
            .contains(&id)
    );

    let funded = post(
        &mut browser,
        &format!("{profile_path}/fund"),
        &csrf,
        &[
            ("asset", "AUD"),
            ("amount", "125000"),
            ("reason", "opening float"),
        ],
    )
    .await;
    assert_eq!(
        funded.location(),
        Some(format!("{profile_path}?done=funded").as_str())
    );
    let fee = post(
        &mut browser,
        &format!("{profile_path}/fees"),
        &csrf,
        &[
            ("asset", "AUD"),
            ("fixed", "30"),
            ("percentage", "1.25"),
            ("min_amount", "50"),
        ],
    )
    .await;
    assert_eq!(fee.status, 303, "{}", fee.body);
    let bad_fee = post(
        &mut browser,
        &format!("{profile_path}/fees"),
        &csrf,
        &[
            ("asset", "AUD"),
            ("fixed", "-1"),
            ("percentage", "1"),
            ("min_amount", "0"),
        ],
    )
    .await;
    assert_eq!(bad_fee.status, 400);
    assert!(
        bad_fee.body.contains("Nothing was changed"),
        "{}",
        bad_fee.body
    );
    let policy = post(
        &mut browser,
        &format!("{profile_path}/policy"),
        &csrf,
        &[("policy", "v2")],
    )
    .await;
    assert_eq!(policy.status, 303, "{}", policy.body);

    let unknown = post(
        &mut browser,
        &format!("{profile_path}/policy"),
        &csrf,
        &[("policy", "v3")],
    )
    .await;
    assert_eq!(unknown.status, 400);
    assert!(
        unknown.body.contains("any, v2_for_posts or v2"),
        "{}",
        unknown.body
    );

    let page = browser.get(&profile_path).await.body;
    assert!(page.contains("1250.00 AUD"), "{page}");
    assert!(
        page.contains("1.25 %") && page.contains("0.50 AUD"),
        "{page}"
    );
    assert!(
        page.contains("v2: v2 signatures on every request"),
        "{page}"
    );

    // A key: its secret on the answer to the POST only.
    let issued = post(&mut browser, &format!("{profile_path}/keys"), &csrf, &[]).await;
    assert_eq!(issued.status, 200, "{}", issued.body);
    let secret = secret_on(&issued.body);
    assert!(secret.starts_with("sk_"), "{secret}");
    assert_eq!(issued.headers.get("cache-control").unwrap(), "no-store");
    let page = browser.get(&profile_path).await.body;
    assert!(!page.contains(&secret), "the secret is shown once");
    let api_key = page
        .split("<code>pk_")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .map(|rest| format!("pk_{rest}"))
        .unwrap();
    assert!(page.contains("active"));

    // The webhook URL goes through the worker's guard: an unspecified address is refused
    // whatever the deployment allows; a good one gets a secret shown once.
    let refused = post(
        &mut browser,
        &format!("{profile_path}/webhook"),
        &csrf,
        &[("url", "http://0.0.0.0:9/hooks")],
    )
    .await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.body.contains("invalid postback URL"),
        "{}",
        refused.body
    );
    let set = post(
        &mut browser,
        &format!("{profile_path}/webhook"),
        &csrf,
        &[("url", "http://127.0.0.1:9/payoutd")],
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let webhook_secret = secret_on(&set.body);
    assert!(webhook_secret.starts_with("whsec_"));
    let rotated = post(
        &mut browser,
        &format!("{profile_path}/webhook/rotate"),
        &csrf,
        &[("overlap_hours", "24")],
    )
    .await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    assert_ne!(secret_on(&rotated.body), webhook_secret);
    assert!(
        rotated
            .body
            .contains("the previous secret also signs until")
    );
    let too_long = post(
        &mut browser,
        &format!("{profile_path}/webhook/rotate"),
        &csrf,
        &[("overlap_hours", "100000")],
    )
    .await;
    assert_eq!(too_long.status, 400);

    // Another subaccount's key is not revoked from this page.
    let other_key = &app.a.api_key;
    let foreign = post(
        &mut browser,
        &format!("{profile_path}/keys/revoke"),
        &csrf,
        &[("api_key", other_key)],
    )
    .await;
    assert_eq!(foreign.status, 400, "{}", foreign.body);
    let revoked = post(
        &mut browser,
        &format!("{profile_path}/keys/revoke"),
        &csrf,
        &[("api_key", &api_key)],
    )
    .await;
    assert_eq!(
        revoked.location(),
        Some(format!("{profile_path}?done=revoked").as_str())
    );
    assert!(browser.get(&profile_path).await.body.contains("revoked"));

    // Every change is the admin's in the audit log, none with a secret.
    let entries = audit_log(&app).await;
    for action in [
        AuditAction::SubaccountCreated,
        AuditAction::Funded,
        AuditAction::FeeSet,
        AuditAction::SignaturePolicySet,
        AuditAction::ApiKeyIssued,
        AuditAction::WebhookSet,
        AuditAction::WebhookSecretRotated,
        AuditAction::ApiKeyRevoked,
    ] {
        let entry = entries
            .iter()
            .find(|e| e.action == action)
            .unwrap_or_else(|| panic!("no {action:?} entry"));
        assert_eq!(entry.actor.name(), "admin@example.com", "{action:?}");
    }
    let logged = format!("{entries:?}");
    assert!(!logged.contains(&secret) && !logged.contains(&webhook_secret));

    // A viewer reads the profile, with no form to change it.
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    let page = as_viewer.get(&profile_path).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("1250.00 AUD"));
    for form in ["/keys\"", "/fees\"", "/fund\"", "/policy\"", "/webhook\""] {
        assert!(!page.body.contains(&format!("{id}{form}")), "{form}");
    }
    assert_eq!(as_viewer.get("/subaccounts/not-an-id").await.status, 404);
    assert_eq!(
        as_viewer
            .get("/subaccounts/00000000-0000-4000-8000-000000000009")
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn an_operator_reads_a_subaccounts_deliveries_and_resends_one_and_a_range() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    app.create_receiver(&app.a, "first@example.com").await;
    app.create_receiver(&app.a, "second@example.com").await;
    let ops = enrol(&app, "ops@example.com", Role::Operator).await;
    let mut browser = sign_in(&console, &ops).await;
    let sub = app.a.subaccount_id.clone();

    let page = browser.get(&format!("/webhooks?subaccount={sub}")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("receiverCreated"), "{}", page.body);
    assert!(
        !page.body.contains("second@example.com"),
        "no payload on the page"
    );
    let csrf = page.input("csrf").unwrap();
    let event = page
        .body
        .split("name=\"event\" value=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let resent = browser
        .post(
            "/webhooks/resend",
            &[("csrf", &csrf), ("event", &event), ("subaccount", &sub)],
        )
        .await;
    assert_eq!(resent.status, 303, "{}", resent.body);
    assert_eq!(
        resent.location(),
        Some(format!("/webhooks?queued={event}&subaccount={sub}").as_str())
    );

    let today = chrono::Utc::now();
    let since = (today - chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    let until = (today + chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M")
        .to_string();
    let ranged = browser
        .post(
            "/webhooks/resend-range",
            &[
                ("csrf", &csrf),
                ("subaccount", &sub),
                ("since", &since),
                ("until", &until),
            ],
        )
        .await;
    assert_eq!(ranged.status, 303, "{}", ranged.body);
    let location = ranged.location().unwrap().to_owned();
    assert!(location.ends_with("&ranged=2"), "{location}");
    assert!(
        browser
            .get(&location)
            .await
            .body
            .contains("2 events are queued")
    );
    let backwards = browser
        .post(
            "/webhooks/resend-range",
            &[
                ("csrf", &csrf),
                ("subaccount", &sub),
                ("since", &until),
                ("until", &since),
            ],
        )
        .await;
    assert_eq!(backwards.status, 400);
    let garbled = browser
        .post(
            "/webhooks/resend-range",
            &[
                ("csrf", &csrf),
                ("subaccount", &sub),
                ("since", "soon"),
                ("until", &until),
            ],
        )
        .await;
    assert_eq!(garbled.status, 400);

    let entries = audit_log(&app).await;
    assert!(
        entries
            .iter()
            .any(|e| e.action == AuditAction::WebhookResent)
    );
    assert!(
        entries
            .iter()
            .any(|e| e.action == AuditAction::WebhooksResent)
    );

    // A viewer reads the log with no resend form.
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    let page = as_viewer.get(&format!("/webhooks?subaccount={sub}")).await;
    assert!(page.body.contains("receiverCreated"));
    assert!(!page.body.contains("/webhooks/resend"));
}

#[tokio::test]
async fn long_lists_page_to_older_rows_and_refuse_a_garbled_position() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let shown = console::pages::webhooks::EVENTS_SHOWN as usize;
    for n in 0..=shown {
        app.create_receiver(&app.a, &format!("r{n}@example.com"))
            .await;
    }
    let admin = enrol(&app, "admin@example.com", Role::Admin).await;
    let mut browser = sign_in(&console, &admin).await;
    let sub = app.a.subaccount_id.clone();

    let first = browser.get(&format!("/webhooks?subaccount={sub}")).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body.matches("receiverCreated").count(), shown);
    let older = first
        .body
        .split("<nav class=\"pager\" aria-label=\"Pages\"><a href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no link to older events: {}", first.body))
        .replace("&amp;", "&");
    assert!(
        older.starts_with(&format!("/webhooks?subaccount={sub}&before=")),
        "{older}"
    );
    let second = browser.get(&older).await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(second.body.matches("receiverCreated").count(), 1);
    assert!(!second.body.contains("Older events"), "{}", second.body);

    for list in [
        "/files?before=x".to_owned(),
        "/answers?before=x".to_owned(),
        "/confirmations?before=x".to_owned(),
        format!("/webhooks?subaccount={sub}&before=x"),
        "/audit?before=x".to_owned(),
    ] {
        let refused = browser.get(&list).await;
        assert_eq!(refused.status, 400, "{list}: {}", refused.body);
        assert!(
            refused.body.contains("page position"),
            "{list}: {}",
            refused.body
        );
    }
}
