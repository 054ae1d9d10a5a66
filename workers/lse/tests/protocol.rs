//! The observation protocols of paper Section 5.3 (noise-free, no re-observation) and
//! Figure 2 (fixed initial point), run through the real episode loop for every registered
//! algorithm.

use armada_core::{check_params, run_job, Episode, Family, JobSpec, JobStreams, Params, Registry};
use armada_gp::Kernel;
use armada_lse::algorithms::{Acquisition, ALGORITHMS};
use armada_lse::benchmarks::{grid_2d, FiniteProblem, Protocol};
use armada_lse::{FiniteEpisode, LseFamily};
use ndarray::s;
use std::ops::ControlFlow;

/// A 6 x 5 grid with the carrier block's protocol and kernel family.
fn small_noise_free_problem() -> FiniteProblem {
    let candidates = grid_2d(6, (0.0, 10.0), (0.0, 10.0)).slice_move(s![..30, ..]);
    let f = candidates.rows().into_iter().map(|x| (0.4 * x[0]).sin() + 0.1 * x[1] - 0.3).collect();
    FiniteProblem {
        candidates,
        f,
        theta: 0.0,
        kernel: Kernel::matern32(4.0, vec![5.0, 5.0]),
        noise_var: 1e-6,
        protocol: Protocol::NOISE_FREE_NO_REPEAT,
    }
}

fn acquisition(name: &str, n: usize) -> Acquisition {
    let def = ALGORITHMS.iter().find(|d| d.name == name).unwrap();
    Acquisition::from_params(name, &check_params(def, &Params::new()).unwrap(), n).unwrap()
}

/// No index queried twice, in its strongest form: with 30 candidates and 29 acquisitions, every
/// algorithm must visit every candidate exactly once; a 30th acquisition is an error.
/// Where `chosen_index` is in a record's values.
fn chosen_column() -> usize {
    armada_lse::LseMetrics::DEFS.iter().position(|m| m.name == "chosen_index").unwrap()
}

#[test]
fn no_repeats_visit_every_candidate_once_for_every_algorithm() {
    let problem = small_noise_free_problem();
    let n = problem.f.len();
    assert_eq!(n, 30);
    for def in ALGORITHMS.iter() {
        for seed in 0..3 {
            let mut spec = JobSpec::new("lse", "test", def.name);
            spec.seed = seed;
            let mut ep =
                FiniteEpisode::new(problem.clone(), acquisition(def.name, n), &JobStreams::new(&spec), spec.horizon);
            let mut seen = vec![false; n];
            let first = ep.initial().unwrap();
            seen[first.chosen_index as usize] = true;
            for step in 1..n as u32 {
                let idx = ep.step(step).unwrap().unwrap().chosen_index as usize;
                assert!(!seen[idx], "{} seed {seed}: index {idx} queried twice at step {step}", def.name);
                seen[idx] = true;
            }
            assert!(ep.observed().iter().all(|&o| o));
            assert!(ep.step(n as u32).is_err(), "{}: stepping past |X| must fail", def.name);
        }
    }
}

/// Noise-free observations are exact: after the initial point alone the posterior mean there
/// is `k / (k + nugget) * f(x)` (one-point GP), whatever the noise stream holds.
#[test]
fn noise_free_observations_are_exact() {
    let problem = small_noise_free_problem();
    let spec = JobSpec::new("lse", "test", "us");
    let mut ep = FiniteEpisode::new(problem.clone(), acquisition("us", 30), &JobStreams::new(&spec), spec.horizon);
    let idx = ep.initial().unwrap().chosen_index as usize;
    let want = 4.0 / (4.0 + 1e-6) * problem.f[idx];
    assert!((ep.posterior().mean()[idx] - want).abs() < 1e-15, "{} vs {want}", ep.posterior().mean()[idx]);
    // The same problem with noisy observations does not reproduce f there (noise sd 1e-3 >> 1e-15).
    let mut noisy = problem.clone();
    noisy.protocol = Protocol::NOISY;
    let mut ep = FiniteEpisode::new(noisy, acquisition("us", 30), &JobStreams::new(&spec), spec.horizon);
    let idx = ep.initial().unwrap().chosen_index as usize;
    assert!((ep.posterior().mean()[idx] - want).abs() > 1e-9);
}

/// A fixed initial index replaces the random initial draw.
#[test]
fn fixed_initial_index_is_used() {
    let mut problem = small_noise_free_problem();
    for i in [0, 17, 29] {
        problem.protocol.initial_index = Some(i);
        for seed in 0..4 {
            let mut spec = JobSpec::new("lse", "test", "random");
            spec.seed = seed;
            let mut ep =
                FiniteEpisode::new(problem.clone(), acquisition("random", 30), &JobStreams::new(&spec), spec.horizon);
            assert_eq!(ep.initial().unwrap().chosen_index as usize, i);
        }
    }
    problem.protocol.initial_index = Some(30);
    let spec = JobSpec::new("lse", "test", "random");
    let mut ep = FiniteEpisode::new(problem, acquisition("random", 30), &JobStreams::new(&spec), spec.horizon);
    assert!(ep.initial().is_err());
}

/// No index queried twice, on the registered carrier-lifetime benchmark itself (shortened runs;
/// MILE, O(N^2) per step on 6,586 points, runs only 3 steps in this unoptimised test build).
#[test]
fn carrier_lifetime_never_queries_an_index_twice() {
    let registry = Registry::new(vec![Box::new(LseFamily)]);
    assert!(LseFamily.benchmarks().iter().any(|b| b.name == "carrier-lifetime"));
    for def in ALGORITHMS.iter() {
        let mut spec = JobSpec::new("lse", "carrier-lifetime", def.name);
        spec.horizon = if def.name == "mile" { 3 } else { 60 };
        let job = registry.validate(&spec).unwrap();
        let mut chosen = Vec::new();
        run_job(&registry, &job, &mut |r| {
            chosen.push(r.values[chosen_column()] as usize);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(chosen.len(), spec.horizon as usize + 1);
        let mut sorted = chosen.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), chosen.len(), "{}: repeated index in {chosen:?}", def.name);
        assert!(chosen.iter().all(|&i| i < 6586));
    }
}

/// The Figure 2 panels through the registry: 20 observation points, the first at
/// x = -5 (index 250) for every method and seed.
#[test]
fn toy_1d_panels_start_at_minus_five() {
    use armada_core::ParamValue;
    let registry = Registry::new(vec![Box::new(LseFamily)]);
    let panels: [(&str, Option<f64>); 3] = [("straddle", Some(1.0)), ("straddle", Some(10.0)), ("rand-straddle", None)];
    for (algorithm, beta_sqrt) in panels {
        for seed in 0..2 {
            let mut spec = JobSpec::new("lse", "toy-1d", algorithm);
            if let Some(b) = beta_sqrt {
                spec.algorithm_params.insert("beta_sqrt".into(), ParamValue::Float(b));
            }
            spec.seed = seed;
            spec.horizon = 19;
            let job = registry.validate(&spec).unwrap();
            let mut chosen = Vec::new();
            run_job(&registry, &job, &mut |r| {
                chosen.push(r.values[chosen_column()] as usize);
                ControlFlow::Continue(())
            })
            .unwrap();
            assert_eq!(chosen.len(), 20);
            assert_eq!(chosen[0], 250, "{algorithm} {beta_sqrt:?}");
            assert!(chosen.iter().all(|&i| i < 1001));
        }
    }
}

/// A record's `y` is the value the posterior was fitted to: refitting a GP from scratch to the
/// recorded (`chosen_index`, `y`) pairs (a dense solve here, independent of the episode's
/// rank-one updates) gives the episode's posterior mean; on a noise-free benchmark `y` is
/// `f` at the chosen point, on a noisy one it is not.
#[test]
fn recorded_observations_refit_the_posterior() {
    for noisy in [false, true] {
        let mut problem = small_noise_free_problem();
        if noisy {
            problem.protocol = Protocol::NOISY;
            problem.noise_var = 1e-2;
        }
        let spec = JobSpec::new("lse", "test", "straddle");
        let mut ep =
            FiniteEpisode::new(problem.clone(), acquisition("straddle", 30), &JobStreams::new(&spec), spec.horizon);
        let mut records = vec![ep.initial().unwrap()];
        for step in 1..12 {
            records.push(ep.step(step).unwrap().unwrap());
        }
        let pairs: Vec<(usize, f64)> = records.iter().map(|r| (r.chosen_index as usize, r.y)).collect();
        let residual = pairs.iter().map(|&(i, y)| (y - problem.f[i]).abs()).fold(0.0, f64::max);
        if noisy {
            assert!(residual > 1e-3, "noisy observations equal f: {residual}");
        } else {
            assert_eq!(residual, 0.0, "a noise-free observation differs from f");
        }
        // mu(x) = k(x, X) (K + noise I)^-1 y, by Gaussian elimination with partial pivoting.
        let x = |i: usize| problem.candidates.row(i).to_vec();
        let n = pairs.len();
        let mut a: Vec<Vec<f64>> = (0..n)
            .map(|r| {
                let mut row: Vec<f64> = (0..n).map(|c| problem.kernel.eval(&x(pairs[r].0), &x(pairs[c].0))).collect();
                row[r] += problem.noise_var;
                row.push(pairs[r].1);
                row
            })
            .collect();
        for c in 0..n {
            let p = (c..n).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs())).unwrap();
            a.swap(c, p);
            let pivot = a[c].clone();
            for (r, row) in a.iter_mut().enumerate() {
                if r != c {
                    let factor = row[c] / pivot[c];
                    for (v, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                        *v -= factor * p;
                    }
                }
            }
        }
        let alpha: Vec<f64> = (0..n).map(|r| a[r][n] / a[r][r]).collect();
        for (i, &mu) in ep.posterior().mean().iter().enumerate() {
            let refit: f64 = pairs.iter().zip(&alpha).map(|(&(j, _), w)| w * problem.kernel.eval(&x(i), &x(j))).sum();
            assert!((mu - refit).abs() < 1e-6 * (1.0 + refit.abs()), "noisy {noisy}, candidate {i}: {mu} vs {refit}");
        }
    }
}
