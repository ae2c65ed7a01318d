//! The error-code table of `docs/API.md` is the catalogue of `domain::codes`, row for row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use domain::ErrorCode;

const HEADER: &str = "| Code | HTTP | Message |";

#[test]
fn api_md_lists_exactly_the_catalogue() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/API.md");
    let doc = std::fs::read_to_string(path).expect("docs/API.md exists");
    let mut lines = doc.lines().skip_while(|line| line.trim() != HEADER);
    assert!(
        lines.next().is_some(),
        "docs/API.md has no `{HEADER}` table"
    );
    let rows: Vec<(String, String, String)> = lines
        .skip(1) // the |---| separator
        .take_while(|line| line.trim_start().starts_with('|'))
        .map(|line| {
            let cells: Vec<String> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect();
            assert_eq!(cells.len(), 3, "row {line:?}");
            (cells[0].clone(), cells[1].clone(), cells[2].clone())
        })
        .collect();
    let catalogue: Vec<(String, String, String)> = ErrorCode::ALL
        .iter()
        .map(|c| {
            (
                c.as_str().to_owned(),
                c.http_status().to_string(),
                c.message().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows, catalogue,
        "docs/API.md's code table differs from domain::codes"
    );
}

// ---------------------------------------------------------------------------------------------
// Docs and code name the same things. Every route, `PAYOUT_*` variable, `payoutd` command and
// error code that the README or docs/ mention exists in the code, and every one the code has is
// described somewhere in them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use app_actix::cli::Cli;
use app_actix::http::{RouteList, route_table, sandbox_route_table};
use clap::CommandFactory;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The README and every Markdown file under docs/, with their names.
fn documents() -> Vec<(String, String)> {
    let root = repository();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("document is readable");
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            (name, text)
        })
        .collect()
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push(path);
        }
    }
}

/// Words made of `[A-Za-z0-9_]` that start with `prefix`, in `text`.
fn words_starting(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let word = &tail[..len];
        // `PAYOUT_BATCH_*` or `PAYOUT_{ACH,SEPA}_SFTP_KEY` is a pattern, not a name.
        let pattern = word.ends_with('_');
        if !pattern && !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            found.insert(word.to_owned());
        }
        rest = &tail[len.max(prefix.len())..];
    }
    found
}

/// Error codes (`PAYO207`, `REQ011`, …) mentioned in `text`: three or four capitals, then three
/// digits, standing alone.
fn error_codes(text: &str) -> BTreeSet<String> {
    let bytes = text.as_bytes();
    let mut found = BTreeSet::new();
    let mut start = 0;
    while start < bytes.len() {
        if !bytes[start].is_ascii_uppercase()
            || (start > 0 && bytes[start - 1].is_ascii_alphanumeric())
        {
            start += 1;
            continue;
        }
        let letters = bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_uppercase())
            .count();
        let digits = bytes[start + letters..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        let end = start + letters + digits;
        let alone = bytes.get(end).is_none_or(|b| !b.is_ascii_alphanumeric());
        if (3..=4).contains(&letters) && digits == 3 && alone {
            found.insert(text[start..end].to_owned());
        }
        start = end.max(start + 1);
    }
    found
}

/// `METHOD /path` mentions in `text`, the path cut at a query string or a closing character.
fn route_mentions(text: &str) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
        let needle = format!("{method} /");
        let mut rest = text;
        while let Some(at) = rest.find(&needle) {
            let before = rest[..at].chars().next_back();
            let path_start = at + needle.len() - 1;
            let tail = &rest[path_start..];
            let len = tail
                .find(|c: char| c.is_whitespace() || "`)?\"'|,;".contains(c))
                .unwrap_or(tail.len());
            if !before.is_some_and(|c| c.is_ascii_alphanumeric()) {
                let path = tail[..len].trim_end_matches(['.', ':']);
                found.insert((method.to_owned(), path.to_owned()));
            }
            rest = &rest[path_start + len.max(1)..];
        }
    }
    found
}

/// Whether a segment is a placeholder: `{id}` in a route, `{id}` or `<id>` in the docs.
fn placeholder(segment: &str) -> bool {
    (segment.starts_with('{') && segment.ends_with('}'))
        || (segment.starts_with('<') && segment.ends_with('>'))
}

/// Whether a concrete or placeholder path from the docs names the route `pattern`: segment by
/// segment equal, or either one a placeholder.
fn names_route(path: &str, pattern: &str) -> bool {
    let path: Vec<&str> = path.split('/').collect();
    let pattern: Vec<&str> = pattern.split('/').collect();
    path.len() == pattern.len()
        && path
            .iter()
            .zip(&pattern)
            .all(|(seg, pat)| seg == pat || placeholder(seg) || placeholder(pat))
}

fn registered_routes() -> Vec<(String, String)> {
    let mut routes = RouteList::default();
    route_table(&mut routes);
    sandbox_route_table(&mut routes);
    routes
        .0
        .iter()
        .map(|(method, path)| (method.as_str().to_owned(), path.clone()))
        .collect()
}

#[test]
fn every_route_the_docs_mention_is_served_and_every_served_route_is_in_the_docs() {
    let routes = registered_routes();
    let mut unknown = Vec::new();
    let mut mentioned = BTreeSet::new();
    for (name, text) in documents() {
        for (method, path) in route_mentions(&text) {
            let named: Vec<&(String, String)> = routes
                .iter()
                .filter(|(m, pattern)| *m == method && names_route(&path, pattern))
                .collect();
            if named.is_empty() {
                unknown.push(format!("{name}: {method} {path}"));
            }
            mentioned.extend(named.into_iter().cloned());
        }
    }
    assert!(
        unknown.is_empty(),
        "the docs mention routes the server does not have:\n{}",
        unknown.join("\n")
    );
    let undocumented: Vec<String> = routes
        .iter()
        .filter(|route| !mentioned.contains(*route))
        .map(|(method, path)| format!("{method} {path}"))
        .collect();
    assert!(
        undocumented.is_empty(),
        "routes no README or docs/ page mentions: {undocumented:?}"
    );
}

/// Words shaped like error codes that are something else.
const NOT_ERROR_CODES: &[&str] = &["SHA256"];

#[test]
fn every_error_code_the_docs_mention_exists() {
    let mut catalogue: BTreeSet<&str> = ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    catalogue.extend(NOT_ERROR_CODES);
    let mut unknown = Vec::new();
    for (name, text) in documents() {
        for code in error_codes(&text) {
            if !catalogue.contains(code.as_str()) {
                unknown.push(format!("{name}: {code}"));
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "the docs mention error codes domain::codes does not have:\n{}",
        unknown.join("\n")
    );
}

/// `PAYOUT_*` names in the non-test sources of the crates and xtask: the variables the code
/// reads (or passes on to the tools it starts).
fn variables_in_code() -> BTreeSet<String> {
    let root = repository();
    let mut files = Vec::new();
    for dir in ["crates", "xtask/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut found = BTreeSet::new();
    for file in files {
        let is_test = file
            .components()
            .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "tests.rs");
        if is_test {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("source is readable");
        // Stop at an inline test module: its variables are test fixtures.
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        found.extend(words_starting(text, "PAYOUT_"));
    }
    found
}

#[test]
fn every_variable_the_docs_mention_is_read_and_every_variable_read_is_documented() {
    let code = variables_in_code();
    // The example configuration names the variables that hold a rail's secrets; the operator
    // chooses those names, so they are declared there rather than in the code.
    let example = std::fs::read_to_string(repository().join("docs/examples/payoutd.toml"))
        .expect("docs/examples/payoutd.toml exists");
    let declared = words_starting(&example, "PAYOUT_");
    let mut documented = BTreeSet::new();
    let mut unknown = Vec::new();
    for (name, text) in documents() {
        for variable in words_starting(&text, "PAYOUT_") {
            if !code.contains(&variable) && !declared.contains(&variable) {
                unknown.push(format!("{name}: {variable}"));
            }
            documented.insert(variable);
        }
    }
    assert!(
        unknown.is_empty(),
        "the docs mention variables nothing reads:\n{}",
        unknown.join("\n")
    );
    let undocumented: Vec<&String> = code.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "variables the code reads that no README or docs/ page mentions: {undocumented:?}"
    );
}

/// `payoutd <command>` and `payoutd admin <command>` as the binary's command line defines them.
fn commands_in_code() -> (BTreeSet<String>, BTreeSet<String>) {
    let cli = Cli::command();
    let mut top = BTreeSet::new();
    let mut admin = BTreeSet::new();
    for command in cli.get_subcommands() {
        top.insert(command.get_name().to_owned());
        if command.get_name() == "admin" {
            admin.extend(command.get_subcommands().map(|c| c.get_name().to_owned()));
        }
    }
    (top, admin)
}

/// The command lines in a Markdown text: the lines of ```` ```sh ```` blocks without their
/// comments, and the inline `code` spans (other fenced blocks hold output, JSON or
/// configuration).
fn code_in(text: &str) -> Vec<String> {
    let mut code = Vec::new();
    let mut prose = String::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        if let Some(tag) = line.trim_start().strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(tag.trim()),
            };
        } else if let Some(tag) = fence {
            if tag == "sh" {
                let command = line.split(" #").next().unwrap_or_default();
                code.push(command.to_owned());
            }
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    code.extend(prose.split('`').skip(1).step_by(2).map(str::to_owned));
    code
}

/// The word after each `needle` that starts a command in the code of `text` (after the start,
/// a space or a `/`, as in `target/release/payoutd serve`).
fn words_after(text: &str, needle: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for code in code_in(text) {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(needle) {
            let starts = rest[..at]
                .chars()
                .next_back()
                .is_none_or(|c| c == ' ' || c == '/');
            let tail = &rest[at + needle.len()..];
            let len = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(tail.len());
            if starts && tail.starts_with(|c: char| c.is_ascii_lowercase()) {
                found.insert(tail[..len].to_owned());
            }
            rest = tail;
        }
    }
    found
}

#[test]
fn every_command_the_docs_mention_exists_and_every_admin_command_is_documented() {
    let (top, admin) = commands_in_code();
    let mut unknown = Vec::new();
    let mut documented = BTreeSet::new();
    for (name, text) in documents() {
        for command in words_after(&text, "payoutd ") {
            if !top.contains(&command) {
                unknown.push(format!("{name}: payoutd {command}"));
            }
        }
        for command in words_after(&text, "payoutd admin ") {
            if !admin.contains(&command) {
                unknown.push(format!("{name}: payoutd admin {command}"));
            }
            documented.insert(command);
        }
    }
    assert!(
        unknown.is_empty(),
        "the docs mention commands payoutd does not have:\n{}",
        unknown.join("\n")
    );
    let undocumented: Vec<&String> = admin.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "admin commands no README or docs/ page shows as `payoutd admin <command>`: {undocumented:?}"
    );
}

/// The rows of the Markdown table whose header line is `header`, cells trimmed of backticks.
fn table_rows(doc: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = doc.lines().skip_while(|line| line.trim() != header);
    assert!(lines.next().is_some(), "no `{header}` table");
    lines
        .skip(1)
        .take_while(|line| line.trim_start().starts_with('|'))
        .map(|line| {
            line.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect()
        })
        .collect()
}

#[test]
fn api_md_maps_every_payout_status_code_and_nothing_else() {
    let doc = std::fs::read_to_string(repository().join("docs/API.md")).expect("docs/API.md");
    let rows: Vec<(String, String)> =
        table_rows(&doc, "| `status` code | Payout status | Meaning |")
            .into_iter()
            .map(|cells| (cells[0].clone(), cells[1].clone()))
            .collect();
    let statuses: Vec<(String, String)> = domain::payout::PayoutStatus::ALL
        .iter()
        .map(|s| (s.code().to_string(), s.as_str().to_owned()))
        .collect();
    assert_eq!(
        rows, statuses,
        "docs/API.md's payout status codes differ from the code"
    );
}

#[test]
fn api_md_names_every_error_code_prefix() {
    let doc = std::fs::read_to_string(repository().join("docs/API.md")).expect("docs/API.md");
    let sentence = doc
        .split("Prefixes:")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .expect("docs/API.md explains the code prefixes after `Prefixes:`");
    let missing: BTreeSet<&str> = ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().trim_end_matches(|ch: char| ch.is_ascii_digit()))
        .filter(|prefix| !sentence.contains(&format!("`{prefix}`")))
        .collect();
    assert!(missing.is_empty(), "prefixes not explained: {missing:?}");
}

#[test]
fn the_scanners_find_what_they_look_for() {
    assert_eq!(
        error_codes("PAYO207, (REQ011) not XPAYO207 nor REQ0111 nor AB123"),
        BTreeSet::from(["PAYO207".to_owned(), "REQ011".to_owned()])
    );
    assert_eq!(
        route_mentions("`GET /api/payout/?status=1` and POST /api/receiver. XGET /x"),
        BTreeSet::from([
            ("GET".to_owned(), "/api/payout/".to_owned()),
            ("POST".to_owned(), "/api/receiver".to_owned()),
        ])
    );
    assert!(names_route(
        "/api/payout/123/cancel",
        "/api/payout/{id}/cancel"
    ));
    assert!(names_route(
        "/api/receiver-account/<asset>/{method}",
        "/api/receiver-account/usd/ach"
    ));
    assert!(!names_route("/api/payout/123", "/api/payout/{id}/cancel"));
    assert_eq!(
        words_starting(
            "`PAYOUT_BIND` and XPAYOUT_NO, PAYOUT_{ACH}, PAYOUT_BATCH_*",
            "PAYOUT_"
        ),
        BTreeSet::from(["PAYOUT_BIND".to_owned()])
    );
    assert_eq!(
        words_after(
            "run `payoutd admin fund --x` or payoutd admin is\n```sh\n  payoutd admin issue-key --y\n/bin/payoutd --help\n```\n```text\npayoutd admin output\n```",
            "payoutd admin "
        ),
        BTreeSet::from(["fund".to_owned(), "issue-key".to_owned()])
    );
}
