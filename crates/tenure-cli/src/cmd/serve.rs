//! `tenure serve`: a read-only HTTP view of a store — Prometheus `/metrics`,
//! the JSON API under `/api/` and the dashboard page (its assets are
//! embedded in the binary; see `serve/`).
//!
//! Read-only: every answer comes from the core's read calls (`stats`,
//! `productions`, `jobs`, `job`, `payload`, `events`, `clock`); the store is never
//! created by `serve` and no endpoint writes. Security: the listener binds
//! loopback unless `--listen` names another address, which requires
//! `--token-file`; `/api/` and `/metrics` then need `Authorization: Bearer
//! TOKEN`, compared in constant time (as SHA-256 digests, so the length is
//! not compared either). The page and its script and style carry no store
//! data and are served without the token. Requests are GET or HEAD with no
//! body; headers are bounded (16 KiB), a connection must send its headers
//! within 5 s and is closed after 60 s, at most 1024 connections are open at
//! once and 8 store reads run at once.

use super::{Ctx, Done};
use crate::exit;
use crate::fail::{local, usage, R};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use subtle::ConstantTimeEq;
use tenure::{Authority, Error, JobState, JobView, ListQuery, Options, StatsQuery};
use tokio::sync::Semaphore;
use zeroize::Zeroizing;

/// Longest request head (request line and headers) accepted.
const MAX_HEAD: usize = 16 * 1024;
/// Time a connection has to send a request's headers.
const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Time after which a connection is closed, whatever it is doing.
const CONN_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections open at once; more are closed at accept.
const MAX_CONNS: usize = 1024;
/// Store reads running at once; more requests wait their turn.
const MAX_READS: usize = 8;
/// Largest page of jobs (`limit=`) an API answer holds.
const MAX_JOB_PAGE: usize = 500;
/// Largest page of events (`limit=`) an API answer holds.
const MAX_EVENT_PAGE: usize = 1000;

const INDEX_HTML: &str = include_str!("serve/index.html");
const APP_JS: &str = include_str!("serve/app.js");
const APP_CSS: &str = include_str!("serve/app.css");

/// The page's Content-Security-Policy: only this server's own script,
/// style and API; no inline script or style, no frames, no forms.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[derive(clap::Args)]
pub struct Args {
    /// The address to listen on (IP:PORT; port 0 picks one). Any address
    /// but loopback requires --token-file.
    #[arg(long, default_value = "127.0.0.1:8425")]
    listen: String,
    /// A file holding the bearer token that /api/ and /metrics require
    /// (surrounding whitespace is ignored).
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// Count live leases expiring within this long (a duration).
    #[arg(long, default_value = "30s")]
    horizon: String,
    /// The flow window of the figures (a duration).
    #[arg(long, default_value = "60s")]
    window: String,
}

/// What every request handler shares.
struct State {
    auth: Authority,
    /// SHA-256 of the bearer token, when one is required.
    token: Option<[u8; 32]>,
    horizon: Duration,
    window: Duration,
    reads: Semaphore,
    requests: AtomicU64,
}

/// An answer: status, content type, body.
struct Answer {
    status: StatusCode,
    kind: &'static str,
    body: Bytes,
}

impl Answer {
    fn json(v: Value) -> Answer {
        Answer {
            status: StatusCode::OK,
            kind: "application/json",
            body: Bytes::from(v.to_string()),
        }
    }

    fn text(status: StatusCode, kind: &'static str, body: impl Into<Bytes>) -> Answer {
        Answer {
            status,
            kind,
            body: body.into(),
        }
    }

    /// A short error message (JSON `{"error": ...}`).
    fn err(status: StatusCode, msg: impl std::fmt::Display) -> Answer {
        Answer {
            status,
            kind: "application/json",
            body: Bytes::from(json!({ "error": msg.to_string() }).to_string()),
        }
    }

    fn from_core(e: Error) -> Answer {
        let status = match &e {
            Error::NotFound(_) => StatusCode::NOT_FOUND,
            Error::InvalidArgument(_) => StatusCode::BAD_REQUEST,
            Error::HistoryPruned { .. } => StatusCode::GONE,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        Answer::err(status, e)
    }
}

/// Read the token file: the token is its content without surrounding
/// whitespace, and must not be empty.
fn read_token(path: &PathBuf) -> R<[u8; 32]> {
    let raw = Zeroizing::new(
        std::fs::read(path).map_err(local(format!("cannot read token file {}", path.display())))?,
    );
    let t = raw.trim_ascii();
    if t.is_empty() {
        return Err(usage(format!("token file {} is empty", path.display())));
    }
    Ok(Sha256::digest(t).into())
}

/// Whether `addr` only accepts connections from this machine.
fn loopback(addr: &SocketAddr) -> bool {
    addr.ip().is_loopback()
}

pub fn run(ctx: &Ctx, a: Args) -> R<Done> {
    let addr: SocketAddr = a
        .listen
        .parse()
        .map_err(|_| usage(format!("--listen {:?}: expected IP:PORT", a.listen)))?;
    let token = match &a.token_file {
        Some(f) => Some(read_token(f)?),
        None if !loopback(&addr) => {
            return Err(usage(format!(
                "--listen {addr} is not a loopback address: pass --token-file FILE"
            )))
        }
        None => None,
    };
    let horizon = super::ttl_or_delay(&a.horizon)?;
    let window = super::ttl_or_delay(&a.window)?;
    let db = ctx.db()?;
    let url = db.to_string_lossy().starts_with("postgres");
    if !url && !db.exists() {
        return Err(usage(format!("no store at {}", db.display())));
    }
    let auth = Authority::open(&db, &Options::new())?;
    let listener =
        std::net::TcpListener::bind(addr).map_err(local(format!("cannot listen on {addr}")))?;
    listener
        .set_nonblocking(true)
        .map_err(local("cannot listen"))?;
    let bound = listener.local_addr().map_err(local("cannot listen"))?;
    eprintln!("tenure serve: dashboard at http://{bound}/ (metrics at /metrics)");
    let state = Arc::new(State {
        auth,
        token,
        horizon,
        window,
        reads: Semaphore::new(MAX_READS),
        requests: AtomicU64::new(0),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(local("cannot start the server runtime"))?;
    rt.block_on(serve(listener, state))?;
    Done::exit(exit::OK)
}

async fn serve(listener: std::net::TcpListener, state: Arc<State>) -> R<()> {
    let listener = tokio::net::TcpListener::from_std(listener).map_err(local("cannot listen"))?;
    let conns = Arc::new(Semaphore::new(MAX_CONNS));
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            // A failed accept (out of descriptors, a reset) ends only that connection.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            drop(stream);
            continue;
        };
        let st = state.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let svc = service_fn(move |req| {
                let st = st.clone();
                async move { Ok::<_, Infallible>(respond(st, req).await) }
            });
            let conn = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .max_buf_size(MAX_HEAD)
                .serve_connection(TokioIo::new(stream), svc);
            let _ = tokio::time::timeout(CONN_TIMEOUT, conn).await;
        });
    }
}

async fn respond(st: Arc<State>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    st.requests.fetch_add(1, Ordering::Relaxed);
    let head = req.method() == Method::HEAD;
    let a = answer(&st, &req).await;
    let mut r = Response::new(Full::new(if head { Bytes::new() } else { a.body }));
    *r.status_mut() = a.status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(a.kind));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if a.status == StatusCode::UNAUTHORIZED {
        h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

async fn answer(st: &Arc<State>, req: &Request<Incoming>) -> Answer {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return Answer::err(StatusCode::METHOD_NOT_ALLOWED, "only GET and HEAD");
    }
    let has_body = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .is_some_and(|v| v.as_bytes() != b"0")
        || req.headers().contains_key(header::TRANSFER_ENCODING);
    if has_body {
        return Answer::err(StatusCode::PAYLOAD_TOO_LARGE, "requests carry no body");
    }
    let path = req.uri().path().to_owned();
    match path.as_str() {
        "/" | "/index.html" => {
            return Answer::text(StatusCode::OK, "text/html; charset=utf-8", INDEX_HTML)
        }
        "/app.js" => return Answer::text(StatusCode::OK, "text/javascript; charset=utf-8", APP_JS),
        "/app.css" => return Answer::text(StatusCode::OK, "text/css; charset=utf-8", APP_CSS),
        // Browsers ask for it unprompted: no icon, and no error either.
        "/favicon.ico" => return Answer::text(StatusCode::NO_CONTENT, "image/x-icon", ""),
        _ => {}
    }
    if path != "/metrics" && !path.starts_with("/api/") {
        return Answer::err(StatusCode::NOT_FOUND, "no such page");
    }
    if !authorized(st, req) {
        return Answer::err(StatusCode::UNAUTHORIZED, "a bearer token is required");
    }
    let query = match Query::parse(req.uri().query().unwrap_or("")) {
        Ok(q) => q,
        Err(a) => return a,
    };
    let Ok(_turn) = st.reads.acquire().await else {
        return Answer::err(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    };
    let st2 = st.clone();
    match tokio::task::spawn_blocking(move || route(&st2, &path, &query)).await {
        Ok(a) => a,
        Err(_) => Answer::err(StatusCode::INTERNAL_SERVER_ERROR, "the read failed"),
    }
}

/// Whether the request carries the bearer token (or none is required).
fn authorized(st: &State, req: &Request<Incoming>) -> bool {
    let Some(want) = &st.token else {
        return true;
    };
    let Some(v) = req.headers().get(header::AUTHORIZATION) else {
        return false;
    };
    let Some(t) = v.as_bytes().strip_prefix(b"Bearer ") else {
        return false;
    };
    let got: [u8; 32] = Sha256::digest(t.trim_ascii()).into();
    bool::from(got.ct_eq(want))
}

/// A request's query string, decoded; every key may appear once.
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(q: &str) -> Result<Query, Answer> {
        let mut out: Vec<(String, String)> = Vec::new();
        for part in q.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let (k, v) = (decode(k)?, decode(v)?);
            if out.iter().any(|(o, _)| *o == k) {
                return Err(Answer::err(
                    StatusCode::BAD_REQUEST,
                    format!("query parameter {k:?} given twice"),
                ));
            }
            out.push((k, v));
        }
        Ok(Query(out))
    }

    /// Refuse any parameter but `allowed`.
    fn only(&self, allowed: &[&str]) -> Result<(), Answer> {
        match self.0.iter().find(|(k, _)| !allowed.contains(&k.as_str())) {
            Some((k, _)) => Err(Answer::err(
                StatusCode::BAD_REQUEST,
                format!("unknown query parameter {k:?}"),
            )),
            None => Ok(()),
        }
    }

    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(o, _)| o == k).map(|(_, v)| v.as_str())
    }

    fn number(&self, k: &str, default: u64, max: u64) -> Result<u64, Answer> {
        match self.get(k) {
            None => Ok(default),
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n <= max => Ok(n),
                _ => Err(Answer::err(
                    StatusCode::BAD_REQUEST,
                    format!("{k}: expected a whole number 0..={max}"),
                )),
            },
        }
    }

    fn duration(&self, k: &str, default: Duration) -> Result<Duration, Answer> {
        match self.get(k) {
            None => Ok(default),
            Some(v) => super::ttl_or_delay(v).map_err(|_| {
                Answer::err(
                    StatusCode::BAD_REQUEST,
                    format!("{k}: expected a duration such as 30s"),
                )
            }),
        }
    }

    fn required(&self, k: &str) -> Result<&str, Answer> {
        self.get(k).ok_or_else(|| {
            Answer::err(
                StatusCode::BAD_REQUEST,
                format!("missing query parameter {k:?}"),
            )
        })
    }
}

/// Percent-decoding of a query component (`+` is a space); the result must be UTF-8.
fn decode(s: &str) -> Result<String, Answer> {
    let bad = || Answer::err(StatusCode::BAD_REQUEST, "malformed query string");
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let h = b.get(i + 1..i + 3).ok_or_else(bad)?;
                let h = std::str::from_utf8(h).map_err(|_| bad())?;
                out.push(u8::from_str_radix(h, 16).map_err(|_| bad())?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

fn route(st: &State, path: &str, q: &Query) -> Answer {
    let r = match path {
        "/metrics" => q.only(&[]).and_then(|()| metrics(st)),
        "/api/stats" => api_stats(st, q),
        "/api/productions" => q.only(&[]).and_then(|()| api_productions(st)),
        "/api/jobs" => api_jobs(st, q),
        "/api/job" => api_job(st, q),
        "/api/failures" => api_failures(st, q),
        "/api/expiring" => api_expiring(st, q),
        "/api/clock" => q
            .only(&[])
            .and_then(|()| st.auth.clock().map_err(Answer::from_core))
            .map(|c| Answer::json(crate::out::clock(&c))),
        "/api/events" => api_events(st, q),
        _ => Err(Answer::err(StatusCode::NOT_FOUND, "no such API")),
    };
    r.unwrap_or_else(|a| a)
}

fn stats(
    st: &State,
    production: Option<&str>,
    horizon: Duration,
    window: Duration,
) -> Result<tenure::Stats, Answer> {
    st.auth
        .stats(&StatsQuery {
            production: production.map(str::to_owned),
            horizon,
            window,
        })
        .map_err(Answer::from_core)
}

fn api_stats(st: &State, q: &Query) -> Result<Answer, Answer> {
    q.only(&["production", "horizon", "window"])?;
    let s = stats(
        st,
        q.get("production"),
        q.duration("horizon", st.horizon)?,
        q.duration("window", st.window)?,
    )?;
    Ok(Answer::json(crate::out::stats(&s)))
}

fn api_productions(st: &State) -> Result<Answer, Answer> {
    let ps = st.auth.productions().map_err(Answer::from_core)?;
    Ok(Answer::json(json!({
        "productions": ps.iter().map(crate::out::production).collect::<Vec<_>>(),
    })))
}

/// A job as the API shows it: the observation, with its payload as size
/// and SHA-256 digest only.
fn job(st: &State, v: &JobView) -> Result<Value, Answer> {
    let mut j = crate::out::job(v);
    let payload = Zeroizing::new(
        st.auth
            .payload(&v.production, &v.job)
            .map_err(Answer::from_core)?,
    );
    j["payload_sha256"] = Value::String(crate::out::hex(&Sha256::digest(&*payload)));
    Ok(j)
}

/// A page of a production's jobs (in `state`, when given), and where the
/// next page starts when this one is full.
fn page(
    st: &State,
    q: &Query,
    state: Option<JobState>,
) -> Result<(Vec<JobView>, Option<String>), Answer> {
    let production = q.required("production")?;
    let limit = q.number("limit", 50, MAX_JOB_PAGE as u64)?.max(1) as usize;
    let jobs = st
        .auth
        .jobs(
            production,
            &ListQuery {
                state,
                after: q.get("after").map(str::to_owned),
                limit,
            },
        )
        .map_err(Answer::from_core)?;
    let next = (jobs.len() == limit)
        .then(|| jobs.last().map(|j| j.job.clone()))
        .flatten();
    Ok((jobs, next))
}

fn jobs_answer(
    st: &State,
    jobs: &[JobView],
    next: Option<String>,
    extra: Value,
) -> Result<Answer, Answer> {
    let list = jobs
        .iter()
        .map(|j| job(st, j))
        .collect::<Result<Vec<_>, _>>()?;
    let mut v = json!({ "jobs": list, "next_after": next });
    if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
        m.extend(e);
    }
    Ok(Answer::json(v))
}

fn api_jobs(st: &State, q: &Query) -> Result<Answer, Answer> {
    q.only(&["production", "state", "after", "limit"])?;
    let state = match q.get("state") {
        None => None,
        Some(s) => Some(s.parse::<JobState>().map_err(|_| {
            Answer::err(
                StatusCode::BAD_REQUEST,
                format!("state: no such state {s:?}"),
            )
        })?),
    };
    let (jobs, next) = page(st, q, state)?;
    jobs_answer(st, &jobs, next, json!({}))
}

/// One job with its progress checkpoint as size and SHA-256 digest only.
fn api_job(st: &State, q: &Query) -> Result<Answer, Answer> {
    q.only(&["production", "job"])?;
    let v = st
        .auth
        .job(q.required("production")?, q.required("job")?)
        .map_err(Answer::from_core)?;
    let mut j = job(st, &v)?;
    let progress = v.progress.as_deref();
    j["progress_len"] = json!(progress.map(<[u8]>::len));
    j["progress_sha256"] = json!(progress.map(|b| crate::out::hex(&Sha256::digest(b))));
    Ok(Answer::json(j))
}

fn api_failures(st: &State, q: &Query) -> Result<Answer, Answer> {
    q.only(&["production", "after", "limit"])?;
    let (jobs, next) = page(st, q, Some(JobState::Failed))?;
    jobs_answer(st, &jobs, next, json!({}))
}

/// Claimed jobs whose live lease expires within `within` of the clock
/// reading, from one page of the production's claimed jobs.
fn api_expiring(st: &State, q: &Query) -> Result<Answer, Answer> {
    q.only(&["production", "within", "after", "limit"])?;
    let within = q.duration("within", st.horizon)?;
    let now = st.auth.clock().map_err(Answer::from_core)?;
    let now_us = now.now_us.max(now.mark_us);
    let until = now_us.saturating_add(within.as_micros() as i64);
    let (jobs, next) = page(st, q, Some(JobState::Claimed))?;
    let mut close: Vec<JobView> = jobs
        .into_iter()
        .filter(|j| j.expires_us.is_some_and(|e| e <= until))
        .collect();
    close.sort_by_key(|j| j.expires_us);
    jobs_answer(
        st,
        &close,
        next,
        json!({ "now_us": now_us, "within_us": within.as_micros() as u64 }),
    )
}

fn api_events(st: &State, q: &Query) -> Result<Answer, Answer> {
    q.only(&["after", "limit", "tail"])?;
    let limit = q.number("limit", 100, MAX_EVENT_PAGE as u64)?.max(1) as usize;
    let after = match (q.get("after"), q.get("tail")) {
        (Some(_), Some(_)) => {
            return Err(Answer::err(
                StatusCode::BAD_REQUEST,
                "give after or tail, not both",
            ))
        }
        (_, Some(_)) => {
            let tail = q.number("tail", 50, MAX_EVENT_PAGE as u64)?;
            let head = head_seq(&st.auth).map_err(Answer::from_core)?;
            let horizon = st.auth.history_horizon().map_err(Answer::from_core)?;
            head.saturating_sub(tail).max(horizon)
        }
        _ => q.number("after", 0, i64::MAX as u64)?,
    };
    let ev = st.auth.events(after, limit).map_err(Answer::from_core)?;
    let next = ev.last().map_or(after, |e| e.seq);
    Ok(Answer::json(json!({
        "events": ev.iter().map(crate::out::event).collect::<Vec<_>>(),
        "next_after": next,
    })))
}

/// The sequence number of the newest event (the history horizon when no
/// event is left): found by galloping, then bisecting, with one-event
/// reads, so the tail of a long log costs a few dozen indexed reads.
fn head_seq(auth: &Authority) -> tenure::Result<u64> {
    let any_after = |seq: u64| auth.events(seq, 1).map(|e| !e.is_empty());
    // `lo`: the horizon, or a number with an event after it.
    let mut lo = auth.history_horizon()?;
    let mut step = 1024u64;
    let mut hi = loop {
        let probe = lo.saturating_add(step);
        if probe == lo || !any_after(probe)? {
            break probe;
        }
        lo = probe;
        step = step.saturating_mul(2);
    };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if any_after(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    // No event after `hi`; one after `lo` (then its number is `hi`) or none.
    Ok(if any_after(lo)? { hi } else { lo })
}

/// A Prometheus label value, escaped.
fn label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn secs(d: Option<Duration>) -> Option<f64> {
    d.map(|d| d.as_secs_f64())
}

/// `/metrics`: the core's statistics in the Prometheus text format.
fn metrics(st: &State) -> Result<Answer, Answer> {
    let s = stats(st, None, st.horizon, st.window)?;
    let mut o = String::new();
    let family = |o: &mut String,
                  name: &str,
                  kind: &str,
                  help: &str,
                  rows: &mut dyn Iterator<Item = (String, f64)>| {
        let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, v) in rows {
            if labels.is_empty() {
                let _ = writeln!(o, "{name} {v}");
            } else {
                let _ = writeln!(o, "{name}{{{labels}}} {v}");
            }
        }
    };
    let p = |n: &str| format!("production=\"{}\"", label(n));
    family(
        &mut o,
        "tenure_jobs",
        "gauge",
        "Jobs by observed state.",
        &mut s.productions.iter().flat_map(|x| {
            [
                ("waiting_due", x.waiting_due),
                ("waiting_later", x.waiting_later),
                ("claimed_live", x.claimed_live),
                ("claimed_expired", x.claimed_expired),
                ("completed", x.completed),
                ("failed", x.failed),
                ("cancelled", x.cancelled_jobs),
            ]
            .map(|(k, v)| (format!("{},state=\"{k}\"", p(&x.name)), v as f64))
        }),
    );
    family(
        &mut o,
        "tenure_oldest_due_age_seconds",
        "gauge",
        "How long the oldest due waiting job has been due (0: none).",
        &mut s
            .productions
            .iter()
            .map(|x| (p(&x.name), secs(x.oldest_due_age).unwrap_or(0.0))),
    );
    family(
        &mut o,
        "tenure_expiring_leases",
        "gauge",
        "Live leases expiring within the horizon.",
        &mut s
            .productions
            .iter()
            .map(|x| (p(&x.name), x.expiring_within as f64)),
    );
    family(
        &mut o,
        "tenure_max_live_attempts",
        "gauge",
        "Attempt count of the most-retried job with a live lease.",
        &mut s
            .productions
            .iter()
            .map(|x| (p(&x.name), x.max_live_attempts as f64)),
    );
    family(
        &mut o,
        "tenure_production_paused",
        "gauge",
        "Whether the production is paused (1) or not (0).",
        &mut s.productions.iter().map(|x| {
            (
                p(&x.name),
                if x.gates.paused_us.is_some() {
                    1.0
                } else {
                    0.0
                },
            )
        }),
    );
    family(
        &mut o,
        "tenure_production_paused_since_seconds",
        "gauge",
        "When a paused production was paused (seconds since the epoch; only paused productions).",
        &mut s
            .productions
            .iter()
            .filter_map(|x| x.gates.paused_us.map(|t| (p(&x.name), t as f64 / 1e6))),
    );
    family(
        &mut o,
        "tenure_production_concurrency_limit",
        "gauge",
        "The production's concurrency limit (only productions with one).",
        &mut s
            .productions
            .iter()
            .filter_map(|x| x.gates.concurrency.map(|k| (p(&x.name), f64::from(k)))),
    );
    family(
        &mut o,
        "tenure_production_rate_limit_per_second",
        "gauge",
        "The production's rate limit in claims per second (only productions with one).",
        &mut s.productions.iter().filter_map(|x| {
            x.gates
                .rate
                .map(|r| (p(&x.name), f64::from(r.claims) / r.interval.as_secs_f64()))
        }),
    );
    family(
        &mut o,
        "tenure_production_rate_limit_burst",
        "gauge",
        "The production's rate limit burst (only productions with a rate limit).",
        &mut s
            .productions
            .iter()
            .filter_map(|x| x.gates.rate.map(|r| (p(&x.name), f64::from(r.burst)))),
    );
    // The core keeps no cumulative flow figures: the flow is over the
    // window, so every figure of it is a gauge (it goes down as events
    // leave the window), never a counter or a summary.
    for (name, help, f) in [
        (
            "claims",
            "Claims per second over the flow window.",
            (|f: &tenure::Flow| f.claims) as fn(&tenure::Flow) -> u64,
        ),
        (
            "completions",
            "Completions per second over the flow window.",
            |f| f.completions,
        ),
        (
            "retryable_failures",
            "Retryable failures per second over the flow window.",
            |f| f.retryable_failures,
        ),
        (
            "permanent_failures",
            "Permanent failures per second over the flow window.",
            |f| f.permanent_failures,
        ),
        (
            "expiries",
            "Lease expiries per second over the flow window.",
            |f| f.expiries,
        ),
    ] {
        family(
            &mut o,
            &format!("tenure_{name}_per_second"),
            "gauge",
            help,
            &mut s
                .productions
                .iter()
                .map(|x| (p(&x.name), x.flow.per_second(f(&x.flow)))),
        );
    }
    for (name, what, pick) in [
        (
            "wait",
            "Queue wait from due to claim",
            (|f: &tenure::Flow| &f.wait) as fn(&tenure::Flow) -> &tenure::Percentiles,
        ),
        ("run", "Run time from claim to close", |f| &f.run),
    ] {
        family(
            &mut o,
            &format!("tenure_{name}_seconds"),
            "gauge",
            &format!("{what}: nearest-rank percentiles over the flow window (absent: none in it)."),
            &mut s.productions.iter().flat_map(|x| {
                let pc = pick(&x.flow);
                // `quantile` is the label of summaries only: a gauge's
                // percentile is named by `percentile`.
                [("50", pc.p50), ("95", pc.p95), ("99", pc.p99)]
                    .into_iter()
                    .filter_map(|(q, v)| {
                        secs(v).map(|v| (format!("{},percentile=\"{q}\"", p(&x.name)), v))
                    })
                    .collect::<Vec<_>>()
            }),
        );
        family(
            &mut o,
            &format!("tenure_{name}_samples"),
            "gauge",
            &format!("{what}: how many durations the flow window holds."),
            &mut s
                .productions
                .iter()
                .map(|x| (p(&x.name), pick(&x.flow).count as f64)),
        );
    }
    family(
        &mut o,
        "tenure_clock_seconds",
        "gauge",
        "The authority's clock reading (seconds since the epoch).",
        &mut std::iter::once((String::new(), s.now_us as f64 / 1e6)),
    );
    family(
        &mut o,
        "tenure_high_water_seconds",
        "gauge",
        "The durable clock high-water mark (seconds since the epoch).",
        &mut std::iter::once((String::new(), s.high_water_us as f64 / 1e6)),
    );
    family(
        &mut o,
        "tenure_serve_requests_total",
        "counter",
        "HTTP requests this server has answered.",
        &mut std::iter::once((String::new(), st.requests.load(Ordering::Relaxed) as f64)),
    );
    Ok(Answer::text(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        o,
    ))
}
