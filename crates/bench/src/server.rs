//! The `payoutd` binary under test: `migrate`, `admin` commands and a served instance.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::Value;

use crate::load::Credentials;

/// The binary and the environment every invocation shares.
#[derive(Debug, Clone)]
pub struct Payoutd {
    bin: PathBuf,
    env: Vec<(&'static str, String)>,
}

/// A new random master key, 64 hex characters.
pub fn new_master_key() -> String {
    let mut key = [0u8; 32];
    key[..16].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    key[16..].copy_from_slice(uuid::Uuid::new_v4().as_bytes());
    hex::encode(key)
}

/// A subaccount and its API keys.
#[derive(Debug, Clone)]
pub struct Tenant {
    /// The subaccount id.
    pub subaccount_id: String,
    /// One key per load worker, so each worker's nonces only have to increase on their own.
    pub keys: Vec<Credentials>,
}

impl Payoutd {
    /// `bin` talking to `database_url` with `master_key` (hex).
    pub fn new(bin: &Path, database_url: &str, master_key: &str) -> Self {
        Self {
            bin: bin.to_path_buf(),
            env: vec![
                ("DATABASE_URL", database_url.to_owned()),
                ("PAYOUT_MASTER_KEY", master_key.to_owned()),
                ("PAYOUT_SANDBOX", "true".to_owned()),
                // The benchmarks measure the service, not its per-key rate limit (each load
                // worker's key sends far more than the default 100 requests per second).
                ("PAYOUT_RATE_LIMIT_PER_SEC", "1000000".to_owned()),
                ("PAYOUT_RATE_LIMIT_BURST", "1000000".to_owned()),
            ],
        }
    }

    /// Also sets `name` to `value` in payoutd's environment.
    #[must_use]
    pub fn with_env(mut self, name: &'static str, value: &str) -> Self {
        self.env.push((name, value.to_owned()));
        self
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            // Whatever .env the current directory has must not change what is measured.
            .current_dir(std::env::temp_dir());
        command
    }

    /// Runs `payoutd args...`; returns its stdout, failing with its output unless it succeeds.
    async fn run(&self, args: &[&str]) -> anyhow::Result<String> {
        let mut command = self.command(args);
        let shown = format!("payoutd {}", args.join(" "));
        let out = tokio::task::spawn_blocking(move || command.output())
            .await?
            .with_context(|| format!("cannot run `{shown}`"))?;
        if !out.status.success() {
            anyhow::bail!(
                "`{shown}` failed ({}):\n{}{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        String::from_utf8(out.stdout).with_context(|| format!("`{shown}` printed invalid UTF-8"))
    }

    /// `payoutd migrate --create-database`.
    pub async fn migrate(&self) -> anyhow::Result<()> {
        self.run(&["migrate", "--create-database"]).await.map(drop)
    }

    /// Runs an admin command and parses the JSON object it prints (its last line that is one).
    pub async fn admin(&self, args: &[&str]) -> anyhow::Result<Value> {
        let mut full = vec!["admin"];
        full.extend_from_slice(args);
        let stdout = self.run(&full).await?;
        stdout
            .lines()
            .rev()
            .find_map(|line| {
                serde_json::from_str::<Value>(line.trim())
                    .ok()
                    .filter(Value::is_object)
            })
            .ok_or_else(|| anyhow::anyhow!("`payoutd admin {}` printed no JSON object", args[0]))
    }

    /// Creates a subaccount with `keys` API keys.
    pub async fn tenant(&self, name: &str, keys: usize) -> anyhow::Result<Tenant> {
        let created = self
            .admin(&[
                "create-subaccount",
                "--name",
                name,
                "--email",
                "bench@example.com",
                // The load generator signs every request with v1, as a client written for
                // the provider's scheme does (docs/API.md, Signature policies).
                "--signature-policy",
                "any",
            ])
            .await?;
        let subaccount_id = field(&created, "subaccount_id")?;
        let mut issued = Vec::with_capacity(keys);
        for _ in 0..keys.max(1) {
            let key = self
                .admin(&["issue-key", "--subaccount", &subaccount_id])
                .await?;
            issued.push(Credentials::new(
                &field(&key, "api_key")?,
                &field(&key, "api_secret")?,
            ));
        }
        Ok(Tenant {
            subaccount_id,
            keys: issued,
        })
    }

    /// Starts `payoutd serve` on a free loopback port, its log going to `log`, and waits until
    /// `/readyz` answers 200.
    pub async fn serve(&self, log: &Path) -> anyhow::Result<Server> {
        self.serve_with(log, &[]).await
    }

    /// [`Payoutd::serve`] with more environment variables (`vars` win over the defaults).
    pub async fn serve_with(&self, log: &Path, vars: &[(&str, &str)]) -> anyhow::Result<Server> {
        self.serve_on(free_port()?, log, vars).await
    }

    /// [`Payoutd::serve_with`] on `127.0.0.1:port` (one a peer was told, say).
    pub async fn serve_on(
        &self,
        port: u16,
        log: &Path,
        vars: &[(&str, &str)],
    ) -> anyhow::Result<Server> {
        let mut command = self.command(&["serve"]);
        command.env("PAYOUT_BIND", format!("127.0.0.1:{port}"));
        command.envs(vars.iter().copied());
        Server::start(command, port, log).await
    }
}

/// A string field of an admin command's JSON.
fn field(object: &Value, name: &str) -> anyhow::Result<String> {
    object
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("payoutd printed no `{name}` in {object}"))
}

/// A port nothing listens on right now.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free port")?;
    Ok(listener.local_addr()?.port())
}

/// A running `payoutd serve`; stopped (SIGTERM, then SIGKILL) by [`Server::stop`] or on drop.
pub struct Server {
    child: Option<Child>,
    /// `http://127.0.0.1:<port>`.
    pub base_url: String,
    log: PathBuf,
}

impl Server {
    /// Spawns `command`, an HTTP server that is to listen on `127.0.0.1:port`, its output going
    /// to `log`, and waits until `/readyz` answers 200.
    pub async fn start(mut command: Command, port: u16, log: &Path) -> anyhow::Result<Server> {
        let log_file =
            File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
        command
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file);
        let shown = command.get_program().to_string_lossy().into_owned();
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {shown}"))?;
        let server = Server {
            child: Some(child),
            base_url: format!("http://127.0.0.1:{port}"),
            log: log.to_path_buf(),
        };
        server.wait_ready(Duration::from_secs(30)).await?;
        Ok(server)
    }

    /// The server's process id (for RSS readings and the like).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    async fn wait_ready(&self, timeout: Duration) -> anyhow::Result<()> {
        let client = reqwest::Client::new();
        let deadline = Instant::now() + timeout;
        let url = format!("{}/readyz", self.base_url);
        loop {
            if let Ok(response) = client.get(&url).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                anyhow::bail!(
                    "payoutd did not become ready within {timeout:?}; see {}",
                    self.log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Asks the server to shut down gracefully and waits for it (killing it after 10 s).
    pub async fn stop(mut self) -> anyhow::Result<()> {
        let Some(child) = self.child.take() else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || terminate(child)).await?
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            drop(terminate(child));
        }
    }
}

/// SIGTERM, wait up to 10 s, then SIGKILL.
fn terminate(mut child: Child) -> anyhow::Result<()> {
    if child.try_wait()?.is_some() {
        return Ok(());
    }
    // std offers only SIGKILL; `kill` sends the SIGTERM that triggers a graceful shutdown.
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .stderr(Stdio::null())
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if child.try_wait()?.is_some() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill()?;
    child.wait()?;
    Ok(())
}
