//! Cost of one 14,000-round CDT run (paper Algorithm 2; Zooming TS with restarts, Algorithm 1, paper
//! constants) on top of each bottom bandit, on the synthetic logistic environment of paper Section 5
//! (d = 25, K = 120), against the paper's Table 1 CDT column (Python, Sim rows) and the bottom algorithm
//! alone with its Theory values, to show CDT's overhead (paper Section 5: CDT "only takes about four more
//! seconds").
//!
//! All seven run on the logistic model (the paper runs LinUCB/LinTS on the linear one;
//! their cost does not depend on the reward model). Also prints the top layer's own counters (restarts,
//! activations, removals, most active arms at once).
//! Run: `cargo bench -p armada-bandits --bench tuners [-- REPS] [NAME] [--refcode]`.

use armada_bandits::cdt::{Cdt, CdtConfig};
use armada_bandits::env::{SyntheticConfig, SyntheticEnv};
use armada_bandits::episode::run_tuned;
use armada_bandits::tuner::{Theory, Tuner};
use armada_bandits::BottomKind;
use armada_core::StreamRng;
use rand::SeedableRng;
use std::time::Instant;

/// Table 1, "CDT" column, Sim rows (seconds per run, Python).
fn paper_table1_cdt_sim_seconds(alg: BottomKind) -> f64 {
    match alg {
        BottomKind::LinUcb => 6.89,
        BottomKind::LinTs => 7.63,
        BottomKind::UcbGlm => 12.67,
        BottomKind::GlmTsl => 309.54,
        BottomKind::LaplaceTs => 531.15,
        BottomKind::Gloc => 593.15,
        BottomKind::SgdTs => 73.68,
    }
}

fn time_run(alg: BottomKind, config: SyntheticConfig, tuner: &mut dyn Tuner, rep: u64) -> (f64, f64) {
    let mut env = SyntheticEnv::new(config, StreamRng::seed_from_u64(1000 + rep));
    let mut bandit = alg.build(config.dim, config.horizon);
    let start = Instant::now();
    let outcome = run_tuned(
        bandit.as_mut(),
        &mut env,
        tuner,
        &mut StreamRng::seed_from_u64(2000 + rep),
        &mut StreamRng::seed_from_u64(4000 + rep),
        &mut StreamRng::seed_from_u64(3000 + rep),
    );
    (start.elapsed().as_secs_f64(), outcome.final_regret())
}

fn main() {
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let refcode = raw.iter().any(|a| a == "--refcode");
    let args: Vec<&String> = raw.iter().filter(|a| !a.starts_with("--")).collect();
    let reps: u64 = args.iter().find_map(|a| a.parse().ok()).unwrap_or(1);
    let filter = args.iter().find(|a| a.parse::<u64>().is_err()).map(|a| a.to_lowercase());
    let config = SyntheticConfig::paper_logistic();
    let cdt_config = if refcode { CdtConfig::refcode() } else { CdtConfig::paper() };
    println!(
        "CDT ({:?} preset) over each bottom bandit, logistic synthetic d = 25, K = 120, T = 14000, {reps} rep(s) per cell",
        cdt_config.preset
    );
    println!(
        "{:<11} {:>9} {:>10} {:>10} {:>10} {:>9} {:>9} {:>26}",
        "algorithm",
        "CDT s/run",
        "CDT regret",
        "Theory s",
        "Th. regret",
        "Table1 s",
        "ratio",
        "restarts/activ./rem./max"
    );
    for alg in BottomKind::ALL {
        if filter.as_ref().is_some_and(|f| !alg.label().to_lowercase().contains(f.as_str())) {
            continue;
        }
        let (mut cdt_seconds, mut cdt_regret, mut theory_seconds, mut theory_regret) = (0.0, 0.0, 0.0, 0.0);
        let mut counters = String::new();
        for rep in 0..reps {
            let mut cdt = Cdt::new(cdt_config);
            let (s, r) = time_run(alg, config, &mut cdt, rep);
            cdt_seconds += s / reps as f64;
            cdt_regret += r / reps as f64;
            let c = cdt.zooming().expect("started").counters();
            counters = format!("{}/{}/{}/{}", c.restarts, c.activations, c.removals, c.max_active);
            let (s, r) = time_run(alg, config, &mut Theory, rep);
            theory_seconds += s / reps as f64;
            theory_regret += r / reps as f64;
        }
        let table1 = paper_table1_cdt_sim_seconds(alg);
        println!(
            "{:<11} {:>9.3} {:>10.1} {:>10.3} {:>10.1} {:>9.2} {:>9.5} {:>26}",
            alg.label(),
            cdt_seconds,
            cdt_regret,
            theory_seconds,
            theory_regret,
            table1,
            cdt_seconds / table1,
            counters
        );
    }
    println!("ratio = Rust CDT seconds / paper Table 1 CDT seconds (Sim); counters are from the last repetition.");
}
