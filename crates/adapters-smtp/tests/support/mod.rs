//! A real SMTP server for the tests: Debian's aiosmtpd run by `smtp_server.py` on a free
//! loopback port, writing each message it accepts to a directory the test reads.
//!
//! The Python with aiosmtpd is `PAYOUT_PYTHON3` (which `cargo xtask test` sets, installing
//! Debian's `python3-aiosmtpd` when root), else the first of `python3` on `PATH` and
//! `/usr/bin/python3` that can import it. Certificates for the TLS tests come from the
//! `openssl` command line (`PAYOUT_OPENSSL`, else `openssl` on `PATH`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use adapters_smtp::{SmtpCredentials, SmtpNotifier, SmtpSettings, TlsMode};
use domain::masking::Secret;

/// The server script, from this crate's directory or a sibling's (app-actix includes this
/// module too).
const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../adapters-smtp/tests/support/smtp_server.py"
);

fn imports_aiosmtpd(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import aiosmtpd"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The Python that runs the server.
pub fn python() -> PathBuf {
    if let Some(path) = std::env::var_os("PAYOUT_PYTHON3") {
        return PathBuf::from(path);
    }
    ["python3", "/usr/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| imports_aiosmtpd(p))
        .unwrap_or_else(|| {
            panic!(
                "no python3 with aiosmtpd: install Debian's python3-aiosmtpd, or run the tests \
                 with `cargo xtask test`, which installs it and passes PAYOUT_PYTHON3"
            )
        })
}

/// A port nothing listens on (just now).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// How a server is started.
#[derive(Default, Clone)]
pub struct Options {
    pub credentials: Option<(String, String)>,
    /// Certificate and key (PEM files): STARTTLS offered and required.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub reject: Vec<String>,
    pub defer: Vec<String>,
}

/// A running server, killed on drop.
pub struct SmtpServer {
    child: Child,
    pub port: u16,
    out: tempfile::TempDir,
}

impl SmtpServer {
    pub fn start(options: &Options) -> Self {
        Self::start_on(free_port(), options)
    }

    pub fn start_on(port: u16, options: &Options) -> Self {
        let out = tempfile::tempdir().expect("temporary directory");
        let mut command = Command::new(python());
        command
            .arg(SCRIPT)
            .arg("--port")
            .arg(port.to_string())
            .arg("--out")
            .arg(out.path());
        if let Some((user, password)) = &options.credentials {
            command.args(["--user", user, "--password", password]);
        }
        if let Some((cert, key)) = &options.tls {
            command.arg("--cert").arg(cert).arg("--key").arg(key);
        }
        for address in &options.reject {
            command.args(["--reject", address]);
        }
        for address in &options.defer {
            command.args(["--defer", address]);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the SMTP server");
        let stdout = child.stdout.take().expect("its stdout");
        let (ready, started) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = ready.send(line);
        });
        match started.recv_timeout(Duration::from_secs(20)) {
            Ok(line) if line.trim() == "READY" => {}
            other => {
                let _ = child.kill();
                panic!("the SMTP server did not start: {other:?}");
            }
        }
        Self { child, port, out }
    }

    /// The messages received so far, oldest first.
    pub fn received(&self) -> Vec<serde_json::Value> {
        let mut files: Vec<(u64, PathBuf)> = std::fs::read_dir(self.out.path())
            .expect("the output directory")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter_map(|p| {
                let n = p.file_stem()?.to_str()?.parse().ok()?;
                (p.extension()? == "json").then_some((n, p))
            })
            .collect();
        files.sort();
        files
            .into_iter()
            .map(|(_, p)| {
                serde_json::from_slice(&std::fs::read(p).expect("a message")).expect("JSON")
            })
            .collect()
    }

    /// Waits (up to 10 s) until `n` messages have arrived, and returns them.
    pub fn wait_for(&self, n: usize) -> Vec<serde_json::Value> {
        let start = Instant::now();
        loop {
            let received = self.received();
            if received.len() >= n || start.elapsed() > Duration::from_secs(10) {
                return received;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Settings for a server on `port` of 127.0.0.1.
pub fn settings(port: u16, tls: TlsMode) -> SmtpSettings {
    SmtpSettings {
        host: "127.0.0.1".to_owned(),
        port,
        tls,
        credentials: None,
        from: "Payouts <payouts@example.com>".to_owned(),
        timeout: Duration::from_secs(5),
        ca_certificate_pem: None,
    }
}

pub fn credentials(user: &str, password: &str) -> Option<SmtpCredentials> {
    Some(SmtpCredentials {
        username: user.to_owned(),
        password: Secret::new(password.to_owned()),
    })
}

pub fn notifier(settings: &SmtpSettings) -> SmtpNotifier {
    SmtpNotifier::new(settings).expect("valid settings")
}

/// A test CA and a server certificate for 127.0.0.1 it signed, with the server's key, as PEM
/// files in `dir`: `(ca, certificate, key)`.
pub fn self_signed(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = std::env::var_os("PAYOUT_OPENSSL").unwrap_or_else(|| "openssl".into());
    let run = |args: &[&str]| {
        let status = Command::new(&openssl)
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("running openssl (Debian's openssl; `cargo xtask test` provides it)");
        assert!(status.success(), "openssl {args:?} failed");
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    run(&[
        &["req", "-x509"],
        &ec[..],
        &["-days", "2", "-subj", "/CN=payoutd test CA"],
    ]
    .concat()
    .iter()
    .copied()
    .chain(["-keyout", "ca.key", "-out", "ca.pem"])
    .collect::<Vec<_>>());
    run(&[
        &["req"],
        &ec[..],
        &[
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "key.pem",
            "-out",
            "server.csr",
        ],
    ]
    .concat());
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .expect("extensions file");
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        "server.ext",
        "-out",
        "cert.pem",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    )
}
