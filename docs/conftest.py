"""Runs the Python code blocks of docs/*.md as tests (Sybil).

The blocks of one page share one namespace, in order, so a page reads like one
session; text blocks (PyTorch's, HIPS autograd's and JAX's code shown for
comparison) and sh blocks are not run. A block that starts with `>>>` is a
doctest, its output compared with ELLIPSIS and NORMALIZE_WHITESPACE. Each page
runs in a temporary working directory, so the files it writes (a rendered
graph) do not land in the repository; a block that renders a picture is
skipped where Graphviz is not installed (`<!-- skip: next if(graphviz_missing) -->`).
"""

import importlib.util
import os
import shutil
import tempfile
from doctest import ELLIPSIS, NORMALIZE_WHITESPACE
from typing import Any

from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser


def _enter_temporary_directory(namespace: dict[str, Any]) -> None:
    namespace["__docs_cwd__"] = os.getcwd()
    namespace["__docs_tmp__"] = tempfile.TemporaryDirectory()
    os.chdir(namespace["__docs_tmp__"].name)
    # fgrad.viz draws pictures through the graphviz package and Graphviz's `dot` (the viz extra).
    has_graphviz = importlib.util.find_spec("graphviz") is not None and shutil.which("dot") is not None
    namespace["graphviz_missing"] = not has_graphviz


def _leave_temporary_directory(namespace: dict[str, Any]) -> None:
    os.chdir(namespace.pop("__docs_cwd__"))
    namespace.pop("__docs_tmp__").cleanup()


pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(doctest_optionflags=ELLIPSIS | NORMALIZE_WHITESPACE), SkipParser()],
    patterns=["*.md"],
    excludes=["numpy-coverage.md", "api.md"],  # generated tables, no code
    setup=_enter_temporary_directory,
    teardown=_leave_temporary_directory,
).pytest()
