#!/usr/bin/env python3
"""BO-uCVS beside the authors' code (issue 17, items 5 and 6): run the authors' proposed method on
one setting and print its simple regret against cost, beside armada's.

    # a checkout of Fsoft-AIC/BO-uCVS and a venv with its packages (analysis/README.md)
    python analysis/bocvs_authors.py run --code /work/refs/bocvs-authors --objective extendackley \
        --costs-id 3 --var-id 2 --seed 0 --workdir /tmp/bocvs-authors
    python analysis/bocvs_authors.py show --workdir /tmp/bocvs-authors   # finished or partial runs

`run` is armada's driver, not the authors' code: it reads their main.py from the checkout, leaves
out its module-level grid (the loop from its `seeds = [...]` line on, which runs plant, cost id 5,
variance id 4, seed 5 when the file is imported), executes the rest, and calls their `main` with
the arguments that loop passes for the objective: control-set id 1 for airfoil and 0 otherwise,
the objective's `dims`, noise_std 0.01, init_lengthscale 0.2 (the value the call passes for every
objective, whatever its table says), 5 initial points, budget 100. Nothing of theirs is copied
here. Their code writes results/<objective>/ under --workdir (which gets a `data` link to the
checkout's data/ for plant and airfoil); every 10 plays it saves the run so far
(results/<objective>/pickles/raw_*.pkl), which `show` reads for a run still going.

Plant needs gpflow and TensorFlow (their data/plant/plant_funcs.py), which do not run on this
machine; for the other objectives their unused imports are bound to empty modules (see cmd_run).

Cost ids (their core/cvs.py): 3 = armada's `cheap` (0.01 / 0.1 / 1), 4 = `code-4`, 5 = `code-5`,
all with the code's cost noise; variance ids (core/dists.py): 1 = 0.01, 2 = 0.02, 3 = 0.04,
4 = 0.08. Torch runs on one thread (one core, as an armada job).
"""
from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from pathlib import Path

# Their main.py's per-objective `dims` (the loop at its end).
DIMS = {"extendackley": 12, "extendlevy": 12, "extendhartmann": 6, "Hartmann6": 12, "plant": 5, "airfoil": 5,
        "hartmann": 3, "maxhartmann": 3, "triplebranin": 6}
CHECKPOINTS = (20, 40, 60, 80, 100)


def cmd_run(a) -> None:
    import torch

    torch.set_num_threads(1)
    code = Path(a.code).resolve()
    work = Path(a.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "data").exists():
        (work / "data").symlink_to(code / "data")
    source = (code / "main.py").read_text()
    cut = source.find("\nseeds = [")
    if cut < 0:
        sys.exit(f"{code / 'main.py'}: no module-level `seeds = [` grid to leave out; has the file changed?")
    if a.objective not in ("plant",):
        # Their core/objectives.py imports the plant simulator at module level, which imports
        # gpflow, tensorflow and tensorflow_probability; only the plant objective calls it. TensorFlow
        # cannot start on this machine (it aborts with "random_device could not be read"), so for
        # every other objective those three names are bound to empty modules: nothing runs them.
        import types

        for name in ("gpflow", "tensorflow", "tensorflow_probability"):
            sys.modules.setdefault(name, types.ModuleType(name))
    sys.path.insert(0, str(code))
    os.chdir(work)
    namespace = {"__name__": "bocvs_authors_main", "__file__": str(code / "main.py")}
    exec(compile(source[:cut], str(code / "main.py"), "exec"), namespace)
    started = time.perf_counter()
    namespace["main"](
        obj_name=a.objective,
        acq_name="proposed",
        eps_schedule_id=0,
        costs_id=a.costs_id,
        var_id=a.var_id,
        budget=a.budget,
        seed=a.seed,
        control_sets_id=1 if a.objective == "airfoil" else 0,
        dims=DIMS[a.objective],
        noise_std=0.01,
        init_lengthscale=0.2,
        n_init_points=5,
    )
    print(f"finished in {time.perf_counter() - started:.0f} s (wall)")
    show(work)


def regret_at(cost_per_iter, simple_regret, cost: float) -> float:
    """The simple regret after the last play whose cumulative cost is at most `cost` (forward fill,
    as armada's bocvs.py; the first play's value before that)."""
    spent, value = 0.0, simple_regret[0]
    for c, r in zip(cost_per_iter, simple_regret):
        spent += c
        if spent > cost:
            break
        value = r
    return float(value)


def show(work: Path) -> None:
    """Every run under `work`: finished ones with their simple regret at the checkpoints, running
    ones with their plays, cost spent and set counts so far."""
    import numpy as np

    for done in sorted(work.glob("results/*/pickles/*.p")):
        (_, _, idxs, _, _, simple, _, _, cost_per_iter, plays, _) = pickle.load(open(done, "rb"))
        simple = np.asarray(simple, dtype=float).ravel()
        costs = np.asarray(cost_per_iter, dtype=float).ravel()
        at = ", ".join(f"{c}: {regret_at(costs, simple, c):.4g}" for c in CHECKPOINTS)
        counts = np.bincount(np.asarray(idxs), minlength=7)
        print(f"{done.stem}: {plays} plays, cost {costs.sum():.2f}; simple regret at cost {at}; "
              f"plays per set {counts.tolist()}")
    for raw in sorted(work.glob("results/*/pickles/raw_*.pkl")):
        if raw.with_name(raw.name[len("raw_"):-len(".pkl")] + ".p").exists():
            continue
        (_, train_y, idxs, _, plays, costs) = pickle.load(open(raw, "rb"))
        counts = np.bincount(np.asarray(idxs), minlength=7)
        print(f"{raw.stem} (running): {plays} plays, cost {sum(costs):.2f}, best observed y "
              f"{float(train_y.max()):.4g}; plays per set {counts.tolist()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run their proposed method once")
    r.add_argument("--code", required=True, help="a checkout of Fsoft-AIC/BO-uCVS")
    r.add_argument("--objective", required=True, choices=sorted(DIMS))
    r.add_argument("--costs-id", type=int, required=True, help="3 cheap, 4 code-4, 5 code-5")
    r.add_argument("--var-id", type=int, required=True, help="1: 0.01, 2: 0.02, 3: 0.04, 4: 0.08")
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--budget", type=float, default=100.0)
    r.add_argument("--workdir", required=True, help="where their code writes results/")
    s = sub.add_parser("show", help="the runs under a work directory, finished or running")
    s.add_argument("--workdir", required=True)
    a = ap.parse_args()
    if a.cmd == "run":
        cmd_run(a)
    else:
        show(Path(a.workdir))


if __name__ == "__main__":
    main()
