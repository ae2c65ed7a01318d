//! Where things live: the workspace root, Cargo's target dir, and cargo itself.

use std::{
    env,
    path::{Path, PathBuf},
    process::Command,
};

/// The workspace root: the parent of this crate's directory.
pub fn workspace_root() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir.parent().unwrap_or(manifest_dir).to_path_buf()
}

/// Cargo's target dir: `CARGO_TARGET_DIR` if set, else `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            // Cargo resolves a relative target dir against the current directory.
            match env::current_dir() {
                Ok(cwd) if dir.is_relative() => cwd.join(dir),
                _ => dir,
            }
        }
        _ => workspace_root().join("target"),
    }
}

/// A `cargo` command (the one running us, if known) in the workspace root, with the environment
/// a shell would give it: without the variables `cargo run` set for xtask itself
/// ([`is_set_for_the_running_package`]).
///
/// Cargo decides whether a build script must run again by comparing the variables the script
/// named (`cargo:rerun-if-env-changed`) with its own environment. ring's build script names
/// `CARGO_PKG_NAME`, `CARGO_MANIFEST_DIR` and the `CARGO_PKG_VERSION_*`, which `cargo xtask`
/// (`cargo run -p xtask`) sets to xtask's values: a nested cargo that inherited them saw ring's
/// script as changed after any build from a shell, and the other way round, and ran it again, so
/// ring and everything above it (rustls, russh, reqwest, actix-web's TLS, the adapters, payoutd)
/// were compiled again each time the two alternated.
pub fn cargo() -> Command {
    let mut cargo = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(workspace_root());
    for (name, _) in env::vars_os() {
        if name.to_str().is_some_and(is_set_for_the_running_package) {
            cargo.env_remove(name);
        }
    }
    cargo
}

/// Whether `name` is one of the variables Cargo sets for the package it runs (`cargo run`,
/// `cargo test`): its manifest, its `CARGO_PKG_*` fields, its crate and binary names, `OUT_DIR`.
/// `CARGO` itself stays: it names the cargo that runs us.
fn is_set_for_the_running_package(name: &str) -> bool {
    const EXACT: [&str; 9] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_MANIFEST_LINKS",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    EXACT.contains(&name) || name.starts_with("CARGO_PKG_") || name.starts_with("CARGO_BIN_EXE_")
}

/// The arguments of the one debug build every xtask command that runs payoutd or the benchmark
/// harness uses (`fuzz`, `serve`, `db`, `rails-demo`, `bench --smoke`, `chaos --smoke`):
/// `cargo build` of those two binaries, with every workspace member selected and the example
/// targets, so that Cargo resolves features exactly as `cargo test --workspace` (`cargo xtask
/// test`) does and reuses what it compiled.
///
/// Cargo unifies the features of a dependency over the packages an invocation selects, and
/// turns on dev-dependencies' features only when it builds a target that needs them (tests,
/// examples). `cargo build -p app-actix` alone resolves tokio without `test-util`, reqwest
/// without `json`, hyper without `server`, `domain` without `mock`: 28 other crates and
/// every payoutd crate compiled a second time after the tests. `--workspace` selects the
/// packages the tests select and `--examples` (app-actix's webhook example, which `cargo test`
/// builds too) brings in the dev-dependencies' features, while nothing else is built.
pub const DEBUG_BUILD: [&str; 7] = [
    "build",
    "--workspace",
    "--bin",
    "payoutd",
    "--bin",
    "payoutd-bench",
    "--examples",
];

/// The arguments of the one release build: payoutd and the benchmark harness (`cargo xtask
/// bench`, `cargo xtask chaos`). The feature pins in app-actix's manifest make payoutd's
/// dependencies here the same as in `cargo build --release -p app-actix --bin payoutd`
/// (docs/DEPLOY.md), so a deployment build after a benchmark compiles nothing, and the
/// benchmarked binary is the deployed one (tidy test
/// `payoutd_builds_the_same_alone_and_with_the_bench`).
pub const RELEASE_BUILD: [&str; 10] = [
    "build",
    "--release",
    "-p",
    "app-actix",
    "-p",
    "payoutd-bench",
    "--bin",
    "payoutd",
    "--bin",
    "payoutd-bench",
];

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::cargo;

    #[test]
    fn nested_cargo_runs_without_the_variables_cargo_run_set_for_xtask() {
        // `cargo test` sets them for this test binary as `cargo run` does for xtask.
        assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let cargo = cargo();
        let removed: Vec<&OsStr> = cargo
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name)
            .collect();
        for name in [
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
        ] {
            assert!(removed.contains(&OsStr::new(name)), "{name} is passed on");
        }
        assert!(
            !removed.contains(&OsStr::new("CARGO")) && !removed.contains(&OsStr::new("PATH")),
            "{removed:?}"
        );
    }
}
