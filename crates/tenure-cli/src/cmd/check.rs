//! `tenure check`: the offline invariant check; exit 3 on any violation.

use super::{Ctx, Done};
use crate::exit;
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::Value;
use std::io::{self, Write};
use tenure::CheckReport;

struct Check(CheckReport);

impl Render for Check {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let r = &self.0;
        let verdict = if r.ok() {
            "no violations".to_string()
        } else {
            format!("{} violation(s)", r.violations.len())
        };
        let from = match r.history_horizon {
            0 => "the whole history".to_string(),
            h => format!("events after {h} (earlier ones were pruned)"),
        };
        writeln!(
            o,
            "schema version {}, {} jobs, {} events from {from}: {verdict}",
            r.schema_version, r.jobs, r.events
        )?;
        for v in &r.violations {
            writeln!(o, "  violation: {v}")?;
        }
        Ok(())
    }

    fn json(&self) -> Value {
        out::check(&self.0)
    }
}

pub fn run(ctx: &Ctx) -> R<Done> {
    let r = ctx.open()?.check()?;
    let code = if r.ok() { exit::OK } else { exit::VIOLATIONS };
    Done::show_exit(Check(r), code)
}
