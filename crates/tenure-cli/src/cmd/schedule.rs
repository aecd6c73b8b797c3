//! `tenure schedule create|update|pause|resume|delete|list|run`: recurring
//! jobs (docs/schedules.md).

use super::{backoff, delay, Ctx, Done, Prod};
use crate::fail::{usage, R};
use crate::out::{self, Render};
use clap::Subcommand;
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::{Cadence, Overlap, ScheduleSpec, ScheduleView, Ticked, WaitCancel};

#[derive(clap::Args)]
pub struct Def {
    #[command(flatten)]
    p: Prod,
    /// Schedule name (its slot jobs are NAME@YYYY-MM-DDTHH:MM:SSZ).
    name: String,
    /// A slot at every multiple of DUR since the Unix epoch (whole seconds, 1s..=8784h).
    #[arg(
        long,
        value_name = "DUR",
        required_unless_present = "cron",
        conflicts_with = "cron"
    )]
    every: Option<String>,
    /// A five-field cron expression, in UTC unless --tz names a zone ("0 2 * * *": every night at 02:00).
    #[arg(long, value_name = "EXPR")]
    cron: Option<String>,
    /// The IANA time zone --cron is read in ("Europe/Paris"; case-sensitive). Default UTC.
    #[arg(long, value_name = "ZONE")]
    tz: Option<String>,
    /// Every slot job's payload (text).
    #[arg(long, default_value = "")]
    payload: String,
    /// Claims allowed in total per slot job (1..=1000).
    #[arg(long, default_value_t = tenure::DEFAULT_MAX_ATTEMPTS)]
    max_attempts: u32,
    /// Higher runs first.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Hard ownership limit per claim of a slot job.
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    max_hold: Option<String>,
    /// Retry back-off of the slot jobs.
    #[arg(long, value_name = "BASE,CAP", allow_hyphen_values = true)]
    backoff: Option<String>,
    /// Missed slots one step enqueues, the newest (1..=1000); the rest are dropped.
    #[arg(long, default_value_t = 1)]
    catch_up: u32,
    /// While the previous slot's job is live: enqueue or skip.
    #[arg(long, default_value = "enqueue")]
    overlap: String,
}

impl Def {
    fn spec(&self) -> R<ScheduleSpec> {
        let cadence = match (&self.every, &self.cron) {
            (Some(_), _) if self.tz.is_some() => {
                return Err(usage("--tz goes with --cron, not with --every"))
            }
            (Some(d), _) => Cadence::every(delay(d)?)?,
            (None, Some(c)) => match &self.tz {
                Some(z) => Cadence::cron_in(c, z)?,
                None => Cadence::cron(c)?,
            },
            (None, None) => return Err(usage("give --every DUR or --cron EXPR")),
        };
        let mut s = ScheduleSpec::new(&self.name, cadence, self.payload.as_bytes().to_vec())
            .priority(self.priority)
            .max_attempts(self.max_attempts)
            .catch_up(self.catch_up)
            .overlap(Overlap::parse(&self.overlap)?);
        s.max_hold = self.max_hold.as_deref().map(delay).transpose()?;
        s.backoff = self.backoff.as_deref().map(backoff).transpose()?;
        Ok(s)
    }
}

#[derive(Subcommand)]
pub enum Cmd {
    /// Create a schedule (idempotent for the same definition).
    Create(Def),
    /// Replace a schedule's definition (its slot record stays).
    Update(Def),
    /// Pause a schedule: its slots are not enqueued until resumed.
    Pause {
        #[command(flatten)]
        p: Prod,
        name: String,
    },
    /// Resume a paused schedule (from its next slot after now).
    Resume {
        #[command(flatten)]
        p: Prod,
        name: String,
    },
    /// Delete a schedule and its slot record (its jobs stay).
    Delete {
        #[command(flatten)]
        p: Prod,
        name: String,
    },
    /// List schedules (of one production with -p).
    List {
        #[arg(short, long)]
        production: Option<String>,
    },
    /// Scheduler loop: enqueue due slots, sleep until the next one; prints
    /// one line per step that enqueued or dropped something. SIGTERM/SIGINT stop it.
    Run {
        /// One step, then exit.
        #[arg(long)]
        once: bool,
    },
}

struct Said(String, Value);

impl Render for Said {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(o, "{}", self.0)
    }
    fn json(&self) -> Value {
        self.1.clone()
    }
}

fn view(v: &ScheduleView) -> Value {
    json!({
        "production": v.production,
        "name": v.spec.name,
        "cadence": v.spec.cadence.to_string(),
        "tz": v.spec.cadence.tz(),
        "payload_len": v.spec.payload.len(),
        "priority": v.spec.priority,
        "max_attempts": v.spec.max_attempts,
        "max_hold_us": v.spec.max_hold.map(|d| d.as_micros()),
        "backoff": out::backoff(v.spec.backoff),
        "catch_up": v.spec.catch_up,
        "overlap": v.spec.overlap.as_str(),
        "paused": v.paused,
        "settled_us": v.settled_us,
        "last_slot_us": v.last_slot_us,
        "next_slot_us": v.next_slot_us,
        "created_us": v.created_us,
        "updated_us": v.updated_us,
    })
}

struct Listed(Vec<ScheduleView>);

impl Render for Listed {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let rows: Vec<Vec<String>> = self
            .0
            .iter()
            .map(|v| {
                vec![
                    v.production.clone(),
                    v.spec.name.clone(),
                    v.spec.cadence.to_string(),
                    if v.paused { "paused" } else { "active" }.into(),
                    out::opt_time(v.last_slot_us),
                    out::opt_time(v.next_slot_us),
                ]
            })
            .collect();
        out::table(
            o,
            &[
                "PRODUCTION",
                "SCHEDULE",
                "CADENCE",
                "STATE",
                "LAST SLOT",
                "NEXT SLOT",
            ],
            &rows,
        )
    }
    fn json(&self) -> Value {
        json!({"schedules": self.0.iter().map(view).collect::<Vec<_>>()})
    }
}

struct Step(Ticked);

impl Render for Step {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        for (p, j) in &self.0.enqueued {
            writeln!(o, "enqueued {p}/{j}")?;
        }
        if self.0.dropped > 0 {
            writeln!(o, "dropped {} slot(s)", self.0.dropped)?;
        }
        writeln!(o, "next slot {}", out::opt_time(self.0.next_slot_us))
    }
    fn json(&self) -> Value {
        json!({
            "enqueued": self.0.enqueued.iter()
                .map(|(p, j)| json!({"production": p, "job": j}))
                .collect::<Vec<_>>(),
            "dropped": self.0.dropped,
            "now_us": self.0.now_us,
            "next_slot_us": self.0.next_slot_us,
        })
    }
}

pub fn run(ctx: &Ctx, c: Cmd) -> R<Done> {
    // A definition is parsed before the store is opened: bad input changes nothing.
    let spec = match &c {
        Cmd::Create(d) | Cmd::Update(d) => Some(d.spec()?),
        _ => None,
    };
    let auth = ctx.open()?;
    let said = |text: String, v: Value| Done::show(Said(text, v));
    match (c, spec) {
        (Cmd::Create(d), Some(s)) => {
            let created = auth.create_schedule(&d.p.production, &s)?;
            let what = if created { "created" } else { "unchanged" };
            said(
                format!("{what} schedule {}/{}", d.p.production, s.name),
                json!({"production": d.p.production, "name": s.name, "created": created}),
            )
        }
        (Cmd::Update(d), Some(s)) => {
            auth.update_schedule(&d.p.production, &s)?;
            said(
                format!("updated schedule {}/{}", d.p.production, s.name),
                json!({"production": d.p.production, "name": s.name, "updated": true}),
            )
        }
        (Cmd::Pause { p, name }, _) => {
            let changed = auth.pause_schedule(&p.production, &name)?;
            said(
                format!("schedule {}/{name} paused", p.production),
                json!({"production": p.production, "name": name, "paused": true, "changed": changed}),
            )
        }
        (Cmd::Resume { p, name }, _) => {
            let changed = auth.resume_schedule(&p.production, &name)?;
            said(
                format!("schedule {}/{name} active", p.production),
                json!({"production": p.production, "name": name, "paused": false, "changed": changed}),
            )
        }
        (Cmd::Delete { p, name }, _) => {
            let deleted = auth.delete_schedule(&p.production, &name)?;
            let what = if deleted { "deleted" } else { "no" };
            said(
                format!("{what} schedule {}/{name}", p.production),
                json!({"production": p.production, "name": name, "deleted": deleted}),
            )
        }
        (Cmd::List { production }, _) => Done::show(Listed(auth.schedules(production.as_deref())?)),
        (Cmd::Run { once: true }, _) => Done::show(Step(auth.run_schedules()?)),
        (Cmd::Run { once: false }, _) => {
            let cancel = WaitCancel::new();
            let c2 = cancel.clone();
            tenure::worker::cancel_on_signals(c2)?;
            let json = ctx.json;
            auth.run_schedules_until(&cancel, |t| {
                let mut stdout = io::stdout().lock();
                let _ =
                    out::write(json, &Step(t.clone()), &mut stdout).and_then(|_| stdout.flush());
            })?;
            Done::exit(crate::exit::OK)
        }
        _ => Err(usage("no definition")),
    }
}
