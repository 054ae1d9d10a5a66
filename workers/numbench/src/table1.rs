//! The CDT paper's Table 1 (its Section 5): seconds per run of each bottom
//! bandit under each tuner, on Sim and MovieLens (T = 14,000), armada's beside the paper's
//! (the authors' Python; hardware not stated). The paper's point is the ordering, Theory <
//! OP ≈ TL < CDT with CDT a few seconds above TL: the tuner's overhead is small beside the
//! bottom bandit's own cost. `armada-numbench --cdt-table1` prints it as Markdown.

use crate::median;
use armada_core::{JobSpec, ParamValue, Registry};

/// The tuners in the paper's column order (armada's algorithm names).
pub const TUNERS: [&str; 4] = ["theory", "tl", "op", "cdt"];

/// One row of the paper's table: the bottom bandit (as the benchmarks' `bottom` parameter
/// names it, and as the paper labels it), the environment (armada's benchmark, the paper's
/// label) and the paper's seconds in [`TUNERS`] order.
pub struct PaperRow {
    pub bottom: &'static str,
    pub label: &'static str,
    pub benchmark: &'static str,
    pub env: &'static str,
    pub seconds: [f64; 4],
}

const fn row(bottom: &'static str, label: &'static str, sim: bool, seconds: [f64; 4]) -> PaperRow {
    let (benchmark, env) = if sim { ("synthetic", "Sim") } else { ("movielens", "MovieLens") };
    PaperRow { bottom, label, benchmark, env, seconds }
}

/// The paper's Table 1, row for row.
pub const PAPER: [PaperRow; 14] = [
    row("linucb", "LinUCB", true, [2.11, 4.01, 3.70, 6.89]),
    row("linucb", "LinUCB", false, [2.17, 3.87, 2.95, 7.31]),
    row("lints", "LinTS", true, [2.21, 4.10, 3.95, 7.63]),
    row("lints", "LinTS", false, [2.04, 4.09, 3.45, 7.71]),
    row("ucb-glm", "UCB-GLM", true, [7.74, 9.84, 9.71, 12.67]),
    row("ucb-glm", "UCB-GLM", false, [7.89, 9.64, 9.35, 13.05]),
    row("glm-tsl", "GLM-TSL", true, [304.28, 306.98, 306.02, 309.54]),
    row("glm-tsl", "GLM-TSL", false, [294.17, 295.87, 294.83, 298.81]),
    row("laplace-ts", "Laplace-TS", true, [523.62, 526.31, 526.24, 531.15]),
    row("laplace-ts", "Laplace-TS", false, [500.19, 503.45, 503.91, 509.65]),
    row("gloc", "GLOC", true, [486.58, 489.31, 490.24, 593.15]),
    row("gloc", "GLOC", false, [474.87, 476.52, 477.16, 481.03]),
    row("sgd-ts", "SGD-TS", true, [67.42, 70.62, 69.42, 73.68]),
    row("sgd-ts", "SGD-TS", false, [62.09, 66.48, 64.68, 67.31]),
];

/// The job behind one cell: the tuner on the environment with the bottom bandit, seed 0, at
/// the paper's horizon (every other parameter at its default, as in `sweeps/cdt-main.toml`).
pub fn spec(row: &PaperRow, tuner: &str, horizon: u32) -> JobSpec {
    let mut spec = JobSpec::new("bandits", row.benchmark, tuner);
    spec.horizon = horizon;
    spec.benchmark_params.insert("bottom".into(), ParamValue::Str(row.bottom.into()));
    spec
}

/// Whether a row of seconds (in [`TUNERS`] order) has the paper's shape: Theory the
/// cheapest, CDT the dearest.
pub fn ordered(seconds: &[f64; 4]) -> bool {
    let [theory, tl, op, cdt] = *seconds;
    theory <= tl.min(op) && cdt >= tl.max(op)
}

/// CDT's overhead over TL, in seconds and as a fraction of TL's time.
pub fn overhead(seconds: &[f64; 4]) -> (f64, f64) {
    let (tl, cdt) = (seconds[1], seconds[3]);
    (cdt - tl, (cdt - tl) / tl)
}

/// Times every cell (the median of `rounds` runs each) with `time`, which runs one job and
/// returns its seconds, and writes the table with its summary lines.
pub fn table(registry: &Registry, rounds: usize, mut time: impl FnMut(&Registry, &JobSpec) -> f64) -> String {
    // The MovieLens environment factorises the ratings once per process: do it before any
    // timed run, so that no cell carries it.
    time(registry, &spec(&PAPER[1], "op", 10));
    let mut out = String::from(
        "| algorithm | env | Theory | TL | OP | CDT | CDT - TL | paper: Theory | TL | OP | CDT | CDT - TL |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let (mut ours_ordered, mut paper_ordered) = (0, 0);
    let mut relative = Vec::new();
    for row in &PAPER {
        let mut ours = [0.0; 4];
        for (cell, tuner) in ours.iter_mut().zip(TUNERS) {
            let runs: Vec<f64> = (0..rounds).map(|_| time(registry, &spec(row, tuner, 14_000))).collect();
            *cell = median(&runs);
        }
        ours_ordered += usize::from(ordered(&ours));
        paper_ordered += usize::from(ordered(&row.seconds));
        relative.push(overhead(&ours).1);
        let cells = |s: &[f64; 4], digits: usize| s.map(|x| format!("{x:.digits$}")).join(" | ");
        out += &format!(
            "| {} | {} | {} | {:+.3} | {} | {:+.2} |\n",
            row.label,
            row.env,
            cells(&ours, 3),
            overhead(&ours).0,
            cells(&row.seconds, 2),
            overhead(&row.seconds).0,
        );
    }
    let paper_relative: Vec<f64> = PAPER.iter().map(|r| overhead(&r.seconds).1).collect();
    out += &format!(
        "\nTheory cheapest and CDT dearest: {ours_ordered} of 14 rows (paper {paper_ordered} of 14).\n\
         CDT's overhead over TL, median over rows: {:.1}% of TL's time (paper {:.1}%).\n",
        100.0 * median(&relative),
        100.0 * median(&paper_relative),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_papers_table_has_its_shape() {
        // Read off the table by hand: Theory is the cheapest and CDT the dearest in every row.
        assert_eq!(PAPER.iter().filter(|r| ordered(&r.seconds)).count(), 14);
        let (seconds, fraction) = overhead(&PAPER[0].seconds);
        assert!((seconds - 2.88).abs() < 1e-12 && (fraction - 2.88 / 4.01).abs() < 1e-12);
    }

    #[test]
    fn ordered_needs_theory_lowest_and_cdt_highest() {
        assert!(ordered(&[1.0, 2.0, 2.0, 3.0]));
        assert!(!ordered(&[2.5, 2.0, 3.0, 4.0]), "Theory above TL");
        assert!(!ordered(&[1.0, 2.0, 3.5, 3.0]), "OP above CDT");
    }

    #[test]
    fn the_table_times_every_cell_after_one_untimed_movielens_run() {
        let registry = Registry::new(vec![Box::new(armada_bandits::BanditsFamily)]);
        let mut seen = Vec::new();
        // A fake clock: each cell's seconds say which tuner it was, so the table's columns and
        // its summary follow from them.
        let text = table(&registry, 3, |_, spec| {
            seen.push((spec.benchmark.clone(), spec.algorithm.clone(), spec.horizon));
            match spec.algorithm.as_str() {
                "theory" => 1.0,
                "tl" => 2.0,
                "op" => 2.5,
                _ => 3.0,
            }
        });
        assert_eq!(seen.len(), 1 + 14 * 4 * 3);
        assert_eq!(seen[0], ("movielens".to_string(), "op".to_string(), 10));
        assert!(seen[1..].iter().all(|s| s.2 == 14_000));
        assert!(
            text.contains(
                "| LinUCB | Sim | 1.000 | 2.000 | 2.500 | 3.000 | +1.000 | 2.11 | 4.01 | 3.70 | 6.89 | +2.88 |"
            ),
            "{text}"
        );
        assert!(text.contains("Theory cheapest and CDT dearest: 14 of 14 rows (paper 14 of 14)."), "{text}");
        assert!(text.contains("median over rows: 50.0% of TL's time"), "{text}");
    }
}
