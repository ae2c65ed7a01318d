//! [`SftpTransport`]: the bank's file drop over SFTP, with russh and russh-sftp (pure Rust,
//! ring for the cryptography: no OpenSSL, no libssh).
//!
//! Every call opens its own connection (TCP, SSH handshake with the pinned host key checked
//! before authenticating, public-key authentication, the `sftp` subsystem) and closes it when
//! done. Bank drops see a handful of calls a day, so a connection per call costs nothing that
//! matters and never leaves a half-dead session to recover.

mod settings;

use std::{fmt, sync::Arc, time::Duration};

use anyhow::anyhow;
use async_trait::async_trait;
use domain::{
    PortError,
    rail::transport::{FileTransport, UploadOutcome},
};
use russh::{
    Disconnect,
    client::{self, Handle},
    keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKeyOrCertificate},
};
use russh_sftp::{
    client::{SftpSession, error::Error as SftpError},
    protocol::{FileAttributes, OpenFlags, StatusCode},
};
use tokio::io::AsyncWriteExt;

pub use self::settings::{HostKeyPin, SftpConfigError, SftpSettings};
use crate::{directory::different, names};

/// The file drop on an SFTP server. Built from [`SftpSettings`]; the private key is read and
/// checked once, by [`SftpTransport::new`].
///
/// An upload of `<name>` writes `.<name>.part` in the outbound directory (after removing what
/// a crashed upload left there), fsyncs it when the server supports `fsync@openssh.com`, closes
/// it and renames it to `<name>` with the protocol's plain rename, which fails rather than
/// replace an existing file (OpenSSH links the new name, then unlinks the old). When `<name>`
/// already exists, it is read back: the same bytes are [`UploadOutcome::AlreadyThere`],
/// other bytes an error. Uploads of one name must not run concurrently (they share the
/// temporary file).
///
/// Errors: a server that cannot be reached, a dropped connection or a timeout is
/// `PortError::Unavailable`; a refusal (wrong host key, client key not accepted, a file that
/// exists with other bytes, a missing remote file, permissions) is `PortError::Unknown`. No
/// message contains the private key.
pub struct SftpTransport {
    host: String,
    port: u16,
    user: String,
    key: Arc<PrivateKey>,
    host_key: HostKeyPin,
    outbound_dir: String,
    inbound_dir: String,
    connect_timeout: Duration,
    operation_timeout: Duration,
}

impl fmt::Debug for SftpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SftpTransport")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("private_key", &"[REDACTED]")
            .field("host_key", &self.host_key)
            .field("outbound_dir", &self.outbound_dir)
            .field("inbound_dir", &self.inbound_dir)
            .field("connect_timeout", &self.connect_timeout)
            .field("operation_timeout", &self.operation_timeout)
            .finish()
    }
}

impl SftpTransport {
    /// Checks the settings and loads the private key. Nothing is connected yet.
    ///
    /// # Errors
    /// When a setting is empty or the key cannot be read, is not an unencrypted ed25519 key
    /// in OpenSSH or PKCS#8 PEM form.
    pub fn new(settings: SftpSettings) -> Result<Self, SftpConfigError> {
        for (name, value) in [
            ("host", &settings.host),
            ("user", &settings.user),
            ("outbound_dir", &settings.outbound_dir),
            ("inbound_dir", &settings.inbound_dir),
        ] {
            if value.trim().is_empty() {
                return Err(SftpConfigError::Empty(name));
            }
        }
        Ok(Self {
            key: settings::load_private_key(&settings.private_key)?,
            host: settings.host,
            port: settings.port,
            user: settings.user,
            host_key: settings.host_key,
            outbound_dir: settings.outbound_dir,
            inbound_dir: settings.inbound_dir,
            connect_timeout: settings.connect_timeout,
            operation_timeout: settings.operation_timeout,
        })
    }

    /// The client's public key as an OpenSSH line, to give the bank for its authorized keys.
    pub fn client_public_key(&self) -> String {
        self.key
            .public_key()
            .to_openssh()
            .unwrap_or_else(|_| self.client_fingerprint())
    }

    /// The SHA256 fingerprint of the client's key.
    pub fn client_fingerprint(&self) -> String {
        self.key
            .public_key()
            .fingerprint(HashAlg::Sha256)
            .to_string()
    }

    /// `host:port`, for messages.
    fn server(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// Connects, runs `work` on the SFTP session within the operation timeout, and closes.
    async fn with_session<T, F>(&self, work: F) -> Result<T, PortError>
    where
        F: AsyncFnOnce(&SftpSession) -> Result<T, PortError>,
    {
        let (handle, sftp) = tokio::time::timeout(self.connect_timeout, self.connect())
            .await
            .map_err(|_| {
                PortError::Unavailable(anyhow!(
                    "connecting to the SFTP server {} timed out after {:?}",
                    self.server(),
                    self.connect_timeout
                ))
            })??;
        let result = tokio::time::timeout(self.operation_timeout, work(&sftp))
            .await
            .unwrap_or_else(|_| {
                Err(PortError::Unavailable(anyhow!(
                    "the SFTP operation on {} timed out after {:?}",
                    self.server(),
                    self.operation_timeout
                )))
            });
        // Closing is a courtesy: the work's result stands whatever happens here.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            let _ = sftp.close().await;
            let _ = handle.disconnect(Disconnect::ByApplication, "", "en").await;
        })
        .await;
        result
    }

    /// TCP, the SSH handshake (host key checked), authentication and the SFTP subsystem.
    async fn connect(&self) -> Result<(Handle<PinnedHostKey>, SftpSession), PortError> {
        let config = Arc::new(client::Config {
            inactivity_timeout: Some(self.operation_timeout),
            nodelay: true,
            ..client::Config::default()
        });
        let handler = PinnedHostKey {
            pin: self.host_key.clone(),
        };
        let mut handle = client::connect(config, (self.host.as_str(), self.port), handler)
            .await
            .map_err(|err| self.connect_error(err))?;
        let key = PrivateKeyWithHashAlg::new(Arc::clone(&self.key), None);
        let auth = handle
            .authenticate_publickey(self.user.as_str(), key)
            .await
            .map_err(|err| self.ssh_error(err, "authenticating"))?;
        if !auth.success() {
            return Err(PortError::Unknown(anyhow!(
                "the SFTP server {} refused the client key {} for user {:?}",
                self.server(),
                self.client_fingerprint(),
                self.user
            )));
        }
        let channel = handle
            .channel_open_session()
            .await
            .map_err(|err| self.ssh_error(err, "opening a session"))?;
        channel
            .request_subsystem(true, "sftp")
            .await
            .map_err(|err| self.ssh_error(err, "starting the sftp subsystem"))?;
        let sftp = SftpSession::new(channel.into_stream())
            .await
            .map_err(|err| sftp_error(err, &format!("starting SFTP on {}", self.server())))?;
        sftp.set_timeout(self.operation_timeout.as_secs().max(1));
        Ok((handle, sftp))
    }

    fn connect_error(&self, err: HandshakeError) -> PortError {
        match err {
            HandshakeError::HostKey { presented } => PortError::Unknown(anyhow!(
                "the SFTP server {} presented the host key {presented}, not the pinned {}; \
                 refused before authenticating",
                self.server(),
                self.host_key
            )),
            HandshakeError::Ssh(err) => self.ssh_error(err, "connecting"),
        }
    }

    fn ssh_error(&self, err: russh::Error, doing: &str) -> PortError {
        use russh::Error as E;
        let unavailable = matches!(
            err,
            E::IO(_)
                | E::Disconnect
                | E::HUP
                | E::ConnectionTimeout
                | E::KeepaliveTimeout
                | E::InactivityTimeout
                | E::Elapsed(_)
                | E::SendError
                | E::RecvError
                | E::Join(_)
        );
        let err =
            anyhow::Error::new(err).context(format!("SFTP server {}: {doing}", self.server()));
        if unavailable {
            PortError::Unavailable(err)
        } else {
            PortError::Unknown(err)
        }
    }

    fn outbound(&self, name: &str) -> String {
        join(&self.outbound_dir, name)
    }

    fn inbound(&self, name: &str) -> String {
        join(&self.inbound_dir, name)
    }
}

#[async_trait]
impl FileTransport for SftpTransport {
    async fn upload(&self, name: &str, bytes: &[u8]) -> Result<UploadOutcome, PortError> {
        names::check(name)?;
        let target = self.outbound(name);
        let temp = self.outbound(&names::temporary(name));
        self.with_session(async |sftp: &SftpSession| {
            if let Some(outcome) = compare_existing(sftp, &target, bytes).await? {
                return Ok(outcome);
            }
            write_file(sftp, &temp, bytes).await?;
            match sftp.rename(temp.as_str(), target.as_str()).await {
                Ok(()) => Ok(UploadOutcome::Uploaded),
                // The plain rename fails when the name exists: judge what is there now.
                Err(err) => {
                    let outcome = match compare_existing(sftp, &target, bytes).await {
                        Ok(Some(outcome)) => Ok(outcome),
                        Ok(None) => Err(sftp_error(err, &format!("renaming {temp}"))),
                        Err(refused) => Err(refused),
                    };
                    if let Err(err) = sftp.remove_file(temp.as_str()).await {
                        tracing::warn!(path = %temp, error = %err, "cannot remove an upload's temporary file");
                    }
                    outcome
                }
            }
        })
        .await
    }

    async fn list_inbound(&self) -> Result<Vec<String>, PortError> {
        self.with_session(async |sftp: &SftpSession| {
            let entries = sftp
                .read_dir(self.inbound_dir.as_str())
                .await
                .map_err(|err| sftp_error(err, &format!("listing {}", self.inbound_dir)))?;
            let mut names: Vec<String> = entries
                // OpenSSH reports an entry's own type (lstat): a link is not a regular file.
                .filter(|entry| entry.file_type().is_file())
                .map(|entry| entry.file_name())
                .filter(|name| names::is_listed(name))
                .collect();
            names.sort_unstable();
            Ok(names)
        })
        .await
    }

    async fn fetch_inbound(&self, name: &str) -> Result<Vec<u8>, PortError> {
        names::check(name)?;
        let path = self.inbound(name);
        self.with_session(async |sftp: &SftpSession| {
            let meta = sftp
                .symlink_metadata(path.as_str())
                .await
                .map_err(|err| sftp_error(err, &format!("inspecting {path}")))?;
            if !meta.file_type().is_file() {
                return Err(PortError::Unknown(anyhow!("{path} is not a regular file")));
            }
            sftp.read(path.as_str())
                .await
                .map_err(|err| sftp_error(err, &format!("reading {path}")))
        })
        .await
    }
}

/// `Some` outcome when `target` exists: `AlreadyThere` with the same bytes, an error with other
/// content or when it is not a regular file; `None` when it does not exist.
async fn compare_existing(
    sftp: &SftpSession,
    target: &str,
    bytes: &[u8],
) -> Result<Option<UploadOutcome>, PortError> {
    let meta = match sftp.symlink_metadata(target).await {
        Ok(meta) => meta,
        Err(SftpError::Status(status)) if status.status_code == StatusCode::NoSuchFile => {
            return Ok(None);
        }
        Err(err) => return Err(sftp_error(err, &format!("inspecting {target}"))),
    };
    if !meta.file_type().is_file() {
        return Err(PortError::Unknown(anyhow!(
            "{target} exists and is not a regular file"
        )));
    }
    let same_size = meta
        .size
        .is_none_or(|size| usize::try_from(size).is_ok_and(|size| size == bytes.len()));
    if same_size {
        let existing = sftp
            .read(target)
            .await
            .map_err(|err| sftp_error(err, &format!("reading {target}")))?;
        if existing == bytes {
            return Ok(Some(UploadOutcome::AlreadyThere));
        }
    }
    Err(different(target))
}

/// Writes `bytes` to a new file at `path`, fsyncs it (when the server can) and closes it.
/// What a crashed upload left there is removed first, and the file is created exclusively, so
/// a link planted under the temporary name is never followed.
async fn write_file(sftp: &SftpSession, path: &str, bytes: &[u8]) -> Result<(), PortError> {
    let failed = |err: SftpError| sftp_error(err, &format!("writing {path}"));
    match sftp.remove_file(path).await {
        Err(SftpError::Status(status)) if status.status_code == StatusCode::NoSuchFile => {}
        other => other.map_err(failed)?,
    }
    // Asked for 0600 as it is created: the server applies its own umask (which can only take
    // bits away) and may ignore the request; a chmod afterwards is not sent, because managed
    // SFTP services often refuse it and the upload must not fail for that.
    let mut attributes = FileAttributes::empty();
    attributes.permissions = Some(crate::FILE_MODE);
    let mut file = sftp
        .open_with_flags_and_attributes(
            path,
            OpenFlags::CREATE | OpenFlags::EXCLUDE | OpenFlags::WRITE,
            attributes,
        )
        .await
        .map_err(failed)?;
    file.write_all(bytes)
        .await
        .map_err(|err| failed(err.into()))?;
    file.sync_all().await.map_err(failed)?;
    file.shutdown().await.map_err(|err| failed(err.into()))
}

/// An SFTP failure as a `PortError`: a lost connection or a timeout is `Unavailable`, what the
/// server refused (no such file, permission denied, failure) is `Unknown`.
fn sftp_error(err: SftpError, doing: &str) -> PortError {
    let unavailable = match &err {
        SftpError::Status(status) => matches!(
            status.status_code,
            StatusCode::NoConnection | StatusCode::ConnectionLost
        ),
        SftpError::IO(_) | SftpError::Timeout => true,
        SftpError::Limited(_) | SftpError::UnexpectedPacket | SftpError::UnexpectedBehavior(_) => {
            false
        }
    };
    let err = anyhow::Error::new(err).context(doing.to_owned());
    if unavailable {
        PortError::Unavailable(err)
    } else {
        PortError::Unknown(err)
    }
}

/// `dir/name` in SFTP's POSIX paths.
fn join(dir: &str, name: &str) -> String {
    if dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// The client side of the handshake: accepts exactly the pinned host key.
struct PinnedHostKey {
    pin: HostKeyPin,
}

/// Why a handshake failed.
#[derive(Debug)]
enum HandshakeError {
    /// The server presented another host key (its SHA256 fingerprint) or a certificate.
    HostKey {
        presented: String,
    },
    Ssh(russh::Error),
}

impl From<russh::Error> for HandshakeError {
    fn from(err: russh::Error) -> Self {
        Self::Ssh(err)
    }
}

impl client::Handler for PinnedHostKey {
    type Error = HandshakeError;

    async fn check_server_key(
        &mut self,
        server_public_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        match server_public_key {
            PublicKeyOrCertificate::PublicKey { key, .. } if self.pin.matches(key) => Ok(true),
            PublicKeyOrCertificate::PublicKey { key, .. } => Err(HandshakeError::HostKey {
                presented: key.fingerprint(HashAlg::Sha256).to_string(),
            }),
            PublicKeyOrCertificate::Certificate(cert) => Err(HandshakeError::HostKey {
                presented: format!(
                    "certificate for {}",
                    cert.public_key().fingerprint(HashAlg::Sha256)
                ),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::join;

    #[test]
    fn remote_paths_join_with_one_slash() {
        assert_eq!(join("/drop/out", "a.xml"), "/drop/out/a.xml");
        assert_eq!(join("/drop/out/", "a.xml"), "/drop/out/a.xml");
        assert_eq!(join("out", "a.xml"), "out/a.xml");
    }
}
