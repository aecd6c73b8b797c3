//! Statement text shared by several modules: the column lists rows are
//! decoded from, the statements every write transaction keeps prepared
//! ([`super::conn::Hot`]), and the `INSERT` of several facts. A statement
//! one function runs stands in that function.

/// The columns [`super::rows::job_row`] decodes, in its order, as a literal
/// so that the statements using it are `&'static str` (a cached statement
/// is found by its text: no formatting per call).
macro_rules! job_cols {
    () => {
        "seq, production, job, payload_digest, payload_len, priority, max_attempts, \
         state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us, created_us, \
         updated_us, last_error, due_us, parked, max_hold_us, backoff_base_us, backoff_cap_us, \
         provenance_at"
    };
}

/// The columns [`super::rows::event_row`] decodes, in its order.
macro_rules! event_cols {
    () => {
        "seq, at_us, production, job, kind, state, claim_id, holder, attempt, expires_us, detail"
    };
}
/// The `UPDATE` of every column a transition writes, by `seq` (`?1`).
macro_rules! update_job_sql {
    () => {
        "UPDATE jobs SET state = ?2, attempts = ?3, claim_id = ?4, \
         secret_digest = ?5, holder = ?6, claimed_us = ?7, expires_us = ?8, updated_us = ?9, \
         last_error = ?10, due_us = ?11, provenance_at = ?12, parked = ?13, ended_us = ?14 \
         WHERE seq = ?1"
    };
}
pub(super) use {event_cols, job_cols};

// The statements every write transaction runs, kept prepared per
// connection ([`Hot`]).
/// The stored mark: the `meta` row or the newest event's, whichever is
/// larger (see [`super::schema::CURRENT`]).
pub(super) const HIGH_WATER_SQL: &str = "SELECT max(value, coalesce((SELECT mark_us FROM events \
     ORDER BY seq DESC LIMIT 1), value)) FROM meta WHERE key = 'high_water_us'";
/// Add to one of a production's kept job counts (see
/// [`super::schema::stats_figures`]).
pub(super) const ADD_COUNT_SQL: &str = "INSERT INTO job_counts (production, state, n) \
     VALUES (?1, ?2, ?3) ON CONFLICT (production, state) DO UPDATE SET n = n + excluded.n";
/// The mark on an event this transaction appended.
pub(super) const SET_EVENT_MARK_SQL: &str = "UPDATE events SET mark_us = ?2 WHERE seq = ?1";
pub(super) const SET_HIGH_WATER_SQL: &str =
    "UPDATE meta SET value = max(value, ?1) WHERE key = 'high_water_us'";
pub(super) const JOB_SQL: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE production = ?1 AND job = ?2"
);
/// [`JOB_SQL`] by a remembered sequence number (one B-tree search instead
/// of two): the row must still carry the IDs.
pub(super) const JOB_BY_SEQ_SQL: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs WHERE seq = ?3 AND production = ?1 AND job = ?2"
);
/// Every column a transition writes, of a row that was open (requested or
/// claimed): a row that had ended is not matched (0 rows) and takes
/// [`UPDATE_ENDED_JOB_SQL`], so that what the write does to the kept job
/// counts is known without reading the row first.
pub(super) const UPDATE_JOB_SQL: &str = concat!(update_job_sql!(), " AND ended_us IS NULL");
/// [`UPDATE_JOB_SQL`] of a row that had ended (a requeue).
pub(super) const UPDATE_ENDED_JOB_SQL: &str = update_job_sql!();
/// [`UPDATE_JOB_SQL`] for a row that was and stays open and unparked (a
/// claim, a release or retry with no delay): it sets neither column of
/// `jobs_ready`'s predicate, so SQLite leaves that index alone. A row that
/// was parked or ended is not matched (0 rows) and takes the full
/// statement.
pub(super) const UPDATE_OPEN_JOB_SQL: &str =
    "UPDATE jobs SET state = ?2, attempts = ?3, claim_id = ?4, \
     secret_digest = ?5, holder = ?6, claimed_us = ?7, expires_us = ?8, updated_us = ?9, \
     last_error = ?10, due_us = ?11, provenance_at = ?12 \
     WHERE seq = ?1 AND parked = 0 AND ended_us IS NULL";
pub(super) const UPDATE_EXPIRY_SQL: &str =
    "UPDATE jobs SET expires_us = ?2, updated_us = ?3 WHERE seq = ?1";
pub(super) const APPEND_EVENT_SQL: &str =
    "INSERT INTO events (at_us, production, job, kind, state, \
     claim_id, holder, attempt, expires_us, detail, mark_us, since_us, lapsed_us) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
/// Claim-next's first page: see [`crate::store::Txn::live_jobs`].
pub(super) const LIVE_JOBS_SQL: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM jobs INDEXED BY jobs_ready \
     WHERE production = ?1 AND ended_us IS NULL AND parked = 0 \
       AND state IN ('requested', 'claimed') \
       AND (state = 'requested' OR expires_us IS NULL OR expires_us <= ?3) \
     ORDER BY priority DESC, seq LIMIT ?2"
);
/// Whether a parked job of the production is due: see
/// [`crate::store::Txn::unpark_due`].
pub(super) const PARKED_PROBE_SQL: &str = "SELECT 1 FROM jobs INDEXED BY jobs_parked \
     WHERE production = ?1 AND parked = 1 AND due_us <= ?2 LIMIT 1";

/// Facts written by one `INSERT` (a completion writes four `tenure.*` facts
/// plus the caller's, so one statement usually carries all of them).
pub(super) const FACTS_PER_INSERT: usize = 16;

/// `INSERT INTO facts` of `n` rows (1 ≤ n ≤ [`FACTS_PER_INSERT`]): `?1` is
/// the production, `?2` the job, then (ord, key, value) per row.
pub(super) fn insert_facts_sql(n: usize) -> &'static str {
    static SQL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let all = SQL.get_or_init(|| {
        (1..=FACTS_PER_INSERT)
            .map(|n| {
                let rows: Vec<String> = (0..n)
                    .map(|i| format!("(?1, ?2, ?{}, ?{}, ?{})", 3 + 3 * i, 4 + 3 * i, 5 + 3 * i))
                    .collect();
                format!(
                    "INSERT INTO facts (production, job, ord, key, value) VALUES {}",
                    rows.join(", ")
                )
            })
            .collect()
    });
    &all[n - 1]
}
