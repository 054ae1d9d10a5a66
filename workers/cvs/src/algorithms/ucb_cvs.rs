//! UCB-CVS (Tay et al. 2023), reference only: needs known costs (the mean costs).
//! `S_1 = {j : U_j + eps_t >= max_k U_k}`, then the cheapest set of `S_1` (ties: larger `U_j`).
//! The schedule is open (the paper's Introduction: choosing one is challenging); here it is linear in the
//! budget spent: `eps = eps0 max(1 - spent / (cut C), 0)`.

use armada_core::JobError;

use super::{argmax_first, set_bounds_many, Algorithm, Choice, Context, Diagnostics, Phase, SearchConfig};

pub struct UcbCvs {
    pub beta: f64,
    pub eps0: f64,
    pub eps_cut: f64,
    pub search: SearchConfig,
}

impl Algorithm for UcbCvs {
    fn choose(&mut self, ctx: &mut Context<'_>) -> Result<Choice, JobError> {
        let m = ctx.problem.n_sets();
        let sets: Vec<usize> = (0..m).collect();
        let maxima: Vec<_> =
            set_bounds_many(ctx, &sets, self.beta, None, &self.search).into_iter().map(|b| b.0).collect();
        let g = maxima.iter().map(|mx| mx.value).fold(f64::NEG_INFINITY, f64::max);
        let eps = self.eps0 * (1.0 - ctx.stats.spent / (self.eps_cut * ctx.problem.budget)).max(0.0);
        let costs = &ctx.problem.costs;
        let mut pick: Option<usize> = None;
        for j in (0..m).filter(|&j| maxima[j].value + eps >= g) {
            pick = match pick {
                Some(c) if costs[j] > costs[c] || (costs[j] == costs[c] && maxima[j].value <= maxima[c].value) => {
                    Some(c)
                }
                _ => Some(j),
            };
        }
        let set = pick.unwrap_or_else(|| argmax_first(maxima.iter().map(|mx| mx.value)));
        Ok(Choice { set, x_ctrl: maxima[set].x.clone(), phase: Phase::None, diagnostics: Diagnostics::default() })
    }
}
