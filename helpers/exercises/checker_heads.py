"""The checkers of ``split_heads``, ``merge_heads`` and ``multi_head_attention`` (Vaswani et al. 2017, section 3.2.2).

The course's convention (helpers.attention): head h owns the contiguous
features h*d_k .. (h+1)*d_k - 1 of every token, and the heads axis stands
before the tokens, (..., num_heads, n, d_k), so attention runs on each head
as on a batch. Each misconception is a part of the computation done another
way (checker_numeric.py finds the simplest model that gives what the
learner's function gave):

    split_heads(x, num_heads)   reshape_without_transpose, heads_last, interleaved, batch_transpose
    merge_heads(x)              the same four keys, for the way back
    multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None)
                                scale_by_d_model, no_output_projection, reshape_without_transpose,
                                no_scaling, single_head, mask_ignored, head_axis

``multi_head_attention`` may return the output or (output, weights); the
output is checked. Its ``reshape_without_transpose`` is a reshape alone in
the split, in the merge, or in both. When its mask is ignored (or it cannot
pass one on), the attention it calls (``attention``, ``workbook.attention``)
is run under a causal mask: if that attention ignores its mask or takes
none, as notebook 01's does, the verdict says so and where attention gets
its mask (helpers.course.BUILT_IN), not that the multi-head function is
wrong. Its mask (True = may attend) is read from the signature like
attention's, and its battery gives only masks whose meaning is
unambiguous: none, a causal mask (n, n), and a padding mask with its head
axis (B, 1, 1, n). A loop over heads that hands each head's attention that
whole mask broadcasts it to (B, B, n, n) (``head_axis``, the padding_mask
checker's key for the same mask meeting scores without a head axis).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from helpers.attention import merge_heads, multi_head_attention, scaled_dot_product_attention, split_heads
from helpers.course import BUILT_IN
from helpers.exercises import checker_numeric
from helpers.exercises.battery import ATTENTION, MERGE_HEADS, MULTI_HEAD, SPLIT_HEADS
from helpers.exercises.checker_attention import MASK_NAMES
from helpers.exercises.runner import call, fn_name, functions_called, matches, parameter, read_numbers

__all__ = ["SPLIT_FAULTS", "MERGE_FAULTS", "MULTI_HEAD_FAULTS", "SPLIT", "MERGE", "MULTI"]


# --------------------------------------------------------------------------
# Models: the split and the merge, right or with one named mistake
# --------------------------------------------------------------------------

def _split(x, h, fault=None):
    """x (..., n, d_model) into heads, the way ``fault`` does it (None: (..., h, n, d_k), contiguous slices)."""
    *lead, n, d_model = x.shape
    d_k = d_model // h
    if fault == "reshape_without_transpose":
        return x.reshape(*lead, h, n, d_k)                    # reads each row of features across tokens
    if fault == "interleaved":
        return np.moveaxis(x.reshape(*lead, n, d_k, h), -1, -3)   # head h: features h, h + num_heads, ...
    cut = x.reshape(*lead, n, h, d_k)
    if fault == "heads_last":
        return cut                                            # (..., n, h, d_k): tokens before heads
    if fault == "batch_transpose":
        return cut.transpose(1, 0, 2)                         # fixed axes: one sentence only (a batch fails)
    return np.swapaxes(cut, -2, -3)


def _merge(x, fault=None):
    """Heads (..., h, n, d_k) back to (..., n, h * d_k), the way ``fault`` does it."""
    *lead, h, n, d_k = x.shape
    if fault == "reshape_without_transpose":
        return x.reshape(*lead, n, h * d_k)
    if fault == "interleaved":
        return np.moveaxis(x, -3, -1).reshape(*lead, n, h * d_k)
    if fault == "heads_last":
        return x.reshape(*lead, h, n * d_k)                   # merges the last two axes, as if (..., n, h, d_k)
    if fault == "batch_transpose":
        return x.transpose(1, 0, 2).reshape(n, h * d_k)       # fixed axes: one sentence only
    return np.swapaxes(x, -2, -3).reshape(*lead, n, h * d_k)


def _one(faults):
    return next(iter(faults), None)


SPLIT_FAULTS = {
    "reshape_without_transpose": (
        "layout", "You reshaped straight to (..., num_heads, n, d_k). A reshape reads the numbers in memory order, "
        "token after token, so one head's block takes the features of several tokens. Reshape to (..., n, "
        "num_heads, d_k) first, then swap the heads and tokens axes: np.swapaxes(x, -2, -3)."),
    "heads_last": (
        "layout", "Your features are cut right, but the heads stand after the tokens: (..., n, num_heads, d_k). "
        "Attention runs on the last two axes, (n, d_k), so bring the heads before the tokens: "
        "np.swapaxes(x, -2, -3)."),
    "interleaved": (
        "layout", "Your heads take the features dealt out in turn (head 0 gets features 0, num_heads, "
        "2 num_heads, ...). Each head owns a contiguous slice: head h gets features h*d_k to (h+1)*d_k - 1, a "
        "reshape to (..., n, num_heads, d_k)."),
    "batch_transpose": (
        "layout", "Your function works on one sentence but not on a batch: .transpose(1, 0, 2) (or .T) names "
        "the axes of a 3-D array. Swap only the heads and tokens axes, counted from the end: "
        "np.swapaxes(x, -2, -3)."),
}
"""Every mistake the split_heads checker names: key -> (part, what it tells the learner)."""

MERGE_FAULTS = {
    "reshape_without_transpose": (
        "layout", "You reshaped the heads straight to (..., n, d_model). The numbers of one token are spread over "
        "the heads, so a reshape alone mixes tokens. Swap the heads and tokens axes first, "
        "np.swapaxes(x, -2, -3), then reshape to (..., n, num_heads * d_k)."),
    "heads_last": (
        "layout", "You merged the last two axes, as if the heads stood after the tokens. split_heads puts them "
        "before, (..., num_heads, n, d_k): swap axes -3 and -2 first, then merge the last two."),
    "interleaved": (
        "layout", "You put the heads' features in turn (feature 0 of each head, then feature 1, ...). Each head's "
        "features stay side by side: head h fills features h*d_k to (h+1)*d_k - 1."),
    "batch_transpose": (
        "layout", "Your function works on one sentence but not on a batch: .transpose(1, 0, 2) names the axes of "
        "a 3-D array. Swap only the heads and tokens axes, counted from the end: np.swapaxes(x, -2, -3)."),
}
"""Every mistake the merge_heads checker names: key -> (part, what it tells the learner)."""

MULTI_HEAD_FAULTS = {
    "scale_by_d_model": (
        "scale", "You divide each head's scores by sqrt(d_model). Each head's keys have d_k = d_model / num_heads "
        "features, so divide by np.sqrt(d_k) (Vaswani et al. 2017, section 3.2.2)."),
    "no_scaling": (
        "scale", "You do not scale the scores. Divide each head's Q K^T by sqrt(d_k), d_k = d_model / num_heads."),
    "no_output_projection": (
        "output", "You return the concatenated heads without the output projection. Multiply them by W_O: "
        "merge_heads(heads) @ W_O mixes what the heads found."),
    "reshape_without_transpose": (
        "layout", "You split the heads, or merge them back, with a reshape alone (to (..., num_heads, n, d_k), or "
        "from it straight to (..., n, d_model)), so a head's block takes features of several tokens. Split: "
        "reshape to (..., n, num_heads, d_k), then swap axes -2 and -3. Merge: swap them back, then reshape."),
    "single_head": (
        "layout", "You run one head over all d_model features: num_heads is not used. Split Q, K and V into "
        "num_heads heads of d_k = d_model / num_heads features each, attend in each head, then merge."),
    "mask_ignored": (
        "mask", "Your function ignores the mask, so hidden keys still get weight. Pass it to each head's "
        "attention: np.where(mask, scores, -np.inf) before the softmax (it broadcasts over the heads)."),
    "head_axis": (
        "mask", "Your per-head attention sees the mask's head axis: a mask (B, 1, 1, n) against one head's scores "
        "(B, n, n) broadcasts to (B, B, n, n), every sentence against every sentence's padding. Drop it "
        "(mask[..., 0, :, :], shape (B, 1, n)) when you loop over heads, or split the heads first and attend "
        "once, so that the head axis meets the heads."),
}
"""Every mistake the multi_head_attention checker names: key -> (part, what it tells the learner)."""


def _softmax(S):
    top = S.max(axis=-1, keepdims=True)
    e = np.exp(S - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


def _multi_head(args, faults):
    """Multi-head attention in plain numpy, with the named faults; a list when a fault can be written several
    ways (a reshape alone in the split, in the merge, or in both)."""
    X, h, mask = args["X"], args["num_heads"], args.get("mask")
    if "single_head" in faults:
        h = 1
    d_k = X.shape[-1] // h
    scale = 1.0 if "no_scaling" in faults else 1 / np.sqrt(X.shape[-1] if "scale_by_d_model" in faults else d_k)

    def heads(split):
        Q, K, V = (_split(X @ args[W], h, split) for W in ("W_Q", "W_K", "W_V"))
        S = Q @ np.swapaxes(K, -1, -2) * scale
        if mask is not None and "mask_ignored" not in faults:
            S = np.where(mask, S, -np.inf)
        return _softmax(S) @ V

    wrong = "reshape_without_transpose"
    ways = [(wrong, wrong), (wrong, None), (None, wrong)] if wrong in faults else [(None, None)]   # (split, merge)
    if "head_axis" in faults and mask is not None and mask.ndim > 2:   # a loop over heads, each given the whole mask
        def one_head_at_a_time(split):
            Q, K, V = (_split(X @ args[W], h, split) for W in ("W_Q", "W_K", "W_V"))
            outs = []
            for k in range(h):
                S = Q[..., k, :, :] @ np.swapaxes(K[..., k, :, :], -1, -2) * scale
                outs.append(_softmax(np.where(mask, S, -np.inf)) @ V[..., k, :, :])   # (B, B, n, d_k)
            return np.concatenate(outs, axis=-1)
        merged = [one_head_at_a_time(split) for split in {split for split, _ in ways}]
        return [m if "no_output_projection" in faults else m @ args["W_O"] for m in merged]
    found = {split: heads(split) for split in {split for split, _ in ways}}
    merged = [_merge(found[split], merge) for split, merge in ways]
    return [m if "no_output_projection" in faults else m @ args["W_O"] for m in merged]


SPLIT = checker_numeric.Piece(
    name="split_heads", cases=SPLIT_HEADS, arguments=("x", "num_heads"),
    expected=lambda a: split_heads(a["x"], a["num_heads"]),
    model=lambda a, faults: _split(a["x"], a["num_heads"], _one(faults)),
    faults=SPLIT_FAULTS, shape="(..., num_heads, n, d_model / num_heads)", returns="the heads",
    hint="Print split_heads(np.arange(12.0).reshape(3, 4), 2) beside yours: head 0 holds features 0 and 1 of every "
         "token.")

MERGE = checker_numeric.Piece(
    name="merge_heads", cases=MERGE_HEADS, arguments=("x",),
    expected=lambda a: merge_heads(a["x"]),
    model=lambda a, faults: _merge(a["x"], _one(faults)),
    faults=MERGE_FAULTS, shape="(..., n, num_heads * d_k)", returns="the merged features",
    hint="Check that merge_heads(split_heads(x, h)) gives x back for x = np.arange(12.0).reshape(3, 4).")

# --------------------------------------------------------------------------
# The attention a multi-head function calls: is the mask fault its own, or that attention's?
# --------------------------------------------------------------------------

def _mask_fault_of(attention, time_limit):
    """'ignores' when ``attention`` (Q, K, V, mask) is attention that gives the unmasked output under a causal
    mask, 'takes no mask' when it has no mask argument (and is right without one); None otherwise."""
    case = next(c for c in ATTENTION if c.name == "causal mask")
    args = [("Q", case.Q), ("K", case.K), ("V", case.V)]
    place = parameter(attention, MASK_NAMES, 3, default_none=True)
    plain = scaled_dot_product_attention(case.Q, case.K, case.V)[0]
    if place is None:
        run = call(attention, case, args, {}, time_limit, read=lambda v: read_numbers(v, pair=True))
        return "takes no mask" if run.finished and matches(run.out, plain) else None
    how, where = place
    run = call(attention, case, args + ([("mask", case.mask)] if how == "position" else []),
               {where: case.mask} if how == "keyword" else {}, time_limit, read=lambda v: read_numbers(v, pair=True))
    masked = scaled_dot_product_attention(case.Q, case.K, case.V, mask=case.mask)[0]
    return "ignores" if run.finished and matches(run.out, plain) and not matches(run.out, masked) else None


def _blame_the_attention(fn, verdict, time_limit):
    """The verdict, told that the attention ``fn`` calls ignores its mask (or takes none) when that is so:
    then the mask fault may not be fn's own (notebook 01's attention has no mask yet; 04 adds it). A
    TypeError raised by passing a mask to an attention that takes none is ``no_mask_argument``."""
    keys = (verdict.mistake or "").split("+")
    no_place = keys == ["no_mask_argument"] or keys == ["raised"] and "It raised TypeError" in verdict.text
    if "mask_ignored" not in keys and not (no_place and parameter(fn, MASK_NAMES, 6, default_none=True) is not None):
        return verdict
    for attention in functions_called(fn, lambda name: "attention" in name.lower()):
        fault = _mask_fault_of(attention, time_limit)
        if fault is None or fault == "ignores" and "mask_ignored" not in keys:
            continue
        name, callee = fn_name(fn), fn_name(attention)
        told = (f"The attention {name} calls, {callee}, "
                + ("ignores its mask: under a causal mask it gives the unmasked output." if fault == "ignores"
                   else "takes no mask.")
                + f" Attention is built in {BUILT_IN['attention']}: finish its mask part, save workbook.py, and "
                f"run this cell again. Then check that {name} passes the mask to each head's attention.")
        if "mask_ignored" in keys:
            return dataclasses.replace(verdict, text=verdict.text.replace(MULTI_HEAD_FAULTS["mask_ignored"][1], told))
        # "<name> takes no mask" or "raised": it takes one, and the attention it calls does not
        return dataclasses.replace(verdict, mistake="no_mask_argument", text=told + "\n" + verdict.text.partition("\n")[2])
    return verdict


class _MultiHead(checker_numeric.Piece):
    """multi_head_attention's piece: its verdict also asks whether a mask fault belongs to the attention it calls."""

    def check(self, fn, time_limit):
        return _blame_the_attention(fn, checker_numeric.check(self, fn, time_limit), time_limit)


MULTI = _MultiHead(
    name="multi_head_attention", cases=MULTI_HEAD, arguments=("X", "W_Q", "W_K", "W_V", "W_O", "num_heads"),
    expected=lambda a: multi_head_attention(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], a["num_heads"],
                                            mask=a.get("mask"))[0],
    model=_multi_head, faults=MULTI_HEAD_FAULTS, shape="(..., n, d_model)", returns="the output",
    hint="Compare it with helpers.attention.multi_head_attention step by step: Q = X @ W_Q, split into heads, "
         "scores / sqrt(d_k), mask, softmax, weights @ V, merge, @ W_O.",
    optional={"mask": (MASK_NAMES, 6)}, pair=True)

