//! Retention (ABI 1.1): the retention option, pruning, deleting and
//! exporting a production, the history horizon and vacuum
//! (docs/design.md, "Retention"). Conversions only: every rule is the
//! core's.

use std::ffi::{c_char, c_int, c_void, CString};

use tenure::{Age, Error, Retention};

use crate::authority::tenure_authority;
use crate::boundary::{out_arg, Arg, R};
use crate::options::tenure_options;
use crate::status::tenure_status;
use crate::{tenure_deleted_counts, tenure_prune_report};

/// A retention policy from whole seconds per kind, 0 keeping that kind
/// forever; every other age is the core's `Age` (1 s ..= 3650 days, else
/// `TENURE_INVALID_DURATION`).
fn policy(event_age_s: u64, terminal_job_age_s: u64, tombstone_age_s: u64) -> R<Retention> {
    let age = |s: u64| (s != 0).then(|| Age::from_secs(s)).transpose();
    Ok(Retention {
        event_age: age(event_age_s)?,
        terminal_job_age: age(terminal_job_age_s)?,
        tombstone_age: age(tombstone_age_s)?,
    })
}

export! {
    /// A retention policy the authorities opened with these options apply
    /// automatically (ABI 1.1; off by default): one bounded prune step after
    /// every 64 committed one-step calls of a handle (every 8 while the last
    /// step hit its bound), in its own short transaction after the caller's
    /// commit. Ages in whole seconds, 1 ..=
    /// 315 360 000 (3650 days), else `TENURE_INVALID_DURATION`; 0 keeps that
    /// kind forever, all three 0 turn automatic retention off
    /// (docs/design.md, "Retention").
    fn tenure_options_set_retention(
        options: *mut tenure_options,
        event_age_s: u64,
        terminal_job_age_s: u64,
        tombstone_age_s: u64,
    ) = {
        let p = policy(event_age_s, terminal_job_age_s, tombstone_age_s)?;
        options.set(|o| o.retention(p))
    };

    /// One bounded prune step (ABI 1.1) with the given ages (as
    /// `tenure_options_set_retention()`: whole seconds, 0 keeps that kind):
    /// at most 256 rows of each kind in one short transaction; call again
    /// while `out_report->more`. Ages are measured on the authority's clock,
    /// sampled like a guarded operation (`TENURE_CLOCK_ROLLBACK` while it
    /// reads below the high-water mark). Jobs that are not stored terminal
    /// are never touched.
    fn tenure_authority_prune(
        authority: *const tenure_authority,
        event_age_s: u64,
        terminal_job_age_s: u64,
        tombstone_age_s: u64,
    ) -> out_report: *mut tenure_prune_report = {
        let r = authority
            .inner
            .prune(&policy(event_age_s, terminal_job_age_s, tombstone_age_s)?)?;
        tenure_prune_report {
            jobs: r.jobs,
            tombstones: r.tombstones,
            events: r.events,
            horizon: r.horizon,
            more: r.more,
        }
    };

    /// Remove a finished production with its jobs, facts, events and
    /// tombstones (ABI 1.1). `TENURE_PRODUCTION_LIVE`, changing nothing,
    /// while any of its jobs is not terminal; `TENURE_NOT_FOUND` for an
    /// unknown production. Runs in bounded steps, each its own transaction
    /// (the first marks the production cancelled); if interrupted, calling
    /// again finishes it. `*out_counts` receives what was removed.
    fn tenure_authority_delete_production(
        authority: *const tenure_authority,
        production: *const c_char,
    ) -> out_counts: *mut tenure_deleted_counts = {
        let c = authority.inner.delete_production(production)?;
        tenure_deleted_counts {
            jobs: c.jobs,
            facts: c.facts,
            events: c.events,
            tombstones: c.tombstones,
        }
    };

    /// The history horizon (ABI 1.1): every event with a sequence number up
    /// to `*out_seq` was pruned (0: none). An event listing asked for events
    /// after a position below it is `TENURE_HISTORY_PRUNED` (its message
    /// names the horizon); a tailer resumes after this number.
    fn tenure_authority_history_horizon(authority: *const tenure_authority)
        -> out_seq: *mut u64 = authority.inner.history_horizon()?;

    /// Rewrite a SQLite store so that pruning gives freed space back to the
    /// file system (ABI 1.1): switches a store created before schema 3 to
    /// incremental auto-vacuum with a full `VACUUM`, holding the writer lock
    /// while it runs (run it in a quiet moment). A no-op on PostgreSQL.
    fn tenure_authority_vacuum(authority: *const tenure_authority) =
        authority.inner.vacuum();
}

/// Receives one export record (`tenure_authority_export_production()`):
/// `line` is one line of JSON, NUL-terminated, `len` bytes without the NUL
/// and without a newline, borrowed for the call only; `ctx` is the caller's
/// pointer. Return 0 to continue, anything else to stop the export. It must
/// not unwind (no C++ exception, no `longjmp`) through the library.
pub type tenure_export_sink =
    Option<unsafe extern "C" fn(line: *const c_char, len: usize, ctx: *mut c_void) -> c_int>;

export! {
    /// Export a production for archiving (ABI 1.1): `sink` is called once per
    /// record, in order: the production, its jobs by ID (each with its payload
    /// in base64), its facts by job, then its events by sequence number; each
    /// record is one line of JSON, exactly the lines `tenure production export`
    /// writes (docs/cli.md). Jobs and facts come from one snapshot, events are
    /// paged like a tailer's. No secret or secret digest is exported. `ctx` is
    /// passed to `sink` as it is (it may be NULL). If `sink` returns non-zero
    /// the export stops there and the call returns `TENURE_STORE`. On success
    /// `*out_records` receives the number of records.
    fn tenure_authority_export_production(
        authority: *const tenure_authority,
        production: *const c_char,
        sink: tenure_export_sink,
        ctx: *mut c_void,
        out_records: *mut u64,
    ) -> tenure_status {
        let a = Arg::read(authority, "authority")?;
        let p = Arg::read(production, "production")?;
        let Some(sink) = sink else {
            return Err(crate::boundary::invalid("`sink` must not be NULL"));
        };
        let out = out_arg(out_records, "out_records")?;
        let n = a.inner.export_production(p, &mut |rec| {
            // JSON escapes every control character, so a line has no NUL.
            let line = CString::new(rec.to_json_line())
                .map_err(|_| Error::Internal("an export line holds a NUL byte".into()))?;
            match sink(line.as_ptr(), line.as_bytes().len(), ctx) {
                0 => Ok(()),
                r => Err(Error::Store(format!(
                    "the export sink stopped the export (it returned {r})"
                ))),
            }
        })?;
        out.write(n);
        Ok(())
    }
}
