//! HMAC-SHA256 (RFC 2104 over FIPS 180-4), RustCrypto's `hmac` on `sha2`: the disk cache's
//! entries carry an HMAC of their header and body under the per-user key (`trust.rs`), so a
//! file that anyone without the key wrote is never used. The RFC 4231 vectors below check the
//! cache's use of the crates.

use hmac::{Hmac, Mac};

/// A streaming HMAC-SHA256.
#[derive(Clone)]
pub(crate) struct HmacSha256(Hmac<sha2::Sha256>);

impl HmacSha256 {
    /// An HMAC under `key` (any length: a key longer than a block is hashed first).
    pub(crate) fn new(key: &[u8]) -> Self {
        // HMAC takes keys of every length (RFC 2104): `new_from_slice` never fails for it.
        match Hmac::new_from_slice(key) {
            Ok(m) => HmacSha256(m),
            Err(_) => unreachable!("HMAC accepts keys of any length"),
        }
    }

    /// Authenticates `data` (after what was given before).
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The tag.
    pub(crate) fn finish(self) -> [u8; 32] {
        self.0.finalize().into_bytes().into()
    }

    /// Whether the tag is the one `want` spells (64 lower-case hex digits, as `hex` writes
    /// it), compared by `hmac` in constant time (when it stops does not tell how many leading
    /// bytes were right). Any other spelling is a mismatch.
    pub(crate) fn verify_hex(self, want: &str) -> bool {
        match unhex_lower(want) {
            Some(t) => self.0.verify_slice(&t).is_ok(),
            None => false,
        }
    }
}

/// The 32 bytes that 64 lower-case hex digits spell (`None` for anything else).
fn unhex_lower(s: &str) -> Option<[u8; 32]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
        *o = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
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
    fn verify_against_hex() {
        let key = [0x42u8; 32];
        let tag = hmac_hex(&key, b"body");
        let check = |want: &str| {
            let mut m = HmacSha256::new(&key);
            m.update(b"body");
            m.verify_hex(want)
        };
        assert!(check(&tag));
        // A flipped last digit, the upper-case spelling, a short or long tag, non-hex.
        let mut flipped = tag.clone();
        let last = if flipped.ends_with('0') { "1" } else { "0" };
        flipped.replace_range(63.., last);
        assert!(!check(&flipped));
        assert!(tag.bytes().any(|b| b.is_ascii_lowercase()));
        assert!(!check(&tag.to_uppercase()));
        assert!(!check(&tag[..62]));
        assert!(!check(&format!("{tag}00")));
        assert!(!check(&"zz".repeat(32)));
        assert!(!check(""));
    }
}
