//! Which PostgreSQL client errors are a lost connection: the failures after
//! which an idempotent call is retried on a fresh pooled connection
//! ([`crate::retry`]). A broken session (closed, reset, cut mid-statement
//! or before the COMMIT's reply) and a connection attempt the network cut
//! are; an error the server reported (any SQLSTATE), a refused TLS
//! handshake or a bad address are not.

use crate::error::Error;
use crate::store::CONNECTION_LOST;
use std::io::ErrorKind;

/// Whether the client lost its connection (or never got one) for a
/// network reason.
pub(super) fn is_lost(e: &postgres::Error) -> bool {
    if e.as_db_error().is_some() {
        return false;
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

/// The store error of a lost connection, `what` its description.
pub(super) fn lost(what: impl std::fmt::Display) -> Error {
    Error::Store(format!("{CONNECTION_LOST}: {what}"))
}
