//! Lifecycles (claim-next, renew, complete) of one production with no claim
//! gate on a PostgreSQL database, by `--threads` threads sharing one
//! authority:
//!
//! ```text
//! pg_lifecycle --url postgres://... --cycles N [--threads T] [--warm W]
//! ```
//!
//! It creates a fresh production, submits `N + T × W` jobs and a tenth
//! more (a lifecycle whose renewal or completion fails leaves its job
//! claimed until the lease expires, and is run again), runs `W`
//! untimed lifecycles on each thread (each thread's connection prepares
//! its statements), then times `N` lifecycles taken from a shared count by
//! the threads together, and prints one JSON object: the rate, and the
//! PostgreSQL round trips a timed lifecycle's claim, renewal and
//! completion made (means; `tenure::stats::pg_round_trips`).
//!
//! It uses only calls the tree before the claim gates (`5bc9cc0`) has, so
//! `cargo xtask bench --backend postgres` builds this same file against
//! that tree's `tenure` (copied into its `git archive` under
//! `target/bench-base/`) and against this tree's, and runs the two on the
//! same server in alternating rounds.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Instant;
use tenure::stats::pg_round_trips;
use tenure::{Authority, ErrorCode, JobSpec, Options, Ttl};

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let arg = |k: &str| {
        argv.iter()
            .position(|a| a.strip_prefix("--") == Some(k))
            .and_then(|i| argv.get(i + 1))
            .cloned()
    };
    let url = arg("url").expect("--url postgres://...");
    let cycles: i64 = arg("cycles").map_or(1000, |v| v.parse().expect("--cycles N"));
    let threads: usize = arg("threads").map_or(1, |v| v.parse().expect("--threads T"));
    let warm: i64 = arg("warm").map_or(20, |v| v.parse().expect("--warm W"));
    let threads = threads.max(1);

    let auth = Authority::open(url.as_str(), &Options::new()).unwrap();
    let production = format!("l{:x}", tenure::Uuid::new_v4().as_u64_pair().0);
    auth.create_production(&production).unwrap();
    let jobs = cycles + threads as i64 * warm + cycles / 10 + 100;
    let mut i = 0;
    while i < jobs {
        let k = (jobs - i).min(1000);
        let specs: Vec<JobSpec> = (i..i + k)
            .map(|j| JobSpec::new(format!("j{j:08}"), b"payload".to_vec()).max_attempts(1000))
            .collect();
        auth.submit_many(&production, &specs).unwrap();
        i += k;
    }

    let left = Arc::new(AtomicI64::new(cycles));
    let go = Arc::new(Barrier::new(threads + 1));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (auth, production) = (auth.clone(), production.clone());
            let (left, go) = (left.clone(), go.clone());
            std::thread::spawn(move || {
                let mut busy = 0u64;
                let mut done = 0i64;
                while done < warm {
                    match lifecycle(&auth, &production) {
                        Some(true) => done += 1,
                        Some(false) => {}
                        None => busy += 1,
                    }
                }
                go.wait();
                let mut count = 0u64;
                let mut trips = [0u64; 3];
                while left.fetch_sub(1, Ordering::Relaxed) > 0 {
                    loop {
                        let mut t = [0u64; 3];
                        match lifecycle_counted(&auth, &production, &mut t) {
                            Some(true) => {
                                count += 1;
                                for (sum, x) in trips.iter_mut().zip(t) {
                                    *sum += x;
                                }
                                break;
                            }
                            Some(false) => {}
                            None => busy += 1,
                        }
                    }
                }
                (count, busy, trips)
            })
        })
        .collect();
    go.wait();
    let start = Instant::now();
    let (mut count, mut busy, mut trips) = (0, 0, [0u64; 3]);
    for w in workers {
        let (c, b, t) = w.join().unwrap();
        count += c;
        busy += b;
        for (sum, x) in trips.iter_mut().zip(t) {
            *sum += x;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let per = |x: u64| x as f64 / count.max(1) as f64;
    println!(
        r#"{{"workload":"pg-lifecycle","threads":{threads},"cycles":{count},"busy":{busy},"seconds":{secs:.6},"cycles_per_s":{:.2},"round_trips_claim":{:.2},"round_trips_renew":{:.2},"round_trips_complete":{:.2}}}"#,
        count as f64 / secs,
        per(trips[0]),
        per(trips[1]),
        per(trips[2]),
    );
}

/// One claim-next, renew and complete: `Some(true)` when all three took
/// effect, `Some(false)` when the renewal or completion did not, `None`
/// when the claim answered busy.
fn lifecycle(auth: &Authority, production: &str) -> Option<bool> {
    lifecycle_counted(auth, production, &mut [0; 3])
}

/// [`lifecycle`], adding the round trips of the claim, the renewal and the
/// completion to `trips`.
fn lifecycle_counted(auth: &Authority, production: &str, trips: &mut [u64; 3]) -> Option<bool> {
    let t0 = pg_round_trips();
    let claimed = auth.claim_next(production, "bench-worker", ttl(30_000_000));
    let t1 = pg_round_trips();
    trips[0] += t1 - t0;
    match claimed {
        Ok(l) => {
            let renewed = l.renew(ttl(60_000_000));
            let t2 = pg_round_trips();
            trips[1] += t2 - t1;
            let done = renewed.and_then(|_| l.complete(&[]));
            trips[2] += pg_round_trips() - t2;
            Some(done.is_ok())
        }
        Err(e) if e.code() == ErrorCode::Busy => None,
        Err(e) => panic!("claim_next: {e}"),
    }
}

fn ttl(us: i64) -> Ttl {
    Ttl::from_micros(us).unwrap()
}
