//! The commands, one module each, and what they share: the store they open,
//! the options several of them take, and the lease results they render.

pub mod check;
pub mod claim;
pub mod clock;
pub mod complete;
pub mod demo;
pub mod events;
pub mod exec;
pub mod exit_codes;
pub mod facts;
pub mod fail;
pub mod init;
pub mod job;
pub mod jobs;
pub mod migrate;
pub mod production;
pub mod prune;
pub mod release;
pub mod renew;
pub mod schedule;
pub mod serve;
pub mod stats;
mod submit;
pub mod work;

use crate::exit;
use crate::fail::{local, usage, R};
use crate::out::{self, Render};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use tenure::{Authority, Backoff, Delay, Error, JobState, Lease, Options, Ttl, MAX_TOKEN_LEN};
use zeroize::Zeroizing;

/// What every command gets from the global options.
pub struct Ctx {
    /// `--db` or `TENURE_DB`.
    pub db: Option<PathBuf>,
    /// `--json`.
    pub json: bool,
}

impl Ctx {
    /// The store path; a usage error when none was given.
    pub fn db(&self) -> R<PathBuf> {
        self.db
            .clone()
            .ok_or_else(|| usage("no store given: pass --db PATH or set TENURE_DB"))
    }

    /// Open (or create) the store.
    pub fn open(&self) -> R<Authority> {
        Ok(Authority::open(self.db()?, &Options::new())?)
    }
}

/// What a command leaves to report when it succeeded.
pub struct Done {
    /// A result to print on stdout (absent when the command wrote its own).
    shown: Option<Box<dyn Render>>,
    /// The exit status.
    code: i32,
}

impl Done {
    /// Print `r`, exit 0.
    pub fn show(r: impl Render + 'static) -> R<Done> {
        Done::show_exit(r, exit::OK)
    }

    /// Print `r`, exit with `code`.
    pub fn show_exit(r: impl Render + 'static, code: i32) -> R<Done> {
        Ok(Done {
            shown: Some(Box::new(r)),
            code,
        })
    }

    /// Nothing more to print; exit with `code`.
    pub fn exit(code: i32) -> R<Done> {
        Ok(Done { shown: None, code })
    }

    /// Print the result; return the exit status.
    pub fn finish(self, json: bool) -> R<i32> {
        if let Some(r) = &self.shown {
            out::print(json, r.as_ref())?;
        }
        Ok(self.code)
    }
}

/// `-p/--production`.
#[derive(clap::Args)]
pub struct Prod {
    /// Production ID.
    #[arg(short, long)]
    pub production: String,
}

/// `--token-file`.
#[derive(clap::Args)]
pub struct TokenFile {
    /// File holding the lease token (from `claim --token-out`), or `-` for stdin.
    #[arg(long)]
    pub token_file: PathBuf,
}

impl TokenFile {
    /// Read the token and import its lease into the store.
    pub fn lease(&self, ctx: &Ctx) -> R<Lease> {
        let token = read_token(&self.token_file)?;
        let auth = ctx.open()?;
        Ok(auth.import_lease(&token)?)
    }
}

/// Parse a duration option with the core's rule.
/// Parse a duration option of a read (`stats --horizon`, `--window`,
/// `--interval`): the delay syntax, as a `Duration`.
pub fn ttl_or_delay(text: &str) -> R<std::time::Duration> {
    Ok(std::time::Duration::from_micros(
        delay(text)?.as_micros() as u64
    ))
}

pub fn ttl(text: &str) -> R<Ttl> {
    Ok(text.parse::<Ttl>()?)
}

/// Parse a delay option (`--delay`, `--max-hold`, `--retry-after`): the TTL
/// syntax, 0 ..= 366 days (`8784h`); whether zero is allowed is the core's
/// rule for the field.
pub fn delay(text: &str) -> tenure::Result<Delay> {
    text.parse::<Delay>()
}

/// Parse a back-off `BASE,CAP` (two delays; the core checks base > 0 and
/// cap >= base). A missing part is `invalid_duration`.
pub fn backoff(text: &str) -> tenure::Result<Backoff> {
    let (base, cap) = text.split_once(',').ok_or_else(|| {
        Error::InvalidDuration(format!(
            "{text:?}: a back-off is BASE,CAP (e.g. 1s,5m: exponential from BASE, at most CAP)"
        ))
    })?;
    Backoff::exponential(delay(base)?, delay(cap)?)
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

/// A lease as shown after `claim` and `renew` (never its token).
pub struct LeaseView {
    pub production: String,
    pub job: String,
    pub claim_id: String,
    pub holder: String,
    pub attempt: u32,
    pub expires_us: i64,
}

impl LeaseView {
    pub fn of(l: &Lease) -> LeaseView {
        LeaseView {
            production: l.production().to_owned(),
            job: l.job().to_owned(),
            claim_id: l.claim_id().to_string(),
            holder: l.holder().to_owned(),
            attempt: l.attempt(),
            expires_us: l.expires_us(),
        }
    }

    /// The fields, one per line.
    pub fn lines(&self) -> String {
        format!(
            "production {}\njob        {}\nclaim_id   {}\nholder     {}\nattempt    {}\nexpires    {} ({} us)",
            self.production,
            self.job,
            self.claim_id,
            self.holder,
            self.attempt,
            out::time(self.expires_us),
            self.expires_us
        )
    }

    pub fn json(&self) -> Value {
        json!({
            "production": self.production,
            "job": self.job,
            "claim_id": self.claim_id,
            "holder": self.holder,
            "attempt": self.attempt,
            "expires_us": self.expires_us,
        })
    }
}

/// A lease ended by `release`, `fail` or `complete`, and the job's state after.
pub struct Ended {
    production: String,
    job: String,
    claim_id: String,
    /// `released`, `failed` or `completed`.
    what: &'static str,
    state: JobState,
}

impl Ended {
    pub fn new(l: &Lease, what: &'static str, state: JobState) -> Ended {
        Ended {
            production: l.production().to_owned(),
            job: l.job().to_owned(),
            claim_id: l.claim_id().to_string(),
            what,
            state,
        }
    }
}

impl Render for Ended {
    fn text(&self, o: &mut dyn Write) -> std::io::Result<()> {
        writeln!(
            o,
            "{} {}/{}: job is {}",
            self.what, self.production, self.job, self.state
        )
    }

    fn json(&self) -> Value {
        json!({
            "production": self.production,
            "job": self.job,
            "claim_id": self.claim_id,
            "result": self.what,
            "state": self.state.as_str(),
        })
    }
}
