//! A systemd service unit, read as systemd reads the settings the test honours, and run as
//! systemd would run it (see the test's module documentation for what it cannot honour).

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// systemd's `PATH` for services.
const SERVICE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The longest the test waits for the service to stop, whatever `TimeoutStopSec=` says.
const STOP_WAIT_CAP: Duration = Duration::from_secs(60);

/// A command line of `ExecStart=` or `ExecStartPre=`.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecLine {
    /// `-` prefix: a failure is ignored.
    pub ignore_failure: bool,
    pub argv: Vec<String>,
}

/// The settings of a service unit that the test honours.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Unit {
    pub environment: Vec<(String, String)>,
    /// `EnvironmentFile=` paths, each with whether it may be missing (`-` prefix).
    pub environment_files: Vec<(PathBuf, bool)>,
    /// `LoadCredential=NAME:PATH`.
    pub credentials: Vec<(String, PathBuf)>,
    pub working_directory: Option<PathBuf>,
    pub state_directories: Vec<String>,
    pub state_directory_mode: Option<u32>,
    pub umask: Option<u32>,
    pub user: Option<String>,
    pub exec_start_pre: Vec<ExecLine>,
    pub exec_start: Option<ExecLine>,
    pub timeout_stop: Option<Duration>,
    pub kill_signal: Option<String>,
    pub wanted_by: Vec<String>,
}

/// Splits a unit's value into words as systemd does (white space, double or single quotes).
fn words(value: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') | (None, '\\') => {
                current.push(chars.next().ok_or("a trailing backslash")?);
                in_word = true;
            }
            (Some(_), c) => current.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return Err(format!("an unclosed quote in {value:?}"));
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

/// An `ExecStart=`-like command line: its prefix, then words, `%%` as `%`. Specifiers and `$NAME`
/// are refused: the test does not expand them.
fn exec_line(value: &str) -> Result<ExecLine, String> {
    let value = value.trim();
    let (ignore_failure, value) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    if value.starts_with(['@', '+', '!', ':']) {
        return Err(format!(
            "the prefix of {value:?} is not supported by this test"
        ));
    }
    if value.contains('$') {
        return Err(format!(
            "variables in {value:?} are not supported by this test"
        ));
    }
    let mut argv = Vec::new();
    for word in words(value)? {
        let mut expanded = String::new();
        let mut chars = word.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                expanded.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => expanded.push('%'),
                other => {
                    return Err(format!(
                        "the specifier %{} in {value:?} is not supported by this test",
                        other.map(String::from).unwrap_or_default()
                    ));
                }
            }
        }
        argv.push(expanded);
    }
    if argv.is_empty() || !argv[0].starts_with('/') {
        return Err(format!("{value:?}: the command must be an absolute path"));
    }
    Ok(ExecLine {
        ignore_failure,
        argv,
    })
}

fn duration(value: &str) -> Result<Duration, String> {
    let value = value.trim();
    let (number, unit) = value.split_at(
        value
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(value.len()),
    );
    let number: u64 = number
        .parse()
        .map_err(|_| format!("a duration: {value:?}"))?;
    match unit.trim() {
        "" | "s" | "sec" => Ok(Duration::from_secs(number)),
        "ms" => Ok(Duration::from_millis(number)),
        "min" | "m" => Ok(Duration::from_secs(number * 60)),
        other => Err(format!(
            "the duration unit {other:?} is not supported by this test"
        )),
    }
}

fn octal(value: &str) -> Result<u32, String> {
    u32::from_str_radix(value.trim(), 8).map_err(|_| format!("an octal mode: {value:?}"))
}

/// Reads a unit file: comments (`#`, `;`), sections, continuation lines (`\`). Settings the
/// test does not run (the sandboxing, `Restart=`) are accepted and left aside; a setting it
/// honours with a value it cannot read is an error.
pub fn parse_unit(text: &str) -> Result<Unit, String> {
    let mut unit = Unit::default();
    let mut section = String::new();
    let mut logical = String::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if logical.is_empty() && (line.is_empty() || line.starts_with(['#', ';'])) {
            continue;
        }
        if let Some(continued) = line.strip_suffix('\\') {
            logical.push_str(continued);
            logical.push(' ');
            continue;
        }
        logical.push_str(line);
        let line = std::mem::take(&mut logical);
        if line.starts_with('[') {
            section = line.trim_matches(['[', ']']).to_owned();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {}: not KEY=VALUE: {line:?}", index + 1))?;
        let (key, value) = (key.trim(), value.trim());
        let context = |err: String| format!("line {} ({key}=): {err}", index + 1);
        match (section.as_str(), key) {
            ("Service", "Environment") => {
                for word in words(value).map_err(context)? {
                    let (name, value) = word
                        .split_once('=')
                        .ok_or_else(|| context(format!("not NAME=VALUE: {word:?}")))?;
                    unit.environment.push((name.to_owned(), value.to_owned()));
                }
            }
            ("Service", "EnvironmentFile") => {
                unit.environment_files.push(match value.strip_prefix('-') {
                    Some(path) => (PathBuf::from(path), true),
                    None => (PathBuf::from(value), false),
                })
            }
            ("Service", "LoadCredential") => {
                let (name, path) = value.split_once(':').ok_or_else(|| {
                    context("LoadCredential= without a path is not supported by this test".into())
                })?;
                if !path.starts_with('/') {
                    return Err(context(format!("{path:?} is not an absolute path")));
                }
                unit.credentials
                    .push((name.to_owned(), PathBuf::from(path)));
            }
            ("Service", "WorkingDirectory") => unit.working_directory = Some(PathBuf::from(value)),
            ("Service", "StateDirectory") => {
                unit.state_directories
                    .extend(words(value).map_err(context)?);
            }
            ("Service", "StateDirectoryMode") => {
                unit.state_directory_mode = Some(octal(value).map_err(context)?);
            }
            ("Service", "UMask") => unit.umask = Some(octal(value).map_err(context)?),
            ("Service", "User") => unit.user = Some(value.to_owned()),
            ("Service", "ExecStartPre") => {
                let line = exec_line(value).map_err(context)?;
                unit.exec_start_pre.push(line);
            }
            ("Service", "ExecStart") => {
                if unit.exec_start.is_some() {
                    return Err(context("a second ExecStart= (Type=exec takes one)".into()));
                }
                unit.exec_start = Some(exec_line(value).map_err(context)?);
            }
            ("Service", "TimeoutStopSec") => {
                unit.timeout_stop = Some(duration(value).map_err(context)?)
            }
            ("Service", "KillSignal") => unit.kill_signal = Some(value.to_owned()),
            ("Service", "Type") if value != "exec" && value != "simple" => {
                return Err(context(format!(
                    "Type={value} is not supported by this test"
                )));
            }
            ("Install", "WantedBy") => unit.wanted_by.extend(words(value).map_err(context)?),
            _ => {}
        }
    }
    if unit.exec_start.is_none() {
        return Err("the unit has no ExecStart=".into());
    }
    Ok(unit)
}

/// An environment file as systemd reads it: `NAME=VALUE` lines, `#` and `;` comments, blank
/// lines; a value in matching quotes loses them. A line of another shape is an error here
/// (systemd would skip it with a warning in the journal).
pub fn parse_environment_file(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut variables = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }
        let (name, value) = line
            .split_once('=')
            .ok_or_else(|| format!("line {}: not NAME=VALUE: {line:?}", index + 1))?;
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "line {}: {name:?} is not a variable name",
                index + 1
            ));
        }
        let value = value.trim();
        let value = ['"', '\'']
            .iter()
            .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
            .unwrap_or(value);
        variables.push((name.to_owned(), value.to_owned()));
    }
    Ok(variables)
}

/// The service as the test's systemd runs it: the unit it loaded, its main process, its journal.
pub struct Service {
    pub name: String,
    /// Where the unit file is installed (under the scratch root).
    pub unit_path: PathBuf,
    /// Maps the installed unit's host paths onto the scratch root.
    pub rewrite: Box<dyn Fn(&str) -> String + Send>,
    pub root: PathBuf,
    pub journal: PathBuf,
    /// The unit as last loaded, and the file's text it was loaded from.
    pub loaded: Option<(Unit, String)>,
    pub main: Option<Child>,
    /// Warnings systemd would print (a unit changed on disk since it was loaded), not yet
    /// reported.
    pub warnings: Vec<String>,
}

/// What a `systemctl` or `journalctl` call answers: exit code, stdout, stderr.
pub type Answer = (i32, String, String);

impl Service {
    fn journal_line(&self, text: &str) {
        use std::io::Write;
        if let Ok(mut file) = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.journal)
        {
            let _ = writeln!(file, "{text}");
        }
    }

    /// Loads the installed unit (`daemon-reload`, or the first use of the unit).
    pub fn load(&mut self) -> Result<(), String> {
        let text = fs::read_to_string(&self.unit_path)
            .map_err(|err| format!("Unit {}.service not found ({err}).", self.name))?;
        let unit = parse_unit(&(self.rewrite)(&text))
            .map_err(|err| format!("{}: {err}", self.unit_path.display()))?;
        self.loaded = Some((unit, text));
        Ok(())
    }

    /// The unit to run, loading it the first time; a warning when the file changed since, as
    /// systemd keeps the loaded one until `daemon-reload`.
    fn unit(&mut self) -> Result<(Unit, String), String> {
        if self.loaded.is_none() {
            self.load()?;
        }
        let (unit, text) = self.loaded.clone().ok_or("no unit")?;
        let now = fs::read_to_string(&self.unit_path).unwrap_or_default();
        let warning = if now == text {
            String::new()
        } else {
            let warning = format!(
                "Warning: The unit file, source configuration file or drop-ins of {}.service changed on disk. Run 'systemctl daemon-reload' to reload units.\n",
                self.name
            );
            self.warnings.push(warning.trim_end().to_owned());
            warning
        };
        Ok((unit, warning))
    }

    pub fn is_running(&mut self) -> bool {
        self.main
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// The main process's exit, when it ended by itself.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.main
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }

    fn credentials_dir(&self) -> PathBuf {
        self.root
            .join("run/credentials")
            .join(format!("{}.service", self.name))
    }

    /// The process environment systemd gives the unit's commands.
    fn environment(&self, unit: &Unit) -> Result<BTreeMap<String, String>, String> {
        let mut environment = BTreeMap::from([("PATH".to_owned(), SERVICE_PATH.to_owned())]);
        environment.extend(unit.environment.iter().cloned());
        for (path, optional) in &unit.environment_files {
            match fs::read_to_string(path) {
                Ok(text) => environment.extend(
                    parse_environment_file(&text)
                        .map_err(|err| format!("{}: {err}", path.display()))?,
                ),
                Err(_) if *optional => {}
                Err(err) => {
                    return Err(format!(
                        "Failed to load environment files: {}: {err}",
                        path.display()
                    ));
                }
            }
        }
        Ok(environment)
    }

    /// Copies each `LoadCredential=` file into a private directory (0400 files), as systemd
    /// does before the first command; a missing file fails the start.
    fn load_credentials(&self, unit: &Unit) -> Result<Option<PathBuf>, String> {
        if unit.credentials.is_empty() {
            return Ok(None);
        }
        let dir = self.credentials_dir();
        remove_private_dir(&dir);
        fs::create_dir_all(&dir).map_err(|err| err.to_string())?;
        for (name, path) in &unit.credentials {
            let target = dir.join(name);
            fs::copy(path, &target).map_err(|err| {
                format!(
                    "{}.service: Failed to set up credentials: {}: {err}",
                    self.name,
                    path.display()
                )
            })?;
            fs::set_permissions(&target, fs::Permissions::from_mode(0o400))
                .map_err(|err| err.to_string())?;
        }
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o500))
            .map_err(|err| err.to_string())?;
        Ok(Some(dir))
    }

    fn command(
        &self,
        unit: &Unit,
        line: &ExecLine,
        environment: &BTreeMap<String, String>,
    ) -> Result<Command, String> {
        // UMask= through a shell, which then becomes the command.
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(format!(
                "umask {:04o} && exec \"$0\" \"$@\"",
                unit.umask.unwrap_or(0o022)
            ))
            .args(&line.argv)
            .env_clear()
            .envs(environment)
            .current_dir(
                unit.working_directory
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("/")),
            )
            .stdin(Stdio::null());
        let journal = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.journal)
            .map_err(|err| err.to_string())?;
        let journal_err = journal.try_clone().map_err(|err| err.to_string())?;
        command.stdout(journal).stderr(journal_err);
        Ok(command)
    }

    /// `systemctl start`: credentials, state directories, environment, `ExecStartPre=` lines in
    /// order (a failing one fails the start), then `ExecStart=` in the background.
    pub fn start(&mut self) -> Answer {
        if self.is_running() {
            return (0, String::new(), String::new());
        }
        let (unit, warning) = match self.unit() {
            Ok(loaded) => loaded,
            Err(err) => {
                return (
                    5,
                    String::new(),
                    format!("Failed to start {}.service: {err}\n", self.name),
                );
            }
        };
        match self.start_unit(&unit) {
            Ok(()) => (0, String::new(), warning),
            Err(err) => {
                self.journal_line(&err);
                (
                    1,
                    String::new(),
                    format!(
                        "{warning}Job for {name}.service failed because the control process exited with error code.\n\
                         See \"systemctl status {name}.service\" and \"journalctl -xeu {name}.service\" for details.\n",
                        name = self.name
                    ),
                )
            }
        }
    }

    fn start_unit(&mut self, unit: &Unit) -> Result<(), String> {
        self.journal_line(&format!("Starting {}.service...", self.name));
        let mut environment = self.environment(unit)?;
        if let Some(dir) = self.load_credentials(unit)? {
            environment.insert("CREDENTIALS_DIRECTORY".into(), dir.display().to_string());
        }
        let mut state = Vec::new();
        for name in &unit.state_directories {
            let dir = self.root.join("var/lib").join(name);
            fs::create_dir_all(&dir).map_err(|err| err.to_string())?;
            fs::set_permissions(
                &dir,
                fs::Permissions::from_mode(unit.state_directory_mode.unwrap_or(0o755)),
            )
            .map_err(|err| err.to_string())?;
            state.push(dir.display().to_string());
        }
        if !state.is_empty() {
            environment.insert("STATE_DIRECTORY".into(), state.join(":"));
        }
        for line in &unit.exec_start_pre {
            let status = self
                .command(unit, line, &environment)?
                .status()
                .map_err(|err| format!("{}: {err}", line.argv[0]))?;
            if !status.success() && !line.ignore_failure {
                return Err(format!(
                    "{}.service: Control process exited, {status}: {}",
                    self.name,
                    line.argv.join(" ")
                ));
            }
        }
        let Some(main) = &unit.exec_start else {
            return Err("no ExecStart=".into());
        };
        let mut command = self.command(unit, main, &environment)?;
        command.process_group(0);
        let child = command
            .spawn()
            .map_err(|err| format!("{}: {err}", main.argv[0]))?;
        self.main = Some(child);
        self.journal_line(&format!("Started {}.service.", self.name));
        Ok(())
    }

    /// `systemctl stop`: `KillSignal=` (SIGTERM) to the main process, then up to
    /// `TimeoutStopSec=` for it to exit (then SIGKILL). The exit status, if it was running.
    pub fn stop(&mut self) -> Result<Option<ExitStatus>, String> {
        let Some(mut child) = self.main.take() else {
            return Ok(None);
        };
        let (signal, timeout) = self
            .loaded
            .as_ref()
            .map(|(unit, _)| (unit.kill_signal.clone(), unit.timeout_stop))
            .unwrap_or_default();
        let signal = signal.unwrap_or_else(|| "SIGTERM".into());
        let timeout = timeout
            .unwrap_or(Duration::from_secs(90))
            .min(STOP_WAIT_CAP);
        self.journal_line(&format!("Stopping {}.service...", self.name));
        let _ = Command::new("kill")
            .args([
                "-s",
                signal.trim_start_matches("SIG"),
                &child.id().to_string(),
            ])
            .status();
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().map_err(|err| err.to_string())? {
                break status;
            }
            if started.elapsed() > timeout {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{}", child.id())])
                    .status();
                let status = child.wait().map_err(|err| err.to_string())?;
                self.journal_line(&format!(
                    "{}.service: State 'stop-sigterm' timed out. Killing.",
                    self.name
                ));
                return Err(format!(
                    "{}.service did not stop within {timeout:?} of {signal} ({status})",
                    self.name
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        remove_private_dir(&self.credentials_dir());
        self.journal_line(&format!("Stopped {}.service ({status}).", self.name));
        Ok(Some(status))
    }

    /// `systemctl stop` as a command: a stop that is not clean fails.
    pub fn stop_command(&mut self) -> Answer {
        match self.stop() {
            Ok(Some(status)) if !status.success() => (
                1,
                String::new(),
                format!("{}.service: Main process exited, {status}\n", self.name),
            ),
            Ok(_) => (0, String::new(), String::new()),
            Err(err) => (1, String::new(), format!("{err}\n")),
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(mut child) = self.main.take() {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
        }
    }
}

/// Removes a directory made read-only (0500) by the test's systemd.
fn remove_private_dir(dir: &Path) {
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    let _ = fs::remove_dir_all(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_is_read_as_systemd_reads_the_settings_the_test_honours() {
        let unit = parse_unit(
            "# a comment\n[Unit]\nDescription=x\n\n[Service]\nType=exec\nUser=payoutd\n\
             Environment=A=1 \"B=two words\"\nEnvironmentFile=/r/etc/x.env\nEnvironmentFile=-/r/etc/y.env\n\
             LoadCredential=KEY:/r/etc/credentials/KEY\n#LoadCredential=OLD:/r/etc/credentials/OLD\n\
             ; another comment\nExecStartPre=-/bin/check \\\n   --flag 1\nExecStart=/usr/bin/serve \"two words\" 100%%\n\
             StateDirectory=payoutd\nStateDirectoryMode=0750\nUMask=0077\nTimeoutStopSec=60s\nKillSignal=SIGTERM\n\
             ProtectSystem=strict\n\n[Install]\nWantedBy=multi-user.target\n",
        )
        .unwrap();
        assert_eq!(
            unit,
            Unit {
                environment: vec![("A".into(), "1".into()), ("B".into(), "two words".into())],
                environment_files: vec![
                    ("/r/etc/x.env".into(), false),
                    ("/r/etc/y.env".into(), true)
                ],
                credentials: vec![("KEY".into(), "/r/etc/credentials/KEY".into())],
                working_directory: None,
                state_directories: vec!["payoutd".into()],
                state_directory_mode: Some(0o750),
                umask: Some(0o077),
                user: Some("payoutd".into()),
                exec_start_pre: vec![ExecLine {
                    ignore_failure: true,
                    argv: vec!["/bin/check".into(), "--flag".into(), "1".into()],
                }],
                exec_start: Some(ExecLine {
                    ignore_failure: false,
                    argv: vec!["/usr/bin/serve".into(), "two words".into(), "100%".into()],
                }),
                timeout_stop: Some(Duration::from_secs(60)),
                kill_signal: Some("SIGTERM".into()),
                wanted_by: vec!["multi-user.target".into()],
            }
        );
    }

    #[test]
    fn what_the_test_cannot_run_is_refused_not_skipped() {
        for (unit, error) in [
            ("[Service]\nType=exec\n", "no ExecStart"),
            ("[Service]\nExecStart=serve\n", "absolute path"),
            ("[Service]\nExecStart=+/bin/serve\n", "prefix"),
            ("[Service]\nExecStart=/bin/serve %i\n", "specifier %i"),
            ("[Service]\nExecStart=/bin/serve $A\n", "variables"),
            (
                "[Service]\nType=notify\nExecStart=/bin/serve\n",
                "Type=notify",
            ),
            (
                "[Service]\nLoadCredential=KEY\nExecStart=/bin/serve\n",
                "without a path",
            ),
            ("[Service]\nExecStart=/bin/serve \"open\n", "unclosed quote"),
            (
                "[Service]\nExecStart=/bin/a\nExecStart=/bin/b\n",
                "second ExecStart",
            ),
        ] {
            let err = parse_unit(unit).unwrap_err();
            assert!(err.contains(error), "{unit:?}: {err}");
        }
    }

    #[test]
    fn an_environment_file_is_read_as_systemd_reads_it() {
        assert_eq!(
            parse_environment_file("# settings\nA=1\n\n; note\nB=\"quoted value\"\nC='x'\nD=\n")
                .unwrap(),
            [
                ("A".into(), "1".into()),
                ("B".into(), "quoted value".into()),
                ("C".into(), "x".into()),
                ("D".into(), String::new()),
            ]
        );
        assert!(parse_environment_file("export A=1\n").is_err());
        assert!(parse_environment_file("just words\n").is_err());
    }
}
