//! `/ledger`: the ledger check, the same use case as `payoutd admin check-ledger`: every
//! balance compared with the sum of its ledger entries, each difference shown. It reads every
//! balance and entry, so it runs when asked, not when the page opens.

use actix_web::{HttpResponse, web};
use domain::admin::AdminError;
use domain::ledger::{LedgerCheck, LedgerDiscrepancy};
use domain::money::Asset;
use domain::operators::Capability;
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::money;
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::html;
use crate::session::SignedIn;
use crate::state::Console;

/// `GET /ledger` query: `run=1` runs the check.
#[derive(Debug, Deserialize)]
pub struct LedgerQuery {
    #[serde(default)]
    run: String,
}

/// An amount of a discrepancy: in its currency when payoutd knows it, else in minor units.
fn amount(asset: &str, minor: i64) -> String {
    match Asset::parse(asset) {
        Some(asset) => money(asset, minor),
        None => format!("{minor} (minor units of {asset})"),
    }
}

fn difference(d: &LedgerDiscrepancy) -> Markup {
    html! {
        tr {
            td { code { (d.subaccount_id.to_string()) } }
            td { (d.asset) }
            td.num { (amount(&d.asset, d.available)) }
            td.num { (amount(&d.asset, d.ledger_available)) }
            td.num { (amount(&d.asset, d.pending)) }
            td.num { (amount(&d.asset, d.ledger_pending)) }
        }
    }
}

fn outcome(check: &LedgerCheck) -> Markup {
    html! {
        @if check.discrepancies.is_empty() {
            div.notice.ok role="status" {
                p { "Every balance equals the sum of its ledger entries (" (check.checked) @if check.checked == 1 { " balance" } @else { " balances" } " checked)." }
            }
        } @else {
            div.notice.error role="alert" {
                p { (check.discrepancies.len()) " of " (check.checked) " balances differ from the sum of their ledger entries. Ledger entries are never changed: find the cause before anything else moves money." }
            }
            div.table-wrap role="region" aria-labelledby="differences-caption" tabindex="0" {
                table {
                    caption #differences-caption { "Balances that differ from their ledger" }
                    thead { tr {
                        th scope="col" { "Subaccount" } th scope="col" { "Currency" }
                        th.num scope="col" { "Available" } th.num scope="col" { "Ledger's available" }
                        th.num scope="col" { "Pending" } th.num scope="col" { "Ledger's pending" }
                    } }
                    tbody { @for d in &check.discrepancies { (difference(d)) } }
                }
            }
        }
    }
}

/// `GET /ledger`.
pub async fn check(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<LedgerQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let checked = if query.run == "1" {
        match signed_in.admin(&console).check_ledger().await {
            Ok(check) => Some(check),
            Err(AdminError::Port(e)) => return Err(ConsoleError::Port(e)),
            Err(other) => return Err(ConsoleError::BadRequest(format!("{other}."))),
        }
    } else {
        None
    };
    let chrome = signed_in.chrome(Some(Section::Ledger));
    Ok(html(page(
        "Ledger check",
        Header::SignedIn(&chrome),
        html! {
            p.muted { "Compares every balance (each subaccount and currency) with the sum of its append-only ledger entries, as payoutd admin check-ledger does. It reads every entry: run it when you need it." }
            form method="get" action="/ledger" {
                input type="hidden" name="run" value="1";
                button type="submit" { "Run the check" }
            }
            @if let Some(check) = &checked { (outcome(check)) }
        },
    )))
}
