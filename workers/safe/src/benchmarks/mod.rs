//! The four benchmarks of the paper's experiments (Section 5, Appendix B): true `f` and `g`,
//! grid, threshold, growth constants, noise and kernel-variance prior centre.
//!
//! | name | s | x | h | L_f / L'_g | noise | v0 |
//! |---|---|---|---|---|---|---|
//! | `clinical` | dose 1 | dose 2 in `[0, 2]` | 0.9 | 0.436 / 0.035 | none | 1 |
//! | `synthetic-2d` | Branin coord. 1 | Branin coord. 2 | 2.0 | 10.166 / 0.86 | none | 9 |
//! | `synthetic-3d` | z1 | (z2, z3) | 2 | 1.9 / 1 | none | 1 |
//! | `pendulum` (reconstruction) | torque | initial angle | 9 | 9.1 / 0.5 | N(0, 0.05) | 9 |

pub mod branin;
pub mod clinical;
pub mod hartmann;
pub mod pendulum;

use crate::grid::Grid;
use armada_core::{ComponentDef, JobError, Params};
use armada_gp::Rows;
use ndarray::{aview1, ArrayView1};

/// A benchmark's true `(f(s, x), g(s, x))` at an action: `s` and the point `x` of `D_X`.
///
/// Tabulating it on the grid calls it once per candidate, with `x` a view of a row of the
/// grid's contiguous buffer (no copy, no layout check); benchmarks index `x` directly.
pub type Eval = fn(f64, ArrayView1<'_, f64>) -> (f64, f64);

/// The true problem of one job, tabulated on its grid.
#[derive(Clone, Debug)]
pub struct Benchmark {
    pub name: &'static str,
    pub grid: Grid,
    /// True `f` at every candidate, flat order.
    pub f: Vec<f64>,
    /// True `g` at every candidate, flat order.
    pub g: Vec<f64>,
    /// Safety threshold: `(s, x)` is safe iff `g <= h`.
    pub h: f64,
    /// Upper bound on the growth of f in s (paper eq. 4), as the benchmark states it.
    pub l_f: f64,
    /// Lower bound on the growth of g in s (paper eq. 5), as the benchmark states it.
    pub l_g: f64,
    /// Variance of the Gaussian observation noise on f and g (0: noiseless).
    pub noise_var: f64,
    /// The GP's fixed likelihood variance lambda (paper App. B.2.2).
    pub gp_noise_var: f64,
    /// Centre of the kernel-variance prior (paper App. B.2.2) and its initial value.
    pub v0: f64,
    /// The box `D_X` the seed points are drawn from (uniformly, as the authors' code).
    pub x_box: Vec<(f64, f64)>,
    /// Regret reference `f(s_*, x_*)` when it is not the grid's safe optimum (3-D, `fstar = continuous`).
    pub fstar_override: Option<f64>,
    /// `(f, g)` at any point, for the off-grid seeds.
    pub eval: Eval,
}

impl Benchmark {
    /// Builds a benchmark from its validated parameters.
    pub fn from_params(name: &str, p: &Params) -> Result<Self, JobError> {
        let settings = Settings::of(name, p)?;
        let def = Definition::of(name, &settings)?;
        let grid = Grid::new(def.n, &def.x_axes);
        let (f, g) = Rows::new(grid.points.view()).iter().map(|z| (def.eval)(z[0], aview1(&z[1..]))).unzip();
        let fstar_override = match settings.fstar {
            FStar::Grid => None,
            FStar::Continuous => Some(hartmann::CONTINUOUS_MAX),
        };
        Ok(Benchmark {
            name: def.name,
            grid,
            f,
            g,
            h: settings.h,
            l_f: settings.l_f,
            l_g: settings.l_g,
            noise_var: def.noise_var,
            gp_noise_var: def.gp_noise_var,
            v0: settings.v0,
            x_box: def.x_axes.iter().map(|&(lo, hi, _)| (lo, hi)).collect(),
            fstar_override,
            eval: def.eval,
        })
    }

    /// Checks assumption 3 (paper Section 2) before any work: every seed action `(0, x)` of the
    /// x-grid is safe under the chosen threshold. Returns the largest `g(0, x)` otherwise.
    pub fn check_seed_column(name: &str, p: &Params) -> Result<(), JobError> {
        let settings = Settings::of(name, p)?;
        let def = Definition::of(name, &settings)?;
        let h = settings.h;
        let x = Grid::new(1, &def.x_axes).x;
        let worst = x.rows().into_iter().map(|xi| (def.eval)(0.0, xi).1).fold(f64::NEG_INFINITY, f64::max);
        if worst > h {
            return Err(JobError::Invalid(format!(
                "the seed column s = 0 must be safe (assumption 3), but max g(0, x) = {worst} > h = {h}"
            )));
        }
        Ok(())
    }
}

/// What a benchmark is before tabulation: its functions, x-axes and noise.
struct Definition {
    name: &'static str,
    n: usize,
    x_axes: Vec<(f64, f64, usize)>,
    eval: Eval,
    /// Observation noise variance.
    noise_var: f64,
    /// The GP's fixed likelihood variance (paper App. B.2.2: 1e-5 for the noiseless benchmarks).
    gp_noise_var: f64,
}

impl Definition {
    fn of(name: &str, settings: &Settings) -> Result<Self, JobError> {
        let n = settings.grid;
        let noiseless = |name, x_axes, eval| Definition { name, n, x_axes, eval, noise_var: 0.0, gp_noise_var: 1e-5 };
        Ok(match name {
            "clinical" => noiseless("clinical", vec![(0.0, 2.0, n)], clinical::eval as Eval),
            "synthetic-2d" => noiseless("synthetic-2d", vec![(0.0, 1.0, n)], branin::eval),
            "synthetic-3d" => noiseless("synthetic-3d", vec![(0.0, 1.0, n), (0.0, 1.0, n)], hartmann::eval),
            "pendulum" => {
                let noise = settings.noise_var;
                let (lo, hi) = pendulum::X_RANGE;
                Definition {
                    name: "pendulum",
                    n,
                    x_axes: vec![(lo, hi, n)],
                    eval: pendulum::eval,
                    noise_var: noise,
                    gp_noise_var: noise,
                }
            }
            other => return Err(JobError::Invalid(format!("unknown safe benchmark `{other}`"))),
        })
    }
}

/// A benchmark's parameter struct: the five every benchmark has, with its own defaults
/// (the table above), and any of its own after them.
macro_rules! benchmark_params {
    (
        $(#[$meta:meta])*
        $name:ident: grid = $grid:literal (at most $max:literal), h = $h:literal, l_f = $l_f:literal,
        l_g = $l_g:literal, v0 = $v0:literal; $($own:tt)*
    ) => {
        armada_core::params! {
            $(#[$meta])*
            pub struct $name {
                /// grid points per axis (s and every x-dimension), linspace with both endpoints
                grid: usize in [3, $max] = $grid,
                /// safety threshold h
                h: f64 in [-1e6, 1e6] = $h,
                /// L_f, the bound on the growth of f in s (eq. 4) given to M-SafeOpt
                l_f: f64 in [1e-9, 1e6] = $l_f,
                /// L'_g, the lower bound on the growth of g in s (eq. 5) given to M-SafeOpt
                l_g: f64 in [1e-9, 1e6] = $l_g,
                /// kernel variance: initial value and LogNormal(ln v0, 1) prior centre
                v0: f64 in [1e-6, 1e4] = $v0,
                $($own)*
            }
        }

        impl $name {
            /// The settings these parameters give, before the benchmark's own.
            fn settings(&self) -> Settings {
                Settings {
                    grid: self.grid,
                    h: self.h,
                    l_f: self.l_f,
                    l_g: self.l_g,
                    v0: self.v0,
                    fstar: FStar::Grid,
                    noise_var: 0.0,
                }
            }
        }
    };
}

benchmark_params! {
    /// `clinical`'s parameters.
    ClinicalParams: grid = 200 (at most 1000), h = 0.9, l_f = 0.436, l_g = 0.035, v0 = 1.0;
}

benchmark_params! {
    /// `synthetic-2d`'s parameters.
    Synthetic2dParams: grid = 200 (at most 1000), h = 2.0, l_f = 10.166, l_g = 0.86, v0 = 9.0;
}

armada_core::choice! {
    /// The regret reference of the 3-D benchmark.
    pub enum FStar {
        /// the grid's safe optimum
        Grid = "grid",
        /// Hartmann-3's continuous maximum 3.86278, as the reference code
        Continuous = "continuous",
    }
}

benchmark_params! {
    /// `synthetic-3d`'s parameters.
    Synthetic3dParams: grid = 75 (at most 150), h = 2.0, l_f = 1.9, l_g = 1.0, v0 = 1.0;
    /// regret reference: the grid's safe optimum, or 3.86278 as the reference code (floor = grid gap)
    fstar: FStar = FStar::Grid,
}

benchmark_params! {
    /// `pendulum`'s parameters.
    PendulumParams: grid = 100 (at most 1000), h = 9.0, l_f = 9.1, l_g = 0.5, v0 = 9.0;
    /// variance of the Gaussian noise on f and g observations, also the GP likelihood variance
    noise_var: f64 in [1e-8, 100.0] = 0.05,
}

/// What a benchmark's validated parameters set, whichever benchmark it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    pub grid: usize,
    pub h: f64,
    pub l_f: f64,
    pub l_g: f64,
    pub v0: f64,
    /// The regret reference (a parameter of `synthetic-3d` only).
    pub fstar: FStar,
    /// Observation noise variance (a parameter of `pendulum` only; the others are noiseless).
    pub noise_var: f64,
}

impl Settings {
    /// The settings of benchmark `name` from its validated parameters.
    pub fn of(name: &str, p: &Params) -> Result<Self, JobError> {
        Ok(match name {
            "clinical" => p.parse::<ClinicalParams>()?.settings(),
            "synthetic-2d" => p.parse::<Synthetic2dParams>()?.settings(),
            "synthetic-3d" => {
                let own: Synthetic3dParams = p.parse()?;
                Settings { fstar: own.fstar, ..own.settings() }
            }
            "pendulum" => {
                let own: PendulumParams = p.parse()?;
                Settings { noise_var: own.noise_var, ..own.settings() }
            }
            other => return Err(JobError::Invalid(format!("unknown safe benchmark `{other}`"))),
        })
    }
}

/// The benchmarks as the registry sees them.
pub const BENCHMARKS: [ComponentDef; 4] = [
    ComponentDef::new::<ClinicalParams>(
        "clinical",
        "simulated clinical trial: logistic efficacy and toxicity, x = dose 2 in [0, 2], noiseless",
    ),
    ComponentDef::new::<Synthetic2dParams>(
        "synthetic-2d",
        "synthetic 2-D: f = -ScaledBranin, g = 2s(e^y sin10y + sin5y + 5)/3 with y = x + 1/3; \
         l_f = 10.166 as run (31.25 is the true bound)",
    ),
    ComponentDef::new::<Synthetic3dParams>(
        "synthetic-3d",
        "synthetic 3-D: Hartmann-3 (maximised), g = s + x1^2 + x2^3",
    ),
    ComponentDef::new::<PendulumParams>(
        "pendulum",
        "pendulum swing-up, a reconstruction: x = initial angle, s = one torque impulse (x40)",
    ),
];

/// Reference values of the four benchmarks (grid optima, growth constants, safe fractions),
/// computed independently in numpy.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::regret::RegretReference;
    use armada_core::{check_params, ParamValue};

    fn bench(name: &str, overrides: &[(&str, ParamValue)]) -> Benchmark {
        let def = BENCHMARKS.iter().find(|d| d.name == name).unwrap();
        let mut given = Params::new();
        for (k, v) in overrides {
            given.insert(k.to_string(), v.clone());
        }
        Benchmark::from_params(name, &check_params(def, &given).unwrap()).unwrap()
    }

    /// `(fraction of safe grid points, number of rows safe for every s)`.
    fn safe_fraction_and_full_rows(b: &Benchmark) -> (f64, usize) {
        let n_safe = b.g.iter().filter(|&&g| g <= b.h).count();
        let full = b.g.chunks(b.grid.n_s()).filter(|row| row.iter().all(|&g| g <= b.h)).count();
        (n_safe as f64 / b.g.len() as f64, full)
    }

    /// The grid's safe optimum as (value, point).
    fn safe_argmax(b: &Benchmark) -> (f64, Vec<f64>) {
        let k = (0..b.f.len()).filter(|&k| b.g[k] <= b.h).max_by(|&i, &j| b.f[i].total_cmp(&b.f[j])).unwrap();
        (b.f[k], b.grid.points.row(k).to_vec())
    }

    /// `(max df/ds, min dg/ds)` by forward differences on an `n x n` grid of `s x x-range`.
    fn growth(eval: Eval, x_range: (f64, f64), n: usize) -> (f64, f64) {
        let ds = 1.0 / (n - 1) as f64;
        let (mut max_df, mut min_dg) = (f64::NEG_INFINITY, f64::INFINITY);
        for xi in crate::grid::linspace(x_range.0, x_range.1, n) {
            for j in 0..n - 1 {
                let s = j as f64 * ds;
                let (f0, g0) = eval(s, aview1(&[xi]));
                let (f1, g1) = eval(s + ds, aview1(&[xi]));
                max_df = max_df.max((f1 - f0) / ds);
                min_dg = min_dg.min((g1 - g0) / ds);
            }
        }
        (max_df, min_dg)
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn clinical_matches_the_checked_values_of_spec_4_1() {
        let b = bench("clinical", &[]);
        let (frac, full) = safe_fraction_and_full_rows(&b);
        assert!(close(frac, 0.593, 5e-4), "safe fraction {frac}");
        assert_eq!(full, 20);
        let (best, at) = safe_argmax(&b);
        assert!(close(best, 0.377538, 1e-6), "{best}");
        assert!(close(at[0], 0.25126, 1e-5) && close(at[1], 0.50251, 1e-5), "{at:?}");
        // Unconstrained optimum 1/(1 + e^0.5) at (1/4, 1/2), safe with g = 0.7311.
        let (f, g) = clinical::eval(0.25, aview1(&[0.5]));
        assert!(close(f, 1.0 / (1.0 + 0.5f64.exp()), 1e-15) && close(g, 0.7311, 1e-4));
        // The seed column is safe: g(0, x) <= g(0, 2) = 0.8808.
        assert!(close(clinical::eval(0.0, aview1(&[2.0])).1, 0.8808, 1e-4));
        let (l_f, l_g) = growth(clinical::eval, (0.0, 2.0), 2001);
        assert!(close(l_f, 0.4354, 1e-3) && close(l_g, 0.03534, 1e-4), "{l_f} {l_g}");
        assert!(b.l_f >= l_f && b.l_g <= l_g);
        // Per-x optimum on the last row (x = 2) is on the boundary, grid s = 0.0955.
        let last = b.grid.n_x() - 1;
        let reference = RegretReference::new(&b);
        let j = (0..b.grid.n_s()).rev().find(|&j| b.g[b.grid.index(last, j)] <= b.h).unwrap();
        assert!(close(b.grid.s[j], 0.0955, 1e-4));
        assert!(close(reference.fstar_x[last], 0.0549, 5e-4), "{}", reference.fstar_x[last]);
    }

    #[test]
    fn synthetic_2d_matches_the_checked_values_of_spec_4_2() {
        let b = bench("synthetic-2d", &[]);
        let (frac, full) = safe_fraction_and_full_rows(&b);
        assert!(close(frac, 0.694, 5e-4), "safe fraction {frac}");
        assert_eq!(full, 43);
        let (best, at) = safe_argmax(&b);
        assert!(close(best, 1.047390, 1e-6), "{best}");
        assert!(close(at[0], 0.54271, 1e-5) && close(at[1], 0.15075, 1e-5), "{at:?}");
        // The three Branin optima: f = 1.0473939 each; g = 0.1450, 1.4648, 2.5767.
        let optima = [(0.123894, 0.818333, 0.1450), (0.542773, 0.151667, 1.4648), (0.961652, 0.165, 2.5767)];
        for (s, x, g_ref) in optima {
            let (f, g) = branin::eval(s, aview1(&[x]));
            assert!(close(f, 1.0473939, 1e-6) && close(g, g_ref, 1e-4), "({s}, {x}): {f} {g}");
        }
        let (l_f, l_g) = growth(branin::eval, (0.0, 1.0), 4001);
        assert!(close(l_f, 31.25, 0.02) && close(l_g, 0.8597, 1e-3), "{l_f} {l_g}");
        let (lo, hi) = b.f.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &f| (lo.min(f), hi.max(f)));
        assert!(close(lo, -4.876, 2e-3) && close(hi, 1.0474, 1e-4), "{lo} {hi}");
        // At h = 0.9 two optima are excluded.
        let b = bench("synthetic-2d", &[("h", ParamValue::Float(0.9))]);
        let (frac, _) = safe_fraction_and_full_rows(&b);
        let (best, at) = safe_argmax(&b);
        assert!(close(frac, 0.382, 5e-4) && close(best, 1.047331, 1e-6), "{frac} {best}");
        assert!(close(at[0], 0.12563, 1e-5) && close(at[1], 0.81407, 1e-5));
    }

    #[test]
    fn synthetic_3d_matches_the_checked_values_of_spec_4_3() {
        let b = bench("synthetic-3d", &[]);
        assert_eq!(b.grid.len(), 75 * 75 * 75);
        let (frac, _) = safe_fraction_and_full_rows(&b);
        assert!(close(frac, 0.954, 5e-4), "safe fraction {frac}");
        let (best, at) = safe_argmax(&b);
        assert!(close(best, 3.862539, 1e-6), "{best}");
        for (a, r) in at.iter().zip([0.1216, 0.5541, 0.8514]) {
            assert!(close(*a, r, 1e-4), "{at:?}");
        }
        // The global optimum is safe: g = s + x1^2 + x2^3 there is 1.04302.
        let (f, g) = hartmann::eval(0.114614, aview1(&[0.555649, 0.852547]));
        assert!(close(f, 3.86278, 1e-5) && close(g, 1.04302, 1e-5), "{f} {g}");
        let b50 = bench("synthetic-3d", &[("grid", ParamValue::Int(50))]);
        assert!(close(safe_argmax(&b50).0, 3.859802, 1e-6));
        // The reference code's regret reference is the continuous maximum.
        let code =
            bench("synthetic-3d", &[("grid", ParamValue::Int(5)), ("fstar", ParamValue::Str("continuous".into()))]);
        assert_eq!(RegretReference::new(&code).fstar, 3.86278);
        // max df/ds over the 75^3 grid's s-steps is about 1.79 < L_f = 1.9.
        let n_s = b.grid.n_s();
        let ds = b.grid.s[1];
        let max_df = (0..b.grid.n_x())
            .flat_map(|i| (0..n_s - 1).map(move |j| (i, j)))
            .map(|(i, j)| (b.f[b.grid.index(i, j + 1)] - b.f[b.grid.index(i, j)]) / ds)
            .fold(f64::NEG_INFINITY, f64::max);
        assert!(close(max_df, 1.79, 0.02) && max_df < b.l_f, "{max_df}");
    }

    #[test]
    fn pendulum_reconstruction_matches_the_checked_values_of_spec_4_4() {
        let b = bench("pendulum", &[]);
        let (frac, _) = safe_fraction_and_full_rows(&b);
        assert!(close(frac, 0.94, 5e-3), "safe fraction {frac}");
        let seed_g: Vec<f64> = (0..b.grid.n_x()).map(|i| b.g[b.grid.index(i, 0)]).collect();
        let (lo, hi) = seed_g.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &g| (lo.min(g), hi.max(g)));
        assert!(close(lo, 0.339, 1e-3) && close(hi, 7.748, 1e-3), "g(0, x) in [{lo}, {hi}]");
        let range =
            |v: &[f64]| v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let (f_lo, f_hi) = range(&b.f);
        let (g_lo, g_hi) = range(&b.g);
        assert!(close(f_lo, -9.33, 5e-3) && f_hi > -1e-4 && f_hi < 0.0, "f in [{f_lo}, {f_hi}]");
        assert!(close(g_lo, 0.34, 5e-3) && close(g_hi, 9.82, 5e-3), "g in [{g_lo}, {g_hi}]");
        let (best, at) = safe_argmax(&b);
        assert!(close(best, -2.8e-5, 1e-5), "{best}");
        assert!(close(at[0], 0.121, 1e-3) && close(at[1], -6.076, 1e-3), "{at:?}");
        // Without torque the pendulum never reaches the threshold: the seed column is safe.
        assert!(seed_g.iter().all(|&g| g < b.h));
    }
}
