"""The Kubernetes manifests against what the armada binary does (tests/integration/kubernetes.rs).

    python check_manifests.py ARMADA_BINARY deploy/kubernetes/coordinator.yaml deploy/kubernetes/workers.yaml

Checks that every flag the manifests pass exists in the subcommand's --help, that the
token comes from one Secret for both, that the probe and the Service reach the port the
coordinator listens on, that the Service exposes the dashboard's port, that --data is the persistent volume, that workers dial the
Service, and that the workers' slots and grace period fit what a worker does on SIGTERM.
Prints each failure and exits 1 if there is one.
"""

import re
import subprocess
import sys

import yaml

binary, *files = sys.argv[1:]
docs = [d for f in files for d in yaml.safe_load_all(open(f)) if d]
by_kind = {d["kind"]: d for d in docs}
failures = []


def check(ok, message):
    if not ok:
        failures.append(message)


def container(kind):
    return by_kind[kind]["spec"]["template"]["spec"]["containers"][0]


def flags_of(subcommand):
    help_text = subprocess.run([binary, subcommand, "--help"], capture_output=True, text=True, check=True).stdout
    return set(re.findall(r"--[a-z][a-z0-9-]*", help_text)), set(re.findall(r"env: (ARMADA_[A-Z_]+)", help_text))


def arg(args, flag):
    return args[args.index(flag) + 1] if flag in args else None


for kind, subcommand in [("StatefulSet", "serve"), ("Deployment", "worker")]:
    c = container(kind)
    args = c["args"]
    check(args[0] == subcommand, f"{kind}: runs `{args[0]}`, not `armada {subcommand}`")
    flags, envs = flags_of(subcommand)
    for flag in [a for a in args if a.startswith("--")]:
        check(flag in flags, f"{kind}: `armada {subcommand}` has no {flag}")
    for env in c.get("env", []):
        # ARMADA_LOG is read by every subcommand (the log filter), not a flag's variable.
        check(env["name"] in envs | {"ARMADA_LOG"}, f"{kind}: `armada {subcommand}` reads no {env['name']}")
    token = [e for e in c.get("env", []) if e["name"] == "ARMADA_TOKEN"]
    check(
        token and token[0].get("valueFrom", {}).get("secretKeyRef") == {"name": "armada", "key": "token"},
        f"{kind}: ARMADA_TOKEN must come from the Secret `armada`, key `token`",
    )

coordinator = container("StatefulSet")
args = coordinator["args"]
port = int(arg(args, "--listen").rsplit(":", 1)[1])
check(arg(args, "--listen").startswith("0.0.0.0:"), "the coordinator must listen on every interface of its pod")
check(port in [p["containerPort"] for p in coordinator["ports"]], "the container port is not the one it listens on")
probe = coordinator.get("readinessProbe", {})
check(probe.get("grpc", {}).get("port") == port, "the readiness probe must be gRPC health on the listening port")
mounts = {m["mountPath"]: m["name"] for m in coordinator.get("volumeMounts", [])}
claims = {t["metadata"]["name"] for t in by_kind["StatefulSet"]["spec"].get("volumeClaimTemplates", [])}
check(mounts.get(arg(args, "--data")) in claims, "--data must be the mount of a persistent volume claim")
check(by_kind["StatefulSet"]["spec"]["replicas"] == 1, "one coordinator per store: replicas must be 1")
service = by_kind["Service"]
check(
    service["spec"]["selector"] == by_kind["StatefulSet"]["spec"]["template"]["metadata"]["labels"],
    "the Service does not select the coordinator",
)
service_port = service["spec"]["ports"][0]
check(service_port["targetPort"] == port, "the Service does not target the listening port")
dashboard = arg(args, "--dashboard")
check(dashboard is not None and dashboard.startswith("0.0.0.0:"), "the dashboard must listen on every interface")
if dashboard:
    http = int(dashboard.rsplit(":", 1)[1])
    check(http in [p["containerPort"] for p in coordinator["ports"]], "the dashboard's port is not a container port")
    check(http in [p["targetPort"] for p in service["spec"]["ports"]], "the Service does not expose the dashboard")

worker = container("Deployment")
wargs = worker["args"]
expected = f"http://{service['metadata']['name']}:{service_port['port']}"
check(arg(wargs, "--coordinator") == expected, f"workers must dial the Service, {expected}")
cpu = worker.get("resources", {}).get("requests", {}).get("cpu")
check(cpu is not None and arg(wargs, "--slots") == str(cpu), "--slots must equal the CPUs requested")
grace = by_kind["Deployment"]["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
# On SIGTERM a worker finishes its running jobs: the grace period is the longest job it
# can finish; past it the job re-runs elsewhere once its lease expires.
check(grace >= 60, f"a worker's grace period of {grace} s leaves no time to finish a job")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
