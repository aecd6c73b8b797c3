//! The offline invariant checker behind `tenure check`.

use crate::error::{ErrorCode, Result};
use crate::model::{CheckReport, EventKind, JobState};
use crate::store::{Stored, Txn, SCHEMA_VERSION};
use std::collections::HashMap;
use uuid::Uuid;

#[derive(Default)]
struct Replay {
    /// The job's first event left is not its submission (pruned history).
    partial: bool,
    state: Option<JobState>,
    live: Option<(Option<Uuid>, i64)>,
    completions: u32,
}

/// Replay every event and compare with every row.
pub(crate) fn run(t: &mut dyn Txn) -> Result<CheckReport> {
    let mut report = CheckReport {
        schema_version: t.schema_version()?,
        ..CheckReport::default()
    };
    let v = &mut report.violations;
    if report.schema_version != SCHEMA_VERSION {
        v.push(format!(
            "schema version {} but this library writes {SCHEMA_VERSION}",
            report.schema_version
        ));
    }
    // A pruned store is checked from its history horizon: a job whose
    // earlier events are gone is replayed from what is left (its earlier
    // claims are unknown, so a transition by a claim the replay has not
    // seen is not a violation there), and a job without events left is not
    // one either.
    let horizon = t.history_horizon()?;
    report.history_horizon = horizon;
    let mut replay: HashMap<(String, String), Replay> = HashMap::new();
    // The concurrency limit in effect per production (from its
    // `production_limited` events) and every production's live leases by
    // job, for the gate invariant: a claim never makes more live leases
    // than the limit (a lease counts while its expiry is after the claim's
    // time, as the rule counts it).
    let mut limits: HashMap<String, u32> = HashMap::new();
    let mut leases: HashMap<String, HashMap<String, i64>> = HashMap::new();
    let mut after = horizon;
    loop {
        let evs = t.snapshot_events(after, 5_000)?;
        if evs.is_empty() {
            break;
        }
        for ev in evs {
            after = ev.seq;
            report.events += 1;
            if ev.kind == EventKind::ProductionLimited {
                match crate::gates::concurrency_in_detail(&ev.detail) {
                    Some(Some(k)) => {
                        limits.insert(ev.production.clone(), k);
                    }
                    Some(None) => {
                        limits.remove(&ev.production);
                    }
                    None => {}
                }
            }
            let Some(job) = ev.job.clone() else { continue };
            let name = format!("{}/{job}", ev.production);
            let r = replay
                .entry((ev.production.clone(), job.clone()))
                .or_insert_with(|| Replay {
                    partial: horizon > 0 && ev.kind != EventKind::Submitted,
                    ..Replay::default()
                });
            match ev.kind {
                EventKind::Claimed => {
                    if let Some(&k) = limits.get(&ev.production) {
                        let live = leases.get(&ev.production).map_or(0, |m| {
                            m.iter()
                                .filter(|(j, &e)| **j != job && e > ev.at_us)
                                .count()
                        });
                        if live >= k as usize {
                            v.push(format!(
                                "job {name}: claim {} at {} µs made {} live leases in production {:?}, \
                                 whose concurrency limit is {k}",
                                fmt_claim(ev.claim_id),
                                ev.at_us,
                                live + 1,
                                ev.production
                            ));
                        }
                    }
                    if let Some((claim, exp)) = r.live {
                        if exp > ev.at_us {
                            v.push(format!(
                                "job {name}: claim {} at {} µs while claim {} was live until {exp} µs",
                                fmt_claim(ev.claim_id),
                                ev.at_us,
                                fmt_claim(claim)
                            ));
                        }
                    }
                    r.live = Some((ev.claim_id, ev.expires_us.unwrap_or(i64::MIN)));
                }
                EventKind::Renewed
                | EventKind::Checkpointed
                | EventKind::Released
                | EventKind::Failed
                | EventKind::Completed => {
                    match r.live {
                        Some((claim, exp)) if claim == ev.claim_id => {
                            if ev.at_us >= exp {
                                v.push(format!(
                                    "job {name}: {} by claim {} at {} µs after its expiry {exp} µs",
                                    ev.kind,
                                    fmt_claim(claim),
                                    ev.at_us
                                ));
                            }
                        }
                        _ if r.partial && r.live.is_none() => {}
                        _ => v.push(format!(
                            "job {name}: {} (event {}) by claim {} which is not the live claim",
                            ev.kind,
                            ev.seq,
                            fmt_claim(ev.claim_id)
                        )),
                    }
                    r.live = if matches!(ev.kind, EventKind::Renewed | EventKind::Checkpointed) {
                        Some((ev.claim_id, ev.expires_us.unwrap_or(i64::MIN)))
                    } else {
                        None
                    };
                    if ev.kind == EventKind::Completed {
                        r.completions += 1;
                        if r.completions > 1 {
                            v.push(format!("job {name}: completed more than once"));
                        }
                    }
                }
                EventKind::Migrated => {
                    r.live = ev
                        .expires_us
                        .filter(|_| ev.state == Some(JobState::Claimed))
                        .map(|e| (ev.claim_id, e));
                }
                EventKind::Submitted => {
                    // A new job under an ID whose tombstone expired.
                    *r = Replay::default();
                }
                EventKind::Cancelled | EventKind::Exhausted | EventKind::Requeued => {
                    r.live = None;
                }
                EventKind::ProductionCreated
                | EventKind::ProductionCancelled
                | EventKind::ProductionPaused
                | EventKind::ProductionResumed
                | EventKind::ProductionLimited
                | EventKind::SlotsDropped => {}
            }
            r.state = ev.state;
            let live = leases.entry(ev.production.clone()).or_default();
            match r.live {
                Some((_, exp)) => {
                    live.insert(job, exp);
                }
                None => {
                    live.remove(&job);
                }
            }
        }
    }
    // Every production's jobs by stored state, counted row by row, to
    // compare with the counts the store keeps for the statistics.
    let mut tally: HashMap<String, [u64; STATES.len()]> = HashMap::new();
    let mut after_seq = 0;
    loop {
        let rows = t.all_jobs_page(after_seq, 5_000)?;
        if rows.is_empty() {
            break;
        }
        for row in rows {
            after_seq = row.seq;
            report.jobs += 1;
            tally.entry(row.production.clone()).or_default()[state_index(row.state)] += 1;
            let name = format!("{}/{}", row.production, row.job);
            if row.attempts > row.max_attempts {
                v.push(format!(
                    "job {name}: {} attempts exceed max_attempts {}",
                    row.attempts, row.max_attempts
                ));
            }
            if row.state == Stored::Claimed && (row.claim_id.is_none() || row.expires_us.is_none())
            {
                v.push(format!("job {name}: claimed without a claim ID or expiry"));
            }
            if row.parked && (row.state != Stored::Requested || row.due_us.is_none()) {
                v.push(format!(
                    "job {name}: parked while {} (due time {:?}); only a requested job with a \
                     due time may be",
                    row.state.as_str(),
                    row.due_us
                ));
            }
            if let (Stored::Claimed, Some(hold), Some(claimed), Some(exp)) =
                (row.state, row.max_hold_us, row.claimed_us, row.expires_us)
            {
                if exp > claimed.saturating_add(hold) {
                    v.push(format!(
                        "job {name}: lease expires at {exp} µs, past its hold limit at {} µs",
                        claimed.saturating_add(hold)
                    ));
                }
            }
            if let Some(d) = &row.secret_digest {
                if d.len() != 32 {
                    v.push(format!(
                        "job {name}: stored secret field is not a 32-byte digest"
                    ));
                }
            }
            let replayed = replay.get(&(row.production.clone(), row.job.clone()));
            match replayed {
                None if horizon > 0 => {}
                None => v.push(format!("job {name}: no events")),
                Some(r) if r.state != Some(row.state.as_job_state()) => v.push(format!(
                    "job {name}: row is {} but the events end in {}",
                    row.state.as_str(),
                    r.state.map(|s| s.as_str()).unwrap_or("nothing")
                )),
                Some(_) => {}
            }
            // Jobs completed before the lease migration carry no provenance;
            // a row that keeps its provenance (`provenance_at`) gives it
            // from its own claim, so only stored provenance rows are read.
            if row.state == Stored::Completed
                && row.provenance_at.is_none()
                && replayed.is_some_and(|r| r.completions > 0)
            {
                let facts = t.facts(&row.production, Some(&row.job))?;
                let claim = row.claim_id.map(|c| c.to_string()).unwrap_or_default();
                if !facts
                    .iter()
                    .any(|f| f.key == "tenure.claim_id" && f.value == claim)
                {
                    v.push(format!(
                        "job {name}: completed without provenance from its claim"
                    ));
                }
            }
        }
    }
    for p in t.productions()? {
        let counted = tally.remove(&p.name).unwrap_or_default();
        let kept = match t.state_counts(&p.name) {
            Ok(kept) => kept,
            Err(e) if e.code() == ErrorCode::Store => {
                v.push(format!(
                    "production {:?}: its kept job counts cannot be read: {e}",
                    p.name
                ));
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut kept_by_state = [0u64; STATES.len()];
        for (s, n) in kept {
            kept_by_state[state_index(s)] += n;
        }
        for (i, s) in STATES.iter().enumerate() {
            if kept_by_state[i] != counted[i] {
                v.push(format!(
                    "production {:?}: {} {} jobs kept in its counts, {} in its job rows",
                    p.name,
                    kept_by_state[i],
                    s.as_str(),
                    counted[i]
                ));
            }
        }
    }
    for p in tally.keys() {
        v.push(format!("jobs of production {p:?}, which does not exist"));
    }
    for (p, j) in t.jobs_with_tombstones(CHECK_TOMBSTONED_JOBS)? {
        v.push(format!(
            "job {p}/{j}: stored beside a tombstone of its ID (pruned, then created anew)"
        ));
    }
    Ok(report)
}

/// The most jobs beside a tombstone of their ID a check names.
const CHECK_TOMBSTONED_JOBS: usize = 100;

/// Every stored state, in the order of [`state_index`].
const STATES: [Stored; 5] = [
    Stored::Requested,
    Stored::Claimed,
    Stored::Completed,
    Stored::Failed,
    Stored::Cancelled,
];

fn state_index(s: Stored) -> usize {
    match s {
        Stored::Requested => 0,
        Stored::Claimed => 1,
        Stored::Completed => 2,
        Stored::Failed => 3,
        Stored::Cancelled => 4,
    }
}

fn fmt_claim(c: Option<Uuid>) -> String {
    c.map(|c| c.to_string()).unwrap_or_else(|| "-".into())
}
