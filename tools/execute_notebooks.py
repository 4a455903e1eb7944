"""Re-execute notebooks in place, each in a fresh kernel started in its own folder.

Usage: python tools/execute_notebooks.py [--timeout SECONDS] NOTEBOOK.ipynb ...
(--timeout: the most seconds one cell may run before the run stops with an error; default 120.
Raise it on a loaded machine, e.g. --timeout 300 for notebook 11.)

This is how stored outputs are regenerated (the Makefile's execute target),
so that nbval's comparison checks what a fresh run really prints. The kernel
runs with ``COURSE_STATIC_FORMS=1`` in its environment, so each explorer
stores the states of its whole control grid for the static site. Timing
metadata is not recorded. Printouts split into several stream messages are
merged. The random ids of widget models are replaced by ids derived from the
notebook's name and their order, so a re-run changes a notebook only where
its outputs change.
"""

import argparse
import hashlib
import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from helpers.explorers.static import STATIC_FORMS_ENV  # noqa: E402


#: Seconds one cell may run before nbclient stops the run (``--timeout``).
DEFAULT_TIMEOUT = 120


def execute(path, timeout=DEFAULT_TIMEOUT):
    """Run the notebook at ``path`` in place; ``timeout``: seconds one cell may take."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    # The kernel stores each explorer's whole control grid for the static site (helpers/explorers/static.py);
    # a live JupyterLab kernel, without this variable, displays only the picture it shows.
    client.execute(env={**os.environ, STATIC_FORMS_ENV: "1"})
    # A cell's printout can arrive in several stream messages, split at random;
    # merge them so the stored notebook is the same on every run.
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
    nbformat.write(stable_widget_ids(nb, path.name), path)


def stable_widget_ids(nb, name):
    """Replace each widget model id (random per run) with one fixed by ``name`` and its order."""
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    text = nbformat.writes(nb)
    for i, model_id in enumerate(list(state)):
        text = text.replace(model_id, hashlib.sha256(f"{name}:{i}".encode()).hexdigest()[:32])
    return nbformat.reads(text, as_version=4)


def parse_args(args):
    parser = argparse.ArgumentParser(
        description="Re-execute notebooks in place, each in a fresh kernel started in its own folder.")
    parser.add_argument("notebooks", nargs="+", metavar="NOTEBOOK.ipynb", help="the notebooks to re-execute")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"the most seconds one cell may run before the run stops (default {DEFAULT_TIMEOUT})")
    options = parser.parse_args(args)
    if options.timeout <= 0:
        parser.error(f"--timeout must be a positive number of seconds, got {options.timeout:g}")
    return options


def main(args=None):
    options = parse_args(args)
    for p in options.notebooks:
        print(f"executing {p}", flush=True)
        execute(p, timeout=options.timeout)


if __name__ == "__main__":
    main()
