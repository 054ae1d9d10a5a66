//! UCB-PSQ and TS-PSQ (Hayashi, Honda & Kashima 2022; as Tay et al.'s code, which the paper's
//! appendix names for its baselines): costs are ignored; when a full control set exists it is
//! always chosen (its maximum is never below a partial set's maximised expectation).

use armada_core::JobError;
use armada_gp::{sample_weights, Kernel, RandomFourierFeatures};

use super::{argmax_first, set_bounds, set_bounds_many, Algorithm, Choice, Context, Diagnostics, Phase, SearchConfig};
use crate::acquisition::TsExpectation;

/// UCB-PSQ: `argmax_{j, x^j} E_hat[mu + beta sigma]`.
pub struct UcbPsq {
    pub beta: f64,
    pub search: SearchConfig,
}

impl Algorithm for UcbPsq {
    fn choose(&mut self, ctx: &mut Context<'_>) -> Result<Choice, JobError> {
        if let Some(full) = ctx.problem.full_set() {
            let (best, _) = set_bounds(ctx, full, self.beta, None, &self.search);
            return Ok(choice(full, best.x));
        }
        let sets: Vec<usize> = (0..ctx.problem.n_sets()).collect();
        let maxima: Vec<_> =
            set_bounds_many(ctx, &sets, self.beta, None, &self.search).into_iter().map(|b| b.0).collect();
        let set = argmax_first(maxima.iter().map(|m| m.value));
        Ok(choice(set, maxima[set].x.clone()))
    }
}

/// TS-PSQ: a fresh RFF posterior sample path `g` every iteration, `argmax_{j, x^j} E_hat[g]`.
pub struct TsPsq {
    pub n_frequencies: usize,
    pub search: SearchConfig,
}

impl Algorithm for TsPsq {
    fn choose(&mut self, ctx: &mut Context<'_>) -> Result<Choice, JobError> {
        let p = ctx.post;
        let lengthscales: Vec<f64> = p.inv_ls2.iter().map(|v| 1.0 / v.sqrt()).collect();
        let kernel = Kernel::squared_exponential(p.s2, lengthscales);
        let numerical = |e: armada_gp::GpError| JobError::Numerical(format!("TS-PSQ sample: {e}"));
        let rff = RandomFourierFeatures::sample(&kernel, self.n_frequencies, ctx.rng).map_err(numerical)?;
        let theta = sample_weights(&rff, p.x(), ctx.observed_y, ctx.gp_noise_var, ctx.rng).map_err(numerical)?;
        let sets: Vec<usize> = match ctx.problem.full_set() {
            Some(full) => vec![full],
            None => (0..ctx.problem.n_sets()).collect(),
        };
        let maxima: Vec<_> = sets
            .iter()
            .map(|&j| {
                TsExpectation::new(&rff, &theta, &ctx.problem.sets[j], ctx.samples)
                    .maximise(self.search.for_set(ctx.problem, j), ctx.rng)
            })
            .collect();
        let k = argmax_first(maxima.iter().map(|m| m.value));
        Ok(choice(sets[k], maxima[k].x.clone()))
    }
}

fn choice(set: usize, x_ctrl: Vec<f64>) -> Choice {
    Choice { set, x_ctrl, phase: Phase::None, diagnostics: Diagnostics::default() }
}
