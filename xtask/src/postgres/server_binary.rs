//! Which server binary a private cluster runs, to notice one replaced under it.
//!
//! Debian upgrades PostgreSQL's minor version by replacing the files of its server package, and
//! installing another package can bring such an upgrade along (`cargo xtask citus` installs
//! `postgresql-server-dev-15`, which wants the server package of its own version). A server
//! started before keeps running the old binary and loads the new libraries when it first needs
//! them: the next migration then fails with `could not load library ".../plpgsql.so": undefined
//! symbol`. So a cluster records the binary it was started with ([`RECORD`], in its directory),
//! and a command about to use a running cluster compares it with the installed binary and with
//! what the running server executes (`/proc/<pid>/exe`, "(deleted)" once replaced).

use std::{
    fs,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    process::Command,
};

use crate::cmd;

/// The file in a cluster's directory that records its server binary.
pub(crate) const RECORD: &str = "server-binary";

/// A server binary: where it is, what it says its version is, and the file's identity (a
/// replaced file is a new inode with a new modification time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerBinary {
    path: PathBuf,
    version: String,
    device: u64,
    inode: u64,
    size: u64,
    modified: (i64, i64),
}

impl ServerBinary {
    /// The binary at `path` (symbolic links resolved) as it is now.
    pub(crate) fn of(path: &Path) -> Result<Self, String> {
        let path = fs::canonicalize(path)
            .map_err(|err| format!("cannot resolve {}: {err}", path.display()))?;
        let meta =
            fs::metadata(&path).map_err(|err| format!("cannot stat {}: {err}", path.display()))?;
        let version = cmd::stdout(Command::new(&path).arg("--version"))?
            .trim()
            .to_owned();
        Ok(Self {
            path,
            version,
            device: meta.dev(),
            inode: meta.ino(),
            size: meta.size(),
            modified: (meta.mtime(), meta.mtime_nsec()),
        })
    }

    /// Writes the record into the cluster directory `base`.
    pub(crate) fn record(&self, base: &Path) -> Result<(), String> {
        let file = base.join(RECORD);
        let text = format!(
            "{}\n{}\n{} {} {} {} {}\n",
            self.path.display(),
            self.version,
            self.device,
            self.inode,
            self.size,
            self.modified.0,
            self.modified.1
        );
        fs::write(&file, text).map_err(|err| format!("cannot write {}: {err}", file.display()))
    }

    /// The record in `base`, if there is a readable one.
    pub(crate) fn recorded(base: &Path) -> Option<Self> {
        Self::parse(&fs::read_to_string(base.join(RECORD)).ok()?)
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        let path = PathBuf::from(lines.next()?);
        let version = lines.next()?.to_owned();
        let numbers: Vec<i64> = lines
            .next()?
            .split_whitespace()
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let [device, inode, size, secs, nanos] = numbers[..] else {
            return None;
        };
        Some(Self {
            path,
            version,
            device: u64::try_from(device).ok()?,
            inode: u64::try_from(inode).ok()?,
            size: u64::try_from(size).ok()?,
            modified: (secs, nanos),
        })
    }
}

/// Why the server running the cluster in `base` (postmaster `pid`) is not the installed binary
/// at `installed`, or `None` when it is, as far as can be told.
pub(crate) fn replaced(base: &Path, pid: u32, installed: &Path) -> Option<String> {
    let now = ServerBinary::of(installed).ok();
    if let (Some(then), Some(now)) = (ServerBinary::recorded(base), &now) {
        if &then != now {
            return Some(format!(
                "the server binary changed since the cluster started: it ran {} ({}), and {} \
                 ({}) is installed now",
                then.path.display(),
                then.version,
                now.path.display(),
                now.version
            ));
        }
        return None;
    }
    // No record (a cluster started by an older xtask): what the running process executes.
    let exe = fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    exe.to_string_lossy().ends_with(" (deleted)").then(|| {
        format!(
            "the running server's binary {} was replaced since it started{}",
            exe.display(),
            now.map(|now| format!(" ({} is installed now)", now.version))
                .unwrap_or_default()
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::{fs, os::unix::fs::PermissionsExt, process};

    use super::{ServerBinary, replaced};

    /// A stand-in server binary: a script that prints a version.
    fn fake_server(path: &std::path::Path, version: &str) {
        let script = format!("#!/bin/sh\necho 'postgres (PostgreSQL) {version}'\n");
        // Written beside and renamed over, as dpkg replaces a package's files.
        let new = path.with_extension("dpkg-new");
        fs::write(&new, script).unwrap();
        fs::set_permissions(&new, fs::Permissions::from_mode(0o755)).unwrap();
        fs::rename(&new, path).unwrap();
    }

    #[test]
    fn a_binary_replaced_after_the_record_is_noticed() {
        let dir = std::env::temp_dir().join(format!("xtask-server-binary-{}", process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let bin = dir.join("postgres");
        fake_server(&bin, "15.14");
        let started = ServerBinary::of(&bin).unwrap();
        assert_eq!(started.version, "postgres (PostgreSQL) 15.14");
        started.record(&dir).unwrap();
        assert_eq!(ServerBinary::recorded(&dir), Some(started));
        // pid 1 stands for a running server whose binary is in place.
        assert_eq!(replaced(&dir, 1, &bin), None);

        fake_server(&bin, "15.15");
        let why = replaced(&dir, 1, &bin).unwrap();
        assert!(
            why.contains("(postgres (PostgreSQL) 15.14)")
                && why.contains("(postgres (PostgreSQL) 15.15) is installed now"),
            "{why}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn records_are_read_back_or_refused() {
        assert_eq!(ServerBinary::parse(""), None);
        assert_eq!(ServerBinary::parse("/p\nv\n1 2 3 4\n"), None);
        let parsed = ServerBinary::parse("/p\nv\n1 2 3 4 5\n").unwrap();
        assert_eq!((parsed.inode, parsed.modified), (2, (4, 5)));
    }
}
