//! [`DirectoryTransport`]: the bank's file drop as two local directories, for a connection run
//! by a managed file-transfer agent that picks files up from one and drops the bank's files
//! into the other.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, ErrorKind, Write},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
};

use anyhow::anyhow;
use async_trait::async_trait;
use domain::{
    PortError,
    rail::transport::{FileTransport, UploadOutcome},
};

use crate::names;

/// The mode of every file payoutd writes into a drop: read and write for its own user only.
/// Bank files carry account numbers and names in clear.
pub const FILE_MODE: u32 = 0o600;

/// The file drop as local directories: `outbound` holds what payoutd uploads, `inbound` what
/// the bank sends back.
///
/// An upload writes `.<name>.part` in `outbound` (after removing what a crashed upload left
/// there), fsyncs it, then links it to `<name>` (a
/// rename that never replaces a file; where the file system has no hard links, a rename after
/// checking that `<name>` does not exist) and fsyncs the directory. The agent therefore never
/// sees half a file, as long as it skips dot files, which every agent can be told to do.
/// Uploads of one name must not run concurrently (they share the temporary file).
///
/// Every file is written [`FILE_MODE`] (0600) whatever the process umask, so the file-transfer
/// agent that moves them must run as payoutd's user (or as root).
///
/// The directories are not checked when the transport is built, and never created: a missing
/// directory (say, a mount not there yet) makes each call fail with `PortError::Unavailable`,
/// rather than bank files landing on the local disk under the mount point.
#[derive(Debug, Clone)]
pub struct DirectoryTransport {
    outbound: PathBuf,
    inbound: PathBuf,
}

impl DirectoryTransport {
    /// A transport over the directories `outbound` (payoutd writes) and `inbound` (payoutd
    /// reads).
    pub fn new(outbound: impl Into<PathBuf>, inbound: impl Into<PathBuf>) -> Self {
        Self {
            outbound: outbound.into(),
            inbound: inbound.into(),
        }
    }

    /// Where uploads go.
    pub fn outbound(&self) -> &Path {
        &self.outbound
    }

    /// Where the bank's files are read from.
    pub fn inbound(&self) -> &Path {
        &self.inbound
    }
}

#[async_trait]
impl FileTransport for DirectoryTransport {
    async fn upload(&self, name: &str, bytes: &[u8]) -> Result<UploadOutcome, PortError> {
        names::check(name)?;
        let outbound = self.outbound.clone();
        let name = name.to_owned();
        let bytes = bytes.to_vec();
        blocking(move || upload(&outbound, &name, &bytes)).await
    }

    async fn list_inbound(&self) -> Result<Vec<String>, PortError> {
        let inbound = self.inbound.clone();
        blocking(move || list(&inbound)).await
    }

    async fn fetch_inbound(&self, name: &str) -> Result<Vec<u8>, PortError> {
        names::check(name)?;
        let inbound = self.inbound.clone();
        let name = name.to_owned();
        blocking(move || fetch(&inbound, &name)).await
    }
}

/// Runs blocking file-system work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PortError> + Send + 'static,
) -> Result<T, PortError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| PortError::Unknown(anyhow!("file transfer task failed: {err}")))?
}

fn upload(outbound: &Path, name: &str, bytes: &[u8]) -> Result<UploadOutcome, PortError> {
    let target = outbound.join(name);
    if let Some(outcome) = compare_existing(&target, bytes)? {
        return Ok(outcome);
    }
    let temp = outbound.join(names::temporary(name));
    write_synced(&temp, bytes).map_err(|err| io_error(err, "writing", &temp))?;
    let placed = match fs::hard_link(&temp, &target) {
        Ok(()) => Ok(UploadOutcome::Uploaded),
        // Someone placed the name meanwhile: judge what is there now.
        Err(err) if err.kind() == ErrorKind::AlreadyExists => {
            match compare_existing(&target, bytes) {
                Ok(Some(outcome)) => Ok(outcome),
                Ok(None) => Err(io_error(err, "linking", &target)), // gone again
                Err(refused) => Err(refused),
            }
        }
        // No hard links on this file system.
        Err(err)
            if matches!(
                err.kind(),
                ErrorKind::Unsupported | ErrorKind::PermissionDenied
            ) =>
        {
            return rename_if_absent(outbound, &temp, &target, bytes);
        }
        Err(err) => Err(io_error(err, "linking", &target)),
    };
    remove_temporary(&temp);
    sync_dir(outbound);
    placed
}

/// Where the file system has no hard links: a rename after checking that the name is free.
/// Not atomic against another writer of the same name, which the type's docs rule out.
fn rename_if_absent(
    outbound: &Path,
    temp: &Path,
    target: &Path,
    bytes: &[u8],
) -> Result<UploadOutcome, PortError> {
    let placed = match compare_existing(target, bytes) {
        Ok(None) => fs::rename(temp, target)
            .map(|()| UploadOutcome::Uploaded)
            .map_err(|err| io_error(err, "renaming", temp)),
        Ok(Some(outcome)) => Ok(outcome),
        Err(refused) => Err(refused),
    };
    if !matches!(placed, Ok(UploadOutcome::Uploaded)) {
        remove_temporary(temp);
    }
    sync_dir(outbound);
    placed
}

fn remove_temporary(temp: &Path) {
    if let Err(err) = fs::remove_file(temp) {
        tracing::warn!(path = %temp.display(), error = %err, "cannot remove an upload's temporary file");
    }
}

/// `Some` outcome when `target` exists: `AlreadyThere` with the same bytes, an error with any
/// other content or when it is not a regular file; `None` when it does not exist.
fn compare_existing(target: &Path, bytes: &[u8]) -> Result<Option<UploadOutcome>, PortError> {
    let meta = match fs::symlink_metadata(target) {
        Ok(meta) => meta,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(io_error(err, "inspecting", target)),
    };
    if !meta.is_file() {
        return Err(PortError::Unknown(anyhow!(
            "{} exists and is not a regular file",
            target.display()
        )));
    }
    let same = usize::try_from(meta.len()).is_ok_and(|len| len == bytes.len())
        && fs::read(target).map_err(|err| io_error(err, "reading", target))? == bytes;
    if same {
        Ok(Some(UploadOutcome::AlreadyThere))
    } else {
        Err(different(&target.display().to_string()))
    }
}

/// The refusal to replace a file that holds other bytes.
pub(crate) fn different(target: &str) -> PortError {
    PortError::Unknown(anyhow!(
        "{target} already exists with different content; it is never replaced"
    ))
}

/// Writes `bytes` to a new file at `path` and fsyncs it. What a crashed upload left there is
/// removed first, and the file is created exclusively, so a link planted under the temporary
/// name is never followed. The file is [`FILE_MODE`] whatever the process umask: created with
/// it (so it is never readable by others, even for a moment), then set to it exactly (a umask
/// can only take bits away).
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(err) if err.kind() != ErrorKind::NotFound => return Err(err),
        _ => {}
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)?;
    file.set_permissions(fs::Permissions::from_mode(FILE_MODE))?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Makes a rename or link in `dir` durable. Best effort: the file is in place either way, and
/// some file systems cannot sync a directory.
fn sync_dir(dir: &Path) {
    if let Err(err) = File::open(dir).and_then(|dir| dir.sync_all()) {
        tracing::debug!(dir = %dir.display(), error = %err, "cannot fsync the directory");
    }
}

fn list(inbound: &Path) -> Result<Vec<String>, PortError> {
    let entries = fs::read_dir(inbound).map_err(|err| io_error(err, "listing", inbound))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| io_error(err, "listing", inbound))?;
        // The entry's own type: a symbolic link is not a regular file, whatever it points to.
        let file_type = entry
            .file_type()
            .map_err(|err| io_error(err, "inspecting", &entry.path()))?;
        if !file_type.is_file() {
            continue;
        }
        if let Some(name) = entry.file_name().to_str().filter(|n| names::is_listed(n)) {
            names.push(name.to_owned());
        }
    }
    names.sort_unstable();
    Ok(names)
}

fn fetch(inbound: &Path, name: &str) -> Result<Vec<u8>, PortError> {
    let path = inbound.join(name);
    match fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => {
            return Err(PortError::Unknown(anyhow!(
                "{} is not a regular file",
                path.display()
            )));
        }
        // A missing directory is an unreachable drop; a missing file in it is a wrong name.
        Err(err) if err.kind() == ErrorKind::NotFound && inbound.is_dir() => {
            return Err(PortError::Unknown(anyhow!(
                "no inbound file {name:?} in {}",
                inbound.display()
            )));
        }
        Err(err) => return Err(io_error(err, "inspecting", &path)),
    }
    fs::read(&path).map_err(|err| io_error(err, "reading", &path))
}

/// An I/O failure as a `PortError`: what cannot be fixed by waiting (permissions, a path that
/// is not a directory, a read-only file system, bad input) is `Unknown`; anything else (a
/// missing directory, a full disk, an I/O error of a network mount) is `Unavailable`.
fn io_error(err: io::Error, doing: &str, path: &Path) -> PortError {
    let permanent = matches!(
        err.kind(),
        ErrorKind::PermissionDenied
            | ErrorKind::InvalidInput
            | ErrorKind::InvalidData
            | ErrorKind::InvalidFilename
            | ErrorKind::NotADirectory
            | ErrorKind::IsADirectory
            | ErrorKind::ReadOnlyFilesystem
            | ErrorKind::FileTooLarge
    );
    let err = anyhow::Error::new(err).context(format!("{doing} {}", path.display()));
    if permanent {
        PortError::Unknown(err)
    } else {
        PortError::Unavailable(err)
    }
}
