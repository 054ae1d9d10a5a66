//! The algorithms: the proposed method (paper and code mode), UCB-PSQ, TS-PSQ,
//! ETC-50 and UCB-CVS. Each chooses a control set and its control values from one iteration's
//! [`Context`]; the episode plays the choice (draws the random part, observes, pays).

pub mod etc;
pub mod proposed;
pub mod psq;
pub mod ucb_cvs;

use armada_core::{JobError, StreamRng};
use ndarray::ArrayView2;

use crate::acquisition::{optimise_set_drawn, SetDraws};
use crate::maximize::{MaximizeConfig, Maximum};
use crate::problem::Problem;
use crate::surrogate::{Posterior, SetCache};

/// What every algorithm sees in one iteration.
pub struct Context<'a> {
    pub problem: &'a Problem,
    pub post: &'a Posterior,
    /// The run's fixed MC sample set `S`, one sample of every variable per row (`n_mc x dim`,
    /// drawn once per run; row-major, a view of the episode's own array).
    pub samples: ArrayView2<'a, f64>,
    /// Per-set caches of the kernel factor over the random part, up to date with `post`.
    pub caches: &'a [SetCache],
    /// The GP's training inputs and outputs so far (the initial design included), in the
    /// order of `post`: one input per row, a view of the GP's own storage.
    pub observed_x: ArrayView2<'a, f64>,
    pub observed_y: &'a [f64],
    /// The surrogate's noise variance `lambda`.
    pub gp_noise_var: f64,
    pub stats: &'a PlayStats,
    pub rng: &'a mut StreamRng,
}

impl Context<'_> {
    /// The same iteration seen through another posterior (with caches that match it).
    pub fn with_posterior<'b>(&'b mut self, post: &'b Posterior, caches: &'b [SetCache]) -> Context<'b> {
        Context {
            problem: self.problem,
            post,
            samples: self.samples.reborrow(),
            caches,
            observed_x: self.observed_x.reborrow(),
            observed_y: self.observed_y,
            gp_noise_var: self.gp_noise_var,
            stats: self.stats,
            rng: &mut *self.rng,
        }
    }
}

/// Plays so far (the initial design is not a play: it costs nothing and counts for no set).
#[derive(Clone, Debug, PartialEq)]
pub struct PlayStats {
    /// Iteration counter `t` (number of plays so far).
    pub t: usize,
    pub counts: Vec<usize>,
    pub cost_sums: Vec<f64>,
    pub spent: f64,
}

impl PlayStats {
    pub fn new(n_sets: usize) -> Self {
        Self { t: 0, counts: vec![0; n_sets], cost_sums: vec![0.0; n_sets], spent: 0.0 }
    }

    pub fn record(&mut self, set: usize, cost: f64) {
        self.t += 1;
        self.counts[set] += 1;
        self.cost_sums[set] += cost;
        self.spent += cost;
    }
}

/// Phase of an iteration, as recorded in the `phase` metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Single-phase methods (UCB-PSQ, TS-PSQ, UCB-CVS).
    None = 0,
    Explore = 1,
    Exploit = 2,
}

/// Diagnostics of the proposed method and ETC (NaN / 0 where not applicable).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Diagnostics {
    pub alpha: f64,
    pub lcb_bar: f64,
    pub threshold: f64,
    pub n_s1: usize,
    pub n_s3: usize,
    /// ETC: 1-based group of the play, `n_groups + 1` once committed.
    pub group: usize,
}

impl Default for Diagnostics {
    fn default() -> Self {
        Self { alpha: f64::NAN, lcb_bar: f64::NAN, threshold: f64::NAN, n_s1: 0, n_s3: 0, group: 0 }
    }
}

/// One decision: the set, its control values, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub set: usize,
    pub x_ctrl: Vec<f64>,
    pub phase: Phase,
    pub diagnostics: Diagnostics,
}

/// A decision rule.
pub trait Algorithm {
    fn choose(&mut self, ctx: &mut Context<'_>) -> Result<Choice, JobError>;
}

/// Warm-up and restart sizes for full and partial sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchConfig {
    pub full: MaximizeConfig,
    pub partial: MaximizeConfig,
}

impl SearchConfig {
    pub fn for_set(&self, problem: &Problem, set: usize) -> MaximizeConfig {
        if problem.sets[set].len() == problem.dim {
            self.full
        } else {
            self.partial
        }
    }
}

/// `(xhat_j, U_j)` (and `(xtilde_j, L_j)` if `lower` is given) for one set.
pub fn set_bounds(
    ctx: &mut Context<'_>,
    set: usize,
    upper: f64,
    lower: Option<f64>,
    search: &SearchConfig,
) -> (Maximum, Option<Maximum>) {
    set_bounds_many(ctx, &[set], upper, lower, search).pop().expect("one set")
}

/// [`set_bounds`] for each of `sets`, in order.
pub fn set_bounds_many(
    ctx: &mut Context<'_>,
    sets: &[usize],
    upper: f64,
    lower: Option<f64>,
    search: &SearchConfig,
) -> Vec<(Maximum, Option<Maximum>)> {
    let betas: Vec<f64> = std::iter::once(upper).chain(lower.map(|b| -b)).collect();
    let requests: Vec<(usize, &[f64])> = sets.iter().map(|&j| (j, &betas[..])).collect();
    set_maxima(ctx, &requests, search)
        .into_iter()
        .map(|mut out| {
            let low = if lower.is_some() { out.pop() } else { None };
            (out.pop().expect("one maximum per beta"), low)
        })
        .collect()
}

/// The maxima of `E_hat[mu + beta sigma]` of each request `(set, betas)`, one per `beta`, as
/// one call per request in this order would find them: the random draws are made request
/// after request, then the requests are optimised in parallel.
pub fn set_maxima(ctx: &mut Context<'_>, requests: &[(usize, &[f64])], search: &SearchConfig) -> Vec<Vec<Maximum>> {
    let problem = ctx.problem;
    let draws: Vec<SetDraws> = requests
        .iter()
        .map(|&(j, betas)| SetDraws::draw(ctx.rng, search.for_set(problem, j), problem.sets[j].len(), betas.len()))
        .collect();
    let (post, caches) = (ctx.post, ctx.caches);
    crate::parallel::map(requests.len(), |i| {
        let (j, betas) = requests[i];
        optimise_set_drawn(post, &problem.sets[j], &caches[j], betas, search.for_set(problem, j), &draws[i])
    })
}

/// Index of the largest value; the first on ties.
pub fn argmax_first(values: impl IntoIterator<Item = f64>) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (j, v) in values.into_iter().enumerate() {
        if v > best.1 {
            best = (j, v);
        }
    }
    best.0
}
