//! A probe of the console as an attacker would try it: stored XSS through every field a
//! merchant (or an operator) can set, shown on every page that shows it; session fixation; and
//! clickjacking on every page. (CSRF, cross-site posts, enumeration and brute force are
//! probed in `console.rs`.)

use domain::operators::{Role, SessionPolicy};

use crate::console::{Browser, enrol, sign_in, sign_in_from, spawn_console_app};

/// Breaks out of an attribute and of text, in one string.
const PAYLOAD: &str = "\"'><script>alert(1)</script><img src=x onerror=alert(2)>";

/// What must never appear in a page: the payload's markup, unescaped.
fn assert_inert(path: &str, body: &str) {
    for raw in ["<script>alert(1)", "<img src=x", "onerror=alert(2)>"] {
        assert!(!body.contains(raw), "{path} renders {raw:?} unescaped");
    }
}

#[tokio::test]
async fn merchant_text_is_inert_on_every_page_that_shows_it() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    app.admin
        .fund(
            domain::ids::SubaccountId::parse(&app.a.subaccount_id).unwrap(),
            "AUD",
            "100000",
            "probe",
        )
        .await
        .unwrap();

    // A receiver with the payload in every free-text field the API takes; the fields whose
    // rules refuse it are told apart from those that keep it.
    let mut kept = Vec::new();
    for field in [
        "state",
        "postcode",
        "address",
        "city",
        "first_name",
        "last_name",
    ] {
        let mut body = crate::helpers::receiver_body(&app.a, &format!("{field}@probe.example"));
        body[field] = serde_json::Value::String(PAYLOAD.to_owned());
        let reply = app.post(&app.a, "/api/receiver", &body).await;
        if reply.status == 200 {
            kept.push(field);
        }
    }
    assert!(
        kept.contains(&"state"),
        "free text reaches the console: {kept:?}"
    );

    // A payout whose reference and note carry the payload.
    let (receiver, account) = app.payee(&app.a, "payee@probe.example", true, false).await;
    let paid = app
        .post(
            &app.a,
            "/api/payout/single",
            &serde_json::json!({
                "receiver_id": receiver, "account_id": account, "amount": 1000,
                "currency": "AUD", "reference": PAYLOAD, "note": PAYLOAD,
            }),
        )
        .await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    let payout = paid.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // An operator's text too: a subaccount's name, a funding reason, an operator's e-mail is
    // parsed as one, so it cannot carry markup.
    let admin = enrol(&app, "admin@example.com", Role::Admin).await;
    let mut browser = sign_in(&console, &admin).await;
    let csrf = browser.get("/subaccounts").await.input("csrf").unwrap();
    let created = browser
        .post("/subaccounts", &[("csrf", &csrf), ("name", PAYLOAD)])
        .await;
    assert_eq!(created.status, 303, "{}", created.body);
    let named = created
        .location()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_owned();
    let funded = browser
        .post(
            &format!("{named}/fund"),
            &[
                ("csrf", &csrf),
                ("asset", "AUD"),
                ("amount", "1"),
                ("reason", PAYLOAD),
            ],
        )
        .await;
    assert_eq!(funded.status, 303, "{}", funded.body);

    let sub = &app.a.subaccount_id;
    let pages = [
        "/".to_owned(),
        "/kyc".to_owned(),
        "/payouts".to_owned(),
        format!("/payouts/{payout}"),
        format!("/payouts?reference={}", urlencoding(PAYLOAD)),
        "/subaccounts".to_owned(),
        named.clone(),
        format!("/subaccounts/{sub}"),
        format!("/webhooks?subaccount={sub}"),
        "/audit".to_owned(),
        "/confirmations".to_owned(),
    ];
    let mut escaped_somewhere = 0;
    for path in &pages {
        let page = browser.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert_inert(path, &page.body);
        if page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;") {
            escaped_somewhere += 1;
        }
    }
    // The payload is shown (escaped) on the payout's story, its search, the subaccount list
    // and page, and the audit log: the probe looked where it is.
    assert!(escaped_somewhere >= 5, "shown on {escaped_somewhere} pages");
    // A value reflected from the query is escaped too.
    let reflected = browser
        .get(&format!("/subaccounts?name={}", urlencoding(PAYLOAD)))
        .await;
    assert_inert("/subaccounts?name=", &reflected.body);
    let reflected = browser
        .get(&format!("/webhooks?subaccount={}", urlencoding(PAYLOAD)))
        .await;
    assert_inert("/webhooks?subaccount=", &reflected.body);
}

fn urlencoding(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn a_session_id_planted_before_sign_in_is_never_the_one_signed_in() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let who = enrol(&app, "fixated@example.com", Role::Viewer).await;
    // The attacker's chosen cookie, in the victim's browser before sign-in.
    let planted = "attacker-chosen-session-id-0123456789abcdef";
    let mut victim = Browser::new(&console);
    victim
        .cookies
        .insert("__Host-payoutd_session".to_owned(), planted.to_owned());
    assert_eq!(
        victim.get("/").await.status,
        303,
        "a planted id is no session"
    );
    // The victim signs in from that browser: the server sets an id of its own.
    let mut victim = sign_in_from(victim, &who).await;
    let issued = victim
        .cookies
        .get("__Host-payoutd_session")
        .cloned()
        .unwrap();
    assert_ne!(issued, planted);
    assert_eq!(victim.get("/").await.status, 200);
    // The attacker's copy of the planted id opens nothing.
    let mut attacker = Browser::new(&console);
    attacker
        .cookies
        .insert("__Host-payoutd_session".to_owned(), planted.to_owned());
    let page = attacker.get("/").await;
    assert_eq!(page.status, 303);
    assert!(page.location().unwrap().starts_with("/login"));
}

#[tokio::test]
async fn no_page_may_be_framed() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let who = enrol(&app, "framed@example.com", Role::Admin).await;
    let mut browser = sign_in(&console, &who).await;
    let sub = &app.a.subaccount_id;
    for path in [
        "/login".to_owned(),
        "/".to_owned(),
        "/kyc".to_owned(),
        "/payouts".to_owned(),
        "/files".to_owned(),
        "/answers".to_owned(),
        "/subaccounts".to_owned(),
        format!("/subaccounts/{sub}"),
        format!("/webhooks?subaccount={sub}"),
        "/confirmations".to_owned(),
        "/ledger".to_owned(),
        "/funding".to_owned(),
        "/operators".to_owned(),
        "/audit".to_owned(),
        "/no-such-page".to_owned(),
    ] {
        let page = browser.get(&path).await;
        let csp = page
            .headers
            .get("content-security-policy")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(
            page.headers
                .get("x-frame-options")
                .and_then(|v| v.to_str().ok()),
            Some("DENY"),
            "{path}"
        );
    }
}
