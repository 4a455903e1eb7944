"""Faults with a fitted parameter in attention, multi-head attention, the head split and merge, the KV-cache step
and the masks (issue 32, sections 1 to 4): each wrong function is written the way public code writes it, and its
verdict names the key and the learner's own value, read off inputs of several sizes."""

import dataclasses

import numpy as np
import pytest

from helpers.exercises import diagnose
from helpers.checkers import fitted
from helpers.checkers.battery import ATTENTION

import wrong_functions as wf   # the reviewer's functions live in the collection (tests/ is on the path under pytest)


def _attend(scores, V, mask=None, axis=-1, top=None):
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    m = scores.max(axis=axis, keepdims=True) if top is None else top(scores)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(scores - m)
    total = e.sum(axis=axis, keepdims=True)
    return e / np.where(total == 0, 1.0, total) @ V


# --------------------------------------------------------------------------
# attention: the scale, the axis, one maximum for everything, three things returned
# --------------------------------------------------------------------------

def attention_len_q(Q, K, V, mask=None):
    """d_k read as Q.shape[0]: the number of queries for one sentence, the batch size for a batch."""
    return _attend(Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[0]), V, mask)


def attention_n_q(query, key, value, mask=None):
    n_q = query.shape[-2]
    return _attend(query @ np.swapaxes(key, -1, -2) / n_q ** 0.5, value, mask)


def attention_two_d_k(Q, K, V, mask=None):
    return _attend(Q @ np.swapaxes(K, -1, -2) / np.sqrt(2 * K.shape[-1]), V, mask)


@pytest.mark.parametrize("fn, value", [
    (attention_len_q, "sqrt(len(Q)) = sqrt(3)"), (attention_n_q, "sqrt(n_q) = sqrt(3)"),
    (attention_two_d_k, "sqrt(2 d_k) = sqrt(8)"),
])
def test_a_scale_that_follows_another_size_is_named_with_its_value(fn, value):
    verdict = diagnose(fn)
    assert verdict.mistake == "scale_by_shape", verdict.text
    assert value in verdict.text and "sqrt(d_k) = sqrt(4)" in verdict.text, verdict.text


def test_the_scale_family_fits_across_sizes_not_one_member():
    # on one sentence len(Q) is n_q; only a batch tells them apart: the same fit names each by the rule it follows
    sizes = {(c.Q.shape[0], c.Q.shape[-2]) for c in ATTENTION}
    assert any(a != b for a, b in sizes) and len({b for _, b in sizes}) > 2
    assert "n_q = Q.shape[-2]" in diagnose(attention_n_q).text
    assert "len(Q) = Q.shape[0]" in diagnose(attention_len_q).text
    # before batches are taught, Q.shape[0] is n_q on every input
    assert "sqrt(n_q) = sqrt(3)" in diagnose(attention_len_q, masks=False, batches=False).text


def attention_axis(axis):
    def fn(Q, K, V, mask=None):
        return _attend(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]), V, mask, axis=axis)
    fn.__name__ = f"attention_axis_{axis}".replace("-", "minus_")
    return fn


@pytest.mark.parametrize("axis, words", [(-3, "axis=-3"), (2, "axis=2"), (1, "axis=1")])
def test_a_softmax_along_any_fixed_axis_is_wrong_axis_naming_the_axis(axis, words):
    verdict = diagnose(attention_axis(axis))
    assert verdict.mistake == "wrong_axis", verdict.text
    assert f"Your softmax runs along {words}" in verdict.text and "axis=-1" in verdict.text


def test_one_axis_fitter_gives_every_axis_or_every_axis_but_the_last_each_in_its_order():
    """fitted.axis_candidates serves softmax_backward's sum (every axis) and the softmaxes of attention and
    multi-head attention (every axis but the last, -2 first)."""
    assert fitted.axis_candidates(3) == [0, 1, 2, -1, -2, -3]
    assert fitted.axis_candidates(4, but_last=True) == [-2, 0, 1, 2, -3, -4]
    assert fitted.axis_candidates(2, but_last=True) == [-2, 0]


def attention_global_max(Q, K, V, mask=None):
    """One maximum for the whole array, each row's own sum."""
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -1e9)
    e = np.exp(s - s.max())
    return e / e.sum(axis=-1, keepdims=True) @ V


def test_one_maximum_for_the_whole_array_is_caught_by_rows_far_apart():
    verdict = diagnose(attention_global_max)
    assert verdict.mistake == "max_over_everything", verdict.text
    assert verdict.case == "rows apart" and "one maximum for the whole array" in verdict.text


def attention_three(Q, K, V, mask=None):
    """Right, returning (output, weights, scores), as some public code does."""
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total == 0, 1.0, total)
    return w @ V, w, s


def test_three_things_returned_are_read_as_the_output_first():
    verdict = diagnose(attention_three)
    assert verdict.correct, verdict.text
    assert "You return three things" in verdict.text and "(output, weights)" in verdict.text

    def three_no_scaling(Q, K, V, mask=None):
        out, w, s = attention_three(Q * np.sqrt(K.shape[-1]), K, V, mask)
        return out, w, s
    verdict = diagnose(three_no_scaling)
    assert verdict.mistake == "no_scaling" and "You return three things" in verdict.text, verdict.text


# --------------------------------------------------------------------------
# split_heads, merge_heads: a transpose written with fixed axes
# --------------------------------------------------------------------------

def split_swapaxes_1_2(x, num_heads):
    """torch's view(B, -1, h, d_k).transpose(1, 2), translated: right for a batch, wrong for one sentence."""
    *lead, n, d = x.shape
    return x.reshape(*lead, n, num_heads, d // num_heads).swapaxes(1, 2)


def split_transpose_0213(x, num_heads):
    *lead, n, d = x.shape
    return x.reshape(*lead, n, num_heads, d // num_heads).transpose(0, 2, 1, 3)


def merge_swapaxes_1_2(x):
    y = x.swapaxes(1, 2)
    return y.reshape(*y.shape[:-2], -1)


def merge_transpose_0213(x):
    B, h, n, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, n, h * d_k)


@pytest.mark.parametrize("piece, fn, words", [
    ("split_heads", split_swapaxes_1_2, "swapaxes(1, 2) after the reshape"),
    ("split_heads", split_transpose_0213, "transpose(0, 2, 1, 3) after the reshape"),
    ("merge_heads", merge_swapaxes_1_2, "swapaxes(1, 2) before the reshape"),
    ("merge_heads", merge_transpose_0213, "transpose(0, 2, 1, 3) before the reshape"),
])
def test_a_fixed_axes_transpose_in_split_or_merge_is_axes_permuted_naming_what_it_swaps(piece, fn, words):
    verdict = diagnose(fn, piece=piece)
    assert verdict.mistake == "axes_permuted", verdict.text
    assert words in verdict.text and "np.swapaxes(x, -2, -3)" in verdict.text
    if "swapaxes" in words:           # one sentence: the heads (split) or tokens (merge) swapped with d_k
        assert "it swaps" in verdict.text and "each head's features (d_k)" in verdict.text
    else:                             # 4 axes named: one sentence's 3 are refused, as numpy refuses them
        assert "numpy refuses it" in verdict.text


def test_the_permutation_is_fitted_across_numbers_of_axes():
    # swapaxes(1, 2) is right on the batch (B, n, h, d_k) and wrong on one sentence and on two leading axes
    from helpers.checkers.battery import SPLIT_HEADS
    from helpers.attention import split_heads
    right = [np.array_equal(split_swapaxes_1_2(c.args["x"], c.args["num_heads"]),
                            split_heads(c.args["x"], c.args["num_heads"])) for c in SPLIT_HEADS]
    assert any(right) and not all(right)
    assert {c.args["x"].ndim for c in SPLIT_HEADS} >= {2, 3, 4}


def split_heads_then_batch(x, num_heads):
    """tf.transpose(x, [2, 0, 1, 3]) after the reshape (lsdefine/attention-is-all-you-need-keras #36): the heads
    before the batch, (h, B, n, d_k); one sentence is made a batch of one and given back without it."""
    one = x.ndim == 2
    b = x[None] if one else x
    B, n, d = b.shape
    y = np.transpose(b.reshape(B, n, num_heads, d // num_heads), [2, 0, 1, 3])
    return y[:, 0] if one else y


def merge_heads_read_head_major(x):
    """The heads read as (h, B, n, d_k) by a reshape, then permuted (0, 2, 1, 3) and merged
    (gazelle93/Transformer-Various-Positional-Encoding #1): the array holds (B, h, n, d_k)."""
    h, n, d_k = x.shape[-3:]
    lead = x.shape[:-3]
    y = x.reshape(h, -1, n, d_k).transpose(0, 2, 1, 3)
    return y.reshape(*lead, n, h * d_k)


def _heads_piece(piece, shapes):
    """The split or merge piece with its own inputs: x of each shape (split: (shape, num_heads))."""
    from helpers.checkers.battery import Input
    rng = np.random.default_rng(7)
    if piece.name == "split_heads":
        cases = tuple(Input(f"{s}", f"x of shape {s}, num_heads = {h}", {"x": rng.normal(size=s), "num_heads": h})
                      for s, h in shapes)
    else:
        cases = tuple(Input(f"{s}", f"heads of shape {s}", {"x": rng.normal(size=s)}) for s in shapes)
    return dataclasses.replace(piece, cases=cases)


@pytest.mark.parametrize("piece, fn, shapes, words", [
    ("split_heads", split_heads_then_batch, [[((3, 4), 2), ((2, 3, 4), 2)], [((5, 6), 3), ((3, 2, 6), 3)]],
     ["transpose(2, 0, 1, 3)", "a batch of one", "the heads' axis, the batch axis, the tokens' axis"]),
    ("merge_heads", merge_heads_read_head_major, [[(2, 3, 2), (2, 2, 3, 2), (3, 2, 2, 4, 3)],
                                                 [(3, 4, 1), (3, 3, 2, 2), (2, 3, 3, 1, 2)]],
     ["(num_heads, B, n, d_k)", "as if they stood before the batch", "swapaxes(1, 2)"]),
])
def test_heads_stacked_before_the_batch_are_axes_permuted_on_inputs_of_other_sizes(piece, fn, shapes, words):
    from helpers.checkers import checker_heads
    whole = diagnose(fn, piece=piece)
    parts = [_heads_piece(checker_heads.SPLIT if piece == "split_heads" else checker_heads.MERGE, s) for s in shapes]
    for verdict in [whole] + [part.check(fn, 2.0) for part in parts]:
        assert verdict.mistake == "axes_permuted", verdict.text
        assert all(w in verdict.text for w in words), verdict.text
        assert "np.swapaxes(x, -2, -3)" in verdict.text


def test_a_split_made_a_batch_of_one_with_the_right_swap_is_right_where_numpy_agrees():
    """The right swap of a batch, transpose(0, 2, 1, 3), with one sentence made a batch of one: right on one
    sentence and on a batch; named only because it refuses two leading axes."""
    def split(x, num_heads):
        b = x[None] if x.ndim == 2 else x
        y = b.reshape(*b.shape[:-1], num_heads, -1).transpose(0, 2, 1, 3)
        return y[0] if x.ndim == 2 else y
    verdict = diagnose(split, piece="split_heads")
    assert verdict.mistake == "axes_permuted" and "transpose(0, 2, 1, 3)" in verdict.text, verdict.text


# --------------------------------------------------------------------------
# multi_head_attention: the scale, the axis, the transpose, the attention it calls
# --------------------------------------------------------------------------

def _mha(scale=None, axis=-1, swap=None):
    def mha(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
        d_k = X.shape[-1] // num_heads

        def split(t):
            t = t.reshape(*t.shape[:-1], num_heads, d_k)
            return t.swapaxes(*swap) if swap else np.swapaxes(t, -2, -3)
        Q, K, V = split(X @ W_Q), split(X @ W_K), split(X @ W_V)
        s = Q @ np.swapaxes(K, -1, -2) / (np.sqrt(d_k) if scale is None else scale(X, num_heads))
        out = _attend(s, V, mask, axis=axis)
        out = out.swapaxes(*swap) if swap else np.swapaxes(out, -2, -3)
        return out.reshape(X.shape) @ W_O
    return mha


@pytest.mark.parametrize("fn, key, words", [
    (_mha(scale=lambda X, h: np.sqrt(h)), "scale_by_shape", "sqrt(num_heads) = sqrt(4)"),   # tt-metal #56789
    (_mha(scale=lambda X, h: 8.0), "constant_scale", "by 8 whatever d_k is"),
    (_mha(axis=1), "wrong_axis", "axis=1"),                                                  # fastNLP #254
    (_mha(axis=-3), "wrong_axis", "axis=-3"),
    (_mha(swap=(1, 2)), "axes_permuted", "swapaxes(1, 2) in the split"),                     # annotated-transformer #118
])
def test_multi_head_faults_with_a_parameter_are_named_with_the_value(fn, key, words):
    verdict = diagnose(fn, piece="multi_head_attention")
    assert verdict.mistake == key, verdict.text
    assert words in verdict.text, verdict.text


def mha_softmax_over_heads_and_keys(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    """Heads and keys flattened into one row before the softmax (facebookresearch/detr #247): the heads of one
    query share one distribution."""
    d_k = X.shape[-1] // num_heads
    Q, K, V = (np.swapaxes((X @ W).reshape(*X.shape[:-1], num_heads, d_k), -2, -3) for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    rows = np.moveaxis(s, -3, -2)                                  # (..., n, h, n)
    flat = rows.reshape(*rows.shape[:-2], -1)
    e = np.exp(flat - flat.max(axis=-1, keepdims=True))
    w = np.moveaxis((e / e.sum(axis=-1, keepdims=True)).reshape(rows.shape), -2, -3)
    out = np.swapaxes(w @ V, -2, -3)
    return out.reshape(X.shape) @ W_O


def test_a_softmax_over_heads_and_keys_at_once_is_wrong_axis_naming_both_on_inputs_of_other_sizes():
    from helpers.checkers import checker_heads
    parts = [dataclasses.replace(checker_heads.MULTI, cases=tuple(c for c in checker_heads.MULTI.cases
                                                                  if c.name in names))
             for names in (("two heads", "four heads"), ("batch", "random (5, 12)", "random (2, 6, 8)"))]
    whole = diagnose(mha_softmax_over_heads_and_keys, piece="multi_head_attention")
    for verdict in [whole] + [part.check(mha_softmax_over_heads_and_keys, 2.0) for part in parts]:
        assert verdict.mistake == "wrong_axis", verdict.text
        assert "axis=(-3, -1)" in verdict.text and "the heads' axis and the keys' axis together" in verdict.text
        assert "axis=-1" in verdict.text


def test_a_scale_of_multi_head_attention_fits_across_sizes():
    # the first wrong input has 4 heads; the others 1, 2, 3: only the rule num_heads explains them all
    from helpers.checkers.battery import MULTI_HEAD
    assert len({c.args["num_heads"] for c in MULTI_HEAD}) >= 3
    assert "the number of heads" in diagnose(_mha(scale=lambda X, h: np.sqrt(h)), piece="multi_head_attention").text


def _workbook(attention_source):
    import types
    module = types.ModuleType("workbook")
    exec("import numpy as np\n" + attention_source + """
def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    split = lambda t: np.swapaxes(t.reshape(*t.shape[:-1], num_heads, t.shape[-1] // num_heads), -2, -3)
    out, weights = attention(split(X @ W_Q), split(X @ W_K), split(X @ W_V), mask)
    return np.swapaxes(out, -2, -3).reshape(X.shape) @ W_O, weights
""", module.__dict__)
    return module


def test_a_multi_head_function_failing_inside_its_own_attention_gets_that_attentions_key():
    module = _workbook('''
def attention(Q, K, V, mask=None):
    s = Q @ K.T / np.sqrt(K.shape[-1])            # right for one sentence only
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
''')
    verdict = diagnose(module.multi_head_attention, piece="multi_head_attention")
    assert verdict.mistake == "batch_transpose", verdict.text
    assert "The attention multi_head_attention calls, attention, is wrong on its own" in verdict.text
    assert "np.swapaxes(K, -1, -2)" in verdict.text


def test_a_multi_head_function_with_a_right_attention_is_not_sent_to_it():
    module = _workbook('''
def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total == 0, 1.0, total)
    return w @ V, w
''')
    assert diagnose(module.multi_head_attention, piece="multi_head_attention").correct
    exec("def no_w_o(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):\n"
         "    return multi_head_attention(X, W_Q, W_K, W_V, np.eye(X.shape[-1]), num_heads, mask)[0]\n",
         module.__dict__)
    verdict = diagnose(module.no_w_o, piece="multi_head_attention")
    assert verdict.mistake == "no_output_projection" and "is wrong on its own" not in verdict.text, verdict.text


# --------------------------------------------------------------------------
# kv_cache_step: the scale
# --------------------------------------------------------------------------

def _kv(divide):
    def kv_cache_step(cache_keys, cache_values, q, k, v):
        K, V = np.vstack([cache_keys, k]), np.vstack([cache_values, v])
        s = K @ q / divide(K, V, q)
        e = np.exp(s - s.max())
        return e / e.sum() @ V
    return kv_cache_step


@pytest.mark.parametrize("fn, key, words", [
    (_kv(lambda K, V, q: np.sqrt(len(K))), "scale_by_n_keys", "sqrt(t + 1) = sqrt(2)"),
    (_kv(lambda K, V, q: np.sqrt(V.shape[-1])), "scale_by_d_v", "sqrt(d_v) = sqrt(4)"),
    (_kv(lambda K, V, q: 8.0), "constant_scale", "by 8 whatever d_k is"),
    (_kv(lambda K, V, q: np.sqrt(2 * q.shape[-1])), "scale_by_shape", "sqrt(2 d_k) = sqrt(8)"),
])
def test_a_kv_step_scale_is_fitted_and_named_by_what_it_equals(fn, key, words):
    verdict = diagnose(fn, piece="kv_cache_step")
    assert verdict.mistake == key, verdict.text
    assert words in verdict.text, verdict.text


def test_the_kv_battery_has_steps_of_several_sizes():
    from helpers.checkers.battery import KV_CACHE_STEP
    assert len({c.args["cache_keys"].shape for c in KV_CACHE_STEP}) >= 4


# --------------------------------------------------------------------------
# A reviewer's functions (issue 32, second review): masks that broadcast, K transposed with fixed axes, a scale read
# off a fixed index of a shape, the scale after the softmax, and in multi-head attention interleaved heads, a mask
# used only when 2-D, sqrt(d_k) * num_heads, a split-only fixed transpose; texts true of the function
# --------------------------------------------------------------------------

def _sm(x, axis=-1):
    """The learner's own right softmax, guarded for a row hidden everywhere."""
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0.0))
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)


att_boolindex = wf.att_review_boolindex


att_mask2d_only = wf.att_review_mask2d_only


def test_a_mask_that_broadcasts_over_a_batch_is_in_the_battery_and_catches_two_false_passes():
    shared = [c for c in ATTENTION if c.mask is not None and c.Q.ndim > 2]
    assert {c.mask.shape for c in shared} == {(4, 1, 4), (5, 5)}         # padding_mask's, one causal for a batch
    assert all(c.needs == ("masks", "batches") for c in shared)
    verdict = diagnose(att_boolindex)
    assert verdict.mistake == "mask_indexed" and verdict.case == "padded batch", verdict.text
    assert "scores[~mask] = -np.inf" in verdict.text and "IndexError" in verdict.text
    verdict = diagnose(att_mask2d_only)
    assert verdict.mistake == "mask_ignored" and "only when it is 2-D" in verdict.text, verdict.text
    assert "(4, 1, 4)" in verdict.text                                  # the input it ignored, by its shape
    # masks without batches (notebook 04 before batches): neither shared input is tried
    assert diagnose(att_boolindex, batches=False).correct and diagnose(att_mask2d_only, batches=False).correct


def test_a_right_function_that_reads_the_mask_entry_by_entry_passes_once_it_broadcasts_it():
    def loops(Q, K, V, mask=None):
        out = np.zeros(Q.shape[:-1] + V.shape[-1:])
        mask = np.ones(Q.shape[:-1] + K.shape[-2:-1], bool) if mask is None else np.broadcast_to(
            mask, Q.shape[:-1] + K.shape[-2:-1])
        for idx in np.ndindex(*Q.shape[:-1]):
            s = np.array([Q[idx] @ K[idx[:-1] + (j,)] for j in range(K.shape[-2])]) / np.sqrt(K.shape[-1])
            s = np.where(mask[idx], s, -np.inf)
            out[idx] = _sm(s) @ V[idx[:-1]]
        return out
    assert diagnose(loops).correct


att_swap12 = wf.att_review_swap12


att_fixed_transpose = wf.att_review_transpose_021


att_swap01 = wf.att_review_swap01


@pytest.mark.parametrize("fn, key, words", [
    (att_swap12, "axes_permuted", "np.swapaxes(K, 1, 2)"),
    (att_fixed_transpose, "axes_permuted", "K.transpose(0, 2, 1)"),
    (att_swap01, "batch_transpose", "np.swapaxes(K, 0, 1)"),
])
def test_k_transposed_with_fixed_axes_is_named_by_what_it_swaps(fn, key, words):
    verdict = diagnose(fn)
    assert verdict.mistake == key and words in verdict.text, verdict.text
    assert ".T" not in verdict.text.split("\n")[0] and "np.swapaxes(K, -1, -2)" in verdict.text
    if key == "batch_transpose":           # right for one sentence; on a batch it swaps the batch and the keys
        assert "it swaps the batch axis with the keys' axis" in verdict.text
    else:                                  # refused on one sentence (2 axes), right on a batch of 3 axes
        assert "K has 2 axes and numpy refuses it" in verdict.text


def test_dot_T_keeps_its_own_words():
    def uses_T(Q, K, V, mask=None):
        s = Q @ K.T / np.sqrt(Q.shape[-1])
        return _sm(s if mask is None else np.where(mask, s, -np.inf)) @ V
    verdict = diagnose(uses_T)
    assert verdict.mistake == "batch_transpose" and ".T reverses every axis" in verdict.text


att_shape1 = wf.att_review_shape1


att_lenQ0 = wf.att_review_len_q0


@pytest.mark.parametrize("fn", [att_shape1, att_lenQ0])
def test_a_scale_read_from_a_fixed_index_of_a_shape_is_named(fn):
    verdict = diagnose(fn)
    assert verdict.mistake == "scale_by_shape", verdict.text
    assert "sqrt(Q.shape[1]) = sqrt(3)" in verdict.text and "the number of queries for a batch" in verdict.text
    assert "d_k for one sentence" in verdict.text and "sqrt(d_k) = sqrt(4)" in verdict.text


def test_the_fixed_index_scale_fits_on_batches_of_other_sizes():
    # Q.shape[1] is n_q = 3 on the first batch (d_k = 4) and n_q = 5 on the causal batch (d_k = 3), d_k on every
    # sentence: only the rule Q.shape[1] explains all (sqrt(n_q) fails on one sentence, a constant on both batches)
    sizes = {(c.Q.shape[1], c.Q.shape[-1]) for c in ATTENTION if c.Q.ndim == 3}
    assert (3, 4) in sizes and (5, 3) in sizes
    assert "sqrt(Q.shape[1])" in diagnose(att_shape1).text
    assert diagnose(att_shape1, batches=False).correct         # one sentence at a time: Q.shape[1] is d_k


att_scale_after = wf.att_review_scale_after


def test_the_scale_after_the_softmax_is_named():
    verdict = diagnose(att_scale_after)
    assert verdict.mistake == "scale_after_softmax" and "softmax(Q @ K^T / np.sqrt(d_k))" in verdict.text


def att_swapped_return(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    w = _sm(s if mask is None else np.where(mask, s, -np.inf))
    return w, w @ V


def test_weights_and_output_in_the_wrong_order_are_told_so():
    verdict = diagnose(att_swapped_return)
    assert verdict.mistake == "returned_weights" and "in the wrong order: (weights, output)" in verdict.text
    assert "not the output" not in verdict.text
    verdict = diagnose(lambda Q, K, V, mask=None: att_swapped_return(Q, K, V, mask)[0])
    assert verdict.mistake == "returned_weights" and "returns the attention weights, not the output" in verdict.text


def test_weights_beside_the_right_output_that_are_not_the_weights_are_weights_wrong():
    verdict = diagnose(lambda Q, K, V, mask=None: (att_swapped_return(Q, K, V, mask)[1], Q @ np.swapaxes(K, -1, -2)))
    assert verdict.mistake == "weights_wrong" and "return weights @ V, weights" in verdict.text


@pytest.mark.parametrize("axis, note, absent", [
    (-2, "axis=-2 is the queries' axis of every input", "a fixed axis=1"),
    (1, "a fixed axis=1 counts from the front: it is the keys' axis for one sentence", "axis=-2 is"),
    (-3, "axis=-3 counts from the end", "a fixed axis=1"),
])
def test_the_wrong_axis_text_is_true_of_the_learners_axis(axis, note, absent):
    verdict = diagnose(attention_axis(axis))
    assert verdict.mistake == "wrong_axis" and note in verdict.text and absent not in verdict.text, verdict.text


def _review_merge(x):
    *lead, h, n, d = x.shape
    return np.swapaxes(x, -2, -3).reshape(*lead, n, h * d)


mha_interleaved = wf.mha_review_interleaved


def mha_interleaved_split_only(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    def sp(x):
        *lead, n, d = x.shape
        return np.moveaxis(x.reshape(*lead, n, d // num_heads, num_heads), -1, -3)
    Q, K, V = (sp(X @ W) for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return _review_merge(_sm(s if mask is None else np.where(mask, s, -np.inf)) @ V) @ W_O


mha_mask2d_only = wf.mha_review_mask2d_only


mha_sqrt_dk_times_h = wf.mha_review_sqrt_dk_times_h


mha_fixed_split = wf.mha_review_fixed_split


mha_three = wf.mha_review_three


@pytest.mark.parametrize("fn, key, words", [
    (mha_interleaved, "interleaved", "(Here in the split and in the merge.)"),
    (mha_interleaved_split_only, "interleaved", "(Here in the split.)"),
    (mha_mask2d_only, "mask_ignored", "Here it ignores a mask of shape (2, 1, 1, 4)"),
    (mha_sqrt_dk_times_h, "scale_by_shape", "sqrt(d_k) * num_heads = 2.828"),
    (mha_fixed_split, "axes_permuted", "transpose(0, 2, 1, 3) in the split (after the reshape"),
])
def test_multi_head_faults_of_the_review_are_named(fn, key, words):
    verdict = diagnose(fn, piece="multi_head_attention")
    assert verdict.mistake == key and words in verdict.text, verdict.text
    if fn is mha_fixed_split:              # the split refuses one sentence: nothing shows the merge wrong
        assert "and in the merge:" not in verdict.text


def test_the_sqrt_d_k_times_heads_scale_fits_across_sizes():
    from helpers.checkers.battery import MULTI_HEAD
    assert len({(c.args["X"].shape[-1] // c.args["num_heads"], c.args["num_heads"]) for c in MULTI_HEAD}) >= 3
    verdict = diagnose(mha_sqrt_dk_times_h, piece="multi_head_attention")
    assert verdict.mistake == "scale_by_shape"


def test_a_multi_head_function_returning_three_things_is_told_as_attentions_is():
    verdict = diagnose(mha_three, piece="multi_head_attention")
    assert verdict.correct and "You return three things; the course's multi_head_attention returns two" in verdict.text
    assert "three things" not in diagnose(lambda *a, **k: mha_three(*a, **k)[:2], piece="multi_head_attention").text


def test_padding_masks_head_axis_text_cites_no_signature_the_stub_lacks():
    verdict = diagnose(lambda is_real: np.asarray(is_real, bool)[:, None, None, :], piece="padding_mask")
    assert verdict.mistake == "head_axis" and "num_heads=h" not in verdict.text
    assert "padding_mask(is_real) takes no number of heads" in verdict.text
