//! TLS to PostgreSQL (`sslmode`, `sslrootcert` in the store URL), against a
//! real TLS-enabled server. Runs when `cargo xtask test` provides one:
//!
//! - `TENURE_TEST_PG_TLS_URL`: maintenance URL of a server with `ssl=on`
//!   whose certificate is valid for the name `localhost` only (not for
//!   `127.0.0.1`), listening on 127.0.0.1;
//! - `TENURE_TEST_PG_CA`: the PEM root that signed that certificate;
//! - `TENURE_TEST_PG_OTHER_CA`: an unrelated PEM root;
//! - `pg_hba.conf` rules: role `tenure_ssl_only` only over TLS,
//!   `tenure_nossl_only` only without TLS, `tenure_scram` only over TLS with
//!   SCRAM (the roles themselves are created here).
//!
//! Skipped, with the reason printed, when those variables are not set.
//! Whether a session is encrypted is read from the server (`pg_stat_ssl`)
//! for the authority's own connections, found by a unique
//! `application_name`.
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use tenure::{Authority, Error, ErrorCode, Options};

/// The URL password in every test; must never appear in any error text.
const PASSWORD: &str = "Pw-n0t-In-Errors-7Q";
const SCRAM_PASSWORD: &str = "Scram-Pw-n0t-In-Errors-4K";

struct Env {
    admin: String,
    port: String,
    ca: String,
    other_ca: String,
}

fn env() -> Option<&'static Env> {
    static ENV: OnceLock<Option<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let admin = std::env::var("TENURE_TEST_PG_TLS_URL").ok()?;
        let ca = std::env::var("TENURE_TEST_PG_CA").ok()?;
        let other_ca = std::env::var("TENURE_TEST_PG_OTHER_CA").ok()?;
        // postgres://user@host:port/db
        let authority = admin.split("://").nth(1)?.split('/').next()?;
        let port = authority.rsplit(':').next()?.to_owned();
        let mut c = postgres::Client::connect(&admin, postgres::NoTls)
            .expect("connect to TENURE_TEST_PG_TLS_URL");
        c.batch_execute(&format!(
            "DO $$ BEGIN
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tenure_ssl_only') THEN
                 CREATE ROLE tenure_ssl_only LOGIN SUPERUSER; END IF;
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tenure_nossl_only') THEN
                 CREATE ROLE tenure_nossl_only LOGIN SUPERUSER; END IF;
               IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'tenure_scram') THEN
                 CREATE ROLE tenure_scram LOGIN SUPERUSER; END IF;
             END $$;
             SET password_encryption = 'scram-sha-256';
             ALTER ROLE tenure_scram PASSWORD '{SCRAM_PASSWORD}';"
        ))
        .expect("create the test roles");
        Some(Env {
            admin,
            port,
            ca,
            other_ca,
        })
    })
    .as_ref()
}

fn skip() -> Option<&'static Env> {
    let e = env();
    if e.is_none() {
        eprintln!(
            "skipped: no TLS-enabled PostgreSQL server (set TENURE_TEST_PG_TLS_URL, \
             TENURE_TEST_PG_CA and TENURE_TEST_PG_OTHER_CA, as `cargo xtask test` does)"
        );
    }
    e
}

/// A fresh database, dropped with this value.
struct Db {
    env: &'static Env,
    name: String,
}

impl Db {
    fn new(env: &'static Env) -> Db {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "tls_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        admin(env)
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        Db { env, name }
    }

    /// A store URL: `user` at `host` (connecting to 127.0.0.1 whatever the
    /// name, so `localhost` never goes to ::1) with extra parameters.
    fn url(&self, user: &str, password: &str, host: &str, params: &str) -> String {
        format!(
            "postgres://{user}:{password}@{host}:{}/{}?hostaddr=127.0.0.1&{params}",
            self.env.port, self.name
        )
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = admin(self.env).batch_execute(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

fn admin(env: &Env) -> postgres::Client {
    postgres::Client::connect(&env.admin, postgres::NoTls).unwrap()
}

fn app_name() -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "tls_test_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether each server session of `app` is encrypted, per `pg_stat_ssl`.
fn sessions_encrypted(env: &Env, app: &str) -> Vec<bool> {
    admin(env)
        .query(
            "SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a ON a.pid = s.pid \
             WHERE a.application_name = $1",
            &[&app],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Open with `params`, use the store, and return whether its sessions are encrypted.
fn open_and_check(env: &Env, url_of: impl Fn(&str) -> String) -> Result<bool, Error> {
    let app = app_name();
    let url = url_of(&format!("application_name={app}"));
    let auth = Authority::open(&url, &Options::new())?;
    auth.create_production("tls")?;
    assert_eq!(auth.productions()?.len(), 1);
    let debug = format!("{auth:?}");
    assert!(!debug.contains(PASSWORD), "{debug}");
    let seen = sessions_encrypted(env, &app);
    assert!(!seen.is_empty(), "the authority keeps an idle session");
    assert!(
        seen.iter().all(|&s| s == seen[0]),
        "mixed sessions: {seen:?}"
    );
    drop(auth);
    Ok(seen[0])
}

/// The error of a refused open: its code, and its texts checked for the password.
fn refused(url: &str) -> (ErrorCode, String) {
    let e = Authority::open(url, &Options::new()).expect_err(url);
    let text = format!("{e} / {e:?}");
    assert!(!text.contains(PASSWORD), "password in error: {text}");
    assert!(!text.contains(SCRAM_PASSWORD), "password in error: {text}");
    (e.code(), text)
}

#[test]
fn verify_full_with_the_right_root_is_encrypted() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    let ca = &env.ca;
    let encrypted = open_and_check(env, |p| {
        db.url(
            "postgres",
            PASSWORD,
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}&{p}"),
        )
    })
    .unwrap();
    assert!(encrypted);
    // Naming a root alone means verify-full (the documented default).
    let encrypted = open_and_check(env, |p| {
        db.url(
            "postgres",
            PASSWORD,
            "localhost",
            &format!("sslrootcert={ca}&{p}"),
        )
    })
    .unwrap();
    assert!(encrypted);
    let (code, text) = refused(&db.url(
        "postgres",
        PASSWORD,
        "127.0.0.1",
        &format!("sslrootcert={ca}"),
    ));
    assert_eq!(code, ErrorCode::Store, "{text}");
}

#[test]
fn an_unrelated_root_is_a_store_error() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    for mode in ["verify-full", "verify-ca", "require", "prefer"] {
        let (code, text) = refused(&db.url(
            "postgres",
            PASSWORD,
            "localhost",
            &format!("sslmode={mode}&sslrootcert={}", env.other_ca),
        ));
        assert_eq!(code, ErrorCode::Store, "{mode}: {text}");
        assert!(text.contains(&format!("sslmode={mode}")), "{text}");
        assert!(text.contains("UnknownIssuer"), "{mode}: {text}");
    }
    // The system store (verify-full without a root file, or `system`) does
    // not hold the throwaway CA: refused as an unknown issuer (or, on a
    // machine without any system roots, as an unusable argument).
    for params in ["sslmode=verify-full", "sslrootcert=system"] {
        let (code, text) = refused(&db.url("postgres", PASSWORD, "localhost", params));
        match code {
            ErrorCode::Store => assert!(text.contains("UnknownIssuer"), "{text}"),
            ErrorCode::InvalidArgument => assert!(text.contains("system store"), "{text}"),
            other => panic!("{params}: {other:?}: {text}"),
        }
    }
}

#[test]
fn host_name_mismatch_fails_verify_full_but_not_verify_ca() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    let ca = &env.ca;
    let (code, text) = refused(&db.url(
        "postgres",
        PASSWORD,
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    ));
    assert_eq!(code, ErrorCode::Store, "{text}");
    assert!(text.contains("not valid for name"), "{text}");
    let encrypted = open_and_check(env, |p| {
        db.url(
            "postgres",
            PASSWORD,
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={ca}&{p}"),
        )
    })
    .unwrap();
    assert!(encrypted);
}

#[test]
fn require_and_the_default_encrypt_without_verification() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    for params in ["sslmode=require", "sslmode=prefer", "sslmode=allow", ""] {
        // allow: plain first, and this server accepts plain for `postgres`.
        let want = params != "sslmode=allow";
        let encrypted = open_and_check(env, |p| {
            db.url("postgres", PASSWORD, "127.0.0.1", &format!("{params}&{p}"))
        })
        .unwrap();
        assert_eq!(encrypted, want, "{params:?}");
    }
    let encrypted = open_and_check(env, |p| {
        db.url(
            "postgres",
            PASSWORD,
            "127.0.0.1",
            &format!("sslmode=disable&{p}"),
        )
    })
    .unwrap();
    assert!(!encrypted);
}

#[test]
fn hostssl_only_refuses_disable_and_allow_retries_with_tls() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    let (code, text) =
        refused(&db.url("tenure_ssl_only", PASSWORD, "localhost", "sslmode=disable"));
    assert_eq!(code, ErrorCode::Store, "{text}");
    assert!(text.contains("pg_hba.conf"), "{text}");
    for mode in ["allow", "prefer", "require"] {
        let encrypted = open_and_check(env, |p| {
            db.url(
                "tenure_ssl_only",
                PASSWORD,
                "localhost",
                &format!("sslmode={mode}&{p}"),
            )
        })
        .unwrap();
        assert!(encrypted, "{mode}");
    }
}

#[test]
fn hostnossl_only_refuses_require_and_prefer_falls_back_to_plain() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    for mode in ["require", "verify-full"] {
        let (code, text) = refused(&db.url(
            "tenure_nossl_only",
            PASSWORD,
            "localhost",
            &format!("sslmode={mode}&sslrootcert={}", env.ca),
        ));
        assert_eq!(code, ErrorCode::Store, "{text}");
        assert!(text.contains("pg_hba.conf"), "{text}");
    }
    for mode in ["prefer", "allow"] {
        let encrypted = open_and_check(env, |p| {
            db.url(
                "tenure_nossl_only",
                PASSWORD,
                "localhost",
                &format!("sslmode={mode}&{p}"),
            )
        })
        .unwrap();
        assert!(!encrypted, "{mode}");
    }
}

#[test]
fn scram_over_verified_tls_with_channel_binding() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    let ca = &env.ca;
    let encrypted = open_and_check(env, |p| {
        db.url(
            "tenure_scram",
            SCRAM_PASSWORD,
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}&channel_binding=require&{p}"),
        )
    })
    .unwrap();
    assert!(encrypted);
    // A wrong password: refused by the server, and no password in the text.
    let (code, text) = refused(&db.url(
        "tenure_scram",
        PASSWORD,
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}&channel_binding=require"),
    ));
    assert_eq!(code, ErrorCode::Store, "{text}");
    assert!(text.contains("password authentication failed"), "{text}");
    // The password as a URL parameter is hidden as well.
    let url = format!(
        "postgres://tenure_scram@localhost:{}/{}?hostaddr=127.0.0.1&password={PASSWORD}&\
         sslrootcert={ca}",
        env.port, db.name
    );
    let (code, text) = refused(&url);
    assert_eq!(code, ErrorCode::Store, "{text}");
}

#[test]
fn bad_tls_parameters_are_invalid_arguments() {
    let Some(env) = skip() else { return };
    let db = Db::new(env);
    let missing = format!("{}.missing", env.ca);
    for params in [
        "sslmode=verify".to_owned(),
        "sslmode=VERIFY-FULL".to_owned(),
        "sslmode=require&sslmode=disable".to_owned(),
        "sslcert=/tmp/client.pem".to_owned(),
        format!("sslrootcert={missing}"),
        "sslmode=require&sslrootcert=system".to_owned(),
    ] {
        let (code, text) = refused(&db.url("postgres", PASSWORD, "localhost", &params));
        assert_eq!(code, ErrorCode::InvalidArgument, "{params}: {text}");
    }
}
