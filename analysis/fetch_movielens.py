#!/usr/bin/env python3
"""Fetch the MovieLens-100K ratings for the `movielens` bandit benchmark (CDT paper, Section 5).

The ratings ship inside the `recbole==1.2.1` wheel on PyPI
(`recbole/dataset_example/ml-100k/ml-100k.inter`, 100,000 ratings of 1682 movies by 943 users).
This script downloads the wheel with pip (no dependencies installed), checks the file's SHA-256,
and writes it where armada workers look for it:

    $ARMADA_MOVIELENS                  if set (the file itself), else
    $ARMADA_DATA_DIR/ml-100k.inter     if ARMADA_DATA_DIR is set, else
    $XDG_CACHE_HOME/armada/ml-100k.inter  (default ~/.cache/armada/ml-100k.inter)

Run it once on every machine that runs workers (or on a shared volume, pointing
ARMADA_DATA_DIR at it). Usage: python3 analysis/fetch_movielens.py [--dest FILE]
"""

import argparse
import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

WHEEL = "recbole==1.2.1"
MEMBER = "recbole/dataset_example/ml-100k/ml-100k.inter"
SHA256 = "4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff"


def default_dest() -> pathlib.Path:
    if os.environ.get("ARMADA_MOVIELENS"):
        return pathlib.Path(os.environ["ARMADA_MOVIELENS"])
    if os.environ.get("ARMADA_DATA_DIR"):
        return pathlib.Path(os.environ["ARMADA_DATA_DIR"]) / "ml-100k.inter"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(cache) / "armada" / "ml-100k.inter"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dest", type=pathlib.Path, default=default_dest(), help="where to write ml-100k.inter")
    args = parser.parse_args()
    dest: pathlib.Path = args.dest
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == SHA256:
        print(f"{dest} is already there and intact")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", tmp, WHEEL]
        print("running:", " ".join(cmd))
        subprocess.run(cmd, check=True)
        wheels = list(pathlib.Path(tmp).glob("recbole-*.whl"))
        if len(wheels) != 1:
            print(f"error: expected one recbole wheel in {tmp}, found {wheels}", file=sys.stderr)
            return 1
        data = zipfile.ZipFile(wheels[0]).read(MEMBER)
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        print(f"error: {MEMBER} has SHA-256 {digest}, expected {SHA256}", file=sys.stderr)
        return 1
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp_dest = dest.with_name(dest.name + ".tmp")
    tmp_dest.write_bytes(data)
    tmp_dest.replace(dest)
    print(f"wrote {dest} ({len(data):,} bytes, 100,000 ratings)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
