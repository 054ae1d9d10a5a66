//! Random secrets: the embedded run's token and the workers' session credentials.

use std::hash::{BuildHasher, Hasher};
use std::io::Read;

/// 128 random bits as 32 hex digits, from the operating system's generator
/// (`/dev/urandom`); where that cannot be read, from the standard library's randomly
/// keyed hasher (seeded by the operating system too) and the clock.
pub fn random_secret() -> String {
    let mut bytes = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes)).is_err() {
        for (i, half) in bytes.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            h.write_u128(
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()),
            );
            half.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_are_32_hex_digits_and_differ() {
        let (a, b) = (super::random_secret(), super::random_secret());
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
