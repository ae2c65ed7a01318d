//! The operator console in a real headless Chromium (Debian's `chromium` driven by its
//! `chromedriver` over WebDriver, with fantoccini), against a real payoutd with its console on a
//! listener of its own, everything on 127.0.0.1.
//!
//! An admin is created with the CLI's use case, opens the enrolment link, sets a password and
//! enrols TOTP (the code computed from the key the page shows), signs in, approves a receiver
//! in the KYC queue, resends a webhook event, opens a payout's story from the payouts list,
//! finds its actions in the audit log and signs out; with
//! JavaScript off, the pages that only read still work. The receiver's confirmation page (on
//! the API's listener) is opened from its link and confirms. Every page seen is checked with
//! axe-core (vendored, injected over WebDriver: no serious or critical violation) and
//! screenshotted under `target/console/` at 1280 px and at 390 px. Without chromedriver or
//! Chromium (and not under `cargo xtask test`, which installs them as root) the tests say so
//! and are skipped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod browser;
mod driver;

// Shares the black-box helpers; not every helper is used here.
#[allow(dead_code)]
#[path = "../api/helpers.rs"]
mod helpers;

// Production mode's helpers (rails every minute, payees confirmed through their link).
#[allow(dead_code)]
#[path = "../api/production_support.rs"]
mod production_support;

use app_actix::console_config::ConsoleConfig;
use app_actix::console_server::operator_service;
use app_actix::startup::build_store;
use chrono::Utc;
use domain::audit::{AuditAction, AuditContext};
use domain::operators::{Role, SessionPolicy, TotpSecret};
use serde_json::json;

use browser::{Browser, Javascript};
use driver::{Driver, Tools};
use helpers::{TestApp, spawn_app_with, subaccount};

const PASSWORD: &str = "a long enough passphrase";

fn console_config() -> ConsoleConfig {
    ConsoleConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        tls: None,
        public_url: "http://console.test".to_owned(),
        sessions: SessionPolicy::default(),
    }
}

async fn spawn_console_app() -> TestApp {
    spawn_app_with(|config| config.console = Some(console_config())).await
}

/// `payoutd admin create-operator`'s use case: the path of the one-time enrolment link.
async fn invite(app: &TestApp, email: &str, role: Role) -> String {
    let store = std::sync::Arc::new(build_store(&app.config).unwrap());
    let invitation = operator_service(&store, SessionPolicy::default())
        .unwrap()
        .invite(email, role, &AuditContext::cli(Some("browser test")))
        .await
        .unwrap();
    format!("/enrol/{}", invitation.token.expose())
}

/// Opens the enrolment link, reads the key as a person types it into an authenticator app,
/// and sets the password with the app's current code. Returns the secret.
async fn enrol(browser: &Browser, link: &str) -> TotpSecret {
    browser.visit(link, "Set up your console account").await;
    browser.check("enrol").await;
    let key = browser.find("code.secret-once").await.text().await.unwrap();
    let secret = TotpSecret::from_base32(key.trim()).expect("the page shows a base32 key");
    browser.type_into("#password", PASSWORD).await;
    browser.type_into("#confirmation", PASSWORD).await;
    browser
        .type_into("#code", &secret.code_at(Utc::now()))
        .await;
    browser.click("form button[type=submit]").await;
    browser.heading("Your account is ready").await;
    secret
}

/// Signs in on the sign-in page with the password and the next time step's code (enrolment
/// used the current one, which may not be used twice; a step either side is accepted).
async fn sign_in(browser: &Browser, email: &str, secret: &TotpSecret) {
    browser.type_into("#email", email).await;
    browser.type_into("#password", PASSWORD).await;
    let code = secret.code_at(Utc::now() + chrono::Duration::seconds(30));
    browser.type_into("#code", &code).await;
    browser.click("form button[type=submit]").await;
    browser.heading("Overview").await;
}

/// A payout of tenant A to a receiver whose KYC and account are done: its id.
async fn payout(app: &TestApp) -> String {
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let payee = app.payee(&app.a, "payee@example.com", true, true).await;
    production_support::pay(app, &payee, "AUD", 1000).await
}

#[tokio::test]
async fn an_admin_enrols_signs_in_decides_a_kyc_resends_a_webhook_sees_the_audit_and_signs_out() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let app = spawn_console_app().await;
    let console = app.console.clone().unwrap();
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let event = app
        .admin
        .events(subaccount(&app.a), None, None, None, 10)
        .await
        .unwrap()
        .first()
        .unwrap()
        .id
        .to_string();
    let payout = payout(&app).await;
    let link = invite(&app, "ann@example.com", Role::Admin).await;
    let driver = Driver::start(&tools);
    let browser = Browser::open(&driver, &tools, &console, Javascript::On, "").await;

    // The console's content security policy is in force in this browser: an inline script
    // does not run, though WebDriver's own scripts (axe-core's injection) do.
    let secret = enrol(&browser, &link).await;
    let inline = browser
        .run(
            "const s = document.createElement('script'); \
             s.textContent = 'window.inlineRan = true;'; \
             document.head.appendChild(s); \
             return window.inlineRan === true;",
        )
        .await;
    assert_eq!(
        inline,
        json!(false),
        "default-src 'self' blocks inline scripts"
    );
    browser.check("enrolled").await;

    browser.click_link("Sign in").await;
    browser.heading("Sign in").await;
    browser.check("login").await;
    sign_in(&browser, "ann@example.com", &secret).await;
    browser.check("overview").await;
    browser.docs_screenshot("overview").await;

    // The KYC queue: the waiting receiver, approved with a reason.
    browser.click_link("KYC queue").await;
    browser.heading("KYC queue").await;
    browser.text_appears(&receiver).await;
    browser.check("kyc").await;
    browser.docs_screenshot("kyc-queue").await;
    browser
        .type_into(&format!("#reason-{receiver}"), "passport checked")
        .await;
    browser
        .click(&format!(
            "form[action='/kyc/{receiver}'] button[value=completed]"
        ))
        .await;
    browser
        .text_appears("Approved: the receiver is active")
        .await;
    browser.text_appears("Nobody is waiting").await;
    browser.check("kyc-decided").await;

    // A webhook event queued again by its id.
    browser.click_link("Webhooks").await;
    browser.heading("Webhooks").await;
    browser.check("webhooks").await;
    browser.type_into("#event", &event).await;
    browser
        .click("form[action='/webhooks/resend'] button")
        .await;
    browser
        .wait_for(&format!(
            "//div[contains(@class,'notice')]//code[normalize-space()='{event}']"
        ))
        .await;
    browser.check("webhooks-queued").await;

    // A payout found in the list and its story.
    browser.click_link("Payouts").await;
    browser.heading("Payouts").await;
    browser.check("payouts").await;
    browser.click_link(&payout).await;
    browser.heading(&format!("Payout {payout}")).await;
    browser.check("payout").await;
    browser.docs_screenshot("payout-story").await;

    // The ledger check, run: the payout's hold balances.
    browser.click_link("Ledger check").await;
    browser.heading("Ledger check").await;
    browser.click("form[action='/ledger'] button").await;
    browser
        .text_appears("Every balance equals the sum of its ledger entries")
        .await;
    browser.check("ledger").await;

    // The pages an admin also reads.
    browser.click_link("Bank files").await;
    browser.heading("Bank files").await;
    browser.check("files").await;
    browser.click_link("Bank answers").await;
    browser.heading("Bank answers").await;
    browser.check("answers").await;
    browser.click_link("Funding").await;
    browser.heading("Funding").await;
    browser.check("funding").await;

    // A subaccount: its page, a new API key's secret shown once, its webhook deliveries.
    let sub = app.a.subaccount_id.clone();
    browser.click_link("Subaccounts").await;
    browser.heading("Subaccounts").await;
    browser.check("subaccounts").await;
    browser
        .click(&format!("a[href='/subaccounts/{sub}']"))
        .await;
    browser
        .wait_for("//h1[starts-with(normalize-space(), 'Subaccount ')]")
        .await;
    browser
        .click(&format!("form[action='/subaccounts/{sub}/keys'] button"))
        .await;
    browser
        .wait_for(
            "//p[contains(., 'Copy its secret now')]/following-sibling::p[@class='secret-once']",
        )
        .await;
    browser.check("subaccount-key-issued").await;
    browser.docs_screenshot("subaccount").await;
    browser
        .click_link("Events and their delivery attempts")
        .await;
    browser.heading("Webhooks").await;
    browser.text_appears("receiverCreated").await;
    browser.check("webhooks-log").await;
    browser.docs_screenshot("webhooks").await;

    browser.click_link("Operators").await;
    browser.heading("Operators").await;
    browser.check("operators").await;

    // Each action has its row in the audit log, with who did it.
    browser.click_link("Audit log").await;
    browser.heading("Audit log").await;
    browser.check("audit").await;
    browser.docs_screenshot("audit-log").await;
    for (action, object) in [
        (AuditAction::KycDecided, receiver.as_str()),
        (AuditAction::WebhookResent, event.as_str()),
        (AuditAction::ApiKeyIssued, "pk_"),
        (AuditAction::SignedIn, ""),
        (AuditAction::OperatorEnrolled, ""),
    ] {
        let row = format!(
            "//tbody/tr[td[code[normalize-space()='{}']]][contains(., 'ann@example.com')]\
             [contains(., '{object}')]",
            action.as_str()
        );
        browser.wait_for(&row).await;
    }

    // Signing out ends the session: a protected page sends to sign-in again.
    browser.click("form[action='/logout'] button").await;
    browser.heading("Sign in").await;
    browser.text_appears("You are signed out.").await;
    browser.visit("/kyc", "Sign in").await;
    assert_eq!(browser.path().await, "/login?next=%2Fkyc");
    browser.check("signed-out").await;

    // The check can fail: a field without a label, added to the page, is found.
    browser
        .run(
            "const i = document.createElement('input'); i.type = 'text'; \
             document.querySelector('main').appendChild(i); return null;",
        )
        .await;
    let found = browser.axe_serious("planted").await;
    assert!(
        found
            .iter()
            .any(|line| line.starts_with("label (critical)")),
        "axe-core misses an unlabelled field: {found:?}"
    );
    browser.close().await;
}

#[tokio::test]
async fn with_javascript_off_the_pages_that_read_still_work() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let app = spawn_console_app().await;
    let console = app.console.clone().unwrap();
    let receiver = app.create_receiver(&app.a, "grace@example.com").await;
    let link = invite(&app, "bea@example.com", Role::Admin).await;
    let driver = Driver::start(&tools);
    let browser = Browser::open(&driver, &tools, &console, Javascript::Off, "nojs-").await;

    // Plain forms: enrolment and sign-in need no script.
    let secret = enrol(&browser, &link).await;
    let htmx = browser.run("return typeof window.htmx;").await;
    assert_eq!(htmx, json!("undefined"), "the page's script did not run");
    browser.visit("/login", "Sign in").await;
    browser.check("login").await;
    sign_in(&browser, "bea@example.com", &secret).await;
    for (path, heading) in [
        ("/", "Overview"),
        ("/kyc", "KYC queue"),
        ("/payouts", "Payouts"),
        ("/files", "Bank files"),
        ("/ledger?run=1", "Ledger check"),
        ("/answers", "Bank answers"),
        ("/confirmations", "Confirmation requests"),
        ("/webhooks", "Webhooks"),
        ("/subaccounts", "Subaccounts"),
        ("/funding", "Funding"),
        ("/operators", "Operators"),
        ("/audit", "Audit log"),
        ("/account", "Your account"),
    ] {
        browser.visit(path, heading).await;
        let htmx = browser.run("return typeof window.htmx;").await;
        assert_eq!(
            htmx,
            json!("undefined"),
            "{path}: the page's script did not run"
        );
        let name = match path.trim_start_matches('/').split('?').next() {
            Some("") | None => "overview",
            Some(other) => other,
        };
        browser.check(name).await;
    }
    browser.visit("/kyc", "KYC queue").await;
    browser.text_appears(&receiver).await;
    // Links are plain links: the navigation works without htmx.
    browser.click_link("Audit log").await;
    browser.heading("Audit log").await;
    browser.close().await;
}

#[tokio::test]
async fn the_receiver_confirms_bank_details_on_the_confirmation_page() {
    let Some(tools) = Tools::find() else {
        return;
    };
    let app = spawn_app_with(|_| {}).await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let payee = app.payee(&app.a, "ada@example.com", true, false).await;
    production_support::pay(&app, &payee, "AUD", 1000).await;
    let account = &payee.1;
    // The link the receiver was sent (the sandbox's notifier keeps it).
    let link = app.sandbox().notifier.sent()[0]
        .confirm_url
        .expose()
        .clone();
    let path = link.strip_prefix("http://payoutd.test").unwrap().to_owned();

    let driver = Driver::start(&tools);
    let browser = Browser::open(&driver, &tools, &app.base, Javascript::On, "").await;
    browser.visit(&path, "Confirm your bank details").await;
    browser.text_appears("123 ***").await;
    browser.check("confirm").await;
    browser.click("form button[type=submit]").await;
    browser.heading("Bank details confirmed").await;
    browser.check("confirmed").await;
    browser.close().await;
    let read = app
        .get(&app.a, &format!("/api/receiver-account/{account}"))
        .await;
    assert_eq!(
        read.body["payload"]["confirm_status"], "confirmed",
        "{}",
        read.body
    );
}

#[tokio::test]
async fn an_operator_follows_a_payout_to_its_bank_file_in_production_mode() {
    use app_actix::production::Production;
    use app_actix::production_config::ProductionSettings;
    use production_support::{config, file_now, open_every_day, pay, payee, payout, wait_for};

    let Some(tools) = Tools::find() else {
        return;
    };
    // Production mode: a SEPA rail with a cut-off every minute, its bank drop a directory.
    let drop = tempfile::tempdir().unwrap();
    let (outbound, inbound) = (drop.path().join("out"), drop.path().join("in"));
    std::fs::create_dir_all(&outbound).unwrap();
    std::fs::create_dir_all(&inbound).unwrap();
    let settings = ProductionSettings::parse(
        &config(&outbound, &inbound),
        std::path::Path::new("payoutd.toml"),
        &|_| None,
    )
    .unwrap_or_else(|problems| panic!("{problems:#?}"));
    let notifier = std::sync::Arc::new(adapters_sandbox::SandboxNotifier::new());
    let production = Production::build(open_every_day(settings), notifier.clone()).unwrap();
    let app = helpers::spawn_production_app(production, |config| {
        config.console = Some(console_config());
    })
    .await;
    app.admin
        .fund(subaccount(&app.a), "EUR", "100000", "test funding")
        .await
        .unwrap();
    let to = payee(
        &app,
        &notifier,
        "lise@example.com",
        "eur/sepa",
        json!({"iban": "DE89 3704 0044 0532 0130 00", "bic": "DEUTDEFF"}),
    )
    .await;
    let paid = pay(&app, &to, "EUR", 4_200).await;
    file_now(&app, "eur/sepa");
    wait_for("the payout to be filed", async || {
        payout(&app, &paid).await["status"] != "pending"
    })
    .await;
    wait_for("the file in the bank's drop", async || {
        std::fs::read_dir(&outbound).unwrap().count() == 1
    })
    .await;

    let link = invite(&app, "ops@example.com", Role::Operator).await;
    let driver = Driver::start(&tools);
    let console = app.console.clone().unwrap();
    let browser = Browser::open(&driver, &tools, &console, Javascript::On, "production-").await;
    let secret = enrol(&browser, &link).await;
    browser.click_link("Sign in").await;
    browser.heading("Sign in").await;
    sign_in(&browser, "ops@example.com", &secret).await;

    // The payout found in the list, its story, and from it the bank file it was written into.
    browser.click_link("Payouts").await;
    browser.heading("Payouts").await;
    browser.click_link(&paid).await;
    browser.heading(&format!("Payout {paid}")).await;
    browser.text_appears("Bank file").await;
    browser.check("payout-filed").await;
    browser.click("dl.facts a[href^='/files/']").await;
    browser.wait_for("//h1[contains(., '-eur-sepa.xml')]").await;
    browser.text_appears(&paid).await;
    browser
        .wait_for("//form[starts-with(@action, '/files/')]//button")
        .await;
    browser.check("bank-file").await;
    browser.close().await;
}
