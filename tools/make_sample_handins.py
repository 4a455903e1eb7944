"""Two sample hand-ins made from the course notebooks, one right and one wrong, for the class report.

Usage: .venv/bin/python tools/make_sample_handins.py DEST [--notebooks 04_masking 07_limits]

Writes DEST/sample_right/ and DEST/sample_wrong/, each with a copy of the
named course notebooks (default: 04_masking and 07_limits) and a
workbook.py, as two students would hand them in. No student wrote them and
no student data is stored: this script fills the answers in, from the
checkers themselves. Every exercise cell's ``answer = ...`` becomes
``answer = sample_answer(ex, right=...)``, a function a first cell defines:
the right answer runs the exercise's worked solution (which the course
writes as code to paste over that line); the wrong one is the first named
mistake the checker tells apart (for a choice, the first wrong option; an
exercise with many right answers is left not attempted). The right
workbook holds the worked version of every piece; the wrong one three
faults (``causal_mask`` hides the diagonal: ``diagonal_masked``;
``padding_mask`` hides pads as queries: ``query_axis``; ``attention``
masks after the softmax: ``mask_after_softmax``; ``softmax`` skips the
maximum: ``no_max_subtraction``; ``layer_norm`` divides its variance by
d_model - 1: ``unbiased_variance``) and leaves the other pieces stubs.
The instructors' guide's example report and tests/test_class_report.py use them.
"""

from __future__ import annotations

import argparse
import inspect
import re
from pathlib import Path

import nbformat

from helpers.checkers.solutions import WORKED, workbook_source

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ("04_masking", "07_limits")

SAMPLE_ANSWER = '''# Filled in by tools/make_sample_handins.py: a sample hand-in, no student's work.
def sample_answer(ex, right):
    """The right answer to ``ex`` (its worked solution, run here), or a wrong one (its first named mistake)."""
    from IPython import get_ipython
    if right:
        scope = dict(get_ipython().user_ns)
        exec(ex.solution_text, scope)
        return scope["answer"]
    variants = getattr(ex, "_variants", None)
    if variants:
        return variants[0][2]
    options = getattr(ex, "OPTIONS", None)
    if options:
        return next(key for key in [*getattr(ex, "named", {}), *options] if key != ex.answer)
    return ...'''

FAULTS = '''

# ---- Filled in by tools/make_sample_handins.py: a sample hand-in with known faults, no student's work ----

def softmax(x, axis=-1):
    e = np.exp(x)                                   # no maximum subtracted: overflows at [1000, 1001]
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)   # hides the diagonal too


def padding_mask(is_real):
    return np.asarray(is_real, dtype=bool)[:, :, None]  # hides pads as queries, not as keys


def attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)          # the mask after the softmax
    return weights @ V, weights


def layer_norm(x, gamma, beta, eps=1e-12):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps) * gamma + beta   # ddof=1: d_model - 1
'''

TRY = re.compile(r"^answer\s*=\s*\.\.\.[^\n]*$", re.M)
CHECKER = re.compile(r"^(\w+)\.check\(answer\)", re.M)


def fill(nb, right):
    """The notebook with each exercise cell's ``answer = ...`` filled in, and the defining cell first."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        checker = CHECKER.search(cell.source)
        if checker and TRY.search(cell.source):
            line = f"answer = sample_answer({checker.group(1)}, right={right})   # filled in by the script"
            cell.source = TRY.sub(line, cell.source, count=1)
    first = nbformat.v4.new_code_cell(SAMPLE_ANSWER)
    first.id = "sample-answer"
    nb.cells.insert(0, first)
    return nb


def make(dest, notebooks=NOTEBOOKS):
    """Write the two sample hand-ins into ``dest``; returns {student: folder}."""
    dest = Path(dest)
    right_workbook = workbook_source() + "\n\n# ---- Filled in by tools/make_sample_handins.py: the worked pieces ----\n" + \
        "\n\n".join("\n" + inspect.getsource(fn) for fn in WORKED.values())
    folders = {}
    for student, right, workbook in (("sample_right", True, right_workbook),
                                     ("sample_wrong", False, workbook_source() + FAULTS)):
        folder = dest / student
        folder.mkdir(parents=True, exist_ok=True)
        for name in notebooks:
            name = Path(name).stem
            source = ROOT / "notebooks" / f"{name}.ipynb"
            if not source.is_file():
                raise ValueError(f"notebooks must name course notebooks; got {name!r}")
            nbformat.write(fill(nbformat.read(source, as_version=4), right), folder / source.name)
        (folder / "workbook.py").write_text(workbook)
        folders[student] = folder
    return folders


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dest")
    parser.add_argument("--notebooks", nargs="+", default=list(NOTEBOOKS))
    args = parser.parse_args(argv)
    for student, folder in make(args.dest, args.notebooks).items():
        print(f"{student}: {folder}")


if __name__ == "__main__":
    main()
