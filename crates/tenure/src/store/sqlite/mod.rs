//! The SQLite backend: one file, WAL, every write `BEGIN IMMEDIATE`.
//!
//! Connections are pooled per [`crate::Authority`]; each transaction owns one
//! connection until it ends, so threads sharing an authority wait on SQLite's
//! writer lock independently. Statements are prepared once per connection:
//! those of every write transaction in slots of their own ([`conn`]), the
//! others through `prepare_cached`. Local filesystems only: SQLite's locking
//! is not safe on network filesystems.
//!
//! | module | what it holds |
//! | --- | --- |
//! | [`backend`] | opening a store (checks, pragmas, migration), the [`crate::store::Backend`] impl |
//! | [`pool`] | how a connection is opened and configured; the pool of idle ones |
//! | [`schema`] | the file header and the one text of the current layout |
//! | [`migrate`] | the steps that bring an older store to that layout |
//! | [`txn`] | a transaction: begin, end, savepoints, the mark; the statements of each kind of row in a module of its own |
//! | [`sql`], [`rows`] | statement text shared by several modules; rows decoded and written |
//! | [`conn`], [`checkpoint`], [`durability`], `writer_queue` | one connection's prepared statements; checkpoints; commits made durable after the writer lock; the queue file of writers |

mod backend;
mod checkpoint;
mod conn;
mod durability;
mod migrate;
#[cfg(test)]
mod pause;
mod pool;
#[cfg(test)]
pub(crate) use crate::sys::powerloss;
mod rows;
mod schema;
mod sql;
#[cfg(test)]
mod tests;
mod txn;
use crate::sys::wal_writes;
#[cfg(target_os = "linux")]
mod writer_queue;

pub(crate) use backend::SqliteBackend;
pub use backend::Synchronous;
pub use schema::APPLICATION_ID;

// Reached as `super::…` by the modules of the connection and checkpointer.
use pool::{configure, open_connection};
use sql::{
    ADD_COUNT_SQL, APPEND_EVENT_SQL, HIGH_WATER_SQL, JOB_BY_SEQ_SQL, JOB_SQL, LIVE_JOBS_SQL,
    PARKED_PROBE_SQL, SET_EVENT_MARK_SQL, SET_HIGH_WATER_SQL, UPDATE_EXPIRY_SQL, UPDATE_JOB_SQL,
    UPDATE_OPEN_JOB_SQL,
};
