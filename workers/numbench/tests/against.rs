//! `--against`: numbench times a workload in itself and in another build, round by round. The
//! other build here is a stand-in script that prints a numbench table row with a fixed time, so
//! the other side's seconds are known and the ratio can be checked against them.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

const BIN: &str = env!("CARGO_BIN_EXE_armada-numbench");

/// The tests run one at a time: a script written while another test forks could be held
/// open for writing in that child until it execs, and running it then fails with "Text file
/// busy" (ETXTBSY).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// An executable script standing in for another numbench build: it prints `stdout`.
fn other_build(name: &str, stdout: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("armada-numbench-{name}-{}", std::process::id()));
    std::fs::write(&path, format!("#!/bin/sh\nprintf '{stdout}'\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn numbench(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

#[test]
fn prints_both_builds_medians_their_ratio_and_every_round() {
    let _serial = one_at_a_time();
    let other = other_build("two-seconds", "workload armada s\\nlse-random 2.000 0.1 2.0\\n");
    let out = numbench(&["--only", "lse-random", "--against", other.to_str().unwrap(), "--rounds", "3"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let ab = stdout.split_once("\nA/B against ").expect("an A/B table").1;
    assert!(ab.starts_with(other.to_str().unwrap()) && ab.contains("median of 3 rounds"), "{ab}");
    let rows: Vec<&str> = ab.lines().filter(|l| l.starts_with("lse-")).collect();
    assert_eq!(rows.len(), 1, "only the workload asked for: {ab}");
    let words: Vec<&str> = rows[0].split_whitespace().collect();
    // this s, other s, ratio, the trajectory (`-`: the stand-in prints no digest), one ratio per round
    assert_eq!(words.len(), 1 + 3 + 1 + 3, "{}", rows[0]);
    assert_eq!(words[4], "-", "{}", rows[0]);
    let numbers: Vec<f64> = words[1..4].iter().chain(&words[5..]).map(|w| w.parse().unwrap()).collect();
    let (this, other_s, ratio) = (numbers[0], numbers[1], numbers[2]);
    assert_eq!(other_s, 2.0, "the other build's seconds, read from its table row");
    assert!(this > 0.0);
    // this / other, not the other way round: ratio and `this` are each printed to 3 decimals,
    // so they agree to 0.0005 + 0.0005 / 2.
    assert!((ratio - this / 2.0).abs() <= 0.00076, "{}", rows[0]);
    // every round's ratio is that round's time over 2 s, and the middle one is the median's
    let mut rounds = numbers[3..].to_vec();
    rounds.sort_by(f64::total_cmp);
    assert!((rounds[1] - this / 2.0).abs() <= 0.00076, "{}", rows[0]);
    // the main table's armada s is the same median
    let main_row = stdout.lines().find(|l| l.starts_with("lse-random")).unwrap();
    assert_eq!(main_row.split_whitespace().nth(1).unwrap().parse::<f64>().unwrap(), this);
    std::fs::remove_file(other).unwrap();
}

/// The trajectory column compares the digest of every metric value that each build prints.
#[test]
fn says_whether_the_other_build_ran_the_same_trajectory() {
    let _serial = one_at_a_time();
    let out = numbench(&["--only", "lse-random"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = stdout.lines().find(|l| l.starts_with("lse-random")).expect("a row");
    let digest = row.split_whitespace().find_map(|w| w.strip_prefix("digest=")).expect("a digest");
    assert_eq!(digest.len(), 16, "{row}");
    let other_digest = format!("{:016x}", u64::from_str_radix(digest, 16).unwrap() ^ 1);
    for (other_digest, verdict) in [(digest, "same"), (other_digest.as_str(), "differs")] {
        let other =
            other_build(verdict, &format!("workload armada s\\nlse-random 2.000 - -; -; digest={other_digest}\\n"));
        let out = numbench(&["--only", "lse-random", "--against", other.to_str().unwrap(), "--rounds", "1"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let ab = stdout.split_once("\nA/B against ").expect("an A/B table").1;
        let ab_row = ab.lines().find(|l| l.starts_with("lse-random")).expect("an A/B row");
        assert_eq!(ab_row.split_whitespace().nth(4), Some(verdict), "{ab_row}");
        std::fs::remove_file(other).unwrap();
    }
}

#[test]
fn a_missing_build_a_build_without_the_row_or_a_bad_round_count_is_named_not_a_panic() {
    let _serial = one_at_a_time();
    let out = numbench(&["--only", "lse-random", "--against", "/nonexistent/numbench"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--against /nonexistent/numbench: no such file"), "{stderr}");

    // a build whose table lacks the workload (an older numbench, say)
    let other = other_build("no-row", "workload armada s\\nmile 9.700\\n");
    let out = numbench(&["--only", "lse-random", "--against", other.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no row for lse-random in its output"), "{stderr}");
    std::fs::remove_file(other).unwrap();

    let out = numbench(&["--only", "lse-random", "--rounds", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rounds 0: a positive integer"));
}

#[test]
fn a_mistyped_argument_or_an_unknown_workload_stops_before_any_run() {
    let _serial = one_at_a_time();
    let out = numbench(&["--only", "lse-random", "--rouns", "5"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown argument `--rouns`") && stderr.contains("usage:"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing ran: {}", String::from_utf8_lossy(&out.stdout));

    let out = numbench(&["--only", "mille"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--only mille: no workload's name contains it") && stderr.contains("mile"), "{stderr}");
    assert!(out.stdout.is_empty());

    // --cdt-table1 has no baseline to record or compare: asking for one is a mistake, not ignored.
    let out = numbench(&["--cdt-table1", "--record"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--cdt-table1 takes only --rounds"), "{stderr}");
    assert!(out.stdout.is_empty());
}
