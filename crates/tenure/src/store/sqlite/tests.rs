//! Tests of the transactions and the checkpointer of one store.

use super::backend::{SqliteBackend, Synchronous};
use super::checkpoint;
use super::conn::Hot;
use super::schema::PAGE_SIZE;
use super::sql::{insert_facts_sql, FACTS_PER_INSERT};
use super::txn::exec;
use crate::model::EventKind;
use crate::store::{Backend, JobRow, NewEvent, Stored, Txn};
use rusqlite::OptionalExtension;
use std::path::Path;
use std::time::Duration;

fn backend(dir: &Path) -> SqliteBackend {
    let (b, _) = SqliteBackend::open(
        &dir.join("t.db"),
        Synchronous::Normal,
        Duration::from_secs(5),
        &|| 0,
    )
    .unwrap();
    b
}

#[test]
fn insert_facts_sql_numbers_each_row_after_production_and_job() {
    assert_eq!(
        insert_facts_sql(1),
        "INSERT INTO facts (production, job, ord, key, value) VALUES (?1, ?2, ?3, ?4, ?5)"
    );
    assert_eq!(
        insert_facts_sql(2),
        "INSERT INTO facts (production, job, ord, key, value) \
         VALUES (?1, ?2, ?3, ?4, ?5), (?1, ?2, ?6, ?7, ?8)"
    );
    assert!(insert_facts_sql(FACTS_PER_INSERT).ends_with(&format!(
        "(?1, ?2, ?{}, ?{}, ?{})",
        3 * FACTS_PER_INSERT,
        3 * FACTS_PER_INSERT + 1,
        3 * FACTS_PER_INSERT + 2
    )));
}

fn event(at_us: i64) -> NewEvent<'static> {
    NewEvent {
        at_us,
        production: "p",
        job: None,
        kind: EventKind::ProductionCreated,
        state: None,
        claim_id: None,
        holder: None,
        attempt: None,
        expires_us: None,
        detail: "",
        since_us: None,
        lapsed_us: None,
    }
}

/// (the `meta` row, the newest event's `mark_us`, the mark as read).
fn marks(b: &SqliteBackend) -> (i64, Option<i64>, i64) {
    let mut t = b.begin_read().unwrap();
    let read = t.high_water().unwrap();
    let conn = b.pool.take().unwrap();
    let c = conn.get();
    let meta = c
        .query_row(
            "SELECT value FROM meta WHERE key = 'high_water_us'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let newest = c
        .query_row(
            "SELECT mark_us FROM events ORDER BY seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()
        .unwrap()
        .flatten();
    t.commit().unwrap();
    (meta, newest, read)
}

/// Commits past SQLite's checkpoint threshold hand the checkpoint to
/// the store's thread; from `checkpoint::INLINE` frames a commit
/// checkpoints itself and the WAL starts over, so its file never grows
/// past that (plus one commit); closing the store stops the thread and
/// closes every connection (the last one removes the WAL); nothing
/// committed is lost.
#[test]
fn checkpoints_run_on_the_store_thread_and_the_wal_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("t.db-wal");
    let b = backend(dir.path());
    let frame = u64::from(PAGE_SIZE) + 24;
    let frames = || std::fs::metadata(&wal).map_or(0, |m| m.len().saturating_sub(32) / frame);
    let detail = "x".repeat(1_500);
    let (mut n, mut most) = (0i64, 0);
    // Two commits that checkpointed themselves, and a checkpoint of the
    // thread's (it drops a request that a commit's overtook).
    while b.pool.checkpointer.counts().1 < 2 || b.pool.checkpointer.counts().0 == 0 {
        let mut t = b.begin_write().unwrap();
        for _ in 0..4 {
            t.append_event(&NewEvent {
                detail: &detail,
                ..event(n)
            })
            .unwrap();
        }
        t.commit_with_mark(None).unwrap();
        n += 1;
        most = most.max(frames());
        assert!(n < 20_000, "{:?}", b.pool.checkpointer.counts());
    }
    assert!(
        most > checkpoint::START as u64,
        "SQLite's own checkpoint at 1 000 frames is off"
    );
    assert!(most <= checkpoint::INLINE as u64 + 8, "{most} frames");
    drop(b);
    assert!(!wal.exists(), "a connection is still open");
    let b = backend(dir.path());
    let conn = b.pool.take().unwrap();
    let stored: i64 = conn
        .get()
        .query_row("SELECT count(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored, 4 * n);
}

fn requested(job: &str) -> JobRow {
    JobRow {
        seq: 0,
        production: "p".into(),
        job: job.into(),
        payload_digest: vec![0; 32],
        payload_len: 0,
        priority: 0,
        max_attempts: 3,
        state: Stored::Requested,
        attempts: 0,
        claim_id: None,
        secret_digest: None,
        holder: None,
        claimed_us: None,
        expires_us: None,
        created_us: 1,
        updated_us: 1,
        last_error: None,
        due_us: None,
        parked: false,
        max_hold_us: None,
        backoff: None,
        provenance_at: None,
    }
}

/// A job is read again by the sequence number its connection wrote it
/// under, but only while the row there still carries its IDs: a row
/// removed, and its number taken by another job (SQLite reuses the
/// largest), or the job submitted again under a new number, are found
/// by their IDs.
#[test]
fn a_remembered_sequence_number_is_only_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let b = backend(dir.path());
    let mut t = b.begin_write().unwrap();
    let mut a = requested("a");
    a.seq = t.insert_job(&a, b"").unwrap();
    a.attempts = 1;
    t.update_job(&a).unwrap();
    assert_eq!(t.job("p", "a").unwrap(), Some(a.clone()));
    t.delete_jobs(std::slice::from_ref(&a)).unwrap();
    let mut other = requested("b");
    other.seq = t.insert_job(&other, b"").unwrap();
    assert_eq!(other.seq, a.seq, "the number was taken again");
    assert_eq!(t.job("p", "a").unwrap(), None);
    assert_eq!(t.job("p", "b").unwrap(), Some(other.clone()));
    let mut again = requested("a");
    again.seq = t.insert_job(&again, b"").unwrap();
    assert_ne!(again.seq, a.seq);
    assert_eq!(t.job("p", "a").unwrap(), Some(again));
    t.commit().unwrap();
}

#[test]
fn the_mark_goes_on_the_newest_event_else_in_meta() {
    let dir = tempfile::tempdir().unwrap();
    let b = backend(dir.path());
    // No event in the transaction: the mark goes to `meta`.
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 0);
    t.commit_with_mark(Some(10)).unwrap();
    assert_eq!(marks(&b), (10, None, 10));
    // An event appended: it carries the mark read, then the one committed.
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 10);
    t.append_event(&event(20)).unwrap();
    t.commit_with_mark(Some(25)).unwrap();
    assert_eq!(marks(&b), (10, Some(25), 25));
    // A commit that does not raise the mark leaves the newest event
    // holding the mark read.
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 25);
    t.append_event(&event(25)).unwrap();
    t.commit_with_mark(None).unwrap();
    assert_eq!(marks(&b), (10, Some(25), 25));
    // The event appended last was rolled back by its savepoint: the
    // mark goes to `meta`, the event before it keeps the mark read.
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 25);
    t.append_event(&event(30)).unwrap();
    t.savepoint().unwrap();
    t.append_event(&event(31)).unwrap();
    t.rollback_to_savepoint().unwrap();
    t.commit_with_mark(Some(40)).unwrap();
    assert_eq!(marks(&b), (40, Some(25), 40));
    // A rolled-back transaction changes neither.
    let mut t = b.begin_write().unwrap();
    t.high_water().unwrap();
    t.append_event(&event(50)).unwrap();
    t.set_high_water(50).unwrap();
    t.rollback().unwrap();
    assert_eq!(marks(&b), (40, Some(25), 40));
}

/// The times of the events `t` lists, in order.
fn times(t: &mut Box<dyn Txn>) -> Vec<i64> {
    t.events(None, 0, 100)
        .unwrap()
        .iter()
        .map(|e| e.at_us)
        .collect()
}

#[test]
fn an_appended_event_is_inserted_before_anything_that_could_see_it() {
    let dir = tempfile::tempdir().unwrap();
    let b = backend(dir.path());
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 0);
    t.append_event(&event(1)).unwrap();
    t.append_event(&event(2)).unwrap();
    assert_eq!(
        times(&mut t),
        [1, 2],
        "read in the same transaction, in order"
    );
    t.append_event(&event(3)).unwrap();
    t.savepoint().unwrap();
    t.append_event(&event(4)).unwrap();
    t.rollback_to_savepoint().unwrap();
    t.savepoint().unwrap();
    t.append_event(&event(5)).unwrap();
    t.release_savepoint().unwrap();
    t.append_event(&event(6)).unwrap();
    t.commit_with_mark(Some(60)).unwrap();
    // The event appended before the savepoint stays, the one inside
    // the rolled-back savepoint goes, and the last carries the mark.
    assert_eq!(times(&mut b.begin_read().unwrap()), [1, 2, 3, 5, 6]);
    assert_eq!(marks(&b), (0, Some(60), 60));
    // Transactions that end without a commit insert none of theirs,
    // and the next commit inserts only its own.
    let mut t = b.begin_write().unwrap();
    t.high_water().unwrap();
    t.append_event(&event(7)).unwrap();
    t.rollback().unwrap();
    let mut t = b.begin_write().unwrap();
    t.high_water().unwrap();
    t.append_event(&event(8)).unwrap();
    drop(t);
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 60);
    t.commit_with_mark(Some(70)).unwrap();
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 70);
    t.append_event(&event(9)).unwrap();
    t.commit().unwrap();
    assert_eq!(times(&mut b.begin_read().unwrap()), [1, 2, 3, 5, 6, 9]);
    assert_eq!(
        marks(&b),
        (70, Some(70), 70),
        "the event carries the mark read"
    );
}

/// What the connection `b` hands out next knows of the mark inside a
/// write transaction, without reading it.
fn known(b: &SqliteBackend) -> Option<i64> {
    let c = b.pool.take().unwrap();
    exec(&c, Hot::BeginImmediate).unwrap();
    let known = c.known_mark();
    exec(&c, Hot::Rollback).unwrap();
    b.pool.give_back(c);
    known
}

#[test]
fn a_connection_knows_the_mark_it_committed_until_the_file_changes() {
    let dir = tempfile::tempdir().unwrap();
    let b = backend(dir.path());
    // Another pool on the same file: another process's connection.
    let other = backend(dir.path());
    assert_eq!(known(&b), None, "nothing committed yet");
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 0);
    t.append_event(&event(20)).unwrap();
    t.commit_with_mark(Some(25)).unwrap();
    assert_eq!(known(&b), Some(25));
    assert_eq!(marks(&b), (0, Some(25), 25));
    // A commit that does not raise the mark leaves the mark read.
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 25);
    t.append_event(&event(25)).unwrap();
    t.commit_with_mark(None).unwrap();
    assert_eq!(known(&b), Some(25));
    // Another connection raises the mark: the first one reads it again.
    let mut t = other.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 25);
    t.commit_with_mark(Some(90)).unwrap();
    assert_eq!(known(&b), None, "another connection committed since");
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 90);
    t.commit_with_mark(Some(95)).unwrap();
    assert_eq!(known(&b), Some(95));
    // Any other commit of another connection (the mark untouched) also
    // makes it read again.
    let mut t = other.begin_write().unwrap();
    t.append_event(&event(96)).unwrap();
    t.commit().unwrap();
    assert_eq!(known(&b), None);
    assert_eq!(b.begin_write().unwrap().high_water().unwrap(), 95);
    // A commit of its own that does not say the mark it leaves (an
    // observed time persisted alone) forgets it.
    let mut t = b.begin_write().unwrap();
    t.set_high_water(120).unwrap();
    t.commit().unwrap();
    assert_eq!(known(&b), None);
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 120);
    t.commit_with_mark(Some(130)).unwrap();
    assert_eq!(known(&b), Some(130));
    // A rolled-back transaction changes nothing: the mark stays known.
    let mut t = b.begin_write().unwrap();
    assert_eq!(t.high_water().unwrap(), 130);
    t.append_event(&event(140)).unwrap();
    t.set_high_water(140).unwrap();
    t.rollback().unwrap();
    assert_eq!(known(&b), Some(130));
    assert_eq!(marks(&b).2, 130);
}

#[test]
fn facts_keep_their_order_across_insert_statements() {
    let dir = tempfile::tempdir().unwrap();
    let b = backend(dir.path());
    let owned: Vec<(String, String)> = (0..2 * FACTS_PER_INSERT + 3)
        .map(|i| (format!("k{i}"), format!("v{i}")))
        .collect();
    let pairs: Vec<(&str, &str)> = owned
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut t = b.begin_write().unwrap();
    t.insert_facts("p", "j", &pairs).unwrap();
    t.insert_facts("p", "one", &pairs[..1]).unwrap();
    t.insert_facts("p", "none", &[]).unwrap();
    t.commit().unwrap();
    let mut r = b.begin_read().unwrap();
    let got = r.facts("p", Some("j")).unwrap();
    let got: Vec<(&str, &str)> = got
        .iter()
        .map(|f| (f.key.as_str(), f.value.as_str()))
        .collect();
    assert_eq!(got, pairs);
    assert_eq!(r.facts("p", Some("one")).unwrap().len(), 1);
    assert!(r.facts("p", Some("none")).unwrap().is_empty());
    let ords: Vec<i64> = {
        let c = rusqlite::Connection::open(dir.path().join("t.db")).unwrap();
        let mut st = c
            .prepare("SELECT ord FROM facts WHERE job = 'j' ORDER BY ord")
            .unwrap();
        let rows = st.query_map([], |r| r.get(0)).unwrap();
        rows.map(|r| r.unwrap()).collect()
    };
    assert_eq!(ords, (0..pairs.len() as i64).collect::<Vec<_>>());
}
