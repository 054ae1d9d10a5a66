//! Running the distributed system's real processes on 127.0.0.1: a coordinator
//! (`armada serve`) with its dashboard on ports the OS picks, workers, and CLI clients.
//! Every wait is bounded.

use super::Proc;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_armada");

pub struct Coordinator {
    pub proc: Proc,
    pub url: String,
    pub port: u16,
    /// The dashboard's address (`127.0.0.1:PORT`).
    pub dashboard: String,
}

/// How a test starts armada's processes: this build's binary, or an installed one run
/// through a wrapper (tests/integration/wheels.rs: a wheel's, with the Rust toolchain out of
/// sight; tests/numerics/processors.rs: this build's under an emulator).
#[derive(Clone, Debug)]
pub struct Launcher {
    /// A program and its arguments that run the command after them (empty: none).
    pub wrapper: Vec<String>,
    pub armada: PathBuf,
    /// Where clients run.
    pub dir: PathBuf,
}

impl Launcher {
    /// This build's binary, run as it is, its clients from the checkout.
    pub fn workspace() -> Launcher {
        Launcher { wrapper: Vec::new(), armada: PathBuf::from(BIN), dir: super::manifest_dir() }
    }

    /// A command running `program` through the wrapper.
    pub fn command(&self, program: &Path) -> Command {
        match self.wrapper.split_first() {
            Some((wrapper, rest)) => {
                let mut cmd = Command::new(wrapper);
                cmd.args(rest).arg(program);
                cmd
            }
            None => Command::new(program),
        }
    }

    /// A command running armada.
    pub fn armada(&self) -> Command {
        self.command(&self.armada)
    }
}

/// Start `armada serve` on `port` (0: any) with its data in `data`; logs go to `data/../`.
pub fn serve(data: &Path, port: u16, extra: &[&str]) -> Coordinator {
    serve_with(&Launcher::workspace(), data, port, extra)
}

/// [`serve`] started by `launcher`.
pub fn serve_with(launcher: &Launcher, data: &Path, port: u16, extra: &[&str]) -> Coordinator {
    let log = File::create(data.with_extension(format!("serve-{port}.log"))).unwrap();
    let mut child = launcher
        .armada()
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data", data.to_str().unwrap()])
        // A restart on a fixed port would put the dashboard on the next one, which another
        // test's coordinator may hold: any free port instead.
        .args(["--dashboard", "127.0.0.1:0"])
        .args(extra)
        .env("ARMADA_LOG", "info")
        .env_remove("ARMADA_TOKEN")
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let (mut line, mut second) = (String::new(), String::new());
    stdout.read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    assert!(url.contains("://127.0.0.1:"), "coordinator did not start: {line:?}");
    let port = url.rsplit(':').next().unwrap().parse().unwrap();
    stdout.read_line(&mut second).unwrap();
    // "armada dashboard on http://ADDR/ (metrics: ...)", https with TLS
    let dashboard = second.split("://").nth(1).and_then(|r| r.split('/').next()).unwrap_or_default().to_string();
    assert!(dashboard.starts_with("127.0.0.1:"), "no dashboard line: {second:?}");
    Coordinator { proc: Proc(child), url, port, dashboard }
}

/// Start `armada worker` with `slots` and `env`; its log (at info level) goes to `log`.
pub fn worker(url: &str, slots: usize, log: &Path, env: &[(&str, &str)]) -> Proc {
    worker_args(url, slots, log, &[], env)
}

/// A worker with extra arguments and environment.
pub fn worker_args(url: &str, slots: usize, log: &Path, args: &[&str], env: &[(&str, &str)]) -> Proc {
    worker_via(&[], url, slots, log, args, env)
}

/// A worker run through `wrapper` (an emulator and its arguments, `["qemu-x86_64", "-cpu",
/// "Nehalem"]`; empty: the binary itself).
pub fn worker_via(wrapper: &[&str], url: &str, slots: usize, log: &Path, args: &[&str], env: &[(&str, &str)]) -> Proc {
    let launcher = Launcher { wrapper: wrapper.iter().map(|w| w.to_string()).collect(), ..Launcher::workspace() };
    worker_with(&launcher, url, slots, log, args, env)
}

/// A worker started by `launcher`.
pub fn worker_with(
    launcher: &Launcher,
    url: &str,
    slots: usize,
    log: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Proc {
    let mut cmd = launcher.armada();
    cmd.args(["worker", "--coordinator", url, "--slots", &slots.to_string()])
        .args(args)
        .env("ARMADA_LOG", "info")
        .env_remove("ARMADA_TOKEN")
        .stdout(Stdio::null())
        .stderr(File::create(log).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Proc(cmd.spawn().unwrap())
}

/// Run a client subcommand against `url` to completion, at most `secs`.
pub fn client(args: &[&str], url: &str, secs: u64) -> Output {
    client_env(args, url, secs, &[])
}

pub fn client_env(args: &[&str], url: &str, secs: u64, env: &[(&str, &str)]) -> Output {
    client_with(&Launcher::workspace(), args, url, secs, env)
}

/// [`client_env`] started by `launcher`.
pub fn client_with(launcher: &Launcher, args: &[&str], url: &str, secs: u64, env: &[(&str, &str)]) -> Output {
    let mut cmd = launcher.armada();
    cmd.args(args)
        .args(["--coordinator", url])
        .current_dir(&launcher.dir)
        .env_remove("ARMADA_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-KILL", &id.to_string()]).status();
            panic!("`armada {}` did not finish within {secs} s", args.join(" "));
        }
    }
}

pub fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

/// The body of an HTTP GET of `path` from `addr` (the dashboard), answered within 10 s.
pub fn http_get(addr: &str, path: &str) -> String {
    http_get_within(addr, path, 10)
}

/// [`http_get`] answered within `secs`.
pub fn http_get_within(addr: &str, path: &str, secs: u64) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(secs))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default()
}
