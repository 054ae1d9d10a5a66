//! What a `safe` benchmark owns of a job, apart from any rule: the instance (the grid, the
//! true f and g, the threshold, the growth constants, the GP settings it fixes), its
//! environment streams (the two seed points, the observation noise), the noisy observation
//! of an action, and the regrets and violations of the actions and estimates a rule reports
//! (paper eqs. 1-3, on the grid).
//!
//! The built-in episode ([`crate::SafeEpisode`]) runs its rules on it, and so can a method
//! written elsewhere (armada's Python bindings): the same seeds, noise and metrics.

use crate::benchmarks::Benchmark;
use crate::regret::RegretReference;
use armada_core::{JobError, JobStreams, StreamRng};
use armada_math::dist::StandardNormal;
use ndarray::aview1;
use rand::Rng;

/// One job's `safe` benchmark with its streams and the running sums of its metrics.
pub struct SafeEnvironment {
    bench: Benchmark,
    reference: RegretReference,
    /// The observation noise: two standard normals (f's, then g's) per noisy observation.
    noise: StreamRng,
    /// The seed points' x, uniform in `D_X`.
    seeds: StreamRng,
    totals: Totals,
}

/// Running sums of the benchmark's metrics.
#[derive(Clone, Debug, Default)]
struct Totals {
    regret: f64,
    regret2: f64,
    regretx: f64,
    regretx_post: f64,
    violations: u32,
}

/// The benchmark's metrics of one round's action and estimates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundScore {
    /// `r_t = f(s_*, x_*) - f(s_t, x_t)` (eq. 1) and its running sum.
    pub regret_inst: f64,
    pub regret_cum: f64,
    /// `r'_t = f(s_*^(x_t), x_t) - f(s_t, x_t)` (eq. 2) and its running sum.
    pub regret2_inst: f64,
    pub regret2_cum: f64,
    /// `r^X_t` of the estimates (eq. 3) and its running sum.
    pub regretx_inst: f64,
    pub regretx_cum: f64,
    /// Rounds so far whose action was truly unsafe (`g > h`).
    pub violations_cum: u32,
}

impl SafeEnvironment {
    /// `bench` observed through the job's environment streams `noise` and `seed-points`.
    pub fn new(bench: Benchmark, streams: &JobStreams) -> Self {
        SafeEnvironment {
            reference: RegretReference::new(&bench),
            bench,
            noise: streams.env("noise"),
            seeds: streams.env("seed-points"),
            totals: Totals::default(),
        }
    }

    pub fn benchmark(&self) -> &Benchmark {
        &self.bench
    }

    /// The next seed point `(0, x)`, `x` uniform in `D_X` (a run starts from two, as the
    /// authors' code).
    pub fn seed_point(&mut self) -> Vec<f64> {
        let mut z = vec![0.0];
        z.extend(self.bench.x_box.iter().map(|&(lo, hi)| self.seeds.random_range(lo..hi)));
        z
    }

    /// The noisy observation `(f, g)` at any point `z = (s, x)` (the seed points lie off the grid).
    pub fn observe_point(&mut self, z: &[f64]) -> Result<(f64, f64), JobError> {
        if z.len() != 1 + self.bench.x_box.len() {
            return Err(JobError::Invalid(format!(
                "a point of {} coordinates; this benchmark's are (s, x) with {} of x",
                z.len(),
                self.bench.x_box.len()
            )));
        }
        let (f, g) = (self.bench.eval)(z[0], aview1(&z[1..]));
        Ok(self.add_noise(f, g))
    }

    /// The noisy observation `(f, g)` of grid action `k` (flat index, x-major, s-minor).
    pub fn observe(&mut self, k: usize) -> Result<(f64, f64), JobError> {
        self.check_action(k)?;
        Ok(self.add_noise(self.bench.f[k], self.bench.g[k]))
    }

    fn add_noise(&mut self, f: f64, g: f64) -> (f64, f64) {
        let sd = self.bench.noise_var.sqrt();
        if sd > 0.0 {
            let yf = f + sd * self.noise.sample::<f64, _>(StandardNormal);
            (yf, g + sd * self.noise.sample::<f64, _>(StandardNormal))
        } else {
            (f, g)
        }
    }

    /// The round's regrets of action `k` and of the rule's estimates `s_hat` (one s-index
    /// per x-row), added to the running sums.
    pub fn score(&mut self, k: usize, s_hat: &[usize]) -> Result<RoundScore, JobError> {
        self.check_action(k)?;
        self.check_estimates(s_hat)?;
        let f = &self.bench.f;
        let (r, r2, rx) = (self.reference.global(f, k), self.reference.per_x(f, k), self.reference.worst_x(f, s_hat));
        let tot = &mut self.totals;
        tot.regret += r;
        tot.regret2 += r2;
        tot.regretx += rx;
        tot.violations += u32::from(self.bench.g[k] > self.bench.h);
        Ok(RoundScore {
            regret_inst: r,
            regret_cum: tot.regret,
            regret2_inst: r2,
            regret2_cum: tot.regret2,
            regretx_inst: rx,
            regretx_cum: tot.regretx,
            violations_cum: tot.violations,
        })
    }

    /// `r^X` of the estimates after the round's observation (as the authors' notebook
    /// computes it), and its running sum.
    pub fn score_after(&mut self, s_hat: &[usize]) -> Result<(f64, f64), JobError> {
        self.check_estimates(s_hat)?;
        let rx = self.reference.worst_x(&self.bench.f, s_hat);
        self.totals.regretx_post += rx;
        Ok((rx, self.totals.regretx_post))
    }

    fn check_action(&self, k: usize) -> Result<(), JobError> {
        let n = self.bench.f.len();
        if k >= n {
            return Err(JobError::Invalid(format!("action {k} out of range for {n} grid points")));
        }
        Ok(())
    }

    fn check_estimates(&self, s_hat: &[usize]) -> Result<(), JobError> {
        let n_s = self.bench.grid.n_s();
        let rows = self.bench.f.len() / n_s;
        if s_hat.len() != rows {
            return Err(JobError::Invalid(format!("{} estimates for {rows} x-rows", s_hat.len())));
        }
        if let Some((i, j)) = s_hat.iter().enumerate().find(|(_, &j)| j >= n_s) {
            return Err(JobError::Invalid(format!("estimate {j} of x-row {i} out of range for {n_s} values of s")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_core::{check_params, JobSpec, Params};

    fn environment(name: &str) -> (SafeEnvironment, JobStreams) {
        let def = crate::benchmarks::BENCHMARKS.iter().find(|d| d.name == name).unwrap();
        let mut given = Params::new();
        given.insert("grid".into(), armada_core::ParamValue::Int(20));
        let bench = Benchmark::from_params(name, &check_params(def, &given).unwrap()).unwrap();
        let streams = JobStreams::new(&JobSpec::new("safe", name, "predvar"));
        (SafeEnvironment::new(bench, &streams), streams)
    }

    /// Regrets against the grid's safe optimum, summed; a truly unsafe action counts a
    /// violation; estimates at each row's best safe s have no `r^X`.
    #[test]
    fn scores_are_the_regrets_of_the_grid() {
        let (mut env, _) = environment("clinical");
        let b = env.benchmark();
        let (n_s, h) = (b.grid.n_s(), b.h);
        let safe_best: Vec<usize> =
            b.f.chunks(n_s)
                .zip(b.g.chunks(n_s))
                .map(|(f, g)| (0..n_s).filter(|&j| g[j] <= h).max_by(|&i, &j| f[i].total_cmp(&f[j])).unwrap_or(0))
                .collect();
        let best_k = (0..b.f.len()).filter(|&k| b.g[k] <= h).max_by(|&i, &j| b.f[i].total_cmp(&b.f[j])).unwrap();
        let unsafe_k = (0..b.f.len()).find(|&k| b.g[k] > h).unwrap();
        let (f_best, f_unsafe) = (b.f[best_k], b.f[unsafe_k]);
        let first = env.score(best_k, &safe_best).unwrap();
        assert_eq!(
            (first.regret_inst, first.regret2_inst, first.regretx_inst, first.violations_cum),
            (0.0, 0.0, 0.0, 0)
        );
        let second = env.score(unsafe_k, &safe_best).unwrap();
        assert_eq!(second.regret_inst, f_best - f_unsafe);
        assert_eq!(second.regret_cum, f_best - f_unsafe);
        assert_eq!(second.violations_cum, 1);
        assert!(env.score(unsafe_k, &safe_best[1..]).is_err());
        assert!(env.score(10_000, &safe_best).is_err());
        assert_eq!(env.score_after(&safe_best).unwrap(), (0.0, 0.0));
    }

    /// Seeds at s = 0 from the `seed-points` stream; observations add the noise stream's
    /// normals, f's then g's.
    #[test]
    fn seeds_and_noise_come_from_the_environment_streams() {
        let (mut env, streams) = environment("pendulum");
        let z = env.seed_point();
        let (lo, hi) = env.benchmark().x_box[0];
        assert_eq!(z, vec![0.0, streams.env("seed-points").random_range(lo..hi)]);
        let sd = env.benchmark().noise_var.sqrt();
        assert!(sd > 0.0);
        let (f, g) = (env.benchmark().f[5], env.benchmark().g[5]);
        let mut noise = streams.env("noise");
        let (a, b): (f64, f64) = (noise.sample(StandardNormal), noise.sample(StandardNormal));
        assert_eq!(env.observe(5).unwrap(), (f + sd * a, g + sd * b));
        // The noiseless benchmarks observe f and g exactly.
        let (mut exact, _) = environment("clinical");
        let (f, g) = (exact.benchmark().f[5], exact.benchmark().g[5]);
        assert_eq!(exact.observe(5).unwrap(), (f, g));
        assert!(env.observe_point(&[0.0]).is_err());
    }
}
