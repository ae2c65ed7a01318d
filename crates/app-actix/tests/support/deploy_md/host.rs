//! The scratch host DEPLOY.md runs on: the commands that would change the machine, as small
//! shims first on `PATH` (the test's module documentation says what each does instead), and
//! the control channel through which `systemctl`, `journalctl` and the end of each block reach
//! the test's systemd ([`super::unit::Service`]).

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::unit::{Answer, Service};

/// The documented build command, the only `cargo build` the test's `cargo` accepts.
pub const BUILD_ARGS: &str = "build --release --locked -p app-actix --bin payoutd";

/// Commands that would change the machine, which the guide does not use: their shims refuse.
pub const REFUSED: [&str; 16] = [
    "groupadd",
    "groupdel",
    "groupmod",
    "usermod",
    "userdel",
    "adduser",
    "addgroup",
    "deluser",
    "passwd",
    "chpasswd",
    "apt",
    "apt-get",
    "dpkg",
    "mount",
    "umount",
    "systemd-run",
];

/// What the shims are made from.
pub struct ShimSettings {
    pub root: PathBuf,
    pub control_port: u16,
    pub control_dir: PathBuf,
    pub payoutd: PathBuf,
    pub xtask: PathBuf,
    pub python3: Option<PathBuf>,
    pub curl: PathBuf,
    pub https_port: u16,
    pub ca: PathBuf,
    pub pg_socket: PathBuf,
    pub pg_port: u16,
    pub home: PathBuf,
}

fn write_tool(dir: &Path, name: &str, body: &str) -> Result<(), String> {
    let path = dir.join(name);
    fs::write(&path, format!("#!/bin/bash\n{body}")).map_err(|err| err.to_string())?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).map_err(|err| err.to_string())
}

/// Quotes `text` for bash.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Writes the shims into `dir`.
pub fn write_shims(dir: &Path, s: &ShimSettings) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|err| err.to_string())?;
    let root = quote(&s.root.display().to_string());
    // Refuses a path outside the scratch root (a host path the rewrite missed).
    let inside_root = format!(
        "inside_root() {{ case \"$1\" in /dev/null) return 0;; /*) case \"$1\" in {root}/*) return 0;; esac;\n\
         echo \"$0: $1 is outside the test's scratch root: DEPLOY.md names a host path the test does not move\" >&2; exit 1;; esac; }}\n"
    );
    let known = format!(
        "known_user() {{ [ \"$1\" = root ] || grep -q \"^$1:\" {root}/etc/passwd 2>/dev/null || {{ echo \"$0: no user $1 (useradd first)\" >&2; exit 1; }}; }}\n\
         known_group() {{ [ \"$1\" = root ] || grep -q \"^$1:\" {root}/etc/group 2>/dev/null || {{ echo \"$0: no group $1\" >&2; exit 1; }}; }}\n"
    );
    let control = |name: &str| {
        format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} || exit 70\n\
             {{ printf '%s\\n' \"$(($# + 1))\"; printf '%s\\0' {name} \"$@\"; }} >&3\n\
             IFS= read -r code <&3 || {{ echo \"{name}: the test's systemd did not answer\" >&2; exit 70; }}\n\
             cat {out}; cat {err} >&2\n\
             exit \"$code\"\n",
            port = s.control_port,
            out = quote(&s.control_dir.join("out").display().to_string()),
            err = quote(&s.control_dir.join("err").display().to_string()),
        )
    };
    write_tool(dir, "systemctl", &control("systemctl"))?;
    write_tool(dir, "journalctl", &control("journalctl"))?;
    write_tool(dir, "deploy-md-step", &control("step"))?;
    write_tool(
        dir,
        "sudo",
        &format!(
            "# sudo [-u root|postgres] [--] COMMAND...: COMMAND as this user, with sudo's reset environment.\n\
             user=root\n\
             while [ $# -gt 0 ]; do case \"$1\" in\n\
               -u) user=$2; shift 2;;\n\
               --) shift; break;;\n\
               -*) echo \"sudo (test shim): option $1 is not supported\" >&2; exit 2;;\n\
               *) break;;\n\
             esac; done\n\
             [ $# -gt 0 ] || {{ echo 'usage: sudo COMMAND' >&2; exit 1; }}\n\
             case \"$user\" in\n\
               root) exec env -i PATH=\"$PATH\" HOME={home} LANG=C.UTF-8 \"$@\";;\n\
               postgres) exec env -i PATH=\"$PATH\" HOME={home} LANG=C.UTF-8 PGHOST={sock} PGPORT={pg_port} PGUSER=postgres \"$@\";;\n\
               *) echo \"sudo: unknown user $user\" >&2; exit 1;;\n\
             esac\n",
            home = quote(&s.home.display().to_string()),
            sock = quote(&s.pg_socket.display().to_string()),
            pg_port = s.pg_port,
        ),
    )?;
    write_tool(
        dir,
        "useradd",
        &format!(
            "# Records the user (and its group) in the scratch root's /etc/passwd and /etc/group.\n\
             home=/nonexistent shell=/usr/sbin/nologin name=\n\
             while [ $# -gt 0 ]; do case \"$1\" in\n\
               --system|-r|--no-create-home|-M|--user-group|-U) shift;;\n\
               --home-dir|-d) home=$2; shift 2;;\n\
               --shell|-s) shell=$2; shift 2;;\n\
               -*) echo \"useradd (test shim): option $1 is not supported\" >&2; exit 2;;\n\
               *) [ -z \"$name\" ] || {{ echo 'useradd: one name' >&2; exit 2; }}; name=$1; shift;;\n\
             esac; done\n\
             [ -n \"$name\" ] || {{ echo 'useradd: no name' >&2; exit 2; }}\n\
             mkdir -p {root}/etc\n\
             if grep -q \"^$name:\" {root}/etc/passwd 2>/dev/null; then echo \"useradd: user '$name' already exists\" >&2; exit 9; fi\n\
             echo \"$name:x:999:999::$home:$shell\" >> {root}/etc/passwd\n\
             echo \"$name:x:999:\" >> {root}/etc/group\n"
        ),
    )?;
    write_tool(
        dir,
        "install",
        &format!(
            "# install without -o/-g (their user and group must exist), inside the scratch root only.\n\
             {inside_root}{known}args=()\n\
             while [ $# -gt 0 ]; do case \"$1\" in\n\
               -o) known_user \"$2\"; shift 2;;\n\
               -g) known_group \"$2\"; shift 2;;\n\
               -m) args+=(\"$1\" \"$2\"); shift 2;;\n\
               -d|-D) args+=(\"$1\"); shift;;\n\
               -*) echo \"install (test shim): option $1 is not supported\" >&2; exit 2;;\n\
               *) inside_root \"$1\"; args+=(\"$1\"); shift;;\n\
             esac; done\n\
             exec /usr/bin/install \"${{args[@]}}\"\n"
        ),
    )?;
    for (tool, check) in [
        (
            "chown",
            "known_user \"${1%%:*}\"; case \"$1\" in *:?*) known_group \"${1#*:}\";; esac",
        ),
        ("chgrp", "known_group \"$1\""),
    ] {
        write_tool(
            dir,
            tool,
            &format!(
                "# Checks the owner exists and the paths are inside the scratch root; changes nothing.\n\
                 {inside_root}{known}while [ \"${{1:-}}\" != \"${{1#-}}\" ]; do shift; done\n\
                 {check}; shift\n\
                 for path in \"$@\"; do inside_root \"$path\"; [ -e \"$path\" ] || {{ echo \"{tool}: $path: No such file or directory\" >&2; exit 1; }}; done\n"
            ),
        )?;
    }
    write_tool(
        dir,
        "cargo",
        &format!(
            "# DEPLOY.md's build gives the payoutd this test was built with; `cargo xtask` is this checkout's xtask.\n\
             if [ \"$*\" = {build} ]; then\n\
               mkdir -p target/release && cp --reflink=auto {payoutd} target/release/payoutd\n\
               echo '    Finished `release` profile [optimized] target(s) (the test'\"'\"'s cargo: the payoutd it was built with)' >&2\n\
               exit 0\n\
             fi\n\
             if [ \"${{1:-}}\" = xtask ]; then shift; exec {xtask} \"$@\"; fi\n\
             echo \"cargo (test shim): only \\`cargo {BUILD_ARGS}\\` (DEPLOY.md's build) and \\`cargo xtask ...\\` are run here, not \\`cargo $*\\`\" >&2\n\
             exit 101\n",
            build = quote(BUILD_ARGS),
            payoutd = quote(&s.payoutd.display().to_string()),
            xtask = quote(&s.xtask.display().to_string()),
        ),
    )?;
    write_tool(
        dir,
        "curl",
        &format!(
            "# The guide's public host name is the test's TLS listener, trusted through its certificate.\n\
             exec {curl} --connect-to payouts.example.com:443:127.0.0.1:{port} --cacert {ca} \"$@\"\n",
            curl = quote(&s.curl.display().to_string()),
            port = s.https_port,
            ca = quote(&s.ca.display().to_string()),
        ),
    )?;
    // Commands that would change the machine and that the guide does not use yet: refused,
    // so a block that starts using one fails here instead of changing the machine.
    for tool in REFUSED {
        write_tool(
            dir,
            tool,
            &format!(
                "echo \"{tool} (test shim): would change the machine; give it a shim in \
                 crates/app-actix/tests/support/deploy_md/host.rs first\" >&2\nexit 2\n"
            ),
        )?;
    }
    if let Some(python3) = &s.python3 {
        std::os::unix::fs::symlink(python3, dir.join("python3")).map_err(|err| err.to_string())?;
    }
    Ok(())
}

/// What happens between blocks (after block `index`): the test's own steps, the service's
/// health. An error fails the shell there.
pub type BetweenBlocks = Box<dyn FnMut(usize, &mut Service) -> Result<(), String> + Send>;

/// The test's systemd and the record of the blocks that finished.
pub struct Control {
    pub service: Service,
    pub finished: Vec<(usize, Instant)>,
    pub between: BetweenBlocks,
}

impl Control {
    fn answer(&mut self, args: &[String]) -> Answer {
        match args.split_first() {
            Some((tool, rest)) if tool == "systemctl" => self.systemctl(rest),
            Some((tool, rest)) if tool == "journalctl" => self.journalctl(rest),
            Some((tool, rest)) if tool == "step" => {
                let Some(index) = rest.first().and_then(|i| i.parse().ok()) else {
                    return (2, String::new(), "step: no block index\n".into());
                };
                self.finished.push((index, Instant::now()));
                match (self.between)(index, &mut self.service) {
                    Ok(()) => (0, String::new(), String::new()),
                    Err(err) => (1, String::new(), format!("{err}\n")),
                }
            }
            _ => (
                2,
                String::new(),
                format!("unknown control request {args:?}\n"),
            ),
        }
    }

    fn systemctl(&mut self, args: &[String]) -> Answer {
        let mut now = false;
        let mut words = Vec::new();
        for arg in args {
            match arg.as_str() {
                "--now" => now = true,
                "--no-pager" | "-q" | "--quiet" => {}
                option if option.starts_with('-') => {
                    return (
                        2,
                        String::new(),
                        format!("systemctl (test shim): option {option} is not supported\n"),
                    );
                }
                word => words.push(word.to_owned()),
            }
        }
        let Some((verb, units)) = words.split_first() else {
            return (
                2,
                String::new(),
                "systemctl (test shim): no command\n".into(),
            );
        };
        if verb == "daemon-reload" {
            return match self.service.load() {
                Ok(()) => (0, String::new(), String::new()),
                Err(err) => (1, String::new(), format!("{err}\n")),
            };
        }
        let name = &self.service.name;
        if units.len() != 1 || (units[0] != *name && units[0] != format!("{name}.service")) {
            return (
                5,
                String::new(),
                format!("Unit {}.service not found.\n", units.join(" ")),
            );
        }
        match verb.as_str() {
            "start" => self.service.start(),
            "stop" => self.service.stop_command(),
            "restart" => {
                let stopped = self.service.stop_command();
                if stopped.0 != 0 {
                    return stopped;
                }
                self.service.start()
            }
            "is-active" => {
                if self.service.is_running() {
                    (0, "active\n".into(), String::new())
                } else {
                    (3, "inactive\n".into(), String::new())
                }
            }
            "enable" => self.enable(now),
            other => (
                2,
                String::new(),
                format!("systemctl (test shim): {other} is not supported\n"),
            ),
        }
    }

    /// `enable`: the `WantedBy=` links systemd makes, then `--now`'s start.
    fn enable(&mut self, now: bool) -> Answer {
        if self.service.loaded.is_none()
            && let Err(err) = self.service.load()
        {
            return (1, String::new(), format!("{err}\n"));
        }
        let wanted_by = self
            .service
            .loaded
            .as_ref()
            .map(|(unit, _)| unit.wanted_by.clone())
            .unwrap_or_default();
        let mut stderr = String::new();
        let unit_dir = self
            .service
            .unit_path
            .parent()
            .map(Path::to_owned)
            .unwrap_or_default();
        for target in wanted_by {
            let wants = unit_dir.join(format!("{target}.wants"));
            let link = wants.join(format!("{}.service", self.service.name));
            if link.exists() {
                continue;
            }
            if let Err(err) = fs::create_dir_all(&wants)
                .and_then(|()| std::os::unix::fs::symlink(&self.service.unit_path, &link))
            {
                return (1, String::new(), format!("{}: {err}\n", link.display()));
            }
            stderr.push_str(&format!(
                "Created symlink {} → {}.\n",
                link.display(),
                self.service.unit_path.display()
            ));
        }
        if now {
            let (code, out, err) = self.service.start();
            return (code, out, format!("{stderr}{err}"));
        }
        (0, String::new(), stderr)
    }

    fn journalctl(&mut self, args: &[String]) -> Answer {
        let mut lines: Option<usize> = None;
        let mut unit = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "-u" | "--unit" => unit = args.next().cloned(),
                "-n" | "--lines" => lines = args.next().and_then(|n| n.parse().ok()),
                // Each line as it was written: the journal here holds nothing else.
                "-o" | "--output" if args.next().is_some_and(|o| o == "cat") => {}
                "--output=cat" => {}
                "--no-pager" | "-b" | "-q" => {}
                option => {
                    return (
                        2,
                        String::new(),
                        format!("journalctl (test shim): {option} is not supported\n"),
                    );
                }
            }
        }
        let name = &self.service.name;
        if unit.as_deref() != Some(name) && unit.as_deref() != Some(&format!("{name}.service")) {
            return (
                1,
                String::new(),
                "journalctl (test shim): only -u payoutd is kept\n".into(),
            );
        }
        let journal = fs::read_to_string(&self.service.journal).unwrap_or_default();
        let all: Vec<&str> = journal.lines().collect();
        let from = all.len().saturating_sub(lines.unwrap_or(all.len()));
        (
            0,
            all[from..].iter().map(|l| format!("{l}\n")).collect(),
            String::new(),
        )
    }
}

/// Serves the shims' requests until the process ends: one request per connection (the
/// argument count, then each argument NUL-terminated), answered with the exit code on a line,
/// stdout and stderr in `dir`'s `out` and `err`.
pub fn serve(listener: TcpListener, dir: PathBuf, control: Arc<Mutex<Control>>) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Ok(write_half) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(stream);
            let mut count = String::new();
            if reader.read_line(&mut count).is_err() {
                continue;
            }
            let count: usize = count.trim().parse().unwrap_or(0);
            let mut args = Vec::with_capacity(count);
            for _ in 0..count {
                let mut arg = Vec::new();
                if reader.read_until(0, &mut arg).is_err() {
                    break;
                }
                arg.pop();
                args.push(String::from_utf8_lossy(&arg).into_owned());
            }
            let (code, out, err) = match control.lock() {
                Ok(mut control) => control.answer(&args),
                Err(poisoned) => poisoned.into_inner().answer(&args),
            };
            let _ = fs::write(dir.join("out"), out);
            let _ = fs::write(dir.join("err"), err);
            let mut write_half = write_half;
            let _ = writeln!(write_half, "{code}");
        }
    });
}
