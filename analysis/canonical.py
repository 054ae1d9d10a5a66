"""Parameter text as the analysis scripts compare, parse and print it: armada's canonical
form, `{beta_sqrt=3.0,tie_break="random"}`.

Result files store a cell's parameters as JSON, `{"beta_sqrt":3.0,"tie_break":"random"}`, so
that any tool can filter on one; files written before that, like the runs committed under
`figures/`, hold the canonical form. armada writes numbers alike in both, so JSON becomes the
canonical form by unquoting the names, and the scripts' tables read the same from either.
"""

from __future__ import annotations

import polars as pl

PARAM_COLUMNS = ("benchmark_params", "algorithm_params")


def canonical_params(frame: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """`frame` with its parameter columns (those it has) in the canonical form."""
    names = frame.collect_schema().names()
    return frame.with_columns(
        pl.col(c).str.replace_all(r'"(\w+)":', "${1}=") for c in PARAM_COLUMNS if c in names
    )
