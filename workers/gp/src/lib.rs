//! Exact Gaussian-process surrogate for armada's Bayesian-optimisation and level-set-estimation
//! experiments, on faer (pure Rust, sequential, bit-reproducible).
//!
//! # Model
//!
//! `f ~ GP(0, k)` with a stationary ARD [`Kernel`] (squared exponential, Matern 3/2, Matern 5/2;
//! output variance `v`, lengthscales `l_i`), observations `y_i = f(x_i) + eps_i`,
//! `eps_i ~ N(0, lambda)` with fixed `lambda`. With `C = K(X,X) + lambda I = L L^T`,
//! `w = L^{-1} y` and `V = L^{-1} K(X, Q)`:
//!
//! * `mu(Q) = V^T w`, `Sigma(Q) = K(Q,Q) - V^T V`;
//! * `log p(y) = -1/2 w^T w - sum_i log L_ii - n/2 log 2pi`.
//!
//! [`Gp::append`] extends `L` by one row in O(n^2); [`CandidateCache`] extends `V` on a fixed
//! candidate set by one row in O(n m); [`CandidateCovariance`] keeps the full posterior
//! covariance on the candidates by exact rank-1 downdates, O(m^2) per observation. Jitter is
//! added only when a factorisation fails, and is always reported ([`JitterReport`]).
//! [`fit_map`] fits `[log v, log l_i]` by MAP with prior-screened multi-start bounded L-BFGS
//! ([`lbfgs`]); [`sample_prior`] / [`sample_posterior`] draw joint samples.
//!
//! # Arrays
//!
//! Designs, candidate sets and query sets are ndarray matrices, one point per row:
//! `ArrayView2<'_, f64>` where borrowed, `Array2<f64>` where the GP keeps them (taken without a
//! copy when row-major); a single point is an `ArrayView1<'_, f64>`. Each is laid out as one
//! contiguous row-major buffer once, at the call (see [`points`] for what copies and what
//! does not), and read as `&[f64]` rows inside.
//!
//! # Example
//!
//! ```
//! use armada_gp::{CandidateCache, Kernel};
//! use ndarray::Array2;
//!
//! let kernel = Kernel::squared_exponential(1.0, vec![0.3]);
//! let grid = Array2::from_shape_fn((11, 1), |(i, _)| i as f64 / 10.0);
//! let mut cache = CandidateCache::new(kernel, 1e-6, grid);
//! cache.observe_candidate(5, 0.7)?; // observe f(0.5) = 0.7
//! assert!((cache.mean()[5] - 0.7).abs() < 1e-5);
//! assert!(cache.var()[5] < 1e-5 && cache.var()[0] > 0.5);
//! # Ok::<(), armada_gp::GpError>(())
//! ```

mod chol;

pub mod candidates;
pub mod covariance;
pub mod error;
pub mod fit;
pub mod gp;
pub mod kernel;
pub mod lbfgs;
pub mod points;
pub mod rff;
pub mod sample;

pub use candidates::CandidateCache;
pub use chol::JitterReport;
pub use covariance::CandidateCovariance;
pub use error::GpError;
pub use fit::{
    fit_map, log_marginal_likelihood_and_grad, log_posterior, log_posterior_and_grad, LogNormalPrior, MapConfig, MapFit,
};
pub use gp::Gp;
pub use kernel::{Kernel, KernelKind};
pub use points::{Points, Rows};
pub use rff::{sample_weights, weight_posterior, RandomFourierFeatures};
pub use sample::{sample_posterior, sample_prior};
