//! Which PostgreSQL client errors mean "try again": the failures after
//! which an idempotent call is retried on a fresh pooled connection
//! ([`crate::retry`]).
//!
//! - A lost connection ([`crate::store::CONNECTION_LOST`]): a broken session
//!   (closed, reset, cut mid-statement or before the COMMIT's reply), a
//!   connection attempt the network cut or the host refused, and the
//!   server errors that end or refuse a session: `57P01` (terminating
//!   connection: administrator command or a fast shutdown), `57P02` (crash
//!   shutdown), `57P03` (the server is starting up or shutting down) and
//!   class `08` (connection exceptions).
//! - A transient refusal ([`crate::store::TRY_AGAIN_BUSY`], an
//!   [`Error::Busy`]): `55P03` (lock not available: the transaction's lock
//!   timeout), `40001` (serialization failure), `40P01` (deadlock detected)
//!   and `53300` (too many connections: no connection slot was free within
//!   the call's busy timeout). The transaction rolled back: nothing changed.
//!
//! Any other server error, a refused TLS handshake or a bad address is
//! neither. A connection that failed with a lost-connection error is never
//! put back into the pool.

use crate::error::Error;
use crate::store::{CONNECTION_LOST, TRY_AGAIN_BUSY};
use postgres::error::SqlState;
use std::io::ErrorKind;

/// Whether the client lost its connection (or never got one) for a
/// network reason or because the server ended or refused the session.
pub(super) fn is_lost(e: &postgres::Error) -> bool {
    if let Some(db) = e.as_db_error() {
        return session_ended(db.code());
    }
    if e.is_closed() {
        return true;
    }
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                ErrorKind::ConnectionReset
                    | ErrorKind::ConnectionAborted
                    | ErrorKind::ConnectionRefused
                    | ErrorKind::BrokenPipe
                    | ErrorKind::UnexpectedEof
                    | ErrorKind::NotConnected
                    | ErrorKind::TimedOut
            );
        }
        source = cause.source();
    }
    false
}

/// The SQLSTATEs of a session the server ended or would not start.
pub(super) fn session_ended(code: &SqlState) -> bool {
    *code == SqlState::ADMIN_SHUTDOWN
        || *code == SqlState::CRASH_SHUTDOWN
        || *code == SqlState::CANNOT_CONNECT_NOW
        || code.code().starts_with("08")
}

/// The SQLSTATEs after which a transaction that rolled back may simply
/// run again: a lock timeout, a serialization failure, a deadlock.
pub(super) fn lock_refused(code: &SqlState) -> bool {
    *code == SqlState::LOCK_NOT_AVAILABLE
        || *code == SqlState::T_R_DEADLOCK_DETECTED
        || *code == SqlState::T_R_SERIALIZATION_FAILURE
}

/// Whether a connection attempt was refused because every connection
/// slot is taken (`53300`).
pub(super) fn no_slot(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::TOO_MANY_CONNECTIONS)
}

/// The store error of a lost connection, `what` its description.
pub(super) fn lost(what: impl std::fmt::Display) -> Error {
    Error::Store(format!("{CONNECTION_LOST}: {what}"))
}

/// The busy error of a transient refusal, `what` its description.
pub(super) fn busy(what: impl std::fmt::Display) -> Error {
    Error::Busy(format!("{TRY_AGAIN_BUSY}: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_that_end_a_session_are_a_lost_connection() {
        for code in ["57P01", "57P02", "57P03", "08000", "08006", "08003"] {
            assert!(session_ended(&SqlState::from_code(code)), "{code}");
        }
        for code in ["57014", "42P01", "23505", "55P03", "53300", "XX000"] {
            assert!(!session_ended(&SqlState::from_code(code)), "{code}");
        }
        for code in ["55P03", "40001", "40P01"] {
            assert!(lock_refused(&SqlState::from_code(code)), "{code}");
        }
        for code in ["57014", "57P01", "23505"] {
            assert!(!lock_refused(&SqlState::from_code(code)), "{code}");
        }
    }
}
