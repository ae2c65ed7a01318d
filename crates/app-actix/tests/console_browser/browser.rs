//! One headless Chromium session on the console, with what a test does in it: open a page, wait
//! for what a person would wait for, type and click, and check each page it sees with axe-core
//! and a screenshot under `target/console/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::driver::{Driver, Tools, is_root};

/// The axe-core release vendored for these tests (npm `axe-core`).
pub const AXE_VERSION: &str = "4.14.1";

/// SHA-256 of `axe-core@4.14.1/axe.min.js` as published on npm (the package's own
/// `sri-history.json` gives the same digest).
pub const AXE_SHA256: &str = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c";

/// `axe.min.js`, unchanged (checked against [`AXE_SHA256`] before it is injected).
pub const AXE: &str = include_str!("../vendor/axe-core-4.14.1/axe.min.js");

/// The desktop window, and the phone width screenshots are also taken at.
pub const DESKTOP: (u32, u32) = (1280, 900);
pub const PHONE: (u32, u32) = (390, 844);

/// How long a page or an element may take to appear.
const PATIENCE: Duration = Duration::from_secs(30);

/// Whether the page's scripts run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Javascript {
    On,
    Off,
}

/// Where screenshots go: `<target dir>/console/`.
pub fn screenshots() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.parent().unwrap_or(tmp).join("console");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A browser on the console at `base`.
pub struct Browser {
    client: Client,
    base: String,
    javascript: Javascript,
    /// Prefixes the screenshots' names (empty for the main flow).
    prefix: &'static str,
    _profile: tempfile::TempDir,
}

/// What Chromium is started with. Headless, a window of [`DESKTOP`], a profile of its own, and
/// nothing that talks to anyone but the console: no background networking, component updates,
/// sync or pings, every host name unresolvable but 127.0.0.1, and every request not to loopback
/// sent to a proxy on 127.0.0.1 that does not exist.
fn capabilities(tools: &Tools, profile: &Path) -> fantoccini::wd::Capabilities {
    let mut args = vec![
        "--headless=new".to_owned(),
        format!("--window-size={},{}", DESKTOP.0, DESKTOP.1),
        format!("--user-data-dir={}", profile.display()),
        "--force-device-scale-factor=1".to_owned(),
        "--hide-scrollbars".to_owned(),
        "--lang=en-US".to_owned(),
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-default-apps".to_owned(),
        "--disable-domain-reliability".to_owned(),
        "--disable-extensions".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"
            .to_owned(),
        "--no-pings".to_owned(),
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1".to_owned(),
        "--proxy-server=http://127.0.0.1:9".to_owned(),
    ];
    if is_root() {
        // Chromium's sandbox refuses to run as root.
        args.push("--no-sandbox".to_owned());
    }
    let mut capabilities = fantoccini::wd::Capabilities::new();
    capabilities.insert("browserName".to_owned(), json!("chrome"));
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        json!({ "binary": tools.chromium, "args": args }),
    );
    capabilities
}

impl Browser {
    /// A new session of `driver` on the console at `base`.
    pub async fn open(
        driver: &Driver,
        tools: &Tools,
        base: &str,
        javascript: Javascript,
        prefix: &'static str,
    ) -> Self {
        assert_eq!(
            hex::encode(Sha256::digest(AXE.as_bytes())),
            AXE_SHA256,
            "tests/vendor/axe-core-{AXE_VERSION}/axe.min.js is not the published file"
        );
        let profile = tempfile::tempdir().unwrap();
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities(tools, profile.path()))
            .connect(&driver.url())
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "no Chromium session: {e}; chromedriver's log:\n{}",
                    driver.log()
                )
            });
        let browser = Self {
            client,
            base: base.to_owned(),
            javascript,
            prefix,
            _profile: profile,
        };
        if javascript == Javascript::Off {
            browser.scripts(false).await;
        }
        browser
    }

    /// Lets the page's scripts run, or not: what DevTools' "Disable JavaScript" does (Chrome
    /// DevTools' `Emulation.setScriptExecutionDisabled`, through chromedriver), which holds
    /// for every page the tab loads until it is lifted. WebDriver's own scripts still run.
    async fn scripts(&self, run: bool) {
        self.client
            .issue_cmd(Cdp {
                cmd: "Emulation.setScriptExecutionDisabled",
                params: json!({ "value": !run }),
            })
            .await
            .unwrap();
    }

    /// Ends the session (Chromium quits).
    pub async fn close(self) {
        self.client.close().await.unwrap();
    }

    /// Opens `path` on the console and waits for its `<h1>` to say `heading`.
    pub async fn visit(&self, path: &str, heading: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .unwrap();
        self.heading(heading).await;
    }

    /// Waits for the page's `<h1>` to say `heading` (after a click that navigates, with or
    /// without htmx).
    pub async fn heading(&self, heading: &str) {
        self.wait_for(&format!(
            "//h1[normalize-space()={}]",
            xpath_literal(heading)
        ))
        .await;
    }

    /// Waits for an element matching the XPath `xpath`.
    pub async fn wait_for(&self, xpath: &str) -> Element {
        match self
            .client
            .wait()
            .at_most(PATIENCE)
            .for_element(Locator::XPath(xpath))
            .await
        {
            Ok(element) => element,
            Err(e) => panic!(
                "waited {PATIENCE:?} for {xpath} on {}: {e}; the page:\n{}",
                self.client
                    .current_url()
                    .await
                    .map(|u| u.to_string())
                    .unwrap_or_default(),
                self.client.source().await.unwrap_or_default()
            ),
        }
    }

    /// Waits for an element with `text` in it (any element: a notice, a cell, a heading).
    pub async fn text_appears(&self, text: &str) -> Element {
        self.wait_for(&format!(
            "//body//*[contains(text(), {})]",
            xpath_literal(text)
        ))
        .await
    }

    /// The element the CSS selector `css` finds (it must be there).
    pub async fn find(&self, css: &str) -> Element {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("no {css}: {e}"))
    }

    /// Types `text` into the field `css` finds, as a person would.
    pub async fn type_into(&self, css: &str, text: &str) {
        let field = self.find(css).await;
        field.clear().await.unwrap();
        field.send_keys(text).await.unwrap();
    }

    /// Clicks the element `css` finds.
    pub async fn click(&self, css: &str) {
        self.find(css).await.click().await.unwrap();
    }

    /// Clicks the link whose text is `text`.
    pub async fn click_link(&self, text: &str) {
        self.client
            .find(Locator::LinkText(text))
            .await
            .unwrap_or_else(|e| panic!("no link {text:?}: {e}"))
            .click()
            .await
            .unwrap();
    }

    /// The path of the current page (and its query, if any).
    pub async fn path(&self) -> String {
        let url = self.client.current_url().await.unwrap();
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        }
    }

    /// Runs `script` in the page and returns what it returns.
    pub async fn run(&self, script: &str) -> Value {
        self.client.execute(script, Vec::new()).await.unwrap()
    }

    /// What a person checks on every page: axe-core finds no serious or critical problem, and
    /// screenshots of the whole page at the desktop and the phone width are written as
    /// `<name>.png` and `<name>-390.png` (at the phone width the page must not scroll sideways).
    ///
    /// With JavaScript off, the page was loaded without its scripts; axe-core needs timers,
    /// which only run while scripts may, so they are let run for axe's time (the page's own
    /// scripts, skipped when it loaded, do not run then either).
    pub async fn check(&self, name: &str) {
        if self.javascript == Javascript::Off {
            self.scripts(true).await;
            self.axe(name).await;
            self.scripts(false).await;
        } else {
            self.axe(name).await;
        }
        self.screenshot(name, DESKTOP).await;
        self.screenshot(&format!("{name}-{}", PHONE.0), PHONE).await;
    }

    /// Injects axe-core and runs it on the page; fails on any violation of serious or critical
    /// impact, naming each with its rule, impact and elements. WebDriver's scripts are not the
    /// page's: the console's `default-src 'self'` keeps inline scripts out but not these.
    pub async fn axe(&self, name: &str) {
        let serious = self.axe_serious(name).await;
        assert!(
            serious.is_empty(),
            "{name} ({}): axe-core {AXE_VERSION} finds serious or critical problems:\n{}",
            self.path().await,
            serious.join("\n")
        );
    }

    /// Runs axe-core on the page: its violations of serious or critical impact, one line
    /// each (`rule (impact): help; at selectors`); the others are printed.
    pub async fn axe_serious(&self, name: &str) -> Vec<String> {
        let loaded = self
            .run(&format!("{AXE}\nreturn typeof window.axe.run;"))
            .await;
        assert_eq!(loaded, json!("function"), "{name}: axe-core did not load");
        let result = self
            .client
            .execute_async(
                r"const done = arguments[arguments.length - 1];
                  window.axe
                    .run(document, { resultTypes: ['violations'] })
                    .then((r) => done({ passes: r.passes.length, violations: r.violations.map((v) => ({
                      id: v.id, impact: v.impact, help: v.help,
                      targets: v.nodes.map((n) => n.target.join(' ')),
                    })) }))
                    .catch((e) => done({ error: String(e) }));",
                Vec::new(),
            )
            .await
            .unwrap();
        assert!(
            result["error"].is_null(),
            "{name}: axe failed: {}",
            result["error"]
        );
        assert!(
            result["passes"].as_u64().unwrap_or(0) > 10,
            "{name}: axe-core checked next to nothing: {result}"
        );
        let violations = result["violations"].as_array().cloned().unwrap_or_default();
        let mut serious = Vec::new();
        for v in &violations {
            let line = format!(
                "{} ({}): {}; at {}",
                v["id"].as_str().unwrap_or("?"),
                v["impact"].as_str().unwrap_or("?"),
                v["help"].as_str().unwrap_or(""),
                v["targets"]
                    .as_array()
                    .map(|t| t
                        .iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", "))
                    .unwrap_or_default()
            );
            match v["impact"].as_str() {
                Some("serious" | "critical") => serious.push(line),
                _ => eprintln!("{name}: axe (not failing): {line}"),
            }
        }
        serious
    }

    /// Writes `docs/<name>.png`: the top of the page as a 1280 × 800 px window shows it, at half
    /// its resolution (640 × 400 px), small enough to commit as docs/console/<name>.png.
    pub async fn docs_screenshot(&self, name: &str) {
        let emulate = |cmd, params| Cdp { cmd, params };
        self.client
            .issue_cmd(emulate(
                "Emulation.setDeviceMetricsOverride",
                json!({ "width": 1280, "height": 800, "deviceScaleFactor": 0.5, "mobile": false }),
            ))
            .await
            .unwrap();
        let png = self.client.screenshot().await.unwrap();
        self.client
            .issue_cmd(emulate("Emulation.clearDeviceMetricsOverride", json!({})))
            .await
            .unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}: a PNG");
        let dir = screenshots().join("docs");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
    }

    /// Writes `<prefix><name>.png`: the whole page at the window `size`'s width (the window
    /// made as tall as the page), then restores the desktop window. The page must fit the
    /// width: no sideways scrolling.
    async fn screenshot(&self, name: &str, (width, height): (u32, u32)) {
        self.client.set_window_size(width, height).await.unwrap();
        // The page sees the new width once the browser has laid it out again, which a loaded
        // machine may take a moment to do after the resize is answered.
        let started = std::time::Instant::now();
        let (inner, wide, tall, frame) = loop {
            let sizes = self
                .run(
                    "const e = document.documentElement; \
                     return [window.innerWidth, e.scrollWidth, e.scrollHeight, \
                             window.outerHeight - window.innerHeight];",
                )
                .await;
            let size = |i: usize| sizes[i].as_u64().unwrap_or(0);
            if size(0) == u64::from(width) || started.elapsed() > PATIENCE {
                break (size(0), size(1), size(2), size(3));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert_eq!(
            inner,
            u64::from(width),
            "{name}: the viewport is the window's width"
        );
        if wide > inner {
            // Name the widest elements that stick out, so the fix is not a guess.
            let culprits = self
                .run(
                    "const out = []; \
                     for (const e of document.querySelectorAll('main *')) { \
                       const r = e.getBoundingClientRect(); \
                       const text = e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible'; \
                       if ((r.right > window.innerWidth + 1 || (text && r.left + e.scrollWidth > window.innerWidth + 1)) \
                           && !e.closest('.table-wrap')) { \
                         out.push(e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + (e.id ? '#' + e.id : '') \
                                  + ' ' + Math.round(r.right) + 'px'); } } \
                     return out.slice(0, 8);",
                )
                .await;
            panic!("{name} at {width} px scrolls sideways ({wide} px wide): {culprits}");
        }
        // The window is the page's height plus what the window has around its viewport.
        let whole = u32::try_from(tall + frame)
            .unwrap_or(u32::MAX)
            .clamp(height, 6_000);
        self.client.set_window_size(width, whole).await.unwrap();
        let png = self.client.screenshot().await.unwrap();
        assert!(png.starts_with(b"\x89PNG"), "{name}: a PNG");
        let file = screenshots().join(format!("{}{name}.png", self.prefix));
        std::fs::write(&file, png).unwrap();
        self.client
            .set_window_size(DESKTOP.0, DESKTOP.1)
            .await
            .unwrap();
    }
}

/// A Chrome DevTools command, sent through chromedriver's `goog/cdp/execute`.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (http::Method::POST, Some(body.to_string()))
    }
}

/// `text` as an XPath 1.0 string literal.
fn xpath_literal(text: &str) -> String {
    if !text.contains('\'') {
        format!("'{text}'")
    } else if !text.contains('"') {
        format!("\"{text}\"")
    } else {
        let parts: Vec<String> = text.split('\'').map(|p| format!("'{p}'")).collect();
        format!("concat({})", parts.join(", \"'\", "))
    }
}
