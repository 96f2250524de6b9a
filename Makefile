# Two entry points do all the set-up on a fresh machine:
#   make demo   run the main job on the bundled sample data
#   make test   run every test (what CI runs through .ci/run)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

.PHONY: install demo test lint notebooks
install: $(VENV)/.installed

demo: install
	$(VENV)/bin/musepi-lab demo --out demo-output

# The notebooks' source is notebooks/NN-*.py (jupytext percent format): write each paired
# .ipynb from it, clean (no outputs; cell ids kept). tests/test_notebooks_text.py checks they agree.
notebooks: install
	$(PY) notebooks/_write_ipynb.py

lint: install
	$(VENV)/bin/ruff check musepi_lab tests perf notebooks

# One pytest run: the test suite (including a papermill run of the benchmark notebook and the
# real-browser check) and every notebook under nbval, on both cores (`--dist loadfile` keeps
# the cells of one notebook in one kernel).
test: install
	$(VENV)/bin/ruff check musepi_lab tests perf notebooks
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --nbval-lax tests notebooks \
		--ignore=tests/browser/fixtures
