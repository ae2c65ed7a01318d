//! The confirmation link (docs/API.md, `/confirm/{token}`): `GET /confirm/<token>` only shows the
//! page, its form's `POST` confirms; no API key.

use reqwest::header::HeaderMap;
use serde_json::json;

use crate::helpers::{TestApp, spawn_app, subaccount};

/// What a page request answered.
struct Page {
    status: u16,
    headers: HeaderMap,
    html: String,
}

async fn fetch(request: reqwest::RequestBuilder) -> Page {
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    Page {
        status,
        headers,
        html: response.text().await.unwrap(),
    }
}

async fn open(app: &TestApp, token: &str) -> Page {
    fetch(app.client.get(format!("{}/confirm/{token}", app.base))).await
}

/// The form's post: `application/x-www-form-urlencoded` with an empty body, as a browser sends
/// a form without fields.
async fn submit(app: &TestApp, token: &str) -> Page {
    fetch(
        app.client
            .post(format!("{}/confirm/{token}", app.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(""),
    )
    .await
}

/// The token of the `n`th confirmation request the sandbox notifier recorded.
fn token(app: &TestApp, n: usize) -> String {
    let url = app.sandbox().notifier.sent()[n]
        .confirm_url
        .expose()
        .clone();
    url.strip_prefix("http://payoutd.test/confirm/")
        .unwrap()
        .to_owned()
}

fn assert_page_headers(page: &Page) {
    let header = |name: &str| {
        page.headers
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert!(header("content-type").starts_with("text/html"));
    assert_eq!(header("cache-control"), "no-store");
    assert_eq!(header("referrer-policy"), "no-referrer");
    assert_eq!(header("x-frame-options"), "DENY");
    assert_eq!(header("x-content-type-options"), "nosniff");
    let csp = header("content-security-policy");
    for directive in [
        "default-src 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(page.headers.get("x-request-id").is_some());
}

async fn account_state(app: &TestApp, id: &str) -> (String, String) {
    let got = app
        .get(&app.a, &format!("/api/receiver-account/{id}"))
        .await;
    assert_eq!(got.status, 200, "{}", got.body);
    let a = &got.body["payload"];
    (
        a["status"].as_str().unwrap().to_owned(),
        a["confirm_status"].as_str().unwrap().to_owned(),
    )
}

async fn payout_status(app: &TestApp, id: &str) -> String {
    let got = app.get(&app.a, &format!("/api/payout/{id}")).await;
    got.body["payload"]["status"].as_str().unwrap().to_owned()
}

/// How many `accountUpdate` events the account has.
async fn account_updates(app: &TestApp, account: &str) -> usize {
    app.admin
        .events(subaccount(&app.a), None, None, None, 1000)
        .await
        .unwrap()
        .iter()
        .filter(|e| e.event_type == "accountUpdate" && e.object_id.to_string() == account)
        .count()
}

#[tokio::test]
async fn opening_the_link_changes_nothing_and_its_form_confirms_once() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, false).await;
    let created = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": 1000, "currency": "AUD"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let payout = created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(payout_status(&app, &payout).await, "awaiting");
    let token = token(&app, 0);

    // A link scanner fetches it three times: the page each time, nothing changes.
    for _ in 0..3 {
        let page = open(&app, &token).await;
        assert_eq!(page.status, 200, "{}", page.html);
        assert_page_headers(&page);
        assert!(page.html.contains("Confirm your bank details"));
        assert!(
            page.html
                .contains("Australian bank account (direct entry, AUD)")
        );
        assert!(page.html.contains("<dt>BSB</dt><dd>012 ***</dd>"));
        assert!(
            page.html
                .contains("<dt>Account number</dt><dd>123 ***</dd>")
        );
        assert!(!page.html.contains("123456789") && !page.html.contains("012002"));
        assert!(
            page.html.contains(&format!(
                "<form class=\"stack\" method=\"post\" action=\"{token}\">"
            )),
            "{}",
            page.html
        );
        assert!(page.html.contains(">Confirm</button>"));
        // Who asks, and whom, as the merchant registered them.
        assert!(
            page.html.contains(
                "Tenant A will send your payouts to the bank details below and asks you, \
                 Ada Lovelace, to confirm them."
            ),
            "{}",
            page.html
        );
        assert!(page.html.contains("contact Tenant A instead"));
        // The console's stylesheet, inline and allowed by its hash alone: no style attribute,
        // nothing loaded.
        assert!(page.html.contains("<style>") && !page.html.contains("style=\""));
        assert!(!page.html.contains("<link") && !page.html.contains("<script"));
        let csp = page.headers["content-security-policy"].to_str().unwrap();
        assert!(
            csp.contains("style-src 'sha256-") && !csp.contains("unsafe-inline"),
            "{csp}"
        );
    }
    assert_eq!(
        account_state(&app, &account).await,
        ("pending".to_owned(), "unconfirmed".to_owned())
    );
    assert_eq!(account_updates(&app, &account).await, 0);
    assert_eq!(payout_status(&app, &payout).await, "awaiting");

    // The form's post confirms, releases the payout and announces it once.
    let confirmed = submit(&app, &token).await;
    assert_eq!(confirmed.status, 200, "{}", confirmed.html);
    assert_page_headers(&confirmed);
    assert!(confirmed.html.contains("Bank details confirmed"));
    assert!(confirmed.html.contains("<dd>012 ***</dd>"));
    assert!(!confirmed.html.contains("<form"));
    assert_eq!(
        account_state(&app, &account).await,
        ("completed".to_owned(), "confirmed".to_owned())
    );
    assert_eq!(payout_status(&app, &payout).await, "pending");
    assert_eq!(account_updates(&app, &account).await, 1);

    // A second post (a reload, a double click) shows the same page and writes nothing.
    let again = fetch(app.client.post(format!("{}/confirm/{token}", app.base))).await;
    assert_eq!(again.status, 200, "{}", again.html);
    assert!(again.html.contains("Bank details confirmed"));
    assert_eq!(account_updates(&app, &account).await, 1);

    // Opening the link now says so, without a button.
    let after = open(&app, &token).await;
    assert_eq!(after.status, 200);
    assert_page_headers(&after);
    assert!(after.html.contains("already confirmed"));
    assert!(!after.html.contains("<form") && !after.html.contains("<button"));
}

#[tokio::test]
async fn unknown_and_expired_links_are_not_found_and_spent_ones_say_confirmed() {
    let app = spawn_app().await;
    for token in ["not-a-token", "x", &"a".repeat(200)] {
        for page in [open(&app, token).await, submit(&app, token).await] {
            assert_eq!(page.status, 404, "{token}");
            assert_page_headers(&page);
            assert!(page.html.contains("not valid"));
            assert!(!page.html.contains("<form"));
        }
    }

    // Expired: 404 on both, and the post confirms nothing.
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let expired = app.create_account(&app.a, &receiver).await;
    app.execute_sql(&format!(
        "UPDATE account_confirmations SET expires_at = now() - interval '1 second' \
         WHERE account_id = '{expired}'"
    ))
    .await;
    let token_expired = token(&app, 0);
    assert_eq!(open(&app, &token_expired).await.status, 404);
    assert_eq!(submit(&app, &token_expired).await.status, 404);
    assert_eq!(
        account_state(&app, &expired).await,
        ("pending".to_owned(), "unconfirmed".to_owned())
    );
    assert_eq!(account_updates(&app, &expired).await, 0);

    // Confirmed otherwise (the sandbox helper): its link is spent and only says so.
    let other = app
        .post(
            &app.a,
            "/api/receiver-account/usd/ach",
            &json!({"receiver_id": receiver, "routing_number": "021000021", "account_number": "987654321", "account_type": "checking"}),
        )
        .await;
    let other = other.body["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.confirm_account(&app.a, &other).await;
    let token_other = token(&app, 1);
    let page = open(&app, &token_other).await;
    assert_eq!(page.status, 200);
    assert!(page.html.contains("already confirmed"), "{}", page.html);
    assert!(page.html.contains("US bank account (ACH, USD)"));
    assert!(!page.html.contains("<form"));
    let posted = submit(&app, &token_other).await;
    assert_eq!(posted.status, 200);
    assert_eq!(account_updates(&app, &other).await, 1, "only the helper's");
}

#[tokio::test]
async fn everything_shown_is_html_escaped() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let hostile_name = "<script>alert('x')</script>";
    let hostile_description = "\"><img src=x onerror=alert(1)> & co";
    let created = app
        .post(
            &app.a,
            "/api/receiver-account/cad/digital",
            &json!({
                "receiver_id": receiver,
                "recipient": "ada.pay@example.com",
                "name": hostile_name,
                "description": hostile_description,
            }),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let token = token(&app, 0);
    for page in [open(&app, &token).await, submit(&app, &token).await] {
        assert_eq!(page.status, 200, "{}", page.html);
        assert!(!page.html.contains("<script"), "{}", page.html);
        assert!(!page.html.contains("<img"), "{}", page.html);
        assert!(
            page.html
                .contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;")
        );
        assert!(
            page.html
                .contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt; &amp; co")
        );
        assert!(page.html.contains("<dd>ada ***</dd>"));
        assert!(!page.html.contains("ada.pay@example.com"));
    }
}

#[tokio::test]
async fn other_methods_on_the_link_are_refused_and_no_api_key_is_needed() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let account = app.create_account(&app.a, &receiver).await;
    let token = token(&app, 0);
    let put = app
        .client
        .put(format!("{}/confirm/{token}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status().as_u16(), 405);
    assert_eq!(
        account_state(&app, &account).await.1,
        "unconfirmed",
        "a refused method changes nothing"
    );
    // A JSON body (or any other) is ignored as well: the path is the whole request.
    let posted = fetch(
        app.client
            .post(format!("{}/confirm/{token}", app.base))
            .header("content-type", "application/json")
            .body("{\"confirm\": false}"),
    )
    .await;
    assert_eq!(posted.status, 200, "{}", posted.html);
    assert_eq!(account_state(&app, &account).await.1, "confirmed");
}

#[tokio::test]
async fn the_sandbox_shows_an_integration_its_links_so_it_can_follow_the_real_path() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let account = app.create_account(&app.a, &receiver).await;
    let listed = app
        .get(
            &app.a,
            &format!("/api/test-helpers/notifications?receiver_account_id={account}"),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let sent = listed.body["payload"].as_array().unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["receiver_account_id"], account.as_str());
    assert_eq!(sent[0]["to_email"], "ada@example.com");
    assert_eq!(sent[0]["masked_details"]["bsb"], "012 ***");
    let link = sent[0]["confirm_url"].as_str().unwrap();
    let token = link.strip_prefix("http://payoutd.test/confirm/").unwrap();
    // The real path: the page changes nothing, its form confirms.
    assert_eq!(open(&app, token).await.status, 200);
    assert_eq!(account_state(&app, &account).await.1, "unconfirmed");
    assert_eq!(submit(&app, token).await.status, 200);
    assert_eq!(account_state(&app, &account).await.1, "confirmed");

    // Another subaccount's account, an unknown one, a missing or extra parameter.
    let other = app
        .get(
            &app.b,
            &format!("/api/test-helpers/notifications?receiver_account_id={account}"),
        )
        .await;
    assert_eq!(other.codes(), ["REAC104"]);
    let unknown = app
        .get(
            &app.a,
            "/api/test-helpers/notifications?receiver_account_id=00000000-0000-4000-8000-000000000000",
        )
        .await;
    assert_eq!(unknown.codes(), ["REAC104"]);
    assert_eq!(
        app.get(&app.a, "/api/test-helpers/notifications")
            .await
            .codes(),
        ["REQ002"]
    );
    assert_eq!(
        app.get(
            &app.a,
            &format!("/api/test-helpers/notifications?receiver_account_id={account}&x=1"),
        )
        .await
        .codes(),
        ["REQ005"]
    );
}
