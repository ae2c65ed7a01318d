//! Signing in and out, and enrolling (the one-time link `payoutd admin create-operator`
//! prints).

use actix_web::{HttpRequest, HttpResponse, web};
use domain::operators::service::{EnrolError, SignInError};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::{ConsoleError, is_local_path};
use crate::layout::{Header, page};
use crate::pages::{html, see_other};
use crate::session::{FORM_COOKIE, FormSecret, Origin, SESSION_COOKIE, SignedIn, cookie, removal};
use crate::state::Console;

/// `GET /login` query.
#[derive(Debug, Deserialize)]
pub struct LoginQuery {
    next: Option<String>,
    signed_out: Option<String>,
}

/// `POST /login` form.
#[derive(Deserialize)]
pub struct LoginForm {
    email: String,
    password: String,
    code: String,
    csrf: String,
    next: Option<String>,
}

fn login_form(csrf: &str, email: &str, next: Option<&str>) -> Markup {
    html! {
        form.stack method="post" action="/login" {
            input type="hidden" name="csrf" value=(csrf);
            @if let Some(next) = next.filter(|n| is_local_path(n)) {
                input type="hidden" name="next" value=(next);
            }
            div.field {
                label for="email" { "E-mail address" }
                input #email type="email" name="email" value=(email) autocomplete="username" required;
            }
            div.field {
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password" required;
            }
            div.field {
                label for="code" { "Code from your authenticator app" }
                input #code type="text" name="code" inputmode="numeric" pattern="[0-9 ]{6,7}"
                    autocomplete="one-time-code" aria-describedby="code-hint" required;
                span #code-hint .hint { "Six digits; a new code every 30 seconds." }
            }
            div { button type="submit" { "Sign in" } }
        }
    }
}

fn sign_in_page(
    status: actix_web::http::StatusCode,
    form: &FormSecret,
    email: &str,
    next: Option<&str>,
    message: Option<(&str, &str)>,
) -> HttpResponse {
    let body = page(
        "Sign in",
        Header::Anonymous,
        html! {
            @if let Some((class, text)) = message {
                div class=(format!("notice {class}")) role="alert" { p { (text) } }
            }
            (login_form(&form.secret.csrf_token(), email, next))
        },
    );
    let mut response = HttpResponse::build(status);
    response.content_type("text/html; charset=utf-8");
    if let Some(c) = form.cookie() {
        response.cookie(c);
    }
    response.body(body.into_string())
}

/// `GET /login`.
pub async fn login_page(
    req: HttpRequest,
    console: web::Data<Console>,
    query: web::Query<LoginQuery>,
) -> HttpResponse {
    let form = FormSecret::of(&req, &console);
    let message = query
        .signed_out
        .as_ref()
        .map(|_| ("ok", "You are signed out."));
    sign_in_page(
        actix_web::http::StatusCode::OK,
        &form,
        "",
        query.next.as_deref(),
        message,
    )
}

/// `POST /login`.
pub async fn login(
    req: HttpRequest,
    console: web::Data<Console>,
    form: web::Form<LoginForm>,
) -> Result<HttpResponse, ConsoleError> {
    FormSecret::check(&req, &form.csrf)?;
    let origin = Origin::of(&req);
    let secret = FormSecret::of(&req, &console);
    let next = form.next.as_deref().filter(|n| is_local_path(n));
    match console
        .operators
        .sign_in(
            &form.email,
            &form.password,
            &form.code,
            origin.client,
            origin.request_id,
        )
        .await
    {
        Ok(signed_in) => Ok(HttpResponse::SeeOther()
            .insert_header((
                actix_web::http::header::LOCATION,
                next.unwrap_or("/").to_owned(),
            ))
            .cookie(cookie(SESSION_COOKIE, signed_in.token.expose().to_owned()))
            .cookie(removal(FORM_COOKIE))
            .finish()),
        Err(SignInError::Refused) => Ok(sign_in_page(
            actix_web::http::StatusCode::UNAUTHORIZED,
            &secret,
            &form.email,
            next,
            Some((
                "error",
                "The e-mail address, password or code is not right. Check them and try again \
                 (wait for a new code if this one was used already).",
            )),
        )),
        Err(e @ SignInError::Throttled { .. }) => Ok(sign_in_page(
            actix_web::http::StatusCode::TOO_MANY_REQUESTS,
            &secret,
            &form.email,
            next,
            Some(("error", &format!("{e}. Nothing was checked."))),
        )),
        Err(SignInError::Port(e)) => Err(e.into()),
    }
}

/// A form with only its CSRF token.
#[derive(Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// `POST /logout`.
pub async fn logout(
    signed_in: SignedIn,
    console: web::Data<Console>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.check_csrf(&form.csrf)?;
    console
        .operators
        .sign_out(
            &signed_in.token,
            &signed_in.auth,
            &signed_in.audit_context(),
        )
        .await?;
    let mut response = see_other("/login?signed_out=1");
    response.add_cookie(&removal(SESSION_COOKIE)).ok();
    Ok(response)
}

/// `POST /enrol/{token}` form.
#[derive(Deserialize)]
pub struct EnrolForm {
    password: String,
    confirmation: String,
    code: String,
    csrf: String,
}

fn enrol_page(
    status: actix_web::http::StatusCode,
    console: &Console,
    req: &HttpRequest,
    view: &domain::operators::service::EnrolmentView,
    message: Option<&str>,
) -> HttpResponse {
    let form = FormSecret::of(req, console);
    let body = page(
        "Set up your console account",
        Header::Anonymous,
        html! {
            @if let Some(message) = message {
                div.notice.error role="alert" { p { (message) } }
            }
            p { "You are setting up " strong { (view.email) } " (" (view.role.as_str()) "). This link works once, until " (crate::fmt::when(view.expires_at)) "." }
            h2 { "1. Add the account to your authenticator app" }
            p { "Open this link on your phone, or type the key into the app (time-based, 6 digits, 30 seconds):" }
            p { a href=(view.otpauth_uri.expose()) { "Add to authenticator app" } }
            p { "Key: " code.secret-once { (view.totp_base32.expose()) } }
            h2 { "2. Choose a password and confirm with a code" }
            form.stack method="post" {
                input type="hidden" name="csrf" value=(form.secret.csrf_token());
                input type="email" name="username" value=(view.email) autocomplete="username" hidden;
                div.field {
                    label for="password" { "New password" }
                    input #password type="password" name="password" autocomplete="new-password" minlength="12" aria-describedby="password-hint" required;
                    span #password-hint .hint { "At least 12 characters. A passphrase of several words is good." }
                }
                div.field {
                    label for="confirmation" { "New password again" }
                    input #confirmation type="password" name="confirmation" autocomplete="new-password" minlength="12" required;
                }
                div.field {
                    label for="code" { "Code your app shows now" }
                    input #code type="text" name="code" inputmode="numeric" autocomplete="one-time-code" required;
                }
                div { button type="submit" { "Set up my account" } }
            }
        },
    );
    let mut response = HttpResponse::build(status);
    response.content_type("text/html; charset=utf-8");
    if let Some(c) = form.cookie() {
        response.cookie(c);
    }
    response.body(body.into_string())
}

fn link_not_valid() -> HttpResponse {
    let body = page(
        "Link not valid",
        Header::Anonymous,
        html! {
            div.notice.error role="alert" {
                p { "This enrolment link is not valid: it may have been used already or have expired. Ask an admin for a new one." }
            }
        },
    );
    HttpResponse::NotFound()
        .content_type("text/html; charset=utf-8")
        .body(body.into_string())
}

/// `GET /enrol/{token}` (writes nothing).
pub async fn enrol_form(
    req: HttpRequest,
    console: web::Data<Console>,
    token: web::Path<String>,
) -> Result<HttpResponse, ConsoleError> {
    match console.operators.enrolment(&token).await {
        Ok(view) => Ok(enrol_page(
            actix_web::http::StatusCode::OK,
            &console,
            &req,
            &view,
            None,
        )),
        Err(EnrolError::Port(e)) => Err(e.into()),
        Err(_) => Ok(link_not_valid()),
    }
}

/// `POST /enrol/{token}`.
pub async fn enrol(
    req: HttpRequest,
    console: web::Data<Console>,
    token: web::Path<String>,
    form: web::Form<EnrolForm>,
) -> Result<HttpResponse, ConsoleError> {
    FormSecret::check(&req, &form.csrf)?;
    let origin = Origin::of(&req);
    match console
        .operators
        .enrol(
            &token,
            &form.password,
            &form.confirmation,
            &form.code,
            origin.request_id,
            origin.client.map(|a| a.to_string()),
        )
        .await
    {
        Ok(operator) => {
            let body = page(
                "Your account is ready",
                Header::Anonymous,
                html! {
                    div.notice.ok role="status" { p { "You can now sign in as " strong { (operator.email.as_str()) } " with your password and a new code from your app." } }
                    p { a.button href="/login" { "Sign in" } }
                },
            );
            Ok(html(body))
        }
        Err(EnrolError::Port(e)) => Err(e.into()),
        Err(EnrolError::NotValid) => Ok(link_not_valid()),
        Err(e) => match console.operators.enrolment(&token).await {
            Ok(view) => Ok(enrol_page(
                actix_web::http::StatusCode::BAD_REQUEST,
                &console,
                &req,
                &view,
                Some(&e.to_string()),
            )),
            Err(EnrolError::Port(e)) => Err(e.into()),
            Err(_) => Ok(link_not_valid()),
        },
    }
}
