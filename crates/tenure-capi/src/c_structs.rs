// The C-visible input structs, included at the crate root (`include!` in
// lib.rs) so that their debug-info names are `tenure::tenure_*` whatever
// module uses them: `abidiff` compares these structs member by member
// against the released baselines, and a Rust module path in their names
// would read as a change of every struct. `options.rs` re-exports them
// beside their `_init()` functions.

/// How to open a store. Initialise with `tenure_open_options_init()`, then
/// change fields. Size-versioned: see the header's extensibility notes.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_open_options {
    /// `sizeof(tenure_open_options)` as compiled by the caller.
    pub struct_size: usize,
    /// A `tenure_synchronous` value (default `TENURE_SYNCHRONOUS_FULL`).
    pub synchronous: u32,
    /// How long a write waits for the writer lock before `TENURE_BUSY`, in
    /// µs: 0 ..= 3 600 000 000 (default 5 000 000).
    pub busy_timeout_us: i64,
}

/// One job to submit. Initialise with `tenure_job_spec_init()` (priority 0,
/// max_attempts 3, empty payload), then set `job` (and the rest).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_job_spec {
    /// `sizeof(tenure_job_spec)` as compiled by the caller.
    pub struct_size: usize,
    /// Job ID (1-128 bytes of `[A-Za-z0-9][A-Za-z0-9._:@+-]*`).
    pub job: *const c_char,
    /// Opaque payload bytes (may be NULL when `payload_len` is 0), at most 1 MiB.
    pub payload: *const u8,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Higher runs first; ties go to the oldest submission.
    pub priority: i32,
    /// Claims allowed in total, 1 ..= 1000.
    pub max_attempts: u32,
}

/// Paging and filtering for `tenure_authority_jobs()`. Initialise with
/// `tenure_list_query_init()` (any state, from the start, default page).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_list_query {
    /// `sizeof(tenure_list_query)` as compiled by the caller.
    pub struct_size: usize,
    /// A `tenure_job_state` to filter on, or `TENURE_JOB_ANY` (0).
    pub state: u32,
    /// Only jobs whose ID sorts after this one (the last ID of the previous
    /// page), or NULL to start at the beginning.
    pub after: *const c_char,
    /// Page size: 0 means 100; larger than 10 000 is capped at 10 000.
    pub limit: usize,
}

/// One caller fact to publish at completion (both strings required, UTF-8).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_fact {
    /// Key: an ID outside the reserved `tenure.` namespace.
    pub key: *const c_char,
    /// Value: text up to 4096 bytes.
    pub value: *const c_char,
}

/// What one prune step removed (ABI 1.1), written by
/// `tenure_authority_prune()` on success. A result record: its layout is
/// fixed for the whole major (a later result would be a new function).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_prune_report {
    /// Terminal jobs removed (each leaves a tombstone).
    pub jobs: u64,
    /// Tombstones removed.
    pub tombstones: u64,
    /// Events removed.
    pub events: u64,
    /// The history horizon after the step: every event with a sequence
    /// number up to it is gone (0: none ever pruned).
    pub horizon: u64,
    /// True when a kind hit the per-step bound: call again for more.
    pub more: bool,
}

/// What `tenure_authority_delete_production()` removed (ABI 1.1). A result
/// record: its layout is fixed for the whole major.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tenure_deleted_counts {
    /// Jobs removed.
    pub jobs: u64,
    /// Facts removed.
    pub facts: u64,
    /// Events removed.
    pub events: u64,
    /// Tombstones removed.
    pub tombstones: u64,
}
