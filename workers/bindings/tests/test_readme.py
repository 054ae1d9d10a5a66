"""The README's Python examples run as written, each in a fresh namespace."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_its_examples():
    assert len(BLOCKS) == 2


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_an_example_runs(index):
    namespace = {}
    exec(compile(BLOCKS[index], f"README.md example {index + 1}", "exec"), namespace)
    if "metrics" in namespace:
        # The LSE example's straddle learns the upper set.
        assert namespace["metrics"]["fscore"] > 0.9, namespace["metrics"]
    if "m" in namespace:
        assert namespace["env"].rounds == 2_000 and namespace["m"]["regret"] > 0.0
