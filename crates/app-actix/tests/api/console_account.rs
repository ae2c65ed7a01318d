//! The operator's own account page: every role reads it and chooses the time zone its pages
//! show times in (audited); times keep their exact UTC moment on hover; one operator's zone
//! never shows on another's pages; a zone that is not one is refused in words.

use domain::audit::{AuditAction, AuditLog, AuditQuery};
use domain::operators::{Role, SessionPolicy};

use crate::console::{enrol, sign_in, spawn_console_app};

/// The text of every `<time>` element of a page, with its `title`.
fn times(body: &str) -> Vec<(String, String)> {
    body.split("<time ")
        .skip(1)
        .filter_map(|rest| {
            let title = rest.split("title=\"").nth(1)?.split('"').next()?;
            let shown = rest.split('>').nth(1)?.split('<').next()?;
            Some((shown.to_owned(), title.to_owned()))
        })
        .collect()
}

#[tokio::test]
async fn an_operator_chooses_its_time_zone_and_only_its_pages_follow_it() {
    let app = spawn_console_app(SessionPolicy::default()).await;
    let console = app.console.clone().unwrap();
    let ann = enrol(&app, "ann@example.com", Role::Viewer).await;
    let bob = enrol(&app, "bob@example.com", Role::Admin).await;
    let mut as_ann = sign_in(&console, &ann).await;
    let mut as_bob = sign_in(&console, &bob).await;

    let page = as_ann.get("/account").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains("<option value=\"UTC\" selected>"),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("href=\"/account\""),
        "the header links the account page"
    );
    let before = times(&page.body);
    assert!(!before.is_empty() && before.iter().all(|(shown, _)| shown.ends_with(" UTC")));
    let csrf = page.input("csrf").unwrap();

    let saved = as_ann
        .post(
            "/account/time-zone",
            &[("csrf", &csrf), ("time_zone", "Asia/Kolkata")],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    assert_eq!(saved.location(), Some("/account?done=time-zone"));
    let page = as_ann.get("/account?done=time-zone").await;
    assert!(
        page.body
            .contains("Saved: times are shown in Asia/Kolkata."),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("<option value=\"Asia/Kolkata\" selected>")
    );
    // Kolkata is UTC+05:30 all year: each time shows that wall clock, its title the UTC moment.
    for (shown, title) in times(&page.body) {
        assert!(shown.ends_with(" IST"), "{shown}");
        let utc = chrono::NaiveDateTime::parse_from_str(&title, "%Y-%m-%d %H:%M:%S%.3f UTC")
            .unwrap_or_else(|e| panic!("{title}: {e}"));
        let local = (utc + chrono::Duration::minutes(330)).format("%Y-%m-%d %H:%M IST");
        assert_eq!(shown, local.to_string());
    }
    // Bob's pages, served by the same workers meanwhile, stay in his zone (UTC).
    let bobs = as_bob.get("/account").await;
    assert!(
        times(&bobs.body)
            .iter()
            .all(|(shown, _)| shown.ends_with(" UTC")),
        "{}",
        bobs.body
    );

    // The same zone again is no change and writes nothing; a zone that is not one is refused.
    let again = as_ann
        .post(
            "/account/time-zone",
            &[("csrf", &csrf), ("time_zone", "Asia/Kolkata")],
        )
        .await;
    assert_eq!(again.status, 303);
    let refused = as_ann
        .post(
            "/account/time-zone",
            &[("csrf", &csrf), ("time_zone", "<b>Mars</b>")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("no time zone is called"),
        "{}",
        refused.body
    );
    assert!(!refused.body.contains("<b>Mars"), "the name is escaped");

    let store = app_actix::startup::build_store(&app.config).unwrap();
    let entries = store
        .list(&AuditQuery {
            action: Some(AuditAction::OperatorTimeZoneSet),
            limit: 10,
            ..AuditQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].actor.name(), "ann@example.com");
    assert_eq!(entries[0].before.as_ref().unwrap()["time_zone"], "UTC");
    assert_eq!(
        entries[0].after.as_ref().unwrap()["time_zone"],
        "Asia/Kolkata"
    );
}
