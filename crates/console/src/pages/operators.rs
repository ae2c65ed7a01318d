//! `/operators` (admin): every operator, adding one (its enrolment link shown once), changing
//! a role, disabling. The same use cases as `payoutd admin create-operator`,
//! `set-operator-role` and `disable-operator`.

use actix_web::{HttpResponse, web};
use domain::operators::service::OperatorAdminError;
use domain::operators::{Capability, Operator, OperatorStatus, Role};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::when;
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// `GET /operators` query: what was just done.
#[derive(Debug, Deserialize)]
pub struct DoneQuery {
    done: Option<String>,
}

/// `POST /operators`.
#[derive(Deserialize)]
pub struct CreateForm {
    csrf: String,
    email: String,
    role: String,
}

/// `POST /operators/{id}/role`.
#[derive(Deserialize)]
pub struct RoleForm {
    csrf: String,
    role: String,
}

/// A form with only its CSRF token.
#[derive(Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

fn role_options(selected: Role) -> Markup {
    html! {
        @for role in Role::ALL {
            option value=(role.as_str()) selected[role == selected] { (role.as_str()) }
        }
    }
}

fn status_badge(status: OperatorStatus) -> Markup {
    let class = match status {
        OperatorStatus::Active => "badge ok",
        OperatorStatus::Invited => "badge info",
        OperatorStatus::Disabled => "badge bad",
    };
    html! { span class=(class) { (status.as_str()) } }
}

fn create_form(csrf: &str, email: &str, message: Option<&str>) -> Markup {
    html! {
        section aria-labelledby="add" {
            h2 #add { "Add an operator" }
            @if let Some(message) = message {
                div.notice.error role="alert" { p { (message) } }
            }
            form.stack method="post" action="/operators" {
                input type="hidden" name="csrf" value=(csrf);
                div.field {
                    label for="new-email" { "E-mail address" }
                    input #new-email type="email" name="email" value=(email) required;
                }
                div.field {
                    label for="new-role" { "Role" }
                    select #new-role name="role" { (role_options(Role::Viewer)) }
                }
                div { button type="submit" { "Create and get the enrolment link" } }
            }
        }
    }
}

fn operators_table(signed_in: &SignedIn, operators: &[Operator]) -> Markup {
    let csrf = signed_in.csrf();
    html! {
        div.table-wrap role="region" aria-labelledby="operators-caption" tabindex="0" {
            table {
                caption #operators-caption { "Operators (" (operators.len()) ")" }
                thead { tr {
                    th scope="col" { "E-mail" } th scope="col" { "Role" } th scope="col" { "Status" }
                    th scope="col" { "Created" } th scope="col" { "Enrolled" } th scope="col" { "Actions" }
                } }
                tbody {
                    @for operator in operators {
                        @let own = operator.id == signed_in.auth.operator.id;
                        tr {
                            td { (operator.email.as_str()) @if own { " (you)" } }
                            td { (operator.role.as_str()) }
                            td { (status_badge(operator.status)) }
                            td { (when(operator.created_at)) }
                            td { @if let Some(at) = operator.enrolled_at { (when(at)) } @else { "not yet" } }
                            td {
                                @if own || operator.status == OperatorStatus::Disabled {
                                    span.muted { "—" }
                                } @else {
                                    div.actions {
                                        form.inline method="post" action=(format!("/operators/{}/role", operator.id)) {
                                            input type="hidden" name="csrf" value=(csrf);
                                            label.visually-hidden for=(format!("role-{}", operator.id)) { "Role of " (operator.email.as_str()) }
                                            select id=(format!("role-{}", operator.id)) name="role" { (role_options(operator.role)) }
                                            " "
                                            button.secondary type="submit" { "Change role" }
                                        }
                                        form.inline method="post" action=(format!("/operators/{}/disable", operator.id)) {
                                            input type="hidden" name="csrf" value=(csrf);
                                            button.danger type="submit" aria-label=(format!("Disable {}", operator.email.as_str())) { "Disable" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

async fn render(
    signed_in: &SignedIn,
    console: &Console,
    notice: Option<Markup>,
    create: Markup,
) -> Result<HttpResponse, ConsoleError> {
    let operators = console.operators.list().await?;
    let chrome = signed_in.chrome(Some(Section::Operators));
    Ok(html(page(
        "Operators",
        Header::SignedIn(&chrome),
        html! {
            @if let Some(notice) = notice { (notice) }
            (operators_table(signed_in, &operators))
            (create)
        },
    )))
}

/// `GET /operators`.
pub async fn list(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<DoneQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageOperators)?;
    let notice = match query.done.as_deref() {
        Some("role") => Some(
            html! { div.notice.ok role="status" { p { "The role was changed. It applies to the operator's next request." } } },
        ),
        Some("disabled") => Some(
            html! { div.notice.ok role="status" { p { "The operator was disabled and signed out everywhere." } } },
        ),
        _ => None,
    };
    render(
        &signed_in,
        &console,
        notice,
        create_form(&signed_in.csrf(), "", None),
    )
    .await
}

fn refusal(e: OperatorAdminError) -> Result<String, ConsoleError> {
    match e {
        OperatorAdminError::Port(e) => Err(e.into()),
        OperatorAdminError::NotFound => Err(ConsoleError::NotFound),
        other => Ok(other.to_string()),
    }
}

/// `POST /operators`.
pub async fn create(
    signed_in: SignedIn,
    console: web::Data<Console>,
    form: web::Form<CreateForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageOperators)?;
    signed_in.check_csrf(&form.csrf)?;
    let role = Role::parse(&form.role)
        .ok_or_else(|| ConsoleError::BadRequest("Unknown role.".to_owned()))?;
    match console
        .operators
        .invite(&form.email, role, &signed_in.audit_context())
        .await
    {
        Ok(invitation) => {
            let link = format!("{}/enrol/{}", console.public_url, invitation.token.expose());
            let notice = html! {
                div.notice.ok role="status" {
                    p { "Created " strong { (invitation.operator.email.as_str()) } " (" (role.as_str()) "). Send this one-time enrolment link to them over a channel you trust; it works once, until " (when(invitation.expires_at)) ", and is not shown again:" }
                    p.secret-once { (link) }
                }
            };
            render(
                &signed_in,
                &console,
                Some(notice),
                create_form(&signed_in.csrf(), "", None),
            )
            .await
        }
        Err(e) => {
            let message = refusal(e)?;
            let form_html = create_form(&signed_in.csrf(), &form.email, Some(&message));
            render(&signed_in, &console, None, form_html)
                .await
                .map(|mut r| {
                    *r.status_mut() = actix_web::http::StatusCode::BAD_REQUEST;
                    r
                })
        }
    }
}

/// `POST /operators/{id}/role`.
pub async fn change_role(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<RoleForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageOperators)?;
    signed_in.check_csrf(&form.csrf)?;
    let role = Role::parse(&form.role)
        .ok_or_else(|| ConsoleError::BadRequest("Unknown role.".to_owned()))?;
    match console
        .operators
        .change_role(&id, role, &signed_in.audit_context())
        .await
    {
        Ok(_) => Ok(see_other("/operators?done=role")),
        Err(e) => Err(ConsoleError::BadRequest(refusal(e)?)),
    }
}

/// `POST /operators/{id}/disable`.
pub async fn disable(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageOperators)?;
    signed_in.check_csrf(&form.csrf)?;
    match console
        .operators
        .disable(&id, &signed_in.audit_context())
        .await
    {
        Ok(_) => Ok(see_other("/operators?done=disabled")),
        Err(e) => Err(ConsoleError::BadRequest(refusal(e)?)),
    }
}
