//! Statement text shared by more than one part of the backend: the job
//! columns, the server's clock sample, the event registration and horizon,
//! the high-water mark, and the bookkeeping statements of the pool.

macro_rules! job_cols {
    () => {
        "seq, production, job, payload_digest, payload_len, priority, max_attempts, \
         state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us, created_us, \
         updated_us, last_error, due_us, parked, max_hold_us, backoff_base_us, backoff_cap_us"
    };
}
/// How many columns `job_cols!` lists.
pub(super) const JOB_COLS: usize = 22;
/// The server's clock in whole µs.
macro_rules! server_sample {
    () => {
        "floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint"
    };
}
/// Advisory-lock key space (bigint keys, so `objsubid = 1` in `pg_locks`)
/// of event registrations: a writing transaction holds `EVENT_REG | n`
/// shared, `n` (< [`EVENT_REG_LIMIT`]) a lower bound of its event sequence
/// numbers. In `pg_locks` these are the rows with `classid` between
/// `0x5445_0000` and `0x5445_ffff` (the SQL below spells them in decimal),
/// `n` being `(classid & 0xffff) << 32 | objid`. See the backend's module docs.
pub(super) const EVENT_REG: i64 = 0x5445 << 48;
pub(super) const EVENT_REG_LIMIT: i64 = 1 << 48;

/// The next value of the events' identity sequence (0 before the first
/// allocation, a conservative bound), read outside any snapshot.
macro_rules! event_seq_next {
    () => {
        "coalesce(pg_catalog.pg_sequence_last_value(
             pg_catalog.pg_get_serial_sequence('tenure.events', 'seq')::regclass) + 1, 0)"
    };
}
/// `WITH reg AS MATERIALIZED (...)`: a writer's event registration (the
/// shared lock `EVENT_REG | n`, `n` the sequence's next value, if below the
/// limit), parameters `$key` (`EVENT_REG`) and `$limit` (`EVENT_REG_LIMIT`).
/// An insert that reads its rows from `reg` takes the lock before drawing
/// any identity value (see the backend's module docs).
macro_rules! event_registration {
    ($key:literal, $limit:literal) => {
        concat!(
            "WITH reg AS MATERIALIZED (
                 SELECT pg_catalog.pg_advisory_xact_lock_shared(",
            $key,
            "::bigint | s.n)
                 FROM (SELECT ",
            event_seq_next!(),
            " AS n OFFSET 0) s
                 WHERE s.n < ",
            $limit,
            "::bigint)"
        )
    };
}
/// Step (1) of a reader's horizon: the events sequence's next value.
pub(super) const EVENT_HORIZON_NEXT: &str = concat!("SELECT ", event_seq_next!());
/// Step (2): the smallest lower bound registered by an event writer of this
/// database that is still in flight (other than this session), or NULL.
pub(super) const EVENT_HORIZON_REGISTERED: &str =
    "SELECT min(((l.classid::bigint & 65535) << 32) | l.objid::bigint)
     FROM pg_catalog.pg_locks l
     WHERE l.locktype = 'advisory' AND l.objsubid = 1
       AND l.classid::bigint BETWEEN 1413808128 AND 1413873663
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                         WHERE d.datname = current_database())
       AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()";

/// SQLSTATE of a pre-commit check that refused (see `commit_checked`).
pub(super) const PRECOMMIT_REFUSED: &str = "TN001";

/// The durable high-water mark: the largest value in the mark log, read
/// from the right end of its index (see the backend's module docs).
pub(super) const HIGH_WATER: &str =
    "SELECT coalesce((SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1), 0)";
/// Appends a commit's mark (`$1`) to the mark log.
pub(super) const RAISE_MARK: &str = "INSERT INTO tenure.mark_log (value) VALUES ($1)";

/// One pruning of the mark log (see [`super::pool::Pool::prune_mark_log`]): the rows in
/// `[$1, max)` go, `max` (the log's largest value) is returned.
pub(super) const PRUNE_MARK_LOG: &str = "WITH top AS MATERIALIZED (
         SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1),
     gone AS (DELETE FROM tenure.mark_log l USING top
              WHERE l.value >= $1 AND l.value < top.value)
     SELECT value FROM top";

/// The new claim floor of production `$1` (see [`super::pool::Pool::raise_claim_floor`]):
/// the first live job at or above the old floor of each priority present
/// (a loose index scan over `jobs_ready`), and the smallest parked live
/// job, whichever is smaller; with no live job, one past the largest `seq`
/// there is. Only ever raised.
pub(super) const RAISE_CLAIM_FLOOR: &str = "
    WITH RECURSIVE f AS MATERIALIZED (
         SELECT claim_floor AS lo FROM tenure.productions WHERE name = $1),
     r(priority, seq) AS (
         (SELECT priority, seq FROM tenure.jobs
          WHERE production = $1 AND state IN ('requested', 'claimed') AND NOT parked
            AND seq >= (SELECT lo FROM f)
          ORDER BY priority DESC, seq LIMIT 1)
         UNION ALL
         SELECT n.priority, n.seq FROM r CROSS JOIN LATERAL (
             SELECT priority, seq FROM tenure.jobs
             WHERE production = $1 AND state IN ('requested', 'claimed') AND NOT parked
               AND seq >= (SELECT lo FROM f) AND priority < r.priority
             ORDER BY priority DESC, seq LIMIT 1) n),
     v AS (
         SELECT coalesce(least(
             (SELECT min(seq) FROM r),
             (SELECT min(seq) FROM tenure.jobs WHERE production = $1 AND parked
                 AND (state IN ('requested', 'claimed')) IS TRUE)),
             (SELECT max(seq) + 1 FROM tenure.jobs)) AS seq)
    UPDATE tenure.productions p SET claim_floor = v.seq FROM v
    WHERE p.name = $1 AND v.seq > p.claim_floor";
