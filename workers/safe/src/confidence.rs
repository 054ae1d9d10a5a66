//! Confidence bounds on the grid (paper eqs. 10-11): `UCB = mu + beta sigma`,
//! `LCB = mu - beta sigma`, for f and g with their own beta.

/// Posterior confidence bounds of f and g at every candidate (flat order).
#[derive(Clone, Debug, Default)]
pub struct Confidence {
    pub ucb_f: Vec<f64>,
    pub lcb_f: Vec<f64>,
    pub ucb_g: Vec<f64>,
    pub lcb_g: Vec<f64>,
    /// `beta_f sigma_f`: the half-width of f's interval, what the acquisitions compare.
    pub width_f: Vec<f64>,
    /// `beta_g sigma_g`.
    pub width_g: Vec<f64>,
}

impl Confidence {
    /// Bounds from posterior means and standard deviations.
    pub fn new(mu_f: &[f64], sd_f: &[f64], mu_g: &[f64], sd_g: &[f64], beta_f: f64, beta_g: f64) -> Self {
        let width_f: Vec<f64> = sd_f.iter().map(|s| beta_f * s).collect();
        let width_g: Vec<f64> = sd_g.iter().map(|s| beta_g * s).collect();
        Confidence {
            ucb_f: mu_f.iter().zip(&width_f).map(|(m, w)| m + w).collect(),
            lcb_f: mu_f.iter().zip(&width_f).map(|(m, w)| m - w).collect(),
            ucb_g: mu_g.iter().zip(&width_g).map(|(m, w)| m + w).collect(),
            lcb_g: mu_g.iter().zip(&width_g).map(|(m, w)| m - w).collect(),
            width_f,
            width_g,
        }
    }

    /// Number of candidates.
    pub fn len(&self) -> usize {
        self.ucb_f.len()
    }

    /// Whether there are no candidates.
    pub fn is_empty(&self) -> bool {
        self.ucb_f.is_empty()
    }
}
