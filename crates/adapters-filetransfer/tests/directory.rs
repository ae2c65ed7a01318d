//! `DirectoryTransport` against real directories: the port's behaviours, seen from the bank's
//! side of the drop.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::fs;

use adapters_filetransfer::DirectoryTransport;
use domain::rail::transport::{FileTransport, UploadOutcome};
use support::{BankDirs, behaviour};
use tempfile::TempDir;

fn drop_dirs() -> (TempDir, BankDirs, DirectoryTransport) {
    let dir = tempfile::tempdir().unwrap();
    let bank = BankDirs::create(dir.path());
    let transport = DirectoryTransport::new(&bank.outbound, &bank.inbound);
    (dir, bank, transport)
}

#[tokio::test]
async fn upload_lands_whole() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::upload_lands_whole(&transport, &bank).await;
}

#[tokio::test]
async fn uploads_are_readable_by_their_owner_only() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::uploads_are_readable_by_their_owner_only(&transport, &bank).await;
}

#[tokio::test]
async fn retried_upload_is_already_there() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::retried_upload_is_already_there(&transport, &bank).await;
}

#[tokio::test]
async fn other_bytes_never_replace_a_file() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::other_bytes_never_replace_a_file(&transport, &bank).await;
}

#[tokio::test]
async fn only_plain_names() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::only_plain_names(&transport, &bank).await;
}

#[tokio::test]
async fn inbound_files_are_listed_and_fetched() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::inbound_files_are_listed_and_fetched(&transport, &bank).await;
}

#[tokio::test]
async fn crashed_upload_is_hidden_then_replaced() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::crashed_upload_is_hidden_then_replaced(&transport, &bank).await;
}

#[tokio::test]
async fn a_planted_link_is_not_followed() {
    let (_dir, bank, transport) = drop_dirs();
    behaviour::a_planted_link_is_not_followed(&transport, &bank).await;
}

#[tokio::test]
async fn a_long_name_uploads_through_a_short_temporary_name() {
    let (_dir, bank, transport) = drop_dirs();
    let name = "L".repeat(255);
    assert_eq!(
        transport.upload(&name, b"long").await.unwrap(),
        UploadOutcome::Uploaded
    );
    assert_eq!(bank.outbound_entries(), [name.as_str()]);
    assert_eq!(
        transport.upload(&name, b"long").await.unwrap(),
        UploadOutcome::AlreadyThere
    );
}

#[tokio::test]
async fn a_missing_directory_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("not-mounted");
    let transport = DirectoryTransport::new(gone.join("out"), gone.join("in"));
    behaviour::unavailable(transport.upload("a.ach", b"x").await);
    behaviour::unavailable(transport.list_inbound().await);
    behaviour::unavailable(transport.fetch_inbound("a.xml").await);
}

#[tokio::test]
async fn a_directory_in_the_way_is_refused() {
    let (_dir, bank, transport) = drop_dirs();
    fs::create_dir(bank.outbound.join(behaviour::NAME)).unwrap();
    let message = behaviour::unknown(transport.upload(behaviour::NAME, b"x").await);
    assert!(message.contains("not a regular file"), "{message}");
}
