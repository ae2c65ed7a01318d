//! The bank's SFTP side: a real OpenSSH `sshd` on a loopback port serving the rails'
//! directories.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use serde_json::json;

use super::{RailDirs, RailKind, Transport, create_rails, free_port, fresh_dir, rails_json};
use crate::{cmd, tools};

/// The running bank: sshd and the responder's settings.
pub struct Bank {
    sshd: Option<Child>,
    pub dir: PathBuf,
    pub port: u16,
    pub user: String,
    pub client_key: PathBuf,
    pub host_key: String,
    pub rails: Vec<RailDirs>,
}

impl Bank {
    /// Creates keys and directories under `dir` (emptied first) and starts sshd on `port` (or
    /// a free one).
    pub fn start(dir: &Path, port: Option<u16>) -> Result<Self, String> {
        let sshd = tools::ensure_debian_tool("/usr/sbin/sshd", "openssh-server")?;
        let keygen = tools::ensure_debian_tool("ssh-keygen", "openssh-client")?;
        let dir = fresh_dir(dir)?;
        let ssh = dir.join("ssh");
        fs::create_dir_all(&ssh)
            .map_err(|err| format!("cannot create {}: {err}", ssh.display()))?;
        let ssh = dir.join("ssh");
        for key in ["host_ed25519", "client_ed25519"] {
            cmd::stdout(
                Command::new(&keygen)
                    .args(["-q", "-t", "ed25519", "-N", "", "-C", "payoutd-bank", "-f"])
                    .arg(ssh.join(key))
                    .stdin(Stdio::null()),
            )?;
        }
        let read = |name: &str| {
            let path = ssh.join(name);
            fs::read_to_string(&path)
                .map_err(|err| format!("cannot read {}: {err}", path.display()))
        };
        fs::write(ssh.join("authorized_keys"), read("client_ed25519.pub")?)
            .map_err(|err| format!("cannot write authorized_keys: {err}"))?;
        let host_key = read("host_ed25519.pub")?.trim().to_owned();
        let user = cmd::stdout(Command::new("id").arg("-un"))?
            .trim()
            .to_owned();
        if cmd::stdout(Command::new("id").arg("-u"))?.trim() == "0" {
            // sshd running as root wants its privilege-separation directory.
            fs::create_dir_all("/run/sshd")
                .map_err(|err| format!("cannot create /run/sshd: {err}"))?;
        }
        let rails = create_rails(&dir)?;

        let mut last_log = String::new();
        for _ in 0..5 {
            let port = match port {
                Some(port) => port,
                None => free_port()?,
            };
            let config = ssh.join("sshd_config");
            fs::write(&config, sshd_config(&ssh, port))
                .map_err(|err| format!("cannot write {}: {err}", config.display()))?;
            let log = ssh.join("sshd.log");
            let log_file = fs::File::create(&log)
                .map_err(|err| format!("cannot create {}: {err}", log.display()))?;
            let mut child = Command::new(&sshd)
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log_file)
                .spawn()
                .map_err(|err| format!("cannot start {}: {err}", sshd.display()))?;
            if wait_listening(&mut child, &log, port) {
                return Ok(Self {
                    sshd: Some(child),
                    client_key: ssh.join("client_ed25519"),
                    dir,
                    port,
                    user,
                    host_key,
                    rails,
                });
            }
            last_log = fs::read_to_string(&log).unwrap_or_default();
            let _ = child.kill();
            let _ = child.wait();
        }
        Err(format!("sshd did not start; its log:\n{last_log}"))
    }

    /// The rail's directories.
    pub fn rail(&self, kind: RailKind) -> Option<&RailDirs> {
        self.rails.iter().find(|r| r.kind == kind)
    }

    /// What payoutd needs to reach the bank, as JSON.
    pub fn describe(&self) -> serde_json::Value {
        json!({
            "transport": Transport::Sftp.name(),
            "host": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "private_key": self.client_key,
            "host_key": self.host_key,
            "rails": rails_json(&self.rails),
            "dir": self.dir,
        })
    }

    /// Stops sshd.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.sshd.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Bank {
    fn drop(&mut self) {
        self.stop();
    }
}

/// sshd's configuration: loopback only, key authentication for the running user, no chroot.
pub fn sshd_config(ssh: &Path, port: u16) -> String {
    let path = |name: &str| ssh.join(name).display().to_string();
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

fn wait_listening(child: &mut Child, log: &Path, port: u16) -> bool {
    let ready = format!("Server listening on 127.0.0.1 port {port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if fs::read_to_string(log).is_ok_and(|text| text.contains(&ready)) {
            return true;
        }
        if !matches!(child.try_wait(), Ok(None)) {
            return false;
        }
        thread::sleep(Duration::from_millis(20));
    }
    false
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::sshd_config;

    #[test]
    fn sshd_accepts_keys_only_on_loopback() {
        let config = sshd_config(Path::new("/b/ssh"), 2222);
        assert!(config.contains("ListenAddress 127.0.0.1\nPort 2222\n"));
        assert!(config.contains("PasswordAuthentication no"));
        assert!(config.contains("AuthorizedKeysFile /b/ssh/authorized_keys"));
        assert!(config.contains("Subsystem sftp internal-sftp"));
    }
}
