//! The one error taxonomy shared by every surface.
//!
//! Each variant has a stable numeric [`ErrorCode`]; the C ABI exports these
//! numbers as `tenure_status`, C++ and Python map them to exception classes.
//! Numbers are never reused or renumbered: new codes are only appended.
//! Messages name productions, jobs, holders and claim IDs, never secrets.

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every way a tenure operation can fail.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A malformed ID, holder, payload, reason, fact, pointer or number.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A lease duration that is not a whole number of microseconds in 1 µs..=24 h.
    #[error("invalid duration: {0}")]
    InvalidDuration(String),
    /// The production or job does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The same ID already exists with different content.
    #[error("conflict: {0}")]
    Conflict(String),
    /// The job exists but cannot be claimed now (held, exhausted, terminal).
    #[error("not claimable: {0}")]
    NotClaimable(String),
    /// `claim_next` found nothing claimable in the production.
    #[error("no job available: {0}")]
    NoJobAvailable(String),
    /// The lease is no longer the job's current claim (another claim replaced it).
    #[error("stale lease: {0}")]
    StaleLease(String),
    /// The lease is still the current claim but its expiry has passed.
    #[error("lease expired: {0}")]
    LeaseExpired(String),
    /// The lease was already ended (released, failed or completed), or its edit failed.
    #[error("lease closed: {0}")]
    LeaseClosed(String),
    /// The lease belongs to an edit that has not committed yet.
    #[error("lease pending: {0}")]
    LeasePending(String),
    /// A renewal would not move the expiry later.
    #[error("not extended: {0}")]
    NotExtended(String),
    /// The job (or production) was cancelled by a coordinator.
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// The job is already completed or failed, so the request cannot apply.
    #[error("job terminal: {0}")]
    JobTerminal(String),
    /// The clock reads earlier than the store's durable high-water mark.
    #[error("clock rollback: clock reads {now_us} µs, below the high-water mark {mark_us} µs; guarded operations are refused until real time passes the mark")]
    ClockRollback {
        /// The rejected sample (µs since the Unix epoch).
        now_us: i64,
        /// The durable high-water mark (µs since the Unix epoch).
        mark_us: i64,
    },
    /// The token text is not a well-formed tenure lease token.
    #[error("token malformed: {0}")]
    TokenMalformed(String),
    /// The token is longer than [`crate::MAX_TOKEN_LEN`].
    #[error("token too large: {len} bytes, at most {max} accepted")]
    TokenTooLarge {
        /// Length of the rejected input in bytes.
        len: usize,
        /// The bound.
        max: usize,
    },
    /// The token names a format version this library does not know.
    #[error("token version unsupported: {0}")]
    TokenUnsupportedVersion(String),
    /// The writer lock could not be taken within the busy timeout.
    #[error("busy: {0}")]
    Busy(String),
    /// The store was written by a newer tenure; it was not touched.
    #[error(
        "schema too new: store has schema version {found}, this library supports up to {supported}"
    )]
    SchemaTooNew {
        /// The store's `user_version`.
        found: u32,
        /// The newest schema this library knows.
        supported: u32,
    },
    /// The store failed: I/O error, corrupt or foreign file, read-only, full disk.
    #[error("store error: {0}")]
    Store(String),
    /// A bug: an invariant of the library itself broke, or a panic was caught.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Stable numeric codes, one per [`Error`] variant. `0` is success in the C ABI.
///
/// These numbers are part of the C ABI: never renumber, only append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
#[non_exhaustive]
pub enum ErrorCode {
    /// See [`Error::InvalidArgument`].
    InvalidArgument = 1,
    /// See [`Error::InvalidDuration`].
    InvalidDuration = 2,
    /// See [`Error::NotFound`].
    NotFound = 3,
    /// See [`Error::Conflict`].
    Conflict = 4,
    /// See [`Error::NotClaimable`].
    NotClaimable = 5,
    /// See [`Error::NoJobAvailable`].
    NoJobAvailable = 6,
    /// See [`Error::StaleLease`].
    StaleLease = 7,
    /// See [`Error::LeaseExpired`].
    LeaseExpired = 8,
    /// See [`Error::LeaseClosed`].
    LeaseClosed = 9,
    /// See [`Error::LeasePending`].
    LeasePending = 10,
    /// See [`Error::NotExtended`].
    NotExtended = 11,
    /// See [`Error::Cancelled`].
    Cancelled = 12,
    /// See [`Error::JobTerminal`].
    JobTerminal = 13,
    /// See [`Error::ClockRollback`].
    ClockRollback = 14,
    /// See [`Error::TokenMalformed`].
    TokenMalformed = 15,
    /// See [`Error::TokenTooLarge`].
    TokenTooLarge = 16,
    /// See [`Error::TokenUnsupportedVersion`].
    TokenUnsupportedVersion = 17,
    /// See [`Error::Busy`].
    Busy = 18,
    /// See [`Error::SchemaTooNew`].
    SchemaTooNew = 19,
    /// See [`Error::Store`].
    Store = 20,
    /// See [`Error::Internal`].
    Internal = 21,
}

impl ErrorCode {
    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 21] = [
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidDuration,
        ErrorCode::NotFound,
        ErrorCode::Conflict,
        ErrorCode::NotClaimable,
        ErrorCode::NoJobAvailable,
        ErrorCode::StaleLease,
        ErrorCode::LeaseExpired,
        ErrorCode::LeaseClosed,
        ErrorCode::LeasePending,
        ErrorCode::NotExtended,
        ErrorCode::Cancelled,
        ErrorCode::JobTerminal,
        ErrorCode::ClockRollback,
        ErrorCode::TokenMalformed,
        ErrorCode::TokenTooLarge,
        ErrorCode::TokenUnsupportedVersion,
        ErrorCode::Busy,
        ErrorCode::SchemaTooNew,
        ErrorCode::Store,
        ErrorCode::Internal,
    ];

    /// The stable number.
    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// The code for a number, if this library knows it.
    pub fn from_u32(n: u32) -> Option<ErrorCode> {
        ErrorCode::ALL.iter().copied().find(|c| c.as_u32() == n)
    }

    /// A stable snake_case name (`"stale_lease"`), used by the CLI's JSON and the C ABI.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::InvalidDuration => "invalid_duration",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::NotClaimable => "not_claimable",
            ErrorCode::NoJobAvailable => "no_job_available",
            ErrorCode::StaleLease => "stale_lease",
            ErrorCode::LeaseExpired => "lease_expired",
            ErrorCode::LeaseClosed => "lease_closed",
            ErrorCode::LeasePending => "lease_pending",
            ErrorCode::NotExtended => "not_extended",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::JobTerminal => "job_terminal",
            ErrorCode::ClockRollback => "clock_rollback",
            ErrorCode::TokenMalformed => "token_malformed",
            ErrorCode::TokenTooLarge => "token_too_large",
            ErrorCode::TokenUnsupportedVersion => "token_unsupported_version",
            ErrorCode::Busy => "busy",
            ErrorCode::SchemaTooNew => "schema_too_new",
            ErrorCode::Store => "store",
            ErrorCode::Internal => "internal",
        }
    }
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Error::InvalidDuration(_) => ErrorCode::InvalidDuration,
            Error::NotFound(_) => ErrorCode::NotFound,
            Error::Conflict(_) => ErrorCode::Conflict,
            Error::NotClaimable(_) => ErrorCode::NotClaimable,
            Error::NoJobAvailable(_) => ErrorCode::NoJobAvailable,
            Error::StaleLease(_) => ErrorCode::StaleLease,
            Error::LeaseExpired(_) => ErrorCode::LeaseExpired,
            Error::LeaseClosed(_) => ErrorCode::LeaseClosed,
            Error::LeasePending(_) => ErrorCode::LeasePending,
            Error::NotExtended(_) => ErrorCode::NotExtended,
            Error::Cancelled(_) => ErrorCode::Cancelled,
            Error::JobTerminal(_) => ErrorCode::JobTerminal,
            Error::ClockRollback { .. } => ErrorCode::ClockRollback,
            Error::TokenMalformed(_) => ErrorCode::TokenMalformed,
            Error::TokenTooLarge { .. } => ErrorCode::TokenTooLarge,
            Error::TokenUnsupportedVersion(_) => ErrorCode::TokenUnsupportedVersion,
            Error::Busy(_) => ErrorCode::Busy,
            Error::SchemaTooNew { .. } => ErrorCode::SchemaTooNew,
            Error::Store(_) => ErrorCode::Store,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }

    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        use rusqlite::ffi::ErrorCode as C;
        match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                C::DatabaseBusy | C::DatabaseLocked => Error::Busy(format!(
                    "the writer lock was not free within the busy timeout ({e})"
                )),
                C::NotADatabase => Error::Store(format!(
                    "not a tenure store: the file is not a SQLite database or is corrupt ({e})"
                )),
                C::DatabaseCorrupt => Error::Store(format!("the store is corrupt ({e})")),
                C::ReadOnly => Error::Store(format!("the store is read-only ({e})")),
                C::DiskFull => Error::Store(format!("the disk is full ({e})")),
                C::CannotOpen => Error::Store(format!("cannot open the store ({e})")),
                _ => Error::Store(e.to_string()),
            },
            _ => Error::Store(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_and_dense() {
        for (i, c) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(c.as_u32(), i as u32 + 1);
            assert_eq!(ErrorCode::from_u32(c.as_u32()), Some(*c));
        }
        assert_eq!(ErrorCode::from_u32(0), None);
        assert_eq!(ErrorCode::from_u32(22), None);
        // Spot-check numbers that the C ABI has published.
        assert_eq!(ErrorCode::StaleLease as u32, 7);
        assert_eq!(ErrorCode::ClockRollback as u32, 14);
        assert_eq!(ErrorCode::Internal as u32, 21);
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }
}
