//! `/subaccounts`: every subaccount with its balances (filtered by name, keyset-paged), adding
//! one (admin), and `/subaccounts/{id}`, one subaccount's profile: balances, fee templates, API
//! keys, signature policy and webhook endpoint, with the forms that change them for the roles
//! that may ([`crate::pages::subaccount_changes`]).

use actix_web::{HttpResponse, web};
use domain::admin::MAX_FUNDING_REASON_CHARS;
use domain::auth::SignaturePolicy;
use domain::money::Asset;
use domain::operators::Capability;
use domain::subaccount::directory::{DirectoryError, SubaccountListing, SubaccountProfile};
use domain::subaccount::{Balance, FeeTemplate};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::{money, urlencode, when};
use crate::layout::{Header, page, table};
use crate::nav::Section;
use crate::pages::html;
use crate::session::SignedIn;
use crate::state::Console;

/// Subaccounts per page.
pub const PAGE: u32 = 50;

/// `GET /subaccounts` query.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    name: String,
    #[serde(default)]
    after: String,
}

/// `GET /subaccounts/{id}` query: what was just done.
#[derive(Debug, Default, Deserialize)]
pub struct ProfileQuery {
    done: Option<String>,
}

pub(crate) fn refusal(e: DirectoryError) -> ConsoleError {
    match e {
        DirectoryError::NotFound => ConsoleError::NotFound,
        DirectoryError::Invalid(message) => ConsoleError::BadRequest(message),
        DirectoryError::Port(e) => ConsoleError::Port(e),
    }
}

/// A subaccount's balances on one line each (`none yet` when it never held any).
fn balances_list(balances: &[Balance]) -> Markup {
    html! {
        @if balances.is_empty() {
            span.muted { "none yet" }
        } @else {
            @for balance in balances {
                div { (money(balance.asset, balance.available))
                    @if balance.pending > 0 { span.muted { " (" (money(balance.asset, balance.pending)) " held)" } }
                }
            }
        }
    }
}

fn list_row(listing: &SubaccountListing) -> Markup {
    let sub = &listing.subaccount;
    html! {
        tr {
            td { a href=(format!("/subaccounts/{}", sub.id)) { (sub.name) } }
            td { code { (sub.id.to_string()) } }
            td.num { (balances_list(&listing.balances)) }
            td { (sub.signature_policy.as_str()) }
            td { @if sub.postback_url.is_some() { "set" } @else { span.muted { "none" } } }
            td { (when(sub.created_at)) }
        }
    }
}

fn create_form(csrf: &str) -> Markup {
    html! {
        section aria-labelledby="add-subaccount" {
            h2 #add-subaccount { "Add a subaccount" }
            form.stack method="post" action="/subaccounts" {
                input type="hidden" name="csrf" value=(csrf);
                div.field {
                    label for="new-name" { "Name" }
                    input #new-name type="text" name="name" required maxlength="255" autocomplete="off";
                }
                div.field {
                    label for="new-email" { "Contact e-mail (optional)" }
                    input #new-email type="email" name="email" maxlength="254" autocomplete="off";
                }
                div.actions { button type="submit" { "Add the subaccount" } }
            }
        }
    }
}

/// `GET /subaccounts`.
pub async fn list(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<ListQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let (rows, next) = console
        .subaccounts
        .list(Some(&query.name), Some(&query.after), PAGE)
        .await
        .map_err(refusal)?;
    let may_create = signed_in.may(Capability::ManageSubaccounts);
    let chrome = signed_in.chrome(Some(Section::Subaccounts));
    let name = query.name.trim();
    Ok(html(page(
        "Subaccounts",
        Header::SignedIn(&chrome),
        html! {
            p.muted { "Every merchant's subaccounts, newest first, with their balances (available, and held by payouts in flight)." }
            form.filters method="get" action="/subaccounts" role="search" aria-label="Find subaccounts" {
                div.field {
                    label for="name" { "Name contains" }
                    input #name type="text" name="name" value=(name) maxlength="255" autocomplete="off";
                }
                div { button type="submit" { "Find" } " " a href="/subaccounts" { "Clear" } }
            }
            @if rows.is_empty() {
                p.empty { @if name.is_empty() { "No subaccount yet." } @else { "No subaccount's name contains this." } }
            } @else {
                (table(
                    "subaccounts-caption",
                    html! { "Subaccounts" },
                    &["Name", "Id", "Balances", "Signature policy", "Webhook", "Created"],
                    html! { @for row in &rows { (list_row(row)) } },
                ))
            }
            @if let Some(next) = next {
                nav.pager aria-label="Pages" {
                    a href=(format!("/subaccounts?name={}&after={}", urlencode(name), urlencode(&next))) { "Older subaccounts" }
                }
            }
            @if may_create { (create_form(&signed_in.csrf())) }
        },
    )))
}

fn done_notice(done: Option<&str>) -> Option<Markup> {
    let said = match done? {
        "created" => "The subaccount was created. Issue an API key for its integration below.",
        "funded" => {
            "Funded: the ledger entry, the balance and the audit entry (with the reason) are written."
        }
        "fee" => "The fee template was set. It applies to payouts created from now on.",
        "policy" => "The signature policy was set. Every instance applies it to the next request.",
        "revoked" => "The API key was revoked. It stops working at once on every instance.",
        _ => return None,
    };
    Some(html! { div.notice.ok role="status" { p { (said) } } })
}

fn facts(profile: &SubaccountProfile) -> Markup {
    let sub = &profile.subaccount;
    html! {
        dl.facts {
            dt { "Id" } dd { code { (sub.id.to_string()) } }
            dt { "Merchant" } dd { code { (sub.merchant_id.to_string()) } }
            @if !sub.business_name.is_empty() && sub.business_name != sub.name {
                dt { "Business name" } dd { (sub.business_name) }
            }
            @if !sub.email.is_empty() { dt { "E-mail" } dd { (sub.email) } }
            dt { "Signature policy" } dd { (sub.signature_policy.as_str()) }
            dt { "Created" } dd { (when(sub.created_at)) }
            dt { "Payouts" } dd { a href=(format!("/payouts?subaccount={}", sub.id)) { "This subaccount's payouts" } }
        }
    }
}

fn asset_options() -> Markup {
    html! { @for asset in Asset::ALL { option value=(asset.code()) { (asset.code()) } } }
}

fn balances_section(signed_in: &SignedIn, profile: &SubaccountProfile) -> Markup {
    let id = profile.subaccount.id;
    html! {
        section aria-labelledby="balances" {
            h2 #balances { "Balances" }
            @if profile.balances.is_empty() {
                p.empty { "No balance yet: nothing was ever funded." }
            } @else {
                (table("balances-caption", html! { "Balances by currency" }, &["Currency", "Available", "Held by payouts in flight"], html! {
                    @for b in &profile.balances {
                        tr { td { (b.asset.code()) } td.num { (money(b.asset, b.available)) } td.num { (money(b.asset, b.pending)) } }
                    }
                }))
            }
            @if signed_in.may(Capability::FundSubaccounts) {
                form.stack method="post" action=(format!("/subaccounts/{id}/fund")) aria-label="Fund this subaccount" {
                    input type="hidden" name="csrf" value=(signed_in.csrf());
                    div.field {
                        label for="fund-asset" { "Currency" }
                        select #fund-asset name="asset" { (asset_options()) }
                    }
                    div.field {
                        label for="fund-amount" { "Amount in minor units (cents)" }
                        input #fund-amount type="text" name="amount" required inputmode="numeric"
                            pattern="[0-9]+" maxlength="13" autocomplete="off";
                    }
                    div.field {
                        label for="fund-reason" { "Reason (kept in the audit log)" }
                        input #fund-reason type="text" name="reason" required maxlength=(MAX_FUNDING_REASON_CHARS);
                    }
                    div.actions { button type="submit" { "Fund" } }
                }
            }
        }
    }
}

fn fee_row(fee: &FeeTemplate) -> Markup {
    html! {
        tr {
            td { (fee.asset.code()) }
            td.num { (money(fee.asset, fee.fixed)) }
            td.num { (fee.percentage.as_f64()) " %" }
            td.num { (money(fee.asset, fee.min_amount)) }
        }
    }
}

fn fees_section(signed_in: &SignedIn, profile: &SubaccountProfile) -> Markup {
    let id = profile.subaccount.id;
    html! {
        section aria-labelledby="fees" {
            h2 #fees { "Fees" }
            @if profile.fees.is_empty() {
                p.empty { "No fee template: payouts are free of fees." }
            } @else {
                (table("fees-caption", html! { "Fee templates by currency" }, &["Currency", "Fixed", "Percentage", "Minimum"],
                    html! { @for fee in &profile.fees { (fee_row(fee)) } }))
            }
            @if signed_in.may(Capability::ManageFees) {
                form.stack method="post" action=(format!("/subaccounts/{id}/fees")) aria-label="Set a fee template" {
                    input type="hidden" name="csrf" value=(signed_in.csrf());
                    div.field {
                        label for="fee-asset" { "Currency" }
                        select #fee-asset name="asset" { (asset_options()) }
                    }
                    div.field {
                        label for="fee-fixed" { "Fixed, in minor units" }
                        input #fee-fixed type="text" name="fixed" required inputmode="numeric" pattern="[0-9]+" maxlength="13" value="0";
                    }
                    div.field {
                        label for="fee-percentage" { "Percentage (up to 4 decimals)" }
                        input #fee-percentage type="text" name="percentage" required inputmode="decimal" maxlength="8" value="0";
                    }
                    div.field {
                        label for="fee-min" { "Minimum fee, in minor units" }
                        input #fee-min type="text" name="min_amount" required inputmode="numeric" pattern="[0-9]+" maxlength="13" value="0";
                    }
                    div.actions { button type="submit" { "Set the fee template" } }
                }
            }
        }
    }
}

fn keys_section(signed_in: &SignedIn, profile: &SubaccountProfile) -> Markup {
    let id = profile.subaccount.id;
    let may = signed_in.may(Capability::ManageApiKeys);
    let csrf = signed_in.csrf();
    html! {
        section aria-labelledby="keys" {
            h2 #keys { "API keys" }
            p.muted { "A key's secret is shown once, when it is issued, and stored only encrypted. Issue a new key before revoking the old one to rotate without downtime." }
            @if profile.keys.is_empty() {
                p.empty { "No API key yet." }
            } @else {
                (table("keys-caption", html! { "API keys, newest first" }, &["Key", "Issued", "State", "Action"], html! {
                    @for key in &profile.keys {
                        tr {
                            td { code { (key.api_key) } }
                            td { (when(key.created_at)) }
                            td { @if let Some(at) = key.revoked_at { span.badge.bad { "revoked" } " " (when(at)) } @else { span.badge.ok { "active" } } }
                            td {
                                @if may && key.revoked_at.is_none() {
                                    form.inline method="post" action=(format!("/subaccounts/{id}/keys/revoke")) {
                                        input type="hidden" name="csrf" value=(csrf);
                                        input type="hidden" name="api_key" value=(key.api_key);
                                        button.danger type="submit" aria-label=(format!("Revoke {}", key.api_key)) { "Revoke" }
                                    }
                                } @else { span.muted { "—" } }
                            }
                        }
                    }
                }))
            }
            @if may {
                form method="post" action=(format!("/subaccounts/{id}/keys")) {
                    input type="hidden" name="csrf" value=(csrf);
                    button type="submit" { "Issue a new API key" }
                }
            }
        }
    }
}

fn policy_section(signed_in: &SignedIn, profile: &SubaccountProfile) -> Markup {
    let id = profile.subaccount.id;
    let current = profile.subaccount.signature_policy;
    let words = |policy: SignaturePolicy| match policy {
        SignaturePolicy::AnyVersion => "any: v1 or v2 signatures on every request",
        SignaturePolicy::V2ForPosts => "v2_for_posts: v2 on every POST, v1 on GETs only",
        SignaturePolicy::V2Only => "v2: v2 signatures on every request",
    };
    html! {
        section aria-labelledby="policy" {
            h2 #policy { "Signature policy" }
            p { "Now: " strong { (words(current)) } "." }
            @if signed_in.may(Capability::ManageSubaccounts) {
                form.stack method="post" action=(format!("/subaccounts/{id}/policy")) aria-label="Set the signature policy" {
                    input type="hidden" name="csrf" value=(signed_in.csrf());
                    div.field {
                        label for="policy-select" { "Policy" }
                        select #policy-select name="policy" {
                            @for policy in SignaturePolicy::ALL {
                                option value=(policy.as_str()) selected[*policy == current] { (words(*policy)) }
                            }
                        }
                    }
                    div.actions { button type="submit" { "Set the policy" } }
                }
            }
        }
    }
}

fn webhook_section(signed_in: &SignedIn, profile: &SubaccountProfile) -> Markup {
    let id = profile.subaccount.id;
    let may = signed_in.may(Capability::ManageWebhooks);
    let csrf = signed_in.csrf();
    html! {
        section aria-labelledby="webhook" {
            h2 #webhook { "Webhook endpoint" }
            dl.facts {
                dt { "URL" }
                dd { @if let Some(url) = &profile.subaccount.postback_url { code { (url) } } @else { span.muted { "none: events are kept, not delivered" } } }
                @if let Some(endpoint) = &profile.webhook {
                    dt { "Secret" }
                    dd {
                        "set " (when(endpoint.updated_at))
                        @if let Some(until) = endpoint.previous_until { "; the previous secret also signs until " (when(until)) }
                    }
                    @if let Some(at) = endpoint.disabled_at {
                        dt { "Deliveries" } dd { span.badge.bad { "stopped" } " the endpoint answered 410 Gone at " (when(at)) "; set a URL again to resume." }
                    }
                }
                dt { "Deliveries" } dd { a href=(format!("/webhooks?subaccount={id}")) { "Events and their delivery attempts" } }
            }
            @if may {
                form.stack method="post" action=(format!("/subaccounts/{id}/webhook")) aria-label="Set the webhook URL" {
                    input type="hidden" name="csrf" value=(csrf);
                    div.field {
                        label for="webhook-url" { "New webhook URL" }
                        input #webhook-url type="url" name="url" required maxlength="2048" autocomplete="off" spellcheck="false"
                            placeholder="https://hooks.example.com/payoutd";
                        span.hint { "Setting a URL issues a new signing secret at once (shown once); the old one stops signing." }
                    }
                    div.actions { button type="submit" { "Set the URL and a new secret" } }
                }
                @if profile.webhook.is_some() {
                    form.stack method="post" action=(format!("/subaccounts/{id}/webhook/rotate")) aria-label="Rotate the webhook secret" {
                        input type="hidden" name="csrf" value=(csrf);
                        div.field {
                            label for="overlap" { "Hours the current secret keeps signing too" }
                            input #overlap type="text" name="overlap_hours" required inputmode="numeric" pattern="[0-9]+" maxlength="3" value="24";
                        }
                        div.actions { button type="submit" { "Rotate the secret" } }
                    }
                }
            }
        }
    }
}

/// The profile page, with `notice` first (a change's result).
pub(crate) async fn render_profile(
    signed_in: &SignedIn,
    console: &Console,
    id: &str,
    notice: Option<Markup>,
) -> Result<HttpResponse, ConsoleError> {
    let profile = console.subaccounts.profile(id).await.map_err(refusal)?;
    let chrome = signed_in.chrome(Some(Section::Subaccounts));
    Ok(html(page(
        &format!("Subaccount {}", profile.subaccount.name),
        Header::SignedIn(&chrome),
        html! {
            @if let Some(notice) = notice { (notice) }
            (facts(&profile))
            (balances_section(signed_in, &profile))
            (fees_section(signed_in, &profile))
            (keys_section(signed_in, &profile))
            (policy_section(signed_in, &profile))
            (webhook_section(signed_in, &profile))
        },
    )))
}

/// `GET /subaccounts/{id}`.
pub async fn profile(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    query: web::Query<ProfileQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    render_profile(
        &signed_in,
        &console,
        &id,
        done_notice(query.done.as_deref()),
    )
    .await
}
