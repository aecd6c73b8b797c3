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

/// One raw request; the status and the body.
fn raw(addr: &str, request: &[u8]) -> (u16, Vec<u8>) {
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
    let body = match out.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => out[i + 4..].to_vec(),
        None => Vec::new(),
    };
    (status, body)
}

fn get(addr: &str, path: &str, auth: Option<&str>) -> (u16, Vec<u8>) {
    let auth = auth.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n").as_bytes(),
    )
}

fn get_json(addr: &str, path: &str) -> Value {
    let (st, body) = get(addr, path, None);
    assert_eq!(st, 200, "{path}: {}", String::from_utf8_lossy(&body));
    serde_json::from_slice(&body).unwrap()
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

#[test]
fn serve_answers_carry_no_secret_and_write_nothing() {
    let (s, live) = busy_store();
    let tf = s.path("serve.token");
    std::fs::write(&tf, "tokenfile-secret-42").unwrap();
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
    let lease = std::fs::read(&live).unwrap();
    let lease = String::from_utf8_lossy(&lease).trim().to_owned();
    for (path, body) in &bodies {
        for n in ["a", "b", "c", "d"] {
            assert!(
                !contains(body, format!("payload of {n}").as_bytes()),
                "{path}: payload"
            );
        }
        assert!(!contains(body, lease.as_bytes()), "{path}: lease token");
        assert!(
            !contains(body, b"tokenfile-secret-42"),
            "{path}: token file"
        );
    }
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
    assert!(
        m.contains("tenure_wait_seconds_count{production=\"p\"} 3"),
        "{m}"
    );
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
