//! `tenure fail`: report failure (retryable unless `--permanent`).

use super::{delay, Ctx, Done, Ended, TokenFile};
use crate::fail::R;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    t: TokenFile,
    /// Fail the job for good (no retry).
    #[arg(long)]
    permanent: bool,
    /// Retryable: the job is due again after DUR (0s: at once), instead of
    /// after the job's or production's back-off (0s ..= 8784h).
    #[arg(
        long,
        value_name = "DUR",
        conflicts_with = "permanent",
        allow_hyphen_values = true
    )]
    retry_after: Option<String>,
    /// Why (recorded, at most 1024 bytes).
    #[arg(long)]
    reason: String,
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let retry_after = a.retry_after.as_deref().map(delay).transpose()?;
    let l = a.t.lease(ctx)?;
    let state = match retry_after {
        Some(d) => l.fail_retry_after(&a.reason, d)?,
        None => l.fail(&a.reason, a.permanent)?,
    };
    Done::show(Ended::new(&l, "failed", state))
}
