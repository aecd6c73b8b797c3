//! `tenure`: operate a tenure job lease authority from a shell.
//!
//! Every command takes `--db PATH` (or `TENURE_DB`). Read commands print
//! human tables by default and stable JSON with `--json` (field names in
//! `out.rs` and docs/cli.md). Exit codes are in `exit.rs` (`tenure exit-codes`).
//!
//! Each command is a module of `cmd/`: it parses its own options, does its
//! work and returns a [`cmd::Done`], whose result renders itself as text or
//! as JSON ([`out::Render`]). This file only parses the command line,
//! dispatches and turns a [`Fail`] into its message and exit status.
//!
//! Lease credentials: `claim` writes the token only into a file it reserved
//! with `O_CREAT|O_EXCL` and mode 0600 before the claim committed; `renew`,
//! `release`, `fail` and `complete` read it from `--token-file FILE` or
//! `--token-file -` (stdin). No option takes a token value, and no output
//! (human, JSON, events, errors) ever contains one.

mod cmd;
mod exit;
mod fail;
mod out;

use clap::{Parser, Subcommand};
use cmd::{
    check, claim, clock, complete, demo, events, exec, exit_codes, facts, fail as fail_cmd, init,
    job, jobs, migrate, production, prune, release, renew, schedule, serve, stats, work, Ctx, Done,
};
use fail::R;
use std::path::PathBuf;
use std::process::ExitCode;

const AFTER_HELP: &str = "\
Durations: 30s, 5m, 1500us, 250ms, 1h, 2h30m (whole microseconds, 1us..=24h).
Delays (--delay, --max-hold, --retry-after, BASE,CAP of a back-off): the same syntax,
0s..=8784h (366 days; a hold limit and a back-off base must be positive).
Exit codes: 0 ok, 1 local failure, 2 usage, 3 check violations, 4 claim committed
but token not delivered, 5 token file not reserved (nothing claimed), 6 exec command
failed, 10+N tenure error number N. `tenure exit-codes` prints the full table.";

#[derive(Parser)]
#[command(name = "tenure", version, about = "Embedded job lease authority", after_help = AFTER_HELP)]
struct Cli {
    /// The store (SQLite file). Required by every command but `demo`.
    #[arg(long, env = "TENURE_DB", global = true)]
    db: Option<PathBuf>,
    /// Print JSON instead of human tables (stable field names).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create the store (or open an existing one) and show its schema version.
    Init,
    /// Migrate an existing store to this version's schema; a newer store is refused.
    Migrate,
    /// Create, list, cancel, export or delete productions.
    #[command(subcommand)]
    Production(production::Cmd),
    /// Recurring jobs: create, update, pause, resume, delete, list or run schedules.
    #[command(subcommand)]
    Schedule(schedule::Cmd),
    /// Submit, show or cancel jobs.
    #[command(subcommand)]
    Job(job::Cmd),
    /// List a production's jobs (by job ID, paged).
    Jobs(jobs::Args),
    /// Claim a job and write its lease token to a new private file.
    Claim(claim::Args),
    /// Extend a lease to now + TTL.
    Renew(renew::Args),
    /// Give the job back unfinished.
    Release(release::Args),
    /// Report failure (retryable unless --permanent; --retry-after names the delay).
    Fail(fail_cmd::Args),
    /// Complete the job, publishing facts.
    Complete(complete::Args),
    /// Reference executor: claim a job, run COMMAND on it, publish its output.
    #[command(after_help = exec::AFTER_HELP)]
    Exec(exec::Args),
    /// Worker loop: wait for jobs, run COMMAND on each (as exec does) in N slots.
    #[command(after_help = work::AFTER_HELP)]
    Work(work::Args),
    /// Show the transition log.
    Events(events::Args),
    /// Queue statistics per production: jobs by state, waiting and lease
    /// figures, flow over a recent window (--watch: again and again).
    Stats(stats::Args),
    /// Serve Prometheus /metrics, a read-only JSON API (/api/...) and a live
    /// dashboard page over HTTP (loopback unless --token-file is given).
    Serve(serve::Args),
    /// Show published facts (with provenance).
    Facts(facts::Args),
    /// Show the clock, the durable high-water mark, and whether operations are blocked.
    Clock,
    /// Offline invariant check; exits 3 on any violation.
    Check,
    /// Remove events and finished jobs older than the given ages.
    Prune(prune::Args),
    /// Rewrite a SQLite store created before schema 3 so that pruning gives
    /// space back (holds the writer lock while it runs).
    Vacuum,
    /// Run a self-contained demonstration with worker processes.
    Demo(demo::Args),
    /// Print the exit-code table.
    ExitCodes,
    /// (internal) the demo's built-in job command.
    #[command(name = "__demo-task", hide = true)]
    DemoTask,
}

impl Cmd {
    /// Whether the command reports as it goes and must outlive its reader.
    fn keeps_running(&self) -> bool {
        matches!(
            self,
            Cmd::Exec(_)
                | Cmd::Work(_)
                | Cmd::Serve(_)
                | Cmd::Demo(_)
                | Cmd::DemoTask
                | Cmd::Schedule(schedule::Cmd::Run { once: false })
        )
    }
}

fn run(ctx: &Ctx, c: Cmd) -> R<Done> {
    match c {
        Cmd::Init => init::run(ctx),
        Cmd::Migrate => migrate::run(ctx),
        Cmd::Production(c) => production::run(ctx, c),
        Cmd::Schedule(c) => schedule::run(ctx, c),
        Cmd::Job(c) => job::run(ctx, c),
        Cmd::Jobs(a) => jobs::run(ctx, a),
        Cmd::Claim(a) => claim::run(ctx, a),
        Cmd::Renew(a) => renew::run(ctx, a),
        Cmd::Release(a) => release::run(ctx, a),
        Cmd::Fail(a) => fail_cmd::run(ctx, a),
        Cmd::Complete(a) => complete::run(ctx, a),
        Cmd::Exec(a) => exec::run(ctx, a),
        Cmd::Work(a) => work::run(ctx, a),
        Cmd::Events(a) => events::run(ctx, a),
        Cmd::Stats(a) => stats::run(ctx, a),
        Cmd::Serve(a) => serve::run(ctx, a),
        Cmd::Facts(a) => facts::run(ctx, a),
        Cmd::Clock => clock::run(ctx),
        Cmd::Check => check::run(ctx),
        Cmd::Prune(a) => prune::run(ctx, a),
        Cmd::Vacuum => prune::vacuum(ctx),
        Cmd::Demo(a) => demo::run(ctx, a),
        Cmd::ExitCodes => exit_codes::run(),
        Cmd::DemoTask => demo::task(),
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE as u8 } else { 0 });
        }
    };
    if !cli.cmd.keeps_running() {
        // Listing commands end quietly when their reader goes away (`| head`).
        // SAFETY: resetting a signal disposition at start-up, single-threaded.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let ctx = Ctx {
        db: cli.db,
        json: cli.json,
    };
    let code = match run(&ctx, cli.cmd).and_then(|done| done.finish(ctx.json)) {
        Ok(code) => code,
        Err(f) => f.report(ctx.json),
    };
    ExitCode::from(code as u8)
}
