"""Exercises of notebook 10 (attention in current models): one rotary pair by hand, a grouped-query KV cache's
bytes, the reach of stacked sliding windows, and what mixing two rotary layouts does."""

from __future__ import annotations

import numpy as np

from helpers.exercises.base import ChoiceExercise, _NumericExercise, _code
from helpers.inputs import checked_num_kv_heads
from helpers.inputs import positive_whole as _whole_number

__all__ = ["RopePairExercise", "KVCacheBytesExercise", "WindowReachExercise", "RopeLayoutExercise",
           "WindowGrowthExercise"]


class RopePairExercise(_NumericExercise):
    """One pair of features turned by rotary positions (Su et al. 2021, section 3.4.2, eq. 34), by hand.

    pair: the two features (x[2i], x[2i+1]) of a query or key; position: m >= 0; i: the pair's index;
    d: the width (even, > 2i). The answer is the turned pair: angle m * 10000^(-2i/d),
    (x0 cos - x1 sin, x0 sin + x1 cos). Named mistakes: ``rotation_sign`` (turned the other way),
    ``frequency_exponent`` (10000^(-i/d)), ``degrees`` (the angle read in degrees), ``pair_index_ignored``
    (pair 0's rate, angle m), ``not_rotated`` (the pair given back) and ``pair_swapped`` (the right pair,
    its two numbers swapped). All but pair_swapped are the rope checker's keys for the same mistakes.
    """

    def __init__(self, pair, position, i, d):
        x0, x1 = (float(v) for v in np.asarray(pair, dtype=float).reshape(2))
        m = float(position)
        if not np.isfinite(m) or m < 0:
            raise ValueError(f"position must be a finite number >= 0; got {position!r}")
        i, d = int(i), _whole_number(d, "d")
        if d % 2 or not 0 <= i < d // 2:
            raise ValueError(f"d must be even and i a pair index from 0 to d/2 - 1; got i = {i!r}, d = {d!r}")

        def turned(angle):
            return [x0 * np.cos(angle) - x1 * np.sin(angle), x0 * np.sin(angle) + x1 * np.cos(angle)]

        theta = 10000.0 ** (-2 * i / d)
        self.angle = m * theta
        self.expected = np.asarray(turned(self.angle))
        self.atol = 5e-3
        self.shape_note = "two numbers: the turned pair [first, second]"
        self.asks_for_a_list = True
        self.title = f"the pair ({x0:g}, {x1:g}) at position {m:g}, pair i = {i} of d = {d}"
        self._set_variants([
            ("rotation_sign", "You turned the pair the other way. The rotation is (x0 cos - x1 sin, x0 sin + x1 cos).",
             turned(-self.angle)),
            ("frequency_exponent", f"Your angle uses 10000^(-i/d); the rate is 10000^(-2i/d) = {theta:g} "
             "(i counts pairs).", turned(m * 10000.0 ** (-i / d))),
            ("degrees", "Your calculator or code was in degree mode. np.cos and np.sin take radians, and so does the "
             "formula.",
             turned(np.deg2rad(self.angle))),
            ("pair_index_ignored", f"You used pair 0's rate, one radian per position: angle {m:g}. Pair i = {i} turns "
             f"at 10000^(-2i/d) = {theta:g} radians per position.", turned(m)),
            ("not_rotated", "Nothing turned: that is the pair as given. Turn it by the angle m theta_i.", [x0, x1]),
            ("pair_swapped", "Your two numbers are the right ones, swapped: the first is x0 cos - x1 sin.",
             self.expected[::-1]),
        ])
        self.hint_text = (f"First the rate theta_i = 10000^(-2i/d), then the angle m theta_i in radians. "
                          "Then turn the pair counterclockwise by that angle.")
        self.solution_text = _code([
            (f"my_angle = {m:g} * 10000 ** (-2 * {i} / {d})", f"{self.angle:.4g} radians"),
            (f"answer = [{x0:g} * np.cos(my_angle) - {x1:g} * np.sin(my_angle), "
             f"{x0:g} * np.sin(my_angle) + {x1:g} * np.cos(my_angle)]",
             "[" + ", ".join(f"{v:.3f}" for v in self.expected) + "]")])
        self.correct_note = (f"The angle is {self.angle:.4g} radians; the pair keeps its length, "
                             f"{np.hypot(x0, x1):.3f}.")


class KVCacheBytesExercise(_NumericExercise):
    """The bytes of a grouped-query KV cache, in MiB: 2 * num_layers * num_kv_heads * d_k * n * bytes / 2^20.

    Each layer caches a key and a value (d_k numbers each) per token for each of its num_kv_heads
    key/value heads (Ainslie et al. 2023); bits: 16 for 16-bit numbers. Named mistakes:
    ``query_heads_counted`` (num_heads in place of num_kv_heads), ``keys_only`` (K or V forgotten),
    ``cache_layers_forgotten``, ``bits_for_bytes`` (bits counted as bytes), ``bytes_forgotten`` (numbers,
    not bytes: at 2 bytes a number the same as keys_only, and one message then says both), ``decimal_megabytes``
    (10^6 bytes, not 2^20), ``answered_in_bytes`` and ``answered_in_gib`` (the right size in another unit).
    keys_only and cache_layers_forgotten are notebook 08's KVCacheSizeExercise's keys.
    """

    def __init__(self, num_layers, num_heads, num_kv_heads, d_k, n, bits=16):
        L, H, d, n = (_whole_number(v, name) for v, name in
                      ((num_layers, "num_layers"), (num_heads, "num_heads"), (d_k, "d_k"), (n, "n")))
        G = checked_num_kv_heads(num_kv_heads, H)
        bits = _whole_number(bits, "bits")
        if bits % 8:
            raise ValueError(f"bits must be a whole number of bytes (a multiple of 8); got {bits!r}")
        size = bits // 8
        total = 2 * L * G * d * n * size
        MiB = 2 ** 20
        self.expected = np.asarray(total / MiB)
        self.atol = 0.5
        self.shape_note = "one number: the cache's size in MiB (2^20 bytes)"
        self.title = f"the KV cache of {L} layers, {G} key/value heads of d_k = {d}, {n} tokens, {bits}-bit numbers"
        variants = [
            ("query_heads_counted", f"You counted the {H} query heads. Only the {G} key/value heads are cached: "
             "each group of query heads shares one.", 2 * L * H * d * n * size / MiB),
            ("keys_only", "That is half of it: the keys only (or the values only). Each token leaves a key and a "
             "value: the factor 2.", total / 2 / MiB),
            ("cache_layers_forgotten", f"You left out the layers: each of the {L} layers keeps its own cache.",
             total / L / MiB if L > 1 else None),
            ("bits_for_bytes", f"You counted {bits} bytes a number. A {bits}-bit number takes {size} bytes.",
             total * 8 / MiB),
            ("bytes_forgotten", f"You counted numbers, not bytes: each {bits}-bit number takes {size} bytes.",
             total / size / MiB if size > 1 else None),
            ("decimal_megabytes", "That is in megabytes of 10^6 bytes. A MiB is 2^20 = 1,048,576 bytes.",
             total / 1e6),
            ("answered_in_bytes", f"That is the size in bytes, {total:,}. The question asks for MiB: divide by 2^20.",
             total),
            ("answered_in_gib", f"That is the size in GiB (2^30 bytes), {total / 2**30:g}. The question asks for MiB "
             "(2^20 bytes): 1,024 times that.", total / 2**30),
        ]
        self._set_variants([(k, m, v) for k, m, v in variants if v is not None])
        self.hint_text = (f"Per token and layer: a key and a value per key/value head. {bits} bits are {size} bytes; "
                          "then divide by 2^20.")
        self.solution_text = _code([
            (f"my_numbers = 2 * {L} * {G} * {d} * {n}", "a key and a value, per layer, key/value head and token"),
            (f"answer = my_numbers * {size} / 2**20", f"{total / MiB:,.0f} MiB")])
        self.correct_note = (f"{total:,} bytes = {total / MiB:,.0f} MiB. With all {H} heads cached it would be "
                             f"{H // G} times as much.")


class WindowReachExercise(_NumericExercise):
    """How many positions a token can draw on after ``layers`` causal sliding-window layers: layers * (window - 1) + 1.

    Each layer lets a token read itself and the window - 1 tokens before it (sliding_window_mask), so
    each layer reaches window - 1 further back. Named mistakes: ``window_times_layers`` (layers * window:
    the token itself counted every layer; Jiang et al. 2023, section 2, write k x W for a window reaching back
    W positions, one more than this one),
    ``one_layer_only`` (window), ``self_not_counted`` (layers * (window - 1)), ``windows_multiplied``
    (window ** layers). Capped by nothing: the sentence is taken to be long enough.
    """

    def __init__(self, window, layers):
        W, L = _whole_number(window, "window"), _whole_number(layers, "layers")
        reach = L * (W - 1) + 1
        self.expected = np.asarray(float(reach))
        self.atol = 0.4                                  # whole numbers: one apart is told apart
        self.shape_note = "one whole number of positions, the token's own included"
        self.title = f"the reach of {L} layers of window {W}"
        variants = [
            ("window_times_layers", f"{L} × {W} counts the token itself in every layer. Each layer reaches "
             f"{W - 1} tokens further back; the token itself is counted once.", L * W),
            ("one_layer_only", f"That is one layer's reach. The layer above reads outputs that already mix "
             f"{W} positions each.", W),
            ("self_not_counted", "You left out the token's own position: count it once.", L * (W - 1)),
            ("windows_multiplied", "The reaches add, layer by layer, they do not multiply: the windows overlap.",
             W ** L),
        ]
        self._set_variants([(k, m, float(v)) for k, m, v in variants])
        self.hint_text = "One layer: the token and the window - 1 before it. Each layer above adds window - 1 more."
        self.solution_text = _code([(f"answer = {L} * ({W} - 1) + 1", f"{reach} positions")])
        self.correct_note = f"{reach} positions: information moves {W - 1} tokens further per layer."


class RopeLayoutExercise(ChoiceExercise):
    """What happens when queries use the paper's pairing and keys the 'rotate half' layout (understanding).

    measured: what notebook 10 computes, a dict of booleans ``{"same_layout_relative": ...,
    "mixed_layout_relative": ..., "lengths_kept": ...}``: whether the scores depend on m - n alone with one
    layout for both, with the layouts mixed, and whether mixing kept every vector's length. The right
    option, "c", is what the measurement shows. Feedback keys: None, ``layouts_interchangeable`` (a),
    ``still_relative`` (b), ``lengths_change`` (d), ``not_a_choice``. Raises ValueError naming ``measured``
    unless it is that dict showing one layout relative, the mixture not, and the lengths kept.
    """

    named = {"a": "layouts_interchangeable", "b": "still_relative", "d": "lengths_change"}

    def __init__(self, measured):
        keys = {"same_layout_relative", "mixed_layout_relative", "lengths_kept"}
        if (not isinstance(measured, dict) or set(measured) != keys
                or not all(isinstance(v, (bool, np.bool_)) for v in measured.values())):
            raise ValueError(f"measured must be a dict of True/False with the keys {sorted(keys)}; got {measured!r}")
        same, mixed, kept = (bool(measured[k]) for k in ("same_layout_relative", "mixed_layout_relative",
                                                           "lengths_kept"))
        if not same or mixed or not kept:
            raise ValueError("measured must show what the exercise asks about: one layout relative, the mixture "
                             f"not, the lengths kept; got {measured!r}")
        super().__init__(
            question="A model rotates its queries with the paper's pairs (2i, 2i + 1) and its keys with the "
                     "'rotate half' layout (i, i + d/2). What happens to the scores?",
            options={"a": "nothing: both layouts are rotary embeddings",
                     "b": "they change, but still depend on m - n only",
                     "c": "they no longer depend on m - n only: it is a bug",
                     "d": "the queries and keys change length"},
            answer="c",
            why={"a": "Each layout is right on its own, when queries and keys share it. Mixed, q and k are turned "
                      f"about different planes. Measured in section 1, the mixture is relative: {mixed}.",
                 "b": f"Measured in section 1: shifting both positions changed the mixed scores (relative: {mixed}). "
                      "The two rotations no longer cancel into one by m - n.",
                 "c": f"A rotation by m then by -n is one by m - n only when both turn the same pairs. One layout: "
                      f"relative {same}; mixed: relative {mixed}.",
                 "d": f"Every rotation keeps lengths, in either layout (kept: {kept}). The angle between q and k "
                      "is what goes wrong."},
            hint="Do the two rotations turn the same pairs of features?")



class WindowGrowthExercise(ChoiceExercise):
    """How the key blocks a sliding window needs grow when the window widens (understanding: predict, then check).

    n: tokens; block_size: queries and keys per block; window: keys each query sees (itself included); wider:
    the wider window. The checker counts the blocks with helpers.tiling.window_blocks at both windows. Each
    query block reads the key blocks its window spans plus the one its queries sit in, about window /
    block_size + 1, so the count grows by about (wider / block_size + 1) / (window / block_size + 1), less than
    the window. The answer is the option nearest the measured growth: "a" (as the window), "b" (that ratio) or
    "c" (the same number). The wrong options are named ``blocks_follow_window`` (a), ``window_block_count`` (b)
    and ``blocks_stay`` (c). Raises ValueError (naming the arguments) for sizes that are not positive whole
    numbers, a wider window that is not wider, or sizes whose options cannot be told apart.
    """

    def __init__(self, n, block_size, window, wider):
        from helpers.tiling import window_blocks

        n, b = _whole_number(n, "n"), _whole_number(block_size, "block_size")
        w, w2 = _whole_number(window, "window"), _whole_number(wider, "wider")
        if w2 <= w:
            raise ValueError(f"wider must be a window wider than window = {w}; got {w2}")
        old, new = len(window_blocks(n, b, w)), len(window_blocks(n, b, w2))
        query_blocks = -(-n // b)
        factor, per = w2 / w, (w2 / b + 1) / (w / b + 1)
        ratios = {"a": factor, "b": per, "c": 1.0}
        growth = new / old
        answer = min(ratios, key=lambda k: abs(np.log(growth / ratios[k])))
        spread = sorted(ratios.values())
        if min(hi / lo for lo, hi in zip(spread, spread[1:])) < 1.25 or abs(np.log(growth / ratios[answer])) > np.log(1.15):
            raise ValueError(f"n, block_size, window and wider must give options that can be told apart; got "
                             f"growth {growth:.2f} against {factor:g}, {per:.2f} and 1 (take a text far longer "
                             "than the wider window)")
        self.counts = (old, new)
        self.named = {k: v for k, v in {"a": "blocks_follow_window", "b": "window_block_count",
                                        "c": "blocks_stay"}.items() if k != answer}
        reads = f"{old / query_blocks:.1f} key blocks per query block become {new / query_blocks:.1f}"
        super().__init__(
            question=f"Keep n = {n:,} and blocks of {b}; widen the window from {w:,} to {w2:,}. How many key "
                     f"blocks must be computed, against {old} for the window of {w:,}?",
            options={"a": f"about {factor:g} times as many, as the window",
                     "b": f"about {per:.2g} times as many",
                     "c": "about the same number"},
            answer=answer,
            why={"a": f"{new} blocks ({growth:.2f} times): the window is {factor:g} times as wide, and {reads}. "
                      "Each query block also reads the block its queries sit in, however wide the window.",
                 "b": f"{new} blocks ({growth:.2f} times): each query block reads the blocks its window spans, "
                      f"plus its own: {reads}.",
                 "c": f"The {query_blocks} query blocks stay, but each reads every key block its window touches, "
                      f"and a wider window touches more: {reads}, {new} in all."},
            hint="How many key blocks per query block?")
