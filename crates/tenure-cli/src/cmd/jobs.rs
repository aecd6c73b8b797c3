//! `tenure jobs`: a production's jobs, by job ID, one page at a time.

use super::{Ctx, Done, Prod};
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::{JobState, JobView, ListQuery};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    p: Prod,
    /// Only jobs in this observed state (requested, claimed, expired, completed, failed, cancelled).
    #[arg(long)]
    state: Option<String>,
    /// Start after this job ID (the last ID of the previous page).
    #[arg(long)]
    after: Option<String>,
    /// Page size (at most 10000).
    #[arg(long, default_value_t = 100)]
    limit: usize,
}

struct Page {
    jobs: Vec<JobView>,
    /// Where the next page starts, when this one is full.
    next_after: Option<String>,
}

impl Render for Page {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let rows: Vec<Vec<String>> = self
            .jobs
            .iter()
            .map(|j| {
                vec![
                    j.job.clone(),
                    j.state.to_string(),
                    format!("{}/{}", j.attempts, j.max_attempts),
                    j.priority.to_string(),
                    j.holder.clone().unwrap_or_else(|| "-".into()),
                    out::opt_time(j.expires_us),
                    out::opt_time(j.due_us),
                    out::opt_delay(j.max_hold_us),
                    out::backoff_text(j.backoff),
                ]
            })
            .collect();
        out::table(
            o,
            &[
                "JOB", "STATE", "ATTEMPTS", "PRIORITY", "HOLDER", "EXPIRES", "DUE", "MAX_HOLD",
                "BACKOFF",
            ],
            &rows,
        )?;
        if let Some(n) = &self.next_after {
            writeln!(o, "(more: --after {n})")?;
        }
        Ok(())
    }

    fn json(&self) -> Value {
        json!({
            "jobs": self.jobs.iter().map(out::job).collect::<Vec<_>>(),
            "next_after": self.next_after,
        })
    }
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let state = a.state.map(|s| s.parse::<JobState>()).transpose()?;
    let auth = ctx.open()?;
    let q = ListQuery {
        state,
        after: a.after,
        limit: a.limit,
    };
    let jobs = auth.jobs(&a.p.production, &q)?;
    let page = if a.limit == 0 {
        tenure::DEFAULT_PAGE
    } else {
        a.limit
    };
    let next_after = (jobs.len() >= page.min(tenure::MAX_PAGE))
        .then(|| jobs.last().map(|j| j.job.clone()))
        .flatten();
    Done::show(Page { jobs, next_after })
}
