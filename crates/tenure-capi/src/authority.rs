//! `tenure_authority`: an open store and the operations run on it directly.

use std::ffi::c_char;

use tenure::Authority;

use crate::boundary::{boxed, buf_arg, copy_out, out_arg, ttl, Arg, Handle};
use crate::lease::tenure_lease;
use crate::list::{tenure_event_list, tenure_fact_list, tenure_production_list};
use crate::options::{
    open_options, tenure_cancelled, tenure_job_spec, tenure_list_query, tenure_open_options,
    tenure_options, tenure_submitted,
};
use crate::status::tenure_status;
use crate::view::{tenure_job_list, tenure_job_view};
use crate::writer::Writer;

/// An open store. Thread-safe: share one handle between threads.
pub struct tenure_authority {
    pub(crate) inner: Authority,
}

impl Handle for tenure_authority {}

export! {
    /// Open or create the store at `path` (UTF-8). `options` may be NULL for the
    /// defaults. On success `*out` receives a handle to free with
    /// `tenure_authority_free()`. A store newer than this library is refused
    /// untouched (`TENURE_SCHEMA_TOO_NEW`); a foreign or corrupt file is
    /// `TENURE_STORE`.
    fn tenure_authority_open(
        path: *const c_char,
        options: *const tenure_open_options,
        out: *mut *mut tenure_authority,
    ) -> tenure_status {
        let path = Arg::read(path, "path")?;
        let out = out_arg(out, "out")?;
        let opts = open_options(options)?;
        let auth = Authority::open(path, &opts)?;
        out.write(boxed(tenure_authority { inner: auth }));
        Ok(())
    }

    /// Open or create the store at `path` as `tenure_authority_open()` does,
    /// with the settings of an options handle (ABI 1.1; required, see
    /// `tenure_options_new()`), which stays the caller's to free.
    fn tenure_authority_open_with(path: *const c_char, options: *const tenure_options)
        -> out: *mut *mut tenure_authority =
        boxed(tenure_authority { inner: Authority::open(path, &options.get())? });

    /// Close a handle (NULL is a no-op). Leases and edits made from it stay
    /// valid and must be freed separately.
    fn tenure_authority_free(authority: *mut tenure_authority) = free;

    /// Create a production. `*out_created` is true if it was new, false if it
    /// already existed.
    fn tenure_authority_create_production(
        authority: *const tenure_authority,
        production: *const c_char,
    ) -> out_created: *mut bool = Writer::create_production(authority, production)?;

    /// Cancel every non-terminal job of a production and refuse new
    /// submissions; `*out_cancelled` receives how many jobs were cancelled.
    fn tenure_authority_cancel_production(
        authority: *const tenure_authority,
        production: *const c_char,
    ) -> out_cancelled: *mut u64 = Writer::cancel_production(authority, production)?;

    /// Submit one job. `*out_submitted` is a `tenure_submitted` value. The same
    /// ID with the same content is `TENURE_SUBMITTED_EXISTING`; different
    /// content is `TENURE_CONFLICT`.
    fn tenure_authority_submit(
        authority: *const tenure_authority,
        production: *const c_char,
        spec: *const tenure_job_spec,
    ) -> out_submitted: *mut tenure_submitted =
        tenure_submitted::from(Writer::submit(authority, production, &spec)?);

    /// Coordinator cancel of one job; `*out_cancelled` is a `tenure_cancelled`
    /// value. A completed or failed job is `TENURE_JOB_TERMINAL`.
    fn tenure_authority_cancel(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
    ) -> out_cancelled: *mut tenure_cancelled =
        tenure_cancelled::from(Writer::cancel(authority, production, job)?);

    /// Claim a named job for `ttl_us` microseconds (1 ..= 86 400 000 000).
    /// `*out_lease` receives an active lease to free with `tenure_lease_free()`.
    fn tenure_authority_claim(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
    ) -> out_lease: *mut *mut tenure_lease =
        tenure_lease::boxed(Writer::claim(authority, production, job, holder, ttl(ttl_us)?)?);

    /// Claim the next claimable job of a production (highest priority, then
    /// oldest). `TENURE_NO_JOB_AVAILABLE` when there is none.
    fn tenure_authority_claim_next(
        authority: *const tenure_authority,
        production: *const c_char,
        holder: *const c_char,
        ttl_us: i64,
    ) -> out_lease: *mut *mut tenure_lease =
        tenure_lease::boxed(Writer::claim_next(authority, production, holder, ttl(ttl_us)?)?);

    /// Turn a token from `tenure_lease_export_token()` (a NUL-terminated string,
    /// trailing whitespace ignored) back into an active lease, after checking
    /// it against the store's current claim, state and expiry. Text that is not
    /// UTF-8 is `TENURE_INVALID_ARGUMENT`; otherwise the statuses are distinct:
    /// `TENURE_TOKEN_MALFORMED`, `TENURE_TOKEN_TOO_LARGE` (over 2048 bytes),
    /// `TENURE_TOKEN_UNSUPPORTED_VERSION`, `TENURE_STALE_LEASE`,
    /// `TENURE_LEASE_EXPIRED`, `TENURE_LEASE_CLOSED`, `TENURE_CANCELLED`, ...
    fn tenure_authority_import_lease(authority: *const tenure_authority, token: *const c_char)
        -> out_lease: *mut *mut tenure_lease =
        // Every token rule (size bound included) is the core's.
        tenure_lease::boxed(authority.inner.import_lease(token)?);

    /// Observe one job; `*out_view` receives a snapshot to free with
    /// `tenure_job_view_free()`.
    fn tenure_authority_job(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
    ) -> out_view: *mut *mut tenure_job_view =
        boxed(tenure_job_view::new(&authority.inner.job(production, job)?));

    /// Copy a job's payload into `buf` (`cap` bytes; `buf` may be NULL when
    /// `cap` is 0). `*out_len` receives the payload length; if `cap` is smaller,
    /// nothing is copied and `TENURE_INVALID_ARGUMENT` is returned with
    /// `*out_len` set to the required size.
    fn tenure_authority_payload(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
        buf: *mut u8,
        cap: usize,
        out_len: *mut usize,
    ) -> tenure_status {
        let a = Arg::read(authority, "authority")?;
        let (p, j) = (Arg::read(production, "production")?, Arg::read(job, "job")?);
        buf_arg(buf, cap)?;
        let out = out_arg(out_len, "out_len")?;
        let payload = a.inner.payload(p, j)?;
        copy_out(&payload, false, buf, cap, out, "payload")
    }

    /// List a production's jobs in job-ID order, a page at a time. `query` may
    /// be NULL (all states, first page of 100). For the next page, pass the
    /// last job ID of this page as `query->after`. `*out_list` receives a
    /// snapshot to free with `tenure_job_list_free()`.
    fn tenure_authority_jobs(
        authority: *const tenure_authority,
        production: *const c_char,
        query: *const tenure_list_query,
    ) -> out_list: *mut *mut tenure_job_list =
        boxed(tenure_job_list::new(&authority.inner.jobs(production, &query)?));

    /// All productions, by name; free the list with `tenure_production_list_free()`.
    fn tenure_authority_productions(authority: *const tenure_authority)
        -> out_list: *mut *mut tenure_production_list =
        boxed(tenure_production_list::new(&authority.inner.productions()?));

    /// Facts published by one job's completion, provenance (`tenure.*` keys)
    /// included; free with `tenure_fact_list_free()`.
    fn tenure_authority_facts(
        authority: *const tenure_authority,
        production: *const c_char,
        job: *const c_char,
    ) -> out_list: *mut *mut tenure_fact_list =
        boxed(tenure_fact_list::new(&authority.inner.facts(production, job)?));

    /// Every fact of a production, by job; free with `tenure_fact_list_free()`.
    fn tenure_authority_production_facts(
        authority: *const tenure_authority,
        production: *const c_char,
    ) -> out_list: *mut *mut tenure_fact_list =
        boxed(tenure_fact_list::new(&authority.inner.production_facts(production)?));

    /// Events with a sequence number greater than `after`, oldest first, at most
    /// `limit` (0 = 100, capped at 10 000). Page by passing the last sequence
    /// number seen. Free with `tenure_event_list_free()`.
    fn tenure_authority_events(authority: *const tenure_authority, after: u64, limit: usize)
        -> out_list: *mut *mut tenure_event_list =
        boxed(tenure_event_list::new(&authority.inner.events(after, limit)?));

    /// Events of one production (see `tenure_authority_events()`).
    fn tenure_authority_production_events(
        authority: *const tenure_authority,
        production: *const c_char,
        after: u64,
        limit: usize,
    ) -> out_list: *mut *mut tenure_event_list = boxed(tenure_event_list::new(
        &authority.inner.production_events(production, after, limit)?,
    ));

    /// The authority's clock reading, its durable high-water mark (both µs since
    /// the Unix epoch) and whether guarded operations are currently refused
    /// because the clock reads below the mark.
    fn tenure_authority_clock(authority: *const tenure_authority)
        -> (out_now_us: *mut i64, out_mark_us: *mut i64, out_blocked: *mut bool) = {
        let c = authority.inner.clock()?;
        (c.now_us, c.mark_us, c.blocked)
    };

    /// Run the offline invariant checker; `*out_violations` receives the number
    /// of violations found (0 means consistent; the texts are available from the
    /// CLI's `check`).
    fn tenure_authority_check(authority: *const tenure_authority)
        -> out_violations: *mut u64 = authority.inner.check()?.violations.len() as u64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::{
        tenure_options_free, tenure_options_new, tenure_options_set_group_commit,
    };
    use std::ffi::CString;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};
    use tenure::{JobSpec, Options};

    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// How a handle is opened: `tenure_authority_open` with NULL options,
    /// or `tenure_authority_open_with` after setting group commit.
    #[derive(Clone, Copy, Debug)]
    enum Open {
        Plain,
        With(bool),
    }

    unsafe fn open(path: &CString, how: Open) -> *mut tenure_authority {
        let mut a = std::ptr::null_mut();
        let st = match how {
            Open::Plain => tenure_authority_open(path.as_ptr(), std::ptr::null(), &mut a),
            Open::With(on) => {
                let mut o = std::ptr::null_mut();
                assert_eq!(
                    tenure_options_new(std::ptr::null(), &mut o),
                    tenure_status::TENURE_OK
                );
                assert_eq!(
                    tenure_options_set_group_commit(o, on),
                    tenure_status::TENURE_OK
                );
                let st = tenure_authority_open_with(path.as_ptr(), o, &mut a);
                tenure_options_free(o);
                st
            }
        };
        assert_eq!(st, tenure_status::TENURE_OK);
        a
    }

    /// While another handle holds the writer lock, a claim through a handle
    /// with group commit on waits in that handle's commit queue; with it
    /// off the claim waits for the lock alone and nothing is queued.
    #[test]
    fn the_group_commit_switch_reaches_the_authority() {
        let dir = Scratch(std::env::temp_dir().join(format!(
            "tenure-capi-group-{}-{:?}",
            std::process::id(),
            Instant::now()
        )));
        std::fs::create_dir_all(&dir.0).unwrap();
        for (i, (how, grouped)) in [
            (Open::Plain, true),
            (Open::With(true), true),
            (Open::With(false), false),
        ]
        .into_iter()
        .enumerate()
        {
            let path = dir.0.join(format!("s{i}.db"));
            let cpath = CString::new(path.to_str().unwrap()).unwrap();
            let a = unsafe { open(&cpath, how) };
            let inner = unsafe { &(*a).inner };
            inner.create_production("p").unwrap();
            inner.submit("p", &JobSpec::new("j", vec![])).unwrap();
            let holder = Authority::open(path.to_str().unwrap(), &Options::new()).unwrap();
            let edit = holder.edit().unwrap();
            let handle = a as usize;
            let st = std::thread::scope(|sc| {
                let claim = sc.spawn(move || {
                    let mut l = std::ptr::null_mut();
                    let st = unsafe {
                        tenure_authority_claim(
                            handle as *const tenure_authority,
                            c"p".as_ptr(),
                            c"j".as_ptr(),
                            c"w".as_ptr(),
                            60_000_000,
                            &mut l,
                        )
                    };
                    unsafe { crate::lease::tenure_lease_free(l) };
                    st
                });
                if grouped {
                    let t0 = Instant::now();
                    while inner.queued_group_ops() < 1 {
                        assert!(
                            t0.elapsed() < Duration::from_secs(4),
                            "{how:?}: never queued"
                        );
                        std::thread::sleep(Duration::from_millis(1));
                    }
                } else {
                    std::thread::sleep(Duration::from_millis(100));
                    assert_eq!(inner.queued_group_ops(), 0, "{how:?}");
                }
                edit.abort();
                claim.join().unwrap()
            });
            assert_eq!(st, tenure_status::TENURE_OK, "{how:?}");
            unsafe { tenure_authority_free(a) };
        }
    }
}
