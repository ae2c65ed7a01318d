//! Bank files hold account numbers: the directory transport writes them readable by payoutd's
//! user only (0600), whatever the process umask. A test binary of its own, because the umask
//! it sets belongs to the whole process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;

use adapters_filetransfer::DirectoryTransport;
use domain::rail::transport::{FileTransport, UploadOutcome};
use nix::sys::stat::{Mode, umask};

#[tokio::test]
async fn uploads_are_written_0600_whatever_the_umask() {
    let dir = tempfile::tempdir().unwrap();
    let outbound = dir.path().join("outbound");
    std::fs::create_dir(&outbound).unwrap();
    let transport = DirectoryTransport::new(&outbound, dir.path());
    for (n, mask) in [0o000, 0o022, 0o002, 0o077, 0o277].into_iter().enumerate() {
        let previous = umask(Mode::from_bits_truncate(mask));
        let name = format!("PAYMENTS-{n}.aba");
        let outcome = transport.upload(&name, b"0 payment file\r\n").await;
        umask(previous);
        assert_eq!(outcome.unwrap(), UploadOutcome::Uploaded, "umask {mask:o}");
        let mode = std::fs::metadata(outbound.join(&name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o600, "umask {mask:o}: mode {mode:o}");
    }
}
