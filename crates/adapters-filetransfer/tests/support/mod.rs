//! What the transport tests share: the bank's side of a drop (its two directories on disk),
//! the behaviours every transport must show, and a private sshd for the SFTP transport.

#![allow(dead_code)] // each test binary uses part of it

pub mod behaviour;
pub mod sshd;

use std::{
    fs,
    path::{Path, PathBuf},
};

/// A drop's directories as the bank (or its file-transfer agent) sees them on disk.
#[derive(Debug, Clone)]
pub struct BankDirs {
    /// Where payoutd's uploads land.
    pub outbound: PathBuf,
    /// Where the bank puts its files for payoutd.
    pub inbound: PathBuf,
}

impl BankDirs {
    /// Creates `root/outbound` and `root/inbound`.
    pub fn create(root: &Path) -> Self {
        let dirs = Self {
            outbound: root.join("outbound"),
            inbound: root.join("inbound"),
        };
        fs::create_dir_all(&dirs.outbound).unwrap();
        fs::create_dir_all(&dirs.inbound).unwrap();
        dirs
    }

    /// The names in the outbound directory, dot files included, sorted.
    pub fn outbound_entries(&self) -> Vec<String> {
        entries(&self.outbound)
    }

    /// The bank writes an inbound file.
    pub fn send(&self, name: &str, bytes: &[u8]) {
        fs::write(self.inbound.join(name), bytes).unwrap();
    }
}

/// Every name in `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}
