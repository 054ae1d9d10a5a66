//! The plant-growth and airfoil self-noise simulators (paper appendix, "Control sets"): posterior means of
//! GPs fitted by Tay et al. (MIT), shipped as JSON in `data/` with their licence and compiled
//! into the crate, so workers need no files at run time.

use armada_math as math;
use std::sync::OnceLock;

use serde::Deserialize;

/// Plant growth: the latent-0 mean of a whitened SVGP with an SE-ARD kernel,
/// `f(u) = sum_j v exp(-0.5 |(x(u) - Z_j)/ls|^2) alpha_j`, `x(u) = lo + u (hi - lo)`.
#[derive(Debug, Deserialize)]
pub struct Plant {
    lo: Vec<f64>,
    hi: Vec<f64>,
    variance: f64,
    lengthscales: Vec<f64>,
    #[serde(rename = "Z")]
    z: Vec<Vec<f64>>,
    alpha: Vec<f64>,
}

/// Airfoil: a BoTorch `SingleTaskGP` mean with a Matérn-5/2 ARD kernel on preprocessed inputs,
/// `f(u) = c + sum_j s2 (1 + sqrt5 r + 5r^2/3) exp(-sqrt5 r) alpha_j`.
#[derive(Debug, Deserialize)]
pub struct Airfoil {
    #[serde(rename = "X")]
    x: Vec<Vec<f64>>,
    lengthscales: Vec<f64>,
    outputscale: f64,
    mean_constant: f64,
    alpha: Vec<f64>,
}

impl Plant {
    pub fn get() -> &'static Plant {
        static PLANT: OnceLock<Plant> = OnceLock::new();
        PLANT.get_or_init(|| {
            serde_json::from_str(include_str!("../../data/plant_svgp_mean.json")).expect("shipped plant JSON parses")
        })
    }

    pub fn value(&self, u: &[f64]) -> f64 {
        let mut x = [0.0; 5];
        for l in 0..5 {
            x[l] = (self.lo[l] + u[l] * (self.hi[l] - self.lo[l])) / self.lengthscales[l];
        }
        let mut f = 0.0;
        for (zj, aj) in self.z.iter().zip(&self.alpha) {
            let mut r2 = 0.0;
            for l in 0..5 {
                let d = x[l] - zj[l] / self.lengthscales[l];
                r2 += d * d;
            }
            f += math::exp(-0.5 * r2) * aj;
        }
        self.variance * f
    }
}

impl Airfoil {
    pub fn get() -> &'static Airfoil {
        static AIRFOIL: OnceLock<Airfoil> = OnceLock::new();
        AIRFOIL.get_or_init(|| {
            serde_json::from_str(include_str!("../../data/airfoil_gp.json")).expect("shipped airfoil JSON parses")
        })
    }

    pub fn value(&self, u: &[f64]) -> f64 {
        const SQRT5: f64 = 2.236_067_977_499_79;
        let mut f = 0.0;
        for (xj, aj) in self.x.iter().zip(&self.alpha) {
            let mut r2 = 0.0;
            for l in 0..5 {
                let d = (u[l] - xj[l]) / self.lengthscales[l];
                r2 += d * d;
            }
            let r = r2.sqrt();
            f += (1.0 + SQRT5 * r + 5.0 / 3.0 * r2) * math::exp(-SQRT5 * r) * aj;
        }
        self.mean_constant + self.outputscale * f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plant_optimum_reproduces_the_cached_value() {
        // Max over [0,1]^5 = 2.19411617565 at this point, identical to the authors' code's
        // plant_opt_val.pickle (2.1941161755890883) to 1e-10.
        let u = [0.9475857, 0.98113924, 0.66430348, 0.22462369, 0.74982625];
        assert!((Plant::get().value(&u) - 2.194_116_175_651_69).abs() < 1e-9);
        assert!((Plant::get().value(&u) - 2.194_116_175_589_088_3).abs() < 1e-9);
        assert!(Plant::get().value(&[0.5; 5]).abs() < 1e-5);
    }

    #[test]
    fn airfoil_matches_the_spec_checks() {
        assert!((Airfoil::get().value(&[0.5; 5]) - -0.332_896).abs() < 1e-6);
        let u = [0.18088579, 0.48240133, 0.2691396, 1.0, 0.80692256];
        assert!((Airfoil::get().value(&u) - 2.614_005_842_385_553).abs() < 1e-6);
    }
}
