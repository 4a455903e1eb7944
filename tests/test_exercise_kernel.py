"""In a fresh kernel, each mistake typed into an exercise cell gets feedback naming it.

For each notebook, every case of exercise_cases.CASES is typed into a copy of
its exercise cell (the ``answer = ...`` line replaced by the learner's code),
the copies are appended to the notebook, and the whole notebook runs top to
bottom in a fresh kernel, as a learner's would. The printed feedback of each
copy must name the case's mistake. (Appended at the end, so no case changes a
name that a later cell of the notebook reads.) And with every solution pasted
over its `answer = ...` line, a fresh kernel runs the notebook top to bottom
and every exercise says "Correct!".
"""

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

from exercise_cases import CASES, PHRASES, answer_cell, run_in_process
from helpers.course import NOTEBOOKS_DIR

#: How long one cell may run before the kernel is taken as hung. Not a timing test: this whole test
#: runs notebook 11 in about 15 s on a quiet 2-core machine, but its cell that switches off each of
#: the 72 heads once took over 60 s there with the suite on two workers beside other work.
CELL_TIMEOUT = 300


def shown_feedback(cell):
    """What a cell printed and the text of what it displayed: a check in a kernel displays its feedback as text
    beside the exercise's data for the static page (helpers/exercises/static.py)."""
    return "".join(out.get("text", "") if out.get("name") == "stdout" else
                   (out.get("data", {}).get("text/plain", "") + "\n" if out.output_type == "display_data" else "")
                   for out in cell.outputs)


@pytest.mark.parametrize("notebook", sorted(CASES))
def test_mistakes_typed_into_exercise_cells_are_named_in_a_fresh_kernel(notebook):
    nb = nbformat.read(NOTEBOOKS_DIR / notebook, as_version=4)
    typed = []
    for exercise, cases in CASES[notebook].items():
        cell = next(c for c in nb.cells if c.cell_type == "code" and f"{exercise}.check(answer)" in c.source)
        first, *rest = cell.source.splitlines()
        assert first.startswith("answer = ..."), f"{exercise}: the exercise cell must start as `answer = ...`"
        for key, code, *extra in cases:
            new = new_code_cell("\n".join([code, *rest]))
            nb.cells.append(new)
            typed.append((exercise, key, code, extra, new))
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(NOTEBOOKS_DIR)}}).execute()
    for exercise, key, code, extra, cell in typed:
        printed = shown_feedback(cell)
        for phrase in [PHRASES[key], *extra]:
            assert phrase in printed, f"{exercise} with {code!r}: expected {phrase!r}, got {printed!r}"


@pytest.mark.parametrize("notebook", sorted(CASES))
def test_every_solution_pasted_into_its_answer_cell_is_accepted_in_a_fresh_kernel(notebook):
    solutions = run_in_process(NOTEBOOKS_DIR / notebook)
    nb = nbformat.read(NOTEBOOKS_DIR / notebook, as_version=4)
    pasted = {}
    for exercise in CASES[notebook]:
        cell = answer_cell(nb, exercise)
        cell.source = "\n".join([solutions[exercise].solution().text, *cell.source.splitlines()[1:]])
        pasted[exercise] = cell
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(NOTEBOOKS_DIR)}}).execute()
    for exercise, cell in pasted.items():
        printed = shown_feedback(cell)
        assert printed.startswith("Correct!"), f"{exercise}: {printed!r}"
