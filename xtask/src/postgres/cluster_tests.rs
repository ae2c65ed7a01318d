//! Tests on real private clusters (the installed server binaries, a cluster under the target
//! dir or `/tmp`, a free port): several commands sharing one, and a server binary replaced under
//! a running one.

#![allow(clippy::unwrap_used)]

use std::{
    fs,
    net::TcpListener,
    path::PathBuf,
    process,
    sync::atomic::{AtomicU16, Ordering},
};

use super::{Cluster, Postgres, STOP_WHEN_UNUSED, listening, server_binary};
use crate::paths;

/// Ports tried for the test clusters, below the ephemeral range like the private cluster's.
static NEXT_PORT: AtomicU16 = AtomicU16::new(25600);

/// A port in 25600..26000 nothing listens on.
fn free_port() -> u16 {
    loop {
        let port = NEXT_PORT.fetch_add(1, Ordering::Relaxed);
        assert!(port < 26000, "no free port in 25600..26000");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() && !listening("127.0.0.1", port) {
            return port;
        }
    }
}

/// A cluster directory for one test, removed (with the cluster stopped) on drop.
struct TestCluster {
    preferred: PathBuf,
    fallback: PathBuf,
    port: u16,
}

impl TestCluster {
    fn new(name: &str) -> Self {
        let id = format!("{name}-{}", process::id());
        let test = Self {
            preferred: paths::target_dir()
                .join("tmp")
                .join(format!("xtask-pg-{id}")),
            fallback: PathBuf::from(format!("/tmp/xtask-pg-{id}")),
            port: free_port(),
        };
        test.remove();
        test
    }

    /// The cluster as a new xtask command finds it.
    fn cluster(&self) -> Cluster {
        Cluster::locate_at(self.preferred.clone(), self.fallback.clone()).unwrap()
    }

    /// A new command using it, as `Postgres::provision` would give it.
    fn command(&self) -> Result<Postgres, String> {
        Postgres::private(self.cluster(), self.port)
    }

    fn running(&self) -> bool {
        self.cluster().running().unwrap().is_some()
    }

    fn remove(&self) {
        let _ = fs::remove_dir_all(&self.preferred);
        let _ = fs::remove_dir_all(&self.fallback);
    }
}

impl Drop for TestCluster {
    fn drop(&mut self) {
        let cluster = self.cluster();
        if cluster.running().ok().flatten().is_some() {
            let _ = cluster.stop();
        }
        self.remove();
    }
}

#[test]
fn the_cluster_is_stopped_by_its_last_user_not_under_another() {
    let test = TestCluster::new("leases");
    let mut starter = test.command().unwrap();
    assert!(starter.started_here());
    starter.stop_on_exit();
    let other = test.command().unwrap();
    assert!(
        !other.started_here(),
        "the second command reuses the cluster"
    );
    let url = other.url.clone();

    // The starter is done while the other still uses the cluster: it stays up for it.
    starter.shutdown();
    assert!(test.running(), "stopped under the command still using it");
    assert!(listening("127.0.0.1", test.port), "{url} stopped listening");

    // A third command comes and goes: still up.
    let third = test.command().unwrap();
    assert!(!third.started_here());
    third.shutdown();
    assert!(test.running());

    // The last user is done: the cluster is stopped, as its starter asked.
    other.shutdown();
    assert!(!test.running(), "left running after its last user");
    assert!(!test.cluster().base.join(STOP_WHEN_UNUSED).exists());

    // Started to be kept (`cargo xtask db`): left running after its last user.
    let mut kept = test.command().unwrap();
    assert!(kept.started_here());
    kept.keep_running();
    kept.shutdown();
    assert!(test.running(), "a kept cluster was stopped");
}

#[test]
fn a_cluster_whose_server_binary_changed_is_restarted_when_unused_and_refused_when_used() {
    let test = TestCluster::new("upgrade");
    let mut first = test.command().unwrap();
    first.keep_running();
    let before = test.cluster().running().unwrap().unwrap();
    // As if the server package had been upgraded since the cluster started: the recorded
    // binary is not the installed one any more.
    let record = test.cluster().base.join(server_binary::RECORD);
    let text = fs::read_to_string(&record).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1] = "postgres (PostgreSQL) 15.0";
    fs::write(&record, lines.join("\n")).unwrap();

    // In use: refused, saying why and by whom.
    let refused = test.command().err().unwrap();
    assert!(
        refused.starts_with("expected the cluster in ")
            && refused.contains("(postgres (PostgreSQL) 15.0), and ")
            && refused.contains(&format!("(pid {})", process::id())),
        "{refused}"
    );
    assert_eq!(
        test.cluster().running().unwrap().map(|p| p.pid),
        Some(before.pid)
    );

    // Unused: restarted on the installed binary.
    first.shutdown();
    let second = test.command().unwrap();
    assert!(second.started_here(), "not restarted");
    let after = test.cluster().running().unwrap().unwrap();
    assert_ne!(after.pid, before.pid);
    assert_eq!(
        server_binary::replaced(
            &test.cluster().base,
            after.pid,
            std::path::Path::new(&test.cluster().bins.postgres)
        ),
        None
    );
    second.shutdown();
}

#[test]
fn fault_tests_hold_the_cluster_alone() {
    let test = TestCluster::new("alone");
    let mut chaos = test.command().unwrap();
    chaos.stop_on_exit();
    let other = test.command().unwrap();

    // `cargo xtask chaos` stops and starts the cluster: not while another command uses it.
    let refused = chaos.control_argv().err().unwrap();
    assert!(
        refused.starts_with("expected no other xtask command using the cluster in ")
            && refused.contains(&format!("(pid {})", process::id())),
        "{refused}"
    );
    other.shutdown();
    assert!(chaos.control_argv().unwrap().is_some());

    // Nor may another start using it meanwhile.
    let refused = test.command().err().unwrap();
    assert!(
        refused.contains("holding it alone (it stops and starts the cluster as it runs)"),
        "{refused}"
    );
    chaos.shutdown();
    assert!(!test.running(), "the last user asked for it to be stopped");
    assert!(test.command().unwrap().started_here(), "free again");
}
