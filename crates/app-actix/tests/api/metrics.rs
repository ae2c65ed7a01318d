//! `GET /metrics`: Prometheus text with requests by route and status, and sampled gauges.

use serde_json::json;

use crate::helpers::{spawn_app, subaccount};

#[tokio::test]
async fn metrics_count_requests_by_route_and_show_payouts_and_the_outbox() {
    let app = spawn_app().await;
    app.admin
        .fund(subaccount(&app.a), "AUD", "1000", "test funding")
        .await
        .unwrap();
    let receiver = app.create_receiver(&app.a, "m@example.com").await;
    let missing = app
        .get(&app.a, "/api/receiver/00000000-0000-0000-0000-000000000000")
        .await;
    assert_eq!(missing.status, 400);
    let account = app.create_account(&app.a, &receiver).await;
    let paid = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": 100, "currency": "AUD"}),
        )
        .await;
    assert_eq!(paid.status, 200, "{}", paid.body);

    let response = app
        .client
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    for line in [
        "payoutd_http_requests_total{method=\"POST\",route=\"/api/receiver\",status=\"200\"} 1",
        "payoutd_http_requests_total{method=\"GET\",route=\"/api/receiver/{id}\",status=\"400\"} 1",
        "payoutd_http_request_duration_seconds_count{method=\"POST\",route=\"/api/payout/single\"} 1",
        "payoutd_payouts{status=\"unassessed\"} 1",
        "payoutd_payouts{status=\"successful\"} 0",
        "# TYPE payoutd_db_pool_connections gauge",
        "# TYPE payoutd_outbox_pending_events gauge",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // Ids never become labels: the route pattern does.
    assert!(!text.contains(&receiver));
}

/// The series of `name` in a Prometheus text.
fn series(text: &str, name: &str) -> usize {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .count()
}

#[tokio::test]
async fn no_request_can_add_a_series_whatever_its_method_or_path() {
    let app = spawn_app().await;
    let scrape = async || {
        app.client
            .get(format!("{}/metrics", app.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    // Thousands of methods no route has (any token is a method to HTTP), on known and unknown
    // paths, and known methods on thousands of unknown paths; unauthenticated, as a stranger.
    let mut requests = Vec::new();
    for n in 0..3_000 {
        let method = match n % 3 {
            0 => reqwest::Method::from_bytes(format!("XFOO{n}").as_bytes()).unwrap(),
            1 => reqwest::Method::GET,
            _ => reqwest::Method::from_bytes(format!("M{n}").as_bytes()).unwrap(),
        };
        let path = match n % 4 {
            0 => "/healthz".to_owned(),
            1 => format!("/api/receiver/{n}"),
            _ => format!("/no/such/path/{n}"),
        };
        requests.push(
            app.client
                .request(method, format!("{}{path}", app.base))
                .send(),
        );
        if requests.len() == 50 {
            for response in futures_util::future::join_all(requests.drain(..)).await {
                assert!(response.unwrap().status().as_u16() < 500);
            }
        }
    }
    let text = scrape().await;
    // Every method outside the known list is one value, every unknown path another: a handful
    // of series, not thousands.
    let requests_series = series(&text, "payoutd_http_requests_total");
    let latency_series = series(&text, "payoutd_http_request_duration_seconds_count");
    assert!(requests_series <= 12, "{requests_series} series in\n{text}");
    assert!(latency_series <= 8, "{latency_series} series in\n{text}");
    assert!(text.contains("method=\"OTHER\""), "{text}");
    assert!(!text.contains("XFOO"), "{text}");
    assert!(text.len() < 64 * 1024, "{} bytes", text.len());
}
