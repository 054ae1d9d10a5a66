"""A family's code digest (armada_sdk.code): what counts as a change of the method and what
does not."""

import importlib
import sys
import textwrap

import pytest

from armada_sdk import Algorithm, Benchmark, Extension, Family, Metric
from armada_sdk.code import code_digest

METHOD = '''
"""The module's doc string."""
import math

SCALE = {scale}


class Episode:
    """The episode's doc string."""

    def __init__(self, job, streams):
        self.t = 0  # a comment

    def initial(self):
        return {{"y": 0.0}}

    def step(self, t):
        {body}


FAMILY = dict(doc="{doc}", headline_metrics=[{headline}])
'''


@pytest.fixture
def write(tmp_path, monkeypatch):
    """Write module ``name`` with ``text`` and import it afresh."""
    monkeypatch.syspath_prepend(str(tmp_path))

    def write(name, text):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(text))
        importlib.invalidate_caches()
        sys.modules.pop(name, None)
        return importlib.import_module(name)

    yield write
    for name in [n for n in sys.modules if n.startswith("method_")]:
        sys.modules.pop(name)


def digest(module, *modules, docs=()):
    return code_digest(module.Episode, modules, docs)


def method(scale="1.0", body='return {"y": SCALE * math.sqrt(t)}', doc="a doc", headline='"y"'):
    return METHOD.format(scale=scale, body=body, doc=doc, headline=headline)


def test_comments_doc_strings_formatting_and_the_declarations_docs_do_not_count(write):
    base = digest(write("method_a", method()), docs=["a doc"])
    restyled = method(body='return {"y":  SCALE*math.sqrt( t )}  # reworded', doc="another doc", headline='"y", "t"')
    restyled = restyled.replace("The episode's doc string.", "Reworded.").replace("# a comment", "")
    assert digest(write("method_a", restyled), docs=["another doc"]) == base
    # The same doc text counts when the declaration does not say it is its doc.
    assert digest(write("method_a", method(doc="another doc"))) != digest(write("method_a", method()))


@pytest.mark.parametrize(
    "edit",
    [dict(scale="2.0"), dict(body='return {"y": SCALE * math.log1p(t)}'), dict(body='return {"y": SCALE * math.sqrt(t + 0)}')],
)
def test_an_edit_of_the_code_changes_the_digest(write, edit):
    assert digest(write("method_b", method(**edit)), docs=["a doc"]) != digest(write("method_b", method()), docs=["a doc"])


def test_listed_modules_count_in_order_and_once(write):
    main = write("method_c", method())
    helper = write("method_helper", "def acquisition(x):\n    return 2 * x\n")
    with_helper = digest(main, helper)
    assert with_helper != digest(main)
    assert digest(main, "method_helper", helper, main) == with_helper, "by name or module, each counted once"
    write("method_helper", "def acquisition(x):\n    return 3 * x\n")
    assert digest(main, "method_helper") != with_helper


def test_a_callable_object_counts_by_its_class_module(write):
    module = write("method_d", method())
    assert code_digest(module.Episode(None, None)) == digest(module)


def test_the_declaration_carries_its_code_digest(write):
    module = write("method_e", method())
    family = Family(
        name="e",
        version=1,
        doc="a doc",
        benchmarks=[Benchmark("b")],
        algorithms=[Algorithm("a")],
        metrics=[Metric("y")],
        start=module.Episode,
        code_modules=["json"],
    )
    info = family.to_proto()
    assert info.code == code_digest(module.Episode, ["json"], ["a doc"]) and len(info.code) == 32
    extension = Extension(name="x", version=1, extends="lse", algorithms=[Algorithm("a")], start=module.Episode)
    assert extension.to_proto().code == digest(module)


def test_code_modules_must_be_modules_or_names(write):
    module = write("method_f", method())
    common = dict(name="f", version=1, benchmarks=[Benchmark("b")], algorithms=[Algorithm("a")], metrics=[Metric("y")], start=module.Episode)
    with pytest.raises(ValueError, match=r"code_modules\[1\]"):
        Family(**common, code_modules=["json", 3])
    with pytest.raises(ValueError, match="code_modules"):
        Family(**common, code_modules="json")
    with pytest.raises(ModuleNotFoundError):
        Family(**common, code_modules=["no_such_module_here"]).to_proto()
