//! A private OpenSSH sshd per test, on 127.0.0.1 and a free port, with its own configuration,
//! host key and authorized key in a temporary directory, running as the current user and
//! killed on drop.
//!
//! `cargo xtask test` provides `sshd` and `ssh-keygen` (installing Debian's openssh-server as
//! root) and passes their paths as `PAYOUT_SSHD` and `PAYOUT_SSH_KEYGEN`. Without them these
//! tests fail, saying so: they never skip.

use std::{
    env, fs,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use adapters_filetransfer::{HostKeyPin, SftpSettings};
use domain::masking::Secret;
use tempfile::TempDir;

use super::BankDirs;

/// A running sshd and everything a client needs to reach it.
pub struct Sshd {
    dir: TempDir,
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// Its host key, as an OpenSSH public-key line.
    pub host_key: String,
    /// The client key it accepts (an OpenSSH private key file).
    pub client_key: PathBuf,
    /// The user to log in as: the one running the tests.
    pub user: String,
    /// The drop's directories on disk, as the bank sees them.
    pub bank: BankDirs,
}

impl Sshd {
    /// Starts a fresh sshd with a fresh host key, client key and empty drop directories.
    pub fn start() -> Self {
        let sshd = tool("PAYOUT_SSHD", &["/usr/sbin/sshd", "/sbin/sshd"]);
        let dir = tempfile::Builder::new()
            .prefix("payoutd-sshd-")
            .tempdir()
            .unwrap();
        let root = dir.path();
        keygen(&root.join("host_ed25519"));
        let client_key = root.join("client_ed25519");
        keygen(&client_key);
        fs::copy(
            root.join("client_ed25519.pub"),
            root.join("authorized_keys"),
        )
        .unwrap();
        let host_key = fs::read_to_string(root.join("host_ed25519.pub"))
            .unwrap()
            .trim()
            .to_owned();
        let bank = BankDirs::create(&root.join("bank"));
        let user = command_output(Command::new("id").arg("-un"));
        if command_output(Command::new("id").arg("-u")) == "0" {
            // sshd running as root wants its privilege-separation directory.
            fs::create_dir_all("/run/sshd").unwrap();
        }

        // A free port can be taken between our probe and sshd's bind: try a few.
        let mut last_log = String::new();
        for _ in 0..5 {
            let port = free_port();
            let config = root.join("sshd_config");
            fs::write(&config, sshd_config(root, port)).unwrap();
            let log = root.join("sshd.log");
            let mut child = Command::new(&sshd)
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(&log).unwrap())
                .spawn()
                .unwrap_or_else(|err| panic!("cannot start {}: {err}", sshd.display()));
            match wait_listening(&mut child, &log, port) {
                Ok(()) => {
                    return Self {
                        dir,
                        child,
                        port,
                        host_key,
                        client_key,
                        user,
                        bank,
                    };
                }
                Err(log) => {
                    last_log = log;
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
        panic!("sshd did not start; its log:\n{last_log}");
    }

    /// What sshd has logged so far.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// The log once it contains `needle` (sshd writes some lines only after answering).
    pub fn wait_log(&self, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            assert!(
                Instant::now() < deadline,
                "sshd never logged {needle:?}:\n{log}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Settings that reach this server: the client key from its file, the host key pinned
    /// by its OpenSSH line, the bank's directories by their absolute paths.
    pub fn settings(&self) -> SftpSettings {
        let mut settings = SftpSettings::new(
            "127.0.0.1",
            &self.user,
            Secret::new(fs::read_to_string(&self.client_key).unwrap()),
            HostKeyPin::parse(&self.host_key).unwrap(),
            self.bank.outbound.to_str().unwrap(),
            self.bank.inbound.to_str().unwrap(),
        );
        settings.port = self.port;
        settings.connect_timeout = Duration::from_secs(10);
        settings.operation_timeout = Duration::from_secs(20);
        settings
    }

    /// A new ed25519 key pair in this server's directory that it does not know: the private
    /// key's path (the public key is beside it, with `.pub`).
    pub fn other_key(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        keygen(&path);
        path
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until sshd says it listens on `port`; its log if it exits or takes too long.
fn wait_listening(child: &mut Child, log: &Path, port: u16) -> Result<(), String> {
    let ready = format!("Server listening on 127.0.0.1 port {port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = fs::read_to_string(log).unwrap_or_default();
        if text.contains(&ready) {
            return Ok(());
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            return Err(text);
        }
        thread::sleep(Duration::from_millis(20));
    }
}

fn sshd_config(root: &Path, port: u16) -> String {
    let path = |name: &str| root.join(name).display().to_string();
    format!(
        "ListenAddress 127.0.0.1\n\
         Port {port}\n\
         HostKey {host_key}\n\
         PidFile {pid}\n\
         AuthorizedKeysFile {authorized}\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         PermitRootLogin prohibit-password\n\
         StrictModes no\n\
         UsePAM no\n\
         UseDNS no\n\
         LogLevel VERBOSE\n\
         Subsystem sftp internal-sftp\n",
        host_key = path("host_ed25519"),
        pid = path("sshd.pid"),
        authorized = path("authorized_keys"),
    )
}

/// `ssh-keygen -t ed25519` without a passphrase, writing `path` and `path.pub`.
pub fn keygen(path: &Path) {
    let ssh_keygen = tool(
        "PAYOUT_SSH_KEYGEN",
        &["/usr/bin/ssh-keygen", "/bin/ssh-keygen"],
    );
    let status = Command::new(&ssh_keygen)
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "payoutd-test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .unwrap_or_else(|err| panic!("cannot run {}: {err}", ssh_keygen.display()));
    assert!(status.success(), "ssh-keygen failed: {status}");
}

/// The tool named by `var`, else the first of `defaults` that exists; fails the test with
/// the way to get it otherwise.
fn tool(var: &str, defaults: &[&str]) -> PathBuf {
    let candidates: Vec<PathBuf> = match env::var_os(var) {
        Some(path) if !path.is_empty() => vec![PathBuf::from(path)],
        _ => defaults.iter().map(PathBuf::from).collect(),
    };
    candidates
        .iter()
        .find(|path| path.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "the SFTP tests need OpenSSH's sshd and ssh-keygen (Debian packages \
                 openssh-server and openssh-client), but none of {candidates:?} exists: run the \
                 tests with `cargo xtask test`, which installs OpenSSH when run as root and \
                 passes PAYOUT_SSHD and PAYOUT_SSH_KEYGEN"
            )
        })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn command_output(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(output.status.success(), "{command:?} failed");
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}
