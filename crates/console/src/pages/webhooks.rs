//! `/webhooks`: queue a webhook event for delivery again by its id (operator and admin), the
//! same use case as `payoutd admin resend --event`, written with its audit entry in one
//! transaction.

use actix_web::{HttpResponse, web};
use domain::admin::AdminError;
use domain::ids::EventId;
use domain::operators::Capability;
use maud::html;
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// `GET /webhooks` query.
#[derive(Debug, Deserialize)]
pub struct WebhooksQuery {
    queued: Option<String>,
}

/// `POST /webhooks/resend`.
#[derive(Deserialize)]
pub struct ResendForm {
    csrf: String,
    event: String,
}

/// `GET /webhooks`.
pub async fn page_of(
    signed_in: SignedIn,
    query: web::Query<WebhooksQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let may_resend = signed_in
        .auth
        .operator
        .role
        .allows(Capability::ResendWebhooks);
    let queued = query
        .queued
        .as_deref()
        .and_then(EventId::parse)
        .map(|id| id.to_string());
    let chrome = signed_in.chrome(Some(Section::Webhooks));
    Ok(html(page(
        "Webhooks",
        Header::SignedIn(&chrome),
        html! {
            @if let Some(event) = &queued {
                div.notice.ok role="status" {
                    p { "Event " code { (event) } " is queued for delivery again, with a fresh retry schedule." }
                }
            }
            p.muted { "A webhook event is delivered again from the start of its retry schedule; its earlier attempts are kept." }
            @if may_resend {
                form.stack method="post" action="/webhooks/resend" {
                    input type="hidden" name="csrf" value=(signed_in.csrf());
                    div.field {
                        label for="event" { "Event id" }
                        input id="event" type="text" name="event" required
                            maxlength="36" autocomplete="off" spellcheck="false"
                            placeholder="00000000-0000-0000-0000-000000000000";
                    }
                    div.actions { button type="submit" { "Resend the event" } }
                }
            } @else {
                p.notice { "Your role reads this page; operators and admins resend events." }
            }
        },
    )))
}

/// `POST /webhooks/resend`.
pub async fn resend(
    signed_in: SignedIn,
    console: web::Data<Console>,
    form: web::Form<ResendForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ResendWebhooks)?;
    signed_in.check_csrf(&form.csrf)?;
    let event = EventId::parse(form.event.trim()).ok_or_else(|| {
        ConsoleError::BadRequest("An event id is a UUID, as the webhook carries it.".to_owned())
    })?;
    match signed_in.admin(&console).resend_event(event).await {
        Ok(_) => Ok(see_other(&format!("/webhooks?queued={event}"))),
        Err(AdminError::EventNotFound) => {
            Err(ConsoleError::BadRequest("No event has this id.".to_owned()))
        }
        Err(AdminError::Port(e)) => Err(ConsoleError::Port(e)),
        Err(other) => Err(ConsoleError::BadRequest(format!("{other}."))),
    }
}
