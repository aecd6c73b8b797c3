//! The reference executor: claim a job, run a command on it, publish its output.
//!
//! This is the library behind `tenure exec` (no argument parsing here). One
//! [`run_once`] call:
//!
//! 1. claims the named job or the next claimable one of the production
//!    ([`run_parallel`] claims up to N at once with
//!    [`Authority::claim_next_many`] and runs steps 2 to 6 for each on a
//!    thread of its own);
//! 2. mints a fresh execution nonce ([`Uuid::new_v4`]; not a credential —
//!    the store accepts each nonce once, reuse is [`Error::Conflict`]);
//! 3. creates `DIR/<job>.<nonce>.tmp` with `O_CREAT|O_EXCL` and runs the
//!    command (program and arguments exactly as given, no shell) with
//!    * the job's payload on stdin,
//!    * stdout written to the temporary file, stderr inherited,
//!    * environment variables `TENURE_PRODUCTION`, `TENURE_JOB`,
//!      `TENURE_CLAIM_ID`, `TENURE_ATTEMPT`, `TENURE_NONCE` and
//!      `TENURE_OUTPUT` (the temporary file stdout goes to). The lease
//!      secret and token are never passed: not in the environment, not in
//!      arguments (the executor never exports a token at all);
//! 4. renews the lease from a heartbeat thread every TTL/3. If a renewal is
//!    refused because the lease is gone (stale, expired, cancelled, closed,
//!    job terminal or removed) the heartbeat stops renewing and the command is
//!    killed (SIGKILL); transient refusals (busy, clock rollback, store I/O)
//!    are retried at the next beat — if they last past the expiry the next
//!    renewal reports the lease expired;
//! 5. on exit status 0: fsyncs the temporary file, renames it to
//!    `DIR/<job>.<nonce>.out`, fsyncs the directory, hashes the file (SHA-256)
//!    and completes with [`Lease::complete_execution`], which records the
//!    final path, digest, size, nonce and exit status as `tenure.exec.*`
//!    provenance facts in the completing transaction;
//! 6. on any other exit: removes its temporary file and fails the lease —
//!    permanently if the exit code is [`PERMANENT_EXIT_CODE`] (100), else
//!    retryable (a command killed by a signal is retryable).
//!
//! If the completion is rejected (stale, expired, cancelled, …) the executor
//! removes only its own files: both names contain its nonce, so another
//! worker's output for the same job can never be touched or overwritten.
//!
//! Filesystem work and database completion are separate steps: a crash
//! between them may leave an unregistered `.tmp` or `.out` file, never partial
//! facts (facts are published in the one completing transaction).
//!
//! [`Runner`] runs the same command the same way (steps 3 to 6, one
//! implementation) as the handler of a [`worker::Worker`] (`tenure work`):
//! the worker claims, keeps the lease alive and settles it with the
//! runner's outcome.
//!
//! Decisions where docs/design.md is silent:
//! * The exit status is authoritative only when the command exited by itself:
//!   when it did, completion is always attempted and the store decides, even
//!   if the heartbeat meanwhile saw the lease fail (the store then rejects it
//!   and the outcome is [`Outcome::Rejected`]). A command killed because the
//!   lease was lost gives [`Outcome::LeaseLost`].
//! * A command that cannot be started (missing program) fails the lease as
//!   retryable and returns [`ExecError::Io`]; [`run_loop`] stops there.
//! * [`Error::Busy`] from the completion is retried twice (each attempt
//!   already waited the store's busy timeout).

use crate::error::{Error, ErrorCode};
use crate::model::{Execution, JobState};
use crate::worker::{self, JobContext, JobResult, Report};
use crate::{Authority, Lease, Ttl};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// A command exiting with this code fails its lease permanently (no retry).
/// Every other non-zero exit, and death by a signal, is retryable.
pub const PERMANENT_EXIT_CODE: i32 = 100;

/// How often the main thread looks at the child and the heartbeat's verdict.
const POLL: Duration = Duration::from_millis(10);

/// What to run, for whom, and where its output goes.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    /// The production to claim from.
    pub production: String,
    /// A named job, or `None` for the next claimable one.
    pub job: Option<String>,
    /// The holder recorded with the claim.
    pub holder: String,
    /// Lease duration; the heartbeat renews every `ttl / 3`.
    pub ttl: Ttl,
    /// Directory for `<job>.<nonce>.tmp` / `.out` (created if missing).
    pub output_dir: PathBuf,
    /// The program to run (looked up in `PATH` like [`Command::new`]).
    pub program: OsString,
    /// Its arguments, passed as given.
    pub args: Vec<OsString>,
}

/// Attribution of one executed attempt (no secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Production ID.
    pub production: String,
    /// Job ID.
    pub job: String,
    /// The claim's public ID.
    pub claim_id: Uuid,
    /// Attempt number (1-based).
    pub attempt: u32,
    /// The execution nonce minted for this attempt.
    pub nonce: Uuid,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal.
    Signal(i32),
}

impl Exit {
    fn from_status(s: ExitStatus) -> Exit {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        }
    }
}

/// The result of one executed attempt.
#[derive(Debug)]
pub enum Outcome {
    /// The job completed; facts and provenance were published.
    Completed {
        /// Who ran it.
        attempt: Attempt,
        /// The final output file (absolute).
        output: PathBuf,
        /// Lower-case hex SHA-256 of the output.
        sha256: String,
        /// Output size in bytes.
        size: u64,
    },
    /// The command failed; its lease was failed and its files removed.
    Failed {
        /// Who ran it.
        attempt: Attempt,
        /// How the command ended.
        exit: Exit,
        /// Whether the failure was reported as permanent.
        permanent: bool,
        /// The job's state after the failure (`requested` or `failed`).
        state: JobState,
    },
    /// The store refused the completion (or the failure report): the lease
    /// was no longer this attempt's. Only this attempt's files were removed.
    Rejected {
        /// Who ran it.
        attempt: Attempt,
        /// How the command ended.
        exit: Exit,
        /// The store's refusal.
        error: Error,
    },
    /// The heartbeat found the lease gone while the command ran; the command
    /// was killed and this attempt's files removed.
    LeaseLost {
        /// Who ran it.
        attempt: Attempt,
        /// The refused renewal.
        error: Error,
    },
    /// Only under a [`Runner`]: the worker released the lease unfinished
    /// (its grace period after a stop ended, or the payload could not be
    /// read); a command still running was killed and this attempt's files
    /// removed. The nonce is nil when no command was started.
    Released {
        /// Who ran it.
        attempt: Attempt,
        /// The job's state after the release (`requested` or `failed`).
        state: JobState,
    },
}

impl Outcome {
    /// The attempt this outcome is about.
    pub fn attempt(&self) -> &Attempt {
        match self {
            Outcome::Completed { attempt, .. }
            | Outcome::Failed { attempt, .. }
            | Outcome::Rejected { attempt, .. }
            | Outcome::LeaseLost { attempt, .. }
            | Outcome::Released { attempt, .. } => attempt,
        }
    }
}

/// Errors that stop the executor before an outcome exists.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The authority refused (e.g. [`Error::NoJobAvailable`] from the claim).
    #[error(transparent)]
    Tenure(#[from] Error),
    /// Local I/O failed (output directory, temporary file, starting the
    /// command). If a lease was held it was failed as retryable first.
    #[error("{what}: {source}")]
    Io {
        /// What the executor was doing.
        what: String,
        /// The OS error.
        source: io::Error,
    },
}

fn io_err(what: impl Into<String>) -> impl FnOnce(io::Error) -> ExecError {
    let what = what.into();
    move |source| ExecError::Io { what, source }
}

/// Renewal refusals that mean the lease is gone for good.
fn lease_gone(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::StaleLease
            | ErrorCode::LeaseExpired
            | ErrorCode::LeaseClosed
            | ErrorCode::Cancelled
            | ErrorCode::JobTerminal
            | ErrorCode::NotFound
    )
}

/// Create (if missing) and resolve the output directory.
fn prepare_dir(dir: &Path) -> std::result::Result<PathBuf, ExecError> {
    fs::create_dir_all(dir).map_err(io_err(format!(
        "creating output directory {}",
        dir.display()
    )))?;
    fs::canonicalize(dir).map_err(io_err(format!(
        "resolving output directory {}",
        dir.display()
    )))
}

impl Attempt {
    /// A lease's attribution with a fresh nonce.
    fn of(lease: &Lease) -> Attempt {
        Attempt {
            production: lease.production().to_owned(),
            job: lease.job().to_owned(),
            claim_id: lease.claim_id(),
            attempt: lease.attempt(),
            nonce: Uuid::new_v4(),
        }
    }

    /// `DIR/<job>.<nonce>.tmp` and `DIR/<job>.<nonce>.out`.
    fn files(&self, dir: &Path) -> (PathBuf, PathBuf) {
        (
            dir.join(format!("{}.{}.tmp", self.job, self.nonce)),
            dir.join(format!("{}.{}.out", self.job, self.nonce)),
        )
    }
}

/// The command to run and where its output goes.
struct Cmd<'a> {
    dir: &'a Path,
    program: &'a OsString,
    args: &'a [OsString],
}

/// How one attempt's command ran, before its lease is settled.
enum Ran {
    /// Exit 0: the output is published (fsynced, renamed to `.out`).
    Published {
        exec: Execution,
        output: PathBuf,
        sha256: String,
        size: u64,
    },
    /// Another exit or a signal: this attempt's files are removed.
    Failed {
        exit: Exit,
        permanent: bool,
        reason: String,
    },
    /// The lease was found gone while the command ran: it was killed and
    /// this attempt's files are removed.
    Lost(Error),
}

/// A local failure of an attempt (its files removed): the reason to fail
/// the lease with (retryable), and the error.
type LocalFailure = (&'static str, ExecError);

/// Run `cmd` for the held `lease` (see the module docs, steps 3 to 5): the
/// one implementation behind [`run_once`] and [`Runner`]. `heartbeat`
/// renews the lease every TTL/3 from a thread of this call; `watch` is
/// asked every poll whether the lease is gone (the command is then killed).
fn run_attempt(
    cmd: &Cmd<'_>,
    lease: &Lease,
    attempt: &Attempt,
    payload: Vec<u8>,
    heartbeat: Option<Ttl>,
    watch: &dyn Fn() -> Option<Error>,
) -> std::result::Result<Ran, LocalFailure> {
    let (tmp, out) = attempt.files(cmd.dir);
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| {
            (
                "executor: cannot create the output file",
                io_err(format!("creating {}", tmp.display()))(e),
            )
        })?;
    let run = run_child(cmd, lease, attempt, &tmp, &file, payload, heartbeat, watch);
    let (exit, lost) = match run {
        Ok(v) => v,
        Err(e) => {
            drop(file);
            let _ = fs::remove_file(&tmp);
            return Err(("executor: cannot start the command", e));
        }
    };
    if let Some(error) = lost {
        drop(file);
        let _ = fs::remove_file(&tmp);
        return Ok(Ran::Lost(error));
    }
    if exit != Exit::Code(0) {
        drop(file);
        let _ = fs::remove_file(&tmp);
        let reason = match exit {
            Exit::Code(c) => format!("command exited with status {c}"),
            Exit::Signal(s) => format!("command killed by signal {s}"),
        };
        return Ok(Ran::Failed {
            exit,
            permanent: exit == Exit::Code(PERMANENT_EXIT_CODE),
            reason,
        });
    }
    match publish(file, &tmp, &out, cmd.dir) {
        Ok((sha256, size)) => Ok(Ran::Published {
            exec: Execution {
                nonce: attempt.nonce,
                output_path: out.to_string_lossy().into_owned(),
                output_sha256: sha256.clone(),
                output_size: size,
                exit_status: 0,
            },
            output: out,
            sha256,
            size,
        }),
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            let _ = fs::remove_file(&out);
            Err(("executor: cannot store the output", e))
        }
    }
}

/// Claim one job and execute it (see the module docs).
pub fn run_once(auth: &Authority, spec: &ExecSpec) -> std::result::Result<Outcome, ExecError> {
    let dir = prepare_dir(&spec.output_dir)?;
    let lease = match &spec.job {
        Some(j) => auth.claim(&spec.production, j, &spec.holder, spec.ttl)?,
        None => auth.claim_next(&spec.production, &spec.holder, spec.ttl)?,
    };
    execute(auth, spec, &dir, lease)
}

/// Execute one claimed job in `dir` (steps 2 to 6 of the module docs) with
/// the executor's own heartbeat: the one implementation behind [`run_once`],
/// [`run_loop`] and [`run_parallel`].
fn execute(
    auth: &Authority,
    spec: &ExecSpec,
    dir: &Path,
    lease: Lease,
) -> std::result::Result<Outcome, ExecError> {
    let attempt = Attempt::of(&lease);
    let payload = match auth.payload(&attempt.production, &attempt.job) {
        Ok(p) => p,
        Err(e) => {
            let _ = lease.fail("executor: cannot read the payload", false);
            return Err(e.into());
        }
    };
    let cmd = Cmd {
        dir,
        program: &spec.program,
        args: &spec.args,
    };
    let ran = match run_attempt(&cmd, &lease, &attempt, payload, Some(spec.ttl), &|| None) {
        Ok(r) => r,
        Err((reason, e)) => {
            let _ = lease.fail(reason, false);
            return Err(e);
        }
    };
    let (exec, output, sha256, size) = match ran {
        Ran::Lost(error) => return Ok(Outcome::LeaseLost { attempt, error }),
        Ran::Failed {
            exit,
            permanent,
            reason,
        } => {
            return Ok(match lease.fail(&reason, permanent) {
                Ok(state) => Outcome::Failed {
                    attempt,
                    exit,
                    permanent,
                    state,
                },
                Err(error) => Outcome::Rejected {
                    attempt,
                    exit,
                    error,
                },
            })
        }
        Ran::Published {
            exec,
            output,
            sha256,
            size,
        } => (exec, output, sha256, size),
    };
    let mut result = lease.complete_execution(&exec, &[]);
    for _ in 0..2 {
        match &result {
            Err(e) if e.code() == ErrorCode::Busy => {
                result = lease.complete_execution(&exec, &[]);
            }
            _ => break,
        }
    }
    match result {
        Ok(()) => Ok(Outcome::Completed {
            attempt,
            output,
            sha256,
            size,
        }),
        Err(error) => {
            let _ = fs::remove_file(&output);
            Ok(Outcome::Rejected {
                attempt,
                exit: Exit::Code(0),
                error,
            })
        }
    }
}

/// Spawn the command, feed it the payload, heartbeat until it exits. Returns
/// its exit and, if the heartbeat found the lease gone, the refusal.
#[allow(clippy::too_many_arguments)]
fn run_child(
    cmd: &Cmd<'_>,
    lease: &Lease,
    attempt: &Attempt,
    tmp: &Path,
    file: &File,
    payload: Vec<u8>,
    heartbeat: Option<Ttl>,
    watch: &dyn Fn() -> Option<Error>,
) -> std::result::Result<(Exit, Option<Error>), ExecError> {
    let stdout = file
        .try_clone()
        .map_err(io_err("duplicating the output file"))?;
    let mut child = Command::new(cmd.program)
        .args(cmd.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::inherit())
        .env("TENURE_PRODUCTION", &attempt.production)
        .env("TENURE_JOB", &attempt.job)
        .env("TENURE_CLAIM_ID", attempt.claim_id.to_string())
        .env("TENURE_ATTEMPT", attempt.attempt.to_string())
        .env("TENURE_NONCE", attempt.nonce.to_string())
        .env("TENURE_OUTPUT", tmp)
        .spawn()
        .map_err(io_err(format!(
            "starting {}",
            Path::new(cmd.program).display()
        )))?;
    let mut stdin = child.stdin.take();

    let lost = AtomicBool::new(false);
    let refusal: Mutex<Option<Error>> = Mutex::new(None);
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let exit = std::thread::scope(|scope| {
        scope.spawn(move || {
            if let Some(mut w) = stdin.take() {
                // A command that does not read its stdin closes the pipe: fine.
                let _ = w.write_all(&payload);
            }
        });
        let (lost, refusal) = (&lost, &refusal);
        if let Some(ttl) = heartbeat {
            let interval = (ttl.as_duration() / 3).max(Duration::from_millis(1));
            scope.spawn(move || loop {
                match stop_rx.recv_timeout(interval) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                if let Err(e) = lease.renew(ttl) {
                    if lease_gone(e.code()) {
                        *refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                        lost.store(true, Ordering::SeqCst);
                        return;
                    }
                }
            });
        }
        let result = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(Exit::from_status(status)),
                Ok(None) => {}
                Err(e) => break Err(io_err("waiting for the command")(e)),
            }
            let watched = || match watch() {
                Some(e) => {
                    *refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    true
                }
                None => false,
            };
            if lost.load(Ordering::SeqCst) || watched() {
                let _ = child.kill();
                break child
                    .wait()
                    .map(Exit::from_status)
                    .map_err(io_err("waiting for the command"));
            }
            std::thread::sleep(POLL);
        };
        let _ = stop_tx.send(());
        result
    });
    let exit = match exit {
        Ok(e) => e,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    let refusal = refusal.into_inner().unwrap_or_else(|p| p.into_inner());
    // Only a command that did not exit by itself is reported as lost.
    let lost = match exit {
        Exit::Signal(_) => refusal,
        Exit::Code(_) => None,
    };
    Ok((exit, lost))
}

/// fsync, rename `.tmp` -> `.out`, fsync the directory, then hash.
fn publish(
    file: File,
    tmp: &Path,
    out: &Path,
    dir: &Path,
) -> std::result::Result<(String, u64), ExecError> {
    file.sync_all()
        .map_err(io_err(format!("syncing {}", tmp.display())))?;
    drop(file);
    fs::rename(tmp, out).map_err(io_err(format!("renaming {}", tmp.display())))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(format!("syncing directory {}", dir.display())))?;
    let mut f = File::open(out).map_err(io_err(format!("reading {}", out.display())))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = f
            .read(&mut buf)
            .map_err(io_err(format!("reading {}", out.display())))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    let hex = h
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>();
    Ok((hex, size))
}

/// Run [`run_once`] until the production has nothing claimable
/// ([`Error::NoJobAvailable`]), calling `each` with every outcome. A busy
/// store during the claim is retried. Returns how many attempts ran.
pub fn run_loop(
    auth: &Authority,
    spec: &ExecSpec,
    mut each: impl FnMut(&Outcome),
) -> std::result::Result<u64, ExecError> {
    let mut n = 0;
    loop {
        match run_once(auth, spec) {
            Ok(o) => {
                n += 1;
                each(&o);
            }
            Err(ExecError::Tenure(e)) if e.code() == ErrorCode::NoJobAvailable => return Ok(n),
            Err(ExecError::Tenure(e)) if e.code() == ErrorCode::Busy => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Run up to `parallel` (1 ..= [`MAX_BATCH`](crate::validate::MAX_BATCH))
/// jobs' commands at once from this process until the production has
/// nothing claimable, calling `each` (on the calling thread) with every
/// outcome; returns how many attempts ran. `spec.job` must be `None`.
///
/// Free slots are filled with one [`Authority::claim_next_many`] (a claim
/// that returns fewer leases than asked is not repeated until a command
/// finishes); each claimed job then runs exactly as in [`run_once`] on a
/// thread of its own, with its own heartbeat, and completes or fails its own
/// lease (concurrent completions share commits through group commit). A busy
/// store during a claim is retried. An error that stops [`run_loop`] (a
/// command that cannot be started, a refused claim) stops claiming here: the
/// commands already running finish and are reported, then the first such
/// error is returned.
pub fn run_parallel(
    auth: &Authority,
    spec: &ExecSpec,
    parallel: usize,
    mut each: impl FnMut(&Outcome),
) -> std::result::Result<u64, ExecError> {
    crate::validate::batch(parallel)?;
    if spec.job.is_some() {
        return Err(
            Error::invalid("a parallel executor claims the next jobs; it takes no job ID").into(),
        );
    }
    let dir = prepare_dir(&spec.output_dir)?;
    let dir = dir.as_path();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel();
        let (mut running, mut ran) = (0usize, 0u64);
        let mut error: Option<ExecError> = None;
        // Whether a claim may find more (false after a claim got fewer than asked).
        let mut claim_more = true;
        loop {
            if error.is_none() && claim_more && running < parallel {
                let want = parallel - running;
                match auth.claim_next_many(&spec.production, &spec.holder, spec.ttl, want) {
                    Ok(leases) => {
                        claim_more = leases.len() == want;
                        for lease in leases {
                            running += 1;
                            let tx = tx.clone();
                            scope.spawn(move || {
                                let _ = tx.send(execute(auth, spec, dir, lease));
                            });
                        }
                    }
                    Err(e) if e.code() == ErrorCode::Busy => {}
                    Err(e) => error = Some(e.into()),
                }
            }
            if running == 0 {
                if error.is_some() || !claim_more {
                    break;
                }
                continue;
            }
            let mut done = vec![rx
                .recv()
                .map_err(|_| Error::Internal("an executor thread vanished".into()))?];
            done.extend(rx.try_iter());
            running -= done.len();
            claim_more = true;
            for r in done {
                match r {
                    Ok(o) => {
                        ran += 1;
                        each(&o);
                    }
                    Err(e) => {
                        error.get_or_insert(e);
                    }
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(ran),
        }
    })
}

impl ExecError {
    /// The tenure error code, if this is a tenure error.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            ExecError::Tenure(e) => Some(e.code()),
            ExecError::Io { .. } => None,
        }
    }
}

/// The reference executor as the handler of a [`worker::Worker`]: the
/// worker waits for jobs, keeps their leases alive and settles them; the
/// runner runs the command per job exactly as [`run_once`] does (same
/// files, environment, payload on stdin and exit-status rule) and turns its
/// end into the worker's outcome: exit 0 completes with the execution's
/// provenance ([`worker::Outcome::CompleteExecution`]), exit
/// [`PERMANENT_EXIT_CODE`] fails permanently, any other exit or a signal
/// fails retryably ([`worker::Outcome::Retry`]). A command is killed when
/// the worker's keeper finds the lease gone (as the heartbeat does), and
/// when [`Runner::finish`] is called.
///
/// Use: [`Runner::run`] as the handler, [`Runner::settled`] in the report
/// callback (it gives the attempt's [`Outcome`] and removes this attempt's
/// files whenever the job did not complete), and [`Runner::finish`] after
/// [`worker::Worker::join`].
#[derive(Clone)]
pub struct Runner {
    inner: Arc<RunnerInner>,
}

struct RunnerInner {
    dir: PathBuf,
    program: OsString,
    args: Vec<OsString>,
    state: Mutex<RunnerState>,
    cv: Condvar,
    /// Stopped when a command cannot be run.
    stop: std::sync::OnceLock<worker::StopHandle>,
}

struct RunnerState {
    /// Attempts the worker has not settled yet, by claim ID.
    attempts: HashMap<Uuid, Record>,
    /// Commands running.
    running: usize,
    /// When the last command ended (or the runner was made).
    idle_since: Instant,
    /// [`Runner::finish`] was called: kill what still runs.
    finished: bool,
}

/// One attempt: who, and, once its command ended, how it ran.
struct Record {
    attempt: Attempt,
    ran: Option<std::result::Result<Ran, ExecError>>,
}

impl Runner {
    /// A runner of `program args...`, output in `output_dir` (created if
    /// missing).
    pub fn new(
        output_dir: &Path,
        program: OsString,
        args: Vec<OsString>,
    ) -> std::result::Result<Runner, ExecError> {
        Ok(Runner {
            inner: Arc::new(RunnerInner {
                dir: prepare_dir(output_dir)?,
                program,
                args,
                state: Mutex::new(RunnerState {
                    attempts: HashMap::new(),
                    running: 0,
                    idle_since: Instant::now(),
                    finished: false,
                }),
                cv: Condvar::new(),
                stop: std::sync::OnceLock::new(),
            }),
        })
    }

    /// Stop `handle`'s worker when a command cannot be run (missing
    /// program, output directory trouble), before that job is failed, so no
    /// other slot takes it again: as [`run_loop`] stops there.
    pub fn stop_on_failure(&self, handle: worker::StopHandle) {
        let _ = self.inner.stop.set(handle);
    }

    fn lock(&self) -> MutexGuard<'_, RunnerState> {
        self.inner.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The worker's handler: run the command for `ctx`'s job.
    pub fn run(&self, ctx: &JobContext<'_>) -> worker::Outcome {
        let lease = ctx.lease();
        let attempt = Attempt::of(lease);
        {
            let mut st = self.lock();
            st.running += 1;
            st.attempts.insert(
                attempt.claim_id,
                Record {
                    attempt: attempt.clone(),
                    ran: None,
                },
            );
        }
        let cmd = Cmd {
            dir: &self.inner.dir,
            program: &self.inner.program,
            args: &self.inner.args,
        };
        let watch = || {
            if self.lock().finished {
                return Some(Error::LeaseClosed(
                    "the worker stopped and released the lease".into(),
                ));
            }
            ctx.lease_lost().filter(|e| lease_gone(e.code()))
        };
        let ran = run_attempt(&cmd, lease, &attempt, ctx.payload().to_vec(), None, &watch);
        let retry = |reason: String| worker::Outcome::Retry {
            reason,
            delay: None,
        };
        let outcome = match &ran {
            Ok(Ran::Published { exec, .. }) => worker::Outcome::CompleteExecution(exec.clone()),
            Ok(Ran::Failed {
                permanent: true,
                reason,
                ..
            }) => worker::Outcome::Fail(reason.clone()),
            Ok(Ran::Failed { reason, .. }) => retry(reason.clone()),
            Ok(Ran::Lost(e)) => retry(format!("executor: the lease was lost: {e}")),
            Err((reason, _)) => retry((*reason).to_owned()),
        };
        if ran.is_err() {
            if let Some(h) = self.inner.stop.get() {
                h.stop();
            }
        }
        let mut st = self.lock();
        st.running -= 1;
        if st.running == 0 {
            st.idle_since = Instant::now();
        }
        match st.attempts.get_mut(&attempt.claim_id) {
            Some(r) => r.ran = Some(ran.map_err(|(_, e)| e)),
            // Already settled (released at the end of the grace period).
            None => remove_files(&self.inner.dir, &attempt),
        }
        drop(st);
        self.inner.cv.notify_all();
        outcome
    }

    /// The worker's report of a job this runner ran, as an executor
    /// [`Outcome`] (an [`ExecError`] when the command could not be run: the
    /// lease was failed retryably). Whenever the job did not complete, this
    /// attempt's files are removed.
    pub fn settled(&self, report: &Report) -> std::result::Result<Outcome, ExecError> {
        let record = self.lock().attempts.remove(&report.claim_id);
        let (attempt, ran) = match record {
            Some(r) => (r.attempt, r.ran),
            None => (
                Attempt {
                    production: report.production.clone(),
                    job: report.job.clone(),
                    claim_id: report.claim_id,
                    attempt: report.attempt,
                    nonce: Uuid::nil(),
                },
                None,
            ),
        };
        if !matches!(report.result, JobResult::Completed) {
            remove_files(&self.inner.dir, &attempt);
        }
        Ok(match (&report.result, ran) {
            (JobResult::Released(state), _) => Outcome::Released {
                attempt,
                state: *state,
            },
            (
                JobResult::Completed,
                Some(Ok(Ran::Published {
                    output,
                    sha256,
                    size,
                    ..
                })),
            ) => Outcome::Completed {
                attempt,
                output,
                sha256,
                size,
            },
            (
                JobResult::Failed(state),
                Some(Ok(Ran::Failed {
                    exit, permanent, ..
                })),
            ) => Outcome::Failed {
                attempt,
                exit,
                permanent,
                state: *state,
            },
            (JobResult::Lost(_), Some(Ok(Ran::Lost(error)))) => {
                Outcome::LeaseLost { attempt, error }
            }
            (JobResult::Lost(error), Some(Ok(Ran::Published { .. }))) => Outcome::Rejected {
                attempt,
                exit: Exit::Code(0),
                error: error.clone(),
            },
            (JobResult::Lost(error), Some(Ok(Ran::Failed { exit, .. }))) => Outcome::Rejected {
                attempt,
                exit,
                error: error.clone(),
            },
            (JobResult::Lost(error), _) => Outcome::LeaseLost {
                attempt,
                error: error.clone(),
            },
            (_, Some(Err(e))) => return Err(e),
            (result, _) => {
                return Err(ExecError::Tenure(Error::Internal(format!(
                    "the worker settled {}/{} as {result:?} but its command did not run so",
                    attempt.production, attempt.job
                ))))
            }
        })
    }

    /// How long no command has been running (`None` while one runs).
    pub fn idle_for(&self) -> Option<Duration> {
        let st = self.lock();
        (st.running == 0).then(|| st.idle_since.elapsed())
    }

    /// After [`worker::Worker::join`]: kill the commands still running
    /// (their leases were released) and wait up to `timeout` for their
    /// attempts' files to be removed.
    pub fn finish(&self, timeout: Duration) {
        let mut st = self.lock();
        st.finished = true;
        let _ = self
            .inner
            .cv
            .wait_timeout_while(st, timeout, |st| st.running > 0);
    }
}

/// Remove an attempt's `.tmp` and `.out` (whichever exist).
fn remove_files(dir: &Path, attempt: &Attempt) {
    if attempt.nonce.is_nil() {
        return;
    }
    let (tmp, out) = attempt.files(dir);
    let _ = fs::remove_file(tmp);
    let _ = fs::remove_file(out);
}
