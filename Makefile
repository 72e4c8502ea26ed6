# dispatchlab developer commands. `make demo` and `make test` work on a fresh clone with
# Python ≥ 3.11 and pip: they create .venv and install the package (the demo), with its
# test extras for the tests, the linter and the docs.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# mark a finished install of the package, and of its test extras; reinstalled when
# pyproject.toml changes
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
NOTEBOOK_STAMP := $(VENV)/.installed-notebook

# numba caches compiled functions next to the sources (__pycache__); keep it that way
unexport NUMBA_CACHE_DIR
# pip installs without byte-compiling (--no-compile: ~1 GB of packages, 25 s of a 63 s
# install, measured) and Python writes each module's bytecode the first time a command
# imports it, which needs bytecode writing on (an environment with
# PYTHONDONTWRITEBYTECODE=1 would otherwise compile numba, scipy, … at every start: +1.3 s)
unexport PYTHONDONTWRITEBYTECODE
PIP_INSTALL := $(BIN)/python -m pip install --disable-pip-version-check --no-compile
# a new .venv gets a current pip: the pip that Python 3.11's venv brings (23.x) spends 15 s
# of CPU resolving, most of it testing each of the ~77,000 files the index lists against
# the platform's tags; pip 26 resolves the same in 7 s. The venv is made without pip and
# the interpreter's own pip installs the current one into it (`pip --python`, pip ≥ 22.3):
# 2.2–2.5 s, where venv's bundled pip and then the upgrade took 4.3–5.7 s. Without a pip
# that can (none, or older), the bundled one is installed and upgraded as before.
PIP_QUIET := --disable-pip-version-check --quiet
NEW_VENV := test -x $(BIN)/python || { $(PYTHON) -m venv --without-pip $(VENV) && { \
	$(PYTHON) -m pip --python $(BIN)/python install $(PIP_QUIET) --upgrade pip 2>/dev/null || { \
	$(BIN)/python -m ensurepip --default-pip >/dev/null && \
	$(BIN)/python -m pip install $(PIP_QUIET) --upgrade pip; }; }; }

.PHONY: venv demo test test-slow lint bench docs reproductions tutorial

venv: $(STAMP)

# after installing, `dispatchlab warm` compiles the slot loop into numba's cache (~10 s of
# CPU) so that the first run does not
$(STAMP): pyproject.toml
	$(NEW_VENV)
	$(PIP_INSTALL) -e .
	$(BIN)/dispatchlab warm
	touch $(STAMP)

# the package with its test extras (pytest, hypothesis, ruff, the notebook and the site's
# packages), in one pip call (a second resolve and build of the package cost ~20 s); the
# suite compiles what it uses, so no warm-up
$(TEST_STAMP): pyproject.toml
	$(NEW_VENV)
	$(PIP_INSTALL) -e '.[test]'
	touch $(TEST_STAMP)

# and a Jupyter kernel, for the tutorial notebook (its run is a slow test)
$(NOTEBOOK_STAMP): $(TEST_STAMP)
	$(PIP_INSTALL) -e '.[test,notebook]'
	touch $(NOTEBOOK_STAMP)

# the quick-start demo: the classical, LED and pull policies on one heterogeneous system
demo: venv
	$(BIN)/dispatchlab compare

# the default suite (pyproject's addopts deselect the slow validation runs), on every core
# (pytest-xdist; the compiled code is shared through numba's disk cache)
test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -n auto --dist worksteal

test-slow: $(NOTEBOOK_STAMP)
	$(BIN)/python -m pytest -q -m slow

lint: $(TEST_STAMP)
	$(BIN)/ruff check src tests benchmarks examples

bench: venv
	$(BIN)/python benchmarks/run.py

# the Reproductions page: every paper claim judged from the results store (STORE=…), and
# the README's summary of its verdicts
STORE ?= results/reproductions/store.sqlite
reproductions: venv
	$(BIN)/dispatchlab reproductions --store $(STORE) --out docs/reproductions.md \
		--readme README.md

# the tutorial notebook executed in place (the site shows its outputs; a test checks them)
tutorial: $(NOTEBOOK_STAMP)
	$(BIN)/python docs/hooks/notebook.py docs/tutorial.ipynb

# the documentation site (MkDocs + Material + mkdocstrings) into site/, warnings as errors
docs: reproductions $(TEST_STAMP)
	$(BIN)/mkdocs build --strict
