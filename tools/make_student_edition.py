"""Build a student edition of the course: the same notebooks with the worked solutions withheld.

Usage: .venv/bin/python tools/make_student_edition.py [DEST] [--notebooks NAME ...] [--keep NAME ...]
       (``make student`` builds ``student/``)

DEST (default ``student/``) becomes a complete course folder that can be
copied to a hub on its own: helpers/, data/, jupyter/, binder/, the
requirements, pyproject.toml, a README.md of its own (the students' start,
course map and workbook), a .gitignore, a Makefile with the students'
targets (``lab``, and ``test``: nbval of the notebooks, then a report of
``diagnose`` on every piece of the student's workbook), the pristine
workbook of stubs, and every notebook (or those named with --notebooks,
``04_masking`` or ``04_masking.ipynb``), re-executed in a fresh kernel
inside DEST so that no stored output shows a solution, and nbval's sanitizer
(nbval_sanitize.cfg, which its ``make test`` passes: a learner's right
piece changes the line a cell prints to say whose ran). Its settings are in
DEST/edition.json (helpers/edition.py reads them): the notebooks that keep
their solutions are helpers.edition.KEEP_SOLUTIONS, the instructor's flag,
or those named with --keep. Tests, tools and INSTRUCTORS.md stay behind.

What the edition changes in what it copies: its helpers/checkers/solutions.py
holds the workbook's stub in place of the worked function of every piece no
kept notebook builds (edition.json's "withheld_pieces"; the checkers judge
with the course's own functions, so they still judge); each build cell (one
that runs diagnose or check_your_block on a workbook function) is tagged
nbval-ignore-output, since a student's right piece turns its stored "not
attempted yet" into "Correct!"; and a withheld notebook's prose no longer says
that ``.solution()`` shows a worked version.

Each notebook runs with JPY_SESSION_NAME set to its path, as a Jupyter
server sets it, so a kept notebook shows its solutions; DEST/conftest.py
sets it the same way for nbval in the edition. A DEST that exists is
rebuilt only if it is an edition this tool made (it has edition.json) or
holds nothing but a .git: a rebuild replaces every file the edition makes
and keeps DEST/.git, a .venv and the static site an instructor exported
into DEST/site as they are; it refuses, listing them,
when DEST holds other files (your own notes, a notebook the build no
longer makes), unless --force is given, which deletes them. Caches
(__pycache__, .pytest_cache, .ipynb_checkpoints, JupyterLab's workspaces)
go without asking.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

from execute_notebooks import execute  # noqa: E402  (tools/ is not a package)

from helpers.edition import EDITION_FILE, KEEP_SOLUTIONS  # noqa: E402

COPIED = ("helpers", "data", "jupyter", "binder", "requirements.txt", "requirements-nodeps.txt",
          "pyproject.toml", "notebooks/workbook.py", "nbval_sanitize.cfg")
"""What the edition takes from the course folder besides the notebooks (the Makefile is trimmed; the README
and .gitignore are its own, written by :func:`student_readme` and from GITIGNORE)."""
GITIGNORE = (".venv/\n__pycache__/\n*.egg-info/\n.ipynb_checkpoints/\n.pytest_cache/\njupyter/lab/\njupyter/migrated\n"
             "site/\n")
"""The edition's .gitignore, for the repository an instructor makes of it: what running it writes, and the
static site exported into it (INSTRUCTORS.md, "A student edition")."""
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "lab", "migrated")
"""What never goes into it: caches, and jupyter/'s files a running JupyterLab writes (.gitignore)."""

KEPT = (".git", ".venv", "site")
"""What a rebuild leaves as it is: the repository an instructor makes inside the edition, its virtual environment,
and the static site exported into it (re-export it after a rebuild: its pages show the notebooks it was made of)."""
CACHES = ("__pycache__", "*.pyc", "*.egg-info", ".ipynb_checkpoints", "lab", "migrated", ".pytest_cache", ".hypothesis")
"""Files a rebuild removes without asking: what running the edition writes (IGNORED, and pytest's)."""

CELL_TIMEOUT = 900
"""Seconds one cell may take while the edition is executed: the real model's cells of notebook 11 take
over a minute on a busy machine, past execute_notebooks' 120 s."""

CONFTEST = '''"""pytest in this student edition (make test): nbval of the notebooks, then a report of your workbook.

Each notebook's kernel is told which notebook it runs, as JupyterLab tells it (JPY_SESSION_NAME), so a
notebook that keeps its solutions (edition.json) shows them here too. After the notebooks, diagnose runs on
every piece of notebooks/workbook.py and the report names each one's verdict: right, not attempted yet, or the
mistake it found. The notebooks pass either way: a cell runs your piece once it is right, the course's until then."""

import importlib.util
import os
from pathlib import Path

import pytest

WORKBOOK = Path(__file__).resolve().parent / "notebooks" / "workbook.py"
BY_ITS_OWN_CHECK = {"encoder_block": "checked in notebook 11 by check_your_block(workbook.encoder_block), with the real model"}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    path = Path(str(getattr(item, "path", item.fspath)))
    if path.suffix == ".ipynb":
        os.environ["JPY_SESSION_NAME"] = f"notebooks/{path.name}"


def workbook_report(path=WORKBOOK):
    """One line per piece of the workbook at ``path``: its name and diagnose's verdict on it."""
    from helpers.checkers import diagnose
    from helpers.checkers.solutions import STUBS, function_name

    try:
        spec = importlib.util.spec_from_file_location("workbook", path)
        workbook = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(workbook)
    except Exception as exc:       # a syntax error, a bad import: say so, and stop there
        return [f"workbook.py could not be imported ({type(exc).__name__}: {exc})"]
    lines = []
    for piece in STUBS:
        name = function_name(piece)
        if piece in BY_ITS_OWN_CHECK:
            lines.append(f"{name}: {BY_ITS_OWN_CHECK[piece]}")
            continue
        fn = getattr(workbook, name, None)
        if fn is None:
            lines.append(f"{name}: not in workbook.py")
            continue
        try:
            verdict = diagnose(fn, piece=piece)
        except Exception as exc:   # never: diagnose does not raise on what fn does
            lines.append(f"{name}: could not be checked ({type(exc).__name__}: {exc})")
            continue
        said = verdict.text.strip().splitlines()[0] if verdict.text.strip() else ""
        if verdict.correct:
            lines.append(f"{name}: right")
        elif verdict.mistake == "not_attempted":
            lines.append(f"{name}: not attempted yet")
        else:
            lines.append(f"{name}: {verdict.mistake}: {said}")
    return lines


def pytest_terminal_summary(terminalreporter):
    terminalreporter.section("your workbook: diagnose on every piece")
    for line in workbook_report():
        terminalreporter.write_line(line)
'''
"""The edition's conftest.py (its ``make test``)."""

BUILD_MIME = "application/vnd.course.build+json"     # helpers.exercises.static.BUILD_MIME: a build cell's verdict
IGNORE_OUTPUT = "nbval-ignore-output"
WORKED_CLAIM = re.compile(r"(`[^`\n]*\.solution\(\)`(?: on (?:its|the) verdict)?) shows (?:an? |the )?worked (\w+)")
"""A withheld notebook's prose that says ``.solution()`` shows a worked version, and its rewording."""
WORKED_CLAIM_NOW = r"\1 says the worked \2 is withheld in this edition"
EXERCISE_CLAIM = ("The cells below it give a hint and a worked solution, folded until you open them.",
                  "The cells below it give a hint, folded until you open it; in this edition the worked solutions "
                  "are withheld.")
"""00's sentence on an exercise's cells, and what a withheld edition says instead."""


def withheld_pieces(keep, worked):
    """The pieces (of ``worked``, helpers.checkers.solutions.WORKED's keys) whose worked function the edition
    withholds: every piece that no notebook of ``keep`` builds (helpers.course.BUILT_IN)."""
    from helpers.checkers.solutions import function_name
    from helpers.course import BUILT_IN

    kept = {name[:2] for name in keep}
    return sorted(piece for piece in worked
                  if not kept & set(re.findall(r"notebook (\d\d)", BUILT_IN.get(function_name(piece), ""))))


def withhold_worked(source, pieces):
    """The text of helpers/checkers/solutions.py (``source``) with the worked function of each of ``pieces``
    replaced by its workbook stub (its signature and docstring, a body that raises NotImplementedError).

    The worked functions are found by WORKED's own entries in ``source`` (``WORKED = {"softmax": softmax, ...}``,
    ``WORKED.update(rope=apply_rope)``, ``WORKED["rope"] = apply_rope``), so a piece added there is withheld too. Raises ValueError for a
    piece whose worked function is not a top-level function of ``source``."""
    import ast

    from helpers.checkers.solutions import STUBS

    tree = ast.parse(source)
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "WORKED" for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            names.update({k.value: v.id for k, v in zip(node.value.keys, node.value.values)
                          if isinstance(k, ast.Constant) and isinstance(v, ast.Name)})
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Subscript) and getattr(node.targets[0].value, "id", None) == "WORKED" \
                and isinstance(node.targets[0].slice, ast.Constant):
            names[node.targets[0].slice.value] = node.value.id          # WORKED["layer_norm"] = layer_norm
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                and getattr(node.func.value, "id", None) == "WORKED":
            names.update({k.arg: k.value.id for k in node.keywords if isinstance(k.value, ast.Name)})
    defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    lines = source.splitlines(keepends=True)
    spans = []
    for piece in pieces:
        node = defs.get(names.get(piece))
        if node is None:
            raise ValueError(f"pieces must have a worked function in solutions.py; got {piece!r}")
        doc = STUBS.get(piece, (None, "Withheld in this edition: write your own in workbook.py."))[1]
        stub = (f"def {node.name}({ast.unparse(node.args)}):\n    \"\"\"{doc}\n    \"\"\"\n"
                f"    raise NotImplementedError(\"{piece}: its worked version is withheld in this edition\")\n")
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        spans.append((start, node.end_lineno, stub))
    for start, end, stub in sorted(spans, reverse=True):
        lines[start:end] = [stub]
    return "".join(lines)


def edition_notebook(nb, withheld):
    """The edition's copy of the notebook ``nb`` (changed in place; returned): each build cell (its stored
    output holds a verdict on a workbook function) tagged nbval-ignore-output, and, when ``withheld``, no
    sentence saying that ``.solution()`` shows a worked version."""
    for cell in nb.cells:
        if cell.cell_type == "code" and "workbook." in cell.source \
                and any(BUILD_MIME in out.get("data", {}) for out in cell.get("outputs", [])):
            tags = cell.metadata.setdefault("tags", [])
            if IGNORE_OUTPUT not in tags:
                tags.append(IGNORE_OUTPUT)
        if cell.cell_type == "markdown" and withheld:
            cell.source = WORKED_CLAIM.sub(WORKED_CLAIM_NOW, cell.source).replace(*EXERCISE_CLAIM)
    return nb


def notebook_name(name):
    """'04_masking' or '04_masking.ipynb' -> '04_masking.ipynb', checked against notebooks/."""
    name = Path(name).name
    name = name if name.endswith(".ipynb") else name + ".ipynb"
    if not (ROOT / "notebooks" / name).is_file():
        known = ", ".join(p.stem for p in sorted((ROOT / "notebooks").glob("*.ipynb")))
        raise ValueError(f"notebooks must name course notebooks ({known}); got {name!r}")
    return name


def student_makefile(text):
    """The course's Makefile without the targets that need tools/ (execute, html, bench, student)."""
    blocks = text.split("\n\n")
    kept = [b for b in blocks if "tools/" not in b]
    kept = [re.sub(r"\A(#.*\n)+(?=test:)", "# Check every notebook: a fresh run prints exactly what is stored (nbval); then the report of "
                   "conftest.py:\n# diagnose on every piece of your workbook.py, one line each.\n", b)
            for b in kept]
    targets = [m.group(1) for b in kept for m in re.finditer(r"^([a-z]+):", b, re.M)]
    return re.sub(r"^\.PHONY:.*$", ".PHONY: " + " ".join(targets), "\n\n".join(kept), count=1, flags=re.M)


def student_readme(names, keep):
    """The edition's README.md: what it is, ``make lab`` and ``make test``, the map of its notebooks, and the
    workbook (the pieces built in its notebooks). It names only what the edition holds."""
    from helpers.course import BUILT_IN, COURSE

    numbers = {name[:2] for name in names}
    kept = [name for name in names if name in keep]
    lines = ["# Attention, step by step: the student edition", "",
             "Jupyter notebooks that teach attention, the computation at the heart of transformers, by hand:",
             "small numbers you can check, then the functions you build yourself. In this edition the worked",
             "solutions are withheld" + (f" (but in {', '.join(kept)})" if kept else "") + "; the hints stay:",
             "run a hint cell again for a stronger hint, and ask your instructor when you are stuck.", "",
             "## Start", "", "```", "make lab     # sets up .venv (Python 3.11) the first time, then opens JupyterLab",
             "make test    # checks every notebook: a fresh run prints exactly what is stored,",
             "             # then diagnose names each piece of your workbook: right, not attempted, or its mistake",
             "```", "",
             f"Open `notebooks/{names[0]}` first, then go in order.", "", "## The course map", ""]
    lines += [f"- `notebooks/{name}`: {title}: {what}." for name, title, what in COURSE if name in names]
    pieces = [f"`{piece}` ({where})" for piece, where in BUILT_IN.items()
              if re.search(r"\d\d", where) and re.search(r"\d\d", where).group() in numbers]
    lines += ["", "## The workbook", "",
              "`notebooks/workbook.py` holds the functions you build, as stubs. Each notebook's Build it section",
              "says which one to fill in: open the file, write the function, save it, and run the cell below,",
              "which checks it and names the mistake when there is one."]
    if pieces:
        lines += ["", "Built in these notebooks: " + ", ".join(pieces) + "."]
    return "\n".join(lines) + "\n"


def _planned(names):
    """The paths (relative to the edition) of every file a build of the notebooks ``names`` writes."""
    planned = {Path("Makefile"), Path("conftest.py"), Path(EDITION_FILE), Path("README.md"), Path(".gitignore")}
    planned |= {Path("notebooks") / name for name in names}
    for item in COPIED:
        source = ROOT / item
        if source.is_file():
            planned.add(Path(item))
        elif source.is_dir():
            for folder, dirs, files in os.walk(source):
                ignored = IGNORED(folder, dirs + files)
                dirs[:] = [d for d in dirs if d not in ignored]
                planned |= {(Path(folder) / f).relative_to(ROOT) for f in files if f not in ignored}
    return planned


def _clear(dest, planned, force):
    """Empty an existing ``dest`` for a rebuild, keeping KEPT; raises ValueError (nothing deleted) when it is
    not an edition, or holds files the build does not make and ``force`` is False."""
    top = [p for p in dest.iterdir() if p.name not in KEPT]
    if top and not (dest / EDITION_FILE).is_file():
        raise ValueError(f"dest {dest} exists and is not a student edition (no {EDITION_FILE}); "
                         "give a new folder, or remove it yourself")
    unknown = []
    for folder, dirs, files in os.walk(dest):
        here = Path(folder).relative_to(dest)
        dirs[:] = [d for d in dirs if not (here == Path(".") and d in KEPT)
                   and not any(fnmatch.fnmatch(d, pattern) for pattern in CACHES)]
        unknown += [str(here / f) for f in sorted(files) if here / f not in planned
                    and not any(fnmatch.fnmatch(f, pattern) for pattern in CACHES)]
    if unknown and not force:
        shown = ", ".join(sorted(unknown)[:10]) + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
        raise ValueError(f"dest {dest} holds files the student edition does not make: {shown}. Move them out "
                         "of it, or give --force to delete them (its .git and .venv are kept either way)")
    for item in top:
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()


def build(dest, notebooks=None, keep=KEEP_SOLUTIONS, run=True, force=False):
    """Write the student edition into ``dest``; returns the paths of its notebooks.

    notebooks: course notebook names (default: every notebook in notebooks/). keep: the notebook file
    names that keep their solutions. run: re-execute each notebook there (False: copy them as stored,
    for a quick look at the folder; their stored outputs then still show the solutions).
    force: delete the files of an existing edition ``dest`` that the build does not make.
    Raises ValueError for a name that is not a course notebook, a ``dest`` that exists and is not an
    edition this tool made (or a folder holding only a .git), or an edition holding files the build does
    not make (unless ``force``). A rebuild keeps ``dest``/.git and ``dest``/.venv.
    """
    dest = Path(dest).resolve()
    names = [notebook_name(n) for n in notebooks] if notebooks else sorted(
        p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    keep = [notebook_name(n) for n in keep]
    if dest == ROOT or ROOT.is_relative_to(dest):
        raise ValueError(f"dest must be a new folder, not the course folder or above it; got {dest}")
    if dest.exists():
        _clear(dest, _planned(names), force)
    (dest / "notebooks").mkdir(parents=True, exist_ok=True)
    for item in COPIED:
        source = ROOT / item
        if source.is_dir():
            shutil.copytree(source, dest / item, ignore=IGNORED)
        elif source.is_file():
            shutil.copy2(source, dest / item)
    from helpers.checkers.solutions import WORKED

    withheld = withheld_pieces(keep, WORKED)
    solutions = dest / "helpers" / "checkers" / "solutions.py"
    solutions.write_text(withhold_worked(solutions.read_text(encoding="utf-8"), withheld), encoding="utf-8")
    (dest / "Makefile").write_text(student_makefile((ROOT / "Makefile").read_text()))
    (dest / "conftest.py").write_text(CONFTEST)
    (dest / "README.md").write_text(student_readme(names, keep))
    (dest / ".gitignore").write_text(GITIGNORE)
    settings = {"edition": "student", "keep_solutions": keep, "withheld_pieces": withheld,
                "made_by": "tools/make_student_edition.py (see the instructors' guide)"}
    (dest / EDITION_FILE).write_text(json.dumps(settings, indent=1) + "\n")
    paths = []
    before = os.environ.get("JPY_SESSION_NAME")
    try:
        for name in names:
            nb = edition_notebook(nbformat.read(ROOT / "notebooks" / name, as_version=4), name not in keep)
            path = dest / "notebooks" / name
            nbformat.write(nb, path)
            if run:
                print(f"executing {name}", flush=True)
                os.environ["JPY_SESSION_NAME"] = f"notebooks/{name}"   # as a Jupyter server sets it
                execute(path, timeout=CELL_TIMEOUT)
            paths.append(path)
    finally:
        if before is None:
            os.environ.pop("JPY_SESSION_NAME", None)
        else:
            os.environ["JPY_SESSION_NAME"] = before
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest", nargs="?", default=str(ROOT / "student"))
    parser.add_argument("--notebooks", nargs="+", help="only these notebooks (default: all)")
    parser.add_argument("--keep", nargs="*", default=list(KEEP_SOLUTIONS),
                        help="notebooks that keep their solutions (default: helpers.edition.KEEP_SOLUTIONS)")
    parser.add_argument("--force", action="store_true",
                        help="rebuild an edition even where it holds files the build does not make (deleting them)")
    args = parser.parse_args(argv)
    try:
        paths = build(args.dest, args.notebooks, args.keep, force=args.force)
    except ValueError as exc:
        sys.exit(f"make_student_edition: {exc}")
    print(f"student edition: {len(paths)} notebooks in {args.dest}")


if __name__ == "__main__":
    main()
