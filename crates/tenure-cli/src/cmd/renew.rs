//! `tenure renew`: extend a lease to now + TTL.

use super::{ttl, Ctx, Done, LeaseView, TokenFile};
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::Value;
use std::io::{self, Write};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    t: TokenFile,
    /// New lease duration from now.
    #[arg(long, allow_hyphen_values = true)]
    ttl: String,
}

struct Renewed(LeaseView);

impl Render for Renewed {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let l = &self.0;
        writeln!(
            o,
            "renewed {}/{} until {}",
            l.production,
            l.job,
            out::time(l.expires_us)
        )
    }

    fn json(&self) -> Value {
        self.0.json()
    }
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let ttl = ttl(&a.ttl)?;
    let l = a.t.lease(ctx)?;
    l.renew(ttl)?;
    Done::show(Renewed(LeaseView::of(&l)))
}
