//! The switching Lipschitz bandit of the CDT paper's Appendix A.3 (Figure 4) and the
//! `lipschitz` family that runs Zooming TS with Restarts (Algorithm 1) against the stationary
//! Zooming algorithm and the Oracle. Appendix A.3 reads the Oracle two ways: it "would renew the
//! Zooming algorithm" at each change point, then it restarts "our Zooming TS algorithm"; `oracle` is
//! the second (the default reading), `oracle-zooming` the first.
//!
//! Arms are `x in [0, 1]`; the mean reward is piecewise stationary with `c(T) = 3` change points
//! (4 segments), each segment a function peaking at its own `a`:
//! * triangle `f(x) = 0.9 - slope |x - a|` (paper slope 0.9, the code's 0.95);
//! * sine `f(x) = (2 / (3 pi)) sin((3 pi / 2)(x - a + 1/3))`, peak `2 / (3 pi)` at `x = a`.
//!
//! Rewards are `f_t(x_t) + noise_t` with `noise_t ~ N(0, 0.1)` drawn once per round from the
//! environment stream, so every method of a repetition sees the same noise sequence (the code's
//! pre-drawn `noise[t]`). Change points are the code's `{22761, 47734, 70317}` (HEAD) or
//! `{22861, 47734, 74817}` (the Figure 4 snapshot), scaled by `T / 90000` so that short CI runs
//! still switch. Segment peaks are the code's values `{0.05, 0.45, 0.70, 0.95}` in a fixed order
//! drawn once (`random.Random(0).shuffle`: 0.70, 0.05, 0.45, 0.95); the code's own seed is not
//! known. Regret is `sum_t (max_x f_t - f_t(x_t))`.

use crate::zooming::{CoverageRule, InitialPoint, SelectionIndex, ZoomingConfig, ZoomingTs, CLIP_LEVEL};
use armada_core::{AnyEpisode, ComponentDef, Declaration, Episode, Family, JobError, JobStreams, StreamRng, ValidJob};
use armada_math as math;
use armada_math::dist::{Distribution, StandardNormal};
use std::f64::consts::PI;

/// The paper's horizon for Figure 4; change points are given for it.
pub const PAPER_HORIZON: usize = 90_000;
/// The code's change points at T = 90,000.
pub const CHANGE_POINTS_HEAD: [usize; 3] = [22_761, 47_734, 70_317];
pub const CHANGE_POINTS_SNAPSHOT: [usize; 3] = [22_861, 47_734, 74_817];
/// Segment peaks, in segment order (module doc).
pub const PEAKS: [f64; 4] = [0.70, 0.05, 0.45, 0.95];

/// The mean-reward function of a segment.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Shape {
    Triangle { slope: f64 },
    Sine,
}

impl Shape {
    /// `f(x)` for a segment peaking at `a`.
    pub fn mean(&self, x: f64, a: f64) -> f64 {
        match *self {
            Shape::Triangle { slope } => 0.9 - slope * (x - a).abs(),
            Shape::Sine => 2.0 / (3.0 * PI) * math::sin(1.5 * PI * (x - a + 1.0 / 3.0)),
        }
    }
    /// `max_x f(x) = f(a)`.
    pub fn peak(&self) -> f64 {
        match self {
            Shape::Triangle { .. } => 0.9,
            Shape::Sine => 2.0 / (3.0 * PI),
        }
    }
}

/// One switching environment.
#[derive(Clone, Debug, PartialEq)]
pub struct Switching {
    pub shape: Shape,
    /// 1-based rounds at which a new segment starts (the round after each change point).
    pub change_points: Vec<usize>,
    pub noise_sd: f64,
}

impl Switching {
    /// The code's change points scaled to `horizon`.
    pub fn new(shape: Shape, code_points: &[usize; 3], horizon: usize, noise_var: f64) -> Self {
        let change_points =
            code_points.iter().map(|&c| (c as u128 * horizon as u128 / PAPER_HORIZON as u128) as usize).collect();
        Switching { shape, change_points, noise_sd: noise_var.sqrt() }
    }

    /// The segment of 1-based round `t`: rounds `1..=c_1` are segment 0, and so on.
    pub fn segment(&self, t: usize) -> usize {
        self.change_points.iter().filter(|&&c| t > c).count()
    }

    /// Expected reward of `x` at round `t`.
    pub fn mean(&self, t: usize, x: f64) -> f64 {
        self.shape.mean(x, PEAKS[self.segment(t) % PEAKS.len()])
    }

    /// Whether round `t` is the first of a new segment.
    pub fn starts_segment(&self, t: usize) -> bool {
        self.change_points.iter().any(|&c| t == c + 1)
    }
}

armada_core::choice! {
    /// Constants of the three methods (paper Appendix A.3).
    pub enum Constants {
        /// Eq. (5) with `tau0 = sqrt(0.1)`: `r(n) = sqrt(13 tau0^2 ln T / 2n)`, `s0 = sqrt(52 pi tau0^2 ln T)`,
        /// removal, exact coverage.
        Paper = "paper",
        /// The code: `r(n) = sqrt(6.5 s^1.5 ln T / n)`, `s(n) = sqrt(pi s^2 ln T / n)` with `s = sqrt(0.1)`, no
        /// removal, the code's 1-D gap rule (as the reference-code preset of CDT).
        Code = "code",
        /// The paper's radius, removal and coverage with the code's Thompson scale: isolates `s0`.
        PaperCodeScale = "paper-code-scale",
        /// The code's radius, removal and coverage with the paper's Thompson scale `s0`.
        CodePaperScale = "code-paper-scale",
    }
}

/// `H = 10 ceil((T / c(T))^{3/4})` with `c(T) = 3` (22,800 at T = 90,000).
pub fn paper_epoch(horizon: usize) -> usize {
    10 * math::pow(horizon as f64 / 3.0, 0.75).ceil() as usize
}

/// The Zooming TS-R configuration (Oracle: the same, with `H = T` and forced restarts).
pub fn zooming_tsr(constants: Constants, horizon: usize, epoch: usize) -> ZoomingConfig {
    let tau0 = 0.1f64.sqrt();
    let paper = ZoomingConfig::paper(1, horizon, epoch, tau0);
    let (s, log_t) = (tau0, math::ln(horizon.max(2) as f64));
    let code = ZoomingConfig {
        radius_numerator: 6.5 * math::pow(s, 1.5) * log_t,
        index: SelectionIndex::Thompson { scale: (PI * s * s * log_t).sqrt(), clip: CLIP_LEVEL },
        removal: false,
        coverage: CoverageRule::RefCode,
        ..paper
    };
    match constants {
        Constants::Paper => paper,
        Constants::Code => code,
        Constants::PaperCodeScale => ZoomingConfig { index: code.index, ..paper },
        Constants::CodePaperScale => ZoomingConfig { index: paper.index, ..code },
    }
}

/// The stationary Zooming baseline with the same radius: UCB index, no removal, no restart, initial
/// point uniform in [0, 1] (paper Appendix A.3).
pub fn zooming(constants: Constants, horizon: usize) -> ZoomingConfig {
    ZoomingConfig {
        index: SelectionIndex::Ucb,
        removal: false,
        initial_point: InitialPoint::UniformBox,
        ..zooming_tsr(constants, horizon, horizon.max(1))
    }
}

/// The family as the registry sees it.
pub struct LipschitzFamily;

armada_core::choice! {
    /// The function of each segment.
    pub enum ShapeChoice {
        /// 0.9 - slope |x - a|
        Triangle = "triangle",
        /// (2/3pi) sin(3pi/2 (x - a + 1/3))
        Sine = "sine",
    }
}

armada_core::choice! {
    /// Where the segments change.
    pub enum ChangePoints {
        /// the code's {22761, 47734, 70317}
        Head = "head",
        /// the Figure 4 snapshot's {22861, 47734, 74817}
        Snapshot = "snapshot",
    }
}

armada_core::params! {
    /// `switching`'s parameters.
    pub struct SwitchingParams {
        /// segment function: 0.9 - slope |x - a|, or (2/3pi) sin(3pi/2 (x - a + 1/3))
        shape: ShapeChoice = ShapeChoice::Triangle,
        /// triangle slope (paper 0.9, code 0.95)
        slope: f64 in [0.0, 10.0] = 0.9,
        /// the code's change points {22761, 47734, 70317} or the Figure 4 snapshot's {22861, 47734, 74817},
        /// scaled by T/90000
        change_points: ChangePoints = ChangePoints::Head,
        /// variance of the Gaussian reward noise
        noise_var: f64 in [0.0, 100.0] = 0.1,
    }
}

const BENCHMARKS: [ComponentDef; 1] = [ComponentDef::new::<SwitchingParams>(
    "switching",
    "piecewise-stationary Lipschitz rewards on [0, 1] with 3 change points (the paper's appendix A.3)",
)];

armada_core::params! {
    /// The constants every algorithm takes.
    pub struct ConstantsParams {
        /// radius and Thompson constants: the paper's with tau0 = sqrt(0.1), or the code's
        constants: Constants = Constants::Paper,
    }
}

armada_core::params! {
    /// `zooming-tsr`'s parameters.
    pub struct ZoomingTsrParams {
        #[flatten]
        constants: ConstantsParams,
        /// restart period H; 0 = 10 ceil((T/3)^{3/4}) (22,800 at T = 90,000; the code uses 24,000)
        epoch: usize in [0, 1 << 40] = 0,
    }
}

const ALGORITHMS: [ComponentDef; 4] = [
    ComponentDef::new::<ZoomingTsrParams>("zooming-tsr", "Zooming TS with Restarts, paper Algorithm 1"),
    ComponentDef::new::<ConstantsParams>(
        "zooming",
        "stationary Zooming (UCB index fhat + 2 r(n), no restart, no removal)",
    ),
    ComponentDef::new::<ConstantsParams>(
        "oracle",
        "Zooming TS restarted exactly at the true change points (a skyline)",
    ),
    ComponentDef::new::<ConstantsParams>(
        "oracle-zooming",
        "stationary Zooming renewed exactly at the true change points (Appendix A.3's other reading of the Oracle)",
    ),
];

armada_core::metrics! {
    struct SwitchingMetrics {
        regret: f64 = "cumulative regret sum_t (max f_t - f_t(x_t))",
        x: f64 = "the arm played at round t (NaN at step 0)",
        reward: f64 = "the noisy reward of round t (NaN at step 0)",
        active: usize = "active arms after round t",
    }
}

struct SwitchingEpisode {
    env: Switching,
    zooming: ZoomingTs,
    oracle: bool,
    regret: f64,
    noise: StreamRng,
    rng: StreamRng,
}

impl Episode for SwitchingEpisode {
    type Metrics = SwitchingMetrics;

    fn initial(&mut self) -> Result<SwitchingMetrics, JobError> {
        Ok(SwitchingMetrics { regret: 0.0, x: f64::NAN, reward: f64::NAN, active: 0 })
    }

    fn step(&mut self, step: u32) -> Result<Option<SwitchingMetrics>, JobError> {
        let t = step as usize;
        if self.oracle && self.env.starts_segment(t) {
            self.zooming.request_restart();
        }
        let arm = self.zooming.select(&mut self.rng).arm;
        let x = self.zooming.point(arm)[0];
        let eps: f64 = StandardNormal.sample(&mut self.noise);
        let mean = self.env.mean(t, x);
        let reward = mean + self.env.noise_sd * eps;
        self.regret += self.env.shape.peak() - mean;
        self.zooming.update(reward);
        Ok(Some(SwitchingMetrics { regret: self.regret, x, reward, active: self.zooming.active_arms().len() }))
    }
}

const DECLARATION: Declaration = Declaration {
    name: "lipschitz",
    // Raised whenever a job's results change; what each version changed: docs/changelog.md.
    version: 3,
    doc:
        "the CDT paper's switching Lipschitz bandit (Appendix A.3): Zooming TS with Restarts vs Zooming and the Oracle",
    benchmarks: &BENCHMARKS,
    algorithms: &ALGORITHMS,
    metrics: SwitchingMetrics::DEFS,
    ends_early: false,
    headline_metrics: &["regret"],
    summary_axes: &[],
};

impl Family for LipschitzFamily {
    fn declaration(&self) -> &'static Declaration {
        &DECLARATION
    }

    fn start(&self, job: &ValidJob, streams: &JobStreams) -> Result<Box<dyn AnyEpisode>, JobError> {
        let (spec, bp) = (&job.spec, &job.spec.benchmark_params);
        let horizon = spec.horizon as usize;
        let p: SwitchingParams = bp.parse()?;
        let shape = match p.shape {
            ShapeChoice::Sine => Shape::Sine,
            ShapeChoice::Triangle => Shape::Triangle { slope: p.slope },
        };
        let points = match p.change_points {
            ChangePoints::Head => &CHANGE_POINTS_HEAD,
            ChangePoints::Snapshot => &CHANGE_POINTS_SNAPSHOT,
        };
        let env = Switching::new(shape, points, horizon, p.noise_var);
        let ap = &spec.algorithm_params;
        // Every algorithm takes the constants.
        let c = ap.parse::<ConstantsParams>()?.constants;
        let config = match spec.algorithm.as_str() {
            "zooming-tsr" => {
                let epoch = match ap.parse::<ZoomingTsrParams>()?.epoch {
                    0 => paper_epoch(horizon),
                    h => h,
                };
                zooming_tsr(c, horizon, epoch)
            }
            "zooming" => zooming(c, horizon),
            "oracle" => zooming_tsr(c, horizon, horizon.max(1)),
            "oracle-zooming" => zooming(c, horizon),
            other => return Err(JobError::Invalid(format!("unknown lipschitz algorithm `{other}`"))),
        };
        Ok(Box::new(SwitchingEpisode {
            env,
            zooming: ZoomingTs::new(config),
            oracle: matches!(spec.algorithm.as_str(), "oracle" | "oracle-zooming"),
            regret: 0.0,
            noise: streams.env("noise"),
            rng: streams.algo("zooming"),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{records, registry};
    use armada_core::{JobSpec, ParamValue};

    #[test]
    fn shapes_and_segments_match_the_spec() {
        let tri = Shape::Triangle { slope: 0.9 };
        assert_eq!(tri.mean(0.3, 0.3), 0.9);
        assert!((tri.mean(0.8, 0.3) - 0.45).abs() < 1e-15);
        // The sine peaks at x = a with value 2/(3 pi) = 0.2122 and is 1-Lipschitz.
        assert!((Shape::Sine.mean(0.45, 0.45) - 0.212_206_590_789_193_8).abs() < 1e-15);
        let grid: Vec<f64> = (0..=1000).map(|i| i as f64 / 1000.0).collect();
        for w in grid.windows(2) {
            let (f0, f1) = (Shape::Sine.mean(w[0], 0.45), Shape::Sine.mean(w[1], 0.45));
            assert!(f0 <= Shape::Sine.peak() + 1e-15 && (f1 - f0).abs() <= 1e-3 + 1e-12);
        }
        let env = Switching::new(tri, &CHANGE_POINTS_HEAD, PAPER_HORIZON, 0.1);
        assert_eq!(env.change_points, CHANGE_POINTS_HEAD);
        assert_eq!((env.segment(1), env.segment(22_761), env.segment(22_762), env.segment(90_000)), (0, 0, 1, 3));
        assert!(env.starts_segment(22_762) && !env.starts_segment(22_761));
        assert_eq!(Switching::new(tri, &CHANGE_POINTS_HEAD, 9000, 0.1).change_points, [2276, 4773, 7031]);
        assert_eq!(paper_epoch(90_000), 22_800);
    }

    /// The mixed constant sets change the Thompson scale alone: the paper's `s0 = sqrt(52 pi tau0^2 ln T)`
    /// (13.65 at `tau0^2 = 0.1`, T = 90,000) against the code's `sqrt(pi s^2 ln T)` (1.89), every other
    /// constant kept from the set they are named after; Zooming (UCB index) is the same under both.
    #[test]
    fn mixed_constants_change_only_the_thompson_scale() {
        let t = PAPER_HORIZON;
        let [paper, code, paper_code, code_paper] =
            [Constants::Paper, Constants::Code, Constants::PaperCodeScale, Constants::CodePaperScale]
                .map(|c| zooming_tsr(c, t, 1000));
        let scale = |z: ZoomingConfig| match z.index {
            SelectionIndex::Thompson { scale, .. } => scale,
            other => panic!("{other:?}"),
        };
        assert!((scale(paper) - (52.0 * PI * 0.1 * (t as f64).ln()).sqrt()).abs() < 1e-12);
        assert!((scale(paper) - 13.65).abs() < 0.01 && (scale(code) - 1.89).abs() < 0.01);
        assert_eq!(paper_code, ZoomingConfig { index: code.index, ..paper });
        assert_eq!(code_paper, ZoomingConfig { index: paper.index, ..code });
        assert_ne!(paper_code, paper);
        assert_ne!(code_paper, code);
        assert_eq!(zooming(Constants::PaperCodeScale, t), zooming(Constants::Paper, t));
        assert_eq!(zooming(Constants::CodePaperScale, t), zooming(Constants::Code, t));
    }

    fn rows(algorithm: &str, horizon: u32) -> Vec<Vec<f64>> {
        let mut spec = JobSpec::new("lipschitz", "switching", algorithm);
        spec.benchmark_params.insert("shape".into(), ParamValue::Str("triangle".into()));
        spec.horizon = horizon;
        records(&registry().validate(&spec).unwrap())
    }

    /// The recorded regret is the sum of the true gaps at the played arms (recomputed here from x and
    /// the environment), rewards differ from the mean by the shared noise, and the Oracle restarts
    /// exactly at the change points: its active set falls back to one arm there (both readings; stationary
    /// Zooming's does not).
    #[test]
    fn episodes_record_true_regret_and_the_oracle_restarts_at_change_points() {
        let horizon = 9000;
        let env = Switching::new(Shape::Triangle { slope: 0.9 }, &CHANGE_POINTS_HEAD, horizon, 0.1);
        for algorithm in ["zooming-tsr", "zooming", "oracle", "oracle-zooming"] {
            let rows = rows(algorithm, horizon as u32);
            let mut regret = 0.0;
            for (t, row) in rows.iter().enumerate().skip(1) {
                regret += 0.9 - env.mean(t, row[1]);
                assert!((row[0] - regret).abs() < 1e-9, "{algorithm} round {t}");
                assert!((0.0..=1.0).contains(&row[1]));
            }
            for &c in &env.change_points {
                let restarted = rows[c + 1][3] == 1.0;
                assert_eq!(restarted, algorithm.starts_with("oracle"), "{algorithm}: a fresh epoch at round {}", c + 1);
            }
        }
        // Same noise sequence for every method: reward - mean is the same at round 1.
        let first: Vec<f64> = ["zooming-tsr", "zooming", "oracle"]
            .iter()
            .map(|a| {
                let r = rows(a, 5);
                r[1][2] - env.mean(1, r[1][1])
            })
            .collect();
        assert!((first[0] - first[1]).abs() < 1e-12 && (first[0] - first[2]).abs() < 1e-12);
    }
}
