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

/// A `cargo` command (the one running us, if known) in the workspace root.
pub fn cargo() -> Command {
    let mut cargo = Command::new(env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cargo.current_dir(workspace_root());
    cargo
}
