//! The behaviours of the `FileTransport` port, checked from the bank's side: what lands in the
//! outbound directory on disk, and what payoutd sees of files the bank puts in the inbound one.
//! Each transport's tests run every one of these.

use std::{
    fs,
    os::unix::fs::{MetadataExt, symlink},
};

use domain::{
    PortError,
    rail::transport::{FileTransport, UploadOutcome},
};

use super::BankDirs;

pub const NAME: &str = "PAYOUTD_20261125_01.ach";

/// A payment file big enough to take many SFTP packets.
pub fn payment_file(seed: u8) -> Vec<u8> {
    (0..200_000u32)
        .map(|i| (i % 251) as u8 ^ seed)
        .collect::<Vec<u8>>()
}

/// The message of a `PortError::Unknown`; fails on anything else.
pub fn unknown<T: std::fmt::Debug>(result: Result<T, PortError>) -> String {
    match result {
        Err(PortError::Unknown(err)) => format!("{err:#}"),
        other => panic!("expected PortError::Unknown, got {other:?}"),
    }
}

/// The message of a `PortError::Unavailable`; fails on anything else.
pub fn unavailable<T: std::fmt::Debug>(result: Result<T, PortError>) -> String {
    match result {
        Err(PortError::Unavailable(err)) => format!("{err:#}"),
        other => panic!("expected PortError::Unavailable, got {other:?}"),
    }
}

/// An upload lands under its name with its bytes, and no temporary file stays behind.
pub async fn upload_lands_whole(transport: &dyn FileTransport, bank: &BankDirs) {
    let bytes = payment_file(1);
    assert_eq!(
        transport.upload(NAME, &bytes).await.unwrap(),
        UploadOutcome::Uploaded
    );
    assert_eq!(bank.outbound_entries(), [NAME]);
    assert_eq!(fs::read(bank.outbound.join(NAME)).unwrap(), bytes);
    // An empty file is a file too.
    assert_eq!(
        transport.upload("EMPTY.ach", b"").await.unwrap(),
        UploadOutcome::Uploaded
    );
    assert_eq!(fs::read(bank.outbound.join("EMPTY.ach")).unwrap(), b"");
}

/// A retried upload of the same bytes writes nothing and says so.
pub async fn retried_upload_is_already_there(transport: &dyn FileTransport, bank: &BankDirs) {
    let bytes = payment_file(2);
    assert_eq!(
        transport.upload(NAME, &bytes).await.unwrap(),
        UploadOutcome::Uploaded
    );
    let stamp = |path| {
        let meta = fs::metadata(path).unwrap();
        (meta.ino(), meta.modified().unwrap())
    };
    let written = stamp(bank.outbound.join(NAME));
    assert_eq!(
        transport.upload(NAME, &bytes).await.unwrap(),
        UploadOutcome::AlreadyThere
    );
    assert_eq!(
        stamp(bank.outbound.join(NAME)),
        written,
        "the file was rewritten"
    );
    assert_eq!(bank.outbound_entries(), [NAME]);
}

/// A file is never replaced by other bytes, of the same length or not.
pub async fn other_bytes_never_replace_a_file(transport: &dyn FileTransport, bank: &BankDirs) {
    let bytes = payment_file(3);
    transport.upload(NAME, &bytes).await.unwrap();
    let mut same_length = bytes.clone();
    same_length[100_000] ^= 0xff;
    for other in [same_length, payment_file(3)[..1000].to_vec(), Vec::new()] {
        let message = unknown(transport.upload(NAME, &other).await);
        assert!(message.contains("different content"), "{message}");
        assert!(message.contains(NAME), "{message}");
    }
    assert_eq!(fs::read(bank.outbound.join(NAME)).unwrap(), bytes);
    assert_eq!(bank.outbound_entries(), [NAME]);
}

/// Names that are not plain file names are refused, and nothing is written anywhere.
pub async fn only_plain_names(transport: &dyn FileTransport, bank: &BankDirs) {
    let refused = [
        "",
        ".",
        "..",
        "../escape.ach",
        "../../escape.ach",
        "a/b.ach",
        "/tmp/escape.ach",
        ".hidden.ach",
        "back\\slash.ach",
        "nul\0.ach",
        "new\nline.ach",
    ];
    for name in refused {
        let message = unknown(transport.upload(name, b"x").await);
        assert!(message.contains("refused file name"), "{name:?}: {message}");
        let message = unknown(transport.fetch_inbound(name).await);
        assert!(message.contains("refused file name"), "{name:?}: {message}");
    }
    let long = "x".repeat(256);
    unknown(transport.upload(&long, b"x").await);
    assert!(bank.outbound_entries().is_empty());
    let parent = bank.outbound.parent().unwrap();
    assert!(!parent.join("escape.ach").exists());
}

/// The bank's files are listed (regular files only, sorted, without dot files or files still
/// being written) and fetched whole.
pub async fn inbound_files_are_listed_and_fetched(transport: &dyn FileTransport, bank: &BankDirs) {
    assert!(transport.list_inbound().await.unwrap().is_empty());
    let return_file = payment_file(4);
    bank.send("RETURN_1.csv", &return_file);
    bank.send("ACK_2.xml", b"<ack n=\"2\"/>");
    bank.send("ACK_1.xml", b"<ack n=\"1\"/>");
    bank.send("empty.txt", b"");
    bank.send(".hidden", b"not for payoutd");
    bank.send(".ACK_3.xml.part", b"<ack n=");
    bank.send("ACK_4.xml.part", b"<ack n=");
    bank.send("ACK_5.xml.filepart", b"<ack n=");
    fs::create_dir(bank.inbound.join("archive")).unwrap();
    symlink(
        bank.inbound.join("ACK_1.xml"),
        bank.inbound.join("link.xml"),
    )
    .unwrap();

    assert_eq!(
        transport.list_inbound().await.unwrap(),
        ["ACK_1.xml", "ACK_2.xml", "RETURN_1.csv", "empty.txt"]
    );
    assert_eq!(
        transport.fetch_inbound("ACK_1.xml").await.unwrap(),
        b"<ack n=\"1\"/>"
    );
    assert_eq!(
        transport.fetch_inbound("RETURN_1.csv").await.unwrap(),
        return_file
    );
    assert!(
        transport
            .fetch_inbound("empty.txt")
            .await
            .unwrap()
            .is_empty()
    );
    for not_a_file in ["link.xml", "archive"] {
        let message = unknown(transport.fetch_inbound(not_a_file).await);
        assert!(message.contains("not a regular file"), "{message}");
    }
    unknown(transport.fetch_inbound("missing.xml").await);
}

/// What a crashed upload left (its temporary file) is never listed, and the next upload of the
/// name overwrites it and lands whole.
pub async fn crashed_upload_is_hidden_then_replaced(
    transport: &dyn FileTransport,
    bank: &BankDirs,
) {
    let temp = format!(".{NAME}.part");
    let leftover = vec![b'#'; 300_000]; // longer than the real file: truncation matters
    fs::write(bank.outbound.join(&temp), &leftover).unwrap();
    // Seen from the listing side (a drop whose inbound is another party's outbound).
    fs::write(bank.inbound.join(&temp), &leftover).unwrap();
    assert!(transport.list_inbound().await.unwrap().is_empty());

    let bytes = payment_file(5);
    assert_eq!(
        transport.upload(NAME, &bytes).await.unwrap(),
        UploadOutcome::Uploaded
    );
    assert_eq!(fs::read(bank.outbound.join(NAME)).unwrap(), bytes);
    assert_eq!(bank.outbound_entries(), [NAME]);
}

/// A link planted under the temporary name is replaced, not written through.
pub async fn a_planted_link_is_not_followed(transport: &dyn FileTransport, bank: &BankDirs) {
    let victim = bank.outbound.parent().unwrap().join("victim.txt");
    fs::write(&victim, b"keep me").unwrap();
    symlink(&victim, bank.outbound.join(format!(".{NAME}.part"))).unwrap();

    let bytes = payment_file(6);
    assert_eq!(
        transport.upload(NAME, &bytes).await.unwrap(),
        UploadOutcome::Uploaded
    );
    assert_eq!(fs::read(&victim).unwrap(), b"keep me");
    let placed = bank.outbound.join(NAME);
    assert!(fs::symlink_metadata(&placed).unwrap().is_file());
    assert_eq!(fs::read(&placed).unwrap(), bytes);
    assert_eq!(bank.outbound_entries(), [NAME]);
}

/// Every uploaded file is readable by the uploader's user only (0600): bank files carry account
/// numbers and names in clear.
pub async fn uploads_are_readable_by_their_owner_only(
    transport: &dyn FileTransport,
    bank: &BankDirs,
) {
    use std::os::unix::fs::PermissionsExt;
    let name = "PRIVATE.aba";
    assert_eq!(
        transport.upload(name, &payment_file(7)).await.unwrap(),
        UploadOutcome::Uploaded
    );
    let mode = std::fs::metadata(bank.outbound.join(name))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o600, "mode {mode:o}");
}
