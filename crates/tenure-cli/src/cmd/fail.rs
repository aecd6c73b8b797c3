//! `tenure fail`: report failure (retryable unless `--permanent`).

use super::{Ctx, Done, Ended, TokenFile};
use crate::fail::R;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    t: TokenFile,
    /// Fail the job for good (no retry).
    #[arg(long)]
    permanent: bool,
    /// Why (recorded, at most 1024 bytes).
    #[arg(long)]
    reason: String,
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let l = a.t.lease(ctx)?;
    let state = l.fail(&a.reason, a.permanent)?;
    Done::show(Ended::new(&l, "failed", state))
}
