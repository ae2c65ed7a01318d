//! The file transport port: a bank's file drop, where payoutd puts payment files and finds the
//! bank's acknowledgements and returns.

use async_trait::async_trait;

use crate::error::PortError;

/// What an upload found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UploadOutcome {
    /// The file was written (under a temporary name, then renamed, so the bank never reads half
    /// a file).
    Uploaded,
    /// A file of that name with the same bytes was already there (a retried upload): nothing
    /// was written.
    AlreadyThere,
}

/// A bank's file drop (SFTP, or local directories a managed file-transfer agent serves).
///
/// Names are plain file names: no path separators, no `..`, no leading dot, at most 255 bytes;
/// a transport refuses any other name with `PortError::Unknown` before touching the drop.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait FileTransport: Send + Sync {
    /// Puts `bytes` in the outbound directory as `name`, atomically: written under a temporary
    /// name and renamed. Idempotent: when `name` already holds exactly `bytes`, nothing is
    /// written ([`UploadOutcome::AlreadyThere`]).
    ///
    /// # Errors
    /// `PortError::Unknown` when `name` already holds other bytes (a file is never replaced)
    /// or the name is refused; `PortError::Unavailable` when the drop cannot be reached.
    async fn upload(&self, name: &str, bytes: &[u8]) -> Result<UploadOutcome, PortError>;

    /// The names of the files in the inbound directory (regular files only, in name order).
    async fn list_inbound(&self) -> Result<Vec<String>, PortError>;

    /// The bytes of the inbound file `name`.
    async fn fetch_inbound(&self, name: &str) -> Result<Vec<u8>, PortError>;
}

/// Whether `name` is a plain file name a transport accepts (see [`FileTransport`]).
pub fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 255
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && name.chars().all(|c| !c.is_control())
}

#[cfg(test)]
mod tests {
    use super::is_plain_file_name;

    #[test]
    fn only_plain_names_are_accepted() {
        for good in ["PAYOUTD_20261125_01.ach", "a", "batch-1.xml"] {
            assert!(is_plain_file_name(good), "{good}");
        }
        let long = "x".repeat(256);
        for bad in [
            "",
            ".hidden",
            "..",
            "../etc/passwd",
            "a/b",
            "a\\b",
            "a\0b",
            "tab\tname",
            &long,
        ] {
            assert!(!is_plain_file_name(bad), "{bad:?}");
        }
    }
}
