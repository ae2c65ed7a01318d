//! `/confirmations`: the requests asking receivers to confirm their bank details, newest first,
//! with their status and attempts (never the recipient or the link); operators and admins send
//! a failed one again while its link can still confirm the account (`POST
//! /confirmations/{id}/resend`), audited in the same transaction.

use actix_web::{HttpResponse, web};
use domain::account::notification::resend::ResendError;
use domain::account::notification::{NotificationId, NotificationStatus, NotificationSummary};
use domain::operators::Capability;
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::when;
use crate::layout::{Header, continues_after, older_page, page};
use crate::nav::Section;
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// Requests shown.
pub const PAGE: u32 = 100;

/// `GET /confirmations` query.
#[derive(Debug, Deserialize)]
pub struct ConfirmationsQuery {
    #[serde(default)]
    status: String,
    #[serde(default)]
    done: String,
    /// The last request of the previous page.
    #[serde(default)]
    before: String,
}

/// `POST /confirmations/{id}/resend`.
#[derive(Deserialize)]
pub struct ResendForm {
    csrf: String,
}

fn badge(status: NotificationStatus) -> Markup {
    let tone = match status {
        NotificationStatus::Pending => "info",
        NotificationStatus::Sent => "ok",
        NotificationStatus::Failed => "bad",
    };
    html! { span class=(format!("badge {tone}")) { (status.as_str()) } }
}

fn row(signed_in: &SignedIn, request: &NotificationSummary, may_resend: bool) -> Markup {
    html! {
        tr {
            td { (when(request.created_at)) }
            td { code { (request.subaccount_id.to_string()) } }
            td { code { (request.account_id.to_string()) } }
            td { (badge(request.status)) }
            td.num { (request.attempts) }
            td {
                @if let Some(at) = request.sent_at { "sent " (when(at)) }
                @if let Some(at) = request.next_attempt_at { "next attempt " (when(at)) }
                @if let Some(error) = &request.last_error { br; span.muted { (error) } }
            }
            td {
                @if may_resend && request.status == NotificationStatus::Failed {
                    form.inline method="post" action=(format!("/confirmations/{}/resend", request.id)) {
                        input type="hidden" name="csrf" value=(signed_in.csrf());
                        button.secondary type="submit" aria-label=(format!("Send request {} again", request.id)) { "Send again" }
                    }
                }
            }
        }
    }
}

/// `GET /confirmations`.
pub async fn list(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<ConfirmationsQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let status = match query.status.trim() {
        "" => None,
        raw => Some(NotificationStatus::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest(format!("No request status is called {raw:?}."))
        })?),
    };
    let before = match query.before.trim() {
        "" => None,
        raw => Some(NotificationId::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest("The page position is not a request id.".to_owned())
        })?),
    };
    let requests = console.confirmations.list(status, before, PAGE).await?;
    let older = continues_after(&requests, PAGE, |r| r.id);
    let may_resend = signed_in.may(Capability::ResendConfirmations);
    let chrome = signed_in.chrome(Some(Section::Confirmations));
    Ok(html(page(
        "Confirmation requests",
        Header::SignedIn(&chrome),
        html! {
            @if query.done == "1" {
                div.notice.ok role="status" { p { "Queued: the request is sent again now, with a fresh retry schedule." } }
            }
            p.muted { "The e-mails asking receivers to confirm their bank details, newest first, " (PAGE) " to a page. Recipients and links are never shown. A failed request can be sent again while its link can still confirm the account (seven days, unused)." }
            form.filters method="get" action="/confirmations" role="search" aria-label="Filter confirmation requests" {
                div.field {
                    label for="status" { "Status" }
                    select #status name="status" {
                        option value="" { "Any" }
                        @for s in NotificationStatus::ALL {
                            option value=(s.as_str()) selected[status == Some(s)] { (s.as_str()) }
                        }
                    }
                }
                div { button type="submit" { "Filter" } " " a href="/confirmations" { "Clear" } }
            }
            @if requests.is_empty() {
                p.empty { "No confirmation request matches." }
            } @else {
                div.table-wrap role="region" aria-labelledby="requests-caption" tabindex="0" {
                    table {
                        caption #requests-caption { "Confirmation requests" }
                        thead { tr {
                            th scope="col" { "Queued" } th scope="col" { "Subaccount" } th scope="col" { "Account" }
                            th scope="col" { "Status" } th.num scope="col" { "Attempts" } th scope="col" { "Delivery" }
                            th scope="col" { span.visually-hidden { "Actions" } }
                        } }
                        tbody { @for request in &requests { (row(&signed_in, request, may_resend)) } }
                    }
                }
            }
            (older_page("/confirmations", "Older requests", &[("status", query.status.trim())], older.as_deref()))
        },
    )))
}

/// `POST /confirmations/{id}/resend`.
pub async fn resend(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<ResendForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ResendConfirmations)?;
    signed_in.check_csrf(&form.csrf)?;
    match console
        .confirmations
        .resend(&id, &signed_in.audit_context())
        .await
    {
        Ok(()) => Ok(see_other("/confirmations?done=1")),
        Err(ResendError::NotFound) => Err(ConsoleError::NotFound),
        Err(ResendError::Port(e)) => Err(ConsoleError::Port(e)),
        Err(refused @ (ResendError::NotFailed(_) | ResendError::LinkSpent)) => {
            Err(ConsoleError::BadRequest(refused.to_string()))
        }
    }
}
