//! `tenure clock`: the clock, the durable high-water mark, and whether
//! guarded operations are blocked.

use super::{Ctx, Done};
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::Value;
use std::io::{self, Write};
use tenure::ClockReading;

struct Clock(ClockReading);

impl Render for Clock {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let c = &self.0;
        writeln!(o, "now        {} ({} us)", out::time(c.now_us), c.now_us)?;
        writeln!(o, "high-water {} ({} us)", out::time(c.mark_us), c.mark_us)?;
        writeln!(
            o,
            "blocked    {}",
            if c.blocked {
                "yes: the clock reads below the high-water mark; guarded operations are refused"
            } else {
                "no"
            }
        )
    }

    fn json(&self) -> Value {
        out::clock(&self.0)
    }
}

pub fn run(ctx: &Ctx) -> R<Done> {
    Done::show(Clock(ctx.open()?.clock()?))
}
