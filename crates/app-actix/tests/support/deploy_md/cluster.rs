//! A private PostgreSQL cluster for one test run: the installed server binaries (found as
//! `cargo xtask db` finds them: `PATH`, then the newest `/usr/lib/postgresql/*/bin`), a data
//! directory in the test's scratch directory, a free loopback port, and a socket directory of
//! its own. As root the server runs as the `postgres` system user (initdb and postgres refuse
//! root), through `runuser`. Dropping it stops the server (`pg_ctl stop -m immediate`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    as_postgres: bool,
}

fn bin_dir() -> Result<PathBuf, String> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths).find(|dir| {
            ["initdb", "pg_ctl", "postgres"]
                .iter()
                .all(|bin| dir.join(bin).is_file())
        })
    });
    if let Some(dir) = on_path {
        return Ok(dir);
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .map_err(|err| {
            format!("no PostgreSQL server binaries on PATH or in /usr/lib/postgresql: {err}")
        })?
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_string_lossy().parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .ok_or_else(|| "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin".into())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

impl Cluster {
    /// Creates and starts a cluster in `dir` (which must not exist) on `port`: trust for the
    /// Unix socket and for `postgres` on 127.0.0.1 (the superuser the guide's `sudo -u
    /// postgres` stands for), passwords (SCRAM) for every other role over TCP, so the roles'
    /// passwords the guide generates are checked.
    pub fn start(dir: &Path, port: u16) -> Result<Self, String> {
        let cluster = Self {
            bin: bin_dir()?,
            dir: dir.to_owned(),
            as_postgres: is_root(),
        };
        fs::create_dir_all(cluster.dir.join("sock")).map_err(|err| err.to_string())?;
        if cluster.as_postgres {
            // The directories above `dir` must let the postgres user through (the test makes
            // its scratch directory 0755).
            let chown = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir)
                .output()
                .map_err(|err| err.to_string())?;
            check("chown", &chown)?;
        }
        let data = cluster.data();
        let init = cluster
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .output()
            .map_err(|err| err.to_string())?;
        check("initdb", &init)?;
        let hba = data.join("pg_hba.conf");
        let rules = fs::read_to_string(&hba).map_err(|err| err.to_string())?;
        fs::write(
            &hba,
            format!("host all postgres 127.0.0.1/32 trust\n{rules}"),
        )
        .map_err(|err| err.to_string())?;
        let start = cluster
            .command("pg_ctl")
            .args(["start", "-w", "-t", "60", "-D"])
            .arg(&data)
            .arg("-l")
            .arg(cluster.dir.join("log"))
            .arg("-o")
            .arg(format!(
                "-p {port} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
                 -c synchronous_commit=off -c full_page_writes=off -c max_connections=60",
                cluster.socket_dir().display()
            ))
            .output()
            .map_err(|err| err.to_string())?;
        check("pg_ctl start", &start).map_err(|err| {
            format!(
                "{err}\n--- the server's log:\n{}",
                fs::read_to_string(cluster.dir.join("log")).unwrap_or_default()
            )
        })?;
        Ok(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn socket_dir(&self) -> PathBuf {
        self.dir.join("sock")
    }

    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(path);
            command
        } else {
            Command::new(path)
        };
        command.current_dir("/");
        command
    }
}

fn check(what: &str, output: &Output) -> Result<(), String> {
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self
            .command("pg_ctl")
            .args(["stop", "-m", "immediate", "-w", "-D"])
            .arg(self.data())
            .output();
    }
}
