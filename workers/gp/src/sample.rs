//! Joint Gaussian samples of the prior or posterior process on a point set.
//!
//! A sample is `f = mu + L z` with `Sigma = L L^T` (jittered only if the factorisation fails) and
//! `z ~ N(0, I)`. Standard normals are drawn from `armada_math::dist::StandardNormal` column by column
//! (sample 0's `|xq|` values first), so a seeded rng gives bit-identical samples; all linear
//! algebra is sequential.

use armada_linalg::matmul;
use armada_math::dist::{Distribution, StandardNormal};
use faer::{Accum, Mat};
use ndarray::ArrayView2;
use rand::Rng;

use crate::chol::{cholesky_jittered, JitterReport};
use crate::error::GpError;
use crate::gp::check_hyper;
use crate::gp::Gp;
use crate::kernel::Kernel;
use crate::points::Rows;

/// `n_samples` joint draws of `f(xq)` under the prior `GP(0, k)`, one per column
/// (`|xq| x n_samples`). One query point per row of `xq` (a non-standard-layout `xq` is laid
/// out anew once, O(|xq| d)).
pub fn sample_prior<R: Rng + ?Sized>(
    kernel: &Kernel,
    xq: ArrayView2<'_, f64>,
    n_samples: usize,
    rng: &mut R,
) -> Result<(Mat<f64>, JitterReport), GpError> {
    check_hyper(kernel, 0.0)?;
    let xq = Rows::new(xq);
    check_dim(kernel, &xq)?;
    let cov = kernel.gram_rows(&xq);
    draw(&vec![0.0; xq.len()], &cov, kernel.variance, n_samples, rng)
}

/// `n_samples` joint draws of the latent `f(xq)` under the posterior of `gp`, one per column.
/// `xq` as in [`sample_prior`].
pub fn sample_posterior<R: Rng + ?Sized>(
    gp: &Gp,
    xq: ArrayView2<'_, f64>,
    n_samples: usize,
    rng: &mut R,
) -> Result<(Mat<f64>, JitterReport), GpError> {
    check_hyper(gp.kernel(), gp.noise_var())?;
    let xq = Rows::new(xq);
    check_dim(gp.kernel(), &xq)?;
    let (mean, _) = gp.predict_rows(&xq);
    let cov = gp.posterior_cov_rows(&xq);
    draw(&mean, &cov, gp.kernel().variance, n_samples, rng)
}

fn check_dim(kernel: &Kernel, xq: &Rows<'_>) -> Result<(), GpError> {
    if xq.dim() != kernel.dim() {
        return Err(GpError::DimensionMismatch { expected: kernel.dim(), got: xq.dim() });
    }
    if !xq.all_finite() {
        return Err(GpError::NonFinite("xq"));
    }
    Ok(())
}

/// `mean 1^T + L Z` with `Z` filled column by column from the rng.
fn draw<R: Rng + ?Sized>(
    mean: &[f64],
    cov: &Mat<f64>,
    variance: f64,
    n_samples: usize,
    rng: &mut R,
) -> Result<(Mat<f64>, JitterReport), GpError> {
    let m = mean.len();
    if m == 0 || n_samples == 0 {
        return Ok((Mat::zeros(m, n_samples), JitterReport::default()));
    }
    let (l, report) = cholesky_jittered(cov.as_ref(), variance)?;
    let mut z = Mat::<f64>::zeros(m, n_samples);
    for s in 0..n_samples {
        for i in 0..m {
            z[(i, s)] = StandardNormal.sample(rng);
        }
    }
    let mut out = Mat::from_fn(m, n_samples, |i, _| mean[i]);
    matmul(out.as_mut(), Accum::Add, l.as_ref(), z.as_ref(), 1.0);
    Ok((out, report))
}
