//! Cost of one 14,000-round run of each bottom bandit with its default ("Theory") hyperparameters on
//! the synthetic environment of paper Section 5 (d = 25, K = 120), against the paper's Table 1 (Python,
//! hardware not stated; the "Theory" column of the Sim rows, which times the bottom algorithm alone)
//! and, where we have one, the authors' reference Python code timed on this project's machine class.
//!
//! The paper runs LinUCB/LinTS on the linear model and the five GLM bandits on the logistic one; those
//! pairs get the ratios. LinUCB/LinTS are also timed on the logistic model (their cost does not depend on
//! the reward model); the GLM bandits need 0/1 rewards and are timed on the logistic model only.
//! Run: `cargo bench -p armada-bandits --bench bottom [-- REPS] [NAME]` (default 1 repetition per cell;
//! NAME keeps only algorithms whose name contains it, case-insensitive).

use armada_bandits::env::{Environment, SyntheticConfig, SyntheticEnv};
use armada_bandits::{episode, BottomKind, HyperparameterSchedule};
use armada_core::StreamRng;
use rand::SeedableRng;
use std::time::Instant;

/// Table 1, "Theory" column, Sim rows (seconds per run, Python).
fn paper_table1_theory_sim_seconds(alg: BottomKind) -> f64 {
    match alg {
        BottomKind::LinUcb => 2.11,
        BottomKind::LinTs => 2.21,
        BottomKind::UcbGlm => 7.74,
        BottomKind::GlmTsl => 304.28,
        BottomKind::LaplaceTs => 523.62,
        BottomKind::Gloc => 486.58,
        BottomKind::SgdTs => 67.42,
    }
}

/// Our same-machine timing of the authors' reference code, algorithm seconds (only LinUCB has a
/// "Theory" entry; the UCB-GLM and GLM-TSL entries are with CDT, whose top layer costs seconds at most).
fn reference_code_same_machine_seconds(alg: BottomKind) -> Option<(f64, &'static str)> {
    match alg {
        BottomKind::LinUcb => Some((2.5, "Theory")),
        BottomKind::LinTs => Some((2.4, "CDT")),
        BottomKind::UcbGlm => Some((32.5, "CDT, 31-34")),
        BottomKind::GlmTsl => Some((466.0, "CDT, 1 BLAS thread")),
        _ => None,
    }
}

fn time_run(alg: BottomKind, config: SyntheticConfig, rep: u64) -> (f64, f64) {
    let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(1000 + rep));
    let mut bandit = alg.build(config.dim, config.horizon);
    let mut algo_rng = StreamRng::seed_from_u64(2000 + rep);
    let mut noise_rng = StreamRng::seed_from_u64(3000 + rep);
    let start = Instant::now();
    let outcome =
        episode::run(bandit.as_mut(), &mut env, &HyperparameterSchedule::Theory, &mut algo_rng, &mut noise_rng);
    (start.elapsed().as_secs_f64(), outcome.final_regret())
}

/// Seconds of drawing the contexts and rewards alone (part of every run above).
fn time_environment(config: SyntheticConfig) -> f64 {
    let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(1));
    let mut noise = StreamRng::seed_from_u64(2);
    let start = Instant::now();
    let mut acc = 0.0;
    for _ in 0..config.horizon {
        env.next_round();
        acc += env.sample_reward(0, &mut noise) + env.regret(0);
    }
    std::hint::black_box(acc);
    start.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let reps: u64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(1);
    let filter = args.iter().find(|a| a.parse::<u64>().is_err()).map(|a| a.to_lowercase());
    let linear = SyntheticConfig::paper_linear();
    let logistic = SyntheticConfig::paper_logistic();
    println!("bottom bandits, d = 25, K = 120, T = 14000, default (Theory) hyperparameters, {reps} rep(s) per cell");
    println!(
        "environment alone: linear {:.3} s, logistic {:.3} s per run",
        time_environment(linear),
        time_environment(logistic)
    );
    println!(
        "{:<11} {:<9} {:>9} {:>10} {:>12} {:>9} {:>24}",
        "algorithm", "rewards", "s/run", "regret", "Table1 s", "ratio", "same-machine Python"
    );
    for alg in BottomKind::ALL {
        if filter.as_ref().is_some_and(|f| !alg.label().to_lowercase().contains(f.as_str())) {
            continue;
        }
        let paper_model = if alg.paper_uses_linear_rewards() { "linear" } else { "logistic" };
        for (model, config) in [("linear", linear), ("logistic", logistic)] {
            if !alg.paper_uses_linear_rewards() && model == "linear" {
                continue;
            }
            let (mut seconds, mut regret) = (0.0, 0.0);
            for rep in 0..reps {
                let (s, r) = time_run(alg, config, rep);
                seconds += s / reps as f64;
                regret += r / reps as f64;
            }
            if model == paper_model {
                let table1 = paper_table1_theory_sim_seconds(alg);
                let same_machine = reference_code_same_machine_seconds(alg)
                    .map(|(s, what)| format!("{s} s ({what}): {:.4}", seconds / s))
                    .unwrap_or_else(|| "-".to_string());
                println!(
                    "{:<11} {:<9} {:>9.3} {:>10.1} {:>12.2} {:>9.5} {:>24}",
                    alg.label(),
                    model,
                    seconds,
                    regret,
                    table1,
                    seconds / table1,
                    same_machine
                );
            } else {
                println!(
                    "{:<11} {:<9} {:>9.3} {:>10.1} {:>12} {:>9} {:>24}",
                    alg.label(),
                    model,
                    seconds,
                    regret,
                    "-",
                    "-",
                    "-"
                );
            }
        }
    }
    println!("ratio = Rust seconds / paper Table 1 seconds (Theory column, Sim); lower is faster.");
}
