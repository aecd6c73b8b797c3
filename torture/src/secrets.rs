//! The secret scan run after every campaign: every secret minted (collected
//! by the workers from their own tokens) is searched for, in several
//! encodings, in the store files, logs, captured outputs and command lines.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use std::path::Path;

fn needles(token: &str) -> Option<Vec<Vec<u8>>> {
    let body = token.split_once('.')?.1;
    let raw = URL_SAFE_NO_PAD.decode(body.trim()).ok()?;
    if raw.len() < 32 {
        return None;
    }
    let secret = &raw[raw.len() - 32..];
    let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
    let mut v = vec![
        token.trim().as_bytes().to_vec(),
        secret.to_vec(),
        hex.clone().into_bytes(),
        hex.to_uppercase().into_bytes(),
    ];
    for e in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        v.push(e.encode(&secret[3..27]).into_bytes());
    }
    Some(v)
}

/// Every needle is at least 32 bytes: index them by their first 16 bytes
/// so one pass over each haystack finds any of them.
struct Needles {
    by_prefix: std::collections::HashMap<[u8; 16], Vec<Vec<u8>>>,
    count: usize,
}

impl Needles {
    fn new(all: Vec<Vec<u8>>) -> Needles {
        let mut by_prefix: std::collections::HashMap<[u8; 16], Vec<Vec<u8>>> = Default::default();
        let count = all.len();
        for n in all {
            let key: [u8; 16] = n[..16].try_into().expect("needles are at least 16 bytes");
            by_prefix.entry(key).or_default().push(n);
        }
        Needles { by_prefix, count }
    }

    fn found_in(&self, hay: &[u8]) -> bool {
        if hay.len() < 16 {
            return false;
        }
        (0..=hay.len() - 16).any(|i| {
            let key: [u8; 16] = hay[i..i + 16].try_into().expect("16 bytes");
            self.by_prefix
                .get(&key)
                .is_some_and(|ns| ns.iter().any(|n| hay[i..].starts_with(n)))
        })
    }
}

/// Scan every file under `dir` (except the secrets file and token files) and
/// `texts` for every secret listed in `secrets_file`. Returns a summary.
pub fn scan_store_and_text(
    dir: &Path,
    secrets_file: &Path,
    texts: &[String],
) -> Result<String, String> {
    let tokens = std::fs::read_to_string(secrets_file).unwrap_or_default();
    let all: Vec<Vec<Vec<u8>>> = tokens.lines().filter_map(needles).collect();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| e.to_string())? {
        let p = entry.map_err(|e| e.to_string())?.path();
        if p == secrets_file || p.extension().is_some_and(|e| e == "token") || !p.is_file() {
            continue;
        }
        files.push((
            p.display().to_string(),
            std::fs::read(&p).map_err(|e| e.to_string())?,
        ));
    }
    for t in texts {
        files.push(("captured output".into(), t.clone().into_bytes()));
    }
    let forms = all.first().map(|f| f.len()).unwrap_or(0);
    let n_secrets = all.len();
    let needles = Needles::new(
        all.into_iter()
            .flatten()
            .filter(|n| n.len() >= 16)
            .collect(),
    );
    for (name, hay) in &files {
        if needles.found_in(hay) {
            return Err(format!("a lease secret (or its token) was found in {name}"));
        }
    }
    Ok(format!(
        "{n_secrets} secrets × {forms} forms ({} needles) in {} files/outputs, 0 hits",
        needles.count,
        files.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(secret: &[u8; 32]) -> String {
        let mut raw = vec![1, b'p', 1, b'j'];
        raw.extend_from_slice(secret);
        format!("tenure-lease-v1.{}", URL_SAFE_NO_PAD.encode(&raw))
    }

    /// The scan finds every planted form, and stays quiet when there is none.
    #[test]
    fn finds_planted_secrets() {
        let dir = std::env::temp_dir().join(format!("tenure-scan-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let secret: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
        let secrets_file = dir.join("secrets.txt");
        std::fs::write(&secrets_file, format!("{}\n", token(&secret))).unwrap();
        std::fs::write(dir.join("clean.db"), vec![0u8; 100_000]).unwrap();
        assert!(scan_store_and_text(&dir, &secrets_file, &[]).is_ok());
        let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
        for planted in [
            secret.to_vec(),
            hex.into_bytes(),
            STANDARD.encode(secret).into_bytes(),
            token(&secret).into_bytes(),
        ] {
            let mut hay = vec![7u8; 5000];
            hay.extend_from_slice(&planted);
            hay.extend_from_slice(&[9u8; 5000]);
            std::fs::write(dir.join("dirty.db"), &hay).unwrap();
            assert!(scan_store_and_text(&dir, &secrets_file, &[]).is_err());
            std::fs::remove_file(dir.join("dirty.db")).unwrap();
            let text = String::from_utf8_lossy(&planted).into_owned();
            if text.is_ascii() {
                assert!(scan_store_and_text(&dir, &secrets_file, &[text]).is_err());
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
