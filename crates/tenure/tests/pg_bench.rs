//! The PostgreSQL benchmark behind `cargo xtask bench --backend postgres`
//! (ignored in normal runs; the figures are printed, never asserted).
//!
//! For each connection count C it seeds a fresh database with jobs, then runs
//! P worker processes (P = 1 for C = 1, else 4) with C / P threads each; every
//! thread loops claim-next + complete on its own pooled connection for the
//! given time: claim-next + complete one job at a time (batch 1), or
//! `claim_next_many` + `complete_many` of B jobs per call (batch B, from
//! `TENURE_BENCH_BATCHES`, e.g. `1,16`). Seeding (`submit_many` in chunks
//! of 1000) is not timed: the bulk-submit row is `bench/pg_peer.py enqueue`,
//! measured against its peer in pairs. Output: one `BENCH {json}` line
//! per (C, B), with the round trips one batched claim + completion of B jobs
//! takes on this thread, and each of the two alone (deterministic; see
//! `stats::pg_round_trips`), and the share of the jobs table's row updates
//! during the drain that were HOT (`pg_stat_user_tables.n_tup_hot_upd` over
//! `n_tup_upd`).
mod common;
#[path = "../../tenure-bench/src/pace.rs"]
mod pace;
use common::*;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tenure::*;

fn env_num(k: &str, d: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(d)
}

#[test]
#[ignore = "benchmark: cargo xtask bench --backend postgres"]
fn pg_bench() {
    assert!(on_postgres(), "needs TENURE_TEST_BACKEND=postgres");
    let millis = env_num("TENURE_BENCH_MILLIS", 3000);
    let conns: Vec<u64> = std::env::var("TENURE_BENCH_CONNS")
        .unwrap_or_else(|_| "1,4,16,64".into())
        .split(',')
        .map(|c| c.parse().unwrap())
        .collect();
    let batches: Vec<u64> = std::env::var("TENURE_BENCH_BATCHES")
        .unwrap_or_else(|_| "1".into())
        .split(',')
        .map(|c| c.parse().unwrap())
        .collect();
    let exe = std::env::current_exe().unwrap();
    for c in conns
        .iter()
        .flat_map(|&c| batches.iter().map(move |&b| (c, b)))
    {
        let (c, batch) = c;
        let db = pg::fresh_database().unwrap();
        let a = Authority::open(db.url.as_str(), &Options::new()).unwrap();
        a.create_production("b").unwrap();
        let seed = env_num("TENURE_BENCH_JOBS", 20_000) as usize;
        for chunk in (0..seed).collect::<Vec<_>>().chunks(1000) {
            let specs: Vec<JobSpec> = chunk
                .iter()
                .map(|i| JobSpec::new(format!("job-{i:07}"), vec![0u8; 64]))
                .collect();
            a.submit_many("b", &specs).unwrap();
        }
        // Round trips of one batched claim + completion of `batch` jobs,
        // measured on a second production so the drain's queue is intact.
        a.create_production("rt").unwrap();
        let specs: Vec<JobSpec> = (0..2 * batch)
            .map(|i| JobSpec::new(format!("rt-{i}"), vec![0u8; 64]))
            .collect();
        a.submit_many("rt", &specs).unwrap();
        let (mut claim_trips, mut complete_trips) = (0, 0);
        for _ in 0..2 {
            // The second pass runs on prepared statements.
            let before = stats::pg_round_trips();
            let ls = if batch == 1 {
                vec![a.claim_next("rt", "rt", secs(60)).unwrap()]
            } else {
                a.claim_next_many("rt", "rt", secs(60), batch as usize)
                    .unwrap()
            };
            let between = stats::pg_round_trips();
            if batch == 1 {
                ls[0].complete(&[]).unwrap();
            } else {
                let items: Vec<(&Lease, &[Fact])> = ls.iter().map(|l| (l, &[][..])).collect();
                a.complete_many(&items).unwrap();
            }
            claim_trips = between - before;
            complete_trips = stats::pg_round_trips() - between;
        }
        let trips = claim_trips + complete_trips;
        let updates_before = jobs_updates(&db.url);
        let procs = if c == 1 { 1 } else { 4.min(c) };
        let threads = c / procs;
        let children: Vec<_> = (0..procs)
            .map(|_| {
                Command::new(&exe)
                    .args(["--exact", "pg_bench_worker", "--ignored", "--nocapture"])
                    .env("TENURE_BENCH_DB", &db.url)
                    .env("TENURE_BENCH_THREADS", threads.to_string())
                    .env("TENURE_BENCH_BATCH", batch.to_string())
                    .env("TENURE_BENCH_MILLIS", millis.to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut total = 0u64;
        let mut secs = 0f64;
        let mut busy = 0u64;
        for ch in children {
            let out = ch.wait_with_output().unwrap();
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            let line = text
                .lines()
                .find_map(|l| l.find("DONE ").map(|i| &l[i + 5..]))
                .expect("worker result");
            let parts: Vec<&str> = line.split_whitespace().collect();
            total += parts[0].parse::<u64>().unwrap();
            secs = secs.max(parts[1].parse::<f64>().unwrap());
            busy += parts[2].parse::<u64>().unwrap();
        }
        assert!(a.check().unwrap().ok());
        // The workers' sessions ended and reported their statistics.
        let updates = jobs_updates(&db.url);
        let hot =
            (updates.1 - updates_before.1) as f64 / ((updates.0 - updates_before.0).max(1)) as f64;
        println!(
            "BENCH {{\"workload\":\"pg-lifecycle\",\"connections\":{c},\"processes\":{procs},\
             \"batch\":{batch},\"round_trips\":{trips},\"round_trips_claim\":{claim_trips},\
             \"round_trips_complete\":{complete_trips},\"hot_update_share\":{hot:.3},\
             \"cycles\":{total},\"busy\":{busy},\
             \"cycles_per_s\":{:.1}}}",
            total as f64 / secs
        );
    }
}

#[test]
#[ignore = "child-process entry point of pg_bench"]
fn pg_bench_worker() {
    let url = std::env::var("TENURE_BENCH_DB").expect("run by pg_bench");
    let threads = env_num("TENURE_BENCH_THREADS", 1);
    let millis = env_num("TENURE_BENCH_MILLIS", 3000);
    let batch = env_num("TENURE_BENCH_BATCH", 1) as usize;
    let a = Authority::open(url.as_str(), &Options::new()).unwrap();
    let start = Instant::now();
    let end = start + Duration::from_millis(millis);
    let (done, busy) = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let a = a.clone();
                s.spawn(move || {
                    let holder = format!("bench-{}-{t}", std::process::id());
                    let (mut n, mut busy) = (0u64, 0u64);
                    while Instant::now() < end && batch > 1 {
                        match a.claim_next_many("b", &holder, secs(60), batch) {
                            Ok(ls) if ls.is_empty() => break,
                            Ok(ls) => {
                                let items: Vec<(&Lease, &[Fact])> =
                                    ls.iter().map(|l| (l, &[][..])).collect();
                                for r in a.complete_many(&items).unwrap() {
                                    r.unwrap();
                                }
                                n += ls.len() as u64;
                            }
                            Err(e) if e.code() == ErrorCode::Busy => busy += 1,
                            Err(e) => panic!("{e}"),
                        }
                    }
                    while Instant::now() < end && batch == 1 {
                        match a.claim_next("b", &holder, secs(60)) {
                            Ok(l) => {
                                l.complete(&[]).unwrap();
                                n += 1;
                            }
                            Err(e) if e.code() == ErrorCode::Busy => busy += 1,
                            Err(e) if e.code() == ErrorCode::NoJobAvailable => break,
                            Err(e) => panic!("{e}"),
                        }
                    }
                    (n, busy)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    println!("DONE {done} {:.3} {busy}", start.elapsed().as_secs_f64());
}

/// `(n_tup_upd, n_tup_hot_upd)` of `tenure.jobs` (statistics of sessions
/// that ended; a moment's wait lets the last ones arrive).
fn jobs_updates(url: &str) -> (i64, i64) {
    std::thread::sleep(Duration::from_millis(500));
    let r = pg::client(url)
        .query_one(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables
             WHERE schemaname = 'tenure' AND relname = 'jobs'",
            &[],
        )
        .unwrap();
    (r.get(0), r.get(1))
}

/// Sizes of the hot tables and their dead tuples, for the soak's report.
fn table_stats(c: &mut postgres::Client) -> String {
    let rows = c
        .query(
            "SELECT relname::text, pg_total_relation_size(relid), n_dead_tup, n_live_tup
             FROM pg_stat_user_tables WHERE schemaname = 'tenure'
               AND relname IN ('jobs', 'events', 'tombstones', 'facts') ORDER BY relname",
            &[],
        )
        .unwrap();
    let parts: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                r#""{}":{{"bytes":{},"dead":{},"live":{}}}"#,
                r.get::<_, String>(0),
                r.get::<_, i64>(1),
                r.get::<_, i64>(2),
                r.get::<_, i64>(3)
            )
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// Prints `EXPLAIN (ANALYZE, BUFFERS)` of the scans the soak's stream runs
/// (claim-next's ready page from the claim floor, the prune steps' reads of
/// terminal jobs, tombstones and events, and the mark's read), each line
/// prefixed `EXPLAIN <when> <scan>:`.
fn explain_hot(url: &str, when: &str) {
    let mut c = pg::client(url);
    // Constants, as the bound parameters the store passes: an index bound,
    // not a filter on a volatile expression.
    let now: i64 = c
        .query_one(
            "SELECT (extract(epoch from clock_timestamp()) * 1e6)::bigint",
            &[],
        )
        .unwrap()
        .get(0);
    let cutoff = now - 60_000_000;
    let scans = [
        (
            "claim-next",
            format!(
                "SELECT seq FROM tenure.jobs WHERE production = 'soak'
                 AND state IN ('requested', 'claimed') AND NOT parked
                 AND seq >= (SELECT claim_floor FROM tenure.productions WHERE name = 'soak')
                 AND (state = 'requested' OR expires_us IS NULL OR expires_us <= {now})
                 ORDER BY priority DESC, seq LIMIT 1"
            ),
        ),
        (
            "terminal-jobs",
            format!(
                "SELECT seq FROM tenure.jobs WHERE ended_us < {cutoff}
                 ORDER BY ended_us LIMIT 256"
            ),
        ),
        (
            "tombstones",
            format!(
                "SELECT job FROM tenure.tombstones WHERE pruned_us < {cutoff}
                 ORDER BY pruned_us LIMIT 256"
            ),
        ),
        (
            "events",
            "SELECT seq, at_us FROM tenure.events ORDER BY seq LIMIT 257".to_string(),
        ),
        (
            "marks",
            "SELECT coalesce((SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1), 0)"
                .to_string(),
        ),
    ];
    for (name, sql) in scans {
        for r in c
            .query(&format!("EXPLAIN (ANALYZE, BUFFERS) {sql}"), &[])
            .unwrap()
        {
            println!("EXPLAIN {when} {name}: {}", r.get::<_, String>(0));
        }
    }
}

/// Submits the soak's jobs `from .. from + n` (64-byte payloads).
fn submit_soak(a: &Authority, from: u64, n: u64) {
    let specs: Vec<JobSpec> = (from..from + n)
        .map(|j| JobSpec::new(format!("s{j:09}"), vec![0u8; 64]))
        .collect();
    a.submit_many("soak", &specs).unwrap();
}

/// The PostgreSQL retention soak behind `cargo xtask bench --backend
/// postgres` (and `--soak`): a steady stream of `TENURE_SOAK_JOBS` jobs
/// (claim-next + complete, one worker) with automatic retention of events,
/// terminal jobs and tombstones at `TENURE_SOAK_RETENTION_S`. With
/// `TENURE_SOAK_RATE` R > 0 the jobs arrive at R jobs/s: a submitter
/// thread submits, every `TENURE_SOAK_TICK_MS` (20), the jobs the rate has
/// made due, while at most `TENURE_SOAK_MAX_BACKLOG` (10 000) are submitted
/// and not yet completed; arrivals beyond that bound are held back (dropped
/// from the schedule, counted). With R = 0 the worker submits 1 000
/// whenever it has drained the last. From the
/// middle of the stream a second connection holds a transaction open (a
/// pinned xmin) for `TENURE_SOAK_PIN_S`. Prints one `BENCH {json}` line:
/// per-window (`TENURE_SOAK_WINDOW` jobs) arrivals, throughput, backlog,
/// arrivals held back and table sizes / dead tuples, the table sizes every
/// 10 s, the jobs completed in every second
/// since the start, and when the pin's snapshot was taken and released
/// (seconds since the start).
#[test]
#[ignore = "benchmark: cargo xtask bench --backend postgres"]
fn pg_soak() {
    assert!(on_postgres(), "needs TENURE_TEST_BACKEND=postgres");
    let jobs = env_num("TENURE_SOAK_JOBS", 1_000_000) as usize;
    let window = (env_num("TENURE_SOAK_WINDOW", 100_000) as usize).clamp(1, jobs);
    let keep = Age::from_secs(env_num("TENURE_SOAK_RETENTION_S", 60)).unwrap();
    let pin = Duration::from_secs(env_num("TENURE_SOAK_PIN_S", 60));
    let rate = env_num("TENURE_SOAK_RATE", 0) as f64;
    let max_backlog = env_num("TENURE_SOAK_MAX_BACKLOG", 10_000).max(1);
    let tick = Duration::from_millis(env_num("TENURE_SOAK_TICK_MS", 20).max(1));
    let db = pg::fresh_database().unwrap();
    let policy = Retention {
        event_age: Some(keep),
        terminal_job_age: Some(keep),
        tombstone_age: Some(keep),
    };
    let a = Authority::open(db.url.as_str(), &Options::new().retention(policy)).unwrap();
    a.create_production("soak").unwrap();
    let mut stats = pg::client(&db.url);
    let t0 = Instant::now();
    let mut per_second: Vec<u64> = Vec::new();
    let mut windows = Vec::new();
    let mut samples = Vec::new();
    let mut next_sample = 0;
    let mut start = Instant::now();
    let mut pinner = None;
    let stream = pace::Stream::start(jobs as u64, rate, max_backlog, tick, {
        let a = a.clone();
        move |from, n| submit_soak(&a, from, n)
    });
    let (mut sent_before, mut held_before) = (0, 0);
    let mut i = 0;
    while i < jobs {
        if !stream.ready(i as u64) {
            continue;
        }
        let l = a
            .claim_next("soak", "soak-worker", Ttl::from_micros(30_000_000).unwrap())
            .unwrap();
        l.complete(&[]).unwrap();
        i += 1;
        stream.done(i as u64);
        let sec = t0.elapsed().as_secs() as usize;
        if per_second.len() <= sec {
            per_second.resize(sec + 1, 0);
        }
        per_second[sec] += 1;
        if sec >= next_sample {
            samples.push(format!(
                r#"{{"s":{sec},"tables":{}}}"#,
                table_stats(&mut stats)
            ));
            next_sample = sec + 10;
        }
        if i == jobs / 2 && pinner.is_none() {
            explain_hot(&db.url, "before the pin");
            let url = db.url.clone();
            let (taken, taken_rx) = std::sync::mpsc::channel();
            pinner = Some(std::thread::spawn(move || {
                let mut c = pg::client(&url);
                let mut t = c
                    .build_transaction()
                    .isolation_level(postgres::IsolationLevel::RepeatableRead)
                    .start()
                    .unwrap();
                // The snapshot (and so the pinned xmin) is taken here.
                t.query("SELECT count(*) FROM tenure.meta", &[]).unwrap();
                let from = t0.elapsed().as_secs_f64();
                taken.send(()).unwrap();
                // The hot scans' plans near the pin's end (a third
                // connection), against the same plans just before it.
                let late = pin.saturating_sub(Duration::from_secs(5));
                std::thread::sleep(late);
                explain_hot(&url, "pinned");
                std::thread::sleep(pin - late);
                t.commit().unwrap();
                (from, t0.elapsed().as_secs_f64())
            }));
            taken_rx.recv().unwrap();
        }
        if i % window == 0 || i == jobs {
            let secs = start.elapsed().as_secs_f64();
            let done_here = i - (i - 1) / window * window;
            let (sent, held_now) = stream.sent_and_held();
            windows.push(format!(
                    r#"{{"jobs_done":{i},"arrivals_per_s":{:.2},"jobs_per_s":{:.2},"backlog":{},"held_back":{},"tables":{}}}"#,
                    (sent - sent_before) as f64 / secs,
                    done_here as f64 / secs,
                    sent - i as u64,
                    held_now - held_before,
                    table_stats(&mut stats)
                ));
            (sent_before, held_before) = (sent, held_now);
            start = Instant::now();
        }
    }
    let end_s = t0.elapsed().as_secs_f64();
    let held = stream.finish();
    let (pin_start, pin_end) = pinner.map_or((-1.0, -1.0), |p| p.join().unwrap());
    let report = a.check().unwrap();
    println!(
        r#"BENCH {{"workload":"pg-soak","jobs":{jobs},"window":{window},"rate":{rate},"max_backlog":{max_backlog},"held_back":{},"retention_s":{},"pin_s":{},"pin_start_s":{pin_start:.3},"pin_end_s":{pin_end:.3},"end_s":{end_s:.3},"check_ok":{},"history_horizon":{},"windows":[{}],"samples":[{}],"per_second":{:?}}}"#,
        held,
        keep.as_secs(),
        pin.as_secs(),
        report.ok(),
        report.history_horizon,
        windows.join(","),
        samples.join(","),
        per_second
    );
}
