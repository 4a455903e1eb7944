"""What every function checker shares: calling a learner's function safely, reading its signature, the verdict.

``call`` runs the learner's function on fresh copies of one input, in a
background thread, with a soft time limit, with what it prints kept out of
sight, and notes any input it changed in place. It never raises, whatever
the function does (even SystemExit). ``parameter`` reads the function's
signature, so a mask argument called ``attn_mask`` is passed as such.
``not_attempted``, ``too_slow`` and ``low_precision`` are verdicts every
piece gives the same way; ``side_by_side`` shows the learner's output
beside the expected one, with as many digits as it takes to see them differ.

Used by the checker modules (checker_*.py) and diagnose.py; it imports
only feedback.py and static.py (the build cells' page marker) of helpers.exercises, solutions.py of this package (and the course map,
helpers.course, for where each piece is built).
"""

from __future__ import annotations

import contextlib
import inspect
import io
import itertools
import threading
import time
import types
import warnings
from dataclasses import dataclass

import numpy as np

from helpers.course import BUILT_IN
from helpers.exercises.feedback import READ_LIMIT, Feedback, _lazy_kind, _read
from helpers.exercises.static import BuildCell

__all__ = ["Diagnosis", "TIME_LIMIT", "RTOL", "ATOL"]

TIME_LIMIT = 2.0
"""Seconds ``diagnose`` waits for one call of the learner's function (soft: see the diagnose module's docstring)."""
BUDGET_CALLS = 5
"""One ``diagnose`` waits for the learner's function at most this many times ``time_limit`` in all (10 s with the
default 2 s): a function a little under the limit on each of a battery's 14 calls would otherwise take half a
minute. Past the budget ``diagnose`` stops calling and says ``too_slow``, with the time per call."""

_deadline = [None, None]
"""When the running diagnose's budget ends (time.monotonic()) and how many seconds it holds, or None outside
diagnose (no budget)."""


@contextlib.contextmanager
def budget(seconds):
    """Calls made inside (by :func:`call`) wait for the learner's function ``seconds`` in all, then no more; nested
    budgets keep the outer one's end when it comes first."""
    outer = list(_deadline)
    end = time.monotonic() + seconds
    if outer[0] is None or end < outer[0]:
        _deadline[:] = [end, seconds]
    try:
        yield
    finally:
        _deadline[:] = outer


_returned = [None]
"""While :func:`returns_noted` runs: the list of (fn, how it returned its output) of every call whose function gave
a generator, map, iterator or list (:attr:`Run.given_as`)."""


@contextlib.contextmanager
def returns_noted():
    """Collect, for the calls made inside, how each function gave its output when it was not an array
    (``(fn, given_as)`` pairs, in a list yielded to the caller)."""
    outer, seen = _returned[0], []
    _returned[0] = seen
    try:
        yield seen
    finally:
        _returned[0] = outer
RTOL, ATOL = 1e-4, 1e-6
"""How close an output must be to count as the same: loose enough for float32 arithmetic,
far tighter than any difference a mistake makes on the battery (tests/test_diagnose.py checks that)."""
LOW_RTOL, LOW_ATOL = 1e-2, 1e-3
"""How close an output computed in float16 comes: its unit roundoff is 2**-11, about 4.9e-4, and a few
operations (exp, a sum, a division) multiply that by a small factor (tests/test_checkers.py checks a
float16 function lands inside and every named mistake outside)."""


@dataclass(frozen=True)
class Diagnosis(BuildCell, Feedback):
    """The verdict of :func:`~helpers.checkers.diagnose`: a :class:`~helpers.exercises.Feedback` shown as its text.

    correct, mistake, text: as for every checker; ``mistake`` joins the keys
    of the faults found with "+" (e.g. "no_scaling+wrong_axis").
    case: the name of the first input on which the function went wrong
    (None when it is right).
    piece: the piece of the course that was checked ("attention", "softmax", ...).
    Shown as its text, with the build cells' page marker (static.BuildCell).
    """

    case: str | None = None
    piece: str = "attention"

    def _repr_pretty_(self, printer, cycle):
        printer.text(self.text)

    def solution(self):
        """A worked version of the piece (a :class:`~helpers.exercises.Reveal`, folded until clicked)."""
        from helpers.checkers.solutions import solution
        return solution(self.piece)


# --------------------------------------------------------------------------
# Calling the learner's function
# --------------------------------------------------------------------------

@dataclass
class Run:
    """What one call of the learner's function did."""

    case: object
    finished: bool = True
    error: BaseException | None = None
    value: object = None
    out: np.ndarray | None = None       # the output read as an array, or None
    problem: str | None = None          # why the output could not be read
    weights: np.ndarray | None = None
    printed: bool = False
    mutated: tuple = ()
    seconds: float = 0.0                # how long the call took (or was waited for)
    over_budget: bool = False           # stopped, or never made, because diagnose's whole budget was spent
    given_as: str | None = None         # "a generator", "a map(...)", "a list" ...: how a non-array output came


def _unrolled(fn, value):
    """(value, how it was given) for what ``fn`` returned: a generator, map, zip, range or other iterator is read
    into the list it yields (at most READ_LIMIT items; the learner's code runs while it is read, so this runs in the
    call's thread), and a generator function (one that uses yield) that yields one value gives that value. A list
    at the top (of numbers or rows, as .tolist() gives) is named too; anything else: (value, None)."""
    kind = _lazy_kind(value)
    if kind is None:
        holds_arrays = isinstance(value, list) and any(isinstance(v, (np.ndarray, tuple)) for v in value)
        return value, ("a list" if type(value) is list and value and not holds_arrays else None)
    items = list(itertools.islice(value, READ_LIMIT + 1))
    if len(items) > READ_LIMIT:
        raise _Endless(kind)
    if inspect.isgeneratorfunction(fn) or inspect.isgeneratorfunction(getattr(fn, "__call__", None)):
        kind = "yield"
        if len(items) == 1:
            return items[0], kind
    return Yielded(items), kind


class Yielded(list):
    """The items a generator, map or iterator gave, read into a list: never taken for an (output, weights) pair,
    as a generator of two rows would be."""


class _Endless(Exception):
    """What a function returned yields more than READ_LIMIT items: it may never end."""


NOT_THE_ARGUMENT = ("scale", "drop", "temp", "bias", "causal", "axis", "dim", "eps", "head", "d_k")
"""Parts of a parameter's name that say it is not the argument ``parameter(..., default_none=True)`` looks for."""


def parameter(fn, names, position, default_none=False, default_int=False):
    """How to pass an argument that learners call by one of ``names``: ("keyword", name), ("position", i),
    or None when the signature has no place for it. A signature that cannot be read gives ("keyword", names[0]).
    default_none: a parameter of any name at ``position`` whose default is None is that argument too
    (``def attention(Q, K, V, m=None)``: the mask), unless its name says it is something else (scale=None,
    dropout=None: :data:`NOT_THE_ARGUMENT`).
    default_int: a parameter of any name at ``position`` whose default is a whole number (not a bool) is that
    argument too (``def softmax(z, ax=-1)``: the axis, read by its place and its default, whatever its name)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return ("keyword", names[0])
    for p in params:
        if p.name in names and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return ("keyword", p.name)
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    there = positional[position] if len(positional) > position else None
    if there is not None and (any(word in there.name.lower() for word in names[:1])
                              or default_none and there.default is None
                              and not any(w in there.name.lower() for w in NOT_THE_ARGUMENT)
                              or default_int and isinstance(there.default, (int, np.integer))
                              and not isinstance(there.default, (bool, np.bool_))):
        return ("position", position)
    if any(p.kind == p.VAR_KEYWORD for p in params):
        return ("keyword", names[0])
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return ("position", position)
    return None


def read_numbers(value, pair=False):
    """(output, weights, problem) for what the function returned; ``pair``: an (output, weights) pair is allowed,
    and a longer tuple whose first entry is an array is read as its output first (``(output, weights, scores)``;
    the weights of such a tuple are not read: None)."""
    weights = None
    if isinstance(value, Yielded):                  # rows given one by one, not a tuple of results
        pair = False
    if pair and isinstance(value, tuple) and len(value) > 2 and isinstance(value[0], np.ndarray):
        value = value[0]
    elif pair and (isinstance(value, tuple) and len(value) == 2 or (
            isinstance(value, list) and len(value) == 2 and isinstance(value[0], np.ndarray))):
        value, weights = value
        weights, _ = _read(weights)
    out, problem = _read(value)
    if value is None:
        return None, weights, "returned None."
    if problem is not None:
        return None, weights, "returned something that is not an array of numbers. " + problem.text
    return out, weights, None


def call(fn, case, args, kwargs, time_limit, read=read_numbers):
    """Run ``fn(*args, **kwargs)`` on fresh copies, in a thread, waiting at most ``time_limit`` seconds.

    args: a list of (name, array); kwargs: a dict name -> array. The names are
    the ones a verdict uses when the function changes that input in place.
    read: value -> (output, weights, problem).
    """
    fresh_args = [(name, np.array(a) if isinstance(a, np.ndarray) else a) for name, a in args]
    fresh_kwargs = {k: np.array(a) if isinstance(a, np.ndarray) else a for k, a in kwargs.items()}
    box = {}

    def target():
        try:
            with np.errstate(all="ignore"):
                box["value"], box["given_as"] = _unrolled(fn, fn(*[a for _, a in fresh_args], **fresh_kwargs))
        except _Endless as endless:
            box["endless"] = endless.args[0]
        except BaseException as exc:       # SystemExit and KeyboardInterrupt too: report, never raise
            box["error"] = exc

    run = Run(case)
    wait = time_limit
    if _deadline[0] is not None:
        wait = min(time_limit, _deadline[0] - time.monotonic())
        if wait <= 0:                      # diagnose's whole budget is spent: no more calls
            run.finished, run.over_budget = False, True
            return run
    printed = io.StringIO()
    thread = threading.Thread(target=target, name="diagnose", daemon=True)
    started = time.monotonic()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        thread.start()
        thread.join(wait)
    run.seconds = time.monotonic() - started
    run.printed = bool(printed.getvalue())
    if thread.is_alive():
        run.finished, run.over_budget = False, wait < time_limit
        return run
    run.error = box.get("error")
    if run.error is not None:
        return run
    run.given_as = box.get("given_as") or box.get("endless")
    if run.given_as is not None and _returned[0] is not None:
        _returned[0].append((fn, run.given_as))
    if "endless" in box:
        run.problem = (f"returned {box['endless']} that did not end within {READ_LIMIT:,} items (it may never end). "
                       "Return an array: np.array(...).")
        return run
    before = list(args) + list(kwargs.items())
    after = [a for _, a in fresh_args] + list(fresh_kwargs.values())
    run.mutated = tuple(name for (name, b), a in zip(before, after)
                        if isinstance(b, np.ndarray) and not same_array(b, a))
    run.value = box.get("value")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run.out, run.weights, run.problem = read(run.value)
    return run


def same_array(a, b):
    try:
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    except Exception:
        return False


def matches(out, expected, care=None, rtol=RTOL, atol=ATOL):
    """Whether ``out`` is ``expected`` to the tolerance, rows (last axis) outside ``care`` aside;
    where ``expected`` is not finite, ``out`` must not be finite either."""
    if out is None or out.shape != expected.shape:
        return False
    finite = np.isfinite(expected)
    with np.errstate(all="ignore"):
        close = np.isclose(out, expected, rtol=rtol, atol=atol)
    same = np.where(finite, close, ~np.isfinite(out))
    if care is None:
        return bool(same.all())
    return bool(np.all(same.all(axis=-1) | ~care))


def functions_called(fn, named):
    """The functions ``fn`` names in its code for which ``named(their __name__)`` is true, other than fn itself:
    a global (``attention``), a module's attribute (``workbook.attention``) or a function it closes over.
    Empty when its code is unreadable.

    (multi_head_attention's checker asks this of the attention it calls, tiled_attention's of its
    online_softmax_update, to tell a fault of the called piece from one of the caller.)"""
    code, names_space = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if not isinstance(code, types.CodeType) or not isinstance(names_space, dict):
        return []
    names, codes = set(), [code]
    while codes:                                    # nested functions and comprehensions too
        c = codes.pop()
        names |= set(c.co_names)
        codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    found = []
    for name in sorted(names):
        obj = names_space.get(name)
        objs = [obj]
        if isinstance(obj, types.ModuleType):
            objs = [vars(obj).get(attr) for attr in sorted(names)]
        found += [f for f in objs if isinstance(f, types.FunctionType) and f is not fn and f not in found
                  and named(f.__name__)]
    for cell in getattr(fn, "__closure__", None) or ():     # a function it closes over
        try:
            f = cell.cell_contents
        except ValueError:                          # an empty cell
            continue
        if isinstance(f, types.FunctionType) and f is not fn and f not in found and named(f.__name__):
            found.append(f)
    return found


# --------------------------------------------------------------------------
# Words every piece shares
# --------------------------------------------------------------------------

def safe_str(x):
    try:
        text = str(x)
    except BaseException:
        text = "(a message that could not be shown)"
    return text if len(text) <= 200 else text[:200] + " ..."


def fn_name(fn, default="Your function"):
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) and name.isidentifier() else default    # a lambda has none


def _digits(a, b):
    """The fewest decimals (3 to 12) at which ``a`` and ``b`` print differently (3 when they never do)."""
    for p in range(3, 13):
        if np.array2string(a, precision=p, separator=" ") != np.array2string(b, precision=p, separator=" "):
            return p
    return 3


def fmt_pair(yours, expected):
    """Both arrays printed with the same number of decimals, enough to show where they differ."""
    yours, expected = np.asarray(yours), np.asarray(expected)
    if yours.dtype.kind in "biu" and expected.dtype.kind in "biu":
        return np.array2string(yours, separator=" "), np.array2string(expected, separator=" ")
    p = _digits(yours, expected) if yours.shape == expected.shape else 3
    return tuple(np.array2string(np.asarray(a, dtype=float), precision=p, suppress_small=p == 3, separator=" ")
                 for a in (yours, expected))


def side_by_side(yours, expected, left="yours", right="expected"):
    """A small text table: the learner's array on the left, the expected one on the right."""
    a, b = fmt_pair(yours, expected)
    a_lines, b_lines = a.splitlines(), b.splitlines()
    width = max(len(left), *(len(line) for line in a_lines))
    rows = [f"  {left:<{width}}   {right}"]
    for i in range(max(len(a_lines), len(b_lines))):
        la = a_lines[i] if i < len(a_lines) else ""
        lb = b_lines[i] if i < len(b_lines) else ""
        rows.append(f"  {la:<{width}}   {lb}")
    return "\n".join(rows)


def _unwritten_callee(runs, piece):
    """The other workbook piece whose stub raised, when the learner's function calls one, e.g. 'softmax'; or None.

    A workbook stub raises NotImplementedError("<piece>: not written yet") (solutions.workbook_source)."""
    names = set()
    for run in runs:
        head, sep, rest = str(run.error).partition(": ")
        if sep and rest == "not written yet" and head.isidentifier() and head != piece:
            names.add(head)
    return names.pop() if len(names) == 1 else None


def not_attempted(fn, runs, piece):
    """The verdict for a stub of the workbook: every call raised NotImplementedError. None otherwise.

    When the NotImplementedError comes from another piece's stub that the function calls (attention calling
    an unwritten softmax), the verdict says so, names that piece and the notebook that builds it
    (helpers.course.BUILT_IN); the key stays ``not_attempted``."""
    if runs and all(isinstance(run.error, NotImplementedError) for run in runs):
        name = fn_name(fn, piece)
        callee = _unwritten_callee(runs, piece)
        if callee is not None:
            where = BUILT_IN.get(callee, "an earlier Build it section")
            return Diagnosis(False, "not_attempted",
                             f"Not attempted yet: {name} calls {callee}, which is not written yet. {callee} is built "
                             f"in {where}: build it there first, save workbook.py, and run this cell again.",
                             None, piece)
        return Diagnosis(False, "not_attempted",
                         f"Not attempted yet: {name} still raises NotImplementedError. Write its body in "
                         "workbook.py (replace the raise line), save the file, and run this cell again.",
                         None, piece)
    return None


def too_slow(fn, runs, piece):
    """The verdict when a call did not finish within the time limit, or diagnose's whole budget
    (:data:`BUDGET_CALLS` times the time limit) ran out. None otherwise."""
    slow = next((run for run in runs if not run.finished), None)
    if slow is None:
        return None
    if slow.over_budget:
        done = [run for run in runs if run.finished]
        each = sum(run.seconds for run in done) / len(done) if done else slow.seconds
        still = (" The call diagnose stopped waiting for keeps running in the background (Python cannot stop it): "
                 "restart the kernel if the notebook slows down." if slow.seconds > 0 else "")
        total = f" ({_deadline[1]:.2g} s here)" if _deadline[1] is not None else ""
        return Diagnosis(False, "too_slow",
                         f"{fn_name(fn)} takes about {each:.2g} s per call, and one diagnose waits at most "
                         f"{BUDGET_CALLS} times the time limit in all{total}, so it stopped after {len(done)} "
                         f"inputs, on {slow.case.words}. A right answer on inputs this small takes well under a "
                         "millisecond a call: look for a loop that runs far more often than it needs to, or a "
                         f"time.sleep.{still}", slow.case.name, piece)
    return Diagnosis(False, "too_slow",
                     f"{fn_name(fn)} did not finish within the time limit on {slow.case.words}. A right answer on "
                     "inputs this small takes well under a millisecond: look for a loop that never ends. "
                     "diagnose stopped waiting, but Python cannot stop the call itself: it keeps running in "
                     "the background, so restart the kernel if the notebook slows down.", slow.case.name, piece)


def given_as_words(fn, how, piece=None):
    """The sentence that says how ``fn`` gave its output when it was not an array (:attr:`Run.given_as`): the same
    in every piece (but the online step's, whose output is three arrays)."""
    course, fix = "an array", "return np.array(...)"
    if piece == "online_softmax_update":
        course, fix = "a tuple of three arrays", "return new_max, new_sum, new_acc"
    if how == "yield":
        return (f"{fn_name(fn)} is a generator function (it uses yield), so calling it gives a generator, not its "
                f"output; the course's returns {course}: write return where you wrote yield.")
    if how == "a list":
        return (f"Your function returns a list; the course's returns {course}, which the later cells compute with: "
                f"{fix} (or leave out .tolist()).")
    return (f"Your function returns {how}; the course's returns {course}: {fix}"
            + (" of it (np.array(list(...)))" if piece != "online_softmax_update" else "")
            + f". {how[0].upper() + how[1:]} gives its items only once, and the later cells compute with the output.")


def mutation_words(runs, order):
    """(sentence, names) for inputs the function changed in place, or ("", [])."""
    mutated = sorted({m for run in runs for m in run.mutated}, key=lambda m: order.index(m) if m in order else 99)
    if not mutated:
        return "", []
    first, more = mutated[0], len(mutated) > 1
    return (f"it changes its input{'s' if more else ''} {', '.join(mutated[:-1]) + ' and ' if more else ''}"
            f"{mutated[-1]} in place ({first} /= ..., "
            f"{first}[...] = ... or np.exp({first}, out={first}) write into the caller's array{'s' if more else ''}; "
            f"so does a name for it, m = {first}; m[...] = ...): make a new array instead, {first} = {first} / ... "
            f"or np.where(..., {first}, ...)."), mutated


LOW_PRECISION = ("{name} agrees with the expected output only to about three significant digits, as arithmetic in "
                 "float16 does (numpy PR #29298). Compute in float64, numpy's default (or float32): drop the "
                 ".astype(np.float16) or dtype=np.float16.")


def failed(run, name, returns):
    """(key, text) when the call raised, exited or returned None; None otherwise. returns: what it should return."""
    if isinstance(run.error, SystemExit):
        return "exit", f"{name} stops the program (exit() or sys.exit()). Return {returns} instead."
    if run.error is not None:
        return "raised", f"{name} raised an error. Read the message below, and try your function on this input yourself."
    if run.value is None and run.given_as is None:     # (an endless iterator has no value: given_as says what it was)
        return "returned_none", f"{name} returns nothing (None). End it with return {returns}."
    return None


def raised_words(run, name):
    """What to say about a call that raised, exited, or returned no numbers."""
    if isinstance(run.error, SystemExit):
        return "It called exit() (SystemExit), which would stop a script."
    if run.error is not None:
        return f"It raised {type(run.error).__name__}: {safe_str(run.error)}"
    return "It " + run.problem
