//! `tenure release`: give the job back unfinished.

use super::{Ctx, Done, Ended, TokenFile};
use crate::fail::R;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    t: TokenFile,
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let l = a.t.lease(ctx)?;
    let state = l.release()?;
    Done::show(Ended::new(&l, "released", state))
}
