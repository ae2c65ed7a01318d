//! `/answers`: what the banks' files said, line by line, newest first: returns, notices of
//! change, settlements and refusals, each with what payoutd did with it (applied, repeated,
//! unmatched, noted, or an anomaly kept for a person), filtered by kind and by what was done.

use actix_web::{HttpResponse, web};
use domain::ids::BankReportId;
use domain::operators::Capability;
use domain::rail::inbound_ports::{ReportKind, ReportListing, Resolution};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::when;
use crate::layout::{Header, continues_after, older_page, page};
use crate::nav::Section;
use crate::pages::html;
use crate::session::SignedIn;
use crate::state::Console;

/// Lines shown.
pub const PAGE: u32 = 100;

/// `GET /answers` query.
#[derive(Debug, Deserialize)]
pub struct AnswersQuery {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    resolution: String,
    /// The last line of the previous page.
    #[serde(default)]
    before: String,
}

/// What a person should make of a resolution.
fn meaning(resolution: Resolution) -> &'static str {
    match resolution {
        Resolution::Applied => "applied: it moved the payout or the file",
        Resolution::Repeated => "repeated: said before, changed nothing",
        Resolution::Unmatched => "unmatched: no payment or file of payoutd's has this reference",
        Resolution::Noted => "noted: recorded only (a notice)",
        Resolution::Anomaly => "anomaly: it contradicts an earlier answer; kept for a person",
    }
}

fn row(listing: &ReportListing) -> Markup {
    let report = &listing.report;
    html! {
        tr {
            td { (when(report.created_at)) }
            td { code { (listing.file_name) } br; span.muted { (listing.method.name()) ", line " (report.position + 1) } }
            td { code { (report.kind.as_str()) } }
            td { code { (report.reference) } }
            td {
                @if let Some(payout) = report.payout_id {
                    a.mono href=(format!("/payouts/{payout}")) { (payout.to_string()) }
                } @else if let Some(file) = report.rail_file_id {
                    a href=(format!("/files/{file}")) { "its file" }
                }
            }
            td { @if let Some(code) = &report.code { code { (code) } " " } @if let Some(reason) = &report.reason { (reason) } @if report.account_invalid { br; span.muted { "the account cannot be paid" } } }
            td.num { @if let Some(amount) = report.amount { (amount) } }
            td { (meaning(report.resolution)) }
        }
    }
}

/// `GET /answers`.
pub async fn list(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<AnswersQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let kind = match query.kind.trim() {
        "" => None,
        raw => Some(ReportKind::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest(format!("No kind of bank answer is called {raw:?}."))
        })?),
    };
    let resolution = match query.resolution.trim() {
        "" => None,
        raw => Some(Resolution::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest(format!("No resolution is called {raw:?}."))
        })?),
    };
    let before = match query.before.trim() {
        "" => None,
        raw => Some(BankReportId::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest("The page position is not a bank answer line's id.".to_owned())
        })?),
    };
    let answers = console
        .files
        .answers(resolution, kind, before, PAGE)
        .await?;
    let older = continues_after(&answers, PAGE, |a| a.report.id);
    let chrome = signed_in.chrome(Some(Section::Answers));
    Ok(html(page(
        "Bank answers",
        Header::SignedIn(&chrome),
        html! {
            p.muted { "Every line of the banks' acknowledgements, returns and notices of change, newest first, " (PAGE) " to a page, with what payoutd did with it. Amounts are in minor units as the bank stated them." }
            nav.pager aria-label="Common views" {
                a href="/answers?kind=returned" { "Returns" }
                a href="/answers?kind=notice" { "Notices of change" }
                a href="/answers?resolution=anomaly" { "Anomalies" }
                a href="/answers?resolution=unmatched" { "Unmatched" }
            }
            form.filters method="get" action="/answers" role="search" aria-label="Filter the bank's answers" {
                div.field {
                    label for="kind" { "Kind" }
                    select #kind name="kind" {
                        option value="" { "Any" }
                        @for k in ReportKind::ALL {
                            option value=(k.as_str()) selected[kind == Some(*k)] { (k.as_str()) }
                        }
                    }
                }
                div.field {
                    label for="resolution" { "What payoutd did" }
                    select #resolution name="resolution" {
                        option value="" { "Any" }
                        @for r in Resolution::ALL {
                            option value=(r.as_str()) selected[resolution == Some(*r)] { (r.as_str()) }
                        }
                    }
                }
                div { button type="submit" { "Filter" } " " a href="/answers" { "Clear" } }
            }
            @if answers.is_empty() {
                p.empty { "No answer from a bank matches." }
            } @else {
                div.table-wrap role="region" aria-labelledby="answers-caption" tabindex="0" {
                    table {
                        caption #answers-caption { "Lines of the banks' answers" }
                        thead { tr {
                            th scope="col" { "Read" } th scope="col" { "Document" } th scope="col" { "Kind" }
                            th scope="col" { "Reference" } th scope="col" { "About" } th scope="col" { "Code and reason" }
                            th.num scope="col" { "Amount" } th scope="col" { "What payoutd did" }
                        } }
                        tbody { @for listing in &answers { (row(listing)) } }
                    }
                }
            }
            (older_page("/answers", "Older lines", &[("kind", query.kind.trim()), ("resolution", query.resolution.trim())], older.as_deref()))
        },
    )))
}
