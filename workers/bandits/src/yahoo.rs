//! A seeded stand-in for the Yahoo! Front Page Today Module data (R6A; paper Section 5), which needs a
//! Webscope licence and is not available offline. Everything produced from it is the
//! "Yahoo stand-in": comparable to the paper's Table 2 in scale and ranking only.
//!
//! The generator is our own, sized to Table 2's scale: `M = 270` articles with features `x_a = (1, pi_a)`,
//! `pi_a ~ Dirichlet(0.3 * 1_5)`, a lifetime (start uniform in `[0, T)`, length uniform in
//! `[300, 1200]` rounds) and a popularity offset `u_a ~ N(0, 0.3^2)`;
//! `theta* = (-2.8, w_1..w_5)` with `w_i ~ U(-0.6, 0.6)`; each round offers a pool of 20 articles
//! with `CTR_t(a) = sigma(x_a^T theta* + u_a + 0.1 n_{t,a})`, `n_{t,a} ~ N(0, 1)`, and the reward
//! of the pulled article is `Bernoulli(CTR_t(a))`.
//!
//! The data set (articles, pools, CTRs) is a pure function of its own seed, like a fixed log:
//! every repetition and every method sees the same rounds, and repetitions differ only in the
//! click draws and the algorithms' randomness. Pool rule when more than
//! 20 articles are alive: the 20 alive articles that started most recently; when fewer than 20
//! are alive, the lifetimes of the most recently ended ones are extended, then those of the ones
//! about to start, until there are 20.

use crate::env::{ArmSet, Environment, RewardModel};
use crate::logistic::sigmoid;
use armada_core::StreamRng;
use armada_math::dist::{Distribution, Gamma, StandardNormal};
use ndarray::ArrayView2;
use rand::{Rng, SeedableRng};

/// Features per article: a constant 1 and five cluster memberships.
pub const DIM: usize = 6;

/// Sizes of the stand-in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct YahooConfig {
    pub n_articles: usize,
    pub pool: usize,
    pub horizon: usize,
}

impl YahooConfig {
    /// 270 articles; pools of 20 and T = 2881 rounds as in paper Section 5.
    pub fn paper() -> Self {
        YahooConfig { n_articles: 270, pool: 20, horizon: 2881 }
    }
}

/// The generated log: per round, the offered articles' features and CTRs.
#[derive(Clone, Debug, PartialEq)]
pub struct YahooData {
    pub config: YahooConfig,
    pub theta: [f64; DIM],
    /// Article features, `n_articles x DIM`.
    pub features: Vec<f64>,
    /// Per round, the pool's article indices (`pool` each).
    pub pools: Vec<Vec<usize>>,
    /// Per round, the pool's CTRs (same order).
    pub ctrs: Vec<Vec<f64>>,
}

impl YahooData {
    pub fn generate(config: YahooConfig, seed: u64) -> Result<YahooData, String> {
        if config.pool == 0 || config.pool > config.n_articles {
            return Err(format!("pool of {} from {} articles", config.pool, config.n_articles));
        }
        let mut rng = StreamRng::seed_from_u64(seed);
        let mut theta = [-2.8, 0.0, 0.0, 0.0, 0.0, 0.0];
        for w in theta[1..].iter_mut() {
            *w = rng.random_range(-0.6..0.6);
        }
        let gamma = Gamma::new(0.3, 1.0).expect("valid shape and scale");
        let mut features = Vec::with_capacity(config.n_articles * DIM);
        let (mut start, mut end, mut popularity) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..config.n_articles {
            // Dirichlet(0.3 * 1_5) as normalised Gamma(0.3) draws.
            let g: Vec<f64> = (0..DIM - 1).map(|_| gamma.sample(&mut rng)).collect();
            let total: f64 = g.iter().sum::<f64>().max(f64::MIN_POSITIVE);
            features.push(1.0);
            features.extend(g.iter().map(|v| v / total));
            let s = rng.random_range(0..config.horizon);
            start.push(s);
            end.push(s + rng.random_range(300..=1200));
            let u: f64 = StandardNormal.sample(&mut rng);
            popularity.push(0.3 * u);
        }
        let mut pools = Vec::with_capacity(config.horizon);
        let mut ctrs = Vec::with_capacity(config.horizon);
        for t in 0..config.horizon {
            let pool = pool_at(t, &start, &end, config.pool);
            let ctr = pool
                .iter()
                .map(|&a| {
                    let n: f64 = StandardNormal.sample(&mut rng);
                    let x = &features[a * DIM..][..DIM];
                    let z: f64 = x.iter().zip(&theta).map(|(x, t)| x * t).sum();
                    sigmoid(z + popularity[a] + 0.1 * n)
                })
                .collect();
            pools.push(pool);
            ctrs.push(ctr);
        }
        Ok(YahooData { config, theta, features, pools, ctrs })
    }
}

/// The pool of round `t`: alive articles newest first, then the most recently ended, then the
/// soonest to start (see the module doc); ties by index.
fn pool_at(t: usize, start: &[usize], end: &[usize], size: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..start.len()).collect();
    // Key: (group, distance): alive by how long ago it started, ended by how long ago, future by
    // how soon.
    let key = |a: usize| -> (u8, usize) {
        if start[a] <= t && t < end[a] {
            (0, t - start[a])
        } else if end[a] <= t {
            (1, t - end[a])
        } else {
            (2, start[a] - t)
        }
    };
    order.sort_by_key(|&a| (key(a), a));
    order.truncate(size);
    order
}

/// The stand-in as an environment: round t offers `pools[t]` with their CTRs.
pub struct YahooEnv {
    data: std::sync::Arc<YahooData>,
    round: usize,
    arms: ArmSet,
}

impl YahooEnv {
    pub fn new(data: std::sync::Arc<YahooData>) -> Self {
        let pool = data.config.pool;
        YahooEnv { data, round: 0, arms: ArmSet::new(DIM, pool, RewardModel::Logistic) }
    }
}

impl Environment for YahooEnv {
    fn dim(&self) -> usize {
        DIM
    }

    fn horizon(&self) -> usize {
        self.data.config.horizon
    }

    fn next_round(&mut self) -> ArrayView2<'_, f64> {
        let t = self.round;
        assert!(t < self.data.config.horizon, "the stand-in log has {} rounds", self.data.config.horizon);
        let features = self.arms.features_mut();
        for (slot, &a) in self.data.pools[t].iter().enumerate() {
            features[slot * DIM..][..DIM].copy_from_slice(&self.data.features[a * DIM..][..DIM]);
        }
        // Bernoulli(CTR): the logistic model's sampling with the logged CTR as the mean.
        self.arms.score_given(&self.data.ctrs[t]);
        self.round += 1;
        self.arms.contexts()
    }

    fn arms(&self) -> &ArmSet {
        &self.arms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_follow_the_lifetime_rule() {
        // Articles 0..4: alive windows [0,10), [5,15), [2,4), [20,30), [6,8).
        let (start, end) = ([0, 5, 2, 20, 6], [10, 15, 4, 30, 8]);
        // t = 7: alive 0 (age 7), 1 (age 2), 4 (age 1) -> newest first: 4, 1, 0; then ended 2.
        assert_eq!(pool_at(7, &start, &end, 4), [4, 1, 0, 2]);
        // t = 16: none alive; ended 1 (1 ago), 0 (6 ago), 4 (8 ago), 2 (12 ago); future 3.
        assert_eq!(pool_at(16, &start, &end, 5), [1, 0, 4, 2, 3]);
        assert_eq!(pool_at(0, &start, &end, 2), [0, 2]);
    }

    #[test]
    fn the_stand_in_has_the_spec_shape_and_scale() {
        let data = YahooData::generate(YahooConfig::paper(), 0).unwrap();
        assert_eq!(data.pools.len(), 2881);
        assert!(data.pools.iter().all(|p| p.len() == 20));
        assert_eq!(data.theta[0], -2.8);
        assert!(data.theta[1..].iter().all(|w| w.abs() <= 0.6));
        for a in 0..270 {
            let x = &data.features[a * DIM..][..DIM];
            assert_eq!(x[0], 1.0);
            assert!((x[1..].iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!(x[1..].iter().all(|&p| p >= 0.0));
        }
        // CTRs are probabilities and recomputable from the features up to the jitter: with
        // 0.1 n and |n| < 6, the logit is within 0.6 of x^T theta* + u_a.
        assert!(data.ctrs.iter().flatten().all(|&c| c > 0.0 && c < 1.0));
        assert_eq!(YahooData::generate(YahooConfig::paper(), 0).unwrap(), data, "a pure function of the seed");
        assert_ne!(YahooData::generate(YahooConfig::paper(), 1).unwrap().theta, data.theta);
    }

    #[test]
    fn the_environment_replays_the_log() {
        let data =
            std::sync::Arc::new(YahooData::generate(YahooConfig { horizon: 50, ..YahooConfig::paper() }, 3).unwrap());
        let mut env = YahooEnv::new(data.clone());
        let mut noise = StreamRng::seed_from_u64(9);
        for t in 0..50 {
            let ctx = env.next_round();
            assert_eq!(ctx.nrows(), 20);
            let a = data.pools[t][7];
            assert_eq!(ctx.row(7).as_slice().unwrap(), &data.features[a * DIM..][..DIM]);
            assert_eq!(env.expected_reward(7), data.ctrs[t][7]);
            let best = data.ctrs[t].iter().cloned().fold(0.0, f64::max);
            assert_eq!(env.regret(7), best - data.ctrs[t][7]);
            let y = env.sample_reward(7, &mut noise);
            assert!(y == 0.0 || y == 1.0);
        }
    }
}
