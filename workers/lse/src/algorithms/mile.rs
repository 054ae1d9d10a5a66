//! MILE (Zanette et al. 2019) as the randomized-straddle paper runs it (paper Section 5.1):
//! RMILE with `eps = 0` and `gamma = -inf`, confidence `beta^{1/2} = 3`, finite sets only.
//!
//! With the current confident super-level set `S_{t-1} = {x' : mu(x') - beta^{1/2} sigma(x') > theta}`
//! (strict `>`), for a candidate query `x`:
//!
//! ```text
//! s(x)^2          = sigma^2(x) + sigma_noise^2
//! c(x', x)        = Cov(f(x'), f(x))
//! sigma_t^2(x'|x) = max(sigma^2(x') - c^2 / s^2, 0)
//! p(x'|x)         = Phi((mu(x') - beta^{1/2} sigma_t(x'|x) - theta) s / |c|)     if c != 0
//!                 = 1[mu(x') - beta^{1/2} sigma(x') > theta]                      if c == 0
//! a(x)            = sum_{x'} p(x'|x) - |S_{t-1}|
//! ```
//!
//! `p(x'|x)` is the probability, over the fantasy `y ~ N(mu(x), s^2)`, that `x'` is in the
//! confident set after observing `(x, y)`: `mu_t(x') = mu(x') + (c/s) Z` with `Z ~ N(0, 1)`.
//!
//! Cost: `N^2` terms per iteration. [`mile_af`] precomputes the per-`x'` quantities once per
//! iteration, skips the `x'` whose term is the same for every `x`, and evaluates the rest for
//! four candidates `x` at a time, reading their covariance rows side by side, without branches
//! and without allocating inside the double loop (see [`af_block`]). The result is bit for bit
//! that of the one-term-at-a-time loop [`af_one`].

use armada_gp::CandidateCovariance;
use armada_math::lanes::std_normal_cdf_in_place;
use armada_math::std_normal_cdf;

/// `|c|` below this is treated as 0: it only guards the `0/0` of a zero
/// numerator, since for any larger `|c|` the saturation tests below are exact.
pub const C_TINY: f64 = 1e-300;

/// `Phi(z)` rounds to exactly 1.0 in double precision for `z >= Z_ONE` (`1 - Phi(8.5) = 9.5e-18`,
/// below half an ulp of 1).
const Z_ONE: f64 = 8.5;

/// `Phi(z)` is treated as 0 for `z <= -Z_ZERO`: `Phi(-10) = 7.6e-24`, so over `N <= 10^6` terms
/// the sum changes by less than `1e-17`, far below its own rounding error.
const Z_ZERO: f64 = 10.0;

/// `p(x'|x)` of the module docs for one pair, straight from the formula: `dmu = mu(x') - theta`,
/// `var_p = sigma^2(x')`, `c = Cov(f(x'), f(x))`, `s2 = sigma^2(x) + sigma_noise^2`.
pub fn mile_probability(dmu: f64, var_p: f64, c: f64, s2: f64, beta_sqrt: f64) -> f64 {
    if c.abs() < C_TINY {
        return if dmu - beta_sqrt * var_p.max(0.0).sqrt() > 0.0 { 1.0 } else { 0.0 };
    }
    let sigma_t = (var_p.max(0.0) - c * c / s2).max(0.0).sqrt();
    std_normal_cdf((dmu - beta_sqrt * sigma_t) * s2.sqrt() / c.abs())
}

/// The MILE acquisition `a(x)` for every candidate `x` (module docs); excluded `x` get NaN so an
/// argmax never picks them. Every `x'` still counts in the sums.
///
/// Speed: with `num = mu(x') - theta - beta^{1/2} sigma_t(x'|x)` and `z = num s / |c|`,
/// Cauchy-Schwarz (`|c| <= sigma(x) sigma(x')`) and `s >= sigma(x)` give, for every `x`:
/// if `mu(x') - theta - beta^{1/2} sigma(x') > Z_ONE sigma(x')` then `z >= Z_ONE` and the term is
/// exactly 1.0; if `mu(x') - theta < 0` and `<= -Z_ZERO sigma(x')`, then `z <= -Z_ZERO` and the
/// term is below `Phi(-10)`. Those `x'` are counted once per iteration; the double loop runs
/// over the rest only, and inside it the same saturation tests on `z` leave `erfc` to the
/// terms that need it.
pub fn mile_af(cov: &CandidateCovariance, theta: f64, beta_sqrt: f64, excluded: Option<&[bool]>) -> Vec<f64> {
    let n = cov.len();
    let (active, offset) = active_set(cov, theta, beta_sqrt);
    let mut af = vec![f64::NAN; n];
    let tail_start = fill_blocks(cov, &active, offset, beta_sqrt, &mut af);
    for (x, a) in af.iter_mut().enumerate().skip(tail_start) {
        *a = af_one(cov, x, &active, beta_sqrt) + offset;
    }
    if let Some(mask) = excluded {
        for (a, &skip) in af.iter_mut().zip(mask) {
            if skip {
                *a = f64::NAN;
            }
        }
    }
    af
}

/// The `x'` whose term depends on `x`, and the sum of the others' terms minus `|S_{t-1}|`.
fn active_set(cov: &CandidateCovariance, theta: f64, beta_sqrt: f64) -> (ActiveSet, f64) {
    let (mean, var) = (cov.mean(), cov.var());
    let mut n_confident = 0usize; // |S_{t-1}|
    let mut n_always_one = 0usize;
    let mut active = ActiveSet::default();
    for (index, (&mu, &v)) in mean.iter().zip(var).enumerate() {
        let dmu = mu - theta;
        let sd = v.max(0.0).sqrt();
        let margin = dmu - beta_sqrt * sd;
        n_confident += (margin > 0.0) as usize;
        if margin > Z_ONE * sd {
            n_always_one += 1;
        } else if !(dmu < 0.0 && dmu <= -Z_ZERO * sd) {
            active.push(index, dmu, v.max(0.0), margin);
        }
    }
    // The integer part is exact; the fractional sums are added to it at the end.
    (active, n_always_one as f64 - n_confident as f64)
}

/// Fills `af` block by block ([`af_block`]): eight candidates a block in a copy compiled for
/// AVX-512F where it runs ([`armada_math::has_avx512`]), four in a copy compiled for AVX2
/// elsewhere (the baseline without it). Returns where the candidates that fill no block start.
fn fill_blocks(cov: &CandidateCovariance, active: &ActiveSet, offset: f64, beta_sqrt: f64, af: &mut [f64]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if armada_math::has_avx512() {
        #[target_feature(enable = "avx512f")]
        fn eight(cov: &CandidateCovariance, active: &ActiveSet, offset: f64, beta_sqrt: f64, af: &mut [f64]) -> usize {
            fill_blocks_by::<8>(cov, active, offset, beta_sqrt, af)
        }
        // SAFETY: the processor has AVX-512F (has_avx512).
        return unsafe { eight(cov, active, offset, beta_sqrt, af) };
    }
    fill_blocks_four(cov, active, offset, beta_sqrt, af)
}

armada_core::avx2_dispatch! {
    fn fill_blocks_four(cov: &CandidateCovariance, active: &ActiveSet, offset: f64, beta_sqrt: f64, af: &mut [f64]) -> usize {
        fill_blocks_by::<4>(cov, active, offset, beta_sqrt, af)
    }
}

/// [`fill_blocks`] with `L` candidates a block.
#[inline(always)]
fn fill_blocks_by<const L: usize>(
    cov: &CandidateCovariance,
    active: &ActiveSet,
    offset: f64,
    beta_sqrt: f64,
    af: &mut [f64],
) -> usize {
    let mut scratch = BlockScratch::default();
    let whole = af.len() - af.len() % L;
    let blocks = af[..whole].chunks_exact_mut(L);
    for (b, block) in blocks.enumerate() {
        let sums = af_block::<L>(cov, b * L, active, beta_sqrt, &mut scratch);
        for (a, sum) in block.iter_mut().zip(sums) {
            *a = sum + offset;
        }
    }
    whole
}

/// The `x'` whose term depends on `x` (see [`mile_af`]), one array per quantity, read in
/// step by the double loop.
#[derive(Default)]
struct ActiveSet {
    index: Vec<usize>,
    /// `mu(x') - theta`.
    dmu: Vec<f64>,
    /// `sigma^2(x')`.
    var: Vec<f64>,
    /// `1[x' in S_{t-1}]`, the term when `c = 0`.
    confident: Vec<f64>,
    /// `mu(x') - theta - beta^{1/2} sigma(x')`: `num` at `sigma_t = sigma(x')`, its least value.
    margin: Vec<f64>,
}

impl ActiveSet {
    fn push(&mut self, index: usize, dmu: f64, var: f64, margin: f64) {
        self.index.push(index);
        self.dmu.push(dmu);
        self.var.push(var);
        self.confident.push(f64::from(margin > 0.0));
        self.margin.push(margin);
    }
}

/// `sum_{x' active} p(x'|x)` for one candidate `x`, one term at a time: the reference for
/// [`af_block`], and the candidates that do not fill a block.
fn af_one(cov: &CandidateCovariance, x: usize, active: &ActiveSet, beta_sqrt: f64) -> f64 {
    let row = cov.cov_row(x);
    let s2 = cov.var()[x] + cov.noise_var();
    let s = s2.sqrt();
    let inv_s2 = 1.0 / s2;
    let mut sum = 0.0;
    for i in 0..active.index.len() {
        let (dmu, var, margin) = (active.dmu[i], active.var[i], active.margin[i]);
        let c = row[active.index[i]];
        let abs_c = c.abs();
        if abs_c < C_TINY {
            sum += active.confident[i];
            continue;
        }
        // `sigma_t` lies in [0, sigma(x')] and each operation giving `num_s` from it is
        // monotone, in floating point too, so `num_s` lies in [margin s, dmu s]: where
        // that interval decides the branch below, its square root is not needed (the
        // same term is added, so the sum is bit for bit the same).
        if margin * s >= Z_ONE * abs_c {
            sum += 1.0;
            continue;
        }
        if dmu * s <= -Z_ZERO * abs_c {
            continue;
        }
        let sigma_t = (var - c * c * inv_s2).max(0.0).sqrt();
        let num_s = (dmu - beta_sqrt * sigma_t) * s;
        // z = num_s / |c|, compared without dividing first.
        if num_s >= Z_ONE * abs_c {
            sum += 1.0;
        } else if num_s > -Z_ZERO * abs_c {
            sum += std_normal_cdf(num_s / abs_c);
        }
    }
    sum
}

/// Work space of [`af_block`], kept from block to block.
#[derive(Default)]
struct BlockScratch {
    /// Term `i * L + l` is `p(x'_i | x_l)`, once its `Phi` is filled in (`L` candidates a block).
    terms: Vec<f64>,
    /// `num_s` and `|c|` of every term (read for those that need `Phi`).
    num_s: Vec<f64>,
    abs_c: Vec<f64>,
    /// Bit `i * L + l` is set where the term needs `Phi(num_s / |c|)`.
    needs_phi: Vec<u64>,
    /// The terms that need `Phi`: where they go, and `z`, then `Phi(z)`.
    phi_at: Vec<usize>,
    phi: Vec<f64>,
}

/// [`af_one`] for the `L` candidates from `x0`, bit for bit: each lane does the same
/// floating-point operations in the same order, and a skipped term adds `+0.0`, which leaves
/// a sum of non-negative terms unchanged. In three passes, the first and the last without
/// branches (the candidates' rows read side by side, a lane per candidate in one vector):
/// every term except those that need `Phi` (5% of them on the sinusoidal runs); then those,
/// several at a time ([`std_normal_cdf_in_place`]); then each lane's sum, in `af_one`'s order.
/// Inlined into the copy of [`fill_blocks`] that runs, so that its lanes fill its registers.
#[inline(always)]
fn af_block<const L: usize>(
    cov: &CandidateCovariance,
    x0: usize,
    active: &ActiveSet,
    beta_sqrt: f64,
    scratch: &mut BlockScratch,
) -> [f64; L] {
    let n = cov.len();
    let rows: [&[f64]; L] = std::array::from_fn(|l| &cov.cov_row(x0 + l)[..n]);
    let s2: [f64; L] = std::array::from_fn(|l| cov.var()[x0 + l] + cov.noise_var());
    let len = active.index.len() * L;
    scratch.terms.resize(len, 0.0);
    scratch.num_s.resize(len, 0.0);
    scratch.abs_c.resize(len, 0.0);
    scratch.needs_phi.clear();
    scratch.needs_phi.resize(len.div_ceil(64), 0);
    block_terms(rows, s2, active, beta_sqrt, scratch);

    scratch.phi_at.clear();
    scratch.phi.clear();
    for (w, &word) in scratch.needs_phi.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let k = w * 64 + bits.trailing_zeros() as usize;
            scratch.phi_at.push(k);
            scratch.phi.push(scratch.num_s[k] / scratch.abs_c[k]);
            bits &= bits - 1;
        }
    }
    std_normal_cdf_in_place(&mut scratch.phi);
    for (&k, &p) in scratch.phi_at.iter().zip(&scratch.phi) {
        scratch.terms[k] = p;
    }
    block_sums::<L>(&scratch.terms)
}

/// The first pass of [`af_block`].
#[inline(always)]
fn block_terms<const L: usize>(
    rows: [&[f64]; L],
    s2: [f64; L],
    active: &ActiveSet,
    beta_sqrt: f64,
    scratch: &mut BlockScratch,
) {
    let s = s2.map(f64::sqrt);
    let inv_s2 = s2.map(|v| 1.0 / v);
    let len = active.index.len();
    let (index, dmu, var) = (&active.index[..len], &active.dmu[..len], &active.var[..len]);
    let (confident, margin) = (&active.confident[..len], &active.margin[..len]);
    let terms = scratch.terms[..len * L].chunks_exact_mut(L);
    let num_s_out = scratch.num_s[..len * L].chunks_exact_mut(L);
    let abs_c_out = scratch.abs_c[..len * L].chunks_exact_mut(L);
    for (i, ((term_out, num_s_out), abs_c_out)) in terms.zip(num_s_out).zip(abs_c_out).enumerate() {
        let c: [f64; L] = std::array::from_fn(|l| rows[l][index[i]]);
        let (dmu, var, confident, margin) = (dmu[i], var[i], confident[i], margin[i]);
        // Lanes in local arrays, so the compiler keeps each in one vector.
        let mut term = [0.0; L];
        let mut num_s = [0.0; L];
        let mut abs_c = [0.0; L];
        let mut needs_phi = [false; L];
        for l in 0..L {
            abs_c[l] = c[l].abs();
            let sigma_t = (var - c[l] * c[l] * inv_s2[l]).max(0.0).sqrt();
            num_s[l] = (dmu - beta_sqrt * sigma_t) * s[l];
            // The branches of `af_one`, in their order, as masks.
            let tiny = abs_c[l] < C_TINY;
            let surely_one = margin * s[l] >= Z_ONE * abs_c[l];
            let surely_zero = dmu * s[l] <= -Z_ZERO * abs_c[l];
            let one = surely_one | (!surely_zero & (num_s[l] >= Z_ONE * abs_c[l]));
            term[l] = if tiny {
                confident
            } else if one {
                1.0
            } else {
                0.0
            };
            needs_phi[l] = !tiny & !one & !surely_zero & (num_s[l] > -Z_ZERO * abs_c[l]);
        }
        term_out.copy_from_slice(&term);
        num_s_out.copy_from_slice(&num_s);
        abs_c_out.copy_from_slice(&abs_c);
        let mask = needs_phi.iter().enumerate().fold(0u64, |m, (l, &b)| m | (u64::from(b) << l));
        let k = i * L;
        scratch.needs_phi[k / 64] |= mask << (k % 64);
    }
}

/// The last pass of [`af_block`]: each lane's terms added in order.
#[inline(always)]
fn block_sums<const L: usize>(terms: &[f64]) -> [f64; L] {
    let mut sum = [0.0; L];
    for term in terms.chunks_exact(L) {
        for l in 0..L {
            sum[l] += term[l];
        }
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;
    use armada_gp::{Gp, Kernel};
    use armada_math::dist::StandardNormal;
    use ndarray::{s, Array2};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// Reference values of `Phi` from mpmath at 40 digits (`mpmath.ncdf(z)`, the script is
    /// `for z in [...]: print(mp.nstr(mp.ncdf(z), 20))` with `mp.mp.dps = 40`).
    #[test]
    #[allow(clippy::excessive_precision)] // the digits as mpmath printed them
    fn normal_cdf_matches_reference_values_in_both_tails() {
        let table = [
            (0.0, 0.5),
            (1.0, 0.841_344_746_068_542_95),
            (-1.0, 0.158_655_253_931_457_05),
            (1.96, 0.975_002_104_851_779_56),
            (-1.96, 0.024_997_895_148_220_436),
            (-3.0, 0.001_349_898_031_630_094_5),
            (3.5, 0.999_767_370_920_964_47),
            (-5.0, 2.866_515_718_791_939_1e-7),
            (-10.0, 7.619_853_024_160_526e-24),
            (-20.0, 2.753_624_118_606_233_7e-89),
            (-37.0, 5.725_571_222_524_576_8e-300),
        ];
        for (z, want) in table {
            let got = std_normal_cdf(z);
            // The rounding of -z/sqrt2 alone is amplified by the tail's condition number ~ z^2.
            let tol = 2e-15 * (1.0 + z * z);
            assert!((got - want).abs() <= tol * want, "Phi({z}) = {got:e}, want {want:e}");
        }
        // 1 - Phi(8) = 6.22e-16 is still resolved; 1 - Phi(8.5) = 9.5e-18 rounds to exactly 1,
        // which is what the saturation shortcut Z_ONE relies on.
        assert!((1.0 - std_normal_cdf(8.0) - 6.220_960_574_271_784e-16).abs() < 1.2e-16);
        assert_eq!(std_normal_cdf(Z_ONE), 1.0);
        assert!(std_normal_cdf(-Z_ZERO) < 1e-23);
    }

    /// A small problem with data: 25 candidates on [0, 4], 4 noisy observations.
    fn small_problem(noise: f64) -> (Kernel, Array2<f64>, Vec<usize>, Vec<f64>, CandidateCovariance) {
        let kernel = Kernel::squared_exponential(1.5, vec![0.6]);
        let cands = Array2::from_shape_fn((25, 1), |(i, _)| i as f64 / 6.0);
        let obs = vec![3usize, 9, 14, 21];
        let ys = vec![1.2, -0.4, 0.9, 1.6];
        let mut cov = CandidateCovariance::new(kernel.clone(), noise, cands.clone());
        for (&j, &y) in obs.iter().zip(&ys) {
            cov.observe_candidate(j, y).unwrap();
        }
        (kernel, cands, obs, ys, cov)
    }

    /// `p(x'|x)` against a Monte-Carlo over 1e5 fantasy observations
    /// `y ~ N(mu(x), s^2)`, each refitting the GP with `(x, y)` through `Gp::append` + `predict`
    /// (an independent route: Cholesky appends, not the covariance downdate). Pairs with
    /// positive and negative covariance and probabilities away from 0 and 1.
    #[test]
    fn probability_matches_monte_carlo_refits() {
        let noise = 0.05;
        let (theta, beta_sqrt) = (0.3, 1.0);
        let (kernel, cands, obs, ys, cov) = small_problem(noise);
        let x_obs = cands.select(ndarray::Axis(0), &obs);
        let (base, _) = Gp::fit(kernel, noise, x_obs, ys).unwrap();
        let (mu, var) = base.predict(cands.view());

        // Pick pairs (x', x) deterministically: the ones with the most extreme covariances
        // of each sign among pairs whose p is in (0.05, 0.95).
        let mut pairs = Vec::new();
        for sign in [1.0, -1.0] {
            let mut best = None;
            for x in 0..25 {
                for xp in 0..25 {
                    let c = cov.cov(xp, x);
                    let p = mile_probability(mu[xp] - theta, var[xp], c, var[x] + noise, beta_sqrt);
                    if c * sign > 0.0 && (0.05..0.95).contains(&p) && best.is_none_or(|(_, _, b)| c * sign > b) {
                        best = Some((xp, x, c * sign));
                    }
                }
            }
            let (xp, x, _) = best.expect("a pair with a moderate probability");
            pairs.push((xp, x));
        }
        assert!(cov.cov(pairs[1].0, pairs[1].1) < 0.0);

        let mut rng = ChaCha8Rng::seed_from_u64(99);
        let n_draws = 100_000;
        for (xp, x) in pairs {
            let s2 = var[x] + noise;
            let p = mile_probability(mu[xp] - theta, var[xp], cov.cov(xp, x), s2, beta_sqrt);
            let q = cands.slice(s![xp..xp + 1, ..]);
            let mut hits = 0usize;
            let mut var_after = f64::NAN;
            for _ in 0..n_draws {
                let y = mu[x] + s2.sqrt() * rng.sample::<f64, _>(StandardNormal);
                let mut gp = base.clone();
                gp.append(cands.row(x), y).unwrap();
                let (m1, v1) = gp.predict(q);
                var_after = v1[0];
                hits += (m1[0] - beta_sqrt * v1[0].sqrt() > theta) as usize;
            }
            // The one-step-ahead variance is deterministic: check it exactly.
            let c = cov.cov(xp, x);
            let sigma_t2 = var[xp] - c * c / s2;
            assert!((var_after - sigma_t2).abs() < 1e-10, "sigma_t^2: {var_after} vs {sigma_t2}");
            let freq = hits as f64 / n_draws as f64;
            let se = (p * (1.0 - p) / n_draws as f64).sqrt();
            assert!((freq - p).abs() < 4.5 * se, "pair ({xp},{x}) c={c:.3}: MC {freq} vs p {p} (se {se:.1e})");
        }
    }

    /// The pruned double loop of `mile_af` against the formula applied to every pair, with a
    /// mask, on a problem where some x' are saturated at 1, some at 0 and some are active.
    #[test]
    fn pruned_af_equals_the_plain_double_sum() {
        let noise = 1e-4;
        let (theta, beta_sqrt) = (0.5, 3.0);
        let (_, _, _, _, mut cov) = small_problem(noise);
        for (j, y) in [(0, 3.0), (1, 3.1), (2, 3.0), (24, -4.0), (23, -4.2), (22, -4.1), (22, -4.1)] {
            cov.observe_candidate(j, y).unwrap();
        }
        let mut excluded = vec![false; 25];
        excluded[5] = true;
        let af = mile_af(&cov, theta, beta_sqrt, Some(&excluded));
        let (mu, var) = (cov.mean(), cov.var());
        let s_count = (0..25).filter(|&k| mu[k] - beta_sqrt * var[k].sqrt() > theta).count();
        let mut n_saturated = (0, 0);
        for x in 0..25 {
            let plain: f64 = (0..25)
                .map(|xp| mile_probability(mu[xp] - theta, var[xp], cov.cov(xp, x), var[x] + noise, beta_sqrt))
                .sum::<f64>()
                - s_count as f64;
            if x == 5 {
                assert!(af[x].is_nan());
            } else {
                assert!((af[x] - plain).abs() < 1e-12, "x={x}: {} vs {plain}", af[x]);
            }
        }
        for xp in 0..25 {
            let (dmu, sd) = (mu[xp] - theta, var[xp].sqrt());
            n_saturated.0 += (dmu - beta_sqrt * sd > Z_ONE * sd) as usize;
            n_saturated.1 += (dmu <= -Z_ZERO * sd) as usize;
        }
        // The test covers both shortcuts.
        assert!(n_saturated.0 > 0 && n_saturated.1 > 0, "{n_saturated:?}");
        assert!(s_count > 0);
    }

    /// The four-candidate blocks against the one-term-at-a-time loop, bit for bit, on 103
    /// candidates (25 blocks and a tail of 3) with terms in every branch: `c = 0` exactly (a
    /// candidate 1,000 lengthscales away), saturated at 1 and at 0, and `Phi`.
    #[test]
    fn blocks_equal_the_one_term_loop_bit_for_bit() {
        let noise = 0.01;
        let kernel = Kernel::squared_exponential(2.0, vec![0.3]);
        let mut cands = Array2::from_shape_fn((103, 1), |(i, _)| i as f64 * 0.07);
        cands[[102, 0]] = 300.0;
        let mut cov = CandidateCovariance::new(kernel, noise, cands);
        for (j, y) in [(3, 2.5), (20, 2.8), (40, -2.0), (41, -2.2), (70, 0.4), (90, 1.1), (95, 3.0)] {
            cov.observe_candidate(j, y).unwrap();
        }
        for (theta, beta_sqrt) in [(0.5, 3.0), (0.0, 1.0), (1.5, 0.5)] {
            let af = mile_af(&cov, theta, beta_sqrt, None);
            let (active, offset) = active_set(&cov, theta, beta_sqrt);
            // The four-lane copy too (the one above runs eight where AVX-512 runs); 103
            // candidates leave a tail of 3 (7) that af_one fills in `mile_af`.
            let mut four = vec![f64::NAN; af.len()];
            let whole = fill_blocks_four(&cov, &active, offset, beta_sqrt, &mut four);
            assert_eq!(whole, 100);
            let mut branches = [0usize; 4]; // c = 0, 1, 0, Phi
            for (x, &a) in af.iter().enumerate() {
                let want = af_one(&cov, x, &active, beta_sqrt) + offset;
                assert_eq!(a.to_bits(), want.to_bits(), "theta {theta}, x {x}: {a} vs {want}");
                if x < whole {
                    assert_eq!(four[x].to_bits(), want.to_bits(), "theta {theta}, x {x}, four lanes");
                }
                let s = (cov.var()[x] + noise).sqrt();
                for i in 0..active.index.len() {
                    let c = cov.cov(active.index[i], x);
                    let (dmu, margin) = (active.dmu[i], active.margin[i]);
                    let sigma_t = (active.var[i] - c * c / (s * s)).max(0.0).sqrt();
                    let z = (dmu - beta_sqrt * sigma_t) * s / c.abs();
                    let k = if c.abs() < C_TINY {
                        0
                    } else if margin * s >= Z_ONE * c.abs() || z >= Z_ONE {
                        1
                    } else if dmu * s <= -Z_ZERO * c.abs() || z <= -Z_ZERO {
                        2
                    } else {
                        3
                    };
                    branches[k] += 1;
                }
            }
            assert!(branches.iter().all(|&b| b > 0), "theta {theta}: terms per branch {branches:?}");
        }
    }

    /// Hand-built case: a tight cluster of five candidates (spacing 0.1, lengthscale 1) and one
    /// isolated candidate 50 away, prior only, `theta = -1` (every mean is 1 above it; nothing is
    /// confident since `1 - 3 sigma < 0`). One observation in the cluster pins all five points
    /// (correlations >= 0.92), each then confident with probability about Phi(1) ~ 0.8; the
    /// isolated point can only gain itself. So MILE must query the cluster, and there its
    /// middle point (index 2), the one most correlated with the other four. The exact AF is
    /// also checked against a Monte-Carlo of the expected confident-set size by GP refits.
    #[test]
    fn picks_the_middle_of_the_correlated_cluster() {
        let noise = 0.01;
        let (theta, beta_sqrt) = (-1.0, 3.0);
        let kernel = Kernel::squared_exponential(1.0, vec![1.0]);
        let cands = Array2::from_shape_vec((6, 1), vec![0.0, 0.1, 0.2, 0.3, 0.4, 50.0]).unwrap();
        let cov = CandidateCovariance::new(kernel.clone(), noise, cands.clone());
        let af = mile_af(&cov, theta, beta_sqrt, None);
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let argmax = crate::algorithms::argmax(af.iter().copied(), crate::algorithms::TieBreak::LowestIndex, &mut rng);
        assert_eq!(argmax.0, 2, "{af:?}");
        // Symmetry of the cluster, and the isolated point far behind.
        assert!((af[0] - af[4]).abs() < 1e-12 && (af[1] - af[3]).abs() < 1e-12);
        assert!(af[2] > af[1] && af[1] > af[0] && af[0] > 3.0 * af[5]);

        let n_draws = 20_000;
        for x in [0usize, 2, 5] {
            let mut total = 0.0;
            let mut total_sq = 0.0;
            for _ in 0..n_draws {
                let y = (1.0 + noise).sqrt() * rng.sample::<f64, _>(StandardNormal);
                let mut gp = Gp::new(kernel.clone(), noise);
                gp.append(cands.row(x), y).unwrap();
                let (m1, v1) = gp.predict(cands.view());
                let size = m1.iter().zip(&v1).filter(|(m, v)| *m - beta_sqrt * v.sqrt() > theta).count() as f64;
                total += size;
                total_sq += size * size;
            }
            let mean = total / n_draws as f64;
            let se = ((total_sq / n_draws as f64 - mean * mean) / n_draws as f64).sqrt();
            assert!((mean - af[x]).abs() < 4.5 * se + 1e-9, "x={x}: MC {mean} vs a {} (se {se:.1e})", af[x]);
        }
    }
}
