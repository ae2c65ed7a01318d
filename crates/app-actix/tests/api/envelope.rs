//! The envelope and the statuses of docs/API.md, Conventions, on routes and non-routes.

use crate::helpers::spawn_app;

#[tokio::test]
async fn unknown_routes_and_wrong_methods_answer_in_the_envelope() {
    let app = spawn_app().await;
    let missing = app
        .send(app.client.get(format!("{}/api/nothing-here", app.base)))
        .await;
    assert_eq!(
        (missing.status, missing.codes()),
        (404, vec!["REQ006".to_owned()])
    );
    assert_eq!(missing.body["message"], "Request failed");
    let wrong = app
        .send(app.client.delete(format!("{}/api/receiver", app.base)))
        .await;
    assert_eq!(
        (wrong.status, wrong.codes()),
        (405, vec!["REQ007".to_owned()])
    );
}

#[tokio::test]
async fn request_ids_are_echoed_or_generated() {
    let app = spawn_app().await;
    let echoed = app
        .send(
            app.client
                .get(format!("{}/healthz", app.base))
                .header("x-request-id", "trace-123"),
        )
        .await;
    assert_eq!(echoed.headers["x-request-id"], "trace-123");
    let generated = app
        .send(app.client.get(format!("{}/healthz", app.base)))
        .await;
    let id = generated.headers["x-request-id"].to_str().unwrap();
    assert!(uuid::Uuid::parse_str(id).is_ok(), "{id}");
    let silly = app
        .send(
            app.client
                .get(format!("{}/healthz", app.base))
                .header("x-request-id", "a".repeat(500)),
        )
        .await;
    assert_ne!(
        silly.headers["x-request-id"].to_str().unwrap(),
        "a".repeat(500)
    );
}

#[tokio::test]
async fn health_and_readiness() {
    let app = spawn_app().await;
    let health = app
        .send(app.client.get(format!("{}/healthz", app.base)))
        .await;
    assert_eq!(
        (health.status, &health.body["payload"]["status"]),
        (200, &"up".into())
    );
    let ready = app
        .send(app.client.get(format!("{}/readyz", app.base)))
        .await;
    assert_eq!(
        (ready.status, &ready.body["payload"]["status"]),
        (200, &"ready".into())
    );
}

#[tokio::test]
async fn bodies_must_be_json_objects_and_at_most_64_kib() {
    let app = spawn_app().await;
    for body in [
        &b"not json"[..],
        b"[1,2]",
        b"\"text\"",
        b"",
        b"{\"a\":",
        b"\xff\xfe",
    ] {
        let reply = app.post_raw(&app.a, "/api/receiver", body.to_vec()).await;
        assert_eq!(
            (reply.status, reply.codes()),
            (400, vec!["REQ001".to_owned()]),
            "{body:?}"
        );
        assert_eq!(reply.body["message"], "Create receiver failed");
    }
    let huge = format!("{{\"first_name\":\"{}\"}}", "a".repeat(70 * 1024)).into_bytes();
    let reply = app.post_raw(&app.a, "/api/receiver", huge).await;
    assert_eq!(
        (reply.status, reply.codes()),
        (413, vec!["REQ008".to_owned()])
    );
}

#[tokio::test]
async fn nothing_partial_is_written_by_a_rejected_request() {
    let app = spawn_app().await;
    let mut body = crate::helpers::receiver_body(&app.a, "ada@example.com");
    body["country"] = "XYZ".into();
    let reply = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(reply.codes(), ["REVR224"]);
    let listed = app
        .get(
            &app.a,
            &format!("/api/receiver?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(listed.body["payload"].as_array().map(Vec::len), Some(0));
    // The e-mail is still free: nothing of the failed attempt was stored.
    app.create_receiver(&app.a, "ada@example.com").await;
}

#[tokio::test]
async fn undecodable_path_segments_stay_in_the_envelope() {
    let app = spawn_app().await;
    for path in ["/api/receiver/%FF%FE", "/api/subaccount/%C3%28"] {
        let reply = app.get(&app.a, path).await;
        assert!(
            reply.status == 400 || reply.status == 404,
            "{path}: {}",
            reply.status
        );
        assert!(!reply.codes().is_empty(), "{path}: {}", reply.body);
    }
}

#[tokio::test]
async fn a_repeated_key_is_refused_naming_it_and_never_read_as_the_last_value() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let account = app.create_account(&app.a, &receiver).await;
    for (path, body, field) in [
        (
            "/api/payout/single",
            format!(
                r#"{{"receiver_id":"{receiver}","account_id":"{account}","amount":1,"amount":5000,"currency":"AUD"}}"#
            ),
            "amount",
        ),
        (
            "/api/receiver",
            format!(
                r#"{{"subaccount_id":"{}","email":"a@example.com","email":"b@example.com"}}"#,
                app.a.subaccount_id
            ),
            "email",
        ),
        ("/api/receiver", r#"{"x":{"y":1,"y":2}}"#.to_owned(), "x.y"),
        // Verify reads its body like every other route: never the last of two values.
        (
            "/api/receiver-account/verify",
            format!(
                r#"{{"subaccount_id":"{}","account_data":{{"bsb":"999999","bsb":"012002"}}}}"#,
                app.a.subaccount_id
            ),
            "account_data.bsb",
        ),
        (
            "/api/receiver-account/verify",
            format!(
                r#"{{"subaccount_id":"{}","subaccount_id":"{}","account_data":{{"bsb":"012002"}}}}"#,
                app.b.subaccount_id, app.a.subaccount_id
            ),
            "subaccount_id",
        ),
    ] {
        let reply = app.post_raw(&app.a, path, body.into_bytes()).await;
        assert_eq!(
            (reply.status, reply.codes()),
            (400, vec!["REQ011".to_owned()]),
            "{path}: {}",
            reply.body
        );
        assert_eq!(reply.body["error"][0]["field"], field);
    }
    // Nothing was paid.
    let listed = app
        .get(
            &app.a,
            &format!("/api/payout/?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(
        listed.body["payload"].as_array().map(Vec::len),
        Some(0),
        "{}",
        listed.body
    );
}

#[tokio::test]
async fn a_number_no_parser_can_hold_is_a_wrong_type_of_its_field() {
    let app = spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let account = app.create_account(&app.a, &receiver).await;
    let body = format!(
        r#"{{"receiver_id":"{receiver}","account_id":"{account}","amount":1{},"currency":"AUD"}}"#,
        "0".repeat(400)
    );
    let reply = app
        .post_raw(&app.a, "/api/payout/single", body.into_bytes())
        .await;
    assert_eq!(
        (reply.status, reply.codes()),
        (400, vec!["REQ004".to_owned()]),
        "{}",
        reply.body
    );
    assert_eq!(reply.body["error"][0]["field"], "amount");
}

#[tokio::test]
async fn an_error_response_lists_at_most_fifty_problems_and_counts_the_rest() {
    let app = spawn_app().await;
    let keys: Vec<String> = (0..4_000).map(|i| format!("\"k{i}\":\"v\"")).collect();
    let body = format!("{{{}}}", keys.join(","));
    let request_size = body.len();
    let reply = app
        .post_raw(&app.a, "/api/receiver", body.into_bytes())
        .await;
    assert_eq!(reply.status, 400);
    let items = reply.body["error"].as_array().unwrap();
    assert_eq!(items.len(), 51, "50 listed and one that counts the rest");
    assert!(items[..50].iter().all(|item| item["code"] == "REQ005"));
    let last = &items[50];
    assert_eq!(last["code"], "REQ012");
    let listed_fields = items
        .iter()
        .filter(|item| item["field"].is_string())
        .count();
    assert_eq!(listed_fields, 50);
    // 4 000 unknown keys (and the missing required fields): the rest are counted.
    let message = last["message"].as_str().unwrap();
    let more: usize = message.split(' ').next().unwrap().parse().unwrap();
    assert!(more >= 4_000 - 50, "{message}");
    assert!(message.ends_with(" more problems were found than are listed"));
    let response_size = reply.body.to_string().len();
    assert!(
        response_size < request_size / 10,
        "{response_size} bytes answered {request_size}"
    );
}

#[tokio::test]
async fn an_undecodable_query_is_req002_not_an_unknown_parameter() {
    let app = spawn_app().await;
    for query in ["%FF=1", "subaccount_id=%C3%28", "limit=1&%E2%82=2"] {
        let reply = app
            .get(
                &app.a,
                &format!(
                    "/api/receiver?subaccount_id={}&{query}",
                    app.a.subaccount_id
                ),
            )
            .await;
        assert_eq!(
            (reply.status, reply.codes()),
            (400, vec!["REQ002".to_owned()]),
            "{query}: {}",
            reply.body
        );
        assert!(reply.body["error"][0].get("field").is_none(), "{query}");
    }
}

#[tokio::test]
async fn a_request_the_http_parser_refuses_gets_a_bare_400_and_its_connection_closes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = spawn_app().await;
    let address = app.base.trim_start_matches("http://").to_owned();
    for request in [
        // Both framings: a request smuggling attempt.
        &b"POST /api/receiver HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"[..],
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n",
    ] {
        let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
        stream.write_all(request).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    }
    // The server is unharmed.
    let health = app
        .send(app.client.get(format!("{}/healthz", app.base)))
        .await;
    assert_eq!(health.status, 200);
}

#[tokio::test]
async fn head_is_answered_as_get_without_a_body_wherever_get_is_allowed() {
    let app = spawn_app().await;
    let get = app
        .client
        .get(format!("{}/healthz", app.base))
        .send()
        .await
        .unwrap();
    let head = app
        .client
        .head(format!("{}/healthz", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(head.status().as_u16(), 200);
    assert_eq!(
        head.headers()["content-type"],
        get.headers()["content-type"]
    );
    assert!(head.bytes().await.unwrap().is_empty());

    // A route with an API key: authenticated as its GET is, and answered as it.
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let path = format!("/api/receiver/{receiver}");
    let signed = app
        .client
        .head(format!("{}{path}", app.base))
        .header("x-api-key", &app.a.api_key)
        .header(
            "signature",
            crate::helpers::sign(&app.a, crate::helpers::now_ms(), None),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status().as_u16(), 200);
    assert!(signed.bytes().await.unwrap().is_empty());
    let unsigned = app
        .client
        .head(format!("{}{path}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(unsigned.status().as_u16(), 401);

    // Where GET is not allowed, neither is HEAD.
    let post_only = app
        .client
        .head(format!("{}/api/payout/single", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(post_only.status().as_u16(), 405);
}
