# make demo | test | test-slow | lint | bench — each sets up .venv itself on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test test-slow lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# One stamp per extra: reinstall when pyproject.toml changes.
$(VENV)/.installed-%: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[$*]"
	touch $@

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

demo: $(VENV)/.installed
	$(BIN)/python examples/a_two_variables.py

# On every core (at most 4), a file's tests on one worker: a docs page's blocks share a namespace.
test: $(VENV)/.installed-test
	$(BIN)/python -m pytest --numprocesses=auto --maxprocesses=4 --dist loadfile

# The long property tests (marked slow), which `make test` skips.
test-slow: $(VENV)/.installed-test
	$(BIN)/python -m pytest -m slow

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/mypy fgrad

bench: $(VENV)/.installed-bench
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
