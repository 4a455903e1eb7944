"""The checker of ``attention``: a learner's ``fn(Q, K, V, mask=None)`` against scaled_dot_product_attention.

It runs the function on :data:`~helpers.checkers.battery.ATTENTION`, and
when the function is wrong looks for the simplest explanation: a model of
attention with one of the mistakes of :data:`FAULTS` (or two of them
together) that gives the same numbers on every input. Those mistakes have
all shipped in public code. The verdict names them, says how to fix each,
names the first input where the function went wrong and shows the first row
that differs, beside the expected one.

The function may return the output, or ``(output, weights)``; its
arguments may be called Q, K, V or q, k, v or query, key, value, and its
mask ``mask`` or ``attn_mask`` (read from the signature).
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.checkers import fitted
from helpers.checkers.battery import ATTENTION as BATTERY
from helpers.exercises.feedback import _fmt
from helpers.checkers.runner import (
    ATOL, LOW_ATOL, LOW_PRECISION, LOW_RTOL, RTOL, Diagnosis, call, fmt_pair, fn_name, matches, mutation_words,
    not_attempted, parameter, raised_words, read_numbers, side_by_side, too_slow,
)

__all__ = ["FAULTS", "RIGHT", "check"]

MASK_NAMES = ("mask", "attn_mask", "attention_mask", "attn_bias_mask")
"""What learners call the mask argument (torch's scaled_dot_product_attention: attn_mask; ComfyUI-ppm #18)."""


# --------------------------------------------------------------------------
# Models of attention, right or with named mistakes
# --------------------------------------------------------------------------

@dataclass(frozen=True)
class _Model:
    """Attention with some of its parts done wrong. The defaults are the right way."""

    scale: object = "sqrt_d_k"   # "none", "d_k", "times_sqrt", "n_keys" (sqrt of the number of keys),
                                 # "d_v" (sqrt of the values' width), "after_softmax" (the weights divided
                                 # by sqrt(d_k), the scores not), a float: a constant scale, or a
                                 # fitted.SizeRule: divided by that rule on the case's sizes (:func:`sizes`)
    orient: str = "QK"           # "KQ": scores = K Q^T
    axis: str = "rows"           # "columns" (axis -2) or "first" (axis 0): softmax down the columns;
                                 # "second" (axis=1: the queries' axis once heads or a batch come first);
                                 # "sum_columns" (each row's maximum subtracted, the sum taken down the
                                 # columns); "all": divided by the sum of everything; an int: any other
                                 # fixed axis (the axis family, :data:`FAMILIES`)
    mask: str = "where"          # "ignored", "added", "after_softmax", "multiplied", "flipped"; "ignored_unless_2d"
                                 # (applied only when it is 2-D: a mask that broadcasts over a batch is ignored);
                                 # "indexed" (scores[~mask] = -inf: boolean indexing, which does not broadcast)
    naive: object = False        # True: softmax without subtracting the maximum; "global": one maximum of
                                 # the whole array subtracted (a row far below it underflows: 0 / 0)
    dot_T: bool = False          # True: .T instead of swapping the last two axes
    transpose: object = None     # a fitted.AxesPermutation: K transposed with fixed axes (the transpose families)

    def faults(self):
        right = _Model()
        keys = []
        for part in ("scale", "mask", "axis", "naive", "orient", "dot_T"):
            value = getattr(self, part)
            if value != getattr(right, part):
                keys.append(_FAULT_KEY[(part, value if isinstance(value, (str, bool)) else
                                        "rule" if isinstance(value, fitted.SizeRule) else
                                        "fixed" if isinstance(value, int) else "constant")])
        return keys

    def predict(self, case):
        """What this model gives on the case: a list of (output, rows that count), one per way of filling
        hidden scores (-inf, or -1e9 as many learners do), or None where numpy refuses the computation."""
        fills = ((-np.inf, -1e9) if case.mask is not None and self.mask in ("where", "flipped", "indexed",
                                                                            "ignored_unless_2d") else (-np.inf,))
        # a softmax down the columns meets a column the mask hides everywhere: NaN, or zeros when guarded
        guards = (False, True) if case.mask is not None and self.axis != "rows" else (False,)
        # the number of keys read as len(K) (the batch size, on a batch) or as K.shape[-2]
        n_axes = (0, -2) if self.scale == "n_keys" else (-2,)
        found = [self._predict(case, fill, guard, n_axis) for fill in fills for guard in guards for n_axis in n_axes]
        return None if None in found else found

    def _predict(self, case, fill, guard=False, n_axis=-2):
        Q, K, V, mask = case.Q, case.K, case.V, case.mask
        T = (lambda a: a.T) if self.dot_T else (lambda a: np.swapaxes(a, -1, -2))
        T_K = T if self.transpose is None else self.transpose.apply
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                S = Q @ T_K(K) if self.orient == "QK" else K @ T(Q)
                d_k = Q.shape[-1]
                if isinstance(self.scale, fitted.SizeRule):
                    S = S / self.scale.value(sizes(case))
                else:
                    S = S * {"sqrt_d_k": 1 / np.sqrt(d_k), "none": 1.0, "d_k": 1 / d_k,
                             "times_sqrt": np.sqrt(d_k), "n_keys": 1 / np.sqrt(K.shape[n_axis]),
                             "d_v": 1 / np.sqrt(V.shape[-1]), "after_softmax": 1.0}.get(self.scale, self.scale)
                keep, care = None, np.ones(S.shape[:-1], dtype=bool)
                if mask is not None and self.mask == "indexed":      # numpy's boolean indexing, as code writes it
                    S = S.copy()
                    S[~mask] = fill
                    keep = np.broadcast_to(mask, S.shape)
                    care = keep.any(axis=-1)
                elif mask is not None and not (self.mask == "ignored" or self.mask == "ignored_unless_2d" and
                                               np.ndim(mask) != 2):
                    keep = np.broadcast_to(~mask if self.mask == "flipped" else mask, S.shape)
                    if self.mask in ("where", "flipped", "ignored_unless_2d"):
                        S = np.where(keep, S, fill)
                        care = keep.any(axis=-1)    # a row with nothing to attend to: any answer will do
                    elif self.mask == "added":
                        S = S + keep
                    elif self.mask == "multiplied":
                        S = S * keep
                axis = self.axis if isinstance(self.axis, int) else {
                    "rows": -1, "columns": -2, "first": 0, "second": 1, "sum_columns": -2, "all": None}[self.axis]
                if self.naive == "global":
                    S = S - np.max(S)
                elif not self.naive:
                    top = np.max(S, axis=-1 if self.axis == "sum_columns" else axis, keepdims=True)
                    S = S - (np.where(np.isfinite(top), top, 0.0) if guard else top)
                E = np.exp(S)
                total = np.sum(E, axis=axis, keepdims=True)
                W = E / (np.where(total == 0, 1.0, total) if guard else total)
                if keep is not None and self.mask == "after_softmax":
                    W = W * keep
                if self.scale == "after_softmax":
                    W = W / np.sqrt(d_k)
                out = W @ V
        except Exception:
            return None
        return out, care


RIGHT = _Model()

# (part of the model, how it is done wrong) -> the key of the mistake
_FAULT_KEY = {
    ("scale", "none"): "no_scaling",
    ("scale", "d_k"): "divided_by_d_k",
    ("scale", "times_sqrt"): "multiplied_by_sqrt_d_k",
    ("scale", "constant"): "constant_scale",
    ("mask", "added"): "mask_added",
    ("axis", "columns"): "wrong_axis",
    ("axis", "first"): "wrong_axis",
    ("axis", "second"): "wrong_axis",
    ("axis", "sum_columns"): "wrong_axis",
    ("axis", "fixed"): "wrong_axis",
    ("naive", "global"): "max_over_everything",
    ("scale", "rule"): "scale_by_shape",
    ("axis", "all"): "softmax_over_everything",
    ("mask", "after_softmax"): "mask_after_softmax",
    ("mask", "multiplied"): "mask_multiplied",
    ("mask", "flipped"): "mask_flipped",
    ("mask", "ignored"): "mask_ignored",
    ("naive", True): "no_max_subtraction",
    ("orient", "KQ"): "scores_transposed",
    ("dot_T", True): "batch_transpose",
    ("scale", "n_keys"): "scale_by_n_keys",
    ("scale", "d_v"): "scale_by_d_v",
    ("mask", "ignored_unless_2d"): "mask_ignored",
    ("mask", "indexed"): "mask_indexed",
    ("scale", "after_softmax"): "scale_after_softmax",
}

FAULTS = {
    "no_scaling": "You do not scale the scores. Divide Q @ K^T by sqrt(d_k) before the softmax, with "
                  "d_k = K.shape[-1] (Vaswani et al. 2017, eq. 1).",
    "divided_by_d_k": "You divide the scores by d_k. Divide by its square root, np.sqrt(d_k).",
    "multiplied_by_sqrt_d_k": "You multiply the scores by sqrt(d_k). Divide them by it instead.",
    "constant_scale": "You divide the scores by {c} whatever d_k is, which is right only when d_k = {c2}. "
                      "Read d_k from the keys, d_k = K.shape[-1], and divide by np.sqrt(d_k): a fixed number such "
                      "as sqrt(d_model) does not follow the width of the keys.",
    "mask_added": "You add the boolean mask to the scores: True counts as 1 and False as 0, so hidden keys keep "
                  "their weight. Apply it instead: scores = np.where(mask, scores, -np.inf), before the softmax.",
    "wrong_axis": "Your softmax runs down the columns, so each key's weights sum to 1 instead of each query's "
                  "(a fixed axis=1 does that too, once heads or a batch come first, as in a model). "
                  "Take it along the last axis: axis=-1, with keepdims=True when you divide.",
    "softmax_over_everything": "Your softmax divides by the sum over the whole matrix, so no row sums to 1. Sum "
                               "along each row: e.sum(axis=-1, keepdims=True).",
    "mask_after_softmax": "You apply the mask after the softmax, so a row's weights no longer sum to 1 (and its "
                          "output shrinks). Set the hidden scores to -inf before the softmax: "
                          "np.where(mask, scores, -np.inf).",
    "mask_multiplied": "You multiply the scores by the mask, which makes hidden scores 0, and exp(0) = 1 still "
                       "gives them weight. Set them to -inf instead: np.where(mask, scores, -np.inf).",
    "mask_flipped": "Your mask works the wrong way round: you hide the keys marked True and keep the ones marked "
                    "False. In this course True means 'may attend': np.where(mask, scores, -np.inf).",
    "mask_ignored": "Your function ignores the mask, so hidden keys still get weight. Before the softmax, set "
                    "their scores to -inf: np.where(mask, scores, -np.inf).",
    "no_max_subtraction": "Your softmax overflows on large scores: exp(1000) is inf, and inf / inf is NaN. "
                          "Subtract each row's maximum before np.exp (it cancels in the division): "
                          "e = np.exp(s - s.max(axis=-1, keepdims=True)).",
    "scores_transposed": "You compute the scores as K @ Q^T, which puts the keys on the rows; that goes unnoticed "
                         "only while there are as many queries as keys. Use Q @ K^T: queries on the rows.",
    "batch_transpose": "Your function works on one sentence but not on a batch. The usual cause: .T reverses "
                       "every axis, so K of shape (2, 3, 4) becomes (4, 3, 2). Transpose only the last two axes: "
                       "np.swapaxes(K, -1, -2).",
    "neg_inf_nan": "A query with nothing to attend to has scores that are all -inf, so a softmax that subtracts the "
                   "row's maximum computes -inf - (-inf), which is NaN, and the NaN reaches every query of the next "
                   "layer that reads this token. Where the maximum is -inf, subtract 0 instead, and where the sum of "
                   "exponentials is 0, divide by 1: the weights and the output come out all zeros (as your softmax "
                   "of notebook 01 does).",
    "scale_by_n_keys": "You divide by sqrt(len(K)), the square root of the number of keys; d_k is the keys' width, "
                       "K.shape[-1]. Divide by np.sqrt(K.shape[-1]).",
    "scale_by_d_v": "You divide by the square root of the values' width, d_v = V.shape[-1]; d_k is the keys' width, "
                    "K.shape[-1]. Divide by np.sqrt(K.shape[-1]).",
    "scale_by_shape": "You divide the scores by {rule}, where {meaning} (on {case}); the formula divides by "
                      "sqrt(d_k) = sqrt({d_k}), d_k the keys' width. Divide by np.sqrt(K.shape[-1]): only the keys' "
                      "width keeps the scores' spread the same whatever the other sizes are.",
    "mask_indexed": "Your function indexes with the mask, scores[~mask] = -np.inf, or into it, mask[i, j], and "
                    "indexing does not broadcast: it needs a mask of the scores' very shape, so a mask that is shared, "
                    "padding_mask's (B, 1, n_k) or one causal_mask(n) for a whole batch, raises IndexError. Broadcast "
                    "it first, mask = np.broadcast_to(mask, scores.shape), or use np.where(mask, scores, -np.inf), "
                    "which broadcasts.",
    "scale_after_softmax": "You divide by sqrt(d_k) after the softmax: the scores go into it unscaled, and each "
                           "row of weights sums to 1/sqrt(d_k) instead of 1. Scale the scores before the softmax: "
                           "softmax(Q @ K^T / np.sqrt(d_k)).",
    "axes_permuted": "You transpose K with fixed axes, {code}: on {case}, K has {ndim} axes and {what}. Fixed axes do "
                     "one thing to a batch and another to one sentence. Swap the last two axes, counted from the end: "
                     "np.swapaxes(K, -1, -2).",
    "returned_weights": "{name} returns the attention weights, not the output. The output is the weighted mix of the "
                        "values: return weights @ V (or both: return weights @ V, weights).",
    "weights_wrong": "{name} gives the right output, but the weights it returns beside it are not the attention "
                     "weights, on {case}. Return the weights the output was made from: return weights @ V, weights.",
}
"""Every mistake :func:`diagnose` can name, with what it tells the learner."""

FAULTS["max_over_everything"] = (
    "You subtract one maximum for the whole array, not each row's own: a row whose scores lie far below it "
    "underflows, exp(0 - 1001) is 0, and 0 / 0 is NaN. Subtract each row's maximum before np.exp: "
    "e = np.exp(s - s.max(axis=-1, keepdims=True)).")   # the softmax and tiling checkers' key (issue 32, section 3)

MASK_2D_ONLY = (
    "Your function applies the mask only when it is 2-D, as one sentence's (n_q, n_k): a mask that broadcasts, such "
    "as padding_mask's (B, 1, n_k), shared by the queries of a sentence, is ignored, so the pads still get weight. "
    "Apply every mask the same way, np.where(mask, scores, -np.inf): it broadcasts any mask that lines up with the "
    "scores' last axes.")
"""mask_ignored's words for a mask applied only when it is 2-D (``if mask is not None and mask.ndim == 2``)."""

BATCH_TRANSPOSE_FIXED = (
    "Your function works on one sentence but not on a batch: you transpose K with fixed axes, {code}, which swaps "
    "the two axes of one sentence's K, but on {case}, K has {ndim} axes and {what}. Swap the last two axes, counted "
    "from the end: np.swapaxes(K, -1, -2).")
"""batch_transpose's words for a transpose written with fixed axes (np.swapaxes(K, 0, 1), K.transpose(1, 0)), which
is right for one sentence as .T is: the same fault, without the .T the function does not have."""

KEY_AXES = ("the keys' axis", "the features (d_k)")
"""The names of the last two axes of K, for what a fixed-axes transpose does to it."""

SIZE_MEANINGS = {"d_k": "d_k = K.shape[-1] is the keys' width", "n_q": "n_q = Q.shape[-2] is the number of queries",
                 "n_k": "n_k = K.shape[-2] is the number of keys", "d_v": "d_v = V.shape[-1] is the values' width",
                 "len(Q)": "len(Q) = Q.shape[0] is the number of queries for one sentence, the batch size for a batch",
                 "len(K)": "len(K) = K.shape[0] is the number of keys for one sentence, the batch size for a batch",
                 "Q.shape[1]": "Q.shape[1] (or len(Q[0])) is d_k for one sentence, the number of queries for a batch",
                 "K.shape[1]": "K.shape[1] (or len(K[0])) is d_k for one sentence, the number of keys for a batch"}
"""What each size a scale may follow is, in the verdict's words."""


def sizes(case):
    """The sizes of an attention input a scale may be read from: name -> int (d_k first: the right one)."""
    Q, K, V = case.Q, case.K, case.V
    return {"d_k": Q.shape[-1], "n_q": Q.shape[-2], "n_k": K.shape[-2], "d_v": V.shape[-1], "len(Q)": Q.shape[0],
            "len(K)": K.shape[0], "Q.shape[1]": Q.shape[1], "K.shape[1]": K.shape[1]}


def axis_words(axis, ndim, heads=False):
    """'the queries' axis' style: what a fixed softmax axis is for scores of ``ndim`` axes (None: it has none)."""
    if not -ndim <= axis < ndim:
        return None
    k = axis % ndim
    if k == ndim - 1:
        return "the keys' axis"
    if k == ndim - 2:
        return "the queries' axis"
    if heads and k == ndim - 3:
        return "the heads' axis"
    return "the batch axis" if ndim == 3 or k == 0 else f"batch axis {k}"


def scale_words(rule, sizes_of_case, meanings, case_words, d_k):
    """The verdict of a scale fitted to the learner's output and named by what it equals (:class:`fitted.SizeRule`)."""
    return FAULTS["scale_by_shape"].format(rule=rule.formula(sizes_of_case), meaning=meanings.get(rule.name, rule.name),
                                           case=case_words, d_k=d_k)


# --------------------------------------------------------------------------
# Comparing what the function gave with what a model gives
# --------------------------------------------------------------------------

def _agrees(run, prediction, right_shape):
    """Does the function's result on this case look like one of the model's predictions?"""
    if prediction is None:                         # numpy refused: the function must have failed too
        return run.out is None or run.out.shape != right_shape
    return any(matches(run.out, expected, care) for expected, care in prediction)


def fit_scale(scores, finish, target, mask=None):
    """The constant s with finish(softmax(s * scores)) equal to ``target``, read off by fitted.fit_scalar, or None.

    scores: the unscaled Q K^T; finish: weights (k, ...) -> outputs (k, ...) (weights @ V, and any merge); mask:
    True = may attend, or None."""
    S = np.asarray(scores, dtype=float)

    def outputs(s):
        Z = S[None] * s.reshape((-1,) + (1,) * S.ndim)
        if mask is not None:
            Z = np.where(mask, Z, -np.inf)
        top = Z.max(axis=-1, keepdims=True)
        E = np.exp(Z - np.where(np.isfinite(top), top, 0.0))
        total = E.sum(axis=-1, keepdims=True)
        return finish(E / np.where(total == 0, 1.0, total))

    return fitted.fit_scalar(outputs, target, 1e-3, 1e2, rtol=RTOL, atol=ATOL)


def _fit_constant(run):
    """The constant scale s with softmax(s Q K^T) V equal to the function's output on this case, or None."""
    case, out = run.case, run.out
    if case.mask is not None or out is None or not np.all(np.isfinite(out)):
        return None
    if out.shape != case.Q.shape[:-1] + case.V.shape[-1:]:
        return None
    return fit_scale(case.Q @ np.swapaxes(case.K, -1, -2), lambda W: W @ case.V, out)


def _fit_rules(runs):
    """The size rules (fitted.size_rules) the scale read off the first wrong input that allows it may follow."""
    for run in runs:
        if not _agrees(run, RIGHT.predict(run.case), None):
            s = _fit_constant(run)
            if s is not None:
                return [r for r in fitted.size_rules(1 / s, sizes(run.case)) if r.name is not None]
    return []


def _axes(runs):
    """The fixed axes of the scores a softmax may be written along, beyond the three the fixed models try."""
    ndim = max(len(run.case.Q.shape) for run in runs)
    return [a for a in fitted.axis_candidates(ndim, but_last=True) if a not in (-2, 0, 1)]


def _transposes(runs):
    """Every fixed-axes transpose of K over the numbers of axes the battery's K have (fitted.fixed_permutations):
    no output shows the transposed K, so each is tried on every input."""
    ndims = sorted({run.case.K.ndim for run in runs})
    return fitted.fixed_permutations(ndims, orders_of=[n for n in ndims if n >= 3])


def _same_on(perm, ndim, reference):
    a = np.arange(float(np.prod(range(2, ndim + 2)))).reshape(tuple(range(2, ndim + 2)))
    try:
        return bool(np.array_equal(perm.apply(a), reference(a)))
    except Exception:
        return False


def _like_T(perm):
    """Does the transpose do to every 2-D K what .T does (np.swapaxes(K, 0, 1), K.transpose(1, 0))?"""
    return _same_on(perm, 2, lambda a: a.T)


def _right_transpose(perm):
    """The last two axes swapped, whatever the number of axes: np.swapaxes(K, -1, -2)."""
    return all(_same_on(perm, ndim, lambda a: np.swapaxes(a, -1, -2)) for ndim in (2, 3, 4, 5))


def _transpose_words(template, perm, run):
    """A fixed-axes transpose of K named by what it does on the first input that went wrong."""
    Q, K = run.case.Q, run.case.K
    lead = K.ndim - 2
    names = (["the batch axis"] if lead == 1 else [f"batch axis {k}" for k in range(lead)]) + list(KEY_AXES)
    what = fitted.what_it_swaps(perm, K.ndim, names)
    if not what.startswith("numpy refuses"):
        try:
            with np.errstate(all="ignore"):
                np.matmul(Q, perm.apply(K))
            what += ", so Q @ it is not Q K^T"
        except Exception:
            what += ", and numpy refuses Q @ it"
    code = f"np.swapaxes(K, {perm.axes[0]}, {perm.axes[1]})" if perm.swap else f"K.transpose{tuple(perm.axes)}"
    if perm.swap and min(perm.axes) >= 0:                 # the same swap written as an order of as many axes
        order = list(range(max(perm.axes) + 1))
        order[perm.axes[0]], order[perm.axes[1]] = order[perm.axes[1]], order[perm.axes[0]]
        code += f" (or K.transpose{tuple(order)}, the same on {len(order)} axes)"
    return template.format(code=code, case=run.case.words, ndim=K.ndim, what=what)


FAMILIES = (
    fitted.Family("scale_by_shape", "scale", fit=_fit_rules, model=lambda case, rule: _Model(scale=rule).predict(case),
                  words=lambda rule, run: scale_words(rule, sizes(run.case), SIZE_MEANINGS, run.case.words,
                                                      run.case.Q.shape[-1]),
                  right=lambda rule: rule.name == "d_k" and rule.power == 0.5 and rule.factor == 1.0),
    fitted.Family("wrong_axis", "axis", fit=_axes, model=lambda case, axis: _Model(axis=axis).predict(case),
                  words=lambda axis, run: _axis_text(axis, run)),
    fitted.Family("batch_transpose", "transpose", fit=lambda runs: [p for p in _transposes(runs) if _like_T(p)],
                  model=lambda case, perm: _Model(transpose=perm).predict(case),
                  words=lambda perm, run: _transpose_words(BATCH_TRANSPOSE_FIXED, perm, run), right=_right_transpose),
    fitted.Family("axes_permuted", "transpose", fit=lambda runs: [p for p in _transposes(runs) if not _like_T(p)],
                  model=lambda case, perm: _Model(transpose=perm).predict(case),
                  words=lambda perm, run: _transpose_words(FAULTS["axes_permuted"], perm, run), right=_right_transpose),
)
"""The faults with a parameter (fitted.Family), tried when no model of one or two fixed faults explains the
output: a scale that follows another size of the inputs (sqrt(n_q), sqrt(2 d_k), ...), a softmax along any
other fixed axis of the scores, and K transposed with fixed axes (torch's K.transpose(1, 2) kept as it stands,
np.swapaxes(K, 1, 2), K.transpose(0, 2, 1)): batch_transpose when it does to one sentence's K what .T does
(np.swapaxes(K, 0, 1)), axes_permuted otherwise, as in the head split and merge."""


def _axis_text(axis, run, heads=False, ndim=None):
    """wrong_axis's words, naming the axis the learner's softmax runs along on the first input that went wrong."""
    ndim = ndim or len(run.case.Q.shape)
    what = axis_words(axis, ndim, heads)
    where = (f"on {run.case.words}, that is {what} of the scores" if what else
             f"the scores of {run.case.words} have {ndim} axes, so numpy refuses it; where they have it, it is not "
             "the keys' axis")
    return (f"Your softmax runs along axis={axis}: {where}. The weights must sum to 1 along each query's row of "
            f"keys {_axis_note(axis)}. Take it along the last axis: axis=-1, with keepdims=True when you divide.")


def _axis_note(axis):
    """What a fixed axis is on scores of other numbers of axes, in brackets: counted from the front it moves once a
    batch or heads come first; counted from the end it is the same axis of every input."""
    if axis >= 0:
        one = axis_words(axis, 2)
        return (f"(a fixed axis={axis} counts from the front: it is {one} for one sentence, and another once heads or "
                "a batch come first, as in a model)" if one else
                f"(a fixed axis={axis} counts from the front: one sentence's scores have no such axis, and a batch's "
                "or the heads' have it before the queries)")
    if axis == -2:
        return "(axis=-2 is the queries' axis of every input: each key's weights sum to 1 instead of each query's)"
    return (f"(axis={axis} counts from the end: a batch's or the heads' axis, before the queries and the keys, and "
            "one sentence's scores have no such axis)")


_SINGLE = [("scale", "none"), ("scale", "d_k"), ("scale", "times_sqrt"), ("mask", "added"), ("axis", "columns"),
           ("axis", "first"), ("axis", "all"), ("mask", "after_softmax"), ("mask", "multiplied"), ("mask", "flipped"),
           ("mask", "ignored"), ("naive", True), ("orient", "KQ"), ("dot_T", True), ("scale", "n_keys"),
           ("scale", "d_v"), ("axis", "second"), ("axis", "sum_columns"), ("naive", "global"),
           ("mask", "ignored_unless_2d"), ("mask", "indexed"), ("scale", "after_softmax")]


def _candidates(constants, masks, batches):
    """Models with one mistake, then with two, in the order they are tried."""
    singles = [(p, v) for p, v in _SINGLE + [("scale", s) for s in constants]
               if (masks or p != "mask") and (batches or p != "dot_T")]
    for part, value in singles:
        yield _Model(**{part: value})
    for (p1, v1), (p2, v2) in itertools.combinations(singles, 2):
        if p1 != p2:
            yield _Model(**{p1: v1, p2: v2})


def _explain(runs, masks, batches):
    """The simplest model that gives what the function gave on every case, or None."""
    constants = []
    for run in runs:
        if not _agrees(run, RIGHT.predict(run.case), None):
            s = _fit_constant(run)
            if s is not None and not any(abs(s - c) <= 1e-3 * c for c in constants):
                constants.append(s)
    predictions = {}
    for model in _candidates(constants[:2], masks, batches):
        for run in runs:
            key = (model, run.case.name)
            if key not in predictions:
                predictions[key] = model.predict(run.case)
            right = RIGHT.predict(run.case)
            if not _agrees(run, predictions[key], None if right is None else right[0][0].shape):
                break
            if model.mask == "indexed" and predictions[key] is None and not isinstance(run.error, IndexError):
                break                      # numpy's indexing refuses with IndexError; another refusal is not it
        else:
            return model
    return None


# --------------------------------------------------------------------------
# Running it, and words
# --------------------------------------------------------------------------

def _expected(case):
    return scaled_dot_product_attention(case.Q, case.K, case.V, mask=case.mask)


def _run(fn, case, time_limit, mask_place):
    args = [("Q", case.Q), ("K", case.K), ("V", case.V)]
    kwargs = {}
    if case.mask is not None:
        how, where = mask_place
        if how == "position":
            args.append(("mask", case.mask))
        else:
            kwargs[where] = case.mask
    run = call(fn, case, args, kwargs, time_limit, read=lambda value: read_numbers(value, pair=True))
    run.mutated = tuple("mask" if m in MASK_NAMES else m for m in run.mutated)
    return run


def _first_difference(run):
    """'First differing row ...: yours ..., expected ...' and a small table, or what went wrong instead."""
    expected, weights = _expected(run.case)
    if not run.finished:
        return ""
    if run.error is not None or run.problem is not None:
        return raised_words(run, None)
    out = run.out
    if out.shape != expected.shape:
        return (f"It returned shape {out.shape}; the output must have shape (..., n_q, d_v) = {expected.shape}.")
    with np.errstate(all="ignore"):
        bad = ~np.isclose(out, expected, rtol=RTOL, atol=ATOL).all(axis=-1)
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    place = f"row {where[-1]}" + (f" of sentence {where[0]}" if len(where) > 1 else "")
    table = side_by_side(out[where[:-1]], expected[where[:-1]]) if out.shape[-2] <= 8 else ""
    yours, wanted = fmt_pair(out[where], expected[where])
    text = f"First differing row, {place}: yours {yours}, expected {wanted}."
    return text + (f"\nYour output beside the expected one{' for sentence ' + str(where[0]) if len(where) > 1 else ''}:"
                   f"\n{table}" if table else "")


def _fault_text(key, model, first):
    """What the fault ``key`` of ``model`` tells the learner, with the values read off the first wrong input."""
    text = FAULTS[key]
    if key == "constant_scale":
        c = 1 / model.scale
        text = text.format(c=_fmt(c), c2=_fmt(c * c))
    elif key == "wrong_axis" and model.axis in ("columns", "first", "second"):
        text = _axis_text({"columns": -2, "first": 0, "second": 1}[model.axis], first)
    elif key == "mask_ignored" and model.mask == "ignored_unless_2d":
        text = MASK_2D_ONLY
    return text


def _verdict(fn, runs, masks, batches):
    name = fn_name(fn)
    piece = "attention"
    for early in (not_attempted(fn, runs, piece), too_slow(fn, runs, piece)):
        if early is not None:
            return early
    changes, mutated = mutation_words(runs, "Q K V mask".split())
    also = f"\nAlso, {changes}" if mutated else ""
    longer = next((len(run.value) for run in runs if _longer_tuple(run.value)), None)
    extra = "" if longer is None else "\n" + LONGER_TUPLE.format(
        n=_fmt(longer) if longer > 9 else NUMBERS[longer], piece="attention")
    right = [_agrees(run, RIGHT.predict(run.case), None) for run in runs]
    if all(right):
        if mutated:
            return Diagnosis(False, "mutates_inputs", f"{name} gives the right output on every input, but {changes}")
        empty = next((run for run in runs if not _empty_rows_zero(run)), None)
        if empty is not None:
            return Diagnosis(False, "neg_inf_nan",
                             f"{name} is right on every row that has a key to read, but gives NaN where a query "
                             f"has none. {FAULTS['neg_inf_nan']}\nIt first goes wrong on {empty.case.words}. "
                             f"{_first_difference(empty)}", empty.case.name)
        wrong_weights = next((run for run in runs if run.weights is not None and not _same_weights(run)), None)
        if wrong_weights is not None:
            return Diagnosis(False, "weights_wrong",
                             FAULTS["weights_wrong"].format(name=name, case=wrong_weights.case.words),
                             wrong_weights.case.name)
        untaught = [] if masks and batches else [w for w, on in (("masks", masks), ("batches", batches)) if not on]
        text = (f"Correct! {name} gives the right output on all {len(runs)} inputs "
                f"({', '.join(run.case.name for run in runs)}).")
        if any(not _empty_rows_as_the_course(run) for run in runs):
            text += (" (Where a query has no key left, yours spreads its weight evenly, as a fill of -1e9 does; "
                     "the course's function gives zeros there. No query reads such a row, so both pass.)")
        if untaught:
            text += f" ({' and '.join(untaught).capitalize()} were not tried: you meet them in notebook 04.)"
        if any(run.printed for run in runs):
            text += " (It prints while it runs; diagnose kept that out of sight.)"
        return Diagnosis(True, None, text + extra)

    first = runs[right.index(False)]
    where = f"It first goes wrong on {first.case.words}. {_first_difference(first)}"
    if all(run.out is not None and matches(run.out, _expected(run.case)[0], _care(run.case), LOW_RTOL, LOW_ATOL)
           for run in runs):
        return Diagnosis(False, "low_precision", f"{LOW_PRECISION.format(name=name)}\n{where}{also}", first.case.name)
    model = _explain(runs, masks, batches)
    if model is not None:
        keys = model.faults()
        text = "\n".join(_fault_text(key, model, first) for key in keys)
        return Diagnosis(False, "+".join(keys), f"{text}\n{where}{also}{extra}", first.case.name)
    found = fitted.explain_with_faults(
        FAMILIES, runs, lambda run, family, value, faults: _agrees(
            run, family.model(run.case, value), _expected(run.case)[0].shape),
        wrong=[run for run, ok in zip(runs, right) if not ok],
        accept=lambda family, value, faults: any(family.model(run.case, value) is not None for run in runs))
    if found is not None:
        family, value, _ = found
        return Diagnosis(False, family.key, f"{family.words(value, first)}\n{where}{also}{extra}", first.case.name)
    return Diagnosis(False, _unexplained_key(first), f"{_unexplained_text(first, name)}\n{where}{also}{extra}",
                     first.case.name)


LONGER_TUPLE = ("(You return {n} things; the course's {piece} returns two, (output, weights): diagnose read the "
                "first as the output. Return output, weights.)")
NUMBERS = "zero one two three four five six seven eight nine".split()


def _longer_tuple(value):
    return isinstance(value, tuple) and len(value) > 2 and isinstance(value[0], np.ndarray)


def _empty_rows_zero(run):
    """True unless the case has a query with no key to read and the function's output there is NaN or inf.

    (A large negative fill such as -1e9 spreads such a row's weight evenly instead: no query reads a pad's
    row, and notebook 04 shows that spread as harmless, so it is accepted; NaN is not, since it reaches every
    query of the next layer.)"""
    if run.case.mask is None or run.out is None:
        return True
    rows = ~_care(run.case)                       # the queries with no key to read
    if not rows.any() or run.out.shape[:-1] != rows.shape:
        return True
    with np.errstate(all="ignore"):
        return bool(np.all(np.isfinite(run.out[rows])))


def _care(case):
    """The rows that count: a query with nothing to attend to may get any answer."""
    if case.mask is None:
        return None
    shape = np.broadcast_shapes(case.mask.shape, case.Q.shape[:-1] + case.K.shape[-2:-1])
    return np.broadcast_to(case.mask, shape).any(axis=-1)


def _same_weights(run):
    """The returned weights are the attention weights on every row that counts (:func:`_care`): a query with
    no key left may get any finite weights, as its output may (a -1e9 fill spreads them evenly)."""
    _, expected = _expected(run.case)
    w = run.weights
    if w is None or w.shape != expected.shape:
        return False
    return matches(w, expected, _care(run.case))


def _empty_rows_as_the_course(run):
    """False when a query with no key left got other numbers than the course's zeros (output or weights)."""
    care = _care(run.case)
    if care is None or care.all():
        return True
    out, weights = _expected(run.case)
    return matches(run.out, out) and (run.weights is None or matches(run.weights, weights))


def _returned_weights(run):
    _, expected = _expected(run.case)
    return run.out is not None and run.out.shape == expected.shape and bool(
        np.allclose(run.out, expected, rtol=RTOL, atol=ATOL))


def _output_second(run):
    """A pair (weights, output): the weights first (read as the output), the output second."""
    value = run.value
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        return False
    expected, _ = _expected(run.case)
    try:
        second = np.asarray(value[1], dtype=float)
    except (TypeError, ValueError):
        return False
    return second.shape == expected.shape and matches(second, expected, _care(run.case))


def _unexplained_key(run):
    if run.error is not None:
        if isinstance(run.error, TypeError) and run.case.mask is not None and "mask" in str(run.error):
            return "no_mask_argument"
        return "exit" if isinstance(run.error, SystemExit) else "raised"
    if run.value is None and run.given_as is None:     # (an endless iterator has no value: given_as says what it was)
        return "returned_none"
    if run.problem is not None:
        return "not_numbers"
    if _returned_weights(run):
        return "returned_weights"
    if not np.all(np.isfinite(run.out)):
        return "nan_inf"
    expected, _ = _expected(run.case)
    return "wrong_shape" if run.out.shape != expected.shape else "different"


def _unexplained_text(run, name):
    return {
        "no_mask_argument": f"{name} takes no mask. Give it one: def {name if name.isidentifier() else 'my_attention'}(Q, K, V, mask=None), and apply it "
                            "before the softmax when it is not None.",
        "exit": f"{name} stops the program (exit() or sys.exit()). Return the output instead.",
        "raised": f"{name} raised an error. Read the message below, and try your function on these inputs "
                  "yourself.",
        "returned_none": f"{name} returns nothing (None). End it with return output (or return output, weights).",
        "not_numbers": f"{name} returns something that is not an array of numbers.",
        "returned_weights": (FAULTS["returned_weights"].format(name=name) if not _output_second(run) else
                             f"{name} returns both, in the wrong order: (weights, output). Return the output first: "
                             "return weights @ V, weights."),
        "nan_inf": f"{name} returns NaN or inf. Check for a division by zero, a mask filled with +inf, or exp() "
                   "of a large number.",
        "wrong_shape": f"{name} returns the wrong shape: the output has one row per query and one column per "
                       "value feature, (..., n_q, d_v).",
        "different": f"{name} gives a different output, and none of the mistakes diagnose knows explains it. "
                     "Compare it with scaled_dot_product_attention step by step: scores, scaling, mask, softmax, "
                     "weights @ V.",
    }[_unexplained_key(run)]


def check(fn, time_limit, masks=True, batches=True):
    """Run ``fn`` on the battery (without the masked inputs or the batch if told) and return its Diagnosis."""
    taught = {"masks": masks, "batches": batches}
    cases = [c for c in BATTERY if all(taught[need] for need in ((c.needs,) if isinstance(c.needs, str) else
                                                                 c.needs or ()))]
    mask_place = parameter(fn, MASK_NAMES, 3, default_none=True) or ("keyword", "mask")
    runs = []
    for case in cases:
        runs.append(_run(fn, case, time_limit, mask_place))
        if not runs[-1].finished:
            break
    return _verdict(fn, runs, masks, batches)
