//! `tenure complete`: complete the job, publishing facts.

use super::{Ctx, Done, Ended, TokenFile};
use crate::fail::{usage, R};
use tenure::{Fact, JobState};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    t: TokenFile,
    /// A fact to publish, KEY=VALUE (repeatable).
    #[arg(long = "fact")]
    facts: Vec<String>,
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let facts = a
        .facts
        .iter()
        .map(|f| {
            f.split_once('=')
                .map(|(k, v)| Fact::new(k, v))
                .ok_or_else(|| usage(format!("--fact {f:?}: expected KEY=VALUE")))
        })
        .collect::<R<Vec<_>>>()?;
    let l = a.t.lease(ctx)?;
    l.complete(&facts)?;
    Done::show(Ended::new(&l, "completed", JobState::Completed))
}
