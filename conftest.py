"""Runs README.md's Python code blocks as tests (Sybil): the blocks share one namespace, in
order, so the README reads like one session; sh and text blocks are not run."""

from doctest import ELLIPSIS, NORMALIZE_WHITESPACE

from sybil import Sybil
from sybil.parsers.markdown import PythonCodeBlockParser, SkipParser

pytest_collect_file = Sybil(
    parsers=[PythonCodeBlockParser(doctest_optionflags=ELLIPSIS | NORMALIZE_WHITESPACE), SkipParser()],
    patterns=["README.md"],
).pytest()
