//! `SftpTransport` against a real OpenSSH sshd on 127.0.0.1 (one per test, see
//! `support/sshd.rs`): the port's behaviours seen from the bank's side (the directories the
//! sshd user sees on disk), then what only SFTP has: host-key pinning, client-key refusal,
//! unreachable servers and timeouts.
//!
//! Needs `sshd` and `ssh-keygen`: run with `cargo xtask test`, which provides them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::{
    fs,
    net::TcpListener,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use adapters_filetransfer::{HostKeyPin, SftpConfigError, SftpSettings, SftpTransport};
use domain::{
    masking::Secret,
    rail::transport::{FileTransport, UploadOutcome},
};
use support::{behaviour, sshd::Sshd};

fn transport(sshd: &Sshd) -> SftpTransport {
    SftpTransport::new(sshd.settings()).unwrap()
}

#[tokio::test]
async fn upload_lands_whole() {
    let sshd = Sshd::start();
    behaviour::upload_lands_whole(&transport(&sshd), &sshd.bank).await;
}

#[tokio::test]
async fn uploads_are_readable_by_their_owner_only() {
    let sshd = Sshd::start();
    behaviour::uploads_are_readable_by_their_owner_only(&transport(&sshd), &sshd.bank).await;
}

#[tokio::test]
async fn retried_upload_is_already_there() {
    let sshd = Sshd::start();
    behaviour::retried_upload_is_already_there(&transport(&sshd), &sshd.bank).await;
}

#[tokio::test]
async fn other_bytes_never_replace_a_file() {
    let sshd = Sshd::start();
    behaviour::other_bytes_never_replace_a_file(&transport(&sshd), &sshd.bank).await;
}

#[tokio::test]
async fn inbound_files_are_listed_and_fetched() {
    let sshd = Sshd::start();
    behaviour::inbound_files_are_listed_and_fetched(&transport(&sshd), &sshd.bank).await;
}

#[tokio::test]
async fn crashed_upload_is_hidden_then_replaced() {
    let sshd = Sshd::start();
    behaviour::crashed_upload_is_hidden_then_replaced(&transport(&sshd), &sshd.bank).await;
}

#[tokio::test]
async fn a_planted_link_is_not_followed() {
    let sshd = Sshd::start();
    behaviour::a_planted_link_is_not_followed(&transport(&sshd), &sshd.bank).await;
}

/// Bad names are refused before any connection: the "server" here is a listener that counts
/// connections, and it sees none.
#[tokio::test]
async fn names_are_refused_without_connecting() {
    let sshd = Sshd::start();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut settings = sshd.settings();
    settings.port = listener.local_addr().unwrap().port();
    let transport = SftpTransport::new(settings).unwrap();

    behaviour::only_plain_names(&transport, &sshd.bank).await;

    assert_eq!(
        listener.accept().map_err(|err| err.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock),
        "a refused name opened a connection"
    );
}

#[tokio::test]
async fn a_server_with_another_host_key_is_refused_before_authenticating() {
    let sshd = Sshd::start();
    let other = sshd.other_key("impostor_ed25519");
    let other_line = fs::read_to_string(other.with_extension("pub")).unwrap();
    let pinned = HostKeyPin::parse(&other_line).unwrap();
    let mut settings = sshd.settings();
    settings.host_key = pinned.clone();
    let transport = SftpTransport::new(settings).unwrap();

    let message = behaviour::unknown(transport.upload(behaviour::NAME, b"x").await);
    let presented = HostKeyPin::parse(&sshd.host_key).unwrap();
    assert!(message.contains("presented the host key"), "{message}");
    assert!(message.contains(&presented.to_string()), "{message}");
    assert!(message.contains(&pinned.to_string()), "{message}");
    assert!(message.contains("before authenticating"), "{message}");
    behaviour::unknown(transport.list_inbound().await);
    assert!(sshd.bank.outbound_entries().is_empty());

    // sshd saw no authentication attempt (at VERBOSE it logs each, see the client-key test).
    let log = sshd.wait_log("Connection closed by 127.0.0.1");
    for auth in ["authenticating user", "publickey", "Accepted", "Failed"] {
        assert!(!log.contains(auth), "sshd logged {auth:?}:\n{log}");
    }
}

#[tokio::test]
async fn the_host_key_can_be_pinned_by_fingerprint() {
    let sshd = Sshd::start();
    let fingerprint = HostKeyPin::parse(&sshd.host_key).unwrap().to_string();
    assert!(fingerprint.starts_with("SHA256:"), "{fingerprint}");
    let mut settings = sshd.settings();
    settings.host_key = HostKeyPin::parse(&fingerprint).unwrap();
    let transport = SftpTransport::new(settings.clone()).unwrap();
    assert_eq!(
        transport.upload("PINNED.ach", b"pinned").await.unwrap(),
        UploadOutcome::Uploaded
    );

    // One character off is another key (the first of the hash: all its six bits count).
    let (prefix, hash) = fingerprint.split_at("SHA256:".len());
    let first = if hash.starts_with('A') { 'B' } else { 'A' };
    let other = format!("{prefix}{first}{}", &hash[1..]);
    settings.host_key = HostKeyPin::parse(&other).unwrap();
    let transport = SftpTransport::new(settings).unwrap();
    let message = behaviour::unknown(transport.list_inbound().await);
    assert!(message.contains("presented the host key"), "{message}");
}

#[tokio::test]
async fn a_client_key_the_server_does_not_know_is_refused() {
    let sshd = Sshd::start();
    let stranger = sshd.other_key("stranger_ed25519");
    let mut settings = sshd.settings();
    settings.private_key = Secret::new(fs::read_to_string(stranger).unwrap());
    let transport = SftpTransport::new(settings).unwrap();

    let message = behaviour::unknown(transport.upload(behaviour::NAME, b"x").await);
    assert!(message.contains("refused the client key"), "{message}");
    assert!(
        message.contains(&transport.client_fingerprint()),
        "{message}"
    );
    assert!(sshd.bank.outbound_entries().is_empty());
    // What sshd logs of an authentication attempt, which the host-key test expects to be
    // missing there.
    let log = sshd.wait_log("Failed publickey for ");
    assert!(log.contains(&transport.client_fingerprint()), "{log}");
}

/// The key can come as text (PKCS#8 PEM here, from a secret store say); it never shows in
/// `Debug` or in errors.
#[tokio::test]
async fn the_private_key_can_be_pem_text_and_never_shows() {
    let sshd = Sshd::start();
    let key = russh::keys::load_secret_key(&sshd.client_key, None).unwrap();
    let mut pem = Vec::new();
    russh::keys::encode_pkcs8_pem(&key, &mut pem).unwrap();
    let pem = String::from_utf8(pem).unwrap();
    let openssh = fs::read_to_string(&sshd.client_key).unwrap();

    let mut settings = sshd.settings();
    settings.private_key = Secret::new(pem.clone());
    let transport = SftpTransport::new(settings.clone()).unwrap();
    assert_eq!(
        transport.upload("PEM.ach", b"pem").await.unwrap(),
        UploadOutcome::Uploaded
    );
    assert_eq!(
        fs::read(sshd.bank.outbound.join("PEM.ach")).unwrap(),
        b"pem"
    );
    let public = fs::read_to_string(sshd.client_key.with_extension("pub")).unwrap();
    assert!(public.starts_with(&transport.client_public_key()));

    let shown = format!("{settings:?} {transport:?}");
    let failure = {
        let mut wrong = settings.clone();
        wrong.port = 1;
        let transport = SftpTransport::new(wrong).unwrap();
        behaviour::unavailable(transport.list_inbound().await)
    };
    for text in [&shown, &failure] {
        for secret in [&pem, &openssh] {
            // Whole base64 lines (a short last line could occur anywhere by chance).
            for line in secret.lines().filter(|line| line.len() >= 32) {
                assert!(!text.contains(line), "key material in {text}");
            }
        }
    }
    assert!(shown.contains("REDACTED"), "{shown}");
}

#[tokio::test]
async fn keys_that_cannot_be_used_are_refused_when_built() {
    let sshd = Sshd::start();
    let with = |key: Secret<String>| {
        let mut settings = sshd.settings();
        settings.private_key = key;
        SftpTransport::new(settings).err()
    };
    let garbage = with(Secret::new("not a key".to_owned()));
    assert!(
        matches!(garbage, Some(SftpConfigError::PrivateKeyInvalid)),
        "{garbage:?}"
    );
    let public = fs::read_to_string(sshd.client_key.with_extension("pub")).unwrap();
    let wrong = with(Secret::new(public));
    assert!(
        matches!(wrong, Some(SftpConfigError::PrivateKeyInvalid)),
        "{wrong:?}"
    );
    assert!(matches!(
        HostKeyPin::parse("SHA256:too-short"),
        Err(SftpConfigError::HostKeyPin)
    ));
    assert!(matches!(
        HostKeyPin::parse("not a key"),
        Err(SftpConfigError::HostKeyPin)
    ));
    let mut settings = sshd.settings();
    settings.user = String::new();
    assert!(matches!(
        SftpTransport::new(settings),
        Err(SftpConfigError::Empty("user"))
    ));
}

#[tokio::test]
async fn an_unreachable_server_is_unavailable() {
    let sshd = Sshd::start();
    // A port nothing listens on: bind one, then close it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut settings = sshd.settings();
    settings.port = port;
    let transport = SftpTransport::new(settings).unwrap();
    let message = behaviour::unavailable(transport.upload(behaviour::NAME, b"x").await);
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
}

/// A server that accepts the connection but never speaks: the connect timeout ends the wait.
#[tokio::test]
async fn a_silent_server_times_out_as_unavailable() {
    let sshd = Sshd::start();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&accepted);
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
            held.push(socket); // keep it open, say nothing
        }
    });
    let mut settings: SftpSettings = sshd.settings();
    settings.port = port;
    settings.connect_timeout = Duration::from_millis(500);
    let transport = SftpTransport::new(settings).unwrap();

    let started = Instant::now();
    let message = behaviour::unavailable(transport.list_inbound().await);
    assert!(message.contains("timed out"), "{message}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    silent.abort();
}

#[tokio::test]
async fn a_missing_remote_directory_is_refused() {
    let sshd = Sshd::start();
    let mut settings = sshd.settings();
    settings.outbound_dir = format!("{}/missing", settings.outbound_dir);
    settings.inbound_dir = format!("{}/missing", settings.inbound_dir);
    let transport = SftpTransport::new(settings).unwrap();
    let message = behaviour::unknown(transport.upload(behaviour::NAME, b"x").await);
    assert!(message.contains("missing"), "{message}");
    behaviour::unknown(transport.list_inbound().await);
}
