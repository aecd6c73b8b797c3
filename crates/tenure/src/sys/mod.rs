//! The crate's unsafe code, each piece behind a safe interface: the rest of
//! the crate denies `unsafe_code` and reaches the operating system and
//! SQLite's C interface only through these modules.
//!
//! - [`futex`]: sleep on and wake a 32-bit word (Linux).
//! - [`map`]: a file mapped shared, read and written through atomics
//!   (Linux, for the writer queue).
//! - [`ofd`]: open-file-description byte locks (Linux).
//! - [`signals`]: run a function when SIGTERM or SIGINT arrives (Unix).
//! - [`scoped`]: lend a closure that borrows from its caller's frame to
//!   another thread for as long as the caller waits.
//! - [`sqlite`]: what a connection needs beyond `rusqlite`'s safe API
//!   (statements kept prepared, file controls, the WAL hook).
//! - [`wal_writes`]: a SQLite VFS that writes WAL frames together; and,
//!   for tests, `powerloss`: a VFS that models power failure.
//!
//! This module depends only on the leaf modules (`error`); every module that
//! uses it is above it.

#[cfg(target_os = "linux")]
pub(crate) mod futex;
#[cfg(target_os = "linux")]
pub(crate) mod map;
#[cfg(target_os = "linux")]
pub(crate) mod ofd;
#[cfg(test)]
pub(crate) mod powerloss;
pub(crate) mod scoped;
#[cfg(unix)]
pub(crate) mod signals;
pub(crate) mod sqlite;
pub(crate) mod wal_writes;
