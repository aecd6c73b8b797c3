#![allow(dead_code)]
//! Helpers: run the built `tenure` binary against a temporary store.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_tenure");

/// Exit statuses documented in `src/exit.rs`.
pub const USAGE: i32 = 2;
pub const VIOLATIONS: i32 = 3;
pub const TOKEN_NOT_DELIVERED: i32 = 4;
pub const TOKEN_FILE_NOT_RESERVED: i32 = 5;
pub const COMMAND_FAILED: i32 = 6;
/// 10 + tenure::ErrorCode number.
pub fn code(c: tenure::ErrorCode) -> i32 {
    10 + c.as_u32() as i32
}

pub struct Store {
    pub dir: tempfile::TempDir,
    pub db: PathBuf,
}

impl Store {
    pub fn new() -> Store {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("store.db");
        Store { dir, db }
    }

    /// A store with production `p` and jobs `names` (payload `payload of NAME`).
    pub fn with_jobs(names: &[&str]) -> Store {
        let s = Store::new();
        s.ok(&["production", "create", "p"]);
        for n in names {
            s.run_in(
                &["job", "submit", "-p", "p", n],
                format!("payload of {n}").as_bytes(),
            )
            .ok();
        }
        s
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.env("TENURE_DB", &self.db).args(args);
        c
    }

    pub fn run(&self, args: &[&str]) -> Out {
        self.run_in(args, b"")
    }

    pub fn run_in(&self, args: &[&str], stdin: &[u8]) -> Out {
        run_cmd(self.cmd(args), stdin)
    }

    /// Run, assert exit 0, return stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        self.run(args).ok()
    }

    /// Run with `--json`, assert exit 0, parse stdout.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let out = self.ok(&a);
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{a:?}: {e}: {out}"))
    }

    pub fn job(&self, job: &str) -> Value {
        self.json(&["job", "show", "-p", "p", job])
    }

    /// `claim -p p ARGS --token-out TOK`.
    pub fn try_claim(&self, args: &[&str], tok: &Path) -> Out {
        let mut a = vec!["claim", "-p", "p"];
        a.extend_from_slice(args);
        a.extend(["--token-out", tok.to_str().unwrap()]);
        self.run(&a)
    }

    /// A claim of `job` into a new token file; returns the file.
    pub fn claim(&self, job: &str, ttl: &str) -> PathBuf {
        let tok = self.path(&format!("{job}-{}.token", uuid_like()));
        self.try_claim(&["--job", job, "--holder", "tester", "--ttl", ttl], &tok)
            .ok();
        tok
    }

    /// `renew --token-file TOK --ttl TTL`.
    pub fn renew(&self, tok: &Path, ttl: &str) -> Out {
        self.run(&["renew", "--token-file", tok.to_str().unwrap(), "--ttl", ttl])
    }

    /// A job's facts, key to value.
    pub fn facts(&self, job: &str) -> HashMap<String, String> {
        self.json(&["facts", "-p", "p", "--job", job])["facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                (
                    f["key"].as_str().unwrap().to_owned(),
                    f["value"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

pub fn uuid_like() -> String {
    tenure::Uuid::new_v4().simple().to_string()
}

pub fn run_cmd(mut c: Command, stdin: &[u8]) -> Out {
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn tenure");
    {
        use std::io::Write;
        let mut i = child.stdin.take().unwrap();
        let _ = i.write_all(stdin);
    }
    let o = child.wait_with_output().unwrap();
    Out(o)
}

pub struct Out(pub Output);

impl Out {
    pub fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    pub fn ok(self) -> String {
        assert_eq!(
            self.code(),
            0,
            "stdout: {}\nstderr: {}",
            self.stdout(),
            self.stderr()
        );
        self.stdout()
    }
    /// Assert the exit status; return stderr.
    pub fn fails(self, code: i32) -> String {
        assert_eq!(
            self.code(),
            code,
            "stdout: {}\nstderr: {}",
            self.stdout(),
            self.stderr()
        );
        self.stderr()
    }
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout().trim())
            .unwrap_or_else(|e| panic!("{e}: {}", self.stdout()))
    }
}

/// Poll `f` until it returns true (generous timeout; no timing assertion).
pub fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn files_in(dir: &Path) -> Vec<String> {
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

pub fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a child this test started and has not reaped.
    let r = unsafe { libc::kill(pid as libc::pid_t, sig) };
    assert_eq!(r, 0, "kill({pid}, {sig})");
}

/// The one-letter state of a process from /proc/PID/stat.
pub fn proc_state(pid: u32) -> Option<char> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    s.rsplit_once(") ")?.1.chars().next()
}

/// SIGSTOP `pid`, making sure it is not stopped while holding the store's
/// writer lock (that would stall every other process): if a probe cannot
/// take the writer lock, resume it briefly and try again.
pub fn stop_outside_write(db: &Path, pid: u32) {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_millis(300)).unwrap();
    for _ in 0..200 {
        signal(pid, libc::SIGSTOP);
        wait_for("the process to stop", || proc_state(pid) == Some('T'));
        if conn.execute_batch("BEGIN IMMEDIATE; ROLLBACK;").is_ok() {
            return;
        }
        signal(pid, libc::SIGCONT);
        std::thread::sleep(Duration::from_millis(37));
    }
    panic!("could not stop {pid} outside a write transaction");
}

/// Run `script` with `sh` in a private mount namespace (`unshare -m` as
/// root, else `unshare -Urm`), `$TENURE` naming the binary. The script exits
/// 97 when it cannot mount what it needs; the test fails when no namespace works.
pub fn in_namespace(script: &str, envs: &[(&str, &Path)]) -> Out {
    let mut attempts = Vec::new();
    for flags in ["-m", "-Urm"] {
        let mut c = Command::new("unshare");
        c.args([flags, "sh", "-c", script]).env("TENURE", BIN);
        for (k, v) in envs {
            c.env(k, v);
        }
        let out = run_cmd(c, b"");
        let err = out.stderr();
        if out.code() == 97 || err.starts_with("unshare:") {
            attempts.push(format!("unshare {flags}: {err}"));
            continue;
        }
        return out;
    }
    panic!("this test needs a private mount (`unshare -m` as root or `unshare -Urm`): {attempts:?}")
}

/// A process ID a test command wrote into `file` (`echo $$ > FILE`).
pub fn read_pid(file: &Path) -> u32 {
    let text = std::fs::read_to_string(file).unwrap();
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{}: {e}: {text:?}", file.display()))
}

/// `--json work -p p --out-dir OUT EXTRA... -- COMMAND...`
pub fn work_args<'a>(out: &'a Path, extra: &[&'a str], command: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "--json",
        "work",
        "-p",
        "p",
        "--out-dir",
        out.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    a.push("--");
    a.extend_from_slice(command);
    a
}

/// What must never appear where a lease token's secret could leak: the
/// token text, and its 32-byte secret raw, in hex (both cases) and in
/// base64 (standard and URL-safe, with and without padding; a 24-byte run
/// from inside the secret, so the encoding does not depend on alignment).
pub fn secret_needles(token: &str) -> Vec<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use base64::Engine;
    let token = token.trim();
    let body = token
        .split_once('.')
        .expect("a token has a version prefix")
        .1;
    let raw = URL_SAFE_NO_PAD
        .decode(body)
        .expect("a token body is base64url");
    assert!(raw.len() >= 32, "a token ends with a 32-byte secret");
    let secret = &raw[raw.len() - 32..];
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let mut v = vec![
        token.as_bytes().to_vec(),
        secret.to_vec(),
        hex.clone().into_bytes(),
        hex.to_uppercase().into_bytes(),
    ];
    for e in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        v.push(e.encode(&secret[3..27]).into_bytes());
    }
    v
}
