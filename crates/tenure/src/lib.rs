//! # tenure — an embedded job lease authority
//!
//! Coordinators put jobs into productions; workers claim a job and receive an
//! owning [`Lease`]: a private secret plus a public random claim ID that
//! fences stale workers. Renew, release, fail and complete are each checked
//! under the store's writer lock against the job's current claim, secret
//! digest, state and expiry, so a worker whose lease expired or was replaced
//! can never complete, extend or release the job. The authority's clock is
//! private and keeps a durable high-water mark: a clock that moves backwards
//! is refused until real time catches up (see [`Error::ClockRollback`]); this
//! is a conservative local-clock policy, not a trusted-time guarantee.
//!
//! ```
//! use tenure::{Authority, Fact, JobSpec, JobState, Options, Ttl};
//! # fn main() -> tenure::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("store.db");
//! let auth = Authority::open(&path, &Options::new())?;
//! auth.create_production("nightly")?;
//! auth.submit("nightly", &JobSpec::new("build-1", b"make all".to_vec()))?;
//!
//! let lease = auth.claim_next("nightly", "worker-7@host-3", Ttl::from_micros(30_000_000)?)?;
//! lease.renew(Ttl::try_from(std::time::Duration::from_secs(60))?)?;
//! lease.complete(&[Fact::new("artifact", "build-1.tar")])?;
//!
//! assert_eq!(auth.job("nightly", "build-1")?.state, JobState::Completed);
//! # Ok(()) }
//! ```
//!
//! Rules live in one place (`rules`), storage behind one interface (`store`),
//! and the system and FFI glue in one module (`sys`, behind a safe
//! interface; no other module may hold such code). Modules depend on each
//! other without a cycle. The C ABI, C++ and Python projections and the CLI
//! convert types and map errors on top of this crate.

#![warn(missing_docs)]
#![deny(unsafe_code)]

mod authority;
mod check;
mod clock;
mod doorbell;
mod edit;
mod error;
pub mod executor;
mod fault;
mod figures;
mod gates;
mod group;
mod inner;
mod keeper;
mod lease;
mod model;
#[cfg(test)]
mod module_graph;
mod ops;
mod request;
mod retention;
mod retry;
mod rules;
mod schedule;
mod secret;
mod session;
#[doc(hidden)]
pub mod stats;
mod store;
#[allow(unsafe_code)]
mod sys;
mod token;
mod ttl;
pub mod validate;
mod wait;
pub mod worker;

pub use authority::{Authority, Options, DEFAULT_PAGE, MAX_PAGE};
#[cfg(feature = "test-clock")]
pub use clock::{Clock, ManualClock};
pub use edit::Edit;
pub use error::{Error, ErrorCode, Result};
pub use figures::{
    Flow, Percentiles, ProductionStats, Stats, StatsQuery, DEFAULT_STATS_HORIZON,
    DEFAULT_STATS_WINDOW, FLOW_EVENT_CAP, MAX_STATS_SPAN,
};
pub use gates::{Gates, RateLimit, MAX_GATE, MAX_RATE_INTERVAL};
pub use keeper::{Keeper, KeeperStatus};
pub use lease::Lease;
pub use model::{
    CancelOutcome, CheckReport, ClockReading, Event, EventKind, Execution, Fact, JobSpec, JobState,
    JobView, LeaseStatus, ListQuery, ProductionView, PublishedFact, Submitted,
    DEFAULT_MAX_ATTEMPTS,
};
pub use request::{Applied, ClaimRequest};
pub use retention::{
    Age, DeletedCounts, ExportRecord, PruneReport, Retention, AUTO_PRUNE_CATCH_UP_EVERY,
    AUTO_PRUNE_EVERY, DELETE_STEP_JOBS, PRUNE_STEP_ROWS,
};
pub use retry::{Outage, OutageStep, SlotsOutage, SlotsStep};
pub use schedule::{
    slot_job, Cadence, Overlap, ScheduleSpec, ScheduleView, Ticked, MAX_CATCH_UP,
    MAX_INTERVAL_SECS, MAX_SCHEDULE_NAME,
};
pub use store::sqlite::{Synchronous, APPLICATION_ID};
pub use store::SCHEMA_VERSION;
pub use token::{Token, MAX_TOKEN_LEN, TOKEN_PREFIX};
pub use ttl::{Backoff, Delay, Ttl};
pub use uuid::Uuid;
pub use wait::WaitCancel;

/// The library version (from Cargo).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The README's Rust examples, compiled and run as doc-tests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
