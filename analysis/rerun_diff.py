#!/usr/bin/env python3
"""How far a rerun of a sweep moved from the run before, cell by cell, in standard errors.

Usage:

    python analysis/rerun_diff.py OLD NEW --metric M [--by COLUMN] [--out FILE]

OLD and NEW are final.parquet files (or sweep directories holding one) of two runs of the
same sweep, for example one before and one after a change of armada's numerics. For each
cell present in both (family, benchmark, benchmark_params, algorithm, algorithm_params),
and metric M, it prints the two means with their standard errors and

    z = (mean_new - mean_old) / sqrt(se_old^2 + se_new^2),

the difference in units of its own standard error when the two runs are independent draws
(a change that moves every random stream makes them so). Then, per value of --by (default
benchmark): the cells, the mean and root mean square of z, the largest |z| and how many
cells moved by more than 2. For independent runs of an unchanged method, z is about
standard normal: a root mean square near 1, about 1 cell in 20 beyond 2. A group whose
cells all moved one way, far beyond that, changed in something its seeds share (a fixed
environment instance, for example), which the note must explain.

Cells whose means are identical in both runs (to 1e-12 relative: the last bits of a sum
over seeds) are counted apart, with z = 0: an algorithm whose streams the change did not
touch.

The table goes to stdout, and as Markdown to --out when given.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import polars as pl
from canonical import canonical_params  # noqa: E402

CELL = ["family", "benchmark", "benchmark_params", "algorithm", "algorithm_params"]

# Means this close (relative) count as identical.
SAME_RELATIVE = 1e-12


def final_of(path: Path) -> pl.DataFrame:
    file = path / "final.parquet" if path.is_dir() else path
    if not file.is_file():
        sys.exit(f"{file}: no final.parquet (run `armada summarize` on the sweep first)")
    return canonical_params(pl.read_parquet(file))


def compare(old: pl.DataFrame, new: pl.DataFrame, metric: str) -> pl.DataFrame:
    """One row per cell present in both, with the two means, their standard errors and z."""
    pick = lambda df: df.filter(pl.col("metric") == metric).select(CELL + ["n", "mean", "se"])
    a, b = pick(old), pick(new)
    if a.height == 0 or b.height == 0:
        sys.exit(f"metric {metric!r}: no rows in {'OLD' if a.height == 0 else 'NEW'}")
    both = a.join(b, on=CELL, suffix="_new")
    combined = (pl.col("se") ** 2 + pl.col("se_new") ** 2).sqrt()
    # Equal but for the last bits of a sum over seeds (a cell whose seeds all end on one
    # value has se 0, and an ulp would read as an infinite z).
    same = (pl.col("mean_new") - pl.col("mean")).abs() <= SAME_RELATIVE * pl.max_horizontal(
        pl.col("mean").abs(), pl.col("mean_new").abs()
    )
    z = pl.when(same).then(0.0).otherwise((pl.col("mean_new") - pl.col("mean")) / combined)
    return both.with_columns(z.alias("z"), same.alias("same")).sort(CELL)


def groups(diff: pl.DataFrame, by: str) -> list[dict]:
    out = []
    for value in diff[by].unique().sort():
        g = diff.filter(pl.col(by) == value)
        z = g["z"].to_list()
        out.append(
            {
                by: value,
                "cells": len(z),
                "same": int(g["same"].sum()),
                "mean_z": sum(z) / len(z),
                "rms_z": math.sqrt(sum(v * v for v in z) / len(z)),
                "max_abs_z": max(abs(v) for v in z),
                "beyond_2": sum(1 for v in z if abs(v) > 2),
            }
        )
    return out


def markdown(diff: pl.DataFrame, summary: list[dict], by: str, metric: str) -> str:
    lines = [
        f"Metric `{metric}`, {diff.height} cells in both runs.",
        "",
        f"| {by} | cells | identical | mean z | rms z | max abs z | abs z > 2 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for g in summary:
        lines.append(
            f"| {g[by]} | {g['cells']} | {g['same']} | {g['mean_z']:.2f} | {g['rms_z']:.2f} | {g['max_abs_z']:.2f} | {g['beyond_2']} |"
        )
    lines += ["", "| benchmark | benchmark_params | algorithm | algorithm_params | old | new | z |", "|---|---|---|---|---:|---:|---:|"]
    for r in diff.iter_rows(named=True):
        lines.append(
            f"| {r['benchmark']} | {r['benchmark_params']} | {r['algorithm']} | {r['algorithm_params']} "
            f"| {r['mean']:.4g} ± {r['se']:.3g} | {r['mean_new']:.4g} ± {r['se_new']:.3g} | {r['z']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--metric", required=True)
    parser.add_argument("--by", default="benchmark", help="group the summary by this cell column")
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown here too")
    args = parser.parse_args()
    if args.by not in CELL:
        sys.exit(f"--by: {args.by!r} is not one of {', '.join(CELL)}")
    diff = compare(final_of(args.old), final_of(args.new), args.metric)
    text = markdown(diff, groups(diff, args.by), args.by, args.metric)
    print(text, end="")
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
