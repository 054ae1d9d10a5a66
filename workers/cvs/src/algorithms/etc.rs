//! ETC-50: explore-then-commit variant of UCB-CVS (paper, Experiments section). Groups of sets are played in
//! order, `plays_per_group` iterations each (UCB-PSQ restricted to the group), then every set
//! is a candidate (so the full set, when there is one).

use armada_core::JobError;

use super::{argmax_first, set_bounds, set_bounds_many, Algorithm, Choice, Context, Diagnostics, Phase, SearchConfig};
use crate::problem::Problem;

armada_core::choice! {
    /// How the exploration groups are formed (the paper's rule is ambiguous; the reference codes differ).
    pub enum Grouping {
        /// The paper's: equal number of controlled variables, increasing size, full set excluded.
        Size = "size",
        /// Tay et al.'s code: `[[0,1,2],[3,4,5]]` (cost rank).
        Tay = "tay",
        /// The authors' code: `[[4,0,1,2],[5,3,6]]`.
        Code = "code",
    }
}

impl Grouping {
    pub fn groups(self, problem: &Problem) -> Vec<Vec<usize>> {
        match self {
            Self::Tay => vec![vec![0, 1, 2], vec![3, 4, 5]],
            Self::Code => vec![vec![4, 0, 1, 2], vec![5, 3, 6]],
            Self::Size => {
                let mut sizes: Vec<usize> = problem.sets.iter().map(|s| s.len()).filter(|&k| k < problem.dim).collect();
                sizes.sort_unstable();
                sizes.dedup();
                sizes.iter().map(|&k| (0..problem.n_sets()).filter(|&j| problem.sets[j].len() == k).collect()).collect()
            }
        }
    }
}

pub struct Etc {
    pub beta: f64,
    pub groups: Vec<Vec<usize>>,
    pub plays_per_group: usize,
    pub plays: Vec<usize>,
    pub search: SearchConfig,
}

impl Etc {
    pub fn new(beta: f64, groups: Vec<Vec<usize>>, plays_per_group: usize, search: SearchConfig) -> Self {
        let plays = vec![0; groups.len()];
        Self { beta, groups, plays_per_group, plays, search }
    }
}

impl Algorithm for Etc {
    fn choose(&mut self, ctx: &mut Context<'_>) -> Result<Choice, JobError> {
        let stage = self.plays.iter().position(|&p| p < self.plays_per_group);
        let candidates: Vec<usize> = match stage {
            Some(g) => {
                self.plays[g] += 1;
                self.groups[g].clone()
            }
            None => (0..ctx.problem.n_sets()).collect(),
        };
        let full = candidates.iter().copied().find(|&j| ctx.problem.sets[j].len() == ctx.problem.dim);
        let (set, x_ctrl) = match full {
            Some(j) => (j, set_bounds(ctx, j, self.beta, None, &self.search).0.x),
            None => {
                let maxima: Vec<_> =
                    set_bounds_many(ctx, &candidates, self.beta, None, &self.search).into_iter().map(|b| b.0).collect();
                let k = argmax_first(maxima.iter().map(|m| m.value));
                (candidates[k], maxima[k].x.clone())
            }
        };
        let group = stage.map_or(self.groups.len() + 1, |g| g + 1);
        let phase = if stage.is_some() { Phase::Explore } else { Phase::Exploit };
        Ok(Choice { set, x_ctrl, phase, diagnostics: Diagnostics { group, ..Diagnostics::default() } })
    }
}
