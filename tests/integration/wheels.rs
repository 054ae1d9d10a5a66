//! The wheels of deploy/wheels.sh as a Python user meets them: installed from their
//! directory alone (`pip install --no-index`) into a fresh venv, then run with the Rust
//! toolchain, the target directory and this checkout out of sight (each process in a mount
//! namespace of its own, an empty tmpfs over each): `armada --version`, `armada run` of the
//! quick sweep (this build's table and summaries, byte for byte), a Python worker of the
//! SDK's example family against the wheel's `armada serve` (this build's trajectories and
//! summaries), and docs/your-method.md with the bindings. `.ci/run` builds the wheels with
//! CI's profile and names their directory in `ARMADA_WHEELS`; without it the test says it
//! is skipped (`ARMADA_REQUIRE_WHEELS=1` fails it instead).

use crate::common;

use common::cluster::{client_with, serve_with, write, Launcher};
use common::{succeeded, text, wait_until};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The wheels' directory, or `None` (and a message) when this run has none.
fn wheels() -> Option<PathBuf> {
    match std::env::var_os("ARMADA_WHEELS") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            assert!(
                std::env::var("ARMADA_REQUIRE_WHEELS").as_deref() != Ok("1"),
                "ARMADA_REQUIRE_WHEELS=1 but no ARMADA_WHEELS (deploy/wheels.sh's OUTDIR)"
            );
            eprintln!("SKIPPED: no ARMADA_WHEELS; build them with `deploy/wheels.sh --profile dev DIR` and name DIR");
            None
        }
    }
}

/// The directories a wheel's user does not have: this checkout, the target directory, the
/// cargo and rustup homes (only those that exist, none inside another).
fn out_of_sight() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap_or_default();
    let var_or = |var: &str, default: PathBuf| std::env::var_os(var).map_or(default, PathBuf::from);
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().to_path_buf();
    let mut dirs: Vec<PathBuf> = [
        common::manifest_dir(),
        target,
        var_or("CARGO_HOME", home.join(".cargo")),
        var_or("RUSTUP_HOME", home.join(".rustup")),
    ]
    .into_iter()
    .filter_map(|d| d.canonicalize().ok())
    .collect();
    dirs.sort();
    dirs.dedup_by(|inner, outer| inner.starts_with(outer));
    dirs
}

/// A launcher whose every process runs in its own mount namespace with `out_of_sight`
/// covered, no CARGO*/RUSTUP* variable, and a path of `venv`'s bin and the system's; the
/// wrapper refuses to run anything while cargo or rustc is still found.
fn hidden_launcher(dir: &Path, venv: &Path, armada: PathBuf) -> Launcher {
    let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
    let covers: Vec<String> = out_of_sight().iter().map(|d| quote(d)).collect();
    let path: Vec<String> = std::iter::once(venv.join("bin"))
        .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))
        .filter(|d| !d.join("cargo").exists() && !d.join("rustc").exists())
        .map(|d| d.display().to_string())
        .collect();
    let script = format!(
        r#"set -e
for d in {covers}; do mount -t tmpfs -o size=1m,mode=0755 armada-out-of-sight "$d"; done
for v in $(env | sed -n 's/^\(\(CARGO\|RUSTUP\)[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset ARMADA_BIN
export PATH={path}
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
    echo "a Rust toolchain is still in sight: $(command -v cargo rustc)" >&2
    exit 97
fi
exec "$@"
"#,
        covers = covers.join(" "),
        path = quote(Path::new(&path.join(":"))),
    );
    let hide = write(dir, "out-of-sight.sh", &script);
    Launcher {
        wrapper: ["unshare", "--mount", "--propagation", "private", "sh", hide.to_str().unwrap()]
            .map(String::from)
            .to_vec(),
        armada,
        dir: dir.to_path_buf(),
    }
}

#[test]
fn the_wheels_run_without_a_rust_toolchain() {
    let Some(wheels) = wheels() else { return };
    if !common::can_mount() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    // Copied out of the target directory, which the install does not see.
    let wheelhouse = dir.join("wheels");
    std::fs::create_dir(&wheelhouse).unwrap();
    let mut ours = Vec::new();
    for entry in std::fs::read_dir(&wheels).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if name.ends_with(".whl") {
            std::fs::copy(&path, wheelhouse.join(&name)).unwrap();
            if name.starts_with("armada_") {
                ours.push(name.split('-').next().unwrap().to_string());
            }
        }
    }
    ours.sort();
    assert_eq!(ours, ["armada_bindings", "armada_cli", "armada_sdk"], "in {}", wheels.display());

    let venv = dir.join("venv");
    let launcher = hidden_launcher(&dir, &venv, venv.join("bin/armada"));
    let python = venv.join("bin/python");
    let started = Instant::now();
    let made = launcher.command(Path::new("python3")).args(["-m", "venv"]).arg(&venv).output().unwrap();
    succeeded(made, "python3 -m venv (Debian: apt-get install python3-venv)");
    let installed = launcher
        .command(&python)
        .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index", "--find-links"])
        .arg(&wheelhouse)
        .arg("armada-sdk[all]")
        .output()
        .unwrap();
    succeeded(installed, "pip install --no-index armada-sdk[all]");

    // The installed command is a file of the venv, and it is this version.
    let armada = venv.join("bin/armada");
    assert!(armada.is_file() && !armada.is_symlink(), "{} is not an installed file", armada.display());
    let version = succeeded(launcher.armada().arg("--version").output().unwrap(), "armada --version");
    assert_eq!(version.trim(), format!("armada {}", env!("CARGO_PKG_VERSION")));

    // The quick sweep: this build's table and summaries, byte for byte.
    let sweep = std::fs::read_to_string(common::manifest_dir().join("sweeps/lse-finite-quick.toml")).unwrap();
    let run_in = |dir: &Path, launcher: &Launcher| {
        std::fs::create_dir_all(dir).unwrap();
        write(dir, "lse-finite-quick.toml", &sweep);
        let out = launcher.armada().args(["run", "lse-finite-quick.toml"]).current_dir(dir).output().unwrap();
        succeeded(out, "armada run lse-finite-quick.toml")
    };
    let table = run_in(&dir.join("run-wheel"), &launcher);
    eprintln!(
        "from `pip install` to the quick sweep's table in a fresh venv: {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(table, run_in(&dir.join("run-build"), &Launcher::workspace()));
    assert_eq!(table.lines().filter(|l| !l.is_empty()).count(), 2 + 15, "{table}");
    let results = |run: &str| dir.join(run).join("results/lse-finite-quick");
    common::assert_same_sweep(&results("run-wheel"), &results("run-build"), 75);

    // A Python worker of the SDK's example family against the wheel's coordinator.
    let family = "armada_sdk.examples.noisy:FAMILY";
    let noisy = write(&dir, "noisy.toml", crate::sdk::NOISY_SWEEP);
    let runs = [("wheel", &launcher, python.as_path()), ("build", &Launcher::workspace(), crate::sdk::sdk_python())];
    for (name, launcher, python) in runs {
        let data = dir.join(format!("noisy-{name}"));
        let coord = serve_with(launcher, &data, 0, &[]);
        let log = dir.join(format!("noisy-{name}.log"));
        let _worker = crate::sdk::python_worker_with(launcher, python, &coord.url, family, 2, &log, &dir, &[]);
        wait_until(120, "the Python worker registers", || crate::sdk::registered(&log));
        let submitted = client_with(launcher, &["submit", noisy.to_str().unwrap()], &coord.url, 60, &[]);
        succeeded(submitted, "armada submit");
        succeeded(client_with(launcher, &["watch", "noisy-mix", "--quiet"], &coord.url, 300, &[]), "armada watch");
    }
    common::assert_same_sweep(&dir.join("noisy-wheel/noisy-mix"), &dir.join("noisy-build/noisy-mix"), 16);

    // docs/your-method.md, with the wheels' SDK, bindings and armada.
    crate::bindings::the_guide_runs(&python, &launcher);
}

/// The wrapper the wheels' test runs everything through hides what it says it hides: the
/// checkout, the CARGO*/RUSTUP* variables, cargo.
#[test]
fn the_wrapper_hides_the_toolchain_and_the_checkout() {
    if !common::can_mount() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let launcher = hidden_launcher(&dir, &dir.join("venv"), PathBuf::from("true"));
    let listed =
        launcher.command(Path::new("sh")).args(["-c", "ls -A \"$0\"; env"]).arg(common::manifest_dir()).output();
    let listed = succeeded(listed.unwrap(), "ls of the checkout through the wrapper");
    assert!(!listed.lines().any(|l| l == "Cargo.toml"), "the checkout is in sight:\n{listed}");
    assert!(!listed.lines().any(|l| l.starts_with("CARGO") || l.starts_with("RUSTUP")), "{listed}");
    // And outside it, the same listing sees the checkout (the check above can fail).
    let plain = Command::new("ls").arg("-A").arg(common::manifest_dir()).output().unwrap();
    assert!(text(&plain.stdout).lines().any(|l| l == "Cargo.toml"));
    let cargo = launcher.command(Path::new("sh")).args(["-c", "command -v cargo || echo none"]).output().unwrap();
    assert_eq!(text(&cargo.stdout).trim(), "none");
}
