//! Progress checkpoints (docs/design.md, "Progress checkpoints"): the
//! current lease stores a small value that the job's next attempt reads.

use super::{checked, guarded, locked, renewal_replay, renewed, replayed_or, Change, LeaseKey};
use crate::error::Result;
use crate::model::EventKind;
use crate::request::Applied;
use crate::session::Session;
use crate::store::{JobRow, LockedFor, Txn};
use crate::ttl::Ttl;
use crate::validate;

/// The checkpoint's own transition: nothing but `updated_us` changes in
/// the row (the value is written beside it), and it must commit before the
/// lease's expiry, like a renewal.
fn checkpointed(mut row: JobRow, now: i64, len: usize) -> Change {
    let expires = row.expires_us.unwrap_or(i64::MIN);
    let what = guarded(&row, "the lease on", " storing a checkpoint");
    row.updated_us = now;
    let mut c = Change::new(row, EventKind::Checkpointed, format!("{len} bytes"));
    c.expiry_only = true;
    c.deadline = Some((expires, what));
    c
}

/// Store `progress` (checked by [`validate::progress`]) as the job's
/// checkpoint, with `renew` also renewing the lease as
/// [`super::renew_applied`] does (then the answer is the new expiry, and
/// with `replay` a renewal this lease already made is answered as one,
/// writing nothing). The lease is checked as every claimant transition is
/// ([`checked`]): a stale, expired or closed lease is refused with the
/// same errors and nothing is written.
pub(crate) fn checkpoint_applied(
    s: &mut Session,
    key: &LeaseKey<'_>,
    progress: &[u8],
    renew: Option<Ttl>,
    replay: bool,
) -> Result<Applied<Option<i64>>> {
    validate::progress(progress)?;
    let (now, row) = locked(s, key.production, key.job, LockedFor::Transition)?;
    let kept = row.clone();
    let decided = checked(row, key, now).and_then(|row| match renew {
        Some(ttl) => renewed(row, now, ttl).map(|(mut c, exp)| {
            c.detail = match c.detail.is_empty() {
                true => format!("checkpoint of {} bytes", progress.len()),
                false => format!("{}; checkpoint of {} bytes", c.detail, progress.len()),
            };
            (c, Some(exp))
        }),
        None => Ok((checkpointed(row, now, progress.len()), None)),
    });
    match decided {
        Ok((c, out)) => {
            s.txn.set_progress(key.production, key.job, progress)?;
            super::write(s, c)?;
            Ok(Applied::fresh(out))
        }
        Err(e) => {
            let r = renew.filter(|_| replay).map(|ttl| {
                move |t: &mut dyn Txn, row: &JobRow, now| {
                    renewal_replay(t, row, now, ttl).map(|o| o.map(Some))
                }
            });
            replayed_or(s.txn.as_mut(), e, key, kept.as_ref(), now, r)
        }
    }
}
