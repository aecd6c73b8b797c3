//! `tenure production create|list|cancel|backoff|pause|resume|limit|gates|delete|export`.

use super::{Ctx, Done};
use crate::fail::local;
use crate::fail::R;
use crate::out::{self, Render};
use clap::Subcommand;
use serde_json::{json, Value};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use tenure::{Backoff, DeletedCounts, Gates, ProductionView, RateLimit};

#[derive(Subcommand)]
pub enum Cmd {
    /// Create a production (idempotent).
    Create { name: String },
    /// List productions.
    List,
    /// Cancel every unfinished job of a production and refuse new ones.
    Cancel { name: String },
    /// Set a production's retry back-off (jobs without their own): after the
    /// retryable failure of attempt n a job is due after min(CAP, BASE * 2^(n-1)).
    /// Jobs already waiting keep their due time.
    Backoff {
        name: String,
        /// BASE,CAP (e.g. 1s,5m: BASE positive, CAP >= BASE, each at most 8784h).
        #[arg(
            value_name = "BASE,CAP",
            required_unless_present = "clear",
            conflicts_with = "clear",
            allow_hyphen_values = true
        )]
        policy: Option<String>,
        /// Remove the production's back-off (failed jobs are due again at once).
        #[arg(long)]
        clear: bool,
    },
    /// Pause a production: no claim of it succeeds until it is resumed
    /// (submissions are accepted, leases already held keep working).
    Pause { name: String },
    /// Resume a paused production; its waiting workers wake.
    Resume { name: String },
    /// Set or clear a production's concurrency limit (at most K live leases
    /// at once) and rate limit (at most N claims per INTERVAL, BURST at once).
    Limit {
        name: String,
        /// At most K live leases at once (1..=1000000).
        #[arg(long, value_name = "K", conflicts_with = "no_concurrency")]
        concurrency: Option<u32>,
        /// Clear the concurrency limit.
        #[arg(long)]
        no_concurrency: bool,
        /// At most N claims per INTERVAL (e.g. 100/1s; N 1..=1000000,
        /// INTERVAL at most 24h and at least 1 µs per claim).
        #[arg(long, value_name = "N/INTERVAL", conflicts_with = "no_rate")]
        rate: Option<String>,
        /// With --rate: at most B claims at once after an idle spell
        /// (1..=1000000; default N).
        #[arg(long, value_name = "B", requires = "rate")]
        burst: Option<u32>,
        /// Clear the rate limit.
        #[arg(long)]
        no_rate: bool,
    },
    /// Show a production's gates: paused since when, concurrency and rate limit.
    Gates { name: String },
    /// Remove a finished production with its jobs, facts, events and
    /// tombstones (refused, exit 34, while a job is not terminal).
    Delete { name: String },
    /// Write a production's jobs (with payloads), facts and events as JSON
    /// lines, for archiving before `delete`. No secret is exported.
    Export {
        name: String,
        /// Write to this new file (it must not exist) instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

struct BackoffSet {
    name: String,
    backoff: Option<Backoff>,
}

impl Render for BackoffSet {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        match self.backoff {
            Some(_) => writeln!(
                o,
                "production {} back-off {}",
                self.name,
                out::backoff_text(self.backoff)
            ),
            None => writeln!(o, "production {} has no back-off", self.name),
        }
    }

    fn json(&self) -> Value {
        json!({"production": self.name, "backoff": out::backoff(self.backoff)})
    }
}

struct GatesShown {
    name: String,
    gates: Gates,
}

impl Render for GatesShown {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(
            o,
            "production {} {}",
            self.name,
            out::gates_text(&self.gates)
        )
    }

    fn json(&self) -> Value {
        json!({"production": self.name, "gates": out::gates(&self.gates)})
    }
}

struct Paused {
    name: String,
    paused: bool,
    changed: bool,
}

impl Render for Paused {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let what = if self.paused { "paused" } else { "resumed" };
        if self.changed {
            writeln!(o, "{what} production {}", self.name)
        } else {
            writeln!(o, "production {} was already {what}", self.name)
        }
    }

    fn json(&self) -> Value {
        json!({"production": self.name, "paused": self.paused, "changed": self.changed})
    }
}

/// `N/INTERVAL` (and a burst) as a rate limit.
fn rate(text: &str, burst: Option<u32>) -> tenure::Result<RateLimit> {
    let bad = || {
        tenure::Error::InvalidArgument(format!("a rate is N/INTERVAL (e.g. 100/1s), got {text:?}"))
    };
    let (n, i) = text.split_once('/').ok_or_else(bad)?;
    let claims: u32 = n.trim().parse().map_err(|_| bad())?;
    let interval = super::delay(i.trim())?;
    Ok(RateLimit {
        claims,
        interval: std::time::Duration::from_micros(interval.as_micros().unsigned_abs()),
        burst: burst.unwrap_or(claims),
    })
}

struct Deleted {
    name: String,
    counts: DeletedCounts,
}

impl Render for Deleted {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let c = &self.counts;
        writeln!(
            o,
            "deleted production {} ({} jobs, {} facts, {} events, {} tombstones)",
            self.name, c.jobs, c.facts, c.events, c.tombstones
        )
    }

    fn json(&self) -> Value {
        let c = &self.counts;
        json!({
            "production": self.name,
            "jobs": c.jobs,
            "facts": c.facts,
            "events": c.events,
            "tombstones": c.tombstones,
        })
    }
}

struct Exported {
    name: String,
    records: u64,
    out: Option<PathBuf>,
}

impl Render for Exported {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        match &self.out {
            Some(p) => writeln!(
                o,
                "exported production {} ({} records) to {}",
                self.name,
                self.records,
                p.display()
            ),
            None => Ok(()),
        }
    }

    fn json(&self) -> Value {
        json!({"production": self.name, "records": self.records, "out": self.out})
    }
}

fn export(auth: &tenure::Authority, name: &str, w: &mut dyn Write) -> crate::fail::R<u64> {
    let mut io_err = None;
    let r = auth.export_production(name, &mut |rec| {
        let line = rec.to_json_line();
        writeln!(w, "{line}").map_err(|e| {
            io_err = Some(e);
            tenure::Error::Store("export output failed".into())
        })
    });
    if let Some(e) = io_err {
        return Err(local("writing the export")(e));
    }
    let n = r?;
    w.flush().map_err(local("writing the export"))?;
    Ok(n)
}

struct Created {
    name: String,
    created: bool,
}

impl Render for Created {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        if self.created {
            writeln!(o, "created production {}", self.name)
        } else {
            writeln!(o, "production {} already exists", self.name)
        }
    }

    fn json(&self) -> Value {
        json!({"production": self.name, "created": self.created})
    }
}

struct Listed(Vec<ProductionView>);

impl Render for Listed {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let rows: Vec<Vec<String>> = self
            .0
            .iter()
            .map(|p| {
                vec![
                    p.name.clone(),
                    out::time(p.created_us),
                    out::opt_time(p.cancelled_us),
                    out::backoff_text(p.backoff),
                ]
            })
            .collect();
        out::table(o, &["PRODUCTION", "CREATED", "CANCELLED", "BACKOFF"], &rows)
    }

    fn json(&self) -> Value {
        json!({"productions": self.0.iter().map(out::production).collect::<Vec<_>>()})
    }
}

struct Cancelled {
    name: String,
    jobs: u64,
}

impl Render for Cancelled {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(
            o,
            "cancelled production {} ({} unfinished job(s) cancelled)",
            self.name, self.jobs
        )
    }

    fn json(&self) -> Value {
        json!({"production": self.name, "cancelled_jobs": self.jobs})
    }
}

pub fn run(ctx: &Ctx, c: Cmd) -> R<Done> {
    // A back-off is parsed before the store is opened: bad input changes nothing.
    let backoff = match &c {
        Cmd::Backoff { policy, .. } => policy.as_deref().map(super::backoff).transpose()?,
        _ => None,
    };
    let limits = match &c {
        Cmd::Limit {
            concurrency,
            no_concurrency,
            rate: r,
            burst,
            no_rate,
            ..
        } => {
            if concurrency.is_none() && !no_concurrency && r.is_none() && !no_rate {
                return Err(crate::fail::usage(
                    "limit: give --concurrency K, --no-concurrency, --rate N/INTERVAL or --no-rate",
                ));
            }
            let k = concurrency.map(Some).or(no_concurrency.then_some(None));
            let r = match r {
                Some(t) => Some(Some(rate(t, *burst)?)),
                None => no_rate.then_some(None),
            };
            Some((k, r))
        }
        _ => None,
    };
    let auth = ctx.open()?;
    match c {
        Cmd::Pause { name } => {
            let changed = auth.pause_production(&name)?;
            Done::show(Paused {
                name,
                paused: true,
                changed,
            })
        }
        Cmd::Resume { name } => {
            let changed = auth.resume_production(&name)?;
            Done::show(Paused {
                name,
                paused: false,
                changed,
            })
        }
        Cmd::Limit { name, .. } => {
            let (k, r) = limits.unwrap_or_default();
            // Both in one edit: all or nothing.
            let mut e = auth.edit()?;
            if let Some(k) = k {
                e.set_concurrency_limit(&name, k)?;
            }
            if let Some(r) = r {
                e.set_rate_limit(&name, r)?;
            }
            e.commit()?;
            let gates = auth.production_gates(&name)?;
            Done::show(GatesShown { name, gates })
        }
        Cmd::Gates { name } => {
            let gates = auth.production_gates(&name)?;
            Done::show(GatesShown { name, gates })
        }
        Cmd::Create { name } => {
            let created = auth.create_production(&name)?;
            Done::show(Created { name, created })
        }
        Cmd::List => Done::show(Listed(auth.productions()?)),
        Cmd::Cancel { name } => {
            let jobs = auth.cancel_production(&name)?;
            Done::show(Cancelled { name, jobs })
        }
        Cmd::Backoff { name, .. } => {
            auth.set_production_backoff(&name, backoff)?;
            Done::show(BackoffSet { name, backoff })
        }
        Cmd::Delete { name } => {
            let counts = auth.delete_production(&name)?;
            Done::show(Deleted { name, counts })
        }
        Cmd::Export { name, out } => {
            let records = match &out {
                Some(path) => {
                    let f = std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(path)
                        .map_err(local(format!("creating {}", path.display())))?;
                    let mut w = BufWriter::new(f);
                    let n = export(&auth, &name, &mut w);
                    if n.is_err() {
                        drop(w);
                        let _ = std::fs::remove_file(path);
                    }
                    n?
                }
                None => export(&auth, &name, &mut BufWriter::new(io::stdout().lock()))?,
            };
            Done::show(Exported { name, records, out })
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::out;
    use serde_json::{json, Value};
    use tenure::{
        Event, EventKind, ExportRecord, JobState, JobView, ProductionView, PublishedFact,
    };

    /// One export record as one JSON object (its `record` field names the kind).
    pub(super) fn record(r: &ExportRecord) -> Value {
        match r {
            ExportRecord::Production(p) => {
                let mut v = out::production(p);
                v["record"] = json!("production");
                v
            }
            ExportRecord::Job { view, payload } => {
                let mut v = out::job(view);
                v["record"] = json!("job");
                v["payload_base64"] = json!(out::base64(payload));
                v
            }
            ExportRecord::Fact(f) => {
                let mut v = out::fact(f);
                v["record"] = json!("fact");
                v
            }
            ExportRecord::Event(e) => {
                let mut v = out::event(e);
                v["record"] = json!("event");
                v
            }
        }
    }

    /// The core's JSON line of every kind of record is byte for byte the
    /// CLI's JSON object of the same view, with `record` (and a job's
    /// `payload_base64`) added: one rendering, whichever surface exports.
    #[test]
    fn export_lines_are_the_cli_json_views() {
        let tricky = "q\"b\\s\n\r\t\u{8}\u{c}\u{1}\u{7f}é/€";
        let claim = Some(tenure::Uuid::from_u128(
            0x1234_5678_9abc_def0_1234_5678_9abc_def0,
        ));
        let records = [
            ExportRecord::Production(ProductionView {
                name: "p".into(),
                created_us: 1,
                cancelled_us: None,
                backoff: None,
            }),
            ExportRecord::Production(ProductionView {
                name: "p".into(),
                created_us: -5,
                cancelled_us: Some(i64::MAX),
                backoff: Some(
                    tenure::Backoff::exponential(
                        tenure::Delay::from_micros(250_000).unwrap(),
                        tenure::Delay::from_micros(2_000_000).unwrap(),
                    )
                    .unwrap(),
                ),
            }),
            ExportRecord::Job {
                view: JobView {
                    production: "p".into(),
                    job: "j".into(),
                    state: JobState::Failed,
                    attempts: 3,
                    max_attempts: 1000,
                    priority: i32::MIN,
                    holder: Some(tricky.into()),
                    claim_id: claim,
                    expires_us: Some(7),
                    created_us: 2,
                    updated_us: 3,
                    payload_len: 4,
                    last_error: Some(tricky.into()),
                    due_us: Some(9),
                    max_hold_us: Some(11),
                    backoff: Some(
                        tenure::Backoff::exponential(
                            tenure::Delay::from_micros(1).unwrap(),
                            tenure::Delay::from_micros(tenure::Delay::MAX_MICROS).unwrap(),
                        )
                        .unwrap(),
                    ),
                    progress: None,
                },
                payload: vec![0, 255, 10, 66],
            },
            ExportRecord::Job {
                view: JobView {
                    production: "p".into(),
                    job: "k".into(),
                    state: JobState::Completed,
                    attempts: 1,
                    max_attempts: 3,
                    priority: 0,
                    holder: None,
                    claim_id: None,
                    expires_us: None,
                    created_us: 2,
                    updated_us: 3,
                    payload_len: 0,
                    last_error: None,
                    due_us: None,
                    max_hold_us: None,
                    backoff: None,
                    progress: None,
                },
                payload: vec![],
            },
            ExportRecord::Fact(PublishedFact {
                production: "p".into(),
                job: "j".into(),
                key: "k".into(),
                value: tricky.into(),
            }),
            ExportRecord::Event(Event {
                seq: u64::MAX,
                at_us: 9,
                production: "p".into(),
                job: Some("j".into()),
                kind: EventKind::Completed,
                state: Some(JobState::Completed),
                claim_id: claim,
                holder: Some("w".into()),
                attempt: Some(2),
                expires_us: Some(10),
                detail: tricky.into(),
            }),
            ExportRecord::Event(Event {
                seq: 1,
                at_us: 9,
                production: "p".into(),
                job: None,
                kind: EventKind::ProductionCreated,
                state: None,
                claim_id: None,
                holder: None,
                attempt: None,
                expires_us: None,
                detail: String::new(),
            }),
        ];
        for r in &records {
            assert_eq!(r.to_json_line(), record(r).to_string(), "{r:?}");
        }
    }
}
