//! Fair claims across productions (docs/design.md, "Claims across
//! productions"): claim-next over a list of productions, rotating.

use super::{claim_next_scan, Minted};
use crate::error::Result;
use crate::session::Session;
use crate::ttl::Ttl;
use crate::validate;

/// Claim up to `n` jobs across `productions` (checked by
/// [`validate::production_list`]), each production asked with the
/// single-production claim-next rule. The productions are taken in list
/// order starting at index `start` (the caller's rotation, taken modulo
/// the list's length), in rounds: each production still in the round is
/// asked for its share, `⌈claims still wanted / productions still in the
/// round⌉`; one that gives fewer than its share has nothing more and drops
/// out; rounds repeat until `n` claims are made or every production
/// dropped out. With `n = 1` that is: the first production, from `start`
/// on, with a claimable job serves the claim. Answers the claims in the
/// order made and the rotation's next start: the index after the last
/// production that gave a claim (`start` unchanged if none did).
pub(crate) fn claim_next_across(
    s: &mut Session,
    productions: &[&str],
    start: usize,
    holder: &str,
    ttl: Ttl,
    n: usize,
) -> Result<(Vec<Minted>, usize)> {
    validate::production_list(productions)?;
    validate::batch(n)?;
    validate::holder(holder)?;
    let k = productions.len();
    let start = start % k;
    let mut round: Vec<usize> = (0..k).map(|i| (start + i) % k).collect();
    let mut out: Vec<Minted> = Vec::with_capacity(n);
    let mut next = start;
    while out.len() < n && !round.is_empty() {
        let share = (n - out.len()).div_ceil(round.len());
        let mut kept = Vec::with_capacity(round.len());
        for &i in &round {
            let want = share.min(n - out.len());
            if want == 0 {
                break;
            }
            let got = claim_next_scan(s, productions[i], holder, ttl, want, None)?;
            if !got.is_empty() {
                next = (i + 1) % k;
            }
            if got.len() == want {
                kept.push(i);
            }
            out.extend(got);
        }
        round = kept;
    }
    Ok((out, next))
}
