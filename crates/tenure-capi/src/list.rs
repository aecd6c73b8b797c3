//! `tenure_production_list`, `tenure_fact_list` and `tenure_event_list`:
//! immutable snapshots read through accessors by index.

use std::ffi::{c_char, CStr, CString};
use std::sync::Mutex;

use tenure::{Backoff, Event, ProductionView, PublishedFact};

use crate::boundary::{cstring, opt_ptr, write_time, Handle};
use crate::options::tenure_job_state;

/// One production of a [`tenure_production_list`].
struct CProduction {
    name: CString,
    created_us: i64,
    cancelled_us: Option<i64>,
    backoff: Option<Backoff>,
}

impl CProduction {
    fn new(p: &ProductionView) -> CProduction {
        CProduction {
            name: cstring(&p.name),
            created_us: p.created_us,
            cancelled_us: p.cancelled_us,
            backoff: p.backoff,
        }
    }
}

list_handle! {
    /// A snapshot of the productions.
    pub struct tenure_production_list(Vec<CProduction>) from ProductionView;
}

impl Handle for tenure_production_list {}

export! {
    /// Free a production list (NULL is a no-op).
    fn tenure_production_list_free(list: *mut tenure_production_list) = free;
    /// Number of productions.
    fn tenure_production_list_len(list: *const tenure_production_list) -> usize =
        value Some(list.items.len());
    /// Name of production `index` (borrowed), or NULL if out of range.
    fn tenure_production_list_name(
        list: *const tenure_production_list,
        index: usize,
    ) -> *const c_char =
        value list.items.get(index).map(|p| p.name.as_ptr());
    /// Creation time of production `index` (µs since the epoch), 0 if out of range.
    fn tenure_production_list_created_us(list: *const tenure_production_list, index: usize) -> i64 =
        value list.items.get(index).map(|p| p.created_us);
    /// Cancellation time of production `index`: true and `*out_us` written if it
    /// was cancelled, false otherwise.
    fn tenure_production_list_cancelled_us(
        list: *const tenure_production_list,
        index: usize,
        out_us: *mut i64,
    ) -> bool =
        value write_time(out_us, list.items.get(index).and_then(|p| p.cancelled_us));
    /// The first step (base) of production `index`'s default retry back-off
    /// in µs (ABI 1.1): true and `*out_us` written if it has one, false
    /// otherwise.
    fn tenure_production_list_backoff_base_us(
        list: *const tenure_production_list,
        index: usize,
        out_us: *mut i64,
    ) -> bool =
        value write_time(
            out_us,
            list.items.get(index)?.backoff.map(|b| b.base().as_micros()),
        );
    /// The largest step (cap) of production `index`'s default retry back-off
    /// in µs (ABI 1.1): true and `*out_us` written if it has one, false
    /// otherwise.
    fn tenure_production_list_backoff_cap_us(
        list: *const tenure_production_list,
        index: usize,
        out_us: *mut i64,
    ) -> bool =
        value write_time(
            out_us,
            list.items.get(index)?.backoff.map(|b| b.cap().as_micros()),
        );
}

/// One fact of a [`tenure_fact_list`].
struct CFact {
    job: CString,
    key: CString,
    value: CString,
}

impl CFact {
    fn new(f: &PublishedFact) -> CFact {
        CFact {
            job: cstring(&f.job),
            key: cstring(&f.key),
            value: cstring(&f.value),
        }
    }
}

list_handle! {
    /// A snapshot of published facts.
    pub struct tenure_fact_list(Vec<CFact>) from PublishedFact;
}

impl Handle for tenure_fact_list {}

export! {
    /// Free a fact list (NULL is a no-op).
    fn tenure_fact_list_free(list: *mut tenure_fact_list) = free;
    /// Number of facts.
    fn tenure_fact_list_len(list: *const tenure_fact_list) -> usize = value Some(list.items.len());
    /// Job ID of fact `index` (borrowed), or NULL if out of range.
    fn tenure_fact_list_job(list: *const tenure_fact_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|f| f.job.as_ptr());
    /// Key of fact `index` (borrowed), or NULL if out of range.
    fn tenure_fact_list_key(list: *const tenure_fact_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|f| f.key.as_ptr());
    /// Value of fact `index` (borrowed), or NULL if out of range.
    fn tenure_fact_list_value(list: *const tenure_fact_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|f| f.value.as_ptr());
}

/// One event of a [`tenure_event_list`].
struct CEvent {
    seq: u64,
    at_us: i64,
    production: CString,
    job: Option<CString>,
    kind: &'static CStr,
    state: Option<tenure_job_state>,
    claim_id: Option<CString>,
    holder: Option<CString>,
    attempt: u32,
    expires_us: Option<i64>,
    detail: CString,
}

impl CEvent {
    fn new(e: &Event) -> CEvent {
        CEvent {
            seq: e.seq,
            at_us: e.at_us,
            production: cstring(&e.production),
            job: e.job.as_deref().map(cstring),
            kind: kind_name(e.kind.as_str()),
            state: e.state.map(tenure_job_state::from),
            claim_id: e.claim_id.map(|c| cstring(&c.hyphenated().to_string())),
            holder: e.holder.as_deref().map(cstring),
            attempt: e.attempt.unwrap_or(0),
            expires_us: e.expires_us,
            detail: cstring(&e.detail),
        }
    }
}

/// Static C names of event kinds (leaked once per distinct kind name).
fn kind_name(s: &'static str) -> &'static CStr {
    static NAMES: Mutex<Vec<&'static CStr>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(c) = names.iter().find(|c| c.to_bytes() == s.as_bytes()) {
        return c;
    }
    let c: &'static CStr = Box::leak(cstring(s).into_boxed_c_str());
    names.push(c);
    c
}

list_handle! {
    /// A snapshot of events (never carries a secret).
    pub struct tenure_event_list(Vec<CEvent>) from Event;
}

impl Handle for tenure_event_list {}

export! {
    /// Free an event list (NULL is a no-op).
    fn tenure_event_list_free(list: *mut tenure_event_list) = free;
    /// Number of events.
    fn tenure_event_list_len(list: *const tenure_event_list) -> usize =
        value Some(list.items.len());
    /// Sequence number of event `index` (0 if out of range).
    fn tenure_event_list_seq(list: *const tenure_event_list, index: usize) -> u64 =
        value list.items.get(index).map(|e| e.seq);
    /// Time of event `index` (µs since the epoch; 0 if out of range).
    fn tenure_event_list_at_us(list: *const tenure_event_list, index: usize) -> i64 =
        value list.items.get(index).map(|e| e.at_us);
    /// Production of event `index` (borrowed), or NULL if out of range.
    fn tenure_event_list_production(list: *const tenure_event_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|e| e.production.as_ptr());
    /// Job of event `index` (borrowed), or NULL (production events, out of range).
    fn tenure_event_list_job(list: *const tenure_event_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|e| opt_ptr(&e.job));
    /// Kind of event `index` as a static snake_case name (`"claimed"`,
    /// `"completed"`, ...; later versions may add kinds), or NULL if out of range.
    fn tenure_event_list_kind(list: *const tenure_event_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|e| e.kind.as_ptr());
    /// The job's stored state after event `index` (`tenure_job_state`), or 0
    /// for production events / out of range.
    fn tenure_event_list_state(list: *const tenure_event_list, index: usize) -> u32 =
        value list.items.get(index).map(|e| e.state.map_or(0, |s| s as u32));
    /// Claim ID involved in event `index` (36-character text, borrowed), or NULL.
    fn tenure_event_list_claim_id(list: *const tenure_event_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|e| opt_ptr(&e.claim_id));
    /// Holder involved in event `index` (borrowed), or NULL.
    fn tenure_event_list_holder(list: *const tenure_event_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|e| opt_ptr(&e.holder));
    /// Attempt number involved in event `index` (1-based), or 0 if none.
    fn tenure_event_list_attempt(list: *const tenure_event_list, index: usize) -> u32 =
        value list.items.get(index).map(|e| e.attempt);
    /// Lease expiry after event `index`: true and `*out_us` written if a lease
    /// is live, false otherwise.
    fn tenure_event_list_expires_us(
        list: *const tenure_event_list,
        index: usize,
        out_us: *mut i64,
    ) -> bool =
        value write_time(out_us, list.items.get(index).and_then(|e| e.expires_us));
    /// Short human detail of event `index` (failure reason, cancel note;
    /// borrowed, possibly empty), or NULL if out of range.
    fn tenure_event_list_detail(list: *const tenure_event_list, index: usize) -> *const c_char =
        value list.items.get(index).map(|e| e.detail.as_ptr());
}
