//! The authority: one store plus the rules.

use crate::check;
use crate::clock::{Clock, SystemClock};
use crate::edit::Edit;
use crate::error::{Error, Result};
use crate::group::Combiner;
use crate::inner::Inner;
use crate::lease::transitions::{self, Outcomes};
use crate::lease::Lease;
use crate::model::{
    CheckReport, ClockReading, Event, JobSpec, JobView, LeaseStatus, ListQuery, ProductionView,
    PublishedFact, Submitted,
};
use crate::request::Applied;
use crate::retention::{DeletedCounts, ExportRecord, PruneReport, Retention};
use crate::rules::{self, LeaseKey};
use crate::session::Session;
use crate::store::sqlite::{SqliteBackend, Synchronous};
use crate::store::SCHEMA_VERSION;
use crate::wait::WaitCancel;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// True for an address that names a PostgreSQL server rather than a file.
fn is_server_url(addr: &str) -> bool {
    addr.starts_with("postgres://") || addr.starts_with("postgresql://")
}

/// Largest page for listings and events.
pub const MAX_PAGE: usize = 10_000;
/// Page size used when a caller passes 0.
pub const DEFAULT_PAGE: usize = 100;

/// How to open a store.
#[derive(Clone)]
pub struct Options {
    synchronous: Synchronous,
    busy_timeout: Duration,
    group_commit: bool,
    retention: Option<Retention>,
    clock: Option<Arc<dyn Clock>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            group_commit: true,
            retention: None,
            clock: None,
        }
    }
}

impl Options {
    /// Defaults: `synchronous = FULL`, busy timeout 5 s, group commit on.
    pub fn new() -> Options {
        Options::default()
    }
    /// SQLite `synchronous` (`Full` by default).
    pub fn synchronous(mut self, s: Synchronous) -> Options {
        self.synchronous = s;
        self
    }
    /// How long a write waits for the writer lock before [`Error::Busy`]
    /// (at most 1 hour; 5 s by default).
    pub fn busy_timeout(mut self, d: Duration) -> Options {
        self.busy_timeout = d;
        self
    }
    /// Group commit (on by default): convenience calls (claim, claim-next,
    /// submit, submit-many, cancel, create and cancel production, and the
    /// lease's renew, release, fail and complete) that threads of this
    /// handle issue at the same time share one write transaction and one
    /// commit, each in its own savepoint with its own checks, clock samples
    /// and outcome; a caller returns only after the commit carrying its
    /// operation. Off: every convenience call is its own transaction.
    /// Explicit [`Edit`]s are never grouped, and a PostgreSQL store always
    /// runs one transaction per call (see docs/design.md, "Group commit").
    pub fn group_commit(mut self, on: bool) -> Options {
        self.group_commit = on;
        self
    }
    /// A retention policy this handle applies automatically: one bounded
    /// prune step ([`Authority::prune`]) after every
    /// [`crate::AUTO_PRUNE_EVERY`] committed one-step calls (every
    /// [`crate::AUTO_PRUNE_CATCH_UP_EVERY`] while the last step hit its
    /// bound), in its own short transaction. Off by default (no policy: nothing is ever pruned
    /// except by an explicit [`Authority::prune`]); see docs/design.md,
    /// "Retention".
    pub fn retention(mut self, policy: Retention) -> Options {
        self.retention = (!policy.is_off()).then_some(policy);
        self
    }
    /// Inject a clock (Rust-only `test-clock` feature; never in the C ABI,
    /// the wheel or the CLI).
    #[cfg(feature = "test-clock")]
    pub fn clock(mut self, c: impl Clock) -> Options {
        self.clock = Some(Arc::new(c));
        self
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("synchronous", &self.synchronous)
            .field("busy_timeout", &self.busy_timeout)
            .field("group_commit", &self.group_commit)
            .field("retention", &self.retention)
            .field("injected_clock", &self.clock.is_some())
            .finish()
    }
}

/// A job lease authority over one store. `Send + Sync`: share it between
/// threads (each call takes its own pooled connection) or clone it.
#[derive(Clone)]
pub struct Authority {
    pub(crate) inner: Arc<Inner>,
}

fn page(limit: usize) -> usize {
    match limit {
        0 => DEFAULT_PAGE,
        n => n.min(MAX_PAGE),
    }
}

impl Authority {
    /// Open or create the store at `path` (WAL). A store newer than this
    /// library is refused untouched ([`Error::SchemaTooNew`]); an older one is
    /// migrated forward in one transaction; a foreign or corrupt file is a
    /// [`Error::Store`]. A `path` starting with `postgres://` or
    /// `postgresql://` is a PostgreSQL server address instead (cargo feature
    /// `postgres`, on by default): the same rules on a shared server, whose
    /// clock is the authority's clock (see the `store::postgres` module docs).
    pub fn open(path: impl AsRef<Path>, options: &Options) -> Result<Authority> {
        let path = path.as_ref();
        if options.busy_timeout > Duration::from_secs(3600) {
            return Err(Error::invalid("busy_timeout must be at most 1 hour"));
        }
        if path.as_os_str().is_empty() {
            return Err(Error::invalid("the store path must not be empty"));
        }
        let clock: Arc<dyn Clock> = options
            .clock
            .clone()
            .unwrap_or_else(|| Arc::new(SystemClock));
        if let Some(url) = path.to_str().filter(|p| is_server_url(p)) {
            return Authority::open_server(url, options, clock);
        }
        let c2 = clock.clone();
        let (backend, opened) = SqliteBackend::open(
            path,
            options.synchronous,
            options.busy_timeout,
            &move || c2.now_us(),
        )?;
        Ok(Authority {
            inner: Arc::new(Inner {
                backend: Arc::new(backend),
                clock,
                path: path.to_path_buf(),
                migrated_from: opened.from_version,
                group: options
                    .group_commit
                    .then(|| Combiner::new(options.synchronous == Synchronous::Full)),
                waits: Default::default(),
                rotations: Default::default(),
                retention: options.retention,
                writes: Default::default(),
                prune_behind: Default::default(),
                last_fold: Default::default(),
                flow_seen: Default::default(),
            }),
        })
    }

    /// A `postgres://` / `postgresql://` address: the PostgreSQL backend,
    /// whose private clock is the server's (unless a test clock is injected).
    /// [`Authority::path`] then gives the URL without its password.
    #[cfg(feature = "postgres")]
    fn open_server(url: &str, options: &Options, clock: Arc<dyn Clock>) -> Result<Authority> {
        use crate::store::postgres;
        let (backend, from) =
            postgres::PgBackend::open(url, options.busy_timeout, options.clock.is_none())?;
        Ok(Authority {
            inner: Arc::new(Inner {
                backend: Arc::new(backend),
                clock,
                path: PathBuf::from(postgres::redact(url)),
                migrated_from: from,
                // No store-wide writer lock to share: one transaction per
                // call, whatever `Options::group_commit` says.
                group: None,
                waits: Default::default(),
                rotations: Default::default(),
                retention: options.retention,
                writes: Default::default(),
                prune_behind: Default::default(),
                last_fold: Default::default(),
                flow_seen: Default::default(),
            }),
        })
    }

    #[cfg(not(feature = "postgres"))]
    fn open_server(_url: &str, _options: &Options, _clock: Arc<dyn Clock>) -> Result<Authority> {
        Err(Error::Store(
            "this build of tenure has no PostgreSQL backend (cargo feature `postgres`)".into(),
        ))
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The schema version found when this handle opened the store (0 for a
    /// new store; equal to [`Authority::schema_version`] if nothing migrated).
    pub fn migrated_from(&self) -> u32 {
        self.inner.migrated_from
    }

    /// The schema version this library writes.
    pub fn schema_version() -> u32 {
        SCHEMA_VERSION
    }

    /// Operations queued for this handle's next commit group and not yet
    /// taken into one (tests use it to form a group deterministically).
    #[doc(hidden)]
    pub fn queued_group_ops(&self) -> usize {
        self.inner.group.as_ref().map_or(0, |g| g.queued())
    }

    /// Commit groups this handle has formed, and the one-step calls they
    /// took: `(groups, calls)` (a call alone is a group of one; `(0, 0)`
    /// with grouping off or on PostgreSQL). The difference of two readings
    /// tells how many calls shared each write transaction (the benchmarks
    /// report it).
    #[doc(hidden)]
    pub fn commit_groups(&self) -> (u64, u64) {
        self.inner.group.as_ref().map_or((0, 0), |g| g.formed())
    }

    /// Begin an explicit edit (takes the writer lock).
    pub fn edit(&self) -> Result<Edit> {
        Edit::begin(self.inner.clone())
    }

    /// One rule step as its own edit (or commit-group member).
    fn step<T: Send + 'static>(
        &self,
        f: impl FnMut(&mut Session) -> Result<T> + Send,
    ) -> Result<T> {
        self.inner.one_step(f)
    }

    /// [`Authority::step`] of an idempotent call: retried when the
    /// connection to a store server breaks ([`crate::retry`]).
    fn step_idempotent<T: Send + 'static>(
        &self,
        mut f: impl FnMut(&mut Session) -> Result<T> + Send,
    ) -> Result<T> {
        crate::retry::idempotent(|_| self.inner.one_step(&mut f))
    }

    /// A claim made outside an edit is active at once.
    fn mint(&self, m: rules::Minted) -> Lease {
        Lease::new(self.inner.clone(), m, LeaseStatus::Active, 0)
    }

    /// A batched transition of many leases as one step: leases of another
    /// handle, or closed or pending ones, are refused locally (their
    /// outcome, nothing asked of the store); the rest go to `f` together,
    /// and each accepted lease settles once the commit returned. A commit
    /// refused for a deadline (a lease that expired between its check and
    /// the commit) changed nothing: the step runs again, and that lease is
    /// then refused by its own check.
    fn lease_batch<T: Send + 'static>(
        &self,
        leases: &[&Lease],
        mut f: impl FnMut(&mut Session, &[LeaseKey<'_>], &[usize], bool) -> Outcomes<T> + Send,
    ) -> Result<Vec<Result<T>>> {
        crate::validate::batch(leases.len())?;
        let mut out: Vec<Option<Result<T>>> = leases.iter().map(|_| None).collect();
        let (mut idx, mut keys) = (Vec::new(), Vec::new());
        for (i, l) in leases.iter().enumerate() {
            let local = if Arc::ptr_eq(&self.inner, &l.inner) {
                l.usable_in(0)
            } else {
                Err(Error::invalid(
                    "the lease belongs to another authority handle",
                ))
            };
            match local {
                Ok(()) => {
                    idx.push(i);
                    keys.push(l.key());
                }
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        if !keys.is_empty() {
            // A lost connection retries with replay on ([`crate::retry`]).
            let budget = || {
                idx.iter()
                    .map(|&i| leases[i].retry_budget())
                    .max()
                    .unwrap_or(crate::retry::MIN_RETRY_TIME)
            };
            let done = crate::retry::idempotent_for(budget, |replay| {
                let mut rounds = 0;
                loop {
                    rounds += 1;
                    match self.inner.one_step(|s| f(s, &keys, &idx, replay)) {
                        Err(Error::LeaseExpired(_)) if rounds < 4 => continue,
                        r => break r,
                    }
                }
            })?;
            if done.len() != idx.len() {
                return Err(Error::Internal("a batch lost outcomes".into()));
            }
            for (i, r) in idx.into_iter().zip(done) {
                out[i] = Some(r.map(|(v, settle)| {
                    settle.apply(&leases[i].local);
                    v
                }));
            }
        }
        Ok(out
            .into_iter()
            .map(|o| {
                o.unwrap_or_else(|| Err(Error::Internal("a batch item got no outcome".into())))
            })
            .collect())
    }

    crate::ops::shared_operations!();

    /// [`Authority::renew_many`] as an idempotent call: each lease is
    /// answered as [`Lease::renew_idempotent`] would answer it alone.
    pub fn renew_many_idempotent(
        &self,
        leases: &[&Lease],
        ttl: crate::Ttl,
    ) -> Result<Vec<Result<Applied<i64>>>> {
        self.lease_batch(leases, |s, keys, _, _| {
            transitions::renew_many(s, keys, ttl, true, |a| a)
        })
    }

    /// [`Authority::release_many`] as an idempotent call (each lease as
    /// [`Lease::release_idempotent`]).
    pub fn release_many_idempotent(
        &self,
        leases: &[&Lease],
    ) -> Result<Vec<Result<Applied<crate::JobState>>>> {
        self.lease_batch(leases, |s, keys, _, _| {
            transitions::release_many(s, keys, true, |a| a)
        })
    }

    /// [`Authority::fail_many`] as an idempotent call (each lease as
    /// [`Lease::fail_idempotent`]).
    pub fn fail_many_idempotent(
        &self,
        items: &[(&Lease, &str, bool)],
    ) -> Result<Vec<Result<Applied<crate::JobState>>>> {
        let leases: Vec<&Lease> = items.iter().map(|x| x.0).collect();
        self.lease_batch(&leases, |s, keys, idx, _| {
            let args: Vec<(&str, bool)> = idx.iter().map(|&i| (items[i].1, items[i].2)).collect();
            transitions::fail_many(s, keys, &args, true, |a| a)
        })
    }

    /// [`Authority::complete_many`] as an idempotent call (each lease as
    /// [`Lease::complete_idempotent`]).
    pub fn complete_many_idempotent(
        &self,
        items: &[(&Lease, &[crate::Fact])],
    ) -> Result<Vec<Result<Applied<()>>>> {
        let leases: Vec<&Lease> = items.iter().map(|x| x.0).collect();
        self.lease_batch(&leases, |s, keys, idx, _| {
            let facts: Vec<&[crate::Fact]> = idx.iter().map(|&i| items[i].1).collect();
            transitions::complete_many(s, keys, &facts, true, |a| a)
        })
    }

    /// Claim the next claimable job of `production`, waiting up to `timeout`
    /// for one (at most 24 h, whole µs; zero makes one attempt).
    ///
    /// Each attempt is an ordinary [`Authority::claim_next`]. Between
    /// attempts the caller sleeps, using no CPU, until a commit of any
    /// thread or process may have made a job claimable (a submission, a
    /// release, a retryable failure: SQLite rings a futex doorbell in the
    /// store's queue file, PostgreSQL sends `NOTIFY`), until a lease of the
    /// production expires, until the timeout, or until `cancel` (or
    /// [`Authority::cancel_waits`]) cancels it. Timeout and cancellation both
    /// end with [`Error::NoJobAvailable`]; a cancelled wait's message says so
    /// and [`WaitCancel::is_cancelled`] tells them apart. Any other error of
    /// an attempt ends the wait with that error.
    pub fn claim_next_wait(
        &self,
        production: &str,
        holder: &str,
        ttl: crate::Ttl,
        timeout: Duration,
        cancel: Option<&WaitCancel>,
    ) -> Result<Lease> {
        let timeout = crate::ttl::bounded("a wait timeout", timeout, true)?;
        crate::validate::id("production", production)?;
        crate::validate::holder(holder)?;
        self.wait_for(&[production], timeout, cancel, || {
            self.claim_next(production, holder, ttl)
        })
    }

    /// The wait loop of [`Authority::claim_next_wait`] and
    /// [`Authority::claim_next_wait_across`]: `attempt` until it claims,
    /// sleeping on the store's doorbell, woken also when work in any of
    /// `productions` may become claimable without a commit.
    fn wait_for(
        &self,
        productions: &[&str],
        timeout: Duration,
        cancel: Option<&WaitCancel>,
        attempt: impl FnMut() -> Result<Lease>,
    ) -> Result<Lease> {
        let bell = self.inner.backend.doorbell()?;
        let all = self.inner.waits();
        let cancels: &[&WaitCancel] = match cancel {
            Some(c) => &[&all, c],
            None => &[&all],
        };
        crate::wait::until_claimed(
            &productions.join(", "),
            timeout,
            &bell,
            cancels,
            attempt,
            |seen| {
                self.inner.read(|t, now_us| {
                    let mut next: Option<i64> = None;
                    for p in productions {
                        if let Some(at) = rules::next_claimable_us(t, p, now_us, seen)? {
                            next = Some(next.map_or(at, |n| n.min(at)));
                        }
                    }
                    Ok((now_us, next))
                })
            },
        )
    }

    /// Claim the next claimable job across `productions` (1 ..=
    /// [`MAX_PRODUCTIONS`](crate::validate::MAX_PRODUCTIONS) distinct
    /// productions), rotating: this handle asks them in list order starting
    /// after the production that served its previous claim across the same
    /// list, and the first with a claimable job serves this one
    /// (docs/design.md, "Claims across productions").
    /// [`Error::NoJobAvailable`] when none has one; `not_found` if one does
    /// not exist.
    pub fn claim_next_across(
        &self,
        productions: &[&str],
        holder: &str,
        ttl: crate::Ttl,
    ) -> Result<Lease> {
        let mut v = self.claim_across(productions, holder, ttl, 1)?;
        match v.pop() {
            Some(l) => Ok(l),
            None => Err(Error::NoJobAvailable(format!(
                "nothing claimable in productions {}",
                productions.join(", ")
            ))),
        }
    }

    /// Claim up to `n` (1 ..= [`MAX_BATCH`](crate::validate::MAX_BATCH))
    /// jobs across `productions` in one operation, shared out in rounds
    /// from this handle's rotation (docs/design.md, "Claims across
    /// productions"); fewer (possibly none) when fewer are claimable.
    pub fn claim_next_many_across(
        &self,
        productions: &[&str],
        holder: &str,
        ttl: crate::Ttl,
        n: usize,
    ) -> Result<Vec<Lease>> {
        self.claim_across(productions, holder, ttl, n)
    }

    fn claim_across(
        &self,
        productions: &[&str],
        holder: &str,
        ttl: crate::Ttl,
        n: usize,
    ) -> Result<Vec<Lease>> {
        crate::validate::production_list(productions)?;
        let list: Vec<String> = productions.iter().map(|p| (*p).to_owned()).collect();
        let start = self.inner.rotation(&list);
        let (ms, next) =
            self.step(|s| rules::claim_next_across(s, productions, start, holder, ttl, n))?;
        self.inner.set_rotation(list, next);
        Ok(ms.into_iter().map(|m| self.mint(m)).collect())
    }

    /// [`Authority::claim_next_wait`] across `productions`: each attempt is
    /// an [`Authority::claim_next_across`]; the wait wakes on a commit that
    /// may have made work claimable in any of them, or when a lease of one
    /// of them expires or a job of one becomes due.
    pub fn claim_next_wait_across(
        &self,
        productions: &[&str],
        holder: &str,
        ttl: crate::Ttl,
        timeout: Duration,
        cancel: Option<&WaitCancel>,
    ) -> Result<Lease> {
        let timeout = crate::ttl::bounded("a wait timeout", timeout, true)?;
        crate::validate::production_list(productions)?;
        crate::validate::holder(holder)?;
        self.wait_for(productions, timeout, cancel, || {
            self.claim_next_across(productions, holder, ttl)
        })
    }

    /// Cancel every [`Authority::claim_next_wait`] in progress on this
    /// authority and its clones (waits that start later are not affected):
    /// what closing the authority does before it lets go of the store.
    pub fn cancel_waits(&self) {
        self.inner.cancel_waits();
    }

    /// All productions, by name.
    pub fn productions(&self) -> Result<Vec<ProductionView>> {
        self.inner.read(|t, _| {
            Ok(t.productions()?
                .into_iter()
                .map(|p| ProductionView {
                    name: p.name,
                    created_us: p.created_us,
                    cancelled_us: p.cancelled_us,
                    backoff: p.backoff,
                })
                .collect())
        })
    }

    /// Submit many jobs in one transaction: all or nothing. The first
    /// failing submission rolls every one of them back and is the error.
    /// Each job is decided by the single submission's rules (a repeated ID
    /// is compared with its first occurrence); on PostgreSQL the new rows
    /// and their events are written set-based, one statement each.
    ///
    /// This is one operation, not an [`Edit`] of many: an edit isolates each
    /// of its operations in a savepoint so that one failure leaves the edit
    /// usable, which an all-or-nothing batch never needs.
    pub fn submit_many(&self, production: &str, specs: &[JobSpec]) -> Result<Vec<Submitted>> {
        self.inner
            .one_step(|s| rules::submit_many(s, production, specs))
    }

    /// Turn a token from [`Lease::export_token`] back into an active lease,
    /// after validating production, job and secret against the store's
    /// current claim, state and expiry.
    pub fn import_lease(&self, token: &str) -> Result<Lease> {
        let m = self.inner.read(|t, now| rules::import(t, now, token))?;
        Ok(self.mint(m))
    }

    /// Observe one job.
    pub fn job(&self, production: &str, job: &str) -> Result<JobView> {
        crate::validate::id("production", production)?;
        crate::validate::id("job", job)?;
        self.inner.read(|t, now| {
            let mut v = t
                .job(production, job)?
                .map(|r| rules::view(&r, now))
                .ok_or_else(|| Error::NotFound(format!("job {production}/{job}")))?;
            v.progress = t.progress(production, job)?;
            Ok(v)
        })
    }

    /// A production's claim gates: paused since when, concurrency limit,
    /// rate limit (all `None` when none is set).
    pub fn production_gates(&self, production: &str) -> Result<crate::Gates> {
        crate::validate::id("production", production)?;
        self.inner.read(|t, _| {
            if t.production(production)?.is_none() {
                return Err(Error::NotFound(format!("production {production:?}")));
            }
            Ok(t.gates(production)?
                .map(|g| crate::Gates::from_row(&g))
                .unwrap_or_default())
        })
    }

    /// When claim-next on `production` may next find work that nobody
    /// writes: the earliest not-before time of a requested job still
    /// waiting for it, or the earliest expiry of a claimed job, whichever
    /// comes first (µs since the epoch; `None` if neither exists; a time
    /// already past means now).
    pub fn next_due_us(&self, production: &str) -> Result<Option<i64>> {
        crate::validate::id("production", production)?;
        self.inner
            .read(|t, now_us| rules::next_claimable_us(t, production, now_us, None))
    }

    /// A job's payload.
    pub fn payload(&self, production: &str, job: &str) -> Result<Vec<u8>> {
        crate::validate::id("production", production)?;
        crate::validate::id("job", job)?;
        // A read: retried while the store server asks to ([`crate::retry`]).
        crate::retry::idempotent(|_| {
            self.inner.read(|t, _| {
                t.payload(production, job)?
                    .ok_or_else(|| Error::NotFound(format!("job {production}/{job}")))
            })
        })
    }

    /// List a production's jobs by job ID, optionally in one observed state,
    /// a page at a time (pass the last job ID as `after` for the next page).
    pub fn jobs(&self, production: &str, q: &ListQuery) -> Result<Vec<JobView>> {
        crate::validate::id("production", production)?;
        if let Some(a) = &q.after {
            crate::validate::id("after", a)?;
        }
        let limit = page(q.limit);
        self.inner.read(|t, now| {
            if t.production(production)?.is_none() {
                return Err(Error::NotFound(format!("production {production:?}")));
            }
            let stored = q.state.map(rules::stored_for);
            let mut out = Vec::new();
            let mut after = q.after.clone();
            loop {
                let rows = t.jobs_page(production, stored, after.as_deref(), limit)?;
                let done = rows.len() < limit;
                for r in &rows {
                    let v = rules::view(r, now);
                    if q.state.is_none_or(|s| s == v.state) {
                        out.push(v);
                        if out.len() == limit {
                            return Ok(out);
                        }
                    }
                }
                if done {
                    return Ok(out);
                }
                after = rows.last().map(|r| r.job.clone());
            }
        })
    }

    /// Facts published by a job's completion, provenance included.
    pub fn facts(&self, production: &str, job: &str) -> Result<Vec<PublishedFact>> {
        crate::validate::id("production", production)?;
        crate::validate::id("job", job)?;
        self.inner.read(|t, _| t.facts(production, Some(job)))
    }

    /// Every fact of a production, by job.
    pub fn production_facts(&self, production: &str) -> Result<Vec<PublishedFact>> {
        crate::validate::id("production", production)?;
        self.inner.read(|t, _| t.facts(production, None))
    }

    /// Events with sequence number greater than `after`, oldest first, at
    /// most `limit` (0 = 100, capped at 10 000).
    ///
    /// If events up to a sequence number at or after `after + 1` were
    /// pruned, the answer is [`Error::HistoryPruned`] with the horizon
    /// (never a silent skip): resume after the horizon.
    pub fn events(&self, after: u64, limit: usize) -> Result<Vec<Event>> {
        self.inner.read(|t, _| {
            // The listing first: on PostgreSQL it may begin a new snapshot,
            // which the horizon is then read in.
            let evs = t.events(None, after, page(limit))?;
            rules::history_available(after, t.history_horizon()?)?;
            Ok(evs)
        })
    }

    /// The history horizon: every event with a sequence number up to it was
    /// pruned (0: none). A tailer starting afresh starts after it.
    pub fn history_horizon(&self) -> Result<u64> {
        self.inner.read(|t, _| t.history_horizon())
    }

    /// Events of one production (see [`Authority::events`]).
    pub fn production_events(
        &self,
        production: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>> {
        crate::validate::id("production", production)?;
        self.inner.read(|t, _| {
            let evs = t.events(Some(production), after, page(limit))?;
            rules::history_available(after, t.history_horizon()?)?;
            Ok(evs)
        })
    }

    /// One bounded prune step under `policy` (at most
    /// [`crate::PRUNE_STEP_ROWS`] rows of each kind, one short
    /// transaction); call again while [`PruneReport::more`]. Ages are
    /// measured on the authority's clock, sampled like a guarded operation:
    /// a clock below the high-water mark refuses it
    /// ([`Error::ClockRollback`]). Live jobs are never touched.
    pub fn prune(&self, policy: &Retention) -> Result<PruneReport> {
        self.inner
            .prune_step(policy, crate::retention::PRUNE_STEP_ROWS)
    }

    /// Rewrite a SQLite store so that pruning gives freed space back to the
    /// file system from then on: a store created before schema 3 has
    /// `auto_vacuum` off, which only a full `VACUUM` can change. Holds the
    /// writer lock while it runs (every other writer waits, up to its busy
    /// timeout): run it in a quiet moment. Nothing to do on PostgreSQL
    /// (autovacuum). See docs/design.md, "Retention".
    pub fn vacuum(&self) -> Result<()> {
        self.inner.backend.compact()
    }

    /// Remove a finished production with its jobs, facts, events and
    /// tombstones. Refused with [`Error::ProductionLive`], changing nothing,
    /// while any of its jobs is not terminal. Runs in bounded steps (each
    /// its own short transaction; the first marks the production cancelled,
    /// so it takes no new jobs); if interrupted, calling again finishes it.
    pub fn delete_production(&self, production: &str) -> Result<DeletedCounts> {
        let mut total = DeletedCounts::default();
        loop {
            let (c, done) = self
                .inner
                .session()?
                .single(|s| rules::delete_production_step(s, production))?;
            total.jobs += c.jobs;
            total.facts += c.facts;
            total.events += c.events;
            total.tombstones += c.tombstones;
            if done {
                return Ok(total);
            }
        }
    }

    /// Export a production for archiving: `sink` receives its
    /// [`ExportRecord`]s (the production, its jobs by ID with payloads, its
    /// facts, then its events by sequence number). Jobs and facts come from
    /// one snapshot; events are paged like a tailer's. No secret and no
    /// secret digest is exported. Stops at the first error of `sink`.
    /// Returns the number of records.
    pub fn export_production(
        &self,
        production: &str,
        sink: &mut dyn FnMut(ExportRecord) -> Result<()>,
    ) -> Result<u64> {
        crate::validate::id("production", production)?;
        let mut n = 0u64;
        let mut last_seq = self.inner.read(|t, now| {
            let p = t
                .production(production)?
                .ok_or_else(|| Error::NotFound(format!("production {production:?}")))?;
            sink(ExportRecord::Production(ProductionView {
                name: p.name,
                created_us: p.created_us,
                cancelled_us: p.cancelled_us,
                backoff: p.backoff,
            }))?;
            n += 1;
            let mut after: Option<String> = None;
            loop {
                let rows = t.jobs_page(production, None, after.as_deref(), 1_000)?;
                for r in &rows {
                    let payload = t.payload(production, &r.job)?.unwrap_or_default();
                    sink(ExportRecord::Job {
                        view: rules::view(r, now),
                        payload,
                    })?;
                    n += 1;
                }
                match rows.last() {
                    Some(r) if rows.len() == 1_000 => after = Some(r.job.clone()),
                    _ => break,
                }
            }
            for f in t.facts(production, None)? {
                sink(ExportRecord::Fact(f))?;
                n += 1;
            }
            t.history_horizon()
        })?;
        loop {
            let evs = self
                .inner
                .read(|t, _| t.events(Some(production), last_seq, crate::authority::MAX_PAGE))?;
            if evs.is_empty() {
                return Ok(n);
            }
            for ev in evs {
                last_seq = ev.seq;
                sink(ExportRecord::Event(ev))?;
                n += 1;
            }
        }
    }

    /// Queue statistics (see [`crate::Stats`]): per production (or only
    /// `q.production`), jobs by observed state, the waiting and lease
    /// figures and the flow over `q.window`, all read in one snapshot and
    /// classified against `max(clock, high-water mark)`. Exact counts, read
    /// from figures the store keeps as jobs change state and from index
    /// ranges of the jobs not yet due and the claimed jobs, never from every
    /// job row. Carries no payload, secret or token. A production that does
    /// not exist is [`Error::NotFound`]; a horizon or window longer than
    /// [`crate::MAX_STATS_SPAN`] is [`Error::InvalidDuration`].
    pub fn stats(&self, q: &crate::StatsQuery) -> Result<crate::Stats> {
        crate::figures::validate(q)?;
        self.inner.fold_for_read()?;
        self.inner
            .read_at_horizon(|t, now| crate::figures::read(t, now, q, &self.inner.flow_seen))
    }

    /// The clock reading, the durable high-water mark, and whether guarded
    /// operations are currently refused.
    pub fn clock(&self) -> Result<ClockReading> {
        self.inner.clock_reading()
    }

    /// The offline invariant checker: replays the transition log against the
    /// rows (at most one live lease per job at any instant, states consistent
    /// with events, only digests stored, schema version).
    pub fn check(&self) -> Result<CheckReport> {
        self.inner.read(|t, _| check::run(t))
    }
}

impl fmt::Debug for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authority")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}
