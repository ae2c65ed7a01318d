//! Production mode end to end over directory transports: no sandbox helpers, methods without a
//! rail refused with REAC302, manual KYC decided by the operator, a batch that waits for its
//! rail's cut-off, a pain.001 file stored and placed in the bank's drop, and the bank's pain.002
//! answers applied: a settlement, then a rejection of the settled payment, twice: an anomaly
//! naming the settlement each time, the payout still paid and no money moved (returns after
//! settlement, with the amount back and the fee kept, are run end to end by `cargo xtask
//! rails-demo`'s late returns).
//!
//! A second test runs the `usd/ach` rail: a NACHA file checked with the project's parser, and
//! the receiving bank's return file (written by `bank-formats`' bank side) failing one payout
//! in progress with its account, a notification of change recorded, and the file read once.
//!
//! The notifier is the recording one: this test is about the rails (the SMTP notifier has its
//! own tests against a real SMTP server).

use std::path::Path;
use std::sync::Arc;

use adapters_sandbox::SandboxNotifier;
use app_actix::production::Production;
use app_actix::production_config::ProductionSettings;
use app_actix::startup::build_store;
use app_actix::system::{RandomIds, SystemClock};
use domain::ids::SubaccountId;
use domain::rail::file::RailFileState;
use domain::rail::inbound_ports::{InboundStore, Resolution};
use domain::rail::ports::RailFileStore;
use domain::receiver::operator::{OperatorKycService, parse_decision};
use serde_json::json;

use crate::helpers::{TestApp, receiver_body, spawn_production_app};
use crate::production_support::{
    admin_cli, admin_output, balance_in, clear_of_a_cutoff, config, event_payloads, every_minute,
    file_now, open_every_day, pay, payee, payout, wait_for,
};

fn pain002(batch: &str, end_to_end: &str, status: &str, reason: Option<&str>) -> String {
    let reason = reason
        .map(|code| format!("<StsRsnInf><Rsn><Cd>{code}</Cd></Rsn></StsRsnInf>"))
        .unwrap_or_default();
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:pain.002.001.09"><CstmrPmtStsRpt>
<GrpHdr><MsgId>STS-{end_to_end}-{status}</MsgId><CreDtTm>2026-11-27T06:00:00</CreDtTm></GrpHdr>
<OrgnlGrpInfAndSts><OrgnlMsgId>{batch}</OrgnlMsgId><OrgnlMsgNmId>pain.001.001.09</OrgnlMsgNmId><GrpSts>PART</GrpSts></OrgnlGrpInfAndSts>
<OrgnlPmtInfAndSts><OrgnlPmtInfId>{batch}-1</OrgnlPmtInfId>
<TxInfAndSts><OrgnlEndToEndId>{end_to_end}</OrgnlEndToEndId><TxSts>{status}</TxSts>{reason}</TxInfAndSts>
</OrgnlPmtInfAndSts></CstmrPmtStsRpt></Document>"#
    )
}

async fn eur_balance(app: &TestApp) -> (i64, i64) {
    balance_in(app, "EUR").await
}

#[tokio::test]
async fn a_sepa_payout_is_filed_at_the_cutoff_settled_and_a_later_rejection_is_an_anomaly() {
    let drop = tempfile::tempdir().unwrap();
    let (outbound, inbound) = (drop.path().join("out"), drop.path().join("in"));
    std::fs::create_dir_all(&outbound).unwrap();
    std::fs::create_dir_all(&inbound).unwrap();
    let settings = ProductionSettings::parse(
        &config(&outbound, &inbound),
        Path::new("payoutd.toml"),
        &|_| None,
    )
    .unwrap_or_else(|problems| panic!("{problems:#?}"));
    let notifier = Arc::new(SandboxNotifier::new());
    let production = Production::build(open_every_day(settings), notifier.clone()).unwrap();
    let app = spawn_production_app(production, |_| {}).await;
    let store = Arc::new(build_store(&app.config).unwrap());
    let sub = SubaccountId::parse(&app.a.subaccount_id).unwrap();
    app.admin
        .fund(sub, "EUR", "100000", "test funding")
        .await
        .unwrap();
    app.admin.set_fee(sub, "EUR", "50", "0", "0").await.unwrap();

    // No sandbox: the test helpers do not exist.
    let helper = app
        .post(&app.a, "/api/test-helpers/batch/run", &json!({}))
        .await;
    assert_eq!(helper.status, 404, "{}", helper.body);
    // The subaccount reports the notifiers this deployment is configured with.
    let subaccount = app
        .get(&app.a, &format!("/api/subaccount/{}", app.a.subaccount_id))
        .await;
    assert_eq!(subaccount.status, 200, "{}", subaccount.body);
    assert_eq!(subaccount.body["payload"]["email_provider"], "smtp");
    assert_eq!(subaccount.body["payload"]["sms_provider"], "none");

    // A receiver, decided by the operator (manual KYC: nothing decides by itself).
    let created = app
        .post(
            &app.a,
            "/api/receiver",
            &receiver_body(&app.a, "payee@example.com"),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let receiver = created.body["payload"]["receiver_id"]
        .as_str()
        .unwrap()
        .to_owned();
    OperatorKycService::new(
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(RandomIds::default()),
    )
    .decide(
        &receiver,
        parse_decision("completed").unwrap(),
        None,
        "operator:test",
        &domain::audit::AuditContext::cli(Some("test")),
    )
    .await
    .unwrap();

    // Methods without a rail are not enabled.
    let eft = app
        .post(
            &app.a,
            "/api/receiver-account/cad/eft",
            &json!({"receiver_id": receiver, "routing_number": "000100002", "account_number": "1234567", "account_type": "checking"}),
        )
        .await;
    assert_eq!(eft.status, 400, "{}", eft.body);
    assert_eq!(eft.codes(), ["REAC302"]);
    assert_eq!(
        eft.body["error"][0]["message"],
        "Payout method cad/eft is not enabled"
    );

    // A SEPA account, confirmed through its link: GET shows, POST confirms.
    let account = app
        .post(
            &app.a,
            "/api/receiver-account/eur/sepa",
            &json!({"receiver_id": receiver, "iban": "DE89 3704 0044 0532 0130 00", "bic": "DEUTDEFF"}),
        )
        .await;
    assert_eq!(account.status, 200, "{}", account.body);
    let account_id = account.body["payload"]["receiver_account_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let link = notifier.sent()[0].confirm_url.expose().clone();
    let path = link.trim_start_matches(&app.config.public_url);
    let confirmed = app
        .client
        .post(format!("{}{path}", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(confirmed.status(), 200);

    // A payout: pending in a batch that runs at the next cut-off.
    let created = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account_id, "amount": 1000, "currency": "EUR"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let payout_id = created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(payout(&app, &payout_id).await["status"], "pending");
    assert_eq!(eur_balance(&app).await, (100_000 - 1_050, 1_050));

    // At the cut-off the batch's file is written, stored and uploaded.
    // The payout is `in_progress` from the close; its reference is recorded after the upload.
    wait_for("the payout to be filed", async || {
        let p = payout(&app, &payout_id).await;
        p["status"] == "in_progress" && p["provider_reference"] != ""
    })
    .await;
    let files = store.list_files(None, None, 10).await.unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = store.get_file(files[0].id).await.unwrap().unwrap();
    assert_eq!(file.state, RailFileState::Uploaded);
    let sent = std::fs::read(outbound.join(&file.name)).unwrap();
    assert_eq!(sent, file.bytes, "the drop holds exactly the stored bytes");
    let xml = String::from_utf8(sent).unwrap();
    let end_to_end = uuid::Uuid::parse_str(&payout_id)
        .unwrap()
        .simple()
        .to_string();
    assert!(xml.contains(&format!("<EndToEndId>{end_to_end}</EndToEndId>")));
    assert!(xml.contains("<IBAN>DE89370400440532013000</IBAN>"));
    assert_eq!(
        payout(&app, &payout_id).await["provider_reference"],
        end_to_end
    );
    let batch = file.batch_id.as_uuid().simple().to_string();

    // The bank settles it.
    std::fs::write(
        inbound.join("status-1.xml"),
        pain002(&batch, &end_to_end, "ACSC", None),
    )
    .unwrap();
    wait_for("the settlement", async || {
        payout(&app, &payout_id).await["status"] == "successful"
    })
    .await;
    assert_eq!(eur_balance(&app).await, (100_000 - 1_050, 0));

    // Then a pain.002 rejecting it: closed account. A rejection is not a return (a SEPA return
    // after settlement comes as a credit back, not a status report): it contradicts the
    // settlement, so it is an anomaly for operators, and the payout stays paid.
    let events = event_payloads(&app, &payout_id).await.len();
    for name in ["status-2.xml", "status-3.xml"] {
        std::fs::write(
            inbound.join(name),
            pain002(&batch, &end_to_end, "RJCT", Some("AC04")),
        )
        .unwrap();
        wait_for("the rejection to be recorded", async || {
            store
                .list_reports(None, None, None, 100)
                .await
                .unwrap()
                .iter()
                .any(|l| l.file_name == name)
        })
        .await;
    }
    assert_eq!(payout(&app, &payout_id).await["status"], "successful");
    assert_eq!(
        eur_balance(&app).await,
        (100_000 - 1_050, 0),
        "nothing comes back"
    );
    let account = app
        .get(&app.a, &format!("/api/receiver-account/{account_id}"))
        .await;
    assert_ne!(
        account.body["payload"]["status"], "failed",
        "{}",
        account.body
    );
    assert_eq!(event_payloads(&app, &payout_id).await.len(), events);
    let reports = store.list_reports(None, None, None, 100).await.unwrap();
    let of = |name: &str| -> Vec<Resolution> {
        let mut lines: Vec<_> = reports
            .iter()
            .filter(|l| l.file_name == name)
            .map(|l| (l.report.position, l.report.resolution))
            .collect();
        lines.sort_by_key(|(position, _)| *position);
        lines.into_iter().map(|(_, r)| r).collect()
    };
    // Each report names the file (accepted: PART) and the payment.
    assert_eq!(
        of("status-1.xml"),
        [Resolution::Applied, Resolution::Applied]
    );
    let settlement = reports
        .iter()
        .find(|l| l.file_name == "status-1.xml" && l.report.payout_id.is_some())
        .unwrap();
    for name in ["status-2.xml", "status-3.xml"] {
        assert_eq!(
            of(name),
            [Resolution::Repeated, Resolution::Anomaly],
            "{name}"
        );
        let anomaly = reports
            .iter()
            .find(|l| l.file_name == name && l.report.resolution == Resolution::Anomaly)
            .unwrap();
        assert_eq!(anomaly.report.contradicts, Some(settlement.report.id));
        assert_eq!(anomaly.contradicted_file, Some(settlement.inbound_file_id));
    }
    assert_eq!(
        store.get_file(file.id).await.unwrap().unwrap().state,
        RailFileState::Acknowledged
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

/// A `usd/ach` rail with a cut-off every minute of every day, settling the next business day.
fn ach_config(outbound: &Path, inbound: &Path) -> String {
    format!(
        r#"
[rails."usd/ach"]
file_prefix = "TEST"
cutoffs = [{cutoffs}]
immediate_destination = "021000021"
immediate_destination_name = "TEST BANK"
immediate_origin = "1234567890"
immediate_origin_name = "PAYOUTD TEST"
company_name = "PAYOUTD TEST"
company_id = "1234567890"
odfi_routing = "02100002"
entry_description = "PAYOUT"

[rails."usd/ach".transport]
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

#[tokio::test]
async fn ach_payouts_are_filed_in_nacha_and_a_return_fails_one_in_progress() {
    use bank_formats::nacha::{self, LineEnding, ReturnCode, TransactionCode};
    use bank_simulator::nacha::{AnswerOptions, EntryDecision};

    let drop = tempfile::tempdir().unwrap();
    let (outbound, inbound) = (drop.path().join("out"), drop.path().join("in"));
    std::fs::create_dir_all(&outbound).unwrap();
    std::fs::create_dir_all(&inbound).unwrap();
    let settings = ProductionSettings::parse(
        &ach_config(&outbound, &inbound),
        Path::new("payoutd.toml"),
        &|_| None,
    )
    .unwrap_or_else(|problems| panic!("{problems:#?}"));
    let notifier = Arc::new(SandboxNotifier::new());
    let production = Production::build(open_every_day(settings), notifier.clone()).unwrap();
    let app = spawn_production_app(production, |_| {}).await;
    let store = Arc::new(build_store(&app.config).unwrap());
    let sub = SubaccountId::parse(&app.a.subaccount_id).unwrap();
    app.admin
        .fund(sub, "USD", "100000", "test funding")
        .await
        .unwrap();

    // Two payees, each with a confirmed checking / savings account, then a payout to each,
    // both in the batch of the next cut-off.
    let mut payees = Vec::new();
    for (n, kind) in ["checking", "savings"].into_iter().enumerate() {
        payees.push(
            payee(
                &app,
                &notifier,
                &format!("payee{n}@example.com"),
                "usd/ach",
                json!({"routing_number": "011000015", "account_number": format!("12345678{n}"), "account_type": kind}),
            )
            .await,
        );
    }
    clear_of_a_cutoff().await;
    let mut payouts = Vec::new();
    let mut accounts = Vec::new();
    for (n, payee) in payees.iter().enumerate() {
        payouts.push(pay(&app, payee, "USD", 1_000 + i64::try_from(n).unwrap()).await);
        accounts.push(payee.1.clone());
    }
    file_now(&app, "usd/ach");

    wait_for("both payouts to be filed", async || {
        for id in &payouts {
            let p = payout(&app, id).await;
            if p["status"] != "in_progress" || p["provider_reference"] == "" {
                return false;
            }
        }
        true
    })
    .await;
    let files = store.list_files(None, None, 10).await.unwrap();
    assert_eq!(files.len(), 1, "one file for the batch: {files:?}");
    let file = store.get_file(files[0].id).await.unwrap().unwrap();
    assert_eq!(
        std::fs::read(outbound.join(&file.name)).unwrap(),
        file.bytes
    );
    let parsed = nacha::parse(&file.bytes).unwrap();
    let entries = &parsed.batches[0].entries;
    let codes: Vec<_> = entries.iter().map(|e| e.transaction_code).collect();
    assert_eq!(
        codes,
        [
            TransactionCode::CheckingCredit,
            TransactionCode::SavingsCredit
        ]
    );
    let traces: Vec<String> = entries.iter().map(|e| e.trace_number.clone()).collect();
    for (id, trace) in payouts.iter().zip(&traces) {
        assert_eq!(
            &payout(&app, id).await["provider_reference"],
            trace.as_str()
        );
    }

    // The receiving bank returns the first (no account) and notifies a change on the second.
    let answer = bank_simulator::nacha::write_answer_file(
        &parsed,
        &[
            EntryDecision {
                original_trace_number: traces[0].clone(),
                answer: bank_simulator::nacha::Answer::Return {
                    code: ReturnCode::parse("R03").unwrap(),
                    date_of_death: None,
                    addenda_information: String::new(),
                },
            },
            EntryDecision {
                original_trace_number: traces[1].clone(),
                answer: bank_simulator::nacha::Answer::Notification {
                    code: nacha::ChangeCode::parse("C01").unwrap(),
                    corrected_data: "99887766".to_owned(),
                },
            },
        ],
        &AnswerOptions {
            creation_date: chrono::Utc::now().date_naive(),
            creation_time: None,
            file_id_modifier: 'A',
            line_ending: LineEnding::Lf,
        },
    )
    .unwrap();
    std::fs::write(inbound.join("returns.ach"), &answer).unwrap();
    wait_for("the return", async || {
        payout(&app, &payouts[0]).await["status"] == "failed"
    })
    .await;
    assert_eq!(payout(&app, &payouts[1]).await["status"], "in_progress");
    let account = app
        .get(&app.a, &format!("/api/receiver-account/{}", accounts[0]))
        .await;
    assert_eq!(
        account.body["payload"]["status"], "failed",
        "{}",
        account.body
    );
    let payloads = event_payloads(&app, &payouts[0]).await;
    let failure = payloads.last().unwrap();
    assert_eq!(failure["return_code"], "R03");
    // The hold of the returned payout is voided (fee 0): 1000 back.
    let (available, pending) = balance_in(&app, "USD").await;
    assert_eq!((available, pending), (100_000 - 1_001, 1_001));

    // The same file again under another name: nothing applied twice.
    std::fs::write(inbound.join("returns-again.ach"), &answer).unwrap();
    wait_for("the second copy to be recorded", async || {
        store
            .list_reports(None, None, None, 100)
            .await
            .unwrap()
            .iter()
            .any(|l| l.file_name == "returns-again.ach")
    })
    .await;
    let reports = store.list_reports(None, None, None, 100).await.unwrap();
    let of = |name: &str| -> Vec<Resolution> {
        let mut lines: Vec<_> = reports
            .iter()
            .filter(|l| l.file_name == name)
            .map(|l| (l.report.position, l.report.resolution))
            .collect();
        lines.sort_by_key(|(position, _)| *position);
        lines.into_iter().map(|(_, r)| r).collect()
    };
    assert_eq!(of("returns.ach"), [Resolution::Applied, Resolution::Noted]);
    assert_eq!(
        of("returns-again.ach"),
        [Resolution::Repeated, Resolution::Noted]
    );
    assert_eq!(balance_in(&app, "USD").await, (100_000 - 1_001, 1_001));

    // The operator's view: the files, one file's bytes exactly as sent, the bank's reports.
    let listed: serde_json::Value = serde_json::from_slice(&admin_cli(
        &app,
        &["admin", "rail-files", "--state", "uploaded"],
    ))
    .unwrap();
    assert_eq!(listed[0]["id"], file.id.to_string());
    assert_eq!(listed[0]["method"], "usd/ach");
    assert_eq!(listed[0]["payouts"], 2);
    let id = file.id.to_string();
    assert_eq!(
        admin_cli(&app, &["admin", "rail-file", "--id", &id, "--raw"]),
        file.bytes
    );
    // The download is audited (the description is not).
    let audited: serde_json::Value = serde_json::from_slice(&admin_cli(
        &app,
        &["admin", "audit", "--action", "rail_file.download"],
    ))
    .unwrap();
    assert_eq!(audited.as_array().map(Vec::len), Some(1), "{audited}");
    assert_eq!(audited[0]["object"]["id"], id.as_str());
    assert_eq!(audited[0]["after"]["size"], file.bytes.len());
    let shown: serde_json::Value =
        serde_json::from_slice(&admin_cli(&app, &["admin", "rail-file", "--id", &id])).unwrap();
    assert_eq!(shown["payouts"][0]["reference"], traces[0].as_str());
    let repeated: serde_json::Value = serde_json::from_slice(&admin_cli(
        &app,
        &["admin", "bank-reports", "--resolution", "repeated"],
    ))
    .unwrap();
    assert_eq!(repeated.as_array().map(Vec::len), Some(1), "{repeated}");
    assert_eq!(repeated[0]["code"], "R03");
    assert_eq!(repeated[0]["file"], "returns-again.ach");
    for (args, message) in [
        (
            vec!["admin", "rail-file", "--id", "not-a-uuid"],
            "not a UUID",
        ),
        (
            vec![
                "admin",
                "rail-file",
                "--id",
                "00000000-0000-4000-8000-000000000000",
            ],
            "no rail file",
        ),
        (vec!["admin", "rail-files", "--state", "sent"], "--state"),
        (vec!["admin", "rail-files", "--limit", "0"], "--limit"),
    ] {
        let output = admin_output(&app, &args);
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let refused = admin_output(&app, &["admin", "bank-reports", "--resolution", "lost"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--resolution"));
    assert!(
        app.admin
            .check_ledger()
            .await
            .unwrap()
            .discrepancies
            .is_empty()
    );
}
