//! Tidy tests: rules of the workspace's shape that the compiler does not check.
//!
//! - Every workspace member has a role ([`MEMBER_ROLES`], by name), and its dependencies on other
//!   members are those its role allows ([`ROLE_RULES`]): the domain, the format library and the
//!   test oracles on no payoutd crate (an oracle not even in its tests), an adapter (every
//!   `adapters-*` member) on the domain and the format library only, and so on. The members come
//!   from `cargo metadata`, so a new or renamed crate is checked (or named as roleless) without
//!   editing the rules.
//! - `domain`'s normal dependencies are exactly the list docs/ARCHITECTURE.md documents (an
//!   allow-list: a new framework crate fails, and so does a list left stale).
//! - The root `default-members` is every member whose role is built by default: all but the
//!   bench and the tooling.
//! - payoutd's dependencies are compiled with the same features whether it is built alone
//!   (docs/DEPLOY.md) or with the benchmark harness (`cargo xtask bench`): one release build.
//! - Nothing links libpq or OpenSSL (`pq-sys`, `openssl-sys`, `native-tls` never in Cargo.lock).
//! - No import cycles between modules where they were removed: `adapters-postgres` and
//!   `app-actix` at depth 2 (`stores::payouts`, `http::accounts`); in `domain` at depth 1 the
//!   foundation modules are in no cycle and the entity cycles are exactly the known ones.
//! - The repository's text is self-contained: no tracked file under `docs/`, `crates/`,
//!   `xtask/src` or `migrations/`, nor `README.md`, cites the documents that guided development
//!   but are not in the repository (the project's decision record and the provider's interface
//!   specification). State the rule, or point to the section of `docs/` that states it.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::PathBuf,
    process::Command,
};

use serde_json::Value;

use crate::{
    modgraph::{self, Cycle, Graph},
    paths::workspace_root,
};

/// What a workspace member is for; the dependency rules are stated per role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Role {
    /// Leaf rules both the domain and the formats check with (bank code checksums): one copy.
    Codes,
    /// The pure core: entities, rules, ports.
    Domain,
    /// Bank file formats as pure functions over bytes, used by adapters.
    Formats,
    /// Independent checkers of the formats (test oracles), used by tests and xtask only.
    Oracle,
    /// Simulators of the other side (a bank), used by tests and xtask only.
    TestSupport,
    /// Implementations of the domain's ports.
    Adapter,
    /// The binary that wires the adapters into the domain.
    Application,
    /// The client crate merchants depend on: built without any payoutd crate, so a merchant's
    /// build never pulls the server in and the crate packages on its own. Its tests check it
    /// against the server's rules through `domain`, as dev-dependencies.
    Client,
    /// The benchmark harness.
    Bench,
    /// `cargo xtask`.
    Tooling,
}

/// Every member's role, by its name: an exact name, or a prefix ending in `-` for a family
/// (`adapters-`). The first row that matches decides. A member no row matches fails
/// [`every_member_has_a_role`]: give it one here (and in docs/ARCHITECTURE.md).
const MEMBER_ROLES: &[(&str, Role)] = &[
    ("bank-codes", Role::Codes),
    ("domain", Role::Domain),
    ("bank-formats", Role::Formats),
    ("bank-format-oracles", Role::Oracle),
    ("bank-simulator", Role::TestSupport),
    ("adapters-", Role::Adapter),
    // The operator console: a driving adapter over the domain's services, mounted by app-actix.
    ("console", Role::Adapter),
    ("app-actix", Role::Application),
    ("payoutd-client", Role::Client),
    ("payoutd-bench", Role::Bench),
    ("xtask", Role::Tooling),
];

/// What a role may depend on among the members.
struct RoleRule {
    role: Role,
    /// Roles its normal and build dependencies may have.
    may_use: &'static [Role],
    /// Whether its dev-dependencies are held to `may_use` too (an oracle's tests must not
    /// read the formats through `bank-formats` either, or it would share its mistakes).
    dev_too: bool,
    /// Whether the root `default-members` holds it (what a plain `cargo build` or `cargo test`
    /// in the root selects).
    default_member: bool,
}

/// The rules, one per role (docs/ARCHITECTURE.md, "Dependency rule", states them too).
const ROLE_RULES: &[RoleRule] = &[
    RoleRule {
        role: Role::Codes,
        may_use: &[],
        dev_too: false,
        default_member: true,
    },
    RoleRule {
        role: Role::Domain,
        may_use: &[Role::Codes],
        dev_too: false,
        default_member: true,
    },
    RoleRule {
        role: Role::Formats,
        may_use: &[Role::Codes],
        dev_too: false,
        default_member: true,
    },
    RoleRule {
        role: Role::Oracle,
        may_use: &[],
        dev_too: true,
        default_member: true,
    },
    RoleRule {
        role: Role::TestSupport,
        may_use: &[Role::Codes, Role::Domain, Role::Formats],
        dev_too: false,
        default_member: true,
    },
    RoleRule {
        role: Role::Adapter,
        may_use: &[Role::Codes, Role::Domain, Role::Formats],
        dev_too: false,
        default_member: true,
    },
    RoleRule {
        role: Role::Application,
        may_use: &[Role::Codes, Role::Domain, Role::Formats, Role::Adapter],
        dev_too: false,
        default_member: true,
    },
    RoleRule {
        role: Role::Client,
        may_use: &[],
        dev_too: false,
        default_member: true,
    },
    RoleRule {
        role: Role::Bench,
        // The client crate signs the load generator's requests and verifies the receiver's
        // webhooks: the merchant's code, as a merchant would run it. The bank simulator
        // answers payoutd's files in the cutoff scenario, as it does in rails-demo.
        may_use: &[
            Role::Codes,
            Role::Domain,
            Role::Formats,
            Role::TestSupport,
            Role::Adapter,
            Role::Application,
            Role::Client,
        ],
        dev_too: false,
        default_member: false,
    },
    // Run as `cargo xtask`; `cargo xtask test` runs its tests with everyone's.
    RoleRule {
        role: Role::Tooling,
        may_use: &[
            Role::Codes,
            Role::Domain,
            Role::Formats,
            Role::Oracle,
            Role::TestSupport,
            Role::Adapter,
            Role::Application,
            Role::Bench,
            Role::Client,
        ],
        dev_too: false,
        default_member: false,
    },
];

/// The role of the member `name`, if a row of [`MEMBER_ROLES`] gives one.
fn role_of(name: &str) -> Option<Role> {
    MEMBER_ROLES
        .iter()
        .find(|(pattern, _)| {
            if pattern.ends_with('-') {
                name.starts_with(pattern)
            } else {
                name == *pattern
            }
        })
        .map(|(_, role)| *role)
}

/// The rule of `role`.
fn rule_of(role: Role) -> &'static RoleRule {
    ROLE_RULES
        .iter()
        .find(|rule| rule.role == role)
        .unwrap_or_else(|| panic!("ROLE_RULES has no rule for {role:?}"))
}

/// A dependency as `cargo metadata` lists it: the package's name and its kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Dependency {
    name: String,
    /// `normal`, `dev` or `build`.
    kind: String,
    optional: bool,
}

/// The workspace as `cargo metadata` describes it: each member with its dependencies, and the
/// default members.
struct Workspace {
    members: BTreeMap<String, Vec<Dependency>>,
    default_members: BTreeSet<String>,
}

impl Workspace {
    fn read() -> Self {
        Self::from_metadata(&metadata())
    }

    fn from_metadata(metadata: &Value) -> Self {
        let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
        let name_of_id = |id: &Value| {
            packages
                .iter()
                .find(|p| p["id"] == *id)
                .and_then(|p| p["name"].as_str())
                .map(str::to_owned)
        };
        let ids = metadata["workspace_members"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let members = ids
            .iter()
            .filter_map(|id| {
                let package = packages.iter().find(|p| p["id"] == *id)?;
                let deps = package["dependencies"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .iter()
                    .map(|d| Dependency {
                        name: d["name"].as_str().unwrap_or_default().to_owned(),
                        kind: d["kind"].as_str().unwrap_or("normal").to_owned(),
                        optional: d["optional"].as_bool().unwrap_or(false),
                    })
                    .collect();
                Some((package["name"].as_str()?.to_owned(), deps))
            })
            .collect();
        let default_members = metadata["workspace_default_members"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .filter_map(name_of_id)
            .collect();
        Self {
            members,
            default_members,
        }
    }

    /// The edges between members that break a role's rule: `from -> to (kind)`.
    fn forbidden_edges(&self) -> Vec<String> {
        let mut wrong = Vec::new();
        for (from, deps) in &self.members {
            let Some(rule) = role_of(from).map(rule_of) else {
                continue; // every_member_has_a_role names it
            };
            for dep in deps {
                let Some(to) = self
                    .members
                    .contains_key(&dep.name)
                    .then(|| role_of(&dep.name))
                else {
                    continue; // not a member
                };
                let held = dep.kind != "dev" || rule.dev_too;
                let allowed = to.is_some_and(|to| rule.may_use.contains(&to));
                if held && !allowed && dep.name != *from {
                    wrong.push(format!(
                        "{from} ({:?}) -> {} ({}, a {:?} dependency)",
                        rule.role,
                        dep.name,
                        to.map_or_else(|| "no role".to_owned(), |to| format!("{to:?}")),
                        dep.kind
                    ));
                }
            }
        }
        wrong
    }

    /// The members the root `default-members` should hold and does not, and those it holds and
    /// should not.
    fn default_members_off(&self) -> (Vec<String>, Vec<String>) {
        let expected: BTreeSet<String> = self
            .members
            .keys()
            .filter(|name| role_of(name).is_some_and(|role| rule_of(role).default_member))
            .cloned()
            .collect();
        let missing = expected
            .difference(&self.default_members)
            .cloned()
            .collect();
        let extra = self
            .default_members
            .difference(&expected)
            .cloned()
            .collect();
        (missing, extra)
    }
}

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

#[test]
fn every_member_has_a_role() {
    let workspace = Workspace::read();
    let roleless: Vec<&String> = workspace
        .members
        .keys()
        .filter(|name| role_of(name).is_none())
        .collect();
    assert!(
        roleless.is_empty(),
        "give these members a role in MEMBER_ROLES (xtask/src/tidy.rs) and docs/ARCHITECTURE.md: \
         {roleless:?}"
    );
    for rule in ROLE_RULES {
        assert_eq!(rule_of(rule.role).role, rule.role, "one rule per role");
    }
}

#[test]
fn members_depend_only_on_the_roles_their_role_allows() {
    let wrong = Workspace::read().forbidden_edges();
    assert!(
        wrong.is_empty(),
        "dependencies their role does not allow (ROLE_RULES in xtask/src/tidy.rs, \
         docs/ARCHITECTURE.md \"Dependency rule\"):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_adapters_member_is_held_to_the_adapter_rule() {
    // The rule reads roles, and every `adapters-*` member found has the adapter's.
    let workspace = Workspace::read();
    let adapters: Vec<&String> = (workspace.members.keys())
        .filter(|name| name.starts_with("adapters-"))
        .collect();
    assert!(adapters.len() >= 6, "{adapters:?}");
    for adapter in adapters {
        assert_eq!(role_of(adapter), Some(Role::Adapter), "{adapter}");
    }
}

/// The domain's dependencies as docs/ARCHITECTURE.md lists them: the first name in backticks
/// of each list item between `<!-- tidy: domain dependencies -->` and `<!-- /tidy -->`.
fn documented_domain_dependencies() -> BTreeSet<String> {
    let path = workspace_root().join("docs/ARCHITECTURE.md");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = "<!-- tidy: domain dependencies -->";
    let (_, rest) = text
        .split_once(start)
        .unwrap_or_else(|| panic!("{} has no `{start}`", path.display()));
    let (list, _) = rest
        .split_once("<!-- /tidy -->")
        .unwrap_or_else(|| panic!("{}: `{start}` is not closed", path.display()));
    list.lines()
        .filter_map(|line| line.trim().strip_prefix("- `"))
        .filter_map(|item| item.split_once('`').map(|(name, _)| name.to_owned()))
        .collect()
}

#[test]
fn domain_depends_on_exactly_the_documented_crates() {
    let workspace = Workspace::read();
    let documented = documented_domain_dependencies();
    assert!(
        documented.len() > 10 && documented.contains("serde"),
        "the documented list was not read: {documented:?}"
    );
    let actual: BTreeSet<String> = workspace.members["domain"]
        .iter()
        .filter(|d| d.kind != "dev")
        .map(|d| d.name.clone())
        .collect();
    let undocumented: Vec<&String> = actual.difference(&documented).collect();
    let gone: Vec<&String> = documented.difference(&actual).collect();
    assert!(
        undocumented.is_empty() && gone.is_empty(),
        "domain's dependencies are not the allow-list of docs/ARCHITECTURE.md (\"Dependency \
         rule\"). Not allowed (the domain stays free of frameworks, databases, HTTP and \
         runtimes; if the crate is none of those, add it to the list with its reason): \
         {undocumented:?}. Listed but gone (remove them from the list): {gone:?}"
    );
    // Mocks only behind the `mock` feature, for other crates' tests.
    let mockall = workspace.members["domain"]
        .iter()
        .find(|d| d.name == "mockall" && d.kind == "normal");
    assert!(mockall.is_none_or(|d| d.optional), "{mockall:?}");
}

#[test]
fn default_members_are_every_member_but_the_bench_and_the_tooling() {
    let (missing, extra) = Workspace::read().default_members_off();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the root Cargo.toml's default-members (what a plain `cargo test` in the root runs) \
         lacks {missing:?} and should not hold {extra:?}"
    );
}

/// `name version` of each package `cargo tree` resolves for `packages` without
/// dev-dependencies (what `cargo build` of them compiles), with its features.
fn built_features(packages: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut tree = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    tree.args([
        "tree",
        "--offline",
        "-e",
        "normal,build",
        "--prefix",
        "none",
    ])
    .args(["--format", "{p}|{f}"])
    .current_dir(workspace_root());
    for package in packages {
        tree.args(["-p", package]);
    }
    let output = tree.output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        other => panic!("cargo tree failed: {other:?}"),
    };
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let line = line.trim_end_matches(" (*)");
        let Some((package, list)) = line.split_once('|') else {
            continue;
        };
        let package = package.split(" (").next().unwrap_or(package).trim();
        let entry = features.entry(package.to_owned()).or_default();
        entry.extend(list.split(',').filter(|f| !f.is_empty()).map(str::to_owned));
    }
    features
}

/// The member with `role`, when exactly one has it.
fn only_member(workspace: &Workspace, role: Role) -> String {
    let found: Vec<&String> = (workspace.members.keys())
        .filter(|name| role_of(name) == Some(role))
        .collect();
    match found.as_slice() {
        [one] => (*one).clone(),
        other => panic!("expected one {role:?} member, found {other:?}"),
    }
}

#[test]
fn payoutd_builds_the_same_alone_and_with_the_bench() {
    let workspace = Workspace::read();
    let app = only_member(&workspace, Role::Application);
    let bench = only_member(&workspace, Role::Bench);
    let alone = built_features(&[&app]);
    let together = built_features(&[&app, &bench]);
    assert!(
        alone.len() > 100,
        "cargo tree listed {} packages",
        alone.len()
    );
    let differ: Vec<String> = alone
        .iter()
        .filter_map(|(package, features)| {
            let with_bench = together.get(package)?;
            let added: Vec<&String> = with_bench.difference(features).collect();
            (!added.is_empty()).then(|| format!("{package}: {added:?}"))
        })
        .collect();
    assert!(
        differ.is_empty(),
        "built with {bench}, these dependencies of {app} get more features, so `cargo xtask \
         bench` and a deployment build (`cargo build --release -p {app}`) compile them twice and \
         benchmark another binary than the deployed one; pin the features in {app}'s manifest \
         (\"Feature pins\"):\n{}",
        differ.join("\n")
    );
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
    // The rules above inspect real data and tables: each kind of breach is caught.
    let workspace = Workspace::read();
    assert!(
        workspace.members["app-actix"]
            .iter()
            .any(|d| d.name == "actix-web" && d.kind == "normal")
    );
    assert!(
        workspace.members["domain"]
            .iter()
            .any(|d| d.name == "tokio" && d.kind == "dev")
    );
    let dep = |name: &str, kind: &str| Dependency {
        name: name.to_owned(),
        kind: kind.to_owned(),
        optional: false,
    };
    let member = |name: &str, deps: Vec<Dependency>| (name.to_owned(), deps);
    let breached = Workspace {
        members: BTreeMap::from([
            member("domain", vec![]),
            member("bank-formats", vec![dep("domain", "normal")]),
            member("bank-format-oracles", vec![dep("bank-formats", "dev")]),
            member(
                "adapters-a",
                vec![dep("domain", "normal"), dep("adapters-b", "normal")],
            ),
            member(
                "adapters-b",
                vec![dep("app-actix", "normal"), dep("adapters-a", "dev")],
            ),
            member(
                "app-actix",
                vec![
                    dep("adapters-a", "normal"),
                    dep("bank-format-oracles", "normal"),
                ],
            ),
            member("payoutd-bench", vec![]),
            member("bank-simulator", vec![dep("domain", "normal")]),
        ]),
        default_members: BTreeSet::from(["domain".to_owned(), "payoutd-bench".to_owned()]),
    };
    assert_eq!(
        breached.forbidden_edges(),
        [
            "adapters-a (Adapter) -> adapters-b (Adapter, a \"normal\" dependency)",
            "adapters-b (Adapter) -> app-actix (Application, a \"normal\" dependency)",
            "app-actix (Application) -> bank-format-oracles (Oracle, a \"normal\" dependency)",
            "bank-format-oracles (Oracle) -> bank-formats (Formats, a \"dev\" dependency)",
            "bank-formats (Formats) -> domain (Domain, a \"normal\" dependency)",
        ]
    );
    let (missing, extra) = breached.default_members_off();
    assert_eq!(
        missing,
        [
            "adapters-a",
            "adapters-b",
            "app-actix",
            "bank-format-oracles",
            "bank-formats",
            "bank-simulator"
        ]
    );
    assert_eq!(extra, ["payoutd-bench"]);
    assert_eq!(role_of("wire-teller"), None, "a new crate needs a role");
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
