//! Starting the app and talking to it like a client would: requests are signed by the client
//! crate merchants use (`payoutd_client::signing::Signer`), independently of the server's code.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use adapters_postgres::DbConfig;
use adapters_postgres::test_db::TestDb;
use app_actix::config::{BatchConfig, Config, DeliveryConfig, HttpConfig};
use app_actix::startup::{Application, Sandbox, build_store};
use app_actix::system::{RandomIds, SystemClock};
use domain::admin::{AdminPorts, AdminService};
use domain::auth::SignaturePolicy;
use domain::ids::SubaccountId;
use domain::masking::Secret;
use serde_json::Value;

/// A subaccount with one API key.
#[derive(Clone, Debug)]
pub struct Tenant {
    pub subaccount_id: String,
    pub api_key: String,
    pub api_secret: String,
}

pub struct TestApp {
    pub base: String,
    /// The console's base URL, when the configuration gave it a listener.
    pub console: Option<String>,
    pub config: Config,
    /// The simulators (`None` for a production-mode application).
    pub simulators: Option<Sandbox>,
    pub client: reqwest::Client,
    pub admin: AdminService,
    pub a: Tenant,
    pub b: Tenant,
    _db: TestDb,
}

/// What came back.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Reply {
    /// The `code`s of the failure envelope's `error` array.
    pub fn codes(&self) -> Vec<String> {
        self.body["error"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e["code"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The current time in milliseconds, strictly increasing across calls: POST nonces are single
/// use, so a client that sends several POSTs within one millisecond must not reuse one.
pub fn now_ms() -> i64 {
    static LAST: AtomicI64 = AtomicI64::new(0);
    let now = chrono::Utc::now().timestamp_millis();
    let previous = LAST.fetch_max(now, Ordering::SeqCst);
    if previous < now {
        now
    } else {
        LAST.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// `<nonce>.<hex>` for v1, or v2 when `v2` carries (method, path with query, body): the client
/// crate's signature for that nonce.
pub fn sign(tenant: &Tenant, nonce: i64, v2: Option<(&str, &str, &[u8])>) -> String {
    use payoutd_client::signing::{SignatureVersion, SignedRequest, Signer};

    let signer = Signer::new(&tenant.api_key, &tenant.api_secret);
    let nonce = u64::try_from(nonce).expect("a nonce after 1970");
    match v2 {
        Some((method, path_and_query, body)) => signer.signature(
            nonce,
            SignatureVersion::V2,
            &SignedRequest {
                method,
                path_and_query,
                body,
            },
        ),
        None => signer.signature(
            nonce,
            SignatureVersion::V1,
            &SignedRequest {
                method: "",
                path_and_query: "",
                body: b"",
            },
        ),
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// [`spawn_app`] with the configuration adjusted first.
pub async fn spawn_app_with(adjust: impl FnOnce(&mut Config)) -> TestApp {
    spawn_built(adjust, Application::build).await
}

/// A production-mode application (no sandbox) over `production`'s adapters.
#[allow(dead_code)]
pub async fn spawn_production_app(
    production: app_actix::production::Production,
    adjust: impl FnOnce(&mut Config),
) -> TestApp {
    spawn_built(
        |config| {
            config.sandbox = false;
            adjust(config);
        },
        move |config| Application::build_production(config, production),
    )
    .await
}

async fn spawn_built(
    adjust: impl FnOnce(&mut Config),
    build: impl FnOnce(&Config) -> anyhow::Result<Application>,
) -> TestApp {
    // reqwest's rustls backend is unified into this build by adapters-webhook: a client needs
    // a crypto provider installed first.
    adapters_webhook::install_crypto_provider();
    let db = TestDb::new().await.expect("test database");
    let mut database = DbConfig::new(db.url());
    database.max_size = 8;
    let config = Config {
        database,
        master_key: Secret::new(rand_key()),
        previous_master_key: None,
        bind: "127.0.0.1:0".parse().unwrap(),
        sandbox: true,
        workers: 2,
        signature_window: Duration::from_secs(300),
        tls: None,
        // As in production (the default of PAYOUT_CREDENTIAL_CACHE_MS). Tests that revoke keys
        // or change signature requirements and expect it at once turn it off.
        credential_cache: Duration::from_secs(1),
        public_url: "http://payoutd.test".to_owned(),
        delivery: DeliveryConfig {
            timeout: Duration::from_secs(2),
            allow_private_targets: true,
            poll: Duration::from_millis(20),
            batch: 64,
        },
        sandbox_kyc: None,
        batches: BatchConfig {
            // Batches run when a test says so (the batch/run helper), not by the clock.
            interval: Duration::from_secs(3_600),
            poll: Duration::from_millis(50),
            lease: Duration::from_secs(60),
            sandbox_settle: Duration::from_secs(3_600),
        },
        // High enough never to interfere; the rate-limit test lowers it.
        rate_limit: (
            std::num::NonZeroU32::new(100_000).unwrap(),
            std::num::NonZeroU32::new(100_000).unwrap(),
        ),
        group_commit: adapters_postgres::GroupCommitSettings::default(),
        http: HttpConfig::default(),
        console: None,
    };
    let mut config = config;
    adjust(&mut config);
    let app = build(&config).expect("app builds");
    let base = format!("http://127.0.0.1:{}", app.port());
    let console = app
        .console_port()
        .map(|port| format!("http://127.0.0.1:{port}"));
    let simulators = app.sandbox().cloned();
    tokio::spawn(app.run_until_stopped());
    let store = build_store(&config).unwrap();
    let admin = AdminService::new(
        AdminPorts::all(
            Arc::new(store),
            Arc::new(adapters_webhook::guard::TargetGuard::new(true)),
        ),
        Arc::new(SystemClock),
        Arc::new(RandomIds::default()),
        domain::audit::AuditContext::cli(Some("test")),
    );
    let a = tenant(&admin, "Tenant A").await;
    let b = tenant(&admin, "Tenant B").await;
    TestApp {
        base,
        console,
        config,
        simulators,
        // Idle connections are given up before the server's keep-alive (5 s) ends them, so that
        // a request is never sent on a connection the server is closing at that moment (which
        // fails it with an incomplete message, as seen on a loaded machine).
        client: reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .expect("a reqwest client with default TLS"),
        admin,
        a,
        b,
        _db: db,
    }
}

fn rand_key() -> [u8; 32] {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key
}

/// A subaccount with an API key. The test tenants sign like a client written for the provider's
/// v1 scheme (v1 on every request) whose operator allowed it (`signature-policy any`); the
/// policy of new subaccounts, v2 on POST, has its own tests (`auth.rs`).
pub async fn tenant(admin: &AdminService, name: &str) -> Tenant {
    let subaccount = admin
        .create_subaccount(name, Some("ops@example.com"), None)
        .await
        .unwrap();
    admin
        .set_signature_policy(subaccount.id, SignaturePolicy::AnyVersion)
        .await
        .unwrap();
    let key = admin.issue_key(subaccount.id).await.unwrap();
    Tenant {
        subaccount_id: subaccount.id.to_string(),
        api_key: key.api_key,
        api_secret: key.api_secret.expose().clone(),
    }
}

pub fn subaccount(tenant: &Tenant) -> SubaccountId {
    SubaccountId::parse(&tenant.subaccount_id).unwrap()
}

impl TestApp {
    /// The sandbox simulators; panics for a production-mode application.
    pub fn sandbox(&self) -> &Sandbox {
        self.simulators
            .as_ref()
            .expect("a sandbox-mode application")
    }

    /// Starts another server instance on the same database (as a second process would), and
    /// returns its base URL.
    pub fn second_instance(&self) -> String {
        let app = Application::build(&self.config).expect("second instance builds");
        let base = format!("http://127.0.0.1:{}", app.port());
        tokio::spawn(app.run_until_stopped());
        base
    }

    /// Starts another server instance on the same database, and returns its console's base URL
    /// (the configuration must give the console a listener).
    pub fn second_console(&self) -> String {
        let app = Application::build(&self.config).expect("second instance builds");
        let port = app.console_port().expect("the configuration has a console");
        tokio::spawn(app.run_until_stopped());
        format!("http://127.0.0.1:{port}")
    }

    /// Whether the app's database is a Citus cluster.
    pub fn is_citus(&self) -> bool {
        self._db.is_citus()
    }

    /// Runs `sql` on the app's database (to set up what the API cannot, e.g. a trigger). On
    /// Citus a trigger on a distributed table must be allowed first; it then runs on the
    /// shards, as the tests' triggers only look at the row they fire for.
    pub async fn execute_sql(&self, sql: &str) {
        use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
        let mut conn = AsyncPgConnection::establish(self._db.url()).await.unwrap();
        if self._db.is_citus() {
            conn.batch_execute("SET citus.enable_unsafe_triggers TO on")
                .await
                .unwrap();
        }
        conn.batch_execute(sql).await.unwrap();
    }

    pub async fn send(&self, request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.expect("request sent");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
            panic!(
                "status {status}: body is not JSON: {:?}",
                String::from_utf8_lossy(&bytes)
            )
        });
        assert!(
            status < 500 || status == 503,
            "server error {status}: {body}"
        );
        Reply {
            status,
            body,
            headers,
        }
    }

    /// A v1-signed GET.
    pub async fn get(&self, tenant: &Tenant, path: &str) -> Reply {
        let request = self
            .client
            .get(format!("{}{path}", self.base))
            .header("x-api-key", &tenant.api_key)
            .header("signature", sign(tenant, now_ms(), None));
        self.send(request).await
    }

    /// A v1-signed POST of raw bytes.
    pub async fn post_raw(&self, tenant: &Tenant, path: &str, body: Vec<u8>) -> Reply {
        let request = self
            .client
            .post(format!("{}{path}", self.base))
            .header("x-api-key", &tenant.api_key)
            .header("signature", sign(tenant, now_ms(), None))
            .header("content-type", "application/json")
            .body(body);
        self.send(request).await
    }

    /// A v1-signed POST of JSON.
    pub async fn post(&self, tenant: &Tenant, path: &str, body: &Value) -> Reply {
        self.post_raw(tenant, path, serde_json::to_vec(body).unwrap())
            .await
    }

    /// The KYC provider's decision for a receiver (sandbox helper); asserts it was applied.
    pub async fn decide_kyc(&self, tenant: &Tenant, receiver: &str, outcome: &str) {
        let done = self
            .post(
                tenant,
                "/api/test-helpers/kyc",
                &serde_json::json!({"receiver_id": receiver, "kyc_status": outcome}),
            )
            .await;
        assert_eq!(done.status, 200, "{}", done.body);
    }

    /// Confirms an account (sandbox helper); asserts it was confirmed.
    pub async fn confirm_account(&self, tenant: &Tenant, account: &str) {
        let confirmed = self
            .post(
                tenant,
                "/api/test-helpers/account",
                &serde_json::json!({"receiver_account_id": account, "confirm_status": "confirmed"}),
            )
            .await;
        assert_eq!(confirmed.status, 200, "{}", confirmed.body);
    }

    /// A direct-entry account for `receiver`; returns its id.
    pub async fn create_account(&self, tenant: &Tenant, receiver: &str) -> String {
        let account = self
            .post(
                tenant,
                "/api/receiver-account/aud/direct-entry",
                &serde_json::json!({"receiver_id": receiver, "bsb": "012002", "account_number": "123456789"}),
            )
            .await;
        assert_eq!(account.status, 200, "{}", account.body);
        account.body["payload"]["receiver_account_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// A receiver of `tenant` with a direct-entry account, its KYC completed and the account
    /// confirmed as told. Returns (receiver id, account id).
    pub async fn payee(
        &self,
        tenant: &Tenant,
        email: &str,
        kyc: bool,
        confirm: bool,
    ) -> (String, String) {
        let receiver = self.create_receiver(tenant, email).await;
        if kyc {
            self.decide_kyc(tenant, &receiver, "completed").await;
        }
        let account = self.create_account(tenant, &receiver).await;
        if confirm {
            self.confirm_account(tenant, &account).await;
        }
        (receiver, account)
    }

    /// `tenant`'s AUD balance: (available, pending).
    pub async fn aud_balance(&self, tenant: &Tenant) -> (i64, i64) {
        let reply = self
            .get(
                tenant,
                &format!("/api/subaccount/balance/{}?asset=AUD", tenant.subaccount_id),
            )
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        (
            reply.body["payload"]["available"].as_i64().unwrap(),
            reply.body["payload"]["pending"].as_i64().unwrap(),
        )
    }

    /// Creates a receiver for `tenant`; returns its id.
    pub async fn create_receiver(&self, tenant: &Tenant, email: &str) -> String {
        let reply = self
            .post(tenant, "/api/receiver", &receiver_body(tenant, email))
            .await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.body["payload"]["receiver_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

/// A valid create-receiver body.
pub fn receiver_body(tenant: &Tenant, email: &str) -> Value {
    serde_json::json!({
        "subaccount_id": tenant.subaccount_id,
        "first_name": "Ada",
        "last_name": "Lovelace",
        "email": email,
        "dob": "1990-12-10",
        "dialcode": "61",
        "phone": "412345678",
        "address": "1 Example Street",
        "city": "Sydney",
        "state": "NSW",
        "postcode": "2000",
        "country": "AUS"
    })
}
