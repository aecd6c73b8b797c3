//! `tenure job submit|show|cancel|requeue`.

use super::{delay, submit, Ctx, Done, Prod};
use crate::fail::{local, usage, R};
use crate::out::{self, Render};
use clap::Subcommand;
use serde_json::{json, Value};
use std::io::{self, Write};
use tenure::{CancelOutcome, JobView};

#[derive(Subcommand)]
pub enum Cmd {
    /// Submit a job (payload from --payload-file or stdin), or many with --jsonl.
    Submit(submit::Args),
    /// Show one job.
    Show {
        #[command(flatten)]
        p: Prod,
        /// Job ID.
        job: String,
        /// Print only the raw payload.
        #[arg(long)]
        payload: bool,
    },
    /// Cancel one job (coordinator).
    Cancel {
        #[command(flatten)]
        p: Prod,
        /// Job ID.
        job: String,
    },
    /// Put a failed or cancelled job (or, with --all, a batch of them) back
    /// to waiting (coordinator).
    Requeue {
        #[command(flatten)]
        p: Prod,
        /// Job ID.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        job: Option<String>,
        /// Requeue up to --limit of the production's failed or cancelled jobs.
        #[arg(long)]
        all: bool,
        /// Most jobs one --all call requeues (1..=1000; default 100).
        #[arg(long)]
        limit: Option<usize>,
        /// Attempts to give (1..=1000, at most the job's max_attempts;
        /// default: a fresh budget of max_attempts).
        #[arg(long)]
        extra_attempts: Option<u32>,
        /// Not claimable until this long after the requeue (default: at once).
        #[arg(long, allow_hyphen_values = true)]
        delay: Option<String>,
    },
}

struct Requeued {
    production: String,
    job: String,
}

impl Render for Requeued {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(o, "requeued {}/{}", self.production, self.job)
    }

    fn json(&self) -> Value {
        json!({"production": self.production, "job": self.job, "result": "requeued"})
    }
}

struct RequeuedAll {
    production: String,
    requeued: u64,
    more: bool,
}

impl Render for RequeuedAll {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let more = if self.more { "; more remain" } else { "" };
        writeln!(
            o,
            "requeued {} jobs of {}{more}",
            self.requeued, self.production
        )
    }

    fn json(&self) -> Value {
        json!({"production": self.production, "requeued": self.requeued, "more": self.more})
    }
}

struct Shown(JobView);

impl Render for Shown {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let v = &self.0;
        let or_dash = |s: Option<String>| s.unwrap_or_else(|| "-".into());
        let rows = [
            ("production", v.production.clone()),
            ("job", v.job.clone()),
            ("state", v.state.to_string()),
            ("attempts", format!("{}/{}", v.attempts, v.max_attempts)),
            ("priority", v.priority.to_string()),
            ("holder", or_dash(v.holder.clone())),
            ("claim_id", or_dash(v.claim_id.map(|c| c.to_string()))),
            ("expires", out::opt_time(v.expires_us)),
            ("created", out::time(v.created_us)),
            ("updated", out::time(v.updated_us)),
            ("payload", format!("{} bytes", v.payload_len)),
            ("last_error", or_dash(v.last_error.clone())),
            ("due", out::opt_time(v.due_us)),
            ("max_hold", out::opt_delay(v.max_hold_us)),
            ("backoff", out::backoff_text(v.backoff)),
            ("progress", out::progress_text(v.progress.as_deref())),
        ];
        for (k, val) in rows {
            writeln!(o, "{k:<11}{val}")?;
        }
        Ok(())
    }

    fn json(&self) -> Value {
        // The listing's view plus the job's progress checkpoint, which only
        // a single job's view carries.
        let mut v = out::job(&self.0);
        v["progress_hex"] = self.0.progress.as_deref().map(out::hex).into();
        v
    }
}

struct JobCancelled {
    production: String,
    job: String,
    result: CancelOutcome,
}

impl JobCancelled {
    fn result(&self) -> &'static str {
        match self.result {
            CancelOutcome::Cancelled => "cancelled",
            CancelOutcome::AlreadyCancelled => "already_cancelled",
        }
    }
}

impl Render for JobCancelled {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(o, "{} {}/{}", self.result(), self.production, self.job)
    }

    fn json(&self) -> Value {
        json!({"production": self.production, "job": self.job, "result": self.result()})
    }
}

pub fn run(ctx: &Ctx, c: Cmd) -> R<Done> {
    match c {
        Cmd::Submit(a) => submit::run(ctx, a),
        Cmd::Show { p, job, payload } => {
            let auth = ctx.open()?;
            if payload {
                // The raw bytes, the same with or without --json.
                let bytes = auth.payload(&p.production, &job)?;
                let mut o = io::stdout().lock();
                o.write_all(&bytes)
                    .and_then(|_| o.flush())
                    .map_err(local("writing the payload"))?;
                return Done::exit(crate::exit::OK);
            }
            Done::show(Shown(auth.job(&p.production, &job)?))
        }
        Cmd::Requeue {
            p,
            job,
            all,
            limit,
            extra_attempts,
            delay: d,
        } => {
            if limit.is_some() && !all {
                return Err(usage("--limit goes with --all"));
            }
            let d = d.as_deref().map(delay).transpose()?.unwrap_or_default();
            let auth = ctx.open()?;
            match job.filter(|_| !all) {
                Some(job) => {
                    auth.requeue(&p.production, &job, extra_attempts, d)?;
                    Done::show(Requeued {
                        production: p.production,
                        job,
                    })
                }
                None => {
                    let (requeued, more) =
                        auth.requeue_all(&p.production, extra_attempts, d, limit.unwrap_or(100))?;
                    Done::show(RequeuedAll {
                        production: p.production,
                        requeued,
                        more,
                    })
                }
            }
        }
        Cmd::Cancel { p, job } => {
            let auth = ctx.open()?;
            let result = auth.cancel(&p.production, &job)?;
            Done::show(JobCancelled {
                production: p.production,
                job,
                result,
            })
        }
    }
}
