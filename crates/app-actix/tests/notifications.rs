//! Confirmation requests end to end: `AccountService` over the real store, the SMTP notifier
//! and the retry worker, against aiosmtpd on 127.0.0.1. A request that cannot be sent stays
//! queued with its account and is delivered by the retry job once the server is up (and the
//! link it carries confirms the account); a refused recipient is recorded failed; a request
//! out of attempts is given up.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../adapters-smtp/tests/support/mod.rs"]
mod smtp;

use std::sync::{Arc, Mutex, PoisonError};

use adapters_postgres::test_db::TestDb;
use adapters_postgres::{DbConfig, PgStore, Vault, create_pool};
use adapters_smtp::TlsMode;
use app_actix::system::{RandomIds, SystemClock};
use chrono::{DateTime, Utc};
use domain::account::input::RawAccount;
use domain::account::notification::NotificationStatus;
use domain::account::notification::ports::NotificationStore;
use domain::account::notification::worker::{NotificationSettings, NotificationWorker};
use domain::account::service::AccountService;
use domain::account::{ConfirmStatus, PayoutMethod};
use domain::admin::{AdminPorts, AdminService};
use domain::auth::Caller;
use domain::builders::ReceiverBuilder;
use domain::idempotency::WriteKey;
use domain::ids::{ApiKeyId, SubaccountId};
use domain::masking::Secret;
use domain::ports::Clock;
use domain::receiver::Receiver;
use domain::receiver::ports::ReceiverStore;
use smtp::{Options, SmtpServer, free_port, notifier, settings};

/// The system clock moved forward by a settable amount, to make retries due.
#[derive(Default)]
struct Later(Mutex<chrono::Duration>);

impl Later {
    fn advance(&self, by: chrono::Duration) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) += by;
    }
}

impl Clock for Later {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct World {
    _db: TestDb,
    store: PgStore,
    clock: Arc<Later>,
    worker: Arc<NotificationWorker>,
    accounts: AccountService,
    caller: Caller,
    receiver: Receiver,
}

async fn world(port: u16, email: &str, max_attempts: u32) -> World {
    let db = TestDb::new().await.expect("test database");
    let pool = create_pool(&DbConfig::new(db.url())).unwrap();
    let vault = Vault::new(&Secret::new([7u8; 32])).unwrap();
    let store = PgStore::new(pool, Arc::new(vault));
    let admin = AdminService::new(
        AdminPorts::all(
            Arc::new(store.clone()),
            Arc::new(adapters_webhook::guard::TargetGuard::new(true)),
        ),
        Arc::new(SystemClock),
        Arc::new(RandomIds::default()),
        domain::audit::AuditContext::cli(Some("test")),
    );
    let subaccount: SubaccountId = admin
        .create_subaccount("Acme", Some("ops@example.com"), None)
        .await
        .unwrap()
        .id;
    let receiver = Receiver {
        email: email.to_owned(),
        ..ReceiverBuilder::new()
            .subaccount(subaccount)
            .name("Ada", "Lovelace")
            .build()
    };
    store
        .insert_receiver(&receiver, &[], &WriteKey::none())
        .await
        .unwrap();
    let clock = Arc::new(Later::default());
    // As `startup::build_notification_worker` builds it, on the test's clock.
    let worker = NotificationWorker::new(
        Arc::new(store.clone()),
        Arc::new(notifier(&settings(port, TlsMode::None))),
        clock.clone(),
        Arc::new(RandomIds::default()),
        NotificationSettings {
            max_attempts,
            ..NotificationSettings::default()
        },
    );
    let worker = Arc::new(worker);
    let accounts = AccountService::new(
        Arc::new(store.clone()),
        Arc::new(store.clone()),
        worker.clone(),
        clock.clone(),
        Arc::new(RandomIds::default()),
        "https://pay.example.com".to_owned(),
    );
    World {
        _db: db,
        store,
        clock,
        worker,
        accounts,
        caller: Caller {
            subaccount_id: subaccount,
            api_key_id: ApiKeyId::from_uuid(uuid::Uuid::new_v4()),
        },
        receiver,
    }
}

impl World {
    async fn create_account(&self) -> domain::account::service::CreatedAccount {
        self.create_account_with(&self.accounts).await
    }

    async fn create_account_with(
        &self,
        accounts: &AccountService,
    ) -> domain::account::service::CreatedAccount {
        let raw = RawAccount {
            receiver_id: Some(self.receiver.id.to_string()),
            bsb: Some("012-002".to_owned()),
            account_number: Some("123456789".to_owned()),
            ..RawAccount::default()
        };
        accounts
            .create(
                &self.caller,
                PayoutMethod::DirectEntry,
                &raw,
                &WriteKey::none(),
            )
            .await
            .unwrap()
    }

    async fn listed(
        &self,
        status: NotificationStatus,
    ) -> Vec<domain::account::notification::NotificationSummary> {
        self.store
            .list_notifications(Some(status), None, 10)
            .await
            .unwrap()
    }
}

/// The token in the first link of a received message's plain-text part.
fn token_of(message: &serde_json::Value) -> String {
    let data = message["data"].as_str().unwrap();
    let start = data.find("/confirm/").unwrap() + "/confirm/".len();
    data[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

#[tokio::test]
async fn a_request_the_server_could_not_take_is_delivered_by_the_retry_job_once_it_is_up() {
    let port = free_port();
    let world = world(port, "ada@example.com", 8).await;
    let created = world.create_account().await;
    // The server is down: the account exists, its request waits.
    assert!(!created.confirmation_sent);
    let pending = world.listed(NotificationStatus::Pending).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].account_id, created.account.id);
    assert_eq!(pending[0].attempts, 1);
    let error = pending[0].last_error.clone().unwrap();
    assert!(error.contains("smtp"), "{error}");
    assert!(!error.contains("confirm"), "{error}");
    // Not due before its backoff.
    assert_eq!(world.worker.run_due().await.unwrap().claimed, 0);

    let server = SmtpServer::start_on(port, &Options::default());
    world.clock.advance(chrono::Duration::minutes(1));
    let report = world.worker.run_due().await.unwrap();
    assert_eq!((report.claimed, report.sent), (1, 1), "{report:?}");
    let received = server.wait_for(1);
    assert_eq!(received.len(), 1);
    assert_eq!(
        received[0]["rcpt_tos"],
        serde_json::json!(["ada@example.com"])
    );
    let sent = world.listed(NotificationStatus::Sent).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].attempts, 2);
    assert!(world.listed(NotificationStatus::Pending).await.is_empty());

    // The link delivered confirms the account.
    let confirmed = world
        .accounts
        .confirm_with_token(&token_of(&received[0]))
        .await
        .unwrap();
    assert_eq!(confirmed.id, created.account.id);
    assert_eq!(confirmed.confirm_status, ConfirmStatus::Confirmed);
    // Nothing more to send.
    world.clock.advance(chrono::Duration::days(1));
    assert_eq!(world.worker.run_due().await.unwrap().claimed, 0);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn a_request_sent_at_once_is_recorded_sent() {
    let server = SmtpServer::start(&Options::default());
    let world = world(server.port, "ada@example.com", 8).await;
    assert!(world.create_account().await.confirmation_sent);
    assert_eq!(server.wait_for(1).len(), 1);
    let sent = world.listed(NotificationStatus::Sent).await;
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].attempts, 1);
    assert!(sent[0].sent_at.is_some());
}

#[tokio::test]
async fn a_refused_recipient_is_recorded_failed_and_not_retried() {
    let server = SmtpServer::start(&Options {
        reject: vec!["gone@example.com".to_owned()],
        ..Options::default()
    });
    let world = world(server.port, "gone@example.com", 8).await;
    let created = world.create_account().await;
    assert!(!created.confirmation_sent);
    let failed = world.listed(NotificationStatus::Failed).await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].attempts, 1);
    let error = failed[0].last_error.clone().unwrap();
    assert!(error.contains("550"), "{error}");
    assert!(
        !error.contains("gone@example.com") && !error.contains("confirm"),
        "{error}"
    );
    world.clock.advance(chrono::Duration::days(1));
    assert_eq!(world.worker.run_due().await.unwrap().claimed, 0);
    assert!(server.received().is_empty());

    // What an operator sees: the failed one with its reason, no recipient and no link.
    let env = [
        ("DATABASE_URL", world._db.url()),
        ("PAYOUT_MASTER_KEY", &"07".repeat(32)),
    ];
    let listed = payoutd(&env, &["admin", "notifications", "--status", "failed"]);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let text = String::from_utf8(listed.stdout).unwrap();
    let listed: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{text}");
    assert_eq!(listed[0]["status"], "failed");
    assert_eq!(listed[0]["account_id"], created.account.id.to_string());
    assert_eq!(listed[0]["attempts"], 1);
    assert!(listed[0]["last_error"].as_str().unwrap().contains("550"));
    for hidden in ["gone@example.com", "confirm", "Lovelace", "123456789"] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
    let none = payoutd(&env, &["admin", "notifications", "--status", "sent"]);
    assert_eq!(String::from_utf8_lossy(&none.stdout).trim(), "[]");
    let bad = payoutd(&env, &["admin", "notifications", "--status", "lost"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--status"));
}

fn payoutd(env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_payoutd"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .output()
        .expect("payoutd runs")
}

#[tokio::test]
async fn the_production_constructor_sends_through_smtp_with_its_attempts() {
    let server = SmtpServer::start(&Options::default());
    let world = world(server.port, "ada@example.com", 8).await;
    let worker = app_actix::startup::build_smtp_notification_worker(
        Arc::new(world.store.clone()),
        &settings(server.port, TlsMode::None),
        3,
    )
    .unwrap();
    assert_eq!(worker.settings().max_attempts, 3);
    let mut bad = settings(server.port, TlsMode::None);
    bad.from = "nobody".to_owned();
    assert!(
        app_actix::startup::build_smtp_notification_worker(Arc::new(world.store.clone()), &bad, 3)
            .is_err()
    );
    // A request that could not be sent at first (the test world's notifier points at a port
    // nothing listens on), once due, is sent by the production worker.
    let down = world_with_store(free_port(), &world).await;
    assert!(!world.create_account_with(&down).await.confirmation_sent);
    {
        use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
        let mut conn = AsyncPgConnection::establish(world._db.url()).await.unwrap();
        diesel::sql_query(
            "UPDATE notifications SET next_attempt_at = now() - interval '1 second' \
             WHERE status = 'pending'",
        )
        .execute(&mut conn)
        .await
        .unwrap();
    }
    let report = worker.run_due().await.unwrap();
    assert_eq!((report.claimed, report.sent), (1, 1), "{report:?}");
    assert_eq!(server.wait_for(1).len(), 1);
    assert_eq!(world.listed(NotificationStatus::Sent).await.len(), 1);
}

/// An account service over `world`'s store and receiver, sending to `port`.
async fn world_with_store(port: u16, world: &World) -> AccountService {
    AccountService::new(
        Arc::new(world.store.clone()),
        Arc::new(world.store.clone()),
        Arc::new(NotificationWorker::new(
            Arc::new(world.store.clone()),
            Arc::new(notifier(&settings(port, TlsMode::None))),
            world.clock.clone(),
            Arc::new(RandomIds::default()),
            NotificationSettings::default(),
        )),
        world.clock.clone(),
        Arc::new(RandomIds::default()),
        "https://pay.example.com".to_owned(),
    )
}

#[tokio::test]
async fn a_request_out_of_attempts_is_given_up() {
    let port = free_port();
    let world = world(port, "ada@example.com", 2).await;
    assert!(!world.create_account().await.confirmation_sent);
    world.clock.advance(chrono::Duration::minutes(1));
    let report = world.worker.run_due().await.unwrap();
    assert_eq!((report.claimed, report.failed), (1, 1), "{report:?}");
    let failed = world.listed(NotificationStatus::Failed).await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].attempts, 2);
    assert!(
        failed[0]
            .last_error
            .clone()
            .unwrap()
            .contains("gave up after 2 attempts")
    );
}
