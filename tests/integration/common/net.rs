//! Several hosts on one machine for the end-to-end tests: network namespaces made by the
//! test itself (a bridge in a namespace of its own, a veth per host, addresses in
//! 10.77.0.0/24 that exist only inside them). Needs root (`ip netns`, from iproute2);
//! without it a test is skipped with a message, unless `ARMADA_REQUIRE_NETNS=1`.

use super::text;
use std::process::Command;

/// A test's network. Dropping it deletes every namespace it made (their links go with
/// them); drop the processes running inside first.
pub struct Net {
    prefix: String,
    pub hosts: Vec<&'static str>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("running `ip`: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("`ip {}`: {}", args.join(" "), text(&out.stderr).trim()))
    }
}

impl Net {
    /// Hosts named `hosts` get 10.77.0.1, .2, ... in that order. `None` (after saying why)
    /// when this machine cannot make namespaces and the test may be skipped.
    pub fn new(test: &str, hosts: &[&'static str]) -> Option<Net> {
        let net = Net { prefix: format!("armada-{}-{test}", std::process::id()), hosts: hosts.to_vec() };
        match net.build() {
            Ok(()) => Some(net),
            Err(e) if std::env::var("ARMADA_REQUIRE_NETNS").as_deref() != Ok("1") => {
                eprintln!(
                    "SKIPPED: cannot make network namespaces here ({e}); run as root, or see ARMADA_REQUIRE_NETNS"
                );
                None
            }
            Err(e) => panic!("making the test network: {e}"),
        }
    }

    pub fn build(&self) -> Result<(), String> {
        let switch = self.ns("switch");
        ip(&["netns", "add", &switch])?;
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &switch, "link", "set", "br0", "up"])?;
        for (i, host) in self.hosts.iter().enumerate() {
            let ns = self.ns(host);
            ip(&["netns", "add", &ns])?;
            ip(&[
                "-n",
                &switch,
                "link",
                "add",
                &self.port(host),
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                &ns,
            ])?;
            ip(&["-n", &switch, "link", "set", &self.port(host), "master", "br0", "up"])?;
            ip(&["-n", &ns, "addr", "add", &format!("10.77.0.{}/24", i + 1), "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    pub fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    /// The bridge's end of a host's link.
    pub fn port(&self, host: &str) -> String {
        format!("to-{host}")
    }

    pub fn addr(&self, host: &str) -> String {
        let i = self.hosts.iter().position(|h| *h == host).expect("a host of this network");
        format!("10.77.0.{}", i + 1)
    }

    /// Partition `host`: its link goes down at the bridge.
    pub fn cut(&self, host: &str) {
        ip(&["-n", &self.ns("switch"), "link", "set", &self.port(host), "down"]).unwrap();
    }

    pub fn heal(&self, host: &str) {
        ip(&["-n", &self.ns("switch"), "link", "set", &self.port(host), "up"]).unwrap();
    }

    /// `program` run on `host`.
    pub fn exec(&self, host: &str, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.ns(host), program]);
        cmd
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for host in self.hosts.iter().copied().chain(["switch"]) {
            let _ = ip(&["netns", "del", &self.ns(host)]);
        }
    }
}
