//! TLS for the throwaway PostgreSQL server of `cargo xtask test` (used by
//! `crates/tenure/tests/pg_tls.rs`):
//!
//! - a throwaway CA and a server certificate for the name `localhost` only
//!   (SAN `DNS:localhost`, deliberately not `127.0.0.1`, so that connecting
//!   by IP is a host-name mismatch), plus an unrelated second CA, made with
//!   the `openssl` CLI; key mode 0600, owned by the server user;
//! - `ssl=on` with that certificate; plain connections keep working for
//!   everyone else (the default `host` rules match both);
//! - `pg_hba.conf` rules, before the defaults, for three test roles:
//!   `tenure_ssl_only` (TLS only), `tenure_nossl_only` (plain only) and
//!   `tenure_scram` (TLS + SCRAM only); the test creates the roles;
//! - the variables `TENURE_TEST_PG_TLS_URL`, `TENURE_TEST_PG_CA` and
//!   `TENURE_TEST_PG_OTHER_CA` for the `cargo test -p tenure` run.

use crate::util::{apt_install, output, run, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The certificate files of one server.
pub struct Files {
    /// Root that signed the server certificate.
    pub ca: PathBuf,
    /// An unrelated root (for the wrong-CA test).
    pub other_ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

const HBA_RULES: &str = "\
# tenure xtask: TLS test roles (crates/tenure/tests/pg_tls.rs)
hostssl   all tenure_ssl_only   127.0.0.1/32 trust
host      all tenure_ssl_only   127.0.0.1/32 reject
hostnossl all tenure_nossl_only 127.0.0.1/32 trust
host      all tenure_nossl_only 127.0.0.1/32 reject
hostssl   all tenure_scram      127.0.0.1/32 scram-sha-256
host      all tenure_scram      127.0.0.1/32 reject
";

fn openssl(dir: &Path, args: &[&str]) -> Result {
    output(Command::new("openssl").current_dir(dir).args(args)).map(|_| ())
}

fn self_signed_ca(dir: &Path, name: &str, cn: &str) -> Result {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "7",
            "-subj",
            &format!("/CN={cn}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    )
}

/// Make the certificates in `<dir>/tls` and add the test rules to
/// `<data>/pg_hba.conf` (after `initdb`, before the server starts).
pub fn prepare(dir: &Path, data: &Path, as_root: bool) -> Result<Files> {
    apt_install(&["openssl"])?;
    let tls = dir.join("tls");
    std::fs::create_dir_all(&tls).map_err(|e| format!("{}: {e}", tls.display()))?;
    self_signed_ca(&tls, "ca", "tenure xtask test CA")?;
    self_signed_ca(&tls, "other-ca", "tenure xtask unrelated CA")?;
    openssl(
        &tls,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    )?;
    std::fs::write(
        tls.join("server.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
         keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .map_err(|e| e.to_string())?;
    let serial = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(1);
    openssl(
        &tls,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-set_serial",
            &format!("0x{serial:x}"),
            "-days",
            "7",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    )?;
    let key = tls.join("server.key");
    if as_root {
        run(Command::new("chown").arg("-R").arg("nobody").arg(&tls))?;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("{}: {e}", key.display()))?;
    }
    // First matching line wins: the test rules go before initdb's defaults.
    let hba = data.join("pg_hba.conf");
    let old = std::fs::read_to_string(&hba).map_err(|e| format!("{}: {e}", hba.display()))?;
    std::fs::write(&hba, format!("{HBA_RULES}{old}"))
        .map_err(|e| format!("{}: {e}", hba.display()))?;
    Ok(Files {
        ca: tls.join("ca.pem"),
        other_ca: tls.join("other-ca.pem"),
        cert: tls.join("server.pem"),
        key,
    })
}

impl Files {
    /// The `postgres` options that turn TLS on.
    pub fn server_opts(&self) -> String {
        format!(
            " -c ssl=on -c ssl_cert_file={} -c ssl_key_file={}",
            self.cert.display(),
            self.key.display()
        )
    }

    /// The variables that enable `crates/tenure/tests/pg_tls.rs`.
    pub fn test_env(&self, url: &str) -> Vec<(&'static str, String)> {
        vec![
            ("TENURE_TEST_PG_TLS_URL", url.to_owned()),
            ("TENURE_TEST_PG_CA", self.ca.display().to_string()),
            (
                "TENURE_TEST_PG_OTHER_CA",
                self.other_ca.display().to_string(),
            ),
        ]
    }
}
