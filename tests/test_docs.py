"""The generated coverage table in docs/ matches what fgrad does today."""

import importlib.util
import warnings
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_numpy_coverage_table_is_up_to_date() -> None:
    spec = importlib.util.spec_from_file_location("numpy_coverage", DOCS / "numpy_coverage.py")
    assert spec is not None and spec.loader is not None
    coverage = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(coverage)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generated = coverage.table()
    committed = (DOCS / "numpy-coverage.md").read_text()
    assert generated == committed, (
        "docs/numpy-coverage.md is out of date with what fgrad does; "
        "run `python docs/numpy_coverage.py` and commit the result"
    )
    assert "✗" not in generated, "a function in docs/numpy-coverage.md fails a check"
