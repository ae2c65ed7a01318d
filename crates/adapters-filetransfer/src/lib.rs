//! payoutd's bank file drops: [`FileTransport`](domain::rail::transport::FileTransport) over
//! local directories ([`DirectoryTransport`], for a connection run by a managed file-transfer
//! agent), over SFTP ([`SftpTransport`]), and over a partner bank's signed HTTPS API
//! ([`PartnerApiTransport`], for the Interac e-Transfer partner protocol, where a "file" is a
//! batch request and the inbound "files" are the partner's status reports).
//!
//! The directory and SFTP transports behave the same way:
//!
//! - names are checked with [`is_plain_file_name`](domain::rail::transport::is_plain_file_name)
//!   before anything is touched (or connected);
//! - an upload of `<name>` is written as `.<name>.part` and then moved to `<name>` without ever
//!   replacing a file: when `<name>` exists with the same bytes the upload is
//!   [`AlreadyThere`](domain::rail::transport::UploadOutcome::AlreadyThere), with other bytes it
//!   is refused;
//! - inbound listings hold regular files only, sorted, without dot files or files still being
//!   written (`*.part`, `*.filepart`).

mod directory;
mod names;
mod partner_api;
mod sftp;

pub use directory::{DirectoryTransport, FILE_MODE};
pub use partner_api::{
    DEFAULT_MAX_PAGES, DEFAULT_MAX_RESPONSE_BYTES, PartnerApiConfigError, PartnerApiSettings,
    PartnerApiTransport,
};
pub use sftp::{HostKeyPin, SftpConfigError, SftpSettings, SftpTransport};
