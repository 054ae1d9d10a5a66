//! The open world through the real binaries: families declared to a coordinator, tokens
//! with roles, the provenance of committed trajectories, and `armada summarize` refusing a
//! part that lost its job index.

use crate::common;

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

const QUOTA_TOKENS: &str = r#"
[[tokens]]
secret = "client-a-token-0123456789"
role = "client"
name = "group-a"
[[tokens]]
secret = "client-b-token-0123456789"
role = "client"
name = "group-b"
"#;

/// Declarations are bounded and removable through the real binaries: one token keeps at
/// most its quota (`--max-declarations-per-token`), other tokens and the admin are not held
/// by it; `armada family remove` takes an admin token, is refused while a stored sweep uses
/// the declaration (naming it) and frees its place once the sweep is deleted, for good
/// (across a restart); and `armada list` prints families that ServerInfo abridges whole.
#[test]
fn declarations_have_a_quota_per_token_are_removable_and_listed_whole() {
    let (a, b) = ("client-a-token-0123456789", "client-b-token-0123456789");
    let tmp = tempfile::tempdir().unwrap();
    let tokens = write(tmp.path(), "tokens.toml", QUOTA_TOKENS);
    let declare = |name: &str| {
        let path = write(tmp.path(), &format!("{name}.toml"), &DECLARATION.replace("\"mybo\"", &format!("\"{name}\"")));
        path.to_str().unwrap().to_string()
    };
    let data = tmp.path().join("data");
    let args = ["--token", ADMIN, "--tokens", tokens.to_str().unwrap(), "--max-declarations-per-token", "2"];
    let mut coord = serve(&data, 0, &args);
    let url = coord.url.clone();
    for name in ["a-one", "a-two"] {
        let (ok, _, err) = as_role(&["family", "add", &declare(name)], &url, a);
        assert!(ok, "{err}");
    }
    let (ok, _, err) = as_role(&["family", "add", &declare("a-three")], &url, a);
    assert!(!ok && err.contains("token `group-a` keeps 2 declarations already, the most one token keeps"), "{err}");
    let (ok, _, err) = as_role(&["family", "add", &declare("b-one")], &url, b);
    assert!(ok, "{err}");
    let (ok, _, err) = as_role(&["family", "add", &declare("admin-one")], &url, ADMIN);
    assert!(ok, "{err}");

    // A sweep of `a-one` keeps it: removal is refused, naming the sweep, until it is deleted.
    let sweep =
        write(tmp.path(), "uses.toml", &MYBO_SWEEP.replace("\"mybo\"", "\"a-one\"").replace("\"mine\"", "\"uses\""));
    let (ok, _, err) = as_role(&["submit", sweep.to_str().unwrap()], &url, a);
    assert!(ok, "{err}");
    let (ok, _, err) = as_role(&["family", "remove", "a-one", "1"], &url, a);
    assert!(!ok && err.contains("removing a declaration takes an admin token"), "{err}");
    let (ok, _, err) = as_role(&["family", "remove", "a-one", "1"], &url, ADMIN);
    assert!(!ok && err.contains("family `a-one` version 1 is used by sweeps uses: delete them first"), "{err}");
    let (ok, _, err) = as_role(&["family", "remove", "nope", "1"], &url, ADMIN);
    assert!(!ok && err.contains("no declaration of family `nope` version 1 is kept"), "{err}");
    let (ok, _, err) = as_role(&["family", "remove", "testkit", "2"], &url, ADMIN);
    assert!(!ok && err.contains("`testkit` is a built-in family"), "{err}");
    let (ok, _, err) = as_role(&["cancel", "uses"], &url, a);
    assert!(ok, "{err}");
    let (ok, _, err) = as_role(&["delete", "uses"], &url, a);
    assert!(ok, "{err}");
    let (ok, _, err) = as_role(&["family", "remove", "a-one", "1"], &url, ADMIN);
    assert!(ok && err.contains("removed family a-one version 1 (digest "), "{err}");
    let (ok, listed, err) = as_role(&["list"], &url, ADMIN);
    assert!(ok && !listed.contains("family a-one ") && listed.contains("family a-two "), "{listed}{err}");
    // Its place is free: `group-a` declares another.
    let (ok, _, err) = as_role(&["family", "add", &declare("a-three")], &url, a);
    assert!(ok, "{err}");

    // After a restart: the removed one stays removed, and each token's count stands.
    coord.proc.sigterm();
    let coord = serve(&data, 0, &args);
    let url = coord.url.clone();
    let (ok, listed, err) = as_role(&["list"], &url, ADMIN);
    assert!(ok && !listed.contains("family a-one ") && listed.contains("family a-three "), "{listed}{err}");
    let (ok, _, err) = as_role(&["family", "add", &declare("a-four")], &url, a);
    assert!(!ok && err.contains("token `group-a` keeps 2 declarations already"), "{err}");

    // Ten declarations of about 256 KiB: ServerInfo abridges those beyond 2 MiB, and
    // `armada list` asks for each of them whole.
    let doc = "d".repeat(4000);
    let params: String = (0..64)
        .map(|i| format!("[[algorithms.params]]\nname = \"p{i}\"\nkind = \"int\"\nmin = 0\nmax = 9\ndefault = {}\ndoc = \"{doc}\"\n", i % 10))
        .collect();
    for i in 0..10 {
        let text = DECLARATION
            .replace("\"mybo\"", &format!("\"big{i}\""))
            .replace("name = \"my-ucb\"\n", &format!("name = \"my-ucb\"\n{params}"));
        let path = write(tmp.path(), &format!("big{i}.toml"), &text);
        let (ok, _, err) = as_role(&["family", "add", path.to_str().unwrap()], &url, ADMIN);
        assert!(ok, "{err}");
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let info = runtime.block_on(async {
        let mut client = armada::client::connect(&url, Some(ADMIN), None).await.unwrap();
        client.server_info(armada_proto::v1::ServerInfoRequest {}).await.unwrap().into_inner()
    });
    let abridged: Vec<&str> = info.families.iter().filter(|f| f.abridged).map(|f| f.name.as_str()).collect();
    assert_eq!(abridged, ["big8", "big9"]);
    let (ok, listed, err) = as_role(&["list"], &url, ADMIN);
    assert!(ok, "{err}");
    for i in 0..10 {
        let family =
            listed.split(&format!("family big{i} ")).nth(1).expect("listed").split("\nfamily ").next().unwrap();
        assert!(family.contains("p63"), "big{i} is listed whole");
    }
}
