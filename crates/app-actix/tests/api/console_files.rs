//! The console's bank files: the list by state, a file with its payouts and every answer about
//! it, the banks' answers by kind and resolution, the payout's story linking to its file and
//! showing the bank's return, and the download
//! of the bytes as sent: operators and admins only, with a CSRF token, recorded in the audit log.

use chrono::{NaiveDate, Utc};
use domain::account::PayoutMethod;
use domain::audit::{AuditAction, AuditLog, AuditQuery};
use domain::ids::{BankReportId, BatchId, InboundFileId, PayoutId, RailFileId, SubaccountId};
use domain::operators::{Role, SessionPolicy};
use domain::rail::file::{RailFile, RailFileItem, RailFileState};
use domain::rail::inbound_ports::{
    InboundFile, InboundOutcome, InboundStore, RecordedReport, ReportKind, Resolution,
};
use domain::rail::ports::RailFileStore;
use serde_json::json;
use uuid::Uuid;

use crate::console::{enrol, sign_in, spawn_console_app};
use crate::helpers::subaccount;

const BYTES: &[u8] = b"101 094101298 0000000001261129\n";

#[tokio::test]
async fn a_file_shows_its_payouts_and_answers_and_its_bytes_leave_only_audited() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    app.admin
        .fund(subaccount(&app.a), "AUD", "100000", "test funding")
        .await
        .unwrap();
    let (receiver, account) = app.payee(&app.a, "ada@example.com", true, true).await;
    let created = app
        .post(
            &app.a,
            "/api/payout/single",
            &json!({"receiver_id": receiver, "account_id": account, "amount": 500, "currency": "AUD"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let payout_id = created.body["payload"]["payout_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let read = app.get(&app.a, &format!("/api/payout/{payout_id}")).await;
    let batch = read.body["payload"]["batch_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // A file carrying the payout, and a return of it, as the rails would store them.
    let store = app_actix::startup::build_store(&app.config).unwrap();
    let sub = SubaccountId::parse(&app.a.subaccount_id).unwrap();
    let batch = BatchId::parse(&batch).unwrap();
    let payout = PayoutId::parse(&payout_id).unwrap();
    let file = RailFile {
        id: RailFileId::from_uuid(Uuid::new_v4()),
        batch_id: batch,
        subaccount_id: sub,
        method: PayoutMethod::DirectEntry,
        part: 1,
        name: RailFile::name_for("PAYOUTD", batch, PayoutMethod::DirectEntry, 1, "aba"),
        sha256: RailFile::digest(BYTES),
        bytes: BYTES.to_vec(),
        state: RailFileState::Uploaded,
        effective_date: NaiveDate::from_ymd_opt(2026, 11, 30).unwrap(),
        items: vec![RailFileItem {
            payout_id: payout,
            reference: "PAYOUTD000001".to_owned(),
        }],
        reason: None,
        created_at: Utc::now(),
        uploaded_at: None,
        answered_at: None,
    };
    store.insert_file(file.clone()).await.unwrap();
    let returned = RecordedReport {
        id: BankReportId::from_uuid(Uuid::new_v4()),
        position: 0,
        kind: ReportKind::Returned,
        reference: "PAYOUTD000001".to_owned(),
        code: Some("R03".to_owned()),
        reason: Some("No account <or> unable to locate".to_owned()),
        account_invalid: true,
        amount: Some(500),
        subaccount_id: Some(sub),
        payout_id: Some(payout),
        rail_file_id: Some(file.id),
        resolution: Resolution::Noted,
        contradicts: None,
        created_at: Utc::now(),
    };
    let document = InboundFile {
        id: InboundFileId::from_uuid(Uuid::new_v4()),
        method: PayoutMethod::DirectEntry,
        name: "returns-1.txt".to_owned(),
        sha256: RailFile::digest(b"returns"),
        outcome: InboundOutcome::Read,
        detail: None,
        original: None,
        bytes: Some(b"returns".to_vec()),
        received_at: Utc::now(),
    };
    assert!(store.record_inbound(&document, &[returned]).await.unwrap());

    // A viewer reads the list, the file and the payout's story, but may not download.
    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    let list = as_viewer.get("/files").await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body.contains(&format!("/files/{}", file.id)));
    assert!(
        as_viewer
            .get("/files?state=rejected")
            .await
            .body
            .contains("No bank file matches.")
    );
    let bad = as_viewer.get("/files?state=lost").await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.body
            .contains("No bank file state is called &quot;lost&quot;.")
    );

    let shown = as_viewer.get(&format!("/files/{}", file.id)).await;
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(shown.body.contains(&format!("/payouts/{payout_id}")));
    assert!(shown.body.contains("PAYOUTD000001") && shown.body.contains("R03"));
    assert!(
        shown
            .body
            .contains("No account &lt;or&gt; unable to locate")
    );
    assert!(shown.body.contains("returns-1.txt"));
    assert!(shown.body.contains(&hex::encode(file.sha256)));
    assert!(
        !shown.body.contains("Download the file"),
        "a viewer gets no button"
    );
    let csrf = shown.input("csrf").unwrap();
    let refused = as_viewer
        .post(&format!("/files/{}/download", file.id), &[("csrf", &csrf)])
        .await;
    assert_eq!(refused.status, 403);

    // The bank's answers: the return among the returns, none among the notices.
    let returns = as_viewer.get("/answers?kind=returned").await;
    assert_eq!(returns.status, 200, "{}", returns.body);
    assert!(returns.body.contains(&format!("/payouts/{payout_id}")));
    assert!(
        returns
            .body
            .contains("No account &lt;or&gt; unable to locate")
    );
    assert!(returns.body.contains("noted: recorded only"));
    let notices = as_viewer.get("/answers?kind=notice").await;
    assert!(notices.body.contains("No answer from a bank matches."));
    let noted = as_viewer
        .get("/answers?resolution=noted&kind=returned")
        .await;
    assert!(noted.body.contains("returns-1.txt"));
    let bad = as_viewer.get("/answers?kind=refund").await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.body
            .contains("No kind of bank answer is called &quot;refund&quot;.")
    );

    let story = as_viewer.get(&format!("/payouts/{payout_id}")).await;
    assert!(
        story.body.contains(&format!("href=\"/files/{}\"", file.id)),
        "{}",
        story.body
    );
    assert!(story.body.contains("Written into"));
    assert!(story.body.contains("R03"));

    // An operator downloads the bytes exactly; the audit log records who and which file.
    let ops = enrol(&app, "ops@example.com", Role::Operator).await;
    let mut as_ops = sign_in(&console, &ops).await;
    let page = as_ops.get(&format!("/files/{}", file.id)).await;
    assert!(page.body.contains("Download the file as sent"));
    let csrf = page.input("csrf").unwrap();
    let forged = as_ops
        .post(
            &format!("/files/{}/download", file.id),
            &[("csrf", "forged")],
        )
        .await;
    assert_eq!(forged.status, 403);
    let got = as_ops
        .post(&format!("/files/{}/download", file.id), &[("csrf", &csrf)])
        .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body.as_bytes(), BYTES);
    let disposition = got.headers["content-disposition"].to_str().unwrap();
    assert!(disposition.contains(&file.name), "{disposition}");
    let entries = store
        .list(&AuditQuery {
            action: Some(AuditAction::BankFileDownloaded),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(
        entries.len(),
        1,
        "the forged and refused tries recorded nothing"
    );
    assert_eq!(entries[0].actor.name(), "ops@example.com");
    assert_eq!(entries[0].object_id, file.id.to_string());
    assert_eq!(entries[0].after.as_ref().unwrap()["size"], BYTES.len());

    // Unknown files are not found, and download nothing.
    let unknown = RailFileId::from_uuid(Uuid::new_v4());
    assert_eq!(as_ops.get(&format!("/files/{unknown}")).await.status, 404);
    let none = as_ops
        .post(&format!("/files/{unknown}/download"), &[("csrf", &csrf)])
        .await;
    assert_eq!(none.status, 404);
}
