-- The floor row of `cargo xtask bench --backend postgres` (see
-- `bench/pg_peer.py`, `sql-tenure`): the rows tenure writes for one job,
-- in one call per transition, with no client library in between. Not
-- used by tenure: a measurement of what its record costs the server.
--
-- Each function takes the locks tenure takes, samples the clock after
-- them, checks the sample against the high-water mark, checks the lease
-- as `rules::check` does, and writes what tenure writes for that
-- transition on this schema: the job row (every column a transition
-- sets, with the completion's provenance kept in it), its event
-- (registered as tenure's writers register theirs), and the mark log's
-- row. The count
-- deltas come from the schema's own trigger. A function that finds no
-- job returns no row; one that refuses raises an error.
CREATE SCHEMA IF NOT EXISTS bench_floor;

CREATE OR REPLACE FUNCTION bench_floor.claim_next(
    p text, h text, ttl_us bigint, sdig bytea)
RETURNS TABLE (o_job text, o_claim_id text)
LANGUAGE plpgsql AS $$
DECLARE
    m bigint := coalesce((SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1), 0);
    fl bigint;
    t bigint;
    r record;
    cid text := gen_random_uuid()::text;
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(1413828098, hashtext(p));
    SELECT claim_floor INTO fl FROM tenure.productions WHERE name = p;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'production % not found', p;
    END IF;
    PERFORM 1 FROM tenure.production_gates g WHERE g.name = p FOR UPDATE;
    t := floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    SELECT j.seq, j.job, j.attempts, j.max_attempts, j.due_us, j.updated_us INTO r
    FROM tenure.jobs j
    WHERE j.production = p AND j.state IN ('requested', 'claimed') AND NOT j.parked
      AND j.seq >= coalesce(fl, 0)
      AND (j.state = 'requested' OR j.expires_us IS NULL OR j.expires_us <= t)
    ORDER BY j.priority DESC, j.seq LIMIT 1
    FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    t := greatest(t, floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint);
    IF t < m THEN
        RAISE EXCEPTION 'clock sample % below the mark %', t, m;
    END IF;
    IF r.attempts >= r.max_attempts THEN
        RAISE EXCEPTION 'job % has no attempts left', r.job;
    END IF;
    PERFORM 1 FROM tenure.production_gates g
    WHERE g.name = p AND (g.paused_us IS NOT NULL OR g.concurrency IS NOT NULL
                          OR g.rate_claims IS NOT NULL);
    IF FOUND THEN
        RAISE EXCEPTION 'production % is gated', p;
    END IF;
    UPDATE tenure.jobs SET state = 'claimed', attempts = r.attempts + 1, claim_id = cid,
        secret_digest = sdig, holder = h, claimed_us = t, expires_us = t + ttl_us,
        updated_us = t, last_error = NULL, due_us = r.due_us, parked = false
    WHERE seq = r.seq;
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(
        6072259672578981888 | coalesce(pg_catalog.pg_sequence_last_value(
            'tenure.events_seq_seq'::regclass) + 1, 0));
    INSERT INTO tenure.events (at_us, production, job, kind, state, claim_id, holder,
        attempt, expires_us, detail, since_us)
    VALUES (t, p, r.job, 'claimed', 'claimed', cid, h, r.attempts + 1, t + ttl_us, '',
        coalesce(r.due_us, r.updated_us));
    IF floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint < m THEN
        RAISE EXCEPTION 'clock below the mark at the commit';
    END IF;
    INSERT INTO tenure.mark_log (value) VALUES (t);
    o_job := r.job;
    o_claim_id := cid;
    RETURN NEXT;
END $$;

CREATE OR REPLACE FUNCTION bench_floor.complete(p text, j text, cid text, sdig bytea)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    m bigint := coalesce((SELECT value FROM tenure.mark_log ORDER BY value DESC LIMIT 1), 0);
    t bigint;
    r record;
BEGIN
    SELECT x.seq, x.state, x.claim_id, x.secret_digest, x.expires_us, x.holder, x.attempts,
           x.claimed_us
    INTO r FROM tenure.jobs x WHERE x.production = p AND x.job = j FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'job %/% not found', p, j;
    END IF;
    t := floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint;
    IF t < m THEN
        RAISE EXCEPTION 'clock sample % below the mark %', t, m;
    END IF;
    IF r.claim_id IS DISTINCT FROM cid OR r.secret_digest IS DISTINCT FROM sdig
       OR r.state <> 'claimed' OR r.expires_us <= t THEN
        RAISE EXCEPTION 'the lease on %/% is not current', p, j;
    END IF;
    UPDATE tenure.jobs SET state = 'completed', attempts = r.attempts, claim_id = cid,
        secret_digest = sdig, holder = r.holder, claimed_us = r.claimed_us,
        expires_us = r.expires_us, updated_us = t, last_error = NULL, provenance_at = 0
    WHERE seq = r.seq;
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(
        6072259672578981888 | coalesce(pg_catalog.pg_sequence_last_value(
            'tenure.events_seq_seq'::regclass) + 1, 0));
    INSERT INTO tenure.events (at_us, production, job, kind, state, claim_id, holder,
        attempt, expires_us, detail, since_us)
    VALUES (t, p, j, 'completed', 'completed', cid, r.holder, r.attempts, NULL, '',
        r.claimed_us);
    IF floor(extract(epoch FROM clock_timestamp()) * 1000000)::bigint >= r.expires_us THEN
        RAISE EXCEPTION 'the lease on %/% expired before the commit', p, j;
    END IF;
    INSERT INTO tenure.mark_log (value) VALUES (t);
    RETURN t;
END $$;
