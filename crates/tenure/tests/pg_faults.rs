//! Lost acknowledgements on PostgreSQL: a fault-injecting TCP proxy between
//! the client and the throwaway server cuts the connection at chosen
//! points (after the client sent COMMIT and before the reply arrives,
//! mid-statement, during connect), or answers as a server that terminates
//! the session after COMMIT (`57P01`) or is still starting up (`57P03`),
//! while claims under request IDs (single
//! and batched), renew,
//! complete, fail, release and their batched forms run through it. Every
//! call must return exactly the committed outcome: no double claim, no
//! attempt consumed by a lost acknowledgement, no completion applied twice,
//! and `check` clean (docs/design.md, "Idempotent calls").
//!
//! Runs only on PostgreSQL (`cargo xtask pg`, or `TENURE_TEST_BACKEND=postgres
//! TENURE_TEST_PG_URL=...`); `TENURE_FAULT_CUTS` sets the number of cut
//! operations (default 210; the campaign runs 1000).
mod common;
use common::*;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tenure::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// Forward the client's COMMIT, then cut before the reply comes back.
    AfterCommit,
    /// Drop the first request that carries a statement after the
    /// transaction's BEGIN (the BEGIN's own request, where its first
    /// statement rides with it) and cut.
    MidStatement,
    /// Cut at the next message, then refuse the next connection at once.
    DuringConnect,
    /// Forward the client's COMMIT, then answer it with the server's
    /// `57P01` (terminating connection due to administrator command) and
    /// close: the COMMIT may or may not have taken effect.
    TerminatedAfterCommit,
    /// Cut at the next message, then answer the next two connections'
    /// startup with `57P03` (the database system is starting up).
    StartingUp,
}

#[derive(Default)]
struct Plan {
    armed: Mutex<Option<Cut>>,
    /// Messages seen since arming (MidStatement cuts at the second, or at
    /// the first if it carries a statement after its BEGIN).
    seen: AtomicU64,
    refuse_next_connect: AtomicBool,
    /// Connections still to be answered with `57P03`.
    starting_up: AtomicU64,
    fired: AtomicU64,
    refused: AtomicU64,
}

impl Plan {
    fn arm(&self, c: Cut) {
        self.seen.store(0, Ordering::SeqCst);
        *self.armed.lock().unwrap() = Some(c);
    }
    fn disarm(&self) {
        *self.armed.lock().unwrap() = None;
        self.refuse_next_connect.store(false, Ordering::SeqCst);
        self.starting_up.store(0, Ordering::SeqCst);
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A simple-query message that ends a transaction with COMMIT (not the
/// `BEGIN ISOLATION LEVEL READ COMMITTED` that starts one).
fn is_commit(msg: &[u8]) -> bool {
    msg.len() > 5 && msg[0] == b'Q' && {
        let text = &msg[5..];
        !text.starts_with(b"BEGIN") && (text.starts_with(b"COMMIT") || contains(text, b"; COMMIT"))
    }
}

/// A simple-query request with a call of a prepared statement (a locked
/// read or a deferred write).
fn carries_call(msg: &[u8]) -> bool {
    msg.len() > 5 && msg[0] == b'Q' && contains(&msg[5..], b"EXECUTE ")
}

/// A server's FATAL ErrorResponse message with `code`.
fn fatal(code: &str, message: &str) -> Vec<u8> {
    let mut body = Vec::new();
    for (f, v) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', code),
        (b'M', message),
    ] {
        body.push(f);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut m = vec![b'E'];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(&body);
    m
}

fn cut(a: &TcpStream, b: &TcpStream) {
    let _ = a.shutdown(Shutdown::Both);
    let _ = b.shutdown(Shutdown::Both);
}

/// Relay one client connection to the server, applying the plan.
fn relay(client: TcpStream, server_addr: &str, plan: Arc<Plan>) {
    if plan.refuse_next_connect.swap(false, Ordering::SeqCst) {
        plan.refused.fetch_add(1, Ordering::SeqCst);
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    let starting = plan
        .starting_up
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if starting.is_ok() {
        // Read the startup message (sslmode=disable: no SSLRequest first),
        // answer as a server still starting, close.
        let mut client = client;
        let mut len = [0u8; 4];
        if client.read_exact(&mut len).is_ok() {
            let mut rest = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
            let _ = client.read_exact(&mut rest);
            let _ = client.write_all(&fatal("57P03", "the database system is starting up"));
        }
        plan.refused.fetch_add(1, Ordering::SeqCst);
        let _ = client.shutdown(Shutdown::Both);
        return;
    }
    let Ok(server) = TcpStream::connect(server_addr) else {
        return;
    };
    let _ = server.set_nodelay(true);
    let _ = client.set_nodelay(true);
    let blocked = Arc::new(AtomicBool::new(false));
    let (mut c_read, mut s_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let (mut s_read, mut c_write) = (server.try_clone().unwrap(), client.try_clone().unwrap());
    let back = {
        let blocked = blocked.clone();
        let (client, server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match s_read.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if blocked.load(Ordering::SeqCst) || c_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                }
            }
            cut(&client, &server);
        })
    };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match c_read.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let msg = &buf[..n];
        let armed = *plan.armed.lock().unwrap();
        let action = match armed {
            Some(Cut::AfterCommit | Cut::TerminatedAfterCommit) if is_commit(msg) => armed,
            Some(Cut::MidStatement) => {
                let k = plan.seen.fetch_add(1, Ordering::SeqCst);
                ((k >= 1 || carries_call(msg)) && !is_commit(msg)).then_some(Cut::MidStatement)
            }
            Some(Cut::DuringConnect | Cut::StartingUp) => armed,
            _ => None,
        };
        match action {
            Some(c @ (Cut::AfterCommit | Cut::TerminatedAfterCommit)) => {
                *plan.armed.lock().unwrap() = None;
                blocked.store(true, Ordering::SeqCst);
                let _ = s_write.write_all(msg);
                // Let the server read the COMMIT before the cut.
                std::thread::sleep(Duration::from_millis(5));
                if c == Cut::TerminatedAfterCommit {
                    let _ = client.try_clone().and_then(|mut w| {
                        w.write_all(&fatal(
                            "57P01",
                            "terminating connection due to administrator command",
                        ))
                    });
                }
                plan.fired.fetch_add(1, Ordering::SeqCst);
                break;
            }
            Some(c) => {
                *plan.armed.lock().unwrap() = None;
                if c == Cut::DuringConnect {
                    plan.refuse_next_connect.store(true, Ordering::SeqCst);
                }
                if c == Cut::StartingUp {
                    plan.starting_up.store(2, Ordering::SeqCst);
                }
                blocked.store(true, Ordering::SeqCst);
                plan.fired.fetch_add(1, Ordering::SeqCst);
                break;
            }
            None => {
                if s_write.write_all(msg).is_err() {
                    break;
                }
            }
        }
    }
    cut(&client, &server);
    let _ = back.join();
}

/// A proxy to `server_addr` on a free local port: its address.
fn start_proxy(server_addr: String, plan: Arc<Plan>) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let (s, p) = (server_addr.clone(), plan.clone());
            std::thread::spawn(move || relay(c, &s, p));
        }
    });
    addr
}

/// `url` split into (before host, host:port, path without query).
fn split(url: &str) -> (String, String, String) {
    let head = url.split('?').next().unwrap();
    let scheme_end = head.find("://").unwrap() + 3;
    let host_end = head[scheme_end..].find('/').unwrap() + scheme_end;
    let auth = &head[scheme_end..host_end];
    let (user, host) = match auth.rfind('@') {
        Some(i) => (&auth[..=i], &auth[i + 1..]),
        None => ("", auth),
    };
    (
        format!("{}{user}", &head[..scheme_end]),
        host.to_owned(),
        head[host_end..].to_owned(),
    )
}

fn ttl() -> Ttl {
    secs(120)
}

fn cuts() -> usize {
    std::env::var("TENURE_FAULT_CUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(210)
}

fn events_of(a: &Authority, p: &str, kind: EventKind) -> usize {
    a.production_events(p, 0, MAX_PAGE)
        .unwrap()
        .iter()
        .filter(|e| e.kind == kind)
        .count()
}

#[test]
fn cut_connections_never_double_claim_consume_an_attempt_or_apply_twice() {
    let Some(db) = pg::fresh_database() else {
        eprintln!("skipped: needs PostgreSQL (cargo xtask pg)");
        return;
    };
    let (pre, server, path) = split(&db.url);
    let plan = Arc::new(Plan::default());
    let proxy = start_proxy(server, plan.clone());
    let url = format!("{pre}{proxy}{path}?sslmode=disable");
    let direct_url = format!("{}?sslmode=disable", db.url.split('?').next().unwrap());
    let direct = Authority::open(direct_url.as_str(), &Options::new()).unwrap();
    let a = Authority::open(url.as_str(), &Options::new()).unwrap();
    let kinds = [
        Cut::AfterCommit,
        Cut::MidStatement,
        Cut::DuringConnect,
        Cut::TerminatedAfterCommit,
        Cut::StartingUp,
    ];
    let n = cuts();
    for i in 0..n {
        let kind = kinds[i % kinds.len()];
        let op = (i / kinds.len()) % 11;
        let p = format!("p{i}");
        a.create_production(&p).unwrap();
        for j in 0..2 {
            a.submit(
                &p,
                &JobSpec::new(format!("j{j}"), b"x".to_vec()).max_attempts(3),
            )
            .unwrap();
        }
        let lease = |job: &str| a.claim(&p, job, "w", ttl()).unwrap();
        let facts = [Fact::new("out", format!("o{i}"))];
        let ctx = format!("cut {i}: {kind:?}, op {op}");
        match op {
            0 => {
                let req = ClaimRequest::new(&format!("r{i}")).unwrap();
                plan.arm(kind);
                let l = a
                    .claim_idempotent(&p, "j0", "w", ttl(), &req)
                    .expect(&ctx)
                    .value;
                plan.disarm();
                let v = direct.job(&p, "j0").unwrap();
                assert_eq!((v.attempts, v.claim_id), (1, Some(l.claim_id())), "{ctx}");
            }
            1 => {
                let req = ClaimRequest::new(&format!("r{i}")).unwrap();
                plan.arm(kind);
                let l = a
                    .claim_next_idempotent(&p, "w", ttl(), &req)
                    .expect(&ctx)
                    .value;
                plan.disarm();
                let v = direct.job(&p, l.job()).unwrap();
                assert_eq!((v.attempts, v.claim_id), (1, Some(l.claim_id())), "{ctx}");
                let other = if l.job() == "j0" { "j1" } else { "j0" };
                assert_eq!(
                    direct.job(&p, other).unwrap().attempts,
                    0,
                    "{ctx}: double claim"
                );
            }
            2 => {
                let l = lease("j0");
                plan.arm(kind);
                l.renew(secs(300)).expect(&ctx);
                plan.disarm();
                assert_eq!(
                    direct.job(&p, "j0").unwrap().expires_us,
                    Some(l.expires_us()),
                    "{ctx}"
                );
            }
            3 => {
                let l = lease("j0");
                plan.arm(kind);
                l.complete(&facts).expect(&ctx);
                plan.disarm();
                assert_eq!(
                    direct.job(&p, "j0").unwrap().state,
                    JobState::Completed,
                    "{ctx}"
                );
                assert_eq!(
                    direct.facts(&p, "j0").unwrap().len(),
                    1 + 4,
                    "{ctx}: applied twice"
                );
            }
            4 => {
                let l = lease("j0");
                plan.arm(kind);
                assert_eq!(l.fail("boom", false).expect(&ctx), JobState::Requested);
                plan.disarm();
                assert_eq!(events_of(&direct, &p, EventKind::Failed), 1, "{ctx}");
            }
            5 => {
                let l = lease("j0");
                plan.arm(kind);
                assert_eq!(l.release().expect(&ctx), JobState::Requested);
                plan.disarm();
                assert_eq!(events_of(&direct, &p, EventKind::Released), 1, "{ctx}");
            }
            6 => {
                let (l0, l1) = (lease("j0"), lease("j1"));
                plan.arm(kind);
                let out = a.renew_many(&[&l0, &l1], secs(300)).expect(&ctx);
                plan.disarm();
                assert!(out.iter().all(|r| r.is_ok()), "{ctx}: {out:?}");
                for (l, j) in [(&l0, "j0"), (&l1, "j1")] {
                    assert_eq!(
                        direct.job(&p, j).unwrap().expires_us,
                        Some(l.expires_us()),
                        "{ctx}"
                    );
                }
            }
            7 => {
                let (l0, l1) = (lease("j0"), lease("j1"));
                plan.arm(kind);
                let out = a
                    .complete_many(&[(&l0, &facts[..]), (&l1, &facts[..])])
                    .expect(&ctx);
                plan.disarm();
                assert!(out.iter().all(|r| r.is_ok()), "{ctx}: {out:?}");
                assert_eq!(direct.production_facts(&p).unwrap().len(), 2 * 5, "{ctx}");
            }
            8 => {
                let (l0, l1) = (lease("j0"), lease("j1"));
                plan.arm(kind);
                let out = a
                    .fail_many(&[(&l0, "boom", false), (&l1, "bust", true)])
                    .expect(&ctx);
                plan.disarm();
                let states: Vec<JobState> = out.into_iter().map(|r| r.expect(&ctx)).collect();
                assert_eq!(states, [JobState::Requested, JobState::Failed], "{ctx}");
                assert_eq!(events_of(&direct, &p, EventKind::Failed), 2, "{ctx}");
            }
            9 => {
                let (l0, l1) = (lease("j0"), lease("j1"));
                plan.arm(kind);
                let out = a.release_many(&[&l0, &l1]).expect(&ctx);
                plan.disarm();
                assert!(out.iter().all(|r| r.is_ok()), "{ctx}: {out:?}");
                assert_eq!(events_of(&direct, &p, EventKind::Released), 2, "{ctx}");
            }
            _ => {
                let req = ClaimRequest::new(&format!("r{i}")).unwrap();
                plan.arm(kind);
                let out = a
                    .claim_next_many_idempotent(&p, "w", ttl(), 2, &req)
                    .expect(&ctx)
                    .value;
                plan.disarm();
                assert_eq!(out.len(), 2, "{ctx}");
                for r in out {
                    let l = r.expect(&ctx);
                    let v = direct.job(&p, l.job()).unwrap();
                    assert_eq!((v.attempts, v.claim_id), (1, Some(l.claim_id())), "{ctx}");
                }
            }
        }
        // Every claim of the production made exactly one attempt.
        let claims = events_of(&direct, &p, EventKind::Claimed);
        let attempts: u32 = ["j0", "j1"]
            .iter()
            .map(|j| direct.job(&p, j).unwrap().attempts)
            .sum();
        assert_eq!(claims as u32, attempts, "{ctx}");
        assert_eq!(
            plan.fired.load(Ordering::SeqCst),
            i as u64 + 1,
            "{ctx}: the cut fired"
        );
    }
    let report = direct.check().unwrap();
    assert!(report.ok(), "{report:?}");
    eprintln!(
        "{n} cut operations: {} cuts fired, {} connections refused while connecting",
        plan.fired.load(Ordering::SeqCst),
        plan.refused.load(Ordering::SeqCst)
    );
    drop(a);
    drop(direct);
}
