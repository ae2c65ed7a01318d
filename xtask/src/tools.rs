//! Command-line tools the tests need, installed from Debian's packages when missing, and
//! Python tools pinned in a requirements file, installed from PyPI into a venv under the
//! target dir ([`pinned_venv`]: schemathesis, openapi-python-client).
//!
//! [`ensure_debian_tool`] finds a binary, and when it is missing and we are root, installs the
//! package that ships it with `apt-get` (no recommends, non-interactive). Anyone else gets an
//! error naming the package to install.
//!
//! Installing a package that ships a service (openssh-server ships sshd) must not leave a system
//! daemon running. Debian's maintainer scripts start services through `invoke-rc.d`, which asks
//! `/usr/sbin/policy-rc.d` first: while we install, that file (when it does not exist already)
//! is one that answers 101, "action forbidden", so nothing is started; it is removed afterwards.
//! An existing `policy-rc.d` is the administrator's and is left alone; if something starts
//! listening on port 22 during the install anyway, it is reported.

use std::{
    fs,
    io::ErrorKind,
    net::{SocketAddr, TcpStream},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use crate::cmd;

/// Where `invoke-rc.d` looks for the local policy on starting services.
const POLICY_RC_D: &str = "/usr/sbin/policy-rc.d";

/// The policy written for the length of an install: refuse every action (exit 101).
const DENY_ALL_POLICY: &str = "#!/bin/sh\n\
# Written by `cargo xtask` while it installs test tools, removed afterwards:\n\
# packages must not start system services (exit 101: action forbidden).\n\
exit 101\n";

/// Finds `binary` (an absolute path, or a name looked up on `PATH`, then in `/usr/sbin` and
/// `/sbin`), installing the Debian package `package` if it is missing and we are root.
///
/// # Errors
/// When the binary is missing and cannot be installed here (not root, no `apt-get`, the
/// install failed, or the package did not provide it); the message names the package.
pub fn ensure_debian_tool(binary: &str, package: &str) -> Result<PathBuf, String> {
    if let Some(found) = find(binary) {
        return Ok(found);
    }
    let missing = format!("`{binary}` is missing: it comes with the Debian package `{package}`");
    if !is_root()? {
        return Err(format!(
            "{missing}; install it (`sudo apt-get install {package}`) or run `cargo xtask` as root, \
             which installs it"
        ));
    }
    let Some(apt_get) = find("apt-get") else {
        return Err(format!(
            "{missing}, and there is no `apt-get` to install it with; install it by hand"
        ));
    };
    eprintln!("xtask: `{binary}` is missing; installing the Debian package `{package}`");
    install(&apt_get, package).map_err(|err| format!("{missing}; installing it failed: {err}"))?;
    find(binary).ok_or_else(|| {
        format!("installed the Debian package `{package}`, but `{binary}` is still missing")
    })
}

/// A `python3` that can import `module` (the first of `PAYOUT_PYTHON3`, `python3` on `PATH`
/// and Debian's `/usr/bin/python3`), installing the Debian package `package` (which installs
/// for `/usr/bin/python3`) if none can and we are root.
///
/// # Errors
/// When no Python imports the module and it cannot be installed here; the message names the
/// package.
pub fn ensure_debian_python_module(module: &str, package: &str) -> Result<PathBuf, String> {
    let imports = |python: &Path| {
        Command::new(python)
            .args(["-c", &format!("import {module}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    let candidates = || {
        std::env::var_os("PAYOUT_PYTHON3")
            .map(PathBuf::from)
            .into_iter()
            .chain(find("python3"))
            .chain(Some(PathBuf::from("/usr/bin/python3")))
    };
    if let Some(found) = candidates().find(|python| imports(python)) {
        return Ok(found);
    }
    let missing =
        format!("no python3 imports `{module}`: it comes with the Debian package `{package}`");
    if !is_root()? {
        return Err(format!(
            "{missing}; install it (`sudo apt-get install {package}`) or run `cargo xtask` as root, \
             which installs it"
        ));
    }
    let Some(apt_get) = find("apt-get") else {
        return Err(format!(
            "{missing}, and there is no `apt-get` to install it with; install it by hand"
        ));
    };
    eprintln!("xtask: no python3 imports `{module}`; installing the Debian package `{package}`");
    install(&apt_get, package).map_err(|err| format!("{missing}; installing it failed: {err}"))?;
    candidates().find(|python| imports(python)).ok_or_else(|| {
        format!("installed the Debian package `{package}`, but no python3 imports `{module}`")
    })
}

/// A venv at `venv` with the pinned `requirements` installed from PyPI (`what` names it in the
/// progress line). It is made again only when `requirements` changed since the last install
/// (a copy is kept in the venv) or `program` (a path in the venv) is missing.
///
/// # Errors
/// When `python3` or its venv module is missing, or the install fails.
pub fn pinned_venv(
    requirements: &Path,
    venv: &Path,
    program: &Path,
    what: &str,
) -> Result<(), String> {
    let wanted = fs::read_to_string(requirements)
        .map_err(|err| format!("cannot read {}: {err}", requirements.display()))?;
    let stamp = venv.join("installed-requirements.txt");
    if fs::read_to_string(&stamp).is_ok_and(|installed| installed == wanted) && program.is_file() {
        return Ok(());
    }
    eprintln!(
        "xtask: installing {what} into {} (from PyPI)",
        venv.display()
    );
    let python = cmd::find_on_path("python3").ok_or(
        "python3 is not on PATH; install Python 3 with its venv module (Debian: python3-venv)",
    )?;
    cmd::run(
        Command::new(python)
            .args(["-m", "venv", "--clear"])
            .arg(venv),
    )?;
    cmd::run(
        Command::new(venv.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(requirements),
    )?;
    fs::write(&stamp, wanted).map_err(|err| format!("cannot write {}: {err}", stamp.display()))
}

/// The executable `binary`: itself when it is a path, else the first on `PATH`, `/usr/sbin` or
/// `/sbin` (root's tools are not on every user's `PATH`).
fn find(binary: &str) -> Option<PathBuf> {
    if binary.contains('/') {
        let path = PathBuf::from(binary);
        return cmd::is_executable(&path).then_some(path);
    }
    cmd::find_on_path(binary).or_else(|| {
        ["/usr/sbin", "/sbin"]
            .iter()
            .map(|dir| Path::new(dir).join(binary))
            .find(|path| cmd::is_executable(path))
    })
}

/// A file a Debian package ships (a library rather than a program): the first of `paths`
/// that exists, else `package` installed (when root) and looked for again.
pub fn ensure_debian_file(paths: &[&str], package: &str) -> Result<PathBuf, String> {
    let found = || paths.iter().map(PathBuf::from).find(|path| path.is_file());
    if let Some(path) = found() {
        return Ok(path);
    }
    let missing = format!(
        "{} is missing: it comes with the Debian package `{package}`",
        paths.join(" or ")
    );
    if !is_root()? {
        return Err(format!(
            "{missing}; install it (`sudo apt-get install {package}`) or run `cargo xtask` as root, \
             which installs it"
        ));
    }
    let Some(apt_get) = find("apt-get") else {
        return Err(format!(
            "{missing}, and apt-get is not available to install it"
        ));
    };
    eprintln!("xtask: installing `{package}` (apt-get)");
    install(&apt_get, package)?;
    found().ok_or_else(|| format!("{missing}, and installing it did not provide it"))
}

fn is_root() -> Result<bool, String> {
    Ok(cmd::stdout(Command::new("id").arg("-u"))?.trim() == "0")
}

/// `apt-get install` of `package`, with services kept from starting; runs `apt-get update`
/// and tries again once if the first attempt fails (a fresh machine has no package lists).
fn install(apt_get: &Path, package: &str) -> Result<(), String> {
    let _policy = DenyServiceStarts::install()?;
    let ssh_was_listening = listening_on_22();
    let apt = |args: &[&str]| {
        let mut command = Command::new(apt_get);
        // Wait for another apt or dpkg run (another install, say) instead of failing at once.
        command
            .args(["-o", "DPkg::Lock::Timeout=300"])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .env("NEEDRESTART_MODE", "l");
        command
    };
    let install_args = ["install", "-y", "--no-install-recommends", package];
    if cmd::run(&mut apt(&install_args)).is_err() {
        eprintln!("xtask: retrying after `apt-get update`");
        cmd::run(&mut apt(&["update"]))?;
        cmd::run(&mut apt(&install_args))?;
    }
    if !ssh_was_listening && listening_on_22() {
        eprintln!(
            "xtask: warning: something started listening on port 22 while `{package}` was \
             installed (the existing {POLICY_RC_D} allowed a service to start); stop it with \
             `service ssh stop` if you do not want a system sshd"
        );
    }
    Ok(())
}

/// Whether a server accepts connections on 127.0.0.1:22.
fn listening_on_22() -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], 22));
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_ok()
}

/// A `policy-rc.d` that forbids starting services, removed on drop; nothing when one exists.
struct DenyServiceStarts {
    written: Option<PathBuf>,
}

impl DenyServiceStarts {
    fn install() -> Result<Self, String> {
        let path = PathBuf::from(POLICY_RC_D);
        if fs::symlink_metadata(&path).is_ok() {
            return Ok(Self { written: None });
        }
        let write = || -> std::io::Result<()> {
            fs::write(&path, DENY_ALL_POLICY)?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755))
        };
        write().map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        Ok(Self {
            written: Some(path),
        })
    }
}

impl Drop for DenyServiceStarts {
    fn drop(&mut self) {
        if let Some(path) = self.written.take()
            && let Err(err) = fs::remove_file(&path)
            && err.kind() != ErrorKind::NotFound
        {
            eprintln!("xtask: warning: cannot remove {}: {err}", path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{DENY_ALL_POLICY, find};

    #[test]
    fn finds_tools_by_path_and_by_name() {
        assert_eq!(
            find("/bin/sh").as_deref(),
            Some(std::path::Path::new("/bin/sh"))
        );
        assert!(find("sh").is_some());
        assert!(find("/nonexistent/payoutd-no-such-tool").is_none());
        assert!(find("payoutd-no-such-tool").is_none());
    }

    #[test]
    fn the_policy_forbids_every_action() {
        assert!(DENY_ALL_POLICY.starts_with("#!/bin/sh\n"));
        assert!(DENY_ALL_POLICY.trim_end().ends_with("exit 101"));
    }
}
