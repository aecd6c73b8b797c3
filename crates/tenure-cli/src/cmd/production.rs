//! `tenure production create|list|cancel`.

use super::{Ctx, Done};
use crate::fail::R;
use crate::out::{self, Render};
use clap::Subcommand;
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::ProductionView;

#[derive(Subcommand)]
pub enum Cmd {
    /// Create a production (idempotent).
    Create { name: String },
    /// List productions.
    List,
    /// Cancel every unfinished job of a production and refuse new ones.
    Cancel { name: String },
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
    }
}
