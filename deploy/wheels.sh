#!/usr/bin/env bash
# Build the wheels a Python user of armada needs, once, into OUTDIR:
#   armada-cli       the `armada` command (maturin's `bin` bindings of the root crate)
#   armada-bindings  the built-in benchmarks, streams and metrics from Python (PyO3)
#   armada-sdk       the SDK (pure Python): declare a family, run its workers, read sweeps
# and, unless --no-deps, the wheels of the SDK's dependencies from PyPI, so that a node
# without a package index (or a Rust toolchain) installs everything from OUTDIR alone:
#   pip install --no-index --find-links OUTDIR "armada-sdk[all]"
#
# Usage: deploy/wheels.sh [--profile release|dev] [--zig] [--compatibility POLICY]
#                         [--python PY]... [--no-deps] OUTDIR
#   --profile        cargo's profile: release (default), or dev (CI's: optimises the numeric
#                    crates only, and reuses a test build's target directory)
#   --zig            link with zig (PyPI's ziglang) for glibc 2.28 and later (manylinux_2_28:
#                    RHEL 8, Ubuntu 20.04, Debian 11). Without it the wheels need the build
#                    machine's glibc or newer (maturin checks the symbols and tags them:
#                    manylinux_2_34 from a Debian 12 machine).
#   --compatibility  a manylinux policy other than the above (maturin's --compatibility)
#   --python         an interpreter to build the bindings for (repeatable; default python3):
#                    the bindings' wheel is per Python version, the other two are not
#   --no-deps        only armada's three wheels
# The cargo build goes to CARGO_TARGET_DIR (default: the workspace's target/); the build tools
# (maturin, flit_core, ziglang) to venvs of their own under ARMADA_WHEEL_TOOLS (default:
# ~/.cache/armada-wheel-tools). aarch64: run this on an aarch64 machine (its toolchain, the same
# command; armada's numerics give the same bits there). Cross-building from x86-64 would need
# maturin's --target with --zig and, for the bindings, the target's Python (PYO3_CROSS_*): not
# wired in here.
set -euo pipefail

profile=release zig=() compatibility=() pythons=() deps=1 out=
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="${2:?--profile needs a value}"; shift 2 ;;
        --zig) zig=(--zig); shift ;;
        --compatibility) compatibility=(--compatibility "${2:?--compatibility needs a policy}"); shift 2 ;;
        --python) pythons+=("${2:?--python needs an interpreter}"); shift 2 ;;
        --no-deps) deps=0; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "wheels.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) [ -z "$out" ] || { echo "wheels.sh: one OUTDIR only (see --help)" >&2; exit 2; }; out="$1"; shift ;;
    esac
done
[ -n "$out" ] || { echo "usage: deploy/wheels.sh [options] OUTDIR (see --help)" >&2; exit 2; }
[ ${#pythons[@]} -gt 0 ] || pythons=(python3)
if [ ${#zig[@]} -gt 0 ] && [ ${#compatibility[@]} -eq 0 ]; then
    compatibility=(--compatibility manylinux_2_28)
fi
root="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The tools, pinned, in a venv per set of pins, made whole elsewhere and then moved in: two
# runs at once with other options (CI's and a release build) never change each other's.
# (maturin is a binary and ziglang runs as `python -m ziglang`: the moved venv works.)
pins=(maturin==1.16.0 flit_core==4.2.0)
[ ${#zig[@]} -eq 0 ] || pins+=(ziglang==0.17.1)
tools_root="${ARMADA_WHEEL_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/armada-wheel-tools}"
tools="$tools_root/$(IFS=_; echo "${pins[*]}" | tr '=' '-')"
if [ ! -x "$tools/bin/maturin" ]; then
    echo "== build tools: ${pins[*]} into $tools"
    mkdir -p "$tools_root"
    making="$(mktemp -d "$tools_root/.making.XXXXXX")"
    python3 -m venv "$making"
    "$making/bin/python" -m pip install --quiet --disable-pip-version-check "${pins[@]}"
    # Another run may have made it meanwhile: then its venv stays, and this one goes.
    mv -T "$making" "$tools" 2>/dev/null || rm -rf "$making"
fi

# Each wheel replaces the one it supersedes: the directory keeps one version of each.
timed() {
    local what="$1" start=$SECONDS
    shift
    "$@"
    echo "== $what built in $((SECONDS - start)) s"
}
rm -f "$out"/armada_cli-*.whl "$out"/armada_bindings-*.whl "$out"/armada_sdk-*.whl
maturin=("$tools/bin/maturin" build --profile "$profile" --strip --out "$out" "${zig[@]}" "${compatibility[@]}")
# The Python of the tools' venv finds ziglang there.
export PATH="$tools/bin:$PATH"
(cd "$root/workers/cli" && timed "armada-cli (profile $profile)" "${maturin[@]}")
for python in "${pythons[@]}"; do
    (cd "$root/workers/bindings" && timed "armada-bindings for $python (profile $profile)" "${maturin[@]}" --interpreter "$python")
done
timed armada-sdk "$tools/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation --wheel-dir "$out" "$root/workers/python"

if [ "$deps" = 1 ]; then
    # The SDK's dependencies (and polars, for its data frames), resolved from its own
    # metadata, for each Python version the bindings were built for.
    sdk=("$out"/armada_sdk-*.whl)
    for python in "${pythons[@]}"; do
        version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
        "$tools/bin/python" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
            --python-version "$version" --dest "$out" "${sdk[0]}[polars]"
    done
fi
echo "== wheels in $out:"
ls -l "$out"
echo "install: pip install --no-index --find-links $out \"armada-sdk[all]\""
