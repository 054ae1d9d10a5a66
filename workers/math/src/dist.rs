//! The random variates the families draw, built on this crate's functions so that their bits
//! do not depend on the processor (`rand_distr`'s call the system's libm).
//!
//! Each implements `rand`'s [`Distribution`], so `rng.sample(StandardNormal)` reads as before.
//! Uniform draws come from the generator's 64-bit words by integer operations and exact
//! scalings; the only rounding is in this crate's functions and IEEE arithmetic.

pub use rand::distr::Distribution;
use rand::Rng;
use std::sync::OnceLock;

/// `2^-53`: a 53-bit integer times this is an exact double in `[0, 1)`.
const TWO_POW_M53: f64 = 1.0 / (1u64 << 53) as f64;

/// Uniform on `(0, 1]` (never 0, so that its logarithm is finite), from the top 53 bits.
#[inline]
fn open_closed01<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 * TWO_POW_M53
}

/// Uniform on `[0, 1)`, from the top 53 bits.
#[inline]
fn closed_open01<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * TWO_POW_M53
}

/// The standard normal `N(0, 1)`, by the ziggurat method of Marsaglia and Tsang (2000) with
/// 256 layers, in Doornik's (2005) form: the layer and the uniform come from disjoint bits of
/// one 64-bit word. About 99% of draws take one word and one comparison.
#[derive(Clone, Copy, Debug, Default)]
pub struct StandardNormal;

/// Where the tail begins (for 256 layers).
const ZIG_R: f64 = 3.654_152_885_361_009;
/// The area of each layer (and of the base strip with the tail).
const ZIG_V: f64 = 0.004_928_673_233_99;
const LAYERS: usize = 256;

/// The ziggurat's layer edges `x[i]` (decreasing, `x[1] = R`, `x[256] = 0`, `x[0] = V / f(R)`
/// the base strip's width as if it were a rectangle) and `f[i] = exp(-x[i]^2 / 2)`.
struct Ziggurat {
    x: [f64; LAYERS + 1],
    f: [f64; LAYERS + 1],
}

/// Built once, with this crate's `exp` and `ln`: the same table on every processor.
fn ziggurat() -> &'static Ziggurat {
    static TABLE: OnceLock<Ziggurat> = OnceLock::new();
    TABLE.get_or_init(|| {
        let pdf = |x: f64| crate::exp(-0.5 * x * x);
        let mut x = [0.0; LAYERS + 1];
        x[0] = ZIG_V / pdf(ZIG_R);
        x[1] = ZIG_R;
        for i in 1..LAYERS - 1 {
            // Layer i has area V: x[i] (f(x[i+1]) - f(x[i])) = V.
            x[i + 1] = (-2.0 * crate::ln(ZIG_V / x[i] + pdf(x[i]))).sqrt();
        }
        x[LAYERS] = 0.0;
        Ziggurat { x, f: x.map(pdf) }
    })
}

impl Distribution<f64> for StandardNormal {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let zig = ziggurat();
        loop {
            let bits = rng.next_u64();
            let i = (bits & 0xff) as usize;
            // Uniform on [-1, 1) from the top 53 bits, disjoint from the layer's 8.
            let u = (bits >> 11) as f64 * (2.0 * TWO_POW_M53) - 1.0;
            let x = u * zig.x[i];
            if x.abs() < zig.x[i + 1] {
                return x;
            }
            if i == 0 {
                // The tail beyond R (Marsaglia 1964): exact, by rejection.
                loop {
                    let a = -crate::ln(open_closed01(rng)) / ZIG_R;
                    let b = -crate::ln(open_closed01(rng));
                    if 2.0 * b >= a * a {
                        return if u < 0.0 { -(ZIG_R + a) } else { ZIG_R + a };
                    }
                }
            }
            // The wedge between the layer's rectangle and the curve.
            let y = zig.f[i] + (zig.f[i + 1] - zig.f[i]) * closed_open01(rng);
            if y < crate::exp(-0.5 * x * x) {
                return x;
            }
        }
    }
}

/// The normal `N(mean, sd^2)`: `mean + sd z`.
#[derive(Clone, Copy, Debug)]
pub struct Normal {
    mean: f64,
    sd: f64,
}

impl Normal {
    /// Refuses a negative or non-finite standard deviation.
    pub fn new(mean: f64, sd: f64) -> Result<Self, String> {
        if !(sd >= 0.0 && sd.is_finite() && mean.is_finite()) {
            return Err(format!("a normal needs a finite mean and a finite sd >= 0, not N({mean}, {sd}^2)"));
        }
        Ok(Self { mean, sd })
    }
}

impl Distribution<f64> for Normal {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.mean + self.sd * rng.sample(StandardNormal)
    }
}

/// The gamma distribution with `shape` k and `scale` theta (mean `k theta`), by Marsaglia and
/// Tsang (2000): for `k >= 1` a squeeze and a log test on a transformed normal; for `k < 1`
/// a `Gamma(k + 1)` draw times `U^(1/k)`.
#[derive(Clone, Copy, Debug)]
pub struct Gamma {
    shape: f64,
    scale: f64,
}

impl Gamma {
    /// Refuses a shape or scale that is not positive and finite.
    pub fn new(shape: f64, scale: f64) -> Result<Self, String> {
        if !(shape > 0.0 && shape.is_finite() && scale > 0.0 && scale.is_finite()) {
            return Err(format!("a gamma needs a positive finite shape and scale, not ({shape}, {scale})"));
        }
        Ok(Self { shape, scale })
    }
}

/// A `Gamma(shape, 1)` draw for `shape >= 1`.
fn gamma_at_least_one<R: Rng + ?Sized>(shape: f64, rng: &mut R) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x: f64 = rng.sample(StandardNormal);
        let t = 1.0 + c * x;
        if t <= 0.0 {
            continue;
        }
        let v = t * t * t;
        let u = open_closed01(rng);
        let x2 = x * x;
        if u < 1.0 - 0.0331 * x2 * x2 || crate::ln(u) < 0.5 * x2 + d * (1.0 - v + crate::ln(v)) {
            return d * v;
        }
    }
}

impl Distribution<f64> for Gamma {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let unit = if self.shape >= 1.0 {
            gamma_at_least_one(self.shape, rng)
        } else {
            let g = gamma_at_least_one(self.shape + 1.0, rng);
            g * crate::exp(crate::ln(open_closed01(rng)) / self.shape)
        };
        unit * self.scale
    }
}

/// The chi-squared distribution with `k` degrees of freedom: `Gamma(k / 2, 2)`.
#[derive(Clone, Copy, Debug)]
pub struct ChiSquared(Gamma);

impl ChiSquared {
    /// Refuses `k` that is not positive and finite.
    pub fn new(k: f64) -> Result<Self, String> {
        Gamma::new(0.5 * k, 2.0)
            .map(Self)
            .map_err(|_| format!("a chi-squared needs positive finite degrees of freedom, not {k}"))
    }
}

impl Distribution<f64> for ChiSquared {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.0.sample(rng)
    }
}

/// The beta distribution `Beta(a, b)`: `X / (X + Y)` with `X ~ Gamma(a)`, `Y ~ Gamma(b)`.
#[derive(Clone, Copy, Debug)]
pub struct Beta {
    a: Gamma,
    b: Gamma,
}

impl Beta {
    /// Refuses parameters that are not positive and finite.
    pub fn new(a: f64, b: f64) -> Result<Self, String> {
        match (Gamma::new(a, 1.0), Gamma::new(b, 1.0)) {
            (Ok(a), Ok(b)) => Ok(Self { a, b }),
            _ => Err(format!("a beta needs positive finite parameters, not ({a}, {b})")),
        }
    }
}

impl Distribution<f64> for Beta {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let x = self.a.sample(rng);
        let y = self.b.sample(rng);
        x / (x + y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// The Kolmogorov-Smirnov distance between the sample and a CDF.
    fn ks(mut xs: Vec<f64>, cdf: impl Fn(f64) -> f64) -> f64 {
        xs.sort_by(f64::total_cmp);
        let n = xs.len() as f64;
        xs.iter()
            .enumerate()
            .map(|(i, &x)| {
                let c = cdf(x);
                (c - i as f64 / n).abs().max((c - (i + 1) as f64 / n).abs())
            })
            .fold(0.0, f64::max)
    }

    fn draws(d: impl Distribution<f64>, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| d.sample(&mut rng)).collect()
    }

    fn mean_var(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let m = xs.iter().sum::<f64>() / n;
        (m, xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0))
    }

    /// The table closes: every layer has area V, the edges decrease to 0, and the top
    /// layer's recursion lands next to 0 (the last edge is set, not computed).
    #[test]
    fn ziggurat_layers_have_equal_areas() {
        let z = ziggurat();
        assert_eq!(z.x[1], ZIG_R);
        for i in 1..LAYERS - 1 {
            assert!(z.x[i + 1] < z.x[i], "x[{i}]");
            let area = z.x[i] * (z.f[i + 1] - z.f[i]);
            assert!((area - ZIG_V).abs() < 1e-12 * ZIG_V, "layer {i}: area {area}");
        }
        // The top layer: x[255] (1 - f(x[255])) is V to the published constants' precision.
        let top = z.x[LAYERS - 1] * (1.0 - z.f[LAYERS - 1]);
        assert!((top - ZIG_V).abs() < 1e-6 * ZIG_V, "top layer area {top}");
        // The base strip: the rectangle below f(R) plus the tail's mass, V.
        let tail = (std::f64::consts::PI / 2.0).sqrt() * crate::erfc(ZIG_R / std::f64::consts::SQRT_2);
        assert!((ZIG_R * z.f[1] + tail - ZIG_V).abs() < 1e-9 * ZIG_V);
    }

    /// 2 million draws against the normal CDF (the KS distance's 1% point is 1.15e-3), their
    /// moments, and the tail's frequency beyond R (where the ziggurat samples otherwise).
    #[test]
    fn standard_normal_has_the_normal_law() {
        let xs = draws(StandardNormal, 2_000_000, 1);
        let d = ks(xs.clone(), crate::std_normal_cdf);
        assert!(d < 1.15e-3, "KS distance {d}");
        let (m, v) = mean_var(&xs);
        assert!(m.abs() < 4.0 * (1.0f64 / 2e6).sqrt(), "mean {m}");
        assert!((v - 1.0).abs() < 4.0 * (2.0f64 / 2e6).sqrt(), "variance {v}");
        let beyond = xs.iter().filter(|x| x.abs() > ZIG_R).count() as f64;
        let expected = 2e6 * crate::erfc(ZIG_R / std::f64::consts::SQRT_2);
        assert!((beyond - expected).abs() < 4.0 * expected.sqrt(), "{beyond} beyond R, expected {expected}");
        let beyond4 = xs.iter().filter(|x| **x > 4.0).count() as f64;
        let expected4 = 2e6 * crate::std_normal_cdf(-4.0);
        assert!((beyond4 - expected4).abs() < 4.0 * expected4.sqrt(), "{beyond4} above 4, expected {expected4}");
    }

    /// Shapes 1 and 2 have closed-form CDFs; 0.3 (below 1, the other branch) and 7.5 are
    /// checked by their moments; the scale multiplies.
    #[test]
    fn gamma_has_the_gamma_law() {
        let d1 = ks(draws(Gamma::new(1.0, 1.0).unwrap(), 400_000, 2), |x| -crate::expm1(-x));
        assert!(d1 < 2.6e-3, "shape 1: KS {d1}");
        let d2 = ks(draws(Gamma::new(2.0, 1.0).unwrap(), 400_000, 3), |x| 1.0 - crate::exp(-x) * (1.0 + x));
        assert!(d2 < 2.6e-3, "shape 2: KS {d2}");
        for (k, theta) in [(0.3, 1.0), (7.5, 0.5), (0.05, 3.0)] {
            let xs = draws(Gamma::new(k, theta).unwrap(), 400_000, 4);
            assert!(xs.iter().all(|x| *x >= 0.0 && x.is_finite()));
            let (m, v) = mean_var(&xs);
            let (em, ev) = (k * theta, k * theta * theta);
            assert!((m - em).abs() < 5.0 * (ev / 4e5).sqrt(), "shape {k}: mean {m} vs {em}");
            assert!((v - ev).abs() < 0.05 * ev, "shape {k}: variance {v} vs {ev}");
        }
    }

    #[test]
    fn chi_squared_and_beta_have_their_laws() {
        // Chi-squared with 2 degrees of freedom is exponential with mean 2.
        let d = ks(draws(ChiSquared::new(2.0).unwrap(), 400_000, 5), |x| -crate::expm1(-0.5 * x));
        assert!(d < 2.6e-3, "chi2(2): KS {d}");
        // Beta(2, 1) has CDF x^2, Beta(1, 1) is uniform.
        let d = ks(draws(Beta::new(2.0, 1.0).unwrap(), 400_000, 6), |x| x * x);
        assert!(d < 2.6e-3, "beta(2, 1): KS {d}");
        let d = ks(draws(Beta::new(1.0, 1.0).unwrap(), 400_000, 7), |x| x);
        assert!(d < 2.6e-3, "beta(1, 1): KS {d}");
        let xs = draws(Beta::new(3.5, 10.0).unwrap(), 400_000, 8);
        let (m, v) = mean_var(&xs);
        let (a, b) = (3.5, 10.0);
        let (em, ev) = (a / (a + b), a * b / ((a + b) * (a + b) * (a + b + 1.0)));
        assert!((m - em).abs() < 5.0 * (ev / 4e5).sqrt() && (v - ev).abs() < 0.02 * ev, "beta(3.5, 10): {m}, {v}");
    }

    #[test]
    fn bad_parameters_are_refused_with_the_values() {
        assert!(Normal::new(0.0, -1.0).unwrap_err().contains("-1"));
        assert!(Gamma::new(0.0, 1.0).is_err() && Gamma::new(1.0, f64::NAN).is_err());
        assert!(Beta::new(1.0, 0.0).unwrap_err().contains("(1, 0)"));
        assert!(ChiSquared::new(-2.0).is_err());
    }
}
