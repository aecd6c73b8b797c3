//! `tenure production create|list|cancel|delete|export`.

use super::{Ctx, Done};
use crate::fail::local;
use crate::fail::R;
use crate::out::{self, Render};
use clap::Subcommand;
use serde_json::{json, Value};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use tenure::{DeletedCounts, ExportRecord, ProductionView};

#[derive(Subcommand)]
pub enum Cmd {
    /// Create a production (idempotent).
    Create { name: String },
    /// List productions.
    List,
    /// Cancel every unfinished job of a production and refuse new ones.
    Cancel { name: String },
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

/// One export record as one JSON object (its `record` field names the kind).
fn record(r: &ExportRecord) -> Value {
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

fn export(auth: &tenure::Authority, name: &str, w: &mut dyn Write) -> crate::fail::R<u64> {
    let mut io_err = None;
    let r = auth.export_production(name, &mut |rec| {
        let line = record(&rec).to_string();
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
                ]
            })
            .collect();
        out::table(o, &["PRODUCTION", "CREATED", "CANCELLED"], &rows)
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
    let auth = ctx.open()?;
    match c {
        Cmd::Create { name } => {
            let created = auth.create_production(&name)?;
            Done::show(Created { name, created })
        }
        Cmd::List => Done::show(Listed(auth.productions()?)),
        Cmd::Cancel { name } => {
            let jobs = auth.cancel_production(&name)?;
            Done::show(Cancelled { name, jobs })
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
