//! The reference executor library (`tenure::executor`), on the real clock.

use std::ffi::OsString;
use tenure::executor::{self, ExecError, ExecSpec, Exit, Outcome, PERMANENT_EXIT_CODE};
use tenure::{Authority, ErrorCode, JobSpec, JobState, Options, Ttl};

fn setup(jobs: &[(&str, &str)]) -> (tempfile::TempDir, Authority) {
    let dir = tempfile::tempdir().unwrap();
    let auth = Authority::open(dir.path().join("t.db"), &Options::new()).unwrap();
    auth.create_production("p").unwrap();
    for (j, payload) in jobs {
        auth.submit("p", &JobSpec::new(*j, payload.as_bytes().to_vec()))
            .unwrap();
    }
    (dir, auth)
}

fn spec(dir: &tempfile::TempDir, job: Option<&str>, script: &str) -> ExecSpec {
    ExecSpec {
        production: "p".into(),
        job: job.map(str::to_owned),
        holder: "lib-test".into(),
        ttl: Ttl::from_micros(30_000_000).unwrap(),
        output_dir: dir.path().join("out/nested"),
        program: OsString::from("sh"),
        args: vec!["-c".into(), script.into()],
    }
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn completes_with_provenance_and_a_nonce_named_file() {
    let (dir, auth) = setup(&[("a", "hello")]);
    let s = spec(&dir, None, "tr a-z A-Z; printf '%s' \"$TENURE_JOB\"");
    let o = executor::run_once(&auth, &s).unwrap();
    let Outcome::Completed {
        attempt,
        output,
        sha256,
        size,
    } = o
    else {
        panic!("{o:?}")
    };
    assert_eq!(attempt.job, "a");
    assert_eq!(attempt.attempt, 1);
    assert_eq!(
        output.file_name().unwrap().to_str().unwrap(),
        format!("a.{}.out", attempt.nonce)
    );
    assert_eq!(std::fs::read(&output).unwrap(), b"HELLOa");
    assert_eq!(size, 6);
    assert_eq!(sha256.len(), 64);
    let facts = auth.facts("p", "a").unwrap();
    let get = |k: &str| {
        facts
            .iter()
            .find(|f| f.key == k)
            .map(|f| f.value.clone())
            .unwrap()
    };
    assert_eq!(get("tenure.exec.nonce"), attempt.nonce.to_string());
    assert_eq!(get("tenure.exec.sha256"), sha256);
    assert_eq!(get("tenure.exec.output"), output.to_str().unwrap());
    assert_eq!(get("tenure.claim_id"), attempt.claim_id.to_string());
    assert_eq!(auth.job("p", "a").unwrap().state, JobState::Completed);
    // Drained: the next run reports NoJobAvailable and changes nothing.
    let e = executor::run_once(&auth, &s).unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::NoJobAvailable));
    assert!(auth.check().unwrap().ok());
}

#[test]
fn failures_are_retryable_unless_permanent() {
    let (dir, auth) = setup(&[("r", ""), ("x", "")]);
    let out = dir.path().join("out/nested");
    let o = executor::run_once(&auth, &spec(&dir, Some("r"), "echo partial; exit 7")).unwrap();
    match o {
        Outcome::Failed {
            exit,
            permanent,
            state,
            ..
        } => {
            assert_eq!(exit, Exit::Code(7));
            assert!(!permanent);
            assert_eq!(state, JobState::Requested);
        }
        o => panic!("{o:?}"),
    }
    let script = format!("exit {PERMANENT_EXIT_CODE}");
    let o = executor::run_once(&auth, &spec(&dir, Some("x"), &script)).unwrap();
    assert!(matches!(
        o,
        Outcome::Failed {
            permanent: true,
            state: JobState::Failed,
            ..
        }
    ));
    assert!(files(&out).is_empty(), "{:?}", files(&out));
    // A program that does not exist: I/O error, lease failed retryably.
    let mut s = spec(&dir, Some("r"), "");
    s.program = "/nonexistent/tenure-test-program".into();
    let e = executor::run_once(&auth, &s).unwrap_err();
    assert!(matches!(e, ExecError::Io { .. }), "{e:?}");
    let v = auth.job("p", "r").unwrap();
    assert_eq!((v.state, v.attempts), (JobState::Requested, 2));
    assert!(files(&out).is_empty());
}

#[test]
fn run_loop_drains_and_reports_each_outcome() {
    let (dir, auth) = setup(&[("a", "1"), ("b", "2"), ("c", "3")]);
    let mut seen = Vec::new();
    let n = executor::run_loop(&auth, &spec(&dir, None, "cat"), |o| {
        seen.push(o.attempt().job.clone())
    })
    .unwrap();
    assert_eq!(n, 3);
    seen.sort();
    assert_eq!(seen, ["a", "b", "c"]);
    assert_eq!(files(&dir.path().join("out/nested")).len(), 3);
}

#[test]
fn cancelled_while_running_removes_only_own_files() {
    let (dir, auth) = setup(&[("j", "")]);
    let out = dir.path().join("out/nested");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("j.someone-else.out"), b"keep").unwrap();
    let marker = dir.path().join("started");
    let script = format!(
        "touch '{}'; while [ ! -e '{}.go' ]; do sleep 0.02; done; echo late",
        marker.display(),
        marker.display()
    );
    let s = spec(&dir, Some("j"), &script);
    let auth2 = auth.clone();
    let h = std::thread::spawn(move || executor::run_once(&auth2, &s));
    while !marker.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    auth.cancel("p", "j").unwrap();
    std::fs::write(format!("{}.go", marker.display()), b"").unwrap();
    let o = h.join().unwrap().unwrap();
    let error = match o {
        Outcome::Rejected { error, .. } | Outcome::LeaseLost { error, .. } => error,
        o => panic!("{o:?}"),
    };
    assert_eq!(error.code(), ErrorCode::Cancelled);
    assert_eq!(files(&out), ["j.someone-else.out"]);
    assert!(auth.facts("p", "j").unwrap().is_empty());
}

/// [`executor::Runner`] as a worker's handler: exit 0 completes with the
/// executor's provenance, a failing command fails the job; at the end of the
/// grace period after a stop the lease still held is released, its command
/// killed and its files removed.
#[test]
fn a_runner_under_a_worker_completes_fails_and_releases_at_grace_end() {
    use std::sync::{mpsc, Mutex};
    use std::time::Duration;
    use tenure::worker::{Worker, WorkerConfig};
    let (dir, auth) = setup(&[("ok", "hello"), ("bad", "x"), ("long", "y")]);
    let out = dir.path().join("out");
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let script = format!(
        r#"case "$TENURE_JOB" in
             ok) tr a-z A-Z ;;
             bad) exit {PERMANENT_EXIT_CODE} ;;
             long) echo $$ > '{m}/pid'; exec sleep 60 ;;
           esac"#,
        m = marks.display()
    );
    let runner =
        executor::Runner::new(&out, "sh".into(), vec!["-c".into(), script.into()]).unwrap();
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let config = WorkerConfig::new("p", "runner-test", Ttl::from_micros(30_000_000).unwrap())
        .slots(3)
        .grace(Duration::from_millis(300));
    let w = Worker::start(
        &auth,
        config,
        {
            let r = runner.clone();
            move |c| r.run(c)
        },
        {
            let r = runner.clone();
            move |rep| tx.lock().unwrap().send(r.settled(&rep).unwrap()).unwrap()
        },
    )
    .unwrap();
    let mut got: Vec<Outcome> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(20)).unwrap())
        .collect();
    let pid_file = marks.join("pid");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !pid_file.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the long command never started"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    w.stop(); // grace ends with `long` still running
    runner.finish(Duration::from_secs(5));
    got.push(rx.recv_timeout(Duration::from_secs(5)).unwrap());
    got.sort_by(|a, b| a.attempt().job.cmp(&b.attempt().job));
    match &got[..] {
        [Outcome::Failed {
            permanent: true,
            state: JobState::Failed,
            exit: Exit::Code(PERMANENT_EXIT_CODE),
            ..
        }, Outcome::Released {
            state: JobState::Requested,
            ..
        }, Outcome::Completed { output, sha256, .. }] => {
            assert_eq!(std::fs::read(output).unwrap(), b"HELLO");
            let facts = auth.facts("p", "ok").unwrap();
            let fact = |k: &str| facts.iter().find(|f| f.key == k).unwrap().value.clone();
            assert_eq!(fact("tenure.exec.sha256"), *sha256);
            assert_eq!(
                fact("tenure.exec.nonce"),
                got[2].attempt().nonce.to_string()
            );
        }
        other => panic!("{other:?}"),
    }
    // The released job's command was killed; only `ok`'s output is left.
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only asks whether the process exists.
    assert_ne!(
        unsafe { libc::kill(pid, 0) },
        0,
        "the long command still runs"
    );
    assert_eq!(files(&out).len(), 1, "{:?}", files(&out));
    assert_eq!(auth.job("p", "long").unwrap().state, JobState::Requested);
    assert!(auth.check().unwrap().ok());
}

#[test]
fn run_parallel_runs_up_to_n_commands_at_once_and_drains() {
    let jobs: Vec<(String, String)> = (0..6).map(|i| (format!("j{i}"), i.to_string())).collect();
    let refs: Vec<(&str, &str)> = jobs.iter().map(|(j, p)| (j.as_str(), p.as_str())).collect();
    let (dir, auth) = setup(&refs);
    let (running, started) = (dir.path().join("running"), dir.path().join("started"));
    std::fs::create_dir(&running).unwrap();
    std::fs::create_dir(&started).unwrap();
    // Each command marks itself running (until it ends) and started (for
    // good), refuses to run beside more than three, and waits (up to 20 s)
    // until three have started: run one at a time, the first would exit 1
    // and its job would fail.
    let script = format!(
        "r={r}; s={s}; touch \"$r/$TENURE_JOB\" \"$s/$TENURE_JOB\"; \
         [ \"$(ls \"$r\" | wc -l)\" -le 3 ] || exit 2; i=0; \
         while [ \"$(ls \"$s\" | wc -l)\" -lt 3 ]; do i=$((i+1)); [ $i -gt 2000 ] && exit 1; sleep 0.01; done; \
         sleep 0.05; cat; rm \"$r/$TENURE_JOB\"",
        r = running.display(),
        s = started.display()
    );
    let s = spec(&dir, None, &script);
    let mut seen = Vec::new();
    let n = executor::run_parallel(&auth, &s, 3, |o| {
        assert!(matches!(o, Outcome::Completed { .. }), "{o:?}");
        seen.push(o.attempt().job.clone());
    })
    .unwrap();
    assert_eq!(n, 6);
    seen.sort();
    assert_eq!(seen, ["j0", "j1", "j2", "j3", "j4", "j5"]);
    for (j, _) in &jobs {
        assert_eq!(auth.job("p", j).unwrap().state, JobState::Completed);
        let facts = auth.facts("p", j).unwrap();
        assert!(facts.iter().any(|f| f.key == "tenure.exec.nonce"));
    }
    assert_eq!(files(&dir.path().join("out/nested")).len(), 6);
    assert!(files(&running).is_empty());
    assert_eq!(auth.check().unwrap().violations.len(), 0);
}

#[test]
fn run_parallel_refuses_a_job_id_and_bad_widths() {
    let (dir, auth) = setup(&[("a", "")]);
    let named = spec(&dir, Some("a"), "cat");
    let next = spec(&dir, None, "cat");
    for (s, n) in [(&named, 2), (&next, 0), (&next, 1001)] {
        let e = executor::run_parallel(&auth, s, n, |_| {}).unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::InvalidArgument));
    }
    assert_eq!(auth.job("p", "a").unwrap().state, JobState::Requested);
}
