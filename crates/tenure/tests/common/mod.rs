#![allow(dead_code)]
//! Shared test helpers.

use std::sync::atomic::{AtomicU64, Ordering};
use tenure::{Authority, ManualClock, Options, Ttl};

pub const T0: i64 = 1_800_000_000_000_000; // 2027-01-15, µs

#[allow(clippy::new_without_default)]
pub struct Env {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub auth: Authority,
}

impl Env {
    pub fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(T0);
        let auth = open(&dir, &clock);
        Env { dir, clock, auth }
    }
    pub fn reopen(&self) -> Authority {
        open(&self.dir, &self.clock)
    }
    pub fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("store.db")
    }
    /// A production `p` with jobs `j0..jn`.
    pub fn with_jobs(n: usize, max_attempts: u32) -> Env {
        let env = Env::new();
        env.auth.create_production("p").unwrap();
        for i in 0..n {
            env.auth
                .submit(
                    "p",
                    &tenure::JobSpec::new(format!("j{i}"), format!("payload {i}").into_bytes())
                        .max_attempts(max_attempts),
                )
                .unwrap();
        }
        env
    }
}

pub fn open(dir: &tempfile::TempDir, clock: &ManualClock) -> Authority {
    Authority::open(
        dir.path().join("store.db"),
        &Options::new().clock(clock.clone()),
    )
    .unwrap()
}

pub fn secs(n: i64) -> Ttl {
    Ttl::from_micros(n * 1_000_000).unwrap()
}

static N: AtomicU64 = AtomicU64::new(0);
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{}", N.fetch_add(1, Ordering::Relaxed))
}
