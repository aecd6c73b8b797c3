//! `tenure facts`: published facts, with their provenance.

use super::{Ctx, Done, Prod};
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::PublishedFact;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    p: Prod,
    /// Only this job.
    #[arg(long)]
    job: Option<String>,
}

struct Facts(Vec<PublishedFact>);

impl Render for Facts {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let rows: Vec<Vec<String>> = self
            .0
            .iter()
            .map(|f| vec![f.job.clone(), f.key.clone(), f.value.clone()])
            .collect();
        out::table(o, &["JOB", "KEY", "VALUE"], &rows)
    }

    fn json(&self) -> Value {
        json!({"facts": self.0.iter().map(out::fact).collect::<Vec<_>>()})
    }
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let auth = ctx.open()?;
    let facts = match &a.job {
        Some(j) => auth.facts(&a.p.production, j)?,
        None => auth.production_facts(&a.p.production)?,
    };
    Done::show(Facts(facts))
}
