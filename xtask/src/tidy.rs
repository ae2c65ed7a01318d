//! Tidy tests: rules of the workspace's shape that the compiler does not check.
//!
//! - `domain` depends on no framework, database, HTTP or runtime crate (its normal
//!   dependencies; dev-dependencies may use tokio and mockall).
//! - An adapter depends on `domain`, never on another adapter or on `app-actix`.
//! - Nothing links libpq or OpenSSL (`pq-sys`, `openssl-sys`, `native-tls` never in Cargo.lock).
//! - No import cycles between modules where they were removed: `adapters-postgres` and
//!   `app-actix` at depth 2 (`stores::payouts`, `http::accounts`); in `domain` at depth 1 the
//!   foundation modules are in no cycle and the entity cycles are exactly the known ones.
//! - The repository's text is self-contained: no tracked file under `docs/`, `crates/`,
//!   `xtask/src` or `migrations/`, nor `README.md`, cites the documents that guided development
//!   but are not in the repository (the project's decision record and the provider's interface
//!   specification). State the rule, or point to the section of `docs/` that states it.

use std::{fs, path::PathBuf, process::Command};

use serde_json::Value;

use crate::{
    modgraph::{self, Cycle, Graph},
    paths::workspace_root,
};

const FORBIDDEN_IN_DOMAIN: &[&str] = &[
    "actix",
    "actix-web",
    "actix-rt",
    "deadpool",
    "diesel",
    "diesel-async",
    "diesel_migrations",
    "hyper",
    "reqwest",
    "sqlx",
    "tokio",
    "tokio-postgres",
    "tracing-subscriber",
];

fn metadata() -> Value {
    let output = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace_root())
        .output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        other => panic!("cargo metadata failed: {other:?}"),
    };
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("cargo metadata output: {e}"))
}

/// (dependency name, kind) of a workspace package; kind is `normal`, `dev` or `build`.
fn dependencies(metadata: &Value, package: &str) -> Vec<(String, String)> {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let Some(found) = packages.iter().find(|p| p["name"] == package) else {
        panic!("package {package} not in the workspace");
    };
    found["dependencies"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|d| {
            let name = d["name"].as_str().unwrap_or_default().to_owned();
            let kind = d["kind"].as_str().unwrap_or("normal").to_owned();
            (name, kind)
        })
        .collect()
}

#[test]
fn domain_depends_on_no_framework_database_http_or_runtime_crate() {
    let metadata = metadata();
    let offending: Vec<String> = dependencies(&metadata, "domain")
        .into_iter()
        .filter(|(name, kind)| kind == "normal" && FORBIDDEN_IN_DOMAIN.contains(&name.as_str()))
        .map(|(name, _)| name)
        .collect();
    assert!(
        offending.is_empty(),
        "domain must stay pure, but depends on {offending:?}"
    );
}

#[test]
fn adapters_depend_on_domain_but_not_on_each_other_or_the_app() {
    let metadata = metadata();
    for adapter in [
        "adapters-postgres",
        "adapters-webhook",
        "adapters-sandbox",
        "adapters-filetransfer",
    ] {
        let deps = dependencies(&metadata, adapter);
        let normal: Vec<&str> = deps
            .iter()
            .filter(|(_, k)| k == "normal")
            .map(|(n, _)| n.as_str())
            .collect();
        let wrong: Vec<&&str> = normal
            .iter()
            .filter(|n| n.starts_with("adapters-") || **n == "app-actix")
            .collect();
        assert!(wrong.is_empty(), "{adapter} depends on {wrong:?}");
    }
}

#[test]
fn nothing_links_libpq_or_openssl() {
    let lock = std::fs::read_to_string(workspace_root().join("Cargo.lock"))
        .unwrap_or_else(|e| panic!("reading Cargo.lock: {e}"));
    for forbidden in ["pq-sys", "openssl-sys", "native-tls"] {
        assert!(
            !lock.contains(&format!("name = \"{forbidden}\"")),
            "Cargo.lock contains {forbidden}"
        );
    }
}

#[test]
fn the_rules_can_fail() {
    // The checks above inspect real data: make sure the data is what they think it is.
    let metadata = metadata();
    let app = dependencies(&metadata, "app-actix");
    assert!(
        app.iter()
            .any(|(name, kind)| name == "actix-web" && kind == "normal")
    );
    assert!(app.iter().any(|(name, _)| name == "adapters-postgres"));
    let domain = dependencies(&metadata, "domain");
    assert!(
        domain
            .iter()
            .any(|(name, kind)| name == "tokio" && kind == "dev")
    );
}

/// Domain modules every entity module may use: they must be in no import cycle.
const DOMAIN_FOUNDATION: &[&str] = &[
    "ports",
    "error",
    "ledger",
    "idempotency",
    "ids",
    "money",
    "masking",
    "codes",
    "validation",
    "time",
    "paging",
    "country",
    "rail",
];

/// The import cycles among domain entity modules (depth 1) that are known and accepted, one
/// strongly connected component each. Outbox events are built from the entities they describe
/// (`events` imports `payout`, `receiver`, `account`, `batch`), and the entities' services and
/// ports build events, so the two sides import each other. The test fails if a module joins a
/// cycle or a new one appears, and also if one listed here is gone: then shorten this list.
const DOMAIN_KNOWN_CYCLES: &[&[&str]] = &[&["account", "batch", "events", "payout", "receiver"]];

fn module_graph(krate: &str, depth: usize) -> Graph {
    let src = workspace_root().join("crates").join(krate).join("src");
    let graph = modgraph::read(&src, depth)
        .unwrap_or_else(|e| panic!("reading the modules of {}: {e}", src.display()));
    // The reader works on text: make sure it found the imports that are there.
    assert!(
        graph.edges.len() > 20,
        "{krate}: only {} imports found",
        graph.edges.len()
    );
    graph
}

fn show<'a>(cycles: impl IntoIterator<Item = &'a Cycle>) -> String {
    cycles.into_iter().map(Cycle::to_string).collect()
}

#[test]
fn adapters_postgres_modules_have_no_import_cycle() {
    let cycles = module_graph("adapters-postgres", 2).cycles();
    assert!(
        cycles.is_empty(),
        "adapters-postgres, depth 2:\n{}",
        show(&cycles)
    );
}

#[test]
fn app_actix_modules_have_no_import_cycle() {
    let cycles = module_graph("app-actix", 2).cycles();
    assert!(cycles.is_empty(), "app-actix, depth 2:\n{}", show(&cycles));
}

#[test]
fn domain_foundation_is_in_no_import_cycle_and_entity_cycles_are_the_known_ones() {
    let graph = module_graph("domain", 1);
    for module in DOMAIN_FOUNDATION {
        assert!(graph.modules.contains(*module), "no domain module {module}");
    }
    let cycles = graph.cycles();
    let foundation_in_cycle = cycles.iter().filter(|c| {
        c.modules
            .iter()
            .any(|m| DOMAIN_FOUNDATION.contains(&m.as_str()))
    });
    let foundation_in_cycle = show(foundation_in_cycle);
    assert!(
        foundation_in_cycle.is_empty(),
        "foundation modules of domain must be in no import cycle (entity modules use them):\n\
         {foundation_in_cycle}"
    );
    let mut known: Vec<Vec<String>> = (DOMAIN_KNOWN_CYCLES.iter())
        .map(|cycle| cycle.iter().map(|m| m.to_string()).collect())
        .collect();
    known.iter_mut().for_each(|cycle| cycle.sort());
    let new = show(cycles.iter().filter(|c| !known.contains(&c.modules)));
    let gone: Vec<_> = (known.iter())
        .filter(|k| !cycles.iter().any(|c| &c.modules == *k))
        .collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "domain import cycles (depth 1) are not DOMAIN_KNOWN_CYCLES.\n\
         New, or a module joined a known cycle:\n{new}\
         Known but gone (remove from DOMAIN_KNOWN_CYCLES): {gone:?}"
    );
}

/// A tiny crate `src/` tree in a temp dir, removed on drop.
struct Fixture(PathBuf);

impl Fixture {
    fn new(name: &str, files: &[(&str, &str)]) -> Self {
        let dir = std::env::temp_dir().join(format!("xtask-{name}-{}", std::process::id()));
        for (path, text) in files {
            let path = dir.join("src").join(path);
            let parent = path.parent().unwrap_or(&dir);
            fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
            fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        Fixture(dir)
    }

    fn graph(&self, depth: usize) -> Graph {
        modgraph::read(&self.0.join("src"), depth).unwrap_or_else(|e| panic!("modgraph: {e}"))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn edges(graph: &Graph) -> Vec<String> {
    graph
        .edges
        .keys()
        .map(|(from, to)| format!("{from} -> {to}"))
        .collect()
}

const FIXTURE: &[(&str, &str)] = &[
    ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod d;\n"),
    ("a/mod.rs", "pub mod inner;\nuse crate::b::Thing;\n"),
    (
        "a/inner.rs",
        "use super::Local;\nuse super::super::c::{self, Other};\n",
    ),
    (
        "b.rs",
        "use crate::{\n    a::inner::Deep,\n    c::{self as see, g},\n};\n\
         #[cfg(test)]\nmod tests {\n    use crate::d::f;\n}\n",
    ),
    (
        "c.rs",
        "//! Mentions crate::a in docs only.\n// use crate::a::X;\n/// See crate::b::Y.\n\
         pub fn g() -> u32 { crate::c::h() }\npub fn h() -> u32 { 1 }\n\
         #[cfg(test)]\n#[path = \"c_tests.rs\"]\nmod tests;\nuse crate::b::AfterTests;\n",
    ),
    ("c_tests.rs", "use crate::a::Z;\n"),
    ("d.rs", "pub fn f() -> u32 {\n    crate::c::g()\n}\n"),
];

#[test]
fn modgraph_finds_a_two_module_cycle_and_ignores_comments_and_tests() {
    let fixture = Fixture::new("modgraph-depth1", FIXTURE);
    let graph = fixture.graph(1);
    let expected = ["a -> b", "a -> c", "b -> a", "b -> c", "d -> c"];
    assert_eq!(edges(&graph), expected);
    let at = &graph.edges[&("b".to_owned(), "c".to_owned())];
    assert_eq!((at.file.ends_with("src/b.rs"), at.line), (true, 3));
    let cycles = graph.cycles();
    assert_eq!(cycles.len(), 1, "{}", show(&cycles));
    assert_eq!(cycles[0].modules, ["a", "b"]);
    let shown = cycles[0].to_string();
    assert!(
        shown.contains("a -> b  at ") && shown.contains("a/mod.rs:2"),
        "{shown}"
    );
    assert!(
        shown.contains("b -> a  at ") && shown.contains("b.rs:2"),
        "{shown}"
    );
}

#[test]
fn modgraph_resolves_super_relative_to_the_file_module() {
    let fixture = Fixture::new("modgraph-depth2", FIXTURE);
    let graph = fixture.graph(2);
    let expected = [
        "a -> b",
        "a::inner -> a",
        "a::inner -> c",
        "b -> a::inner",
        "b -> c",
        "d -> c",
    ];
    assert_eq!(edges(&graph), expected);
    let cycles = graph.cycles();
    assert_eq!(cycles.len(), 1, "{}", show(&cycles));
    assert_eq!(cycles[0].modules, ["a", "a::inner", "b"]);
    assert_eq!(cycles[0].edges.len(), 3);
}

/// Where the repository's text is checked for citations of documents it does not contain.
const SELF_CONTAINED_PATHS: &[&str] = &["docs", "README.md", "crates", "xtask/src", "migrations"];

/// Citations of the documents outside the repository. Each is spelled in two pieces so that this
/// file does not match itself.
const OUTSIDE_CITATIONS: [&str; 4] = [
    concat!("contract", " §"),
    concat!("contract", ".md"),
    concat!("payout-api", ".md"),
    concat!("seed", " §"),
];

/// The files git tracks under `paths`, relative to the workspace root.
fn tracked_files(paths: &[&str]) -> Vec<String> {
    let output = Command::new("git")
        .args(["ls-files", "-z", "--"])
        .args(paths)
        .current_dir(workspace_root())
        .output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        other => panic!("git ls-files failed: {other:?}"),
    };
    output
        .stdout
        .split(|&byte| byte == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect()
}

/// `line: citation` for every citation of an outside document in `text`. Lines are compared with
/// their indentation and leading comment or list markers removed and joined by a space, so a
/// citation wrapped across two comment lines (the name at the end of one, the section sign at the
/// start of the next) is found too, reported at the line where it starts.
fn outside_citations(text: &str) -> Vec<String> {
    let mut joined = String::new();
    let mut starts = Vec::new();
    for line in text.lines() {
        let content = line
            .trim_start()
            .trim_start_matches(['/', '!', '-', '#', '*'])
            .trim();
        if !joined.is_empty() {
            joined.push(' ');
        }
        starts.push(joined.len());
        joined.push_str(content);
    }
    let mut found = Vec::new();
    for citation in OUTSIDE_CITATIONS {
        for (at, _) in joined.match_indices(citation) {
            let line = starts.partition_point(|&start| start <= at);
            found.push(format!("{line}: {citation}"));
        }
    }
    found.sort();
    found
}

#[test]
fn docs_and_comments_cite_no_document_outside_the_repository() {
    let root = workspace_root();
    let files = tracked_files(SELF_CONTAINED_PATHS);
    for expected in ["README.md", "docs/API.md", "xtask/src/tidy.rs"] {
        assert!(
            files.iter().any(|f| f == expected),
            "git ls-files did not list {expected} ({} files listed)",
            files.len()
        );
    }
    let mut offenders = Vec::new();
    for file in &files {
        let Ok(bytes) = fs::read(root.join(file)) else {
            continue; // deleted in the working tree but still in the index
        };
        for hit in outside_citations(&String::from_utf8_lossy(&bytes)) {
            offenders.push(format!("{file}:{hit}"));
        }
    }
    assert!(
        offenders.is_empty(),
        "state the rule, or point to the section of docs/ that states it, instead of citing a \
         document outside the repository:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn outside_citations_are_found_also_when_wrapped() {
    let [contract_section, contract_file, api_file, seed_section] = OUTSIDE_CITATIONS;
    let text = [
        format!("//! The fee rule ({contract_section}7.2)."),
        "/// Masked by the rule of contract".to_owned(),
        "/// §5.3, everywhere.".to_owned(),
        format!("-- see {api_file}"),
        format!("The object of {seed_section}2.1 and {contract_file}."),
        "A contract with the bank; RFC 4291 §2.5.5.1.".to_owned(),
    ]
    .join("\n");
    assert_eq!(
        outside_citations(&text),
        [
            format!("1: {contract_section}"),
            format!("2: {contract_section}"),
            format!("4: {api_file}"),
            format!("5: {contract_file}"),
            format!("5: {seed_section}"),
        ]
    );
}
