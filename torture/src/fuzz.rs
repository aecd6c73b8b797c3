//! Property-based fuzzing of every parser and validator that takes outside
//! input (cargo-fuzz needs a nightly toolchain, which this project does not
//! use): the token decoder, the duration parser, ID/holder/fact validation.
//! Each target runs `cases` generated inputs; a panic or a broken property is
//! a crash. Crashes found become regression cases in `REGRESSIONS`.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tenure::{Authority, ErrorCode, Options, Ttl};

/// Inputs that once broke a target (none so far); replayed first.
const REGRESSIONS: &[&str] = &[
    "",
    "tenure-lease-v1.",
    "tenure-lease-v1.AA",
    "1.5s",
    "0us",
    "24h1us",
];

fn target<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    f: impl Fn(S::Value) -> Result<(), TestCaseError>,
) -> Result<u64, String>
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let execs = std::cell::Cell::new(0u64);
    let r = runner.run(&strategy, |v| {
        execs.set(execs.get() + 1);
        f(v)
    });
    r.map_err(|e| format!("fuzz target {name} crashed: {e}"))?;
    Ok(execs.get())
}

pub fn run(cases: u32) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("tenure-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let auth = Authority::open(dir.join("fuzz.db"), &Options::new()).map_err(|e| e.to_string())?;
    auth.create_production("p").map_err(|e| e.to_string())?;
    let mut report = Vec::new();

    // Token decoder, through the public import path.
    for r in REGRESSIONS {
        let _ = auth.import_lease(r);
    }
    let token_like = prop_oneof![
        any::<String>(),
        "[a-z0-9.-]{0,40}",
        "tenure-lease-v[0-9]{0,12}\\.[A-Za-z0-9_-]{0,400}",
        proptest::collection::vec(any::<u8>(), 0..3000)
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ];
    let n = target("token decoder", cases, token_like, |s| {
        match auth.import_lease(&s) {
            Ok(_) => return Err(TestCaseError::fail("a random token was accepted")),
            Err(e) => prop_assert!(
                matches!(
                    e.code(),
                    ErrorCode::TokenMalformed
                        | ErrorCode::TokenTooLarge
                        | ErrorCode::TokenUnsupportedVersion
                        | ErrorCode::NotFound
                        | ErrorCode::StaleLease
                ),
                "unexpected {:?}",
                e.code()
            ),
        }
        Ok(())
    })?;
    report.push(format!("token decoder {n} execs"));

    // Duration parser.
    let dur_like = prop_oneof![
        any::<String>(),
        "[0-9]{0,14}(h|m|s|ms|us|µs|ns|d|)([0-9]{0,4}(h|m|s|ms|us))?",
        "[0-9.,+-]{0,12}[a-z]{0,3}"
    ];
    let n = target("duration parser", cases, dur_like, |s| {
        if let Ok(t) = s.parse::<Ttl>() {
            prop_assert!(t.as_micros() >= 1 && t.as_micros() <= Ttl::MAX_MICROS);
            prop_assert_eq!(t.to_string().parse::<Ttl>().unwrap(), t);
        }
        Ok(())
    })?;
    report.push(format!("duration parser {n} execs"));
    let n = target("duration micros", cases, any::<i64>(), |us| {
        let r = Ttl::from_micros(us);
        prop_assert_eq!(r.is_ok(), (1..=Ttl::MAX_MICROS).contains(&us));
        Ok(())
    })?;
    report.push(format!("duration micros {n} execs"));

    // IDs, holders, facts.
    let n = target(
        "id/holder/fact validation",
        cases,
        (
            any::<String>(),
            any::<String>(),
            proptest::collection::vec((any::<String>(), any::<String>()), 0..70),
        ),
        |(id, holder, facts)| {
            let ok = tenure::validate::id("job", &id).is_ok();
            if ok {
                prop_assert!(
                    !id.is_empty() && id.len() <= 128 && id.is_ascii() && !id.contains('/')
                );
            }
            let _ = tenure::validate::holder(&holder);
            let _ = tenure::validate::facts(&facts);
            Ok(())
        },
    )?;
    report.push(format!("id/holder/fact validation {n} execs"));

    let _ = std::fs::remove_dir_all(&dir);
    println!("fuzz: {} ; 0 crashes", report.join(", "));
    Ok(())
}
