//! The console's payouts: the search across subaccounts (filters, an id opens its payout, bad
//! fields said in words) and a payout's story with its events, ledger and batch, merchant text
//! escaped; tenancy does not hide a subaccount's payouts from operators, who see them all.

use domain::operators::{Role, SessionPolicy};
use serde_json::json;

use crate::console::{enrol, sign_in, spawn_console_app};
use crate::helpers::{Tenant, TestApp, subaccount};

/// A paid-for payout of `tenant` with `reference` and `note`; returns its id.
async fn payout(app: &TestApp, tenant: &Tenant, email: &str, reference: &str) -> String {
    app.admin
        .fund(subaccount(tenant), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(tenant, email, true, true).await;
    let created = app
        .post(
            tenant,
            "/api/payout/single",
            &json!({
                "receiver_id": receiver, "account_id": account, "amount": 1234,
                "currency": "AUD", "reference": reference,
                "note": "<b>bold</b> & <img src=x onerror=alert(2)>",
            }),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_viewer_finds_payouts_of_every_subaccount_and_reads_a_payouts_story() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let first = payout(&app, &app.a, "ada@example.com", "<script>alert(1)</script>").await;
    let second = payout(&app, &app.b, "bob@example.com", "inv-b").await;
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut browser = sign_in(&console, &viewer).await;

    // Every subaccount's payouts, newest first, merchant text escaped.
    let list = browser.get("/payouts").await;
    assert_eq!(list.status, 200, "{}", list.body);
    let (at_first, at_second) = (
        list.body.find(&first).unwrap(),
        list.body.find(&second).unwrap(),
    );
    assert!(at_second < at_first, "newest first");
    assert!(list.body.contains("12.34 AUD"));
    assert!(list.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!list.body.contains("<script>alert"));
    assert!(
        list.body
            .contains("href=\"/payouts\" aria-current=\"page\"")
    );

    // Filters: a subaccount, a reference, a status.
    let only_b = browser
        .get(&format!("/payouts?subaccount={}", app.b.subaccount_id))
        .await;
    assert!(only_b.body.contains(&second) && !only_b.body.contains(&first));
    let by_reference = browser.get("/payouts?reference=inv-b").await;
    assert!(by_reference.body.contains(&second) && !by_reference.body.contains(&first));
    let cancelled = browser.get("/payouts?status=cancelled").await;
    assert!(cancelled.body.contains("No payout matches."));

    // Bad fields are refused in words; nothing is read.
    let bad = browser
        .get("/payouts?status=paid&subaccount=acct&from=29%2F11%2F2026")
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body
            .contains("No payout status is called &quot;paid&quot;."),
        "{}",
        bad.body
    );
    assert!(bad.body.contains("The subaccount is not a subaccount id."));
    assert!(bad.body.contains("From is not a day (YYYY-MM-DD)."));
    let forged = browser.get("/payouts?after=forged").await;
    assert_eq!(forged.status, 400);

    // An id opens its payout.
    let opened = browser.get(&format!("/payouts?id=+{first}+")).await;
    assert_eq!(opened.status, 303);
    assert_eq!(
        opened.location(),
        Some(format!("/payouts/{first}").as_str())
    );

    // The story: the facts, the money held, the event with its deliveries, the batch.
    let story = browser.get(&format!("/payouts/{first}")).await;
    assert_eq!(story.status, 200, "{}", story.body);
    assert!(story.body.contains("What happened"));
    assert!(story.body.contains("12.34 AUD"));
    assert!(story.body.contains("payoutCreated"), "{}", story.body);
    assert!(story.body.contains("payout_hold"), "{}", story.body);
    assert!(story.body.contains(&app.a.subaccount_id));
    assert!(
        story
            .body
            .contains("&lt;b&gt;bold&lt;/b&gt; &amp; &lt;img src=x onerror=alert(2)&gt;")
    );
    assert!(!story.body.contains("<img src=x") && !story.body.contains("<b>bold"));
    assert!(!story.body.contains("<script>alert"));

    // Unknown and malformed ids are not found.
    for path in [
        "/payouts/00000000-0000-4000-8000-000000000001".to_owned(),
        "/payouts/not-an-id".to_owned(),
    ] {
        let missing = browser.get(&path).await;
        assert_eq!(missing.status, 404, "{path}");
    }
}

#[tokio::test]
async fn a_long_search_pages_without_gaps_or_repeats() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    app.admin
        .fund(subaccount(&app.a), "AUD", "10000000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "many@example.com", true, true).await;
    let mut made = Vec::new();
    for n in 0..55 {
        let created = app
            .post(
                &app.a,
                "/api/payout/single",
                &json!({"receiver_id": receiver, "account_id": account, "amount": 100 + n,
                        "currency": "AUD"}),
            )
            .await;
        assert_eq!(created.status, 200, "{}", created.body);
        made.push(
            created.body["payload"]["payout_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut browser = sign_in(&console, &viewer).await;
    let first = browser.get(&format!("/payouts?receiver={receiver}")).await;
    let next = first
        .body
        .split("href=\"/payouts?")
        .filter_map(|rest| rest.split('"').next())
        .find(|query| query.contains("after="))
        .unwrap()
        .replace("&amp;", "&");
    assert!(next.contains(&format!("receiver={receiver}")), "{next}");
    let second = browser.get(&format!("/payouts?{next}")).await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert!(!second.body.contains("Older payouts"), "two pages hold 55");
    for id in &made {
        let shown = usize::from(first.body.contains(&format!("/payouts/{id}\"")))
            + usize::from(second.body.contains(&format!("/payouts/{id}\"")));
        assert_eq!(shown, 1, "{id} is on exactly one page");
    }
}

#[tokio::test]
async fn an_operator_cancels_a_pending_payout_and_its_hold_goes_back() {
    use domain::audit::{AuditAction, AuditLog, AuditQuery};

    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let id = payout(&app, &app.b, "ada@example.com", "to cancel").await;
    let (available, pending) = app.aud_balance(&app.b).await;
    assert!(pending > 0, "the payout holds money");

    // A viewer sees no form and may not cancel.
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    let page = as_viewer.get(&format!("/payouts/{id}")).await;
    assert!(!page.body.contains("Cancel this payout"), "{}", page.body);
    let csrf = page.input("csrf").unwrap();
    let refused = as_viewer
        .post(&format!("/payouts/{id}/cancel"), &[("csrf", &csrf)])
        .await;
    assert_eq!(refused.status, 403);

    let ops = enrol(&app, "ops@example.com", Role::Operator).await;
    let mut as_ops = sign_in(&console, &ops).await;
    let page = as_ops.get(&format!("/payouts/{id}")).await;
    assert!(page.body.contains("Cancel this payout"), "{}", page.body);
    let csrf = page.input("csrf").unwrap();
    let cancelled = as_ops
        .post(&format!("/payouts/{id}/cancel"), &[("csrf", &csrf)])
        .await;
    assert_eq!(cancelled.status, 303, "{}", cancelled.body);
    let page = as_ops.get(cancelled.location().unwrap()).await;
    assert!(
        page.body.contains("The payout was cancelled"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("Cancel this payout"));
    assert_eq!(app.aud_balance(&app.b).await, (available + pending, 0));
    let api = app.get(&app.b, &format!("/api/payout/{id}")).await;
    assert_eq!(api.body["payload"]["status"], "cancelled", "{}", api.body);

    // Once is all: a second cancel is refused in words and changes nothing.
    let again = as_ops
        .post(&format!("/payouts/{id}/cancel"), &[("csrf", &csrf)])
        .await;
    assert_eq!(again.status, 400);
    assert!(
        again.body.contains("can no longer be cancelled"),
        "{}",
        again.body
    );

    let store = app_actix::startup::build_store(&app.config).unwrap();
    let entries = store
        .list(&AuditQuery {
            action: Some(AuditAction::PayoutCancelled),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(entries.len(), 1, "one entry, for the one cancel");
    assert_eq!(entries[0].actor.name(), "ops@example.com");
    assert_eq!(entries[0].object_id, id);
    assert_eq!(entries[0].before.as_ref().unwrap()["status"], "pending");
}
