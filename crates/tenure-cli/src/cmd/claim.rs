//! `tenure claim`: reserve the token file, claim, then deliver the token.
//!
//! The file is created with `O_CREAT|O_EXCL` and mode 0600 before the claim
//! commits, so a claim is never made that has nowhere to go. When the token
//! cannot be written after the commit, the receipt goes to stderr (exit 4).
//! With `--count N` the same holds for each of the N files `FILE.1` ..
//! `FILE.N`, reserved before one batched claim-next; files left without a
//! lease (fewer jobs were claimable) are removed.

use super::{ttl, Ctx, Done, LeaseView, Prod};
use crate::exit;
use crate::fail::{usage, Fail, R};
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use tenure::{Lease, Ttl};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    p: Prod,
    /// Claim this job (default: the next claimable one).
    #[arg(long)]
    job: Option<String>,
    /// Who holds the lease (recorded, shown in listings).
    #[arg(long)]
    holder: String,
    /// Lease duration.
    #[arg(long, allow_hyphen_values = true)]
    ttl: String,
    /// New file for the token (created 0600 with O_EXCL; never overwritten). Required.
    /// With --count N: the files FILE.1 .. FILE.N.
    #[arg(long)]
    token_out: Option<PathBuf>,
    /// Claim up to N (1-1000) next jobs in one batched claim, one token file each.
    #[arg(long, value_name = "N")]
    count: Option<usize>,
    /// Claim under this request ID (an ID like a job ID): the claim is
    /// retried automatically if the connection to a server breaks, and
    /// answered with the lease it made. Not with --count.
    #[arg(long, value_name = "ID")]
    request_id: Option<String>,
}

/// The receipt of a committed claim: the lease and where its token went.
struct Receipt {
    lease: LeaseView,
    token_file: PathBuf,
}

impl Receipt {
    fn json(&self, token_written: bool) -> Value {
        let mut v = self.lease.json();
        v["token_file"] = json!(self.token_file.display().to_string());
        v["token_written"] = json!(token_written);
        v
    }
}

/// The token was written.
struct Claimed(Receipt);

impl Receipt {
    /// The text shown for a delivered token.
    fn claimed_text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(
            o,
            "claimed {}/{}; token written to {} (mode 0600)\n{}",
            self.lease.production,
            self.lease.job,
            self.token_file.display(),
            self.lease.lines()
        )
    }
}

impl Render for Claimed {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        self.0.claimed_text(o)
    }

    fn json(&self) -> Value {
        self.0.json(true)
    }
}

/// The claim committed but its token could not be written (shown on stderr).
struct Undelivered {
    receipt: Receipt,
    error: String,
    /// Whether the incomplete file was removed.
    removed: bool,
}

impl Render for Undelivered {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let path = self.receipt.token_file.display();
        writeln!(
            o,
            "tenure: the claim COMMITTED but its token could not be written to {path}: {}\n\
             {path}: the incomplete file was {}.\n\
             The claim stays until it expires or a coordinator cancels the job.\n{}",
            self.error,
            if self.removed {
                "removed"
            } else {
                "NOT removed"
            },
            self.receipt.lease.lines()
        )
    }

    fn json(&self) -> Value {
        self.receipt.json(false)
    }
}

/// Several leases claimed at once, each with its delivered token.
struct ClaimedMany(Vec<Receipt>);

impl Render for ClaimedMany {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        for r in &self.0 {
            r.claimed_text(o)?;
        }
        Ok(())
    }

    fn json(&self) -> Value {
        json!({"leases": self.0.iter().map(|r| r.json(true)).collect::<Vec<_>>()})
    }
}

/// Reserve a token file: O_CREAT|O_EXCL, 0600.
fn reserve(path: &std::path::Path) -> R<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            Fail::Exit(
                exit::TOKEN_FILE_NOT_RESERVED,
                format!(
                    "cannot reserve token file {}: {e}; nothing was claimed",
                    path.display()
                ),
            )
        })
}

/// Deliver a committed lease's token into its reserved file; on failure
/// the incomplete file is removed and the receipt says so.
fn deliver(mut file: File, lease: &Lease, path: PathBuf) -> Result<Receipt, Box<Undelivered>> {
    let delivered = lease
        .export_token()
        .map_err(|e| e.to_string())
        .and_then(|t| {
            file.write_all(t.expose().as_bytes())
                .and_then(|_| file.write_all(b"\n"))
                .and_then(|_| file.sync_all())
                .map_err(|e| e.to_string())
        });
    let receipt = Receipt {
        lease: LeaseView::of(lease),
        token_file: path,
    };
    match delivered {
        Ok(()) => Ok(receipt),
        Err(error) => {
            drop(file);
            let removed = std::fs::remove_file(&receipt.token_file).is_ok();
            Err(Box::new(Undelivered {
                receipt,
                error,
                removed,
            }))
        }
    }
}

/// Report undelivered tokens on stderr; exit 4.
fn undelivered(ctx: &Ctx, us: &[Box<Undelivered>]) -> Fail {
    for u in us {
        let _ = out::write(ctx.json, u.as_ref(), &mut io::stderr().lock());
    }
    Fail::Exit(exit::TOKEN_NOT_DELIVERED, String::new())
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let Some(path) = a.token_out else {
        return Err(usage(
            "claim needs --token-out FILE: a lease token is never printed",
        ));
    };
    let ttl = ttl(&a.ttl)?;
    let request = a
        .request_id
        .as_deref()
        .map(tenure::ClaimRequest::new)
        .transpose()?;
    if let Some(n) = a.count {
        if request.is_some() {
            return Err(usage(
                "--request-id names one claim; it cannot be combined with --count",
            ));
        }
        if a.job.is_some() {
            return Err(usage(
                "--count claims the next jobs; it cannot be combined with --job",
            ));
        }
        return run_many(ctx, &a.p.production, &a.holder, ttl, n, path);
    }
    let auth = ctx.open()?;
    // Reserve the file before the claim commits: O_CREAT|O_EXCL, 0600.
    let file = reserve(&path)?;
    let production = &a.p.production;
    let claimed = match (&a.job, &request) {
        (Some(j), None) => auth.claim(production, j, &a.holder, ttl),
        (None, None) => auth.claim_next(production, &a.holder, ttl),
        (Some(j), Some(r)) => auth
            .claim_idempotent(production, j, &a.holder, ttl, r)
            .map(|x| x.value),
        (None, Some(r)) => auth
            .claim_next_idempotent(production, &a.holder, ttl, r)
            .map(|x| x.value),
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
    match deliver(file, &lease, path) {
        Ok(receipt) => Done::show(Claimed(receipt)),
        Err(u) => Err(undelivered(ctx, &[u])),
    }
}

/// `--count N`: reserve `FILE.1` .. `FILE.N`, claim up to N next jobs in
/// one batch, deliver each token, remove the files left over. None
/// claimable is `no_job_available`, as for a single claim-next.
fn run_many(
    ctx: &Ctx,
    production: &str,
    holder: &str,
    ttl: Ttl,
    n: usize,
    path: PathBuf,
) -> R<Done> {
    tenure::validate::batch(n)?;
    let auth = ctx.open()?;
    let mut files = Vec::with_capacity(n);
    let remove = |files: Vec<(File, PathBuf)>| {
        for (f, p) in files {
            drop(f);
            let _ = std::fs::remove_file(p);
        }
    };
    for i in 1..=n {
        let mut name = path.clone().into_os_string();
        name.push(format!(".{i}"));
        let p = PathBuf::from(name);
        match reserve(&p) {
            Ok(f) => files.push((f, p)),
            Err(e) => {
                remove(files);
                return Err(e);
            }
        }
    }
    let leases = match auth.claim_next_many(production, holder, ttl, n) {
        Ok(l) => l,
        Err(e) => {
            remove(files);
            return Err(e.into());
        }
    };
    let spare = files.split_off(leases.len());
    remove(spare);
    if leases.is_empty() {
        return Err(tenure::Error::NoJobAvailable(format!(
            "nothing claimable in production {production:?}"
        ))
        .into());
    }
    let (mut ok, mut bad) = (Vec::new(), Vec::new());
    for (lease, (file, p)) in leases.iter().zip(files) {
        match deliver(file, lease, p) {
            Ok(r) => ok.push(r),
            Err(u) => bad.push(u),
        }
    }
    if bad.is_empty() {
        return Done::show(ClaimedMany(ok));
    }
    let _ = out::print(ctx.json, &ClaimedMany(ok));
    Err(undelivered(ctx, &bad))
}
