"""Declaring a family: the wire form, the quick checks, and episodes' records."""

import math

import pytest

from armada_sdk import Algorithm, Benchmark, Bool, Choice, Extension, Family, Float, Int, Job, Metric, run_episode
from armada_sdk._proto import service_pb2
from armada_sdk.episode import EpisodeError
from armada_sdk.examples.noisy import FAMILY


def test_the_declaration_carries_every_field():
    info = FAMILY.to_proto()
    assert (info.name, info.version) == ("noisy", 1)
    assert [b.name for b in info.benchmarks] == ["branin", "hartmann3"]
    ucb = info.algorithms[1]
    assert [p.name for p in ucb.params] == ["beta", "lengthscale", "candidates"]
    assert ucb.params[0].kind == service_pb2.ParamInfo.FLOAT and ucb.params[0].default.float == 2.0
    assert ucb.params[2].kind == service_pb2.ParamInfo.INT and ucb.params[2].default.int == 256
    assert (ucb.params[2].min, ucb.params[2].max) == (16, 4096)
    assert [m.kind for m in info.metrics] == [service_pb2.MetricInfo.FLOAT, service_pb2.MetricInfo.FLOAT, service_pb2.MetricInfo.INT]
    assert list(info.headline_metrics) == ["simple_regret"]


def family(**changes):
    fields = dict(
        name="t",
        version=1,
        benchmarks=[Benchmark("b", params=[Float("x", 0.0, 1.0, 0.5)])],
        algorithms=[Algorithm("a", params=[Int("n", 1, 9, 3)])],
        metrics=[Metric("m"), Metric("k", kind="int")],
        start=lambda job, streams: None,
    )
    fields.update(changes)
    return Family(**fields)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"version": 0}, "version: 0 is not a version"),
        ({"algorithms": []}, "algorithms: declare at least one"),
        ({"benchmarks": [Benchmark("b", params=[Float("x", 0.0, 1.0, 2.0)])]}, r"benchmarks\[0\].params\[0\].default: 2.0 is not a float in \[0.0, 1.0\]"),
        ({"algorithms": [Algorithm("a"), Algorithm("a")]}, r"algorithms\[1\].name: 'a' is declared twice"),
        ({"metrics": [Metric("m", kind="double")]}, r"metrics\[0\].kind: 'double' is not a metric kind"),
        ({"summary_axes": ["k"]}, r"summary_axes\[0\]: 'k' is not a float metric"),
        ({"name": "My-family"}, "name: 'My-family' is not a family name"),
        ({"name": "x" * 65}, "name: 'x+' is not a family name"),
        ({"doc": "d" * 4097}, "doc: 4097 characters, over 4096"),
        ({"metrics": [Metric("step")]}, r"metrics\[0\].name: 'step' is a trajectory column"),
        ({"metrics": [Metric("a b")]}, r"metrics\[0\].name: 'a b' is not a usable name"),
        ({"benchmarks": [Benchmark(f"b{i}") for i in range(257)]}, "benchmarks: 257 declared, over 256"),
        ({"algorithms": [Algorithm("a", params=[Int("n", 0, 2**60, 3)])]}, r"algorithms\[0\].params\[0\].min: .* not an integral range within \+-2\^53"),
        ({"algorithms": [Algorithm("a", params=[Int("n", 0, 9, True)])]}, r"algorithms\[0\].params\[0\].default: True is not an integer"),
        ({"algorithms": [Algorithm("a", params=[Float("x", 0.0, math.inf, 1.0)])]}, r"algorithms\[0\].params\[0\].min: \[0.0, inf\] is not a finite range"),
        ({"algorithms": [Algorithm("a", params=[Bool("on", 1)])]}, r"algorithms\[0\].params\[0\].default: 1 is not a bool"),
        ({"algorithms": [Algorithm("a", params=[Choice("m", [], "x")])]}, r"algorithms\[0\].params\[0\].choices: \[\]: declare 1 to 256"),
        ({"algorithms": [Algorithm("a", params=[Choice("m", ["x", 'y"'], "x")])]}, r"algorithms\[0\].params\[0\].choices\[1\]: 'y\"' is not a usable choice"),
        ({"algorithms": [Algorithm("a", params=[Choice("m", ["x", "\x85"], "x")])]}, r"choices\[1\]: .* is not a usable choice"),
        ({"algorithms": [Algorithm("a", params=[Choice("m", ["x", "x"], "x")])]}, r"choices\[1\]: 'x' is declared twice"),
        ({"algorithms": [Algorithm("a"), Algorithm("b", params=[Choice("m", ["x", "y"], "z")])]}, r"algorithms\[1\].params\[0\].default: 'z' is not one of \['x', 'y'\]"),
        ({"start": None}, "start: None is not callable"),
    ],
)
def test_a_broken_declaration_names_its_field(changes, message):
    with pytest.raises(ValueError, match=message):
        family(**changes)


class Counting:
    def __init__(self, job, streams, metrics):
        self.metrics = metrics

    def initial(self):
        return self.metrics(0)

    def step(self, t):
        return self.metrics(t)


def test_records_hold_every_step_in_declared_order_and_are_checked():
    ok = family(start=lambda job, s: Counting(job, s, lambda t: {"k": t, "m": t / 2}))
    records = run_episode(ok, Job("t", "b", "a", 0, 3))
    assert [(r.step, r.values) for r in records] == [(0, (0.0, 0.0)), (1, (0.5, 1.0)), (2, (1.0, 2.0)), (3, (1.5, 3.0))]
    missing = family(start=lambda job, s: Counting(job, s, lambda t: {"m": 1.0}))
    with pytest.raises(EpisodeError, match=r"step 0: metrics missing \['k'\]"):
        run_episode(missing, Job("t", "b", "a", 0, 3))
    fractional = family(start=lambda job, s: Counting(job, s, lambda t: {"m": 1.0, "k": 0.5}))
    with pytest.raises(EpisodeError, match="metric k is an int metric, got 0.5"):
        run_episode(fractional, Job("t", "b", "a", 0, 3))
    nan = family(start=lambda job, s: Counting(job, s, lambda t: {"m": 1.0, "k": math.nan}))
    assert math.isnan(run_episode(nan, Job("t", "b", "a", 0, 1))[1].values[1])
    early = family(start=lambda job, s: Counting(job, s, lambda t: None if t == 2 else {"m": 1.0, "k": t}))
    with pytest.raises(EpisodeError, match="does not end early"):
        run_episode(early, Job("t", "b", "a", 0, 3))
    assert len(run_episode(family(ends_early=True, start=early.start), Job("t", "b", "a", 0, 3))) == 2


def extension(**changes):
    fields = dict(name="my-lse", version=1, extends="lse", algorithms=[Algorithm("gp-ucb", params=[Float("kappa", 0.0, 9.0, 2.0)])], start=lambda job, streams: None)
    fields.update(changes)
    return Extension(**fields)


def test_an_extension_declares_its_algorithms_and_takes_its_familys_metrics():
    info = extension().to_proto()
    assert (info.name, info.version, info.extends) == ("my-lse", 1, "lse")
    assert [a.name for a in info.algorithms] == ["gp-ucb"] and info.algorithms[0].params[0].default.float == 2.0
    assert (len(info.benchmarks), len(info.metrics)) == (0, 0)
    # As the coordinator describes it: the family's metrics (and benchmarks).
    described = service_pb2.FamilyInfo(
        name="my-lse", extends="lse", metrics=[service_pb2.MetricInfo(name="loss", kind=service_pb2.MetricInfo.FLOAT), service_pb2.MetricInfo(name="chosen", kind=service_pb2.MetricInfo.INT)]
    )
    contract = extension().contract(described)
    assert contract.metric_names() == ["loss", "chosen"] and [m.kind for m in contract.metrics] == ["float", "int"]
    with pytest.raises(ValueError, match="extending 'safe', not 'lse'"):
        extension().contract(service_pb2.FamilyInfo(name="my-lse", extends="safe"))

    class Two:
        def initial(self):
            return {"loss": 0.5, "chosen": 3}

        def step(self, t):
            return {"loss": 0.5 / t, "chosen": 3.5}

    contract = extension(start=lambda job, streams: Two()).contract(described)
    job = Job(family="lse", benchmark="himmelblau", algorithm="gp-ucb", seed=0, horizon=2)
    with pytest.raises(EpisodeError, match="metric chosen is an int metric, got 3.5"):
        run_episode(contract, job)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(extends=""), "extends: '' is not a family name"),
        (dict(algorithms=[]), "algorithms: declare at least one"),
        (dict(name="My LSE"), "name: 'My LSE' is not a family name"),
        (dict(algorithms=[Algorithm("a"), Algorithm("a")]), "algorithms[1].name: 'a' is declared twice"),
    ],
)
def test_a_broken_extension_names_its_field(changes, message):
    with pytest.raises(ValueError) as e:
        extension(**changes)
    assert str(e.value).startswith(message), str(e.value)
