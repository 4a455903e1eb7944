"""Which edition of the course a kernel runs in: the instructor's (every worked solution shown) or a student's.

A student edition is a copy of the course folder made by
``tools/make_student_edition.py`` (``make student``) with one file more at
its top, ``edition.json``: ``{"edition": "student", "keep_solutions":
["01_river_bank.ipynb", ...]}``. Its settings live there, in the edition
itself, and not in the helpers package: the folder can be copied to a hub
on its own, and a kernel started in its ``notebooks/`` folder finds the
file by looking from its working directory upwards, whichever copy of
``helpers`` it imports (the instructor's editable install, or a class
image's). The instructor's course folder has no such file, so there every
solution is shown.

``KEEP_SOLUTIONS`` below is the instructor's flag: the notebooks whose
student edition keeps its worked solutions (none by default). The tool
copies it into the edition's ``edition.json``; to change it for one
edition, edit that file.

A kernel learns which notebook it runs from ``JPY_SESSION_NAME``, which the
Jupyter server sets for every kernel it starts (JupyterLab, a hub). A
kernel started without it (nbval, nbclient, a script) counts as running a
notebook whose solutions are withheld, unless it is given ``notebook=``.

An edition also lists the pieces whose worked function it withholds
(``"withheld_pieces"``): the tool ships the workbook's stub in place of each
in the edition's helpers/checkers/solutions.py, and :func:`piece_withheld`
tells ``solution(piece)`` so. Withholding is a courtesy, not a lock: the
checkers compute every answer from the inputs with the course's own
functions, which a student can read, and ``ex.solution_text`` holds the text.
Imports nothing of the helpers package but helpers/paths.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from helpers.paths import _is_course_folder   # the one rule for what a course folder is

__all__ = ["EDITION_FILE", "KEEP_SOLUTIONS", "edition_settings", "current_notebook", "solutions_withheld",
           "piece_withheld", "withheld_text"]

EDITION_FILE = "edition.json"
"""The file at the top of a student edition that holds its settings."""

KEEP_SOLUTIONS = ()
"""The instructor's flag: the file names of the notebooks whose student edition keeps its worked solutions,
e.g. ``("00_start_here.ipynb", "01_river_bank.ipynb")``. Every other notebook's are withheld."""


def edition_settings(start=None):
    """The settings of the student edition the folder ``start`` (default: the working directory) belongs to.

    Looks in ``start`` and its parents for :data:`EDITION_FILE`, and stops at the first course folder
    (one holding data/ and notebooks/) without one. Returns the file's settings as a dict with at least
    ``"edition"``, ``"keep_solutions"`` (a list of notebook file names) and ``"withheld_pieces"`` (the pieces
    whose worked function the edition does not ship), or {} for the instructor's course. A file that cannot
    be read counts as a student edition that keeps no solution.
    """
    here = Path.cwd() if start is None else Path(start)
    try:
        here = here.resolve()
    except OSError:
        return {}
    for folder in (here, *here.parents):
        path = folder / EDITION_FILE
        if path.is_file():
            try:
                settings = json.loads(path.read_text(encoding="utf-8"))
                kept = [str(name) for name in settings.get("keep_solutions", [])]
                pieces = [str(name) for name in settings.get("withheld_pieces", [])]
            except (OSError, ValueError, AttributeError, TypeError):
                settings, kept, pieces = {}, [], []
            return {**settings, "edition": str(settings.get("edition", "student")), "keep_solutions": kept,
                    "withheld_pieces": pieces}
        if _is_course_folder(folder):
            return {}
    return {}


def current_notebook():
    """The file name of the notebook this kernel runs (from ``JPY_SESSION_NAME``), or None when unknown."""
    name = os.environ.get("JPY_SESSION_NAME", "").strip()
    return Path(name).name if name else None


def solutions_withheld(notebook=None, start=None):
    """Whether worked solutions are withheld here: True in a student edition (:func:`edition_settings`)
    unless ``notebook`` (default: :func:`current_notebook`) is one it keeps; False in the instructor's course."""
    settings = edition_settings(start)
    if not settings:
        return False
    notebook = current_notebook() if notebook is None else Path(str(notebook)).name
    return notebook not in settings["keep_solutions"]


def piece_withheld(piece, start=None):
    """Whether this edition ships no worked function of ``piece`` (its settings' ``withheld_pieces``): then
    ``solution(piece)`` says withheld even in a notebook that keeps its solutions. False in the instructor's course."""
    return str(piece) in edition_settings(start).get("withheld_pieces", [])


def withheld_text(what, where):
    """The sentence a withheld solution shows: ``what`` was withheld, and ``where`` to look instead."""
    return (f"Your instructor has withheld {what} in this edition of the course. {where} "
            "Ask your instructor when you are stuck.")
