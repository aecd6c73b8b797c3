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
    /// A duration that is not a whole number of microseconds in its range
    /// (a lease: 1 µs..=24 h; a delay: 0..=366 days).
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
    /// A reader asked for events after `after`, but the events up to and
    /// including `horizon` were pruned: resume after `horizon`.
    #[error("history pruned: events up to sequence number {horizon} were pruned; asked for events after {after}")]
    HistoryPruned {
        /// The position the reader asked to continue from.
        after: u64,
        /// Every event with a sequence number up to this one is gone.
        horizon: u64,
    },
    /// Deleting a production that still has a live (non-terminal) job.
    #[error("production live: {0}")]
    ProductionLive(String),
    /// A renewal would extend a lease past its claim's hard ownership
    /// limit (claim time + the job's max hold); the lease keeps its expiry.
    #[error("hold limit: {0}")]
    HoldLimit(String),
    /// A claim of a named job in a paused production.
    #[error("production paused: {0}")]
    ProductionPaused(String),
    /// A claim of a named job beyond its production's concurrency limit.
    #[error("concurrency limit: {0}")]
    ConcurrencyLimit(String),
    /// A claim of a named job beyond its production's rate limit.
    #[error("rate limited: {0}")]
    RateLimited(String),
    /// Requeueing a job that is not failed or cancelled (waiting, claimed
    /// or expired with attempts left).
    #[error("job live: {0}")]
    JobLive(String),
}

/// The error table: for every code its number, [`ErrorCode`] variant (named
/// like its [`Error`] variant), stable snake_case name and one-line meaning.
/// [`ErrorCode`], [`ErrorCode::ALL`], [`ErrorCode::as_u32`],
/// [`ErrorCode::from_u32`], [`ErrorCode::name`], [`ErrorCode::meaning`] and
/// [`Error::code`] are all generated from this one list.
macro_rules! error_table {
    ($($num:literal $variant:ident $name:literal $meaning:literal;)+) => {
        /// Stable numeric codes, one per [`Error`] variant. `0` is success in the C ABI.
        ///
        /// These numbers are part of the C ABI: never renumber, only append.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u32)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $(
                #[doc = $meaning]
                #[doc = ""]
                #[doc = concat!("Name `", $name, "`; see [`Error::", stringify!($variant), "`].")]
                $variant = $num,
            )+
        }

        impl ErrorCode {
            /// Every code, in numeric order.
            pub const ALL: [ErrorCode; [$($num),+].len()] = [$(ErrorCode::$variant),+];

            /// The stable number.
            pub fn as_u32(self) -> u32 {
                self as u32
            }

            /// The code for a number, if this library knows it.
            pub fn from_u32(n: u32) -> Option<ErrorCode> {
                match n {
                    $($num => Some(ErrorCode::$variant),)+
                    _ => None,
                }
            }

            /// A stable snake_case name (`"stale_lease"`), used by the CLI's JSON and the C ABI.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $name,)+
                }
            }

            /// A one-line meaning of the code, as documented in `docs/design.md`
            /// (error taxonomy).
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $meaning,)+
                }
            }
        }

        impl Error {
            /// The stable code of this error.
            pub fn code(&self) -> ErrorCode {
                match self {
                    $(Error::$variant { .. } => ErrorCode::$variant,)+
                }
            }
        }
    };
}

error_table! {
    1 InvalidArgument "invalid_argument"
        "A malformed ID, holder, payload, reason, fact, pointer or number.";
    2 InvalidDuration "invalid_duration"
        "A duration that is not a whole number of microseconds in its range (lease 1 µs..=24 h, delay 0..=366 days).";
    3 NotFound "not_found"
        "The production or job does not exist.";
    4 Conflict "conflict"
        "The same ID already exists with different content.";
    5 NotClaimable "not_claimable"
        "The job exists but cannot be claimed now (held, exhausted, terminal).";
    6 NoJobAvailable "no_job_available"
        "`claim_next` found nothing claimable in the production.";
    7 StaleLease "stale_lease"
        "The lease is no longer the job's current claim (another claim replaced it).";
    8 LeaseExpired "lease_expired"
        "The lease is still the current claim but its expiry has passed.";
    9 LeaseClosed "lease_closed"
        "The lease was already ended (released, failed or completed), or its edit failed.";
    10 LeasePending "lease_pending"
        "The lease belongs to an edit that has not committed yet.";
    11 NotExtended "not_extended"
        "A renewal would not move the expiry later.";
    12 Cancelled "cancelled"
        "The job (or production) was cancelled by a coordinator.";
    13 JobTerminal "job_terminal"
        "The job is already completed or failed, so the request cannot apply.";
    14 ClockRollback "clock_rollback"
        "The clock reads earlier than the store's durable high-water mark.";
    15 TokenMalformed "token_malformed"
        "The token text is not a well-formed tenure lease token.";
    16 TokenTooLarge "token_too_large"
        "The token is longer than the accepted bound.";
    17 TokenUnsupportedVersion "token_unsupported_version"
        "The token names a format version this library does not know.";
    18 Busy "busy"
        "The writer lock could not be taken within the busy timeout.";
    19 SchemaTooNew "schema_too_new"
        "The store was written by a newer tenure; it was not touched.";
    20 Store "store"
        "The store failed: I/O error, corrupt or foreign file, read-only, full disk.";
    21 Internal "internal"
        "A bug: an invariant of the library itself broke, or a panic was caught.";
    22 HoldLimit "hold_limit"
        "A renewal would extend a lease past its claim's hard ownership limit.";
    23 HistoryPruned "history_pruned"
        "A reader asked for events before the pruned horizon; they are gone.";
    24 ProductionLive "production_live"
        "Deleting a production that still has a live job.";
    25 ProductionPaused "production_paused"
        "A claim of a named job in a paused production.";
    26 ConcurrencyLimit "concurrency_limit"
        "A claim of a named job beyond its production's concurrency limit.";
    27 RateLimited "rate_limited"
        "A claim of a named job beyond its production's rate limit.";
    28 JobLive "job_live"
        "Requeueing a job that is not failed or cancelled (waiting, claimed or expired).";
}

impl Error {
    pub(crate) fn invalid(msg: impl Into<String>) -> Error {
        Error::InvalidArgument(msg.into())
    }

    /// This error with every occurrence of `text` (a caller's store path or
    /// address) in its message shown as [`bounded`] shows it.
    pub(crate) fn bounding(self, text: &str) -> Error {
        if text.len() <= SHOWN_CHARS {
            return self;
        }
        let shown = bounded(text);
        let f = |m: String| m.replace(text, &shown);
        macro_rules! with_message {
            ($($variant:ident),+) => {
                match self {
                    $(Error::$variant(m) => Error::$variant(f(m)),)+
                    other => other,
                }
            };
        }
        with_message!(
            InvalidArgument,
            InvalidDuration,
            NotFound,
            Conflict,
            NotClaimable,
            NoJobAvailable,
            StaleLease,
            LeaseExpired,
            LeaseClosed,
            LeasePending,
            NotExtended,
            Cancelled,
            JobTerminal,
            TokenMalformed,
            TokenUnsupportedVersion,
            Busy,
            Store,
            Internal,
            HoldLimit,
            ProductionLive,
            ProductionPaused,
            ConcurrencyLimit,
            RateLimited,
            JobLive
        )
    }
}

/// How many characters of a caller's store path or address a message shows.
pub(crate) const SHOWN_CHARS: usize = 200;

/// `text` (a store path or address) for an error message: whole when it has
/// at most [`SHOWN_CHARS`] bytes, else its first [`SHOWN_CHARS`] characters
/// followed by `… (N bytes)`, so a huge input never makes a huge message.
pub(crate) fn bounded(text: &str) -> String {
    if text.len() <= SHOWN_CHARS {
        return text.to_owned();
    }
    let head: String = text.chars().take(SHOWN_CHARS).collect();
    format!("{head}… ({} bytes)", text.len())
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
        let numbers: Vec<u32> = ErrorCode::ALL.iter().map(|c| c.as_u32()).collect();
        let want: Vec<u32> = (1..=28).collect();
        assert_eq!(numbers, want);
        for c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_u32(c.as_u32()), Some(c));
        }
        assert_eq!(ErrorCode::from_u32(0), None);
        assert_eq!(ErrorCode::from_u32(29), None);
        // Spot-check numbers that the C ABI has published.
        assert_eq!(ErrorCode::StaleLease as u32, 7);
        assert_eq!(ErrorCode::ClockRollback as u32, 14);
        assert_eq!(ErrorCode::Internal as u32, 21);
        assert_eq!(ErrorCode::HoldLimit as u32, 22);
    }

    #[test]
    fn names_are_unique() {
        let mut names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn bounded_keeps_short_text_and_cuts_long_text() {
        assert_eq!(bounded("store.db"), "store.db");
        let exact = "x".repeat(SHOWN_CHARS);
        assert_eq!(bounded(&exact), exact);
        let long = "é".repeat(1000);
        let b = bounded(&long);
        assert_eq!(b, format!("{}… (2000 bytes)", "é".repeat(SHOWN_CHARS)));
        let e = Error::Store(format!("cannot open {long}: no such file")).bounding(&long);
        assert_eq!(e.code(), ErrorCode::Store);
        assert_eq!(
            e.to_string(),
            format!("store error: cannot open {b}: no such file")
        );
        let e = Error::TokenTooLarge { len: 9, max: 1 }.bounding(&long);
        assert_eq!(e, Error::TokenTooLarge { len: 9, max: 1 });
    }

    #[test]
    fn meanings_are_non_empty_and_unique() {
        let mut meanings: Vec<_> = ErrorCode::ALL.iter().map(|c| c.meaning()).collect();
        assert!(meanings.iter().all(|m| !m.trim().is_empty()));
        meanings.sort();
        meanings.dedup();
        assert_eq!(meanings.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn names_are_the_released_ones() {
        let expected = [
            "invalid_argument",
            "invalid_duration",
            "not_found",
            "conflict",
            "not_claimable",
            "no_job_available",
            "stale_lease",
            "lease_expired",
            "lease_closed",
            "lease_pending",
            "not_extended",
            "cancelled",
            "job_terminal",
            "clock_rollback",
            "token_malformed",
            "token_too_large",
            "token_unsupported_version",
            "busy",
            "schema_too_new",
            "store",
            "internal",
            "hold_limit",
            "history_pruned",
            "production_live",
            "production_paused",
            "concurrency_limit",
            "rate_limited",
            "job_live",
        ];
        let names: Vec<_> = ErrorCode::ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names, expected);
    }

    #[test]
    fn every_error_maps_to_its_code() {
        let cases = [
            (
                Error::InvalidArgument(String::new()),
                ErrorCode::InvalidArgument,
            ),
            (
                Error::ClockRollback {
                    now_us: 1,
                    mark_us: 2,
                },
                ErrorCode::ClockRollback,
            ),
            (
                Error::TokenTooLarge { len: 3, max: 2 },
                ErrorCode::TokenTooLarge,
            ),
            (
                Error::SchemaTooNew {
                    found: 9,
                    supported: 1,
                },
                ErrorCode::SchemaTooNew,
            ),
            (Error::Internal(String::new()), ErrorCode::Internal),
            (Error::HoldLimit(String::new()), ErrorCode::HoldLimit),
            (Error::JobLive(String::new()), ErrorCode::JobLive),
        ];
        for (e, c) in cases {
            assert_eq!(e.code(), c);
        }
    }
}
