//! Slurm for real: a one-node cluster on this machine (Debian's slurm-wlm and munge:
//! slurmctld and slurmd on the machine's own hostname, proctrack/linuxproc, task/none,
//! every file and socket in a directory of the test's, ports of its own), a coordinator on
//! loopback, and workers started the way users start them: `sbatch
//! deploy/slurm/workers.sbatch`, changed only through the environment and sbatch's
//! command-line options.
//!
//! Needs the Slurm and munge binaries and root (`.ci/run` installs them with apt). Without
//! them the test says so and passes, unless `ARMADA_REQUIRE_SLURM=1` (as `.ci/run` sets).

use crate::common;

use common::{armada, assert_same_trajectory, jobs, text, wait_until, Proc};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_armada");
const TOKEN: &str = "slurm-test-token";

struct Cluster {
    dir: PathBuf,
    conf: PathBuf,
    /// munged, slurmctld, slurmd: dropped (killed) after every job is cancelled.
    daemons: Vec<Proc>,
}

fn found(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}

fn hostname() -> String {
    text(&Command::new("hostname").output().unwrap().stdout).trim().to_string()
}

impl Cluster {
    /// Start the cluster in `dir`; `None` (after saying why) where it cannot run.
    fn start(dir: &Path) -> Option<Cluster> {
        let missing: Vec<&str> =
            ["munged", "slurmctld", "slurmd", "sbatch"].into_iter().filter(|p| !found(p)).collect();
        let root = text(&Command::new("id").arg("-u").output().unwrap().stdout).trim() == "0";
        if !missing.is_empty() || !root {
            let why = format!("missing {missing:?}, root: {root}");
            assert!(
                std::env::var("ARMADA_REQUIRE_SLURM").as_deref() != Ok("1"),
                "cannot start a Slurm cluster ({why}): install slurm-wlm and munge, as root"
            );
            eprintln!("SKIPPED: cannot start a Slurm cluster here ({why}); see ARMADA_REQUIRE_SLURM");
            return None;
        }
        let host = hostname();
        let path = |name: &str| dir.join(name).display().to_string();
        for sub in ["state", "spool", "logs"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let key = dir.join("munge.key");
        std::fs::write(&key, (0..1024).map(|i| (i * 7 + 13) as u8).collect::<Vec<u8>>()).unwrap();
        std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o400)).unwrap();
        let munged = Command::new("munged")
            .args(["--foreground", "--force", "--num-threads=2"])
            .arg(format!("--key-file={}", path("munge.key")))
            .arg(format!("--socket={}", path("munge.sock")))
            .arg(format!("--pid-file={}", path("munged.pid")))
            .arg(format!("--log-file={}", path("munged.log")))
            .arg(format!("--seed-file={}", path("munged.seed")))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut cluster = Cluster { dir: dir.to_path_buf(), conf: dir.join("slurm.conf"), daemons: vec![Proc(munged)] };
        wait_until(10, "munged's socket", || dir.join("munge.sock").exists());
        let memory_mb = std::fs::read_to_string("/proc/meminfo")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap()
            / 1024
            - 1024;
        let cpus = std::thread::available_parallelism().unwrap().get();
        let conf = format!(
            "ClusterName=armada-test\nSlurmctldHost={host}\nSlurmctldPort=16817\nSlurmdPort=16818\n\
             AuthType=auth/munge\nAuthInfo=socket={sock}\nCredType=cred/munge\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\nSchedulerType=sched/backfill\n\
             SlurmUser=root\nSlurmdUser=root\nReturnToService=2\nMpiDefault=none\n\
             StateSaveLocation={state}\nSlurmdSpoolDir={spool}\n\
             SlurmctldPidFile={ctldpid}\nSlurmdPidFile={dpid}\n\
             SlurmctldLogFile={ctldlog}\nSlurmdLogFile={dlog}\n\
             NodeName={host} CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN\n\
             PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n",
            sock = path("munge.sock"),
            state = path("state"),
            spool = path("spool"),
            ctldpid = path("slurmctld.pid"),
            dpid = path("slurmd.pid"),
            ctldlog = path("slurmctld.log"),
            dlog = path("slurmd.log"),
        );
        std::fs::write(&cluster.conf, conf).unwrap();
        for daemon in ["slurmctld", "slurmd"] {
            let mut cmd = Command::new(daemon);
            cmd.arg("-D").arg("-f").arg(&cluster.conf).stdout(Stdio::null()).stderr(Stdio::null());
            if daemon == "slurmctld" {
                cmd.arg("-c");
            }
            cluster.daemons.push(Proc(cmd.spawn().unwrap()));
        }
        wait_until(60, "the Slurm node to be idle", || {
            let out = cluster.command("sinfo").args(["-h", "-o", "%T"]).output().unwrap();
            text(&out.stdout).trim() == "idle"
        });
        Some(cluster)
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("SLURM_CONF", &self.conf).current_dir(&self.dir);
        cmd
    }

    /// `sbatch` the worker array script against `url`, as a user would on a 2-CPU node:
    /// the script's #SBATCH lines overridden on the command line. Returns the job id.
    fn workers(&self, url: &str, tasks: usize) -> String {
        let script = common::manifest_dir().join("deploy/slurm/workers.sbatch");
        let bin_dir = Path::new(BIN).parent().unwrap().display().to_string();
        let out = self
            .command("sbatch")
            .args(["--parsable", &format!("--array=0-{}", tasks - 1), "--cpus-per-task=1", "--mem=1G"])
            .args(["--time=00:10:00", &format!("--output={}/logs/%x-%A_%a.out", self.dir.display())])
            .arg(script)
            .env("ARMADA_COORDINATOR", url)
            .env("ARMADA_TOKEN", TOKEN)
            .env("ARMADA_LOG", "info")
            .env("PATH", format!("{bin_dir}:{}", std::env::var("PATH").unwrap_or_default()))
            .output()
            .unwrap();
        assert!(out.status.success(), "sbatch: {}", text(&out.stderr));
        text(&out.stdout).trim().split(';').next().unwrap().to_string()
    }

    /// States of the tasks of `job` that Slurm still knows (running, pending, completing).
    fn states(&self, job: &str) -> Vec<String> {
        let out = self.command("squeue").args(["-h", "-r", "-j", job, "-o", "%T"]).output().unwrap();
        text(&out.stdout).lines().map(str::to_owned).collect()
    }

    /// The worker logs of array `job`.
    fn logs(&self, job: &str) -> Vec<String> {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(self.dir.join("logs"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&format!("-{job}_")))
            .collect();
        logs.sort();
        logs.iter().map(|p| std::fs::read_to_string(p).unwrap_or_default()).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.command("scancel").args(["--full", "--user=root"]).status();
        std::thread::sleep(Duration::from_millis(500));
        // The daemons go with `self.daemons`; the tasks they started are the workers,
        // which exit with their SIGTERM (or the daemons' SIGKILL after KillWait).
    }
}

/// `armada serve` on a free loopback port with the token; its URL.
fn serve(data: &Path, log: &Path) -> (Proc, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data", data.to_str().unwrap(), "--lease-ttl-ms", "3000"])
        .env("ARMADA_TOKEN", TOKEN)
        .env("ARMADA_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (Proc(child), line.trim().rsplit(' ').next().unwrap().to_string())
}

fn client(args: &[&str], url: &str) -> std::process::Output {
    let out = Command::new("timeout")
        .args(["--signal=KILL", "300", BIN])
        .args(args)
        .args(["--coordinator", url])
        .env("ARMADA_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert!(out.status.success(), "armada {}: {}", args.join(" "), text(&out.stderr));
    out
}

/// Counts of `armada status` for `sweep`: (done, running, queued).
fn counts(sweep: &str, url: &str) -> (u32, u32, u32) {
    let out = text(&client(&["status", sweep], url).stdout);
    let count = |what: &str| {
        out.split(',').find_map(|part| part.trim().strip_suffix(what)?.trim().rsplit(' ').next()?.parse().ok())
    };
    (count("done").unwrap(), count("running").unwrap(), count("queued").unwrap())
}

/// Every job once, equal to the reference in every column but elapsed_ms, and the summary
/// tables byte for byte.
fn assert_same_as_reference(ours: &Path, reference: &Path, what: &str) {
    let (a, b) = (jobs(ours), jobs(reference));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "{what}");
    for (key, df) in &a {
        assert_same_trajectory(df, &b[key], &format!("{what}, job {key}"));
    }
    for table in ["summary.parquet", "final.parquet"] {
        let same = std::fs::read(ours.join(table)).unwrap() == std::fs::read(reference.join(table)).unwrap();
        assert!(same, "{what}: {table} differs from the in-process run's");
    }
}

/// One array runs a paper's quick sweep to completion. Then, on a sweep of slower jobs,
/// `scancel` of the array mid-sweep: each worker gets SIGTERM, finishes and commits its
/// running job and exits; a second array finishes the sweep; nothing is lost or
/// duplicated.
#[test]
fn workers_under_slurm_run_a_sweep_drain_on_scancel_and_a_second_array_finishes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(cluster) = Cluster::start(&tmp.path().join("slurm")) else { return };
    let (data, log) = (tmp.path().join("data"), tmp.path().join("coordinator.log"));
    let (_coordinator, url) = serve(&data, &log);

    // A real sweep file, through two array tasks.
    let lse = common::manifest_dir().join("sweeps/lse-finite-quick.toml");
    let reference = tmp.path().join("reference");
    let run = armada(&["run", lse.to_str().unwrap(), "--in-process", "--out", reference.to_str().unwrap(), "--quiet"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let first = cluster.workers(&url, 2);
    client(&["submit", lse.to_str().unwrap()], &url);
    client(&["watch", "lse-finite-quick", "--quiet"], &url);
    let name = "lse-finite-quick";
    assert_same_as_reference(&data.join(name), &reference.join(name), "lse-finite-quick under Slurm");
    assert!(cluster.logs(&first).iter().all(|l| l.contains("registered with")), "{:?}", cluster.logs(&first));

    // Slower jobs; scancel while they run. Each takes 3 s, so that the sweep still has
    // about 12 s of work when scancel is sent: Slurm's signal may take seconds to arrive
    // on a loaded machine.
    let slow = tmp.path().join("slurm-slow.toml");
    std::fs::write(
        &slow,
        "name = \"slurm-slow\"\nfamily = \"testkit\"\nseeds = 12\nhorizon = 9\n[[benchmarks]]\nname = \"constant\"\n\
         [[algorithms]]\nname = \"slow\"\nparams = { ms = 300 }\n",
    )
    .unwrap();
    let run = armada(&["run", slow.to_str().unwrap(), "--in-process", "--out", reference.to_str().unwrap(), "--quiet"]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    client(&["submit", slow.to_str().unwrap()], &url);
    // Two done, then scancel at once. Not "and two running": `running` counts the jobs a
    // worker leased ahead too, and a worker whose last job (of the sweep before) was short
    // leases a deep backlog, so `running` fell to 2 only with the sweep's last two jobs
    // left, and the drain then found nothing to hand back (a CI run failed so).
    wait_until(60, "two slow jobs done", || counts("slurm-slow", &url).0 >= 2);
    let done_at_scancel = counts("slurm-slow", &url).0;
    let out = cluster.command("scancel").arg(&first).output().unwrap();
    assert!(out.status.success(), "scancel: {}", text(&out.stderr));
    wait_until(60, "the first array to end", || cluster.states(&first).is_empty());
    for log in cluster.logs(&first) {
        assert!(log.contains("shutting down: no new leases"), "no SIGTERM drain:\n{log}");
        assert!(log.contains("drained: every leased job finished"), "the worker did not drain:\n{log}");
    }
    let (done, running, queued) = counts("slurm-slow", &url);
    assert_eq!(running, 0, "the drained workers left jobs running");
    assert!(queued > 0, "scancel came too late to test anything: {done} done, {queued} queued");
    // A job running at the signal was finished and committed, not abandoned.
    assert!(done > done_at_scancel, "the drain committed nothing: {done_at_scancel} done at scancel, {done} after");

    let second = cluster.workers(&url, 2);
    client(&["watch", "slurm-slow", "--quiet"], &url);
    assert_same_as_reference(&data.join("slurm-slow"), &reference.join("slurm-slow"), "slurm-slow across two arrays");
    let out = cluster.command("scancel").arg(&second).output().unwrap();
    assert!(out.status.success());
    wait_until(60, "the second array to end", || cluster.states(&second).is_empty());
    eprintln!("worker log of the first array:\n{}", cluster.logs(&first)[0]);
}
