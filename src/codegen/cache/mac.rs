//! HMAC-SHA256 (RFC 2104 over FIPS 180-4), on the cache's own [`Sha256`]: the disk cache's
//! entries carry an HMAC of their header and body under the per-user key (`trust.rs`), so a
//! file that anyone without the key wrote is never used.

use super::hash::Sha256;

/// SHA-256's block size in bytes (the HMAC key's padded length).
const BLOCK: usize = 64;

/// A streaming HMAC-SHA256.
#[derive(Clone)]
pub(crate) struct HmacSha256 {
    inner: Sha256,
    outer: Sha256,
}

impl HmacSha256 {
    /// An HMAC under `key` (any length: a key longer than a block is hashed first).
    pub(crate) fn new(key: &[u8]) -> Self {
        let mut k = [0u8; BLOCK];
        if key.len() > BLOCK {
            let mut h = Sha256::new();
            h.update(key);
            k[..32].copy_from_slice(&h.finish());
        } else {
            k[..key.len()].copy_from_slice(key);
        }
        let pad = |byte: u8| {
            let mut p = [0u8; BLOCK];
            for (p, k) in p.iter_mut().zip(k) {
                *p = k ^ byte;
            }
            p
        };
        let mut inner = Sha256::new();
        inner.update(&pad(0x36));
        let mut outer = Sha256::new();
        outer.update(&pad(0x5c));
        HmacSha256 { inner, outer }
    }

    /// Authenticates `data` (after what was given before).
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.inner.update(data);
    }

    /// The tag.
    pub(crate) fn finish(self) -> [u8; 32] {
        let mut outer = self.outer;
        outer.update(&self.inner.finish());
        outer.finish()
    }
}

/// Whether two byte strings are equal, in a time that depends on their lengths only (a MAC is
/// compared without telling, by when it stops, how many leading bytes were right).
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::super::hash::hex;
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn hmac_hex(key: &[u8], data: &[u8]) -> String {
        let mut m = HmacSha256::new(key);
        m.update(data);
        hex(&m.finish())
    }

    /// RFC 4231, section 4: the HMAC-SHA-256 test cases (case 5's output is truncated to
    /// 128 bits there).
    #[test]
    fn hmac_sha256_rfc4231_test_vectors() {
        let cases: [(Vec<u8>, Vec<u8>, &str); 7] = [
            (
                vec![0x0b; 20],
                b"Hi There".to_vec(),
                "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            ),
            (
                b"Jefe".to_vec(),
                b"what do ya want for nothing?".to_vec(),
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                vec![0xaa; 20],
                vec![0xdd; 50],
                "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
            ),
            (
                unhex("0102030405060708090a0b0c0d0e0f10111213141516171819"),
                vec![0xcd; 50],
                "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
            ),
            (
                vec![0x0c; 20],
                b"Test With Truncation".to_vec(),
                "a3b6167473100ee06e0c796c2955552b",
            ),
            (
                vec![0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First".to_vec(),
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
            (
                vec![0xaa; 131],
                b"This is a test using a larger than block-size key and a larger than \
                  block-size data. The key needs to be hashed before being used by the \
                  HMAC algorithm."
                    .to_vec(),
                "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
            ),
        ];
        for (i, (key, data, want)) in cases.iter().enumerate() {
            let got = hmac_hex(key, data);
            assert_eq!(&got[..want.len()], *want, "RFC 4231 test case {}", i + 1);
        }
    }

    #[test]
    fn hmac_streaming_matches_one_shot() {
        let data: Vec<u8> = (0..300u32).map(|i| (i * 7 % 253) as u8).collect();
        let key = [0x42u8; 32];
        for split in [0, 1, 63, 64, 65, 299, 300] {
            let mut m = HmacSha256::new(&key);
            m.update(&data[..split]);
            m.update(&data[split..]);
            assert_eq!(hex(&m.finish()), hmac_hex(&key, &data), "split at {split}");
        }
        assert_ne!(hmac_hex(&key, &data), hmac_hex(&[0x43; 32], &data));
    }

    #[test]
    fn byte_comparison() {
        assert!(same_bytes(b"", b""));
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"ab"));
    }
}
