//! `tenure job submit`: one job (payload from a file or stdin), or many from
//! JSON lines in one edit.

use super::{Ctx, Done, Prod};
use crate::fail::{local, R};
use crate::out::Render;
use serde_json::{json, Value};
use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use tenure::{Error, JobSpec, Submitted};

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
    /// Submit one job per line, all in one edit: {"job":ID,"payload":TEXT,"priority":N,"max_attempts":N}.
    #[arg(long, conflicts_with_all = ["payload_file"])]
    jsonl: Option<PathBuf>,
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
    let production = a.p.production;
    if let Some(path) = a.jsonl {
        let specs = parse_jsonl(&path)?;
        let auth = ctx.open()?;
        let res = auth.submit_many(&production, &specs)?;
        let jobs = specs.into_iter().map(|s| s.job).zip(res).collect();
        return Done::show(Many { production, jobs });
    }
    let job = a.job.unwrap_or_default();
    let payload = read_payload(&a.payload_file)?;
    let spec = JobSpec::new(job.clone(), payload)
        .priority(a.priority)
        .max_attempts(a.max_attempts);
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

fn parse_jsonl(path: &Path) -> R<Vec<JobSpec>> {
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
        let spec = parse_line(line)
            .map_err(|m| Error::InvalidArgument(format!("{}:{}: {m}", path.display(), i + 1)))?;
        specs.push(spec);
    }
    Ok(specs)
}

/// One line of `--jsonl`; the error says what is wrong with it.
fn parse_line(line: &str) -> Result<JobSpec, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let obj = v.as_object().ok_or("expected a JSON object")?;
    for k in obj.keys() {
        if !["job", "payload", "priority", "max_attempts"].contains(&k.as_str()) {
            return Err(format!(
                "unknown field {k:?} (job, payload, priority, max_attempts)"
            ));
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
    let mut spec = JobSpec::new(job, payload.as_bytes().to_vec());
    if let Some(p) = obj.get("priority") {
        let p = p
            .as_i64()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or("\"priority\" must be a 32-bit integer")?;
        spec = spec.priority(p);
    }
    if let Some(m) = obj.get("max_attempts") {
        let m = m
            .as_u64()
            .and_then(|m| u32::try_from(m).ok())
            .ok_or("\"max_attempts\" must be a positive integer")?;
        spec = spec.max_attempts(m);
    }
    Ok(spec)
}
