//! The SQLite layout: a new store and an older store brought to the current
//! schema have the same tables, columns, constraints, indexes, triggers,
//! views, `meta` keys and persistent pragmas.
//!
//! The layout is read from `sqlite_master` and the `pragma_table_list`,
//! `pragma_table_xinfo`, `pragma_index_list` and `pragma_index_xinfo`
//! tables; stored SQL text is compared as tokens (case, spacing, comments
//! and identifier quotes do not count), a table's definition as the set of
//! its column definitions and constraints (the order of the columns is
//! compared through `pragma_table_xinfo`).
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tenure::*;

mod common;
use common::{
    downgrade_to_schema_3, skip_on_postgres, Env, SQLITE_UNDO_10, SQLITE_UNDO_11, SQLITE_UNDO_12,
    SQLITE_UNDO_13,
};

/// The tokens of an SQL text, lower-cased outside string literals, joined
/// by single spaces.
fn tokens(sql: &str) -> Vec<String> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            i += 2;
            while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                i += 1;
            }
            i += 2;
        } else if c == '\'' {
            // A string literal, kept as written ('' is a quote inside it).
            let start = i;
            i += 1;
            while i < chars.len() {
                if chars[i] == '\'' {
                    if chars.get(i + 1) == Some(&'\'') {
                        i += 2;
                        continue;
                    }
                    break;
                }
                i += 1;
            }
            i += 1;
            out.push(chars[start..i.min(chars.len())].iter().collect());
        } else if c == '"' || c == '`' || c == '[' {
            // A quoted identifier: the name it quotes.
            let close = if c == '[' { ']' } else { c };
            let start = i + 1;
            i = start;
            while i < chars.len() && chars[i] != close {
                i += 1;
            }
            out.push(chars[start..i].iter().collect::<String>().to_lowercase());
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(chars[start..i].iter().collect::<String>().to_lowercase());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// A `CREATE TABLE` text as its head (`create table name`), its column
/// definitions and table constraints (sorted), and what follows them
/// (`without rowid`).
fn table_clauses(sql: &str) -> Vec<String> {
    let toks = tokens(sql);
    let open = toks.iter().position(|t| t == "(").expect("a column list");
    let mut clauses = BTreeSet::new();
    let (mut depth, mut cur, mut end) = (0, Vec::new(), toks.len());
    for (i, t) in toks.iter().enumerate().skip(open) {
        match t.as_str() {
            "(" => depth += 1,
            ")" => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            end = i;
            break;
        }
        if depth == 1 && (t == "," || t == "(") {
            if t == "," {
                clauses.insert(cur.join(" "));
                cur.clear();
            }
            continue;
        }
        cur.push(t.clone());
    }
    clauses.insert(cur.join(" "));
    let mut out = vec![format!("head {}", toks[..open].join(" "))];
    out.extend(clauses.into_iter().map(|c| format!("clause {c}")));
    out.push(format!("tail {}", toks[end + 1..].join(" ")));
    out
}

/// Everything of a store's layout that the schema fixes, one line per
/// fact, sorted. Tables in `extra` are left out.
fn layout(c: &Connection, extra: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for pragma in [
        "user_version",
        "application_id",
        "journal_mode",
        "auto_vacuum",
    ] {
        let v: rusqlite::types::Value = c
            .query_row(&format!("PRAGMA {pragma}"), [], |r| r.get(0))
            .unwrap();
        out.insert(format!("pragma {pragma} = {v:?}"));
    }
    let objects: Vec<(String, String, String, Option<String>)> = c
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    for (kind, name, table, sql) in &objects {
        if extra.contains(&table.as_str()) {
            continue;
        }
        match kind.as_str() {
            "table" => {
                out.insert(format!("table {name}"));
                if let Some(sql) = sql {
                    for clause in table_clauses(sql) {
                        out.insert(format!("table {name} {clause}"));
                    }
                }
                let (wr, strict): (bool, bool) = c
                    .query_row(
                        "SELECT wr, strict FROM pragma_table_list WHERE name = ?1",
                        [name],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .unwrap();
                out.insert(format!("table {name} without_rowid={wr} strict={strict}"));
                let mut st = c
                    .prepare(
                        "SELECT cid, name, type, \"notnull\", dflt_value, pk, hidden
                         FROM pragma_table_xinfo(?1)",
                    )
                    .unwrap();
                let cols = st
                    .query_map([name], |r| {
                        Ok(format!(
                            "column {name}.{} {} type={} notnull={} default={:?} pk={} hidden={}",
                            r.get::<_, i64>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, i64>(3)?,
                            r.get::<_, Option<String>>(4)?,
                            r.get::<_, i64>(5)?,
                            r.get::<_, i64>(6)?,
                        ))
                    })
                    .unwrap();
                out.extend(cols.map(|r| r.unwrap()));
                let mut st = c
                    .prepare("SELECT name, \"unique\", origin, partial FROM pragma_index_list(?1)")
                    .unwrap();
                let indexes: Vec<(String, i64, String, i64)> = st
                    .query_map([name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                    .unwrap()
                    .map(|r| r.unwrap())
                    .collect();
                for (index, unique, origin, partial) in indexes {
                    out.insert(format!(
                        "index {index} on {name} unique={unique} origin={origin} partial={partial}"
                    ));
                    let mut st = c
                        .prepare(
                            "SELECT seqno, cid, name, \"desc\", coll, key
                             FROM pragma_index_xinfo(?1)",
                        )
                        .unwrap();
                    let cols = st
                        .query_map([&index], |r| {
                            Ok(format!(
                                "index {index} column {} cid={} {:?} desc={} coll={} key={}",
                                r.get::<_, i64>(0)?,
                                r.get::<_, i64>(1)?,
                                r.get::<_, Option<String>>(2)?,
                                r.get::<_, i64>(3)?,
                                r.get::<_, String>(4)?,
                                r.get::<_, i64>(5)?,
                            ))
                        })
                        .unwrap();
                    out.extend(cols.map(|r| r.unwrap()));
                }
            }
            // An index's columns are read above; its text carries a
            // partial index's WHERE clause.
            "index" | "trigger" | "view" => {
                if let Some(sql) = sql {
                    out.insert(format!("{kind} {name} sql {}", tokens(sql).join(" ")));
                } else {
                    out.insert(format!("{kind} {name} on {table}"));
                }
            }
            other => panic!("unexpected schema object {other} {name}"),
        }
    }
    let keys: Vec<String> = c
        .prepare("SELECT key FROM meta ORDER BY key")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    out.extend(keys.into_iter().map(|k| format!("meta key {k}")));
    out
}

/// `assert_eq!` of two layouts, naming the lines only one of them has.
fn assert_same(new: &BTreeSet<String>, migrated: &BTreeSet<String>, what: &str) {
    let only_new: Vec<_> = new.difference(migrated).collect();
    let only_migrated: Vec<_> = migrated.difference(new).collect();
    assert!(
        only_new.is_empty() && only_migrated.is_empty(),
        "{what}: a new store has\n  {}\nbut the migrated one has\n  {}",
        only_new
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        only_migrated
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
    );
}

fn page_size(c: &Connection) -> i64 {
    c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap()
}

/// A store created by opening `path`, closed again.
fn new_store(path: &Path) -> PathBuf {
    let a = Authority::open(path, &Options::new()).unwrap();
    assert_eq!(a.migrated_from(), 0);
    drop(a);
    path.to_path_buf()
}

/// Open the store at `path` (at schema `version`: opening migrates it),
/// compact it (which switches it to incremental auto-vacuum, as a new
/// store has) and close it again.
fn migrate(path: &Path, version: u32, options: &Options) -> Connection {
    let a = Authority::open(path, options)
        .unwrap_or_else(|e| panic!("opening the schema {version} store: {e}"));
    assert_eq!(a.migrated_from(), version);
    a.vacuum().unwrap();
    assert!(a.check().unwrap().ok());
    drop(a);
    Connection::open(path).unwrap()
}

/// The layout of a new store in `dir`, and its connection.
fn new_layout(dir: &Path) -> (Connection, BTreeSet<String>) {
    let new = Connection::open(new_store(&dir.join("new.db"))).unwrap();
    let want = layout(&new, &[]);
    assert!(want.contains(&format!("pragma user_version = Integer({SCHEMA_VERSION})")));
    assert!(want.contains("pragma journal_mode = Text(\"wal\")"));
    (new, want)
}

/// The store `fixture` writes (at schema `version`), migrated, has the
/// layout of a new store but for the tables `extra`, and keeps the page
/// size it was written with.
fn fixture_migrates_to_the_new_layout(fixture: &str, version: u32, extra: &[&str]) -> Connection {
    let dir = tempfile::tempdir().unwrap();
    let (new, want) = new_layout(dir.path());
    let path = dir.path().join(format!("v{version}.db"));
    Connection::open(&path)
        .unwrap()
        .execute_batch(fixture)
        .unwrap();
    let old = migrate(&path, version, &Options::new());
    assert_same(&want, &layout(&old, extra), &format!("schema {version}"));
    // A new store's pages are smaller than SQLite's default, which the
    // fixtures were written with.
    assert_eq!(page_size(&new), 2048);
    assert_eq!(page_size(&old), 4096);
    old
}

#[test]
fn a_v2_store_migrated_has_the_layout_of_a_new_store() {
    fixture_migrates_to_the_new_layout(include_str!("fixtures/v2_store.sql"), 2, &[]);
}

#[test]
fn a_v4_store_migrated_has_the_layout_of_a_new_store() {
    fixture_migrates_to_the_new_layout(include_str!("fixtures/v4_store.sql"), 4, &[]);
}

/// The pre-lease layout's events stay in `legacy_events` (and its
/// `AUTOINCREMENT` counter in `sqlite_sequence`); all else is the layout
/// of a new store.
#[test]
fn a_v1_store_migrated_has_the_layout_of_a_new_store_and_its_old_events() {
    let old = fixture_migrates_to_the_new_layout(
        include_str!("fixtures/v1_pre_lease.sql"),
        1,
        &["legacy_events", "sqlite_sequence"],
    );
    let legacy: i64 = old
        .query_row("SELECT count(*) FROM legacy_events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(legacy, 2);
}

/// What each schema from 12 down to 5 lacks of the one after it (schema 9
/// changed only PostgreSQL's layout).
const UNDO: &[(u32, &str)] = &[
    (12, SQLITE_UNDO_13),
    (11, SQLITE_UNDO_12),
    (10, SQLITE_UNDO_11),
    (9, SQLITE_UNDO_10),
    (8, "PRAGMA user_version = 8;"),
    (
        7,
        "ALTER TABLE events DROP COLUMN mark_us; PRAGMA user_version = 7;",
    ),
    (
        6,
        "ALTER TABLE jobs DROP COLUMN provenance_at; PRAGMA user_version = 6;",
    ),
    (5, "DROP TABLE claim_requests; PRAGMA user_version = 5;"),
];

/// A new store taken back to each of the schemas 12 to 5 (the steps after
/// it undone), migrated, has the layout of a new store again.
#[test]
fn stores_of_schema_5_to_12_migrated_have_the_layout_of_a_new_store() {
    let dir = tempfile::tempdir().unwrap();
    let (_, want) = new_layout(dir.path());
    for (n, &(version, _)) in UNDO.iter().enumerate() {
        let path = new_store(&dir.path().join(format!("v{version}.db")));
        let c = Connection::open(&path).unwrap();
        for (_, undo) in &UNDO[..=n] {
            c.execute_batch(undo).unwrap();
        }
        drop(c);
        let old = migrate(&path, version, &Options::new());
        assert_same(&want, &layout(&old, &[]), &format!("schema {version}"));
    }
}

/// A new store taken back to schema 3 (the tables and columns of the later
/// steps dropped, `jobs_live` for claim-next), migrated, has the layout of
/// a new store again.
#[test]
fn a_store_of_schema_3_migrated_has_the_layout_of_a_new_store() {
    if skip_on_postgres("a SQLite file of schema 3") {
        return;
    }
    let env = Env::new();
    downgrade_to_schema_3(&env);
    let path = env.path();
    let Env {
        dir, clock, auth, ..
    } = env;
    drop(auth);
    let (_, want) = new_layout(dir.path());
    let old = migrate(&path, 3, &Options::new().clock(clock));
    assert_same(&want, &layout(&old, &[]), "schema 3");
}

/// The comparison sees what a migration step changes (a constraint, a
/// default, a column's place, an index's predicate or uniqueness, a
/// missing `meta` row) and not how the text is spaced or quoted.
#[test]
fn the_layout_differs_by_definitions_not_by_spacing() {
    let base = "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO meta VALUES ('a', 0);
        CREATE TABLE t (a INTEGER NOT NULL CHECK (a > 0), b TEXT DEFAULT 'x', UNIQUE (a, b));
        CREATE INDEX t_b ON t (b) WHERE a = 1;";
    let of = |sql: &str| {
        let c = Connection::open_in_memory().unwrap();
        c.execute_batch(sql).unwrap();
        layout(&c, &[])
    };
    let want = of(base);
    let respaced = "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO meta VALUES ('a', 0);
        CREATE TABLE \"t\" (
            a   INTEGER NOT NULL CHECK (a>0), -- a comment
            b   TEXT DEFAULT 'x',
            UNIQUE (a,b)
        );
        create index t_b on t(b)
            where a = 1;";
    assert_eq!(of(respaced), want);
    for changed in [
        base.replace("a > 0", "a >= 0"),
        base.replace("DEFAULT 'x'", "DEFAULT 'y'"),
        base.replace("b TEXT", "b BLOB"),
        base.replace(", UNIQUE (a, b)", ""),
        base.replace("WHERE a = 1", "WHERE a = 2"),
        base.replace("CREATE INDEX", "CREATE UNIQUE INDEX"),
        base.replace("ON t (b)", "ON t (b DESC)"),
        base.replace("INSERT INTO meta VALUES ('a', 0);", ""),
        base.replace(
            "a INTEGER NOT NULL CHECK (a > 0), b TEXT DEFAULT 'x'",
            "b TEXT DEFAULT 'x', a INTEGER NOT NULL CHECK (a > 0)",
        ),
        format!("{base} CREATE TRIGGER t_a AFTER INSERT ON t BEGIN SELECT 1; END;"),
        format!("{base} CREATE VIEW v AS SELECT a FROM t;"),
    ] {
        assert_ne!(of(&changed), want, "{changed}");
    }
}

/// A store taken back to before the statistics' step, with jobs in every
/// stored state, migrated: the kept counts are filled from its rows, and
/// stay exact through the transitions after it.
#[test]
fn the_statistics_step_fills_the_counts_from_the_rows() {
    counts_migrate(
        &(SQLITE_UNDO_13.to_owned() + SQLITE_UNDO_12 + SQLITE_UNDO_11),
        10,
    );
}

/// A schema 12 store (counts of every state kept by triggers) migrated:
/// the counts are filled afresh and the triggers gone, and the counts stay
/// exact through the transitions after it, a requeue and a prune
/// included.
#[test]
fn a_schema_12_store_counts_by_its_transactions() {
    counts_migrate(SQLITE_UNDO_13, 12);
}

fn counts_migrate(undo: &str, from: u32) {
    if skip_on_postgres("a SQLite file of an older schema") {
        return;
    }
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    for j in ["a", "b", "c", "d", "e"] {
        a.submit("p", &tenure::JobSpec::new(j, b"x".to_vec()))
            .unwrap();
    }
    let ttl = tenure::Ttl::from_micros(60_000_000).unwrap();
    a.claim("p", "a", "w", ttl).unwrap().complete(&[]).unwrap();
    a.claim("p", "b", "w", ttl)
        .unwrap()
        .fail("no", true)
        .unwrap();
    a.cancel("p", "c").unwrap();
    let held = a.claim("p", "d", "w", ttl).unwrap();
    let before = a.stats(&tenure::StatsQuery::default()).unwrap();
    let path = env.path();
    Connection::open(&path)
        .unwrap()
        .execute_batch(undo)
        .unwrap();
    drop(held);
    let Env {
        dir: _dir,
        clock,
        auth,
        ..
    } = env;
    drop(auth);
    let a = tenure::Authority::open(&path, &Options::new().clock(clock.clone())).unwrap();
    assert_eq!(a.migrated_from(), from);
    let triggers: i64 = Connection::open(&path)
        .unwrap()
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(triggers, 0);
    let after = a.stats(&tenure::StatsQuery::default()).unwrap();
    let counts = |s: &tenure::Stats| {
        let p = &s.productions[0];
        (
            p.waiting_due,
            p.claimed_live,
            p.completed,
            p.failed,
            p.cancelled_jobs,
        )
    };
    assert_eq!(counts(&after), counts(&before));
    assert_eq!(counts(&after), (1, 1, 1, 1, 1));
    a.claim_next("p", "w", ttl).unwrap().complete(&[]).unwrap();
    let last = a.stats(&tenure::StatsQuery::default()).unwrap();
    assert_eq!(counts(&last), (0, 1, 2, 1, 1));
    // Out of a terminal state and back into the queue.
    a.requeue("p", "c", None, tenure::Delay::ZERO).unwrap();
    let requeued = a.stats(&tenure::StatsQuery::default()).unwrap();
    assert_eq!(counts(&requeued), (1, 1, 2, 1, 0));
    // Pruning removes the ended jobs.
    clock.advance(7_200_000_000);
    a.prune(&tenure::Retention {
        event_age: None,
        terminal_job_age: Some(tenure::Age::from_secs(3_600).unwrap()),
        tombstone_age: None,
    })
    .unwrap();
    let pruned = a.stats(&tenure::StatsQuery::default()).unwrap();
    assert_eq!(counts(&pruned), (1, 0, 0, 0, 0));
}

/// A schema 11 store's schedules (no time zone column) migrate as UTC
/// cron and interval cadences, their slot records kept; a zoned cadence can
/// be stored after.
#[test]
fn schema_11_schedules_migrate_as_utc_cadences() {
    if skip_on_postgres("a SQLite file of schema 11") {
        return;
    }
    let env = Env::new();
    let a = &env.auth;
    a.create_production("p").unwrap();
    let cron = tenure::Cadence::cron("*/5 * * * *").unwrap();
    a.create_schedule(
        "p",
        &tenure::ScheduleSpec::new("c", cron.clone(), b"x".to_vec()),
    )
    .unwrap();
    let before = a.schedules(None).unwrap();
    let path = env.path();
    let Env {
        dir: _dir,
        clock,
        auth,
        ..
    } = env;
    drop(auth);
    Connection::open(&path)
        .unwrap()
        .execute_batch(&(SQLITE_UNDO_13.to_owned() + SQLITE_UNDO_12))
        .unwrap();
    let a = tenure::Authority::open(&path, &Options::new().clock(clock)).unwrap();
    assert_eq!(a.migrated_from(), 11);
    assert_eq!(a.schedules(None).unwrap(), before);
    assert_eq!(before[0].spec.cadence, cron);
    let zoned = tenure::Cadence::cron_in("0 2 * * *", "Europe/Paris").unwrap();
    a.update_schedule(
        "p",
        &tenure::ScheduleSpec::new("c", zoned.clone(), b"x".to_vec()),
    )
    .unwrap();
    assert_eq!(a.schedules(None).unwrap()[0].spec.cadence, zoned);
}
