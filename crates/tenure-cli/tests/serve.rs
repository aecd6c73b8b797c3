//! `tenure serve`: the JSON API, `/metrics` and the page over real HTTP;
//! the security rules (loopback unless a token file is given, bearer token
//! on data endpoints, no secret or payload byte in any answer, bounded and
//! well-formed requests only, slow clients do not hold the server) and the
//! read-only rule (a crawl leaves the store as it was).

mod common;

use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A running `tenure serve`, killed when dropped.
struct Server {
    child: Child,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(s: &Store, extra: &[&str]) -> Server {
    let mut c = s.cmd(&["serve", "--listen", "127.0.0.1:0"]);
    c.args(extra).stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    Server { child, addr }
}

/// An answer: status, headers (names in lower case), body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// One raw request and its whole answer.
fn exchange(addr: &str, request: &[u8]) -> Answer {
    let mut t = TcpStream::connect(addr).unwrap();
    t.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    t.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = t.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let end = out.windows(4).position(|w| w == b"\r\n\r\n");
    let head = String::from_utf8_lossy(&out[..end.unwrap_or(out.len())]).into_owned();
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let body = end.map_or_else(Vec::new, |i| out[i + 4..].to_vec());
    Answer {
        status,
        headers,
        body,
    }
}

/// One raw request; the status and the body.
fn raw(addr: &str, request: &[u8]) -> (u16, Vec<u8>) {
    let a = exchange(addr, request);
    (a.status, a.body)
}

fn get_answer(addr: &str, path: &str, auth: Option<&str>) -> Answer {
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    exchange(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
    )
}

fn get(addr: &str, path: &str, auth: Option<&str>) -> (u16, Vec<u8>) {
    let a = get_answer(addr, path, auth);
    (a.status, a.body)
}

fn get_json(addr: &str, path: &str) -> Value {
    let (st, body) = get(addr, path, None);
    assert_eq!(st, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A store with completed, failed, claimed and waiting jobs; the token
/// file of the live claim.
fn busy_store() -> (Store, std::path::PathBuf) {
    let s = Store::with_jobs(&["a", "b", "c", "d"]);
    let done = s.claim("a", "60s");
    s.ok(&["complete", "--token-file", done.to_str().unwrap()]);
    let bad = s.claim("b", "60s");
    s.ok(&[
        "fail",
        "--token-file",
        bad.to_str().unwrap(),
        "--permanent",
        "--reason",
        "disk on fire",
    ]);
    let live = s.claim("c", "20s");
    (s, live)
}

#[test]
fn serve_refuses_a_non_loopback_address_without_a_token_file() {
    let s = Store::with_jobs(&["a"]);
    let out = s.run(&["serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.code(), USAGE);
    assert!(out.stderr().contains("--token-file"), "{}", out.stderr());
    let missing = Store::new();
    let out = missing.run(&["serve"]);
    assert_eq!(out.code(), USAGE);
    assert!(!missing.db.exists(), "serve created a store");
}

#[test]
fn serve_requires_the_bearer_token_on_data_endpoints() {
    let s = Store::with_jobs(&["a"]);
    let tf = s.path("serve.token");
    std::fs::write(&tf, "sesame-0123456789\n").unwrap();
    let srv = serve(&s, &["--token-file", tf.to_str().unwrap()]);
    for path in [
        "/metrics",
        "/api/stats",
        "/api/jobs?production=p",
        "/api/events",
    ] {
        assert_eq!(get(&srv.addr, path, None).0, 401, "{path} without token");
        assert_eq!(
            get(&srv.addr, path, Some("sesame-01234567890")).0,
            401,
            "{path} wrong"
        );
        assert_eq!(get(&srv.addr, path, Some("sesame")).0, 401, "{path} prefix");
        assert_eq!(
            get(&srv.addr, path, Some("sesame-0123456789")).0,
            200,
            "{path} right"
        );
    }
    // The page carries no store data and loads without the token.
    assert_eq!(get(&srv.addr, "/", None).0, 200);
}

/// The Content-Security-Policy every answer carries: the page's own
/// script, style and API only.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

#[test]
fn serve_answers_carry_the_security_headers() {
    let s = Store::with_jobs(&["a"]);
    let tf = s.path("serve.token");
    std::fs::write(&tf, "hdr-token-1234").unwrap();
    let srv = serve(&s, &["--token-file", tf.to_str().unwrap()]);
    for (path, auth, status, kind) in [
        ("/", None, 200, "text/html; charset=utf-8"),
        ("/app.js", None, 200, "text/javascript; charset=utf-8"),
        ("/app.css", None, 200, "text/css; charset=utf-8"),
        (
            "/api/stats",
            Some("hdr-token-1234"),
            200,
            "application/json",
        ),
        (
            "/api/jobs?production=p",
            Some("hdr-token-1234"),
            200,
            "application/json",
        ),
        (
            "/api/job?production=p&job=a",
            Some("hdr-token-1234"),
            200,
            "application/json",
        ),
        (
            "/api/clock",
            Some("hdr-token-1234"),
            200,
            "application/json",
        ),
        ("/api/stats", None, 401, "application/json"),
        ("/api/nope", Some("hdr-token-1234"), 404, "application/json"),
        (
            "/metrics",
            Some("hdr-token-1234"),
            200,
            "text/plain; version=0.0.4; charset=utf-8",
        ),
    ] {
        let a = get_answer(&srv.addr, path, auth);
        assert_eq!(a.status, status, "{path}");
        assert_eq!(a.header("content-security-policy"), [CSP], "{path}");
        assert_eq!(a.header("x-content-type-options"), ["nosniff"], "{path}");
        assert_eq!(a.header("referrer-policy"), ["no-referrer"], "{path}");
        assert_eq!(a.header("cache-control"), ["no-store"], "{path}");
        assert_eq!(a.header("content-type"), [kind], "{path}");
    }
    // The page loads its script from the server, and has no inline script.
    let page = String::from_utf8(get(&srv.addr, "/", None).1).unwrap();
    assert!(page.contains(r#"<script src="/app.js" defer></script>"#));
    assert_eq!(page.matches("<script").count(), 1, "inline script");
    assert!(!page.contains(" on"), "inline event handler attribute");
}

#[test]
fn serve_answers_carry_no_secret_and_write_nothing() {
    let (s, live) = busy_store();
    let tf = s.path("serve.token");
    std::fs::write(&tf, "tokenfile-secret-42").unwrap();
    let lease = std::fs::read_to_string(&live).unwrap();
    // The live lease writes a progress checkpoint (through the core: the
    // CLI has no checkpoint command).
    let progress = b"progress bytes of c: 0123456789".to_vec();
    {
        let a = tenure::Authority::open(&s.db, &tenure::Options::new()).unwrap();
        a.import_lease(lease.trim())
            .unwrap()
            .checkpoint(&progress)
            .unwrap();
    }
    let before = (
        s.ok(&["--json", "events"]),
        s.ok(&["--json", "jobs", "-p", "p"]),
    );
    let srv = serve(&s, &["--token-file", tf.to_str().unwrap()]);
    let t = Some("tokenfile-secret-42");
    let mut bodies = Vec::new();
    for path in [
        "/",
        "/app.js",
        "/app.css",
        "/metrics",
        "/api/stats",
        "/api/stats?production=p&horizon=90s&window=10m",
        "/api/productions",
        "/api/jobs?production=p",
        "/api/jobs?production=p&state=claimed&limit=1",
        "/api/jobs?production=p&after=a&limit=2",
        "/api/failures?production=p",
        "/api/expiring?production=p&within=1h",
        "/api/clock",
        "/api/events",
        "/api/events?after=2&limit=3",
        "/api/job?production=p&job=c",
        "/api/job?production=p&job=b",
        "/api/job?production=p&job=a",
    ] {
        let (st, body) = get(&srv.addr, path, t);
        assert_eq!(st, 200, "{path}: {}", String::from_utf8_lossy(&body));
        bodies.push((path, body));
    }
    // Attempts to write are refused.
    for m in ["POST", "PUT", "DELETE", "PATCH"] {
        let (st, _) = raw(
            &srv.addr,
            format!("{m} /api/jobs?production=p HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tokenfile-secret-42\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}").as_bytes(),
        );
        assert_eq!(st, 405, "{m}");
    }
    let needles = secret_needles(&lease);
    assert_eq!(needles.len(), 8);
    for (path, body) in &bodies {
        for n in ["a", "b", "c", "d"] {
            assert!(
                !contains(body, format!("payload of {n}").as_bytes()),
                "{path}: payload"
            );
        }
        assert!(!contains(body, &progress), "{path}: progress bytes");
        for (i, n) in needles.iter().enumerate() {
            assert!(!contains(body, n), "{path}: lease secret (encoding {i})");
        }
        assert!(
            !contains(body, b"tokenfile-secret-42"),
            "{path}: token file"
        );
    }
    // The job answer shows the progress as size and digest only.
    let job: Value = serde_json::from_slice(&bodies[15].1).unwrap();
    assert_eq!(job["job"], "c");
    assert_eq!(job["state"], "claimed");
    assert_eq!(job["progress_len"], progress.len());
    assert_eq!(
        job["progress_sha256"],
        hex(&<sha2::Sha256 as sha2::Digest>::digest(&progress))
    );
    assert_eq!(
        job["payload_sha256"],
        hex(&<sha2::Sha256 as sha2::Digest>::digest(b"payload of c"))
    );
    let none: Value = serde_json::from_slice(&bodies[17].1).unwrap();
    assert_eq!(none["progress_len"], Value::Null);
    assert_eq!(none["progress_sha256"], Value::Null);
    let failures: Value = serde_json::from_slice(&bodies[10].1).unwrap();
    let f = &failures["jobs"][0];
    assert_eq!(f["job"], "b");
    assert_eq!(f["last_error"], "disk on fire");
    assert_eq!(f["payload_len"], "payload of b".len());
    assert_eq!(f["payload_sha256"].as_str().unwrap().len(), 64);
    let expiring: Value = serde_json::from_slice(&bodies[11].1).unwrap();
    assert_eq!(expiring["jobs"][0]["job"], "c");
    drop(srv);
    let after = (
        s.ok(&["--json", "events"]),
        s.ok(&["--json", "jobs", "-p", "p"]),
    );
    assert_eq!(before, after, "serving changed the store");
}

fn has_in(m: &str, line: &str) {
    assert!(m.lines().any(|l| l == line), "missing {line}\n{m}");
}

/// The exposition's conventions: every family has HELP and TYPE; a counter
/// is named `_total`; no summary or histogram (the flow is over a window,
/// so its figures are gauges); a gauge has no counter or summary suffix
/// and no `quantile` label (promtool's lint); every sample belongs to a
/// declared family.
fn conventions(m: &str) {
    let mut types = std::collections::HashMap::new();
    let mut helps = std::collections::HashSet::new();
    for l in m.lines() {
        if let Some(r) = l.strip_prefix("# TYPE ") {
            let (name, kind) = r.split_once(' ').unwrap();
            assert!(
                types.insert(name.to_owned(), kind.to_owned()).is_none(),
                "{l}"
            );
            match kind {
                "counter" => assert!(name.ends_with("_total"), "{l}"),
                "gauge" => {
                    for bad in ["_total", "_count", "_sum", "_bucket"] {
                        assert!(!name.ends_with(bad), "{l}");
                    }
                }
                _ => panic!("unexpected metric type: {l}"),
            }
        } else if let Some(r) = l.strip_prefix("# HELP ") {
            helps.insert(r.split_once(' ').unwrap().0.to_owned());
        } else if !l.is_empty() {
            let name = l.split(['{', ' ']).next().unwrap();
            assert!(types.contains_key(name), "sample of no family: {l}");
            assert!(
                !l.contains("quantile=\""),
                "a gauge with a quantile label: {l}"
            );
            let v: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(v.is_finite(), "{l}");
        }
    }
    for name in types.keys() {
        assert!(helps.contains(name), "no HELP for {name}");
    }
}

#[test]
fn serve_api_and_metrics_show_what_stats_shows() {
    let (s, _live) = busy_store();
    let srv = serve(&s, &[]);
    let api = get_json(&srv.addr, "/api/stats?production=p");
    let cli = s.json(&["stats", "-p", "p"]);
    assert_eq!(api["productions"][0]["jobs"], cli["productions"][0]["jobs"]);
    let (st, m) = get(&srv.addr, "/metrics", None);
    assert_eq!(st, 200);
    let m = String::from_utf8(m).unwrap();
    assert!(m.contains("# TYPE tenure_jobs gauge"));
    for (state, v) in cli["productions"][0]["jobs"].as_object().unwrap() {
        let line = format!("tenure_jobs{{production=\"p\",state=\"{state}\"}} {v}");
        assert!(m.lines().any(|l| l == line), "missing {line}\n{m}");
    }
    let flow = &cli["productions"][0]["flow"];
    assert_eq!(flow["wait"]["count"], 3);
    let has = |line: String| assert!(m.lines().any(|l| l == line), "missing {line}\n{m}");
    has("tenure_wait_samples{production=\"p\"} 3".into());
    has(format!(
        "tenure_run_samples{{production=\"p\"}} {}",
        flow["run"]["count"]
    ));
    for (q, k) in [("50", "p50_us"), ("95", "p95_us"), ("99", "p99_us")] {
        for f in ["wait", "run"] {
            let v = Duration::from_micros(flow[f][k].as_u64().unwrap()).as_secs_f64();
            has(format!(
                "tenure_{f}_seconds{{production=\"p\",percentile=\"{q}\"}} {v}"
            ));
        }
    }
    let covered = Duration::from_micros(flow["covered_us"].as_u64().unwrap()).as_secs_f64();
    for k in [
        "claims",
        "completions",
        "retryable_failures",
        "permanent_failures",
        "expiries",
    ] {
        let v = flow[k].as_u64().unwrap() as f64 / covered;
        has(format!("tenure_{k}_per_second{{production=\"p\"}} {v}"));
    }
    conventions(&m);
    // The production's gates, in the statistics, the API and the metrics.
    s.ok(&["production", "pause", "p"]);
    s.ok(&[
        "production",
        "limit",
        "p",
        "--concurrency",
        "3",
        "--rate",
        "20/2s",
        "--burst",
        "4",
    ]);
    let cli = s.json(&["stats", "-p", "p"]);
    let g = &cli["productions"][0]["gates"];
    let paused_us = g["paused_us"].as_i64().expect("paused");
    assert_eq!(g["concurrency"], 3);
    assert_eq!(
        g["rate"],
        serde_json::json!({"claims": 20, "interval_us": 2_000_000, "burst": 4})
    );
    let text = s.ok(&["stats", "-p", "p"]);
    assert!(
        text.contains(", concurrency limit 3, rate limit 20/2000000µs burst 4"),
        "{text}"
    );
    assert!(text.contains("  gates     paused since "), "{text}");
    let api = get_json(&srv.addr, "/api/stats?production=p");
    assert_eq!(api["productions"][0]["gates"], *g);
    let m = String::from_utf8(get(&srv.addr, "/metrics", None).1).unwrap();
    has_in(&m, "tenure_production_paused{production=\"p\"} 1");
    has_in(
        &m,
        &format!(
            "tenure_production_paused_since_seconds{{production=\"p\"}} {}",
            paused_us as f64 / 1e6
        ),
    );
    has_in(
        &m,
        "tenure_production_concurrency_limit{production=\"p\"} 3",
    );
    has_in(
        &m,
        "tenure_production_rate_limit_per_second{production=\"p\"} 10",
    );
    has_in(&m, "tenure_production_rate_limit_burst{production=\"p\"} 4");
    conventions(&m);
    s.ok(&["production", "resume", "p"]);
    s.ok(&["production", "limit", "p", "--no-concurrency", "--no-rate"]);
    let m = String::from_utf8(get(&srv.addr, "/metrics", None).1).unwrap();
    has_in(&m, "tenure_production_paused{production=\"p\"} 0");
    for gone in [
        "tenure_production_paused_since_seconds{",
        "tenure_production_concurrency_limit{",
        "tenure_production_rate_limit_per_second{",
        "tenure_production_rate_limit_burst{",
    ] {
        assert!(!m.lines().any(|l| l.starts_with(gone)), "{gone}\n{m}");
    }
    // Pages: a full page names where the next starts; the last does not.
    let p1 = get_json(&srv.addr, "/api/jobs?production=p&limit=3");
    assert_eq!(p1["jobs"].as_array().unwrap().len(), 3);
    assert_eq!(p1["next_after"], "c");
    let p2 = get_json(&srv.addr, "/api/jobs?production=p&limit=3&after=c");
    assert_eq!(p2["jobs"][0]["job"], "d");
    assert_eq!(p2["next_after"], Value::Null);
    let ev = get_json(&srv.addr, "/api/events?after=0&limit=2");
    assert_eq!(ev["events"].as_array().unwrap().len(), 2);
    let next = ev["next_after"].as_u64().unwrap();
    let ev2 = get_json(&srv.addr, &format!("/api/events?after={next}&limit=1"));
    assert!(ev2["events"][0]["seq"].as_u64().unwrap() > next);
    // The tail: the newest events, found without paging the log.
    let all = get_json(&srv.addr, "/api/events?limit=1000");
    let all = all["events"].as_array().unwrap();
    let tail = get_json(&srv.addr, "/api/events?tail=2");
    assert_eq!(tail["events"].as_array().unwrap()[..], all[all.len() - 2..]);
    assert_eq!(tail["next_after"], all[all.len() - 1]["seq"]);
    let clock = get_json(&srv.addr, "/api/clock");
    assert!(clock["mark_us"].as_i64().unwrap() > 0);
}

#[test]
fn serve_answers_bad_requests_with_4xx() {
    let s = Store::with_jobs(&["a"]);
    let srv = serve(&s, &[]);
    for (path, want) in [
        ("/nope", 404),
        ("/api/nope", 404),
        ("/api/jobs", 400),
        ("/api/jobs?production=p&limit=100000", 400),
        ("/api/jobs?production=p&limit=-1", 400),
        ("/api/jobs?production=p&state=sleeping", 400),
        ("/api/jobs?production=p&production=p", 400),
        ("/api/jobs?production=%zz", 400),
        ("/api/jobs?production=%ff", 400),
        ("/api/jobs?production=no-such", 404),
        ("/api/jobs?production=bad%20id", 400),
        ("/api/stats?horizon=forever", 400),
        ("/api/events?after=x", 400),
        ("/api/events?after=1&tail=5", 400),
        ("/api/events?tail=5000", 400),
        ("/metrics?x=1", 400),
        ("/api/job?production=p", 400),
        ("/api/job?production=p&job=nope", 404),
        ("/api/job?production=p&job=a&limit=1", 400),
        ("/api/job?production=p&job=bad%20id", 400),
    ] {
        let (st, body) = get(&srv.addr, path, None);
        assert_eq!(st, want, "{path}: {}", String::from_utf8_lossy(&body));
        assert!(body.len() < 300, "{path}: long answer");
    }
    let big = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let (st, _) = raw(&srv.addr, big.as_bytes());
    assert!((400..500).contains(&st), "oversized head: {st}");
    let long = format!(
        "GET /api/jobs?production={} HTTP/1.1\r\nHost: x\r\n\r\n",
        "p".repeat(40 * 1024)
    );
    let (st, _) = raw(&srv.addr, long.as_bytes());
    assert!((400..500).contains(&st), "oversized URI: {st}");
    let (st, _) = raw(&srv.addr, b"GARBAGE\r\n\r\n");
    assert_eq!(st, 400);
    let (st, _) = raw(
        &srv.addr,
        b"GET /api/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
    );
    assert_eq!(st, 413);
    // The server still answers.
    assert_eq!(get(&srv.addr, "/api/clock", None).0, 200);
}

#[test]
fn serve_is_not_held_by_slow_clients() {
    let s = Store::with_jobs(&["a"]);
    let srv = serve(&s, &[]);
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut t = TcpStream::connect(&srv.addr).unwrap();
        t.write_all(b"GET /api/stats HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
        slow.push(t);
    }
    let t0 = Instant::now();
    let (st, _) = get(&srv.addr, "/api/stats", None);
    assert_eq!(st, 200);
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // A client that never finishes its headers is closed.
    let t = &mut slow[0];
    t.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let mut buf = Vec::new();
    let _ = t.read_to_end(&mut buf);
    assert!(t0.elapsed() < Duration::from_secs(12), "{:?}", t0.elapsed());
}
