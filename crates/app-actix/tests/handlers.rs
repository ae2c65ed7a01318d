//! Handler tests over mocked ports (no database): infrastructure failures become 503 `SYS503`
//! or 500 `SYS500` in the envelope, and their causes never reach the client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use actix_web::{App, test, web};
use app_actix::http;
use app_actix::state::{AppState, Readiness};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::PortError;
use domain::account::notification::ports::MockNotificationStore;
use domain::account::notification::worker::{NotificationSettings, NotificationWorker};
use domain::account::ports::{MockAccountStore, MockNotifier};
use domain::account::service::AccountService;
use domain::auth::ports::MockCredentialStore;
use domain::auth::signature::{SignatureVersion, SignedParts, sign};
use domain::auth::{AuthService, Credential, SignaturePolicy};
use domain::batch::ports::{MockBatchStore, MockPayoutRail};
use domain::batch::runner::BatchRunner;
use domain::idempotency::{IdempotencyService, MockIdempotencyStore};
use domain::ids::{ApiKeyId, SubaccountId};
use domain::masking::Secret;
use domain::paging::cursor::CursorKey;
use domain::payout::ports::MockPayoutStore;
use domain::payout::service::PayoutService;
use domain::ports::{MockClock, MockIdGenerator, MockKycProvider};
use domain::receiver::ports::MockReceiverStore;
use domain::receiver::service::ReceiverService;
use domain::subaccount::ports::MockSubaccountStore;
use domain::subaccount::service::SubaccountService;
use uuid::Uuid;

const NOW_MS: i64 = 1_700_000_000_000;
const CAUSE: &str = "password=hunter2 connection reset";

struct Down;

struct NoSample;

#[async_trait]
impl app_actix::metrics::Sampler for NoSample {
    async fn sample(&self) -> Result<app_actix::metrics::Sample, PortError> {
        Err(PortError::Unavailable(anyhow::anyhow!(CAUSE)))
    }
}

#[async_trait]
impl Readiness for Down {
    async fn check(&self) -> Result<(), PortError> {
        Err(PortError::Unavailable(anyhow::anyhow!(CAUSE)))
    }
}

fn subaccount() -> SubaccountId {
    SubaccountId::from_uuid(Uuid::from_u128(5))
}

fn clock() -> Arc<MockClock> {
    let mut clock = MockClock::new();
    clock
        .expect_now()
        .returning(|| DateTime::<Utc>::from_timestamp_millis(NOW_MS).unwrap());
    Arc::new(clock)
}

/// The handlers' `AppState` over mocked ports. Every port starts as a mock that expects nothing
/// (so a call the test did not set up fails it), each shared by all the services that use it as
/// `startup` shares the store; the clock stands at `NOW_MS`, and readiness and the database
/// sampler report the database down. A test sets only the ports it is about.
#[derive(Default)]
struct StateBuilder {
    credentials: MockCredentialStore,
    receivers: MockReceiverStore,
    subaccounts: MockSubaccountStore,
    accounts: MockAccountStore,
    payouts: MockPayoutStore,
    batches: MockBatchStore,
    rail: MockPayoutRail,
    kyc: MockKycProvider,
    notifier: MockNotifier,
    notifications: MockNotificationStore,
    idempotency: MockIdempotencyStore,
    ids: MockIdGenerator,
}

impl StateBuilder {
    fn credentials(mut self, credentials: MockCredentialStore) -> Self {
        self.credentials = credentials;
        self
    }

    fn receivers(mut self, receivers: MockReceiverStore) -> Self {
        self.receivers = receivers;
        self
    }

    fn build(self) -> web::Data<AppState> {
        let receivers = Arc::new(self.receivers);
        let subaccounts = Arc::new(self.subaccounts);
        let accounts = Arc::new(self.accounts);
        let payouts = Arc::new(self.payouts);
        let ids = Arc::new(self.ids);
        let clock = clock();
        web::Data::new(AppState {
            auth: AuthService::new(
                Arc::new(self.credentials),
                clock.clone(),
                chrono::Duration::seconds(300),
            ),
            receivers: ReceiverService::new(
                receivers.clone(),
                Arc::new(self.kyc),
                clock.clone(),
                ids.clone(),
                CursorKey::new([1; 32]),
            ),
            subaccounts: SubaccountService::new(subaccounts.clone()),
            accounts: AccountService::new(
                accounts.clone(),
                receivers.clone(),
                Arc::new(NotificationWorker::new(
                    Arc::new(self.notifications),
                    Arc::new(self.notifier),
                    clock.clone(),
                    ids.clone(),
                    NotificationSettings::default(),
                )),
                clock.clone(),
                ids.clone(),
                "http://payoutd.test".to_owned(),
            ),
            payouts: PayoutService::new(
                payouts.clone(),
                receivers,
                accounts.clone(),
                subaccounts,
                clock.clone(),
                ids.clone(),
                CursorKey::new([1; 32]),
            ),
            batches: Arc::new(BatchRunner::new(
                Arc::new(self.batches),
                payouts,
                accounts,
                Arc::new(self.rail),
                clock.clone(),
                ids,
                chrono::Duration::seconds(60),
            )),
            idempotency: IdempotencyService::new(Arc::new(self.idempotency), clock),
            rate_limit: Arc::new(app_actix::http::rate_limit::ApiKeyLimiter::new(
                std::num::NonZeroU32::new(1_000).unwrap(),
                std::num::NonZeroU32::new(1_000).unwrap(),
            )),
            metrics: Arc::new(app_actix::metrics::Metrics::new(
                app_actix::http::route_patterns(),
            )),
            sampler: Arc::new(NoSample),
            readiness: Box::new(Down),
            sandbox_notifier: None,
            rail_callbacks: None,
            providers: app_actix::state::NotificationProviders::SANDBOX,
        })
    }
}

fn working_credentials() -> MockCredentialStore {
    let mut store = MockCredentialStore::new();
    store.expect_find_credential().returning(|_| {
        Ok(Some(Credential {
            id: ApiKeyId::from_uuid(Uuid::from_u128(1)),
            subaccount_id: subaccount(),
            secret: Secret::new("sk_test".to_owned()),
            signature_policy: SignaturePolicy::AnyVersion,
        }))
    });
    store
}

fn signed_get(path: &str) -> test::TestRequest {
    let parts = SignedParts {
        version: SignatureVersion::V1,
        nonce: NOW_MS,
        api_key: "pk_test",
        method: "GET",
        path_and_query: path,
        body: b"",
    };
    test::TestRequest::get()
        .uri(path)
        .insert_header(("x-api-key", "pk_test"))
        .insert_header(("signature", sign("sk_test", &parts)))
}

async fn call(state: web::Data<AppState>, request: test::TestRequest) -> (u16, String) {
    let app = test::init_service(
        App::new()
            .app_data(state)
            .configure(http::routes)
            .default_service(http::fallback()),
    )
    .await;
    let response = test::call_service(&app, request.to_request()).await;
    let status = response.status().as_u16();
    let body = test::read_body(response).await;
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[actix_web::test]
async fn an_unreachable_credential_store_is_503_sys503() {
    let mut credentials = MockCredentialStore::new();
    credentials
        .expect_find_credential()
        .returning(|_| Err(PortError::Unavailable(anyhow::anyhow!(CAUSE))));
    let (status, body) = call(
        StateBuilder::default().credentials(credentials).build(),
        signed_get("/api/receiver/x"),
    )
    .await;
    assert_eq!(status, 503);
    assert!(body.contains("SYS503"), "{body}");
    assert!(!body.contains("hunter2"), "{body}");
}

#[actix_web::test]
async fn an_unexpected_store_failure_is_500_sys500_without_its_cause() {
    let mut receivers = MockReceiverStore::new();
    receivers
        .expect_find_receiver()
        .returning(|_, _| Err(PortError::Unknown(anyhow::anyhow!(CAUSE))));
    let path = format!("/api/receiver/{}", Uuid::from_u128(9));
    let state = StateBuilder::default()
        .credentials(working_credentials())
        .receivers(receivers)
        .build();
    let (status, body) = call(state, signed_get(&path)).await;
    assert_eq!(status, 500);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["message"], "Get receiver failed");
    assert_eq!(json["error"][0]["code"], "SYS500");
    assert!(!body.contains("hunter2"), "{body}");
}

#[actix_web::test]
async fn readiness_reports_503_when_the_database_is_down() {
    let (status, body) = call(
        StateBuilder::default().build(),
        test::TestRequest::get().uri("/readyz"),
    )
    .await;
    assert_eq!(status, 503);
    assert!(
        body.contains("SYS503") && !body.contains("hunter2"),
        "{body}"
    );
}
