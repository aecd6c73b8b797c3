//! The statement text of the backend's transactions and of the pool's
//! bookkeeping, apart from the Rust that binds and decodes it: shared
//! fragments first (the job columns, the clock sample, the event
//! registration and horizon, the high-water mark), then one section per
//! file of `txn/`, in the order of that file. Statements built at run time
//! (`BEGIN` with its settings, savepoints, the pre-commit block, `COMMIT`
//! with its `NOTIFY`s) stay with the code that builds them; the schema's
//! DDL is in [`super::schema`] and [`super::migrate`].

macro_rules! job_cols {
    () => {
        "seq, production, job, payload_digest, payload_len, priority, max_attempts, \
         state, attempts, claim_id, secret_digest, holder, claimed_us, expires_us, created_us, \
         updated_us, last_error, due_us, parked, max_hold_us, backoff_base_us, backoff_cap_us, \
         provenance_at"
    };
}
/// How many columns `job_cols!` lists.
pub(super) const JOB_COLS: usize = 23;
/// The columns `rows::event_row` decodes, in its order.
macro_rules! event_cols {
    () => {
        "seq, at_us, production, job, kind, state, claim_id, holder, attempt, expires_us, detail"
    };
}
/// The columns `rows::production_row` decodes, in its order.
macro_rules! production_cols {
    () => {
        "name, created_us, cancelled_us, backoff_base_us, backoff_cap_us"
    };
}
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
/// allocation, a conservative bound), read outside any snapshot. The
/// sequence is named as a constant (`events_seq_seq`, the name the server
/// gives the identity of `events.seq`, in a new store and a migrated one
/// alike): the server resolves it once, when it plans the statement, where
/// `pg_get_serial_sequence` searched the catalog at every call.
macro_rules! event_seq_next {
    () => {
        "coalesce(pg_catalog.pg_sequence_last_value('tenure.events_seq_seq'::regclass) + 1, 0)"
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
/// database that is still in flight, other than this connection's own backend, or NULL.
pub(super) const EVENT_HORIZON_REGISTERED: &str =
    "SELECT min(((l.classid::bigint & 65535) << 32) | l.objid::bigint)
     FROM pg_catalog.pg_locks l
     WHERE l.locktype = 'advisory' AND l.objsubid = 1
       AND l.classid::bigint BETWEEN 1413808128 AND 1413873663
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                         WHERE d.datname = current_database())
       AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()";

/// The marker of a pre-commit check that refused (see `commit_checked`):
/// the failing cast's message quotes it, a space and the clock sample.
macro_rules! precommit_refused {
    () => {
        "TN001"
    };
}
/// [`precommit_refused!`].
pub(super) const PRECOMMIT_REFUSED: &str = precommit_refused!();
/// The name [`PRECOMMIT`] is prepared under, once per connection, at the
/// head of the connection's first write transaction (see `PgTxn::begin`).
pub(super) const PRECOMMIT_NAME: &str = "tenure_precommit";
/// The parameter types of [`PRECOMMIT`].
pub(super) const PRECOMMIT_TYPES: &str = "bigint, bigint";
/// The pre-commit check of a write transaction on the server's clock (see
/// `commit_checked`): one clock sample; below the mark `$1`, or at or after
/// the first deadline `$2` (NULL: none), the cast of
/// `'TN001 <sample>'` ([`PRECOMMIT_REFUSED`]) fails the statement (and the transaction, so its
/// `COMMIT` never runs); else the sample is appended to the mark log.
pub(super) const PRECOMMIT: &str = concat!(
    "INSERT INTO tenure.mark_log (value)
         SELECT CASE WHEN c.s < $1 OR c.s >= coalesce($2, c.s + 1)
                     THEN ('",
    precommit_refused!(),
    " ' || c.s::text)::bigint ELSE c.s END
         FROM (SELECT ",
    server_sample!(),
    " AS s OFFSET 0) c"
);

/// The durable high-water mark: the largest value in the mark log, read
/// from the right end of its index (see the backend's module docs).
macro_rules! stored_mark {
    () => {
        "coalesce((SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1), 0)"
    };
}
/// [`stored_mark!`] as a statement.
pub(super) const HIGH_WATER: &str = concat!("SELECT ", stored_mark!());
/// The name of [`HIGH_WATER`] prepared once per connection, which the
/// request that begins a transaction runs (no parameters: planned once).
pub(super) const MARK_NAME: &str = "tenure_mark";
/// The name of [`SERVER_NOW`] prepared once per connection, which the
/// request that begins a write transaction on the server's clock runs.
pub(super) const NOW_NAME: &str = "tenure_now";
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

// ---- Claim-next (`txn/claim.rs`).

/// The jobs matching `$keys` locked `FOR UPDATE` in `seq` order, then the
/// clock sample (`$3` if given) taken after the locks, then the columns
/// `$reads` of the rows joined with `$joins` (the productions' back-off
/// and gates, see [`LOCK_JOB_SAMPLED`], or NULLs) and the stored mark (see
/// `lock_jobs_sampled`).
macro_rules! lock_jobs_sampled {
    ($keys:expr, $reads:expr, $joins:expr) => {
        concat!(
            "WITH l AS MATERIALIZED (
                 SELECT ",
            job_cols!(),
            " FROM tenure.jobs WHERE ",
            $keys,
            "
                 ORDER BY seq FOR UPDATE),
             t AS MATERIALIZED (
                 SELECT coalesce($3::bigint, ",
            server_sample!(),
            ") AS now FROM (SELECT count(*) AS n FROM l) c)
             SELECT l.*, t.now, ",
            $reads,
            ", ",
            stored_mark!(),
            " AS mark
             FROM t LEFT JOIN l ON true",
            $joins
        )
    };
    ($keys:expr, all) => {
        lock_jobs_sampled!(
            $keys,
            "p.backoff_base_us, p.backoff_cap_us,
                    EXISTS (SELECT 1 FROM tenure.production_gates g
                            WHERE g.name = l.production) AS gated",
            " LEFT JOIN tenure.productions p ON p.name = l.production"
        )
    };
    ($keys:expr, bare) => {
        lock_jobs_sampled!($keys, "NULL::bigint, NULL::bigint, NULL::boolean", "")
    };
}
/// The jobs `($1[i], $2[i])` of [`lock_jobs_sampled!`].
macro_rules! lock_jobs_keys {
    () => {
        "(production, job) IN
                     (SELECT u.p, u.j FROM unnest($1::text[], $2::text[]) AS u(p, j))"
    };
}
/// The one job `$2` of production `$1` of [`lock_jobs_sampled!`]: the
/// planner prices this form's generic plan as its custom one, so the
/// connection plans it once, where the array form is planned at every
/// call.
macro_rules! lock_job_key {
    () => {
        "production = $1::text AND job = $2::text"
    };
}
/// [`lock_jobs_sampled!`] of the jobs `($1[i], $2[i])`, with each job's
/// production's default back-off and whether it has a gate row (for a
/// failure or a claim).
pub(super) const LOCK_JOBS_SAMPLED: &str = lock_jobs_sampled!(lock_jobs_keys!(), all);
/// [`LOCK_JOBS_SAMPLED`] of the one job `$2` of production `$1`.
pub(super) const LOCK_JOB_SAMPLED: &str = lock_jobs_sampled!(lock_job_key!(), all);
/// [`LOCK_JOBS_SAMPLED`] without the productions' columns (NULL): a
/// renewal, release, completion or progress write reads neither, and the
/// join and the gate probe cost about a quarter of the statement's server
/// time.
pub(super) const LOCK_JOBS_BARE: &str = lock_jobs_sampled!(lock_jobs_keys!(), bare);
/// [`LOCK_JOBS_BARE`] of the one job `$2` of production `$1`.
pub(super) const LOCK_JOB_BARE: &str = lock_jobs_sampled!(lock_job_key!(), bare);

/// One page of [`CLAIM_START`]: production `$3`'s jobs meeting `$cond`, at
/// most `$4`, in queue order, `FOR UPDATE SKIP LOCKED`.
macro_rules! claim_page {
    ($cond:literal) => {
        concat!(
            "SELECT ",
            job_cols!(),
            " FROM tenure.jobs
             WHERE production = $3 AND ",
            $cond,
            " AND (SELECT found FROM lk)
             ORDER BY priority DESC, seq LIMIT $4
             FOR UPDATE SKIP LOCKED"
        )
    };
}

/// The gate columns of `tenure.production_gates` (with a table alias:
/// each qualified by it).
macro_rules! gate_cols {
    () => {
        "paused_us, concurrency, rate_claims, rate_interval_us, rate_burst, rate_tat_us"
    };
    ($t:literal) => {
        concat!(
            $t,
            ".paused_us, ",
            $t,
            ".concurrency, ",
            $t,
            ".rate_claims, ",
            $t,
            ".rate_interval_us, ",
            $t,
            ".rate_burst, ",
            $t,
            ".rate_tat_us"
        )
    };
}

/// Claim-next's first request (see `claim_start`): the production's shared
/// lock (`$1`, `$2`), its existence, floor and the clock sample (`$5` if
/// given), then the first `$4` ready and due parked jobs of production
/// `$3`, `FOR UPDATE SKIP LOCKED`, in queue order, and the stored mark.
pub(super) const CLAIM_START: &str = concat!(
    "WITH lk AS MATERIALIZED (
                 SELECT EXISTS (SELECT 1 FROM tenure.productions WHERE name = $3) AS found,
                        g.name IS NOT NULL AS gated, ",
    gate_cols!("g"),
    ",
                        coalesce((SELECT claim_floor FROM tenure.productions
                                  WHERE name = $3), 0) AS floor,
                        coalesce($5::bigint, ",
    server_sample!(),
    ") AS now, l.locked::text AS locked
                 FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared($1, $2) AS locked
                       OFFSET 0) l
                 LEFT JOIN LATERAL (SELECT name, ",
    gate_cols!(),
    " FROM tenure.production_gates
                                    WHERE name = $3 FOR UPDATE) g ON true),
             ready AS MATERIALIZED (",
    claim_page!(
        "state IN ('requested', 'claimed') AND NOT parked
                 AND seq >= (SELECT floor FROM lk)
                 AND (state = 'requested' OR expires_us IS NULL
                      OR expires_us <= (SELECT now FROM lk))"
    ),
    "),
             due AS MATERIALIZED (",
    // Read through `jobs_parked`: the state test is kept out of
    // the index conditions (`IS TRUE`), or the planner may walk
    // every requested job by `jobs_by_state` instead.
    claim_page!(
        "parked AND due_us <= (SELECT now FROM lk)
                 AND (state IN ('requested', 'claimed')) IS TRUE"
    ),
    ")
             SELECT r.*, lk.found, lk.now,
                    EXISTS (SELECT 1 FROM tenure.jobs WHERE production = $3 AND parked
                            AND due_us <= lk.now),
                    lk.gated, ",
    gate_cols!("lk"),
    ", ",
    stored_mark!(),
    " AS mark
             FROM lk LEFT JOIN (SELECT *, 1 AS src FROM ready
                                UNION ALL SELECT *, 2 AS src FROM due) r ON true
             ORDER BY r.priority DESC, r.seq"
);

/// A page of production `$1`'s live jobs after the cursor (`$2`, `$3`:
/// priority, seq) in queue order, at most `$4`, leases held after `$5` left
/// out; then a row lock clause.
macro_rules! live_jobs {
    ($lock:literal) => {
        concat!(
            "SELECT ",
            job_cols!(),
            " FROM tenure.jobs
             WHERE production = $1 AND state IN ('requested', 'claimed') AND NOT parked
               AND (priority < $2 OR (priority = $2 AND seq > $3))
               AND (state = 'requested' OR expires_us IS NULL OR expires_us <= $5)
             ORDER BY priority DESC, seq LIMIT $4 ",
            $lock
        )
    };
}

/// [`live_jobs!`] for a read transaction.
pub(super) const LIVE_JOBS: &str = live_jobs!("");
/// [`live_jobs!`] for claim-next: rows another transaction holds are passed over.
pub(super) const LIVE_JOBS_SKIP_LOCKED: &str = live_jobs!("FOR UPDATE SKIP LOCKED");
/// [`live_jobs!`] for a coordinator scan: every row, waiting for its lock.
pub(super) const LIVE_JOBS_FOR_UPDATE: &str = live_jobs!("FOR UPDATE");

/// Un-parks the jobs of production `$1` due at `$2`, skipping rows another
/// transaction holds.
pub(super) const UNPARK_DUE_SKIP_LOCKED: &str =
    "UPDATE tenure.jobs SET parked = false WHERE seq IN (
                 SELECT seq FROM tenure.jobs
                 WHERE production = $1 AND parked AND due_us <= $2
                 FOR UPDATE SKIP LOCKED)";

/// Un-parks every job of production `$1` due at `$2`.
pub(super) const UNPARK_DUE_ALL: &str = "UPDATE tenure.jobs SET parked = false
                 WHERE production = $1 AND parked AND due_us <= $2";

// ---- Job rows (`txn/jobs.rs`).

/// Job `$2` of production `$1`, locked.
pub(super) const JOB_FOR_UPDATE: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM tenure.jobs WHERE production = $1 AND job = $2 FOR UPDATE"
);

/// Job `$2` of production `$1`.
pub(super) const JOB: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM tenure.jobs WHERE production = $1 AND job = $2"
);

/// The payload of job `$2` of production `$1`.
pub(super) const PAYLOAD: &str =
    "SELECT payload FROM tenure.payloads WHERE production = $1 AND job = $2";

/// The progress checkpoint of job `$2` of production `$1`.
pub(super) const PROGRESS: &str =
    "SELECT progress FROM tenure.jobs WHERE production = $1 AND job = $2";

/// Writes the progress checkpoint `$3` of job `$2` of production `$1`.
pub(super) const SET_PROGRESS: &str =
    "UPDATE tenure.jobs SET progress = $3 WHERE production = $1 AND job = $2";

/// Inserts one job and its payload (`$17`); returns its `seq`.
pub(super) const INSERT_JOB: &str = "WITH j AS (
             INSERT INTO tenure.jobs (production, job, payload_digest, payload_len,
                 priority, max_attempts, state, attempts, claim_id, secret_digest, holder,
                 claimed_us, expires_us, created_us, updated_us, last_error, due_us,
                 parked, max_hold_us, backoff_base_us, backoff_cap_us)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                 $16, $18, $19, $20, $21, $22)
             RETURNING seq),
         p AS (
             INSERT INTO tenure.payloads (production, job, payload) VALUES ($1, $2, $17))
         SELECT seq FROM j";

/// Writes the state columns of job `seq = $1`.
pub(super) const UPDATE_JOB: &str =
    "UPDATE tenure.jobs SET state = $2, attempts = $3, claim_id = $4, secret_digest = $5,
             holder = $6, claimed_us = $7, expires_us = $8, updated_us = $9, last_error = $10,
             due_us = $11, parked = $12, provenance_at = $13
         WHERE seq = $1";

/// A renewal: the expiry and `updated_us` of job `seq = $1`.
pub(super) const UPDATE_EXPIRY: &str =
    "UPDATE tenure.jobs SET expires_us = $2, updated_us = $3 WHERE seq = $1";

/// The jobs `($1[i], $2[i])`, locked in `seq` order.
pub(super) const JOBS_FOR_UPDATE: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM tenure.jobs WHERE (production, job) IN
                 (SELECT u.p, u.j FROM unnest($1::text[], $2::text[]) AS u(p, j))
             ORDER BY seq FOR UPDATE"
);

/// A batch submission to production `$20` (see `insert_new_jobs_into`): its
/// shared lock, its row, the job locks, the new jobs and their payloads.
pub(super) const INSERT_NEW_JOBS_INTO: &str = "WITH pl AS MATERIALIZED (
             SELECT l.locked::text AS locked
             FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared($18, $19) AS locked
                   OFFSET 0) l),
         prod AS MATERIALIZED (
             SELECT p.name, p.created_us, p.cancelled_us, p.backoff_base_us,
                    p.backoff_cap_us
             FROM tenure.productions p, pl WHERE p.name = $20 FOR SHARE OF p),
         open AS MATERIALIZED (
             SELECT count(*) AS n FROM prod WHERE cancelled_us IS NULL),
         locks AS MATERIALIZED (
             SELECT pg_catalog.pg_advisory_xact_lock($11::int, k)
             FROM unnest($12::int[]) AS k, open WHERE open.n > 0 ORDER BY k),
         u AS (
             SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::bigint[],
                     $5::int[], $6::bigint[], $7::text[], $8::bigint[], $9::bigint[],
                     $10::bytea[], $13::bigint[], $14::bool[], $15::bigint[],
                     $16::bigint[], $17::bigint[])
              WITH ORDINALITY
              AS u(production, job, digest, len, prio, max, state, created, updated,
                   payload, due, parked, hold, base, cap, ord)),
         ins AS (
         INSERT INTO tenure.jobs (production, job, payload_digest, payload_len, priority,
             max_attempts, state, attempts, created_us, updated_us, due_us,
             parked, max_hold_us, backoff_base_us, backoff_cap_us)
         SELECT u.production, u.job, u.digest, u.len, u.prio, u.max, u.state, 0,
                u.created, u.updated, u.due, u.parked, u.hold, u.base, u.cap
         FROM (SELECT count(*) AS n FROM locks) l, open, u
         WHERE l.n >= 0 AND open.n > 0
           AND NOT EXISTS (SELECT 1 FROM tenure.tombstones t
                           WHERE t.production = u.production AND t.job = u.job)
         ORDER BY u.ord
         ON CONFLICT (production, job) DO NOTHING
         RETURNING production, job, seq),
         pay AS (
         INSERT INTO tenure.payloads (production, job, payload)
         SELECT u.production, u.job, u.payload
         FROM ins JOIN u ON u.production = ins.production AND u.job = ins.job)
         SELECT p.name, p.created_us, p.cancelled_us, p.backoff_base_us, p.backoff_cap_us,
                open.n > 0, i.job, i.seq
         FROM open LEFT JOIN prod p ON true LEFT JOIN ins i ON true";

/// `$first, $t...` as a list of SQL types, each a scalar with the suffix
/// `$a` (`"[]"` makes it an array): a type written `($t)` stays a scalar,
/// `[$t]` is an array whatever `$a` is.
macro_rules! sql_types {
    ($a:literal; $first:tt $(, $t:tt)*) => {
        concat!(sql_type!($a, $first) $(, ", ", sql_type!($a, $t))*)
    };
}
macro_rules! sql_type {
    ($a:literal, [$t:ident]) => {
        concat!(stringify!($t), "[]")
    };
    ($a:literal, ($t:ident)) => {
        stringify!($t)
    };
    ($a:literal, $t:ident) => {
        concat!(stringify!($t), $a)
    };
}
/// The parameter types of [`write_batch!`]: each part's columns as arrays
/// (`"[]"`, [`WRITE_BATCHES`]) or as scalars (`""`, [`WRITE_ONES`]); the
/// registration's `$29`, `$30` are scalars and the expected counts `$33`
/// an array in both.
macro_rules! write_types {
    ($a:literal) => {
        sql_types!($a; bigint, text, bigint, text, bytea, text, bigint, bigint, bigint, text,
            bigint, bigint, bigint, text, text, bigint, text, text, bigint, text, text, text,
            text, text, text, bigint, bigint, text, (bigint), (bigint), bigint, bool,
            [bigint], bigint, bigint, bigint)
    };
}
/// The parameter types of [`WRITE_BATCHES`].
pub(super) const WRITE_BATCH_TYPES: &str = write_types!("[]");
/// The parameter types of [`WRITE_ONES`].
pub(super) const WRITE_ONE_TYPES: &str = write_types!("");

/// A part of [`write_batch!`] (`on`) or nothing (`off`).
macro_rules! write_part {
    (on, $($sql:tt)*) => {
        concat!($($sql)*)
    };
    (off, $($sql:tt)*) => {
        ""
    };
}

/// The rows of a part of [`write_batch!`], named `$alias`: the parameters
/// `$params` side by side as arrays (`many`), or as the one row of scalars
/// they are (`one`); with `ord`, each row's position (`WITH ORDINALITY`)
/// as a last column.
macro_rules! write_rows {
    (many, $params:literal, $alias:literal) => {
        concat!("unnest(", $params, ") AS ", $alias)
    };
    (one, $params:literal, $alias:literal) => {
        concat!("(SELECT ", $params, ") AS ", $alias)
    };
    (many, ord, $params:literal, $alias:literal) => {
        concat!("unnest(", $params, ") WITH ORDINALITY AS ", $alias)
    };
    (one, ord, $params:literal, $alias:literal) => {
        concat!("(SELECT ", $params, ", 1::bigint) AS ", $alias)
    };
}

/// The rows a part of [`write_batch!`] touched: its count (`on`), or 0 for
/// a part left out (`off`).
macro_rules! write_count {
    (on, $cte:literal) => {
        concat!("(SELECT count(*) FROM ", $cte, ")")
    };
    (off, $cte:literal) => {
        "0::bigint"
    };
}

/// A group of transitions' writes in one statement (see `write_batch`):
/// full row updates (`$1`..`$10`, `$31`, `$32`, `$36`; part `upd`), renewals
/// (`$11`..`$13`; `exp`), facts (`$14`..`$18`; `fct`), events (`$19`..`$28`,
/// `$34`, `$35`, registered with `$29`, `$30`); fails unless each part
/// touched the count `$33` expects. The first three parts are each in the
/// statement (`on`) or left out (`off`, its parameters unused and its
/// count 0): the server starts every data-modifying part of a statement
/// at each call, rows or none. `$n` is `many` (each part's rows from
/// arrays) or `one` (each part in the statement has exactly one row, its
/// columns scalars: the server neither parses an array per column nor
/// joins their `unnest`, about 90 µs of a renewal's 200).
macro_rules! write_batch {
    ($n:ident, $upd:ident, $exp:ident, $fct:ident) => {
        concat!(
            event_registration!("$29", "$30"),
            ",",
            write_part!(
                $upd,
                "
             upd AS (
                 UPDATE tenure.jobs j SET state = u.state, attempts = u.attempts,
                     claim_id = u.claim_id, secret_digest = u.secret_digest,
                     holder = u.holder, claimed_us = u.claimed_us,
                     expires_us = u.expires_us, updated_us = u.updated_us,
                     last_error = u.last_error, due_us = u.due_us, parked = u.parked,
                     provenance_at = u.provenance_at
                 FROM ",
                write_rows!(
                    $n,
                    "$1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $31, $32, $36",
                    "u(seq, state, attempts, claim_id, secret_digest, holder,
                           claimed_us, expires_us, updated_us, last_error, due_us,
                           parked, provenance_at)"
                ),
                "
                 WHERE j.seq = u.seq
                 RETURNING 1),"
            ),
            write_part!(
                $exp,
                "
             exp AS (
                 UPDATE tenure.jobs j SET expires_us = u.expires_us,
                     updated_us = u.updated_us
                 FROM ",
                write_rows!($n, "$11, $12, $13", "u(seq, expires_us, updated_us)"),
                "
                 WHERE j.seq = u.seq
                 RETURNING 1),"
            ),
            write_part!(
                $fct,
                "
             fct AS (
                 INSERT INTO tenure.facts (production, job, ord, key, value)
                 SELECT * FROM ",
                write_rows!(
                    $n,
                    "$14, $15, $16, $17, $18",
                    "f(production, job, ord, key, value)"
                ),
                "
                 RETURNING 1),"
            ),
            "
             ev AS (
                 INSERT INTO tenure.events (at_us, production, job, kind, state,
                     claim_id, holder, attempt, expires_us, detail, since_us, lapsed_us)
                 SELECT e.at_us, e.production, e.job, e.kind, e.state, e.claim_id,
                        e.holder, e.attempt, e.expires_us, e.detail, e.since_us,
                        e.lapsed_us
                 FROM reg, ",
            write_rows!(
                $n,
                ord,
                "$19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $34, $35",
                "e(at_us, production, job, kind, state, claim_id, holder, attempt,
                           expires_us, detail, since_us, lapsed_us, ord)"
            ),
            "
                 ORDER BY e.ord
                 RETURNING 1)
             SELECT CASE WHEN c.n = $33 THEN 0 ELSE
                 ('tenure: a batched write touched (updates, renewals, facts, events) '
                  || c.n::text || ', not ' || $33::text
                  || '; an event sequence past 2^48 writes no event')::int END
             FROM (SELECT ARRAY[",
            write_count!($upd, "upd"),
            ", ",
            write_count!($exp, "exp"),
            ", ",
            write_count!($fct, "fct"),
            ", (SELECT count(*) FROM ev)] AS n) c"
        )
    };
}

/// The eight shapes of [`write_batch!`] in form `$n`, each with its
/// prepared name (`$prefix` and its index), at index
/// `upd | exp << 1 | fct << 2` (each 1 when that part has rows).
macro_rules! write_shapes {
    ($n:ident, $prefix:literal) => {
        [
            (concat!($prefix, "0"), write_batch!($n, off, off, off)),
            (concat!($prefix, "1"), write_batch!($n, on, off, off)),
            (concat!($prefix, "2"), write_batch!($n, off, on, off)),
            (concat!($prefix, "3"), write_batch!($n, on, on, off)),
            (concat!($prefix, "4"), write_batch!($n, off, off, on)),
            (concat!($prefix, "5"), write_batch!($n, on, off, on)),
            (concat!($prefix, "6"), write_batch!($n, off, on, on)),
            (concat!($prefix, "7"), write_batch!($n, on, on, on)),
        ]
    };
}
/// [`write_batch!`] in each shape, its parts' rows from arrays.
pub(super) const WRITE_BATCHES: [(&str, &str); 8] = write_shapes!(many, "tenure_write_batch_");
/// The shapes of [`write_batch!`] whose parts each write exactly one row
/// (one event), by the same index as [`WRITE_BATCHES`]: a single
/// transition's writes.
pub(super) const WRITE_ONES: [(&str, &str); 8] = write_shapes!(one, "tenure_write_one_");

/// A page of production `$1`'s jobs after ID `$2`, by ID.
pub(super) const JOBS_PAGE: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM tenure.jobs WHERE production = $1 AND job > $2
                     ORDER BY job LIMIT $3"
);

/// A page of production `$1`'s jobs in the states `$2` after ID `$3`, by
/// ID.
pub(super) const JOBS_PAGE_IN_STATES: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM tenure.jobs WHERE production = $1 AND state = ANY($2)
                       AND job > $3 ORDER BY job LIMIT $4"
);

/// A page of every job after `seq = $1`, by `seq`.
pub(super) const ALL_JOBS_PAGE: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM tenure.jobs WHERE seq > $1 ORDER BY seq LIMIT $2"
);

/// The earliest due time of production `$1`'s parked jobs.
pub(super) const EARLIEST_DUE: &str =
    "SELECT min(due_us) FROM tenure.jobs WHERE production = $1 AND parked";

/// The earliest expiry of production `$1`'s held leases.
pub(super) const EARLIEST_EXPIRY: &str =
    "SELECT min(expires_us) FROM tenure.jobs WHERE production = $1 AND state = 'claimed'";

// ---- The event log (`txn/events.rs`).

/// Events with `$1 < seq < $2`, at most `$3`.
pub(super) const EVENTS_BELOW: &str = concat!(
    "SELECT ",
    event_cols!(),
    " FROM tenure.events WHERE seq > $1 AND seq < $2 ORDER BY seq LIMIT $3"
);

/// Production `$1`'s events with `$2 < seq < $3`, at most `$4`.
pub(super) const PRODUCTION_EVENTS_BELOW: &str = concat!(
    "SELECT ",
    event_cols!(),
    " FROM tenure.events WHERE production = $1 AND seq > $2 AND seq < $3
                 ORDER BY seq LIMIT $4"
);

/// Appends an event (a transaction that already registered).
pub(super) const APPEND_EVENT: &str =
    "INSERT INTO tenure.events (at_us, production, job, kind, state, claim_id, holder,
                 attempt, expires_us, detail, since_us, lapsed_us)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING seq";

/// A transaction's first event: registers its lower bound (`$13`, `$14`:
/// `EVENT_REG`, `EVENT_REG_LIMIT`) before the identity value is drawn; no
/// row past the limit.
pub(super) const APPEND_FIRST_EVENT: &str = concat!(
    event_registration!("$13", "$14"),
    "
                 INSERT INTO tenure.events (at_us, production, job, kind, state, claim_id,
                     holder, attempt, expires_us, detail, since_us, lapsed_us)
                 SELECT $1::bigint, $2::text, $3::text, $4::text, $5::text, $6::text,
                        $7::text, $8::bigint, $9::bigint, $10::text, $11::bigint,
                        $12::bigint
                 FROM reg RETURNING seq"
);

/// The largest event `seq` pruned.
pub(super) const HISTORY_HORIZON: &str =
    "SELECT value FROM tenure.meta WHERE key = 'history_horizon'";

/// The first `$2` events below `seq = $1`: `seq` and time.
pub(super) const OLDEST_EVENTS: &str =
    "SELECT seq, at_us FROM tenure.events WHERE seq < $1 ORDER BY seq LIMIT $2";

/// Deletes the events up to `seq = $1`.
pub(super) const PRUNE_EVENTS_THROUGH: &str = "DELETE FROM tenure.events WHERE seq <= $1";

/// Raises the history horizon to `$1`.
pub(super) const RAISE_HISTORY_HORIZON: &str =
    "UPDATE tenure.meta SET value = greatest(value, $1) WHERE key = 'history_horizon'";

/// The last event of job `$2` of production `$1` under claim `$3`.
pub(super) const LAST_CLAIM_EVENT: &str = concat!(
    "SELECT ",
    event_cols!(),
    " FROM tenure.events WHERE production = $1 AND job = $2 AND claim_id = $3
         ORDER BY seq DESC LIMIT 1"
);

// ---- Retention (`txn/retention.rs`).

/// The first `$2` jobs that ended before `$1`, skipping rows another
/// transaction holds.
pub(super) const TERMINAL_JOBS_BEFORE: &str = concat!(
    "SELECT ",
    job_cols!(),
    " FROM tenure.jobs
             WHERE ended_us < $1
             ORDER BY ended_us LIMIT $2 FOR UPDATE SKIP LOCKED"
);

/// Deletes the jobs `seq = ANY($1)`.
pub(super) const DELETE_JOBS: &str = "DELETE FROM tenure.jobs WHERE seq = ANY($1)";

/// Deletes the payloads and facts of the jobs `($1[i], $2[i])`; counts the
/// facts.
pub(super) const DELETE_PAYLOADS_AND_FACTS: &str =
    "WITH d AS (SELECT * FROM unnest($1::text[], $2::text[]) AS d(p, j)),
         pay AS (DELETE FROM tenure.payloads x USING d
                 WHERE x.production = d.p AND x.job = d.j)
         DELETE FROM tenure.facts f USING d WHERE f.production = d.p AND f.job = d.j";

/// Deletes the nonces of the jobs `($1[i], $2[i])`.
pub(super) const DELETE_NONCES: &str =
    "DELETE FROM tenure.nonces n USING unnest($1::text[], $2::text[]) AS d(p, j)
         WHERE n.production = d.p AND n.job = d.j";

/// Deletes the claim requests of the jobs `($1[i], $2[i])`.
pub(super) const DELETE_CLAIM_REQUESTS: &str =
    "DELETE FROM tenure.claim_requests q USING unnest($1::text[], $2::text[]) AS d(p, j)
         WHERE q.production = d.p AND q.job = d.j";

/// Writes the tombstones `($1[i], $2[i], ...)`, replacing older ones.
pub(super) const INSERT_TOMBSTONES: &str =
    "INSERT INTO tenure.tombstones (production, job, payload_digest, priority,
             max_attempts, state, pruned_us, max_hold_us, backoff_base_us, backoff_cap_us)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[], $4::int[], $5::bigint[],
                              $6::text[], $7::bigint[], $8::bigint[], $9::bigint[],
                              $10::bigint[])
         ON CONFLICT (production, job) DO UPDATE SET
             payload_digest = excluded.payload_digest, priority = excluded.priority,
             max_attempts = excluded.max_attempts, state = excluded.state,
             pruned_us = excluded.pruned_us, max_hold_us = excluded.max_hold_us,
             backoff_base_us = excluded.backoff_base_us,
             backoff_cap_us = excluded.backoff_cap_us";

/// The tombstone of job `$2` of production `$1`.
pub(super) const TOMBSTONE: &str =
    "SELECT production, job, payload_digest, priority, max_attempts, state, pruned_us,
             max_hold_us, backoff_base_us, backoff_cap_us
         FROM tenure.tombstones WHERE production = $1 AND job = $2";

/// Jobs stored beside a tombstone of their ID, at most `$1`.
pub(super) const JOBS_WITH_TOMBSTONES: &str = "SELECT t.production, t.job FROM tenure.tombstones t
         JOIN tenure.jobs j ON j.production = t.production AND j.job = t.job
         ORDER BY t.production, t.job LIMIT $1";

/// Deletes the first `$2` tombstones older than `$1`, skipping rows another
/// transaction holds.
pub(super) const PRUNE_TOMBSTONES: &str =
    "DELETE FROM tenure.tombstones WHERE (production, job) IN (
             SELECT production, job FROM tenure.tombstones WHERE pruned_us < $1
             ORDER BY pruned_us LIMIT $2 FOR UPDATE SKIP LOCKED)";

/// Deletes the first `$2` events of production `$1`, never the newest event
/// of the store.
pub(super) const DELETE_PRODUCTION_EVENTS: &str = "DELETE FROM tenure.events WHERE seq IN (
             SELECT seq FROM tenure.events WHERE production = $1
               AND seq < (SELECT max(seq) FROM tenure.events)
             ORDER BY seq LIMIT $2)";

/// Deletes production `$1`'s tombstones.
pub(super) const DELETE_PRODUCTION_TOMBSTONES: &str =
    "DELETE FROM tenure.tombstones WHERE production = $1";

/// Deletes production `$1`'s row.
pub(super) const DELETE_PRODUCTION: &str = "DELETE FROM tenure.productions WHERE name = $1";
/// The schedules of production `$1` (deleted with it).
pub(super) const DELETE_PRODUCTION_SCHEDULES: &str =
    "DELETE FROM tenure.schedules WHERE production = $1";

// ---- Productions (`txn/productions.rs`).

/// Production `$1`.
pub(super) const PRODUCTION: &str = concat!(
    "SELECT ",
    production_cols!(),
    " FROM tenure.productions WHERE name = $1"
);

/// The production's shared lock (`$1`, `$2`), then whether production `$3`
/// exists.
pub(super) const LOCK_PRODUCTION_EXISTS: &str =
    "SELECT EXISTS (SELECT 1 FROM tenure.productions WHERE name = $3), l.locked::text
         FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared($1, $2) AS locked OFFSET 0) l";

/// Inserts a production.
pub(super) const INSERT_PRODUCTION: &str =
    "INSERT INTO tenure.productions (name, created_us, cancelled_us, backoff_base_us,
             backoff_cap_us) VALUES ($1, $2, $3, $4, $5)";

/// Sets production `$1`'s default back-off.
pub(super) const SET_PRODUCTION_BACKOFF: &str =
    "UPDATE tenure.productions SET backoff_base_us = $2, backoff_cap_us = $3
         WHERE name = $1";

/// Production `$1`'s gate row, locked.
pub(super) const GATES_FOR_UPDATE: &str = concat!(
    "SELECT ",
    gate_cols!(),
    " FROM tenure.production_gates WHERE name = $1 FOR UPDATE"
);

/// The production's shared lock (`$1`, `$2`), then production `$3`'s gate
/// row, locked (no gate columns: no row).
pub(super) const LOCK_GATES_FOR_UPDATE: &str = concat!(
    "SELECT ",
    gate_cols!("g"),
    ", l.locked
         FROM (SELECT pg_catalog.pg_advisory_xact_lock_shared($1, $2)::text AS locked OFFSET 0) l
         LEFT JOIN LATERAL (SELECT ",
    gate_cols!(),
    " FROM tenure.production_gates WHERE name = $3 FOR UPDATE) g ON true"
);

/// Production `$1`'s gate row, unlocked (a read transaction).
pub(super) const GATES: &str = concat!(
    "SELECT ",
    gate_cols!(),
    " FROM tenure.production_gates WHERE name = $1"
);

/// Writes production `$1`'s gate row.
pub(super) const SET_GATES: &str = concat!(
    "INSERT INTO tenure.production_gates (name, ",
    gate_cols!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (name) DO UPDATE SET paused_us = EXCLUDED.paused_us,
         concurrency = EXCLUDED.concurrency, rate_claims = EXCLUDED.rate_claims,
         rate_interval_us = EXCLUDED.rate_interval_us, rate_burst = EXCLUDED.rate_burst,
         rate_tat_us = EXCLUDED.rate_tat_us"
);

/// The expiries of production `$1`'s claimed jobs expiring after `$2`.
pub(super) const LIVE_EXPIRIES: &str = "SELECT expires_us FROM tenure.jobs
         WHERE production = $1 AND state = 'claimed' AND expires_us > $2";

/// [`LIVE_EXPIRIES`] where `$3`, then the server's clock: a sample taken
/// after the read's snapshot (one round trip for what the gates decide on).
pub(super) const LIVE_EXPIRIES_SAMPLED: &str = concat!(
    "WITH e AS MATERIALIZED (SELECT ARRAY(SELECT expires_us FROM tenure.jobs
         WHERE $3 AND production = $1 AND state = 'claimed' AND expires_us > $2) AS ex)
     SELECT ",
    server_sample!(),
    ", ex FROM e"
);

/// The statement that follows [`CLAIM_START`] in its request (so it reads
/// in a snapshot taken after that statement locked production `$1`'s gate
/// row and waited for it): the expiries of the production's leases stored
/// claimed that end after the durable mark, if the gate row sets a
/// concurrency limit (else none, read from no job row), then the server's
/// clock, sampled after that read ([`LIVE_EXPIRIES_SAMPLED`] for a claim
/// whose gates are not yet known, or that left this statement out for a
/// production its pool last found without a gate row).
pub(super) const CLAIM_GATE_LEASES: &str = concat!(
    "WITH e AS MATERIALIZED (SELECT ARRAY(SELECT expires_us FROM tenure.jobs
         WHERE production = $1 AND state = 'claimed'
           AND expires_us > ",
    stored_mark!(),
    "
           AND EXISTS (SELECT 1 FROM tenure.production_gates
                       WHERE name = $1 AND concurrency IS NOT NULL)) AS ex)
     SELECT ",
    server_sample!(),
    ", ex FROM e"
);

/// The marker of a claim's gate guard that refused (see
/// [`GATE_GUARD`]): the failing cast's message quotes it, a space and the
/// production.
macro_rules! gate_guard_refused {
    () => {
        "TN002"
    };
}
/// [`gate_guard_refused!`].
pub(super) const GATE_GUARD_REFUSED: &str = gate_guard_refused!();
/// The name [`GATE_GUARD`] is prepared under.
pub(super) const GATE_GUARD_NAME: &str = "tenure_gate_guard";
/// The parameter types of [`GATE_GUARD`].
pub(super) const GATE_GUARD_TYPES: &str = "text";
/// A claim's gate guard (see `claim_without_gates`): if production `$1`
/// has a gate set as this statement begins, the cast of
/// `'TN002 <production>'` fails the statement and with it the transaction.
pub(super) const GATE_GUARD: &str = concat!(
    "SELECT ('",
    gate_guard_refused!(),
    " ' || g.name)::bigint FROM tenure.production_gates g
         WHERE g.name = $1 AND (g.paused_us IS NOT NULL OR g.concurrency IS NOT NULL
                                OR g.rate_claims IS NOT NULL)"
);

/// The marker of a submission's guard that refused (see
/// [`SUBMIT_GUARD`]): the failing cast's message quotes it, a space and
/// the job's production and ID.
macro_rules! submit_guard_refused {
    () => {
        "TN003"
    };
}
/// [`submit_guard_refused!`].
pub(super) const SUBMIT_GUARD_REFUSED: &str = submit_guard_refused!();
/// The name [`SUBMIT_GUARD`] is prepared under.
pub(super) const SUBMIT_GUARD_NAME: &str = "tenure_submit_guard";
/// The parameter types of [`SUBMIT_GUARD`].
pub(super) const SUBMIT_GUARD_TYPES: &str = "bigint[], text";
/// A submission's guard, run with its `COMMIT` (a later statement, so a
/// later snapshot than the insert's): if a job it inserted into production
/// `$2` (`seq = ANY ($1)`) has a tombstone, the cast of
/// `'TN003 <production>/<job>'` fails the statement and with it the
/// transaction. A prune deletes the job's row and writes its tombstone in
/// one transaction; when it commits after the insert's snapshot was taken,
/// the insert's tombstone probe did not see it and the row it deleted no
/// longer conflicts (the insert waited for it to commit, then inserted):
/// without the guard, the pruned ID would be created anew beside its
/// tombstone. The same snapshot first looks for any tombstone of `$2`
/// (a one-time filter): a submission to a production with no tombstone
/// skips the probe of each inserted job (0.97 against 0.08 ms of server
/// time for a chunk of 1 000).
pub(super) const SUBMIT_GUARD: &str = concat!(
    "SELECT ('",
    submit_guard_refused!(),
    " ' || t.production || '/' || t.job)::bigint
         FROM tenure.jobs j JOIN tenure.tombstones t
           ON t.production = j.production AND t.job = j.job
         WHERE j.seq = ANY ($1)
           AND EXISTS (SELECT 1 FROM tenure.tombstones p WHERE p.production = $2)"
);

/// Deletes production `$1`'s gate row.
pub(super) const DELETE_GATES: &str = "DELETE FROM tenure.production_gates WHERE name = $1";

/// How many live jobs production `$1` has.
pub(super) const COUNT_LIVE_JOBS: &str = "SELECT count(*) FROM tenure.jobs
         WHERE production = $1 AND state IN ('requested', 'claimed')";

/// Marks production `$1` cancelled at `$2`.
pub(super) const SET_PRODUCTION_CANCELLED: &str = "UPDATE tenure.productions SET cancelled_us = $2
         WHERE name = $1 AND cancelled_us IS NULL";

/// Every production, by name.
pub(super) const PRODUCTIONS: &str = concat!(
    "SELECT ",
    production_cols!(),
    " FROM tenure.productions ORDER BY name"
);

// ---- Facts, claim requests, nonces (`txn/records.rs`).

/// Inserts one published fact.
pub(super) const INSERT_FACT: &str = "INSERT INTO tenure.facts (production, job, ord, key, value)
             VALUES ($1, $2, $3, $4, $5)";

/// The stored facts of job `$2` of production `$1`, in order, with their
/// `ord`.
pub(super) const JOB_FACTS: &str = "SELECT production, job, key, value, ord FROM tenure.facts
             WHERE production = $1 AND job = $2 ORDER BY ord";

/// The stored facts of production `$1`'s jobs, by job, in order, with
/// their `ord`.
pub(super) const PRODUCTION_FACTS: &str = "SELECT production, job, key, value, ord
             FROM tenure.facts WHERE production = $1 ORDER BY job, ord";

/// The provenance job `$2` of production `$1` keeps in its row, if it does
/// (`DerivedProvenance`'s columns).
pub(super) const JOB_PROVENANCE: &str =
    "SELECT job, provenance_at, claim_id, holder, attempts, updated_us FROM tenure.jobs
             WHERE production = $1 AND job = $2 AND provenance_at IS NOT NULL";

/// The provenance production `$1`'s jobs keep in their rows, by job.
pub(super) const PRODUCTION_PROVENANCE: &str =
    "SELECT job, provenance_at, claim_id, holder, attempts, updated_us FROM tenure.jobs
             WHERE production = $1 AND provenance_at IS NOT NULL ORDER BY job";

/// Production `$1`'s claim requests with the IDs `$2`.
pub(super) const CLAIM_REQUESTS: &str =
    "SELECT production, request_id, job, claim_id, secret_digest, args_digest, created_us
         FROM tenure.claim_requests WHERE production = $1 AND request_id = ANY($2::text[])";

/// Inserts claim requests of production `$1`, leaving an existing ID alone.
pub(super) const INSERT_CLAIM_REQUESTS: &str =
    "INSERT INTO tenure.claim_requests (production, request_id, job, claim_id,
             secret_digest, args_digest, created_us)
         SELECT $1, u.r, u.j, u.c, u.s, u.a, u.t
         FROM unnest($2::text[], $3::text[], $4::text[], $5::bytea[], $6::bytea[],
                     $7::bigint[]) AS u(r, j, c, s, a, t)
         ON CONFLICT (production, request_id) DO NOTHING";

/// Records a nonce, unless it was used already.
pub(super) const INSERT_NONCE: &str =
    "INSERT INTO tenure.nonces (nonce, production, job, claim_id, used_us)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (nonce) DO NOTHING";

// ---- The transaction's own statements (`txn/mod.rs`).

/// Begins a read transaction; its `lock_timeout` is the server's default
/// (the connection's is for writes, see `Pool::connect`).
pub(super) const BEGIN_READ: &str =
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL lock_timeout TO DEFAULT";

/// Takes the advisory lock `($1, $2)` shared.
pub(super) const ADVISORY_LOCK_SHARED: &str = "SELECT pg_advisory_xact_lock_shared($1, $2)";

/// Takes the advisory lock `($1, $2)` exclusively.
pub(super) const ADVISORY_LOCK: &str = "SELECT pg_advisory_xact_lock($1, $2)";

/// The server's clock in whole µs.
pub(super) const SERVER_NOW: &str = concat!("SELECT ", server_sample!());

/// The stored schema version.
pub(super) const SCHEMA_VERSION_ROW: &str =
    "SELECT value FROM tenure.meta WHERE key = 'schema_version'";

/// Notifies the work channel about production `$1`.
pub(super) const NOTIFY_WORK: &str = "SELECT pg_catalog.pg_notify('tenure_work', $1)";

#[cfg(test)]
mod tests {
    use super::{WRITE_BATCHES, WRITE_BATCH_TYPES, WRITE_ONES, WRITE_ONE_TYPES};

    /// Each shape of the write statement, in both forms, holds the parts its
    /// index names, counts those it leaves out as 0, and has a name of its
    /// own; the batch form's columns are arrays, the scalar form's not.
    #[test]
    fn write_batch_shapes_hold_the_parts_their_index_names() {
        let parts = ["upd", "exp", "fct"];
        let forms = [
            ("batch", WRITE_BATCHES, WRITE_BATCH_TYPES),
            ("one", WRITE_ONES, WRITE_ONE_TYPES),
        ];
        for (form, shapes, types) in forms {
            let types: Vec<&str> = types.split(", ").collect();
            assert_eq!(types.len(), 36, "{form}");
            for (n, ty) in types.iter().enumerate() {
                // `$29`, `$30` (the registration) are scalars, `$33` (the
                // expected counts) an array, in both forms.
                let array = match n + 1 {
                    29 | 30 => false,
                    33 => true,
                    _ => form == "batch",
                };
                assert_eq!(ty.ends_with("[]"), array, "{form} ${}: {ty}", n + 1);
            }
            for (_, body) in shapes {
                assert_eq!(body.contains("unnest("), form == "batch", "{form}");
            }
        }
        for (i, (name, body)) in WRITE_BATCHES.iter().chain(WRITE_ONES.iter()).enumerate() {
            let (i, form) = (i % 8, ["batch", "one"][i / 8]);
            assert_eq!(*name, format!("tenure_write_{form}_{i}"));
            let mut zeros = 0;
            for (bit, part) in parts.iter().enumerate() {
                let on = i >> bit & 1 == 1;
                assert_eq!(body.contains(&format!("{part} AS (")), on, "{name}: {part}");
                assert_eq!(
                    body.contains(&format!("(SELECT count(*) FROM {part})")),
                    on,
                    "{name}: the count of {part}"
                );
                zeros += usize::from(!on);
            }
            let zeroed = body.matches("[0::bigint").count() + body.matches(", 0::bigint").count();
            assert_eq!(zeroed, zeros, "{name}");
            assert!(body.contains("ev AS (") && body.contains("(SELECT count(*) FROM ev)"));
            // The parameters of a part left out stay declared and unused.
            assert_eq!(body.contains("$11"), i & 2 != 0, "{name}");
        }
    }
}
