//! `tenure job submit`: one job (payload from a file or stdin), or many from
//! JSON lines in one edit.

use super::{backoff, delay, Ctx, Done, Prod};
use crate::fail::{local, R};
use crate::out::Render;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use tenure::{Backoff, Delay, Error, JobSpec, Submitted};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    p: Prod,
    /// Job ID.
    #[arg(required_unless_present = "jsonl", conflicts_with = "jsonl")]
    job: Option<String>,
    /// Read the payload from FILE (default: stdin unless it is a terminal).
    #[arg(long)]
    payload_file: Option<PathBuf>,
    /// Claims allowed in total (1..=1000).
    #[arg(long, default_value_t = tenure::DEFAULT_MAX_ATTEMPTS)]
    max_attempts: u32,
    /// Higher runs first.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Not claimable until DUR after the submission is recorded (0s ..= 8784h; 0s: at once).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    delay: Option<String>,
    /// Hard ownership limit per claim: no lease lives past claim time + DUR (positive, at most 8784h).
    #[arg(long, value_name = "DUR", allow_hyphen_values = true)]
    max_hold: Option<String>,
    /// Retry back-off: after the retryable failure of attempt n the job is due
    /// after min(CAP, BASE * 2^(n-1)) (overrides the production's).
    #[arg(long, value_name = "BASE,CAP", allow_hyphen_values = true)]
    backoff: Option<String>,
    /// Submit one job per line, all in one edit: {"job":ID,"payload":TEXT,"priority":N,
    /// "max_attempts":N,"delay":DUR,"max_hold":DUR,"backoff":"BASE,CAP"}; the flags
    /// --priority .. --backoff are the defaults of lines that leave a field out.
    #[arg(long, conflicts_with_all = ["payload_file"])]
    jsonl: Option<PathBuf>,
}

/// What a job gets from the flags (and a `--jsonl` line that leaves a field out).
#[derive(Clone)]
struct Defaults {
    priority: i32,
    max_attempts: u32,
    delay: Option<Delay>,
    max_hold: Option<Delay>,
    backoff: Option<Backoff>,
}

impl Defaults {
    fn of(a: &Args) -> R<Defaults> {
        Ok(Defaults {
            priority: a.priority,
            max_attempts: a.max_attempts,
            delay: a.delay.as_deref().map(delay).transpose()?,
            max_hold: a.max_hold.as_deref().map(delay).transpose()?,
            backoff: a.backoff.as_deref().map(backoff).transpose()?,
        })
    }

    /// A spec of `job` with these settings.
    fn spec(&self, job: &str, payload: Vec<u8>) -> JobSpec {
        let mut spec = JobSpec::new(job, payload)
            .priority(self.priority)
            .max_attempts(self.max_attempts);
        spec.not_before = self.delay;
        spec.max_hold = self.max_hold;
        spec.backoff = self.backoff;
        spec
    }
}

fn result(s: Submitted) -> &'static str {
    match s {
        Submitted::Created => "created",
        Submitted::Existing => "existing",
    }
}

struct One {
    production: String,
    job: String,
    result: Submitted,
}

impl Render for One {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        writeln!(
            o,
            "{} {}/{}",
            result(self.result),
            self.production,
            self.job
        )
    }

    fn json(&self) -> Value {
        json!({"production": self.production, "job": self.job, "result": result(self.result)})
    }
}

struct Many {
    production: String,
    /// (job, result), in the order of the input lines.
    jobs: Vec<(String, Submitted)>,
}

impl Render for Many {
    fn text(&self, o: &mut dyn Write) -> io::Result<()> {
        let n = self.jobs.len();
        let created = self
            .jobs
            .iter()
            .filter(|(_, r)| *r == Submitted::Created)
            .count();
        writeln!(
            o,
            "submitted {n} job(s) to {}: {created} created, {} already existed",
            self.production,
            n - created
        )
    }

    fn json(&self) -> Value {
        json!({
            "production": self.production,
            "submitted": self
                .jobs
                .iter()
                .map(|(job, r)| json!({"job": job, "result": result(*r)}))
                .collect::<Vec<_>>(),
        })
    }
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let defaults = Defaults::of(&a)?;
    let production = a.p.production;
    if let Some(path) = a.jsonl {
        let specs = parse_jsonl(&path, &defaults)?;
        let auth = ctx.open()?;
        let res = auth.submit_many(&production, &specs)?;
        let jobs = specs.into_iter().map(|s| s.job).zip(res).collect();
        return Done::show(Many { production, jobs });
    }
    let job = a.job.unwrap_or_default();
    let payload = read_payload(&a.payload_file)?;
    let spec = defaults.spec(&job, payload);
    let auth = ctx.open()?;
    let result = auth.submit(&production, &spec)?;
    Done::show(One {
        production,
        job,
        result,
    })
}

fn read_payload(file: &Option<PathBuf>) -> R<Vec<u8>> {
    let mut buf = Vec::new();
    match file {
        Some(p) if p.as_os_str() != "-" => {
            File::open(p)
                .and_then(|mut f| f.read_to_end(&mut buf))
                .map_err(local(format!("reading payload file {}", p.display())))?;
        }
        Some(_) => {
            io::stdin()
                .read_to_end(&mut buf)
                .map_err(local("reading the payload from stdin"))?;
        }
        None => {
            let stdin = io::stdin();
            if !stdin.is_terminal() {
                stdin
                    .lock()
                    .read_to_end(&mut buf)
                    .map_err(local("reading the payload from stdin"))?;
            }
        }
    }
    Ok(buf)
}

fn parse_jsonl(path: &Path, defaults: &Defaults) -> R<Vec<JobSpec>> {
    let mut text = String::new();
    if path.as_os_str() == "-" {
        io::stdin()
            .read_to_string(&mut text)
            .map_err(local("reading jobs from stdin"))?;
    } else {
        File::open(path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .map_err(local(format!("reading {}", path.display())))?;
    }
    let mut specs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |m: String| format!("{}:{}: {m}", path.display(), i + 1);
        let spec = parse_line(line, defaults).map_err(|e| match e {
            LineError::Invalid(m) => Error::InvalidArgument(at(m)),
            LineError::Duration(m) => Error::InvalidDuration(at(m)),
        })?;
        specs.push(spec);
    }
    Ok(specs)
}

/// Why a `--jsonl` line was refused: a malformed line is `invalid_argument`,
/// a bad duration or back-off `invalid_duration` (as the flags are).
enum LineError {
    Invalid(String),
    Duration(String),
}

impl From<&str> for LineError {
    fn from(m: &str) -> LineError {
        LineError::Invalid(m.into())
    }
}

impl From<String> for LineError {
    fn from(m: String) -> LineError {
        LineError::Invalid(m)
    }
}

/// The fields a `--jsonl` line may have.
const FIELDS: [&str; 7] = [
    "job",
    "payload",
    "priority",
    "max_attempts",
    "delay",
    "max_hold",
    "backoff",
];

/// One line of `--jsonl`; the error says what is wrong with it.
fn parse_line(line: &str, defaults: &Defaults) -> Result<JobSpec, LineError> {
    let v: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let obj = v.as_object().ok_or("expected a JSON object")?;
    for k in obj.keys() {
        if !FIELDS.contains(&k.as_str()) {
            return Err(format!("unknown field {k:?} ({})", FIELDS.join(", ")).into());
        }
    }
    let job = obj
        .get("job")
        .and_then(Value::as_str)
        .ok_or("\"job\" must be a string")?;
    let payload = match obj.get("payload") {
        None => "",
        Some(p) => p.as_str().ok_or("\"payload\" must be a string")?,
    };
    let mut d = defaults.clone();
    if let Some(p) = obj.get("priority") {
        d.priority = p
            .as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or("\"priority\" must be a 32-bit integer")?;
    }
    if let Some(m) = obj.get("max_attempts") {
        d.max_attempts = m
            .as_u64()
            .and_then(|m| u32::try_from(m).ok())
            .ok_or("\"max_attempts\" must be a positive integer")?;
    }
    // A duration field is text in the flags' syntax.
    let text = |k: &str| -> Result<Option<&str>, LineError> {
        obj.get(k)
            .map(|v| {
                v.as_str()
                    .ok_or_else(|| format!("{k:?} must be a string (e.g. \"30s\")").into())
            })
            .transpose()
    };
    // The message of a refused duration, without its "invalid duration: " prefix.
    let bad = |e: Error| {
        LineError::Duration(match e {
            Error::InvalidDuration(m) => m,
            e => e.to_string(),
        })
    };
    if let Some(t) = text("delay")? {
        d.delay = Some(delay(t).map_err(bad)?);
    }
    if let Some(t) = text("max_hold")? {
        d.max_hold = Some(delay(t).map_err(bad)?);
    }
    if let Some(t) = text("backoff")? {
        d.backoff = Some(backoff(t).map_err(bad)?);
    }
    Ok(d.spec(job, payload.as_bytes().to_vec()))
}
