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


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_is_up_to_date() -> None:
    generated = _load("api_reference").table()
    committed = (DOCS / "api.md").read_text()
    assert generated == committed, (
        "docs/api.md is out of date with fgrad's docstrings; "
        "run `python docs/api_reference.py` and commit the result"
    )


def test_api_reference_names_every_public_name() -> None:
    import fgrad
    import fgrad.debug
    import fgrad.lax
    import fgrad.nn
    import fgrad.nn.initializers
    import fgrad.optim
    import fgrad.random
    import fgrad.test_util
    import fgrad.tree_util

    text = (DOCS / "api.md").read_text()
    modules = (fgrad, fgrad.lax, fgrad.random, fgrad.nn, fgrad.nn.initializers, fgrad.optim, fgrad.tree_util,
               fgrad.test_util, fgrad.debug)
    for module in modules:
        for name in module.__all__:
            assert f"`{module.__name__}.{name}" in text, f"docs/api.md does not list {module.__name__}.{name}"


def test_every_code_block_of_the_docs_runs_or_says_it_does_not() -> None:
    # Sybil runs the blocks marked python; a block in another language is shown, not run, so it
    # must be one that is not fgrad code: shell commands, or other libraries' code as text.
    pages = [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]
    for page in pages:
        inside = False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if not line.lstrip().startswith("```"):
                continue
            language, inside = line.lstrip()[3:].strip(), not inside
            assert not inside or language in ("python", "text", "sh"), (
                f"{page.name}:{number} opens a code block marked {language!r}: mark fgrad code "
                "`python` (the tests run it), shell commands `sh`, and other libraries' code `text`"
            )
