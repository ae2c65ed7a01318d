//! The client generators app-actix's tests run on `docs/openapi.json` (tests/api/
//! openapi_clients.rs): openapi-python-client from PyPI into a venv, and openapi-typescript,
//! TypeScript and newman from npm, each pinned in `xtask/openapi-clients/` and installed under
//! `<target dir>/openapi-clients` when what is pinned changed since the last install (as
//! `cargo xtask fuzz` installs schemathesis). The tests find them through
//! [`PYTHON_CLIENT_VENV_VAR`] and [`NODE_BIN_VAR`].

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{cmd, paths, tools};

/// The venv holding openapi-python-client (its `bin/python` also runs the generated client:
/// httpx, attrs and python-dateutil are installed with it).
pub const PYTHON_CLIENT_VENV_VAR: &str = "PAYOUT_OPENAPI_PYTHON_VENV";
/// The `node_modules/.bin` holding `openapi-typescript`, `tsc` and `newman`.
pub const NODE_BIN_VAR: &str = "PAYOUT_OPENAPI_NODE_BIN";

/// Where the tools are installed.
pub struct ClientTools {
    venv: PathBuf,
    node_bin: PathBuf,
}

impl ClientTools {
    /// Installs what is missing or out of date, or says what to install by hand.
    ///
    /// # Errors
    /// When `python3` (with its venv module) or `npm` is missing, or an install fails.
    pub fn provision() -> Result<Self, String> {
        let pinned = paths::workspace_root()
            .join("xtask")
            .join("openapi-clients");
        let dir = paths::target_dir().join("openapi-clients");
        fs::create_dir_all(&dir)
            .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        Ok(Self {
            venv: python_venv(&pinned, &dir)?,
            node_bin: node_tools(&pinned, &dir)?,
        })
    }

    /// Passes the tools' places to the tests.
    pub fn apply(&self, cargo: &mut Command) {
        cargo
            .env(PYTHON_CLIENT_VENV_VAR, &self.venv)
            .env(NODE_BIN_VAR, &self.node_bin);
    }
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|err| format!("cannot read {}: {err}", path.display()))
}

/// Whether `stamp` records exactly `wanted` (what the last successful install installed).
fn up_to_date(stamp: &Path, wanted: &str) -> bool {
    fs::read_to_string(stamp).is_ok_and(|installed| installed == wanted)
}

fn write_stamp(stamp: &Path, wanted: &str) -> Result<(), String> {
    fs::write(stamp, wanted).map_err(|err| format!("cannot write {}: {err}", stamp.display()))
}

/// `<dir>/venv` with `requirements.txt` installed.
fn python_venv(pinned: &Path, dir: &Path) -> Result<PathBuf, String> {
    let venv = dir.join("venv");
    let generator = venv.join("bin").join("openapi-python-client");
    tools::pinned_venv(
        &pinned.join("requirements.txt"),
        &venv,
        &generator,
        "openapi-python-client",
    )?;
    Ok(venv)
}

/// `<dir>/node/node_modules/.bin` with `package.json` installed as `package-lock.json` pins it
/// (`npm ci`).
fn node_tools(pinned: &Path, dir: &Path) -> Result<PathBuf, String> {
    let manifest = read(&pinned.join("package.json"))?;
    let lock = read(&pinned.join("package-lock.json"))?;
    let wanted = format!("{manifest}\n{lock}");
    let prefix = dir.join("node");
    let bin = prefix.join("node_modules").join(".bin");
    let stamp = prefix.join("installed-packages.txt");
    if up_to_date(&stamp, &wanted)
        && ["openapi-typescript", "tsc", "newman"]
            .iter()
            .all(|tool| bin.join(tool).is_file())
    {
        return Ok(bin);
    }
    eprintln!(
        "xtask: installing openapi-typescript, typescript and newman into {} (from npm)",
        prefix.display()
    );
    let npm = cmd::find_on_path("npm").ok_or(
        "npm is not on PATH; install Node.js 18 or newer with npm (Debian: nodejs and npm)",
    )?;
    fs::create_dir_all(&prefix)
        .map_err(|err| format!("cannot create {}: {err}", prefix.display()))?;
    for (name, text) in [("package.json", &manifest), ("package-lock.json", &lock)] {
        let path = prefix.join(name);
        fs::write(&path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    cmd::run(
        Command::new(npm)
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix),
    )?;
    write_stamp(&stamp, &wanted)?;
    Ok(bin)
}
