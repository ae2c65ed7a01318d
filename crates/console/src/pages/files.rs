//! `/files`: the bank files payoutd wrote, newest first, by state; `/files/{id}`: one file with
//! its payouts in file order and every line the bank answered about it; `POST
//! /files/{id}/download`: its bytes exactly as sent, for operators and admins, recorded in the
//! audit log before they leave (the same use case as `payoutd admin rail-file --raw`).

use actix_web::http::header::{CONTENT_DISPOSITION, ContentDisposition, DispositionParam};
use actix_web::{HttpResponse, web};
use domain::ids::RailFileId;
use domain::operators::Capability;
use domain::rail::bank_files::{AnsweredFile, BankFileError};
use domain::rail::file::RailFileState;
use domain::rail::inbound_ports::ReportListing;
use domain::rail::ports::RailFileSummary;
use maud::{Markup, html};
use serde::Deserialize;

use crate::error::ConsoleError;
use crate::fmt::when;
use crate::layout::{Header, continues_after, older_page, page};
use crate::nav::Section;
use crate::pages::html;
use crate::session::SignedIn;
use crate::state::Console;

/// Files per page.
pub const PAGE: u32 = 50;

/// `GET /files` query.
#[derive(Debug, Deserialize)]
pub struct FilesQuery {
    #[serde(default)]
    state: String,
    /// The last file of the previous page.
    #[serde(default)]
    before: String,
}

/// `POST /files/{id}/download`.
#[derive(Deserialize)]
pub struct DownloadForm {
    csrf: String,
}

fn refusal(e: BankFileError) -> ConsoleError {
    match e {
        BankFileError::NotFound => ConsoleError::NotFound,
        BankFileError::Port(e) => ConsoleError::Port(e),
    }
}

fn state_badge(state: RailFileState) -> Markup {
    let tone = match state {
        RailFileState::Generated | RailFileState::Uploaded => "info",
        RailFileState::Acknowledged => "ok",
        RailFileState::Rejected => "bad",
    };
    html! { span class=(format!("badge {tone}")) { (state.as_str()) } }
}

fn row(file: &RailFileSummary) -> Markup {
    html! {
        tr {
            td { (when(file.created_at)) }
            td { a.mono href=(format!("/files/{}", file.id)) { (file.name) } }
            td { (file.method.name()) }
            td.num { (file.payouts) }
            td.num { (file.size) }
            td { (state_badge(file.state)) }
            td { (file.effective_date.format("%Y-%m-%d")) }
        }
    }
}

/// `GET /files`.
pub async fn list(
    signed_in: SignedIn,
    console: web::Data<Console>,
    query: web::Query<FilesQuery>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let raw = query.state.trim();
    let state = match raw {
        "" => None,
        raw => Some(RailFileState::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest(format!("No bank file state is called {raw:?}."))
        })?),
    };
    let before = match query.before.trim() {
        "" => None,
        raw => Some(RailFileId::parse(raw).ok_or_else(|| {
            ConsoleError::BadRequest("The page position is not a bank file id.".to_owned())
        })?),
    };
    let files = console.files.list(state, before, PAGE).await?;
    let older = continues_after(&files, PAGE, |f| f.id);
    let chrome = signed_in.chrome(Some(Section::BankFiles));
    Ok(html(page(
        "Bank files",
        Header::SignedIn(&chrome),
        html! {
            p.muted { "Every file payoutd wrote for a bank, newest first, " (PAGE) " to a page. A file is written once per batch, payout method and part (a batch with more payouts than one file of its format holds has several parts, each listed here), stored before it is sent, and moves generated → uploaded → acknowledged or rejected." }
            form.filters method="get" action="/files" role="search" aria-label="Filter bank files" {
                div.field {
                    label for="state" { "State" }
                    select #state name="state" {
                        option value="" { "Any" }
                        @for s in RailFileState::ALL {
                            option value=(s.as_str()) selected[state == Some(*s)] { (s.as_str()) }
                        }
                    }
                }
                div { button type="submit" { "Filter" } " " a href="/files" { "Clear" } }
            }
            @if files.is_empty() {
                p.empty { "No bank file matches." }
            } @else {
                div.table-wrap role="region" aria-labelledby="files-caption" tabindex="0" {
                    table {
                        caption #files-caption { "Bank files" }
                        thead { tr {
                            th scope="col" { "Written" } th scope="col" { "File" } th scope="col" { "Method" }
                            th.num scope="col" { "Payouts" } th.num scope="col" { "Bytes" } th scope="col" { "State" }
                            th scope="col" { "Effective" }
                        } }
                        tbody { @for file in &files { (row(file)) } }
                    }
                }
            }
            (older_page("/files", "Older files", &[("state", raw)], older.as_deref()))
        },
    )))
}

fn answer_row(listing: &ReportListing) -> Markup {
    let report = &listing.report;
    html! {
        tr {
            td { (when(report.created_at)) }
            td { code { (listing.file_name) } br; span.muted { "line " (report.position + 1) } }
            td { code { (report.kind.as_str()) } }
            td { @if let Some(payout) = report.payout_id { a.mono href=(format!("/payouts/{payout}")) { (payout.to_string()) } } }
            td { @if let Some(code) = &report.code { code { (code) } " " } @if let Some(reason) = &report.reason { (reason) } }
            td { (report.resolution.as_str()) }
        }
    }
}

fn file_page(signed_in: &SignedIn, answered: &AnsweredFile) -> Markup {
    let file = &answered.file;
    let may_download = signed_in.may(Capability::DownloadBankFiles);
    html! {
        dl.facts {
            dt { "State" } dd { (state_badge(file.state)) @if let Some(reason) = &file.reason { " " (reason) } }
            dt { "Method" } dd { (file.method.name()) }
            dt { "Subaccount" } dd { code { (file.subaccount_id.to_string()) } }
            dt { "Batch" } dd { code { (file.batch_id.to_string()) } " part " (file.part) }
            dt { "Effective" } dd { (file.effective_date.format("%Y-%m-%d")) }
            dt { "Written" } dd { (when(file.created_at)) }
            @if let Some(at) = file.uploaded_at { dt { "Uploaded" } dd { (when(at)) } }
            @if let Some(at) = file.answered_at { dt { "Answered" } dd { (when(at)) } }
            dt { "Size" } dd { (file.bytes.len()) " bytes" }
            dt { "SHA-256" } dd { code.mono { (hex::encode(file.sha256)) } }
        }
        @if may_download {
            form.inline method="post" action=(format!("/files/{}/download", file.id)) {
                input type="hidden" name="csrf" value=(signed_in.csrf());
                button.secondary type="submit" { "Download the file as sent" }
                " "
                span.muted { "(recorded in the audit log)" }
            }
        }
        section aria-labelledby="payouts" {
            h2 #payouts { "Payouts in the file" }
            div.table-wrap role="region" aria-labelledby="items-caption" tabindex="0" {
                table {
                    caption #items-caption { (file.items.len()) " payouts, in file order" }
                    thead { tr { th.num scope="col" { "Line" } th scope="col" { "Payout" } th scope="col" { "Reference" } } }
                    tbody {
                        @for (line, item) in file.items.iter().enumerate() {
                            tr {
                                td.num { (line + 1) }
                                td { a.mono href=(format!("/payouts/{}", item.payout_id)) { (item.payout_id.to_string()) } }
                                td { code { (item.reference) } }
                            }
                        }
                    }
                }
            }
        }
        section aria-labelledby="answers" {
            h2 #answers { "The bank's answers" }
            @if answered.answers.is_empty() {
                p.empty { "The bank has not answered about this file yet." }
            } @else {
                div.table-wrap role="region" aria-labelledby="answers-caption" tabindex="0" {
                    table {
                        caption #answers-caption { "Every line about the file or its payouts, oldest first" }
                        thead { tr {
                            th scope="col" { "Read" } th scope="col" { "Document" } th scope="col" { "Kind" }
                            th scope="col" { "Payout" } th scope="col" { "Code and reason" } th scope="col" { "What payoutd did" }
                        } }
                        tbody { @for listing in &answered.answers { (answer_row(listing)) } }
                    }
                }
            }
        }
    }
}

/// `GET /files/{id}`.
pub async fn show(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::Read)?;
    let answered = console.files.file(&id).await.map_err(refusal)?;
    let chrome = signed_in.chrome(Some(Section::BankFiles));
    Ok(html(page(
        &answered.file.name,
        Header::SignedIn(&chrome),
        file_page(&signed_in, &answered),
    )))
}

/// `POST /files/{id}/download`.
pub async fn download(
    signed_in: SignedIn,
    console: web::Data<Console>,
    id: web::Path<String>,
    form: web::Form<DownloadForm>,
) -> Result<HttpResponse, ConsoleError> {
    signed_in.require(Capability::DownloadBankFiles)?;
    signed_in.check_csrf(&form.csrf)?;
    let file = console
        .files
        .download(&id, &signed_in.audit_context())
        .await
        .map_err(refusal)?;
    let disposition = ContentDisposition {
        disposition: actix_web::http::header::DispositionType::Attachment,
        parameters: vec![DispositionParam::Filename(file.name.clone())],
    };
    Ok(HttpResponse::Ok()
        .content_type("application/octet-stream")
        .insert_header((CONTENT_DISPOSITION, disposition))
        .insert_header(("cache-control", "no-store"))
        .body(file.bytes))
}
