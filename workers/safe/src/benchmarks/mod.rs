//! The four benchmarks of spec section 4: true `f` and `g`, grid, threshold, growth
//! constants, noise and kernel-variance prior centre.
//!
//! | name | s | x | h | L_f / L'_g | noise | v0 |
//! |---|---|---|---|---|---|---|
//! | `clinical` | dose 1 | dose 2 in [0,2] | 0.9 | 0.436 / 0.035 | none | 1 |
//! | `synthetic-2d` | Branin coord. 1 | Branin coord. 2 | 2.0 | 10.166 / 0.86 | none | 9 |
//! | `synthetic-3d` | z1 | (z2, z3) | 2 | 1.9 / 1 | none | 1 |
//! | `pendulum` (reconstruction) | torque | initial angle | 9 | 9.1 / 0.5 | N(0, 0.05) | 9 |

pub mod branin;
pub mod clinical;
pub mod hartmann;
pub mod pendulum;

use crate::grid::Grid;
use armada_core::{ComponentDef, JobError, ParamDef, ParamKind, Params};

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
    /// Upper bound on the growth of f in s (spec eq. 4), as the benchmark states it.
    pub l_f: f64,
    /// Lower bound on the growth of g in s (spec eq. 5), as the benchmark states it.
    pub l_g: f64,
    /// Variance of the Gaussian observation noise on f and g (0: noiseless).
    pub noise_var: f64,
    /// The GP's fixed likelihood variance lambda (spec 2.4).
    pub gp_noise_var: f64,
    /// Centre of the kernel-variance prior and its initial value (spec 2.4).
    pub v0: f64,
    /// The box `D_X` the seed points are drawn from (spec 5.2).
    pub x_box: Vec<(f64, f64)>,
    /// Regret reference `f(s_*, x_*)` when it is not the grid's safe optimum (3-D, `fstar = continuous`).
    pub fstar_override: Option<f64>,
    /// `(f, g)` at any point, for the off-grid seeds.
    pub eval: fn(f64, &[f64]) -> (f64, f64),
}

impl Benchmark {
    /// Tabulates `eval` on a grid of `n_s` s-values times `x_axes`.
    #[allow(clippy::too_many_arguments)]
    fn tabulate(
        name: &'static str,
        n_s: usize,
        x_axes: &[(f64, f64, usize)],
        eval: fn(f64, &[f64]) -> (f64, f64),
        h: f64,
        (l_f, l_g): (f64, f64),
        (noise_var, gp_noise_var): (f64, f64),
        v0: f64,
    ) -> Self {
        let grid = Grid::new(n_s, x_axes);
        let (f, g) = grid.points.iter().map(|z| eval(z[0], &z[1..])).unzip();
        let x_box = x_axes.iter().map(|&(lo, hi, _)| (lo, hi)).collect();
        Benchmark { name, grid, f, g, h, l_f, l_g, noise_var, gp_noise_var, v0, x_box, fstar_override: None, eval }
    }

    /// Builds a benchmark from its validated parameters.
    pub fn from_params(name: &str, p: &Params) -> Result<Self, JobError> {
        let n = p.int("grid")? as usize;
        let h = p.float("h")?;
        let growth = (p.float("l_f")?, p.float("l_g")?);
        let v0 = p.float("v0")?;
        Ok(match name {
            "clinical" => Self::tabulate("clinical", n, &[(0.0, 2.0, n)], clinical::eval, h, growth, (0.0, 1e-5), v0),
            "synthetic-2d" => {
                Self::tabulate("synthetic-2d", n, &[(0.0, 1.0, n)], branin::eval, h, growth, (0.0, 1e-5), v0)
            }
            "synthetic-3d" => {
                let axes = [(0.0, 1.0, n), (0.0, 1.0, n)];
                let mut b = Self::tabulate("synthetic-3d", n, &axes, hartmann::eval, h, growth, (0.0, 1e-5), v0);
                if p.str("fstar")? == "continuous" {
                    b.fstar_override = Some(hartmann::CONTINUOUS_MAX);
                }
                b
            }
            "pendulum" => {
                let noise = p.float("noise_var")?;
                let (lo, hi) = pendulum::X_RANGE;
                Self::tabulate("pendulum", n, &[(lo, hi, n)], pendulum::eval, h, growth, (noise, noise), v0)
            }
            other => return Err(JobError::Invalid(format!("unknown safe benchmark `{other}`"))),
        })
    }
}

const fn grid(default: i64, max: i64) -> ParamDef {
    ParamDef {
        name: "grid",
        kind: ParamKind::Int { min: 3, max, default },
        doc: "grid points per axis (s and every x-dimension), linspace with both endpoints",
    }
}

const fn threshold(default: f64) -> ParamDef {
    ParamDef { name: "h", kind: ParamKind::Float { min: -1e6, max: 1e6, default }, doc: "safety threshold h" }
}

const fn growth_f(default: f64) -> ParamDef {
    ParamDef {
        name: "l_f",
        kind: ParamKind::Float { min: 1e-9, max: 1e6, default },
        doc: "L_f, the bound on the growth of f in s (eq. 4) given to M-SafeOpt",
    }
}

const fn growth_g(default: f64) -> ParamDef {
    ParamDef {
        name: "l_g",
        kind: ParamKind::Float { min: 1e-9, max: 1e6, default },
        doc: "L'_g, the lower bound on the growth of g in s (eq. 5) given to M-SafeOpt",
    }
}

const fn prior_centre(default: f64) -> ParamDef {
    ParamDef {
        name: "v0",
        kind: ParamKind::Float { min: 1e-6, max: 1e4, default },
        doc: "kernel variance: initial value and LogNormal(ln v0, 1) prior centre (spec 2.4)",
    }
}

/// The benchmarks as the registry sees them.
pub const BENCHMARKS: [ComponentDef; 4] = [
    ComponentDef {
        name: "clinical",
        doc: "simulated clinical trial (spec 4.1): logistic efficacy and toxicity, x = dose 2 in [0, 2], noiseless",
        params: &[grid(200, 1000), threshold(0.9), growth_f(0.436), growth_g(0.035), prior_centre(1.0)],
    },
    ComponentDef {
        name: "synthetic-2d",
        doc: "synthetic 2-D (spec 4.2): f = -ScaledBranin, g = 2s(e^y sin10y + sin5y + 5)/3 with y = x + 1/3; \
              l_f = 10.166 as run (31.25 is the true bound)",
        params: &[grid(200, 1000), threshold(2.0), growth_f(10.166), growth_g(0.86), prior_centre(9.0)],
    },
    ComponentDef {
        name: "synthetic-3d",
        doc: "synthetic 3-D (spec 4.3): Hartmann-3 (maximised), g = s + x1^2 + x2^3",
        params: &[
            grid(75, 150),
            threshold(2.0),
            growth_f(1.9),
            growth_g(1.0),
            prior_centre(1.0),
            ParamDef {
                name: "fstar",
                kind: ParamKind::Choice { options: &["grid", "continuous"], default: "grid" },
                doc: "regret reference: the grid's safe optimum, or 3.86278 as the reference code (floor = grid gap)",
            },
        ],
    },
    ComponentDef {
        name: "pendulum",
        doc: "pendulum swing-up (spec 4.4), a reconstruction: x = initial angle, s = one torque impulse (x40)",
        params: &[
            grid(100, 1000),
            threshold(9.0),
            growth_f(9.1),
            growth_g(0.5),
            prior_centre(9.0),
            ParamDef {
                name: "noise_var",
                kind: ParamKind::Float { min: 1e-8, max: 100.0, default: 0.05 },
                doc: "variance of the Gaussian noise on f and g observations, also the GP likelihood variance",
            },
        ],
    },
];
