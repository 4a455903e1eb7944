# The course's commands. Each target sets up .venv first if it is missing or stale.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
READY  := $(VENV)/.ready

.PHONY: lab test execute bench

# Open the course in JupyterLab on the start-here notebook.
lab: $(READY)
	$(PY) -m jupyter lab notebooks/00_start_here.ipynb

# Run every test: unit, property, published numbers, and every notebook under nbval.
test: $(READY)
	env -u MPLBACKEND $(PY) -m pytest --nbval

# Re-run every notebook in place in a fresh kernel, to regenerate its stored outputs.
execute: $(READY)
	env -u MPLBACKEND $(PY) tools/execute_notebooks.py notebooks/*.ipynb

# Benchmarks (not tests): time one explorer update in a real kernel, median and 95th percentile.
bench: $(READY)
	env -u MPLBACKEND $(PY) tools/bench_explorers.py

# Set up: a virtual environment with the pinned requirements and the helpers package.
$(READY): requirements.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@
