"""The checkers of notebook 08's pieces: one online-softmax step, tiled attention, one KV-cache decoding step.

``online_softmax_update``: ``fn(running_max, running_sum, acc, scores, V_block)``
-> ``(running_max, running_sum, acc)``, the signature and shapes of
helpers.tiling's (Milakov and Gimelshein 2018; Dao et al. 2022, FlashAttention,
section 3.1, Algorithm 1, with the accumulator kept unnormalised as in
FlashAttention-2, Dao 2023). ``tiled_attention``: ``fn(Q, K, V, block_size)``
-> the output of scaled_dot_product_attention, computed key block by key
block. ``kv_cache_step``: ``fn(cache_keys, cache_values, q, k, v)`` -> the
output (d_v,) of the new token: append its key k and value v to the cached
ones, then attend its query q over every cached key, itself included, scaled
by 1/sqrt(d_k) (Vaswani et al. 2017, section 3.2.1). The function returns
the output only and does not keep the cache: the caller appends k and v to
its own (t, d_k) and (t, d_v) arrays after each step (a tuple whose first
entry is the output, such as (output, weights), is read as that output).

Each mistake is a small function of the inputs: a model of the computation
with one part done the way a learner with that misconception does it
(:data:`FAULTS`; some have two common forms, both tried). The tiled models
run the same faulty step through the whole loop over key blocks. A checker
names the simplest model (one mistake, then two, joined with "+") that gives
what the function gave on every input of its battery
(helpers/checkers/battery.py). When a wrong tiled_attention calls an
online_softmax_update (``workbook.online_softmax_update``) that is wrong on
its own battery, the verdict first says the fault is in that step.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.checkers import fitted
from helpers.checkers.battery import KV_CACHE_STEP, ONLINE_SOFTMAX_UPDATE, TILED_ATTENTION
from helpers.exercises.feedback import _read
from helpers.checkers.runner import (
    ATOL, LOW_ATOL, LOW_PRECISION, LOW_RTOL, RTOL, Diagnosis, call, failed, fmt_pair, fn_name, functions_called,
    Yielded, mutation_words, not_attempted, parameter, raised_words, read_numbers, safe_str, side_by_side, too_slow,
)
from helpers.tiling import KVCache, online_softmax_update

__all__ = ["FAULTS", "STEP_KEYS", "TILED_KEYS", "KV_KEYS", "check_online_step", "check_tiled", "check_kv_step"]

FAULTS = {
    "acc_not_rescaled": "Your accumulator is not rescaled: when the running max rises from m to m', the old acc "
                        "was measured against m and must be multiplied by exp(m - m') before the block's "
                        "exp(s - m') @ V_block is added.",
    "sum_not_rescaled": "Your running sum is not rescaled: when the running max rises from m to m', multiply "
                        "the old running_sum by exp(m - m') before adding the block's sum of exp(s - m').",
    "old_max_kept": "You keep the old running max instead of moving it to max(m, the block's largest score), so "
                    "a later, larger score overflows exp (or the first block's exp(s - (-inf)) is inf). Update "
                    "it first: new_max = np.maximum(running_max, scores.max(axis=-1)), and measure both sums "
                    "against it.",
    "block_max_only": "You take the block's largest score alone as the new running max, forgetting the old one: "
                      "the running max must be the largest score seen so far, max(m, the block's largest score). "
                      "When a block's scores lie below an earlier block's, your exp(m - m') is above 1 and the "
                      "old totals grow (or overflow). Write new_max = np.maximum(running_max, scores.max(axis=-1)).",
    "rescale_inverted": "Your factor for the old totals is upside down: exp(m' - m) instead of exp(m - m'). When "
                        "the running max rises from m to m', the old running_sum and acc were measured against m "
                        "and must shrink: multiply them by exp(running_max - new_max), which is at most 1.",
    "normalised_per_block": "You divide the accumulator by the running sum at each block. Keep acc unnormalised "
                            "(the sum of exp(s - m) * value) and divide once, after the last block: "
                            "output = acc / running_sum[..., None]. (FlashAttention 1 keeps it normalised instead: "
                            "it weights the old output by its old sum at each block and does not divide again at "
                            "the end.)",
    "block_not_rescaled": "Your block's terms are measured against the block's own maximum and never brought to "
                          "the new running max: exp(s - max(s)) is added to totals measured against m' = max(m, "
                          "max(s)). When the block's maximum is below the running max, multiply its sum and its "
                          "exp(...) @ V_block by exp(max(s) - m') too, or simply take exp(s - m') with the new "
                          "max (Dao et al. 2022, Algorithm 1, multiplies by exp(m~ - m_new) for this).",
    "max_over_everything": "You take one maximum for the whole block of scores (scores.max() with no axis), not "
                           "each query row's own: the running max must have one entry per query. A row far below "
                           "the largest score (here rows near 0 beside rows near 1000) then gets exp(s - m) = 0 "
                           "everywhere, and 0 / 0 is NaN at the end. Take the maximum along the keys: "
                           "scores.max(axis=-1).",
    "neg_inf_nan": "Your step gives NaN for a query whose scores are all -inf so far (every key hidden): its "
                   "running max is -inf, and -inf - (-inf) is NaN. Subtract 0 there instead "
                   "(np.where(np.isneginf(new_max), 0.0, new_max)), so that row keeps max -inf, sum 0, acc 0.",
    "last_block_dropped": "Your loop drops the last block when n is not a multiple of block_size (range(n // "
                          "block_size) blocks, or a stop at n - block_size): the last keys are never read. Loop "
                          "over range(0, n, block_size) and slice K[..., start:start + block_size, :]: the last "
                          "slice is simply shorter.",
    "no_scaling": "You do not scale the scores. Divide Q @ K^T (or q . k) by sqrt(d_k), with d_k the width of "
                  "the keys (Vaswani et al. 2017, eq. 1).",
    "no_max_subtraction": "Your exp overflows on large scores: exp(1000) is inf, and inf / inf is NaN. Subtract "
                          "the (running) maximum before np.exp; it cancels in the division.",
    "batch_transpose": "Your function works on one sentence but not on a batch. The usual cause: K[start:stop] "
                       "slices the batch axis, and .T reverses every axis. Slice the keys along their own axis, "
                       "K[..., start:stop, :], and transpose only the last two: np.swapaxes(K_block, -1, -2).",
    "new_token_not_attended": "You attend before appending: the new token's own key and value are not among the "
                              "keys it attends to (and the first token has nothing to attend to). Append k and v "
                              "first, then attend q over all t + 1 keys: under a causal mask a token sees itself.",
    "keys_values_swapped": "You swap keys and values: the query must be scored against the keys (cache_keys and "
                           "k) and the weights must mix the values (cache_values and v).",
}
"""Every mistake these checkers can name, with what it tells the learner."""

STEP_KEYS = ("acc_not_rescaled", "sum_not_rescaled", "old_max_kept", "normalised_per_block", "neg_inf_nan",
             "block_not_rescaled", "max_over_everything", "block_max_only", "rescale_inverted")
TILED_KEYS = ("acc_not_rescaled", "sum_not_rescaled", "old_max_kept", "normalised_per_block", "last_block_dropped",
              "no_scaling", "no_max_subtraction", "batch_transpose", "block_not_rescaled", "max_over_everything",
              "block_max_only", "rescale_inverted")
KV_KEYS = ("new_token_not_attended", "keys_values_swapped", "no_scaling", "no_max_subtraction")
"""The mistakes each piece's checker looks for, in the order it tries them."""

# The common forms of a mistake, tried one by one: fault -> {choice: its options}
_FORMS = {
    "step": {"old_max_kept": {"kept": ("literal", "first", "returned")},
             "normalised_per_block": {"normalise": ("each", "fa1")},
             "rescale_inverted": {"inverted": ("guarded", "raw")}},
    "tiled": {"old_max_kept": {"kept": ("first", "returned")}, "normalised_per_block": {"normalise": ("each", "fa1"),
                                                                           "final": (True, False)},
              "last_block_dropped": {"empty": ("nan", "zeros")}, "batch_transpose": {"slice": ("first", "last")},
              "rescale_inverted": {"inverted": ("guarded",)}},     # unguarded, the first block's inf * 0 is NaN throughout
    "kv": {"new_token_not_attended": {"empty": ("refuse", "zeros", "nan")},
           "keys_values_swapped": {"swap": ("all", "new")}},
}


def _forms(piece, faults, only=None):
    """Every combination of the forms of ``faults`` (a dict of choices each), dropping those that are right;
    only: choice -> the one option to keep (the form a verdict's words are for)."""
    choices = {}
    for fault in faults:
        choices.update(_FORMS[piece].get(fault, {}))
    for choice, option in (only or {}).items():
        if choice in choices:
            choices[choice] = (option,)
    found = [dict(zip(choices, values)) for values in itertools.product(*choices.values())]
    # FlashAttention 1's normalised accumulator with no final division is the right output
    return [f for f in found if not (f.get("normalise") == "fa1" and f.get("final") is False)]


# --------------------------------------------------------------------------
# Models: the right computation with named mistakes
# --------------------------------------------------------------------------

def _update(m, l, acc, s, V, faults, form):
    """One online-softmax step with ``faults`` (a set of keys) done the way ``form`` says."""
    if "old_max_kept" in faults and form.get("kept") == "returned":   # the new max computed, used, not returned
        new, l_new, acc_new = _update(m, l, acc, s, V, set(faults) - {"old_max_kept"}, form)
        return m, l_new, acc_new
    with np.errstate(all="ignore"):
        kept = "old_max_kept" in faults
        top = (np.broadcast_to(s.max(), s.shape[:-1]) if s.size else s.max(axis=-1)) \
            if "max_over_everything" in faults else s.max(axis=-1)        # scores.max(): one for the whole block
        if kept:
            new = m if form.get("kept") == "literal" else np.where(np.isneginf(m), top, m)
        else:
            new = top if "block_max_only" in faults else np.maximum(m, top)   # block_max_only: the old max forgotten
        guarded = "neg_inf_nan" not in faults and not (kept and form.get("kept") == "literal")
        shift = np.where(np.isneginf(new), 0.0, new) if guarded else new
        rescale = np.ones(np.shape(new)) if kept else np.exp(m - shift)
        if "rescale_inverted" in faults:                    # exp(m' - m): -inf where nothing was seen yet, 0 if guarded
            rescale = np.exp(shift - m)
            if form.get("inverted") == "guarded":
                rescale = np.where(np.isneginf(m), 0.0, rescale)
        if "block_not_rescaled" in faults:                  # exp(s - the block's own max), never brought to m'
            shift = np.where(np.isneginf(top), 0.0, top) if guarded else top
        p = np.exp(s - shift[..., None])
        l_new = (l if "sum_not_rescaled" in faults else rescale * l) + p.sum(axis=-1)
        old = acc if "acc_not_rescaled" in faults else rescale[..., None] * acc
        if "normalised_per_block" not in faults:
            return new, l_new, old + p @ V
        if form.get("normalise") == "fa1":                  # FlashAttention 1: diag(l) e^(m - m') O
            old = old * l[..., None]
        return new, l_new, (old + p @ V) / np.where(l_new == 0, 1.0, l_new)[..., None]


def _tiled(Q, K, V, block_size, faults, form, scale=None):
    """Tiled attention whose loop makes the mistakes ``faults``. scale: the factor of the scores (a fitted family's;
    None: 1/sqrt(d_k), or 1 with no_scaling)."""
    with np.errstate(all="ignore"):
        if scale is None:
            scale = 1.0 if "no_scaling" in faults else 1 / np.sqrt(K.shape[-1])
        n_k, rows = K.shape[-2], Q.shape[:-1]
        stop = n_k // block_size * block_size if "last_block_dropped" in faults else n_k
        step = set(faults) - {"no_scaling", "last_block_dropped", "no_max_subtraction", "batch_transpose"}
        if "no_max_subtraction" in faults:                  # exp(s - 0): a running max that never leaves 0
            step, form = step | {"old_max_kept"}, dict(form, kept="literal")
        m = np.zeros(rows) if "no_max_subtraction" in faults else np.full(rows, -np.inf)
        l, acc = np.zeros(rows), np.zeros(rows + V.shape[-1:])
        for k0 in range(0, stop, block_size):
            if "batch_transpose" in faults:                 # written for one sentence: K[k0:k1].T
                K_block = K[k0:k0 + block_size] if form["slice"] == "first" else K[..., k0:k0 + block_size, :]
                try:
                    s = Q @ K_block.T * scale
                except ValueError:                          # numpy refuses the shapes
                    return None
            else:
                s = Q @ np.swapaxes(K[..., k0:k0 + block_size, :], -1, -2) * scale
            m, l, acc = _update(m, l, acc, s, V[..., k0:k0 + block_size, :], step, form)
        if "normalised_per_block" in faults and not form["final"]:
            return acc
        return acc / (np.where(l == 0, 1.0, l) if form.get("empty") == "zeros" else l)[..., None]


def _kv(cache_keys, cache_values, q, k, v, faults, form, scale=None):
    """One decoding step with ``faults``; None where numpy refuses the computation (or an empty softmax).
    scale: the factor of the scores (a fitted family's; None: 1/sqrt(d_k), or 1 with no_scaling)."""
    try:
        with np.errstate(all="ignore"):
            if "new_token_not_attended" in faults:
                keys, values = cache_keys, cache_values
            elif "keys_values_swapped" in faults and form["swap"] == "new":   # v appended to the keys, k to the values
                keys, values = np.vstack([cache_keys, v]), np.vstack([cache_values, k])
            else:
                keys, values = np.vstack([cache_keys, k]), np.vstack([cache_values, v])
            if "keys_values_swapped" in faults and form["swap"] == "all":
                keys, values = values, keys
            if keys.shape[0] == 0:
                return {"refuse": None, "zeros": np.zeros(values.shape[-1]),
                        "nan": np.full(values.shape[-1], np.nan)}[form.get("empty", "refuse")]
            if scale is None:
                scale = 1.0 if "no_scaling" in faults else 1 / np.sqrt(q.shape[-1])
            scores = keys @ q * scale
            e = np.exp(scores if "no_max_subtraction" in faults else scores - scores.max())
            return e / e.sum() @ values
    except Exception:
        return None


def _right_step(case):
    return online_softmax_update(*(case.args[a] for a in STEP_ARGS))


def _right_tiled(case):
    a = case.args
    return scaled_dot_product_attention(a["Q"], a["K"], a["V"])[0]


def _right_kv(case):
    """The course's KVCache: the cached tokens appended, then the new one, then its query attends."""
    a, cache = case.args, KVCache()
    for key, value in zip(a["cache_keys"], a["cache_values"]):
        cache.append(key, value)
    cache.append(a["k"], a["v"])
    return cache.attend(a["q"])[0]


STEP_ARGS = ("running_max", "running_sum", "acc", "scores", "V_block")
KV_ARGS = ("cache_keys", "cache_values", "q", "k", "v")


# --------------------------------------------------------------------------
# Comparing
# --------------------------------------------------------------------------

def _close(out, expected, rtol=RTOL, atol=ATOL, exact=False):
    """Elementwise: finite entries close; where ``expected`` is not finite, ``out`` is not either
    (``exact``: the same infinity, or NaN for NaN)."""
    with np.errstate(all="ignore"):
        if exact:
            return np.isclose(out, expected, rtol=rtol, atol=atol, equal_nan=True)
        return np.where(np.isfinite(expected), np.isclose(out, expected, rtol=rtol, atol=atol), ~np.isfinite(out))


def _same_step(out, want, care=None, rtol=RTOL, atol=ATOL, exact=False):
    """Do the three arrays ``out`` agree with ``want`` on every query row (rows outside ``care`` aside)?"""
    if out is None or want is None or any(o.shape != w.shape for o, w in zip(out, want)):
        return False
    ok = (_close(out[0], want[0], rtol, atol, exact) & _close(out[1], want[1], rtol, atol, exact)
          & _close(out[2], want[2], rtol, atol, exact).all(axis=-1))
    return bool(np.all(ok | ~care) if care is not None else np.all(ok))


def _same_array(out, want, rtol=RTOL, atol=ATOL):
    if want is None:                         # numpy refused: the function must have failed too
        return out is None
    return out is not None and out.shape == want.shape and bool(np.all(_close(out, want, rtol, atol)))


TEXT = "returns text, not numbers: return numpy arrays."


def _is_text(value):
    """True for a string, an array of strings, or a tuple or list holding one: a function's, not an answer's."""
    if isinstance(value, (str, bytes)) or (isinstance(value, np.ndarray) and value.dtype.kind in "US"):
        return True
    return isinstance(value, (tuple, list)) and any(_is_text(v) for v in value)


def _read_output(value, pair=False):
    """read_numbers, with text named as a function's fault (the exercises' wording asks to remove quotes)."""
    if _is_text(value):
        return None, None, TEXT
    return read_numbers(value, pair=pair)


def _read_step(value):
    """(the three arrays, None, problem) for what an online_softmax_update returned."""
    if value is None:
        return None, None, "returned None."
    if _is_text(value):
        return None, None, TEXT
    if not isinstance(value, (tuple, list)) or len(value) != 3:
        if not isinstance(value, (tuple, list)) and _read(value)[1] is not None:
            return None, None, "returned something that is not an array of numbers. " + _read(value)[1].text
        got = "one array" if not isinstance(value, (tuple, list)) else f"a {type(value).__name__} of {len(value)}"
        return None, "shape", f"returned {got}; the step returns three arrays, (running_max, running_sum, acc)."
    arrays = []
    for part, name in zip(value, ("running_max", "running_sum", "acc")):
        arr, problem = _read(part)
        if problem is not None:
            return None, None, f"returned a {name} that is not an array of numbers. " + problem.text
        arrays.append(np.asarray(arr, dtype=float))
    return tuple(arrays), None, None


def _read_first(value):
    """What a kv_cache_step returned: the output, or the first entry of a tuple (output, weights, ...)."""
    if isinstance(value, (tuple, list)) and len(value) >= 2 and isinstance(value[0], np.ndarray) and not isinstance(
            value, Yielded):
        value = value[0]
    return _read_output(value)


# --------------------------------------------------------------------------
# The verdict every piece shares
# --------------------------------------------------------------------------

def _explain(runs, keys, agrees):
    """The simplest set of faults whose model gives what the function gave on every run, or None."""
    combos = [(k,) for k in keys] + list(itertools.combinations(keys, 2))
    for strict in (True, False):
        for combo in combos:
            if all(agrees(run, set(combo), strict) for run in runs):
                return combo
    return None


FORM_WORDS = {
    ("old_max_kept", "kept", "returned"):
        "You compute the new running max and measure the block against it, but keep the old one: you return "
        "running_max as it came in (or, in a loop, never write m = new_max). Your running_sum and acc are then "
        "measured against the new max while the running max says the old one, so the next block rescales them by "
        "the wrong factor: from the first block's -inf it is exp(-inf - m') = 0, and every earlier block is "
        "dropped. Keep the new max: return new_max, new_sum, new_acc from the step (in a loop, m = new_max after "
        "each block).",
}
"""The words of a fault's other form, where its usual words would be false: (key, choice, option) -> text."""


def _form_words(key, found, runs, agrees):
    """FAULTS[key], or the words of the form of it that explains every run (FORM_WORDS)."""
    for (k, choice, option), words in FORM_WORDS.items():
        if k == key and all(agrees(run, set(found), False, {choice: option}) for run in runs):
            return words
    return FAULTS[key]


def _stub_called(fn, runs, piece):
    """The verdict when every call stopped in another piece's stub (tiled_attention calling an unwritten
    online_softmax_update). None otherwise."""
    errors = [run.error for run in runs]
    if not errors or not all(isinstance(e, NotImplementedError) for e in errors):
        return None
    other = safe_str(errors[0]).split(":")[0]
    if other == piece or not other.isidentifier() or not all(safe_str(e).startswith(other + ":") for e in errors):
        return None
    return Diagnosis(False, "not_attempted",
                     f"Not attempted yet: {fn_name(fn, piece)} calls {other}, which is not written yet (it still "
                     f"raises NotImplementedError). Write {other} first, check it with diagnose(workbook.{other}, "
                     f'piece="{other}"), save, and run this cell again.', None, piece)


def _verdict(fn, runs, piece, right, low, keys, agrees, shown, unexplained, order):
    for early in (_stub_called(fn, runs, piece), not_attempted(fn, runs, piece), too_slow(fn, runs, piece)):
        if early is not None:
            return early
    name = fn_name(fn)
    changes, mutated = mutation_words(runs, order)
    ok = [right(run) for run in runs]
    if all(ok):
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right output on every input, but {changes}",
                             None, piece)
        names = ", ".join(run.case.name for run in runs)
        text = f"Correct! {name} gives the right output on all {len(runs)} inputs ({names})."
        if any(run.printed for run in runs):
            text += " (It prints while it runs; diagnose kept that out of sight.)"
        return Diagnosis(True, None, text, None, piece)
    also = f"\nAlso, {changes}" if mutated else ""
    first = runs[ok.index(False)]
    where = f"It first goes wrong on {first.case.words}. {shown(first)}"
    if all(low(run) for run in runs):
        return Diagnosis(False, "low_precision", f"{LOW_PRECISION.format(name=name)}\n{where}{also}",
                         first.case.name, piece)
    found = _explain(runs, keys, agrees)
    if found is not None:
        text = "\n".join(_form_words(k, found, runs, agrees) for k in found)
        return Diagnosis(False, "+".join(found), f"{text}\n{where}{also}", first.case.name, piece)
    key, text = unexplained(first, name)
    return Diagnosis(False, key, f"{text}\n{where}{also}", first.case.name, piece)


def _verdict_of_output(fn, runs, piece, expected, keys, agrees, shape_words, different_words, order):
    """The verdict of a piece whose result is one output array, compared with ``expected(case)``."""
    return _verdict(
        fn, runs, piece, right=lambda run: _same_array(run.out, expected(run.case)),
        low=lambda run: _same_array(run.out, expected(run.case), LOW_RTOL, LOW_ATOL), keys=keys, agrees=agrees,
        shown=lambda run: _shown(run, expected(run.case)),
        unexplained=lambda run, name: _unexplained(run, name, "the output", expected(run.case).shape, shape_words,
                                                   different_words),
        order=order)


def _unexplained(run, name, returns, want_shape, shape_words, different_words):
    if failed(run, name, returns) is not None:
        return failed(run, name, returns)
    if run.problem is not None and run.weights == "shape":
        return "wrong_shape", f"{name} must return the three updated arrays: return new_max, new_sum, new_acc."
    if run.problem is not None:
        return "not_numbers", f"{name} {run.problem}"
    shapes = tuple(o.shape for o in run.out) if isinstance(run.out, tuple) else run.out.shape
    if shapes != want_shape:
        return "wrong_shape", f"{name} returns the wrong shape: {shape_words}"
    values = run.out if isinstance(run.out, tuple) else (run.out,)
    if not all(np.all(np.isfinite(v)) for v in values):
        return "nan_inf", (f"{name} returns NaN or inf where the expected numbers are finite. Look for exp() of a "
                           "large number, or -inf - (-inf).")
    return "different", f"{name} gives a different output, and none of the mistakes diagnose knows explains it. " \
                        + different_words


def _first_row(out, expected):
    """Where ``out`` (any shape) first differs from ``expected``, row by row (last axis), beside it."""
    if out is None:
        return ""
    if out.shape != expected.shape:
        return f"It returned shape {out.shape}; the output has shape {expected.shape}."
    if out.ndim == 1:
        return "Yours beside the expected output:\n" + side_by_side(out, expected)
    bad = ~_close(out, expected).all(axis=-1)
    where = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.any() else (0,) * (out.ndim - 1)
    yours, wanted = fmt_pair(out[where], expected[where])
    place = f"row {where[-1]}" + (f" of sentence {where[0]}" if len(where) > 1 else "")
    table = side_by_side(out[where[:-1]], expected[where[:-1]]) if out.shape[-2] <= 9 else ""
    return f"First differing row, {place}: yours {yours}, expected {wanted}." + (
        f"\nYour output beside the expected one:\n{table}" if table else "")


def _shown(run, expected):
    """The first row that differs, or what went wrong instead beside the expected output."""
    if run.out is not None and run.problem is None:
        return _first_row(run.out, expected)
    part, label = (expected[0], " for sentence 0") if expected.ndim > 2 else (expected, "")
    with np.printoptions(precision=3, suppress=True):
        return f"{raised_words(run, None)}\nThe expected output{label}: {np.array2string(part, separator=' ')}"


def _run_all(fn, battery, args_of, time_limit, read):
    runs = []
    for case in battery:
        args, kwargs = args_of(case)
        runs.append(call(fn, case, args, kwargs, time_limit, read=read))
        if not runs[-1].finished:
            break
    return runs


# --------------------------------------------------------------------------
# online_softmax_update
# --------------------------------------------------------------------------

def _agrees_step(run, faults, strict, only=None):
    a = run.case.args
    care = None
    if not strict and "neg_inf_nan" not in faults:    # a query with nothing seen yet: any answer will do
        care = np.isfinite(_right_step(run.case)[0])
    return any(_same_step(run.out, _update(*(a[k] for k in STEP_ARGS), faults, form), care)
               for form in _forms("step", faults, only))


def _shown_step(run):
    want = _right_step(run.case)
    names = ("running_max", "running_sum", "acc")
    if run.out is None:
        with np.printoptions(precision=3, suppress=True):
            return f"{raised_words(run, None)}\nThe expected step: " + ", ".join(
                f"{n} {np.array2string(w, separator=' ')}" for n, w in zip(names, want))
    if any(o.shape != w.shape for o, w in zip(run.out, want)):
        return "It returned shapes " + ", ".join(f"{n} {o.shape}" for n, o in zip(names, run.out)) + \
               "; expected " + ", ".join(f"{n} {w.shape}" for n, w in zip(names, want)) + "."
    lines = []
    for part, got, expected in zip(names, run.out, want):
        if not np.all(_close(got, expected, exact=True)):
            lines.append(f"{part}:\n" + side_by_side(got, expected))
    return "Where yours differs from the expected step:\n" + "\n".join(lines)


STEP_STATE = ("running_max", "running_sum", "acc")
"""The running values the step may update in place and return (as FlashAttention's kernels do)."""
IN_PLACE = ("You may update running_max, running_sum and acc in place and return them, as FlashAttention's "
            "kernels do; change neither scores nor V_block (V_block is often a slice of the caller's V).")
UNNORMALISED = ("Keep acc unnormalised: the sum of exp(score - new_max) * value, not divided by the running sum "
                "(FlashAttention 1 keeps it divided; here tiled_attention divides once, after the last block).")
"""Sentences of the stub's docstring (solutions.STUBS) the step's verdicts quote: what may change in place, and
the contract FlashAttention 1's normalised accumulator breaks."""


def _quoted(sentence):
    return f'The docstring of online_softmax_update says: "{sentence}"'


def check_online_step(fn, time_limit):
    """Run ``fn(running_max, running_sum, acc, scores, V_block)`` on its battery and return its Diagnosis.

    Updating running_max, running_sum and acc in place is allowed (:data:`IN_PLACE`); changing scores or
    V_block is ``mutates_inputs``, and the verdict quotes the stub's sentence. ``normalised_per_block`` quotes
    :data:`UNNORMALISED`."""
    runs = _run_all(fn, ONLINE_SOFTMAX_UPDATE, lambda c: ([(k, c.args[k]) for k in STEP_ARGS], {}), time_limit,
                    _read_step)
    in_place = [name for name in STEP_STATE if any(name in run.mutated for run in runs)]
    for run in runs:
        run.mutated = tuple(m for m in run.mutated if m not in STEP_STATE)
    verdict = _step_verdict(fn, runs)
    text = verdict.text
    if verdict.correct and in_place:
        text += (f" It updates {', '.join(in_place)} in place and returns {'them' if len(in_place) > 1 else 'it'}, "
                 f"which the step may do. {_quoted(IN_PLACE)}")
    if any(m in run.mutated for run in runs for m in ("scores", "V_block")):
        text += f" {_quoted(IN_PLACE)}"
    if verdict.mistake and "normalised_per_block" in verdict.mistake.split("+"):
        said = FAULTS["normalised_per_block"]
        text = text.replace(said, f"{said} {_quoted(UNNORMALISED)}", 1)
    return dataclasses.replace(verdict, text=text) if text != verdict.text else verdict


def _step_verdict(fn, runs):
    want_shape = lambda run: tuple(w.shape for w in _right_step(run.case))
    return _verdict(
        fn, runs, "online_softmax_update",
        right=lambda run: _same_step(run.out, _right_step(run.case), exact=True),
        low=lambda run: _same_step(run.out, _right_step(run.case), None, LOW_RTOL, LOW_ATOL),
        keys=STEP_KEYS, agrees=_agrees_step, shown=_shown_step,
        unexplained=lambda run, name: _unexplained(
            run, name, "new_max, new_sum, new_acc", want_shape(run),
            "running_max and running_sum have one entry per query row of scores (..., n_q), no keepdims; acc "
            "has shape (..., n_q, d_v).",
            "Compare it with the three update rules step by step: the new max, the factor exp(m - m'), the "
            "block's exp(s - m')."),
        order=list(STEP_ARGS))


# --------------------------------------------------------------------------
# tiled_attention
# --------------------------------------------------------------------------

BLOCK_NAMES = ("block_size", "block", "tile_size", "tile", "b", "B_c")
"""What learners call the block size (FlashAttention's Algorithm 1: B_c)."""


def _agrees_tiled(run, faults, strict, only=None):
    a = run.case.args
    return any(_same_array(run.out, _tiled(a["Q"], a["K"], a["V"], a["block_size"], faults, form))
               for form in _forms("tiled", faults, only))


def check_tiled(fn, time_limit):
    """Run ``fn(Q, K, V, block_size)`` on its battery and return its Diagnosis."""
    how, where = parameter(fn, BLOCK_NAMES, 3) or ("position", 3)

    def args_of(case):
        args = [(k, case.args[k]) for k in ("Q", "K", "V")]
        if how == "keyword":
            return args, {where: case.args["block_size"]}
        return args + [("block_size", case.args["block_size"])], {}

    runs = _run_all(fn, TILED_ATTENTION, args_of, time_limit, lambda value: _read_output(value, pair=True))
    verdict = _verdict_of_output(
        fn, runs, "tiled_attention", _right_tiled, TILED_KEYS, _agrees_tiled,
        "the output has one row per query and one column per value feature, (..., n_q, d_v).",
        "Compare it with scaled_dot_product_attention block by block: the running max, the factor exp(m - m'), "
        "the final division by the running sum.", ["Q", "K", "V"])
    verdict = _with_families(verdict, runs, TILED_FAMILIES, _right_tiled)
    return _blame_the_step(fn, verdict, time_limit)


def _blame_the_step(fn, verdict, time_limit):
    """The verdict, told where the fault is when the online_softmax_update that ``fn`` calls
    (``workbook.online_softmax_update``) is itself wrong: a rescaling key of the loop is then the step's."""
    if verdict.correct or verdict.mistake in ("not_attempted", "too_slow", "mutates_inputs"):
        return verdict
    keys = set(verdict.mistake.split("+"))
    for step in functions_called(fn, lambda name: any(w in name.lower() for w in ("online_softmax", "update", "step"))):
        own = check_online_step(step, time_limit)
        if own.correct or own.mistake in ("not_attempted", "too_slow"):
            continue
        name, callee = fn_name(fn), fn_name(step)
        same = set(own.mistake.split("+")) == keys
        told = (f"The fault is in your {callee}, which your {name} calls"
                + (f": checked on its own it makes the same mistake ({own.mistake}): fix it there" if same else
                   f": checked on its own it is wrong ({own.mistake}): fix it first")
                + f", in workbook.py. diagnose(workbook.{callee}, piece=\"online_softmax_update\") shows it alone.\n")
        return dataclasses.replace(verdict, text=told + verdict.text)
    return verdict


# --------------------------------------------------------------------------
# kv_cache_step
# --------------------------------------------------------------------------

def _agrees_kv(run, faults, strict, only=None):
    a = run.case.args
    return any(_same_array(run.out, _kv(*(a[k] for k in KV_ARGS), faults, form))
               for form in _forms("kv", faults, only))


def _kv_sizes(a):
    return {"d_k": a["q"].shape[-1], "t + 1": a["cache_keys"].shape[0] + 1, "t": a["cache_keys"].shape[0],
            "d_v": a["v"].shape[-1]}


KV_MEANINGS = {"d_k": "d_k = q.shape[-1] is the keys' width", "t + 1": "t + 1 is the number of keys so far (the cached ones and the new token's)",
               "t": "t = len(cache_keys) is the number of cached tokens", "d_v": "d_v = v.shape[-1] is the values' width"}


def _scale_rules(runs, right, scores_of, sizes_of, which, family_of):
    """The size rules (fitted.size_rules) the scale read off the first wrong run may follow, those of the family
    ``which`` (``family_of(rule)``). scores_of: args -> (the unscaled scores, weights -> the output), for
    checker_attention.fit_scale."""
    from helpers.checkers.checker_attention import fit_scale
    for run in runs:
        want = right(run.case)
        if run.out is None or run.out.shape != want.shape or _same_array(run.out, want):
            continue
        scores, finish = scores_of(run.case.args)
        s = fit_scale(scores, finish, run.out)
        if s is not None:
            return [r for r in fitted.size_rules(1 / s, sizes_of(run.case.args)) if family_of(r) == which]
    return []


def _kv_scores(a):
    keys, values = np.vstack([a["cache_keys"], a["k"]]), np.vstack([a["cache_values"], a["v"]])
    return keys @ a["q"], lambda W: W @ values


def _kv_rules(runs, which):
    """The size rules the scale read off the first wrong step may follow, those of the family ``which``."""
    return _scale_rules(runs, _right_kv, _kv_scores, _kv_sizes, which, _kv_family)


def _kv_family(rule):
    if rule.name is None:
        return "constant_scale"
    if rule.power == 0.5 and rule.factor == 1.0 and rule.name in ("t + 1", "t", "d_v", "d_k"):
        return {"t + 1": "scale_by_n_keys", "t": "scale_by_n_keys", "d_v": "scale_by_d_v", "d_k": "right"}[rule.name]
    return "scale_by_shape"


def _kv_words(rule, run):
    from helpers.checkers.checker_attention import scale_words
    a = run.case.args
    if rule.name == "t" and rule.power == 0.5 and rule.factor == 1.0:      # sqrt(len(cache_keys)): the off-by-one
        return ("You divide the scores by sqrt(len(cache_keys)) = sqrt(t), the number of cached tokens: one fewer than "
                "the t + 1 keys the query attends to (the new token's own included), and neither is the formula's "
                "scale. On the first token the cache is empty, t = 0, so you divide by sqrt(0) = 0: the scores "
                f"become inf and the output NaN. Divide q . k_j by np.sqrt(q.shape[-1]) = sqrt(d_k) = "
                f"sqrt({a['q'].shape[-1]}), the keys' width, whatever the number of keys.")
    if rule.name is None:
        return _constant_words(rule, "q . k_j by np.sqrt(d_k), d_k = q.shape[-1]")
    return scale_words(rule, _kv_sizes(a), KV_MEANINGS, run.case.words, a["q"].shape[-1]).replace(
        "np.sqrt(K.shape[-1])", "np.sqrt(q.shape[-1])")


def _constant_words(rule, divide):
    """The words of a constant scale (rule.name None): what it is right for, and what to divide by instead."""
    return (f"You divide the scores by {rule.formula()} whatever d_k is, which is right only when d_k = "
            f"{fitted.SizeRule(None, 1.0, rule.factor ** 2).formula()}. Divide {divide}: a fixed number does not "
            "follow the keys' width.")


def _kv_scale_family(key):
    return fitted.Family(key, "scale", fit=lambda runs: _kv_rules(runs, key),
                         model=lambda a, rule: _kv(*(a[k] for k in KV_ARGS), frozenset(), {},
                                                   scale=np.divide(1.0, rule.value(_kv_sizes(a)))),
                         words=_kv_words)


KV_FAMILIES = tuple(_kv_scale_family(key) for key in ("scale_by_n_keys", "scale_by_d_v", "constant_scale",
                                                       "scale_by_shape"))
"""kv_cache_step's faults with a parameter: a scale read off the output (fitted.fit_scalar) and named by what it
equals (1/sqrt(t + 1), the number of keys so far: scale_by_n_keys; sqrt(d_v): scale_by_d_v; a constant; another
size), tried when no fixed fault explains the output."""
KV_FAMILY_KEYS = tuple(f.key for f in KV_FAMILIES)


def _tiled_sizes(a):
    return {"d_k": a["K"].shape[-1], "block_size": a["block_size"], "n_k": a["K"].shape[-2], "n_q": a["Q"].shape[-2],
            "d_v": a["V"].shape[-1]}


TILED_MEANINGS = {"d_k": "d_k = K.shape[-1] is the keys' width", "block_size": "block_size is the number of keys "
                  "in each block (the tiling's choice, not a property of the scores)",
                  "n_k": "n_k = K.shape[-2] is the number of keys", "n_q": "n_q = Q.shape[-2] is the number of queries",
                  "d_v": "d_v = V.shape[-1] is the values' width"}


def _tiled_family(rule):
    if rule.name is None:
        return "constant_scale"
    if rule.power == 0.5 and rule.factor == 1.0 and rule.name in ("n_k", "d_v", "d_k"):
        return {"n_k": "scale_by_n_keys", "d_v": "scale_by_d_v", "d_k": "right"}[rule.name]
    return "scale_by_shape"


def _tiled_scores(a):
    return a["Q"] @ np.swapaxes(a["K"], -1, -2), lambda W: W @ a["V"]


def _tiled_words(rule, run):
    from helpers.checkers.checker_attention import scale_words
    a = run.case.args
    if rule.name is None:
        return _constant_words(rule, "Q @ K_block^T by np.sqrt(K.shape[-1])")
    return scale_words(rule, _tiled_sizes(a), TILED_MEANINGS, run.case.words, a["K"].shape[-1])


def _tiled_scale_family(key):
    return fitted.Family(key, "scale", fit=lambda runs: _scale_rules(runs, _right_tiled, _tiled_scores, _tiled_sizes,
                                                                     key, _tiled_family),
                         model=lambda a, rule: _tiled(a["Q"], a["K"], a["V"], a["block_size"], frozenset(), {},
                                                      scale=np.divide(1.0, rule.value(_tiled_sizes(a)))),
                         words=_tiled_words)


TILED_FAMILIES = tuple(_tiled_scale_family(key) for key in ("scale_by_n_keys", "scale_by_d_v", "constant_scale",
                                                             "scale_by_shape"))
"""tiled_attention's faults with a parameter: a scale read off the output, named by what it equals as the KV step's
are (sqrt(block_size), the tiling's own size: scale_by_shape; sqrt(n_k): scale_by_n_keys; sqrt(d_v); a constant)."""
TILED_FAMILY_KEYS = tuple(f.key for f in TILED_FAMILIES)


def check_kv_step(fn, time_limit):
    """Run ``fn(cache_keys, cache_values, q, k, v)`` on its battery and return its Diagnosis."""
    runs = _run_all(fn, KV_CACHE_STEP, lambda c: ([(k, c.args[k]) for k in KV_ARGS], {}), time_limit, _read_first)
    return _with_families(_kv_verdict(fn, runs), runs, KV_FAMILIES, _right_kv)


def _with_families(verdict, runs, families, right):
    """The verdict, or, where it is only a symptom or "different", the first family (a fitted scale) that explains
    every run, named with the learner's value in place of the symptom's sentence."""
    if verdict.correct or verdict.mistake not in ("different", "nan_inf", "wrong_shape", "raised"):
        return verdict
    found = fitted.explain(families, runs, lambda run, family, value: _same_array(
        run.out, family.predict(run.case.args, value)[0] if family.predict(run.case.args, value) else None))
    if found is None:
        return verdict
    family, value = found
    first = next(run for run in runs if not _same_array(run.out, right(run.case)))
    text = family.words(value, first) + "\n" + verdict.text.split("\n", 1)[1]
    return dataclasses.replace(verdict, mistake=family.key, text=text)


def _kv_verdict(fn, runs):
    return _verdict_of_output(
        fn, runs, "kv_cache_step", _right_kv, KV_KEYS, _agrees_kv,
        "the output of one token is one vector of d_v entries, shape (d_v,).",
        "Compare it step by step: append k and v, the scores q . k_j / sqrt(d_k), the softmax, the weighted sum "
        "of the values.", list(KV_ARGS))
