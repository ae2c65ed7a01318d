//! `/payouts`: payouts of every subaccount, searched by id, subaccount, receiver, status,
//! reference and days, newest first; `/payouts/{id}`: one payout's whole story in the order it
//! happened (every event with its deliveries, the ledger entries, the batch, the bank file and
//! the bank's answers), told by the domain's [`PayoutStory::timeline`].

use actix_web::{HttpResponse, web};
use domain::batch::{Batch, BatchStatus};
use domain::delivery::history::EventSummary;
use domain::ledger::LedgerEntry;
use domain::money::Asset;
use domain::operators::Capability;
use domain::payout::service::CancelPayoutError;
use domain::payout::status::PayoutTrigger;
use domain::payout::{Payout, PayoutStatus};
use domain::payout_story::{
    FiledPayment, PayoutSearch, PayoutStory, SearchForm, StoryEntry, StoryError,
};
use domain::rail::inbound_ports::ReportListing;
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::{money, status_badge, urlencode, when};
use crate::layout::{Header, page};
use crate::nav::Section;
use crate::pages::{html, see_other};
use crate::session::SignedIn;
use crate::state::Console;

/// Payouts per page.
pub const PAGE: u32 = 50;

/// `GET /payouts` query: the search form's fields as typed, and the page.
#[derive(Debug, Default, Deserialize)]
pub struct SearchQuery {
    #[serde(default)]
    id: String,
    #[serde(default)]
    subaccount: String,
    #[serde(default)]
    receiver: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    reference: String,
    #[serde(default)]
    from: String,
    #[serde(default)]
    to: String,
    #[serde(default)]
    after: String,
}

impl SearchQuery {
    fn form(&self) -> SearchForm<'_> {
        SearchForm {
            subaccount: &self.subaccount,
            receiver: &self.receiver,
            status: &self.status,
            reference: &self.reference,
            from: &self.from,
            to: &self.to,
        }
    }

    /// This search's link to the page after `cursor`.
    fn next_page(&self, cursor: &str) -> String {
        let pairs = [
            ("subaccount", self.subaccount.trim()),
            ("receiver", self.receiver.trim()),
            ("status", self.status.trim()),
            ("reference", self.reference.trim()),
            ("from", self.from.trim()),
            ("to", self.to.trim()),
            ("after", cursor),
        ];
        let given: Vec<(&str, &str)> = pairs.into_iter().filter(|(_, v)| !v.is_empty()).collect();
        format!(
            "/payouts?{}",
            serde_urlencoded::to_string(given).unwrap_or_default()
        )
    }
}

fn refusal(e: StoryError) -> ConsoleError {
    match e {
        StoryError::Invalid(problems) => ConsoleError::BadRequest(problems.join(" ")),
        StoryError::NotFound => ConsoleError::NotFound,
        StoryError::Port(e) => ConsoleError::Port(e),
    }
}

fn search_form(query: &SearchQuery) -> Markup {
    let field = |id: &str, label: &str, value: &str, hint: &str| {
        html! {
            div.field {
                label for=(id) { (label) }
                input id=(id) type="text" name=(id) value=(value.trim()) placeholder=(hint) autocomplete="off";
            }
        }
    };
    html! {
        form.filters method="get" action="/payouts" role="search" aria-label="Search payouts" {
            (field("id", "Payout id", &query.id, "opens the payout"))
            (field("subaccount", "Subaccount id", &query.subaccount, ""))
            (field("receiver", "Receiver id", &query.receiver, ""))
            div.field {
                label for="status" { "Status" }
                select #status name="status" {
                    option value="" { "Any" }
                    @for status in PayoutStatus::ALL {
                        option value=(status.as_str()) selected[query.status.trim() == status.as_str()] { (status.as_str()) }
                    }
                }
            }
            (field("reference", "Reference", &query.reference, "exact"))
            div.field {
                label for="from" { "Created from" }
                input #from type="date" name="from" value=(query.from.trim());
            }
            div.field {
                label for="to" { "Created to" }
                input #to type="date" name="to" value=(query.to.trim());
            }
            div { button type="submit" { "Search" } " " a href="/payouts" { "Clear" } }
        }
    }
}

fn row(payout: &Payout) -> Markup {
    let id = payout.id.to_string();
    html! {
        tr {
            td { (when(payout.created_at)) }
            td { a.mono href=(format!("/payouts/{id}")) { (id) } }
            td { code { (payout.subaccount_id.to_string()) } }
            td { code { (payout.receiver_id.to_string()) } }
            td.num { (money(payout.asset, payout.amount.get())) }
            td.num { (money(payout.asset, payout.fee.get())) }
            td { (status_badge(payout.status)) }
            td { @if let Some(reference) = &payout.reference { (reference) } }
        }
    }
}

/// `GET /payouts`.
pub async fn search(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<SearchQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let id = query.id.trim();
    if !id.is_empty() {
        // An id is a place, not a filter: go to its story (an unknown one says so there).
        return Ok(see_other(&format!("/payouts/{}", urlencode(id))));
    }
    let search = PayoutSearch::parse(&query.form()).map_err(refusal)?;
    let (payouts, next) = console
        .stories
        .search(&search, Some(&query.after), PAGE)
        .await
        .map_err(refusal)?;
    let chrome = signed_in.chrome(Some(Section::Payouts));
    Ok(html(page(
        "Payouts",
        Header::SignedIn(&chrome),
        html! {
            p.muted { "Payouts of every subaccount, newest first. Without a subaccount the search reads every payout: name one on a large database." }
            (search_form(&query))
            @if payouts.is_empty() {
                p.empty { "No payout matches." }
            } @else {
                div.table-wrap role="region" aria-labelledby="payouts-caption" tabindex="0" {
                    table {
                        caption #payouts-caption { "Payouts" }
                        thead { tr {
                            th scope="col" { "Created" } th scope="col" { "Payout" } th scope="col" { "Subaccount" }
                            th scope="col" { "Receiver" } th scope="col" { "Amount" } th scope="col" { "Fee" }
                            th scope="col" { "Status" } th scope="col" { "Reference" }
                        } }
                        tbody { @for payout in &payouts { (row(payout)) } }
                    }
                }
            }
            @if let Some(next) = next {
                nav.pager aria-label="Pages" { a href=(query.next_page(&next)) { "Older payouts" } }
            }
        },
    )))
}

fn facts(payout: &Payout) -> Markup {
    html! {
        dl.facts {
            dt { "Status" } dd { (status_badge(payout.status)) }
            dt { "Amount" } dd { (money(payout.asset, payout.amount.get())) }
            dt { "Fee" } dd { (money(payout.asset, payout.fee.get())) }
            dt { "Subaccount" } dd { code { (payout.subaccount_id.to_string()) } }
            dt { "Receiver" } dd { a href=(format!("/payouts?receiver={}", payout.receiver_id)) { code { (payout.receiver_id.to_string()) } } }
            dt { "Account" } dd { code { (payout.account_id.to_string()) } }
            @if let Some(reference) = &payout.reference { dt { "Reference" } dd { (reference) } }
            @if !payout.note.is_empty() { dt { "Note" } dd { (payout.note) } }
            @if !payout.provider_reference.is_empty() { dt { "Rail reference" } dd { code { (payout.provider_reference) } } }
            @if let Some(at) = payout.submitted_at { dt { "Submitted" } dd { (when(at)) } }
            @if let Some(code) = &payout.return_code { dt { "Bank's code" } dd { code { (code) } } }
            @if let Some(reason) = &payout.failure_reason { dt { "Why it failed" } dd { (reason) } }
            @if payout.receiver_is_invalid { dt { "Account" } dd { "The bank said the receiver's account cannot be paid." } }
            @if payout.duplicate { dt { "Warning" } dd { "Another payout of this amount to this account was created in the 24 hours before it." } }
            dt { "Created" } dd { (when(payout.created_at)) }
        }
    }
}

fn event_entry(event: &EventSummary) -> Markup {
    html! {
        p {
            "Event " code { (event.event_type) } " (sequence " (event.sequence) "): "
            (event.status)
            @if let Some(error) = &event.last_error { " — last error: " (error) }
        }
        @if event.attempts.is_empty() {
            p.muted { "No delivery attempt yet." }
        } @else {
            ul {
                @for attempt in &event.attempts {
                    li {
                        "Attempt " (attempt.attempt) " at " (when(attempt.attempted_at)) ": " (attempt.outcome)
                        @if let Some(code) = attempt.status_code { ", HTTP " (code) }
                        ", " (attempt.latency_ms) " ms"
                        @if let Some(error) = &attempt.error { " — " (error) }
                    }
                }
            }
        }
    }
}

fn ledger_entry(entry: &LedgerEntry) -> Markup {
    html! {
        p {
            "Ledger " code { (entry.kind.as_str()) } ": available "
            (signed(entry.asset, entry.available_delta)) ", pending "
            (signed(entry.asset, entry.pending_delta))
        }
    }
}

fn signed(asset: Asset, minor: i64) -> String {
    if minor > 0 {
        format!("+{}", money(asset, minor))
    } else {
        money(asset, minor)
    }
}

fn file_line(filed: &FiledPayment) -> Markup {
    html! {
        "Bank file " code { (filed.file.name) } " (" (filed.file.method.name()) ", "
        (filed.file.payouts) " payouts, effective " (filed.file.effective_date.format("%Y-%m-%d"))
        "), line " (filed.position + 1) ", reference " code { (filed.reference) }
    }
}

fn answer_entry(listing: &ReportListing) -> Markup {
    let report = &listing.report;
    html! {
        p {
            "Bank answer " code { (report.kind.as_str()) } " in " code { (listing.file_name) }
            " (line " (report.position + 1) ")"
            @if let Some(code) = &report.code { ": " code { (code) } }
            @if let Some(reason) = &report.reason { " " (reason) }
            " — " (report.resolution.as_str())
        }
    }
}

fn timeline_entry(entry: &StoryEntry<'_>) -> Markup {
    let body = match entry {
        StoryEntry::Created(payout) => html! { p { "Created, " (held(payout)) } },
        StoryEntry::Event(event) => event_entry(event),
        StoryEntry::Ledger(entry) => ledger_entry(entry),
        StoryEntry::FileWritten(filed) => html! { p { "Written into " (file_line(filed)) } },
        StoryEntry::FileUploaded(_) => html! { p { "The bank file reached the bank's drop." } },
        StoryEntry::FileAnswered(filed) => html! {
            p { "The bank answered for the whole file: " (filed.file.state.as_str()) }
        },
        StoryEntry::BankAnswer(listing) => answer_entry(listing),
    };
    html! {
        li {
            div.when { (when(entry.at())) }
            (body)
        }
    }
}

/// What the creation entry says: the money it held (its first status is in its first event).
fn held(payout: &Payout) -> Markup {
    html! { (money(payout.asset, payout.amount.get() + payout.fee.get())) " held" }
}

fn batch_facts(batch: &Batch) -> Markup {
    html! {
        dl.facts {
            dt { "Batch" } dd { code { (batch.id.to_string()) } }
            dt { "Status" } dd { (batch.status.as_str()) }
            dt { "Runs at" } dd { (when(batch.batch_run_time)) }
            @if batch.status == BatchStatus::Open {
                dt { "Payouts" } dd { "counted when it closes, at its run time" }
            } @else {
                dt { "Payouts" } dd { (batch.total_tx) " (" (batch.total_failed) " failed)" }
                dt { "Amount" } dd { (money(batch.asset, batch.amount)) ", paid " (money(batch.asset, batch.process_amount)) }
            }
        }
    }
}

fn file_facts(filed: &FiledPayment) -> Markup {
    let file = &filed.file;
    html! {
        dl.facts {
            dt { "File" } dd { a href=(format!("/files/{}", file.id)) { code { (file.name) } } }
            dt { "State" } dd { (file.state.as_str()) }
            dt { "Method" } dd { (file.method.name()) }
            dt { "Payouts" } dd { (file.payouts) }
            dt { "Size" } dd { (file.size) " bytes" }
            dt { "SHA-256" } dd { code.mono { (hex::encode(file.sha256)) } }
            dt { "Effective" } dd { (file.effective_date.format("%Y-%m-%d")) }
            dt { "Written" } dd { (when(file.created_at)) }
            @if let Some(at) = filed.uploaded_at { dt { "Uploaded" } dd { (when(at)) } }
            @if let Some(at) = filed.answered_at { dt { "Answered" } dd { (when(at)) } }
            dt { "This payout" } dd { "line " (filed.position + 1) ", reference " code { (filed.reference) } }
        }
    }
}

/// The cancel form, for a role that may and a payout not sent yet (the same rule as the
/// API's cancel: a cancel from this status is a transition).
fn cancel_form(signed_in: &SignedIn, payout: &Payout) -> Markup {
    let may = signed_in.may(Capability::CancelPayouts);
    let cancellable =
        domain::payout::status::transition(payout.status, PayoutTrigger::Cancel).is_ok();
    html! {
        @if may && cancellable {
            form.inline method="post" action=(format!("/payouts/{}/cancel", payout.id)) {
                input type="hidden" name="csrf" value=(signed_in.csrf());
                button.danger type="submit" { "Cancel this payout" }
                " "
                span.muted { "Its hold goes back to the available balance, and the merchant is told by webhook." }
            }
        }
    }
}

fn story_page(signed_in: &SignedIn, story: &PayoutStory, notice: Option<Markup>) -> Markup {
    html! {
        @if let Some(notice) = notice { (notice) }
        (facts(&story.payout))
        (cancel_form(signed_in, &story.payout))
        section aria-labelledby="story" {
            h2 #story { "What happened" }
            ol.timeline { @for entry in story.timeline() { (timeline_entry(&entry)) } }
        }
        section aria-labelledby="batch" {
            h2 #batch { "Batch" }
            @match &story.batch {
                Some(batch) => (batch_facts(batch)),
                None => p.empty { "It has not joined a batch." },
            }
        }
        section aria-labelledby="file" {
            h2 #file { "Bank file" }
            @match &story.file {
                Some(filed) => (file_facts(filed)),
                None => p.empty { "No bank file carries it (not sent yet, or its rail is not a file rail)." },
            }
        }
    }
}

/// `GET /payouts/{id}` query: what was just done.
#[derive(Debug, Default, Deserialize)]
pub struct StoryQuery {
    done: Option<String>,
}

/// `POST /payouts/{id}/cancel`.
#[derive(Deserialize)]
pub struct CancelForm {
    csrf: String,
}

/// `GET /payouts/{id}`.
pub async fn story(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    query: web::Query<StoryQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let story = console.stories.story(&id).await.map_err(refusal)?;
    let notice = (query.done.as_deref() == Some("cancelled")).then(|| {
        html! { div.notice.ok role="status" { p { "The payout was cancelled: its hold is back in the available balance, and its payoutUpdated event is on its way to the merchant." } } }
    });
    let chrome = signed_in.chrome(Some(Section::Payouts));
    Ok(html(page(
        &format!("Payout {}", story.payout.id),
        Header::SignedIn(&chrome),
        story_page(&signed_in, &story, notice),
    )))
}

/// `POST /payouts/{id}/cancel`: the payout's subaccount is the stored one, never the form's.
pub async fn cancel(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<CancelForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::CancelPayouts)?;
    signed_in.check_csrf(&form.csrf)?;
    let story = console.stories.story(&id).await.map_err(refusal)?;
    let payout = &story.payout;
    match console
        .payouts
        .cancel(
            payout.subaccount_id,
            &payout.id.to_string(),
            &signed_in.audit_context(),
        )
        .await
    {
        Ok(_) => Ok(see_other(&format!("/payouts/{}?done=cancelled", payout.id))),
        Err(CancelPayoutError::NotFound) => Err(ConsoleError::NotFound),
        Err(CancelPayoutError::NotCancellable(status)) => Err(ConsoleError::BadRequest(format!(
            "This payout is {} now, so it can no longer be cancelled; nothing was changed.",
            status.as_str()
        ))),
        Err(CancelPayoutError::Port(e)) => Err(ConsoleError::Port(e)),
    }
}
