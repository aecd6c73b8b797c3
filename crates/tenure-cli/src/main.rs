//! `tenure`: operate a tenure job lease authority from a shell.
//!
//! Every command takes `--db PATH` (or `TENURE_DB`). Read commands print
//! human tables by default and stable JSON with `--json` (field names in
//! `out.rs` and the README). Exit codes are in `exit.rs` (`tenure exit-codes`).
//!
//! Lease credentials: `claim` writes the token only into a file it reserved
//! with `O_CREAT|O_EXCL` and mode 0600 before the claim committed; `renew`,
//! `release`, `fail` and `complete` read it from `--token-file FILE` or
//! `--token-file -` (stdin). No option takes a token value, and no output
//! (human, JSON, events, errors) ever contains one.

mod demo;
mod exit;
mod out;

use clap::{Args, Parser, Subcommand};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;
use tenure::executor::{self, ExecError, ExecSpec, Exit, Outcome};
use tenure::{
    Authority, Cancelled, Error, Fact, JobSpec, JobState, Lease, ListQuery, Options, Submitted,
    Ttl, MAX_TOKEN_LEN,
};
use zeroize::Zeroizing;

const AFTER_HELP: &str = "\
Durations: 30s, 5m, 1500us, 250ms, 1h, 2h30m (whole microseconds, 1us..=24h).
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
    /// Create, list or cancel productions.
    #[command(subcommand)]
    Production(ProductionCmd),
    /// Submit, show or cancel jobs.
    #[command(subcommand)]
    Job(JobCmd),
    /// List a production's jobs (by job ID, paged).
    Jobs {
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
    },
    /// Claim a job and write its lease token to a new private file.
    Claim {
        #[command(flatten)]
        p: Prod,
        /// Claim this job (default: the next claimable one).
        #[arg(long)]
        job: Option<String>,
        /// Who holds the lease (recorded, shown in listings).
        #[arg(long)]
        holder: String,
        /// Lease duration.
        #[arg(long)]
        ttl: String,
        /// New file for the token (created 0600 with O_EXCL; never overwritten). Required.
        #[arg(long)]
        token_out: Option<PathBuf>,
    },
    /// Extend a lease to now + TTL.
    Renew {
        #[command(flatten)]
        t: TokenFile,
        /// New lease duration from now.
        #[arg(long)]
        ttl: String,
    },
    /// Give the job back unfinished.
    Release {
        #[command(flatten)]
        t: TokenFile,
    },
    /// Report failure (retryable unless --permanent).
    Fail {
        #[command(flatten)]
        t: TokenFile,
        /// Fail the job for good (no retry).
        #[arg(long)]
        permanent: bool,
        /// Why (recorded, at most 1024 bytes).
        #[arg(long)]
        reason: String,
    },
    /// Complete the job, publishing facts.
    Complete {
        #[command(flatten)]
        t: TokenFile,
        /// A fact to publish, KEY=VALUE (repeatable).
        #[arg(long = "fact")]
        facts: Vec<String>,
    },
    /// Reference executor: claim a job, run COMMAND on it, publish its output.
    #[command(after_help = "\
The command gets the payload on stdin and TENURE_PRODUCTION, TENURE_JOB, TENURE_CLAIM_ID,
TENURE_ATTEMPT, TENURE_NONCE, TENURE_OUTPUT in its environment (never a token). Its stdout
goes to DIR/<job>.<nonce>.tmp, renamed to DIR/<job>.<nonce>.out on success. Exit 100 fails
the job permanently; any other failure is retryable.")]
    Exec {
        #[command(flatten)]
        p: Prod,
        /// Run this job (default: the next claimable one).
        #[arg(long)]
        job: Option<String>,
        /// Holder name (default: HOSTNAME:PID).
        #[arg(long)]
        holder: Option<String>,
        /// Lease duration; renewed every TTL/3 while the command runs.
        #[arg(long, default_value = "30s")]
        ttl: String,
        /// Output directory.
        #[arg(long, default_value = ".")]
        out_dir: PathBuf,
        /// Keep claiming until nothing is claimable.
        #[arg(long = "loop")]
        repeat: bool,
        /// The command and its arguments (after `--`).
        #[arg(last = true, required = true)]
        command: Vec<OsString>,
    },
    /// Show the transition log.
    Events {
        /// Only this production.
        #[arg(short, long)]
        production: Option<String>,
        /// Only events after this sequence number.
        #[arg(long, default_value_t = 0)]
        after: u64,
        /// Page size (at most 10000).
        #[arg(long, default_value_t = 1000)]
        limit: usize,
        /// Keep printing new events until interrupted.
        #[arg(long)]
        follow: bool,
    },
    /// Show published facts (with provenance).
    Facts {
        #[command(flatten)]
        p: Prod,
        /// Only this job.
        #[arg(long)]
        job: Option<String>,
    },
    /// Show the clock, the durable high-water mark, and whether operations are blocked.
    Clock,
    /// Offline invariant check; exits 3 on any violation.
    Check,
    /// Run a self-contained demonstration with worker processes.
    Demo(demo::DemoArgs),
    /// Print the exit-code table.
    ExitCodes,
    /// (internal) the demo's built-in job command.
    #[command(name = "__demo-task", hide = true)]
    DemoTask,
}

#[derive(Subcommand)]
enum ProductionCmd {
    /// Create a production (idempotent).
    Create { name: String },
    /// List productions.
    List,
    /// Cancel every unfinished job of a production and refuse new ones.
    Cancel { name: String },
}

#[derive(Subcommand)]
enum JobCmd {
    /// Submit a job (payload from --payload-file or stdin), or many with --jsonl.
    Submit {
        #[command(flatten)]
        p: Prod,
        /// Job ID.
        #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl")]
        job: Option<String>,
        /// Read the payload from FILE (default: stdin unless it is a terminal).
        #[arg(long)]
        payload_file: Option<PathBuf>,
        /// Claims allowed in total (1..=1000).
        #[arg(long, default_value_t = tenure::DEFAULT_MAX_ATTEMPTS)]
        max_attempts: u32,
        /// Higher runs first.
        #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
        priority: i32,
        /// Submit one job per line, all in one edit: {"job":ID,"payload":TEXT,"priority":N,"max_attempts":N}.
        #[arg(long, conflicts_with_all = ["payload_file"])]
        jsonl: Option<PathBuf>,
    },
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
}

#[derive(Args)]
struct Prod {
    /// Production ID.
    #[arg(short, long)]
    production: String,
}

#[derive(Args)]
struct TokenFile {
    /// File holding the lease token (from `claim --token-out`), or `-` for stdin.
    #[arg(long)]
    token_file: PathBuf,
}

/// Why a command did not succeed.
pub enum Fail {
    /// A tenure error: exit 10 + its code.
    Tenure(Error),
    /// Exit with this status and message.
    Exit(i32, String),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Tenure(e)
    }
}

impl From<ExecError> for Fail {
    fn from(e: ExecError) -> Fail {
        match e {
            ExecError::Tenure(e) => Fail::Tenure(e),
            e => Fail::Exit(exit::FAILURE, e.to_string()),
        }
    }
}

type R<T = i32> = std::result::Result<T, Fail>;

fn local(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Fail {
    let what = what.to_string();
    move |e| Fail::Exit(exit::FAILURE, format!("{what}: {e}"))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit::USAGE as u8 } else { 0 });
        }
    };
    if !matches!(cli.cmd, Cmd::Exec { .. } | Cmd::Demo(_) | Cmd::DemoTask) {
        // Listing commands end quietly when their reader goes away (`| head`).
        // SAFETY: resetting a signal disposition at start-up, single-threaded.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let json = cli.json;
    let code = match run(cli) {
        Ok(c) => c,
        Err(Fail::Tenure(e)) => {
            let code = exit::for_code(e.code());
            if json {
                eprintln!(
                    "{}",
                    json!({"error": {"code": e.code().name(), "number": e.code().as_u32(), "exit": code, "message": e.to_string()}})
                );
            } else {
                eprintln!("tenure: {e} [{}]", e.code().name());
            }
            code
        }
        Err(Fail::Exit(code, msg)) => {
            if !msg.is_empty() {
                if json {
                    eprintln!("{}", json!({"error": {"exit": code, "message": msg}}));
                } else {
                    eprintln!("tenure: {msg}");
                }
            }
            code
        }
    };
    ExitCode::from(code as u8)
}

fn db(cli_db: &Option<PathBuf>) -> R<PathBuf> {
    cli_db.clone().ok_or_else(|| {
        Fail::Exit(
            exit::USAGE,
            "no store given: pass --db PATH or set TENURE_DB".into(),
        )
    })
}

fn open(cli_db: &Option<PathBuf>) -> R<Authority> {
    Ok(Authority::open(db(cli_db)?, &Options::new())?)
}

fn ttl(text: &str) -> R<Ttl> {
    Ok(text.parse::<Ttl>()?)
}

/// Read a token from a file or stdin, bounded, into zeroizing memory.
fn read_token(path: &Path) -> R<Zeroizing<String>> {
    let mut buf = Zeroizing::new(Vec::new());
    let limit = MAX_TOKEN_LEN as u64 + 1;
    if path.as_os_str() == "-" {
        std::io::stdin()
            .take(limit)
            .read_to_end(&mut buf)
            .map_err(local("reading the token from stdin"))?;
    } else {
        File::open(path)
            .and_then(|f| f.take(limit).read_to_end(&mut buf))
            .map_err(local(format!("reading token file {}", path.display())))?;
    }
    let text = std::str::from_utf8(&buf)
        .map_err(|_| Error::TokenMalformed("the token file is not UTF-8 text".into()))?;
    Ok(Zeroizing::new(text.to_owned()))
}

fn lease(cli_db: &Option<PathBuf>, t: &TokenFile) -> R<Lease> {
    let token = read_token(&t.token_file)?;
    let auth = open(cli_db)?;
    Ok(auth.import_lease(&token)?)
}

fn lease_json(l: &Lease) -> Value {
    json!({
        "production": l.production(),
        "job": l.job(),
        "claim_id": l.claim_id().to_string(),
        "holder": l.holder(),
        "attempt": l.attempt(),
        "expires_us": l.expires_us(),
    })
}

fn lease_text(l: &Lease) -> String {
    format!(
        "production {}\njob        {}\nclaim_id   {}\nholder     {}\nattempt    {}\nexpires    {} ({} us)",
        l.production(),
        l.job(),
        l.claim_id(),
        l.holder(),
        l.attempt(),
        out::time(l.expires_us()),
        l.expires_us()
    )
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

fn run(cli: Cli) -> R {
    let json = cli.json;
    let d = &cli.db;
    match cli.cmd {
        Cmd::Init => {
            let auth = open(d)?;
            let created = auth.migrated_from() == 0;
            if json {
                out::print_json(&json!({
                    "path": auth.path().display().to_string(),
                    "schema_version": tenure::SCHEMA_VERSION,
                    "created": created,
                    "migrated_from": auth.migrated_from(),
                }));
            } else if created {
                println!(
                    "created store {} (schema version {})",
                    auth.path().display(),
                    tenure::SCHEMA_VERSION
                );
            } else {
                println!(
                    "store {} ready (schema version {})",
                    auth.path().display(),
                    tenure::SCHEMA_VERSION
                );
            }
        }
        Cmd::Migrate => {
            let path = db(d)?;
            if !path.exists() {
                return Err(Error::NotFound(format!(
                    "no store at {} (use `tenure init` to create one)",
                    path.display()
                ))
                .into());
            }
            let auth = Authority::open(&path, &Options::new())?;
            let from = auth.migrated_from();
            let to = tenure::SCHEMA_VERSION;
            if json {
                out::print_json(&json!({
                    "path": path.display().to_string(),
                    "from": from,
                    "to": to,
                    "migrated": from != to,
                }));
            } else if from == to {
                println!("schema version {to}: already current");
            } else {
                println!("schema version {from} -> {to}: migrated");
            }
        }
        Cmd::Production(c) => production(d, json, c)?,
        Cmd::Job(c) => return job(d, json, c),
        Cmd::Jobs {
            p,
            state,
            after,
            limit,
        } => {
            let state = state.map(|s| s.parse::<JobState>()).transpose()?;
            let auth = open(d)?;
            let q = ListQuery {
                state,
                after,
                limit,
            };
            let jobs = auth.jobs(&p.production, &q)?;
            let page = if limit == 0 {
                tenure::DEFAULT_PAGE
            } else {
                limit
            };
            let next = (jobs.len() >= page.min(tenure::MAX_PAGE))
                .then(|| jobs.last().map(|j| j.job.clone()))
                .flatten();
            if json {
                out::print_json(&json!({
                    "jobs": jobs.iter().map(out::job).collect::<Vec<_>>(),
                    "next_after": next,
                }));
            } else {
                let rows: Vec<Vec<String>> = jobs
                    .iter()
                    .map(|j| {
                        vec![
                            j.job.clone(),
                            j.state.to_string(),
                            format!("{}/{}", j.attempts, j.max_attempts),
                            j.priority.to_string(),
                            j.holder.clone().unwrap_or_else(|| "-".into()),
                            out::opt_time(j.expires_us),
                        ]
                    })
                    .collect();
                out::table(
                    &["JOB", "STATE", "ATTEMPTS", "PRIORITY", "HOLDER", "EXPIRES"],
                    &rows,
                );
                if let Some(n) = next {
                    println!("(more: --after {n})");
                }
            }
        }
        Cmd::Claim {
            p,
            job,
            holder,
            ttl: t,
            token_out,
        } => {
            return claim(
                d,
                json,
                &p.production,
                job.as_deref(),
                &holder,
                &t,
                token_out,
            )
        }
        Cmd::Renew { t, ttl: text } => {
            let ttl = ttl(&text)?;
            let l = lease(d, &t)?;
            l.renew(ttl)?;
            if json {
                out::print_json(&lease_json(&l));
            } else {
                println!(
                    "renewed {}/{} until {}",
                    l.production(),
                    l.job(),
                    out::time(l.expires_us())
                );
            }
        }
        Cmd::Release { t } => {
            let l = lease(d, &t)?;
            let st = l.release()?;
            ended(json, &l, "released", st);
        }
        Cmd::Fail {
            t,
            permanent,
            reason,
        } => {
            let l = lease(d, &t)?;
            let st = l.fail(&reason, permanent)?;
            ended(json, &l, "failed", st);
        }
        Cmd::Complete { t, facts } => {
            let mut fs = Vec::new();
            for f in &facts {
                let (k, v) = f.split_once('=').ok_or_else(|| {
                    Fail::Exit(exit::USAGE, format!("--fact {f:?}: expected KEY=VALUE"))
                })?;
                fs.push(Fact::new(k, v));
            }
            let l = lease(d, &t)?;
            l.complete(&fs)?;
            ended(json, &l, "completed", JobState::Completed);
        }
        Cmd::Exec {
            p,
            job,
            holder,
            ttl: t,
            out_dir,
            repeat,
            command,
        } => {
            if repeat && job.is_some() {
                return Err(Fail::Exit(
                    exit::USAGE,
                    "--loop claims the next jobs; it cannot be combined with --job".into(),
                ));
            }
            let spec = ExecSpec {
                production: p.production,
                job,
                holder: holder.unwrap_or_else(|| format!("{}:{}", hostname(), std::process::id())),
                ttl: ttl(&t)?,
                output_dir: out_dir,
                program: command[0].clone(),
                args: command[1..].to_vec(),
            };
            let auth = open(d)?;
            if repeat {
                executor::run_loop(&auth, &spec, |o| report(json, o))?;
                return Ok(exit::OK);
            }
            let o = executor::run_once(&auth, &spec)?;
            report(json, &o);
            return Ok(match &o {
                Outcome::Completed { .. } => exit::OK,
                Outcome::Failed { .. } => exit::COMMAND_FAILED,
                Outcome::Rejected { error, .. } | Outcome::LeaseLost { error, .. } => {
                    exit::for_code(error.code())
                }
            });
        }
        Cmd::Events {
            production,
            after,
            limit,
            follow,
        } => {
            let auth = open(d)?;
            let mut after = after;
            loop {
                let evs = match &production {
                    Some(p) => auth.production_events(p, after, limit)?,
                    None => auth.events(after, limit)?,
                };
                let mut stdout = std::io::stdout().lock();
                for e in &evs {
                    after = e.seq;
                    let line = if json {
                        out::event(e).to_string()
                    } else {
                        format!(
                            "{:>6} {} {:<20} {}/{} {} {}{}{}",
                            e.seq,
                            out::time(e.at_us),
                            e.kind.as_str(),
                            e.production,
                            e.job.as_deref().unwrap_or("-"),
                            e.state.map(|s| s.as_str()).unwrap_or("-"),
                            e.holder
                                .as_deref()
                                .map(|h| format!("holder={h} "))
                                .unwrap_or_default(),
                            e.claim_id
                                .map(|c| format!("claim={c} "))
                                .unwrap_or_default(),
                            e.detail
                        )
                    };
                    if writeln!(stdout, "{}", line.trim_end()).is_err() {
                        return Ok(exit::OK);
                    }
                }
                if stdout.flush().is_err() {
                    return Ok(exit::OK);
                }
                drop(stdout);
                if !follow {
                    if evs.len() == limit.clamp(1, tenure::MAX_PAGE) {
                        continue; // more pages
                    }
                    break;
                }
                if evs.is_empty() {
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
        Cmd::Facts { p, job } => {
            let auth = open(d)?;
            let facts = match &job {
                Some(j) => auth.facts(&p.production, j)?,
                None => auth.production_facts(&p.production)?,
            };
            if json {
                out::print_json(&json!({
                    "facts": facts.iter().map(out::fact).collect::<Vec<_>>()
                }));
            } else {
                let rows: Vec<Vec<String>> = facts
                    .iter()
                    .map(|f| vec![f.job.clone(), f.key.clone(), f.value.clone()])
                    .collect();
                out::table(&["JOB", "KEY", "VALUE"], &rows);
            }
        }
        Cmd::Clock => {
            let auth = open(d)?;
            let c = auth.clock()?;
            if json {
                out::print_json(&out::clock(&c));
            } else {
                println!("now        {} ({} us)", out::time(c.now_us), c.now_us);
                println!("high-water {} ({} us)", out::time(c.mark_us), c.mark_us);
                println!(
                    "blocked    {}",
                    if c.blocked {
                        "yes: the clock reads below the high-water mark; guarded operations are refused"
                    } else {
                        "no"
                    }
                );
            }
        }
        Cmd::Check => {
            let auth = open(d)?;
            let r = auth.check()?;
            if json {
                out::print_json(&out::check(&r));
            } else {
                println!(
                    "schema version {}, {} jobs, {} events: {}",
                    r.schema_version,
                    r.jobs,
                    r.events,
                    if r.ok() {
                        "no violations".to_string()
                    } else {
                        format!("{} violation(s)", r.violations.len())
                    }
                );
                for v in &r.violations {
                    println!("  violation: {v}");
                }
            }
            if !r.ok() {
                return Ok(exit::VIOLATIONS);
            }
        }
        Cmd::Demo(args) => return demo::run(d.clone(), json, args),
        Cmd::ExitCodes => {
            let mut rows: Vec<(i32, String, String)> = exit::FIXED
                .iter()
                .map(|(c, n, m)| (*c, n.to_string(), m.to_string()))
                .collect();
            for c in tenure::ErrorCode::ALL {
                rows.push((
                    exit::for_code(c),
                    c.name().to_string(),
                    format!("tenure error {} ({})", c.as_u32(), c.name()),
                ));
            }
            if json {
                out::print_json(&json!({
                    "exit_codes": rows.iter().map(|(c, n, m)| json!({"exit": c, "name": n, "meaning": m})).collect::<Vec<_>>()
                }));
            } else {
                let rows: Vec<Vec<String>> = rows
                    .into_iter()
                    .map(|(c, n, m)| vec![c.to_string(), n, m])
                    .collect();
                out::table(&["EXIT", "NAME", "MEANING"], &rows);
            }
        }
        Cmd::DemoTask => return demo::task(),
    }
    Ok(exit::OK)
}

fn ended(json: bool, l: &Lease, what: &str, st: JobState) {
    if json {
        out::print_json(&json!({
            "production": l.production(),
            "job": l.job(),
            "claim_id": l.claim_id().to_string(),
            "result": what,
            "state": st.as_str(),
        }));
    } else {
        println!("{what} {}/{}: job is {st}", l.production(), l.job());
    }
}

fn production(d: &Option<PathBuf>, json: bool, c: ProductionCmd) -> R<()> {
    let auth = open(d)?;
    match c {
        ProductionCmd::Create { name } => {
            let created = auth.create_production(&name)?;
            if json {
                out::print_json(&json!({"production": name, "created": created}));
            } else if created {
                println!("created production {name}");
            } else {
                println!("production {name} already exists");
            }
        }
        ProductionCmd::List => {
            let ps = auth.productions()?;
            if json {
                out::print_json(&json!({
                    "productions": ps.iter().map(out::production).collect::<Vec<_>>()
                }));
            } else {
                let rows: Vec<Vec<String>> = ps
                    .iter()
                    .map(|p| {
                        vec![
                            p.name.clone(),
                            out::time(p.created_us),
                            out::opt_time(p.cancelled_us),
                        ]
                    })
                    .collect();
                out::table(&["PRODUCTION", "CREATED", "CANCELLED"], &rows);
            }
        }
        ProductionCmd::Cancel { name } => {
            let n = auth.cancel_production(&name)?;
            if json {
                out::print_json(&json!({"production": name, "cancelled_jobs": n}));
            } else {
                println!("cancelled production {name} ({n} unfinished job(s) cancelled)");
            }
        }
    }
    Ok(())
}

fn read_payload(file: &Option<PathBuf>) -> R<Vec<u8>> {
    let mut buf = Vec::new();
    match file {
        Some(p) if p.as_os_str() != "-" => {
            File::open(p)
                .and_then(|mut f| f.read_to_end(&mut buf))
                .map_err(local(format!("reading payload file {}", p.display())))?;
        }
        Some(_) => {
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(local("reading the payload from stdin"))?;
        }
        None => {
            let stdin = std::io::stdin();
            if !stdin.is_terminal() {
                stdin
                    .lock()
                    .read_to_end(&mut buf)
                    .map_err(local("reading the payload from stdin"))?;
            }
        }
    }
    Ok(buf)
}

fn submitted(s: Submitted) -> &'static str {
    match s {
        Submitted::Created => "created",
        Submitted::Existing => "existing",
    }
}

fn parse_jsonl(path: &Path) -> R<Vec<JobSpec>> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(local("reading jobs from stdin"))?;
    } else {
        File::open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(local(format!("reading {}", path.display())))?;
    }
    let mut specs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |m: String| Error::InvalidArgument(format!("{}:{n}: {m}", path.display()));
        let v: Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("expected a JSON object".into()))?;
        for k in obj.keys() {
            if !["job", "payload", "priority", "max_attempts"].contains(&k.as_str()) {
                return Err(bad(format!(
                    "unknown field {k:?} (job, payload, priority, max_attempts)"
                ))
                .into());
            }
        }
        let job = obj
            .get("job")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("\"job\" must be a string".into()))?;
        let payload = match obj.get("payload") {
            None => String::new(),
            Some(p) => p
                .as_str()
                .ok_or_else(|| bad("\"payload\" must be a string".into()))?
                .to_owned(),
        };
        let mut spec = JobSpec::new(job, payload.into_bytes());
        if let Some(p) = obj.get("priority") {
            let p = p
                .as_i64()
                .and_then(|p| i32::try_from(p).ok())
                .ok_or_else(|| bad("\"priority\" must be a 32-bit integer".into()))?;
            spec = spec.priority(p);
        }
        if let Some(m) = obj.get("max_attempts") {
            let m = m
                .as_u64()
                .and_then(|m| u32::try_from(m).ok())
                .ok_or_else(|| bad("\"max_attempts\" must be a positive integer".into()))?;
            spec = spec.max_attempts(m);
        }
        specs.push(spec);
    }
    Ok(specs)
}

fn job(d: &Option<PathBuf>, json: bool, c: JobCmd) -> R {
    match c {
        JobCmd::Submit {
            p,
            job,
            payload_file,
            max_attempts,
            priority,
            jsonl,
        } => {
            if let Some(path) = jsonl {
                let specs = parse_jsonl(&path)?;
                let auth = open(d)?;
                let res = auth.submit_many(&p.production, &specs)?;
                if json {
                    out::print_json(&json!({
                        "production": p.production,
                        "submitted": specs.iter().zip(&res).map(|(s, r)| json!({"job": s.job, "result": submitted(*r)})).collect::<Vec<_>>(),
                    }));
                } else {
                    let created = res.iter().filter(|r| **r == Submitted::Created).count();
                    println!(
                        "submitted {} job(s) to {}: {created} created, {} already existed",
                        res.len(),
                        p.production,
                        res.len() - created
                    );
                }
                return Ok(exit::OK);
            }
            let job = job.unwrap_or_default();
            let payload = read_payload(&payload_file)?;
            let spec = JobSpec::new(job.clone(), payload)
                .priority(priority)
                .max_attempts(max_attempts);
            let auth = open(d)?;
            let r = auth.submit(&p.production, &spec)?;
            if json {
                out::print_json(
                    &json!({"production": p.production, "job": job, "result": submitted(r)}),
                );
            } else {
                println!("{} {}/{job}", submitted(r), p.production);
            }
        }
        JobCmd::Show { p, job, payload } => {
            let auth = open(d)?;
            if payload {
                let bytes = auth.payload(&p.production, &job)?;
                let mut o = std::io::stdout().lock();
                o.write_all(&bytes)
                    .and_then(|_| o.flush())
                    .map_err(local("writing the payload"))?;
                return Ok(exit::OK);
            }
            let v = auth.job(&p.production, &job)?;
            if json {
                out::print_json(&out::job(&v));
            } else {
                let rows = [
                    ("production", v.production.clone()),
                    ("job", v.job.clone()),
                    ("state", v.state.to_string()),
                    ("attempts", format!("{}/{}", v.attempts, v.max_attempts)),
                    ("priority", v.priority.to_string()),
                    ("holder", v.holder.clone().unwrap_or_else(|| "-".into())),
                    (
                        "claim_id",
                        v.claim_id
                            .map(|c| c.to_string())
                            .unwrap_or_else(|| "-".into()),
                    ),
                    ("expires", out::opt_time(v.expires_us)),
                    ("created", out::time(v.created_us)),
                    ("updated", out::time(v.updated_us)),
                    ("payload", format!("{} bytes", v.payload_len)),
                    (
                        "last_error",
                        v.last_error.clone().unwrap_or_else(|| "-".into()),
                    ),
                ];
                for (k, val) in rows {
                    println!("{k:<11}{val}");
                }
            }
        }
        JobCmd::Cancel { p, job } => {
            let auth = open(d)?;
            let r = auth.cancel(&p.production, &job)?;
            let r = match r {
                Cancelled::Cancelled => "cancelled",
                Cancelled::AlreadyCancelled => "already_cancelled",
            };
            if json {
                out::print_json(&json!({"production": p.production, "job": job, "result": r}));
            } else {
                println!("{r} {}/{job}", p.production);
            }
        }
    }
    Ok(exit::OK)
}

/// `claim`: reserve the token file, claim, then deliver the token.
fn claim(
    d: &Option<PathBuf>,
    json: bool,
    production: &str,
    job: Option<&str>,
    holder: &str,
    ttl_text: &str,
    token_out: Option<PathBuf>,
) -> R {
    let Some(path) = token_out else {
        return Err(Fail::Exit(
            exit::USAGE,
            "claim needs --token-out FILE: a lease token is never printed".into(),
        ));
    };
    let ttl = ttl(ttl_text)?;
    let auth = open(d)?;
    // Reserve the file before the claim commits: O_CREAT|O_EXCL, 0600.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| {
            Fail::Exit(
                exit::TOKEN_FILE_NOT_RESERVED,
                format!(
                    "cannot reserve token file {}: {e}; nothing was claimed",
                    path.display()
                ),
            )
        })?;
    let claimed = match job {
        Some(j) => auth.claim(production, j, holder, ttl),
        None => auth.claim_next(production, holder, ttl),
    };
    let lease = match claimed {
        Ok(l) => l,
        Err(e) => {
            drop(file);
            let _ = std::fs::remove_file(&path);
            return Err(e.into());
        }
    };
    // The claim is committed from here on: deliver, or report the receipt.
    let delivered = lease
        .export_token()
        .map_err(|e| e.to_string())
        .and_then(|t| {
            file.write_all(t.expose().as_bytes())
                .and_then(|_| file.write_all(b"\n"))
                .and_then(|_| file.sync_all())
                .map_err(|e| e.to_string())
        });
    let mut receipt = lease_json(&lease);
    receipt["token_file"] = json!(path.display().to_string());
    if let Err(e) = delivered {
        drop(file);
        let removed = std::fs::remove_file(&path).is_ok();
        receipt["token_written"] = json!(false);
        if json {
            eprintln!("{receipt}");
        } else {
            eprintln!(
                "tenure: the claim COMMITTED but its token could not be written to {}: {e}\n\
                 {}: the incomplete file was {}.\n\
                 The claim stays until it expires or a coordinator cancels the job.\n{}",
                path.display(),
                path.display(),
                if removed { "removed" } else { "NOT removed" },
                lease_text(&lease)
            );
        }
        return Err(Fail::Exit(exit::TOKEN_NOT_DELIVERED, String::new()));
    }
    if json {
        receipt["token_written"] = json!(true);
        out::print_json(&receipt);
    } else {
        println!(
            "claimed {}/{}; token written to {} (mode 0600)\n{}",
            lease.production(),
            lease.job(),
            path.display(),
            lease_text(&lease)
        );
    }
    Ok(exit::OK)
}

/// One executor outcome: a line of text or one JSON object per line.
fn report(json: bool, o: &Outcome) {
    let a = o.attempt();
    let mut v = json!({
        "production": a.production,
        "job": a.job,
        "claim_id": a.claim_id.to_string(),
        "attempt": a.attempt,
        "nonce": a.nonce.to_string(),
    });
    let exit_fields = |v: &mut Value, e: &Exit| match e {
        Exit::Code(c) => {
            v["exit_status"] = json!(c);
            v["signal"] = Value::Null;
        }
        Exit::Signal(s) => {
            v["exit_status"] = Value::Null;
            v["signal"] = json!(s);
        }
    };
    let text = match o {
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
            format!(
                "completed {}/{} (attempt {}): {} ({size} bytes, sha256 {sha256})",
                a.production,
                a.job,
                a.attempt,
                output.display()
            )
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
            format!(
                "failed {}/{} (attempt {}): command {}{}; job is {state}",
                a.production,
                a.job,
                a.attempt,
                match exit {
                    Exit::Code(c) => format!("exited with status {c}"),
                    Exit::Signal(s) => format!("killed by signal {s}"),
                },
                if *permanent { " (permanent)" } else { "" }
            )
        }
        Outcome::Rejected { exit, error, .. } => {
            v["outcome"] = json!("rejected");
            v["error"] = json!({"code": error.code().name(), "message": error.to_string()});
            exit_fields(&mut v, exit);
            format!(
                "rejected {}/{} (attempt {}): {error}; own output removed",
                a.production, a.job, a.attempt
            )
        }
        Outcome::LeaseLost { error, .. } => {
            v["outcome"] = json!("lease_lost");
            v["error"] = json!({"code": error.code().name(), "message": error.to_string()});
            format!(
                "lease lost on {}/{} (attempt {}): {error}; command killed, own output removed",
                a.production, a.job, a.attempt
            )
        }
    };
    let line = if json { v.to_string() } else { text };
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{line}");
    let _ = o.flush();
}
