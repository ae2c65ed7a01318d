//! docs/DEPLOY.md, "Smoke-test production before the bank", run as written: its `sh` blocks in
//! order in one bash shell, in a scratch directory, with the `payoutd` just built and this
//! checkout's xtask (`cargo xtask bank --transport directory`) on `PATH`, against a fresh
//! database on the PostgreSQL of `DATABASE_URL`. What each block prints must be the `text` block
//! that follows it (`…` standing for anything within a line); a block without one must print
//! nothing. A failing command stops the shell (`set -eo pipefail`) and fails the test.
//!
//! The two ports the section names (payoutd's 8080, the mail catcher's 2525) are replaced by
//! free ones, so that the test runs beside anything else on the machine.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/database_url.rs"]
mod database_url;
use database_url::with_database;

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The section's heading, and the level of the heading that ends it.
const HEADING: &str = "## Smoke-test production before the bank";

/// How long the whole section may take (it takes a few seconds).
const DEADLINE: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// One `sh` block and the output the section shows for it (`None`: it prints nothing).
#[derive(Debug, PartialEq)]
struct Step {
    script: String,
    expected: Option<String>,
}

/// The section of `markdown` under `heading`, up to the next heading of the same level or
/// above.
fn section<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let start = markdown
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no {heading:?} heading"))
        + 1;
    let level = heading.chars().take_while(|c| *c == '#').count();
    let body = &markdown[start + heading.len()..];
    let end = body
        .match_indices('\n')
        .map(|(at, _)| at + 1)
        .find(|&at| {
            let line = &body[at..];
            let hashes = line.chars().take_while(|c| *c == '#').count();
            (1..=level).contains(&hashes) && line[hashes..].starts_with(' ')
        })
        .unwrap_or(body.len());
    &body[..end]
}

/// The `sh` blocks of `section`, each with the `text` block that follows it (before the next
/// `sh` block), if any.
fn steps(section: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = section.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```") else {
            continue;
        };
        let mut block = String::new();
        for inner in lines.by_ref() {
            if inner == "```" {
                break;
            }
            block.push_str(inner);
            block.push('\n');
        }
        match info {
            "sh" => steps.push(Step {
                script: block,
                expected: None,
            }),
            "text" => {
                let step = steps.last_mut().expect("a text block follows an sh block");
                assert!(step.expected.is_none(), "two outputs for one block");
                step.expected = Some(block);
            }
            other => panic!("a ```{other} block in the section"),
        }
    }
    steps
}

/// Whether `line` is `pattern`, each `…` of which stands for any text.
fn line_matches(pattern: &str, line: &str) -> bool {
    let mut pieces = pattern.split('…');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether `output` is `expected`, line for line.
fn output_matches(expected: &str, output: &str) -> bool {
    let expected: Vec<&str> = expected.trim_end().lines().collect();
    let output: Vec<&str> = output.trim_end().lines().collect();
    expected.len() == output.len()
        && expected
            .iter()
            .zip(&output)
            .all(|(pattern, line)| line_matches(pattern, line))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .unwrap()
}

/// A `python3` that has `aiosmtpd` (the section's mail catcher): `PAYOUT_PYTHON3` (which
/// `cargo xtask test` sets), Debian's, or the one on `PATH`.
fn python_with_aiosmtpd() -> PathBuf {
    std::env::var_os("PAYOUT_PYTHON3")
        .map(PathBuf::from)
        .into_iter()
        .chain(
            ["/usr/bin/python3", "python3"]
                .into_iter()
                .map(PathBuf::from),
        )
        .find(|python| {
            Command::new(python)
                .args(["-c", "import aiosmtpd"])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|status| status.success())
        })
        .expect(
            "a python3 with aiosmtpd (Debian: python3-aiosmtpd; `cargo xtask test` installs it)",
        )
}

fn psql(url: &str, sql: &str) -> Output {
    Command::new("psql")
        .arg(url)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs")
}

/// Kills the shell's process group (the bank, the mail catcher and payoutd it started in the
/// background), however the test ends.
struct KillGroup(Option<i32>);

impl Drop for KillGroup {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{group}")])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Drops the test's database, however the test ends.
struct DropDatabase {
    admin_url: String,
    database: String,
}

impl Drop for DropDatabase {
    fn drop(&mut self) {
        let _ = psql(
            &self.admin_url,
            &format!("DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)", self.database),
        );
    }
}

/// The marker printed after each block, so that the output can be split by block.
fn marker(index: usize) -> String {
    format!("@@@ end of block {index} @@@")
}

/// Directories with `cargo` (running only `cargo xtask …`, as this checkout's built xtask) and
/// `python3` (one with aiosmtpd) for the section's commands.
fn tools_dir(scratch: &Path) -> PathBuf {
    let debug = Path::new(env!("CARGO_BIN_EXE_payoutd"))
        .parent()
        .unwrap()
        .to_owned();
    let xtask = debug.join("xtask");
    assert!(
        xtask.is_file(),
        "{} is missing: build it (cargo build -p xtask; `cargo xtask test` does)",
        xtask.display()
    );
    let tools = scratch.join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let cargo = tools.join("cargo");
    std::fs::write(
        &cargo,
        format!(
            "#!/bin/sh\n\
             # The section's `cargo xtask …`, as the checkout's xtask binary.\n\
             [ \"$1\" = xtask ] || {{ echo \"this test's cargo runs only cargo xtask\" >&2; exit 2; }}\n\
             shift\n\
             exec '{}' \"$@\"\n",
            xtask.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink(python_with_aiosmtpd(), tools.join("python3")).unwrap();
    tools
}

/// Runs the steps in one bash shell in `scratch`: each block's output, or the failure.
fn run(steps: &[Step], scratch: &Path, database_url: &str) -> Result<Vec<String>, String> {
    let debug = Path::new(env!("CARGO_BIN_EXE_payoutd")).parent().unwrap();
    let tools = tools_dir(scratch);
    let path = std::env::join_paths([debug.to_owned(), tools].into_iter().chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let (http, smtp) = (free_port().to_string(), free_port().to_string());
    let mut script = String::from("set -eo pipefail\n");
    for (index, step) in steps.iter().enumerate() {
        script.push_str(&step.script.replace("8080", &http).replace("2525", &smtp));
        script.push_str(&format!("printf '\\n%s\\n' '{}'\n", marker(index)));
    }
    let script_path = scratch.join("section.sh");
    std::fs::write(&script_path, &script).unwrap();
    let (stdout, stderr) = (scratch.join("stdout"), scratch.join("stderr"));
    let mut shell = Command::new("bash");
    shell
        .arg(&script_path)
        .current_dir(scratch)
        .env("PATH", path)
        .env("DATABASE_URL", database_url)
        .env_remove("CREDENTIALS_DIRECTORY")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .process_group(0);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PAYOUT_") {
            shell.env_remove(name);
        }
    }
    let mut child = shell.spawn().unwrap();
    let _group = KillGroup(i32::try_from(child.id()).ok());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = std::fs::read_to_string(&stdout).unwrap();
    let logs = [
        "stderr",
        "target/smoke/bank.log",
        "target/smoke/payoutd.log",
    ]
    .iter()
    .map(|name| {
        let text = std::fs::read_to_string(scratch.join(name)).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        format!("--- {name} (its end):\n{}", tail.join("\n"))
    })
    .collect::<Vec<_>>()
    .join("\n");
    match status {
        Some(status) if status.success() => {}
        Some(status) => {
            return Err(format!(
                "the section's shell ended with {status}\n--- stdout:\n{output}\n{logs}"
            ));
        }
        None => {
            return Err(format!(
                "the section did not finish within {DEADLINE:?}\n--- stdout:\n{output}\n{logs}"
            ));
        }
    }
    let mut outputs = Vec::new();
    let mut rest = output.as_str();
    for index in 0..steps.len() {
        let marker = format!("\n{}\n", marker(index));
        let (before, after) = rest
            .split_once(&marker)
            .ok_or_else(|| format!("block {index} printed no end marker:\n{output}\n{logs}"))?;
        outputs.push(before.to_owned());
        rest = after;
    }
    Ok(outputs)
}

#[test]
fn deploy_md_smoke_test_runs_as_written_and_prints_what_it_shows() {
    let markdown = std::fs::read_to_string(repo().join("docs/DEPLOY.md")).unwrap();
    let steps = steps(section(&markdown, HEADING));
    assert!(steps.len() >= 5, "{steps:?}");
    let all: String = steps.iter().map(|s| s.script.as_str()).collect();
    for needed in [
        "cargo xtask bank --transport directory --return-share 1",
        "kind = \"directory\"",
        "payoutd admin run-cutoff --method usd/ach",
        "8080",
        "2525",
    ] {
        assert!(all.contains(needed), "the section lost {needed:?}");
    }

    let admin_url = std::env::var("DATABASE_URL")
        .expect("DATABASE_URL: a PostgreSQL server to create the test's database on");
    let database = format!("smoke_{}_{}", std::process::id(), free_port());
    let _cleanup = DropDatabase {
        admin_url: admin_url.clone(),
        database: database.clone(),
    };
    let scratch = tempfile::tempdir().unwrap();
    let outputs = run(
        &steps,
        scratch.path(),
        &with_database(&admin_url, &database),
    )
    .unwrap_or_else(|failure| panic!("{failure}"));
    for (index, (step, output)) in steps.iter().zip(&outputs).enumerate() {
        let expected = step.expected.as_deref().unwrap_or_default();
        assert!(
            output_matches(expected, output),
            "block {index} of {HEADING:?}:\n{}\nprinted:\n{output}\nthe section shows:\n{expected}",
            step.script
        );
    }
}

#[test]
fn the_section_reader_and_the_matcher_do_what_the_test_relies_on() {
    let markdown = "# T\n\n## A\n\n```sh\necho a\n```\n\n```text\na…z\n```\n\n### Inner\n\n\
                    ```sh\ntrue\n```\n\n## B\n\n```sh\necho b\n```\n";
    assert_eq!(
        steps(section(markdown, "## A")),
        [
            Step {
                script: "echo a\n".into(),
                expected: Some("a…z\n".into()),
            },
            Step {
                script: "true\n".into(),
                expected: None,
            },
        ]
    );
    assert!(line_matches("a…z", "abcz"));
    assert!(line_matches("a…z", "az"));
    assert!(line_matches("{\"x\":[…]}", "{\"x\":[1,2]}"));
    assert!(line_matches("…", ""));
    assert!(!line_matches("a…z", "abc"));
    assert!(!line_matches("a", "ab"));
    assert!(line_matches("a…b…a", "aba"));
    assert!(!line_matches("a…b…a", "ab"));
    assert!(output_matches("x\n…\n", "x\nanything\n\n"));
    assert!(!output_matches("x\n", "x\ny\n"));
    assert!(!output_matches("", "y\n"));
}
