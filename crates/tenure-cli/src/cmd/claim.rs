//! `tenure claim`: reserve the token file, claim, then deliver the token.
//!
//! The file is created with `O_CREAT|O_EXCL` and mode 0600 before the claim
//! commits, so a claim is never made that has nowhere to go. When the token
//! cannot be written after the commit, the receipt goes to stderr (exit 4).

use super::{ttl, Ctx, Done, LeaseView, Prod};
use crate::exit;
use crate::fail::{usage, Fail, R};
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

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
    #[arg(long)]
    token_out: Option<PathBuf>,
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

impl Render for Claimed {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(
            o,
            "claimed {}/{}; token written to {} (mode 0600)\n{}",
            self.0.lease.production,
            self.0.lease.job,
            self.0.token_file.display(),
            self.0.lease.lines()
        )
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

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let Some(path) = a.token_out else {
        return Err(usage(
            "claim needs --token-out FILE: a lease token is never printed",
        ));
    };
    let ttl = ttl(&a.ttl)?;
    let auth = ctx.open()?;
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
    let production = &a.p.production;
    let claimed = match &a.job {
        Some(j) => auth.claim(production, j, &a.holder, ttl),
        None => auth.claim_next(production, &a.holder, ttl),
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
    let receipt = Receipt {
        lease: LeaseView::of(&lease),
        token_file: path,
    };
    match delivered {
        Ok(()) => Done::show(Claimed(receipt)),
        Err(error) => {
            drop(file);
            let removed = std::fs::remove_file(&receipt.token_file).is_ok();
            let u = Undelivered {
                receipt,
                error,
                removed,
            };
            let _ = out::write(ctx.json, &u, &mut io::stderr().lock());
            Err(Fail::Exit(exit::TOKEN_NOT_DELIVERED, String::new()))
        }
    }
}
