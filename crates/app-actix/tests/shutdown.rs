//! Graceful shutdown of the real binary (docs/OPERATIONS.md, Commands): on SIGTERM `payoutd serve`
//! stops accepting, lets the request in flight finish, lets the webhook attempt in flight finish
//! and be recorded, exits 0, and leaves nothing claimed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/signing.rs"]
mod signing;
use signing::signature;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use adapters_postgres::test_db::TestDb;
use diesel::sql_types::{BigInt, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use serde_json::{Value, json};

const MASTER_KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn admin(db: &TestDb, args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_payoutd"))
        .args(args)
        .env("DATABASE_URL", db.url())
        .env("PAYOUT_MASTER_KEY", MASTER_KEY)
        // The server below runs in sandbox mode, whose webhooks may go to loopback.
        .env("PAYOUT_SANDBOX", "true")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The requests a [`slow_endpoint`] has received, and those it has answered.
#[derive(Default)]
struct Deliveries {
    arrived: AtomicUsize,
    finished: AtomicUsize,
}

/// A webhook endpoint that answers 200 only after `delay`, counting the requests it received
/// and those it finished.
fn slow_endpoint(delay: Duration) -> (String, Arc<Deliveries>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let deliveries = Arc::new(Deliveries::default());
    let counter = deliveries.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let counter = counter.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let _ = stream.read(&mut buf);
                counter.arrived.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(delay);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                );
                counter.finished.fetch_add(1, Ordering::SeqCst);
            });
        }
    });
    (url, deliveries)
}

/// Waits (20 s at most) until `condition` holds, failing with `what` otherwise.
async fn until<F: AsyncFnMut() -> bool>(what: &str, mut condition: F) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition().await {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

async fn count(conn: &mut AsyncPgConnection, sql: &str) -> i64 {
    diesel::sql_query(sql)
        .get_result::<Count>(conn)
        .await
        .unwrap()
        .n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_the_request_and_the_webhook_in_flight_then_exits_cleanly() {
    adapters_webhook::install_crypto_provider();
    let db = TestDb::new().await.unwrap();
    admin(&db, &["migrate"]);
    let created = admin(&db, &["admin", "create-subaccount", "--name", "Shop"]);
    let sub = created["subaccount_id"].as_str().unwrap().to_owned();
    let key = admin(&db, &["admin", "issue-key", "--subaccount", &sub]);
    let (api_key, secret) = (
        key["api_key"].as_str().unwrap().to_owned(),
        key["api_secret"].as_str().unwrap().to_owned(),
    );
    let (hook, delivered) = slow_endpoint(Duration::from_millis(1_500));
    admin(
        &db,
        &["admin", "set-webhook", "--subaccount", &sub, "--url", &hook],
    );

    let port = free_port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_payoutd"))
        .arg("serve")
        .env("DATABASE_URL", db.url())
        .env("PAYOUT_MASTER_KEY", MASTER_KEY)
        .env("PAYOUT_SANDBOX", "true")
        .env("PAYOUT_BIND", format!("127.0.0.1:{port}"))
        .env("PAYOUT_DELIVERY_POLL_MS", "20")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The log, read as it comes (a pipe left unread could fill and stall the server).
    let stderr = server.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        use std::io::BufRead;
        std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while client.get(format!("{base}/healthz")).send().await.is_err() {
        assert!(Instant::now() < deadline, "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let nonce = std::sync::atomic::AtomicI64::new(chrono::Utc::now().timestamp_millis());
    let create = |email: &str| {
        let n = nonce.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let body = serde_json::to_vec(&json!({
            "subaccount_id": sub, "first_name": "Ada", "last_name": "Lovelace",
            "email": email, "gender": "F", "dob": "1990-01-31", "dialcode": "61",
            "phone": "0412345678", "address": "12 Smith St", "city": "Sydney",
            "state": "NSW", "country": "AUS", "postcode": "2000"
        }))
        .unwrap();
        client
            .post(format!("{base}/api/receiver"))
            .header("x-api-key", &api_key)
            .header("x-signature-version", "2")
            .header(
                "signature",
                signature(&api_key, &secret, n, "/api/receiver", &body),
            )
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    // A first receiver: its webhook is delivered to the slow endpoint, in flight at SIGTERM.
    let first = create("first@example.com").await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    until("the first webhook never reached the endpoint", async || {
        AtomicUsize::load(&delivered.arrived, Ordering::SeqCst) >= 1
    })
    .await;

    // A second request held in flight: the test locks the subaccount row, which the request's
    // writes must wait for (foreign key checks).
    let mut blocker = AsyncPgConnection::establish(db.url()).await.unwrap();
    diesel::sql_query("BEGIN")
        .execute(&mut blocker)
        .await
        .unwrap();
    diesel::sql_query("SELECT 1 FROM subaccounts WHERE id = $1 FOR UPDATE")
        .bind::<SqlUuid, _>(uuid::Uuid::parse_str(&sub).unwrap())
        .execute(&mut blocker)
        .await
        .unwrap();
    let in_flight = tokio::spawn(create("second@example.com"));
    let mut observer = AsyncPgConnection::establish(db.url()).await.unwrap();
    until("the second request never waited for the lock", async || {
        count(
            &mut observer,
            "SELECT count(*) AS n FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .await
            > 0
    })
    .await;
    assert!(!in_flight.is_finished(), "the request waits for the lock");

    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // No new connections once stopping (as soon as the signal is handled).
    until("a stopping server accepts no new requests", async || {
        reqwest::Client::new()
            .get(format!("{base}/healthz"))
            .timeout(Duration::from_secs(2))
            .send()
            .await
            .is_err()
    })
    .await;
    diesel::sql_query("COMMIT")
        .execute(&mut blocker)
        .await
        .unwrap();
    let second = in_flight.await.unwrap().unwrap();
    assert_eq!(
        second.status().as_u16(),
        200,
        "the request in flight completes"
    );

    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "payoutd did not exit");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exit status {status:?}");
    // The last line says what the stop drained.
    let log = log.join().unwrap();
    let last: Value = log
        .iter()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .expect("a JSON log line");
    assert_eq!(last["message"], "payoutd stopped", "{last}");
    assert_eq!(last["http"], "drained", "{last}");
    assert_eq!(last["jobs_failed"], "[]", "{last}");
    for job in ["webhook delivery", "batch runner", "notification retries"] {
        assert!(
            last["jobs_finished"].as_str().unwrap().contains(job),
            "{job}: {last}"
        );
    }

    // The attempt in flight finished and was recorded; nothing is left claimed.
    // Every attempt started was answered (the first was in flight at SIGTERM; the second
    // receiver's event may have been claimed before the worker stopped) and recorded.
    // `AtomicUsize::load` by name: diesel's `RunQueryDsl::load` is in scope.
    let finished = AtomicUsize::load(&delivered.finished, Ordering::SeqCst);
    assert!(finished >= 1, "the attempt in flight was answered");
    let mut conn = AsyncPgConnection::establish(db.url()).await.unwrap();
    let attempts = count(&mut conn, "SELECT count(*) AS n FROM webhook_attempts").await;
    assert_eq!(attempts, i64::try_from(finished).unwrap());
    assert_eq!(
        count(
            &mut conn,
            "SELECT count(*) AS n FROM outbox_events WHERE status = 'delivered'"
        )
        .await,
        attempts
    );
    assert_eq!(
        count(
            &mut conn,
            "SELECT count(*) AS n FROM outbox_events WHERE claimed_until IS NOT NULL AND status = 'pending'"
        )
        .await,
        0,
        "no event left claimed"
    );
    assert_eq!(
        count(&mut conn, "SELECT count(*) AS n FROM receivers").await,
        2
    );
}
