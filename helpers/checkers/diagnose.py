"""Diagnose a learner's own function for one piece of the course: run it on small inputs and name what is wrong.

``diagnose(fn, piece="attention")`` runs the learner's function on the
piece's battery of inputs (helpers/checkers/battery.py), compares each
result with the course's own function, and returns the same kind of
feedback the exercise checkers return (``.correct``, ``.mistake``,
``.text``). When the function is wrong, the piece's checker looks for the
simplest explanation: a model of the computation with one named mistake
(or two together) that gives the same numbers on every input. The verdict
names the mistake, says how to fix it, names the first input where the
function went wrong and shows its output beside the expected one.

The pieces (:data:`PIECES`) and the modules that check them:

    attention      fn(Q, K, V, mask=None)   checker_attention.py
    softmax        fn(x, axis=-1)           checker_softmax.py
    causal_mask    fn(n)                    checker_masks.py
    padding_mask   fn(is_real)              checker_masks.py
    split_heads    fn(x, num_heads)         checker_heads.py
    merge_heads    fn(x)                    checker_heads.py
    multi_head_attention  fn(X, W_Q, W_K, W_V, W_O, num_heads, mask=None)   checker_heads.py
    positional_encoding   fn(n, d_model)    checker_positions.py
    softmax_backward      fn(weights, grad_weights)   checker_backward.py
    online_softmax_update  fn(running_max, running_sum, acc, scores, V_block)   checker_tiling.py
    tiled_attention        fn(Q, K, V, block_size)                               checker_tiling.py
    kv_cache_step          fn(cache_keys, cache_values, q, k, v) -> output       checker_tiling.py
    rope                   fn(x, positions=None)                                 checker_rope.py
    layer_norm             fn(x, gamma, beta, eps=1e-12)                         checker_layer_norm.py

A piece is added by writing its battery in battery.py, its checker module
(a ``check(fn, time_limit, **options)`` returning a Diagnosis; or a
``checker_numeric.Piece``, whose ``.check`` is one) and its
worked solution and workbook stub in solutions.py, then naming it here.

``diagnose`` never raises because of what the function does: it may raise
(even SystemExit), return None, text, the wrong shape or NaN, print, change
its inputs in place (each call gets fresh copies, and a change is reported),
or take too long. A stub of the workbook, which raises NotImplementedError,
is "not attempted yet". The time limit is soft: each call runs in a
background thread, and ``diagnose`` stops waiting for it after
``time_limit`` seconds (default :data:`TIME_LIMIT`, 2 s; a right answer on
these inputs takes well under a millisecond). One ``diagnose`` waits at
most :data:`~helpers.checkers.runner.BUDGET_CALLS` (5) times the time limit
in all, 10 s by default: past that it stops calling and says ``too_slow``
with the time per call. Python cannot stop a running call from outside, so
a function that never ends keeps running in the background until the
kernel is restarted; ``diagnose`` says so.

An output given as a generator, map, iterator or by a generator function
(``yield``) is read once, as the list it yields, and its numbers judged;
the verdict says how it was given, the same sentence in every piece. Right
numbers given so are ``not_an_array`` (the later cells compute with the
output, and a generator gives its items once); a right list stays Correct,
with a note.
"""

from __future__ import annotations

import dataclasses
import inspect
import numbers
import os
import sys

import numpy as np

from helpers.checkers import checker_attention, checker_masks, checker_softmax
from helpers.checkers import checker_backward, checker_heads, checker_positions, checker_tiling
from helpers.checkers import checker_layer_norm, checker_rope
from helpers.checkers.checker_attention import _SINGLE, BATTERY, FAULTS, RIGHT, _Model  # noqa: F401 (re-exported)
from helpers.checkers import runner
from helpers.checkers.runner import ATOL, RTOL, TIME_LIMIT, Diagnosis, fn_name, safe_str  # noqa: F401 (re-exported)

__all__ = ["diagnose", "Diagnosis", "BATTERY", "FAULTS", "TIME_LIMIT", "PIECES"]

PIECES = {
    "attention": (checker_attention.check, ("masks", "batches")),
    "softmax": (checker_softmax.check, ()),
    "causal_mask": (checker_masks.check_causal, ()),
    "padding_mask": (checker_masks.check_padding, ()),
    "split_heads": (checker_heads.SPLIT.check, ()),
    "merge_heads": (checker_heads.MERGE.check, ()),
    "multi_head_attention": (checker_heads.MULTI.check, ()),
    "positional_encoding": (checker_positions.PIECE.check, ()),
    "softmax_backward": (checker_backward.PIECE.check, ()),
    "online_softmax_update": (checker_tiling.check_online_step, ()),
    "tiled_attention": (checker_tiling.check_tiled, ()),
    "kv_cache_step": (checker_tiling.check_kv_step, ()),
    "rope": (checker_rope.PIECE.check, ()),
    "layer_norm": (checker_layer_norm.PIECE.check, ()),
}
"""Each piece diagnose knows: its checker and the options it takes besides time_limit."""


def diagnose(fn, piece="attention", *, time_limit=TIME_LIMIT, **options):
    """Run a learner's function for one piece of the course on its battery and say what, if anything, is wrong.

    fn: the learner's function. For ``piece="attention"`` (the default):
        ``fn(Q, K, V, mask=None)`` with Q (..., n_q, d_k), K (..., n_k, d_k),
        V (..., n_k, d_v) and a boolean mask (True = may attend) of shape
        (..., n_q, n_k), returning the output (..., n_q, d_v) or
        (output, weights); the mask may be called ``attn_mask`` (read from
        the signature), and it is left out on the unmasked inputs, so a
        function without one passes those. ``"softmax"``: ``fn(x, axis=-1)``,
        any shape, -inf entries allowed. ``"causal_mask"``: ``fn(n)`` ->
        (n, n) bool. ``"padding_mask"``: ``fn(is_real)`` with is_real (B, n_k)
        bool -> (B, 1, n_k) bool. ``"split_heads"``: ``fn(x, num_heads)``,
        x (..., n, d_model) -> (..., num_heads, n, d_k); ``"merge_heads"``:
        ``fn(x)``, its inverse; ``"multi_head_attention"``: ``fn(X, W_Q, W_K,
        W_V, W_O, num_heads, mask=None)`` -> (..., n, d_model) or (output,
        weights); ``"positional_encoding"``: ``fn(n, d_model)`` -> (n, d_model);
        ``"softmax_backward"``: ``fn(weights, grad_weights)`` -> grad_scores,
        the shape of weights (rows of a softmax over the last axis).
        ``"online_softmax_update"``, ``"tiled_attention"``,
        ``"kv_cache_step"``: see helpers/checkers/checker_tiling.py.
        ``"rope"``: ``fn(x, positions=None)``, x (..., n, d) with d even ->
        the rotated array, the shape of x (helpers/checkers/checker_rope.py).
        ``"layer_norm"``: ``fn(x, gamma, beta, eps=1e-12)``, x (..., d_model),
        gamma and beta (d_model,) -> the normalised x, its shape
        (helpers/checkers/checker_layer_norm.py).
    piece: one of :data:`PIECES`.
    options: for attention only, ``masks=False`` / ``batches=False`` leave
        out the masked inputs, or the batch, for a stage of the course before
        they are taught (``diagnose(fn, masks=False, batches=False)``).
    time_limit: seconds to wait for one call (soft: see the module docstring); the whole diagnose waits at
        most 5 times as long.

    Returns a :class:`Diagnosis` (a :class:`~helpers.exercises.Feedback`):
    ``.correct`` is True when every output is right (rtol 1e-4, atol 1e-6,
    against the course's function; masks exactly); otherwise ``.mistake`` is
    a misconception key (INSTRUCTORS.md lists them), one of the keys every
    piece shares (not_attempted, too_slow, mutates_inputs, low_precision,
    exit, raised, returned_none, not_numbers, not_an_array, nan_inf, wrong_shape;
    syntax_error, with no verdict, when the file that defines fn, such as
    workbook.py, no longer compiles), or
    "different" when the output is wrong in a way no named mistake explains;
    ``.text`` says how to fix it, on which input the function first went
    wrong, and shows its output beside the expected one.
    ``.solution()`` shows a worked version of the piece.

    Never raises because of ``fn``. Raises ValueError when ``piece`` is not
    a piece, an option is not one of the piece's, ``masks`` or ``batches``
    is not True/False, or ``time_limit`` is not a positive number.
    """
    if not isinstance(piece, str) or piece not in PIECES:
        raise ValueError(f"piece must be one of {', '.join(map(repr, PIECES))}; got {piece!r}")
    check, allowed = PIECES[piece]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        takes = f"takes only {', '.join(allowed)}" if allowed else "takes no options"
        raise ValueError(f"diagnose(piece={piece!r}) {takes} besides time_limit; got {', '.join(unknown)}")
    for arg, value in options.items():
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"{arg} must be True or False; got {value!r}")
    if (isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real)
            or not np.isfinite(float(time_limit)) or float(time_limit) <= 0):
        raise ValueError(f"time_limit must be a positive number of seconds; got {time_limit!r}")
    if not callable(fn):
        return Diagnosis(False, "not_a_function",
                         f"diagnose needs your function itself, and got {safe_str(type(fn).__name__)}. Write "
                         f"diagnose(my_{piece}): the name of the function, with no parentheses after it.",
                         None, piece)
    unsaved = _syntax_error(fn, piece)
    if unsaved is not None:
        return unsaved
    try:
        with runner.budget(runner.BUDGET_CALLS * float(time_limit)), runner.returns_noted() as given:
            verdict = check(fn, float(time_limit), **{k: bool(v) for k, v in options.items()})
        return _given_as(fn, verdict, given, piece)
    except KeyboardInterrupt:
        return Diagnosis(False, "interrupted", "diagnose was interrupted before it could finish (the stop button?). "
                         "If your function runs for long, look for a loop that never ends.", None, piece)
    except BaseException as exc:   # a fault of diagnose itself: still an answer, never a traceback
        return Diagnosis(False, "not_diagnosed",
                         f"diagnose could not finish ({safe_str(type(exc).__name__)}). Run your function on a "
                         "small input yourself and compare it with the course's own.", None, piece)


GIVEN_AS_KEY = "not_an_array"
"""The key of a function whose numbers are right but which gives them as a generator, map, iterator or a generator
function's yield (not Correct: the course's later cells compute with the output, and a generator gives its items
once). A right function returning a list is Correct, with the same kind of note."""


def _given_as(fn, verdict, given, piece):
    """The verdict, told how ``fn`` gave its output when it was not an array (``given``: runner.returns_noted's
    pairs): right numbers given lazily are ``not_an_array``; a list stays Correct with a note; a wrong function keeps
    its key, with the sentence on a line of its own."""
    how = next((h for f, h in given if f is fn and h != "a list"), None) or next(
        (h for f, h in given if f is fn), None)
    if how is None or verdict.mistake in ("not_attempted", "too_slow", "interrupted", "not_diagnosed"):
        return verdict
    said = runner.given_as_words(fn, how, piece)
    if verdict.correct and how != "a list":
        return dataclasses.replace(verdict, correct=False, mistake=GIVEN_AS_KEY, text=(
            f"{said}\nRead as the {'value' if how == 'yield' else 'list'} it yields, its numbers are right: "
            + verdict.text.replace("Correct! ", "", 1)))
    return dataclasses.replace(verdict, text=f"{verdict.text}\n({said})")


def _syntax_error(fn, piece):
    """The verdict ``syntax_error`` when the file that defines ``fn`` (workbook.py) no longer compiles; else None.

    After a save with a SyntaxError, autoreload prints a traceback and keeps the function of the previous save,
    so checking ``fn`` would judge code that is no longer in the file. Only a module's own .py file that exists
    is read (not a function of a notebook cell); anything else that goes wrong reading it gives None."""
    try:
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        path = getattr(module, "__file__", None) if getattr(module, "__name__", "__main__") != "__main__" else None
        if not isinstance(path, str) or not path.endswith(".py") or not os.path.isfile(path):
            return None
        source = inspect.getsourcefile(fn)
        if source is not None and os.path.realpath(source) != os.path.realpath(path):
            return None
        with open(path, "rb") as file:
            compile(file.read(), path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        name, line = os.path.basename(path), exc.lineno
        where = f" at line {line}" if isinstance(line, int) else ""
        shown = (exc.text or "").strip()
        return Diagnosis(False, "syntax_error",
                         f"{name} has a SyntaxError{where}"
                         + (f" ({safe_str(exc.msg)}: {safe_str(shown)})" if shown else f" ({safe_str(exc.msg)})")
                         + f". Fix it and save, then run this cell again. Until it compiles, the {fn_name(fn)} "
                         "the notebook holds is the one of your previous save, so diagnose does not check it.",
                         None, piece)
    except BaseException:   # an unreadable file, an odd fn: check the function as it is
        return None
    return None
