//! `/confirm/<token>`: the page a receiver opens from the confirmation e-mail or SMS (docs/API.md,
//! `GET /confirm/{token}`). No API key: the random, single-use, expiring token is the credential.
//!
//! - `GET` only shows the page: the account's payout method and masked details, and a form
//!   with a Confirm button. It writes nothing, because e-mail link scanners fetch every link.
//! - `POST` (the form) confirms and answers the "confirmed" page directly with 200 (no
//!   redirect: reloading it posts again, which is harmless, since a second `POST` writes
//!   nothing and shows the same page).
//!
//! **No CSRF token.** There is no session or cookie, so a browser adds no ambient authority to a
//! forged request: a cross-site form can confirm an account only if it carries the account's
//! token, and whoever knows the token can post it directly anyway. The token in the path is
//! the whole credential, and confirming is exactly what its owner is asked to do. Against
//! clickjacking (a framed Confirm button) the pages forbid framing (`x-frame-options: DENY`,
//! `frame-ancestors 'none'`).
//!
//! Every response carries `cache-control: no-store` and `referrer-policy: no-referrer` (the
//! token is in the URL), a strict `content-security-policy` (no scripts, no external
//! resources, forms only to this origin) and `x-content-type-options: nosniff`. Everything
//! interpolated into a page is HTML-escaped.

use std::sync::LazyLock;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Path};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use domain::account::service::{ConfirmError, ConfirmationView, LinkState};
use domain::account::{AccountField, PayoutMethod};
use sha2::{Digest, Sha256};

use crate::state::AppState;

/// The pages' style: the console's stylesheet, inlined (the page loads nothing), and the
/// content security policy that lets exactly that style apply: nothing may load, no script
/// runs, the form posts only to this origin, and no other site may frame the page.
static STYLE: LazyLock<(String, String)> = LazyLock::new(|| {
    let css = String::from_utf8_lossy(console::assets::STYLESHEET.bytes).into_owned();
    let digest = STANDARD.encode(Sha256::digest(css.as_bytes()));
    let policy = format!(
        "default-src 'none'; style-src 'sha256-{digest}'; form-action 'self'; \
         frame-ancestors 'none'; base-uri 'none'"
    );
    (css, policy)
});

/// The content security policy of the pages (see [`STYLE`]).
pub fn content_security_policy() -> &'static str {
    &STYLE.1
}

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by character references, safe inside an
/// element and inside a quoted attribute value.
pub fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// The payout method in words.
pub fn method_label(method: PayoutMethod) -> &'static str {
    match method {
        PayoutMethod::DirectEntry => "Australian bank account (direct entry, AUD)",
        PayoutMethod::Ach => "US bank account (ACH, USD)",
        PayoutMethod::Eft => "Canadian bank account (EFT, CAD)",
        PayoutMethod::Digital => "Canadian e-mail payment (CAD)",
        PayoutMethod::Sepa => "European bank account (SEPA, EUR)",
        PayoutMethod::DirectCredit => "New Zealand bank account (direct credit, NZD)",
    }
}

/// A field's name in words.
pub fn field_label(field: AccountField) -> &'static str {
    match field {
        AccountField::Bsb => "BSB",
        AccountField::AccountNumber => "Account number",
        AccountField::RoutingNumber => "Routing number",
        AccountField::AccountType => "Account type",
        AccountField::Iban => "IBAN",
        AccountField::Bic => "BIC",
        AccountField::Recipient => "E-mail address",
        AccountField::Name => "Name",
        AccountField::Description => "Description",
    }
}

/// The method and masked details as an HTML description list.
fn details_html(method: PayoutMethod, details: &[(AccountField, String)]) -> String {
    let mut html = format!(
        "<dl class=\"facts\"><dt>Payout method</dt><dd>{}</dd>",
        escape_html(method_label(method))
    );
    for (field, value) in details {
        html.push_str(&format!(
            "<dt>{}</dt><dd>{}</dd>",
            escape_html(field_label(*field)),
            escape_html(value)
        ));
    }
    html.push_str("</dl>");
    html
}

/// A page: `title` is text (escaped here), `body` is HTML built from escaped parts.
fn page(status: StatusCode, title: &str, body: &str) -> HttpResponse {
    let title = escape_html(title);
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>{}</style></head>\
         <body><main id=\"main\" class=\"narrow\"><h1>{title}</h1>{body}</main></body></html>\n",
        STYLE.0
    );
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        // The token is in the URL: keep it out of caches and other sites' referrer logs.
        .insert_header(("cache-control", "no-store"))
        .insert_header(("referrer-policy", "no-referrer"))
        .insert_header(("content-security-policy", content_security_policy()))
        .insert_header(("x-frame-options", "DENY"))
        .insert_header(("x-content-type-options", "nosniff"))
        .body(html)
}

fn paragraph(text: &str) -> String {
    format!("<p>{}</p>", escape_html(text))
}

fn not_valid() -> HttpResponse {
    page(
        StatusCode::NOT_FOUND,
        "Link not valid",
        &paragraph(
            "This confirmation link is not valid or has expired. Please contact the sender for a new one.",
        ),
    )
}

fn unavailable(error: &domain::PortError) -> HttpResponse {
    tracing::warn!(error = %error, "confirmation page failed");
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Please try again",
        &paragraph(
            "We could not load your details just now. Please open the link again in a few minutes.",
        ),
    )
}

/// The page of a link that can still confirm: the details and the Confirm form. The form's
/// action is the token itself, relative to this page's URL (`…/confirm/<token>`), so it posts
/// back to the same path behind any public URL prefix.
fn confirm_form(token: &str, view: &ConfirmationView) -> String {
    let (asker, contact) = if view.merchant.is_empty() {
        ("The sender", "the sender")
    } else {
        (view.merchant.as_str(), view.merchant.as_str())
    };
    let whom = if view.receiver_name.is_empty() {
        String::new()
    } else {
        format!(", {},", view.receiver_name)
    };
    format!(
        "{}{}{}<form class=\"stack\" method=\"post\" action=\"{}\">\
         <button type=\"submit\">Confirm</button>\
         </form>{}",
        paragraph(&format!(
            "{asker} will send your payouts to the bank details below and asks you{whom} to \
             confirm them."
        )),
        paragraph("Please check them (they are partly hidden for your security) and confirm."),
        details_html(view.method, &view.masked_details),
        escape_html(token),
        paragraph(&format!(
            "If these are not your details, do not confirm: contact {contact} instead."
        )),
    )
}

/// `GET /confirm/<token>`.
#[utoipa::path(
    get,
    path = "/confirm/{token}",
    tag = "Receiver accounts",
    operation_id = "showConfirmation",
    summary = "Show the details to confirm (the link sent to the receiver)",
    description = "The page a receiver opens from the confirmation e-mail or SMS. No API key: \
        the random, single-use token (valid 7 days) is the credential. It shows the payout \
        method and the masked account details with a Confirm button, a form that `POST`s to \
        the same path, and **changes nothing** (e-mail link scanners fetch every link): the \
        account stays unconfirmed and the token usable. An account confirmed already shows \
        \"already confirmed\" without a button. Responses carry `cache-control: no-store`, \
        `referrer-policy: no-referrer`, a strict `content-security-policy`, \
        `x-frame-options: DENY` and `x-content-type-options: nosniff`.",
    params(("token" = String, Path, description = "The token from the link.")),
    responses(
        (status = 200, description = "The details and a Confirm button, or \"already confirmed\"", content_type = "text/html; charset=utf-8", body = String),
        (status = 404, description = "Unknown, expired or spent token", content_type = "text/html; charset=utf-8", body = String),
        (status = 503, description = "The database is unavailable: try again later", content_type = "text/html; charset=utf-8", body = String),
    ),
)]
pub async fn show(state: Data<AppState>, token: Path<String>) -> HttpResponse {
    match state.accounts.show_confirmation(&token).await {
        Ok(view) => match view.state {
            LinkState::Confirmable => page(
                StatusCode::OK,
                "Confirm your bank details",
                &confirm_form(&token, &view),
            ),
            LinkState::AlreadyConfirmed => page(
                StatusCode::OK,
                "Bank details already confirmed",
                &format!(
                    "{}{}",
                    paragraph(
                        "These bank details are already confirmed. There is nothing more to do."
                    ),
                    details_html(view.method, &view.masked_details)
                ),
            ),
        },
        Err(ConfirmError::Invalid | ConfirmError::NotFound) => not_valid(),
        Err(ConfirmError::Port(e)) => unavailable(&e),
    }
}

/// `POST /confirm/<token>` (the page's form).
#[utoipa::path(
    post,
    path = "/confirm/{token}",
    tag = "Receiver accounts",
    operation_id = "confirmAccount",
    summary = "Confirm bank details (the form of the confirmation page)",
    description = "Confirms the account of the token: `status: completed`, \
        `confirm_status: confirmed`, an `accountUpdate` event, and the account's `awaiting` \
        payouts become `pending`; every token of the account is spent. No API key and no body \
        needed (a form post's `application/x-www-form-urlencoded` body is ignored): the token \
        is the credential, and without a session or cookie there is nothing for a cross-site \
        request to borrow, so no CSRF token is used. Answers the \"confirmed\" page with 200; a \
        second `POST` writes nothing and answers the same page. Same response headers as the \
        `GET`.",
    params(("token" = String, Path, description = "The token from the link.")),
    request_body(
        content_type = "application/x-www-form-urlencoded",
        description = "Ignored (the form has no fields); may be empty.",
        content = Option<Object>,
    ),
    responses(
        (status = 200, description = "Confirmed (now or before)", content_type = "text/html; charset=utf-8", body = String),
        (status = 404, description = "Unknown, expired or spent token, or an account that cannot be confirmed", content_type = "text/html; charset=utf-8", body = String),
        (status = 503, description = "The database is unavailable: try again later", content_type = "text/html; charset=utf-8", body = String),
    ),
)]
pub async fn confirm(state: Data<AppState>, token: Path<String>) -> HttpResponse {
    match state.accounts.confirm_with_token(&token).await {
        Ok(account) => page(
            StatusCode::OK,
            "Bank details confirmed",
            &format!(
                "{}{}",
                paragraph(
                    "Thank you. Your bank details are confirmed and payouts to this account can now be sent.",
                ),
                details_html(account.method, &account.data.masked())
            ),
        ),
        Err(ConfirmError::Invalid | ConfirmError::NotFound) => not_valid(),
        Err(ConfirmError::Port(e)) => unavailable(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_every_character_that_could_leave_text_or_an_attribute() {
        assert_eq!(
            escape_html(r#"<script>alert("x" + 'y')</script> & co"#),
            "&lt;script&gt;alert(&quot;x&quot; + &#39;y&#39;)&lt;/script&gt; &amp; co"
        );
        assert_eq!(escape_html("012 ***"), "012 ***");
        assert_eq!(escape_html(""), "");
    }

    #[test]
    fn every_method_and_field_has_words() {
        for &method in PayoutMethod::ALL {
            assert!(method_label(method).contains(method.asset().code()));
            for spec in method.fields() {
                assert!(!field_label(spec.field).is_empty());
            }
        }
    }
}
