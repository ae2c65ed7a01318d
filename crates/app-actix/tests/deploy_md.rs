//! docs/DEPLOY.md, executed: every `sh` block of the guide, in document order, in one bash
//! shell (`set -eEo pipefail`, with an `ERR` trap naming the failing command), as a deployer would type them on a fresh host, in a scratch root
//! under this test's target directory. What each block prints on stdout must be the `text`
//! block right after it (only blank lines between; `…` stands for anything within a line); a
//! block without one must print nothing. A `text` block after prose is an illustration, not an
//! output. A failing block fails the test with its line in DEPLOY.md, the command that failed,
//! and the end of its output and of payoutd's journal.
//!
//! # The host
//!
//! The host paths the guide uses (`/etc/…`, `/var/lib/…`, `/usr/local/bin/…`, and the
//! placeholder `/path/to/…`) are the same paths under `<scratch>/root` (the text of each block
//! is rewritten before it runs; the unit file is rewritten as systemd reads it). The shell runs
//! in `<scratch>/checkout`, a stand-in for the checkout: `docs/` is this checkout's, `target/`
//! is the scratch's own. Nothing outside the scratch directory and the test's target directory
//! is written, nothing is installed, no user or group is created on the machine. The commands
//! that would change the machine are shims first on `PATH`:
//!
//! | command | what the shim does instead |
//! |---|---|
//! | `sudo [-u USER] CMD…` | runs `CMD` as the test's user with sudo's reset environment (`PATH` kept); `-u postgres` connects it to the private cluster as its superuser (`PGHOST`, `PGPORT`, `PGUSER`); another user is refused |
//! | `useradd` | records the user and its group in `<root>/etc/passwd` and `<root>/etc/group` (known options only) |
//! | `install` | the real `install` without `-o`/`-g`, whose user and group must have been recorded by `useradd` (or be `root`); a path outside the scratch root is refused |
//! | `chown`, `chgrp` | check that the owner exists and the paths are inside the scratch root; change nothing |
//! | `systemctl` | the test's systemd ([`unit`]): `daemon-reload` loads the installed unit, `start`, `stop`, `restart`, `enable [--now]` (the `WantedBy=` links, then start), `is-active`; other verbs and units are refused |
//! | `journalctl -u payoutd [-n N] [-o cat]` | what the unit's commands printed, line by line, with the test's systemd's own lines |
//! | `cargo build --release --locked -p app-actix --bin payoutd` | copies the `payoutd` this test was built with (`CARGO_BIN_EXE_payoutd`, a debug build) to `target/release/payoutd`, where the build would put it: a release build takes minutes on 2 cores. Only that exact command line is accepted, so a changed build command in the guide fails the test |
//! | `cargo xtask …` | this checkout's built xtask (`target/debug/xtask`) |
//! | `curl` | the real curl with `--connect-to payouts.example.com:443:127.0.0.1:<port>` and `--cacert` the test's certificate ([`PLACEHOLDERS`]) |
//! | `python3` | a python3 with aiosmtpd (`PAYOUT_PYTHON3`, which `cargo xtask test` sets) |
//! | `groupadd`, `usermod`, `apt-get`, `dpkg`, `mount`, … ([`host::REFUSED`]) | refused: the guide does not use them, and a block that starts to must get a shim first |
//!
//! # The unit, run as systemd would
//!
//! `systemctl start payoutd` reads `/etc/systemd/system/payoutd.service` as installed (the guide
//! copies `docs/examples/payoutd.service` there), with its paths moved under the root, and runs
//! it: a clean environment with systemd's `PATH`, then `Environment=`, `EnvironmentFile=`
//! (systemd's format; a line of another shape is an error here, where systemd would only warn),
//! `LoadCredential=NAME:PATH` (each file copied to `<root>/run/credentials/payoutd.service`,
//! mode 0400, the directory 0500, as `CREDENTIALS_DIRECTORY`; a listed credential whose file is
//! missing fails the start), `StateDirectory=` (+`StateDirectoryMode=`, as
//! `STATE_DIRECTORY`), `WorkingDirectory=` (`/` without it), `UMask=`, then each
//! `ExecStartPre=` (a failure fails the start, `-` excepted), then `ExecStart=` in the
//! background, its output kept for `journalctl`. As systemd, a start uses the unit as of the
//! last `daemon-reload` (or its first load) and warns when the file changed since; such a
//! warning fails the test at that block (the guide must not leave a deployer running the old
//! unit, as a forgotten `daemon-reload` would). `stop` sends
//! `KillSignal=` and waits `TimeoutStopSec=` (at most 60 s). After the last block the test stops
//! the unit with SIGTERM and requires exit code 0; a unit still running when the test fails is
//! stopped the same way (SIGKILL after the stop timeout). A unit's main process that dies
//! between blocks fails the test at that block.
//!
//! What it cannot honour: `User=`/`Group=` (the commands run as the test's user: root-owned
//! users cannot be created here; so "the service user cannot read /etc/payoutd/credentials" is
//! not tested, only that payoutd reads every secret from `$CREDENTIALS_DIRECTORY`), the
//! sandboxing (`ProtectSystem=`, `PrivateTmp=`, `CapabilityBoundingSet=`, the system call
//! filter…, checked by `systemd-analyze verify` in tests/deploy.rs where systemd is installed),
//! `Restart=` (a crash fails the test instead), `Type=` other than `exec`/`simple`, and
//! `$VARIABLE` or `%` specifiers in command lines (refused, so a unit that starts using them
//! fails here first).
//!
//! # The database
//!
//! A private PostgreSQL cluster ([`cluster`]: the installed server binaries, as `cargo xtask
//! db` finds them) in the scratch directory, on a free loopback port, stopped when the test
//! ends however it ends. The guide's roles are cluster-wide, so they are never made on the
//! shared server of `DATABASE_URL`. Connections over TCP need the roles' passwords (SCRAM),
//! except for `postgres`, which the smoke test's example URL uses without one.
//!
//! # Placeholders and what the test provides
//!
//! A real host has some things before the guide starts; [`PLACEHOLDERS`] lists each, with what
//! the test puts in its place. Every one must still occur in the guide.
//!
//! # Where the runner steps in
//!
//! - The scratch root starts with the directories every host has (`/etc/systemd/system`,
//!   `/var/lib`, `/usr/local/bin`, `/run`) and the placeholders of [`PLACEHOLDERS`]; the host
//!   name, the database host and the ports are rewritten in each block's text as listed there.
//! - After the block that installs the production file (`docs/examples/payoutd.toml`), the
//!   test makes the edit a deployer makes with their banks' details: every SFTP host, the
//!   Interac partner's URL and the SMTP server point at 127.0.0.1 on a closed port (the example's
//!   hosts are not reachable, and a test talks to loopback only). payoutd polls the rails from
//!   its start, so those connections are refused and logged, as for a bank that is down.
//! - The guide's non-shell blocks are not run: the `nginx` server block (no nginx here; the
//!   reverse proxy set-up is the deployer's), the `sql` example of a contracting migration (what
//!   a migration file looks like, not a command; tests/deploy.rs enforces the rule it shows on
//!   the real migrations), and the `text` illustration of a refused secret file (tests/check_config.rs
//!   checks that message). The environment file is a heredoc of an `sh` block, so it is run;
//!   tests/deploy.rs checks that its variables are payoutd's and hold no secret.
//! - "Backups" runs its restore test of a logical dump; continuous archiving (OPERATIONS.md),
//!   which needs a WAL archive and a second server, is described there, not run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/deploy_md/cluster.rs"]
mod cluster;
#[path = "support/deploy_md/host.rs"]
mod host;
#[path = "support/deploy_md/markdown.rs"]
mod markdown;
#[path = "support/deploy_md/unit.rs"]
mod unit;

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use markdown::{Step, output_matches, replace_number, rewrite_paths};

/// What a real host has before the guide starts, and what the test provides instead.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    (
        "/etc/letsencrypt/live/payouts.example.com/fullchain.pem",
        "a self-signed certificate for payouts.example.com made with rcgen, at that path under the root",
    ),
    (
        "/etc/letsencrypt/live/payouts.example.com/privkey.pem",
        "its private key (PKCS#8 PEM, mode 0600), at that path under the root",
    ),
    (
        "/path/to/${bank}_ed25519",
        "an ed25519 key from `ssh-keygen` for each bank (ach, sepa, aba, eft, ib4b), under the root",
    ),
    (
        "SMTP PASSWORD",
        "kept as written: nothing outside the smoke test sends mail",
    ),
    (
        "INTERAC SHARED SECRET",
        "kept as written: the partner's URL is made a closed loopback port",
    ),
    (
        "payouts.example.com",
        "curl's --connect-to to payoutd's TLS listener, trusting the certificate above",
    ),
    (
        "0.0.0.0:8443",
        "127.0.0.1 on a free port (the test listens on loopback only)",
    ),
    (
        "db.internal:5432",
        "the private cluster, 127.0.0.1 on a free port",
    ),
    (
        "127.0.0.1:5432",
        "the private cluster, 127.0.0.1 on a free port",
    ),
    ("8080", "a free port (the smoke test's plain HTTP payoutd)"),
    ("2525", "a free port (the smoke test's mail catcher)"),
];

/// How long the whole guide may take (it takes well under a minute).
const DEADLINE: Duration = Duration::from_secs(240);

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap()
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

/// A `python3` that has `aiosmtpd` (the smoke test's mail catcher): `PAYOUT_PYTHON3` (which
/// `cargo xtask test` sets), Debian's, or the one on `PATH`.
fn python_with_aiosmtpd() -> Option<PathBuf> {
    std::env::var_os("PAYOUT_PYTHON3")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            ["/usr/bin/python3", "python3"]
                .into_iter()
                .map(PathBuf::from),
        )
        .find(|python| {
            Command::new(python)
                .args(["-c", "import aiosmtpd"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
}

/// The ports and the scratch root the guide's text is moved to.
struct Rewrites {
    root: String,
    pg: u16,
    https: u16,
    http: u16,
    smtp: u16,
}

impl Rewrites {
    /// A block's text as it runs on the scratch host ([`PLACEHOLDERS`]).
    fn apply(&self, text: &str) -> String {
        let text = rewrite_paths(text, &self.root)
            .replace("db.internal:5432", &format!("127.0.0.1:{}", self.pg))
            .replace("127.0.0.1:5432", &format!("127.0.0.1:{}", self.pg))
            .replace("0.0.0.0:8443", &format!("127.0.0.1:{}", self.https));
        let text = replace_number(&text, "8080", &self.http.to_string());
        replace_number(&text, "2525", &self.smtp.to_string())
    }
}

/// The deployer's edit of the installed production file: every endpoint at 127.0.0.1 on the
/// closed port `closed`.
fn point_endpoints_at_loopback(toml: &str, closed: u16) -> String {
    let mut out = String::new();
    for line in toml.lines() {
        let key = line.split('=').next().unwrap_or_default().trim();
        match key {
            "host" => {
                out.push_str(&format!("host = \"127.0.0.1\"\nport = {closed}\n"));
            }
            "port" => {}
            "base_url" => out.push_str(&format!("base_url = \"http://127.0.0.1:{closed}/api\"\n")),
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The marker printed after each block, on stdout and stderr, so that the output can be split
/// by block.
fn marker(index: usize) -> String {
    format!("@@@ end of block {index} @@@")
}

/// The script the shell runs: the blocks, rewritten, each followed by the step that tells the
/// test it finished and its markers; and, for each block, the script line it starts at.
fn script(steps: &[Step], rewrites: &Rewrites) -> (String, Vec<usize>) {
    let mut script = String::from(
        "set -eEo pipefail\n\
         trap 'printf \"@@@ failed at line %s: %s\\n\" \"$LINENO\" \"$BASH_COMMAND\" >&2' ERR\n",
    );
    let mut starts = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        starts.push(script.lines().count() + 1);
        script.push_str(&rewrites.apply(&step.script));
        script.push_str(&format!(
            "deploy-md-step {index}\nprintf '\\n%s\\n' '{m}'; printf '\\n%s\\n' '{m}' >&2\n",
            m = marker(index)
        ));
    }
    (script, starts)
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `text` split at the markers: what each block printed (the last one: what the failing block
/// printed before the shell stopped).
fn split_by_block(text: &str, blocks: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = text;
    for index in 0..blocks {
        match rest.split_once(&format!("\n{}\n", marker(index))) {
            Some((before, after)) => {
                parts.push(before.to_owned());
                rest = after;
            }
            None => break,
        }
    }
    parts.push(rest.to_owned());
    parts
}

/// Kills the shell's process group (what the blocks started in the background), however the
/// test ends.
struct KillGroup(u32);

impl Drop for KillGroup {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.0)])
            .stderr(Stdio::null())
            .status();
    }
}

/// Stops the unit's payoutd as `systemctl stop` does (SIGTERM, then SIGKILL after the unit's
/// stop timeout) when the test fails before its end.
struct StopService(Arc<Mutex<host::Control>>);

impl Drop for StopService {
    fn drop(&mut self) {
        let mut control = match self.0.lock() {
            Ok(control) => control,
            Err(poisoned) => poisoned.into_inner(),
        };
        let _ = control.service.stop();
    }
}

/// What the test provides for [`PLACEHOLDERS`] under `root`; the certificate, for curl.
fn provide_placeholders(root: &Path) -> PathBuf {
    let live = root.join("etc/letsencrypt/live/payouts.example.com");
    fs::create_dir_all(&live).unwrap();
    let made = rcgen::generate_simple_self_signed(vec!["payouts.example.com".to_owned()]).unwrap();
    fs::write(live.join("fullchain.pem"), made.cert.pem()).unwrap();
    let key = live.join("privkey.pem");
    fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();

    let keys = root.join("path/to");
    fs::create_dir_all(&keys).unwrap();
    let keygen = std::env::var_os("PAYOUT_SSH_KEYGEN")
        .map(PathBuf::from)
        .or_else(|| on_path("ssh-keygen"))
        .expect("ssh-keygen (Debian: openssh-client; `cargo xtask test` installs it)");
    for bank in ["ach", "sepa", "aba", "eft", "ib4b"] {
        let out = Command::new(&keygen)
            .args(["-q", "-t", "ed25519", "-N", "", "-C", bank, "-f"])
            .arg(keys.join(format!("{bank}_ed25519")))
            .output()
            .unwrap();
        assert!(out.status.success(), "ssh-keygen: {out:?}");
    }
    live.join("fullchain.pem")
}

/// What the run left: each block's stdout and stderr, or the failure.
struct Run {
    stdout: Vec<String>,
    failure: Option<String>,
    timings: Vec<(usize, Duration)>,
}

#[test]
fn deploy_md_runs_as_written_and_prints_what_it_shows() {
    let markdown = fs::read_to_string(repo().join("docs/DEPLOY.md")).unwrap();
    let blocks = markdown::blocks(&markdown);
    let steps = markdown::steps(&blocks);
    let sections: Vec<&str> = steps.iter().map(|s| s.section.as_str()).collect();
    for section in [
        "Build and install",
        "TLS",
        "Database roles",
        "First start",
        "Smoke-test production before the bank",
        "Upgrades",
        "Backups",
        "Rotating the master key",
    ] {
        assert!(
            sections.contains(&section),
            "no sh block in {section:?}: {sections:?}"
        );
    }
    let all: String = steps.iter().map(|s| s.script.as_str()).collect();
    for (placeholder, _) in PLACEHOLDERS {
        assert!(
            all.contains(placeholder),
            "the guide no longer has {placeholder:?}: update PLACEHOLDERS"
        );
    }
    for block in &blocks {
        assert!(
            ["sh", "text", "nginx", "sql"].contains(&block.info.as_str()),
            "DEPLOY.md line {}: a ```{} block: run it or say why not in this test's documentation",
            block.line,
            block.info
        );
    }

    let scratch = tempfile::Builder::new()
        .prefix("deploy-md-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    fs::set_permissions(scratch.path(), fs::Permissions::from_mode(0o755)).unwrap();
    // DEPLOY_MD_KEEP_SCRATCH=1 keeps the scratch directory (the script, each output, the
    // journal, the scratch host) for a look after a failure.
    let (base, _scratch) = if std::env::var_os("DEPLOY_MD_KEEP_SCRATCH").is_some() {
        let kept = scratch.keep();
        eprintln!("DEPLOY_MD_KEEP_SCRATCH: keeping {}", kept.display());
        (kept, None)
    } else {
        (scratch.path().to_owned(), Some(scratch))
    };
    let root = base.join("root");
    let checkout = base.join("checkout");
    let home = base.join("home");
    let control_dir = base.join("control");
    for dir in [&root, &checkout, &home, &control_dir] {
        fs::create_dir_all(dir).unwrap();
    }
    // The directories any host has before the guide starts.
    for dir in ["etc/systemd/system", "var/lib", "usr/local/bin", "run"] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::os::unix::fs::symlink(repo().join("docs"), checkout.join("docs")).unwrap();
    let ca = provide_placeholders(&root);

    let pg_port = free_port();
    let cluster =
        cluster::Cluster::start(&base.join("pg"), pg_port).unwrap_or_else(|err| panic!("{err}"));
    let rewrites = Rewrites {
        root: root.display().to_string(),
        pg: pg_port,
        https: free_port(),
        http: free_port(),
        smtp: free_port(),
    };
    let closed_port = free_port();

    let payoutd = PathBuf::from(env!("CARGO_BIN_EXE_payoutd"));
    let xtask = payoutd.with_file_name("xtask");
    assert!(
        xtask.is_file(),
        "{} is missing: build it (cargo build -p xtask; `cargo xtask test` does)",
        xtask.display()
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let tools = base.join("tools");
    host::write_shims(
        &tools,
        &host::ShimSettings {
            root: root.clone(),
            control_port: listener.local_addr().unwrap().port(),
            control_dir: control_dir.clone(),
            payoutd,
            xtask,
            python3: python_with_aiosmtpd(),
            curl: on_path("curl").expect("curl (Debian: curl)"),
            https_port: rewrites.https,
            ca,
            pg_socket: cluster.socket_dir(),
            pg_port,
            home: home.clone(),
        },
    )
    .unwrap();

    let toml = root.join("etc/payoutd/payoutd.toml");
    let mut edited = false;
    let root_for_rewrite = rewrites.root.clone();
    let control = Arc::new(Mutex::new(host::Control {
        service: unit::Service {
            name: "payoutd".into(),
            unit_path: root.join("etc/systemd/system/payoutd.service"),
            rewrite: Box::new(move |text| rewrite_paths(text, &root_for_rewrite)),
            root: root.clone(),
            journal: base.join("journal"),
            loaded: None,
            main: None,
            warnings: Vec::new(),
        },
        finished: Vec::new(),
        between: Box::new(move |_, service| {
            if !edited && toml.is_file() {
                let text = fs::read_to_string(&toml).map_err(|err| err.to_string())?;
                fs::write(&toml, point_endpoints_at_loopback(&text, closed_port))
                    .map_err(|err| err.to_string())?;
                edited = true;
            }
            if !service.warnings.is_empty() {
                return Err(format!(
                    "systemd would warn, and keep running the unit it had: {}",
                    std::mem::take(&mut service.warnings).join("; ")
                ));
            }
            match service.exited() {
                Some(status) => {
                    service.main = None;
                    Err(format!("payoutd.service: Main process exited, {status}"))
                }
                None => Ok(()),
            }
        }),
    }));
    let _stop = StopService(Arc::clone(&control));
    host::serve(listener, control_dir, Arc::clone(&control));

    let (script, starts) = script(&steps, &rewrites);
    let run = run_shell(&script, &base, &checkout, &tools, &home, &root, &control);

    let journal = fs::read_to_string(base.join("journal")).unwrap_or_default();
    let stderr = fs::read_to_string(base.join("stderr")).unwrap_or_default();
    let stderr_parts = split_by_block(&stderr, steps.len());
    if let Some(failure) = &run.failure {
        let index = run.stdout.len() - 1;
        let failed_step = steps.get(index);
        let failed_command = stderr_parts
            .last()
            .and_then(|text| text.lines().find(|l| l.starts_with("@@@ failed at line ")))
            .map(|line| {
                let rest = line.trim_start_matches("@@@ failed at line ");
                let (number, command) = rest.split_once(": ").unwrap_or((rest, ""));
                let number: usize = number.parse().unwrap_or(0);
                let start = starts.get(index).copied().unwrap_or(0);
                if command.starts_with("deploy-md-step ") {
                    return "the test's check after the block (the end of its stderr says why)"
                        .to_owned();
                }
                let doc_line = failed_step.map_or(0, |s| s.line + 1 + number.saturating_sub(start));
                format!("the command at DEPLOY.md line {doc_line}: {command}")
            })
            .unwrap_or_else(|| "no failed command reported".into());
        let service = {
            let mut control = match control.lock() {
                Ok(control) => control,
                Err(poisoned) => poisoned.into_inner(),
            };
            match (control.service.main.is_some(), control.service.exited()) {
                (false, _) => "not started".to_owned(),
                (true, None) => "running".to_owned(),
                (true, Some(status)) => format!("its main process exited, {status}"),
            }
        };
        panic!(
            "{failure}\nDEPLOY.md line {} ({}): the block\n```sh\n{}```\nfailed: {failed_command}\n\
             --- its stdout (end):\n{}\n--- its stderr (end):\n{}\n\
             --- payoutd.service: {service}; its journal (end):\n{}",
            failed_step.map_or(0, |s| s.line),
            failed_step.map_or("", |s| s.section.as_str()),
            failed_step.map_or("", |s| s.script.as_str()),
            tail(run.stdout.last().map_or("", String::as_str), 20),
            tail(stderr_parts.last().map_or("", String::as_str), 30),
            tail(&journal, 30),
        );
    }

    // The end of the guide: the service stops cleanly on SIGTERM.
    let stopped = control.lock().unwrap().service.stop();
    match stopped {
        Ok(Some(status)) => assert!(
            status.success(),
            "payoutd.service did not exit cleanly on SIGTERM: {status}\n--- journal (end):\n{}",
            tail(
                &fs::read_to_string(base.join("journal")).unwrap_or_default(),
                30
            )
        ),
        Ok(None) => panic!("payoutd.service was not running at the end of the guide"),
        Err(err) => panic!("{err}"),
    }

    // What a block prints is compared as the deployer would see it: host paths, not the
    // scratch root's.
    let mut mismatches = Vec::new();
    for (index, (step, output)) in steps.iter().zip(&run.stdout).enumerate() {
        let output = output.replace(&rewrites.root, "");
        let expected = step.expected.as_deref().unwrap_or_default();
        if !output_matches(expected, &output) {
            mismatches.push(format!(
                "DEPLOY.md line {} ({}), block {index}:\n```sh\n{}```\nprinted:\n{output}\nthe guide shows:\n{expected}\n--- its stderr (end):\n{}",
                step.line,
                step.section,
                step.script,
                tail(&stderr_parts[index], 20),
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
    let summary: Vec<String> = run
        .timings
        .iter()
        .map(|(index, took)| format!("line {}: {:.1} s", steps[*index].line, took.as_secs_f64()))
        .collect();
    eprintln!(
        "DEPLOY.md ran in {:.1} s ({})",
        run.timings
            .iter()
            .map(|(_, t)| t.as_secs_f64())
            .sum::<f64>(),
        summary.join(", ")
    );
    drop(cluster);
}

/// Runs `script` in one bash shell in `checkout`; what each block printed, or why it stopped.
fn run_shell(
    script: &str,
    base: &Path,
    checkout: &Path,
    tools: &Path,
    home: &Path,
    root: &Path,
    control: &Arc<Mutex<host::Control>>,
) -> Run {
    let script_path = base.join("deploy.sh");
    fs::write(&script_path, script).unwrap();
    let path = std::env::join_paths(
        [tools.to_owned(), root.join("usr/local/bin")]
            .into_iter()
            .chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
    )
    .unwrap();
    let mut shell = Command::new("bash");
    shell
        .arg(&script_path)
        .current_dir(checkout)
        .env("PATH", path)
        .env("HOME", home)
        .env_remove("DATABASE_URL")
        .env_remove("MAINTENANCE_DATABASE_URL")
        .env_remove("CREDENTIALS_DIRECTORY")
        .stdin(Stdio::null())
        .stdout(fs::File::create(base.join("stdout")).unwrap())
        .stderr(fs::File::create(base.join("stderr")).unwrap())
        .process_group(0);
    for (name, _) in std::env::vars_os() {
        let name_text = name.to_string_lossy();
        if name_text.starts_with("PAYOUT_") || name_text.starts_with("PG") {
            shell.env_remove(name);
        }
    }
    let started = Instant::now();
    let mut child = shell.spawn().unwrap();
    let _group = KillGroup(child.id());
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = fs::read_to_string(base.join("stdout")).unwrap_or_default();
    let finished = control
        .lock()
        .map(|c| c.finished.clone())
        .unwrap_or_default();
    let mut timings = Vec::new();
    let mut previous = started;
    for (index, at) in finished {
        timings.push((index, at.duration_since(previous)));
        previous = at;
    }
    let blocks = script.matches("deploy-md-step ").count();
    let mut stdout = split_by_block(&output, blocks);
    let failure = match status {
        Some(status) if status.success() => {
            stdout.pop();
            None
        }
        Some(status) => Some(format!("the guide's shell ended with {status}")),
        None => Some(format!("the guide did not finish within {DEADLINE:?}")),
    };
    Run {
        stdout,
        failure,
        timings,
    }
}

#[test]
fn the_guides_text_moves_to_the_scratch_host() {
    let rewrites = Rewrites {
        root: "/s/root".into(),
        pg: 1001,
        https: 1002,
        http: 1003,
        smtp: 1004,
    };
    assert_eq!(
        rewrites.apply(
            "sudo install -d /etc/payoutd\nprintf %s \"postgres://u:p@db.internal:5432/payoutd\"\n\
             PAYOUT_BIND=0.0.0.0:8443\ncurl http://127.0.0.1:8080/readyz\nport = 2525\n\
             DATABASE_URL=postgres://postgres@127.0.0.1:5432/x\n"
        ),
        "sudo install -d /s/root/etc/payoutd\nprintf %s \"postgres://u:p@127.0.0.1:1001/payoutd\"\n\
         PAYOUT_BIND=127.0.0.1:1002\ncurl http://127.0.0.1:1003/readyz\nport = 1004\n\
         DATABASE_URL=postgres://postgres@127.0.0.1:1001/x\n"
    );
    let (script, starts) = script(
        &[
            Step {
                line: 10,
                section: "A".into(),
                script: "echo a\necho b\n".into(),
                expected: None,
            },
            Step {
                line: 20,
                section: "A".into(),
                script: "cat /etc/x\n".into(),
                expected: None,
            },
        ],
        &rewrites,
    );
    let lines: Vec<&str> = script.lines().collect();
    assert_eq!(lines[starts[0] - 1], "echo a");
    assert_eq!(lines[starts[1] - 1], "cat /s/root/etc/x");
    assert!(script.contains("deploy-md-step 1\n"));
    assert_eq!(
        split_by_block(&format!("a\n\n{}\nb\n\n{}\n", marker(0), marker(1)), 2),
        ["a\n", "b\n", ""]
    );
    assert_eq!(
        split_by_block(&format!("a\n\n{}\nhalf", marker(0)), 2),
        ["a\n", "half"]
    );
}

#[test]
fn the_deployers_edit_points_every_endpoint_at_loopback() {
    let edited = point_endpoints_at_loopback(
        "[rails.\"usd/ach\".transport]\nkind = \"sftp\"\nhost = \"sftp.bank.example\"\nport = 22\nuser = \"u\"\n\
         [rails.\"cad/digital\".transport]\nbase_url = \"https://etransfer.partner.example/api\"  # https\n\
         [smtp]\nhost = \"smtp.example.com\"\nport = 587                       # default\ntls = \"starttls\"\n",
        9,
    );
    assert_eq!(
        edited,
        "[rails.\"usd/ach\".transport]\nkind = \"sftp\"\nhost = \"127.0.0.1\"\nport = 9\nuser = \"u\"\n\
         [rails.\"cad/digital\".transport]\nbase_url = \"http://127.0.0.1:9/api\"\n\
         [smtp]\nhost = \"127.0.0.1\"\nport = 9\ntls = \"starttls\"\n"
    );
}

#[test]
fn the_shims_refuse_what_would_change_the_machine() {
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path().join("root");
    let tools = scratch.path().join("tools");
    fs::create_dir_all(root.join("etc")).unwrap();
    host::write_shims(
        &tools,
        &host::ShimSettings {
            root: root.clone(),
            control_port: 1,
            control_dir: scratch.path().to_owned(),
            payoutd: PathBuf::from("/bin/true"),
            xtask: PathBuf::from("/bin/true"),
            python3: None,
            curl: PathBuf::from("/bin/true"),
            https_port: 1,
            ca: scratch.path().join("ca.pem"),
            pg_socket: scratch.path().to_owned(),
            pg_port: 1,
            home: scratch.path().to_owned(),
        },
    )
    .unwrap();
    let path = std::env::join_paths(std::iter::once(tools.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    // Each shim is called by its path ($T), so a missing one cannot run the real command.
    let run = |line: &str| {
        let out = Command::new("bash")
            .args(["-c", line])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .env("T", &tools)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let root = root.display().to_string();

    let (code, stderr) = run("$T/groupadd payoutd");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("would change the machine"), "{stderr}");

    let (code, stderr) = run("$T/cargo build --release -p app-actix --bin payoutd");
    assert_eq!(code, Some(101), "{stderr}");
    assert!(
        stderr.contains("only `cargo build --release --locked"),
        "{stderr}"
    );
    let (code, stderr) = run(&format!("$T/cargo {}", host::BUILD_ARGS));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(scratch.path().join("target/release/payoutd").is_file());

    let (code, stderr) = run("$T/install -m 0644 /dev/null /nonexistent-deploy-md/x");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("outside the test's scratch root"),
        "{stderr}"
    );
    assert!(!Path::new("/nonexistent-deploy-md").exists());

    let (code, stderr) = run(&format!(
        "$T/install -d -m 0750 -o root -g payoutd {root}/etc/payoutd"
    ));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no group payoutd"), "{stderr}");
    let (code, stderr) = run(&format!(
        "$T/useradd --system --home-dir /var/lib/payoutd --shell /usr/sbin/nologin payoutd && \
         $T/install -d -m 0750 -o root -g payoutd {root}/etc/payoutd && \
         $T/chown root:payoutd {root}/etc/payoutd"
    ));
    assert_eq!(code, Some(0), "{stderr}");
    let mode = fs::metadata(format!("{root}/etc/payoutd"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o750);
    let (code, stderr) = run("$T/useradd payoutd");
    assert_eq!(code, Some(9), "{stderr}");
    let (code, stderr) = run(&format!("$T/chown nobody {root}/etc"));
    assert_eq!(code, Some(1), "{stderr}");

    let (code, stderr) = run("$T/sudo -u bob true");
    assert_eq!(code, Some(1), "{stderr}");
    let (code, stderr) = run("export SECRET=x; $T/sudo sh -c '[ -z \"$SECRET\" ]'");
    assert_eq!(code, Some(0), "sudo keeps no variable but PATH: {stderr}");
}
