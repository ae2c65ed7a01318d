//! Production mode with the ABA (`aud/direct-entry`), Standard 005 (`cad/eft`) and IB4B
//! (`nzd/direct-credit`) rails over directory transports, and the Interac partner API
//! (`cad/digital`) against a partner answering on loopback:
//!
//! - each file rail writes one file per batch that passes its format's independent checker
//!   (`bank-format-oracles`), and the bank's return file (written by `bank-formats`' bank side) fails
//!   its payout in progress, with the account, through the same inbound path as NACHA's;
//! - the Interac rail posts a signed batch request with its idempotency key, and the partner's
//!   signed status reports pushed to `POST /rail/interac/callback` settle and fail payouts, once
//!   however often they arrive; unsigned, badly signed, stale and malformed callbacks are
//!   refused and change nothing; a sandbox payoutd has no such route.

use std::path::Path;
use std::sync::{Arc, Mutex};

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use adapters_sandbox::SandboxNotifier;
use app_actix::production::Production;
use app_actix::production_config::ProductionSettings;
use app_actix::startup::build_store;
use bank_formats::interac::{
    self, BatchReceipt, BatchRequest, BatchVerdict, PaymentStatus, PaymentUpdate, ReportList,
    SIGNATURE_HEADER, StatusReport,
};
use chrono::Utc;
use domain::ids::SubaccountId;
use domain::rail::inbound_ports::InboundStore;
use serde_json::{Value, json};

use crate::helpers::{TestApp, spawn_app, spawn_production_app};
use crate::production_support::{
    admin_cli, admin_output, balance_in, clear_of_a_cutoff, event_payloads, every_minute, file_now,
    open_every_day, pay, payee, payee_with_payout, payout, wait_for,
};

const SMTP_AND_KYC: &str = r#"
[smtp]
host = "127.0.0.1"
port = 2525
tls = "none"
from = "payouts@example.com"

[kyc]
provider = "manual"
"#;

/// A rail table with a cut-off every minute and a directory transport.
fn file_rail(route: &str, settings: &str, dirs: &Path) -> String {
    file_rail_with_cutoffs(route, settings, dirs, &every_minute())
}

/// A rail table with `cutoffs` (quoted `HH:MM`, comma-separated) and a directory transport.
fn file_rail_with_cutoffs(route: &str, settings: &str, dirs: &Path, cutoffs: &str) -> String {
    let name = route.replace('/', "-");
    let (outbound, inbound) = (
        dirs.join(format!("{name}-out")),
        dirs.join(format!("{name}-in")),
    );
    std::fs::create_dir_all(&outbound).unwrap();
    std::fs::create_dir_all(&inbound).unwrap();
    format!(
        "[rails.\"{route}\"]\nfile_prefix = \"TEST\"\ncutoffs = [{cutoffs}]\n{settings}\n\
         [rails.\"{route}\".transport]\nkind = \"directory\"\noutbound_dir = \"{outbound}\"\n\
         inbound_dir = \"{inbound}\"\npoll_interval_secs = 1\n\n",
        outbound = outbound.display(),
        inbound = inbound.display(),
    )
}

/// The one file in `dir`, once it is there.
async fn the_file_in(dir: &Path) -> Vec<u8> {
    let mut found = None;
    wait_for(&format!("a file in {}", dir.display()), async || {
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        if let [entry] = names.as_slice() {
            found = Some(std::fs::read(entry.path()).unwrap());
            true
        } else {
            false
        }
    })
    .await;
    found.unwrap()
}

#[tokio::test]
async fn aba_cpa005_and_ib4b_files_pass_their_checkers_and_their_returns_fail_the_payouts() {
    use bank_formats::{aba, cpa005, ib4b};

    let dirs = tempfile::tempdir().unwrap();
    let text = format!(
        "{}{}{}{SMTP_AND_KYC}",
        file_rail(
            "aud/direct-entry",
            "bank_mnemonic = \"CBA\"\nuser_name = \"PAYOUTD TEST PTY LTD\"\napca_user_id = \"301500\"\n\
             description = \"PAYOUTS\"\nremitter_name = \"PAYOUTD TEST\"\ntrace_bsb = \"062000\"\n\
             trace_account = \"10203040\"\nself_balancing = true\n",
            dirs.path(),
        ),
        file_rail(
            "cad/eft",
            "originator_id = \"PAYOUTD001\"\ndata_centre = \"00310\"\noriginator_short_name = \"PAYOUTD TEST\"\n\
             originator_long_name = \"PAYOUTD TEST INC\"\nreturn_institution = \"000312345\"\n\
             return_account = \"1234567\"\ntransaction_code = 450\n",
            dirs.path(),
        ),
        file_rail(
            "nzd/direct-credit",
            "originating_account = \"0109020068389099\"\noriginator_name = \"PAYOUTD TEST\"\n",
            dirs.path(),
        ),
    );
    let settings = ProductionSettings::parse(&text, Path::new("payoutd.toml"), &|_| None)
        .unwrap_or_else(|problems| panic!("{problems:#?}"));
    let notifier = Arc::new(SandboxNotifier::new());
    let production = Production::build(open_every_day(settings), notifier.clone()).unwrap();
    let app = spawn_production_app(production, |_| {}).await;
    let sub = SubaccountId::parse(&app.a.subaccount_id).unwrap();
    for asset in ["AUD", "CAD", "NZD"] {
        app.admin
            .fund(sub, asset, "100000", "test funding")
            .await
            .unwrap();
    }

    // Names that need cleaning on the way into each format.
    let rails = [
        (
            "aud/direct-entry",
            json!({"bsb": "012-002", "account_number": "12345678"}),
            "AUD",
        ),
        (
            "cad/eft",
            json!({"routing_number": "12345-003", "account_number": "7654321", "account_type": "checking"}),
            "CAD",
        ),
        (
            "nzd/direct-credit",
            json!({"account_number": "01-902-0068389-00"}),
            "NZD",
        ),
    ];
    let mut paid = Vec::new();
    for (n, (route, account, currency)) in rails.into_iter().enumerate() {
        let (payout_id, account_id) = payee_with_payout(
            &app,
            &notifier,
            &format!("payee{n}@example.com"),
            route,
            account,
            currency,
            1_000 + i64::try_from(n).unwrap(),
        )
        .await;
        paid.push((route, payout_id, account_id));
    }
    for (route, _, _) in &paid {
        file_now(&app, route);
    }

    // Each file passes its format's checker and parses back.
    let out = |route: &str| dirs.path().join(format!("{}-out", route.replace('/', "-")));
    let inbound = |route: &str| dirs.path().join(format!("{}-in", route.replace('/', "-")));
    let aba_bytes = the_file_in(&out("aud/direct-entry")).await;
    bank_format_oracles::aba::check(&aba_bytes, bank_format_oracles::aba::Kind::Originated)
        .unwrap();
    let cpa_bytes = the_file_in(&out("cad/eft")).await;
    bank_format_oracles::cpa005::check(&cpa_bytes, b"\r\n").unwrap();
    let ib4b_bytes = the_file_in(&out("nzd/direct-credit")).await;
    assert_eq!(
        bank_format_oracles::ib4b::check(&ib4b_bytes).unwrap(),
        bank_format_oracles::ib4b::Kind::DirectCredit
    );
    for (route, id, _) in &paid {
        wait_for("the upload to be recorded", async || {
            payout(&app, id).await["provider_reference"] != ""
        })
        .await;
        assert_eq!(payout(&app, id).await["status"], "in_progress", "{route}");
    }

    // The banks return each payment, with a code that says the account is wrong.
    let today = Utc::now().date_naive();
    let aba_file = aba::parse(&aba_bytes).unwrap();
    let entry = aba_file
        .details
        .iter()
        .position(|d| !d.transaction_code.is_debit())
        .unwrap();
    assert_eq!(
        aba_file.details.len(),
        2,
        "a credit and its balancing debit"
    );
    let aba_returns = bank_simulator::aba::write_return_file(
        &aba_file,
        &[bank_simulator::aba::ReturnDecision {
            entry,
            code: aba::ReturnCode::AccountClosed,
        }],
        today,
    )
    .unwrap();
    bank_format_oracles::aba::check(&aba_returns, bank_format_oracles::aba::Kind::Returns).unwrap();
    std::fs::write(
        inbound("aud/direct-entry").join("returns.aba"),
        &aba_returns,
    )
    .unwrap();

    let cpa_file = cpa005::parse(&cpa_bytes).unwrap();
    let cpa_returns = bank_simulator::cpa005::write_return_file(
        &cpa_file,
        &[bank_simulator::cpa005::ReturnDecision {
            item: 0,
            reason: cpa005::ReturnCode::new(905).unwrap(),
        }],
        &bank_simulator::cpa005::ReturnFileOptions {
            creation_date: today,
            file_creation_number: 1,
            trace_prefix: "000300002".to_owned(),
            write: cpa005::WriteOptions::default(),
        },
    )
    .unwrap();
    bank_format_oracles::cpa005::check(&cpa_returns, b"\r\n").unwrap();
    std::fs::write(inbound("cad/eft").join("returns.cpa"), &cpa_returns).unwrap();

    let ib4b::Ib4bFile::DirectCredit(ib4b_file) = ib4b::parse(&ib4b_bytes).unwrap() else {
        panic!("a direct credit file")
    };
    let dishonours = bank_simulator::ib4b::write_dishonour_file(
        &ib4b_file,
        &[bank_simulator::ib4b::DishonourDecision {
            your_reference: ib4b_file.transactions[0].yours.reference.clone(),
            reason: ib4b::DishonourReason::NoAccount,
        }],
        today,
    )
    .unwrap();
    assert_eq!(
        bank_format_oracles::ib4b::check(&dishonours).unwrap(),
        bank_format_oracles::ib4b::Kind::Dishonour
    );
    std::fs::write(
        inbound("nzd/direct-credit").join("dishonours.csv"),
        &dishonours,
    )
    .unwrap();

    for ((route, id, account), code) in paid.iter().zip(["3", "905", "02"]) {
        wait_for(&format!("the {route} return"), async || {
            payout(&app, id).await["status"] == "failed"
        })
        .await;
        let failure = event_payloads(&app, id).await.pop().unwrap();
        assert_eq!(failure["return_code"], code, "{route}: {failure}");
        let account = app
            .get(&app.a, &format!("/api/receiver-account/{account}"))
            .await;
        assert_eq!(
            account.body["payload"]["status"], "failed",
            "{route}: the account is wrong"
        );
    }
    // The holds are voided (fee 0): every amount is back.
    for asset in ["AUD", "CAD", "NZD"] {
        assert_eq!(balance_in(&app, asset).await, (100_000, 0), "{asset}");
    }
    // The same return again under another name: recorded, applied once.
    std::fs::write(inbound("cad/eft").join("returns-again.cpa"), &cpa_returns).unwrap();
    let store = build_store(&app.config).unwrap();
    wait_for("the second copy to be recorded", async || {
        store
            .list_reports(None, None, None, 100)
            .await
            .unwrap()
            .iter()
            .any(|l| l.file_name == "returns-again.cpa")
    })
    .await;
    assert_eq!(balance_in(&app, "CAD").await, (100_000, 0));
    assert!(
        app.admin
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );
}

/// What the test partner received.
#[derive(Default)]
struct PartnerBook {
    batches: Vec<BatchRequest>,
    keys: Vec<String>,
}

pub(crate) struct Partner {
    secret: String,
    book: Mutex<PartnerBook>,
}

fn signed(status: actix_web::http::StatusCode, secret: &str, body: Vec<u8>) -> HttpResponse {
    let signature = interac::sign(secret.as_bytes(), Utc::now().timestamp(), &body).unwrap();
    HttpResponse::build(status)
        .insert_header((SIGNATURE_HEADER, signature))
        .content_type("application/json")
        .body(body)
}

async fn receive_batch(
    partner: web::Data<Partner>,
    request: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let header = request
        .headers()
        .get(SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if interac::verify_signature(
        &header,
        &body,
        partner.secret.as_bytes(),
        Utc::now().timestamp(),
        300,
    )
    .is_err()
    {
        return HttpResponse::Unauthorized().finish();
    }
    let key = request
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let Ok(batch) = BatchRequest::parse(&body) else {
        return HttpResponse::BadRequest().finish();
    };
    let receipt = BatchReceipt::of(&batch, Utc::now()).to_bytes();
    let mut book = partner.book.lock().unwrap();
    let status = if book.keys.contains(&key) {
        actix_web::http::StatusCode::OK
    } else {
        book.keys.push(key);
        book.batches.push(batch);
        actix_web::http::StatusCode::CREATED
    };
    signed(status, &partner.secret, receipt)
}

async fn list_reports(partner: web::Data<Partner>) -> HttpResponse {
    let list = ReportList {
        report_ids: Vec::new(),
        has_more: false,
    };
    signed(
        actix_web::http::StatusCode::OK,
        &partner.secret,
        list.to_bytes(),
    )
}

/// A partner on loopback that accepts signed batch requests (idempotent by key) and has no
/// reports to poll: its reports arrive as callbacks, sent by the test.
async fn start_partner(secret: &str) -> (String, web::Data<Partner>) {
    let partner = web::Data::new(Partner {
        secret: secret.to_owned(),
        book: Mutex::new(PartnerBook::default()),
    });
    let data = partner.clone();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/v1/batches", web::post().to(receive_batch))
            .route("/v1/reports", web::get().to(list_reports))
    })
    .workers(1)
    .bind(("127.0.0.1", 0))
    .unwrap();
    let address = server.addrs()[0];
    tokio::spawn(server.run());
    (format!("http://{address}"), partner)
}

/// Posts `body` to the callback route with `signature` as `X-Partner-Signature`, if any.
pub(crate) async fn callback(
    app: &TestApp,
    signature: Option<String>,
    body: Vec<u8>,
) -> (u16, Value) {
    let mut request = app
        .client
        .post(format!("{}/rail/interac/callback", app.base))
        .header("content-type", "application/json")
        .body(body);
    if let Some(signature) = signature {
        request = request.header(SIGNATURE_HEADER, signature);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A production payoutd whose `cad/digital` rail posts to a partner on loopback, with two CAD
/// payouts of 2,000 and 2,001 cents sent in one batch request.
struct InteracPayouts {
    app: TestApp,
    partner: web::Data<Partner>,
    batch: BatchRequest,
    payouts: Vec<String>,
    references: Vec<String>,
}

/// The shared secret of the test partner.
pub(crate) const SECRET: &str = "partner-shared-secret-for-tests";

/// A production payoutd whose `cad/digital` rail goes through a partner on loopback (signing
/// with [`SECRET`]), with the notifier its confirmation requests go to and the partner.
pub(crate) async fn interac_app() -> (TestApp, Arc<SandboxNotifier>, web::Data<Partner>) {
    let (base_url, partner) = start_partner(SECRET).await;
    let text = format!(
        "[rails.\"cad/digital\"]\nfile_prefix = \"TEST\"\ncutoffs = [{cutoffs}]\nopen_on_weekends = true\n\
         partner_customer_id = \"PAYOUTD-TEST\"\nsender_name = \"Payoutd Test\"\n\n\
         [rails.\"cad/digital\".transport]\nkind = \"partner_api\"\nbase_url = \"{base_url}\"\n\
         shared_secret = \"env:INTERAC_SECRET\"\npoll_interval_secs = 1\n{SMTP_AND_KYC}",
        cutoffs = every_minute(),
    );
    let settings = ProductionSettings::parse(&text, Path::new("payoutd.toml"), &|name| {
        (name == "INTERAC_SECRET").then(|| SECRET.to_owned())
    })
    .unwrap_or_else(|problems| panic!("{problems:#?}"));
    let notifier = Arc::new(SandboxNotifier::new());
    let production = Production::build(open_every_day(settings), notifier.clone()).unwrap();
    let app = spawn_production_app(production, |_| {}).await;
    (app, notifier, partner)
}

async fn interac_payouts() -> InteracPayouts {
    let (app, notifier, partner) = interac_app().await;
    let sub = SubaccountId::parse(&app.a.subaccount_id).unwrap();
    app.admin
        .fund(sub, "CAD", "100000", "test funding")
        .await
        .unwrap();

    // Both payees first, then a payout to each, both in the batch of the next cut-off.
    let mut payees = Vec::new();
    for (n, recipient) in ["ada@example.ca", "grace@example.ca"]
        .into_iter()
        .enumerate()
    {
        payees.push(
            payee(
                &app,
                &notifier,
                &format!("payee{n}@example.com"),
                "cad/digital",
                json!({"recipient": recipient, "name": "Zoë O'Brien & Søn", "description": "Invoice 42"}),
            )
            .await,
        );
    }
    clear_of_a_cutoff().await;
    let mut payouts = Vec::new();
    for (n, payee) in payees.iter().enumerate() {
        payouts.push(pay(&app, payee, "CAD", 2_000 + i64::try_from(n).unwrap()).await);
    }
    file_now(&app, "cad/digital");
    wait_for("the batch request to reach the partner", async || {
        !partner.book.lock().unwrap().batches.is_empty()
    })
    .await;
    let batch = partner.book.lock().unwrap().batches[0].clone();
    assert_eq!(batch.payments.len(), 2);
    assert_eq!(batch.total_amount(), 4_001);
    let mut references = Vec::new();
    for id in &payouts {
        wait_for("the upload to be recorded", async || {
            payout(&app, id).await["provider_reference"] != ""
        })
        .await;
        let shown = payout(&app, id).await;
        assert_eq!(shown["status"], "in_progress");
        let reference = shown["provider_reference"].as_str().unwrap().to_owned();
        assert!(
            batch.payments.iter().any(|p| p.payment_id == reference),
            "{reference} is a payment of the batch"
        );
        references.push(reference);
    }
    InteracPayouts {
        app,
        partner,
        batch,
        payouts,
        references,
    }
}

/// A payment's update in a report.
fn update(reference: &str, status: PaymentStatus, code: Option<&str>) -> PaymentUpdate {
    PaymentUpdate {
        payment_id: reference.to_owned(),
        status,
        code: code.map(str::to_owned),
        reason: None,
        updated_at: Utc::now(),
    }
}

/// A signed callback of `report`: its status code.
async fn push(app: &TestApp, report: &StatusReport) -> u16 {
    let body = report.to_bytes().unwrap();
    let signature = interac::sign(SECRET.as_bytes(), Utc::now().timestamp(), &body).unwrap();
    callback(app, Some(signature), body).await.0
}

#[tokio::test]
async fn interac_batches_go_to_the_partner_and_its_signed_callbacks_settle_them_once() {
    let InteracPayouts {
        app,
        partner,
        batch,
        payouts,
        references,
    } = interac_payouts().await;

    // The partner's final report: the first deposited, the second declined.
    let report = StatusReport {
        report_id: "rpt_00000001".to_owned(),
        batch_id: batch.batch_id.clone(),
        created_at: Utc::now(),
        batch_status: Some(BatchVerdict::Accepted),
        payments: vec![
            PaymentUpdate {
                payment_id: references[0].clone(),
                status: PaymentStatus::Deposited,
                code: None,
                reason: None,
                updated_at: Utc::now(),
            },
            PaymentUpdate {
                payment_id: references[1].clone(),
                status: PaymentStatus::Declined,
                code: Some("DECLINED".to_owned()),
                reason: Some("the recipient declined the transfer".to_owned()),
                updated_at: Utc::now(),
            },
        ],
    };
    let body = report.to_bytes().unwrap();
    let now = Utc::now().timestamp();
    let sign = |at: i64, secret: &str| interac::sign(secret.as_bytes(), at, &body).unwrap();

    // Refused first, changing nothing: unsigned, another secret, stale, signed garbage.
    assert_eq!(callback(&app, None, body.clone()).await.0, 401);
    let (status, wrong) = callback(&app, Some(sign(now, "not-the-secret")), body.clone()).await;
    assert_eq!(
        (status, &wrong["error"][0]["code"]),
        (401, &json!("AUTH104"))
    );
    assert_eq!(
        callback(&app, Some(sign(now - 3_600, SECRET)), body.clone())
            .await
            .0,
        401
    );
    let garbage = b"{\"not\":\"a report\"}".to_vec();
    let garbage_signature = interac::sign(SECRET.as_bytes(), now, &garbage).unwrap();
    let (status, refused) = callback(&app, Some(garbage_signature), garbage).await;
    assert_eq!(
        (status, &refused["error"][0]["code"]),
        (400, &json!("REQ001"))
    );
    // A body over 4 MiB is not read to the end, signed or not.
    let (status, huge) = callback(&app, Some(sign(now, SECRET)), vec![b' '; 5 * 1024 * 1024]).await;
    assert_eq!((status, &huge["error"][0]["code"]), (413, &json!("REQ008")));
    for id in &payouts {
        assert_eq!(payout(&app, id).await["status"], "in_progress");
    }

    // Signed: applied; the same callback again (a retry or a replay): applied once.
    assert_eq!(
        callback(&app, Some(sign(now, SECRET)), body.clone())
            .await
            .0,
        204
    );
    assert_eq!(payout(&app, &payouts[0]).await["status"], "successful");
    assert_eq!(payout(&app, &payouts[1]).await["status"], "failed");
    let failure = event_payloads(&app, &payouts[1]).await.pop().unwrap();
    assert_eq!(failure["return_code"], "DECLINED", "{failure}");
    let after_first = balance_in(&app, "CAD").await;
    assert_eq!(after_first, (100_000 - 2_000, 0));
    assert_eq!(
        callback(&app, Some(sign(now + 1, SECRET)), body.clone())
            .await
            .0,
        204
    );
    assert_eq!(balance_in(&app, "CAD").await, after_first);
    let store = build_store(&app.config).unwrap();
    let recorded: Vec<_> = store
        .list_reports(None, None, None, 100)
        .await
        .unwrap()
        .into_iter()
        .filter(|l| l.file_name == "rpt_00000001")
        .collect();
    assert_eq!(
        recorded.len(),
        3,
        "the batch's verdict and one line per payment, recorded once"
    );
    assert_eq!(partner.book.lock().unwrap().batches.len(), 1, "sent once");
    assert!(
        app.admin
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );

    // A sandbox payoutd has no partner: the route is not there.
    let sandbox = spawn_app().await;
    let (status, reply) = callback(&sandbox, Some(sign(now, SECRET)), body).await;
    assert_eq!(
        (status, &reply["error"][0]["code"]),
        (404, &json!("REQ006"))
    );
}

#[tokio::test]
async fn a_deposited_transfer_stays_paid_whatever_the_partner_reports_next() {
    let InteracPayouts {
        app,
        batch,
        payouts,
        references,
        ..
    } = interac_payouts().await;
    let deposit = StatusReport {
        report_id: "rpt_deposit".to_owned(),
        batch_id: batch.batch_id.clone(),
        created_at: Utc::now(),
        batch_status: None,
        payments: vec![update(&references[0], PaymentStatus::Deposited, None)],
    };
    assert_eq!(push(&app, &deposit).await, 204);
    assert_eq!(payout(&app, &payouts[0]).await["status"], "successful");
    let paid = balance_in(&app, "CAD").await;
    let events = event_payloads(&app, &payouts[0]).await.len();

    // The probe's reports: a new report saying the deposited transfer failed, and the deposit's
    // own report id again with a body saying so. Both are answered 204 (recorded, the partner
    // stops retrying) and neither moves the payout or the money.
    let contradiction = StatusReport {
        report_id: "rpt_contradiction".to_owned(),
        payments: vec![update(
            &references[0],
            PaymentStatus::Failed,
            Some("INVALID_RECIPIENT"),
        )],
        ..deposit.clone()
    };
    assert_eq!(push(&app, &contradiction).await, 204);
    let altered = StatusReport {
        created_at: Utc::now(),
        payments: vec![update(&references[0], PaymentStatus::Declined, None)],
        ..deposit.clone()
    };
    assert_eq!(push(&app, &altered).await, 204);
    let shown = payout(&app, &payouts[0]).await;
    assert_eq!(shown["status"], "successful", "{shown}");
    assert_eq!(balance_in(&app, "CAD").await, paid, "no money moved");
    assert_eq!(event_payloads(&app, &payouts[0]).await.len(), events);
    let account = app
        .get(
            &app.a,
            &format!(
                "/api/receiver-account/{}",
                shown["receiver_account"]["id"].as_str().unwrap()
            ),
        )
        .await;
    assert_eq!(account.status, 200, "{}", account.body);
    assert_ne!(
        account.body["payload"]["status"], "failed",
        "{}",
        account.body
    );

    // Operators see both anomalies, each naming the deposit's line and document, and can read
    // every document as received.
    let json = |args: &[&str]| -> Value { serde_json::from_slice(&admin_cli(&app, args)).unwrap() };
    let applied = json(&["admin", "bank-reports", "--resolution", "applied"]);
    let deposit_line = applied
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["file"] == "rpt_deposit")
        .expect("the deposit applied")
        .clone();
    let anomalies = json(&["admin", "bank-reports", "--resolution", "anomaly"]);
    let anomalies = anomalies.as_array().unwrap();
    assert_eq!(anomalies.len(), 2, "{anomalies:#?}");
    for anomaly in anomalies {
        assert_eq!(anomaly["contradicts"], deposit_line["id"], "{anomaly}");
        assert_eq!(anomaly["contradicts_document"], deposit_line["document"]);
        assert_eq!(anomaly["payout_id"], payouts[0].as_str());
    }
    let document = deposit_line["document"].as_str().unwrap();
    assert_eq!(
        admin_cli(&app, &["admin", "inbound-file", "--id", document, "--raw"]),
        deposit.to_bytes().unwrap()
    );
    let altered_documents = json(&["admin", "inbound-files", "--outcome", "altered"]);
    assert_eq!(altered_documents.as_array().map(Vec::len), Some(1));
    assert_eq!(altered_documents[0]["name"], "rpt_deposit");
    assert_eq!(altered_documents[0]["original"], document);
    let altered_id = altered_documents[0]["id"].as_str().unwrap();
    let shown = json(&["admin", "inbound-file", "--id", altered_id]);
    assert_eq!(shown["outcome"], "altered");
    assert_eq!(shown["lines"][0]["resolution"], "anomaly");
    assert_eq!(
        admin_cli(
            &app,
            &["admin", "inbound-file", "--id", altered_id, "--raw"]
        ),
        altered.to_bytes().unwrap()
    );
    let downloads = json(&["admin", "audit", "--action", "inbound_file.download"]);
    assert_eq!(downloads.as_array().map(Vec::len), Some(2), "{downloads}");
    assert_eq!(downloads[0]["object"]["id"], altered_id);
    assert_eq!(downloads[1]["object"]["id"], document);
    let refused = admin_output(&app, &["admin", "inbound-files", "--outcome", "odd"]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--outcome"));
    let metrics = app
        .client
        .get(format!("{}/metrics", app.base))
        .send()
        .await
        .unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics.contains("payoutd_bank_report_lines_total{outcome=\"anomaly\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("payoutd_inbound_bank_files_total{outcome=\"altered\"} 1"),
        "{metrics}"
    );
    assert!(
        app.admin
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );
}

#[tokio::test]
async fn an_operator_runs_a_cutoff_now_and_the_waiting_payout_is_filed() {
    let dirs = tempfile::tempdir().unwrap();
    // The rail's only cut-off is twelve hours away: nothing is filed unless an operator asks.
    let far = (Utc::now() + chrono::Duration::hours(12))
        .format("\"%H:%M\"")
        .to_string();
    let text = format!(
        "{}{SMTP_AND_KYC}",
        file_rail_with_cutoffs(
            "cad/eft",
            "originator_id = \"PAYOUTD001\"\ndata_centre = \"00310\"\noriginator_short_name = \"PAYOUTD TEST\"\n\
             originator_long_name = \"PAYOUTD TEST INC\"\nreturn_institution = \"000312345\"\n\
             return_account = \"1234567\"\ntransaction_code = 450\n",
            dirs.path(),
            &far,
        ),
    );
    let settings = ProductionSettings::parse(&text, Path::new("payoutd.toml"), &|_| None)
        .unwrap_or_else(|problems| panic!("{problems:#?}"));
    let notifier = Arc::new(SandboxNotifier::new());
    let production = Production::build(open_every_day(settings), notifier.clone()).unwrap();
    let app = spawn_production_app(production, |_| {}).await;
    let sub = SubaccountId::parse(&app.a.subaccount_id).unwrap();
    app.admin
        .fund(sub, "CAD", "100000", "test funding")
        .await
        .unwrap();
    let refused = |args: &[&str]| {
        let output = admin_output(&app, args);
        assert!(!output.status.success(), "{args:?}");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };

    // Nothing waits yet, and a method must be one of the six.
    let nothing = refused(&["admin", "run-cutoff", "--method", "cad/eft"]);
    assert!(
        nothing.contains("no payout of cad/eft is waiting for a cut-off"),
        "{nothing}"
    );
    let unknown = refused(&["admin", "run-cutoff", "--method", "cad/wire"]);
    assert!(
        unknown.contains("invalid --method \"cad/wire\""),
        "{unknown}"
    );

    let (payout_id, _) = payee_with_payout(
        &app,
        &notifier,
        "waiting@example.com",
        "cad/eft",
        json!({"routing_number": "12345-003", "account_number": "7654321", "account_type": "checking"}),
        "CAD",
        2_500,
    )
    .await;
    let out = dirs.path().join("cad-eft-out");
    // Two batch passes later, still nothing filed: the cut-off is hours away.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    assert_eq!(payout(&app, &payout_id).await["status"], "pending");

    let run: Value = serde_json::from_slice(&admin_cli(
        &app,
        &["admin", "run-cutoff", "--method", "cad/eft"],
    ))
    .unwrap();
    assert_eq!(run["method"], "cad/eft", "{run}");
    assert_eq!(run["asset"], "CAD", "{run}");
    assert_eq!(run["batches"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(
        run["batches"][0]["subaccount_id"],
        app.a.subaccount_id.as_str()
    );

    // The serving instance files it at its next pass, as at a cut-off.
    let file = the_file_in(&out).await;
    bank_format_oracles::cpa005::check(&file, b"\r\n").unwrap();
    wait_for("the payout to be submitted", async || {
        payout(&app, &payout_id).await["status"] != "pending"
    })
    .await;

    // The payout is submitted before its batch is marked sent: until then a cut-off of CAD is
    // refused as "being sent", and writes nothing either.
    let mut again = String::new();
    wait_for("the batch to be sent", async || {
        again = refused(&["admin", "run-cutoff", "--method", "cad/eft"]);
        !again.contains("batch(es) of CAD are being sent")
    })
    .await;
    // Then the cut-off has nothing left to run, and only the command's run was audited.
    assert!(again.contains("no payout of cad/eft is waiting"), "{again}");
    let audit = admin_cli(&app, &["admin", "audit", "--action", "rail.run_cutoff"]);
    let audit: Value = serde_json::from_slice(&audit).unwrap();
    assert_eq!(audit.as_array().map(Vec::len), Some(1), "{audit}");
    assert_eq!(audit[0]["object"]["id"], "cad/eft", "{audit}");
}
