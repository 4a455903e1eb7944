"""diagnose(fn, piece=...) for notebook 08's pieces: online_softmax_update, tiled_attention, kv_cache_step.

Each faulty function is written the way a learner writes it, not built from the checker's own models.
(The odd functions of every piece, the stubs and the worked solutions are tested in test_checkers.py,
which runs over every piece of PIECES.)"""

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.attention import causal_mask, scaled_dot_product_attention
from helpers.exercises import diagnose
from helpers.checkers.battery import KV_CACHE_STEP, ONLINE_SOFTMAX_UPDATE, TILED_ATTENTION
from helpers.checkers.checker_tiling import FAULTS, KV_KEYS, STEP_KEYS, TILED_KEYS, _forms, _kv, _tiled, _update
from helpers.checkers.runner import ATOL, RTOL
from helpers.checkers.solutions import WORKED
from helpers.tiling import KVCache, online_softmax_update, tiled_attention

ROOT = Path(__file__).resolve().parent.parent
inf = np.inf


# --------------------------------------------------------------------------
# online_softmax_update, as learners write it
# --------------------------------------------------------------------------

def step_loops(running_max, running_sum, acc, scores, V_block):
    """Right, one query row at a time with Python loops."""
    m_out, l_out, a_out = np.array(running_max, float), np.array(running_sum, float), np.array(acc, float)
    for index in np.ndindex(np.shape(running_max)):
        s = scores[index]
        V = V_block[index[:-1]] if V_block.ndim > 2 else V_block
        new = max(running_max[index], max(s))
        if new == -inf:
            continue                                       # nothing seen yet: keep -inf, 0, 0
        factor = np.exp(running_max[index] - new)
        weights = [np.exp(x - new) for x in s]
        m_out[index] = new
        l_out[index] = factor * running_sum[index] + sum(weights)
        a_out[index] = factor * acc[index] + sum(w * V[j] for j, w in enumerate(weights))
    return m_out, l_out, a_out


def step_einsum(m, l, o, s, v, eps=0.0):
    """Right, with short names, einsum and an extra keyword argument with a default."""
    new = np.maximum(m, s.max(-1))
    safe = np.where(new == -inf, 0, new)
    alpha, p = np.exp(m - safe), np.exp(s - safe[..., None])
    return new, alpha * l + p.sum(-1) + eps, alpha[..., None] * o + np.einsum("...qb,...bd->...qd", p, v)


def step_float32(running_max, running_sum, acc, scores, V_block):
    out = WORKED["online_softmax_update"](*(np.asarray(a, np.float32) for a in
                                           (running_max, running_sum, acc, scores, V_block)))
    return list(out)                                       # a list of three is read as the three


def step_float16(running_max, running_sum, acc, scores, V_block):
    return WORKED["online_softmax_update"](*(np.asarray(a, np.float16) for a in
                                            (running_max, running_sum, acc, scores, V_block)))


def step_acc_not_rescaled(running_max, running_sum, acc, scores, V_block):
    new = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new), 0.0, new)
    p = np.exp(scores - shift[..., None])
    return new, np.exp(running_max - shift) * running_sum + p.sum(axis=-1), acc + p @ V_block


def step_sum_not_rescaled(running_max, running_sum, acc, scores, V_block):
    new = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new), 0.0, new)
    p = np.exp(scores - shift[..., None])
    return new, running_sum + p.sum(axis=-1), np.exp(running_max - shift)[..., None] * acc + p @ V_block


def step_neither_rescaled(running_max, running_sum, acc, scores, V_block):
    new = np.maximum(running_max, scores.max(axis=-1))
    p = np.exp(scores - np.where(np.isneginf(new), 0.0, new)[..., None])
    return new, running_sum + p.sum(axis=-1), acc + p @ V_block


def step_old_max_kept(running_max, running_sum, acc, scores, V_block):
    p = np.exp(scores - running_max[..., None])
    return running_max, running_sum + p.sum(axis=-1), acc + p @ V_block


def step_normalised(running_max, running_sum, acc, scores, V_block):
    """Divides the accumulator by the running sum at every block."""
    new = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new), 0.0, new)
    factor, p = np.exp(running_max - shift), np.exp(scores - shift[..., None])
    total = factor * running_sum + p.sum(axis=-1)
    return new, total, (factor[..., None] * acc + p @ V_block) / np.where(total == 0, 1, total)[..., None]


def step_flash1(running_max, running_sum, acc, scores, V_block):
    """FlashAttention 1's normalised output, O' = (l e^(m - m') O + P V) / l', with acc read as O."""
    new = np.maximum(running_max, scores.max(axis=-1))
    factor, p = np.exp(running_max - new), np.exp(scores - new[..., None])
    total = factor * running_sum + p.sum(axis=-1)
    return new, total, ((running_sum * factor)[..., None] * acc + p @ V_block) / total[..., None]


def step_textbook(running_max, running_sum, acc, scores, V_block):
    """No guard for a row that is -inf everywhere: -inf - (-inf) is NaN."""
    new = np.maximum(running_max, scores.max(axis=-1))
    factor, p = np.exp(running_max - new), np.exp(scores - new[..., None])
    return new, factor * running_sum + p.sum(axis=-1), factor[..., None] * acc + p @ V_block


def step_own_block_max(running_max, running_sum, acc, scores, V_block):
    """The block against its own maximum, never brought to the new one (PaddleJitLab/CUDATutorial #69)."""
    block_max = scores.max(axis=-1)
    p = np.exp(scores - np.where(np.isneginf(block_max), 0.0, block_max)[..., None])
    new = np.maximum(running_max, block_max)
    factor = np.exp(running_max - np.where(np.isneginf(new), 0.0, new))
    return new, factor * running_sum + p.sum(axis=-1), factor[..., None] * acc + p @ V_block


def step_one_max(running_max, running_sum, acc, scores, V_block):
    """scores.max() with no axis: one maximum for the whole block."""
    new = np.maximum(running_max, scores.max())
    shift = np.where(np.isneginf(new), 0.0, new)
    factor, p = np.exp(running_max - shift), np.exp(scores - shift[..., None])
    return new, factor * running_sum + p.sum(axis=-1), factor[..., None] * acc + p @ V_block


def step_block_max_only(m_i, l_i, acc_o, s_ij, v_j):
    """The block's maximum alone taken as the new running max, not max(old, block) (tile-ai/tilelang #1148),
    written row by row as a kernel's loop over query rows."""
    m_new, l_new, o_new = np.empty_like(m_i), np.empty_like(l_i), np.empty_like(acc_o)
    for r in np.ndindex(*m_i.shape):
        m_new[r] = s_ij[r].max()
        ref = m_new[r] if np.isfinite(m_new[r]) else 0.0
        alpha = np.exp(m_i[r] - ref) if np.isfinite(m_i[r]) else 0.0
        p = np.exp(s_ij[r] - ref)
        l_new[r] = alpha * l_i[r] + p.sum()
        o_new[r] = alpha * acc_o[r] + p @ v_j[r[:-1]] if v_j.ndim > 2 else alpha * acc_o[r] + p @ v_j
    return m_new, l_new, o_new


def _inverted(guard):
    def step_rescale_inverted(running_max, running_sum, acc, scores, V_block):
        """The old totals rescaled by exp(m_new - m_old), not exp(m_old - m_new) (deepseek-ai/FlashMLA #177);
        guard: 0 where nothing was seen yet (else exp(+inf) times an empty total is NaN)."""
        m_new = np.fmax(running_max, np.max(scores, -1))
        ref = np.nan_to_num(m_new, neginf=0.0)
        rescale = np.exp(ref - running_max)
        if guard:
            rescale[np.isneginf(running_max)] = 0.0
        e = np.exp(scores - ref[..., None])
        return m_new, running_sum * rescale + e.sum(-1), acc * rescale[..., None] + np.matmul(e, V_block)
    return step_rescale_inverted


step_rescale_inverted, step_rescale_inverted_unguarded = _inverted(True), _inverted(False)


STEP_NAMED = [
    (step_own_block_max, "block_not_rescaled"), (step_one_max, "max_over_everything"),
    (step_acc_not_rescaled, "acc_not_rescaled"), (step_sum_not_rescaled, "sum_not_rescaled"),
    (step_neither_rescaled, "acc_not_rescaled+sum_not_rescaled"), (step_old_max_kept, "old_max_kept"),
    (step_normalised, "normalised_per_block"), (step_flash1, "normalised_per_block+neg_inf_nan"),
    (step_textbook, "neg_inf_nan"), (step_block_max_only, "block_max_only"),
    (step_rescale_inverted, "rescale_inverted"), (step_rescale_inverted_unguarded, "rescale_inverted"),
]


# --------------------------------------------------------------------------
# tiled_attention, as learners write it
# --------------------------------------------------------------------------

def tiled_loops(Q, K, V, block_size):
    """Right, one query at a time, scalar running totals, a batch by recursion."""
    if Q.ndim == 3:
        return np.stack([tiled_loops(Q[b], K[b], V[b], block_size) for b in range(Q.shape[0])])
    out = np.zeros((Q.shape[0], V.shape[1]))
    for i, q in enumerate(Q):
        m, l, acc = -inf, 0.0, np.zeros(V.shape[1])
        start = 0
        while start < K.shape[0]:
            s = [float(q @ k) / np.sqrt(K.shape[1]) for k in K[start:start + block_size]]
            new = max(m, max(s))
            acc = acc * np.exp(m - new) + sum(np.exp(x - new) * V[start + j] for j, x in enumerate(s))
            l = l * np.exp(m - new) + sum(np.exp(x - new) for x in s)
            m, start = new, start + block_size
        out[i] = acc / l
    return out


def tiled_flash1(query, key, value, block=2, causal=False):
    """Right, FlashAttention 1's way: the output kept normalised at every block, no final division;
    other argument names and an extra keyword argument with a default."""
    m = np.full(query.shape[:-1], -inf)
    l = np.zeros(query.shape[:-1])
    o = np.zeros(query.shape[:-1] + value.shape[-1:])
    for j in range(0, key.shape[-2], block):
        s = np.einsum("...qd,...kd->...qk", query, key[..., j:j + block, :]) / np.sqrt(key.shape[-1])
        new = np.maximum(m, s.max(-1))
        p = np.exp(s - new[..., None])
        l_new = np.exp(m - new) * l + p.sum(-1)
        o = ((l * np.exp(m - new))[..., None] * o + p @ value[..., j:j + block, :]) / l_new[..., None]
        m, l = new, l_new
    return o


def tiled_float32(Q, K, V, block_size):
    return WORKED["tiled_attention"](Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32), block_size)


def tiled_float16(Q, K, V, block_size):
    return WORKED["tiled_attention"](Q.astype(np.float16), K.astype(np.float16), V.astype(np.float16), block_size)


def tiled_with(step, scale=True, blocks="all"):
    """A learner's tiled_attention around their own step function."""
    def tiled(Q, K, V, block_size):
        n = K.shape[-2]
        m = np.full(Q.shape[:-1], -inf)
        l, acc = np.zeros(Q.shape[:-1]), np.zeros(Q.shape[:-1] + V.shape[-1:])
        starts = range(0, n, block_size) if blocks == "all" else [i * block_size for i in range(n // block_size)]
        for start in starts:
            s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2)
            if scale:
                s = s / np.sqrt(K.shape[-1])
            m, l, acc = step(m, l, acc, s, V[..., start:start + block_size, :])
        return acc / l[..., None]
    return tiled


def tiled_first_max_kept(Q, K, V, block_size):
    """The running max taken from the first block and never moved."""
    m = None
    for start in range(0, K.shape[-2], block_size):
        s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1])
        if m is None:
            m = s.max(axis=-1)
            l, acc = np.zeros(m.shape), np.zeros(m.shape + V.shape[-1:])
        p = np.exp(s - m[..., None])
        l, acc = l + p.sum(axis=-1), acc + p @ V[..., start:start + block_size, :]
    return acc / l[..., None]


def tiled_normalised_each(Q, K, V, block_size):
    """Divides by the running sum at every block, and not again at the end."""
    m = np.full(Q.shape[:-1], -inf)
    l, acc = np.zeros(Q.shape[:-1]), np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2], block_size):
        s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1])
        m, l, acc = step_normalised(m, l, acc, s, V[..., start:start + block_size, :])
    return acc


def tiled_no_max(Q, K, V, block_size):
    """Plain exp sums block by block, no running max at all."""
    l, acc = 0.0, 0.0
    for start in range(0, K.shape[-2], block_size):
        p = np.exp(Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1]))
        l, acc = l + p.sum(axis=-1), acc + p @ V[..., start:start + block_size, :]
    return acc / l[..., None]


def tiled_stop_early(Q, K, V, block_size):
    """Stops at n - block_size: the short last block is never read."""
    m = np.full(Q.shape[:-1], -inf)
    l, acc = np.zeros(Q.shape[:-1]), np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, K.shape[-2] - block_size + 1, block_size):
        s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1])
        m, l, acc = WORKED["online_softmax_update"](m, l, acc, s, V[..., start:start + block_size, :])
    return acc / np.where(l == 0, 1, l)[..., None]


def tiled_one_sentence(Q, K, V, block_size):
    """Right for one sentence; K[start:stop] and .T break on a batch."""
    m, l, acc = np.full(Q.shape[:-1], -inf), np.zeros(Q.shape[:-1]), np.zeros(Q.shape[:-1] + V.shape[-1:])
    for start in range(0, len(K), block_size):
        s = Q @ K[start:start + block_size].T / np.sqrt(K.shape[-1])
        m, l, acc = WORKED["online_softmax_update"](m, l, acc, s, V[start:start + block_size])
    return acc / l[..., None]


def tiled_one_max(Q, K, V, block_size):
    """A scalar running max, max(m, s.max()): one for every query of every sentence."""
    m, l, acc = -inf, 0.0, 0.0
    for start in range(0, K.shape[-2], block_size):
        s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1])
        new = max(m, s.max())
        p = np.exp(s - new)
        l, acc = np.exp(m - new) * l + p.sum(axis=-1), np.exp(m - new) * acc + p @ V[..., start:start + block_size, :]
        m = new
    return acc / l[..., None]


TILED_NAMED = [(tiled_one_sentence, "batch_transpose"), (tiled_with(step_own_block_max), "block_not_rescaled"),
    (tiled_one_max, "max_over_everything"), (tiled_with(step_block_max_only), "block_max_only"),
    (tiled_with(step_rescale_inverted), "rescale_inverted"),
    (tiled_with(step_acc_not_rescaled), "acc_not_rescaled"), (tiled_with(step_sum_not_rescaled), "sum_not_rescaled"),
    (tiled_first_max_kept, "old_max_kept"), (tiled_normalised_each, "normalised_per_block"),
    (tiled_with(step_flash1), "normalised_per_block"),       # FlashAttention 1's O, divided once more at the end
    (tiled_with(WORKED["online_softmax_update"], blocks="full"), "last_block_dropped"), (tiled_stop_early, "last_block_dropped"),
    (tiled_with(WORKED["online_softmax_update"], scale=False), "no_scaling"), (tiled_no_max, "no_max_subtraction"),
    (tiled_with(WORKED["online_softmax_update"], scale=False, blocks="full"), "last_block_dropped+no_scaling"),
    (tiled_with(step_neither_rescaled), "acc_not_rescaled+sum_not_rescaled"),
]


# --------------------------------------------------------------------------
# kv_cache_step, as learners write it
# --------------------------------------------------------------------------

def kv_loops(cache_keys, cache_values, q, k, v):
    """Right, with lists and loops, returning (output, weights)."""
    keys, values = list(cache_keys) + [k], list(cache_values) + [v]
    scores = [float(q @ key) / len(q) ** 0.5 for key in keys]
    top = max(scores)
    e = [np.exp(s - top) for s in scores]
    weights = np.array([x / sum(e) for x in e])
    return sum(w * value for w, value in zip(weights, values)), weights


def kv_other_names(K_cache, V_cache, query, key, value, scale=None):
    """Right, other argument names, concatenate, an extra keyword argument, float32."""
    keys = np.concatenate([K_cache, key[None, :]]).astype(np.float32)
    values = np.concatenate([V_cache, value[None, :]]).astype(np.float32)
    s = keys @ query.astype(np.float32) * (scale or 1 / np.sqrt(len(query)))
    w = np.exp(s - s.max())
    return (w / w.sum()) @ values


def kv_course(cache_keys, cache_values, q, k, v):
    """Right, through the course's own KVCache."""
    cache = KVCache()
    for key, value in zip(cache_keys, cache_values):
        cache.append(key, value)
    cache.append(k, v)
    return cache.attend(q)[0]


def kv_float16(cache_keys, cache_values, q, k, v):
    return WORKED["kv_cache_step"](*(np.asarray(a, np.float16) for a in (cache_keys, cache_values, q, k, v)))


def kv_before_append(cache_keys, cache_values, q, k, v):
    scores = cache_keys @ q / np.sqrt(len(q))
    e = np.exp(scores - scores.max())                        # the first token: max of an empty array raises
    return e / e.sum() @ cache_values


def kv_before_append_guarded(cache_keys, cache_values, q, k, v):
    if len(cache_keys) == 0:
        return np.zeros(cache_values.shape[1])
    return kv_before_append(cache_keys, cache_values, q, k, v)


def kv_swapped(cache_keys, cache_values, q, k, v):
    keys, values = np.vstack([cache_values, v]), np.vstack([cache_keys, k])
    s = keys @ q / np.sqrt(len(q))
    e = np.exp(s - s.max())
    return e / e.sum() @ values


def kv_swapped_append(cache_keys, cache_values, q, k, v):
    keys, values = np.vstack([cache_keys, v]), np.vstack([cache_values, k])
    s = keys @ q / np.sqrt(len(q))
    e = np.exp(s - s.max())
    return e / e.sum() @ values


def kv_unscaled(cache_keys, cache_values, q, k, v):
    keys, values = np.vstack([cache_keys, k]), np.vstack([cache_values, v])
    s = keys @ q
    e = np.exp(s - s.max())
    return e / e.sum() @ values


def kv_naive(cache_keys, cache_values, q, k, v):
    keys, values = np.vstack([cache_keys, k]), np.vstack([cache_values, v])
    e = np.exp(keys @ q / np.sqrt(len(q)))
    return e / e.sum() @ values


def kv_unscaled_before_append(cache_keys, cache_values, q, k, v):
    if len(cache_keys) == 0:
        return np.zeros(cache_values.shape[1])
    s = cache_keys @ q
    e = np.exp(s - s.max())
    return e / e.sum() @ cache_values


KV_NAMED = [
    (kv_before_append, "new_token_not_attended"), (kv_before_append_guarded, "new_token_not_attended"),
    (kv_swapped, "keys_values_swapped"), (kv_swapped_append, "keys_values_swapped"), (kv_unscaled, "no_scaling"),
    (kv_naive, "no_max_subtraction"), (kv_unscaled_before_append, "new_token_not_attended+no_scaling"),
]

NAMED = ([("online_softmax_update", f, k) for f, k in STEP_NAMED] + [("tiled_attention", f, k) for f, k in TILED_NAMED]
         + [("kv_cache_step", f, k) for f, k in KV_NAMED])
RIGHT = [("online_softmax_update", step_loops), ("online_softmax_update", step_einsum),
         ("online_softmax_update", step_float32), ("tiled_attention", tiled_loops), ("tiled_attention", tiled_flash1),
         ("tiled_attention", tiled_float32), ("kv_cache_step", kv_loops), ("kv_cache_step", kv_other_names),
         ("kv_cache_step", kv_course)]
FLOAT16 = [("online_softmax_update", step_float16), ("tiled_attention", tiled_float16), ("kv_cache_step", kv_float16)]


@pytest.mark.parametrize("piece, fn, key", NAMED, ids=[f"{p}-{k}-{i}" for i, (p, _, k) in enumerate(NAMED)])
def test_each_mistake_is_named(piece, fn, key):
    verdict = diagnose(fn, piece=piece)
    assert verdict.correct is False and verdict.mistake == key, verdict.text
    assert "It first goes wrong on" in verdict.text and "expected" in verdict.text
    assert all(FAULTS[k] in verdict.text for k in key.split("+"))


@pytest.mark.parametrize("piece, fn", RIGHT, ids=[f"{p}-{f.__name__}" for p, f in RIGHT])
def test_right_functions_written_other_ways_pass(piece, fn):
    verdict = diagnose(fn, piece=piece)
    assert verdict.correct and verdict.mistake is None, verdict.text


@pytest.mark.parametrize("piece, fn", FLOAT16, ids=[p for p, _ in FLOAT16])
def test_float16_is_low_precision(piece, fn):
    verdict = diagnose(fn, piece=piece)
    assert verdict.mistake == "low_precision", verdict.text


def test_every_key_has_a_learner_function():
    for piece, keys in (("online_softmax_update", STEP_KEYS), ("tiled_attention", TILED_KEYS),
                        ("kv_cache_step", KV_KEYS)):
        named = {k for p, _, key in NAMED if p == piece for k in key.split("+")}
        assert named == set(keys), piece
    assert set(FAULTS) == set(STEP_KEYS) | set(TILED_KEYS) | set(KV_KEYS)


def test_a_wrong_step_shows_which_of_the_three_differs():
    verdict = diagnose(step_sum_not_rescaled, piece="online_softmax_update")
    assert verdict.case == "max rises"         # the first block cannot tell (there is nothing to rescale)
    shown = verdict.text.split("Where yours differs from the expected step:\n", 1)[1]
    assert shown.startswith("running_sum:") and "running_max:" not in shown and "acc:" not in shown


def test_the_design_of_kv_cache_step_is_said_where_a_learner_and_an_instructor_read_it():
    from helpers.checkers.solutions import STUBS
    assert "the caller appends k and v" in STUBS["kv_cache_step"][1]
    guide = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    assert "kv_cache_step" in guide and "returns the output only" in guide


# --------------------------------------------------------------------------
# The batteries: what each input is there to show
# --------------------------------------------------------------------------

def test_the_tiled_battery_has_what_the_issue_asks_for():
    shapes = [(c.args["Q"].shape, c.args["K"].shape[-2], c.args["block_size"]) for c in TILED_ATTENTION]
    assert any(n % b for _, n, b in shapes)                     # n not a multiple of block_size
    assert any(b == 1 for _, _, b in shapes) and any(b >= n for _, n, b in shapes)
    assert any(n == 1 for _, n, _ in shapes) and any(len(q) == 3 for q, _, _ in shapes)   # n = 1, a batch
    top = max(float(np.abs(c.args["Q"] @ np.swapaxes(c.args["K"], -1, -2)).max() / np.sqrt(c.args["K"].shape[-1]))
              for c in TILED_ATTENTION)
    assert top > np.log(np.finfo(float).max)                   # exp of the largest score overflows (past 709.78)


def test_the_step_battery_moves_the_max_keeps_it_and_holds_an_empty_row():
    moved = kept = empty = False
    for case in ONLINE_SOFTMAX_UPDATE:
        m, s = case.args["running_max"], case.args["scores"]
        finite = np.isfinite(m)
        moved |= bool(np.any(finite & (s.max(axis=-1) > m)))
        kept |= bool(np.any(finite & (s.max(axis=-1) < m)))
        empty |= bool(np.any(np.isneginf(m) & np.isneginf(s).all(axis=-1)))
    assert moved and kept and empty
    assert any(np.max(c.args["scores"]) > np.log(np.finfo(float).max) for c in ONLINE_SOFTMAX_UPDATE)


def test_the_kv_battery_starts_with_an_empty_cache_and_overflows_a_naive_exp():
    assert KV_CACHE_STEP[0].args["cache_keys"].shape[0] == 0
    scores = [np.vstack([c.args["cache_keys"], c.args["k"]]) @ c.args["q"] / np.sqrt(len(c.args["q"]))
              for c in KV_CACHE_STEP]
    assert max(float(s.max()) for s in scores) > np.log(np.finfo(float).max)
    assert any(c.args["k"].size != c.args["v"].size for c in KV_CACHE_STEP)    # d_v != d_k: a swap fails


def signature(predict, battery):
    out = []
    for case in battery:
        got = predict(case)
        out.append(None if got is None else tuple(np.round(np.nan_to_num(np.asarray(g, float), nan=7.7, posinf=8.8,
                                                                          neginf=-8.8), 3).tobytes() for g in got))
    return tuple(out)


@pytest.mark.parametrize("piece, keys, battery, model", [
    ("step", STEP_KEYS, ONLINE_SOFTMAX_UPDATE,
     lambda c, f, form: _update(*(c.args[k] for k in ("running_max", "running_sum", "acc", "scores", "V_block")),
                                f, form)),
    ("tiled", TILED_KEYS, TILED_ATTENTION,
     lambda c, f, form: (_tiled(c.args["Q"], c.args["K"], c.args["V"], c.args["block_size"], f, form),)),
    ("kv", KV_KEYS, KV_CACHE_STEP,
     lambda c, f, form: (lambda out: None if out is None else (out,))(
         _kv(*(c.args[k] for k in ("cache_keys", "cache_values", "q", "k", "v")), f, form))),
], ids=["step", "tiled", "kv"])
def test_the_battery_tells_every_single_mistake_from_the_right_answer_and_from_each_other(piece, keys, battery, model):
    """No form of one mistake gives the numbers of the right answer, or of a form of another mistake."""
    right = signature(lambda c: model(c, set(), {}), battery)
    seen = {}
    for key in keys:
        for form in _forms(piece, {key}):
            sig = signature(lambda c: model(c, {key}, form), battery)
            assert sig != right, (key, form)
            assert seen.get(sig, key) == key, (key, seen.get(sig))
            seen[sig] = key


@pytest.mark.parametrize("piece, fn, key", NAMED, ids=[f"{p}-{k}-{i}" for i, (p, _, k) in enumerate(NAMED)])
def test_the_tolerance_is_far_tighter_than_any_mistake(piece, fn, key):
    """On the first input where a mistake shows, it raises, changes a shape or a finite number into NaN or
    inf, or moves some number by 1000 times the tolerance or more."""
    battery = {"online_softmax_update": ONLINE_SOFTMAX_UPDATE, "tiled_attention": TILED_ATTENTION,
               "kv_cache_step": KV_CACHE_STEP}[piece]
    for case in battery:
        fresh = [np.array(v) if isinstance(v, np.ndarray) else v for v in case.args.values()]
        want = WORKED[piece](*fresh)
        try:
            with np.errstate(all="ignore"):
                got = fn(*fresh)
        except Exception:
            return
        got = got[0] if piece == "kv_cache_step" and isinstance(got, tuple) else got
        pairs = zip(got, want) if piece == "online_softmax_update" else [(got, want)]
        for g, w in pairs:
            g, w = np.asarray(g, float), np.asarray(w, float)
            if g.shape != w.shape or np.any(np.isfinite(g) != np.isfinite(w)):
                return
            both = np.isfinite(w)
            if not np.allclose(g[both], w[both], rtol=RTOL, atol=ATOL):
                assert np.abs(g - w)[both].max() > 1000 * (ATOL + RTOL * np.abs(w)[both].max()), case.name
                return
    pytest.fail(f"{key} never differs from the right answer")


# --------------------------------------------------------------------------
# Property: the worked solutions and the right ways of writing them agree with the course's functions
# --------------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2), st.integers(1, 6), st.integers(1, 9), st.integers(1, 5), st.integers(1, 10),
       st.sampled_from([1.0, 10.0, 300.0]), st.data())
def test_tiled_attention_written_other_ways_agrees_with_the_courses(batch, n_q, n_k, d, block_size, size, data):
    shape = (batch,) if batch else ()
    Q, K, V = (data.draw(hnp.arrays(np.float64, shape + (n, w), elements=st.floats(-size, size)))
               for n, w in ((n_q, d), (n_k, d), (n_k, 3)))
    want = tiled_attention(Q, K, V, block_size)
    for fn in (WORKED["tiled_attention"], tiled_loops, tiled_flash1):
        kwargs = {"block": block_size} if fn is tiled_flash1 else {"block_size": block_size}
        # float64 in another order: the weights agree to a few ulps of exp; with scores near 1e5 a
        # rounding of the score itself (eps * 1e5 = 2e-11) moves a weight by as much, relatively
        np.testing.assert_allclose(fn(Q, K, V, **kwargs), want, rtol=1e-7, atol=1e-7 * max(1.0, size),
                                   err_msg=fn.__name__)
    np.testing.assert_allclose(want, scaled_dot_product_attention(Q, K, V)[0], rtol=1e-7, atol=1e-7 * max(1.0, size))


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 3), st.sampled_from([1.0, 30.0, 800.0]), st.data())
def test_the_online_step_written_other_ways_agrees_with_the_courses(n_q, b, d_v, size, data):
    earlier = data.draw(hnp.arrays(np.float64, (n_q, 2), elements=st.one_of(st.floats(-size, size), st.just(-inf))))
    scores = data.draw(hnp.arrays(np.float64, (n_q, b), elements=st.one_of(st.floats(-size, size), st.just(-inf))))
    V_old, V_block = (data.draw(hnp.arrays(np.float64, (n, d_v), elements=st.floats(-5, 5))) for n in (2, b))
    start = (np.full(n_q, -inf), np.zeros(n_q), np.zeros((n_q, d_v)))
    totals = online_softmax_update(*start, earlier, V_old)
    want = online_softmax_update(*totals, scores, V_block)
    for fn in (WORKED["online_softmax_update"], step_loops, step_einsum):
        for got, expected in zip(fn(*totals, scores, V_block), want):
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=fn.__name__)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 7), st.integers(1, 5), st.integers(1, 4), st.sampled_from([1.0, 40.0]), st.data())
def test_kv_steps_token_by_token_give_causal_attention(n, d_k, d_v, size, data):
    """The notebook's loop: kv_cache_step for each token, the caller appending k and v after it."""
    Q, K = (data.draw(hnp.arrays(np.float64, (n, d_k), elements=st.floats(-size, size))) for _ in range(2))
    V = data.draw(hnp.arrays(np.float64, (n, d_v), elements=st.floats(-5, 5)))
    want, _ = scaled_dot_product_attention(Q, K, V, mask=causal_mask(n))
    for fn in (WORKED["kv_cache_step"], kv_loops, kv_course):
        keys, values, rows = np.empty((0, d_k)), np.empty((0, d_v)), []
        for t in range(n):
            out = fn(keys, values, Q[t], K[t], V[t])
            rows.append(out[0] if isinstance(out, tuple) else out)
            keys, values = np.vstack([keys, K[t]]), np.vstack([values, V[t]])
        np.testing.assert_allclose(np.array(rows), want, rtol=1e-9, atol=1e-9 * size, err_msg=fn.__name__)


# --------------------------------------------------------------------------
# The instructors' guide lists every key
# --------------------------------------------------------------------------

def test_the_guide_lists_the_keys_of_these_checkers():
    guide = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    section = guide.split("## The workbook", 1)[1].split("\n## ", 1)[0]
    rows = {m[0]: set(re.findall(r"`(\w+)`", m[1])) for m in re.findall(r"^\| `(\w+)` \|[^|]*\|(.*)\|$", section, re.M)}
    assert rows["online_softmax_update"] == set(STEP_KEYS)
    from helpers.checkers.checker_tiling import KV_FAMILY_KEYS, TILED_FAMILY_KEYS
    assert rows["tiled_attention"] == set(TILED_KEYS) | set(TILED_FAMILY_KEYS)
    assert rows["kv_cache_step"] == set(KV_KEYS) | set(KV_FAMILY_KEYS)


# --------------------------------------------------------------------------
# Never raises, whatever the function returns or raises
# --------------------------------------------------------------------------

ODD_RETURNS = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=True), st.text(max_size=4), st.lists(st.floats(), max_size=4),
    hnp.arrays(st.sampled_from([np.float64, np.int8, np.bool_, np.complex128]),
               hnp.array_shapes(min_dims=0, max_dims=3, max_side=4)),
    st.tuples(st.none(), st.none(), st.none()), st.tuples(st.integers(), st.text(max_size=2), st.floats()),
)
PIECES_HERE = ["online_softmax_update", "tiled_attention", "kv_cache_step"]


@settings(max_examples=40, deadline=None)
@given(piece=st.sampled_from(PIECES_HERE), value=ODD_RETURNS)
def test_never_raises_whatever_the_function_returns(piece, value):
    verdict = diagnose(lambda *args, **kwargs: value, piece=piece)
    assert verdict.correct is False and isinstance(verdict.text, str) and verdict.text
    assert verdict.mistake != "not_diagnosed", verdict.text        # diagnose itself did not fail


@settings(max_examples=60, deadline=None)
@given(piece=st.sampled_from(PIECES_HERE),
       ops=st.lists(st.sampled_from(["scale", "T", "neg", "sum", "nan", "tuple", "drop_row", "first", "float16",
                                     "int", "mutate"]), max_size=3))
def test_never_raises_on_functions_that_compute_something(piece, ops):
    def fn(*args):
        out = WORKED[piece](*args)
        for op in ops:
            parts = list(out) if isinstance(out, tuple) else [out]
            if op == "tuple":
                out = (out, out)
                continue
            if op == "first":
                out = parts[0]
                continue
            if op == "mutate":             # the step may update its running values: change its scores
                args[3 if piece == "online_softmax_update" else 0][...] = 1.0
                continue
            change = {"scale": lambda a: a * 3, "T": lambda a: np.asarray(a).T, "neg": lambda a: -np.asarray(a),
                      "sum": lambda a: np.sum(a), "nan": lambda a: np.asarray(a) / 0,
                      "drop_row": lambda a: np.asarray(a)[..., 1:], "float16": lambda a: np.asarray(a, np.float16),
                      "int": lambda a: np.asarray(a).astype(int) if np.all(np.isfinite(a)) else a}[op]
            parts = [change(p) for p in parts]
            out = tuple(parts) if len(parts) > 1 else parts[0]
        return out

    with np.errstate(all="ignore"):
        verdict = diagnose(fn, piece=piece)
    assert isinstance(verdict.correct, bool) and isinstance(verdict.text, str) and verdict.text
    assert verdict.mistake != "not_diagnosed", verdict.text
    if {"scale", "nan", "sum", "mutate"} & set(ops):
        assert verdict.correct is False, verdict.text


@settings(max_examples=40, deadline=None)
@given(piece=st.sampled_from(PIECES_HERE), after=st.integers(0, 12),
       exc=st.sampled_from([ValueError("x"), TypeError("block_size"), SystemExit(2), KeyboardInterrupt(),
                            RecursionError(), MemoryError()]))
def test_never_raises_whatever_the_function_raises(piece, after, exc):
    calls = []

    def fn(*args):
        calls.append(1)
        if len(calls) > after:
            raise exc
        return WORKED[piece](*args)

    verdict = diagnose(fn, piece=piece)
    assert verdict.mistake != "not_diagnosed", verdict.text
    battery = {"online_softmax_update": ONLINE_SOFTMAX_UPDATE, "tiled_attention": TILED_ATTENTION,
               "kv_cache_step": KV_CACHE_STEP}[piece]
    assert verdict.correct is (after >= len(battery)), verdict.text


@pytest.mark.parametrize("piece", PIECES_HERE)
def test_a_mutation_is_named_beside_a_right_output(piece):
    def fn(*args):
        out = WORKED[piece](*args)
        args[{"tiled_attention": 2}.get(piece, 4)][...] = 0   # V_block, V or v, after computing: the output is right
        return out
    verdict = diagnose(fn, piece=piece)
    assert verdict.mistake == "mutates_inputs" and "in place" in verdict.text, verdict.text


def test_tiled_attention_calling_an_unwritten_step_says_which_to_write_first():
    namespace = {}
    from helpers.checkers.solutions import workbook_source
    exec(compile(workbook_source(), "workbook.py", "exec"), namespace)
    namespace["tiled_attention"] = lambda Q, K, V, block_size: namespace["online_softmax_update"](Q, K, V, Q, K)
    verdict = diagnose(namespace["tiled_attention"], piece="tiled_attention")
    assert verdict.mistake == "not_attempted" and "Write online_softmax_update first" in verdict.text, verdict.text


def test_the_battery_docstrings_count_their_inputs():
    import helpers.checkers.battery as battery
    source = Path(battery.__file__).read_text(encoding="utf-8")
    for name, cases in (("ONLINE_SOFTMAX_UPDATE", ONLINE_SOFTMAX_UPDATE), ("TILED_ATTENTION", TILED_ATTENTION),
                        ("KV_CACHE_STEP", KV_CACHE_STEP)):
        doc = source.split(f"\n{name} = ", 1)[1].split('"""')[1]
        words = {7: "7 ", 9: "9 ", 12: "12 "}
        assert words[len(cases)] in doc, name
    large = next(c for c in TILED_ATTENTION if c.name == "large scores").args
    top = float((large["Q"] @ large["K"].T).max() / np.sqrt(large["K"].shape[-1]))
    assert f"scores up to {top:.0f}" in source.split("\nTILED_ATTENTION = ", 1)[1]   # 41 * 30 / sqrt(2) = 869.7


@pytest.mark.parametrize("piece", PIECES_HERE)
def test_nan_of_the_right_shapes_is_nan_inf_and_text_is_not_numbers(piece):
    def nan(*args):
        out = WORKED[piece](*args)
        return tuple(np.full(np.shape(a), np.nan) for a in out) if isinstance(out, tuple) else np.full(out.shape, np.nan)
    assert diagnose(nan, piece=piece).mistake == "nan_inf"
    assert diagnose(lambda *args: "the answer", piece=piece).mistake == "not_numbers"


@pytest.mark.parametrize("piece", PIECES_HERE)
def test_text_is_named_as_the_functions_not_as_an_answer_in_quotes(piece):
    # A function's return is not an exercise answer: no "Remove the quotes", but what to return instead.
    def text(*args):
        return "the answer"

    verdict = diagnose(text, piece=piece)
    assert "text returns text, not numbers: return numpy arrays." in verdict.text, verdict.text
    assert "Remove the quotes" not in verdict.text


def test_a_mutation_beside_a_wrong_output_is_said_on_its_own_line():
    # Wrong (the new token left out) and changing cache_keys in place: the "Also" must not end the table's last row.
    def fn(cache_keys, cache_values, q, k, v):
        if len(cache_keys) == 0:
            return np.array(v, dtype=float)
        out = WORKED["kv_cache_step"](cache_keys[:0], cache_values[:0], q, cache_keys[-1], cache_values[-1])
        cache_keys[...] = 0
        return out

    verdict = diagnose(fn, piece="kv_cache_step")
    assert not verdict.correct and "\nAlso, it changes its input cache_keys in place" in verdict.text, verdict.text


def _workbook_with(step):
    """A workbook namespace: the worked tiled_attention (which calls online_softmax_update) beside ``step``."""
    from helpers.checkers.solutions import workbook_source
    namespace = {}
    exec(compile(workbook_source(), "workbook.py", "exec"), namespace)
    namespace["the_learners_step"] = step
    source = ("def online_softmax_update(running_max, running_sum, acc, scores, V_block):\n"
              "    return the_learners_step(running_max, running_sum, acc, scores, V_block)\n\n"
              "def tiled_attention(Q, K, V, block_size):\n"
              "    m = np.full(Q.shape[:-1], -np.inf)\n"
              "    l, acc = np.zeros(Q.shape[:-1]), np.zeros(Q.shape[:-1] + V.shape[-1:])\n"
              "    for start in range(0, K.shape[-2], block_size):\n"
              "        s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1])\n"
              "        m, l, acc = online_softmax_update(m, l, acc, s, V[..., start:start + block_size, :])\n"
              "    return acc / l[..., None]\n")
    exec(compile(source, "workbook.py", "exec"), namespace)
    return namespace["tiled_attention"]


def test_a_right_loop_calling_a_wrong_step_is_told_the_fault_is_in_the_step():
    right_loop = _workbook_with(WORKED["online_softmax_update"])
    assert diagnose(right_loop, piece="tiled_attention").correct
    verdict = diagnose(_workbook_with(step_acc_not_rescaled), piece="tiled_attention")
    assert verdict.mistake == "acc_not_rescaled", verdict.text
    assert verdict.text.startswith("The fault is in your online_softmax_update, which your tiled_attention calls")
    assert FAULTS["acc_not_rescaled"] in verdict.text


def test_the_step_is_blamed_through_a_closure_too_and_never_when_it_is_right():
    verdict = diagnose(tiled_with(step_sum_not_rescaled), piece="tiled_attention")
    assert verdict.mistake == "sum_not_rescaled"
    assert verdict.text.startswith("The fault is in your step_sum_not_rescaled, which your tiled calls"), verdict.text

    def online_softmax_update(m, l, acc, s, V_block):      # right: the loop's own fault stays its own
        return WORKED["online_softmax_update"](m, l, acc, s, V_block)

    def tiled_attention(Q, K, V, block_size):             # rescales nothing itself: the acc of the step is dropped
        m = np.full(Q.shape[:-1], -inf)
        l, acc = np.zeros(Q.shape[:-1]), np.zeros(Q.shape[:-1] + V.shape[-1:])
        for start in range(0, K.shape[-2], block_size):
            s = Q @ np.swapaxes(K[..., start:start + block_size, :], -1, -2) / np.sqrt(K.shape[-1])
            new, l, step_acc = online_softmax_update(m, l, np.zeros_like(acc), s, V[..., start:start + block_size, :])
            acc, m = acc + step_acc, new
        return acc / l[..., None]
    verdict = diagnose(tiled_attention, piece="tiled_attention")
    assert verdict.mistake == "acc_not_rescaled" and "The fault is in your" not in verdict.text, verdict.text
