"""tools/class_report.py on hand-ins: the two sample hand-ins of tools/make_sample_handins.py (right counts,
keys and CSV), small hand-ins whose last check counts, and hostile ones (unreadable, a loop that never ends,
a cell that raises, a megabyte printed, files deleted) and odd ones (two copies of one notebook, an empty
folder, a workbook that does not compile, a forged diagnose, a write by ../): each reported on its row,
nothing lost, nothing outside the temporary folders touched, and the time limits kept. Short time limits
keep this quick."""

import csv
import hashlib
import importlib.util
import os
import re
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


def load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


report = load("class_report")
samples = load("make_sample_handins")


def digest(folder):
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def ours():
    """The report's temporary folders now in the temporary folder (the test's own, set by ``runs``)."""
    return {p.name for p in Path(tempfile.gettempdir()).glob("class_report_*")}


# --------------------------------------------------------------------------
# The sample hand-ins (the instructors' guide's example uses the same script)
# --------------------------------------------------------------------------

#: carol's notebook time limit (s): her run must stop within 10 s of it.
SLOW_LIMIT = 45


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every hand-in of this module run once, side by side, each with its own time limits: the two samples,
    the hostile ones, and one that never ends (its kernel's pid in a file of the test's)."""
    top = tmp_path_factory.mktemp("report")
    sample_folder, hostile_folder, slow_folder = top / "samples", top / "hostile", top / "slow"
    odd_folder = top / "odd"
    samples.make(sample_folder, notebooks=["07_limits"])
    make_hostile(hostile_folder)
    make_odd(odd_folder)
    outside, pid_file = top / "outside.txt", top / "kernel.pid"
    outside.write_text("the instructor's file")
    handin(slow_folder, "carol", [
        f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))",
        "import time\nwhile True:\n    try:\n        time.sleep(0.05)\n    except KeyboardInterrupt:\n        pass",
    ])
    folders = (sample_folder, hostile_folder, slow_folder, odd_folder)
    private = top / "tmp"                  # the report's temporary folders go here, apart from other runs'
    private.mkdir()
    tempdir, tempfile.tempdir = tempfile.tempdir, str(private)
    before, temporary = [digest(f) for f in folders], ours()
    # carol's loop ignores the interrupt; her cell limit is longer than her notebook's, which must stop her
    # carol's notebook limit leaves her first cell (the pid) time to run on a loaded machine: all these hand-ins
    # run at once on the machine's cores, and a kernel's start and the course's imports took over 20 s in CI.
    limits = {sample_folder: (120, 60), hostile_folder: (120, 5), slow_folder: (SLOW_LIMIT, 120),
              odd_folder: (120, 60)}
    jobs = [(h, *limits[f]) for f in folders for h in report.find_handins(f)]
    folder_of = [f for f in folders for _ in report.find_handins(f)]

    def timed(handin, notebook_time, cell_time):
        started = time.monotonic()
        return report.run_handin(*handin, notebook_time, cell_time, handin.others), time.monotonic() - started

    try:
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            done = list(pool.map(lambda job: timed(*job), jobs))
        assert ours() == temporary == set(), "the report left temporary folders behind"
    finally:
        tempfile.tempdir = tempdir
    assert [digest(f) for f in folders] == before, "the report changed a hand-in"
    assert outside.read_text() == "the instructor's file"
    assert not (private / "escape_of_gina.txt").exists()
    by_folder = {f: [run for run, g in zip(done, folder_of) if g == f] for f in folders}
    return {"samples": [r for r, _ in by_folder[sample_folder]],
            "hostile": {r["student"]: r for r, _ in by_folder[hostile_folder]},
            "slow": (by_folder[slow_folder][0], pid_file),
            "odd": {r["student"]: r for r, _ in by_folder[odd_folder]}}


@pytest.fixture(scope="module")
def sample_results(runs):
    return runs["samples"]


@pytest.fixture(scope="module")
def hostile(runs):
    return runs["hostile"]


def checkers_of(notebook):
    """The names the course notebook gives the checkers it checks (read from its source, not from the report)."""
    nb = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    return {m for c in nb.cells if c.cell_type == "code" for m in re.findall(r"^(\w+)\.check\(answer\)", c.source, re.M)}


def test_the_right_sample_is_right_everywhere_and_the_wrong_one_names_a_mistake_everywhere(sample_results):
    results = sample_results
    by_student = {r["student"]: r for r in results}
    expected = {f"07_limits:{name}" for name in checkers_of("07_limits")}
    assert len(expected) == 4            # ex_norm, ex_stack (issue 33), ex_hull, ex_layout
    right, wrong = by_student["sample_right"], by_student["sample_wrong"]
    built = "07_limits:diagnose:layer_norm"      # 07's build cell: the wrong sample's variance divides by d_model - 1
    assert set(right["checks"]) == set(wrong["checks"]) == expected | {built}
    assert wrong["checks"][built] == (False, "unbiased_variance")
    assert all(correct for correct, _ in right["checks"].values()), right
    for correct, mistake in wrong["checks"].values():
        # the script gives each choice exercise its first wrong option: a named key or chose_<option>
        assert not correct and mistake not in (None, "different", "not_attempted", "not_a_choice"), mistake
    assert right["problems"] == wrong["problems"] == []


def test_the_table_counts_and_the_csv_rows(sample_results, tmp_path):
    results = sample_results
    text = report.report(results)
    students = [line.split() for line in text.splitlines() if line.startswith("sample_")]
    assert students == [["sample_right", "1", "5", "0", "0", "0", "-"], ["sample_wrong", "1", "0", "5", "0", "0", "-"]]
    for exercise in checkers_of("07_limits"):
        line = next(line for line in text.splitlines() if line.startswith(f"07_limits:{exercise} "))
        assert line.split()[1:5] == ["1", "1", "0", "0"], line     # correct, wrong, not attempted, not checked
    path = tmp_path / "grades.csv"
    report.write_csv(results, path)
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["student", "notebook", "exercise", "status", "mistake", "problems"]
    wrong = {r["student"]: r for r in results}["sample_wrong"]["checks"]
    assert sorted(map(tuple, rows[1:])) == sorted(
        [("sample_right", "07_limits", e, "correct", "", "") for e in wrong]
        + [("sample_wrong", "07_limits", e, "wrong", m, "") for e, (_, m) in wrong.items()])


def test_the_guides_example_shows_what_the_report_prints_for_these_hand_ins(sample_results):
    # INSTRUCTORS.md's example ran on 04_masking and 07_limits; its 07 lines must be what 07 gives now
    guide = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    example = guide.split("<!-- class report example: begin -->", 1)[1].split("<!-- class report example: end -->")[0]
    printed = report.report(sample_results).splitlines()
    for name in checkers_of("07_limits"):
        mine = [" ".join(line.split()) for line in printed if f"07_limits:{name}" in line]
        shown = [" ".join(line.split()) for line in example.splitlines() if f"07_limits:{name}" in line]
        assert mine and mine == shown, (mine, shown)


def test_the_sample_notebooks_stay_copies_of_the_course_with_only_the_answers_filled(tmp_path):
    samples.make(tmp_path, notebooks=["04_masking"])
    course = nbformat.read(ROOT / "notebooks" / "04_masking.ipynb", as_version=4)
    handed = nbformat.read(tmp_path / "sample_wrong" / "04_masking.ipynb", as_version=4)
    assert handed.cells[0].id == "sample-answer" and len(handed.cells) == len(course.cells) + 1
    changed = [c.id for a, c in zip(course.cells, handed.cells[1:]) if a.source != c.source]
    assert changed == ["ex-sums-try", "ex-fill-try"]
    workbook = (tmp_path / "sample_wrong" / "workbook.py").read_text()
    assert "no student's work" in workbook and "k=-1" in workbook


# --------------------------------------------------------------------------
# Small hand-ins: the last check counts; hostile ones are reported and the rest goes on
# --------------------------------------------------------------------------

SETUP = ("import os\nimport numpy as np\nimport workbook\nfrom helpers.exercises import exercise, diagnose\n"
         "ex = exercise('Square a.', inputs={'a': 3.0}, answer=lambda a: a * a,\n"
         "              mistakes={'doubled': ('You doubled it.', lambda a: 2 * a)})\n"
         "ex_other = exercise('Cube a.', inputs={'a': 3.0}, answer=lambda a: a ** 3)")
WORKBOOK = ("import numpy as np\n\ndef causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool), k=-1)\n")
# right without a mask, and it ignores the mask it is given: wrong under diagnose's default inputs, right with
# masks=False, batches=False (notebook 01's options)
MASKLESS_ATTENTION = ("\ndef attention(Q, K, V, mask=None):\n"
                      "    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])\n"
                      "    w = np.exp(s - s.max(axis=-1, keepdims=True))\n"
                      "    w = w / w.sum(axis=-1, keepdims=True)\n"
                      "    return w @ V, w\n")


def handin(folder, student, cells, workbook=None):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    (folder / student).mkdir(parents=True)
    nbformat.write(nb, folder / student / "01_river_bank.ipynb")
    if workbook:
        (folder / student / "workbook.py").write_text(workbook)


def make_hostile(folder):
    handin(folder, "alice", [
        SETUP,
        "ex.check(6.0)",                                            # doubled ...
        "ex.check(9.0)",                                            # ... then right: the last check counts
        "ex_other.check(...)",                                      # not attempted
        "def right(n):\n    return np.tril(np.ones((n, n), dtype=bool))\ndiagnose(right, piece='causal_mask')",
        "diagnose(workbook.causal_mask, piece='causal_mask')",      # the last call per piece counts
        "raise RuntimeError('a bug of the student')",
        "print('x' * 1_100_000)",                                   # a megabyte printed
        "import os\nfor name in os.listdir('.'):\n    os.remove(name)",  # deletes its working folder's files
        "diagnose(workbook.causal_mask, piece='padding_mask')",     # the rest goes on
    ], WORKBOOK)
    handin(folder, "bob", [SETUP, "while True:\n    pass", "ex.check(9.0)"])
    handin(folder, "kim", [SETUP, "ex.check(9.0)",                  # kills the report's runner of her notebook
                           "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"])
    (folder / "dave.ipynb").write_bytes(b"\x00\xffnot a notebook")
    (folder / ".ipynb_checkpoints").mkdir()                         # JupyterLab's copies: no student
    (folder / ".ipynb_checkpoints" / "x-checkpoint.ipynb").write_text("{}")


def test_the_last_check_of_each_exercise_counts(hostile):
    checks = hostile["alice"]["checks"]
    assert checks["01_river_bank:ex"] == (True, None)
    assert checks["01_river_bank:ex_other"] == (False, "not_attempted")
    # the stored workbook hides the diagonal (checker_masks names it diagonal_masked), diagnosed last
    assert checks["01_river_bank:diagnose:causal_mask"] == (False, "diagonal_masked")


def test_a_raising_cell_a_megabyte_and_deleted_files_are_reported_and_the_rest_goes_on(hostile):
    alice = hostile["alice"]
    assert {"cell_error", "printed_too_much", "deleted_files"} <= set(alice["problems"]), alice["problems"]
    assert alice["checks"]["01_river_bank:diagnose:padding_mask"][0] is False   # the cell after them all ran


def test_a_cell_that_never_ends_is_stopped_and_the_next_cells_run(hostile):
    bob = hostile["bob"]
    assert "cell_timeout" in bob["problems"]
    assert bob["checks"]["01_river_bank:ex"] == (True, None)


def test_an_unreadable_notebook_is_reported_on_its_row(hostile):
    dave = hostile["dave"]
    assert set(hostile) == {"alice", "bob", "dave", "kim"}
    row = next(line for line in report.report(list(hostile.values())).splitlines() if line.startswith("dave "))
    assert row.split()[1:] == ["1", "0", "0", "0", "0", "dave:", "unreadable"]   # no course name: no exercises known
    assert dave["problems"] == ["unreadable"] and dave["checks"] == {}
    rows = report.rows(list(hostile.values()))
    assert ("dave", "dave", "", "unreadable", "") in rows
    assert ("bob", "01_river_bank", "01_river_bank:ex_other", "not_checked", "") in rows   # bob never checked it


def test_the_csv_repeats_each_hand_ins_problems_on_its_rows(hostile, tmp_path):
    report.write_csv(list(hostile.values()), tmp_path / "grades.csv")
    with open(tmp_path / "grades.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    alice = [r for r in rows if r["student"] == "alice"]
    assert alice and all({"cell_error", "printed_too_much", "deleted_files"} <= set(r["problems"].split(";"))
                         for r in alice)
    assert all("cell_timeout" in r["problems"].split(";") for r in rows if r["student"] == "bob")


def test_a_notebook_over_its_time_limit_is_stopped_with_its_kernel(runs):
    (carol, seconds), pid_file = runs["slow"]
    assert "timed_out" in carol["problems"] and seconds < SLOW_LIMIT + 10
    pid = int(pid_file.read_text())
    for _ in range(50):                       # SIGKILL is sent; the process may take a moment to go
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the kernel {pid} is still running")


def test_a_key_joined_with_plus_counts_for_each_part():
    table = [("a", "nb", "nb:ex", "wrong", "no_scaling+wrong_axis"), ("b", "nb", "nb:ex", "wrong", "wrong_axis"),
             ("c", "nb", "nb:ex", "correct", "")]
    found = report.tally(table)["nb:ex"]
    assert found["mistakes"] == {"wrong_axis": 2, "no_scaling": 1}
    assert found["counts"] == {"wrong": 2, "correct": 1}


# --------------------------------------------------------------------------
# Odd hand-ins: two copies of one notebook, an empty folder, a broken workbook, forged and escaping cells
# --------------------------------------------------------------------------

def make_odd(folder):
    handin(folder, "erin", [SETUP, "ex.check(6.0)"])                # an older copy, made by JupyterLab's Duplicate
    (folder / "erin" / "01_river_bank.ipynb").rename(folder / "erin" / "01_river_bank-Copy1.ipynb")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP), nbformat.v4.new_code_cell("ex.check(9.0)"),
                nbformat.v4.new_code_cell("open('inside.txt', 'w').write('x')\nos.mkdir('sub')\n"
                                          "open('sub/../sub/deeper.txt', 'w').write('x')")]   # writes that stay inside
    nbformat.write(nb, folder / "erin" / ("01_river_bank_erin" + ".ipynb"))    # renamed by the student, modified last
    os.utime(folder / "erin" / "01_river_bank-Copy1.ipynb", (1_000_000_000, 1_000_000_000))
    (folder / "frank").mkdir()                                     # handed in nothing
    handin(folder, "gina", [
        "from helpers.exercises import diagnose\nfrom helpers.exercises import solutions",
        "diagnose(solutions.causal_mask, piece='causal_mask')",     # the course's function, not her workbook's
        "open('inside.txt', 'w').write('x')\nopen('../escape_of_gina.txt', 'w').write('x')",
        "import workbook",
    ], "def causal_mask(n:\n    return n\n")                      # a syntax error
    handin(folder, "ivan", [SETUP, "diagnose(workbook.causal_mask, piece='causal_mask')",
                            "diagnose(workbook.attention)",
                            "from helpers.exercises import solutions\n"
                            "diagnose(solutions.causal_mask, piece='causal_mask')",     # a forgery: not counted
                            "diagnose(workbook.attention, masks=False, batches=False)",   # fewer inputs: not counted
                            "from helpers.exercises import run_with_your_attention\n"      # as 11's faulty example
                            "run_with_your_attention(workbook.attention)\n"               # counted
                            "run_with_your_attention(lambda Q, K, V, mask=None: solutions.attention(Q, K, V, mask))"],
           WORKBOOK + MASKLESS_ATTENTION)


def test_a_renamed_copy_is_named_by_the_course_notebook_and_two_copies_count_once(runs):
    erin = runs["odd"]["erin"]
    assert erin["notebook"] == "01_river_bank"
    assert erin["checks"] == {"01_river_bank:ex": (True, None)}    # the copy modified last ran, under the course id
    assert "duplicate_notebook" in erin["problems"] and erin["not_run"] == ["01_river_bank-Copy1.ipynb"]
    assert report.course_name("04_masking-Copy1.ipynb") == "04_masking" == report.course_name("04_masking_alice")
    assert report.course_name("notes.ipynb") == "notes" and report.course_name("041_x.ipynb") == "041_x"
    row = next(line for line in report.report(list(runs["odd"].values())).splitlines() if line.startswith("erin "))
    assert "duplicate_notebook (not run: 01_river_bank-Copy1.ipynb)" in row


def test_an_empty_student_folder_gets_a_row(runs):
    frank = runs["odd"]["frank"]
    assert frank["problems"] == ["no_notebooks"] and frank["checks"] == {}
    row = next(line for line in report.report(list(runs["odd"].values())).splitlines() if line.startswith("frank "))
    assert row.split()[1:] == ["0", "0", "0", "0", "0", "no_notebooks"]
    assert ("frank", "", "", "no_notebooks", "") in report.rows(list(runs["odd"].values()))


def test_a_diagnose_column_is_the_handed_in_workbooks_graded_apart_whatever_function_a_cell_diagnosed(runs):
    ivan = runs["odd"]["ivan"]
    # a later cell diagnosed the course's own causal_mask; his workbook's hides the diagonal, and that counts
    assert ivan["checks"]["01_river_bank:diagnose:causal_mask"] == (False, "diagonal_masked")
    # his last call diagnosed his attention with fewer inputs; the first call's options are the bar
    correct, mistake = ivan["checks"]["01_river_bank:diagnose:attention"]
    assert not correct and mistake == "mask_ignored", mistake
    assert ivan["problems"] == []
    # his workbook's attention, judged by the finale, counts; a cell's lambda after it (the course's
    # solution inside) does not
    assert ivan["checks"]["01_river_bank:run_with_your_attention"] == (False, "mask_ignored")


def test_a_broken_workbook_and_a_write_outside_are_named_and_a_non_workbook_diagnose_is_not_counted(runs):
    gina, erin = runs["odd"]["gina"], runs["odd"]["erin"]
    assert {"workbook_import_error", "cell_error", "wrote_outside"} <= set(gina["problems"])
    assert "01_river_bank:diagnose:causal_mask" not in gina["checks"]   # the course's function: not counted
    assert erin["problems"] == ["duplicate_notebook"]              # her relative writes inside stay unreported


def test_a_notebook_that_kills_its_runner_is_reported_run_failed(hostile):
    # her kernel's parent is the subprocess running her notebook: killed, it exits by a signal, not cleanly
    assert "run_failed" in hostile["kim"]["problems"]
    assert hostile["kim"]["checks"]["01_river_bank:ex"] == (True, None)   # what was recorded before still counts
