"""A class's hand-ins, run and tallied: per exercise how many are right, which named mistakes, who did not try.

Usage: .venv/bin/python tools/class_report.py FOLDER [--csv FILE] [--notebook-time S] [--cell-time S] [--jobs N]

FOLDER holds one folder per student (its name is the student's), each with
the student's copies of course notebooks (``04_masking.ipynb``, executed or
not) and, where the student built pieces, their ``workbook.py``; a notebook
lying in FOLDER itself is a student of its own (named by the file). Each
notebook is run from the top in a fresh kernel of the course, in a
subprocess, in a temporary working folder holding a copy of it and of the
student's workbook (the pristine stubs when there is none), with a time
limit per cell (``--cell-time``, default 60 s: the cell is interrupted and
the run goes on) and per notebook (``--notebook-time``, default 600 s: the
run is stopped, its kernel killed); ``--jobs N`` runs N hand-ins side by
side (each notebook takes a core while it runs). Nothing of the hand-in folder is
changed, and the temporary folders are removed.

An exercise is found by its checker object, not by its cell: every
``ex.check(answer)`` is recorded under the exercise's stable id,
``<notebook>:<name>`` (the course notebook the file is a copy of, by its
two-digit prefix, and the name the notebook gives the checker, e.g.
``04_masking:ex_sums``), and every ``diagnose(fn, piece=...)`` under
``<notebook>:diagnose:<piece>`` (``run_with_your_attention`` and
``check_your_block`` under their names), counted only when the function it
judges is defined in the hand-in's workbook.py: a notebook's own examples
(04's first attempt, 11's faulty one) and the course's solutions do not count.
The last check of each exercise in the run counts, so for diagnose the last
call per piece; a diagnose column's verdict is then that of the handed-in
workbook.py's own function of the piece, diagnosed again after the run (with
the options of the notebook's first call of that piece, so a later call with
fewer inputs does not count) in a process of its own. Its verdict is
``correct``, ``wrong`` with the checker's ``.mistake`` key,
``not_attempted`` (the ``answer = ...`` left, or a workbook stub), or
``not_checked`` (its check never ran: the cell was deleted, raised first,
or the run stopped before it; the exercises of a notebook are those any
student's run of it checked).

Prints one line per exercise (counts, each mistake key with how many made
it, a key joined with "+" counting for each part, the most common one) and
one row per student (their notebooks added up, with what went wrong running
each: unreadable, a cell
that raised, timed out, printed more than 100 kB, files deleted in its
working folder, a file written beside it by ``../``: wrote_outside, a
workbook.py that does not compile: workbook_import_error, two
copies of one course notebook: duplicate_notebook, the one last modified
run, a student folder without notebooks: no_notebooks). ``--csv FILE``
writes one row per student and exercise: student, notebook, exercise,
status, mistake, problems (the hand-in's, joined by ";"; a hand-in that
could not be run gets one row with an empty exercise and its problem as
the status).

It never raises on a hand-in. It runs students' code: read the
instructors' guide ("Grade a class") before you use it.
"""

from __future__ import annotations

import argparse
import collections
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_TIME = 600.0
CELL_TIME = 60.0
PRINT_LIMIT = 100_000
"""Characters of printed output past which a hand-in's row says it printed too much (the output is never kept)."""
STATUSES = ("correct", "wrong", "not_attempted", "not_checked")


# --------------------------------------------------------------------------
# What runs inside the kernel: the recorder, installed by a first cell
# --------------------------------------------------------------------------

PRELUDE = r'''
def _class_report_install(record, notebook):
    import functools, importlib, inspect, json, os, sys
    import helpers.exercises as package
    from helpers.exercises import base
    try:
        from IPython import get_ipython
        namespace = get_ipython().user_ns
    except Exception:
        namespace = vars(sys.modules["__main__"])

    own_workbook = os.path.realpath("workbook.py")

    def write(exercise, verdict, **extra):
        try:
            with open(record, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": f"{notebook}:{exercise}", "correct": bool(verdict.correct),
                                    "mistake": None if verdict.mistake is None else str(verdict.mistake),
                                    **extra}) + "\n")
        except Exception:
            pass

    def from_workbook(fn):       # defined in the hand-in's workbook.py (not in a cell, not the course's solutions)
        try:
            return os.path.realpath(inspect.unwrap(fn).__code__.co_filename) == own_workbook
        except Exception:
            return False

    from helpers.exercises.static import name_in     # the one rule for an exercise's name (the static page's too)

    def name_of(obj):
        return name_in(namespace, obj)

    def check(self, answer):
        feedback = self.feedback(answer)
        write(name_of(self), feedback)
        print(feedback.text)
    check.__doc__ = base._Exercise.check.__doc__
    base._Exercise.check = check

    module = importlib.import_module("helpers.checkers.diagnose")   # (its package's attribute diagnose is the function)
    original = module.diagnose

    @functools.wraps(original)
    def diagnose(fn, piece="attention", **options):
        verdict = original(fn, piece, **options)
        if from_workbook(fn):      # the notebook's own examples (04's first attempt) and the course's solutions: not
            given = {k: v for k, v in options.items() if isinstance(v, (bool, int, float, str))}
            write(f"diagnose:{piece}", verdict, piece=str(piece), options=given)
        return verdict
    module.diagnose = package.diagnose = diagnose

    finale_names = ("run_with_your_attention", "check_your_block")
    lazy = package.__getattr__

    def wrapped(name):
        fn = lazy(name)
        if name not in finale_names or getattr(fn, "_recorded", False):
            return fn
        @functools.wraps(fn)
        def judge(*args, **kwargs):
            verdict = fn(*args, **kwargs)
            if from_workbook(args[0] if args else kwargs.get("fn")):   # 11's faulty first_attempt does not count
                write(name, verdict)
            return verdict
        judge._recorded = True
        setattr(package, name, judge)
        return judge
    package.__getattr__ = wrapped

_class_report_install(RECORD, NOTEBOOK)
del _class_report_install
'''


def run_one(notebook, record, cell_time, pid_file, name=None):
    """Inside the subprocess: run ``notebook`` (in the working directory) with the recorder, never raising;
    ``name`` (default: the file's stem) is the notebook part of the exercises' ids."""
    import nbformat
    from nbclient import NotebookClient

    def note(**entry):
        with open(record, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    class Client(NotebookClient):
        printed = 0

        def output(self, outs, msg, display_id, cell_index):   # count what is printed, keep none of it
            content = msg.get("content", {})
            size = len(str(content.get("text", ""))) + len(str(content.get("data", {}).get("text/plain", "")))
            if Client.printed <= PRINT_LIMIT < Client.printed + size:
                note(event="printed_too_much", cell=cell_index)
            Client.printed += size
            return None

    try:
        nb = nbformat.read(notebook, as_version=4)
        code = PRELUDE.replace("RECORD", json.dumps(str(record))).replace("NOTEBOOK", json.dumps(name or Path(notebook).stem))
        nb.cells.insert(0, nbformat.v4.new_code_cell(code))
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
        timeout_reply = {"ename": "CellTimeout", "evalue": f"longer than {cell_time:g} s", "traceback": []}

        def started(**_):
            try:
                Path(pid_file).write_text(str(client.km.provisioner.process.pid))
            except Exception:
                pass

        def failed(cell, cell_index, execute_reply, **_):
            ename = execute_reply.get("content", {}).get("ename", "error")
            note(event="cell_timeout" if ename == "CellTimeout" else "cell_error", cell=cell_index, ename=ename)

        client = Client(nb, timeout=cell_time, kernel_name="python3", allow_errors=True, interrupt_on_timeout=True,
                        error_on_timeout=timeout_reply, record_timing=False, on_notebook_start=started,
                        on_cell_error=failed, resources={"metadata": {"path": os.getcwd()}})
        client.execute()
    except BaseException as exc:    # a kernel that died, a notebook nbclient refuses: said on the row
        note(event="run_failed", ename=type(exc).__name__)


# --------------------------------------------------------------------------
# The instructor's side: find the hand-ins, run each in its own subprocess
# --------------------------------------------------------------------------

class Handin(collections.namedtuple("Handin", "student notebook workbook")):
    """One notebook to run: (student, notebook path or None, workbook path or None); ``others``: the student's
    other copies of the same course notebook, not run (the one last modified counts)."""
    others = ()


def find_handins(folder):
    """[Handin], sorted: one per course notebook of each student's folder (and one with notebook None for a
    student folder without notebooks). Of two copies of one course notebook (04_masking.ipynb and
    04_masking-Copy1.ipynb) the one last modified counts (on a tie, the name that sorts last); the others
    are kept in its ``others``."""
    folder = Path(folder)
    found = []
    for item in sorted(folder.iterdir()):
        if item.name.startswith((".", "__")):         # .ipynb_checkpoints, __MACOSX of an unzipped upload
            continue
        if item.is_dir():
            workbook = item / "workbook.py"
            workbook = workbook if workbook.is_file() else None
            copies = collections.defaultdict(list)
            for notebook in sorted(item.glob("*.ipynb")):
                copies[course_name(notebook)].append(notebook)
            if not copies:
                found.append(Handin(item.name, None, workbook))
            for name in sorted(copies):
                ordered = sorted(copies[name], key=lambda p: (p.stat().st_mtime, p.name))
                handin = Handin(item.name, ordered[-1], workbook)
                handin.others = tuple(ordered[:-1])
                found.append(handin)
        elif item.suffix == ".ipynb":
            found.append(Handin(item.stem, item, None))
    return found


def course_name(path):
    """The course notebook a hand-in is a copy of, matched by its two-digit prefix to helpers.course.COURSE
    ('04_masking-Copy1.ipynb', '04_masking_alice' -> '04_masking'), else the file's own name."""
    from helpers.course import COURSE

    stem = Path(path).stem
    for name, _, _ in COURSE:
        if stem[:2].isdigit() and stem[:2] == name[:2] and not stem[2:3].isdigit():
            return Path(name).stem
    return stem


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def _files(folder):
    return {p.relative_to(folder) for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()


def run_handin(student, notebook, workbook, notebook_time=NOTEBOOK_TIME, cell_time=CELL_TIME, others=()):
    """Run one hand-in; returns {"student", "notebook", "problems": [...], "checks": {id: (correct, mistake)}}.

    notebook None: a student folder without notebooks (problem no_notebooks). others: the student's other
    copies of the same course notebook, not run (problem duplicate_notebook, their names in "not_run").
    Never raises: what went wrong is a problem key in ``problems`` (unreadable, timed_out, cell_timeout,
    cell_error, printed_too_much, deleted_files, run_failed, ...: the instructors' guide lists them).
    """
    result = _run_handin(student, notebook, workbook, notebook_time, cell_time)
    if others:
        result["problems"].append("duplicate_notebook")
        result["not_run"] = [Path(p).name for p in others]
    return result


def _run_handin(student, notebook, workbook, notebook_time, cell_time):
    import nbformat
    from helpers.checkers.solutions import workbook_source

    if notebook is None:
        return {"student": student, "notebook": "", "problems": ["no_notebooks"], "checks": {}}
    result = {"student": student, "notebook": course_name(notebook), "problems": [], "checks": {}}
    try:
        if not isinstance(nbformat.read(notebook, as_version=4).cells, list):
            raise ValueError("no cells")
    except Exception:
        result["problems"].append("unreadable")
        return result
    if workbook is not None:
        try:                                      # compiled, not run: a syntax error named on the row
            compile(Path(workbook).read_bytes(), "workbook.py", "exec")
        except (SyntaxError, ValueError):
            result["problems"].append("workbook_import_error")
    # the working folder sits alone in a temporary parent of its own: a write by "../name" lands in the parent
    work = Path(tempfile.mkdtemp(prefix="class_report_work_")) / "work"
    work.mkdir()
    records = Path(tempfile.mkdtemp(prefix="class_report_record_"))
    record, pid_file = records / "checks.jsonl", records / "kernel.pid"
    try:
        copy = work / notebook.name
        shutil.copyfile(notebook, copy)
        if workbook is not None:
            shutil.copyfile(workbook, work / "workbook.py")
        else:
            (work / "workbook.py").write_text(workbook_source())
        before = _files(work)
        command = [sys.executable, str(Path(__file__).resolve()), "--run-one", str(copy), "--record", str(record),
                   "--cell-time", str(cell_time), "--pid-file", str(pid_file), "--name", result["notebook"]]
        env = dict(os.environ)
        env.pop("MPLBACKEND", None)
        env.pop("JPY_SESSION_NAME", None)
        with open(records / "out.txt", "wb") as out:
            proc = subprocess.Popen(command, cwd=work, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=env, start_new_session=True)
            try:
                proc.wait(timeout=notebook_time)
            except subprocess.TimeoutExpired:
                result["problems"].append("timed_out")
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                proc.wait()
            else:
                if proc.returncode != 0 and "run_failed" not in result["problems"]:
                    result["problems"].append("run_failed")   # the runner itself was killed or died
        if pid_file.exists():
            try:
                _kill(int(pid_file.read_text()))   # the kernel runs in a session of its own: stop it too
            except ValueError:
                pass
        lost = before - _files(work)
        if lost:
            result["problems"].append("deleted_files")
        if any(p.name != "work" for p in work.parent.iterdir()):
            result["problems"].append("wrote_outside")
        diagnosed = {}
        if record.exists():
            for line in record.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if "id" in entry:
                    result["checks"][entry["id"]] = (bool(entry.get("correct")), entry.get("mistake"))
                    if "piece" in entry and entry["id"] not in diagnosed:   # the first call's options: the course's
                        diagnosed[entry["id"]] = {"piece": entry["piece"], "options": entry.get("options") or {}}
                elif entry.get("event") and entry["event"] not in result["problems"]:
                    result["problems"].append(entry["event"])
        if diagnosed:
            source = Path(workbook).read_bytes() if workbook is not None else workbook_source().encode()
            _grade_workbook_apart(source, records / "grade", cell_time, diagnosed, result)
    except Exception as exc:          # the report's own trouble with this hand-in: said on its row
        result["problems"].append(f"report_failed ({type(exc).__name__})")
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
        shutil.rmtree(records, ignore_errors=True)
    return result


def _grade_workbook_apart(source, folder, seconds, diagnosed, result):
    """The diagnose columns from the hand-in's workbook.py itself (``source``), graded in a process of its own
    in ``folder``: a diagnose call in a cell on another function, or a forged record, does not count.
    diagnosed: {id: {"piece", "options"}} of the run's counted diagnose calls; each id's verdict becomes
    diagnose(workbook's function of that piece, piece, **options). A workbook that cannot be imported, a
    piece it lacks, or a grading past ``seconds`` (problem workbook_grading_timed_out) leaves the kernel's."""
    folder.mkdir()
    (folder / "workbook.py").write_bytes(source)
    (folder / "jobs.json").write_text(json.dumps(diagnosed), encoding="utf-8")
    command = [sys.executable, str(Path(__file__).resolve()), "--grade-workbook", str(folder / "workbook.py"),
               "--record", str(folder / "jobs.json")]
    proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        result["problems"].append("workbook_grading_timed_out")
        return
    try:
        grades = json.loads((folder / "grades.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        grades = {}
    for exercise in diagnosed:
        verdict = grades.get(exercise) if isinstance(grades, dict) else None
        if isinstance(verdict, list) and len(verdict) == 2:
            result["checks"][exercise] = (bool(verdict[0]), None if verdict[1] is None else str(verdict[1]))


def grade_one(path, jobs):
    """Inside the subprocess: diagnose each job of the file ``jobs`` ({id: {"piece", "options"}}) on the function
    of the workbook ``path``; writes {id: [correct, mistake]} to grades.json beside it (nothing when it cannot
    be imported, no entry for a piece it lacks)."""
    import importlib.util

    from helpers.exercises import diagnose
    from helpers.checkers.solutions import function_name

    found = {}
    try:
        spec = importlib.util.spec_from_file_location("workbook", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for exercise, job in json.loads(Path(jobs).read_text(encoding="utf-8")).items():
            fn = getattr(module, function_name(job["piece"]), None)
            if callable(fn):
                verdict = diagnose(fn, job["piece"], **job["options"])
                found[exercise] = [bool(verdict.correct), None if verdict.mistake is None else str(verdict.mistake)]
    except BaseException:            # a syntax error, an import that fails, even sys.exit(): the kernel's verdicts stay
        pass
    Path(path).with_name("grades.json").write_text(json.dumps(found), encoding="utf-8")


def run_all(handins, notebook_time=NOTEBOOK_TIME, cell_time=CELL_TIME, jobs=1):
    """Run every (student, notebook, workbook) of ``handins``, ``jobs`` side by side; the results in their order."""
    from concurrent.futures import ThreadPoolExecutor

    def one(handin):
        student, notebook, workbook = handin
        started = time.monotonic()
        result = run_handin(student, notebook, workbook, notebook_time, cell_time, getattr(handin, "others", ()))
        if notebook is not None:
            print(f"ran {student}/{notebook.name} in {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, handins))


def verdict(check):
    """(status, mistake) of one recorded check, or of None (never checked)."""
    if check is None:
        return "not_checked", ""
    correct, mistake = check
    if correct:
        return "correct", ""
    if mistake == "not_attempted":
        return "not_attempted", ""
    return "wrong", mistake or "different"


def rows(results):
    """One row (student, notebook, exercise, status, mistake) per student and exercise; a hand-in that
    could not be run (unreadable, timed out) with no check gets one row with an empty exercise."""
    exercises = collections.defaultdict(set)
    for r in results:
        exercises[r["notebook"]] |= set(r["checks"])
    out = []
    for r in results:
        if not r["checks"] and r["problems"]:
            out.append((r["student"], r["notebook"], "", r["problems"][0], ""))
        for exercise in sorted(exercises[r["notebook"]]):
            out.append((r["student"], r["notebook"], exercise, *verdict(r["checks"].get(exercise))))
    return out


def tally(table):
    """{exercise: {"counts": Counter of status, "mistakes": Counter of key}}; "a+b" counts for a and for b."""
    found = collections.defaultdict(lambda: {"counts": collections.Counter(), "mistakes": collections.Counter()})
    for _, _, exercise, status, mistake in table:
        if not exercise:
            continue
        found[exercise]["counts"][status] += 1
        if mistake:
            found[exercise]["mistakes"].update(mistake.split("+"))
    return dict(found)


def _problem_text(result):
    """What went wrong with one hand-in, as its row says it: 'notebook: key, key (detail)'."""
    keys = [key + (f" (not run: {', '.join(result['not_run'])})" if key == "duplicate_notebook" and
                   result.get("not_run") else "") for key in result["problems"]]
    return f"{result['notebook']}: {', '.join(keys)}" if result["notebook"] else ", ".join(keys)


def report(results):
    """The printed report: one line per exercise, then one row per student (their notebooks added up)."""
    table = rows(results)
    lines = [f"Class report: {len({r['student'] for r in results})} students, {len(results)} hand-ins", ""]
    width = max([len(e) for e in tally(table)] + [8])
    lines.append(f"{'exercise':<{width}}  correct  wrong  not attempted  not checked  mistakes (how many)")
    for exercise, found in sorted(tally(table).items()):
        c = found["counts"]
        mistakes = ", ".join(f"{key} {n}" for key, n in found["mistakes"].most_common()) or "-"
        lines.append(f"{exercise:<{width}}  {c['correct']:7d}  {c['wrong']:5d}  {c['not_attempted']:13d}  "
                     f"{c['not_checked']:11d}  {mistakes}")
    common = [(e, f["mistakes"].most_common(1)[0]) for e, f in sorted(tally(table).items()) if f["mistakes"]]
    if common:
        lines += ["", "Most common mistake per exercise:"]
        lines += [f"  {e}: {key} ({n} of {sum(tally(table)[e]['counts'].values())})" for e, (key, n) in common]
    lines += ["", f"{'student':<16} notebooks  correct  wrong  not attempted  not checked  problems"]
    for student in sorted({r["student"] for r in results}):
        handed = [r for r in results if r["student"] == student]
        c = collections.Counter(row[3] for row in table if row[0] == student and row[2])
        problems = "; ".join(_problem_text(r) for r in handed if r["problems"])
        notebooks = sum(1 for r in handed if r["notebook"])
        lines.append(f"{student:<16} {notebooks:9d}  {c['correct']:7d}  {c['wrong']:5d}  "
                     f"{c['not_attempted']:13d}  {c['not_checked']:11d}  {problems or '-'}")
    return "\n".join(lines)


def write_csv(results, path):
    """The rows of :func:`rows` in a CSV file, each with a last column: its hand-in's problems, joined by ";"."""
    problems = {(r["student"], r["notebook"]): ";".join(r["problems"]) for r in results}
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "notebook", "exercise", "status", "mistake", "problems"])
        writer.writerows((*row, problems.get(row[:2], "")) for row in rows(results))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--csv", help="write one row per student and exercise to this file")
    parser.add_argument("--notebook-time", type=float, default=NOTEBOOK_TIME, help="seconds per notebook")
    parser.add_argument("--cell-time", type=float, default=CELL_TIME, help="seconds per cell")
    parser.add_argument("--jobs", type=int, default=1, help="hand-ins run side by side (default 1)")
    parser.add_argument("--run-one", help=argparse.SUPPRESS)
    parser.add_argument("--record", help=argparse.SUPPRESS)
    parser.add_argument("--pid-file", help=argparse.SUPPRESS)
    parser.add_argument("--name", help=argparse.SUPPRESS)
    parser.add_argument("--grade-workbook", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.grade_workbook:
        grade_one(args.grade_workbook, args.record)
        return None
    if args.run_one:
        run_one(args.run_one, args.record, args.cell_time, args.pid_file, args.name)
        return None
    if not args.folder or not Path(args.folder).is_dir():
        parser.error(f"FOLDER must be a folder of hand-ins; got {args.folder!r}")
    for name in ("notebook_time", "cell_time"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name.replace('_', '-')} must be a positive number of seconds; got {getattr(args, name)}")
    if args.jobs < 1:
        parser.error(f"--jobs must be a whole number of at least 1; got {args.jobs}")
    results = run_all(find_handins(args.folder), args.notebook_time, args.cell_time, args.jobs)
    print(report(results))
    if args.csv:
        write_csv(results, args.csv)
    return results


if __name__ == "__main__":
    main()
