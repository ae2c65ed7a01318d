//! Debian's `chromedriver` and `chromium`: found, started on a free loopback port, and stopped
//! (with every browser they started) however a test ends.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long chromedriver may take to listen.
const START: Duration = Duration::from_secs(30);

/// The two programs: `cargo xtask test` installs Debian's `chromium` and `chromium-driver` and
/// names them in `PAYOUT_CHROMIUM` and `PAYOUT_CHROMEDRIVER`; without those variables they are
/// looked for on `PATH`.
#[derive(Debug, Clone)]
pub struct Tools {
    pub chromedriver: PathBuf,
    pub chromium: PathBuf,
}

impl Tools {
    /// Both programs, or `None` (after printing why and how to get them) when one is neither
    /// named by its variable nor on `PATH`: the browser tests are then skipped. A variable that
    /// names no program fails the test (`cargo xtask test` found it, so it must run).
    pub fn find() -> Option<Self> {
        let chromedriver = find("PAYOUT_CHROMEDRIVER", "chromedriver", "chromium-driver")?;
        let chromium = find("PAYOUT_CHROMIUM", "chromium", "chromium")?;
        Some(Self {
            chromedriver,
            chromium,
        })
    }
}

fn find(variable: &str, program: &str, package: &str) -> Option<PathBuf> {
    if let Some(named) = std::env::var_os(variable) {
        let path = PathBuf::from(named);
        assert!(
            is_executable(&path),
            "{variable} names {}, which is not an executable program",
            path.display()
        );
        return Some(path);
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(program))
            .find(|path| is_executable(path))
    });
    if found.is_none() {
        eprintln!(
            "SKIPPED: the console's browser tests need `{program}` (Debian package `{package}`), \
             which is not on PATH and {variable} is not set. `cargo xtask test` installs it when \
             run as root; otherwise `sudo apt-get install {package}`."
        );
    }
    found
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
}

/// Whether this process runs as root (Chromium's sandbox then cannot start: `--no-sandbox`).
pub fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// A running chromedriver on 127.0.0.1 (it accepts local connections only), stopped on drop
/// through its `/shutdown` endpoint, which quits the browsers it started, then killed if it is
/// still running.
pub struct Driver {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Driver {
    /// Starts chromedriver on a free loopback port, its log in a temporary directory, and
    /// waits until it listens. A port taken between choosing and binding it is retried with
    /// another.
    pub fn start(tools: &Tools) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("chromedriver.log");
        let mut last = String::new();
        for _ in 0..3 {
            let port = free_port();
            let mut child = Command::new(&tools.chromedriver)
                .arg(format!("--port={port}"))
                .arg(format!("--log-path={}", log.display()))
                .arg("--log-level=WARNING")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", tools.chromedriver.display()));
            let started = Instant::now();
            while started.elapsed() < START {
                if let Ok(Some(status)) = child.try_wait() {
                    last = format!("chromedriver exited ({status}) on port {port}");
                    break;
                }
                if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                    return Self {
                        child,
                        port,
                        log,
                        _dir: dir,
                    };
                }
                // Polling a process that is starting: nothing to wait on but the port.
                std::thread::sleep(Duration::from_millis(25));
            }
            if child.try_wait().ok().flatten().is_none() {
                child.kill().ok();
                child.wait().ok();
                last = format!("chromedriver did not listen on port {port} within {START:?}");
            }
        }
        panic!(
            "{last}; its log:\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    /// Its WebDriver endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Its log so far (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        if let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
            stream.set_read_timeout(Some(Duration::from_secs(5))).ok();
            let request = format!(
                "GET /shutdown HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\r\n",
                self.port
            );
            if stream.write_all(request.as_bytes()).is_ok() {
                let mut answer = Vec::new();
                stream.read_to_end(&mut answer).ok();
            }
        }
        let asked = Instant::now();
        while asked.elapsed() < Duration::from_secs(5) {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// A loopback port free a moment ago.
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}
