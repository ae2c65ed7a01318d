//! The console's overview (`/`): every role reads it, no session is sent to sign in; its
//! numbers are those of what the test created (today's payouts by status and the chart's table,
//! the balance, the KYC queue, files and returns, a failing webhook endpoint but not the
//! subaccounts without a webhook URL; in sandbox mode no cut-offs, in production mode the
//! rail's next one); the merchant's text is escaped.

use std::sync::Arc;
use std::time::Duration;

use adapters_sandbox::SandboxNotifier;
use app_actix::production::Production;
use app_actix::production_config::ProductionSettings;
use domain::operators::{Role, SessionPolicy};
use serde_json::json;

use crate::console::{Browser, console_settings, enrol, sign_in, spawn_console_app};
use crate::helpers::{spawn_production_app, subaccount, tenant};
use crate::webhook_sink::WebhookSink;

const NAME: &str = "<script>alert(1)</script> & Co";
const ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt; &amp; Co";

#[tokio::test]
async fn every_role_reads_the_overview_with_the_numbers_of_what_happened() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();

    // A merchant whose webhook endpoint answers 500, two payouts of 12.34 AUD today.
    let merchant = tenant(&app.admin, NAME).await;
    let sink = WebhookSink::start(&[500]);
    app.admin
        .set_webhook(subaccount(&merchant), &sink.url)
        .await
        .unwrap();
    app.admin
        .fund(subaccount(&merchant), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&merchant, "ada@example.com", true, true).await;
    for _ in 0..2 {
        let created = app
            .post(
                &merchant,
                "/api/payout/single",
                &json!({"receiver_id": receiver, "account_id": account, "amount": 1234, "currency": "AUD"}),
            )
            .await;
        assert_eq!(created.status, 200, "{}", created.body);
    }
    let (available, pending) = app.aud_balance(&merchant).await;
    // One receiver waiting for KYC, of a subaccount without a webhook URL (its events are
    // given up at once: not a failing endpoint).
    app.create_receiver(&app.b, "waiting@example.com").await;
    assert!(!sink.wait_for(1, Duration::from_secs(20)).await.is_empty());

    let today = chrono::Utc::now()
        .date_naive()
        .format("%Y-%m-%d")
        .to_string();
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    // The worker records the 500 just after the sink answers it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let page = loop {
        let page = as_viewer.get("/").await;
        assert_eq!(page.status, 200, "{}", page.body);
        if page.body.contains("No endpoint is failing.") && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        break page;
    };
    let body = &page.body;

    // Today: two pending payouts, linked to the search of them.
    assert!(
        body.contains(&format!(
            "<a href=\"/payouts?status=pending&amp;from={today}&amp;to={today}\"><span class=\"badge info\">pending</span> 2</a>"
        )),
        "{body}"
    );
    // The chart: its summary and today's row of its table (pending, total).
    assert!(body.contains("role=\"img\""));
    assert!(
        body.contains("2 in all (2 pending); the most, 2,"),
        "{body}"
    );
    let row_start = format!("<th scope=\"row\"><time datetime=\"{today}\">");
    let row = &body[body.find(&row_start).unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(
        row.ends_with("<td class=\"num\">2</td><td class=\"num\">2</td>"),
        "{row}"
    );
    // The balance, in the table of balances.
    let money = |minor: i64| format!("{}.{:02} AUD", minor / 100, minor % 100);
    assert!(
        body.contains(&format!(
            "<td class=\"num\">{}</td><td class=\"num\">{}</td>",
            money(available),
            money(pending)
        )),
        "{body}"
    );
    assert!(pending >= 2 * 1234);
    // The KYC queue, files awaiting the bank and returns.
    assert!(body.contains("<strong>1</strong> receiver waiting for a decision."));
    assert!(body.contains("The oldest has waited "));
    assert!(body.contains("<strong>0</strong> bank files sent"));
    assert!(body.contains("Every file sent has been answered."));
    assert!(body.contains("<strong>0</strong> payments sent back"));
    assert!(body.contains("Sandbox mode: no rail has cut-offs."));
    // The failing endpoint: the merchant's, retrying after the 500; not tenant B's.
    assert!(
        body.contains("<strong>1</strong> subaccount with webhook events being retried"),
        "{body}"
    );
    let failing = &body[body.find("id=\"failing-caption\"").unwrap()..];
    assert!(failing.contains(&merchant.subaccount_id));
    assert!(!failing.contains(&app.b.subaccount_id));
    // Merchant text escaped wherever it shows.
    assert!(body.matches(ESCAPED).count() >= 2, "balances and failing");
    assert!(!body.contains("<script>alert(1)"));

    // Every role reads it; no session is sent to sign in.
    for (email, role) in [
        ("operator@example.com", Role::Operator),
        ("admin@example.com", Role::Admin),
    ] {
        let who = enrol(&app, email, role).await;
        let mut browser = sign_in(&console, &who).await;
        let page = browser.get("/").await;
        assert_eq!(page.status, 200, "{role:?}");
        assert!(page.body.contains("Payouts per day, last 30 days"));
        assert!(page.body.contains(ESCAPED));
    }
    let anonymous = Browser::new(&console).get("/").await;
    assert_eq!(anonymous.status, 303);
    assert!(
        anonymous
            .location()
            .is_some_and(|to| to.starts_with("/login"))
    );
}

#[tokio::test]
async fn in_production_mode_the_overview_shows_each_rails_next_cutoff() {
    let drop = tempfile::tempdir().unwrap();
    let (outbound, inbound) = (drop.path().join("out"), drop.path().join("in"));
    std::fs::create_dir_all(&outbound).unwrap();
    std::fs::create_dir_all(&inbound).unwrap();
    let settings = ProductionSettings::parse(
        &crate::production_support::config(&outbound, &inbound),
        std::path::Path::new("payoutd.toml"),
        &|_| None,
    )
    .unwrap_or_else(|problems| panic!("{problems:#?}"));
    let production = Production::build(
        crate::production_support::open_every_day(settings),
        Arc::new(SandboxNotifier::new()),
    )
    .unwrap();
    let app = spawn_production_app(production, |config| {
        config.console = Some(console_settings(SessionPolicy::default()));
    })
    .await;
    let console = app.console.clone().unwrap();
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut browser = sign_in(&console, &viewer).await;
    let page = browser.get("/").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let body = &page.body;
    assert!(!body.contains("Sandbox mode"), "{body}");
    // The one rail (EUR, a cut-off every minute): its next cut-off within the minute, nothing
    // waiting for it.
    let table = &body[body.find("id=\"cutoffs-caption\"").unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<td>EUR</td>"), "{table}");
    assert!(table.contains(", in 0 min</td>"), "{table}");
    assert!(
        table.contains("<td class=\"num\">0</td><td class=\"num\">0</td>"),
        "{table}"
    );
    assert_eq!(
        table.matches("<tr>").count(),
        2,
        "a header and the one rail"
    );
}
