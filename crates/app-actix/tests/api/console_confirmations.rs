//! The console's confirmation requests: listed without recipient or link; a failed one is sent
//! again by an operator (audited), refused in words when it is not failed, and a viewer may
//! only read.

use domain::audit::{AuditAction, AuditLog, AuditQuery};
use domain::operators::{Role, SessionPolicy};

use crate::console::{enrol, sign_in, spawn_console_app};

#[tokio::test]
async fn an_operator_sends_a_failed_confirmation_request_again() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    // An unconfirmed account queues its request; the provider refused it for good.
    let (_, account) = app
        .payee(&app.a, "unreachable@example.com", true, false)
        .await;
    app.execute_sql(&format!(
        "UPDATE notifications SET status = 'failed', next_attempt_at = NULL, sent_at = NULL, \
         last_error = 'rejected: 550 5.1.1 mailbox <full>' WHERE account_id = '{account}'"
    ))
    .await;

    let viewer = enrol(&app, "viewer@example.com", Role::Viewer).await;
    let mut as_viewer = sign_in(&console, &viewer).await;
    let page = as_viewer.get("/confirmations?status=failed").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(&account));
    assert!(page.body.contains("mailbox &lt;full&gt;"));
    assert!(
        !page.body.contains("unreachable@example.com"),
        "no recipient"
    );
    assert!(!page.body.contains("/confirm/"), "no link");
    assert!(!page.body.contains("Send again"), "a viewer only reads");
    let bad = as_viewer.get("/confirmations?status=bounced").await;
    assert_eq!(bad.status, 400);

    let ops = enrol(&app, "ops@example.com", Role::Operator).await;
    let mut as_ops = sign_in(&console, &ops).await;
    let page = as_ops.get("/confirmations?status=failed").await;
    assert!(page.body.contains("Send again"), "{}", page.body);
    let csrf = page.input("csrf").unwrap();
    let action = page
        .body
        .split("action=\"/confirmations/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_owned();
    let id = action.trim_end_matches("/resend").to_owned();
    let sent = as_ops
        .post(&format!("/confirmations/{action}"), &[("csrf", &csrf)])
        .await;
    assert_eq!(sent.status, 303, "{}", sent.body);
    assert_eq!(sent.location(), Some("/confirmations?done=1"));
    assert!(
        as_ops
            .get("/confirmations?status=failed")
            .await
            .body
            .contains("No confirmation request matches.")
    );
    // Not failed any more: refused in words, nothing more recorded.
    let again = as_ops
        .post(&format!("/confirmations/{action}"), &[("csrf", &csrf)])
        .await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(again.body.contains("Only a failed request is sent again"));
    let unknown = as_ops
        .post(
            "/confirmations/00000000-0000-4000-8000-000000000001/resend",
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(unknown.status, 404);

    let store = app_actix::startup::build_store(&app.config).unwrap();
    let entries = store
        .list(&AuditQuery {
            action: Some(AuditAction::ConfirmationResent),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].actor.name(), "ops@example.com");
    assert_eq!(entries[0].object_id, id);
}
