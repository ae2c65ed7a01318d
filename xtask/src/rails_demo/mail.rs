//! The mail catcher and the confirmation links in the messages it captured.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::Guard;
use crate::{bank, paths};

/// Starts the mail catcher on a free port: `(process, port)`.
pub(super) fn start_smtp(python: &Path, out: &Path) -> Result<(Guard, u16), String> {
    let script = paths::workspace_root().join("crates/adapters-smtp/tests/support/smtp_server.py");
    let port = bank::free_port()?;
    let mut child = Command::new(python)
        .arg(&script)
        .arg("--port")
        .arg(port.to_string())
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|err| {
            format!(
                "cannot run {} {}: {err}",
                python.display(),
                script.display()
            )
        })?;
    let stdout = child.stdout.take();
    let guard = Guard(Some(child));
    let mut line = String::new();
    if let Some(stdout) = stdout {
        let _ = BufReader::new(stdout).read_line(&mut line);
    }
    if line.trim() != "READY" {
        return Err(format!("the SMTP server did not start (it said {line:?})"));
    }
    Ok((guard, port))
}

/// The confirmation links in the captured messages.
pub(super) fn confirmation_links(dir: &Path) -> Result<Vec<String>, String> {
    let mut links = Vec::new();
    for name in bank::complete_files(dir)? {
        let path = dir.join(&name);
        let text = fs::read_to_string(&path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        let record: Value =
            serde_json::from_str(&text).map_err(|err| format!("{}: {err}", path.display()))?;
        let data = record["data"].as_str().unwrap_or_default();
        if let Some(link) = find_link(data) {
            links.push(link);
        }
    }
    Ok(links)
}

/// The first `http…/confirm/<token>` link in a message (soft line breaks of quoted-printable
/// removed).
pub(super) fn find_link(message: &str) -> Option<String> {
    let text = message.replace("=\r\n", "").replace("=\n", "");
    let at = text.find("/confirm/")?;
    let start = text[..at].rfind("http")?;
    let end = text[at + "/confirm/".len()..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .map_or(text.len(), |i| at + "/confirm/".len() + i);
    Some(text[start..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_links_are_found() {
        let plain =
            "Confirm them by opening this link:\nhttp://127.0.0.1:8080/confirm/abc_DEF-1\n\nThe";
        assert_eq!(
            find_link(plain).as_deref(),
            Some("http://127.0.0.1:8080/confirm/abc_DEF-1")
        );
        let wrapped = "link:\nhttp://127.0.0.1:8080/confirm/abc=\r\n_DEF\n";
        assert_eq!(
            find_link(wrapped).as_deref(),
            Some("http://127.0.0.1:8080/confirm/abc_DEF")
        );
        assert_eq!(find_link("no link here"), None);
    }
}
