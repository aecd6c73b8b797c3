//! `tenure renew`: extend a lease to now + TTL, optionally storing a
//! progress checkpoint in the same transition.

use super::{ttl, Ctx, Done, LeaseView, TokenFile};
use crate::fail::{local, usage, R};
use crate::out::{self, Render};
use serde_json::Value;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    t: TokenFile,
    /// New lease duration from now.
    #[arg(long, allow_hyphen_values = true)]
    ttl: String,
    /// Also store the bytes of FILE (`-`: stdin) as the job's progress
    /// checkpoint, with the renewal: both or neither.
    #[arg(long)]
    progress_file: Option<PathBuf>,
}

struct Renewed(LeaseView, Option<usize>);

impl Render for Renewed {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let l = &self.0;
        write!(
            o,
            "renewed {}/{} until {}",
            l.production,
            l.job,
            out::time(l.expires_us)
        )?;
        match self.1 {
            Some(n) => writeln!(o, " with a {n}-byte progress checkpoint"),
            None => writeln!(o),
        }
    }

    fn json(&self) -> Value {
        let mut v = self.0.json();
        if let Some(n) = self.1 {
            v["progress_bytes"] = n.into();
        }
        v
    }
}

/// The progress bytes of `file` (`-`: stdin), read up to one byte past the
/// core's bound so that an oversized value reaches the core's check
/// without a file of any size being read whole.
fn read_progress(file: &Path) -> R<Vec<u8>> {
    let cap = tenure::validate::MAX_PROGRESS as u64 + 1;
    let mut buf = Vec::new();
    if file.as_os_str() == "-" {
        io::stdin()
            .lock()
            .take(cap)
            .read_to_end(&mut buf)
            .map_err(local("reading the progress checkpoint from stdin"))?;
    } else {
        File::open(file)
            .and_then(|f| f.take(cap).read_to_end(&mut buf))
            .map_err(local(format!("reading progress file {}", file.display())))?;
    }
    Ok(buf)
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let ttl = ttl(&a.ttl)?;
    if let Some(p) = &a.progress_file {
        if p.as_os_str() == "-" && a.t.token_file.as_os_str() == "-" {
            return Err(usage(
                "the token and the progress checkpoint cannot both come from stdin",
            ));
        }
    }
    let progress = a.progress_file.as_deref().map(read_progress).transpose()?;
    let l = a.t.lease(ctx)?;
    match &progress {
        Some(p) => l.renew_checkpoint(ttl, p)?,
        None => l.renew(ttl)?,
    }
    Done::show(Renewed(LeaseView::of(&l), progress.map(|p| p.len())))
}
