//! Helpers for running child processes with readable errors.

use std::{
    env, fs, io,
    os::unix::{fs::PermissionsExt, process::ExitStatusExt},
    path::{Path, PathBuf},
    process::{Command, ExitStatus, Output},
};

/// `program arg...`, for messages.
pub fn display(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|arg| arg.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The error for a command that could not be started.
fn spawn_error(cmd: &Command, err: &io::Error) -> String {
    format!("cannot run `{}`: {err}", display(cmd))
}

/// Runs `cmd` with inherited stdio, failing unless it succeeds.
pub fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|err| spawn_error(cmd, &err))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", display(cmd)))
    }
}

/// Runs `cmd` with captured output, whether or not it succeeds.
pub fn output(cmd: &mut Command) -> Result<Output, String> {
    cmd.output().map_err(|err| spawn_error(cmd, &err))
}

/// Runs `cmd` and returns its stdout, failing (with its output) unless it succeeds.
pub fn stdout(cmd: &mut Command) -> Result<String, String> {
    let out = output(cmd)?;
    if !out.status.success() {
        return Err(failure(cmd, &out));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("`{}` printed invalid UTF-8", display(cmd)))
}

/// The error for a command that ran but failed, with whatever it printed.
pub fn failure(cmd: &Command, out: &Output) -> String {
    let mut msg = format!("`{}` failed ({})", display(cmd), out.status);
    for stream in [&out.stdout, &out.stderr] {
        let text = String::from_utf8_lossy(stream);
        let text = text.trim_end();
        if !text.is_empty() {
            msg.push('\n');
            msg.push_str(text);
        }
    }
    msg
}

/// The exit code to forward for a child's exit status: its own, or 128 + the signal that
/// killed it, as a shell reports it, so callers can tell; 1 when neither fits.
pub fn status_code(status: ExitStatus) -> u8 {
    let code = status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1);
    u8::try_from(code)
        .ok()
        .filter(|&code| code != 0)
        .unwrap_or(1)
}

/// The first executable called `name` on `PATH`.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    env::split_paths(&env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| is_executable(path))
}

/// Whether `path` is an executable file.
pub fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Quotes `word` for a POSIX shell, leaving plain words bare for readability.
pub fn sh_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=@,+%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::sh_quote;

    #[test]
    fn quoting() {
        assert_eq!(sh_quote("pk_test-1.2"), "pk_test-1.2");
        assert_eq!(sh_quote(""), "''");
        assert_eq!(sh_quote("a b"), "'a b'");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote("/x?asset=aud"), "'/x?asset=aud'");
    }
}
