//! Named RNG streams with common random numbers across algorithms.
//!
//! Every stream is a ChaCha8 generator (portable, reproducible on every platform)
//! seeded with BLAKE3 over (salt, sweep seed, family, benchmark + params, seed index,
//! purpose). Environment streams stop there, so all algorithms of a seed see the same
//! initial design, noise, and sampled test functions; algorithm streams also hash the
//! algorithm and its parameters.

use crate::{JobSpec, STREAM_SALT};
use rand::SeedableRng;

/// The generator behind every stream.
pub type StreamRng = rand_chacha::ChaCha8Rng;

/// The stream roots of one job.
#[derive(Clone, Debug)]
pub struct JobStreams {
    env_root: [u8; 32],
    algo_root: [u8; 32],
}

impl JobStreams {
    pub fn new(spec: &JobSpec) -> Self {
        let env_text = format!(
            "{STREAM_SALT};streams;sweep_seed={};family={};benchmark={}{};seed={}",
            spec.sweep_seed, spec.family, spec.benchmark, spec.benchmark_params, spec.seed
        );
        let env_root = *blake3::hash(env_text.as_bytes()).as_bytes();
        let mut h = blake3::Hasher::new();
        h.update(&env_root);
        h.update(format!("algorithm={}{}", spec.algorithm, spec.algorithm_params).as_bytes());
        JobStreams { env_root, algo_root: *h.finalize().as_bytes() }
    }

    /// A stream that describes the environment (initial design, observation noise,
    /// sampled functions): identical for every algorithm of the same seed.
    pub fn env(&self, purpose: &str) -> StreamRng {
        derive(&self.env_root, purpose)
    }

    /// A stream private to the algorithm (its own random choices).
    pub fn algo(&self, purpose: &str) -> StreamRng {
        derive(&self.algo_root, purpose)
    }
}

fn derive(root: &[u8; 32], purpose: &str) -> StreamRng {
    let mut h = blake3::Hasher::new();
    h.update(root);
    h.update(purpose.as_bytes());
    StreamRng::from_seed(*h.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    fn draws(mut rng: StreamRng) -> Vec<u64> {
        (0..4).map(|_| rng.random()).collect()
    }

    /// The streams exactly as job.proto documents them: if this fails, fix the
    /// documentation with the code.
    #[test]
    fn the_documented_derivation_gives_the_streams() {
        let mut spec = JobSpec::new("lse", "sinusoidal", "straddle");
        spec.benchmark_params.insert("noise_sd".into(), crate::ParamValue::Float(0.1));
        spec.algorithm_params.insert("beta_sqrt".into(), crate::ParamValue::Float(3.0));
        spec.seed = 3;
        spec.sweep_seed = 11;
        let env_root =
            blake3::hash(b"armada-job-v2;streams;sweep_seed=11;family=lse;benchmark=sinusoidal{noise_sd=0.1};seed=3");
        let stream = |root: &[u8], purpose: &str| {
            let mut seed = Vec::from(root);
            seed.extend_from_slice(purpose.as_bytes());
            StreamRng::from_seed(*blake3::hash(&seed).as_bytes())
        };
        let mut algo_input = Vec::from(env_root.as_bytes().as_slice());
        algo_input.extend_from_slice(b"algorithm=straddle{beta_sqrt=3.0}");
        let algo_root = blake3::hash(&algo_input);
        let streams = JobStreams::new(&spec);
        assert_eq!(draws(streams.env("noise")), draws(stream(env_root.as_bytes(), "noise")));
        assert_eq!(draws(streams.algo("tie")), draws(stream(algo_root.as_bytes(), "tie")));
    }

    #[test]
    fn env_streams_are_common_across_algorithms_and_algo_streams_are_not() {
        let a = JobSpec::new("lse", "sinusoidal", "straddle");
        let b = JobSpec::new("lse", "sinusoidal", "random");
        let (sa, sb) = (JobStreams::new(&a), JobStreams::new(&b));
        assert_eq!(draws(sa.env("noise")), draws(sb.env("noise")));
        assert_ne!(draws(sa.algo("noise")), draws(sb.algo("noise")));
        assert_ne!(draws(sa.env("noise")), draws(sa.env("init")));
        let mut c = a.clone();
        c.seed = 1;
        assert_ne!(draws(sa.env("noise")), draws(JobStreams::new(&c).env("noise")));
    }
}
