//! Secrets and raw account data never reach the logs: a scenario touching every secret runs with
//! a subscriber that captures every line (all levels, JSON like production), then the captured
//! text is searched.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::json;
use tracing_subscriber::fmt::MakeWriter;

// Shares the black-box helpers; not every helper is used here.
#[allow(dead_code)]
#[path = "api/helpers.rs"]
mod helpers;

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Capture {
    type Writer = Capture;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[tokio::test]
async fn no_secret_or_raw_account_value_is_ever_logged() {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(capture.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let app = helpers::spawn_app().await;
    let receiver = app.create_receiver(&app.a, "ada@example.com").await;
    let account = json!({"receiver_id": receiver, "bsb": "062-000", "account_number": "987612345"});
    let created = app
        .post(&app.a, "/api/receiver-account/aud/direct-entry", &account)
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let sepa =
        json!({"receiver_id": receiver, "iban": "DE89370400440532013000", "bic": "COBADEFFXXX"});
    assert_eq!(
        app.post(&app.a, "/api/receiver-account/eur/sepa", &sepa)
            .await
            .status,
        200
    );
    let duplicate = app
        .post(&app.a, "/api/receiver-account/aud/direct-entry", &account)
        .await;
    assert_eq!(duplicate.codes(), ["REAC230"]);
    let verify = json!({"subaccount_id": app.a.subaccount_id, "account_data": {"account_number": "987612345"}});
    assert_eq!(
        app.post(&app.a, "/api/receiver-account/verify", &verify)
            .await
            .body["exists"],
        true
    );
    let token_url = app.sandbox().notifier.sent()[0]
        .confirm_url
        .expose()
        .clone();
    let token = token_url.rsplit('/').next().unwrap().to_owned();
    let shown = app
        .client
        .get(format!("{}/confirm/{token}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(shown.status().as_u16(), 200);
    let confirm = app
        .client
        .post(format!("{}/confirm/{token}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(confirm.status().as_u16(), 200);
    let forged = helpers::Tenant {
        api_secret: "sk_forged".to_owned(),
        ..app.a.clone()
    };
    assert_eq!(
        app.get(&forged, &format!("/api/subaccount/{}", app.a.subaccount_id))
            .await
            .status,
        401
    );

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("\"request_id\""),
        "the capture must hold the request log lines"
    );
    assert!(
        logs.contains("/api/receiver-account/verify"),
        "verify was logged as a route"
    );
    for secret in [
        app.a.api_secret.as_str(),
        app.b.api_secret.as_str(),
        "987612345",
        "062000",
        "DE89370400440532013000",
        token.as_str(),
    ] {
        assert!(!logs.contains(secret), "{secret} reached the logs");
    }
}
