//! `/kyc`: receivers of every subaccount waiting for a KYC decision, oldest first, with what a
//! reviewer needs; operators and admins approve or reject with a reason (the same use case as
//! `payoutd admin kyc`, audited in its transaction).

use actix_web::{HttpResponse, web};
use chrono::Utc;
use domain::operators::Capability;
use domain::receiver::Receiver;
use domain::receiver::operator::{OperatorKycError, parse_decision};
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::{age, when};
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// Receivers per page.
pub const PAGE: u32 = 50;

/// `GET /kyc` query.
#[derive(Debug, Deserialize)]
pub struct KycQuery {
    after: Option<String>,
    done: Option<String>,
}

/// `POST /kyc/{receiver}`.
#[derive(Deserialize)]
pub struct DecisionForm {
    csrf: String,
    decision: String,
    reason: Option<String>,
}

fn waiting(receiver: &Receiver) -> String {
    age(Utc::now() - receiver.created_at)
}

fn decision_form(signed_in: &SignedIn, receiver: &Receiver) -> Markup {
    let id = receiver.id.to_string();
    html! {
        form.stack method="post" action=(format!("/kyc/{id}")) {
            input type="hidden" name="csrf" value=(signed_in.csrf());
            div.field {
                label for=(format!("reason-{id}")) { "Reason (kept in the audit trail)" }
                input id=(format!("reason-{id}")) type="text" name="reason" maxlength="500";
            }
            div.actions {
                button type="submit" name="decision" value="completed" { "Approve" }
                button.danger type="submit" name="decision" value="failed" { "Reject" }
            }
        }
    }
}

fn card(signed_in: &SignedIn, receiver: &Receiver, may_decide: bool) -> Markup {
    let name = receiver.full_name();
    html! {
        article.card aria-labelledby=(format!("r-{}", receiver.id)) {
            h2 id=(format!("r-{}", receiver.id)) { (name) }
            dl.facts {
                dt { "Waiting" } dd { (waiting(receiver)) " (since " (when(receiver.created_at)) ")" }
                dt { "Receiver" } dd { code { (receiver.id.to_string()) } }
                dt { "Subaccount" } dd { code { (receiver.subaccount_id.to_string()) } }
                dt { "E-mail" } dd { (receiver.email) }
                dt { "Date of birth" } dd { (receiver.dob.format("%Y-%m-%d")) }
                dt { "Phone" } dd { (receiver.dialcode) " " (receiver.phone) }
                dt { "Address" } dd {
                    (receiver.address.address) @if !receiver.address.address2.is_empty() { ", " (receiver.address.address2) }
                    ", " (receiver.address.city) " " (receiver.address.postcode) " " (receiver.address.state) ", " (receiver.address.country.as_str())
                }
                @if let Some(reference) = &receiver.reference { dt { "Reference" } dd { (reference) } }
                dt { "KYC applicant" } dd { code { (receiver.applicant_id) } }
            }
            @if may_decide { (decision_form(signed_in, receiver)) }
        }
    }
}

/// `GET /kyc`.
pub async fn queue(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<KycQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let after = query
        .after
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty());
    let receivers = console.kyc.pending(after, PAGE).await.map_err(refusal)?;
    let may_decide = signed_in.may(Capability::DecideKyc);
    let next = (receivers.len() == PAGE as usize)
        .then(|| receivers.last().map(|r| format!("/kyc?after={}", r.id)))
        .flatten();
    let chrome = signed_in.chrome(Some(Section::Kyc));
    Ok(html(page(
        "KYC queue",
        Header::SignedIn(&chrome),
        html! {
            @match query.done.as_deref() {
                Some("completed") => div.notice.ok role="status" { p { "Approved: the receiver is active and its waiting payouts move on." } },
                Some("failed") => div.notice.ok role="status" { p { "Rejected: the receiver failed KYC and its waiting payouts failed with their holds released." } },
                _ => {}
            }
            p.muted { "Receivers of every subaccount whose identity check waits for a person, oldest first." }
            @if !may_decide { p.notice { "Your role reads the queue; operators and admins decide." } }
            @if receivers.is_empty() {
                p.empty { "Nobody is waiting for a KYC decision." }
            } @else {
                div.cards.wide { @for receiver in &receivers { (card(&signed_in, receiver, may_decide)) } }
            }
            @if let Some(next) = next { nav.pager aria-label="Pages" { a href=(next) { "More receivers" } } }
        },
    )))
}

fn refusal(e: OperatorKycError) -> ConsoleError {
    match e {
        OperatorKycError::Port(e) => ConsoleError::Port(e),
        OperatorKycError::NotFound => ConsoleError::NotFound,
        other => ConsoleError::BadRequest(format!("{other}.")),
    }
}

/// `POST /kyc/{receiver}`.
pub async fn decide(
    signed_in: SignedIn,
    console: web::Data<Console>,
    receiver: web::Path<String>,
    form: web::Form<DecisionForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::DecideKyc)?;
    signed_in.check_csrf(&form.csrf)?;
    let outcome = parse_decision(&form.decision)
        .ok_or_else(|| ConsoleError::BadRequest("Choose Approve or Reject.".to_owned()))?;
    // The KYC trail's decider: the operator's e-mail, within its 100 characters.
    let decided_by: String = format!("console:{}", signed_in.auth.operator.email.as_str())
        .chars()
        .take(100)
        .collect();
    let decided = console
        .kyc
        .decide(
            &receiver,
            outcome,
            form.reason.as_deref(),
            &decided_by,
            &signed_in.audit_context(),
        )
        .await
        .map_err(refusal)?;
    Ok(see_other(&format!(
        "/kyc?done={}",
        decided.kyc_status.as_str()
    )))
}
