//! Job specifications and their content-addressed keys.

use crate::Params;
use std::fmt;

/// What starts a job's canonical text: `armada-job-v<version>`, with the version of the
/// job's family ([`crate::Family::version`]). A family bumps its version when a change
/// alters what any of its jobs computes, so that its results of older code are never
/// mistaken for current ones, and the other families' results stay valid. (Before
/// versions were per family, every key was salted `armada-job-v2`: a family at version 2
/// keeps the keys it had.)
pub fn key_salt(version: u32) -> String {
    format!("armada-job-v{version}")
}

/// The salt of every random stream's root ([`crate::JobStreams`]). Fixed for good: a
/// version bump changes a family's keys, never its random numbers.
pub const STREAM_SALT: &str = "armada-job-v2";

/// One cell of a sweep. Parameters are canonical after [`crate::Registry::validate`]:
/// every schema parameter present, defaults filled in, integers widened to floats
/// where the schema says float.
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    pub family: String,
    pub benchmark: String,
    pub benchmark_params: Params,
    pub algorithm: String,
    pub algorithm_params: Params,
    /// Seed index: simulation number within the sweep.
    pub seed: u64,
    /// Steps after the initial design (step 0 records the initial state).
    pub horizon: u32,
    /// The sweep-level seed from which every RNG stream is derived.
    pub sweep_seed: u64,
}

impl JobSpec {
    pub fn new(family: &str, benchmark: &str, algorithm: &str) -> Self {
        JobSpec {
            family: family.into(),
            benchmark: benchmark.into(),
            benchmark_params: Params::new(),
            algorithm: algorithm.into(),
            algorithm_params: Params::new(),
            seed: 0,
            horizon: 0,
            sweep_seed: 0,
        }
    }

    /// The canonical text of the spec, for its family at `version`: what the key hashes.
    pub fn canonical(&self, version: u32) -> String {
        self.canonical_salted(&key_salt(version))
    }

    /// The canonical text under the family's salt ([`crate::Family::key_salt`]).
    pub fn canonical_salted(&self, salt: &str) -> String {
        format!(
            "{};family={};benchmark={}{};algorithm={}{};seed={};horizon={};sweep_seed={}",
            salt,
            self.family,
            self.benchmark,
            self.benchmark_params,
            self.algorithm,
            self.algorithm_params,
            self.seed,
            self.horizon,
            self.sweep_seed
        )
    }

    /// The content-addressed key, for its family at `version` (use
    /// [`crate::Registry::validate`], which knows it): the first 128 bits of BLAKE3 over
    /// the canonical text.
    pub fn key(&self, version: u32) -> JobKey {
        self.key_salted(&key_salt(version))
    }

    /// The key under the family's salt ([`crate::Family::key_salt`]).
    pub fn key_salted(&self, salt: &str) -> JobKey {
        JobKey::of(blake3::hash(self.canonical_salted(salt).as_bytes()))
    }

    /// The keys of this spec's jobs by seed, under the family's salt: the canonical text
    /// around the seed made once, for the many seeds of one cell.
    pub fn seed_keys(&self, salt: &str) -> SeedKeys {
        let text = JobSpec { seed: 0, ..self.clone() }.canonical_salted(salt);
        // The last one: only numbers follow the seed, while a choice's text may hold anything.
        let (before, after) = text.rsplit_once(";seed=0;").expect("the canonical text holds the seed");
        let before = format!("{before};seed=");
        let mut hashed = blake3::Hasher::new();
        hashed.update(before.as_bytes());
        SeedKeys { before, hashed, after: format!(";{after}") }
    }
}

/// The canonical text of a cell's jobs before and after their seed ([`JobSpec::seed_keys`]).
#[derive(Clone, Debug)]
pub struct SeedKeys {
    before: String,
    /// A hasher that has taken `before`: each key starts from a copy of it.
    hashed: blake3::Hasher,
    after: String,
}

impl PartialEq for SeedKeys {
    fn eq(&self, other: &Self) -> bool {
        (&self.before, &self.after) == (&other.before, &other.after)
    }
}

impl SeedKeys {
    /// The key of the cell's job of `seed`: [`JobSpec::key_salted`] of its spec.
    pub fn key(&self, seed: u64) -> JobKey {
        JobKey::of_bytes(&self.key_bytes(seed))
    }

    /// That key's 16 bytes (its hex digits are the [`JobKey`]): what a coordinator loading
    /// a million stored jobs compares, without making text of each.
    pub fn key_bytes(&self, seed: u64) -> [u8; 16] {
        let mut digits = [0u8; 20]; // u64::MAX has 20
        let mut at = digits.len();
        let mut rest = seed;
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        let mut hasher = self.hashed.clone();
        hasher.update(&digits[at..]);
        hasher.update(self.after.as_bytes());
        hasher.finalize().as_bytes()[..16].try_into().expect("16 of 32 bytes")
    }
}

/// A job's key: 32 lowercase hex digits, safe as a file name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JobKey(pub String);

impl JobKey {
    /// The first 128 bits of a BLAKE3 hash, in hex.
    fn of(hash: blake3::Hash) -> JobKey {
        JobKey::of_bytes(hash.as_bytes()[..16].try_into().expect("16 of 32 bytes"))
    }

    /// A key's 16 bytes as its 32 lowercase hex digits.
    pub fn of_bytes(bytes: &[u8; 16]) -> JobKey {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut hex = String::with_capacity(32);
        for b in bytes {
            hex.push(HEX[usize::from(b >> 4)] as char);
            hex.push(HEX[usize::from(b & 15)] as char);
        }
        JobKey(hex)
    }

    /// The 16 bytes of a key written as 32 hex digits (either case); `None` for any other
    /// text.
    pub fn parse_bytes(hex: &str) -> Option<[u8; 16]> {
        let hex: &[u8; 32] = hex.as_bytes().try_into().ok()?;
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        };
        let mut bytes = [0u8; 16];
        for (byte, pair) in bytes.iter_mut().zip(hex.chunks_exact(2)) {
            *byte = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(bytes)
    }
}

impl fmt::Display for JobKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ParamValue;

    /// A cell's keys by seed are its jobs' keys, whatever its parameters hold.
    #[test]
    fn seed_keys_are_the_keys_of_each_seeds_spec() {
        let mut s = spec();
        s.algorithm_params.insert("tie".into(), ParamValue::Str(";seed=0;horizon=1".into()));
        for salt in ["armada-job-v2", "armada-job-v3+0123456789abcdef"] {
            let keys = s.seed_keys(salt);
            for seed in [0, 1, 9, 10, 12345, u64::MAX] {
                let job = JobSpec { seed, ..s.clone() };
                assert_eq!(keys.key(seed), job.key_salted(salt), "seed {seed}");
            }
        }
        for seed in [0, 7, 10, 99, 100, 18446744073709551615] {
            let key = s.seed_keys("x").key(seed);
            assert_eq!(JobKey::parse_bytes(&key.0), Some(s.seed_keys("x").key_bytes(seed)));
            assert_eq!(JobKey::parse_bytes(&key.0.to_uppercase()), JobKey::parse_bytes(&key.0));
            assert_eq!(JobKey::of_bytes(&JobKey::parse_bytes(&key.0).unwrap()), key);
        }
        for not_a_key in ["", "0123", &"g".repeat(32), &"0".repeat(31), &"0".repeat(33), &"é".repeat(16)] {
            assert_eq!(JobKey::parse_bytes(not_a_key), None, "{not_a_key}");
        }
        assert_eq!(s.key_salted("x").0.len(), 32);
        assert!(s.key_salted("x").0.chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    }

    fn spec() -> JobSpec {
        let mut s = JobSpec::new("lse", "sinusoidal", "straddle");
        s.algorithm_params.insert("beta_sqrt".into(), ParamValue::Float(3.0));
        s.horizon = 300;
        s
    }

    #[test]
    fn key_is_stable_and_sensitive_to_every_field() {
        let base = spec().key(2);
        assert_eq!(base.0.len(), 32);
        assert!(base.0.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(base, spec().key(2));
        // Pinned: if this changes, every stored result is orphaned; only a family's version
        // bump may change its keys.
        assert_eq!(base.0, "7434155572d52354eeb40da7a7e19c39");
        assert_ne!(spec().key(3), base, "the version is part of the key");
        let mut variants = Vec::new();
        let mut s = spec();
        s.seed = 1;
        variants.push(s);
        let mut s = spec();
        s.horizon = 301;
        variants.push(s);
        let mut s = spec();
        s.sweep_seed = 1;
        variants.push(s);
        let mut s = spec();
        s.algorithm_params.insert("beta_sqrt".into(), ParamValue::Float(3.0000000001));
        variants.push(s);
        let mut s = spec();
        s.benchmark = "himmelblau".into();
        variants.push(s);
        for v in variants {
            assert_ne!(v.key(2), base, "{}", v.canonical(2));
        }
    }

    /// The canonical text and key exactly as job.proto documents them for workers in other
    /// languages: if this fails, fix the documentation with the code.
    #[test]
    fn the_documented_derivation_gives_the_key() {
        let mut s = spec();
        s.benchmark_params.insert("noise_sd".into(), ParamValue::Float(0.1));
        s.benchmark_params.insert("tiny".into(), ParamValue::Float(1e-7));
        s.algorithm_params.insert("mode".into(), ParamValue::Str("first".into()));
        s.algorithm_params.insert("n".into(), ParamValue::Int(-4));
        s.algorithm_params.insert("on".into(), ParamValue::Bool(true));
        s.seed = 7;
        s.sweep_seed = 42;
        let text = "armada-job-v2;family=lse;benchmark=sinusoidal{noise_sd=0.1,tiny=1e-7};\
             algorithm=straddle{beta_sqrt=3.0,mode=\"first\",n=-4,on=true};seed=7;horizon=300;sweep_seed=42";
        assert_eq!(s.canonical(2), text);
        let hash = blake3::hash(text.as_bytes());
        let hex: String = hash.as_bytes()[..16].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(s.key(2).0, hex);
    }

    #[test]
    fn int_and_float_params_differ_in_canonical_text() {
        let mut a = spec();
        a.algorithm_params.insert("beta_sqrt".into(), ParamValue::Int(3));
        assert_ne!(a.canonical(2), spec().canonical(2));
    }
}
