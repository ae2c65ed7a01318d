//! The changes an admin makes on a subaccount's page, each the same use case as its
//! `payoutd admin` command (`create-subaccount`, `fund`, `set-fee`, `signature-policy`,
//! `issue-key`, `revoke-key`, `set-webhook`, `rotate-webhook-secret`), audited as the operator
//! in the change's own transaction. A new secret (API key, webhook) is shown once, on the
//! answer to the POST itself (never in a redirect's URL), and pages are never cached.

use std::time::Duration;

use actix_web::{HttpResponse, web};
use domain::auth::SignaturePolicy;
use domain::ids::SubaccountId;
use domain::operators::Capability;
use maud::html;
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::when;
use crate::pages::see_other;
use crate::pages::subaccounts::render_profile;
use crate::session::SignedIn;
use crate::state::Console;

/// The longest overlap of a webhook secret rotation, in hours (a week).
pub const MAX_OVERLAP_HOURS: u64 = 168;

/// `POST /subaccounts`.
#[derive(Deserialize)]
pub struct CreateForm {
    csrf: String,
    name: String,
    #[serde(default)]
    email: String,
}

/// `POST /subaccounts/{id}/fund`.
#[derive(Deserialize)]
pub struct FundForm {
    csrf: String,
    asset: String,
    amount: String,
    reason: String,
}

/// `POST /subaccounts/{id}/fees`.
#[derive(Deserialize)]
pub struct FeeForm {
    csrf: String,
    asset: String,
    fixed: String,
    percentage: String,
    min_amount: String,
}

/// `POST /subaccounts/{id}/policy`.
#[derive(Deserialize)]
pub struct PolicyForm {
    csrf: String,
    policy: String,
}

/// `POST /subaccounts/{id}/keys/revoke`.
#[derive(Deserialize)]
pub struct RevokeForm {
    csrf: String,
    api_key: String,
}

/// `POST /subaccounts/{id}/webhook`.
#[derive(Deserialize)]
pub struct WebhookForm {
    csrf: String,
    url: String,
}

/// `POST /subaccounts/{id}/webhook/rotate`.
#[derive(Deserialize)]
pub struct RotateForm {
    csrf: String,
    overlap_hours: String,
}

/// A form with only its CSRF token.
#[derive(Deserialize)]
pub struct CsrfForm {
    csrf: String,
}

/// The subaccount of a change's path: an id that is not one is a page that is not there.
fn subaccount(raw: &str) -> Result<SubaccountId, ConsoleError> {
    SubaccountId::parse(raw.trim()).ok_or(ConsoleError::NotFound)
}

fn back(id: SubaccountId, done: &str) -> HttpResponse {
    see_other(&format!("/subaccounts/{id}?done={done}"))
}

/// `POST /subaccounts`.
pub async fn create(
    signed_in: SignedIn,
    console: web::Data<Console>,
    form: web::Form<CreateForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageSubaccounts)?;
    signed_in.check_csrf(&form.csrf)?;
    let email = Some(form.email.trim()).filter(|e| !e.is_empty());
    let created = signed_in
        .admin(&console)
        .create_subaccount(&form.name, email, None)
        .await?;
    Ok(back(created.id, "created"))
}

/// `POST /subaccounts/{id}/fund`.
pub async fn fund(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<FundForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::FundSubaccounts)?;
    signed_in.check_csrf(&form.csrf)?;
    let id = subaccount(&id)?;
    signed_in
        .admin(&console)
        .fund(id, &form.asset, &form.amount, &form.reason)
        .await?;
    Ok(back(id, "funded"))
}

/// `POST /subaccounts/{id}/fees`.
pub async fn set_fee(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<FeeForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageFees)?;
    signed_in.check_csrf(&form.csrf)?;
    let id = subaccount(&id)?;
    signed_in
        .admin(&console)
        .set_fee(
            id,
            &form.asset,
            &form.fixed,
            &form.percentage,
            &form.min_amount,
        )
        .await?;
    Ok(back(id, "fee"))
}

/// `POST /subaccounts/{id}/policy`.
pub async fn set_policy(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<PolicyForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageSubaccounts)?;
    signed_in.check_csrf(&form.csrf)?;
    let id = subaccount(&id)?;
    let policy = SignaturePolicy::parse(&form.policy).ok_or_else(|| {
        ConsoleError::BadRequest("A signature policy is any, v2_for_posts or v2.".to_owned())
    })?;
    signed_in
        .admin(&console)
        .set_signature_policy(id, policy)
        .await?;
    Ok(back(id, "policy"))
}

/// `POST /subaccounts/{id}/keys`: the new key's secret is on this answer only.
pub async fn issue_key(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<CsrfForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageApiKeys)?;
    signed_in.check_csrf(&form.csrf)?;
    let sub = subaccount(&id)?;
    let issued = signed_in.admin(&console).issue_key(sub).await?;
    let notice = html! {
        div.notice.ok role="status" {
            p { "Issued " code { (issued.api_key) } ". Copy its secret now and hand it to the merchant over a channel you trust: it is stored only encrypted and is not shown again." }
            p.secret-once { (issued.api_secret.expose()) }
        }
    };
    render_profile(&signed_in, &console, &id, Some(notice)).await
}

/// `POST /subaccounts/{id}/keys/revoke`.
pub async fn revoke_key(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<RevokeForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageApiKeys)?;
    signed_in.check_csrf(&form.csrf)?;
    let sub = subaccount(&id)?;
    // A key is revoked from its own subaccount's page only: another subaccount's key is not
    // found here, whatever its value.
    let profile = console
        .subaccounts
        .profile(&id)
        .await
        .map_err(crate::pages::subaccounts::refusal)?;
    let api_key = form.api_key.trim();
    if !profile
        .keys
        .iter()
        .any(|k| k.api_key == api_key && k.revoked_at.is_none())
    {
        return Err(ConsoleError::BadRequest(
            "This subaccount has no active API key with this value.".to_owned(),
        ));
    }
    signed_in.admin(&console).revoke_key(api_key).await?;
    Ok(back(sub, "revoked"))
}

/// `POST /subaccounts/{id}/webhook`: the URL passes the delivery worker's address guard; the
/// new signing secret is on this answer only.
pub async fn set_webhook(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<WebhookForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageWebhooks)?;
    signed_in.check_csrf(&form.csrf)?;
    let sub = subaccount(&id)?;
    let (url, secret) = signed_in
        .admin(&console)
        .set_webhook(sub, &form.url)
        .await?;
    let notice = html! {
        div.notice.ok role="status" {
            p { "Webhooks now go to " code { (url) } ", signed with this new secret. Copy it now for the merchant's receiver: it is not shown again." }
            p.secret-once { (secret.expose()) }
        }
    };
    render_profile(&signed_in, &console, &id, Some(notice)).await
}

/// `POST /subaccounts/{id}/webhook/rotate`: the new secret is on this answer only.
pub async fn rotate_webhook_secret(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<RotateForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::ManageWebhooks)?;
    signed_in.check_csrf(&form.csrf)?;
    let sub = subaccount(&id)?;
    let hours = form
        .overlap_hours
        .trim()
        .parse::<u64>()
        .ok()
        .filter(|h| *h <= MAX_OVERLAP_HOURS)
        .ok_or_else(|| {
            ConsoleError::BadRequest(format!(
                "The overlap is a whole number of hours from 0 to {MAX_OVERLAP_HOURS}."
            ))
        })?;
    let secret = signed_in
        .admin(&console)
        .rotate_webhook_secret(sub, Duration::from_secs(hours * 3600))
        .await?;
    let until = console.clock.now() + chrono::Duration::hours(i64::try_from(hours).unwrap_or(0));
    let notice = html! {
        div.notice.ok role="status" {
            p { "New webhook secret, shown once. Deliveries carry signatures by both secrets until " (when(until)) "; the merchant's receiver should switch before then." }
            p.secret-once { (secret.expose()) }
        }
    };
    render_profile(&signed_in, &console, &id, Some(notice)).await
}
