//! `tenure events`: the transition log, page after page; with `--follow`,
//! new events as they come. Printing stops quietly when stdout goes away.

use super::{Ctx, Done};
use crate::exit;
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::Value;
use std::io::{self, Write};
use std::time::Duration;
use tenure::Event;

#[derive(clap::Args)]
pub struct Args {
    /// Only this production.
    #[arg(short, long)]
    production: Option<String>,
    /// Only events after this sequence number.
    #[arg(long, default_value_t = 0)]
    after: u64,
    /// Page size (at most 10000).
    #[arg(long, default_value_t = 1000)]
    limit: usize,
    /// Keep printing new events until interrupted.
    #[arg(long)]
    follow: bool,
}

/// One event, one line.
struct Line<'a>(&'a Event);

impl Render for Line<'_> {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let e = self.0;
        let line = format!(
            "{:>6} {} {:<20} {}/{} {} {}{}{}",
            e.seq,
            out::time(e.at_us),
            e.kind.as_str(),
            e.production,
            e.job.as_deref().unwrap_or("-"),
            e.state.map(|s| s.as_str()).unwrap_or("-"),
            e.holder
                .as_deref()
                .map(|h| format!("holder={h} "))
                .unwrap_or_default(),
            e.claim_id
                .map(|c| format!("claim={c} "))
                .unwrap_or_default(),
            e.detail
        );
        writeln!(o, "{}", line.trim_end())
    }

    fn json(&self) -> Value {
        out::event(self.0)
    }
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let auth = ctx.open()?;
    let mut after = a.after;
    loop {
        let evs = match &a.production {
            Some(p) => auth.production_events(p, after, a.limit)?,
            None => auth.events(after, a.limit)?,
        };
        let mut stdout = io::stdout().lock();
        for e in &evs {
            after = e.seq;
            if out::write(ctx.json, &Line(e), &mut stdout).is_err() {
                return Done::exit(exit::OK);
            }
        }
        if stdout.flush().is_err() {
            return Done::exit(exit::OK);
        }
        drop(stdout);
        if !a.follow {
            if evs.len() == a.limit.clamp(1, tenure::MAX_PAGE) {
                continue; // more pages
            }
            break;
        }
        if evs.is_empty() {
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    Done::exit(exit::OK)
}
