//! The console's ledger check: run when asked, it says every balance matches, or shows each
//! balance that differs from the sum of its entries.

use domain::operators::{Role, SessionPolicy};

use crate::console::{enrol, sign_in, spawn_console_app};
use crate::helpers::subaccount;

#[tokio::test]
async fn the_ledger_check_runs_when_asked_and_shows_each_difference() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    for tenant in [&app.a, &app.b] {
        app.admin
            .fund(subaccount(tenant), "AUD", "12345", "test funding")
            .await
            .unwrap();
    }
    let viewer = enrol(&app, "finance@example.com", Role::Viewer).await;
    let mut browser = sign_in(&console, &viewer).await;

    let page = browser.get("/ledger").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("Run the check"));
    assert!(
        !page.body.contains("balances checked"),
        "not run on opening"
    );

    let clean = browser.get("/ledger?run=1").await;
    assert_eq!(clean.status, 200, "{}", clean.body);
    assert!(
        clean
            .body
            .contains("Every balance equals the sum of its ledger entries"),
        "{}",
        clean.body
    );

    // A balance changed behind the ledger's back is shown with both sums.
    app.execute_sql(&format!(
        "UPDATE balances SET available = available + 1 WHERE subaccount_id = '{}'",
        app.b.subaccount_id
    ))
    .await;
    let broken = browser.get("/ledger?run=1").await;
    assert_eq!(broken.status, 200, "{}", broken.body);
    assert!(
        broken.body.contains("1 of 2 balances differ"),
        "{}",
        broken.body
    );
    assert!(broken.body.contains(&app.b.subaccount_id));
    assert!(!broken.body.contains(&app.a.subaccount_id));
    assert!(broken.body.contains("123.46 AUD") && broken.body.contains("123.45 AUD"));
}
