//! `tenure exec`: the reference executor. Claim a job, run a command on it,
//! publish its output; with `--loop`, until nothing is claimable; with
//! `--parallel N`, up to N commands at once until nothing is claimable.
//!
//! Each outcome is printed as it happens (a line of text or one JSON object
//! per line). Output errors are ignored: a closed stdout must not stop the
//! executor from ending its lease.

use super::{ttl, Ctx, Done};
use crate::exit;
use crate::fail::{usage, R};
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use tenure::executor::{self, ExecSpec, Exit, Outcome};
use tenure::Error;

/// The help text after the options.
pub const AFTER_HELP: &str = "\
The command gets the payload on stdin and TENURE_PRODUCTION, TENURE_JOB, TENURE_CLAIM_ID,
TENURE_ATTEMPT, TENURE_NONCE, TENURE_OUTPUT in its environment (never a token). Its stdout
goes to DIR/<job>.<nonce>.tmp, renamed to DIR/<job>.<nonce>.out on success. Exit 100 fails
the job permanently; any other failure is retryable (due again after the job's or
production's back-off, at once without one).";

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    p: super::Prod,
    /// Run this job (default: the next claimable one).
    #[arg(long)]
    job: Option<String>,
    /// Holder name (default: HOSTNAME:PID).
    #[arg(long)]
    holder: Option<String>,
    /// Lease duration; renewed every TTL/3 while the command runs.
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    ttl: String,
    /// Output directory.
    #[arg(long, default_value = ".")]
    out_dir: PathBuf,
    /// Keep claiming until nothing is claimable.
    #[arg(long = "loop")]
    repeat: bool,
    /// Run up to N commands at once (1-1000), claiming free slots in one
    /// batch; keeps claiming until nothing is claimable, as --loop does.
    #[arg(long, value_name = "N")]
    parallel: Option<usize>,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    if (a.repeat || a.parallel.is_some()) && a.job.is_some() {
        return Err(usage(
            "--loop and --parallel claim the next jobs; they cannot be combined with --job",
        ));
    }
    let spec = ExecSpec {
        production: a.p.production,
        job: a.job,
        holder: a.holder.unwrap_or_else(default_holder),
        ttl: ttl(&a.ttl)?,
        output_dir: a.out_dir,
        program: a.command[0].clone(),
        args: a.command[1..].to_vec(),
    };
    let auth = ctx.open()?;
    let report = |o: &Outcome| {
        let mut stdout = io::stdout().lock();
        let _ = out::write(ctx.json, &Report(o), &mut stdout).and_then(|_| stdout.flush());
    };
    if let Some(n) = a.parallel {
        executor::run_parallel(&auth, &spec, n, report)?;
        return Done::exit(exit::OK);
    }
    if a.repeat {
        executor::run_loop(&auth, &spec, report)?;
        return Done::exit(exit::OK);
    }
    let o = executor::run_once(&auth, &spec)?;
    report(&o);
    Done::exit(match &o {
        Outcome::Completed { .. } => exit::OK,
        Outcome::Failed { .. } => exit::COMMAND_FAILED,
        Outcome::Rejected { error, .. } | Outcome::LeaseLost { error, .. } => {
            exit::for_code(error.code())
        }
        Outcome::Released { .. } => exit::FAILURE,
    })
}

/// The default holder: `HOSTNAME:PID`.
pub fn default_holder() -> String {
    format!("{}:{}", hostname(), std::process::id())
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// One executor outcome (of `exec` and of `work`).
pub struct Report<'a>(pub &'a Outcome);

fn exit_fields(v: &mut Value, e: &Exit) {
    let (status, signal) = match e {
        Exit::Code(c) => (json!(c), Value::Null),
        Exit::Signal(s) => (Value::Null, json!(s)),
    };
    v["exit_status"] = status;
    v["signal"] = signal;
}

fn error_json(e: &Error) -> Value {
    json!({"code": e.code().name(), "message": e.to_string()})
}

impl Render for Report<'_> {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let a = self.0.attempt();
        let (p, j, n) = (&a.production, &a.job, a.attempt);
        match self.0 {
            Outcome::Completed {
                output,
                sha256,
                size,
                ..
            } => writeln!(
                o,
                "completed {p}/{j} (attempt {n}): {} ({size} bytes, sha256 {sha256})",
                output.display()
            ),
            Outcome::Failed {
                exit,
                permanent,
                state,
                ..
            } => {
                let how = match exit {
                    Exit::Code(c) => format!("exited with status {c}"),
                    Exit::Signal(s) => format!("killed by signal {s}"),
                };
                let permanent = if *permanent { " (permanent)" } else { "" };
                writeln!(
                    o,
                    "failed {p}/{j} (attempt {n}): command {how}{permanent}; job is {state}"
                )
            }
            Outcome::Rejected { error, .. } => writeln!(
                o,
                "rejected {p}/{j} (attempt {n}): {error}; own output removed"
            ),
            Outcome::LeaseLost { error, .. } => writeln!(
                o,
                "lease lost on {p}/{j} (attempt {n}): {error}; command killed, own output removed"
            ),
            Outcome::Released { state, .. } => writeln!(
                o,
                "released {p}/{j} (attempt {n}) unfinished; job is {state}"
            ),
        }
    }

    fn json(&self) -> Value {
        let a = self.0.attempt();
        let mut v = json!({
            "production": a.production,
            "job": a.job,
            "claim_id": a.claim_id.to_string(),
            "attempt": a.attempt,
            "nonce": (!a.nonce.is_nil()).then(|| a.nonce.to_string()),
        });
        match self.0 {
            Outcome::Completed {
                output,
                sha256,
                size,
                ..
            } => {
                v["outcome"] = json!("completed");
                v["output"] = json!(output.display().to_string());
                v["sha256"] = json!(sha256);
                v["size"] = json!(size);
                exit_fields(&mut v, &Exit::Code(0));
            }
            Outcome::Failed {
                exit,
                permanent,
                state,
                ..
            } => {
                v["outcome"] = json!("failed");
                v["permanent"] = json!(permanent);
                v["state"] = json!(state.as_str());
                exit_fields(&mut v, exit);
            }
            Outcome::Rejected { exit, error, .. } => {
                v["outcome"] = json!("rejected");
                v["error"] = error_json(error);
                exit_fields(&mut v, exit);
            }
            Outcome::LeaseLost { error, .. } => {
                v["outcome"] = json!("lease_lost");
                v["error"] = error_json(error);
            }
            Outcome::Released { state, .. } => {
                v["outcome"] = json!("released");
                v["state"] = json!(state.as_str());
            }
        }
        v
    }
}
