//! TLS for the PostgreSQL backend: the libpq `sslmode` / `sslrootcert` URL
//! parameters, certificate verification with rustls (pure Rust, `ring`
//! provider), and the connection attempts each mode makes.
//!
//! # URL parameters
//!
//! The store address is a libpq-style URL; two TLS parameters are handled
//! here and removed before the rest goes to `postgres::Config` (which does
//! not know `verify-ca`, `verify-full` or `sslrootcert`):
//!
//! - `sslmode=disable|allow|prefer|require|verify-ca|verify-full`, with
//!   libpq's meaning:
//!
//!   | mode          | encrypted                          | server certificate checked              |
//!   |---------------|------------------------------------|-----------------------------------------|
//!   | `disable`     | never                              | -                                       |
//!   | `allow`       | only if the server refuses plain   | no (chain only if `sslrootcert=PATH`)   |
//!   | `prefer`      | if the server offers TLS           | no (chain only if `sslrootcert=PATH`)   |
//!   | `require`     | always                             | no (chain only if `sslrootcert=PATH`)   |
//!   | `verify-ca`   | always                             | chain to a trusted root                 |
//!   | `verify-full` | always                             | chain **and** host name                 |
//!
//!   `allow` connects without TLS first and retries with TLS if the server
//!   rejects that connection; `prefer` does the opposite (TLS first, plain if
//!   the server answers that it has no TLS or rejects the TLS session). A
//!   certificate that fails verification is never a reason to fall back to
//!   a plain connection.
//! - `sslrootcert=PATH`: a PEM file with the trusted root certificate(s)
//!   (the managed service's CA bundle, a private CA). Only these roots are
//!   trusted. With `require`, `allow` and `prefer` a given root file makes
//!   every TLS session verify the chain, as in libpq (`require` then behaves
//!   like `verify-ca`).
//! - `sslrootcert=system`: the operating system's trust store (read with
//!   `rustls-native-certs`: the OpenSSL certificate files, honouring
//!   `SSL_CERT_FILE` / `SSL_CERT_DIR`). As in libpq 16 it implies
//!   `verify-full` and refuses any weaker mode.
//! - `verify-ca` / `verify-full` without `sslrootcert` trust the system store
//!   (libpq would look for `~/.postgresql/root.crt` instead; tenure reads no
//!   file that the URL does not name).
//!
//! # The default (decision)
//!
//! Without `sslmode`: **`verify-full` if `sslrootcert` is given**, otherwise
//! libpq's `prefer` (TLS without verification when the server offers it,
//! plain otherwise). `prefer` keeps plain local servers and existing URLs
//! working and protects only against passive eavesdropping; a URL that names
//! a root certificate obviously wants it checked, so naming one is all it
//! takes to get the secure mode (`?sslrootcert=/etc/tenure/ca.pem` or
//! `?sslrootcert=system`). The weaker modes must be written out. Environment
//! variables (`PGSSLMODE`, ...) are not read, like every other libpq
//! variable in this backend: the URL is the whole configuration.
//!
//! Client certificates (`sslcert`, `sslkey`), CRLs and the other `ssl*`
//! parameters are not supported and are refused. `sslnegotiation=direct`
//! (PostgreSQL 17) is passed through; the connector offers the ALPN protocol
//! `postgresql` that it requires.
//!
//! # Errors
//!
//! A malformed or unknown parameter value, an unreadable or empty root file:
//! [`Error::InvalidArgument`], raised when the authority is opened. A failed
//! handshake or a refused connection: [`Error::Store`], naming the mode and
//! the reason (unknown issuer, name mismatch, server without TLS, ...). No
//! message ever contains the URL's password: parameter errors name only the
//! parameter and its (non-secret) value.
//!
//! # Channel binding
//!
//! TLS sessions export `tls-server-end-point` channel binding data (RFC
//! 5929), so SCRAM authentication over TLS uses `SCRAM-SHA-256-PLUS` and a
//! URL may ask for `channel_binding=require`.
//!
//! # Dependencies (decision)
//!
//! - rustls with the `ring` provider (no aws-lc: no cmake, no NASM), TLS 1.2
//!   and 1.3, no logging feature.
//! - A small `MakeTlsConnect` here instead of `tokio-postgres-rustls`: that
//!   crate (0.14) pulls `x509-cert`, `der`, `spki`, `const-oid` and a second
//!   `sha2` only to hash the certificate for channel binding, which
//!   [`server_end_point`] does in a few lines with the `sha2` already used by
//!   the core; and it has no chain-only (`verify-ca`) verifier anyway.
//! - System roots from `rustls-native-certs` rather than the compiled-in
//!   `webpki-roots`: the OS store follows the distribution's updates and the
//!   administrator's own CAs (a corporate root) without a tenure release,
//!   and it is read only when a URL asks for it. The managed services'
//!   private CAs (RDS, Cloud SQL, Azure) are in neither store: they come
//!   with `sslrootcert=PATH`.

use super::url::{bad, printable, Mode, Params, Roots};
use crate::error::{Error, Result};
use postgres::config::SslMode;
use postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use postgres::{Client, Socket};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use sha2::{Digest, Sha256, Sha384, Sha512};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The TLS setup of one store, built once when the authority opens.
pub(crate) struct Tls {
    params: Params,
    /// `None` for `sslmode=disable`.
    config: Option<Arc<ClientConfig>>,
}

impl Tls {
    /// Load the roots and build the rustls configuration.
    pub(crate) fn new(params: Params) -> Result<Tls> {
        if params.mode == Mode::Disable {
            return Ok(Tls {
                params,
                config: None,
            });
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = match &params.roots {
            None => Arc::new(AnyCertificate(provider.clone())),
            Some(roots) => {
                let store = Arc::new(load_roots(roots)?);
                let webpki = WebPkiServerVerifier::builder_with_provider(store, provider.clone())
                    .build()
                    .map_err(|e| bad(format!("cannot use the root certificates: {e}")))?;
                if params.check_name {
                    webpki
                } else {
                    Arc::new(ChainOnly(webpki))
                }
            }
        };
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Internal(format!("TLS setup: {e}")))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"postgresql".to_vec()];
        Ok(Tls {
            params,
            config: Some(Arc::new(config)),
        })
    }
}

fn load_roots(roots: &Roots) -> Result<RootCertStore> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            let shown = path.display();
            let iter = CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(format!("cannot read sslrootcert file {shown}: {e}")))?;
            for cert in iter {
                let cert =
                    cert.map_err(|e| bad(format!("sslrootcert file {shown} is not PEM: {e}")))?;
                store.add(cert).map_err(|e| {
                    bad(format!(
                        "sslrootcert file {shown} holds an unusable certificate: {e}"
                    ))
                })?;
            }
            if store.is_empty() {
                return Err(bad(format!(
                    "sslrootcert file {shown} holds no PEM certificate"
                )));
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            // Unparseable system certificates are skipped, as every TLS client does.
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                let why = found
                    .errors
                    .first()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default();
                return Err(bad(format!(
                    "no trusted root certificate found in the system store{why}; install the \
                     system CA certificates or give sslrootcert=PATH"
                )));
            }
        }
    }
    Ok(store)
}

/// verify-ca: the chain must reach a trusted root; the name is not checked.
///
/// The WebPKI verifier checks the chain first and the name last, so its
/// "not valid for name" answer means that everything else passed.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// allow / prefer / require without a root file: any certificate (libpq's
/// behaviour); the handshake signatures are still checked, so the session
/// is encrypted to whoever holds the presented certificate's key.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The `MakeTlsConnect` handed to rust-postgres for one connection attempt.
struct Connector {
    config: Arc<ClientConfig>,
    /// Set once a TLS handshake was started (the server accepted TLS).
    started: Arc<AtomicBool>,
}

/// A connector for one server name.
struct HostConnector {
    config: Arc<ClientConfig>,
    host: String,
    started: Arc<AtomicBool>,
}

impl MakeTlsConnect<Socket> for Connector {
    type Stream = Stream;
    type TlsConnect = HostConnector;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<HostConnector> {
        // Called for every connection, also ones that never start TLS (Unix
        // sockets): an unusable name only fails once TLS is really attempted.
        Ok(HostConnector {
            config: self.config.clone(),
            host: domain.to_owned(),
            started: self.started.clone(),
        })
    }
}

type Handshake = Pin<Box<dyn Future<Output = io::Result<Stream>> + Send>>;

impl TlsConnect<Socket> for HostConnector {
    type Stream = Stream;
    type Error = io::Error;
    type Future = Handshake;

    fn connect(self, socket: Socket) -> Handshake {
        self.started.store(true, Ordering::SeqCst);
        Box::pin(async move {
            let name = ServerName::try_from(self.host.clone()).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "the host {} is not a valid DNS name or IP address for TLS",
                        printable(&self.host)
                    ),
                )
            })?;
            let tls = tokio_rustls::TlsConnector::from(self.config)
                .connect(name, socket)
                .await?;
            Ok(Stream(tls))
        })
    }
}

/// A TLS session to the server.
struct Stream(tokio_rustls::client::TlsStream<Socket>);

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

impl TlsStream for Stream {
    fn channel_binding(&self) -> ChannelBinding {
        let (_, session) = self.0.get_ref();
        match session
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(|c| server_end_point(c.as_ref()))
        {
            Some(hash) => ChannelBinding::tls_server_end_point(hash),
            None => ChannelBinding::none(),
        }
    }
}

/// RFC 5929 `tls-server-end-point`: the certificate hashed with the hash of
/// its signature algorithm (SHA-256 for MD5 and SHA-1). `None` for
/// algorithms without a defined hash (Ed25519, RSA-PSS): no channel binding.
fn server_end_point(cert: &[u8]) -> Option<Vec<u8>> {
    // Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm SEQUENCE { OID, .. }, .. }
    let (_, cert_body, _) = der(cert, 0x30)?;
    let (_, _, after_tbs) = der(cert_body, 0x30)?;
    let (_, alg, _) = der(after_tbs, 0x30)?;
    let (_, oid, _) = der(alg, 0x06)?;
    const RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01];
    const ECDSA: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04];
    enum H {
        S256,
        S384,
        S512,
    }
    let h = match oid {
        [r @ .., 0x04 | 0x05 | 0x0b] if r == RSA => H::S256,
        [r @ .., 0x0c] if r == RSA => H::S384,
        [r @ .., 0x0d] if r == RSA => H::S512,
        [e @ .., 0x01] if e == ECDSA => H::S256,
        [e @ .., 0x03, 0x02] if e == ECDSA => H::S256,
        [e @ .., 0x03, 0x03] if e == ECDSA => H::S384,
        [e @ .., 0x03, 0x04] if e == ECDSA => H::S512,
        _ => return None,
    };
    Some(match h {
        H::S256 => Sha256::digest(cert).to_vec(),
        H::S384 => Sha384::digest(cert).to_vec(),
        H::S512 => Sha512::digest(cert).to_vec(),
    })
}

/// One DER element with the expected tag: (tag, content, rest).
fn der(buf: &[u8], tag: u8) -> Option<(u8, &[u8], &[u8])> {
    let (&t, rest) = buf.split_first()?;
    if t != tag {
        return None;
    }
    let (&l, mut rest) = rest.split_first()?;
    let len = if l < 0x80 {
        usize::from(l)
    } else {
        let n = usize::from(l & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return None;
    }
    Some((t, &rest[..len], &rest[len..]))
}

/// Open one connection as the store's TLS parameters say.
///
/// `config` is the parsed URL (without the TLS parameters); its own
/// `ssl_mode` is overridden per attempt.
pub(crate) fn connect(config: &postgres::Config, tls: &Tls) -> Result<Client> {
    let mode = tls.params.mode;
    let Some(rustls_config) = tls.config.clone() else {
        return attempt(config, SslMode::Disable, None).map_err(|e| failed(mode, &e));
    };
    let with_tls = |ssl: SslMode| {
        let started = Arc::new(AtomicBool::new(false));
        let r = attempt(
            config,
            ssl,
            Some(Connector {
                config: rustls_config.clone(),
                started: started.clone(),
            }),
        );
        (r, started.load(Ordering::SeqCst))
    };
    match mode {
        Mode::Disable => unreachable!("disable has no TLS configuration"),
        Mode::Allow => match attempt(config, SslMode::Disable, None) {
            Ok(c) => Ok(c),
            // The server refused the plain session (e.g. a `hostssl` rule): retry with TLS.
            Err(plain) if plain.as_db_error().is_some() && !transient(&plain) => {
                match with_tls(SslMode::Require).0 {
                    Ok(c) => Ok(c),
                    Err(e) => Err(Error::Store(format!(
                    "cannot connect to the PostgreSQL server (sslmode=allow): without TLS: {}; \
                     with TLS: {}",
                    describe(&plain),
                    describe(&e)
                ))),
                }
            }
            Err(e) => Err(failed(mode, &e)),
        },
        Mode::Prefer => match with_tls(SslMode::Prefer) {
            (Ok(c), _) => Ok(c),
            // The server accepted TLS but then refused the session (e.g. a
            // `hostnossl` rule): retry without TLS, as libpq does.
            (Err(e), true) if e.as_db_error().is_some() && !transient(&e) => {
                attempt(config, SslMode::Disable, None).map_err(|plain| {
                    Error::Store(format!(
                        "cannot connect to the PostgreSQL server (sslmode=prefer): with TLS: \
                         {}; without TLS: {}",
                        describe(&e),
                        describe(&plain)
                    ))
                })
            }
            (Err(e), _) => Err(failed(mode, &e)),
        },
        Mode::Require | Mode::VerifyCa | Mode::VerifyFull => {
            with_tls(SslMode::Require).0.map_err(|e| failed(mode, &e))
        }
    }
}

fn attempt(
    config: &postgres::Config,
    ssl: SslMode,
    connector: Option<Connector>,
) -> Result<Client, postgres::Error> {
    let mut config = config.clone();
    config.ssl_mode(ssl);
    match connector {
        Some(c) => config.connect(c),
        None => config.connect(postgres::NoTls),
    }
}

/// A refusal that says nothing about the TLS mode (the server is starting,
/// stopping, or out of connection slots): never answered by trying the
/// other mode.
fn transient(e: &postgres::Error) -> bool {
    super::retry::no_slot(e) || super::retry::is_lost(e)
}

fn failed(mode: Mode, e: &postgres::Error) -> Error {
    let what = format!(
        "cannot connect to the PostgreSQL server (sslmode={}): {}",
        mode.name(),
        describe(e)
    );
    if super::retry::no_slot(e) {
        super::retry::busy(what)
    } else if super::retry::is_lost(e) {
        super::retry::lost(what)
    } else {
        Error::Store(what)
    }
}

/// The connection error with its causes (the rustls reason of a failed
/// handshake sits in the source chain). rust-postgres never puts the
/// configuration (so never the password) into its errors.
fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!(
            "the server refused the connection: {} (SQLSTATE {})",
            db.message(),
            db.code().code()
        );
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let c = cause.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        source = cause.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_file_problems_are_invalid_arguments() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.pem");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "no certificate here\n").unwrap();
        for path in [&missing, &empty] {
            let params = Params {
                mode: Mode::VerifyFull,
                roots: Some(Roots::File(path.clone())),
                check_name: true,
            };
            match Tls::new(params) {
                Err(Error::InvalidArgument(m)) => {
                    assert!(m.contains("sslrootcert file"), "{m}")
                }
                Err(e) => panic!("{e:?}"),
                Ok(_) => panic!("{} accepted", path.display()),
            }
        }
    }

    #[test]
    fn tls_server_end_point_hash_follows_the_signature_algorithm() {
        // A minimal DER skeleton: SEQUENCE { SEQUENCE {}, SEQUENCE { OID } }.
        fn cert(oid: &[u8]) -> Vec<u8> {
            let mut alg = vec![0x06, oid.len() as u8];
            alg.extend_from_slice(oid);
            let mut body = vec![0x30, 0x00, 0x30, alg.len() as u8];
            body.extend_from_slice(&alg);
            let mut c = vec![0x30, body.len() as u8];
            c.extend_from_slice(&body);
            c
        }
        let rsa256 = cert(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b]);
        assert_eq!(
            server_end_point(&rsa256).unwrap(),
            Sha256::digest(&rsa256).to_vec()
        );
        let rsa_sha1 = cert(&[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05]);
        assert_eq!(server_end_point(&rsa_sha1).unwrap().len(), 32);
        let ec384 = cert(&[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03]);
        assert_eq!(
            server_end_point(&ec384).unwrap(),
            Sha384::digest(&ec384).to_vec()
        );
        let ed25519 = cert(&[0x2b, 0x65, 0x70]);
        assert_eq!(server_end_point(&ed25519), None);
        assert_eq!(server_end_point(&[0x30, 0x05, 0x01]), None);
        assert_eq!(server_end_point(&[]), None);
    }
}
