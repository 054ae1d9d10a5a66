//! `--against`: numbench times a workload in itself and in another build, round by round.
//! Here the other build is this same binary, so what is checked is the plumbing (the rows,
//! the rounds, the ratio of the medians), not any speed.

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_armada-numbench");

#[test]
fn prints_both_builds_medians_their_ratio_and_every_round() {
    let out = Command::new(BIN).args(["--only", "lse-random", "--against", BIN, "--rounds", "3"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let ab = stdout.split_once("\nA/B against ").expect("an A/B table").1;
    assert!(ab.starts_with(BIN) && ab.contains("median of 3 rounds"), "{ab}");
    let rows: Vec<&str> = ab.lines().filter(|l| l.starts_with("lse-")).collect();
    assert_eq!(rows.len(), 1, "only the workload asked for: {ab}");
    let numbers: Vec<f64> = rows[0].split_whitespace().skip(1).map(|w| w.parse().unwrap()).collect();
    // this s, other s, ratio, then one ratio per round
    assert_eq!(numbers.len(), 3 + 3, "{}", rows[0]);
    let (this, other, ratio) = (numbers[0], numbers[1], numbers[2]);
    assert!(this > 0.0 && other > 0.0);
    // printed to 3 decimals: the ratio is of the printed medians up to that rounding
    assert!((ratio - this / other).abs() <= 0.0005 * (1.0 + 1.0 / other) + 0.0005 * ratio, "{}", rows[0]);
    // the main table's armada s is the same median
    let main_row = stdout.lines().find(|l| l.starts_with("lse-random")).unwrap();
    assert_eq!(main_row.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap(), this);
}

#[test]
fn a_missing_build_or_a_bad_round_count_is_named_not_a_panic() {
    let out = Command::new(BIN).args(["--only", "lse-random", "--against", "/nonexistent/numbench"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--against /nonexistent/numbench: no such file"), "{stderr}");

    let out = Command::new(BIN).args(["--only", "lse-random", "--rounds", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rounds 0: a positive integer"));
}
