//! Exit codes: the one place that maps outcomes and `tenure::ErrorCode`s to
//! process exit statuses. `tenure exit-codes` prints this table.
//!
//! | exit | meaning |
//! |------|---------|
//! | 0 | success |
//! | 1 | a local failure outside the store (unreadable payload/token file, output I/O, cannot start a command) |
//! | 2 | usage error (bad flags, missing `--db`, `claim` without `--token-out`) |
//! | 3 | `check` (or the demo's self-check) found invariant violations |
//! | 4 | `claim`: the claim COMMITTED but the token could not be written; the receipt is on stderr |
//! | 5 | `claim`: the `--token-out` file could not be reserved (exists, no permission); nothing was claimed |
//! | 6 | `exec`: the command failed; the lease was failed (retryable unless exit 100) |
//! | 10 + N | a tenure error with `ErrorCode` number N (11 = invalid_argument … 38 = job_live) |

use tenure::ErrorCode;

/// Success.
pub const OK: i32 = 0;
/// A local failure that is not a tenure error.
pub const FAILURE: i32 = 1;
/// Usage error (also what clap uses).
pub const USAGE: i32 = 2;
/// `check` found violations.
pub const VIOLATIONS: i32 = 3;
/// The claim committed but its token could not be delivered.
pub const TOKEN_NOT_DELIVERED: i32 = 4;
/// The token file could not be reserved; nothing was claimed.
pub const TOKEN_FILE_NOT_RESERVED: i32 = 5;
/// `exec`: the command failed and its lease was failed.
pub const COMMAND_FAILED: i32 = 6;
/// Tenure errors exit with `ERROR_BASE + code number`.
pub const ERROR_BASE: i32 = 10;

/// The exit status for a tenure error code.
pub fn for_code(c: ErrorCode) -> i32 {
    ERROR_BASE + c.as_u32() as i32
}

/// The non-error rows of the table: (exit, name, meaning).
pub const FIXED: [(i32, &str, &str); 7] = [
    (OK, "ok", "success"),
    (
        FAILURE,
        "failure",
        "local failure outside the store (file I/O, cannot start a command)",
    ),
    (USAGE, "usage", "usage error"),
    (VIOLATIONS, "violations", "check found invariant violations"),
    (
        TOKEN_NOT_DELIVERED,
        "token_not_delivered",
        "claim committed but the token could not be written; receipt on stderr",
    ),
    (
        TOKEN_FILE_NOT_RESERVED,
        "token_file_not_reserved",
        "the --token-out file could not be reserved; nothing was claimed",
    ),
    (
        COMMAND_FAILED,
        "command_failed",
        "exec: the command failed and its lease was failed",
    ),
];
