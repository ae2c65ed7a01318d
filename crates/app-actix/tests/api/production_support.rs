//! Production mode's test helpers, shared by the production tests, the console's and the
//! browser tests: rails open every day with a cut-off every minute, payees confirmed through
//! their link, payouts, the admin CLI against the application's database, waiting.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use adapters_sandbox::SandboxNotifier;
use app_actix::production_config::ProductionSettings;
use app_actix::startup::build_store;
use app_actix::system::{RandomIds, SystemClock};
use domain::receiver::operator::{OperatorKycService, parse_decision};
use serde_json::json;

use crate::helpers::{TestApp, receiver_body};

/// `settings` with every rail's Saturdays and Sundays open. The tests run on any day of the
/// week against a cut-off every minute; `check-config` refuses `open_on_weekends` on a bank file
/// rail (its scheme settles on business days only), so the tests open them on the checked
/// settings, after the check.
pub(crate) fn open_every_day(mut settings: ProductionSettings) -> ProductionSettings {
    for rail in settings.rails.values_mut() {
        rail.calendar = Arc::new((*rail.calendar).clone().with_weekends_open(true));
    }
    settings
}

/// Every minute of the day.
pub(crate) fn every_minute() -> String {
    let cutoffs: Vec<String> = (0..24 * 60)
        .map(|m| format!("\"{:02}:{:02}\"", m / 60, m % 60))
        .collect();
    cutoffs.join(", ")
}

/// Every minute of every day is a cut-off (weekends opened by [`open_every_day`]), so a batch
/// runs within a minute whatever the day the tests run on; same-day settlement.
pub(crate) fn config(outbound: &Path, inbound: &Path) -> String {
    format!(
        r#"
[rails."eur/sepa"]
file_prefix = "TEST"
cutoffs = [{cutoffs}]
settlement_days = 0
debtor_name = "Payoutd Test GmbH"
debtor_iban = "DE02120300000000202051"
debtor_bic = "BYLADEMM"
initiating_party_name = "Payoutd Test GmbH"

[rails."eur/sepa".transport]
kind = "directory"
outbound_dir = "{outbound}"
inbound_dir = "{inbound}"
poll_interval_secs = 1

[smtp]
host = "127.0.0.1"
port = 2525
tls = "none"
from = "payouts@example.com"

[kyc]
provider = "manual"
"#,
        cutoffs = every_minute(),
        outbound = outbound.display(),
        inbound = inbound.display(),
    )
}

pub(crate) async fn wait_for(what: &str, mut check: impl AsyncFnMut() -> bool) {
    for _ in 0..900 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The payloads of the payout's events, in order.
pub(crate) async fn event_payloads(app: &TestApp, payout: &str) -> Vec<serde_json::Value> {
    use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Jsonb)]
        payload: serde_json::Value,
    }
    let mut conn = AsyncPgConnection::establish(&app.config.database.url)
        .await
        .unwrap();
    let rows: Vec<Row> = diesel::sql_query(
        "SELECT payload FROM outbox_events WHERE object_id = $1::uuid ORDER BY sequence",
    )
    .bind::<diesel::sql_types::Text, _>(payout)
    .load(&mut conn)
    .await
    .unwrap();
    rows.into_iter().map(|r| r.payload).collect()
}

/// `payoutd ARGS` against the application's database.
pub(crate) fn admin_output(app: &TestApp, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_payoutd"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &app.config.database.url)
        .env(
            "PAYOUT_MASTER_KEY",
            hex::encode(app.config.master_key.expose()),
        )
        .output()
        .expect("payoutd runs")
}

/// Its stdout; it must succeed.
pub(crate) fn admin_cli(app: &TestApp, args: &[&str]) -> Vec<u8> {
    let output = admin_output(app, args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

pub(crate) async fn payout(app: &TestApp, id: &str) -> serde_json::Value {
    let reply = app.get(&app.a, &format!("/api/payout/{id}")).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["payload"].clone()
}

pub(crate) async fn balance_in(app: &TestApp, asset: &str) -> (i64, i64) {
    let reply = app
        .get(
            &app.a,
            &format!(
                "/api/subaccount/balance/{}?asset={asset}",
                app.a.subaccount_id
            ),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    (
        reply.body["payload"]["available"].as_i64().unwrap(),
        reply.body["payload"]["pending"].as_i64().unwrap(),
    )
}

/// A receiver with KYC completed and an account of `route` confirmed through its link:
/// (receiver id, account id).
pub(crate) async fn payee(
    app: &TestApp,
    notifier: &SandboxNotifier,
    email: &str,
    route: &str,
    account: serde_json::Value,
) -> (String, String) {
    let store = Arc::new(build_store(&app.config).unwrap());
    let kyc = OperatorKycService::new(store, Arc::new(SystemClock), Arc::new(RandomIds::default()));
    let created = app
        .post(&app.a, "/api/receiver", &receiver_body(&app.a, email))
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let receiver = created.body["payload"]["receiver_id"]
        .as_str()
        .unwrap()
        .to_owned();
    kyc.decide(
        &receiver,
        parse_decision("completed").unwrap(),
        None,
        "operator:test",
        &domain::audit::AuditContext::cli(Some("test")),
    )
    .await
    .unwrap();
    let mut body = account;
    body["receiver_id"] = json!(receiver);
    let sent_before = notifier.sent().len();
    let created = app
        .post(&app.a, &format!("/api/receiver-account/{route}"), &body)
        .await;
    assert_eq!(created.status, 200, "{route}: {}", created.body);
    let account_id = created.body["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let link = notifier.sent()[sent_before].confirm_url.expose().clone();
    let path = link.trim_start_matches(&app.config.public_url);
    let confirmed = app
        .client
        .post(format!("{}{path}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(confirmed.status(), 200);
    (receiver, account_id)
}

/// A payout of `amount` in `currency` to `payee` (receiver id, account id): its id.
pub(crate) async fn pay(
    app: &TestApp,
    payee: &(String, String),
    currency: &str,
    amount: i64,
) -> String {
    let (receiver, account_id) = payee;
    let created = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account_id, "amount": amount, "currency": currency}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A receiver with KYC completed, an account of `route` confirmed through its link, and a
/// payout of `amount` to it: (payout id, account id).
pub(crate) async fn payee_with_payout(
    app: &TestApp,
    notifier: &SandboxNotifier,
    email: &str,
    route: &str,
    account: serde_json::Value,
    currency: &str,
    amount: i64,
) -> (String, String) {
    let payee = payee(app, notifier, email, route, account).await;
    let payout = pay(app, &payee, currency, amount).await;
    (payout, payee.1)
}

/// Asks for `method`'s cut-off now (`payoutd admin run-cutoff`), so that the payouts waiting
/// are filed at the serving instance's next batch pass rather than at a later minute's cut-off
/// (the test of the scheduled cut-off itself does not use it). The minute's cut-off may have
/// come first: nothing waiting, or its file being sent, is as good.
pub(crate) fn file_now(app: &TestApp, method: &str) {
    let output = admin_output(app, &["admin", "run-cutoff", "--method", method]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success()
            || stderr.contains("is waiting for a cut-off")
            || stderr.contains("are being sent to the rail now"),
        "run-cutoff --method {method}: {stderr}"
    );
}

/// Returns once the next minute (a cut-off of [`every_minute`]) is at least 10 s away, so that
/// payouts created right after it join one batch however slow the database is (on a loaded
/// Citus cluster, setting up a payee took long enough for a cut-off to fall between two).
pub(crate) async fn clear_of_a_cutoff() {
    use chrono::Timelike;
    let second = chrono::Utc::now().second();
    if second >= 50 {
        tokio::time::sleep(Duration::from_secs(u64::from(61 - second))).await;
    }
}
