//! `/audit` (admin): the audit log, newest first, filtered by action, actor and object, paged
//! by keyset (`before`: the last entry of the previous page), like `payoutd admin audit`.

use actix_web::{HttpResponse, web};
use domain::audit::{AuditAction, AuditEntry, AuditQuery};
use domain::ids::AuditEntryId;
use domain::operators::Capability;
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::{urlencode, when};
use crate::layout::{Header, continues_after, older_page, page};
use crate::nav::Section;
use crate::pages::html;
use crate::session::SignedIn;
use crate::state::Console;

/// Entries per page.
pub const PAGE: u32 = 50;

/// `GET /audit` query.
#[derive(Debug, Default, Deserialize)]
pub struct AuditFilter {
    action: Option<String>,
    actor: Option<String>,
    object: Option<String>,
    before: Option<String>,
}

fn nonempty(value: &Option<String>) -> Option<&str> {
    value.as_deref().map(str::trim).filter(|v| !v.is_empty())
}

/// A state as a list of `field: value` lines (an object), or its JSON text.
fn state(value: &Option<serde_json::Value>) -> Markup {
    match value {
        None => html! { span.muted { "—" } },
        Some(serde_json::Value::Object(fields)) => html! {
            ul.kv {
                @for (name, value) in fields {
                    li {
                        span.muted { (name) ": " }
                        @match value {
                            serde_json::Value::String(text) => (text),
                            other => (other.to_string()),
                        }
                    }
                }
            }
        },
        Some(other) => html! { code { (other.to_string()) } },
    }
}

fn row(entry: &AuditEntry) -> Markup {
    html! {
        tr {
            td { (when(entry.at)) }
            td { (entry.actor.name()) br; span.muted { (entry.actor.kind()) } }
            td { code.nowrap { (entry.action.as_str()) } }
            td { (entry.object_kind) br; code { a href=(format!("/audit?object={}", urlencode(&entry.object_id))) { (entry.object_id) } } }
            td { (state(&entry.before)) }
            td { (state(&entry.after)) }
            td {
                @if let Some(address) = &entry.client_address { (address) br; }
                @if let Some(id) = &entry.request_id { span.muted.mono { (id) } }
            }
        }
    }
}

/// `GET /audit`.
pub async fn list(
    signed_in: SignedIn,
    console: web::Data<Console>,
    filter: web::Query<AuditFilter>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ReadAudit)?;
    let action = match nonempty(&filter.action) {
        None => None,
        Some(raw) => Some(
            AuditAction::parse(raw)
                .ok_or_else(|| ConsoleError::BadRequest(format!("There is no action {raw:?}.")))?,
        ),
    };
    let before = match nonempty(&filter.before) {
        None => None,
        Some(raw) => Some(AuditEntryId::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest("The page position is not an entry id.".to_owned())
        })?),
    };
    let query = AuditQuery {
        action,
        actor: nonempty(&filter.actor).map(|a| a.chars().take(200).collect()),
        object_id: nonempty(&filter.object).map(|o| o.chars().take(200).collect()),
        before,
        limit: PAGE,
    };
    let entries = console.audit.list(&query).await?;
    let older = continues_after(&entries, PAGE, |e| e.id);
    let chrome = signed_in.chrome(Some(Section::Audit));
    Ok(html(page(
        "Audit log",
        Header::SignedIn(&chrome),
        html! {
            p.muted { "Every change made in the console or with payoutd admin, newest first. Entries are never changed or removed." }
            form.filters method="get" action="/audit" role="search" aria-label="Filter the audit log" {
                div.field {
                    label for="action" { "Action" }
                    select #action name="action" {
                        option value="" { "Any" }
                        @for a in AuditAction::ALL {
                            option value=(a.as_str()) selected[action == Some(a)] { (a.as_str()) }
                        }
                    }
                }
                div.field {
                    label for="actor" { "Actor contains" }
                    input #actor type="text" name="actor" value=(query.actor.clone().unwrap_or_default());
                }
                div.field {
                    label for="object" { "Object id" }
                    input #object type="text" name="object" value=(query.object_id.clone().unwrap_or_default());
                }
                div { button type="submit" { "Filter" } " " a href="/audit" { "Clear" } }
            }
            @if entries.is_empty() {
                p.empty { "No entries match." }
            } @else {
                div.table-wrap role="region" aria-labelledby="audit-caption" tabindex="0" {
                    table {
                        caption #audit-caption { "Entries" }
                        thead { tr {
                            th scope="col" { "When" } th scope="col" { "Who" } th scope="col" { "Action" }
                            th scope="col" { "Object" } th scope="col" { "Before" } th scope="col" { "After" }
                            th scope="col" { "From" }
                        } }
                        tbody { @for entry in &entries { (row(entry)) } }
                    }
                }
            }
            (older_page(
                "/audit",
                "Older entries",
                &[
                    ("action", action.map(AuditAction::as_str).unwrap_or_default()),
                    ("actor", query.actor.as_deref().unwrap_or_default()),
                    ("object", query.object_id.as_deref().unwrap_or_default()),
                ],
                older.as_deref(),
            ))
        },
    )))
}
