//! Authentication (docs/API.md, Authentication): every AUTH code, replay, v2, revocation.

use std::time::Duration;

use domain::auth::SignaturePolicy;

use crate::helpers::{
    Reply, Tenant, TestApp, now_ms, receiver_body, sign, spawn_app, spawn_app_with, subaccount,
};

async fn get_with(
    app: &TestApp,
    key: Option<&str>,
    signature: Option<&str>,
    version: Option<&str>,
) -> Reply {
    let mut request = app.client.get(format!(
        "{}/api/subaccount/{}",
        app.base, app.a.subaccount_id
    ));
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    if let Some(signature) = signature {
        request = request.header("signature", signature);
    }
    if let Some(version) = version {
        request = request.header("x-signature-version", version);
    }
    app.send(request).await
}

fn only(reply: &Reply, status: u16, code: &str) {
    assert_eq!(
        (reply.status, reply.codes()),
        (status, vec![code.to_owned()]),
        "{}",
        reply.body
    );
    assert_eq!(reply.body["message"], "Authentication failed");
}

#[tokio::test]
async fn every_rejection_has_its_code() {
    let app = spawn_app().await;
    let key = app.a.api_key.as_str();
    let good = sign(&app.a, now_ms(), None);
    only(&get_with(&app, None, None, None).await, 401, "AUTH101");
    only(&get_with(&app, Some(key), None, None).await, 401, "AUTH101");
    only(
        &get_with(&app, None, Some(&good), None).await,
        401,
        "AUTH101",
    );
    only(
        &get_with(&app, Some("pk_nobody"), Some(&good), None).await,
        401,
        "AUTH102",
    );
    only(
        &get_with(&app, Some(key), Some("garbage"), None).await,
        401,
        "AUTH103",
    );
    only(
        &get_with(&app, Some(key), Some(&good), Some("9")).await,
        401,
        "AUTH103",
    );
    let forged = Tenant {
        api_secret: "sk_wrong".to_owned(),
        ..app.a.clone()
    };
    only(
        &get_with(&app, Some(key), Some(&sign(&forged, now_ms(), None)), None).await,
        401,
        "AUTH104",
    );
    let stale = sign(&app.a, now_ms() - 301_000, None);
    only(
        &get_with(&app, Some(key), Some(&stale), None).await,
        401,
        "AUTH105",
    );
    let ahead = sign(&app.a, now_ms() + 301_000, None);
    only(
        &get_with(&app, Some(key), Some(&ahead), None).await,
        401,
        "AUTH105",
    );
    // Another tenant's valid signature does not open this tenant's key.
    only(
        &get_with(&app, Some(key), Some(&sign(&app.b, now_ms(), None)), None).await,
        401,
        "AUTH104",
    );
    assert_eq!(
        get_with(&app, Some(key), Some(&good), None).await.status,
        200
    );
}

#[tokio::test]
async fn a_post_nonce_is_accepted_once_and_gets_are_repeatable() {
    let app = spawn_app().await;
    let signature = sign(&app.a, now_ms(), None);
    let body = serde_json::to_vec(&receiver_body(&app.a, "ada@example.com")).unwrap();
    let post = || {
        app.client
            .post(format!("{}/api/receiver", app.base))
            .header("x-api-key", &app.a.api_key)
            .header("signature", &signature)
            .body(body.clone())
    };
    assert_eq!(app.send(post()).await.status, 200);
    only(&app.send(post()).await, 401, "AUTH106");
    let get = sign(&app.a, now_ms(), None);
    assert_eq!(
        get_with(&app, Some(&app.a.api_key), Some(&get), None)
            .await
            .status,
        200
    );
    assert_eq!(
        get_with(&app, Some(&app.a.api_key), Some(&get), None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn a_captured_v1_get_signature_cannot_create_a_payout_of_a_new_subaccount() {
    // Without the credential cache, so that a policy change applies to the very next request.
    let app = spawn_app_with(|c| c.credential_cache = Duration::ZERO).await;
    // A new subaccount, as `admin create-subaccount` makes it: its policy is the default.
    let created = app
        .admin
        .create_subaccount("New shop", None, None)
        .await
        .unwrap();
    assert_eq!(created.signature_policy, SignaturePolicy::V2ForPosts);
    let key = app.admin.issue_key(created.id).await.unwrap();
    let shop = Tenant {
        subaccount_id: created.id.to_string(),
        api_key: key.api_key,
        api_secret: key.api_secret.expose().clone(),
    };
    app.admin
        .fund(created.id, "AUD", "100000", "test funding")
        .await
        .unwrap();

    // The merchant's client reads its subaccount with a v1 GET; a proxy logs the signature.
    let captured = sign(&shop, now_ms(), None);
    let read = app
        .send(
            app.client
                .get(format!(
                    "{}/api/subaccount/{}",
                    app.base, shop.subaccount_id
                ))
                .header("x-api-key", &shop.api_key)
                .header("signature", &captured),
        )
        .await;
    assert_eq!(read.status, 200, "{}", read.body);
    // Whoever holds it sends a POST of their own with it: refused before anything is read.
    let forged = |path: &str, body: Vec<u8>| {
        app.client
            .post(format!("{}{path}", app.base))
            .header("x-api-key", &shop.api_key)
            .header("signature", &captured)
            .header("content-type", "application/json")
            .body(body)
    };
    let receiver = serde_json::to_vec(&receiver_body(&shop, "mallory@example.com")).unwrap();
    only(
        &app.send(forged("/api/receiver", receiver.clone())).await,
        401,
        "AUTH107",
    );
    let payout = br#"{"receiver_id":"x","account_id":"y","amount":100,"currency":"AUD"}"#;
    only(
        &app.send(forged("/api/payout/single", payout.to_vec()))
            .await,
        401,
        "AUTH107",
    );
    assert_eq!(app.aud_balance(&shop).await, (100_000, 0), "no money moved");

    // The merchant's own v2 POST works.
    let v2 = app
        .send(
            app.client
                .post(format!("{}/api/receiver", app.base))
                .header("x-api-key", &shop.api_key)
                .header("x-signature-version", "2")
                .header(
                    "signature",
                    sign(&shop, now_ms(), Some(("POST", "/api/receiver", &receiver))),
                )
                .header("content-type", "application/json")
                .body(receiver.clone()),
        )
        .await;
    assert_eq!(v2.status, 200, "{}", v2.body);

    // An operator who allows v1 on POST (a client that can sign only v1) accepts it, once.
    app.admin
        .set_signature_policy(created.id, SignaturePolicy::AnyVersion)
        .await
        .unwrap();
    let other = serde_json::to_vec(&receiver_body(&shop, "v1@example.com")).unwrap();
    assert_eq!(
        app.send(forged("/api/receiver", other.clone()))
            .await
            .status,
        200
    );
    only(
        &app.send(forged("/api/receiver", other)).await,
        401,
        "AUTH106",
    );
}

#[tokio::test]
async fn v2_signs_method_path_and_body_and_can_be_required() {
    // Without the credential cache, so that requiring v2 applies to the very next request.
    let app = spawn_app_with(|c| c.credential_cache = Duration::ZERO).await;
    let path = "/api/receiver";
    let body = serde_json::to_vec(&receiver_body(&app.a, "v2@example.com")).unwrap();
    let v2 = |body_signed: &[u8]| sign(&app.a, now_ms(), Some(("POST", path, body_signed)));
    let post = |signature: String, body: Vec<u8>, version: Option<&str>| {
        let mut request = app
            .client
            .post(format!("{}{path}", app.base))
            .header("x-api-key", &app.a.api_key)
            .header("signature", signature)
            .body(body);
        if let Some(version) = version {
            request = request.header("x-signature-version", version);
        }
        request
    };
    let tampered = app.send(post(v2(&body), b"{}".to_vec(), Some("2"))).await;
    only(&tampered, 401, "AUTH104");
    let ok = app.send(post(v2(&body), body.clone(), Some("2"))).await;
    assert_eq!(ok.status, 200, "{}", ok.body);

    app.admin
        .set_signature_policy(subaccount(&app.a), SignaturePolicy::V2Only)
        .await
        .unwrap();
    let v1 = app
        .get(&app.a, &format!("/api/subaccount/{}", app.a.subaccount_id))
        .await;
    only(&v1, 401, "AUTH107");
    let get_path = format!("/api/subaccount/{}", app.a.subaccount_id);
    let signature = sign(&app.a, now_ms(), Some(("GET", &get_path, b"")));
    let v2_get = app
        .send(
            app.client
                .get(format!("{}{get_path}", app.base))
                .header("x-api-key", &app.a.api_key)
                .header("signature", signature)
                .header("x-signature-version", "2"),
        )
        .await;
    assert_eq!(v2_get.status, 200, "{}", v2_get.body);
    // Tenant B is unaffected.
    assert_eq!(
        app.get(&app.b, &format!("/api/subaccount/{}", app.b.subaccount_id))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn without_the_credential_cache_a_revoked_key_stops_at_once_and_a_second_key_keeps_working() {
    let app = spawn_app_with(|c| c.credential_cache = Duration::ZERO).await;
    let second = app.admin.issue_key(subaccount(&app.a)).await.unwrap();
    let rotated = Tenant {
        api_key: second.api_key,
        api_secret: second.api_secret.expose().clone(),
        ..app.a.clone()
    };
    let path = format!("/api/subaccount/{}", app.a.subaccount_id);
    assert_eq!(app.get(&rotated, &path).await.status, 200);
    app.admin.revoke_key(&app.a.api_key).await.unwrap();
    only(&app.get(&app.a, &path).await, 401, "AUTH102");
    assert_eq!(app.get(&rotated, &path).await.status, 200);
}

/// A signed GET of the subaccount on the instance at `base`, after `nonce_offset` ms (nonces
/// must differ).
async fn subaccount_at(app: &TestApp, base: &str, nonce_offset: i64) -> Reply {
    let request = app
        .client
        .get(format!("{base}/api/subaccount/{}", app.a.subaccount_id))
        .header("x-api-key", &app.a.api_key)
        .header("signature", sign(&app.a, now_ms() + nonce_offset, None));
    app.send(request).await
}

#[tokio::test]
async fn a_revocation_is_announced_so_every_instance_refuses_the_key_though_it_is_cached() {
    // Two instances of one worker each, keeping credentials for a minute: only the announced
    // revocation (PostgreSQL NOTIFY) can make them refuse the key before the minute is up.
    let app = spawn_app_with(|c| {
        c.workers = 1;
        c.credential_cache = Duration::from_secs(60);
    })
    .await;
    let second = app.second_instance();
    let bases = [app.base.clone(), second];
    let mut offset = 0;
    for base in &bases {
        offset += 1;
        assert_eq!(subaccount_at(&app, base, offset).await.status, 200);
    }
    app.admin.revoke_key(&app.a.api_key).await.unwrap();
    for base in &bases {
        let mut refused = None;
        // Well under the minute the cache would keep the key (the announcement takes
        // milliseconds; the loop allows for a slow machine).
        for _ in 0..250 {
            offset += 1;
            let reply = subaccount_at(&app, base, offset).await;
            if reply.status == 401 {
                refused = Some(reply);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let reply = refused.unwrap_or_else(|| panic!("{base} still accepts the revoked key"));
        only(&reply, 401, "AUTH102");
    }
}

#[tokio::test]
async fn with_a_short_credential_cache_a_revoked_key_stops_within_its_time_and_forged_keys_are_never_kept()
 {
    let path = |app: &TestApp| format!("/api/subaccount/{}", app.a.subaccount_id);
    let short = spawn_app_with(|c| c.credential_cache = Duration::from_millis(300)).await;
    assert_eq!(short.get(&short.a, &path(&short)).await.status, 200);
    short.admin.revoke_key(&short.a.api_key).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    only(&short.get(&short.a, &path(&short)).await, 401, "AUTH102");
    // A forged key is never kept, so nothing is served for it.
    let forged = Tenant {
        api_key: "pk_forged".to_owned(),
        ..short.a.clone()
    };
    only(&short.get(&forged, &path(&short)).await, 401, "AUTH102");
}
