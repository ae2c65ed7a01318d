//! `cargo xtask bank`: a local bank for payoutd's production rails.
//!
//! The bank is an `outbound` and an `inbound` directory per rail. With `--transport sftp` (the
//! default) a real OpenSSH `sshd` on a loopback port ([`sshd`]: its own config, host key and
//! authorized client key; the running user; key authentication only; `internal-sftp`) serves
//! them; with `--transport directory` payoutd's directory transport reads and writes them
//! itself, with no sshd and no keys. A responder ([`responder`]) reads every complete file payoutd
//! puts in a rail's `outbound` directory with the project's parsers (`bank_formats`) and
//! answers in `inbound`:
//!
//! - **pain.001** (`eur-sepa`): a pain.002.001.09 with group status `ACCP`, `ACSC` for most
//!   transactions and `RJCT` (reason `AC04`, closed account) for a share of them.
//! - **NACHA** (`usd-ach`): at once, a return file (a credit's return reason: R02, R03, R04,
//!   R16, R20 or R23) for a share of the entries; then,
//!   once the entries' effective date has come and a delay has passed (after settlement), a
//!   second return file for another share of the entries that were not returned at once.
//! - **ABA** (`aud-direct-entry`), **Standard 005** (`cad-eft`) and **IB4B**
//!   (`nzd-direct-credit`): the same two rounds, with ABA return files (codes 3 or 6), Standard
//!   005 files of returned items (credit reasons 905, 910, 911, 912, 914 or 915) and IB4B
//!   dishonour files (02 or 05).
//!
//! `cad/digital` has no drop: the command also runs the Interac partner simulator
//! ([`bank_simulator::interac_partner`]) on a loopback port.
//!
//! Which entries are answered how is decided by a hash of their reference
//! ([`pick`]: exactly the share of a file's payments, rounded), so a run's numbers are
//! predictable. Every file read is copied to the rail's
//! `read` directory and every file written to its `written` directory.

mod responder;
mod sshd;

pub use responder::{Responder, Tally};
pub use sshd::Bank;

use std::{
    fs,
    net::TcpListener,
    path::{Path, PathBuf},
    thread,
    time::Duration,
};

use domain::account::PayoutMethod;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{failure::Failure, flags::Flags, paths};
use bank_simulator::interac_partner::{PartnerOptions, PartnerSimulator};

/// The default share of payments the bank rejects or returns.
pub const DEFAULT_RETURN_SHARE: f64 = 0.2;

/// The default wait after a file's effective date before its late returns are written.
pub const DEFAULT_LATE_AFTER: Duration = Duration::from_secs(20);

/// The file rails the bank serves: every payout method paid by files (`cad/digital` is the
/// partner simulator's: [`bank_simulator::interac_partner`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RailKind {
    /// `aud/direct-entry`: ABA files, answered with ABA return files.
    DirectEntry,
    /// `usd/ach`: NACHA files, answered with return files.
    Ach,
    /// `cad/eft`: Standard 005 files, answered with files of returned items.
    Eft,
    /// `eur/sepa`: pain.001 files, answered with pain.002 reports.
    Sepa,
    /// `nzd/direct-credit`: IB4B files, answered with dishonour files.
    DirectCredit,
}

impl RailKind {
    /// The bank's rail of `method`, if it is paid by files.
    pub fn of(method: PayoutMethod) -> Option<Self> {
        match method {
            PayoutMethod::DirectEntry => Some(Self::DirectEntry),
            PayoutMethod::Ach => Some(Self::Ach),
            PayoutMethod::Eft => Some(Self::Eft),
            PayoutMethod::Sepa => Some(Self::Sepa),
            PayoutMethod::DirectCredit => Some(Self::DirectCredit),
            PayoutMethod::Digital => None,
        }
    }

    /// Every file rail, in the order of [`PayoutMethod::ALL`].
    pub fn all() -> impl Iterator<Item = Self> {
        PayoutMethod::ALL
            .iter()
            .filter_map(|method| Self::of(*method))
    }

    /// The payout method.
    pub fn method(self) -> PayoutMethod {
        match self {
            Self::DirectEntry => PayoutMethod::DirectEntry,
            Self::Ach => PayoutMethod::Ach,
            Self::Eft => PayoutMethod::Eft,
            Self::Sepa => PayoutMethod::Sepa,
            Self::DirectCredit => PayoutMethod::DirectCredit,
        }
    }

    /// The rail's directory name under the bank's directory: the route with `-` for `/`
    /// (`usd-ach`).
    pub fn dir_name(self) -> String {
        self.route().replace('/', "-")
    }

    /// payoutd's route of the method.
    pub fn route(self) -> String {
        self.method().route()
    }
}

/// One rail's directories.
#[derive(Debug, Clone)]
pub struct RailDirs {
    pub kind: RailKind,
    /// Where payoutd uploads.
    pub outbound: PathBuf,
    /// Where the bank answers.
    pub inbound: PathBuf,
    /// Copies of the files the bank read.
    pub read: PathBuf,
    /// Copies of the files the bank wrote.
    pub written: PathBuf,
}

impl RailDirs {
    fn create(root: &Path, kind: RailKind) -> Result<Self, String> {
        let base = root.join(kind.dir_name());
        let dirs = Self {
            kind,
            outbound: base.join("outbound"),
            inbound: base.join("inbound"),
            read: base.join("read"),
            written: base.join("written"),
        };
        for dir in [&dirs.outbound, &dirs.inbound, &dirs.read, &dirs.written] {
            fs::create_dir_all(dir)
                .map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
        }
        Ok(dirs)
    }
}

/// `name` without its extension.
fn stem(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// The complete regular files of `dir`, sorted: no dot files, no `.part`/`.filepart`.
pub fn complete_files(dir: &Path) -> Result<Vec<String>, String> {
    let entries =
        fs::read_dir(dir).map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|err| format!("cannot list {}: {err}", dir.display()))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_file && is_complete_name(&name) {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Whether a file of this name is finished (uploads go to a dot name or `.part` first).
pub fn is_complete_name(name: &str) -> bool {
    !name.starts_with('.') && !name.ends_with(".part") && !name.ends_with(".filepart")
}

pub fn copy_into(dir: &Path, name: &str, bytes: &[u8]) -> Result<(), String> {
    let path = dir.join(name);
    fs::write(&path, bytes).map_err(|err| format!("cannot write {}: {err}", path.display()))
}

/// A fresh shared secret for the partner simulator (64 hex digits).
pub fn fresh_secret() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    hex::encode(Sha256::digest(
        format!("bank:{nanos}:{}", std::process::id()).as_bytes(),
    ))
}

/// A free port on 127.0.0.1 (free when asked; another process can take it before us).
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .map_err(|err| format!("cannot find a free port: {err}"))
}

/// Parses a share between 0 and 1.
pub fn parse_share(raw: &str) -> Result<f64, String> {
    match raw.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!(
            "--return-share must be a number from 0 to 1, got {raw:?}"
        )),
    }
}

/// How payoutd reaches the bank's rail directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// sshd serves them over SFTP (payoutd's `kind = "sftp"`).
    Sftp,
    /// payoutd writes and reads them itself (`kind = "directory"`): no sshd, no keys.
    Directory,
}

impl Transport {
    /// Every transport, the default first.
    pub const ALL: [Self; 2] = [Self::Sftp, Self::Directory];

    /// Its name: the `--transport` value and payoutd's transport `kind`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sftp => "sftp",
            Self::Directory => "directory",
        }
    }

    /// The transport named `raw`.
    pub fn parse(raw: &str) -> Result<Self, Failure> {
        Self::ALL
            .into_iter()
            .find(|transport| transport.name() == raw)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|t| t.name()).collect();
                Failure::new(
                    format!("--transport {}", names.join(" or ")),
                    format!("--transport {raw:?}"),
                )
            })
    }
}

/// `dir` emptied (created if missing), as an absolute path.
fn fresh_dir(dir: &Path) -> Result<PathBuf, String> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|err| format!("cannot empty {}: {err}", dir.display()))?;
    }
    fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    fs::canonicalize(dir).map_err(|err| format!("{}: {err}", dir.display()))
}

/// Every file rail's directories under `dir`.
fn create_rails(dir: &Path) -> Result<Vec<RailDirs>, String> {
    RailKind::all()
        .map(|kind| RailDirs::create(dir, kind))
        .collect()
}

/// Each rail's route with the directories payoutd's transport uses: `{"usd/ach":
/// {"outbound_dir": …, "inbound_dir": …}, …}`.
fn rails_json(rails: &[RailDirs]) -> serde_json::Value {
    let rails: serde_json::Map<String, serde_json::Value> = rails
        .iter()
        .map(|r| {
            (
                r.kind.route(),
                json!({"outbound_dir": r.outbound, "inbound_dir": r.inbound}),
            )
        })
        .collect();
    serde_json::Value::Object(rails)
}

/// What payoutd needs to reach a bank served as plain directories, as JSON.
fn describe_directory(dir: &Path, rails: &[RailDirs]) -> serde_json::Value {
    json!({
        "transport": Transport::Directory.name(),
        "rails": rails_json(rails),
        "dir": dir,
    })
}

/// The flags of `cargo xtask bank`.
#[derive(Debug, PartialEq)]
struct Options {
    dir: PathBuf,
    transport: Transport,
    share: f64,
    port: Option<u16>,
    late_after: Duration,
    callback_url: Option<String>,
    secret: Option<String>,
}

impl Options {
    fn parse(args: Vec<String>) -> Result<Self, Failure> {
        let mut flags = Flags::new(args);
        let dir = flags
            .value("--dir")?
            .map_or_else(|| paths::target_dir().join("bank"), PathBuf::from);
        let transport = flags
            .value("--transport")?
            .map_or(Ok(Transport::Sftp), |raw| Transport::parse(&raw))?;
        let share = flags
            .value("--return-share")?
            .map_or(Ok(DEFAULT_RETURN_SHARE), |raw| parse_share(&raw))?;
        let port = flags
            .value("--port")?
            .map(|raw| {
                raw.parse::<u16>()
                    .map_err(|_| format!("--port: not a port: {raw:?}"))
            })
            .transpose()?;
        if port.is_some() && transport == Transport::Directory {
            return Err(Failure::new(
                "--port only with --transport sftp",
                "--port with --transport directory",
            ));
        }
        let late_after = flags
            .value("--late-after-secs")?
            .map(|raw| {
                raw.parse::<u64>()
                    .map_err(|_| format!("--late-after-secs: not a number: {raw:?}"))
            })
            .transpose()?
            .map_or(DEFAULT_LATE_AFTER, Duration::from_secs);
        let callback_url = flags.value("--interac-callback")?;
        let secret = match flags.value("--interac-secret")? {
            Some(secret) if secret.trim().is_empty() => {
                return Err(Failure::new("a non-empty --interac-secret", "an empty one"));
            }
            secret => secret,
        };
        flags.finish()?;
        Ok(Self {
            dir,
            transport,
            share,
            port,
            late_after,
            callback_url,
            secret,
        })
    }
}

/// `cargo xtask bank [--dir D] [--transport sftp|directory] [--return-share S] [--port P]
/// [--late-after-secs N] [--interac-callback URL] [--interac-secret S]`: runs until killed.
pub fn run(args: Vec<String>) -> Result<(), Failure> {
    let options = Options::parse(args)?;
    let secret = options.secret.clone().unwrap_or_else(fresh_secret);
    // sshd runs as long as `_sftp` lives.
    let (mut described, rails, served, _sftp) = match options.transport {
        Transport::Sftp => {
            let bank = Bank::start(&options.dir, options.port)?;
            let served = format!("SFTP on 127.0.0.1:{}", bank.port);
            (bank.describe(), bank.rails.clone(), served, Some(bank))
        }
        Transport::Directory => {
            let dir = fresh_dir(&options.dir)?;
            let rails = create_rails(&dir)?;
            let served = format!("directories under {}", dir.display());
            (describe_directory(&dir, &rails), rails, served, None)
        }
    };
    let partner = PartnerSimulator::start(PartnerOptions {
        callback_url: options.callback_url.clone(),
        clock: crate::clock::now,
        ..PartnerOptions::new(secret.clone())
    })?;
    described["interac_partner"] = json!({
        "base_url": partner.base_url(),
        "shared_secret": secret,
    });
    println!("{described}");
    eprintln!(
        "bank: {served}, the Interac partner at {}; Ctrl-C stops them",
        partner.base_url()
    );
    let mut responder = Responder::new(rails, options.share, options.late_after);
    loop {
        responder.poll()?;
        thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_method_but_cad_digital_is_a_file_rail_of_the_bank() {
        for &method in PayoutMethod::ALL {
            match RailKind::of(method) {
                Some(kind) => {
                    assert_eq!(kind.method(), method);
                    assert_eq!(kind.dir_name(), method.route().replace('/', "-"));
                }
                None => assert_eq!(method, PayoutMethod::Digital),
            }
        }
        assert_eq!(RailKind::all().count(), PayoutMethod::ALL.len() - 1);
    }

    #[test]
    fn shares_are_checked() {
        assert_eq!(parse_share("0.2"), Ok(0.2));
        assert_eq!(parse_share("1"), Ok(1.0));
        assert!(parse_share("1.5").is_err());
        assert!(parse_share("-0.1").is_err());
        assert!(parse_share("x").is_err());
    }

    #[test]
    fn incomplete_names_are_skipped() {
        assert!(is_complete_name("ACME-1-usd-ach.ach"));
        assert!(!is_complete_name(".ACME-1-usd-ach.ach.part"));
        assert!(!is_complete_name("x.part"));
        assert!(!is_complete_name("x.filepart"));
        assert_eq!(stem("a.b.xml"), "a.b");
        assert_eq!(stem("plain"), "plain");
    }

    fn options(args: &[&str]) -> Result<Options, Failure> {
        Options::parse(args.iter().map(|arg| (*arg).to_owned()).collect())
    }

    #[test]
    fn the_transport_is_sftp_unless_directory_is_asked_for() {
        let default = options(&[]).unwrap();
        assert_eq!(default.transport, Transport::Sftp);
        assert_eq!(default.share, DEFAULT_RETURN_SHARE);
        let directory = options(&[
            "--transport",
            "directory",
            "--return-share",
            "1",
            "--dir",
            "/b",
        ])
        .unwrap();
        assert_eq!(directory.transport, Transport::Directory);
        assert_eq!(directory.share, 1.0);
        assert_eq!(directory.dir, PathBuf::from("/b"));
        assert_eq!(
            options(&["--transport=sftp", "--port", "2222"]).unwrap(),
            Options {
                transport: Transport::Sftp,
                port: Some(2222),
                ..default
            }
        );
        for transport in Transport::ALL {
            assert_eq!(Transport::parse(transport.name()), Ok(transport));
        }
    }

    #[test]
    fn another_transport_is_refused_in_one_line() {
        let failure = options(&["--transport", "ftp"]).err().unwrap();
        assert_eq!(
            failure.last_line("bank", "goal"),
            "xtask bank: expected --transport sftp or directory; saw --transport \"ftp\""
        );
        let failure = options(&["--transport", "directory", "--port", "2222"])
            .err()
            .unwrap();
        assert_eq!(
            failure.last_line("bank", "goal"),
            "xtask bank: expected --port only with --transport sftp; saw --port with --transport \
             directory"
        );
        assert!(options(&["--transport"]).is_err());
        assert!(options(&["--interac-secret", " "]).is_err());
    }

    #[test]
    fn a_directory_bank_describes_the_directories_of_payoutds_directory_transport() {
        let root =
            std::env::temp_dir().join(format!("xtask-bank-directory-{}", std::process::id()));
        fs::create_dir_all(root.join("stale")).unwrap();
        let dir = fresh_dir(&root).unwrap();
        assert!(!dir.join("stale").exists(), "the directory is emptied");
        let rails = create_rails(&dir).unwrap();
        let described = describe_directory(&dir, &rails);
        assert_eq!(described["transport"], "directory");
        assert_eq!(described["dir"], json!(dir));
        let described_rails = described["rails"].as_object().unwrap();
        assert_eq!(described_rails.len(), RailKind::all().count());
        for kind in RailKind::all() {
            let rail = &described_rails[&kind.route()];
            for (key, leaf) in [("outbound_dir", "outbound"), ("inbound_dir", "inbound")] {
                let path = PathBuf::from(rail[key].as_str().unwrap());
                assert_eq!(path, dir.join(kind.dir_name()).join(leaf));
                assert!(path.is_dir(), "{}", path.display());
            }
        }
        // No sshd, no keys.
        assert!(!dir.join("ssh").exists());
        assert!(described.get("host").is_none());
        let _ = fs::remove_dir_all(&root);
    }
}
