//! `/`: the overview: what needs attention across every subaccount, and each rail's next
//! cut-off (read by
//! `domain::overview::Overviews`, whose rules say what "today", the windows and a failing
//! endpoint are), then the operator's own session.

use actix_web::{HttpResponse, web};
use domain::operators::Capability;
use domain::overview::{LIST_LIMIT, Overview, RETURNS_WINDOW, WEBHOOK_WINDOW};
use maud::{Markup, html};

use crate::error::ConsoleError;
use crate::fmt::{age, money, status_badge, when};
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::html;
use crate::session::SignedIn;
use crate::state::Console;

/// `n` in bold with the noun that fits it: **1** receiver, **2** receivers.
fn counted(n: u64, one: &str, many: &str) -> Markup {
    html! { strong { (n) } " " (if n == 1 { one } else { many }) }
}

fn today(overview: &Overview) -> Markup {
    let Some(today) = overview.today() else {
        return html! {};
    };
    let day = today.day.format("%Y-%m-%d").to_string();
    let link = |status: &str| format!("/payouts?status={status}&from={day}&to={day}");
    html! {
        section aria-labelledby="today" {
            h2 #today { "Payouts today" }
            p.muted { "Created on " time datetime=(day) { (day) } " (UTC), by their status now: " (today.total()) " in all." }
            @if today.total() == 0 {
                p.empty { "No payout has been created today." }
            } @else {
                ul.legend {
                    @for (status, count) in today.counts.iter().filter(|(_, n)| *n > 0) {
                        li { a href=(link(status.as_str())) { (status_badge(*status)) " " (count) } }
                    }
                }
            }
        }
    }
}

fn attention(overview: &Overview) -> Markup {
    let kyc = &overview.kyc;
    let files = &overview.awaiting_files;
    let returned: u64 = overview.returns.iter().map(|r| r.count).sum();
    html! {
        div.cards {
            section.card aria-labelledby="kyc-card" {
                h2 #kyc-card { "KYC queue" }
                p { (counted(kyc.count, "receiver", "receivers")) " waiting for a decision." }
                @if let (Some(oldest), Some(waited)) = (kyc.oldest, overview.kyc_oldest_age()) {
                    p { "The oldest has waited " strong { (age(waited)) } " (registered " (when(oldest)) ")." }
                }
                p { a href="/kyc" { "Open the KYC queue" } }
            }
            section.card aria-labelledby="files-card" {
                h2 #files-card { "Files awaiting the bank" }
                p { (counted(files.count, "bank file", "bank files")) " sent (" code { "uploaded" } ") and not yet acknowledged or rejected." }
                @if let Some(oldest) = files.oldest.first() {
                    p { "The oldest was sent " (when(oldest.uploaded_at)) ", " (age(overview.now - oldest.uploaded_at)) " ago." }
                }
                p { a href="/files?state=uploaded" { "See the files" } }
            }
            section.card aria-labelledby="returns-card" {
                h2 #returns-card { "Returns, last " (RETURNS_WINDOW.num_days()) " days" }
                p { (counted(returned, "payment", "payments")) " sent back by the receiving banks (bank report lines of kind " code { "returned" } " read since " (when(overview.returns_since)) ")." }
                @if !overview.returns.is_empty() {
                    ul {
                        @for r in &overview.returns {
                            li { (r.method.name()) ": " (r.count) ", " (money(r.method.asset(), r.amount)) }
                        }
                    }
                }
            }
            section.card aria-labelledby="webhooks-card" {
                h2 #webhooks-card { "Failing webhook endpoints" }
                p { (counted(overview.failing_endpoints.len() as u64, "subaccount", "subaccounts")) " with webhook events being retried or given up." }
                p { a href="#failing" { "See which" } }
            }
        }
    }
}

fn awaiting_files(overview: &Overview) -> Markup {
    let files = &overview.awaiting_files;
    html! {
        section aria-labelledby="awaiting" {
            h2 #awaiting { "Files sent and not yet acknowledged" }
            @if files.oldest.is_empty() {
                p.empty { "Every file sent has been answered." }
            } @else {
                div.table-wrap role="region" aria-labelledby="awaiting-caption" tabindex="0" {
                    table {
                        caption #awaiting-caption {
                            "Oldest first"
                            @if files.count > files.oldest.len() as u64 { " (the " (files.oldest.len()) " oldest of " (files.count) ")" }
                        }
                        thead { tr { th scope="col" { "Sent" } th scope="col" { "Waiting" } th scope="col" { "File" } th scope="col" { "Method" } } }
                        tbody {
                            @for f in &files.oldest {
                                tr {
                                    td { (when(f.uploaded_at)) }
                                    td { (age(overview.now - f.uploaded_at)) }
                                    td { a.mono href=(format!("/files/{}", f.id)) { (f.name) } }
                                    td { (f.method.name()) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn failing(overview: &Overview) -> Markup {
    html! {
        section aria-labelledby="failing" {
            h2 #failing { "Failing webhook endpoints" }
            p.muted {
                "A subaccount's endpoint is failing when it has a webhook URL and, among the webhook events written for it in the last "
                (WEBHOOK_WINDOW.num_days()) " days (since " (when(overview.webhooks_since)) "), one is being retried after a failed attempt or was given up ("
                code { "exhausted" } ": its attempts used up, or the endpoint answered 410). A disabled endpoint gives up every new event. Subaccounts without a webhook URL are not listed. Newest failure first"
                @if overview.failing_endpoints.len() as u64 >= u64::from(LIST_LIMIT) { ", the first " (LIST_LIMIT) }
                "."
            }
            @if overview.failing_endpoints.is_empty() {
                p.empty { "No endpoint is failing." }
            } @else {
                div.table-wrap role="region" aria-labelledby="failing-caption" tabindex="0" {
                    table {
                        caption #failing-caption { "Subaccounts whose webhooks are failing" }
                        thead { tr {
                            th scope="col" { "Subaccount" } th.num scope="col" { "Retrying" } th.num scope="col" { "Given up" }
                            th scope="col" { "Latest failing event" } th scope="col" { "Last error" } th scope="col" { "Endpoint" }
                        } }
                        tbody {
                            @for e in &overview.failing_endpoints {
                                tr {
                                    td { (e.name) br; code.muted { (e.subaccount_id.to_string()) } }
                                    td.num { (e.retrying) }
                                    td.num { (e.exhausted) }
                                    td { (when(e.latest)) }
                                    td { @if let Some(error) = &e.last_error { code { (error) } } }
                                    td {
                                        @match e.disabled_at {
                                            Some(at) => { span.badge.bad { "disabled" } " " (when(at)) }
                                            None => { "enabled" }
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

fn cutoffs(overview: &Overview) -> Markup {
    html! {
        section aria-labelledby="cutoffs" {
            h2 #cutoffs { "Cut-offs" }
            @match &overview.cutoffs {
                None => {
                    p.empty { "Sandbox mode: no rail has cut-offs. Batches run a fixed time after they open." }
                }
                Some(rails) if rails.is_empty() => {
                    p.empty { "No rail is configured." }
                }
                Some(rails) => {
                    p.muted { "Each currency's rail files its open batches at its next cut-off (business days only, holidays skipped)." }
                    div.table-wrap role="region" aria-labelledby="cutoffs-caption" tabindex="0" {
                        table {
                            caption #cutoffs-caption { "The next cut-off of each rail and what waits for it" }
                            thead { tr {
                                th scope="col" { "Currency" } th scope="col" { "Next cut-off" }
                                th.num scope="col" { "Open batches" } th.num scope="col" { "Payouts waiting" }
                            } }
                            tbody {
                                @for rail in rails {
                                    tr {
                                        td { (rail.asset.code()) }
                                        td {
                                            @match rail.next {
                                                Some(at) => { (when(at)) ", in " (age(at - overview.now)) }
                                                None => { "none found (the calendar is closed for longer than it searches)" }
                                            }
                                        }
                                        td.num { (rail.batches) }
                                        td.num { (rail.payouts) }
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

fn balances(overview: &Overview) -> Markup {
    html! {
        section aria-labelledby="balances" {
            h2 #balances { "Balances" }
            p.muted {
                "Available may be paid out; pending is held by payouts not yet final. By subaccount name"
                @if overview.balances.len() as u64 >= u64::from(LIST_LIMIT) { ", the first " (LIST_LIMIT) }
                "."
            }
            @if overview.balances.is_empty() {
                p.empty { "No subaccount has a balance yet." }
            } @else {
                div.table-wrap role="region" aria-labelledby="balances-caption" tabindex="0" {
                    table {
                        caption #balances-caption { "Balances by subaccount and asset" }
                        thead { tr {
                            th scope="col" { "Subaccount" } th scope="col" { "Asset" }
                            th.num scope="col" { "Available" } th.num scope="col" { "Pending" }
                        } }
                        tbody {
                            @for b in &overview.balances {
                                tr {
                                    td { (b.name) br; code.muted { (b.subaccount_id.to_string()) } }
                                    td { (b.asset.code()) }
                                    td.num { (money(b.asset, b.available)) }
                                    td.num { (money(b.asset, b.pending)) }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /`.
pub async fn home(
    signed_in: SignedIn,
    console: web::Data<Console>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let overview = console.overview.read().await?;
    let chrome = signed_in.chrome(Some(Section::Overview));
    let operator = &signed_in.auth.operator;
    let session = &signed_in.auth.session;
    Ok(html(page(
        "Overview",
        Header::SignedIn(&chrome),
        html! {
            p.muted { "Across every subaccount, as of " (when(overview.now)) "." }
            (today(&overview))
            (attention(&overview))
            section aria-labelledby="per-day" {
                h2 #per-day { "Payouts per day, last 30 days" }
                (crate::chart::payouts_per_day(&overview.days))
            }
            (cutoffs(&overview))
            (awaiting_files(&overview))
            (failing(&overview))
            (balances(&overview))
            section aria-labelledby="you" {
                h2 #you { "Your session" }
                dl.facts {
                    dt { "Signed in as" } dd { (operator.email.as_str()) }
                    dt { "Role" } dd { (operator.role.as_str()) }
                    dt { "Signed in at" } dd { (when(session.created_at)) }
                    dt { "Session ends by" } dd { (when(session.expires_at)) }
                }
            }
        },
    )))
}
