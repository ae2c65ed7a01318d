//! The operator console over HTTP (its own listener): enrolment and sign-in with TOTP, the
//! session cookie's attributes, CSRF refusals, sign-in throttling without user enumeration,
//! sessions across two instances (a disable and a role change apply to the next request on
//! either), timeouts, and the security headers.

use std::collections::BTreeMap;

use app_actix::console_config::ConsoleConfig;
use app_actix::console_server::operator_service;
use app_actix::startup::build_store;
use chrono::Utc;
use domain::audit::{AuditAction, AuditContext, AuditLog, AuditQuery};
use domain::operators::service::OperatorService;
use domain::operators::{Role, SessionPolicy, TotpSecret};

use crate::helpers::{TestApp, spawn_app_with};

pub const PASSWORD: &str = "a long enough passphrase";

pub fn console_settings(sessions: SessionPolicy) -> ConsoleConfig {
    ConsoleConfig {
        bind: "127.0.0.1:0".parse().unwrap(),
        tls: None,
        public_url: "http://console.test".to_owned(),
        sessions,
    }
}

pub async fn spawn_console_app(sessions: SessionPolicy) -> TestApp {
    spawn_app_with(|config| config.console = Some(console_settings(sessions))).await
}

pub fn operators(app: &TestApp) -> OperatorService {
    let store = std::sync::Arc::new(build_store(&app.config).unwrap());
    operator_service(&store, SessionPolicy::default()).unwrap()
}

/// A browser of the console: keeps cookies, follows no redirect.
pub struct Browser {
    pub base: String,
    pub cookies: BTreeMap<String, String>,
    client: reqwest::Client,
}

pub struct Page {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Page {
    pub fn location(&self) -> Option<&str> {
        self.headers.get("location").and_then(|v| v.to_str().ok())
    }

    /// The value of the first `<input name="NAME" value="...">` (as maud writes it).
    pub fn input(&self, name: &str) -> Option<String> {
        let at = self.body.find(&format!("name=\"{name}\" value=\""))?;
        let rest = &self.body[at + name.len() + 15..];
        rest.split('"').next().map(str::to_owned)
    }
}

impl Browser {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.to_owned(),
            cookies: BTreeMap::new(),
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    /// The same cookies against another instance.
    pub fn on(&self, base: &str) -> Self {
        Self {
            base: base.to_owned(),
            cookies: self.cookies.clone(),
            client: self.client.clone(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn keep(&mut self, response: reqwest::Response) -> Page {
        for set in response.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let (pair, _) = set.split_once(';').unwrap_or((set, ""));
            let (name, value) = pair.split_once('=').unwrap();
            if set.contains("Max-Age=0") || value.is_empty() {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        Page {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let response = self
            .client
            .get(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.keep(response).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        self.post_with(path, form, &[]).await
    }

    pub async fn post_with(
        &mut self,
        path: &str,
        form: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Page {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .header("content-type", "application/x-www-form-urlencoded")
            .body(serde_urlencoded::to_string(form).unwrap());
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        self.keep(response).await
    }
}

/// An operator enrolled through its link (the secret read from the enrolment page, as a
/// person would type it into an app).
pub struct Enrolled {
    pub email: String,
    pub secret: TotpSecret,
}

pub async fn enrol(app: &TestApp, email: &str, role: Role) -> Enrolled {
    let invitation = operators(app)
        .invite(email, role, &AuditContext::cli(Some("test")))
        .await
        .unwrap();
    let mut browser = Browser::new(app.console.as_deref().unwrap());
    let path = format!("/enrol/{}", invitation.token.expose());
    let page = browser.get(&path).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let key = page
        .body
        .split("class=\"secret-once\">")
        .nth(1)
        .and_then(|rest| rest.split('<').next())
        .unwrap();
    let secret = TotpSecret::from_base32(key).unwrap();
    let csrf = page.input("csrf").unwrap();
    let code = secret.code_at(Utc::now());
    let done = browser
        .post(
            &path,
            &[
                ("csrf", &csrf),
                ("password", PASSWORD),
                ("confirmation", PASSWORD),
                ("code", &code),
            ],
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Your account is ready"), "{}", done.body);
    Enrolled {
        email: email.to_owned(),
        secret,
    }
}

/// Signs `who` in with the code of the next time step (the enrolment used the current one;
/// a step either side is accepted).
pub async fn sign_in(base: &str, who: &Enrolled) -> Browser {
    sign_in_from(Browser::new(base), who).await
}

/// [`sign_in`] from `browser`, with whatever cookies it already holds.
pub async fn sign_in_from(mut browser: Browser, who: &Enrolled) -> Browser {
    let form = browser.get("/login").await;
    let csrf = form.input("csrf").unwrap();
    let code = who
        .secret
        .code_at(Utc::now() + chrono::Duration::seconds(30));
    let signed_in = browser
        .post(
            "/login",
            &[
                ("csrf", &csrf),
                ("email", &who.email),
                ("password", PASSWORD),
                ("code", &code),
            ],
        )
        .await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    assert_eq!(signed_in.location(), Some("/"));
    browser
}

#[tokio::test]
async fn an_operator_enrols_signs_in_and_out_with_a_host_only_strict_cookie() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    assert_ne!(console, app.base, "the console has a listener of its own");
    // The API's listener serves no console.
    let on_api = reqwest::get(format!("{}/login", app.base)).await.unwrap();
    assert_eq!(on_api.status(), 404);

    let ann = enrol(&app, "Ann@Example.com", Role::Admin).await;
    let mut browser = Browser::new(&console);
    let form = browser.get("/login").await;
    let set_cookie = form
        .headers
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    for part in [
        "__Host-payoutd_form=",
        "Path=/",
        "Secure",
        "HttpOnly",
        "SameSite=Strict",
    ] {
        assert!(set_cookie.contains(part), "{set_cookie}");
    }
    let csrf = form.input("csrf").unwrap();
    let code = ann
        .secret
        .code_at(Utc::now() + chrono::Duration::seconds(30));
    let signed_in = browser
        .post(
            "/login",
            &[
                ("csrf", &csrf),
                ("email", "ann@example.com"),
                ("password", PASSWORD),
                ("code", &code),
            ],
        )
        .await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    let session_cookie = signed_in
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("__Host-payoutd_session="))
        .unwrap();
    for part in ["Path=/", "Secure", "HttpOnly", "SameSite=Strict"] {
        assert!(session_cookie.contains(part), "{session_cookie}");
    }
    let home = browser.get("/").await;
    assert_eq!(home.status, 200, "{}", home.body);
    assert!(home.body.contains("ann@example.com"));

    // The same code again (same step) does not sign in a second time.
    let mut other = Browser::new(&console);
    let form = other.get("/login").await;
    let again = other
        .post(
            "/login",
            &[
                ("csrf", &form.input("csrf").unwrap()),
                ("email", "ann@example.com"),
                ("password", PASSWORD),
                ("code", &code),
            ],
        )
        .await;
    assert_eq!(again.status, 401);

    // Sign-out needs the session's CSRF token, then ends the session.
    let refused = browser.post("/logout", &[("csrf", "forged")]).await;
    assert_eq!(refused.status, 403);
    assert_eq!(browser.get("/").await.status, 200);
    let csrf = home.input("csrf").unwrap();
    let out = browser.post("/logout", &[("csrf", &csrf)]).await;
    assert_eq!(out.status, 303);
    assert_eq!(out.location(), Some("/login?signed_out=1"));
    let session = signed_in_token(&session_cookie);
    let mut stale = Browser::new(&console);
    stale
        .cookies
        .insert("__Host-payoutd_session".to_owned(), session);
    let after = stale.get("/").await;
    assert_eq!(after.status, 303);
    assert_eq!(after.location(), Some("/login"));

    let store = build_store(&app.config).unwrap();
    let actions: Vec<AuditAction> = store
        .list(&AuditQuery {
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.action)
        // The test app's subaccounts and keys were set up (and audited) as `payoutd admin`.
        .filter(|a| a.as_str().starts_with("operator.") || a.as_str().starts_with("session."))
        .collect();
    assert_eq!(
        actions,
        [
            AuditAction::SignedOut,
            AuditAction::SignedIn,
            AuditAction::OperatorEnrolled,
            AuditAction::OperatorCreated
        ]
    );
}

fn signed_in_token(set_cookie: &str) -> String {
    set_cookie
        .split(';')
        .next()
        .and_then(|pair| pair.split_once('='))
        .map(|(_, v)| v.to_owned())
        .unwrap()
}

#[tokio::test]
async fn forms_without_this_browser_s_token_or_from_another_site_are_refused() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let ann = enrol(&app, "ann@example.com", Role::Admin).await;
    let code = ann
        .secret
        .code_at(Utc::now() + chrono::Duration::seconds(30));
    let fields = |csrf: &str| {
        vec![
            ("csrf".to_owned(), csrf.to_owned()),
            ("email".to_owned(), "ann@example.com".to_owned()),
            ("password".to_owned(), PASSWORD.to_owned()),
            ("code".to_owned(), code.clone()),
        ]
    };
    // No form cookie at all, and a token of another browser.
    let mut attacker = Browser::new(&console);
    let theirs = attacker.get("/login").await.input("csrf").unwrap();
    let mut victim = Browser::new(&console);
    victim.get("/login").await;
    let f = fields(&theirs);
    let form: Vec<(&str, &str)> = f.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    assert_eq!(victim.post("/login", &form).await.status, 403);
    let mut bare = Browser::new(&console);
    assert_eq!(bare.post("/login", &form).await.status, 403);
    // The right token, but the browser says the request came from another site.
    let mut browser = Browser::new(&console);
    let mine = browser.get("/login").await.input("csrf").unwrap();
    let f = fields(&mine);
    let form: Vec<(&str, &str)> = f.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let cross = browser
        .post_with("/login", &form, &[("origin", "https://evil.example")])
        .await;
    assert_eq!(cross.status, 403);
    let cross = browser
        .post_with("/login", &form, &[("sec-fetch-site", "cross-site")])
        .await;
    assert_eq!(cross.status, 403);
    // A plain form post (no script) under the console's `Referrer-Policy: no-referrer`: the
    // browser sends `Origin: null` and says where the request came from in `Sec-Fetch-Site`.
    // From the console itself it reaches the sign-in (refused here for its wrong password);
    // from another site it is refused before.
    let wrong: Vec<(&str, &str)> = form
        .iter()
        .map(|&(k, v)| (k, if k == "password" { "wrong password" } else { v }))
        .collect();
    let plain = browser
        .post_with(
            "/login",
            &wrong,
            &[("origin", "null"), ("sec-fetch-site", "same-origin")],
        )
        .await;
    assert_eq!(plain.status, 401, "{}", plain.body);
    let cross = browser
        .post_with(
            "/login",
            &form,
            &[("origin", "null"), ("sec-fetch-site", "cross-site")],
        )
        .await;
    assert_eq!(cross.status, 403);
    // Nothing was tried: the code still works.
    let same = browser
        .post_with(
            "/login",
            &form,
            &[("origin", &console), ("sec-fetch-site", "same-origin")],
        )
        .await;
    assert_eq!(same.status, 303, "{}", same.body);
}

#[tokio::test]
async fn sign_in_is_throttled_per_account_and_says_the_same_whether_or_not_the_account_exists() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let ann = enrol(&app, "ann@example.com", Role::Viewer).await;
    let mut answers = Vec::new();
    for email in ["ann@example.com", "nobody@example.com"] {
        let mut bodies = Vec::new();
        for _ in 0..6 {
            let mut browser = Browser::new(&console);
            let csrf = browser.get("/login").await.input("csrf").unwrap();
            let page = browser
                .post(
                    "/login",
                    &[
                        ("csrf", &csrf),
                        ("email", email),
                        ("password", "wrong password"),
                        ("code", "123456"),
                    ],
                )
                .await;
            // What the page says (its CSRF token is per browser; the time to wait per minute).
            let notice = page
                .body
                .split("role=\"alert\"><p>")
                .nth(1)
                .and_then(|rest| rest.split('<').next())
                .unwrap_or_default()
                .chars()
                .filter(|c| !c.is_ascii_digit())
                .collect::<String>();
            assert_eq!(page.input("email").as_deref(), Some(email));
            bodies.push((page.status, notice));
        }
        answers.push(bodies);
    }
    // Five refusals, then throttled, for both: an outsider cannot tell which exists.
    assert_eq!(answers[0], answers[1]);
    let statuses: Vec<u16> = answers[0].iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429]);
    assert!(answers[0][5].1.contains("too many failed sign-ins"));
    // The throttled account is refused even with the right password and code.
    let mut browser = Browser::new(&console);
    let csrf = browser.get("/login").await.input("csrf").unwrap();
    let code = ann
        .secret
        .code_at(Utc::now() + chrono::Duration::seconds(30));
    let page = browser
        .post(
            "/login",
            &[
                ("csrf", &csrf),
                ("email", "ann@example.com"),
                ("password", PASSWORD),
                ("code", &code),
            ],
        )
        .await;
    assert_eq!(page.status, 429);
}

#[tokio::test]
async fn a_session_works_on_every_instance_until_disabled_there_or_anywhere() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let first = app.console.clone().unwrap();
    let second = app.second_console();
    let _admin = enrol(&app, "admin@example.com", Role::Admin).await;
    let bob = enrol(&app, "bob@example.com", Role::Admin).await;
    let mut on_first = sign_in(&first, &bob).await;
    let mut on_second = on_first.on(&second);
    assert_eq!(on_first.get("/").await.status, 200);
    assert_eq!(on_second.get("/").await.status, 200);

    // A role change applies to the next request, on either instance.
    operators(&app)
        .change_role("bob@example.com", Role::Viewer, &AuditContext::cli(None))
        .await
        .unwrap();
    let home = on_second.get("/").await;
    assert!(home.body.contains("viewer"), "{}", home.body);

    // Disabled with the CLI's service: signed out everywhere at once.
    operators(&app)
        .disable("bob@example.com", &AuditContext::cli(None))
        .await
        .unwrap();
    for browser in [&mut on_first, &mut on_second] {
        let page = browser.get("/").await;
        assert_eq!(page.status, 303);
        assert_eq!(page.location(), Some("/login"));
    }
}

#[tokio::test]
async fn idle_sessions_end() {
    let app = spawn_console_app(
        SessionPolicy::new(chrono::Duration::minutes(1), chrono::Duration::minutes(1)).unwrap(),
    )
    .await;
    let console = app.console.clone().unwrap();
    let ann = enrol(&app, "ann@example.com", Role::Viewer).await;
    let mut browser = sign_in(&console, &ann).await;
    assert_eq!(browser.get("/").await.status, 200);
    // Age the session instead of waiting a minute.
    app.execute_sql(
        "UPDATE operator_sessions SET last_seen_at = now() - interval '2 minutes', \
         expires_at = now() + interval '1 hour'",
    )
    .await;
    assert_eq!(browser.get("/").await.status, 303);
    // It was ended, not just refused: restoring its times does not bring it back.
    app.execute_sql("UPDATE operator_sessions SET last_seen_at = now()")
        .await;
    assert_eq!(browser.get("/").await.status, 303);
}

#[tokio::test]
async fn every_console_response_carries_the_security_headers() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let mut browser = Browser::new(app.console.as_deref().unwrap());
    for path in ["/login", "/", "/nowhere", "/enrol/not-a-token"] {
        let page = browser.get(path).await;
        let header = |name: &str| {
            page.headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let csp = header("content-security-policy");
        assert!(
            csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{path}: {csp}"
        );
        assert_eq!(header("x-frame-options"), "DENY", "{path}");
        assert_eq!(header("x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header("referrer-policy"), "no-referrer", "{path}");
        assert_eq!(header("cache-control"), "no-store", "{path}");
        assert!(!header("x-request-id").is_empty(), "{path}");
    }
    let login = browser.get("/login").await;
    let stylesheet = login
        .body
        .split("rel=\"stylesheet\" href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    let css = browser.get(&stylesheet).await;
    assert_eq!(css.status, 200);
    assert!(
        css.headers
            .get("cache-control")
            .unwrap()
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    assert_eq!(browser.get("/assets/console.css").await.status, 404);
}
