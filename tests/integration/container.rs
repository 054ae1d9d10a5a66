//! The container image for real: `deploy/image-context.sh` and
//! `deploy/Containerfile.scratch` built with podman (no base image, no registry), then a
//! coordinator and a worker run from it on hosts of their own (network namespaces made by
//! the test, as in `tests/integration/network.rs`), with TLS and the token, a sweep through them from
//! a client on a third host, and the worker stopped the way engines stop it (SIGTERM, then
//! a grace period).
//!
//! Needs root, podman and runc (`.ci/run` installs them with apt). This machine's sandbox
//! does not let crun run containers (cgroups in hybrid mode; no CAP_SYS_RESOURCE, so rlimits
//! are set no higher than the host's), hence runc and explicit ulimits. Without podman the
//! test says so and passes, unless `ARMADA_REQUIRE_PODMAN=1` (as `.ci/run` sets).

use crate::common;

use common::net::Net;
use common::{armada, assert_same_trajectory, jobs, succeeded, text, wait_until};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_armada");
const TOKEN: &str = "container-test-token";

fn found(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}

/// `podman args`, with the runtime and limits this machine allows.
fn podman(args: &[&str]) -> std::process::Output {
    Command::new("podman").arg("--runtime=runc").args(args).output().unwrap()
}

/// Removes the test's containers and image, whatever happens.
struct Cleanup {
    tag: String,
    names: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for name in &self.names {
            let _ = podman(&["rm", "-f", "-t", "0", name]);
        }
        let _ = podman(&["rmi", "-f", &self.tag]);
    }
}

#[test]
fn a_coordinator_and_a_worker_from_the_image_run_a_sweep_and_the_worker_drains_on_stop() {
    if !(found("podman") && found("runc") && found("objcopy")) {
        assert!(
            std::env::var("ARMADA_REQUIRE_PODMAN").as_deref() != Ok("1"),
            "podman, runc and objcopy are needed (apt-get install podman runc binutils)"
        );
        eprintln!("SKIPPED: podman, runc or objcopy is missing; see ARMADA_REQUIRE_PODMAN");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = common::manifest_dir();
    // The coordinator first: the test certificate is for its address, 10.77.0.1.
    let Some(net) = Net::new("i", &["coord", "worker", "client"]) else { return };
    let context = tmp.path().join("context");
    let prepared = Command::new("bash")
        .arg(root.join("deploy/image-context.sh"))
        .args([BIN, context.to_str().unwrap()])
        .output()
        .unwrap();
    succeeded(prepared, "image-context.sh");
    let id = std::process::id();
    let cleanup = Cleanup {
        tag: format!("localhost/armada-test:{id}"),
        names: vec![format!("armada-coordinator-{id}"), format!("armada-worker-{id}")],
    };
    succeeded(podman(&["build", "-q", "-t", &cleanup.tag, context.to_str().unwrap()]), "podman build");

    let data = tmp.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let url = format!("https://{}:7070", net.addr("coord"));
    let tls = root.join("tests/fixtures/tls");
    let run = |name: &str, host: &str, args: &[&str]| {
        let (volume, certs) = (format!("{}:/data", data.display()), format!("{}:/tls:ro", tls.display()));
        let network = format!("--network=ns:/run/netns/{}", net.ns(host));
        let mut all = vec!["run", "-d", "--name", name, &network, "-v", &volume, "-v", &certs];
        all.extend(["--ulimit=nofile=20000:20000", "--ulimit=nproc=4096:4096"]);
        all.extend(["-e", "ARMADA_TOKEN", "-e", "ARMADA_LOG=info", &cleanup.tag]);
        all.extend(args);
        let out = Command::new("podman").arg("--runtime=runc").args(&all).env("ARMADA_TOKEN", TOKEN).output().unwrap();
        succeeded(out, &format!("podman run {name}"));
    };
    let listen = format!("{}:7070", net.addr("coord"));
    let serve = ["serve", "--listen", &listen, "--data", "/data", "--tls-cert", "/tls/net-cert.pem"];
    run(&cleanup.names[0], "coord", &[&serve[..], &["--tls-key", "/tls/net-key.pem"]].concat());
    let ca = tls.join("net-cert.pem");
    let client = |args: &[&str]| {
        let mut cmd = net.exec("client", BIN);
        cmd.args(args).args(["--coordinator", &url, "--tls-ca", ca.to_str().unwrap()]).env("ARMADA_TOKEN", TOKEN);
        cmd.output().unwrap()
    };
    wait_until(30, "the coordinator in its container to answer", || client(&["status"]).status.success());
    run(
        &cleanup.names[1],
        "worker",
        &["worker", "--coordinator", &url, "--slots", "2", "--tls-ca", "/tls/net-cert.pem"],
    );

    let sweep = root.join("sweeps/lse-finite-quick.toml");
    let reference = tmp.path().join("reference");
    let local =
        armada(&["run", sweep.to_str().unwrap(), "--in-process", "--out", reference.to_str().unwrap(), "--quiet"]);
    assert!(local.status.success(), "{}", text(&local.stderr));
    succeeded(client(&["submit", sweep.to_str().unwrap()]), "submit");
    succeeded(client(&["watch", "lse-finite-quick", "--quiet"]), "watch");
    let (ours, theirs) = (jobs(&data.join("lse-finite-quick")), jobs(&reference.join("lse-finite-quick")));
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, df) in &ours {
        assert_same_trajectory(df, &theirs[key], &format!("job {key}"));
    }
    for table in ["summary.parquet", "final.parquet"] {
        let (a, b) = (data.join("lse-finite-quick").join(table), reference.join("lse-finite-quick").join(table));
        assert!(std::fs::read(a).unwrap() == std::fs::read(b).unwrap(), "{table} differs from the in-process run's");
    }

    // An engine stops a container with SIGTERM and a grace period: the worker drains, exits 0.
    succeeded(podman(&["stop", "-t", "30", &cleanup.names[1]]), "podman stop");
    let code = succeeded(podman(&["inspect", "--format", "{{.State.ExitCode}}", &cleanup.names[1]]), "inspect");
    let logs = podman(&["logs", &cleanup.names[1]]);
    let logs = format!("{}{}", text(&logs.stdout), text(&logs.stderr));
    assert_eq!(code.trim(), "0", "the worker's exit code on SIGTERM; its log:\n{logs}");
    assert!(logs.contains("drained"), "the worker did not say it drained:\n{logs}");
    let size = succeeded(podman(&["image", "inspect", "--format", "{{.Size}}", &cleanup.tag]), "image inspect");
    eprintln!("image {} of {} MB", cleanup.tag, size.trim().parse::<u64>().unwrap_or(0) / 1_000_000);
}
