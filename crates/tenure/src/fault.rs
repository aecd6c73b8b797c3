//! Fault injection for the reliability campaigns (`cargo xtask torture`).
//!
//! Compiled in only with the `fault-injection` feature, which no shipped
//! artifact enables: the campaign binaries live in their own workspace
//! (`torture/`) so the feature cannot leak into the C library, the wheel or
//! the CLI through feature unification. Without the feature every hook is an
//! empty inline function.
//!
//! - `TENURE_FAULT_ABORT_AFTER=N`: the N-th write statement of this process
//!   (counting every statement of a write transaction and each COMMIT) calls
//!   `abort()` instead of running: a crash between statements of a transition.
//! - `TENURE_FAULT_STALL_PRECOMMIT_MS=M`: sleep M ms between a transition's
//!   clock sample and the pre-commit sample.

#[cfg(feature = "fault-injection")]
mod imp {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    static COUNT: AtomicU64 = AtomicU64::new(0);

    fn env_u64(name: &str) -> Option<u64> {
        std::env::var(name).ok().and_then(|v| v.parse().ok())
    }

    fn abort_after() -> Option<u64> {
        static V: OnceLock<Option<u64>> = OnceLock::new();
        *V.get_or_init(|| env_u64("TENURE_FAULT_ABORT_AFTER"))
    }

    /// A point between two statements of a write transaction.
    pub(crate) fn point() {
        if let Some(n) = abort_after() {
            if COUNT.fetch_add(1, Ordering::Relaxed) + 1 >= n {
                std::process::abort();
            }
        }
    }

    /// Between the transition sample and the pre-commit sample.
    pub(crate) fn stall_precommit() {
        static V: OnceLock<Option<u64>> = OnceLock::new();
        if let Some(ms) = *V.get_or_init(|| env_u64("TENURE_FAULT_STALL_PRECOMMIT_MS")) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }
}

#[cfg(not(feature = "fault-injection"))]
mod imp {
    #[inline(always)]
    pub(crate) fn point() {}
    #[inline(always)]
    pub(crate) fn stall_precommit() {}
}

pub(crate) use imp::{point, stall_precommit};
