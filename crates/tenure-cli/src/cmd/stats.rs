//! `tenure stats`: queue statistics per production (the core's
//! `Authority::stats`); with `--watch`, again every `--interval` until
//! interrupted. Printing stops quietly when stdout goes away.

use super::{Ctx, Done};
use crate::exit;
use crate::fail::R;
use crate::out::{self, Render};
use serde_json::Value;
use std::io::{self, Write};
use std::time::Duration;
use tenure::{Percentiles, Stats, StatsQuery};

#[derive(clap::Args)]
pub struct Args {
    /// Only this production.
    #[arg(short, long)]
    production: Option<String>,
    /// Count live leases expiring within this long (a duration).
    #[arg(long, default_value = "30s")]
    horizon: String,
    /// The flow window (a duration).
    #[arg(long, default_value = "60s")]
    window: String,
    /// Print again every --interval until interrupted.
    #[arg(long)]
    watch: bool,
    /// The pause between two prints of --watch (a duration).
    #[arg(long, default_value = "2s")]
    interval: String,
    /// With --watch: stop after this many prints (0: never).
    #[arg(long, default_value_t = 0, hide = true)]
    count: u64,
}

struct Shown(Stats);

fn ms(d: Option<Duration>) -> String {
    d.map_or_else(
        || "-".to_owned(),
        |d| format!("{:.1}ms", d.as_secs_f64() * 1e3),
    )
}

fn pct(p: &Percentiles) -> String {
    format!(
        "p50 {} p95 {} p99 {} (n={})",
        ms(p.p50),
        ms(p.p95),
        ms(p.p99),
        p.count
    )
}

impl Render for Shown {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let s = &self.0;
        writeln!(
            o,
            "now {} high-water {} window {}s horizon {}s",
            out::time(s.now_us),
            out::time(s.high_water_us),
            s.window.as_secs_f64(),
            s.horizon.as_secs_f64()
        )?;
        for p in &s.productions {
            let f = &p.flow;
            writeln!(
                o,
                "{}{}",
                p.name,
                if p.cancelled { " (cancelled)" } else { "" }
            )?;
            writeln!(
                o,
                "  waiting   due {} later {}  oldest due {}  next due {}",
                p.waiting_due,
                p.waiting_later,
                ms(p.oldest_due_age),
                p.next_due_us.map_or_else(|| "-".to_owned(), out::time)
            )?;
            writeln!(
                o,
                "  claimed   live {} expired {}  expiring within horizon {}  most attempts {}",
                p.claimed_live, p.claimed_expired, p.expiring_within, p.max_live_attempts
            )?;
            writeln!(
                o,
                "  ended     completed {} failed {} cancelled {}",
                p.completed, p.failed, p.cancelled_jobs
            )?;
            writeln!(o, "  gates     {}", out::gates_text(&p.gates))?;
            writeln!(
                o,
                "  flow      claims {:.2}/s completions {:.2}/s failures {:.2}/s retryable {:.2}/s permanent, expiries {:.2}/s{}",
                f.per_second(f.claims),
                f.per_second(f.completions),
                f.per_second(f.retryable_failures),
                f.per_second(f.permanent_failures),
                f.per_second(f.expiries),
                if f.truncated { " (newest events of the window only)" } else { "" }
            )?;
            writeln!(o, "  wait      {}", pct(&f.wait))?;
            writeln!(o, "  run       {}", pct(&f.run))?;
        }
        Ok(())
    }

    fn json(&self) -> Value {
        out::stats(&self.0)
    }
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let q = StatsQuery {
        production: a.production.clone(),
        horizon: super::ttl_or_delay(&a.horizon)?,
        window: super::ttl_or_delay(&a.window)?,
    };
    let interval = super::ttl_or_delay(&a.interval)?;
    let auth = ctx.open()?;
    if !a.watch {
        return Done::show(Shown(auth.stats(&q)?));
    }
    let mut n = 0u64;
    loop {
        let s = Shown(auth.stats(&q)?);
        let mut stdout = io::stdout().lock();
        if out::write(ctx.json, &s, &mut stdout).is_err() || stdout.flush().is_err() {
            return Done::exit(exit::OK);
        }
        drop(stdout);
        n += 1;
        if a.count != 0 && n >= a.count {
            return Done::exit(exit::OK);
        }
        std::thread::sleep(interval);
    }
}
