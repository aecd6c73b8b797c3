//! Idempotent calls: claims under a caller's request ID and transition
//! outcomes that say whether they were replays (docs/design.md,
//! "Idempotent calls"). The rules are in [`crate::rules`] (`claim_idempotent`,
//! `claim_next_idempotent`, `*_applied`); this module holds the public types.

use crate::error::Result;
use crate::secret::Secret;
use std::fmt;

/// A claim's request ID with the secret the claim will carry, generated
/// here, in the client, before the request is sent; only the secret's
/// digest travels with the request.
///
/// Pass the same `ClaimRequest` (or a clone) to retry a claim whose answer
/// was lost: while the claim it made is current, the retry returns the same
/// lease (same claim ID, attempt and expiry) and changes nothing; after
/// that, the claim's own error (`stale_lease`, `lease_expired`,
/// `lease_closed`, `cancelled`). The same request ID with another secret
/// or other arguments (job, holder, TTL, claim vs claim-next) is
/// `conflict`. Request IDs are scoped by production, validated like job
/// IDs, and kept as long as the job they claimed.
#[derive(Clone)]
pub struct ClaimRequest {
    id: String,
    pub(crate) secret: Secret,
}

impl ClaimRequest {
    /// A request with a fresh secret from the OS CSPRNG. The ID must be a
    /// valid ID (`[A-Za-z0-9][A-Za-z0-9._:@+-]{0,127}`), else
    /// [`crate::Error::InvalidArgument`].
    pub fn new(request_id: &str) -> Result<ClaimRequest> {
        crate::validate::id("request ID", request_id)?;
        Ok(ClaimRequest {
            id: request_id.to_owned(),
            secret: Secret::generate()?,
        })
    }

    /// The request ID.
    pub fn request_id(&self) -> &str {
        &self.id
    }
}

impl fmt::Debug for ClaimRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClaimRequest")
            .field("request_id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The outcome of an idempotent call: its value and whether it was a
/// replay of an earlier call that had already committed (nothing changed
/// now; the value is what that call recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied<T> {
    /// What the call returns (for a replay: what was recorded).
    pub value: T,
    /// True if an earlier call had already made this change.
    pub replayed: bool,
}

impl<T> Applied<T> {
    pub(crate) fn fresh(value: T) -> Applied<T> {
        Applied {
            value,
            replayed: false,
        }
    }
    pub(crate) fn replay(value: T) -> Applied<T> {
        Applied {
            value,
            replayed: true,
        }
    }
}
