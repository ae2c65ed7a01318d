//! `/webhooks`: a subaccount's webhook events with every delivery attempt (status code,
//! timing, error), filtered by status; queue one event, or every event created in a time range,
//! for delivery again (operator and admin): the same use cases as `payoutd admin events` and
//! `payoutd admin resend`, each resend written with its audit entry in one transaction.

use actix_web::{HttpResponse, web};
use chrono::{DateTime, NaiveDateTime, Utc};
use domain::delivery::history::{EventStatus, EventSummary};
use domain::ids::{EventId, SubaccountId};
use domain::operators::{Capability, OperatorTimeZone};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::{urlencode, when};
use crate::layout::{Header, continues_after, older_page, page, table};
use crate::nav::Section;
use crate::pages::subaccounts::refusal;
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// Events to a page (newest first).
pub const EVENTS_SHOWN: u32 = 100;

/// How a time range's ends are typed: a `datetime-local` input's value, read on the wall clock
/// of the operator's time zone.
const RANGE_FORMAT: &str = "%Y-%m-%dT%H:%M";

/// `GET /webhooks` query.
#[derive(Debug, Default, Deserialize)]
pub struct WebhooksQuery {
    #[serde(default)]
    subaccount: String,
    #[serde(default)]
    status: String,
    queued: Option<String>,
    ranged: Option<u64>,
    /// The last event of the previous page.
    #[serde(default)]
    before: String,
}

/// `POST /webhooks/resend`.
#[derive(Deserialize)]
pub struct ResendForm {
    csrf: String,
    event: String,
    /// The subaccount whose log to go back to.
    #[serde(default)]
    subaccount: String,
}

/// `POST /webhooks/resend-range`.
#[derive(Deserialize)]
pub struct ResendRangeForm {
    csrf: String,
    subaccount: String,
    since: String,
    until: String,
}

fn outcome_badge(outcome: &str) -> Markup {
    let tone = match outcome {
        "delivered" => "ok",
        "failed" => "warn",
        _ => "bad",
    };
    html! { span class=(format!("badge {tone}")) { (outcome) } }
}

fn status_badge(status: &str) -> Markup {
    let tone = match EventStatus::parse(status) {
        Some(EventStatus::Delivered) => "ok",
        Some(EventStatus::Pending) => "info",
        Some(EventStatus::Exhausted) | None => "bad",
    };
    html! { span class=(format!("badge {tone}")) { (status) } }
}

fn attempts(event: &EventSummary) -> Markup {
    html! {
        @if event.attempts.is_empty() {
            span.muted { "none yet" }
        } @else {
            ol.attempts {
                @for attempt in &event.attempts {
                    li {
                        (when(attempt.attempted_at)) " " (outcome_badge(&attempt.outcome))
                        @if let Some(code) = attempt.status_code { " HTTP " (code) }
                        " · " (attempt.latency_ms) " ms"
                        @if let Some(error) = &attempt.error { " · " (error) }
                    }
                }
            }
        }
    }
}

fn event_row(event: &EventSummary, resend: Option<(&str, SubaccountId)>) -> Markup {
    html! {
        tr {
            td { (when(event.created_at)) }
            td { code { (event.event_type) } div.muted { code { (event.id.to_string()) } } }
            td { code { (event.object_id.to_string()) } " #" (event.sequence) }
            td { (status_badge(&event.status))
                @if event.status == EventStatus::Pending.as_str() { div.muted { "next " (when(event.next_attempt_at)) } }
            }
            td { (attempts(event)) }
            td {
                @if let Some((csrf, subaccount)) = resend {
                    form.inline method="post" action="/webhooks/resend" {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="event" value=(event.id.to_string());
                        input type="hidden" name="subaccount" value=(subaccount.to_string());
                        button.secondary type="submit" aria-label=(format!("Resend event {}", event.id)) { "Resend" }
                    }
                } @else { span.muted { "—" } }
            }
        }
    }
}

fn filter_form(subaccount: &str, status: &str) -> Markup {
    html! {
        form.filters method="get" action="/webhooks" role="search" aria-label="A subaccount's webhook events" {
            div.field {
                label for="subaccount" { "Subaccount id" }
                input #subaccount type="text" name="subaccount" value=(subaccount) required
                    maxlength="36" autocomplete="off" spellcheck="false";
            }
            div.field {
                label for="status" { "Status" }
                select #status name="status" {
                    option value="" { "Any" }
                    @for s in EventStatus::ALL {
                        option value=(s.as_str()) selected[status == s.as_str()] { (s.as_str()) }
                    }
                }
            }
            div { button type="submit" { "Show events" } }
        }
    }
}

fn range_form(csrf: &str, subaccount: SubaccountId) -> Markup {
    let zone = crate::fmt::zone().name();
    html! {
        section aria-labelledby="range" {
            h2 #range { "Resend a time range" }
            p.muted { "Every event of this subaccount created from the first moment (inclusive) to the second (exclusive), in your time zone (" (zone) "), is delivered again from the start of its retry schedule; earlier attempts are kept." }
            form.filters method="post" action="/webhooks/resend-range" {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="subaccount" value=(subaccount.to_string());
                div.field {
                    label for="since" { "From (" (zone) ")" }
                    input #since type="datetime-local" name="since" required;
                }
                div.field {
                    label for="until" { "To (" (zone) ")" }
                    input #until type="datetime-local" name="until" required;
                }
                div { button type="submit" { "Resend the range" } }
            }
        }
    }
}

fn resend_by_id_form(csrf: &str) -> Markup {
    html! {
        section aria-labelledby="by-id" {
            h2 #by-id { "Resend one event by its id" }
            form.stack method="post" action="/webhooks/resend" {
                input type="hidden" name="csrf" value=(csrf);
                div.field {
                    label for="event" { "Event id" }
                    input id="event" type="text" name="event" required
                        maxlength="36" autocomplete="off" spellcheck="false"
                        placeholder="00000000-0000-0000-0000-000000000000";
                }
                div.actions { button type="submit" { "Resend the event" } }
            }
        }
    }
}

/// `GET /webhooks`.
pub async fn page_of(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<WebhooksQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let may_resend = signed_in.may(Capability::ResendWebhooks);
    let csrf = signed_in.csrf();
    let queued = query
        .queued
        .as_deref()
        .and_then(EventId::parse)
        .map(|id| id.to_string());
    let raw_subaccount = query.subaccount.trim();
    let status = query.status.trim();
    let before = match query.before.trim() {
        "" => None,
        raw => Some(EventId::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest("The page position is not an event id.".to_owned())
        })?),
    };
    let log = if raw_subaccount.is_empty() {
        None
    } else {
        let profile = console
            .subaccounts
            .profile(raw_subaccount)
            .await
            .map_err(refusal)?;
        let events = signed_in
            .admin(&console)
            .events(
                profile.subaccount.id,
                Some(status).filter(|s| !s.is_empty()),
                None,
                before,
                EVENTS_SHOWN,
            )
            .await?;
        let older = continues_after(&events, EVENTS_SHOWN, |e| e.id);
        Some((profile, events, older))
    };
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
            @if let Some(count) = query.ranged {
                div.notice.ok role="status" {
                    p { (count) @if count == 1 { " event is" } @else { " events are" } " queued for delivery again." }
                }
            }
            (filter_form(raw_subaccount, status))
            @if let Some((profile, events, older)) = &log {
                @let sub = &profile.subaccount;
                h2 { "Events of " a href=(format!("/subaccounts/{}", sub.id)) { (sub.name) } }
                p {
                    "Endpoint: "
                    @if let Some(url) = &sub.postback_url { code { (url) } } @else { span.muted { "none set: events are kept, not delivered" } }
                    @if let Some(at) = profile.webhook.as_ref().and_then(|w| w.disabled_at) {
                        " " span.badge.bad { "stopped" } " after a 410 Gone at " (when(at))
                    }
                }
                @if events.is_empty() {
                    p.empty { "No event matches." }
                } @else {
                    (table(
                        "events-caption",
                        html! { @if before.is_some() { (events.len()) " older events" } @else { "Newest " (events.len()) " events" } },
                        &["Created", "Event", "Object", "Status", "Attempts", "Action"],
                        html! { @for event in events {
                            (event_row(event, may_resend.then_some((csrf.as_str(), sub.id))))
                        } },
                    ))
                }
                (older_page("/webhooks", "Older events", &[("subaccount", raw_subaccount), ("status", status)], older.as_deref()))
                @if may_resend { (range_form(&csrf, sub.id)) }
            } @else {
                p.muted { "Name a subaccount to see its events and every delivery attempt. A subaccount's page links here too." }
            }
            @if may_resend {
                (resend_by_id_form(&csrf))
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
        Ok(_) => {
            let back = SubaccountId::parse(form.subaccount.trim())
                .map(|s| format!("&subaccount={}", urlencode(&s.to_string())))
                .unwrap_or_default();
            Ok(see_other(&format!("/webhooks?queued={event}{back}")))
        }
        Err(domain::admin::AdminError::EventNotFound) => {
            Err(ConsoleError::BadRequest("No event has this id.".to_owned()))
        }
        Err(other) => Err(other.into()),
    }
}

/// A `datetime-local` value as the instant it names on the wall clock of `zone`.
fn moment(raw: &str, which: &str, zone: OperatorTimeZone) -> Result<DateTime<Utc>, ConsoleError> {
    let local = NaiveDateTime::parse_from_str(raw.trim(), RANGE_FORMAT).map_err(|_| {
        ConsoleError::BadRequest(format!(
            "The range's {which} is a date and a time, like 2026-11-29T14:30 ({}).",
            zone.name()
        ))
    })?;
    zone.instant(local).ok_or_else(|| {
        ConsoleError::BadRequest(format!(
            "The range's {which}, {}, does not exist in {}: the clocks skip it.",
            raw.trim(),
            zone.name()
        ))
    })
}

/// `POST /webhooks/resend-range`.
pub async fn resend_range(
    signed_in: SignedIn,
    console: web::Data<Console>,
    form: web::Form<ResendRangeForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ResendWebhooks)?;
    signed_in.check_csrf(&form.csrf)?;
    let subaccount = SubaccountId::parse(form.subaccount.trim()).ok_or(ConsoleError::NotFound)?;
    let zone = signed_in.auth.operator.time_zone;
    let since = moment(&form.since, "start", zone)?;
    let until = moment(&form.until, "end", zone)?;
    let queued = signed_in
        .admin(&console)
        .resend_range(subaccount, since, until)
        .await?;
    Ok(see_other(&format!(
        "/webhooks?subaccount={subaccount}&ranged={queued}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_end_is_a_minute_of_the_operators_zone() {
        let at = moment(" 2026-11-29T14:30 ", "start", OperatorTimeZone::UTC)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(at.to_rfc3339(), "2026-11-29T14:30:00+00:00");
        let toronto = OperatorTimeZone::parse("America/Toronto").unwrap_or_default();
        let at = moment("2026-11-29T09:30", "start", toronto).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(at.to_rfc3339(), "2026-11-29T14:30:00+00:00");
        for bad in ["", "2026-11-29", "2026-11-29T25:00", "yesterday"] {
            assert!(
                moment(bad, "start", OperatorTimeZone::UTC).is_err(),
                "{bad}"
            );
        }
        let skipped = moment("2026-03-08T02:30", "end", toronto);
        assert!(
            matches!(&skipped, Err(ConsoleError::BadRequest(m)) if m.contains("does not exist in America/Toronto")),
            "{skipped:?}"
        );
    }
}
