"""Re-execute notebooks in place, each in a fresh kernel started in its own folder.

Usage: python tools/execute_notebooks.py notebooks/*.ipynb

This is how stored outputs are regenerated (the Makefile's execute target),
so that nbval's comparison checks what a fresh run really prints. Timing
metadata is not recorded, so a re-run changes a notebook only where its
outputs change.
"""

import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path):
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    nbformat.write(nb, path)


def main(paths):
    if not paths:
        sys.exit("usage: python tools/execute_notebooks.py NOTEBOOK.ipynb ...")
    for p in paths:
        print(f"executing {p}", flush=True)
        execute(p)


if __name__ == "__main__":
    main(sys.argv[1:])
