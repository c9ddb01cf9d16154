"""The examples in fgrad's docstrings run and print what they show.

One test per module of the fgrad package, found by file name, so collection
imports nothing: a module that needs an optional extra which is not installed
is skipped when its test runs. Each example block runs in its module's
globals, so it imports what it uses beyond them (``import fgrad.numpy as fnp``).
"""

import doctest
import importlib
import io
from pathlib import Path

import pytest

import fgrad

PACKAGE = Path(fgrad.__file__).resolve().parent
PATHS = sorted(p.relative_to(PACKAGE.parent).as_posix() for p in PACKAGE.rglob("*.py"))


def _module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import(name: str):
    try:
        return importlib.import_module(name)
    except ImportError as err:
        if err.name is None or err.name.split(".")[0] == "fgrad":
            raise  # a bug of fgrad's, not a missing extra
        pytest.skip(f"{name} needs {err.name}, an optional dependency that is not installed")


@pytest.mark.parametrize("path", PATHS)
def test_docstring_examples(path):
    name = _module_name(path)
    module = _import(name)
    report = io.StringIO()
    runner = doctest.DocTestRunner()
    for test in doctest.DocTestFinder().find(module, name):
        runner.run(test, out=report.write)
    failed, tried = runner.summarize(verbose=False)
    assert not failed, f"{failed} of {tried} docstring examples of {path} fail:\n{report.getvalue()}"
