//! Receivers over HTTP: create, read, list with filters and keyset paging, validation.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::helpers::{receiver_body, spawn_app};

#[tokio::test]
async fn create_then_read_it_back() {
    let app = spawn_app().await;
    let mut body = receiver_body(&app.a, "Ada@Example.com");
    body["middle_name"] = "Byron".into();
    body["gender"] = "f".into();
    body["reference"] = "crm-1".into();
    body["address2"] = "Level 2".into();
    let created = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.body["message"], "Receiver created successfully");
    let payload = &created.body["payload"];
    assert_eq!(
        (
            &payload["first_name"],
            &payload["last_name"],
            &payload["email"]
        ),
        (&"Ada".into(), &"Lovelace".into(), &"Ada@Example.com".into())
    );
    let id = payload["receiver_id"].as_str().unwrap();

    let got = app.get(&app.a, &format!("/api/receiver/{id}")).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body["message"], "Receiver found");
    let r = &got.body["payload"];
    assert_eq!(r["id"], id);
    assert_eq!(
        (r["status"].as_str(), r["kyc_status"].as_str()),
        (Some("pending"), Some("pending"))
    );
    assert_eq!(
        (r["gender"].as_str(), r["dob"].as_str()),
        (Some("F"), Some("1990-12-10"))
    );
    assert_eq!(r["middle_name"], "Byron");
    assert_eq!(r["reference"], "crm-1");
    assert_eq!(r["address_data"]["country"], "AUS");
    assert_eq!(r["address_data"]["address2"], "Level 2");
    assert!(r["applicant_id"].as_str().is_some_and(|a| !a.is_empty()));
    let created_at = r["created_at"].as_str().unwrap();
    assert!(
        created_at.len() == 13 && created_at.bytes().all(|b| b.is_ascii_digit()),
        "{created_at}"
    );
}

#[tokio::test]
async fn every_failing_field_is_reported_at_once() {
    let app = spawn_app().await;
    let body = json!({
        "subaccount_id": app.a.subaccount_id,
        "first_name": "Ada3",
        "last_name": "L".repeat(256),
        "email": "not-an-email",
        "dob": "2999-01-01",
        "dialcode": "12345",
        "phone": "12",
        "address": "1. Street",
        "address2": "Unit 2.",
        "gender": "X",
        "city": "Syd#ney",
        "state": "NSW",
        "postcode": "2000",
        "country": "ZZZ",
        "middle_name": 7,
        "colour": "blue"
    });
    let reply = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.body["message"], "Create receiver failed");
    let codes: HashSet<String> = reply.codes().into_iter().collect();
    let expected: HashSet<String> = [
        "REVR215", "REVR226", "REVR214", "REVR223", "REVR218", "REVR219", "REVR220", "REVR221",
        "REVR217", "REVR222", "REVR224", "REQ004", "REQ005",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(codes, expected, "{}", reply.body);
    let errors = reply.body["error"].as_array().unwrap();
    assert!(
        errors
            .iter()
            .all(|e| e["message"].as_str().is_some_and(|m| !m.is_empty()))
    );
    assert!(
        errors
            .iter()
            .any(|e| e["code"] == "REVR226" && e["field"] == "last_name")
    );
}

#[tokio::test]
async fn missing_fields_each_get_their_required_code() {
    let app = spawn_app().await;
    let reply = app.post(&app.a, "/api/receiver", &json!({})).await;
    let mut codes = reply.codes();
    codes.sort();
    assert_eq!(
        codes,
        [
            "REVR202", "REVR203", "REVR204", "REVR205", "REVR206", "REVR207", "REVR208", "REVR210",
            "REVR211", "REVR212", "REVR213", "REVR223"
        ]
    );
}

#[tokio::test]
async fn emails_are_unique_per_subaccount_case_insensitively_and_references_too() {
    let app = spawn_app().await;
    app.create_receiver(&app.a, "ada@example.com").await;
    let again = app
        .post(
            &app.a,
            "/api/receiver",
            &receiver_body(&app.a, "ADA@EXAMPLE.COM"),
        )
        .await;
    assert_eq!(
        (again.status, again.codes()),
        (400, vec!["REVR201".to_owned()])
    );
    assert_eq!(again.body["error"][0]["message"], "Email already exist");
    // Another subaccount may use the same e-mail.
    app.create_receiver(&app.b, "ada@example.com").await;

    let mut first = receiver_body(&app.a, "one@example.com");
    first["reference"] = "ref-1".into();
    assert_eq!(app.post(&app.a, "/api/receiver", &first).await.status, 200);
    let mut second = receiver_body(&app.a, "two@example.com");
    second["reference"] = "ref-1".into();
    assert_eq!(
        app.post(&app.a, "/api/receiver", &second).await.codes(),
        ["REVR225"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creation_of_one_email_creates_exactly_one_receiver() {
    let app = spawn_app().await;
    let body = receiver_body(&app.a, "race@example.com");
    let replies =
        futures_util::future::join_all((0..12).map(|_| app.post(&app.a, "/api/receiver", &body)))
            .await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let duplicate = replies.iter().filter(|r| r.codes() == ["REVR201"]).count();
    assert_eq!((ok, duplicate), (1, 11), "{replies:?}");
    let listed = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&email=race@example.com",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(listed.body["payload"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn unknown_and_malformed_ids_are_not_found() {
    let app = spawn_app().await;
    for id in [
        "00000000-0000-4000-8000-000000000000",
        "not-a-uuid",
        "%20",
        "1",
    ] {
        let reply = app.get(&app.a, &format!("/api/receiver/{id}")).await;
        assert_eq!(
            (reply.status, reply.codes()),
            (400, vec!["REVR101".to_owned()]),
            "{id}"
        );
        assert_eq!(reply.body["message"], "Get receiver failed");
    }
}

fn ids(page: &Value) -> Vec<String> {
    page["payload"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn lists_page_newest_first_with_an_opaque_lastkey() {
    let app = spawn_app().await;
    let mut created = Vec::new();
    for n in 0..23 {
        created.push(
            app.create_receiver(&app.a, &format!("r{n}@example.com"))
                .await,
        );
    }
    created.reverse();
    let base = format!(
        "/api/receiver?subaccount_id={}&limit=10",
        app.a.subaccount_id
    );
    let mut seen = Vec::new();
    let mut path = base.clone();
    let mut pages = 0;
    loop {
        let page = app.get(&app.a, &path).await;
        assert_eq!(page.status, 200, "{}", page.body);
        assert_eq!(page.body["message"], "Receivers found");
        assert!(page.body["payload"][0].get("applicant_id").is_none());
        seen.extend(ids(&page.body));
        pages += 1;
        match page.body["lastkey"].as_str() {
            Some(lastkey) => path = format!("{base}&lastkey={lastkey}"),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, created);

    let default = app
        .get(
            &app.a,
            &format!("/api/receiver?subaccount_id={}", app.a.subaccount_id),
        )
        .await;
    assert_eq!(ids(&default.body).len(), 10);
}

#[tokio::test]
async fn filters_match_and_bad_query_values_are_rejected() {
    let app = spawn_app().await;
    let mut body = receiver_body(&app.a, "Grace@Example.com");
    body["first_name"] = "Grace".into();
    body["country"] = "NZL".into();
    let reply = app.post(&app.a, "/api/receiver", &body).await;
    let grace = reply.body["payload"]["receiver_id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.create_receiver(&app.a, "ada@example.com").await;
    let sub = app.a.subaccount_id.clone();
    let list = |query: &str| {
        let path = format!("/api/receiver?subaccount_id={sub}&{query}");
        let app = &app;
        async move { app.get(&app.a, &path).await }
    };
    assert_eq!(
        ids(&list("email=grace@EXAMPLE.com").await.body),
        std::slice::from_ref(&grace)
    );
    assert_eq!(
        ids(&list("first_name=Grace").await.body),
        std::slice::from_ref(&grace)
    );
    assert_eq!(
        ids(&list("country=nzl").await.body),
        std::slice::from_ref(&grace)
    );
    assert_eq!(ids(&list("status=1&kyc_status=0").await.body).len(), 2);
    assert_eq!(ids(&list("status=2").await.body).len(), 0);
    assert_eq!(ids(&list("first_name=grace").await.body).len(), 0);

    for (query, code) in [
        ("limit=0", "REQ002"),
        ("limit=101", "REQ002"),
        ("limit=ten", "REQ002"),
        ("status=7", "REQ002"),
        ("kyc_status=3", "REQ002"),
        ("dob=1990-13-01", "REQ002"),
        ("gender=Q", "REQ002"),
        ("favourite=blue", "REQ005"),
        ("lastkey=tampered", "REQ003"),
    ] {
        let reply = list(query).await;
        assert_eq!(
            (reply.status, reply.codes()),
            (400, vec![code.to_owned()]),
            "{query}"
        );
    }
    let missing = app.get(&app.a, "/api/receiver").await;
    assert_eq!(missing.codes(), ["REVR202"]);
}

#[tokio::test]
async fn a_cursor_from_another_subaccount_is_rejected() {
    let app = spawn_app().await;
    for n in 0..3 {
        app.create_receiver(&app.b, &format!("b{n}@example.com"))
            .await;
    }
    let page = app
        .get(
            &app.b,
            &format!(
                "/api/receiver?subaccount_id={}&limit=1",
                app.b.subaccount_id
            ),
        )
        .await;
    let lastkey = page.body["lastkey"].as_str().unwrap();
    let stolen = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&lastkey={lastkey}",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(stolen.codes(), ["REQ003"]);
}

#[tokio::test]
async fn non_ascii_emails_are_compared_case_insensitively_too() {
    let app = spawn_app().await;
    let id = app.create_receiver(&app.a, "JOSÉ@example.com").await;
    let again = app
        .post(
            &app.a,
            "/api/receiver",
            &receiver_body(&app.a, "josé@EXAMPLE.com"),
        )
        .await;
    assert_eq!(again.codes(), ["REVR201"]);
    let found = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&email=Jos%C3%A9%40example.com",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(ids(&found.body), std::slice::from_ref(&id));
    let padded = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&first_name=%20Ada%20",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(ids(&padded.body), [id]);
}

#[tokio::test]
async fn emails_differing_by_width_quoting_case_folding_or_idna_are_duplicates() {
    let app = spawn_app().await;
    for (first, duplicates) in [
        (
            "jose@example.com",
            &[
                "ｊｏｓｅ@example.com",
                "\"jose\"@example.com",
                "JOSE@Example.COM",
            ][..],
        ),
        (
            "straße@example.com",
            &["STRASSE@example.com", "strasse@example.com"][..],
        ),
        (
            "maria@exämple.com",
            &["maria@xn--exmple-cua.com", "MARIA@EXÄMPLE.COM"][..],
        ),
        ("ｌｅｅ@example.com", &["lee@example.com"][..]),
    ] {
        let id = app.create_receiver(&app.a, first).await;
        for duplicate in duplicates {
            let again = app
                .post(&app.a, "/api/receiver", &receiver_body(&app.a, duplicate))
                .await;
            assert_eq!(
                (again.status, again.codes()),
                (400, vec!["REVR201".to_owned()]),
                "{first} / {duplicate}: {}",
                again.body
            );
        }
        // The e-mail is kept and answered as sent.
        let got = app.get(&app.a, &format!("/api/receiver/{id}")).await;
        assert_eq!(got.body["payload"]["email"], first);
    }
    // A quoted local part that is not a dot-atom names another mailbox.
    app.create_receiver(&app.a, "\"jo se\"@example.com").await;
    // The list filter compares by the same key.
    let found = app
        .get(
            &app.a,
            &format!(
                "/api/receiver?subaccount_id={}&email=%EF%BD%8A%EF%BD%8F%EF%BD%93%EF%BD%85%40example.com",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(
        found.body["payload"]
            .as_array()
            .map(|list| list.iter().map(|r| r["email"].clone()).collect::<Vec<_>>()),
        Some(vec![Value::from("jose@example.com")]),
        "{}",
        found.body
    );
}

#[tokio::test]
async fn control_format_and_invisible_characters_get_each_fields_code() {
    let app = spawn_app().await;
    for (field, value, code) in [
        // The security probe.
        ("first_name", "\u{3164}", "REVR215"),
        ("address", "12 Smith St\u{FF0E}", "REVR220"),
        ("address", "P\u{2024}O Box 5", "REVR220"),
        ("address", "12 \u{202E}tS htimS", "REVR220"),
        ("state", "VIC\r\nNSW", "REQ009"),
        // Their neighbours.
        ("first_name", "Ada\u{200B}", "REVR215"),
        ("last_name", "Love\u{FEFF}lace", "REVR216"),
        ("middle_name", "\u{FFA0}", "REVR227"),
        ("address2", "Unit\u{2066}4", "REVR221"),
        ("city", "Syd\u{00AD}ney", "REVR222"),
        ("email", "ada\u{202E}@example.com", "REVR214"),
        ("postcode", "20\u{200D}00", "REQ009"),
        ("reference", "crm\t1", "REQ009"),
    ] {
        let mut body = receiver_body(&app.a, "ada@example.com");
        body[field] = value.into();
        let reply = app.post(&app.a, "/api/receiver", &body).await;
        assert_eq!(
            (reply.status, reply.codes()),
            (400, vec![code.to_owned()]),
            "{field} {value:?}: {}",
            reply.body
        );
        assert_eq!(reply.body["error"][0]["field"], field);
    }
    // Full-width letters are letters, and are kept as sent.
    let mut body = receiver_body(&app.a, "ada@example.com");
    body["first_name"] = "Ａｄａ".into();
    let created = app.post(&app.a, "/api/receiver", &body).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(created.body["payload"]["first_name"], "Ａｄａ");
}
