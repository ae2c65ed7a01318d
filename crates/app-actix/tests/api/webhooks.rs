//! Webhook delivery end to end (docs/WEBHOOKS.md): events written with their change reach the
//! subaccount's real HTTP endpoint, signed, retried, and never for a change that rolled back.

use std::time::Duration;

use payoutd_client::webhooks::Verifier;

use crate::helpers::{TestApp, receiver_body, spawn_app, spawn_app_with, subaccount};
use crate::webhook_sink::{ReceivedWebhook, WebhookSink};

/// Checks `webhook-signature` against `secret` as a merchant's Rust code would: with the
/// client crate's verifier, not the server's signing code.
fn signed_by(received: &ReceivedWebhook, secret: &str) -> bool {
    let verifier = Verifier::new([secret]).unwrap();
    verifier
        .verify_signature_at(
            received.header("webhook-id").unwrap(),
            received.header("webhook-timestamp").unwrap(),
            received.header("webhook-signature").unwrap(),
            &received.body,
            std::time::SystemTime::now(),
        )
        .is_ok()
}

async fn hook(app: &TestApp, sink: &WebhookSink) -> String {
    let (_, secret) = app
        .admin
        .set_webhook(subaccount(&app.a), &sink.url)
        .await
        .unwrap();
    secret.expose().clone()
}

#[tokio::test]
async fn a_created_receiver_is_announced_once_signed_and_in_the_providers_shape() {
    let app = spawn_app().await;
    let endpoint = WebhookSink::start(&[200]);
    let secret = hook(&app, &endpoint).await;
    let receiver_id = app.create_receiver(&app.a, "ada@example.com").await;
    let got = endpoint.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 1);
    let delivery = &got[0];
    assert!(signed_by(delivery, &secret), "signature does not verify");
    assert_eq!(delivery.header("content-type"), Some("application/json"));
    assert!(
        delivery
            .header("user-agent")
            .unwrap()
            .starts_with("payoutd/")
    );
    let body = delivery.json();
    assert_eq!(body["event"], "receiverCreated");
    assert_eq!(body["receiver_id"], receiver_id.as_str());
    assert_eq!(body["subaccount_id"], app.a.subaccount_id.as_str());
    assert_eq!(body["subccount_id"], app.a.subaccount_id.as_str());
    assert_eq!(
        (body["status"].as_str(), body["kyc_status"].as_str()),
        (Some("pending"), Some("pending"))
    );
    assert_eq!(body["sequence"], 1);
    assert_eq!(body["event_id"].as_str(), delivery.header("webhook-id"));
    assert!(
        body["timestamp"]
            .as_i64()
            .is_some_and(|t| t > 1_600_000_000_000),
        "timestamp in ms"
    );
    let seconds: i64 = delivery
        .header("webhook-timestamp")
        .unwrap()
        .parse()
        .unwrap();
    assert!((seconds - chrono::Utc::now().timestamp()).abs() < 60);
    // Exactly once: nothing else arrives.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(endpoint.received().len(), 1);
}

#[tokio::test]
async fn a_commit_wakes_the_delivery_worker_without_waiting_for_its_poll() {
    // The worker polls once an hour here: only the commit's signal can bring it round.
    let app = spawn_app_with(|c| c.delivery.poll = Duration::from_secs(3_600)).await;
    let endpoint = WebhookSink::start(&[200]);
    hook(&app, &endpoint).await;
    // The first event may still be found by the worker's first pass, made when it starts. The
    // second is committed after the worker has delivered the first and gone back to waiting,
    // its next poll an hour away: only a commit's signal brings it round for that one.
    for (n, email) in ["ada@example.com", "grace@example.com"].iter().enumerate() {
        app.create_receiver(&app.a, email).await;
        let got = endpoint.wait_for(n + 1, Duration::from_secs(20)).await;
        assert_eq!(
            got.len(),
            n + 1,
            "event {} was not delivered on commit",
            n + 1
        );
    }
}

#[tokio::test]
async fn a_failed_delivery_is_retried_with_the_same_webhook_id() {
    let app = spawn_app().await;
    let endpoint = WebhookSink::start(&[500, 200]);
    hook(&app, &endpoint).await;
    app.create_receiver(&app.a, "ada@example.com").await;
    // The first retry comes after 5 s (±10 %). The wait allows for a loaded machine; it may
    // even outlast the claim's lease (14 s here), but a retry that came only because the first
    // attempt was never recorded fails the check of the recorded outcomes below.
    let got = endpoint.wait_for(2, Duration::from_secs(30)).await;
    if got.len() != 2 {
        let events = app
            .admin
            .events(subaccount(&app.a), None, None, None, 10)
            .await;
        panic!("{} deliveries arrived; the events: {events:?}", got.len());
    }
    assert_eq!(got[0].header("webhook-id"), got[1].header("webhook-id"));
    assert_eq!(got[0].body, got[1].body);
    // The worker records the outcome after the sink has answered: wait for the record.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let events = loop {
        let events = app
            .admin
            .events(subaccount(&app.a), None, None, None, 10)
            .await
            .unwrap();
        if events[0].status == "delivered" || tokio::time::Instant::now() > deadline {
            break events;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(events[0].status, "delivered");
    let outcomes: Vec<_> = events[0]
        .attempts
        .iter()
        .map(|a| (a.outcome.as_str(), a.status_code))
        .collect();
    assert_eq!(outcomes, [("failed", Some(500)), ("delivered", Some(200))]);
}

#[tokio::test]
async fn during_a_rotation_both_secrets_sign() {
    let app = spawn_app().await;
    let endpoint = WebhookSink::start(&[200]);
    let old = hook(&app, &endpoint).await;
    let new = app
        .admin
        .rotate_webhook_secret(subaccount(&app.a), Duration::from_secs(3600))
        .await
        .unwrap();
    app.create_receiver(&app.a, "ada@example.com").await;
    let got = endpoint.wait_for(1, Duration::from_secs(20)).await;
    let header = got[0].header("webhook-signature").unwrap();
    assert_eq!(header.split(' ').count(), 2, "{header}");
    assert!(signed_by(&got[0], new.expose()) && signed_by(&got[0], &old));
}

/// Tenant A's exhausted events once there are at least `n` of them (or after 20 s).
async fn exhausted_events(app: &TestApp, n: usize) -> Vec<domain::delivery::history::EventSummary> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let events = app
            .admin
            .events(subaccount(&app.a), Some("exhausted"), None, None, 10)
            .await
            .unwrap();
        if events.len() >= n || tokio::time::Instant::now() >= deadline {
            return events;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn gone_disables_the_endpoint_until_it_is_set_again() {
    let app = spawn_app().await;
    let endpoint = WebhookSink::start(&[410, 200]);
    hook(&app, &endpoint).await;
    app.create_receiver(&app.a, "first@example.com").await;
    assert_eq!(endpoint.wait_for(1, Duration::from_secs(20)).await.len(), 1);
    // Wait until the worker has recorded the 410 (and so disabled the endpoint).
    exhausted_events(&app, 1).await;
    app.create_receiver(&app.a, "second@example.com").await;
    // The second event is settled without a call: skipped, as the endpoint is disabled.
    let events = exhausted_events(&app, 2).await;
    assert_eq!(events.len(), 2);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        endpoint.received().len(),
        1,
        "a disabled endpoint is not called"
    );
    // Setting the webhook again re-enables it; resending delivers the skipped event.
    hook(&app, &endpoint).await;
    let skipped = events
        .iter()
        .find(|e| e.attempts.iter().any(|a| a.outcome == "skipped"))
        .unwrap();
    app.admin.resend_event(skipped.id).await.unwrap();
    let got = endpoint.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].header("webhook-id").unwrap(), skipped.id.to_string());
}

#[tokio::test]
async fn a_change_that_did_not_commit_announces_nothing() {
    let app = spawn_app().await;
    let endpoint = WebhookSink::start(&[200]);
    hook(&app, &endpoint).await;
    let ada = app.create_receiver(&app.a, "ada@example.com").await;
    let duplicate = app
        .post(
            &app.a,
            "/api/receiver",
            &receiver_body(&app.a, "ADA@example.com"),
        )
        .await;
    assert_eq!(duplicate.codes(), ["REVR201"]);
    // Another tenant's change, then a later one of this tenant: wait for what
    // must arrive rather than for a fixed time, then let anything that should
    // not arrive have a settle period to show up.
    app.create_receiver(&app.b, "other@example.com").await;
    let grace = app.create_receiver(&app.a, "grace@example.com").await;
    endpoint.wait_for(2, Duration::from_secs(20)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut announced: Vec<_> = endpoint
        .received()
        .iter()
        .map(|r| {
            r.json()["receiver_id"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    announced.sort();
    let mut committed = vec![ada, grace];
    committed.sort();
    assert_eq!(
        announced, committed,
        "only this tenant's committed receivers were announced"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_deliver_every_event_exactly_once() {
    let app = spawn_app().await;
    let _second = app.second_instance();
    let endpoint = WebhookSink::start(&[200]);
    hook(&app, &endpoint).await;
    let bodies: Vec<_> = (0..40)
        .map(|n| receiver_body(&app.a, &format!("r{n}@example.com")))
        .collect();
    let replies =
        futures_util::future::join_all(bodies.iter().map(|b| app.post(&app.a, "/api/receiver", b)))
            .await;
    // On a loaded machine a request may wait past the pool's timeout and be told to retry
    // (503, nothing committed, nothing to announce); every other answer is a creation.
    let created = replies.iter().filter(|r| r.status == 200).count();
    assert!(
        replies.iter().all(|r| r.status == 200 || r.status == 503),
        "{:?}",
        replies.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(created > 0, "no receiver was created");
    let got = endpoint.wait_for(created, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = if got.len() >= created {
        endpoint.received()
    } else {
        got
    };
    let ids: std::collections::HashSet<_> = got
        .iter()
        .map(|r| r.header("webhook-id").unwrap().to_owned())
        .collect();
    assert_eq!(
        (got.len(), ids.len()),
        (created, created),
        "each committed event once, none twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_endpoint_does_not_hold_up_other_subaccounts() {
    // Each attempt ends only at the sender's timeout, set far beyond the test's waits, so B's
    // attempts are still hanging when A's webhook arrives: A cannot have waited for any of
    // them to end, however slowly a loaded machine runs (a bound on elapsed time near the
    // timeout would measure the machine instead).
    const HANG: Duration = Duration::from_secs(120);
    let app = spawn_app_with(|config| config.delivery.timeout = HANG).await;
    // Tenant B's endpoint never answers.
    let hanging = WebhookSink::start(&[0]);
    app.admin
        .set_webhook(subaccount(&app.b), &hanging.url)
        .await
        .unwrap();
    // From before B's first attempt could start, so that while less than `HANG` has passed
    // since, none of them can have ended.
    let started = tokio::time::Instant::now();
    for n in 0..3 {
        app.create_receiver(&app.b, &format!("b{n}@example.com"))
            .await;
    }
    assert_eq!(
        hanging.wait_for(3, Duration::from_secs(20)).await.len(),
        3,
        "B's attempts are in flight"
    );
    let healthy = WebhookSink::start(&[200]);
    hook(&app, &healthy).await;
    app.create_receiver(&app.a, "ada@example.com").await;
    assert_eq!(
        healthy.wait_for(1, Duration::from_secs(30)).await.len(),
        1,
        "A's webhook arrived while B's attempts hang"
    );
    assert!(
        started.elapsed() < HANG,
        "no attempt of B can have ended yet"
    );
    assert_eq!(
        hanging.received().len(),
        3,
        "B's attempts are the same three, none ended and retried"
    );
}
