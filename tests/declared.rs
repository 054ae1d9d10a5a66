//! The open world through the real binaries: families declared to a coordinator, tokens
//! with roles, the provenance of committed trajectories, and `armada summarize` refusing a
//! part that lost its job index.

mod common;

use common::cluster::{client_env, serve, worker_args, write};
use common::{armada, text};
use std::path::Path;

const ADMIN: &str = "admin-token-0123456789";
const CLIENT: &str = "client-token-0123456789";
const WORKER: &str = "worker-token-0123456789";
const MYBO_WORKER: &str = "mybo-worker-token-0123456789";

const TOKENS: &str = r#"
[[tokens]]
secret = "client-token-0123456789"
role = "client"
[[tokens]]
secret = "worker-token-0123456789"
role = "worker"
[[tokens]]
secret = "mybo-worker-token-0123456789"
role = "worker"
families = ["mybo"]
"#;

const DECLARATION: &str = r#"
name = "mybo"
version = 1
doc = "a family no armada build ships"
[[benchmarks]]
name = "branin"
[[benchmarks.params]]
name = "noise_sd"
kind = "float"
min = 0.0
max = 1.0
default = 0.1
[[algorithms]]
name = "my-ucb"
[[metrics]]
name = "regret"
kind = "float"
"#;

const MYBO_SWEEP: &str = r#"
name = "mine"
family = "mybo"
seeds = 2
horizon = 3
[[benchmarks]]
name = "branin"
[[algorithms]]
name = "my-ucb"
"#;

const TESTKIT_SWEEP: &str = r#"
name = "builtin"
family = "testkit"
seeds = 3
horizon = 4
[[benchmarks]]
name = "constant"
[[algorithms]]
name = "echo"
"#;

fn as_role(args: &[&str], url: &str, token: &str) -> (bool, String, String) {
    let out = client_env(args, url, 60, &[("ARMADA_TOKEN", token)]);
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// A worker started with `token`: its exit status and log once it stops by itself.
fn refused_worker(url: &str, token: &str, log: &Path) -> String {
    let mut w = worker_args(url, 1, log, &[], &[("ARMADA_TOKEN", token)]);
    assert!(!w.wait(60).success(), "a refused worker exits non-zero");
    std::fs::read_to_string(log).unwrap()
}

#[test]
fn declared_families_token_roles_and_provenance_through_the_real_binaries() {
    let tmp = tempfile::tempdir().unwrap();
    let tokens = write(tmp.path(), "tokens.toml", TOKENS);
    let declaration = write(tmp.path(), "mybo.toml", DECLARATION);
    let (mybo, builtin) =
        (write(tmp.path(), "mine.toml", MYBO_SWEEP), write(tmp.path(), "builtin.toml", TESTKIT_SWEEP));
    let (declaration, mybo, builtin) =
        (declaration.to_str().unwrap(), mybo.to_str().unwrap(), builtin.to_str().unwrap());
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--token", ADMIN, "--tokens", tokens.to_str().unwrap()]);
    let url = coord.url.as_str();

    // A sweep of a family nobody declared is refused, and nothing is queued.
    let (ok, _, err) = as_role(&["submit", mybo], url, CLIENT);
    assert!(!ok && err.contains("family: unknown family `mybo`"), "{err}");
    // A client declares it ahead of any worker; then the same sweep is validated and queued.
    let (ok, digest, err) = as_role(&["family", "add", declaration], url, CLIENT);
    assert!(ok, "{err}");
    let digest = digest.trim().to_string();
    assert_eq!(digest.len(), 16, "{digest}");
    assert!(err.contains("family mybo version 1 declared"), "{err}");
    let (ok, _, err) = as_role(&["submit", mybo], url, CLIENT);
    assert!(ok && err.contains("mine: 2 jobs (2 new"), "{err}");
    // Its parameters are checked against the declaration, naming the field.
    let bad = write(
        tmp.path(),
        "bad.toml",
        &MYBO_SWEEP.replace("name = \"branin\"", "name = \"branin\"\nparams = { noise_sd = 2.0 }"),
    );
    let (ok, _, err) = as_role(&["submit", bad.to_str().unwrap()], url, CLIENT);
    assert!(!ok && err.contains("noise_sd: 2 is out of range; expected a float in [0, 1]"), "{err}");
    // A changed declaration under the same name and version is refused, naming the field.
    let changed = write(tmp.path(), "changed.toml", &DECLARATION.replace("default = 0.1", "default = 0.2"));
    let (ok, _, err) = as_role(&["family", "add", changed.to_str().unwrap()], url, ADMIN);
    assert!(!ok && err.contains("differs at `benchmarks[0].params[0].default`"), "{err}");
    // The coordinator lists it beside the built-in families.
    let (ok, listed, err) = as_role(&["list"], url, ADMIN);
    assert!(ok, "{err}");
    assert!(listed.contains(&format!("family mybo (version 1, declared, digest {digest})")), "{listed}");
    assert!(listed.contains("family testkit (version 2)"), "{listed}");

    // Roles: a worker token cannot submit; a client token cannot be a worker; a worker
    // token limited to `mybo` cannot register for the built-in families.
    let (ok, _, err) = as_role(&["submit", builtin], url, WORKER);
    assert!(!ok && err.contains("this is a worker token"), "{err}");
    let log = refused_worker(url, CLIENT, &tmp.path().join("client-as-worker.log"));
    assert!(log.contains("this is a client token: it cannot act as a worker"), "{log}");
    let log = refused_worker(url, MYBO_WORKER, &tmp.path().join("limited.log"));
    assert!(log.contains("this worker's token runs only the families mybo, not `lse`"), "{log}");

    // A worker with a worker token runs the built-in sweep; every part records who did.
    let (ok, _, err) = as_role(&["submit", builtin], url, CLIENT);
    assert!(ok, "{err}");
    let _w = worker_args(url, 1, &tmp.path().join("w.log"), &[], &[("ARMADA_TOKEN", WORKER)]);
    let (ok, _, err) = as_role(&["watch", "builtin", "--quiet"], url, CLIENT);
    assert!(ok, "{err}");
    let parts = common::part_files(&data.join("builtin"));
    let mut recorded = 0;
    for part in &parts {
        for (key, p) in armada::results::read_provenance(part).unwrap() {
            assert_eq!(key.len(), 32);
            assert!(p.worker.starts_with('w') && p.name.contains(':'), "{p:?}");
            assert!(p.software.starts_with("armada 0.1.0 (build "), "{p:?}");
            // The processor it ran on, as this machine's worker describes it.
            assert_eq!(p.processor, armada_worker::processor::describe(), "{p:?}");
            assert!(p.family_digest.is_empty() && p.attempt_id > 0, "{p:?}");
            recorded += 1;
        }
    }
    assert_eq!(recorded, 3, "every job's provenance, once");
    // The declared family's jobs stay queued: no worker declared it.
    let (ok, status, err) = as_role(&["status", "mine"], url, CLIENT);
    assert!(ok && status.contains("2 queued"), "{status}{err}");
}

/// A part rewritten by another tool loses its `armada.jobs` footer: `armada summarize`
/// refuses it naming the file, instead of taking its rows for one job.
/// An extension's algorithm that lists the benchmarks it runs is refused with any other
/// at submission, naming both fields, and nothing is queued; paired with its own it runs.
#[test]
fn an_extension_paired_with_a_benchmark_it_does_not_support_is_refused_at_submission() {
    let tmp = tempfile::tempdir().unwrap();
    let extension = write(
        tmp.path(),
        "my-lse.toml",
        "name = \"my-lse\"\nversion = 1\nextends = \"lse\"\n[[algorithms]]\nname = \"my-ucb\"\n\
         benchmarks = [\"sinusoidal\", \"himmelblau\"]\n",
    );
    let sweep = |benchmarks: &[&str]| {
        let mut text = "name = \"mine\"\nfamily = \"lse\"\nseeds = 2\nhorizon = 3\n".to_string();
        for b in benchmarks {
            text += &format!("[[benchmarks]]\nname = \"{b}\"\n");
        }
        text += "[[algorithms]]\nname = \"straddle\"\n[[algorithms]]\nname = \"my-ucb\"\n";
        write(tmp.path(), &format!("{}.toml", benchmarks.len()), &text)
    };
    let coord = serve(&tmp.path().join("data"), 0, &["--token", ADMIN]);
    let url = coord.url.as_str();
    let (ok, _, err) = as_role(&["family", "add", extension.to_str().unwrap()], url, ADMIN);
    assert!(ok, "{err}");
    let mixed = sweep(&["sinusoidal", "sphere-5d"]);
    let (ok, _, err) = as_role(&["submit", mixed.to_str().unwrap()], url, ADMIN);
    assert!(!ok, "{err}");
    assert!(
        err.contains(
            "algorithms[1]: with benchmark `sphere-5d` (benchmarks[1]): algorithm: `my-ucb` does not run benchmark \
             `sphere-5d`: its declaration supports only sinusoidal, himmelblau"
        ),
        "{err}"
    );
    let (ok, status, err) = as_role(&["status"], url, ADMIN);
    assert!(ok && status.trim() == "no sweeps", "nothing was written: {status}{err}");
    let (ok, _, err) = as_role(&["submit", sweep(&["sinusoidal", "himmelblau"]).to_str().unwrap()], url, ADMIN);
    assert!(ok, "{err}");
    let (ok, status, err) = as_role(&["status", "mine"], url, ADMIN);
    assert!(ok && status.contains("8 jobs"), "{status}{err}");
}

#[test]
fn summarize_refuses_a_part_that_lost_its_job_index() {
    use polars::prelude::*;
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "builtin.toml", TESTKIT_SWEEP);
    let out = tmp.path().join("out");
    let run = armada(&["run", sweep.to_str().unwrap(), "--out", out.to_str().unwrap(), "--in-process", "--quiet"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let sweep_dir = out.join("builtin");
    let parts = common::part_files(&sweep_dir);
    assert_eq!(parts.len(), 1);
    let summarized = armada(&["summarize", sweep_dir.to_str().unwrap()]);
    assert!(summarized.status.success(), "{}", text(&summarized.stderr));
    assert!(text(&summarized.stderr).contains("from 3 jobs"), "{}", text(&summarized.stderr));
    let mut df = common::read(&parts[0]);
    ParquetWriter::new(std::fs::File::create(&parts[0]).unwrap()).finish(&mut df).unwrap();
    let summarized = armada(&["summarize", sweep_dir.to_str().unwrap()]);
    assert!(!summarized.status.success());
    let err = text(&summarized.stderr);
    assert!(err.contains(&parts[0].display().to_string()) && err.contains("has no job index"), "{err}");
}
