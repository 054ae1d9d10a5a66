//! Several hosts on one machine. Each test makes its own network: a namespace holding a
//! bridge, and per host a namespace with one veth to it and an address in 10.77.0.0/24
//! that exists only inside these namespaces. The coordinator, the workers and the client
//! run on hosts of their own, with a token and TLS. A host is partitioned by taking its
//! link down at the bridge: packets vanish, nothing is refused.
//!
//! Needs root (`ip netns`, from iproute2). Without it a test says so and passes, unless
//! `ARMADA_REQUIRE_NETNS=1` (as `.ci/run` sets), where it fails.

use crate::common;

use common::net::Net;
use common::{armada, assert_same_trajectory, jobs, text, wait_until, Proc};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_armada");
const TOKEN: &str = "network-test-token";
const PORT: u16 = 7070;

/// `armada args` on `host` of `net`, with the token.
fn on(net: &Net, host: &str, args: &[&str]) -> Command {
    let mut cmd = net.exec(host, BIN);
    cmd.args(args).env("ARMADA_TOKEN", TOKEN).env("ARMADA_LOG", "info");
    cmd
}

fn tls() -> (PathBuf, PathBuf) {
    let dir = common::manifest_dir().join("tests/fixtures/tls");
    (dir.join("net-cert.pem"), dir.join("net-key.pem"))
}

/// The coordinator on `host`, with TLS, `--data data`; logs to `log`.
fn serve(net: &Net, host: &str, data: &Path, log: &Path) -> (Proc, String) {
    let (cert, key) = tls();
    let listen = format!("{}:{PORT}", net.addr(host));
    let mut child =
        on(net, host, &["serve", "--listen", &listen, "--data", data.to_str().unwrap(), "--lease-ttl-ms", "2000"])
            .args(["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap())
            .spawn()
            .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert_eq!(url, format!("https://{listen}"), "{line:?}");
    (Proc(child), url)
}

fn worker(net: &Net, host: &str, url: &str, log: &Path) -> Proc {
    let ca = tls().0;
    let child = on(net, host, &["worker", "--coordinator", url, "--slots", "1", "--tls-ca", ca.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    Proc(child)
}

/// A client subcommand on `host`, bounded by `secs`.
fn client(net: &Net, host: &str, args: &[&str], url: &str, secs: u64) -> Output {
    let ca = tls().0;
    let mut cmd = Command::new("timeout");
    cmd.args(["--signal=KILL", &secs.to_string(), "ip", "netns", "exec", &net.ns(host), BIN])
        .args(args)
        .args(["--coordinator", url, "--tls-ca", ca.to_str().unwrap()])
        .env("ARMADA_TOKEN", TOKEN);
    cmd.output().unwrap()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Keys of the jobs a worker's log says it leased, in order.
fn leased(log: &Path) -> Vec<String> {
    read(log)
        .lines()
        .filter_map(|l| l.split("leased job ").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// `armada run` of `sweep` into `out`, uninterrupted, on this host: what every outcome is
/// checked against.
fn reference(sweep: &Path, out: &Path) {
    let run = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
}

/// Every job once, each trajectory equal to the reference in every column but
/// elapsed_ms, and the summary tables byte for byte.
fn assert_same_as_reference(sweep_dir: &Path, reference_dir: &Path, what: &str) {
    let (ours, theirs) = (jobs(sweep_dir), jobs(reference_dir));
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>(), "{what}");
    for (key, df) in &ours {
        assert_same_trajectory(df, &theirs[key], &format!("{what}, job {key}"));
    }
    for table in ["summary.parquet", "final.parquet"] {
        let (a, b) = (std::fs::read(sweep_dir.join(table)).unwrap(), std::fs::read(reference_dir.join(table)).unwrap());
        assert!(a == b, "{what}: {table} differs from the uninterrupted run's");
    }
}

fn slow_sweep(dir: &Path, name: &str, seeds: u32) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let body = format!(
        "name = \"{name}\"\nfamily = \"testkit\"\nseeds = {seeds}\nhorizon = 6\n[[benchmarks]]\nname = \"constant\"\n\
         [[algorithms]]\nname = \"slow\"\nparams = {{ ms = 250 }}\n"
    );
    std::fs::write(&path, body).unwrap();
    path
}

/// A worker partitioned mid-job loses its lease and the job runs again on another host;
/// when its link comes back, its late result is dropped or committed, never twice. Then
/// the coordinator is killed and restarted while another worker is cut off. The sweep
/// ends as an uninterrupted run.
#[test]
fn partitioned_workers_and_a_restart_behind_a_partition_lose_nothing_and_duplicate_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = slow_sweep(tmp.path(), "net", 9);
    let Some(net) = Net::new("w", &["coord", "w1", "w2", "w3", "client"]) else { return };
    reference(&sweep, &tmp.path().join("reference"));
    let (data, coord_log) = (tmp.path().join("data"), tmp.path().join("coord.log"));
    let (mut coord, url) = serve(&net, "coord", &data, &coord_log);
    let logs: Vec<PathBuf> = (1..=3).map(|i| tmp.path().join(format!("w{i}.log"))).collect();
    let _workers: Vec<Proc> = ["w1", "w2", "w3"].iter().zip(&logs).map(|(h, log)| worker(&net, h, &url, log)).collect();
    let submitted = client(&net, "client", &["submit", sweep.to_str().unwrap()], &url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));

    // w1 is cut off while it holds jobs: their leases expire and other hosts run them.
    wait_until(30, "w1 to lease a job", || !leased(&logs[0]).is_empty());
    net.cut("w1");
    let held = leased(&logs[0]);
    wait_until(30, "the coordinator to expire w1's leases", || read(&coord_log).contains("lease expired"));
    let rerun = |key: &String| leased(&logs[1]).contains(key) || leased(&logs[2]).contains(key);
    wait_until(60, "a job w1 held to be leased by another host", || held.iter().any(rerun));
    net.heal("w1");

    // The coordinator dies and restarts while w2 is cut off; w2 comes back to the new one.
    net.cut("w2");
    coord.kill9();
    let (restarted, _) = serve(&net, "coord", &data, &coord_log);
    std::thread::sleep(Duration::from_secs(1));
    net.heal("w2");

    let watched = client(&net, "client", &["watch", "net", "--quiet"], &url, 180);
    assert!(watched.status.success(), "{}\n{}", text(&watched.stderr), read(&coord_log));
    assert_same_as_reference(&data.join("net"), &tmp.path().join("reference/net"), "partitions and a restart");
    drop(restarted);
    // For the record: what w1 and w2 made of their partitions.
    for (host, log) in ["w1", "w2"].iter().zip(&logs) {
        eprintln!(
            "--- {host}:\n{}",
            read(log).lines().filter(|l| !l.contains("leased job")).collect::<Vec<_>>().join("\n")
        );
    }
}

/// A client cut off during `watch` resumes when its link comes back, and reconnects when
/// the coordinator restarted meanwhile; it prints the same final table as an
/// uninterrupted watch.
#[test]
fn a_watch_cut_off_from_the_coordinator_resumes_and_reconnects() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = slow_sweep(tmp.path(), "watched", 16);
    let Some(net) = Net::new("c", &["coord", "w1", "w2", "client"]) else { return };
    reference(&sweep, &tmp.path().join("reference"));
    let (data, coord_log) = (tmp.path().join("data"), tmp.path().join("coord.log"));
    let (mut coord, url) = serve(&net, "coord", &data, &coord_log);
    let _workers: Vec<Proc> =
        ["w1", "w2"].iter().map(|h| worker(&net, h, &url, &tmp.path().join(format!("{h}.log")))).collect();
    let submitted = client(&net, "client", &["submit", sweep.to_str().unwrap()], &url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    let (ca, watch_out, watch_err) = (tls().0, tmp.path().join("watch.out"), tmp.path().join("watch.err"));
    let mut watch = Proc(
        on(&net, "client", &["watch", "watched", "--quiet", "--coordinator", &url, "--tls-ca", ca.to_str().unwrap()])
            .stdout(std::fs::File::create(&watch_out).unwrap())
            .stderr(std::fs::File::create(&watch_err).unwrap())
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_secs(2));

    // A short partition: the stream just resumes.
    net.cut("client");
    std::thread::sleep(Duration::from_secs(3));
    net.heal("client");
    // A partition across a restart: the old connection is gone; the client dials again.
    net.cut("client");
    coord.kill9();
    let (restarted, _) = serve(&net, "coord", &data, &coord_log);
    std::thread::sleep(Duration::from_secs(1));
    net.heal("client");

    let status = watch.wait(120);
    assert!(status.success(), "watch failed: {}", read(&watch_err));
    assert!(read(&watch_err).contains("reconnecting"), "the watch never reconnected: {}", read(&watch_err));
    eprintln!("--- watch:\n{}", read(&watch_err));
    let again = client(&net, "client", &["watch", "watched", "--quiet"], &url, 60);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert_eq!(read(&watch_out), text(&again.stdout), "the interrupted watch's final table");
    assert_same_as_reference(&data.join("watched"), &tmp.path().join("reference/watched"), "a watch across partitions");
    drop(restarted);
}
