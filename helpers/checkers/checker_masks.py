"""The checkers of ``causal_mask`` (``fn(n)``) and ``padding_mask`` (``fn(is_real)``), True = may attend.

A mask is compared exactly: its shape and every entry. The checker reads
what the function returned as a pattern of allowed entries (booleans; 0/1
numbers; or an additive mask of 0 and -inf, as torch builds it), names the
pattern's mistake by comparing it with each model of :data:`CAUSAL_FAULTS`
or :data:`PADDING_FAULTS` (each a small function of the inputs, the mask a
learner with that misconception builds), and adds ``not_boolean`` or
``additive_mask`` when the pattern is right but the values are not
booleans. The keys are the exercise checkers' keys for the same mistakes
(MaskExercise of notebook 04).
"""

from __future__ import annotations

import numpy as np

from helpers.attention import causal_mask, padding_mask
from helpers.checkers.battery import CAUSAL_MASK, PADDING_MASK
from helpers.exercises.feedback import MASKED_FILL
from helpers.checkers.runner import (
    Diagnosis, call, failed, fn_name, mutation_words, not_attempted, raised_words, side_by_side, too_slow,
)

__all__ = ["CAUSAL_FAULTS", "PADDING_FAULTS", "check_causal", "check_padding"]

CAUSAL_FAULTS = {
    "diagonal_masked": ("Your mask hides the diagonal: no token may read itself, and the first token has nothing "
                        "to attend to. The causal mask keeps it: np.tril(np.ones((n, n), dtype=bool), k=0).",
                        lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1)),
    "future_visible": ("Your mask keeps the upper triangle: each token reads the tokens after it and none before. "
                       "Query i may attend to key j when j <= i: the lower triangle, np.tril.",
                       lambda n: np.triu(np.ones((n, n), dtype=bool))),
    "mask_flipped": ("Your mask works the wrong way round: True where a query may NOT attend (the convention of "
                     "torch.nn.MultiheadAttention). In this course True means 'may attend': flip it with ~.",
                     lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)),
    "one_future_visible": ("Your mask lets each token read the token right after it: np.tril(..., k=1) moves the "
                           "boundary one place into the future. Query i may attend to key j when j <= i: "
                           "np.tril(np.ones((n, n), dtype=bool)), with k=0 (the default).",
                           lambda n: np.tril(np.ones((n, n), dtype=bool), k=1)),
    "everything_visible": ("Your mask is True everywhere: every token reads every other, the later ones included, "
                           "so it hides nothing. Query i may attend to key j when j <= i: the lower triangle, "
                           "np.tril(np.ones((n, n), dtype=bool)).",
                           lambda n: np.ones((n, n), dtype=bool)),
}
"""Every mistake of a causal mask the checker names: key -> (what it tells the learner, the mask it builds)."""

PADDING_FAULTS = {
    "query_axis": ("Your mask puts the padding on the queries (rows), is_real[:, :, None], shape (B, n_k, 1) (or "
                   "with a head axis, is_real[:, None, :, None], shape (B, 1, n_k, 1)): it hides whole rows, and the "
                   "[PAD] keys stay visible to every real query. Padding hides keys: is_real[:, None, :], shape "
                   "(B, 1, n_k).",
                   lambda r: [r[:, :, None], r[:, None, :, None]]),
    "not_broadcast": ("Your mask is is_real itself, shape (B, n_k). Against scores (B, n_q, n_k) numpy lines B up "
                      "with the queries axis: when B equals n_q nothing fails, and the wrong keys are hidden from "
                      "the wrong queries. Give it a query axis of length 1: is_real[:, None, :].",
                      lambda r: r),
    "mask_flipped": ("Your mask works the wrong way round: True at the padding (the convention of torch's "
                     "key_padding_mask). In this course True means 'may attend': is_real[:, None, :].",
                     lambda r: ~r[:, None, :]),
    "head_axis": ("Your mask has a head axis too, shape (B, 1, 1, n_k): the shape for multi-head scores "
                  "(B, num_heads, n_q, n_k). padding_mask(is_real) takes no number of heads: it is for scores "
                  "(B, n_q, n_k), which have no head axis, and np.where would broadcast the two to (B, B, n_q, n_k), "
                  "every sentence against every "
                  "sentence's padding. For them it must have shape (B, 1, n_k): is_real[:, None, :].",
                  lambda r: r[:, None, None, :]),
    "square_mask": ("Your mask hides the right keys but copies the row for every query, shape (B, n_k, n_k). "
                    "That works only while there are as many queries as keys (self-attention without a cache). "
                    "Keep the query axis of length 1, shape (B, 1, n_k), and let it broadcast: is_real[:, None, :].",
                    lambda r: np.broadcast_to(r[:, None, :], r.shape + r.shape[-1:])),
    "queries_hidden_too": ("Your mask hides the [PAD] queries (rows) as well as the [PAD] keys, "
                           "is_real[:, :, None] & is_real[:, None, :], shape (B, n_k, n_k): a pad's row then has "
                           "nothing to attend to. A padding mask hides keys only, shared by every query: "
                           "is_real[:, None, :], shape (B, 1, n_k).",
                           lambda r: r[:, :, None] & r[:, None, :]),
}
"""Every mistake of a padding mask the checker names: key -> (what it tells the learner, the mask it builds)."""

VALUE_FAULTS = {
    "not_boolean": "Your mask holds the numbers 0 and 1. Make it booleans (dtype bool, True = may attend): "
                   "np.ones(..., dtype=bool), or .astype(bool); scaled_dot_product_attention refuses numbers.",
    "additive_mask": "Your mask is additive: 0 where a query may attend and -inf where it may not, as torch adds "
                     "it to the scores. In this course a mask is booleans, True = may attend: mask == 0 turns "
                     "yours into one.",
}


def read_mask(value):
    """(pattern, kind, problem): the allowed entries as booleans, and "bool", "numbers" (0/1) or "additive"."""
    if value is None:
        return None, None, "returned None."
    if isinstance(value, (str, bytes)):
        return None, None, "returned text, not a mask."
    try:
        arr = np.asarray(value)
    except Exception:
        return None, None, "returned something that is not an array."
    if arr.dtype.kind == "b":
        return arr, "bool", None
    if arr.dtype.kind in "iuf" and arr.size:
        with np.errstate(all="ignore"):
            if np.all(np.isin(arr, (0, 1))):
                return arr != 0, "numbers", None
            if np.all((arr == 0) | (arr <= MASKED_FILL)):
                return arr == 0, "additive", None
    return None, None, "returned something that is not a mask of True/False values."


def _check(fn, time_limit, piece, cases, argument, expected, faults):
    runs = []
    for case in cases:
        runs.append(call(fn, case, [(argument, case.args[argument])], {}, time_limit, read=read_mask))
        if not runs[-1].finished:
            break
    for early in (not_attempted(fn, runs, piece), too_slow(fn, runs, piece)):
        if early is not None:
            return early
    if any(run.weights == "additive" for run in runs):     # an additive mask of zeros only reads as 0/1 numbers
        for run in runs:
            if run.weights == "numbers" and not np.any(run.out):
                run.out, run.weights = np.ones(run.out.shape, dtype=bool), "additive"
    name = fn_name(fn)
    changes, mutated = mutation_words(runs, [argument])

    def same(run, want):
        return run.out is not None and run.out.shape == want.shape and bool(np.array_equal(run.out, want))

    right = [same(run, expected(run.case)) for run in runs]
    # read_mask puts the kind of values in the run's second slot (weights, for attention)
    kinds = sorted({run.weights for run in runs if run.out is not None and run.weights != "bool"})
    if all(right) and not kinds:
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right mask on every input, but {changes}",
                             None, piece)
        return Diagnosis(True, None, f"Correct! {name} gives the right mask on all {len(runs)} inputs "
                                     f"({', '.join(r.case.name for r in runs)}).", None, piece)
    also = f"\nAlso, {changes}" if mutated else ""
    first = runs[right.index(False)] if not all(right) else runs[0]
    arg = first.case.args[argument]
    want = expected(first.case)
    if first.out is None:
        shown = raised_words(first, None)
    elif first.out.shape != want.shape:
        shown = f"It returned shape {first.out.shape}; the mask must have shape {want.shape}."
    else:
        shown = "Your mask beside the expected one (1 = may attend):\n" + side_by_side(
            first.out.astype(int), want.astype(int))
    where = f"It first goes wrong on {first.case.words}. {shown}"
    def ways(mask):                # a model may build its mask several ways (a list): one of them, on every input
        return mask if isinstance(mask, list) else [mask]

    keys = [] if all(right) else next(([key] for key, (_, model) in faults.items()
                                        if any(all(run.out is not None and same(run, ways(model(run.case.args[argument]))[i])
                                                   for run in runs)
                                               for i in range(len(ways(model(runs[0].case.args[argument])))))), None)
    if keys is None:
        key, text = _unexplained(first, name, want, arg)
        return Diagnosis(False, key, f"{text}\n{where}{also}", first.case.name, piece)
    keys += [{"numbers": "not_boolean", "additive": "additive_mask"}[k] for k in kinds]
    text = "\n".join(faults[k][0] if k in faults else VALUE_FAULTS[k] for k in keys)
    return Diagnosis(False, "+".join(keys), f"{text}\n{where}{also}", first.case.name, piece)


def _unexplained(run, name, want, arg):
    if failed(run, name, "the mask") is not None:
        return failed(run, name, "the mask")
    if run.problem is not None:
        return "not_boolean", f"{name} {run.problem}"
    if run.out.shape != want.shape:
        return "wrong_shape", f"{name} returns the wrong shape: the mask must have shape {want.shape}."
    return "different", (f"{name} gives a different mask, and none of the mistakes diagnose knows explains it. "
                         "Print it for a small input and compare it with the expected one below.")


def check_causal(fn, time_limit):
    """Run ``fn(n)`` on the causal_mask battery and return its Diagnosis."""
    return _check(fn, time_limit, "causal_mask", CAUSAL_MASK, "n", lambda case: causal_mask(case.args["n"]),
                  CAUSAL_FAULTS)


def check_padding(fn, time_limit):
    """Run ``fn(is_real)`` on the padding_mask battery and return its Diagnosis."""
    return _check(fn, time_limit, "padding_mask", PADDING_MASK, "is_real",
                  lambda case: padding_mask(case.args["is_real"]), PADDING_FAULTS)
