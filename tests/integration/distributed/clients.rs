//! What clients and workers are told: bad sweeps, tokens, cancel, a Python client, TLS,
//! wrong addresses, a rogue session.

use super::*;

#[test]
fn bad_sweeps_are_refused_naming_the_field_and_nothing_is_queued() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--max-jobs-per-sweep", "1000"]);
    // One algorithm with 8 unknown parameters of 10 values each: 10^8 variants unexpanded.
    let huge_grid: String = (0..8).map(|i| format!("p{i} = [0,1,2,3,4,5,6,7,8,9], ")).collect();
    let huge_grid = format!(
        "family = \"lse\"\nseeds = 1\nhorizon = 3\n[[benchmarks]]\nname = \"sinusoidal\"\n[[algorithms]]\nname = \"straddle\"\nparams = {{ {} }}\n",
        huge_grid.trim_end_matches(", ")
    );
    let testkit = |head: &str| {
        format!("{head}family = \"testkit\"\nhorizon = 1\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n")
    };
    let (journal, long_name, too_many) = (
        testkit("name = \"armada.sqlite-journal\"\nseeds = 1\n"),
        testkit(&format!("name = \"{}\"\nseeds = 1\n", "n".repeat(300))),
        testkit("seeds = 1001\n"),
    );
    let cases = [
        ("huge-grid", huge_grid.as_str(), "algorithms[0].params.p0: unknown parameter of `straddle`"),
        ("journal", journal.as_str(), "name: `armada.sqlite-journal` is not a usable sweep name"),
        ("long-name", long_name.as_str(), "name: `nnnn"),
        ("too-many", too_many.as_str(), "= 1001 jobs, over the limit of 1000 jobs per sweep"),
        ("unknown-algo", "family = \"lse\"\nseeds = 1\nhorizon = 3\n[[benchmarks]]\nname = \"sinusoidal\"\n[[algorithms]]\nname = \"straddle\"\n[[algorithms]]\nname = \"usx\"\n", "algorithms[1].name: unknown algorithm `usx`"),
        ("bad-param", "family = \"lse\"\nseeds = 1\nhorizon = 3\n[[benchmarks]]\nname = \"sinusoidal\"\n[[algorithms]]\nname = \"straddle\"\nparams = { beta_sqrt = \"three\" }\n", "algorithms[0].params.beta_sqrt"),
        ("malformed", "family = \"lse\"\nseeds = [1, \n", "malformed TOML"),
    ];
    for (name, body, needle) in cases {
        let path = write(tmp.path(), &format!("{name}.toml"), body);
        let out = client(&["submit", path.to_str().unwrap()], &coord.url, 30);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(err.contains("InvalidArgument"), "{name}: {err}");
    }
    let status = client(&["status"], &coord.url, 30);
    assert_eq!(text(&status.stdout).trim(), "no sweeps");
    // The coordinator is still serving after the bad requests, and wrote nothing for them.
    assert!(status.status.success());
    let mut entries: Vec<String> =
        std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    entries.sort();
    entries.retain(|e| !e.starts_with("armada.sqlite") && e != ".spool");
    assert!(entries.is_empty(), "{entries:?}");
}

#[test]
fn with_a_token_requests_without_it_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--token", "s3cret-token"]);
    let refused = client(&["status"], &coord.url, 30);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("Unauthenticated"), "{}", text(&refused.stderr));
    let wrong = client(&["status", "--token", "guess"], &coord.url, 30);
    assert!(text(&wrong.stderr).contains("Unauthenticated"), "{}", text(&wrong.stderr));
    let ok = client_env(&["status"], &coord.url, 30, &[("ARMADA_TOKEN", "s3cret-token")]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout).trim(), "no sweeps");
    // A worker without the token gives up with a clear message instead of retrying forever.
    let mut w = worker(&coord.url, 1, &tmp.path().join("w.log"), &[]);
    assert!(!w.wait(30).success());
    let log = std::fs::read_to_string(tmp.path().join("w.log")).unwrap();
    assert!(log.contains("missing or wrong token"), "{log}");
}

#[test]
fn cancel_stops_the_sweeps_jobs_on_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    // Two jobs of about 60 s each: cancel must stop them long before.
    let sweep = write(
        tmp.path(),
        "long.toml",
        "name = \"long\"\nfamily = \"testkit\"\nseeds = 2\nhorizon = 600\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"slow\"\nparams = { ms = 100 }\n",
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--lease-ttl-ms", "800"]);
    let log = tmp.path().join("w.log");
    let _w = worker(&coord.url, 2, &log, &[]);
    assert!(client(&["submit", sweep.to_str().unwrap()], &coord.url, 30).status.success());
    wait_until(30, "both jobs running", || {
        text(&client(&["status", "long"], &coord.url, 30).stdout).contains("2 running")
    });
    let cancelled = client(&["cancel", "long"], &coord.url, 30);
    assert!(text(&cancelled.stdout).contains("cancelled, 2 jobs: 0 done, 0 running, 0 queued, 0 failed, 2 cancelled"));
    // Each job stops at the heartbeat that says so, or at its next upload, refused (which
    // of the two comes first depends on the heartbeat's phase and the machine's load).
    let stopped_attempts = || {
        let log = std::fs::read_to_string(&log).unwrap();
        let stops =
            log.lines().filter(|l| l.contains("the coordinator says stop") || l.contains("dropped by the coordinator"));
        let ids: std::collections::BTreeSet<String> =
            stops.filter_map(|l| l.split("attempt ").nth(1)?.split([':', ' ']).next().map(str::to_string)).collect();
        ids.len()
    };
    let stopped = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        stopped_attempts() == 2
    });
    assert!(stopped, "the worker stops both jobs: {}", std::fs::read_to_string(&log).unwrap());
    // The slots are free again: a small sweep runs right away on the same worker.
    let quick = write(
        tmp.path(),
        "quick.toml",
        "name = \"quick\"\nfamily = \"testkit\"\nseeds = 2\nhorizon = 3\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    assert!(client(&["submit", quick.to_str().unwrap()], &coord.url, 30).status.success());
    let watched = client(&["watch", "quick", "--quiet"], &coord.url, 30);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(job_count(&data.join("long")), 0);
    let watched = client(&["watch", "long", "--quiet"], &coord.url, 30);
    assert_eq!(watched.status.code(), Some(1), "a cancelled sweep is not a success");
}

/// A client in another language, generated from the .proto files: health, reflection,
/// submit, watch and summary through Python grpcio (analysis/requirements-grpc.txt).
#[test]
fn a_python_grpc_client_submits_and_watches_a_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(
        tmp.path(),
        "py.toml",
        "name = \"py\"\nfamily = \"testkit\"\nseeds = 5\nhorizon = 4\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--token", "py-token"]);
    let _w = worker(&coord.url, 2, &tmp.path().join("w.log"), &[("ARMADA_TOKEN", "py-token")]);
    let out = Command::new(python_with_grpc())
        .arg(common::manifest_dir().join("analysis/grpc_client.py"))
        .args(["--coordinator", &coord.url, "--token", "py-token", sweep.to_str().unwrap()])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["health"], "SERVING");
    let services: Vec<&str> = report["services"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(services.contains(&"armada.v1.Sweeps") && services.contains(&"armada.v1.Workers"), "{services:?}");
    assert_eq!((report["sweep_id"].as_str(), report["n_jobs"].as_u64()), (Some("py"), Some(5)));
    assert_eq!(report["events"]["job_finished"], 5);
    assert_eq!(report["events"]["sweep_finished"], 1);
    assert_eq!((report["n_done"].as_u64(), report["n_failed"].as_u64()), (Some(5), Some(0)));
    // The summary bytes it received are the coordinator's final.parquet.
    let on_disk = std::fs::read(data.join("py").join("final.parquet")).unwrap();
    let digest = Command::new("sha256sum").arg(data.join("py").join("final.parquet")).output().unwrap();
    assert!(!on_disk.is_empty());
    assert_eq!(text(&digest.stdout).split_whitespace().next(), report["final_parquet_sha256"].as_str());
    // Read over the wire into polars: the same final table, every trajectory, one job alone.
    assert_eq!(report["fetched_final_sha256"], report["final_parquet_sha256"]);
    let traj = &report["trajectories"];
    assert_eq!((traj["rows"].as_u64(), traj["jobs"].as_u64()), (Some(25), Some(5)), "5 jobs of steps 0..=4");
    assert_eq!(traj["step_sum"].as_u64(), Some(5 * (1 + 2 + 3 + 4)));
    let columns: Vec<&str> = traj["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert_eq!(&columns[..3], ["job_key", "family", "benchmark"]);
    let one = &report["one_job"];
    assert_eq!(one["rows"].as_u64(), Some(5));
    assert_eq!(one["keys"].as_array().unwrap(), &vec![one["key"].clone()]);
}

#[test]
fn tls_serves_https_to_clients_that_trust_the_certificate() {
    let tmp = tempfile::tempdir().unwrap();
    let fixtures = common::manifest_dir().join("tests/fixtures/tls");
    let (cert, key) = (fixtures.join("cert.pem"), fixtures.join("key.pem"));
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    assert!(coord.url.starts_with("https://"), "{}", coord.url);
    let ca = cert.to_str().unwrap();
    let _w = worker_args(&coord.url, 1, &tmp.path().join("w.log"), &["--tls-ca", ca], &[]);
    let sweep = write(
        tmp.path(),
        "tls.toml",
        "name = \"tls\"\nfamily = \"testkit\"\nseeds = 3\nhorizon = 2\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n",
    );
    // Without the CA the client refuses to talk; with it, everything works.
    let refused = client(&["status"], &coord.url, 30);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("--tls-ca"), "{}", text(&refused.stderr));
    let plain = client(&["status"], &coord.url.replace("https://", "http://"), 30);
    assert_eq!(plain.status.code(), Some(2), "plain HTTP/2 to a TLS port must fail");
    assert!(client(&["submit", sweep.to_str().unwrap(), "--tls-ca", ca], &coord.url, 30).status.success());
    let watched = client(&["watch", "tls", "--quiet", "--tls-ca", ca], &coord.url, 60);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    assert_eq!(job_count(&data.join("tls")), 3);
    // Its heartbeats go on their own connection, TLS over the prefix, within an interval.
    let log = tmp.path().join("w.log");
    let heard = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        std::fs::read_to_string(&log).unwrap_or_default().contains("heartbeats go on a connection of their own")
    });
    assert!(heard, "{}", std::fs::read_to_string(&log).unwrap_or_default());
    // The dashboard is HTTPS with the same certificate, and nothing in the clear.
    let curl = |url: &str| {
        Command::new("curl").args(["-sS", "--max-time", "20", "--cacert", ca, url]).output().expect("curl runs")
    };
    let metrics = curl(&format!("https://{}/metrics", coord.dashboard));
    assert!(metrics.status.success(), "{}", text(&metrics.stderr));
    assert!(text(&metrics.stdout).contains("armada_jobs{state=\"done\"} 3"), "{}", text(&metrics.stdout));
    let plain = curl(&format!("http://{}/metrics", coord.dashboard));
    assert!(
        !plain.status.success() || !text(&plain.stdout).contains("armada_jobs"),
        "the dashboard answered in the clear"
    );
}

/// A wrong address says what is wrong with it, naming it: nothing listening, no scheme,
/// a scheme that is not http(s), the dashboard's HTTP port, TLS spoken to a plain port and
/// plain HTTP/2 to a TLS one, a CA that did not sign the certificate. A worker refuses a
/// URL that cannot work at once, and logs each retry of one that may, with its target and
/// cause, in plain text when its log is a file.
#[test]
fn a_wrong_address_is_named_with_its_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let refused = format!("http://127.0.0.1:{free}");
    let plain = serve(&tmp.path().join("plain"), 0, &[]);
    let fixtures = common::manifest_dir().join("tests/fixtures/tls");
    let (cert, key) = (fixtures.join("cert.pem"), fixtures.join("key.pem"));
    let tls =
        serve(&tmp.path().join("tls"), 0, &["--tls-cert", cert.to_str().unwrap(), "--tls-key", key.to_str().unwrap()]);
    let (ca, other_ca) = (cert.to_str().unwrap(), fixtures.join("net-cert.pem"));
    let dashboard = format!("http://{}", plain.dashboard);
    let https_plain = plain.url.replace("http://", "https://");
    let http_tls = tls.url.replace("https://", "http://");
    let no_scheme = format!("127.0.0.1:{}", plain.port);
    let cases: Vec<(&str, Vec<&str>, String)> = vec![
        (
            &refused,
            vec![],
            format!("error: connecting to {refused}: connection refused: nothing listens at 127.0.0.1:{free}"),
        ),
        (
            &no_scheme,
            vec![],
            format!("error: coordinator URL `{no_scheme}` has no scheme: write http://{no_scheme} (or https://"),
        ),
        ("ftp://127.0.0.1:1", vec![], "the scheme must be http:// or https://, not ftp://".into()),
        (&dashboard, vec![], "error: the server answered plain HTTP, not gRPC: is this the dashboard's port?".into()),
        (
            &https_plain,
            vec!["--tls-ca", ca],
            format!("error: connecting to {https_plain}: TLS handshake failed (received corrupt message"),
        ),
        (
            &tls.url,
            vec!["--tls-ca", other_ca.to_str().unwrap()],
            format!("error: connecting to {}: TLS handshake failed (invalid peer certificate: UnknownIssuer)", tls.url),
        ),
        (&http_tls, vec![], "if the coordinator serves TLS, use https:// with --tls-ca".into()),
    ];
    for (url, extra, expected) in &cases {
        let mut args = vec!["status"];
        args.extend(extra);
        let out = client(&args, url, 30);
        assert_eq!(out.status.code(), Some(2), "{url}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(expected.as_str()), "{url}: expected {expected:?} in {}", text(&out.stderr));
    }
    // Every client command at the dashboard's port says so; none blames the file it sends.
    let sweep = write(tmp.path(), "x.toml", "family = \"testkit\"\nseeds = 1\nhorizon = 1\n[[benchmarks]]\nname = \"constant\"\n[[algorithms]]\nname = \"echo\"\n");
    let fetched = tmp.path().join("fetched");
    let fetched = fetched.to_str().unwrap();
    for args in [
        vec!["submit", sweep.to_str().unwrap()],
        vec!["list"],
        vec!["watch", "x"],
        vec!["fetch", "x", "--out", fetched],
    ] {
        let out = client(&args, &dashboard, 30);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("is this the dashboard's port?") && !stderr.contains("x.toml"), "{args:?}: {stderr}");
    }
    // A worker: a URL without a scheme is refused at once; a refused one retried, said each time.
    let bad = Command::new(BIN).args(["worker", "--coordinator", &no_scheme]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("has no scheme: write http://"), "{}", text(&bad.stderr));
    let log = tmp.path().join("w.log");
    let retrying = worker(&refused, 1, &log, &[]);
    let said = format!("coordinator {refused}: connecting: connection refused: nothing listens at 127.0.0.1:{free}");
    wait_until(30, "two retries logged", || std::fs::read_to_string(&log).unwrap().matches(&said).count() >= 2);
    drop(retrying);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("retrying again in"), "{logged}");
    assert!(!logged.contains('\x1b'), "colour codes in a log file:\n{logged}");
}

/// A rogue client (Python, from the .proto alone) registers its own session, and cannot
/// complete, fail, renew or upload into the attempt an honest worker holds (PERMISSION_DENIED),
/// nor register with another build; the job it leases itself and feeds records that skip
/// step 0 is refused naming the step, voided, and run again by the honest worker. The sweep
/// ends as an uninterrupted run.
#[test]
fn a_rogue_session_cannot_touch_another_workers_attempt() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = write(tmp.path(), "rogue.toml", ROGUE_SWEEP);
    let reference = tmp.path().join("reference");
    let python = python_with_grpc();
    let data = tmp.path().join("data");
    let coord = serve(&data, 0, &[]);
    let _honest = worker(&coord.url, 1, &tmp.path().join("w.log"), &[]);
    let submitted = client(&["submit", sweep.to_str().unwrap()], &coord.url, 30);
    assert!(submitted.status.success(), "{}", text(&submitted.stderr));
    // Attempt ids start at 1: the honest worker's first lease is the victim.
    wait_until(30, "the honest worker's first job", || {
        text(&client(&["status", "rogue"], &coord.url, 30).stdout).contains("1 running")
    });
    let out = Command::new(&python)
        .arg(common::manifest_dir().join("tests/support/rogue_worker.py"))
        .args([coord.url.as_str(), "1"])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let said = |what: &str| report[what].as_str().unwrap_or_default().to_string();
    for what in ["complete", "fail", "heartbeat", "upload"] {
        assert!(
            said(what).starts_with("PERMISSION_DENIED: attempt 1 is not held by this worker session"),
            "{what}: {}",
            said(what)
        );
    }
    assert!(said("wrong_build").starts_with("FAILED_PRECONDITION: build:"), "{}", said("wrong_build"));
    assert_eq!(report["leased"], 1);
    assert!(said("own_upload").starts_with("INVALID_ARGUMENT"), "{}", said("own_upload"));
    assert!(said("own_upload").contains("step 5 arrived where step 0 was due"), "{}", said("own_upload"));

    let watched = client(&["watch", "rogue", "--quiet"], &coord.url, 120);
    assert!(watched.status.success(), "{}", text(&watched.stderr));
    let status = text(&client(&["status", "rogue"], &coord.url, 30).stdout);
    assert!(status.contains("3 jobs: 3 done"), "{status}");
    let out =
        armada(&["run", sweep.to_str().unwrap(), "--out", reference.to_str().unwrap(), "--quiet", "--in-process"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (ours, theirs) = (jobs(&data.join("rogue")), jobs(&reference.join("rogue")));
    assert_eq!(ours.keys().collect::<Vec<_>>(), theirs.keys().collect::<Vec<_>>());
    for (key, df) in &ours {
        assert_same_trajectory(df, &theirs[key], key);
    }
}
