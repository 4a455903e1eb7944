"""Exercises of notebook 08: one online-softmax step, the size of a KV cache; and counting dot products (for instructors)."""

from __future__ import annotations

import numpy as np

from helpers.exercises.base import ChoiceExercise, _Names, _NumericExercise, _code
from helpers.exercises.feedback import EXACT_ATOL, _fmt
from helpers.inputs import positive_whole as _whole_number

__all__ = [
    "AttentionCountExercise", "OnlineSoftmaxStepExercise", "KVCacheSizeExercise", "EncoderCacheExercise",
    "RunningMaxExercise",
]


# --------------------------------------------------------------------------
# Notebook 08: cost, the online softmax and the KV cache
# --------------------------------------------------------------------------




class AttentionCountExercise(_NumericExercise):
    """How many query-key dot products one forward pass computes: num_layers * num_heads * n**2.

    n: tokens; num_heads: heads per layer; num_layers: layers. Every head of
    every layer scores each of the n queries against each of the n keys
    (no mask, as in an encoder). The answer is one whole number. Notebook 08
    counts this in its section 1 and no longer asks it; the exercise stays for
    instructors who want it (tests/test_tiling_exercises.py checks it).
    """

    def __init__(self, n, num_heads=1, num_layers=1):
        n, H, L = (_whole_number(v, name) for v, name in ((n, "n"), (num_heads, "num_heads"), (num_layers, "num_layers")))
        self.expected = np.asarray(float(L * H * n * n))
        self.atol = 0.5
        self.shape_note = "one whole number"
        self.title = f"the number of dot products for {n} tokens, {H} heads and {L} layers"
        variants = [
            ("one_head_one_layer",
             f"That is n × n = {n * n:,}, the count for one head of one layer. Every head of every layer scores "
             f"all the pairs again: multiply by the {H} heads and the {L} layers.", n * n if H * L > 1 else None),
            ("heads_forgotten",
             f"You counted the layers but not the heads: each of the {H} heads of a layer computes its own n × n "
             "scores.", L * n * n if H > 1 and L > 1 else None),
            ("layers_forgotten",
             f"You counted the heads but not the layers: each of the {L} layers runs its heads again.",
             H * n * n if H > 1 and L > 1 else None),
            ("linear_count",
             "That grows like n, one dot product per token. Each query is scored against every key, so a head "
             "computes n × n of them.", L * H * n),
            ("causal_half",
             "That counts only the pairs a causal mask keeps, n(n + 1)/2 per head. The question counts every "
             "pair, as an encoder (no mask) computes them.", L * H * n * (n + 1) // 2),
        ]
        self._set_variants([(k, m, float(v)) for k, m, v in variants if v is not None])
        self.hint_text = ("Start with one head of one layer: how many queries, how many keys, and how many pairs "
                          "of one query and one key? Then every head of every layer does the same again.")
        self.solution_text = _code([("my_per_head = " + f"{n} * {n}", f"{n * n:,} pairs of a query and a key"),
                                    (f"answer = {L} * {H} * my_per_head", f"{L * H * n * n:,}")])
        self.correct_note = (f"{L} layers × {H} heads × {n}² = {L * H * n * n:,} dot products, and doubling n "
                             "would multiply it by 4.")


class OnlineSoftmaxStepExercise(_NumericExercise):
    """One update of the online softmax by hand: the new running maximum and running sum.

    running_max, running_sum: m and l of one row after the keys read so far
    (l is the sum of exp(score - m) over them). block_scores: the (scaled)
    scores of the next block of keys. The answer is [m', l'] with
    m' = max(m, max(block_scores)) and l' = exp(m - m') * l + sum(exp(s - m')).
    names: the notebook's names for "running_max", "running_sum" and
    "block_scores", for the solution.
    """

    def __init__(self, running_max, running_sum, block_scores, names=None):
        try:
            m, l = float(running_max), float(running_sum)
            s = np.atleast_1d(np.asarray(block_scores, dtype=float))
        except (TypeError, ValueError):
            m, l, s = np.nan, np.nan, np.array([np.nan])
        if s.ndim != 1 or not np.all(np.isfinite(s)) or not np.isfinite(m) or not np.isfinite(l) or l < 1:
            raise ValueError("running_max must be a finite number, running_sum a number >= 1 (the key with the "
                             "maximum adds exp(0) = 1) and block_scores a list of finite scores; "
                             f"got {running_max!r}, {running_sum!r}, {block_scores!r}")
        new = max(m, float(s.max()))
        factor = np.exp(m - new)
        self.expected = np.array([new, factor * l + np.exp(s - new).sum()])
        self.atol = EXACT_ATOL
        self.shape_note = "two numbers, [new running max, new running sum]"
        self.title = "the running max and sum after one more block"
        self.asks_for_a_list = True                # the notebook asks for [m_new, l_new]
        moved = new != m
        block_sum = np.exp(s - new).sum()

        def unshifted_forms(total):
            """[m', total] from the inputs, and from the inputs as printed to 3 decimals when that differs: an
            exp of an unshifted score turns the rounding of a score typed by hand into more than atol."""
            with np.errstate(over="ignore"):
                exact, typed = total(m, s), total(round(m, 3), np.round(s, 3))
            return [[new, v] for v in ([exact] if abs(typed - exact) <= self.atol else [exact, typed])
                    if np.isfinite(v)]
        new_key = "the new key" if s.size == 1 else "the new block"
        variants = [
            ("old_max_in_answer",
             "Your m is still the old maximum.", [m, self.expected[1]] if moved else None),
            ("old_sum_dropped",
             f"Your l counts only {new_key}; the old sum{f', times {_fmt(factor)},' if moved else ''} stays in it.",
             [new, block_sum]),
            ("m_and_l_swapped",
             "The order is [m, l].", [self.expected[1], new] if self.expected[1] != new else None),
            ("not_rescaled",
             f"Your sum keeps the old l = {_fmt(l)} as it was, but it was measured against the old maximum "
             f"{_fmt(m)}. Multiply it by exp(m - m') = {_fmt(factor)} before adding the new block.",
             [new, l + np.exp(s - new).sum()] if moved else None),
            ("factor_upside_down",
             f"You multiplied the old sum by exp(m' - m) = {_fmt(1 / factor)}. The factor is exp(m - m') = "
             f"{_fmt(factor)}, at most 1: the old terms shrink when the maximum grows.",
             [new, l / factor + np.exp(s - new).sum()] if moved else None),
            ("old_max_kept",
             f"You kept the old maximum {_fmt(m)}. The running maximum becomes the larger of it and the block's "
             f"largest score, and both parts of the sum are measured against that.",
             [m, l + np.exp(s - m).sum()] if moved else None),
            *[("no_max_subtraction",
               "You added exp(score) for the new scores, without subtracting the new maximum: each new term is "
               "exp(score - m').", value) for value in unshifted_forms(lambda m, s: factor * l + np.exp(s).sum())],
            # the sum of exp(score) over every key so far, nothing shifted
            *[("no_max_subtraction",
               f"Your l is {_fmt(value[1])}, the plain sum of exp(score) over every key so far (e^{_fmt(m)} × "
               f"{_fmt(l)} + the new terms), without subtracting any maximum. Measure each term against the "
               "running max: l' = exp(m - m') × l + exp(score - m') per new score.", value)
              for value in unshifted_forms(lambda m, s: np.exp(m) * l + np.exp(s).sum())],
            ("scores_not_exponentiated",
             "You added the scores themselves. The running sum adds exp(score - m') for each new score.",
             [new, factor * l + (s - new).sum()]),
        ]
        self._set_variants([v for v in variants if v[2] is not None])
        names = _Names(names, {"running_max": "running_max", "running_sum": "running_sum", "block_scores": "block_scores"})
        mn, ln, sn = names["running_max"], names["running_sum"], names["block_scores"]
        self.hint_text = ("The new maximum m' is the larger of m and the block's largest score. The old sum was "
                          "measured against m: multiply it by exp(m - m'), then add exp(score - m') per score.")
        self.solution_text = _code([
            (f"my_m = max({mn}, max({sn}))", _fmt(new)),
            (f"my_l = np.exp({mn} - my_m) * {ln} + np.exp(np.asarray({sn}) - my_m).sum()",
             f"{_fmt(factor)} × {_fmt(l)} + {_fmt(np.exp(s - new).sum())}"),
            ("answer = [my_m, my_l]", _fmt(self.expected)),
        ])
        self.correct_note = (f"m' = {_fmt(new)} and l' = {_fmt(self.expected[1])}: the old sum is re-expressed "
                             "against the new maximum, then the block's terms are added.")


class KVCacheSizeExercise(_NumericExercise):
    """How many numbers a KV cache holds: 2 * num_layers * num_heads * d_k * n.

    A decoder caches one key and one value (each d_k numbers, with d_v = d_k)
    per token, per head, per layer. The answer is a count of numbers, not
    bytes.
    """

    def __init__(self, num_layers, num_heads, d_k, n):
        L, H, d, n = (_whole_number(v, name) for v, name in
                      ((num_layers, "num_layers"), (num_heads, "num_heads"), (d_k, "d_k"), (n, "n")))
        total = 2 * L * H * d * n
        self.expected = np.asarray(float(total))
        self.atol = 0.5
        self.shape_note = "one whole number: how many numbers the cache holds"
        self.title = f"the size of the KV cache of {L} layers, {H} heads of d_k = {d}, at n = {n}"
        variants = [
            ("keys_only",
             f"That is half of it: the keys only (or the values only). The cache keeps a key and a value per token, "
             "per head, per layer: the factor 2.", total // 2),
            ("cache_heads_forgotten",
             f"You left out the heads: each of the {H} heads has its own keys and values.",
             total // H if H > 1 else None),
            ("cache_layers_forgotten",
             f"You left out the layers: each of the {L} layers keeps its own cache.", total // L if L > 1 else None),
            ("cache_tokens_forgotten",
             f"You left out the tokens: each of the {n:,} tokens leaves its own key and value.",
             total // n if n > 1 else None),
            ("cache_n_squared",
             "That counts n × n: the cache holds one key and one value per token, so it grows with n.", total * n),
            ("bytes_float64",
             "That is the size in bytes at 8 bytes per number (float64). The question asks how many numbers.",
             total * 8),
            ("bytes_float32",
             "That is the size in bytes at 4 bytes per number (float32). The question asks how many numbers.",
             total * 4),
        ]
        self._set_variants([(k, m, float(v)) for k, m, v in variants if v is not None])
        self.hint_text = "Each token leaves a key of d_k and a value of d_v = d_k numbers, per head, per layer."
        self.solution_text = _code([(f"my_per_token = 2 * {d}", "a key and a value of d_k numbers each"),
                                    (f"answer = my_per_token * {H} * {L} * {n}", f"{total:,} numbers")])
        self.correct_note = (f"{total:,} numbers: {total * 8 / 2**20:.1f} MiB in float64, "
                             f"{total * 4 / 2**20:.1f} MiB in float32. It grows with n, not n².")



class EncoderCacheExercise(ChoiceExercise):
    """Why an encoder keeps no KV cache: one right reason and three named wrong ones.

    changed: what notebook 08 measures on a two-layer stack when a token is
    added, a dict ``{"encoder": [layer_1, layer_2], "decoder": [layer_1,
    layer_2]}`` of booleans: did the keys of the earlier tokens change in
    that layer, without a mask (an encoder) and with the causal mask (a
    decoder)? A first layer's key is x W_K, its own token alone, so it never
    changes; without a mask every earlier query reads the new key, so the
    layers above change (Vaswani et al. 2017, section 3.2.3, for the causal
    mask that prevents it). The right option, "c", is the one the measurement
    shows; each wrong option's feedback quotes it.

    Feedback keys (ChoiceExercise): None, ``chose_a`` (the cache's size
    taken for n x n), ``chose_b`` (the first layer's keys thought to change),
    ``chose_d`` (a cache thought approximate), ``not_a_choice``.
    Raises ValueError, naming ``changed``, when it is not that dict of
    booleans or does not show the encoder's upper layer moving while the
    decoder's stays and the first layer's keys stay (what the exercise asks
    the learner to read).
    """

    def __init__(self, changed):
        shape_ok = (isinstance(changed, dict) and set(changed) == {"encoder", "decoder"}
                    and all(isinstance(v, (list, tuple)) and len(v) == 2
                            and all(isinstance(x, (bool, np.bool_)) for x in v) for v in changed.values()))
        if not shape_ok:
            raise ValueError("changed must be {'encoder': [layer_1, layer_2], 'decoder': [layer_1, layer_2]} of "
                             f"True/False; got {changed!r}")
        enc, dec = [bool(x) for x in changed["encoder"]], [bool(x) for x in changed["decoder"]]
        if enc != [False, True] or dec[1]:
            raise ValueError("changed must show what the exercise asks about: the encoder's layer-2 keys changed, "
                             f"its layer-1 keys and the decoder's layer-2 keys did not; got {changed!r}")
        super().__init__(
            question="Why can an encoder not keep a KV cache, reusing earlier keys and values when a token is added?",
            options={"a": "its cache would need n × n numbers",
                     "b": "its first layer's keys and values change",
                     "c": "the new token moves every earlier output, and the keys above",
                     "d": "a cache only approximates attention"},
            answer="c",
            why={"a": "The cache holds 2 × layers × heads × d_k × n numbers: it grows with n, for an encoder as "
                      "for a decoder. Its size is not what stops it.",
                 "b": f"Measured above, layer 1's earlier keys changed: {enc[0]}. A first-layer key is x W_K: it "
                      "depends on its own token alone. The layers above are the ones that change.",
                 "c": f"Every earlier query also reads the new key, so its output moves, and so do layer 2's keys "
                      f"(changed: {enc[1]}; under the causal mask: {dec[1]}).",
                 "d": "A KV cache is exact: section 5 matched full causal attention to 1e-12. In an encoder a "
                      "cache would not be approximate, it would be stale."},
            hint="Which layer's keys changed in the encoder?")


class RunningMaxExercise(ChoiceExercise):
    """The online softmax without its running maximum, on scores far larger than the notebook's (understanding).

    scores: (n,) one query's scores; V: (n, d_v) the values; factor: the number the scores are multiplied
    by (a positive number). The checker runs the loop of section 3 twice on factor * scores: with the running
    maximum, and with m kept at 0 (each key adds exp(score) to l and exp(score) v to acc). Without the maximum,
    exp of a score above about 709 is inf in float64, and acc / l is inf / inf = NaN (option "b"). Named wrong
    options: ``max_only_cancels`` (a: the maximum cancels in acc / l, true only when nothing overflows) and
    ``underflow`` (c). Raises ValueError, naming the argument, for shapes that do not fit, a factor that is not a
    positive number, or a factor too small to overflow (the options are then not told apart).
    """

    named = {"a": "max_only_cancels", "c": "underflow"}

    def __init__(self, scores, V, factor):
        s, V = np.asarray(scores, dtype=float), np.asarray(V, dtype=float)
        if s.ndim != 1 or V.ndim != 2 or V.shape[0] != s.size or not np.all(np.isfinite(s)):
            raise ValueError(f"scores must be (n,) finite numbers and V (n, d_v); got {s.shape} and {V.shape}")
        if isinstance(factor, bool) or not isinstance(factor, (int, float, np.integer, np.floating)) or not factor > 0:
            raise ValueError(f"factor must be a positive number; got {factor!r}")
        big = float(factor) * s

        def online(keep_max):
            m, l, acc = (-np.inf if keep_max else 0.0), 0.0, np.zeros(V.shape[1])
            with np.errstate(all="ignore"):
                for score, v in zip(big, V):
                    new = max(m, score) if keep_max else 0.0
                    rescale = np.exp(m - new)
                    l = rescale * l + np.exp(score - new)
                    acc = rescale * acc + np.exp(score - new) * v
                    m = new
                return acc / l

        with_max, without = online(True), online(False)
        if not big.max() > np.log(np.finfo(float).max) or not np.all(np.isnan(without)):
            raise ValueError(f"factor {factor!r} must make exp of the largest score overflow (above 709): the "
                             f"largest is {big.max():.1f}")
        self.with_max, self.without = with_max, without
        top = float(big.max())
        super().__init__(
            question=f"Multiply the scores by {factor:g} (the largest becomes {top:.0f}) and run the loop with m "
                     "kept at 0. What comes out?",
            options={"a": "the same output: the maximum cancels",
                     "b": "NaN",
                     "c": "zeros: the exponentials underflow"},
            answer="b",
            why={"a": f"It cancels only while every exponential fits in float64 (up to exp(709)). exp({top:.0f}) "
                      f"does not: without the maximum the loop gives {_fmt(without)}, with it {_fmt(with_max)}.",
                 "b": f"exp({top:.0f}) overflows to inf, so acc / l is inf / inf = NaN: {_fmt(without)}. With the "
                      f"running maximum: {_fmt(with_max)}.",
                 "c": f"The scores are large and positive, so their exponentials are too large, not too small: "
                      f"exp({top:.0f}) is inf. The loop gives {_fmt(without)}."},
            hint="What is the largest float64?")
