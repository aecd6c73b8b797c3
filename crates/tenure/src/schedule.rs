//! Recurring jobs: schedules stored per production, and the scheduler step
//! that enqueues their due slots (docs/schedules.md, docs/design.md
//! "Schedules").
//!
//! A schedule's slots are instants of UTC: the multiples of a fixed
//! interval since the Unix epoch, or the matches of a five-field cron
//! expression (parsed by `croner`), read in UTC or in a named IANA time
//! zone (`chrono-tz`; see [`Cadence::cron_in`] for daylight-saving time). The step ([`tick`]) runs in one write
//! transaction holding each schedule row's lock: it takes the time as an
//! unguarded write does (the authority's clock, never below the store's
//! high-water mark), enqueues every slot after the schedule's settled
//! time up to that time as a job named `<schedule>@<RFC 3339 slot>`
//! through the idempotent submission, and moves the settled time to that
//! time. The settled time is the slot record: it lives in the schedule's
//! row as long as the schedule exists, so a slot whose job was pruned is
//! never enqueued again. Slots beyond the catch-up bound are dropped
//! (the newest ones are kept) and recorded in one `slots_dropped` event.

use crate::error::{Error, Result};
use crate::model::{EventKind, JobSpec, DEFAULT_MAX_ATTEMPTS};
use crate::session::Session;
use crate::store::{ScheduleRow, Txn};
use crate::ttl::{Backoff, Delay};
use crate::validate;
use std::collections::BTreeMap;
use std::fmt;

const S: i64 = 1_000_000;
/// The longest fixed interval: 366 days (the longest [`Delay`]).
pub const MAX_INTERVAL_SECS: i64 = 366 * 86_400;
/// The largest catch-up bound: slots enqueued by one step for one schedule.
pub const MAX_CATCH_UP: u32 = 1000;
/// The longest schedule name: a slot's job ID (`<name>@<slot>`, the slot
/// as `YYYY-MM-DDTHH:MM:SSZ`) must stay a valid ID.
pub const MAX_SCHEDULE_NAME: usize = validate::MAX_ID_LEN - 21;

/// When a schedule's slots fall.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cadence {
    /// Every multiple of this many seconds since the Unix epoch
    /// (1 s ..= 366 days).
    Every(i64),
    /// A five-field cron expression (minute hour day-of-month month
    /// day-of-week), in UTC.
    Cron(String),
    /// A five-field cron expression read in a named IANA time zone: the
    /// expression, then the zone's name (`Europe/Paris`).
    CronIn(String, String),
}

impl Cadence {
    /// A fixed interval: a whole number of seconds, 1 s ..= 366 days;
    /// anything else is [`Error::InvalidDuration`].
    pub fn every(interval: Delay) -> Result<Cadence> {
        let us = interval.as_micros();
        if us <= 0 || us % S != 0 || us / S > MAX_INTERVAL_SECS {
            return Err(Error::InvalidDuration(format!(
                "a schedule interval must be a whole number of seconds from 1s to 366 days, not {interval}"
            )));
        }
        Ok(Cadence::Every(us / S))
    }

    /// A five-field cron expression in UTC; a malformed one (or one with a
    /// seconds field) is [`Error::InvalidArgument`].
    pub fn cron(expr: &str) -> Result<Cadence> {
        Ok(Cadence::Cron(checked_expr(expr)?))
    }

    /// A five-field cron expression read in the named IANA time zone
    /// (`Europe/Paris`, `America/New_York`, `UTC`; names are
    /// case-sensitive). A malformed expression or an unknown zone is
    /// [`Error::InvalidArgument`].
    ///
    /// Slots stay instants: each is the instant at which the zone's wall
    /// clock shows a matching time. Around daylight-saving changes:
    /// - a local time skipped by a spring-forward gap (02:30 on
    ///   2026-03-08 in `America/New_York`) has its slot at the first
    ///   instant after the gap (03:00 local, 07:00 UTC); several skipped
    ///   matches give that one slot;
    /// - a local time repeated by a fall-back (01:30 on 2026-11-01 in
    ///   `America/New_York`) has one slot, at its first occurrence (the
    ///   daylight-time one, 05:30 UTC); the repeated hour's second pass
    ///   has no slot.
    pub fn cron_in(expr: &str, tz: &str) -> Result<Cadence> {
        let expr = checked_expr(expr)?;
        let zone = zone(tz)?;
        Ok(Cadence::CronIn(expr, zone.name().to_owned()))
    }

    /// The cron expression of a cron cadence.
    pub fn cron_expr(&self) -> Option<&str> {
        match self {
            Cadence::Every(_) => None,
            Cadence::Cron(e) | Cadence::CronIn(e, _) => Some(e),
        }
    }

    /// The named time zone of a cron cadence (`None` for UTC and for a
    /// fixed interval).
    pub fn tz(&self) -> Option<&str> {
        match self {
            Cadence::CronIn(_, tz) => Some(tz),
            _ => None,
        }
    }

    /// The first slot strictly after `t_us`, if there is one before the
    /// year 10000.
    pub(crate) fn next_after(&self, t_us: i64) -> Option<i64> {
        let slot = match self {
            Cadence::Every(secs) => {
                let i = secs * S;
                t_us.div_euclid(i).checked_add(1)?.checked_mul(i)?
            }
            Cadence::Cron(expr) => {
                let cron = parsed(expr).ok()?;
                let at = chrono::DateTime::from_timestamp_micros(t_us)?;
                cron.find_next_occurrence(&at, false).ok()?.timestamp() * S
            }
            Cadence::CronIn(expr, tz) => {
                let cron = parsed(expr).ok()?;
                let zone = zone(tz).ok()?;
                let at = chrono::DateTime::from_timestamp_micros(t_us)?.with_timezone(&zone);
                let mut next = cron.find_next_occurrence(&at, false).ok()?;
                // A repeated local time resolves to its first occurrence,
                // which may be at or before `t_us` while the clock is in
                // the repeated hour's second pass: that time had its slot,
                // so search on from it (at most one hour of wall-clock
                // matches).
                let mut tries = 0;
                while next.timestamp() * S <= t_us {
                    tries += 1;
                    if tries > 4000 {
                        return None;
                    }
                    next = cron.find_next_occurrence(&next, false).ok()?;
                }
                next.timestamp() * S
            }
        };
        (slot < LAST_SLOT_US).then_some(slot)
    }

    /// The stored text: `every <seconds>` or `cron <expression>`.
    pub(crate) fn stored(&self) -> String {
        match self {
            Cadence::Every(secs) => format!("every {secs}"),
            Cadence::Cron(e) | Cadence::CronIn(e, _) => format!("cron {e}"),
        }
    }

    /// The stored time zone column: the zone of [`Cadence::CronIn`].
    pub(crate) fn stored_tz(&self) -> Option<String> {
        self.tz().map(str::to_owned)
    }

    pub(crate) fn from_stored(text: &str, tz: Option<&str>) -> Result<Cadence> {
        let bad = || Error::Store(format!("corrupt schedule cadence {text:?}"));
        if let Some(n) = text.strip_prefix("every ") {
            let secs: i64 = n.parse().map_err(|_| bad())?;
            let d = Delay::from_micros(secs.checked_mul(S).ok_or_else(bad)?).map_err(|_| bad())?;
            return Cadence::every(d).map_err(|_| bad());
        }
        if let Some(e) = text.strip_prefix("cron ") {
            return match tz {
                None => Cadence::cron(e),
                Some(tz) => Cadence::cron_in(e, tz),
            }
            .map_err(|_| Error::Store(format!("corrupt schedule cadence {text:?} in {tz:?}")));
        }
        Err(bad())
    }
}

impl fmt::Display for Cadence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cadence::Every(secs) => write!(
                f,
                "every {}",
                Delay::from_micros(secs * S).unwrap_or_default()
            ),
            Cadence::Cron(e) => write!(f, "cron {e}"),
            Cadence::CronIn(e, tz) => write!(f, "cron {e} {tz}"),
        }
    }
}

/// 10000-01-01T00:00:00Z: slots end before it (their ID has a 4-digit year).
const LAST_SLOT_US: i64 = 253_402_300_800 * S;

/// A five-field cron expression, checked, its fields joined by one space.
fn checked_expr(expr: &str) -> Result<String> {
    let expr = expr.trim();
    let fields = expr.split_whitespace().count();
    if fields != 5 {
        return Err(Error::invalid(format!(
            "cron expression {expr:?} has {fields} fields; five are expected (minute hour day-of-month month day-of-week)"
        )));
    }
    parsed(expr)?;
    Ok(expr.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// A named IANA time zone, or [`Error::InvalidArgument`].
fn zone(name: &str) -> Result<chrono_tz::Tz> {
    name.parse::<chrono_tz::Tz>().map_err(|_| {
        Error::invalid(format!(
            "unknown time zone {name:?}: expected an IANA time zone name such as \"Europe/Paris\" (case-sensitive)"
        ))
    })
}

fn parsed(expr: &str) -> Result<croner::Cron> {
    croner::Cron::new(expr)
        .parse()
        .map_err(|e| Error::invalid(format!("malformed cron expression {expr:?}: {e}")))
}

/// What to do with a slot whose previous slot's job is still live
/// (requested or claimed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlap {
    /// Enqueue it anyway (the default).
    #[default]
    Enqueue,
    /// Skip it (recorded as dropped).
    Skip,
}

impl Overlap {
    /// `enqueue` or `skip`.
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Enqueue => "enqueue",
            Overlap::Skip => "skip",
        }
    }
    /// Parse `enqueue` or `skip`.
    pub fn parse(s: &str) -> Result<Overlap> {
        match s {
            "enqueue" => Ok(Overlap::Enqueue),
            "skip" => Ok(Overlap::Skip),
            _ => Err(Error::invalid(format!(
                "overlap policy {s:?}: expected \"enqueue\" or \"skip\""
            ))),
        }
    }
}

/// A schedule as a coordinator defines it. The job options are
/// [`JobSpec`]'s and mean the same for every slot's job.
#[derive(Clone, PartialEq, Eq)]
pub struct ScheduleSpec {
    /// The schedule's name: an ID of at most [`MAX_SCHEDULE_NAME`] bytes.
    pub name: String,
    /// When its slots fall.
    pub cadence: Cadence,
    /// Every slot job's payload (at most 1 MiB).
    pub payload: Vec<u8>,
    /// Every slot job's priority.
    pub priority: i32,
    /// Every slot job's `max_attempts`.
    pub max_attempts: u32,
    /// Every slot job's hold limit.
    pub max_hold: Option<Delay>,
    /// Every slot job's retry back-off.
    pub backoff: Option<Backoff>,
    /// How many missed slots one step enqueues (the newest), 1 ..=
    /// [`MAX_CATCH_UP`]; default 1.
    pub catch_up: u32,
    /// What to do while the previous slot's job is live.
    pub overlap: Overlap,
}

impl ScheduleSpec {
    /// A schedule with the default job options, catch-up 1 and overlap
    /// [`Overlap::Enqueue`].
    pub fn new(name: impl Into<String>, cadence: Cadence, payload: impl Into<Vec<u8>>) -> Self {
        ScheduleSpec {
            name: name.into(),
            cadence,
            payload: payload.into(),
            priority: 0,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            max_hold: None,
            backoff: None,
            catch_up: 1,
            overlap: Overlap::Enqueue,
        }
    }
    /// Set the slot jobs' priority.
    pub fn priority(mut self, p: i32) -> Self {
        self.priority = p;
        self
    }
    /// Set the slot jobs' `max_attempts`.
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n;
        self
    }
    /// Set the slot jobs' hold limit.
    pub fn max_hold(mut self, d: Delay) -> Self {
        self.max_hold = Some(d);
        self
    }
    /// Set the slot jobs' back-off.
    pub fn backoff(mut self, b: Backoff) -> Self {
        self.backoff = Some(b);
        self
    }
    /// Set the catch-up bound.
    pub fn catch_up(mut self, n: u32) -> Self {
        self.catch_up = n;
        self
    }
    /// Set the overlap policy.
    pub fn overlap(mut self, o: Overlap) -> Self {
        self.overlap = o;
        self
    }

    /// The job of one slot.
    fn job(&self, slot_us: i64) -> JobSpec {
        JobSpec {
            job: slot_job(&self.name, slot_us),
            payload: self.payload.clone(),
            priority: self.priority,
            max_attempts: self.max_attempts,
            not_before: None,
            max_hold: self.max_hold,
            backoff: self.backoff,
        }
    }
}

impl fmt::Debug for ScheduleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScheduleSpec")
            .field("name", &self.name)
            .field("cadence", &self.cadence)
            .field("payload_len", &self.payload.len())
            .field("priority", &self.priority)
            .field("max_attempts", &self.max_attempts)
            .field("max_hold", &self.max_hold)
            .field("backoff", &self.backoff)
            .field("catch_up", &self.catch_up)
            .field("overlap", &self.overlap)
            .finish()
    }
}

/// A stored schedule, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleView {
    /// The production its jobs go to.
    pub production: String,
    /// Its definition.
    pub spec: ScheduleSpec,
    /// Paused: no step enqueues its slots; the slots that pass while it is
    /// paused are never enqueued.
    pub paused: bool,
    /// Every slot at or before this time (µs) was settled: enqueued,
    /// dropped or skipped.
    pub settled_us: i64,
    /// The newest slot enqueued (µs), if any.
    pub last_slot_us: Option<i64>,
    /// The next slot after the settled time (none while paused).
    pub next_slot_us: Option<i64>,
    /// Created (µs).
    pub created_us: i64,
    /// Last changed by a coordinator (µs).
    pub updated_us: i64,
}

/// What one scheduler step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ticked {
    /// The jobs it enqueued, as `(production, job)`, oldest slot first.
    pub enqueued: Vec<(String, String)>,
    /// Slots it dropped (beyond a catch-up bound, or skipped for overlap).
    pub dropped: u64,
    /// The step's time (µs, the authority's clock held at the high-water mark).
    pub now_us: i64,
    /// The earliest next slot of an active schedule (none without one).
    pub next_slot_us: Option<i64>,
}

/// The job ID of a slot: `<schedule>@YYYY-MM-DDTHH:MM:SSZ`.
pub fn slot_job(schedule: &str, slot_us: i64) -> String {
    format!("{schedule}@{}", rfc3339(slot_us))
}

/// A whole-second UTC time as RFC 3339 (`2026-12-03T02:00:00Z`).
fn rfc3339(us: i64) -> String {
    match chrono::DateTime::from_timestamp(us.div_euclid(S), 0) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        None => format!("{us}us"),
    }
}

/// Check a definition: name, payload, job options, catch-up bound. The
/// cadence was checked when it was made.
fn valid(production: &str, spec: &ScheduleSpec) -> Result<()> {
    validate::id("production", production)?;
    validate::id("schedule", &spec.name)?;
    if spec.name.len() > MAX_SCHEDULE_NAME {
        return Err(Error::invalid(format!(
            "schedule name is {} bytes, at most {MAX_SCHEDULE_NAME} allowed (its slot job IDs add 21)",
            spec.name.len()
        )));
    }
    if !(1..=MAX_CATCH_UP).contains(&spec.catch_up) {
        return Err(Error::invalid(format!(
            "schedule {}: catch-up bound {} is out of range 1..={MAX_CATCH_UP}",
            spec.name, spec.catch_up
        )));
    }
    // The cadence may have been built field by field: re-check it.
    match &spec.cadence {
        Cadence::Every(secs) => {
            Cadence::every(Delay::from_micros(secs.saturating_mul(S)).map_err(|_| {
                Error::InvalidDuration(format!(
                    "schedule {}: interval {secs}s is out of range 1s..=366 days",
                    spec.name
                ))
            })?)?;
        }
        Cadence::Cron(e) => {
            Cadence::cron(e)?;
        }
        Cadence::CronIn(e, tz) => {
            Cadence::cron_in(e, tz)?;
        }
    }
    // Every slot job must be a valid submission.
    crate::rules::valid_submission(production, &spec.job(0))
}

fn view(r: ScheduleRow) -> Result<ScheduleView> {
    let cadence = Cadence::from_stored(&r.cadence, r.tz.as_deref())?;
    let next_slot_us = if r.paused {
        None
    } else {
        cadence.next_after(r.settled_us)
    };
    Ok(ScheduleView {
        production: r.production,
        spec: ScheduleSpec {
            name: r.name,
            cadence,
            payload: r.payload,
            priority: r.priority,
            max_attempts: r.max_attempts,
            max_hold: r.max_hold_us.map(Delay::from_micros).transpose()?,
            backoff: r.backoff,
            catch_up: r.catch_up,
            overlap: Overlap::parse(&r.overlap)
                .map_err(|_| Error::Store(format!("corrupt overlap policy {:?}", r.overlap)))?,
        },
        paused: r.paused,
        settled_us: r.settled_us,
        last_slot_us: r.last_slot_us,
        next_slot_us,
        created_us: r.created_us,
        updated_us: r.updated_us,
    })
}

fn row_of(production: &str, spec: &ScheduleSpec, now: i64) -> ScheduleRow {
    ScheduleRow {
        production: production.to_owned(),
        name: spec.name.clone(),
        cadence: spec.cadence.stored(),
        tz: spec.cadence.stored_tz(),
        payload: spec.payload.clone(),
        priority: spec.priority,
        max_attempts: spec.max_attempts,
        max_hold_us: spec.max_hold.map(Delay::as_micros),
        backoff: spec.backoff,
        catch_up: spec.catch_up,
        overlap: spec.overlap.as_str().to_owned(),
        paused: false,
        settled_us: now,
        last_slot_us: None,
        created_us: now,
        updated_us: now,
    }
}

fn not_found(production: &str, name: &str) -> Error {
    Error::NotFound(format!("schedule {production}/{name}"))
}

/// The row with its lock, or not found.
fn locked(s: &mut Session, production: &str, name: &str) -> Result<ScheduleRow> {
    validate::id("production", production)?;
    validate::id("schedule", name)?;
    s.txn
        .schedule(production, name)?
        .ok_or_else(|| not_found(production, name))
}

/// Create a schedule: `true` if created, `false` if the same definition
/// exists (idempotent); another definition under the name is a conflict.
/// Its first slot is the first after its creation.
pub(crate) fn create(s: &mut Session, production: &str, spec: &ScheduleSpec) -> Result<bool> {
    valid(production, spec)?;
    let now = s.observe_now();
    let prod = s
        .txn
        .production(production)?
        .ok_or_else(|| Error::NotFound(format!("production {production:?}")))?;
    if let Some(r) = s.txn.schedule(production, &spec.name)? {
        if view(r)?.spec == *spec {
            return Ok(false);
        }
        return Err(Error::Conflict(format!(
            "schedule {production}/{} already exists with another definition (update it instead)",
            spec.name
        )));
    }
    if prod.cancelled_us.is_some() {
        return Err(Error::Cancelled(format!(
            "production {production:?} was cancelled; it takes no new schedules"
        )));
    }
    s.txn.put_schedule(&row_of(production, spec, now))?;
    s.work_ready(production);
    Ok(true)
}

/// Replace a schedule's definition; its slot record and pause state stay.
pub(crate) fn update(s: &mut Session, production: &str, spec: &ScheduleSpec) -> Result<()> {
    valid(production, spec)?;
    let now = s.observe_now();
    let old = locked(s, production, &spec.name)?;
    let mut row = row_of(production, spec, now);
    row.paused = old.paused;
    row.settled_us = old.settled_us;
    row.last_slot_us = old.last_slot_us;
    row.created_us = old.created_us;
    s.txn.put_schedule(&row)?;
    s.work_ready(production);
    Ok(())
}

/// Pause (`true`) or resume (`false`); `false` if it already was. A
/// resumed schedule's first slot is the first after the resumption: the
/// slots that passed while it was paused are never enqueued.
pub(crate) fn set_paused(
    s: &mut Session,
    production: &str,
    name: &str,
    paused: bool,
) -> Result<bool> {
    let now = s.observe_now();
    let mut row = locked(s, production, name)?;
    if row.paused == paused {
        return Ok(false);
    }
    row.paused = paused;
    row.updated_us = now;
    if !paused {
        row.settled_us = row.settled_us.max(now);
    }
    s.txn.put_schedule(&row)?;
    s.work_ready(production);
    Ok(true)
}

/// Delete a schedule with its slot record; `false` if there was none. The
/// jobs it enqueued stay.
pub(crate) fn delete(s: &mut Session, production: &str, name: &str) -> Result<bool> {
    validate::id("production", production)?;
    validate::id("schedule", name)?;
    let found = s.txn.delete_schedule(production, name)?;
    if found {
        s.work_ready(production);
    }
    Ok(found)
}

/// One production's schedules (every production's with `None`), by name.
pub(crate) fn list(txn: &mut dyn Txn, production: Option<&str>) -> Result<Vec<ScheduleView>> {
    if let Some(p) = production {
        validate::id("production", p)?;
    }
    txn.schedules(production, false)?
        .into_iter()
        .map(view)
        .collect()
}

/// The earliest next slot of an active schedule.
pub(crate) fn next_slot(txn: &mut dyn Txn) -> Result<Option<i64>> {
    Ok(list(txn, None)?.iter().filter_map(|v| v.next_slot_us).min())
}

/// The slots of `cadence` in `(after, up_to]`: how many, and the newest
/// `keep` of them (oldest first).
pub(crate) fn due_slots(cadence: &Cadence, after: i64, up_to: i64, keep: u32) -> (u64, Vec<i64>) {
    let keep = keep as usize;
    match cadence {
        Cadence::Every(secs) => {
            let i = secs * S;
            let first = after.div_euclid(i) + 1;
            let last = up_to.div_euclid(i);
            if last < first {
                return (0, Vec::new());
            }
            let n = (last - first + 1) as u64;
            let from = first.max(last - keep as i64 + 1);
            (n, (from..=last).map(|k| k * i).collect())
        }
        Cadence::Cron(_) | Cadence::CronIn(..) => {
            let mut n = 0u64;
            let mut kept = std::collections::VecDeque::with_capacity(keep);
            let mut t = after;
            while let Some(slot) = cadence.next_after(t).filter(|&x| x <= up_to) {
                n += 1;
                if kept.len() == keep {
                    kept.pop_front();
                }
                kept.push_back(slot);
                t = slot;
            }
            (n, kept.into())
        }
    }
}

/// The scheduler step: enqueue every due slot of every active schedule
/// (see the module docs). Schedules are locked and handled in (production,
/// name) order, so concurrent steps queue behind each other and the later
/// one finds the slots settled.
pub(crate) fn tick(s: &mut Session) -> Result<Ticked> {
    let now = s.observe_now();
    let rows = s.txn.schedules(None, true)?;
    let mut out = Ticked {
        now_us: now,
        ..Ticked::default()
    };
    let mut by_production: BTreeMap<String, Vec<(ScheduleRow, Vec<i64>)>> = BTreeMap::new();
    let mut drops: Vec<(String, String)> = Vec::new();
    for row in rows {
        if row.paused {
            continue;
        }
        let v = view(row.clone())?;
        out.next_slot_us = min_some(
            out.next_slot_us,
            v.spec.cadence.next_after(now.max(row.settled_us)),
        );
        let (n, mut slots) = due_slots(&v.spec.cadence, row.settled_us, now, v.spec.catch_up);
        if n == 0 {
            continue;
        }
        let mut why = Vec::new();
        let beyond = n - slots.len() as u64;
        if beyond > 0 {
            why.push(format!(
                "{beyond} slots from {} dropped beyond the catch-up bound {}",
                rfc3339(first_dropped(&v.spec.cadence, row.settled_us)),
                v.spec.catch_up
            ));
        }
        let mut dropped = beyond;
        if v.spec.overlap == Overlap::Skip {
            if let Some(prev) = row.last_slot_us {
                let live = s
                    .txn
                    .job(&row.production, &slot_job(&row.name, prev))?
                    .is_some_and(|j| j.state.is_open());
                if live {
                    why.push(format!(
                        "{} slots up to {} skipped: the job of slot {} is live",
                        slots.len(),
                        rfc3339(now),
                        rfc3339(prev)
                    ));
                    dropped += slots.len() as u64;
                    slots.clear();
                }
            }
        }
        if !why.is_empty() {
            out.dropped += dropped;
            drops.push((
                row.production.clone(),
                format!("schedule {}: {}", row.name, why.join("; ")),
            ));
        }
        by_production
            .entry(row.production.clone())
            .or_default()
            .push((row, slots));
    }
    for (production, items) in by_production {
        let open = s
            .txn
            .production(&production)?
            .is_some_and(|p| p.cancelled_us.is_none());
        let mut specs = Vec::new();
        for (row, slots) in &items {
            let v = view(row.clone())?;
            specs.extend(slots.iter().map(|&slot| v.spec.job(slot)));
        }
        if open && !specs.is_empty() {
            for job in enqueue(s, &production, &specs, &mut drops)? {
                out.enqueued.push((production.clone(), job));
            }
        }
        for (mut row, slots) in items {
            row.settled_us = row.settled_us.max(now);
            if open {
                row.last_slot_us = slots.last().copied().or(row.last_slot_us);
            }
            s.txn.put_schedule(&row)?;
        }
    }
    for (production, detail) in &drops {
        s.production_event(production, EventKind::SlotsDropped, now, detail)?;
    }
    Ok(out)
}

fn min_some(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Submit the slot jobs of one production (idempotent: a slot job that
/// exists with the same content is left as it is) and return the IDs
/// created. A slot whose ID a job of other content holds is not enqueued;
/// it is recorded with the dropped slots.
fn enqueue(
    s: &mut Session,
    production: &str,
    specs: &[JobSpec],
    drops: &mut Vec<(String, String)>,
) -> Result<Vec<String>> {
    use crate::model::Submitted;
    let created = |specs: &[JobSpec], outs: Vec<Submitted>| -> Vec<String> {
        specs
            .iter()
            .zip(outs)
            .filter(|(_, o)| *o == Submitted::Created)
            .map(|(j, _)| j.job.clone())
            .collect()
    };
    match s.op(|s| crate::rules::submit_many(s, production, specs)) {
        Ok(outs) => Ok(created(specs, outs)),
        Err(Error::Conflict(_)) => {
            let mut out = Vec::new();
            for spec in specs {
                match s.op(|s| crate::rules::submit(s, production, spec)) {
                    Ok(o) => out.extend(created(std::slice::from_ref(spec), vec![o])),
                    Err(Error::Conflict(m)) => drops.push((
                        production.to_owned(),
                        format!("slot job {} not enqueued: {m}", spec.job),
                    )),
                    Err(e) => return Err(e),
                }
            }
            Ok(out)
        }
        Err(e) => Err(e),
    }
}

fn first_dropped(c: &Cadence, after: i64) -> i64 {
    c.next_after(after).unwrap_or(after)
}

/// How soon a scheduler loop tries again after its store was busy.
const BUSY_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

impl crate::Authority {
    /// Create a schedule in a production (docs/schedules.md): `true` if
    /// created, `false` if the same definition exists already; another
    /// definition under its name is [`Error::Conflict`], a cancelled
    /// production [`Error::Cancelled`]. Its first slot is the first after
    /// its creation. A malformed definition is [`Error::InvalidArgument`]
    /// (name, cron expression, catch-up bound, job options) or
    /// [`Error::InvalidDuration`] (interval, hold limit), changing nothing.
    pub fn create_schedule(&self, production: &str, spec: &ScheduleSpec) -> Result<bool> {
        self.inner.one_step(|s| create(s, production, spec))
    }

    /// Replace a schedule's definition ([`Error::NotFound`] if there is
    /// none); its slot record and pause state stay, so no slot settled
    /// before is enqueued again.
    pub fn update_schedule(&self, production: &str, spec: &ScheduleSpec) -> Result<()> {
        self.inner.one_step(|s| update(s, production, spec))
    }

    /// Pause a schedule: no step enqueues its slots until it is resumed,
    /// and the slots that pass meanwhile are never enqueued. `false` if it
    /// was paused already.
    pub fn pause_schedule(&self, production: &str, name: &str) -> Result<bool> {
        self.inner
            .one_step(|s| set_paused(s, production, name, true))
    }

    /// Resume a paused schedule: its next slot is the first after now.
    /// `false` if it was not paused.
    pub fn resume_schedule(&self, production: &str, name: &str) -> Result<bool> {
        self.inner
            .one_step(|s| set_paused(s, production, name, false))
    }

    /// Delete a schedule and its slot record; `false` if there was none.
    /// The jobs it enqueued stay.
    pub fn delete_schedule(&self, production: &str, name: &str) -> Result<bool> {
        self.inner.one_step(|s| delete(s, production, name))
    }

    /// One production's schedules by name, or every production's (by
    /// production, then name) with `None`.
    pub fn schedules(&self, production: Option<&str>) -> Result<Vec<ScheduleView>> {
        self.inner.read(|t, _| list(t, production))
    }

    /// One scheduler step: enqueue every due slot of every active schedule
    /// of the store, at most its catch-up bound per schedule (the newest
    /// slots; the older ones are recorded as dropped in a `slots_dropped`
    /// event). Any number of steps, in any number of processes, enqueue
    /// each slot once.
    pub fn run_schedules(&self) -> Result<Ticked> {
        self.inner.one_step(tick)
    }

    /// A scheduler loop: run [`Authority::run_schedules`] whenever a slot
    /// is due, and sleep until the next slot, waking early on the store's
    /// doorbell (a schedule created, changed or resumed anywhere rings it)
    /// and at least every second (so that a clock moved forward is seen).
    /// `each` sees every step that enqueued or dropped something. Returns
    /// `Ok(())` once `cancel` (or [`Authority::cancel_waits`]) cancels it;
    /// a busy store is retried, any other error ends the loop.
    pub fn run_schedules_until(
        &self,
        cancel: &crate::WaitCancel,
        mut each: impl FnMut(&Ticked),
    ) -> Result<()> {
        let bell = self.inner.backend.doorbell()?;
        let all = self.inner.waits();
        cancel.register(&bell);
        all.register(&bell);
        let stopped = || cancel.is_cancelled() || all.is_cancelled();
        loop {
            if stopped() {
                return Ok(());
            }
            let seen = bell.generation();
            let (now, next) = self.inner.read(|t, now| Ok((now, next_slot(t)?)))?;
            let wait_us = match next {
                Some(at) if at <= now => match self.run_schedules() {
                    Ok(t) => {
                        if !t.enqueued.is_empty() || t.dropped > 0 {
                            each(&t);
                        }
                        continue;
                    }
                    Err(Error::Busy(_)) => BUSY_RETRY.as_micros() as i64,
                    Err(e) => return Err(e),
                },
                Some(at) => at - now,
                None => i64::MAX,
            };
            let slice = crate::wait::SLICE.as_micros() as i64;
            let wait = std::time::Duration::from_micros(wait_us.clamp(0, slice) as u64);
            bell.sleep(seen, std::time::Instant::now() + wait);
        }
    }
}
