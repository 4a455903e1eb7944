"""Exercises that answer on the static page: the data a check stores, and the form the export draws from it.

In a Jupyter kernel, ``ex.check(answer)`` shows one output of two forms
(:func:`show`): ``text/plain``, exactly the feedback it prints elsewhere (so
JupyterLab, which does not know the second form, shows what it always
showed), and :data:`MIME`, the exercise's data (:func:`exercise_data`). The
site's export (tools/export_html.py) adds ``text/html`` beside them
(:func:`add_exercise_html`): the printed feedback, then a form built by a
small script (exercise.js, inlined once per page) that answers a typed
answer as the kernel would, with no kernel. A page whose scripts are
stripped shows the printed feedback only.

The data of a numeric exercise: ``name`` (the notebook's name for it,
:func:`name_in`), ``kind`` "numeric", ``expected`` (nested lists), ``atol``
(a number or nested lists: the checker's own tolerance, used as
``_NumericExercise._close`` uses it), ``masked_fill`` (a typed value at or
below it matches an expected -inf), ``correct`` (the kernel's text for the
expected value), ``mistakes`` (one ``{"key", "value", "text"}`` per named
mistake these inputs tell apart, the text the kernel gives for that value),
``rounded`` ([k, text] for each k of decimals the kernel's ``_rounded_to`` tries, in its order: an answer
of the expected shape whose every entry is rounded to k decimals and within 0.5 * 10^-k + 1e-9 of the
expected one gets that text, after the named mistakes) and ``hint`` (the first hint). Of a choice: ``options`` ([key, text] in the
order shown), ``answer`` (the right key), ``feedback`` (key -> the kernel's
text for it) and ``hint``. Every float is rounded to at most 9 decimals and
12 significant digits, never below the units (a count stays exact), so the
data is the same on every machine (a matrix product's last bits differ
between BLAS kernels; 9 decimals is far below any checker's tolerance, 5e-4
at the finest); -inf, inf and nan are stored as the strings "-inf", "inf"
and "nan".

An exercise the page cannot answer stores ``{"name", "kind",
"needs_kernel": why}`` instead: one whose class sets ``static_needs_kernel`` (the
sentence why: ``KeyDesignExercise``, whose answer is a matrix with many
right answers), one of any class but the numeric and choice ones, and, in a student
edition, every exercise whose worked solution is withheld
(helpers/edition.py): the page must not hand out the answers its kernel
keeps to itself.

Imports of the exercises package only feedback.py (base.py imports this
module): an exercise is told by what it holds (``_variants`` and ``expected``: numeric;
``OPTIONS`` and ``answer``: choice).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import numpy as np

from helpers.edition import solutions_withheld
from helpers.exercises.feedback import MASKED_FILL, NOT_ATTEMPTED

__all__ = ["MIME", "BUILD_MIME", "BuildCell", "name_in", "exercise_data", "show", "add_exercise_html",
           "exercise_html", "build_html", "script"]

MIME = "application/vnd.course.exercise+json"
"""The MIME type of an exercise's stored data (unknown to JupyterLab, which then shows the text)."""
BUILD_MIME = "application/vnd.course.build+json"
"""The MIME type that marks a build cell's verdict (diagnose, run_with_your_attention, check_your_block):
``{"kind": "build", "piece": ...}``; the page says that your own function runs only in a kernel."""
BUILD_LINE = ("On this page no function can be run: a kernel stored this verdict. To check your own function "
              "from workbook.py, open the course with <code>make lab</code> and run this cell.")

DECIMALS = 9
SIGNIFICANT = 12
SCRIPT = Path(__file__).with_name("exercise.js")
WITHHELD = "in this edition of the course the answers stay in the kernel, as the worked solutions do."
OTHER = "its answer is judged by rules only the kernel runs."


def name_in(namespace, obj):
    """The name the notebook gives ``obj``: the first, sorted, of the names not starting with "_" bound to it
    in ``namespace`` (a dict); the name of its type when none is (the class report's rule for ids)."""
    names = sorted(k for k, v in list(namespace.items()) if v is obj and not str(k).startswith("_"))
    return names[0] if names else type(obj).__name__


def _number(x):
    x = float(x)
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if x == 0:
        return 0.0
    places = max(0, min(DECIMALS, SIGNIFICANT - 1 - math.floor(math.log10(abs(x)))))   # whole numbers stay whole
    return round(x, places) + 0.0          # + 0.0: no "-0.0"


def stored(value):
    """``value`` (a number or an array) as nested lists of rounded floats (see the module's docstring)."""
    arr = np.asarray(value, dtype=float)
    if arr.ndim == 0:
        return _number(arr)
    return [stored(item) for item in arr]


def _kind(ex):
    if hasattr(ex, "_variants") and hasattr(ex, "expected") and hasattr(ex, "_close"):
        return "numeric"
    if hasattr(ex, "OPTIONS") and hasattr(ex, "answer"):
        return "choice"
    return "other"


def exercise_data(ex, name, withheld=None):
    """The data the static page answers ``ex`` from (a dict of JSON values; see the module's docstring).

    name: the notebook's name for ``ex``. withheld: whether the edition withholds its solutions (default:
    helpers.edition.solutions_withheld()). Never raises: an exercise whose data cannot be computed stores
    needs_kernel with the reason.
    """
    kind = _kind(ex)
    data = {"name": str(name), "kind": kind}
    why = getattr(ex, "static_needs_kernel", None)
    if why is None and kind == "other":
        why = OTHER
    if why is None and (solutions_withheld() if withheld is None else withheld):
        why = WITHHELD
    if why is not None:
        return {**data, "needs_kernel": why}
    try:
        hint = str(getattr(ex, "hint_text", ""))
        if kind == "choice":
            return {**data, "options": [[k, v] for k, v in ex.OPTIONS.items()], "answer": ex.answer,
                    "feedback": {k: ex.feedback(k).text for k in ex.OPTIONS}, "hint": hint}
        expected = np.asarray(ex.expected, dtype=float)
        atol = np.asarray(ex.atol, dtype=float)
        mistakes = [{"key": key, "value": stored(value), "text": ex.feedback(np.asarray(value, dtype=float)).text}
                    for key, _, value in ex._variants]       # told apart and merged by _set_variants already
        rounded = [[int(k), str(ex.rounded_text(k))] for k in getattr(ex, "rounded_places", ())]
        return {**data, "expected": stored(expected), "atol": stored(atol), "masked_fill": MASKED_FILL,
                "correct": ex.feedback(expected).text, "mistakes": mistakes, "rounded": rounded, "hint": hint}
    except Exception as exc:          # never: a checker's data is computed from its own inputs
        return {**data, "needs_kernel": f"its data could not be stored ({type(exc).__name__})."}


class BuildCell:
    """What the verdicts of the build cells share (runner.Diagnosis, finale.ModelVerdict, finale.BlockVerdict):
    the :data:`BUILD_MIME` marker, beside the text each shows by its own ``_repr_pretty_`` (IPython keeps that
    text/plain and adds the bundle's keys; the method stays on each dataclass, whose generated __repr__ would
    win over a base class's), so that the site's export can say, under the text, that the page cannot run
    your function. ``build_piece``: the piece the marker names (a ``piece`` field wins)."""

    build_piece = "attention"

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {BUILD_MIME: {"kind": "build", "piece": str(getattr(self, "piece", self.build_piece))}}


def _in_kernel():
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except Exception:
        return None
    return shell if type(shell).__name__ == "ZMQInteractiveShell" else None


def show(ex, text):
    """Show the feedback ``text`` of a check of ``ex``: in a Jupyter kernel one output holding the text and
    the exercise's data (:data:`MIME`), elsewhere (a script, pytest) printed."""
    shell = _in_kernel()
    if shell is None:
        print(text)
        return
    try:
        from IPython.display import display
        display({"text/plain": text, MIME: exercise_data(ex, name_in(shell.user_ns, ex))}, raw=True)
    except Exception:                   # a check never raises: the text alone, as before
        print(text)


# --------------------------------------------------------------------------
# The export: the form beside the data
# --------------------------------------------------------------------------

def script():
    """The page's script (exercise.js), as text."""
    return SCRIPT.read_text(encoding="utf-8")


STYLE = """<style>
pre.course-exercise-printed { font-family: var(--jp-code-font-family, monospace); font-size: var(--jp-code-font-size, 13px);
  white-space: pre-wrap; margin: 0; padding: 0; background: none; border: none; color: var(--jp-content-font-color1, #222); }
.course-exercise { margin: 6px 0 10px; color: var(--jp-content-font-color1, #222); }
.course-exercise input[type=text], .course-exercise textarea { font-family: var(--jp-code-font-family, monospace);
  width: 40ch; max-width: 100%; color: inherit; background: var(--jp-layout-color0, #fff);
  border: 1px solid var(--jp-border-color1, #888); padding: 3px; vertical-align: top; }
.course-exercise fieldset { border: 1px solid var(--jp-border-color2, #ccc); margin: 0 0 6px; color: inherit; }
.course-exercise button { margin-left: 6px; padding: 3px 12px; vertical-align: top; }
.course-exercise [data-feedback]:not(:empty) { white-space: pre-wrap; margin-top: 6px; padding-left: 8px;
  border-left: 3px solid var(--jp-brand-color1, #1976d2); }
.course-exercise-note { color: var(--jp-content-font-color2, #555); font-style: italic; }
</style>"""


def exercise_html(text, data, stem, with_script=False):
    """The ``text/html`` of one check's output: ``text`` as printed, then the form (or the needs-kernel line).

    The form is built by the script from the JSON it holds, so without scripts only the text shows.
    ``with_script``: inline exercise.js (and the style) after it, once per page."""
    ident = f"{stem}:{data.get('name', '')}"
    mark = " data-not-attempted" if str(text).strip() == NOT_ATTEMPTED and "needs_kernel" not in data else ""
    parts = [f'<pre class="course-exercise-printed"{mark}>{html.escape(str(text))}</pre>']
    if "needs_kernel" in data:
        parts.append(f'<p class="course-exercise-note" data-exercise="{html.escape(ident)}" data-needs-kernel>'
                     f'On this page the exercise cannot be checked: {html.escape(str(data["needs_kernel"]))} '
                     f'Open the course with <code>make lab</code> and run its cell.</p>')
    else:
        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
        parts.append(f'<div class="course-exercise" data-exercise="{html.escape(ident)}">'
                     f'<script type="application/json">{payload}</script></div>')
    if with_script:
        parts.append(STYLE + "\n<script>\n" + script() + "\n</script>")
    return "\n".join(parts)


def build_html(text, data):
    """The ``text/html`` of a build cell's verdict (``data``: its :data:`BUILD_MIME` marker): ``text`` as
    printed, then the line saying that the page cannot run your function."""
    piece = html.escape(str(data.get("piece", "")) if isinstance(data, dict) else "")
    return (f'<pre class="course-exercise-printed">{html.escape(str(text))}</pre>\n'
            f'<p class="course-exercise-note" data-build="{piece}" style="font-style: italic">{BUILD_LINE}</p>')


def _text(data):
    text = data.get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def add_exercise_html(nb, stem):
    """Add ``text/html`` beside each exercise's stored data, and beside each build cell's marker, in the
    notebook ``nb`` (changed in place; returned).

    stem: the notebook's file stem, the first part of each exercise's id ("04_masking:ex_sums"). The script
    goes into the last exercise's output only, so it runs once, after every form of the page is parsed."""
    outputs = [out for cell in nb.cells for out in cell.get("outputs", [])]
    found = [out for out in outputs if MIME in out.get("data", {})]
    for i, out in enumerate(found):
        data = out["data"]
        data["text/html"] = exercise_html(_text(data), data[MIME], stem, with_script=i == len(found) - 1)
    for out in outputs:
        data = out.get("data", {})
        if BUILD_MIME in data and MIME not in data:
            data["text/html"] = build_html(_text(data), data[BUILD_MIME])
    return nb
