#!/usr/bin/env python3
"""BO-uCVS beside the authors' code (docs/investigations.md): run the authors' proposed method on
one setting and print its simple regret against cost, beside armada's.

    # a checkout of Fsoft-AIC/BO-uCVS under REFS (a directory outside armada's) and a venv
    # with its packages (docs/investigations.md)
    python analysis/bocvs_authors.py run --code REFS/bocvs-authors --objective extendackley \
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

Plant needs gpflow and TensorFlow (their data/plant/plant_funcs.py); its pickled model is read
through `plant_model_from_old_pickle` (TensorFlow 2.15 on Python 3.11, where theirs pinned 2.11
on 3.8), and `plant-check` compares it with armada's closed form of the same model. For the
other objectives their unused imports are bound to empty modules (see cmd_run).

    python analysis/bocvs_authors.py plant-check --code REFS/bocvs-authors

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
    if a.objective == "plant":
        plant_model_from_old_pickle(code)
    else:
        # Their core/objectives.py imports the plant simulator at module level, which imports
        # gpflow, tensorflow and tensorflow_probability; only the plant objective calls it. For every
        # other objective those three names are bound to empty modules (nothing runs them), so the
        # venv needs TensorFlow for plant only.
        import types

        for name in ("gpflow", "tensorflow", "tensorflow_probability"):
            sys.modules.setdefault(name, types.ModuleType(name))
    on_path(code)
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


def on_path(code: Path) -> None:
    """Their modules import each other from the checkout's root (`core.*`, `data.*`)."""
    if str(code) not in sys.path:
        sys.path.insert(0, str(code))


def plant_model_from_old_pickle(code: Path):
    """Import their plant simulator (data/plant/plant_funcs.py) so that it can load its model here,
    and return the module.

    Their model is a pickle of gpflow 2.6 / TensorFlow 2.11 objects (data/plant/gp_leaf_dict.p),
    which TensorFlow 2.11 reads only on Python 3.10 or older. On TensorFlow 2.15 (Python 3.11) two
    things break: the module of `TrackableReference` moved (tensorflow.python.training.tracking ->
    tensorflow.python.trackable), and the unpickled bijectors lack attributes the newer
    TensorFlow Probability reads. So the module's `pickle` is replaced by one whose `loads` unpickles
    with the old module name bound to the new one and returns each parameter's value: its pickled
    unconstrained variable through a fresh bijector of the same class and parameters. Their
    `multiple_assign` then assigns those values as before. Nothing in their files changes."""
    import types

    import tensorflow.python.trackable.base as trackable_base

    sys.modules.setdefault("tensorflow.python.training.tracking.base", trackable_base)

    def loads(data: bytes) -> dict:
        values = {}
        for path, value in pickle.loads(data).items():
            if type(value).__name__ == "Parameter":
                bijector = value.__dict__["_bijector"]
                params = {k: v for k, v in bijector.__dict__["_parameters"].items() if k not in ("self", "__class__", "parameters")}
                unconstrained = value.__dict__["_pretransformed_input"].numpy()
                value = type(bijector)(**params).forward(unconstrained).numpy()
            values[path] = value
        return values

    on_path(code)
    import data.plant.plant_funcs as plant_funcs

    plant_funcs.pickle = types.SimpleNamespace(loads=loads)
    return plant_funcs


def cmd_plant_check(a) -> None:
    """Their plant simulator (standardised mean, as their objective calls it) against armada's
    closed form of the same model (workers/cvs/data/plant_svgp_mean.json: f(u) = k(x(u), Z) alpha),
    at uniform points of the unit cube and at the JSON's recorded maximiser."""
    import json

    import numpy as np

    plant_funcs = plant_model_from_old_pickle(Path(a.code).resolve())
    theirs = plant_funcs.create_leaf_max_area_func(standardize=True)
    model = json.loads((Path(__file__).resolve().parent.parent / "workers/cvs/data/plant_svgp_mean.json").read_text())
    lo, hi = np.array(model["lo"]), np.array(model["hi"])
    z, lengthscales, alpha = np.array(model["Z"]), np.array(model["lengthscales"]), np.array(model["alpha"])

    def armada(u):
        x = lo + u * (hi - lo)
        k = model["variance"] * np.exp(-0.5 * (((x[:, None, :] - z[None]) / lengthscales) ** 2).sum(-1))
        return k @ alpha

    (label, at_max), = model["check"].items()
    u_max = np.array([float(v) for v in label[label.index("[") + 1 : label.index("]")].split(",")])
    u = np.vstack([np.random.default_rng(a.seed).uniform(size=(a.points, 5)), u_max])
    ours, their = armada(u), theirs(lo + u * (hi - lo))[0].ravel()
    diff = np.abs(ours - their)
    print(f"{a.points} uniform points: max |armada - theirs| = {diff[:-1].max():.3g} "
          f"(values from {their[:-1].min():.4g} to {their[:-1].max():.4g}); "
          f"at the recorded maximiser: theirs {their[-1]:.10g}, armada {ours[-1]:.10g} (JSON check {at_max})")


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
    p = sub.add_parser("plant-check", help="their plant simulator against armada's closed form of it")
    p.add_argument("--code", required=True, help="a checkout of Fsoft-AIC/BO-uCVS")
    p.add_argument("--points", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.cmd == "run":
        cmd_run(a)
    elif a.cmd == "plant-check":
        cmd_plant_check(a)
    else:
        show(Path(a.workdir))


if __name__ == "__main__":
    main()
