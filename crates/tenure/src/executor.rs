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
use crate::{Authority, Lease, Ttl};
use sha2::{Digest, Sha256};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::Duration;
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
}

impl Outcome {
    /// The attempt this outcome is about.
    pub fn attempt(&self) -> &Attempt {
        match self {
            Outcome::Completed { attempt, .. }
            | Outcome::Failed { attempt, .. }
            | Outcome::Rejected { attempt, .. }
            | Outcome::LeaseLost { attempt, .. } => attempt,
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

/// Create the output directory if missing; its canonical path.
fn output_dir(spec: &ExecSpec) -> std::result::Result<PathBuf, ExecError> {
    fs::create_dir_all(&spec.output_dir).map_err(io_err(format!(
        "creating output directory {}",
        spec.output_dir.display()
    )))?;
    fs::canonicalize(&spec.output_dir).map_err(io_err(format!(
        "resolving output directory {}",
        spec.output_dir.display()
    )))
}

/// Claim one job and execute it (see the module docs).
pub fn run_once(auth: &Authority, spec: &ExecSpec) -> std::result::Result<Outcome, ExecError> {
    let dir = output_dir(spec)?;
    let lease = match &spec.job {
        Some(j) => auth.claim(&spec.production, j, &spec.holder, spec.ttl)?,
        None => auth.claim_next(&spec.production, &spec.holder, spec.ttl)?,
    };
    execute(auth, spec, &dir, lease)
}

/// Execute one claimed job in `dir` (steps 2 to 6 of the module docs): the
/// one implementation behind [`run_once`], [`run_loop`] and
/// [`run_parallel`].
fn execute(
    auth: &Authority,
    spec: &ExecSpec,
    dir: &Path,
    lease: Lease,
) -> std::result::Result<Outcome, ExecError> {
    let attempt = Attempt {
        production: lease.production().to_owned(),
        job: lease.job().to_owned(),
        claim_id: lease.claim_id(),
        attempt: lease.attempt(),
        nonce: Uuid::new_v4(),
    };
    let payload = match auth.payload(&attempt.production, &attempt.job) {
        Ok(p) => p,
        Err(e) => {
            let _ = lease.fail("executor: cannot read the payload", false);
            return Err(e.into());
        }
    };
    let tmp = dir.join(format!("{}.{}.tmp", attempt.job, attempt.nonce));
    let out = dir.join(format!("{}.{}.out", attempt.job, attempt.nonce));
    let file = match OpenOptions::new().write(true).create_new(true).open(&tmp) {
        Ok(f) => f,
        Err(e) => {
            let _ = lease.fail("executor: cannot create the output file", false);
            return Err(io_err(format!("creating {}", tmp.display()))(e));
        }
    };
    let run = run_child(spec, &lease, &attempt, &tmp, &file, payload);
    let (exit, lost) = match run {
        Ok(v) => v,
        Err(e) => {
            drop(file);
            let _ = fs::remove_file(&tmp);
            let _ = lease.fail("executor: cannot start the command", false);
            return Err(e);
        }
    };
    if let Some(error) = lost {
        drop(file);
        let _ = fs::remove_file(&tmp);
        return Ok(Outcome::LeaseLost { attempt, error });
    }
    if exit != Exit::Code(0) {
        drop(file);
        let _ = fs::remove_file(&tmp);
        let permanent = exit == Exit::Code(PERMANENT_EXIT_CODE);
        let reason = match exit {
            Exit::Code(c) => format!("command exited with status {c}"),
            Exit::Signal(s) => format!("command killed by signal {s}"),
        };
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
        });
    }
    let published = publish(file, &tmp, &out, dir);
    let (sha256, size) = match published {
        Ok(v) => v,
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            let _ = fs::remove_file(&out);
            let _ = lease.fail("executor: cannot store the output", false);
            return Err(e);
        }
    };
    let exec = Execution {
        nonce: attempt.nonce,
        output_path: out.to_string_lossy().into_owned(),
        output_sha256: sha256.clone(),
        output_size: size,
        exit_status: 0,
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
            output: out,
            sha256,
            size,
        }),
        Err(error) => {
            let _ = fs::remove_file(&out);
            Ok(Outcome::Rejected {
                attempt,
                exit,
                error,
            })
        }
    }
}

/// Spawn the command, feed it the payload, heartbeat until it exits. Returns
/// its exit and, if the heartbeat found the lease gone, the refusal.
fn run_child(
    spec: &ExecSpec,
    lease: &Lease,
    attempt: &Attempt,
    tmp: &Path,
    file: &File,
    payload: Vec<u8>,
) -> std::result::Result<(Exit, Option<Error>), ExecError> {
    let stdout = file
        .try_clone()
        .map_err(io_err("duplicating the output file"))?;
    let mut child = Command::new(&spec.program)
        .args(&spec.args)
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
            Path::new(&spec.program).display()
        )))?;
    let mut stdin = child.stdin.take();
    let interval = (spec.ttl.as_duration() / 3).max(Duration::from_millis(1));
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
        scope.spawn(move || loop {
            match stop_rx.recv_timeout(interval) {
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                _ => return,
            }
            if let Err(e) = lease.renew(spec.ttl) {
                if lease_gone(e.code()) {
                    *refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    lost.store(true, Ordering::SeqCst);
                    return;
                }
            }
        });
        let result = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Ok(Exit::from_status(status)),
                Ok(None) => {}
                Err(e) => break Err(io_err("waiting for the command")(e)),
            }
            if lost.load(Ordering::SeqCst) {
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
    let dir = output_dir(spec)?;
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
