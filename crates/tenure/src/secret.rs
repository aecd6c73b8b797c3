//! Lease secrets: 32 bytes from the OS CSPRNG, zeroized on drop, never printed.
//!
//! The store keeps only [`Secret::digest`] (SHA-256 with a domain prefix) and
//! compares digests in constant time.

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::fmt;
use subtle::ConstantTimeEq;
use uuid::Uuid;
use zeroize::Zeroizing;

/// Length of a secret in bytes.
pub(crate) const SECRET_LEN: usize = 32;
const DIGEST_DOMAIN: &[u8] = b"tenure-lease-secret-v1\0";
const MEMBER_DOMAIN: &[u8] = b"tenure-claim-request-member-v1\0";

/// A lease's private credential, with its digest computed once (every
/// check of the lease compares the digest; the digest is what the store
/// keeps anyway, so holding it beside the secret reveals nothing more).
#[derive(Clone)]
pub(crate) struct Secret {
    bytes: Zeroizing<[u8; SECRET_LEN]>,
    digest: [u8; 32],
}

impl Secret {
    fn new(bytes: Zeroizing<[u8; SECRET_LEN]>) -> Secret {
        let mut h = Sha256::new();
        h.update(DIGEST_DOMAIN);
        h.update(bytes.as_ref());
        Secret {
            digest: h.finalize().into(),
            bytes,
        }
    }

    /// Mint a fresh secret from the operating system's CSPRNG.
    pub(crate) fn generate() -> Result<Secret> {
        let mut bytes = Zeroizing::new([0u8; SECRET_LEN]);
        random(bytes.as_mut())?;
        Ok(Secret::new(bytes))
    }

    /// A fresh secret and a fresh claim ID (a random UUIDv4) from one read
    /// of the OS CSPRNG (one system call per claim instead of two).
    pub(crate) fn generate_with_id() -> Result<(Secret, Uuid)> {
        let mut bytes = Zeroizing::new([0u8; SECRET_LEN + 16]);
        random(bytes.as_mut())?;
        let (secret, id) = bytes.split_at(SECRET_LEN);
        let mut s = Zeroizing::new([0u8; SECRET_LEN]);
        s.copy_from_slice(secret);
        let mut id_bytes = [0u8; 16];
        id_bytes.copy_from_slice(id);
        Ok((
            Secret::new(s),
            uuid::Builder::from_random_bytes(id_bytes).into_uuid(),
        ))
    }

    pub(crate) fn from_bytes(b: &[u8]) -> Option<Secret> {
        let arr: [u8; SECRET_LEN] = b.try_into().ok()?;
        Some(Secret::new(Zeroizing::new(arr)))
    }

    pub(crate) fn bytes(&self) -> &[u8; SECRET_LEN] {
        &self.bytes
    }

    /// The secret of member `i` of a batch claimed under one request
    /// (SHA-256 over a domain tag, this secret and `i`): derived in the
    /// client, so a retry with the same request reproduces it and only its
    /// digest travels.
    pub(crate) fn derive(&self, i: usize) -> Secret {
        let mut h = Sha256::new();
        h.update(MEMBER_DOMAIN);
        h.update(self.bytes.as_ref());
        h.update((i as u64).to_le_bytes());
        Secret::new(Zeroizing::new(h.finalize().into()))
    }

    /// The digest the store keeps in place of the secret (SHA-256 over a
    /// domain tag and the secret).
    pub(crate) fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// Constant-time comparison of this secret's digest with a stored digest.
    pub(crate) fn matches(&self, stored: Option<&[u8]>) -> bool {
        match stored {
            Some(d) if d.len() == 32 => bool::from(self.digest().ct_eq(d)),
            _ => false,
        }
    }
}

fn random(buf: &mut [u8]) -> Result<()> {
    getrandom::getrandom(buf)
        .map_err(|e| Error::Internal(format!("the OS random source failed: {e}")))
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_random_and_redacted() {
        let a = Secret::generate().unwrap();
        let b = Secret::generate().unwrap();
        assert_ne!(a.bytes(), b.bytes());
        assert_eq!(format!("{a:?}"), "Secret(<redacted>)");
        assert!(a.matches(Some(&a.digest())));
        assert!(!a.matches(Some(&b.digest())));
        assert!(!a.matches(None));
        assert!(!a.matches(Some(&a.digest()[..31])));
        assert_ne!(&a.digest()[..], &a.bytes()[..]);
        // The digest kept beside the secret is the domain-tagged SHA-256.
        let mut h = Sha256::new();
        h.update(DIGEST_DOMAIN);
        h.update(a.bytes());
        assert_eq!(a.digest(), <[u8; 32]>::from(h.finalize()));
        let again = Secret::from_bytes(a.bytes()).unwrap();
        assert_eq!(again.digest(), a.digest());
        // Derived member secrets: reproducible, distinct per member and
        // per parent secret, and never the parent itself.
        assert_eq!(a.derive(1).bytes(), a.derive(1).bytes());
        assert_ne!(a.derive(0).bytes(), a.derive(1).bytes());
        assert_ne!(a.derive(0).bytes(), a.bytes());
        assert_ne!(a.derive(0).bytes(), b.derive(0).bytes());
        // A secret minted with a claim ID: both random, the ID a UUIDv4.
        let (c, id) = Secret::generate_with_id().unwrap();
        let (d, id2) = Secret::generate_with_id().unwrap();
        assert_ne!(c.bytes(), d.bytes());
        assert_ne!(id, id2);
        assert_eq!(id.get_version_num(), 4);
        assert_eq!(id.get_variant(), uuid::Variant::RFC4122);
        assert_ne!(&c.bytes()[..16], id.as_bytes());
    }
}
