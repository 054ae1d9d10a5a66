"""A method's code as part of its identity.

A declaration carries a digest of the code that computes its trajectories (``FamilyInfo.code``):
the source of the module that defines its ``start``, then of each module it lists in
``code_modules``, each parsed and written back without comments, doc strings or formatting,
and without what only presents the declaration written there (its docs, wherever they stand,
and a ``headline_metrics=`` argument), so that editing those changes nothing; hashed with
BLAKE3. The coordinator puts the digest into
the declaration's own, which salts the jobs' keys: results computed by other code are never
served as this code's. A module without Python source (a compiled extension) counts by its
file's bytes.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import sys
import types
from typing import Any, Callable, Iterable, Sequence, Union

import blake3

#: A module, or its importable name.
CodeModule = Union[str, types.ModuleType]


def code_digest(start: Callable[..., Any], modules: Sequence[CodeModule] = (), docs: Iterable[str] = ()) -> str:
    """The digest of the code of ``start``'s module and of ``modules``, in that order (a
    module listed twice counts once), where the texts ``docs`` (the declaration's docs)
    count as one placeholder: 32 hex digits."""
    hasher = blake3.blake3()
    seen: set[str] = set()
    docs = frozenset(d for d in docs if d)
    for module in [module_of(start), *(_module(m) for m in modules)]:
        if module.__name__ in seen:
            continue
        seen.add(module.__name__)
        text = normalised_source(module, docs)
        hasher.update(len(text).to_bytes(8, "little"))
        hasher.update(text)
    return hasher.hexdigest()[:32]


def module_of(start: Callable[..., Any]) -> types.ModuleType:
    """The module that defines ``start``: a function's, a class's, or a callable
    object's class's."""
    target = start if inspect.isfunction(start) or inspect.isclass(start) else type(start)
    module = sys.modules.get(getattr(target, "__module__", "") or "")
    if module is None:
        raise ValueError(f"cannot tell which module defines {start!r}; list its module in code_modules")
    return module


def _module(m: CodeModule) -> types.ModuleType:
    if isinstance(m, types.ModuleType):
        return m
    if isinstance(m, str):
        return importlib.import_module(m)
    raise TypeError(f"code_modules: {m!r} is neither a module nor a module's name")


def normalised_source(module: types.ModuleType, docs: frozenset[str] = frozenset()) -> bytes:
    """The module's code as what it computes: its syntax tree without doc strings,
    ``headline_metrics=`` arguments, and with each text of ``docs`` as one placeholder,
    written with no positions and no empty fields (so that one source gives one text
    across Python versions whose trees only add fields). A module without Python source
    gives its file's bytes."""
    path = getattr(module, "__file__", None)
    if path is None:
        raise ValueError(f"module {module.__name__} has no file: define the family in a module of its own")
    if not path.endswith(".py"):
        return pathlib.Path(path).read_bytes()
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError) as e:
        raise ValueError(f"the source of module {module.__name__} cannot be read ({e})") from e
    tree = ast.parse(source)
    _drop_presentation(tree, docs)
    return _canonical(tree).encode()


def _drop_presentation(tree: ast.AST, docs: frozenset[str]) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                del body[0]
        elif isinstance(node, ast.Call):
            node.keywords = [k for k in node.keywords if k.arg != "headline_metrics"]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in docs:
            node.value = "<doc>"


def _canonical(node: Any) -> str:
    if isinstance(node, ast.AST):
        fields = []
        for name in node._fields:
            value = getattr(node, name, None)
            if value is None or (isinstance(value, list) and not value):
                continue
            fields.append(f"{name}={_canonical(value)}")
        return f"{type(node).__name__}({','.join(fields)})"
    if isinstance(node, list):
        return "[" + ",".join(_canonical(x) for x in node) + "]"
    return repr(node)
