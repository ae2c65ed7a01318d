//! `/account`: the signed-in operator's own account, for every role: who it is, its session,
//! and the time zone the console shows its times in (`POST /account/time-zone`, the same use
//! case for everyone, audited as `operator.time_zone`). Times stay UTC on hover and in storage.

use actix_web::{HttpResponse, web};
use domain::operators::service::OperatorAdminError;
use domain::operators::{Capability, OperatorTimeZone};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::when;
use crate::layout::{Header, page};
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// `GET /account` query.
#[derive(Debug, Deserialize)]
pub struct AccountQuery {
    #[serde(default)]
    done: String,
}

/// `POST /account/time-zone`.
#[derive(Deserialize)]
pub struct TimeZoneForm {
    csrf: String,
    #[serde(default)]
    time_zone: String,
}

fn time_zone_form(csrf: &str, current: OperatorTimeZone, error: Option<&str>) -> Markup {
    html! {
        form method="post" action="/account/time-zone" aria-labelledby="zone-heading" {
            h2 #zone-heading { "Time zone" }
            p.muted { "Times on every page are shown in this zone, to the minute; each shows the exact moment in UTC when you point at it. Aggregates by day (payouts today, the chart) stay by UTC day, as their labels say." }
            @if let Some(error) = error { p.error role="alert" { (error) } }
            input type="hidden" name="csrf" value=(csrf);
            div.field {
                label for="time_zone" { "Show times in" }
                select #time_zone name="time_zone" {
                    @for zone in OperatorTimeZone::choices() {
                        option value=(zone.name()) selected[zone == current] { (zone.name()) }
                    }
                }
            }
            div { button type="submit" { "Save" } }
        }
    }
}

fn render(
    signed_in: &SignedIn,
    console: &Console,
    notice: Option<Markup>,
    form: Markup,
) -> HttpResponse {
    let operator = &signed_in.auth.operator;
    let session = &signed_in.auth.session;
    let idle = console.operators.session_policy().idle.num_minutes();
    let chrome = signed_in.chrome(None);
    html(page(
        "Your account",
        Header::SignedIn(&chrome),
        html! {
            @if let Some(notice) = notice { (notice) }
            dl.facts {
                dt { "E-mail" } dd { (operator.email.as_str()) }
                dt { "Role" } dd { (operator.role.as_str()) }
                dt { "Signed in" } dd { (when(session.created_at)) }
                dt { "Session ends" } dd { (when(session.expires_at)) " at the latest; sooner after " (idle) " minutes without a request" }
            }
            (form)
        },
    ))
}

/// `GET /account`.
pub async fn show(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<AccountQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let notice = (query.done == "time-zone").then(|| {
        html! { div.notice.ok role="status" { p { "Saved: times are shown in " (signed_in.auth.operator.time_zone.name()) "." } } }
    });
    let form = time_zone_form(&signed_in.csrf(), signed_in.auth.operator.time_zone, None);
    Ok(render(&signed_in, &console, notice, form))
}

/// `POST /account/time-zone`.
pub async fn set_time_zone(
    signed_in: SignedIn,
    console: web::Data<Console>,
    form: web::Form<TimeZoneForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    signed_in.check_csrf(&form.csrf)?;
    match console
        .operators
        .set_time_zone(
            &signed_in.auth.operator,
            &form.time_zone,
            &signed_in.audit_context(),
        )
        .await
    {
        Ok(_) | Err(OperatorAdminError::Unchanged(_)) => Ok(see_other("/account?done=time-zone")),
        Err(OperatorAdminError::Port(e)) => Err(e.into()),
        Err(other) => {
            let message = format!("{other}.");
            let form = time_zone_form(
                &signed_in.csrf(),
                signed_in.auth.operator.time_zone,
                Some(&message),
            );
            let mut response = render(&signed_in, &console, None, form);
            *response.status_mut() = actix_web::http::StatusCode::BAD_REQUEST;
            Ok(response)
        }
    }
}
