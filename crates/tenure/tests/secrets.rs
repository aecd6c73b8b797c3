//! Invariant 4: secrets never appear in listings, events, errors, Debug
//! output or the store; the store keeps only a digest.
mod common;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use common::*;
use tenure::*;

fn secret_of(token: &Token) -> Vec<u8> {
    let body = token.expose().split_once('.').unwrap().1;
    let raw = URL_SAFE_NO_PAD.decode(body).unwrap();
    raw[raw.len() - 32..].to_vec()
}

fn needles(secret: &[u8]) -> Vec<Vec<u8>> {
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let mut v = vec![
        secret.to_vec(),
        hex.as_bytes().to_vec(),
        hex.to_uppercase().into_bytes(),
    ];
    for e in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        // Any 24-byte-aligned window's encoding is a substring of any
        // encoding of the secret, whatever comes before it.
        v.push(e.encode(secret).into_bytes());
        v.push(e.encode(&secret[3..27]).into_bytes());
    }
    v
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn no_secret_anywhere() {
    let env = Env::with_jobs(6, 2);
    let a = &env.auth;
    let mut tokens = Vec::new();
    let mut texts: Vec<String> = Vec::new();

    let l1 = a.claim("p", "j0", "w1", secs(10)).unwrap();
    let l2 = a.claim_next("p", "w2", secs(10)).unwrap();
    let mut e = a.edit().unwrap();
    let l3 = e.claim_next("p", "w3", secs(10)).unwrap();
    texts.push(format!("{l3:?} {e:?}"));
    e.complete(&l3, &[Fact::new("k", "v")]).unwrap();
    e.commit().unwrap();
    let l4 = a.claim_next("p", "w4", secs(10)).unwrap();
    for l in [&l1, &l2, &l4] {
        tokens.push(l.export_token().unwrap());
    }
    let imported = a.import_lease(tokens[0].expose()).unwrap();
    l1.renew(secs(20)).unwrap();
    l2.fail("because", false).unwrap();
    texts.push(format!(
        "{l1:?} {l2:?} {l4:?} {imported:?} {a:?} {:?}",
        tokens[0]
    ));
    // Failures of every kind produce messages: collect them.
    let mut errs = vec![
        l2.complete(&[]).unwrap_err(),
        a.claim("p", "j0", "x", secs(1)).unwrap_err(),
        a.import_lease("tenure-lease-v1.AAAA").unwrap_err(),
    ];
    env.clock.advance(30_000_000);
    errs.push(l1.renew(secs(10)).unwrap_err());
    errs.push(a.import_lease(tokens[0].expose()).unwrap_err());
    let l5 = a.claim("p", "j0", "w5", secs(10)).unwrap();
    tokens.push(l5.export_token().unwrap());
    errs.push(l1.complete(&[]).unwrap_err());
    errs.push(a.import_lease(tokens[0].expose()).unwrap_err());
    a.cancel("p", "j0").unwrap();
    errs.push(l5.complete(&[]).unwrap_err());
    errs.push(a.import_lease(tokens[3].expose()).unwrap_err());
    for e in &errs {
        texts.push(format!("{e} {e:?}"));
    }
    texts.push(format!("{:?}", a.events(0, MAX_PAGE).unwrap()));
    texts.push(format!("{:?}", a.jobs("p", &ListQuery::default()).unwrap()));
    texts.push(format!("{:?}", a.job("p", "j0").unwrap()));
    texts.push(format!("{:?}", a.production_facts("p").unwrap()));
    texts.push(format!("{:?}", a.check().unwrap()));
    let all_text = texts.join("\n");
    assert!(all_text.contains("w1") && all_text.contains(&l1.claim_id().to_string()));

    let path = env.path();
    let mut files = Vec::new();
    if let Some(db) = &env.pg {
        // PostgreSQL: every row of every tenure table, as text (bytea in
        // hex) and as raw bytes of every bytea column.
        files = pg_dump(&db.url);
    }
    for suffix in ["", "-wal", "-shm"] {
        let p = format!("{}{suffix}", path.display());
        if let Ok(b) = std::fs::read(&p) {
            files.push((p, b));
        }
    }
    assert!(!files.is_empty());
    let mut scanned = 0;
    for t in &tokens {
        let secret = secret_of(t);
        assert!(!contains(all_text.as_bytes(), t.expose().as_bytes()));
        for n in needles(&secret) {
            scanned += 1;
            assert!(
                !contains(all_text.as_bytes(), &n),
                "secret form found in observable text"
            );
            for (name, bytes) in &files {
                assert!(!contains(bytes, &n), "secret form found in {name}");
            }
        }
    }
    assert!(scanned >= 40);
}

/// Every tenure table of a PostgreSQL test store, row by row.
fn pg_dump(url: &str) -> Vec<(String, Vec<u8>)> {
    let mut c = pg::client(url);
    let tables: Vec<String> = c
        .query(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'tenure' ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(tables.len() >= 7, "tables: {tables:?}");
    let mut out = Vec::new();
    for t in &tables {
        let mut bytes = Vec::new();
        for r in c
            .query(&format!("SELECT x::text FROM tenure.{t} x"), &[])
            .unwrap()
        {
            bytes.extend_from_slice(r.get::<_, String>(0).as_bytes());
            bytes.push(b'\n');
        }
        out.push((format!("table {t}"), bytes));
    }
    let mut raw = Vec::new();
    for r in c
        .query(
            "SELECT p.payload, j.payload_digest, coalesce(j.secret_digest, '')
             FROM tenure.jobs j JOIN tenure.payloads p USING (production, job)",
            &[],
        )
        .unwrap()
    {
        for i in 0..3 {
            raw.extend_from_slice(&r.get::<_, Vec<u8>>(i));
        }
    }
    assert!(!raw.is_empty());
    out.push((
        "bytea columns of tenure.jobs and tenure.payloads".into(),
        raw,
    ));
    out
}
