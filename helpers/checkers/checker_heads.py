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
                                no_scaling, single_head, mask_ignored, head_axis, interleaved

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
from helpers.checkers import checker_attention, checker_numeric, fitted
from helpers.checkers.battery import ATTENTION, MERGE_HEADS, MULTI_HEAD, SPLIT_HEADS
from helpers.checkers.checker_attention import MASK_NAMES, axis_words, fit_scale, scale_words
from helpers.checkers.runner import call, fn_name, functions_called, matches, parameter, read_numbers

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
        "layout", "Your function works on one sentence but not on a batch: .transpose(1, 0, 2) (or "
        "swapaxes(0, 1)) names the axes of a 3-D array. Swap only the heads and tokens axes, counted from the end: "
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
    "no_max_subtraction": (
        "softmax", "Your softmax does not subtract each row's maximum, so a large score overflows exp: exp(1000) "
        "is inf, and inf / inf is NaN. Subtract each row's maximum before np.exp: "
        "e = np.exp(s - s.max(axis=-1, keepdims=True))."),
    "max_over_everything": (
        "softmax", "You subtract one maximum for the whole array, not each row's own: a row whose scores lie far "
        "below it underflows to 0 / 0, NaN. Subtract each row's maximum before np.exp: "
        "e = np.exp(s - s.max(axis=-1, keepdims=True))."),
    "head_axis": (
        "mask", "Your heads do not meet their own sentence's mask: the padding of one sentence hides keys in "
        "another's heads."),
    "interleaved": (
        "layout", "Your heads take the features dealt out in turn (head 0 gets features 0, num_heads, 2 num_heads, "
        "...), a reshape to (..., n, d_k, num_heads). Each head owns a contiguous slice: head h gets features h*d_k "
        "to (h+1)*d_k - 1. Split: reshape to (..., n, num_heads, d_k), then swap axes -2 and -3. Merge: swap them "
        "back, then reshape."),
}
"""Every mistake the multi_head_attention checker names: key -> (part, what it tells the learner)."""

HEAD_AXIS_WAYS = {
    "loop": "Your per-head attention sees the mask's head axis: a mask (B, 1, 1, n) against one head's scores "
            "(B, n, n) broadcasts to (B, B, n, n), every sentence against every sentence's padding. Drop it "
            "(mask[..., 0, :, :], shape (B, 1, n)) when you loop over heads, or split the heads first and attend "
            "once, so that the head axis meets the heads.",
    "heads_first": "You stack the heads before the batch, (num_heads * B, n, d_k): head 0 of every sentence, then "
                   "head 1, ... (transpose(2, 0, 1, 3), then a reshape), but repeat the mask sentence by sentence, "
                   "np.repeat(mask, num_heads, axis=0), in (B * num_heads) order: head k of sentence b gets the "
                   "mask of sentence (k B + b) // num_heads. Repeat it the way the heads are stacked, "
                   "np.tile(mask, (num_heads, 1, 1)), or keep the heads in their own axis, (B, num_heads, n, d_k), "
                   "where the mask (B, 1, 1, n) broadcasts over them.",
}
"""The two ways of ``head_axis`` the checker models, each with its own words (said after the fault's text): a loop
over heads handing each the whole mask; heads stacked before the batch with the mask repeated in the batch's order
(lsdefine/attention-is-all-you-need-keras #36)."""


def _softmax(S, axis=-1, naive=False):
    """The course's guarded softmax along ``axis``; naive: True, no maximum subtracted; "global": one maximum of
    the whole array."""
    if naive == "global":
        S = S - np.max(S)
    elif not naive:
        top = S.max(axis=axis, keepdims=True)
        S = S - np.where(np.isfinite(top), top, 0.0)
    e = np.exp(S)
    total = e.sum(axis=axis, keepdims=True)
    return e / (total if naive else np.where(total == 0, 1.0, total))   # a naive softmax: 0 / 0 is NaN


def _listed(found):
    return [] if found is None else found if isinstance(found, list) else [found]


def _right_merge(out, X):
    return np.swapaxes(out, -2, -3).reshape(X.shape)


def _multi_head(args, faults, scale=None, axis=-1, perm=None, fill=-np.inf, way=None, mask_2d=True):
    """Multi-head attention in plain numpy, with the named faults; a list when a fault can be written several
    ways (a reshape alone in the split, in the merge, or in both). The families' parameters: scale, the factor of
    the scores (None: 1/sqrt(d_k)); axis, the softmax's; perm, a fitted.AxesPermutation of the split's
    (..., n, num_heads, d_k) reshape with where it is made: (perm, "both"), in the split and undone the same way in
    the merge, (perm, "split") or (perm, "merge") alone; fill: what hidden scores are set to (-inf, or -1e9 as many
    learners write it: the two differ once the softmax runs along another axis than the keys'); way: the way of
    ``head_axis`` (HEAD_AXIS_WAYS; None: both). ``mask_ignored`` is written two ways: the mask ignored always, or
    only when it is not 2-D (``if mask.ndim == 2``: padding_mask's (B, 1, 1, n) ignored, a causal (n, n) applied);
    mask_2d False: the first alone."""
    X, h, mask = args["X"], args["num_heads"], args.get("mask")
    if "mask_ignored" in faults and np.ndim(mask) == 2 and mask_2d:   # ignored always, or only when not 2-D
        return [m for f in (faults, faults - {"mask_ignored"})
                for m in _listed(_multi_head(args, f, scale, axis, perm, fill, way, mask_2d=False))]
    if "single_head" in faults:
        h = 1
    d_k = X.shape[-1] // h
    if scale is None:
        scale = 1.0 if "no_scaling" in faults else 1 / np.sqrt(X.shape[-1] if "scale_by_d_model" in faults else d_k)
    naive = [True] if "no_max_subtraction" in faults else ["global"] if "max_over_everything" in faults else [False]

    def heads(split, naive=False, given=None):
        if split == "perm":
            Q, K, V = (perm.apply(_cut(X @ args[W], h)) for W in ("W_Q", "W_K", "W_V"))
        else:
            Q, K, V = (_split(X @ args[W], h, split) for W in ("W_Q", "W_K", "W_V"))
        S = Q @ np.swapaxes(K, -1, -2) * scale
        if mask is not None and "mask_ignored" not in faults:
            S = np.where(mask if given is None else given, S, fill)
        return _softmax(S, axis, naive) @ V

    if perm is not None:
        perm, where = perm
        out = heads("perm" if where in ("both", "split") else None)
        merged = perm.undo(out).reshape(X.shape) if where in ("both", "merge") else _right_merge(out, X)
        return merged @ args["W_O"]
    wrong = next((k for k in ("reshape_without_transpose", "interleaved") if k in faults), None)
    ways = [(wrong, wrong), (wrong, None), (None, wrong)] if wrong else [(None, None)]   # (split, merge)
    if "head_axis" in faults and mask is not None and mask.ndim > 2:   # a loop over heads, each given the whole mask
        if way is None:
            return [m for w in HEAD_AXIS_WAYS for m in _multi_head(args, faults, scale, axis, perm, fill, way=w)]
        if way == "heads_first":             # (h B) heads, the mask repeated in (B h) order
            if X.ndim != 3 or mask.shape != (X.shape[0], 1, 1, X.shape[1]):
                return []
            B = X.shape[0]
            flat = np.repeat(mask.reshape(B, 1, mask.shape[-1]), h, axis=0)           # (B h, 1, n)
            given = np.stack([flat[k * B + np.arange(B)] for k in range(h)], axis=1)   # (B, h, 1, n)
            merged = [_merge(heads(split, how, given), merge) for how in naive for split, merge in ways]
            return [m if "no_output_projection" in faults else m @ args["W_O"] for m in merged]
        def one_head_at_a_time(split):
            Q, K, V = (_split(X @ args[W], h, split) for W in ("W_Q", "W_K", "W_V"))
            outs = []
            for k in range(h):
                S = Q[..., k, :, :] @ np.swapaxes(K[..., k, :, :], -1, -2) * scale
                outs.append(_softmax(np.where(mask, S, -np.inf)) @ V[..., k, :, :])   # (B, B, n, d_k)
            return np.concatenate(outs, axis=-1)
        merged = [one_head_at_a_time(split) for split in {split for split, _ in ways}]
        return [m if "no_output_projection" in faults else m @ args["W_O"] for m in merged]
    merged = []
    for how in naive:
        found = {split: heads(split, how) for split in {split for split, _ in ways}}
        merged += [_merge(found[split], merge) for split, merge in ways]
    return [m if "no_output_projection" in faults else m @ args["W_O"] for m in merged]


# --------------------------------------------------------------------------
# Faults with a parameter: a transpose with fixed axes (split, merge, multi-head), a scale, a softmax axis
# --------------------------------------------------------------------------

def _cut(x, h):
    """x (..., n, d_model) reshaped to (..., n, num_heads, d_k): where a split's transpose starts."""
    return x.reshape(*x.shape[:-1], h, x.shape[-1] // h)


def _axis_names(ndim, last):
    """Names of the axes of an array of ``ndim`` axes ending with the three of ``last``."""
    lead = ndim - len(last)
    first = ["the batch axis"] if lead == 1 else [f"leading axis {k}" for k in range(lead)]
    return first + list(last)


SPLIT_AXES = ("the tokens' axis", "the heads' axis", "each head's features (d_k)")
HEADS_AXES = ("the heads' axis", "the tokens' axis", "each head's features (d_k)")


_what_it_swaps = fitted.what_it_swaps


STACK_FIRST_AXES = ("what it takes for the heads' axis", "what it takes for the batch axis", "the tokens' axis",
                    "each head's features (d_k)")
"""The axes of (..., num_heads, n, d_k) read by a reshape as (num_heads, B, n, d_k): the names of what the code
believes it transposes."""


def _perm_words(perm, run, source, names, whole, fix):
    ndim = np.ndim(source)
    if perm.read == "stack_first":
        plain = fitted.AxesPermutation(perm.axes, perm.swap)
        return (f"You reshape the heads to (num_heads, B, n, d_k), as if they stood before the batch, then transpose "
                f"with fixed axes, {perm.formula()} {whole}: {_what_it_swaps(plain, 4, STACK_FIRST_AXES)}. The heads "
                "stand after the batch, (B, num_heads, n, d_k), so that reshape deals one sentence's heads out to "
                f"several sentences (it reads the numbers in memory order). {fix}")
    batch = (f"You make one sentence a batch of one and transpose with fixed axes for {perm.ndim} axes"
             if perm.read == "batch_of_one" else "You transpose with fixed axes")
    return (f"{batch}, {perm.formula()} {whole}: on {run.case.words}, "
            f"{_what_it_swaps(perm, ndim, names)}. Fixed axes do one thing to a batch and another to one sentence. "
            f"{fix}")


def _fit_perm(runs, expected, fit):
    """The permutations fitted on the first wrong output, then on the first right one: code with fixed axes is
    often right on a batch and refuses one sentence (transpose(0, 2, 1, 3)), so no wrong output is left to fit."""
    found = []
    for wrong in (True, False):
        run = next((r for r in runs if r.out is not None and wrong != matches(r.out, expected(r.case.args))), None)
        if run is not None:
            found += fit(run.case.args, run.out)
    return found


def _fit_split_perm(runs):
    return _fit_perm(runs, lambda a: np.asarray(split_heads(a["x"], a["num_heads"])),
                     lambda a, out: fitted.fit_permutation(_cut(a["x"], a["num_heads"]), out, reads=fitted.READS))


def _right_swap(perm):
    return perm.swap and set(perm.axes) == {-2, -3} and not perm.read


SPLIT_PERM = fitted.Family(
    "axes_permuted", "layout", fit=_fit_split_perm,
    model=lambda a, perm: perm.apply(_cut(a["x"], a["num_heads"])),
    words=lambda perm, run: _perm_words(
        perm, run, _cut(run.case.args["x"], run.case.args["num_heads"]),
        _axis_names(run.case.args["x"].ndim + 1, SPLIT_AXES), "after the reshape to (..., n, num_heads, d_k)",
        "Swap only the tokens and heads axes, counted from the end: np.swapaxes(x, -2, -3)."),
    right=_right_swap)


def _merge_ways(x, y):
    """The merged arrays a merge makes of its transposed heads y: reshaped to x's (..., n, num_heads * d_k), or its
    own last two axes merged."""
    *lead, h, n, d_k = x.shape
    ways = []
    for shape in (tuple(lead) + (n, h * d_k), y.shape[:-2] + (-1,)):
        try:
            ways.append(y.reshape(shape))
        except Exception:
            pass
    return ways


def _fit_merge_perm(runs):
    return _fit_perm(runs, lambda a: np.asarray(merge_heads(a["x"])),
                     lambda a, out: fitted.fit_permutation(a["x"], out, after=lambda y: _merge_ways(a["x"], y),
                                                           reads=fitted.READS))


def _merge_model(a, perm):
    ways = _merge_ways(a["x"], perm.apply(a["x"]))
    return ways or None


MERGE_PERM = fitted.Family(
    "axes_permuted", "layout", fit=_fit_merge_perm, model=_merge_model,
    words=lambda perm, run: _perm_words(
        perm, run, run.case.args["x"], _axis_names(run.case.args["x"].ndim, HEADS_AXES),
        "before the reshape", "Swap only the heads and tokens axes, counted from the end, np.swapaxes(x, -2, -3), "
        "then reshape to (..., n, num_heads * d_k)."),
    right=_right_swap)


def _mha_sizes(a):
    X, h = a["X"], a["num_heads"]
    d_k = X.shape[-1] // h
    return {"d_k": d_k, "d_model": X.shape[-1], "num_heads": h, "n": X.shape[-2], "len(X)": X.shape[0],
            "sqrt(d_k) * num_heads": float(np.sqrt(d_k)) * h}


MHA_MEANINGS = {"d_k": "d_k = d_model / num_heads is each head's width", "d_model": "d_model = X.shape[-1]",
                "num_heads": "num_heads is the number of heads", "n": "n = X.shape[-2] is the number of tokens",
                "len(X)": "len(X) = X.shape[0] is the number of tokens for one sentence, the batch size for a batch",
                "sqrt(d_k) * num_heads": "sqrt(d_k) * num_heads is each head's sqrt(d_k) times the number of heads"}


def _mha_fit_scale(run):
    """The factor of the scores read off the output of one multi-head input (heads split and merged right)."""
    a, out = run.case.args, run.out
    if out is None or out.shape != a["X"].shape or not np.all(np.isfinite(out)):
        return None
    X, h, mask = a["X"], a["num_heads"], a.get("mask")
    Q, K, V = (split_heads(X @ a[W], h) for W in ("W_Q", "W_K", "W_V"))

    def finish(W):                          # (k, ..., h, n, n) -> (k, ..., n, d_model)
        heads = W @ V
        return np.swapaxes(heads, -2, -3).reshape(heads.shape[:1] + X.shape) @ a["W_O"]

    return fit_scale(Q @ np.swapaxes(K, -1, -2), finish, out, mask)


def _mha_rules(runs, constant):
    for run in runs:
        if run.out is not None and not matches(run.out, MULTI.expected(run.case.args)):
            s = _mha_fit_scale(run)
            if s is not None:
                rules = fitted.size_rules(1 / s, _mha_sizes(run.case.args))
                return [r for r in rules if (r.name is None) == constant]
    return []


def _mha_scale_words(rule, run):
    a = run.case.args
    if rule.name is None:
        return (f"You divide each head's scores by {rule.formula()} whatever d_k is, which is right only when "
                f"d_k = {fitted.SizeRule(None, 1.0, rule.factor ** 2).formula()}. Divide by np.sqrt(d_k), "
                "d_k = d_model / num_heads, each head's width: a fixed number does not follow it.")
    return scale_words(rule, _mha_sizes(a), MHA_MEANINGS, run.case.words, _mha_sizes(a)["d_k"]).replace(
        "You divide the scores", "You divide each head's scores").replace(
        "Divide by np.sqrt(K.shape[-1]): only the keys' width", "Divide by np.sqrt(d_k), d_k = d_model / num_heads: "
        "only each head's width").replace("d_k the keys' width", "each head's width")


def _is_d_k(rule):
    return rule.name == "d_k" and rule.power == 0.5 and rule.factor == 1.0


MHA_CONSTANT = fitted.Family(
    "constant_scale", "scale", fit=lambda runs: _mha_rules(runs, True),
    model=lambda a, rule, faults=frozenset(): _multi_head(a, faults, scale=1 / rule.value(_mha_sizes(a))),
    words=_mha_scale_words)
MHA_SHAPE = fitted.Family(
    "scale_by_shape", "scale", fit=lambda runs: _mha_rules(runs, False),
    model=lambda a, rule, faults=frozenset(): _multi_head(a, faults, scale=1 / rule.value(_mha_sizes(a))),
    words=_mha_scale_words, right=_is_d_k)


def _mha_axis_words(axis, run):
    ndim = run.case.args["X"].ndim + 1
    if isinstance(axis, tuple):
        return _mha_axes_words(axis, run, ndim)
    what = axis_words(axis, ndim, heads=True)
    where = (f"on {run.case.words}, the scores have shape (..., num_heads, n, n) and that is {what}" if what else
             f"the scores of {run.case.words} have {ndim} axes, so numpy refuses it")
    return (f"Your softmax runs along axis={axis}: {where}. The weights must sum to 1 along each query's row of "
            "keys, the last axis, whatever comes before it: axis=-1, with keepdims=True when you divide.")


def _mha_axes_words(axes, run, ndim):
    """The verdict of a softmax over two axes at once, the keys' and another (flattened into one row)."""
    names = [axis_words(a, ndim, heads=True) for a in axes]
    if None in names:
        where = f"the scores of {run.case.words} have {ndim} axes, so numpy refuses it"
    else:
        where = f"on {run.case.words}, that is {' and '.join(names)} together, one distribution over both"
    return (f"Your softmax runs over two axes at once, axis={axes} (or the two flattened into one row before the "
            f"softmax): {where}, so the weights of one query sum to 1 over all of them, not over each head's keys. "
            "Each head's weights of each query must sum to 1 along the keys alone, the last axis: axis=-1, with "
            "keepdims=True when you divide.")


def _mha_axes(runs):
    """The softmax axes multi-head attention may be written along: each fixed axis but the last, then the keys' axis
    with one other at once (heads and keys flattened into one row, facebookresearch/detr #247)."""
    ndim = max(r.case.args["X"].ndim + 1 for r in runs)
    return fitted.axis_candidates(ndim, but_last=True) + [(-k, -1) for k in range(3, ndim + 1)] + [(-2, -1)]


MHA_AXIS = fitted.Family(
    "wrong_axis", "softmax", fit=_mha_axes,
    model=lambda a, axis, faults=frozenset(): [m for fill in (-np.inf, -1e9)
                                               for m in _multi_head(a, faults, axis=axis, fill=fill)],
    words=_mha_axis_words)


def _mha_perms(runs):
    """Every fixed-axes transpose a split of (..., n, num_heads, d_k) may be written with: each swap, spelled
    positive, from the end or mixed, for 4 and 3 axes, then every order of 4 axes; each in the split alone, in the
    merge alone, then in both (the narrowest claim the outputs bear out: a split that numpy refuses on one sentence
    never reaches the merge, and on a batch the same fixed axes in the merge are right)."""
    found = fitted.fixed_permutations((4, 3), orders_of=(4,))
    return [(perm, where) for perm in found for where in ("split", "merge", "both")]


MHA_PERM = fitted.Family(
    "axes_permuted", "layout", fit=_mha_perms,
    model=lambda a, value: [_multi_head(a, frozenset(), perm=value, fill=fill) for fill in (-np.inf, -1e9)],
    words=lambda value, run: _perm_words(
        value[0], run, _cut(run.case.args["X"], run.case.args["num_heads"]),
        _axis_names(run.case.args["X"].ndim + 1, SPLIT_AXES),
        {"both": "in the split (after the reshape to (..., n, num_heads, d_k)) and in the merge",
         "split": "in the split (after the reshape to (..., n, num_heads, d_k))",
         "merge": "in the merge (before the reshape back to (..., n, d_model))"}[value[1]],
        "Swap only the tokens and heads axes, counted from the end: np.swapaxes(x, -2, -3), " + {
            "both": "in the split and in the merge.",
            "split": "in the split (and write the merge's transpose the same way).",
            "merge": "in the merge (and write the split's transpose the same way)."}[value[1]]),
    right=lambda value: _right_swap(value[0]))


SPLIT = checker_numeric.Piece(
    name="split_heads", cases=SPLIT_HEADS, arguments=("x", "num_heads"),
    expected=lambda a: split_heads(a["x"], a["num_heads"]),
    model=lambda a, faults: _split(a["x"], a["num_heads"], _one(faults)),
    faults=SPLIT_FAULTS, shape="(..., num_heads, n, d_model / num_heads)", returns="the heads",
    hint="Print split_heads(np.arange(12.0).reshape(3, 4), 2) beside yours: head 0 holds features 0 and 1 of every "
         "token.", families=(SPLIT_PERM,))

MERGE = checker_numeric.Piece(
    name="merge_heads", cases=MERGE_HEADS, arguments=("x",),
    expected=lambda a: merge_heads(a["x"]),
    model=lambda a, faults: _merge(a["x"], _one(faults)),
    faults=MERGE_FAULTS, shape="(..., n, num_heads * d_k)", returns="the merged features",
    hint="Check that merge_heads(split_heads(x, h)) gives x back for x = np.arange(12.0).reshape(3, 4).",
    families=(MERGE_PERM,))

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


SYMPTOMS = ("raised", "exit", "returned_none", "not_numbers", "wrong_shape", "nan_inf", "different")
"""Verdicts that name no cause: a wrong attention the function calls may be it."""
OWN_VERDICTS = ("not_attempted", "too_slow", "mutates_inputs", "low_precision", "no_mask_argument")
"""Verdicts about the multi-head function itself, never sent on to the attention it calls."""


def _blame_the_inner_attention(fn, verdict, time_limit):
    """The verdict, told that the attention ``fn`` calls is wrong on its own, with that attention's own key and
    diagnose's verdict on it, when ``fn`` is wrong (raises, NaN, a fault) and its attention is: the learner then
    debugs the right function (as finale.check_your_block does for a block; notebook 05 calls attention on heads)."""
    if verdict.correct or verdict.mistake in OWN_VERDICTS:
        return verdict
    keys = set(verdict.mistake.split("+"))
    for attention in functions_called(fn, lambda name: "attention" in name.lower() and "multi" not in name.lower()):
        try:                                 # the attention checker, as diagnose(attention) runs it
            own = checker_attention.check(attention, time_limit)
        except Exception:
            continue
        if own.correct or own.mistake in ("not_attempted", "too_slow", "interrupted", "not_diagnosed"):
            continue
        # the attention's fault explains the symptom, or is the fault found (not one the battery never meets here)
        if not (keys & set(SYMPTOMS) or keys & set(own.mistake.split("+"))):
            continue
        name, callee = fn_name(fn), fn_name(attention)
        told = (f"The attention {name} calls, {callee}, is wrong on its own: diagnose({callee}) finds {own.mistake}. "
                f"Fix it first, in workbook.py, and run this cell again. diagnose says of {callee}:\n{own.text}\n"
                f"What {name} gives with it:\n")
        return dataclasses.replace(verdict, mistake=own.mistake, text=told + verdict.text)
    return verdict


def _head_axis_way(args, out):
    """The words of the way of ``head_axis`` whose model gives ``out`` (alone or with one fault of another part)."""
    others = [frozenset()] + [frozenset([k]) for k in MULTI_HEAD_FAULTS if MULTI_HEAD_FAULTS[k][0] != "mask"]
    for way, words in HEAD_AXIS_WAYS.items():
        for more in others:
            if any(matches(out, np.asarray(m, dtype=float))
                   for m in _multi_head(args, more | {"head_axis"}, way=way)):
                return words
    return HEAD_AXIS_WAYS["loop"]


def _mask_ignored_note(args):
    """mask_ignored's note when the first mask it ignores is not 2-D (the 2-D ones before it were applied)."""
    mask = args.get("mask")
    if mask is None or np.ndim(mask) == 2:
        return None
    return (f"Here it ignores a mask of shape {tuple(np.shape(mask))}, padding_mask's (B, 1, 1, n), after applying "
            "the 2-D causal masks before it: a mask applied only when it is 2-D (if mask.ndim == 2) misses it. Apply "
            "every mask the same way; np.where broadcasts it over the heads and the queries.")


def _interleaved_where(args, out):
    """Where the interleaved heads are: the split, the merge, or both (the first way whose model gives ``out``)."""
    for split, merge, where in (("interleaved", "interleaved", "in the split and in the merge"),
                                ("interleaved", None, "in the split"), (None, "interleaved", "in the merge")):
        X, h = args["X"], args["num_heads"]
        Q, K, V = (_split(X @ args[W], h, split) for W in ("W_Q", "W_K", "W_V"))
        S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1] // h)
        if args.get("mask") is not None:
            S = np.where(args["mask"], S, -np.inf)
        if matches(out, _merge(_softmax(S) @ V, merge) @ args["W_O"]):
            return f"(Here {where}.)"
    return None


def _longer_tuple_note(fn, time_limit):
    """The note attention's verdict gives a function that returns three things or more, for multi-head attention:
    one more call, on the first input."""
    case = MULTI_HEAD[0]
    run = call(fn, case, [(name, case.args[name]) for name in MULTI.arguments], {}, time_limit,
               read=lambda value: read_numbers(value, pair=True))
    value = run.value
    if not (isinstance(value, tuple) and len(value) > 2 and isinstance(value[0], np.ndarray)):
        return ""
    n = len(value)
    return "\n" + checker_attention.LONGER_TUPLE.format(
        n=str(n) if n > 9 else checker_attention.NUMBERS[n], piece="multi_head_attention")


class _MultiHead(checker_numeric.Piece):
    """multi_head_attention's piece: its verdict also asks whether a fault belongs to the attention it calls (a
    mask it ignores or takes none of; any fault of its own)."""

    def check(self, fn, time_limit):
        verdict = checker_numeric.check(self, fn, time_limit)
        blamed = _blame_the_attention(fn, verdict, time_limit)
        if blamed is verdict:
            blamed = _blame_the_inner_attention(fn, verdict, time_limit)
        if blamed.mistake in ("not_attempted", "too_slow", "interrupted", "exit", "raised"):
            return blamed
        note = _longer_tuple_note(fn, time_limit)
        return dataclasses.replace(blamed, text=blamed.text + note) if note else blamed


MULTI = _MultiHead(
    name="multi_head_attention", cases=MULTI_HEAD, arguments=("X", "W_Q", "W_K", "W_V", "W_O", "num_heads"),
    expected=lambda a: multi_head_attention(a["X"], a["W_Q"], a["W_K"], a["W_V"], a["W_O"], a["num_heads"],
                                            mask=a.get("mask"))[0],
    model=_multi_head, faults=MULTI_HEAD_FAULTS, shape="(..., n, d_model)", returns="the output",
    hint="Compare it with helpers.attention.multi_head_attention step by step: Q = X @ W_Q, split into heads, "
         "scores / sqrt(d_k), mask, softmax, weights @ V, merge, @ W_O.",
    optional={"mask": (MASK_NAMES, 6)}, pair=True,
    notes={"head_axis": _head_axis_way, "mask_ignored": lambda a, out: _mask_ignored_note(a),
           "interleaved": _interleaved_where},
    families=(MHA_CONSTANT, MHA_SHAPE, MHA_AXIS, MHA_PERM))

