//! Benchmarks of the LSE paper: a finite candidate set, the true function on it,
//! the threshold, and the GP model the paper fixes for it (paper Section 5).

mod carrier;
mod continuous;
mod finite2d;
mod toy1d;

pub use carrier::{
    carrier_lifetime, carrier_lifetime_gp, carrier_lifetime_raw, draw_gp_map, CARRIER_LIFETIME, CARRIER_LIFETIME_GP,
};
pub use continuous::{
    rosenbrock, sphere, styblinski_tang, uniform, uniform_points, BlackBox, ContinuousConfig, ContinuousProblem,
    CONTINUOUS_5D, NOMINAL_CARD_X,
};
pub use finite2d::{gp_sample_path_kron, grid_2d, himmelblau, sinusoidal, FINITE_2D};
pub use toy1d::{toy_1d, toy_1d_f, TOY_1D};

use armada_core::{ComponentDef, JobError, JobStreams};
use armada_gp::Kernel;
use ndarray::Array2;

/// Every benchmark of the family, in registry order: the finite ones, then the continuous
/// 5-D block (paper Section 5.2, [`ContinuousProblem`]).
pub const BENCHMARKS: [ComponentDef; 9] = [
    FINITE_2D[0],
    FINITE_2D[1],
    FINITE_2D[2],
    CARRIER_LIFETIME,
    CARRIER_LIFETIME_GP,
    TOY_1D,
    CONTINUOUS_5D[0],
    CONTINUOUS_5D[1],
    CONTINUOUS_5D[2],
];

/// A finite level-set problem: the candidate set `X`, the noise-free `f` on it,
/// the threshold `theta`, the fixed GP model (kernel and noise variance, which is
/// also the variance of the observation noise when observations are noisy), and how the
/// experiment observes.
#[derive(Clone, Debug)]
pub struct FiniteProblem {
    /// `X`, one candidate per row (row-major, so the episode's GP keeps a clone of it as it
    /// is).
    pub candidates: Array2<f64>,
    pub f: Vec<f64>,
    pub theta: f64,
    pub kernel: Kernel,
    pub noise_var: f64,
    pub protocol: Protocol,
}

/// How a finite experiment observes (paper Sections 5.1 and 5.3, Figure 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocol {
    /// `y = f(x) + eps`, `eps ~ N(0, noise_var)`. When false, `y = f(x)` exactly and
    /// `noise_var` is only the GP's nugget (paper Section 5.3).
    pub noisy_observations: bool,
    /// Whether a candidate may be queried again. When false, observed candidates are excluded
    /// from every argmax and Random draws from the unobserved ones (paper Section 5.3).
    pub allow_repeats: bool,
    /// A fixed initial candidate instead of a uniform random one (Figure 2 starts
    /// at `x = -5`).
    pub initial_index: Option<usize>,
}

impl Protocol {
    /// The synthetic experiments (Section 5.1): noisy data, repeats allowed, random initial point.
    pub const NOISY: Protocol = Protocol { noisy_observations: true, allow_repeats: true, initial_index: None };
    /// The real-data experiment (Section 5.3): exact observations, no candidate queried twice.
    pub const NOISE_FREE_NO_REPEAT: Protocol =
        Protocol { noisy_observations: false, allow_repeats: false, initial_index: None };
}

impl Default for Protocol {
    fn default() -> Self {
        Protocol::NOISY
    }
}

impl FiniteProblem {
    /// The finite benchmark `name` of a job with these streams (`gp-sample-path` draws its
    /// `f` from the environment stream `fpath`).
    pub fn for_benchmark(name: &str, streams: &JobStreams) -> Result<Self, JobError> {
        Ok(match name {
            "gp-sample-path" => gp_sample_path_kron(&mut streams.env("fpath"))?,
            "sinusoidal" => sinusoidal(),
            "himmelblau" => himmelblau(),
            "carrier-lifetime" => carrier_lifetime(),
            "carrier-lifetime-gp" => carrier_lifetime_gp(),
            "toy-1d" => toy_1d(),
            other => return Err(JobError::Invalid(format!("`{other}` is not a finite lse benchmark"))),
        })
    }

    /// Fraction of candidates in the true upper set `H* = {f >= theta}`.
    pub fn upper_fraction(&self) -> f64 {
        self.f.iter().filter(|&&v| v >= self.theta).count() as f64 / self.f.len() as f64
    }
}
