//! `tenure prune`: remove history older than the given ages, on the
//! authority's clock, in bounded steps (one short transaction each); and
//! `tenure vacuum`: let a store created before schema 3 give freed space
//! back from then on.

use super::{Ctx, Done};
use crate::fail::{usage, R};
use crate::out::Render;
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::{Age, PruneReport, Retention};

#[derive(clap::Args)]
pub struct Args {
    /// Prune events older than this (`60s`, `12h`, `30d`).
    #[arg(long)]
    events: Option<Age>,
    /// Prune completed, failed and cancelled jobs last changed longer ago
    /// than this (each leaves a tombstone: a late resubmission of the same
    /// ID still answers `existing` or `conflict`).
    #[arg(long)]
    jobs: Option<Age>,
    /// Prune tombstones older than this (the job ID is then new again).
    #[arg(long)]
    tombstones: Option<Age>,
    /// Take one bounded step only (default: step until nothing is due).
    #[arg(long)]
    step: bool,
}

struct Pruned {
    report: PruneReport,
    steps: u64,
}

impl Render for Pruned {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let r = &self.report;
        writeln!(
            o,
            "pruned {} jobs, {} tombstones, {} events in {} step(s); history horizon {}{}",
            r.jobs,
            r.tombstones,
            r.events,
            self.steps,
            r.horizon,
            if r.more { " (more is due)" } else { "" }
        )
    }

    fn json(&self) -> Value {
        let r = &self.report;
        json!({
            "jobs": r.jobs,
            "tombstones": r.tombstones,
            "events": r.events,
            "history_horizon": r.horizon,
            "more": r.more,
            "steps": self.steps,
        })
    }
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let policy = Retention {
        event_age: a.events,
        terminal_job_age: a.jobs,
        tombstone_age: a.tombstones,
    };
    if policy.is_off() {
        return Err(usage(
            "nothing to prune: pass --events, --jobs and/or --tombstones with an age",
        ));
    }
    let auth = ctx.open()?;
    let mut total = PruneReport::default();
    let mut steps = 0;
    loop {
        let r = auth.prune(&policy)?;
        steps += 1;
        total.jobs += r.jobs;
        total.tombstones += r.tombstones;
        total.events += r.events;
        total.horizon = r.horizon;
        total.more = r.more;
        if a.step || !r.more {
            break;
        }
    }
    Done::show(Pruned {
        report: total,
        steps,
    })
}

struct Vacuumed;

impl Render for Vacuumed {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(
            o,
            "vacuumed: freed space is given back in small steps from now on"
        )
    }

    fn json(&self) -> Value {
        json!({"vacuumed": true})
    }
}

/// `tenure vacuum`.
pub fn vacuum(ctx: &Ctx) -> R<Done> {
    ctx.open()?.vacuum()?;
    Done::show(Vacuumed)
}
