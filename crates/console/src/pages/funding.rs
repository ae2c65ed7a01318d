//! `/funding` (admin): credit a subaccount's available balance for a reason, the same use case
//! as `payoutd admin fund`: the ledger entry, the balance and the `balance.fund` audit entry
//! (with the reason) are written in one transaction.

use actix_web::{HttpResponse, web};
use domain::admin::{AdminError, MAX_FUNDING_REASON_CHARS};
use domain::ids::SubaccountId;
use domain::money::Asset;
use domain::operators::Capability;
use maud::html;
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// `GET /funding` query.
#[derive(Debug, Deserialize)]
pub struct FundingQuery {
    done: Option<String>,
}

/// `POST /funding`.
#[derive(Deserialize)]
pub struct FundForm {
    csrf: String,
    subaccount: String,
    asset: String,
    amount: String,
    reason: String,
}

/// `GET /funding`.
pub async fn form(
    signed_in: SignedIn,
    query: web::Query<FundingQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::FundSubaccounts)?;
    let chrome = signed_in.chrome(Some(Section::Funding));
    Ok(html(page(
        "Funding",
        Header::SignedIn(&chrome),
        html! {
            @if query.done.is_some() {
                div.notice.ok role="status" {
                    p { "Funded: the ledger entry, the balance and the audit entry (with the reason) are written." }
                }
            }
            p.muted { "Credits a subaccount's available balance, as a funding ledger entry. The reason is kept in the audit log." }
            form.stack method="post" action="/funding" {
                input type="hidden" name="csrf" value=(signed_in.csrf());
                div.field {
                    label for="subaccount" { "Subaccount id" }
                    input id="subaccount" type="text" name="subaccount" required maxlength="36"
                        autocomplete="off" spellcheck="false";
                }
                div.field {
                    label for="asset" { "Currency" }
                    select id="asset" name="asset" {
                        @for asset in Asset::ALL { option value=(asset.code()) { (asset.code()) } }
                    }
                }
                div.field {
                    label for="amount" { "Amount in minor units (cents)" }
                    input id="amount" type="text" name="amount" required inputmode="numeric"
                        pattern="[0-9]+" maxlength="13" autocomplete="off";
                }
                div.field {
                    label for="reason" { "Reason (kept in the audit log)" }
                    input id="reason" type="text" name="reason" required
                        maxlength=(MAX_FUNDING_REASON_CHARS);
                }
                div.actions { button type="submit" { "Fund" } }
            }
        },
    )))
}

/// `POST /funding`.
pub async fn fund(
    signed_in: SignedIn,
    console: web::Data<Console>,
    form: web::Form<FundForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::FundSubaccounts)?;
    signed_in.check_csrf(&form.csrf)?;
    let subaccount = SubaccountId::parse(form.subaccount.trim())
        .ok_or_else(|| ConsoleError::BadRequest("A subaccount id is a UUID.".to_owned()))?;
    match signed_in
        .admin(&console)
        .fund(subaccount, &form.asset, form.amount.trim(), &form.reason)
        .await
    {
        Ok(_) => Ok(see_other("/funding?done=1")),
        Err(AdminError::SubaccountNotFound) => Err(ConsoleError::BadRequest(
            "No subaccount has this id.".to_owned(),
        )),
        Err(AdminError::Port(e)) => Err(ConsoleError::Port(e)),
        Err(other) => Err(ConsoleError::BadRequest(format!("Not funded: {other}."))),
    }
}
