"""Sweeps given as dicts become sweep-file TOML."""

import tomllib

import pytest

from armada_sdk.client import to_toml


def test_a_sweep_dict_round_trips_through_toml():
    sweep = {
        "name": "mine",
        "family": "noisy",
        "seeds": 4,
        "horizon": 20,
        "sweep_seed": 3,
        "benchmarks": [{"name": "branin", "params": {"noise_sd": [0.0, 0.1]}}],
        "algorithms": [{"name": "random-search"}, {"name": "gp-ucb", "params": {"beta": 2.5, "candidates": 64}}],
    }
    text = to_toml(sweep)
    assert tomllib.loads(text) == sweep
    assert "[[algorithms]]" in text and 'name = "gp-ucb"' in text


def test_a_value_toml_cannot_hold_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"algorithms\[0\].params.beta: inf"):
        to_toml({"algorithms": [{"name": "a", "params": {"beta": float("inf")}}]})
