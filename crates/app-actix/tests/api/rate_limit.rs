//! Rate limiting per API key (docs/API.md, Conventions): 429 `REQ010` with `retry-after`, per key,
//! counted only for authenticated requests.

use std::num::NonZeroU32;

use crate::helpers::{now_ms, spawn_app_with};

#[tokio::test]
async fn a_key_past_its_burst_gets_429_with_retry_after_and_other_keys_do_not() {
    let app = spawn_app_with(|c| {
        c.rate_limit = (NonZeroU32::new(1).unwrap(), NonZeroU32::new(5).unwrap());
    })
    .await;
    let path = format!("/api/subaccount/{}", app.a.subaccount_id);
    // Bad signatures with B's key id do not spend B's budget.
    for _ in 0..10 {
        let forged = app
            .client
            .get(format!(
                "{}/api/subaccount/{}",
                app.base, app.b.subaccount_id
            ))
            .header("x-api-key", &app.b.api_key)
            .header("signature", format!("{}.deadbeef", now_ms()))
            .send()
            .await
            .unwrap();
        assert_eq!(forged.status().as_u16(), 401);
    }
    for _ in 0..5 {
        assert_eq!(app.get(&app.a, &path).await.status, 200);
    }
    let limited = app.get(&app.a, &path).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.codes(), ["REQ010"]);
    assert_eq!(limited.body["message"], "Request failed");
    let retry_after: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    let b_path = format!("/api/subaccount/{}", app.b.subaccount_id);
    for _ in 0..5 {
        assert_eq!(
            app.get(&app.b, &b_path).await.status,
            200,
            "B has its own bucket"
        );
    }
    // The bucket refills at the rate.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert_eq!(app.get(&app.a, &path).await.status, 200);
}
