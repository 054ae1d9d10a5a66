//! The GP surrogate of every algorithm and its expectations over the random partial query
//! (paper Eq. (1), with the squared exponential ARD kernel its appendix names).
//!
//! SE-ARD hyperparameters: fixed ([`GpConfig`]: `s2 = 1`, `ls = 0.2`, `lambda = 1e-4`, `m0 = 0`,
//! raw outputs), or a [`Hyper`] set that code mode refits at every exploitation step
//! ([`crate::refit`]).
//! The data live in an incremental [`armada_gp::Gp`] (O(n^2) per play); each iteration takes one
//! [`Posterior`] snapshot (`L`, `alpha = K^{-1} y`) that every expectation of that iteration
//! reuses.
//!
//! For a control set `I` with random complement `Ibar`, the SE kernel factorises over
//! coordinates: `k([x^I, s_n], x_a) = s2 A_a(x^I) B_na` with
//! `A_a = exp(-1/2 sum_{l in I} (x_l - x_al)^2 / ls_l^2)` and
//! `B_na = exp(-1/2 sum_{l in Ibar} (s_nl - x_al)^2 / ls_l^2)`. `B` depends only on the set, the
//! MC samples and the data, so it is computed once per set per iteration ([`SetExpectation`]).
//! Then `E[mu] = s2 sum_a A_a alpha_a bbar_a` costs O(n), and `E[sigma]` is one triangular
//! solve with one right-hand side per MC sample (BLAS-3), averaging per-sample standard
//! deviations (`E[u] = E[mu] + beta E[sigma]`), never `sqrt(E[sigma^2])`. A full control set is
//! the special case `Ibar = {}`, one "sample" with `B = 1`: plain `mu` and `sigma`.

use armada_core::JobError;
use armada_gp::{Gp, Kernel, Rows};
use armada_math as math;

use armada_linalg::LowerFactor;
use armada_linalg::{matmul, squared_norm};
use faer::{Accum, Mat, MatRef};
use ndarray::{ArrayView1, ArrayView2};

/// Posterior variance floor (GPyTorch clamps the predictive variance at 1e-10 in float64).
pub const VAR_FLOOR: f64 = 1e-10;

/// Hyperparameters of the SE-ARD GP with a constant prior mean.
#[derive(Clone, Debug, PartialEq)]
pub struct Hyper {
    pub lengthscales: Vec<f64>,
    pub outputscale: f64,
    pub mean: f64,
    pub noise_var: f64,
}

impl Hyper {
    pub fn kernel(&self) -> Kernel {
        Kernel::squared_exponential(self.outputscale, self.lengthscales.clone())
    }
}

/// Fixed GP hyperparameters (the reference codes' values; the paper states none).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpConfig {
    pub outputscale: f64,
    pub lengthscale: f64,
    pub noise_var: f64,
}

impl Default for GpConfig {
    fn default() -> Self {
        Self { outputscale: 1.0, lengthscale: 0.2, noise_var: 1e-4 }
    }
}

/// The GP data with its incremental Cholesky factor.
#[derive(Clone, Debug)]
pub struct Surrogate {
    gp: Gp,
    config: GpConfig,
}

impl Surrogate {
    pub fn new(config: GpConfig, dim: usize) -> Self {
        let kernel = Kernel::squared_exponential(config.outputscale, vec![config.lengthscale; dim]);
        Self { gp: Gp::new(kernel, config.noise_var), config }
    }

    /// Condition on one more observation in O(n^2).
    pub fn add(&mut self, x: ArrayView1<'_, f64>, y: f64) -> Result<(), JobError> {
        self.gp.append(x, y).map(|_| ()).map_err(|e| JobError::Numerical(format!("GP update: {e}")))
    }

    pub fn n_obs(&self) -> usize {
        self.gp.n_obs()
    }

    /// The training inputs (one per row, a view of the GP's storage) and outputs.
    pub fn data(&self) -> (ArrayView2<'_, f64>, &[f64]) {
        (self.gp.x(), self.gp.y())
    }

    pub fn config(&self) -> GpConfig {
        self.config
    }

    /// The posterior of this iteration: the factor as a dense matrix and `alpha = K^{-1} y`.
    pub fn posterior(&self) -> Posterior {
        Posterior::of_gp(&self.gp, 0.0)
    }
}

/// One iteration's posterior, shared by every expectation computed in that iteration.
#[derive(Clone, Debug)]
pub struct Posterior {
    pub dim: usize,
    pub n: usize,
    /// Training inputs, `n x dim` row-major (see [`Posterior::x`] for the matrix).
    pub(crate) x: Vec<f64>,
    /// Lower Cholesky factor of `K + lambda I`, kept for the many solves of an iteration.
    pub l: LowerFactor,
    /// `(K + lambda I)^{-1} (y - mean)`.
    pub alpha: Vec<f64>,
    /// Constant prior mean `m0` (0 unless refit).
    pub mean: f64,
    pub s2: f64,
    pub inv_ls2: Vec<f64>,
    /// `(K + lambda I)^{-1}`, only for [`SigmaMode::Rms`] (see [`Posterior::with_inverse`]).
    pub kinv: Option<Mat<f64>>,
}

impl Posterior {
    /// The posterior of `gp`, whose targets are `y - mean`.
    fn of_gp(gp: &Gp, mean: f64) -> Self {
        let l = LowerFactor::new(gp.cholesky_factor().as_ref());
        let n = gp.n_obs();
        let mut alpha = Mat::from_fn(n, 1, |i, _| gp.whitened_y()[i]);
        l.solve_transpose_in_place(alpha.as_mut());
        let kernel = gp.kernel();
        Posterior {
            dim: gp.x().ncols(),
            n,
            x: gp.x().iter().copied().collect(),
            l,
            alpha: (0..n).map(|i| alpha[(i, 0)]).collect(),
            mean,
            s2: kernel.variance,
            inv_ls2: kernel.lengthscales.iter().map(|l| 1.0 / (l * l)).collect(),
            kinv: None,
        }
    }

    /// The exact posterior of the data under refit hyperparameters (code mode, as the authors' code):
    /// one dense factorisation, O(n^3).
    /// `x` holds one input per row.
    pub fn with_hyper(x: ArrayView2<'_, f64>, y: &[f64], hyper: &Hyper) -> Result<Self, JobError> {
        let centred = y.iter().map(|v| v - hyper.mean).collect();
        let (gp, _) = Gp::fit(hyper.kernel(), hyper.noise_var, x.to_owned(), centred)
            .map_err(|e| JobError::Numerical(format!("refit posterior: {e}")))?;
        Ok(Self::of_gp(&gp, hyper.mean))
    }

    /// Adds `(K + lambda I)^{-1} = L^{-T} L^{-1}` (O(n^3), once per iteration).
    pub fn with_inverse(mut self) -> Self {
        let mut linv = Mat::<f64>::identity(self.n, self.n);
        self.l.solve_in_place(linv.as_mut());
        let mut kinv = Mat::zeros(self.n, self.n);
        matmul(kinv.as_mut(), Accum::Replace, linv.transpose(), linv.as_ref(), 1.0);
        self.kinv = Some(kinv);
        self
    }

    /// The training inputs, one per row (a view, no copy).
    pub fn x(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.n, self.dim), &self.x).expect("n x dim training inputs")
    }

    fn xa(&self, a: usize) -> &[f64] {
        &self.x[a * self.dim..(a + 1) * self.dim]
    }
}

/// `E_hat[mu]` and `E_hat[sigma]` of one control set over a fixed MC sample set, with
/// analytic gradients w.r.t. the controlled coordinates.
pub struct SetExpectation<'p> {
    post: &'p Posterior,
    ctrl: Vec<usize>,
    /// `B` for the samples that enter `E[sigma]`, `n x n_sigma` (one column per sample).
    /// Copied from the [`SetCache`] so that the solves read contiguous columns.
    b: Mat<f64>,
    /// `s2 alpha_a bbar_a`, with `bbar` the mean of `B` over all MC samples.
    mean_weights: Vec<f64>,
    /// Rms mode: `H = K^{-1} o G`.
    h: Option<Mat<f64>>,
    // Scratch, reused across evaluations; after [`SetExpectation::moments`], the state of its
    // point that [`SetExpectation::gradient`] continues from.
    xc: Vec<f64>,
    a: Vec<f64>,
    kc: Mat<f64>,
    v: Mat<f64>,
    /// `1/sigma_s`, 0 where the variance floor is active.
    inv_sigma: Vec<f64>,
    g_all: Vec<f64>,
    /// Rms mode: the gradients, computed with the moments.
    rms_grad: (Vec<f64>, Vec<f64>),
    /// [`SetExpectation::moments_many`]'s columns, kept between its solves (a fresh matrix of
    /// up to [`COLUMNS_PER_SOLVE`] columns each time cost its zeroing and page faults).
    many: Mat<f64>,
}

/// Number of (point, sample) columns solved at once when evaluating many points.
const COLUMNS_PER_SOLVE: usize = 1024;

armada_core::choice! {
    /// How `E_hat[sigma]` is estimated.
    pub enum SigmaMode {
        /// The paper's estimator (`E[u] = E[mu] + beta E[sigma]`): the mean of per-sample posterior
        /// standard deviations over the first `n_sigma` MC samples; cost `n_sigma n^2` per point.
        PerSample = "per-sample",
        /// A documented compute reduction, NOT the paper's estimator: `sqrt(E_hat[sigma^2])` over all
        /// `N` samples, `E[sigma^2] = s2 - s2^2 A^T (K^{-1} o G) A` with `G = mean_n B_n B_n^T`;
        /// cost `n^2` per point. By Jensen it is `>= E[sigma]`; exact for a full set.
        Rms = "rms",
    }
}

/// `B` of one control set, grown by one row per observation (the MC samples and the set are
/// fixed for a run, so old rows never change): row sums over all MC samples and the entries of
/// the samples that enter `E[sigma]`.
#[derive(Clone, Debug)]
pub struct SetCache {
    random: Vec<usize>,
    n_mc: usize,
    n_sigma: usize,
    /// `sum_n B_na` for every data point `a`.
    bsum: Vec<f64>,
    /// `B_sa` for the first `n_sigma` samples, row-major by data point (`n x n_sigma`).
    b: Vec<f64>,
    mode: SigmaMode,
    /// Rms mode: `B_na` for every sample, one row per data point.
    b_all: Vec<Vec<f64>>,
    /// Rms mode: lower triangle of `G_ab = mean_n B_na B_nb`, row `a` holds `b <= a`.
    gram: Vec<Vec<f64>>,
}

impl Default for SetCache {
    fn default() -> Self {
        Self {
            random: Vec::new(),
            n_mc: 1,
            n_sigma: 1,
            bsum: Vec::new(),
            b: Vec::new(),
            mode: SigmaMode::PerSample,
            b_all: Vec::new(),
            gram: Vec::new(),
        }
    }
}

impl SetCache {
    /// An empty cache for control set `ctrl` in `dim` dimensions, with `n_mc` MC samples of
    /// which the first `n_sigma` enter `E[sigma]`. A full set uses one "sample" with `B = 1`.
    pub fn new(dim: usize, ctrl: &[usize], n_mc: usize, n_sigma: usize) -> Self {
        Self::with_mode(dim, ctrl, n_mc, n_sigma, SigmaMode::PerSample)
    }

    pub fn with_mode(dim: usize, ctrl: &[usize], n_mc: usize, n_sigma: usize, mode: SigmaMode) -> Self {
        let random: Vec<usize> = (0..dim).filter(|l| !ctrl.contains(l)).collect();
        let (n_mc, n_sigma) = if random.is_empty() { (1, 1) } else { (n_mc, n_sigma.clamp(1, n_mc)) };
        Self { random, n_mc, n_sigma, mode, ..Self::default() }
    }

    /// A cache for the same set, samples and mode that has seen no data (for a posterior with
    /// other lengthscales).
    pub fn emptied(&self) -> Self {
        Self { random: self.random.clone(), n_mc: self.n_mc, n_sigma: self.n_sigma, mode: self.mode, ..Self::default() }
    }

    /// Whether expectations from this cache need [`Posterior::with_inverse`].
    pub fn needs_inverse(&self) -> bool {
        self.mode == SigmaMode::Rms
    }

    /// Add the rows of the data points the cache has not seen; `samples` is `n_mc x dim`, one
    /// sample per row (laid out once: a row-major view is read in place, any other copied).
    pub fn update(&mut self, post: &Posterior, samples: ArrayView2<'_, f64>) {
        let samples = Rows::new(samples);
        let samples = samples.as_slice();
        let d = post.dim;
        for a in self.bsum.len()..post.n {
            let xa = post.xa(a);
            let mut sum = 0.0;
            let mut row = Vec::new();
            for s in 0..self.n_mc {
                let mut r2 = 0.0;
                for &l in &self.random {
                    let diff = samples[s * d + l] - xa[l];
                    r2 += diff * diff * post.inv_ls2[l];
                }
                let bsa = math::exp(-0.5 * r2);
                sum += bsa;
                if s < self.n_sigma {
                    self.b.push(bsa);
                }
                if self.mode == SigmaMode::Rms {
                    row.push(bsa);
                }
            }
            self.bsum.push(sum);
            if self.mode == SigmaMode::Rms {
                let g: Vec<f64> = self
                    .b_all
                    .iter()
                    .chain(std::iter::once(&row))
                    .map(|other| other.iter().zip(&row).map(|(p, q)| p * q).sum::<f64>() / self.n_mc as f64)
                    .collect();
                self.gram.push(g);
                self.b_all.push(row);
            }
        }
    }
}

impl<'p> SetExpectation<'p> {
    /// The expectation of control set `ctrl` under `post`, from a cache that has seen every
    /// data point of `post`.
    pub fn new(post: &'p Posterior, ctrl: &[usize], cache: &SetCache) -> Self {
        let n = post.n;
        assert_eq!(cache.bsum.len(), n, "SetCache::update must see every data point first");
        let ns = cache.n_sigma;
        let b = Mat::from_fn(n, ns, |a, s| cache.b[a * ns + s]);
        let mean_weights = (0..n).map(|a| post.s2 * post.alpha[a] * cache.bsum[a] / cache.n_mc as f64).collect();
        // A full set has one "sample": both estimators coincide, and the batched solve is faster.
        let h = (cache.mode == SigmaMode::Rms && !cache.random.is_empty()).then(|| {
            let kinv = post.kinv.as_ref().expect("rms mode needs Posterior::with_inverse");
            Mat::from_fn(n, n, |a, b| {
                let g = if b <= a { cache.gram[a][b] } else { cache.gram[b][a] };
                kinv[(a, b)] * g
            })
        });
        Self {
            post,
            ctrl: ctrl.to_vec(),
            b,
            mean_weights,
            h,
            xc: vec![0.0; ctrl.len()],
            a: vec![0.0; n],
            kc: Mat::zeros(n, ns),
            v: Mat::zeros(n, ns),
            inv_sigma: vec![0.0; ns],
            g_all: vec![0.0; n],
            rms_grad: (vec![0.0; ctrl.len()], vec![0.0; ctrl.len()]),
            many: Mat::zeros(0, 0),
        }
    }

    /// Number of controlled coordinates (the dimension of the search box).
    pub fn dim(&self) -> usize {
        self.ctrl.len()
    }

    pub fn n_sigma(&self) -> usize {
        self.b.ncols()
    }

    /// `A_a(x^I)` into `self.a`, and `E[mu]`.
    fn fill_a(&mut self, xc: &[f64]) -> f64 {
        for a in 0..self.post.n {
            let xa = self.post.xa(a);
            let mut r2 = 0.0;
            for (k, &l) in self.ctrl.iter().enumerate() {
                let diff = xc[k] - xa[l];
                r2 += diff * diff * self.post.inv_ls2[l];
            }
            self.a[a] = -0.5 * r2;
        }
        math::lanes::exp_in_place(&mut self.a);
        let mut mu = self.post.mean;
        for (a, w) in self.a.iter().zip(&self.mean_weights) {
            mu += a * w;
        }
        mu
    }

    #[allow(clippy::needless_range_loop)] // index loops mirror the column layout
    /// `(E[mu], E[sigma])` at many points (one per row of `points`, laid out once), solving
    /// up to [`COLUMNS_PER_SOLVE`] (point, sample) columns per triangular solve.
    pub fn moments_many(&mut self, points: ArrayView2<'_, f64>, mu: &mut [f64], sigma: &mut [f64]) {
        let points = Rows::new(points);
        let points = points.as_slice();
        let dim = self.dim();
        if self.h.is_some() {
            for (p, x) in points.chunks(dim).enumerate() {
                (mu[p], sigma[p]) = self.moments_rms(x, None);
            }
            return;
        }
        let n = self.post.n;
        let ns = self.n_sigma();
        let n_points = mu.len();
        let per_solve = (COLUMNS_PER_SOLVE / ns).max(1);
        let mut many = std::mem::replace(&mut self.many, Mat::zeros(0, 0));
        if many.nrows() != n || many.ncols() < per_solve.min(n_points) * ns {
            many = Mat::zeros(n, per_solve.min(n_points) * ns);
        }
        let mut start = 0;
        while start < n_points {
            let end = (start + per_solve).min(n_points);
            // Every entry of these columns is written before the solve reads it.
            let mut kc = many.as_mut().subcols_mut(0, (end - start) * ns);
            for p in start..end {
                mu[p] = self.fill_a(&points[p * dim..(p + 1) * dim]);
                for s in 0..ns {
                    let col = (p - start) * ns + s;
                    kernel_column(self.post.s2, &self.a, self.b.col(s), kc.as_mut().col_mut(col));
                }
            }
            self.post.l.solve_in_place(kc.as_mut());
            for p in start..end {
                let mut sum = 0.0;
                for s in 0..ns {
                    let vv = squared_norm(
                        kc.as_ref().col((p - start) * ns + s).try_as_col_major().expect("contiguous").as_slice(),
                    );
                    sum += (self.post.s2 - vv).max(VAR_FLOOR).sqrt();
                }
                sigma[p] = sum / ns as f64;
            }
            start = end;
        }
        self.many = many;
    }

    /// `(E[mu], E[sigma])` at `xc` with their gradients w.r.t. the controlled coordinates.
    pub fn moments_grad(&mut self, xc: &[f64], dmu: &mut [f64], dsigma: &mut [f64]) -> (f64, f64) {
        let moments = self.moments(xc);
        self.gradient(dmu, dsigma);
        moments
    }

    /// `(E[mu], E[sigma])` at `xc` (one triangular solve), keeping what
    /// [`SetExpectation::gradient`] needs at this point.
    #[allow(clippy::needless_range_loop)] // index loops mirror the formulas
    pub fn moments(&mut self, xc: &[f64]) -> (f64, f64) {
        self.xc.copy_from_slice(xc);
        if self.h.is_some() {
            let mut grad = std::mem::take(&mut self.rms_grad);
            let moments = self.moments_rms(xc, Some((&mut grad.0, &mut grad.1)));
            self.rms_grad = grad;
            return moments;
        }
        let ns = self.n_sigma();
        let s2 = self.post.s2;
        let mu = self.fill_a(xc);
        for s in 0..ns {
            kernel_column(s2, &self.a, self.b.col(s), self.kc.col_mut(s));
        }
        self.v.copy_from(&self.kc);
        self.post.l.solve_in_place(self.v.as_mut());
        // sigma_s, and 1/sigma_s where the floor is not active (zero gradient under the clamp).
        let mut sigma_sum = 0.0;
        for s in 0..ns {
            let vv = squared_norm(self.v.col(s).try_as_col_major().expect("contiguous").as_slice());
            let var = s2 - vv;
            let sd = var.max(VAR_FLOOR).sqrt();
            sigma_sum += sd;
            self.inv_sigma[s] = if var > VAR_FLOOR { 1.0 / sd } else { 0.0 };
        }
        (mu, sigma_sum / ns as f64)
    }

    /// The gradients of `E[mu]` and `E[sigma]` at the point of the last
    /// [`SetExpectation::moments`] call (a second triangular solve).
    #[allow(clippy::needless_range_loop)] // index loops mirror the formulas
    pub fn gradient(&mut self, dmu: &mut [f64], dsigma: &mut [f64]) {
        if self.h.is_some() {
            dmu.copy_from_slice(&self.rms_grad.0);
            dsigma.copy_from_slice(&self.rms_grad.1);
            return;
        }
        let n = self.post.n;
        let ns = self.n_sigma();
        // W = (K + lambda I)^{-1} k_s for every sample.
        self.post.l.solve_transpose_in_place(self.v.as_mut());
        dmu.fill(0.0);
        dsigma.fill(0.0);
        // d sigma_s / d x_l = (1/sigma_s) sum_a w_as k_as (x_l - x_al) / ls_l^2; g_a sums over s
        // (column by column, contiguous).
        self.g_all.fill(0.0);
        for s in 0..ns {
            let (w_col, k_col) = (self.v.col(s), self.kc.col(s));
            for ((g, w), k) in self.g_all.iter_mut().zip(w_col.iter()).zip(k_col.iter()) {
                *g += w * k * self.inv_sigma[s];
            }
        }
        for a in 0..n {
            let g = self.g_all[a] / ns as f64;
            let m = self.a[a] * self.mean_weights[a];
            let xa = self.post.xa(a);
            for (k, &l) in self.ctrl.iter().enumerate() {
                let scaled = (self.xc[k] - xa[l]) * self.post.inv_ls2[l];
                dmu[k] -= m * scaled;
                dsigma[k] += g * scaled;
            }
        }
    }
}

impl SetExpectation<'_> {
    /// Rms mode: `E[mu]` and `sqrt(s2 - s2^2 A^T H A)`, with gradients if asked.
    #[allow(clippy::needless_range_loop)] // index loops mirror the formulas
    fn moments_rms(&mut self, xc: &[f64], grads: Option<(&mut [f64], &mut [f64])>) -> (f64, f64) {
        let n = self.post.n;
        let s2 = self.post.s2;
        let mu = self.fill_a(xc);
        let h = self.h.as_ref().expect("rms mode");
        let mut ha = vec![0.0; n];
        matmul(
            faer::MatMut::from_column_major_slice_mut(&mut ha, n, 1),
            Accum::Replace,
            h.as_ref(),
            MatRef::from_column_major_slice(&self.a, n, 1),
            1.0,
        );
        let q: f64 = ha.iter().zip(&self.a).map(|(x, y)| x * y).sum();
        let var = s2 - s2 * s2 * q;
        let sd = var.max(VAR_FLOOR).sqrt();
        if let Some((dmu, dsigma)) = grads {
            dmu.fill(0.0);
            dsigma.fill(0.0);
            // d var / d x_l = -2 s2^2 sum_a (H A)_a dA_a/dx_l, dA_a/dx_l = -A_a (x_l - x_al) / ls_l^2.
            let dvar_scale = if var > VAR_FLOOR { s2 * s2 / sd } else { 0.0 };
            for a in 0..n {
                let m = self.a[a] * self.mean_weights[a];
                let g = dvar_scale * ha[a] * self.a[a];
                let xa = self.post.xa(a);
                for (k, &l) in self.ctrl.iter().enumerate() {
                    let scaled = (xc[k] - xa[l]) * self.post.inv_ls2[l];
                    dmu[k] -= m * scaled;
                    dsigma[k] += g * scaled;
                }
            }
        }
        (mu, sd)
    }
}

/// `k_s = s2 A o B_s`, the kernel column of one (point, sample) pair, on contiguous slices.
fn kernel_column(s2: f64, a: &[f64], b: faer::ColRef<'_, f64>, k: faer::ColMut<'_, f64>) {
    let b = b.try_as_col_major().expect("a column of a column-major matrix").as_slice();
    let k = k.try_as_col_major_mut().expect("a column of a column-major matrix").as_slice_mut();
    for ((k, a), b) in k.iter_mut().zip(a).zip(b) {
        *k = s2 * a * b;
    }
}

/// Scatter a controlled partial query and a random part into a full query.
pub fn full_query(ctrl: &[usize], xc: &[f64], random_part: &[f64]) -> Vec<f64> {
    let mut x = random_part.to_vec();
    for (k, &l) in ctrl.iter().enumerate() {
        x[l] = xc[k];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_gp::Points;
    use ndarray::{aview1, ShapeBuilder};

    /// One point as a `1 x d` matrix view.
    fn aview2_row(x: &[f64]) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((1, x.len()), x).unwrap()
    }

    /// `samples` (`n x d` row-major) as a matrix view.
    fn mview(samples: &[f64], d: usize) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((samples.len() / d, d), samples).unwrap()
    }
    use rand::{Rng, SeedableRng};

    fn toy(d: usize, n: usize, seed: u64) -> Surrogate {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut s = Surrogate::new(GpConfig::default(), d);
        for _ in 0..n {
            let x: Vec<f64> = (0..d).map(|_| rng.random()).collect();
            let y = x.iter().map(|v| (3.0 * v).sin()).sum::<f64>();
            s.add(aview1(&x), y).unwrap();
        }
        s
    }

    /// Brute force: build every `[x^I, s_n]` and predict with armada-gp's own posterior.
    fn brute(s: &Surrogate, ctrl: &[usize], xc: &[f64], samples: &[f64], n_sigma: usize) -> (f64, f64) {
        let d = s.posterior().dim;
        let n_mc = samples.len() / d;
        let mut pts = Points::new(d);
        for i in 0..n_mc {
            pts.push(&full_query(ctrl, xc, &samples[i * d..(i + 1) * d]));
        }
        let (mean, var) = s.gp.predict(pts.view());
        let emu = mean.iter().sum::<f64>() / n_mc as f64;
        let esd = var[..n_sigma].iter().map(|v| v.max(VAR_FLOOR).sqrt()).sum::<f64>() / n_sigma as f64;
        (emu, esd)
    }

    #[test]
    fn factorised_expectation_equals_brute_force() {
        let d = 5;
        let s = toy(d, 30, 1);
        let post = s.posterior();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let samples: Vec<f64> = (0..64 * d).map(|_| rng.random()).collect();
        for ctrl in [vec![0, 3], vec![1, 2, 4], vec![0, 1, 2, 3, 4]] {
            for n_sigma in [64, 16] {
                let mut cache = SetCache::new(d, &ctrl, 64, n_sigma);
                cache.update(&post, mview(&samples, d));
                let mut e = SetExpectation::new(&post, &ctrl, &cache);
                let xc: Vec<f64> = (0..ctrl.len()).map(|_| rng.random()).collect();
                let (mut dm, mut ds) = (vec![0.0; ctrl.len()], vec![0.0; ctrl.len()]);
                let (mu, sd) = e.moments_grad(&xc, &mut dm, &mut ds);
                let full = ctrl.len() == d;
                let (bm, bs) =
                    brute(&s, &ctrl, &xc, if full { &samples[..d] } else { &samples }, if full { 1 } else { n_sigma });
                assert!((mu - bm).abs() < 1e-9, "{ctrl:?}: mu {mu} vs {bm}");
                assert!((sd - bs).abs() < 1e-9, "{ctrl:?}: sigma {sd} vs {bs}");
                let (mut m2, mut s2) = ([0.0], [0.0]);
                e.moments_many(aview2_row(&xc), &mut m2, &mut s2);
                assert!((m2[0] - mu).abs() < 1e-12 && (s2[0] - sd).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn rms_mode_equals_the_root_mean_square_of_the_brute_force_sigma() {
        let d = 5;
        let s = toy(d, 30, 8);
        let post = s.posterior().with_inverse();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let samples: Vec<f64> = (0..48 * d).map(|_| rng.random()).collect();
        for ctrl in [vec![0, 3], vec![0, 1, 2, 3, 4]] {
            let mut cache = SetCache::with_mode(d, &ctrl, 48, 4, SigmaMode::Rms);
            cache.update(&post, mview(&samples, d));
            let mut e = SetExpectation::new(&post, &ctrl, &cache);
            let xc: Vec<f64> = (0..ctrl.len()).map(|_| rng.random()).collect();
            let k = ctrl.len();
            let (mut dm, mut ds) = (vec![0.0; k], vec![0.0; k]);
            let (mu, sd) = e.moments_grad(&xc, &mut dm, &mut ds);
            let n_pts = if k == d { 1 } else { 48 };
            let mut pts = Points::new(d);
            for smp in samples.chunks(d).take(n_pts) {
                pts.push(&full_query(&ctrl, &xc, smp));
            }
            let (mean, var) = s.gp.predict(pts.view());
            let rms = (var.iter().sum::<f64>() / n_pts as f64).sqrt();
            assert!((mu - mean.iter().sum::<f64>() / n_pts as f64).abs() < 1e-9);
            assert!((sd - rms).abs() < 1e-8, "{ctrl:?}: {sd} vs {rms}");
            let h = 1e-6;
            let mut xp = xc.clone();
            xp[0] += h;
            let mut xm = xc.clone();
            xm[0] -= h;
            let (mut t1, mut t2) = (vec![0.0; k], vec![0.0; k]);
            let sp = e.moments_grad(&xp, &mut t1, &mut t2).1;
            let sm = e.moments_grad(&xm, &mut t1, &mut t2).1;
            assert!((ds[0] - (sp - sm) / (2.0 * h)).abs() < 1e-5 * (1.0 + ds[0].abs()));
        }
    }

    #[test]
    fn refit_hyperparameters_with_a_prior_mean_match_a_direct_prediction() {
        let d = 4;
        let s = toy(d, 20, 12);
        let (x, y) = s.data();
        let hyper = Hyper { lengthscales: vec![0.3, 0.15, 0.5, 0.25], outputscale: 1.7, mean: 0.4, noise_var: 1e-4 };
        let post = Posterior::with_hyper(x, y, &hyper).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
        let samples: Vec<f64> = (0..24 * d).map(|_| rng.random()).collect();
        let ctrl = [1, 3];
        let mut cache = SetCache::new(d, &ctrl, 24, 24);
        cache.update(&post, mview(&samples, d));
        let mut e = SetExpectation::new(&post, &ctrl, &cache);
        let xc = [0.2, 0.7];
        let (mut dm, mut ds) = ([0.0; 2], [0.0; 2]);
        let (mu, sd) = e.moments_grad(&xc, &mut dm, &mut ds);
        // Direct: mean + k^T K^{-1} (y - mean) and k(x,x) - k^T K^{-1} k, by dense solves.
        use faer::linalg::solvers::Solve;
        let kernel = hyper.kernel();
        let n = x.nrows();
        let mut kmat = kernel.gram(x);
        for i in 0..n {
            kmat[(i, i)] += hyper.noise_var;
        }
        let llt = kmat.llt(faer::Side::Lower).unwrap();
        let resid = Mat::from_fn(n, 1, |i, _| y[i] - hyper.mean);
        let alpha = llt.solve(&resid);
        let (mut m_sum, mut s_sum) = (0.0, 0.0);
        for smp in samples.chunks(d) {
            let q = full_query(&ctrl, &xc, smp);
            let k = Mat::from_fn(n, 1, |i, _| kernel.eval(&q, &x.row(i).to_vec()));
            m_sum += hyper.mean + (0..n).map(|i| k[(i, 0)] * alpha[(i, 0)]).sum::<f64>();
            let w = llt.solve(&k);
            let var = kernel.eval(&q, &q) - (0..n).map(|i| k[(i, 0)] * w[(i, 0)]).sum::<f64>();
            s_sum += var.max(VAR_FLOOR).sqrt();
        }
        assert!((mu - m_sum / 24.0).abs() < 1e-9, "{mu} vs {}", m_sum / 24.0);
        assert!((sd - s_sum / 24.0).abs() < 1e-9, "{sd} vs {}", s_sum / 24.0);
    }

    #[test]
    fn incremental_cache_equals_a_fresh_one() {
        let d = 4;
        let mut s = toy(d, 10, 5);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
        let samples: Vec<f64> = (0..16 * d).map(|_| rng.random()).collect();
        let mut grown = SetCache::new(d, &[0, 2], 16, 8);
        grown.update(&s.posterior(), mview(&samples, d));
        s.add(aview1(&[0.1, 0.2, 0.3, 0.4]), 0.5).unwrap();
        let post = s.posterior();
        grown.update(&post, mview(&samples, d));
        let mut fresh = SetCache::new(d, &[0, 2], 16, 8);
        fresh.update(&post, mview(&samples, d));
        assert_eq!((grown.bsum, grown.b), (fresh.bsum, fresh.b));
    }

    /// The MC samples and query points in column-major layout give, bit for bit, the
    /// numbers of their row-major originals (laid out once at the call).
    #[test]
    fn column_major_samples_and_points_give_the_numbers_of_their_row_major_copy() {
        let d = 4;
        let s = toy(d, 10, 7);
        let post = s.posterior();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let samples: Vec<f64> = (0..16 * d).map(|_| rng.random()).collect();
        let rows = mview(&samples, d);
        let mut cols = ndarray::Array2::zeros((16, d).f());
        cols.assign(&rows);
        let ctrl = [1, 2];
        let (mut a, mut b) = (SetCache::new(d, &ctrl, 16, 8), SetCache::new(d, &ctrl, 16, 8));
        a.update(&post, rows);
        b.update(&post, cols.view());
        assert_eq!((&a.bsum, &a.b), (&b.bsum, &b.b));
        let points: Vec<f64> = (0..5 * ctrl.len()).map(|_| rng.random()).collect();
        let points = mview(&points, ctrl.len());
        let points_t = points.t().to_owned();
        let (mut ma, mut sa, mut mb, mut sb) = (vec![0.0; 5], vec![0.0; 5], vec![0.0; 5], vec![0.0; 5]);
        SetExpectation::new(&post, &ctrl, &a).moments_many(points, &mut ma, &mut sa);
        SetExpectation::new(&post, &ctrl, &b).moments_many(points_t.t(), &mut mb, &mut sb);
        assert_eq!((ma, sa), (mb, sb));
    }

    #[test]
    fn gradients_match_central_differences() {
        let d = 4;
        let s = toy(d, 25, 3);
        let post = s.posterior();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let samples: Vec<f64> = (0..32 * d).map(|_| rng.random()).collect();
        for ctrl in [vec![1, 3], vec![0, 1, 2, 3]] {
            let mut cache = SetCache::new(d, &ctrl, 32, 32);
            cache.update(&post, mview(&samples, d));
            let mut e = SetExpectation::new(&post, &ctrl, &cache);
            let xc: Vec<f64> = (0..ctrl.len()).map(|_| rng.random()).collect();
            let k = ctrl.len();
            let (mut dm, mut ds) = (vec![0.0; k], vec![0.0; k]);
            e.moments_grad(&xc, &mut dm, &mut ds);
            let h = 1e-6;
            for j in 0..k {
                let (mut xp, mut xm) = (xc.clone(), xc.clone());
                xp[j] += h;
                xm[j] -= h;
                let (mut t1, mut t2) = (vec![0.0; k], vec![0.0; k]);
                let (mp, sp) = e.moments_grad(&xp, &mut t1, &mut t2);
                let (mm, sm) = e.moments_grad(&xm, &mut t1, &mut t2);
                assert!((dm[j] - (mp - mm) / (2.0 * h)).abs() < 1e-5 * (1.0 + dm[j].abs()));
                assert!((ds[j] - (sp - sm) / (2.0 * h)).abs() < 1e-5 * (1.0 + ds[j].abs()));
            }
        }
    }
}
