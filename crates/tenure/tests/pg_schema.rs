//! The PostgreSQL store's layout has one source: a store created new and a
//! schema-2 store (`fixtures/v2_store_pg.sql`) migrated to the current
//! version end with the same schema, read from the server's catalogs. Runs
//! with `TENURE_TEST_BACKEND=postgres` and `TENURE_TEST_PG_URL`, as
//! `cargo xtask test` does; skipped otherwise.
mod common;
use common::*;
use std::collections::BTreeSet;
use tenure::*;

/// What the catalogs say about the schema of the database at `url`, one
/// line per fact, `<what>: <fact>`: everything the store sets that persists
/// (data rows apart from `tenure.meta` are not schema and are left out).
fn layout(url: &str) -> Vec<String> {
    const QUERIES: &[(&str, &str)] = &[
        (
            "schema",
            "SELECT n.nspname || ' owner ' || pg_catalog.pg_get_userbyid(n.nspowner)
                    || ' acl ' || coalesce(n.nspacl::text, '-')
                    || ' comment ' || coalesce(pg_catalog.obj_description(n.oid, 'pg_namespace'), '-')
             FROM pg_catalog.pg_namespace n
             WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'",
        ),
        (
            // Tables, indexes, sequences, views: kind, persistence,
            // storage options (sorted: their order is the order they were
            // set in), row security, owner, privileges, comment.
            "relation",
            "SELECT c.relname || ' kind ' || c.relkind::text || ' persistence ' || c.relpersistence::text
                    || ' options ' || coalesce(array_to_string(ARRAY(
                           SELECT o FROM unnest(c.reloptions) o ORDER BY o), ','), '-')
                    || ' rls ' || c.relrowsecurity::text
                    || ' owner ' || pg_catalog.pg_get_userbyid(c.relowner)
                    || ' acl ' || coalesce(c.relacl::text, '-')
                    || ' comment ' || coalesce(pg_catalog.obj_description(c.oid, 'pg_class'), '-')
             FROM pg_catalog.pg_class c
             WHERE c.relnamespace = 'tenure'::regnamespace",
        ),
        (
            // Columns in table order (the position itself is left out: a
            // dropped column leaves a gap in a migrated table), with type,
            // nullability, default or generation expression, identity,
            // collation, storage and comment.
            "column",
            "SELECT c.relname || '.' || a.attname
                    || ' #' || row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum)
                    || ' type ' || pg_catalog.format_type(a.atttypid, a.atttypmod)
                    || ' not_null ' || a.attnotnull::text
                    || ' default ' || coalesce(pg_catalog.pg_get_expr(d.adbin, d.adrelid), '-')
                    || ' identity ' || coalesce(nullif(a.attidentity::text, ''), '-')
                    || ' generated ' || coalesce(nullif(a.attgenerated::text, ''), '-')
                    || ' collation ' || coalesce(co.collname, '-')
                    || ' storage ' || a.attstorage::text
                    || ' comment ' || coalesce(pg_catalog.col_description(c.oid, a.attnum), '-')
             FROM pg_catalog.pg_attribute a
             JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
             LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
             LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation
             WHERE c.relnamespace = 'tenure'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
               AND a.attnum > 0 AND NOT a.attisdropped",
        ),
        (
            "constraint",
            "SELECT r.conrelid::regclass::text || ' ' || r.conname || ' ' || r.contype::text
                    || ' ' || pg_catalog.pg_get_constraintdef(r.oid)
             FROM pg_catalog.pg_constraint r
             WHERE r.connamespace = 'tenure'::regnamespace",
        ),
        (
            "index",
            "SELECT tablename || ' ' || indexname || ' ' || indexdef
             FROM pg_catalog.pg_indexes WHERE schemaname = 'tenure'",
        ),
        (
            "trigger",
            "SELECT t.tgrelid::regclass::text || ' ' || t.tgname || ' '
                    || pg_catalog.pg_get_triggerdef(t.oid)
             FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
             WHERE c.relnamespace = 'tenure'::regnamespace AND NOT t.tgisinternal",
        ),
        (
            // Functions and procedures of every schema but the system's,
            // their bodies with whitespace runs made one space.
            "function",
            "SELECT n.nspname || '.' || p.proname
                    || '(' || pg_catalog.pg_get_function_identity_arguments(p.oid) || ') '
                    || p.prokind::text || ' ' || coalesce(pg_catalog.pg_get_function_result(p.oid), '-')
                    || ' ' || l.lanname || ' '
                    || btrim(regexp_replace(p.prosrc, '\\s+', ' ', 'g'))
             FROM pg_catalog.pg_proc p
             JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
             JOIN pg_catalog.pg_language l ON l.oid = p.prolang
             WHERE n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema'",
        ),
        (
            // Definitions, not positions: how far a sequence has gone is data.
            "sequence",
            "SELECT s.sequencename || ' ' || s.data_type::text || ' start ' || s.start_value
                    || ' min ' || s.min_value || ' max ' || s.max_value
                    || ' increment ' || s.increment_by || ' cycle ' || s.cycle::text
                    || ' cache ' || s.cache_size
             FROM pg_catalog.pg_sequences s WHERE s.schemaname = 'tenure'",
        ),
        (
            "sequence_owner",
            "SELECT s.relname || ' owned by ' || t.relname || '.' || a.attname
                    || ' ' || d.deptype::text
             FROM pg_catalog.pg_depend d
             JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
             JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
             JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
             WHERE d.classid = 'pg_catalog.pg_class'::regclass
               AND s.relnamespace = 'tenure'::regnamespace",
        ),
        (
            "rule",
            "SELECT tablename || ' ' || rulename || ' ' || definition
             FROM pg_catalog.pg_rules WHERE schemaname = 'tenure'",
        ),
        (
            "policy",
            "SELECT tablename || ' ' || policyname || ' ' || cmd || ' '
                    || coalesce(qual, '-') || ' ' || coalesce(with_check, '-')
             FROM pg_catalog.pg_policies WHERE schemaname = 'tenure'",
        ),
        (
            "statistics",
            "SELECT stxname || ' ' || pg_catalog.pg_get_statisticsobjdef(oid)
             FROM pg_catalog.pg_statistic_ext WHERE stxnamespace = 'tenure'::regnamespace",
        ),
        ("extension", "SELECT extname FROM pg_catalog.pg_extension"),
        (
            "database_setting",
            "SELECT array_to_string(s.setconfig, ',')
             FROM pg_catalog.pg_db_role_setting s
             WHERE s.setdatabase = (SELECT oid FROM pg_catalog.pg_database
                                    WHERE datname = current_database())",
        ),
        (
            "meta",
            "SELECT key || ' = ' || value FROM tenure.meta",
        ),
    ];
    let mut c = pg::client(url);
    let mut out = Vec::new();
    for (what, sql) in QUERIES {
        let mut rows: Vec<String> = c
            .query(*sql, &[])
            .unwrap_or_else(|e| panic!("{what}: {e:?}"))
            .iter()
            .map(|r| format!("{what}: {}", r.get::<_, String>(0)))
            .collect();
        rows.sort();
        out.extend(rows);
    }
    out
}

/// The lines of `a` that `b` lacks.
fn missing(a: &[String], b: &[String]) -> Vec<String> {
    let b: BTreeSet<&String> = b.iter().collect();
    a.iter().filter(|l| !b.contains(l)).cloned().collect()
}

#[test]
fn a_new_store_and_a_migrated_v2_store_have_the_same_schema() {
    if !on_postgres() {
        eprintln!("skipped: set TENURE_TEST_BACKEND=postgres and TENURE_TEST_PG_URL");
        return;
    }
    let new = pg::fresh_database().unwrap();
    let a = Authority::open(new.url.as_str(), &Options::new()).unwrap();
    assert_eq!(a.migrated_from(), 0, "a new store is created, not migrated");
    drop(a);
    let old = pg::fresh_database().unwrap();
    pg::client(&old.url)
        .batch_execute(include_str!("fixtures/v2_store_pg.sql"))
        .unwrap();
    let a = Authority::open(old.url.as_str(), &Options::new()).unwrap();
    assert_eq!(a.migrated_from(), 2);
    drop(a);

    let created = layout(&new.url);
    let migrated = layout(&old.url);
    // The comparison covers the whole layout.
    for line in [
        format!("meta: schema_version = {SCHEMA_VERSION}"),
        "meta: history_horizon = 0".to_owned(),
        format!(
            "relation: jobs kind r persistence p options autovacuum_vacuum_cost_delay=0,\
             autovacuum_vacuum_scale_factor=0.02,autovacuum_vacuum_threshold=1000,fillfactor=70 \
             rls false owner {} acl - comment -",
            owner(&new.url)
        ),
        "index: jobs jobs_ready CREATE INDEX jobs_ready ON tenure.jobs USING btree \
         (production, priority DESC, seq) WHERE ((state = ANY (ARRAY['requested'::text, \
         'claimed'::text])) AND (NOT parked))"
            .to_owned(),
        "sequence_owner: events_seq_seq owned by events.seq i".to_owned(),
    ] {
        assert!(created.contains(&line), "{line:?} not in {created:#?}");
    }
    for what in ["column", "constraint", "index", "sequence"] {
        let n = created
            .iter()
            .filter(|l| l.starts_with(&format!("{what}: ")))
            .count();
        assert!(n >= 2, "only {n} {what} lines in {created:#?}");
    }
    let only_created = missing(&created, &migrated);
    let only_migrated = missing(&migrated, &created);
    assert!(
        only_created.is_empty() && only_migrated.is_empty(),
        "a new store and a migrated v2 store differ:\n\
         only in the new store: {only_created:#?}\n\
         only in the migrated store: {only_migrated:#?}"
    );
    assert_eq!(created, migrated);
}

/// A schema 13 store, whose `events_by_time` held every event, gets the
/// index of the flow's events only when it is opened, and its layout is
/// then the new store's.
#[test]
fn a_schema_13_store_gets_the_flow_events_index() {
    if !on_postgres() {
        eprintln!("skipped: set TENURE_TEST_BACKEND=postgres and TENURE_TEST_PG_URL");
        return;
    }
    let new = pg::fresh_database().unwrap();
    drop(Authority::open(new.url.as_str(), &Options::new()).unwrap());
    let old = pg::fresh_database().unwrap();
    drop(Authority::open(old.url.as_str(), &Options::new()).unwrap());
    pg::client(&old.url)
        .batch_execute(
            "DROP INDEX tenure.events_by_time;
             CREATE INDEX events_by_time ON tenure.events (production, at_us);
             UPDATE tenure.meta SET value = 13 WHERE key = 'schema_version';",
        )
        .unwrap();
    let a = Authority::open(old.url.as_str(), &Options::new()).unwrap();
    assert_eq!(a.migrated_from(), 13);
    drop(a);
    let created = layout(&new.url);
    let index = created
        .iter()
        .find(|l| l.starts_with("index: events events_by_time "))
        .expect("events_by_time in a new store");
    assert!(index.contains("WHERE"), "{index}");
    assert!(index.contains("lapsed_us IS NOT NULL"), "{index}");
    assert_eq!(created, layout(&old.url));
}

/// The user that owns what the store at `url` creates (the URL's user).
fn owner(url: &str) -> String {
    pg::client(url)
        .query_one("SELECT current_user::text", &[])
        .unwrap()
        .get(0)
}
