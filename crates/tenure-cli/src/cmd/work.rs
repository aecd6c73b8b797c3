//! `tenure work`: the worker loop (`tenure::worker::Worker`) running a
//! command per job the way `tenure exec` does (`tenure::executor::Runner`):
//! `--slots` jobs at a time, each waited for, kept alive and settled by the
//! worker. SIGTERM or SIGINT (or `--max-jobs`, `--until-idle`) stops it: no
//! new jobs, running commands may finish within `--grace`, then the leases
//! still held are released and their commands killed.
//!
//! A store server that goes away stops nothing (`tenure::worker`): a line
//! on stderr says when it went away and when it came back; with
//! `--outage-limit` the worker stops once it has been away that long.
//!
//! Each job's outcome is printed as it is settled, as `exec` prints it (a
//! line of text, or one JSON object per line). Output errors are ignored: a
//! closed stdout must not stop the worker from settling its leases.

use super::exec::{default_holder, Report};
use super::{ttl, Ctx, Done};
use crate::exit;
use crate::fail::{usage, Fail, R};
use crate::out;
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;
use tenure::executor::Runner;
use tenure::worker::{self, StopHandle, Worker, WorkerConfig};
use tenure::ListQuery;

/// The help text after the options.
pub const AFTER_HELP: &str = "\
Each job runs COMMAND as `tenure exec` does: payload on stdin, TENURE_PRODUCTION, TENURE_JOB,
TENURE_CLAIM_ID, TENURE_ATTEMPT, TENURE_NONCE, TENURE_OUTPUT in its environment (never a
token), stdout to DIR/<job>.<nonce>.tmp, renamed to .out and completed on exit 0. Exit 100
fails the job permanently; any other failure is retryable (due again after the job's or
production's back-off, at once without one). SIGTERM/SIGINT: no new jobs,
running commands get --grace, then their leases are released and the commands killed.";

/// How long `work` waits, after the worker stopped, for killed commands'
/// files to be removed.
const CLEANUP: Duration = Duration::from_secs(2);

#[derive(clap::Args)]
pub struct Args {
    /// Production ID; repeat it (or give a comma-separated list) to claim
    /// across several, rotating after the production last served.
    #[arg(short, long, required = true, value_delimiter = ',')]
    production: Vec<String>,
    /// Holder name (default: HOSTNAME:PID).
    #[arg(long)]
    holder: Option<String>,
    /// Jobs run at the same time (1..=1024).
    #[arg(long, default_value_t = 1)]
    slots: usize,
    /// Lease duration.
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    ttl: String,
    /// Keep-alive period (shorter than the TTL; default TTL/3).
    #[arg(long, allow_hyphen_values = true)]
    renew_every: Option<String>,
    /// How long one wait for a job lasts before the next one starts.
    #[arg(long, default_value = "60s", allow_hyphen_values = true)]
    wait_timeout: String,
    /// After a stop, how long running commands may go on before their
    /// leases are released and they are killed.
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    grace: String,
    /// Stop (as on SIGTERM) once this many jobs were settled.
    #[arg(long, conflicts_with = "until_idle")]
    max_jobs: Option<u64>,
    /// Stop (as on SIGTERM) once no command has run for this long.
    #[arg(long, allow_hyphen_values = true)]
    until_idle: Option<String>,
    /// Stop (exit 1) once the store server has been away this long
    /// (default: never; the worker backs off and keeps trying).
    #[arg(long, allow_hyphen_values = true)]
    outage_limit: Option<String>,
    /// Also run the store's schedules (enqueue their due slots) while working.
    #[arg(long)]
    schedules: bool,
    /// Output directory.
    #[arg(long, default_value = ".")]
    out_dir: PathBuf,
    /// The command and its arguments (after `--`).
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

/// The log line (stderr) of an outage of the store server.
fn outage_line(e: &worker::OutageEvent, gave_up: &AtomicBool) {
    let line = match e {
        worker::OutageEvent::Began(err) => {
            format!("tenure work: the store server is away ({err}); backing off and trying again")
        }
        worker::OutageEvent::Ended(d) => {
            format!(
                "tenure work: the store server is back after {:.1} s",
                d.as_secs_f64()
            )
        }
        worker::OutageEvent::GaveUp(d) => {
            gave_up.store(true, Ordering::SeqCst);
            format!(
                "tenure work: the store server has been away {:.1} s, past --outage-limit: stopping",
                d.as_secs_f64()
            )
        }
    };
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// Parse a duration option (the TTL syntax: positive, whole µs, at most 24 h).
fn duration(text: &str) -> R<Duration> {
    Ok(ttl(text)?.as_duration())
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let lease_ttl = ttl(&a.ttl)?;
    let wait_timeout = duration(&a.wait_timeout)?;
    let grace = duration(&a.grace)?;
    let renew_every = a.renew_every.as_deref().map(duration).transpose()?;
    let until_idle = a.until_idle.as_deref().map(duration).transpose()?;
    let outage_limit = a.outage_limit.as_deref().map(duration).transpose()?;
    if a.max_jobs == Some(0) {
        return Err(usage("--max-jobs must be at least 1"));
    }
    let holder = a.holder.unwrap_or_else(default_holder);
    let productions: Vec<&str> = a.production.iter().map(String::as_str).collect();
    let mut config = WorkerConfig::new(productions[0], &holder, lease_ttl)
        .productions(&productions)
        .slots(a.slots)
        .wait_timeout(wait_timeout)
        .grace(grace)
        .schedules(a.schedules);
    if let Some(d) = renew_every {
        config = config.renew_every(d);
    }
    let gave_up = Arc::new(AtomicBool::new(false));
    config = config.outage_limit(outage_limit).on_outage({
        let gave_up = gave_up.clone();
        move |e| outage_line(&e, &gave_up)
    });
    let auth = ctx.open()?;
    // A missing production would make every wait fail: refuse it up front.
    for production in &productions {
        auth.jobs(
            production,
            &ListQuery {
                state: None,
                after: None,
                limit: 1,
            },
        )?;
    }
    let runner = Runner::new(&a.out_dir, a.command[0].clone(), a.command[1..].to_vec())?;
    let stop: Arc<OnceLock<StopHandle>> = Arc::new(OnceLock::new());
    let failed = Arc::new(AtomicBool::new(false));
    let settled = Arc::new(AtomicU64::new(0));
    let report = {
        let (runner, stop, failed, settled) = (
            runner.clone(),
            stop.clone(),
            failed.clone(),
            settled.clone(),
        );
        let (json, max_jobs) = (ctx.json, a.max_jobs);
        move |r: worker::Report| {
            match runner.settled(&r) {
                Ok(o) => {
                    let mut stdout = io::stdout().lock();
                    let _ = out::write(json, &Report(&o), &mut stdout).and_then(|_| stdout.flush());
                }
                Err(e) => {
                    // The command could not be run (the lease was failed,
                    // retryable): stop taking jobs, as `exec --loop` stops.
                    Fail::from(e).report(json);
                    failed.store(true, Ordering::SeqCst);
                    if let Some(s) = stop.get() {
                        s.stop();
                    }
                }
            }
            let n = settled.fetch_add(1, Ordering::SeqCst) + 1;
            if max_jobs.is_some_and(|m| n >= m) {
                if let Some(s) = stop.get() {
                    s.stop();
                }
            }
        }
    };
    // No command runs before the worker's stop handle is in place, so a
    // command that cannot start stops the worker before its job is failed
    // and another slot takes the job again.
    let ready = Arc::new((Mutex::new(false), Condvar::new()));
    let handler = {
        let (runner, ready) = (runner.clone(), ready.clone());
        move |c: &worker::JobContext<'_>| {
            let (set, cv) = &*ready;
            let st = set.lock().unwrap_or_else(|p| p.into_inner());
            drop(cv.wait_while(st, |set| !*set));
            runner.run(c)
        }
    };
    let w = Worker::start(&auth, config, handler, report)?;
    let handle = w.stop_handle();
    runner.stop_on_failure(handle.clone());
    let _ = stop.set(handle.clone());
    *ready.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
    ready.1.notify_all();
    // Reports that came before the handle was set.
    if failed.load(Ordering::SeqCst)
        || a.max_jobs
            .is_some_and(|m| settled.load(Ordering::SeqCst) >= m)
    {
        handle.stop();
    }
    worker::stop_on_signals(handle.clone())?;
    if let Some(idle) = until_idle {
        let tick = (idle / 4).clamp(Duration::from_millis(1), Duration::from_millis(50));
        while !handle.is_stopped() {
            if runner.idle_for().is_some_and(|d| d >= idle) {
                handle.stop();
            }
            std::thread::sleep(tick);
        }
    }
    w.join();
    runner.finish(CLEANUP);
    Done::exit(
        if failed.load(Ordering::SeqCst) || gave_up.load(Ordering::SeqCst) {
            exit::FAILURE
        } else {
            exit::OK
        },
    )
}
