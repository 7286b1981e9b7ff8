//! The hashes the cache uses: SHA-256 for keys (collision-resistant: a collision would hand a
//! kernel another kernel's PTX) and, through HMAC (`mac.rs`), for the cache files' MAC; FNV-1a
//! was the files' checksum before format 2 (the tests still make such files, to see them
//! refused). SHA-256 is RustCrypto's `sha2`; the known-answer tests below check the cache's use
//! of it against FIPS 180-2's vectors.

use std::fmt;

use sha2::Digest;

/// A streaming SHA-256 (FIPS 180-4, RustCrypto's `sha2`). Also a `fmt::Write`, so `Debug` text
/// hashes without being collected into a string first.
#[derive(Clone)]
pub(crate) struct Sha256(sha2::Sha256);

impl Sha256 {
    /// An empty hash.
    pub(crate) fn new() -> Self {
        Sha256(sha2::Sha256::new())
    }

    /// Hashes `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The digest.
    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

impl fmt::Write for Sha256 {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.update(s.as_bytes());
        Ok(())
    }
}

/// 64-bit FNV-1a of `data` (the cache files' body checksum before format 2).
#[cfg(test)]
pub(crate) fn fnv1a64(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha_hex(data: &[u8]) -> String {
        let mut h = Sha256::new();
        h.update(data);
        hex(&h.finish())
    }

    #[test]
    fn sha256_known_answers() {
        assert_eq!(
            sha_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        assert_eq!(
            sha_hex(&vec![b'a'; 1_000_000]),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn sha256_streaming_matches_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        for split in [0, 1, 55, 56, 63, 64, 65, 127, 128, 999, 1000] {
            let mut h = Sha256::new();
            h.update(&data[..split]);
            h.update(&data[split..]);
            assert_eq!(hex(&h.finish()), sha_hex(&data), "split at {split}");
        }
    }

    #[test]
    fn fnv_known_answers() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }
}
