"""Issue 15: inputs keep their meaning at every size.

One section per fault found in public bug reports, each testing the fault's
whole kind with the right value the issue gives:
1. an answer that is the (output, weights) pair, or a tuple/list holding the answer;
2. numpy masked arrays, whose mask numpy drops silently: refused everywhere;
3. figures without a size limit (structure here; time and memory in tools/bench_attention.py);
4. batch padding masks: (B, 1, n_k), padding_mask(is_real);
5. answers of the wrong granularity;
6. messages that are not true (long double 1e400 is too large for float64, not inf);
and the leaner attention (in place, O(n d) checks) with its fast path.
"""

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from helpers import attention, examples, explorers, plots, saturation  # noqa: E402
from helpers.attention import (  # noqa: E402
    attention_entropy,
    causal_mask,
    merge_heads,
    multi_head_attention,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from helpers.exercises import base as exercises_base  # noqa: E402
from helpers.exercises import (  # noqa: E402
    AttentionWeightsExercise,
    DkPredictionExercise,
    OutputExercise,
    ProjectionExercise,
    ScoreExercise,
    SoftmaxRowExercise,
)

rb = examples.load_example("river_bank")
TOKENS = list(rb.tokens)                      # the river bank flooded
Q, K, V = rb.X @ rb.W_Q, rb.X @ rb.W_K, rb.X @ rb.W_V
BANK, RIVER = TOKENS.index("bank"), TOKENS.index("river")
MASK = causal_mask(len(TOKENS))


def masked(values, hide):
    return np.ma.masked_array(np.asarray(values, dtype=float), mask=hide)


# --------------------------------------------------------------------------
# 2. numpy masked arrays
# --------------------------------------------------------------------------

HIDDEN_MEANS = r"np\.ma.*True means \*hidden\*.*opposite of the course's masks"


def test_softmax_of_a_masked_array_is_refused_and_the_conversion_it_shows_gives_the_right_weights():
    x = masked([1.0, 2.0, 3.0], [False, False, True])
    with pytest.raises(ValueError, match=HIDDEN_MEANS + r".*np\.ma\.filled\(x, -np\.inf\)"):
        softmax(x)
    # The right value from the issue: the hidden entry excluded, as a boolean mask would.
    # By hand: e^1 / (e^1 + e^2) = 1 / (1 + e) = 0.26894, e / (1 + e) = 0.73106.
    w = softmax(np.ma.filled(x, -np.inf))
    assert np.allclose(w, [1 / (1 + np.e), np.e / (1 + np.e), 0.0], atol=1e-12)
    assert w[2] == 0.0


def test_attention_with_a_masked_key_is_refused_and_the_shown_conversion_gives_the_key_no_weight():
    keys = np.ma.masked_array(K, mask=np.zeros_like(K, dtype=bool))
    keys[RIVER] = np.ma.masked
    with pytest.raises(ValueError, match=r"K is a numpy masked array.*" + r"~np\.ma\.getmaskarray\(K\)"):
        scaled_dot_product_attention(Q, keys, V)
    # The conversion: a key is hidden where any of its entries is; the course's mask is the opposite.
    visible = ~np.ma.getmaskarray(keys).any(axis=-1)
    _, w = scaled_dot_product_attention(Q, np.ma.getdata(keys), V, mask=visible[None, :])
    assert (w[:, RIVER] == 0.0).all() and np.allclose(w.sum(axis=-1), 1.0)


def _m(shape=(4, 4), fill=0.25):
    return np.ma.masked_array(np.full(shape, fill), mask=np.zeros(shape, dtype=bool))


W44 = np.full((4, 4), 0.25)
LABELS4 = ["a", "b", "c", "d"]

#: Every public function that takes arrays, called with a numpy masked array in one argument.
REFUSERS = {
    "softmax": lambda: softmax(_m()),
    "attention Q": lambda: scaled_dot_product_attention(_m(), Q, V),
    "attention V": lambda: scaled_dot_product_attention(Q, K, _m((4, 2))),
    "attention mask": lambda: scaled_dot_product_attention(Q, K, V, mask=np.ma.masked_array(MASK)),
    "padding_mask": lambda: padding_mask(np.ma.masked_array([[True, False]])),
    "attention_entropy": lambda: attention_entropy(_m()),
    "split_heads": lambda: split_heads(_m(), 2),
    "merge_heads": lambda: merge_heads(_m((2, 4, 2))),
    "multi_head X": lambda: multi_head_attention(_m(), *[np.eye(4)] * 4, num_heads=2),
    "multi_head W_O": lambda: multi_head_attention(np.eye(4), *[np.eye(4)] * 3, _m(), num_heads=2),
    "weights_heatmap": lambda: plots.weights_heatmap(_m(), LABELS4, LABELS4, "t"),
    "heatmap_panels": lambda: plots.heatmap_panels([[(_m(), LABELS4, LABELS4, "t")]]),
    "heads_heatmaps": lambda: plots.heads_heatmaps(_m((2, 4, 4)), LABELS4, LABELS4),
    "layer_head_grid": lambda: plots.layer_head_grid(_m((2, 3)), "t", 1.0, "c"),
    "plane_plot": lambda: plots.plane_plot(_m((4, 2)), LABELS4),
    "senses_plot": lambda: plots.senses_plot([dict(name="s", points=_m((4, 2)), labels=LABELS4, start=[0, 0],
                                                    end=[1, 1], moved="a")]),
    "lines_plot": lambda: plots.lines_plot(_m((4,)), {"a": np.ones(4)}, "x", "y"),
    "lines_plot series": lambda: plots.lines_plot(np.ones(4), {"a": _m((4,))}, "x", "y"),
    "weights_table_html": lambda: plots.weights_table_html(_m(), LABELS4, LABELS4),
    "weights_table_html masked": lambda: plots.weights_table_html(W44, LABELS4, LABELS4,
                                                                  masked=np.ma.masked_array(~MASK)),
    "weights_row_html": lambda: plots.weights_row_html(_m((4,)), LABELS4),
    "softmax_jacobian": lambda: saturation.softmax_jacobian(_m()),
    "jacobian_size": lambda: saturation.jacobian_size(_m()),
    "compare": lambda: examples.compare(_m((4,)), rb.published["weights_bank"]),
    "mask_state hidden": lambda: explorers.mask_state(hidden=np.ma.masked_array([1, 2], mask=[False, True])),
    "heads_state tokens": lambda: explorers.heads_state(tokens=np.ma.masked_array(["a", "b"])),
    "ScoreExercise X": lambda: ScoreExercise(np.ma.masked_array(rb.X), rb.W_Q, rb.W_K, TOKENS, "bank", "river"),
    "SoftmaxRowExercise scores": lambda: SoftmaxRowExercise(_m((4,)), 2, LABELS4),
    "AttentionWeightsExercise mask": lambda: AttentionWeightsExercise(rb.X, rb.W_Q, rb.W_K, TOKENS,
                                                                      mask=np.ma.masked_array(MASK)),
    "in a list": lambda: softmax([np.ma.masked_array([1.0, 2.0]), np.array([1.0, 2.0])]),
}


@pytest.mark.parametrize("name", list(REFUSERS))
def test_every_function_taking_arrays_refuses_a_masked_array_saying_what_true_means(name):
    with pytest.raises(ValueError, match=HIDDEN_MEANS):
        REFUSERS[name]()
    plt.close("all")


def test_the_real_model_refuses_masked_ids_is_real_and_gelu_input():
    from helpers import real_model

    model = real_model.load_minilm()
    ids = model.tokenize("the river bank")[1]
    with pytest.raises(ValueError, match=r"ids is a numpy masked array.*" + HIDDEN_MEANS[6:] + r".*is_real=~np\.ma"):
        model.forward(np.ma.masked_array(ids, mask=[False] * (len(ids) - 1) + [True]))
    with pytest.raises(ValueError, match=r"is_real is a numpy masked array"):
        model.forward(ids, np.ma.masked_array(np.ones(len(ids), dtype=bool)))
    with pytest.raises(ValueError, match=r"x is a numpy masked array"):
        real_model.gelu(np.ma.masked_array([1.0]))


def _exercises():
    score = ScoreExercise(rb.X, rb.W_Q, rb.W_K, TOKENS, "bank", "river")
    row = SoftmaxRowExercise((Q @ K.T)[BANK], 2, TOKENS)
    weights = AttentionWeightsExercise(rb.X, rb.W_Q, rb.W_K, TOKENS, mask=MASK)
    projection = ProjectionExercise(rb.X, rb.W_Q, rb.W_K, rb.W_V, TOKENS, "bank", role="key")
    output = OutputExercise(rb.X, rb.W_Q, rb.W_K, rb.W_V, TOKENS, "bank")
    return dict(score=score, row=row, weights=weights, projection=projection, output=output)


EX = _exercises()
# Checkers recognise the answer of any other exercise alive in the session; these test-only ones must
# not stand in the way of the notebooks' exercises tested elsewhere (test_exercises.py).
exercises_base._BUILT[:] = [ref for ref in exercises_base._BUILT if not any(ref() is ex for ex in EX.values())]


@pytest.mark.parametrize("name", list(EX))
def test_every_checker_answers_a_masked_array_with_the_rule_never_an_exception(name):
    ex = EX[name]
    answer = np.ma.masked_array(np.atleast_1d(ex.expected), mask=False)
    feedback = ex.feedback(answer)
    assert feedback.mistake == "masked_array" and not feedback.correct
    assert "True means *hidden*" in feedback.text and "np.ma.filled(answer" in feedback.text


def test_a_choice_checker_reads_a_masked_array_as_no_choice():
    ex = DkPredictionExercise(trials=20)
    assert ex.feedback(np.ma.masked_array([1.0])).mistake == "not_a_choice"


# --------------------------------------------------------------------------
# 1. the (output, weights) pair, and tuples or lists holding the answer
# --------------------------------------------------------------------------

def test_the_pair_given_to_the_weights_checker_is_named_with_the_unpacking():
    pair = scaled_dot_product_attention(Q, K, V, mask=MASK)          # d_v = 2, n = 4: ragged as one array
    fb = EX["weights"].feedback(pair)
    assert fb.mistake == "pair" and not fb.correct
    assert "the pair (output, weights)" in fb.text and "output, weights = scaled_dot_product_attention(" in fb.text
    assert "answer = weights" in fb.text
    # d_v = n: the pair reads as one (2, n, n) array; the checker still looks inside it.
    square = scaled_dot_product_attention(Q, K, np.eye(4), mask=MASK)
    assert np.shape(np.asarray(square)) == (2, 4, 4)
    assert EX["weights"].feedback(square).mistake == "pair"
    assert EX["weights"].feedback(list(square)).mistake == "pair"


def test_the_pair_given_to_the_output_checker_names_the_mistake_of_its_output_item():
    fb = EX["output"].feedback(scaled_dot_product_attention(Q, K, V))
    assert fb.mistake == "all_outputs"
    assert "output, weights = " in fb.text and "item 0 (the output)" in fb.text


def test_a_pair_whose_weights_are_wrong_names_that_mistake():
    fb = EX["weights"].feedback(scaled_dot_product_attention(Q, K, V))  # no mask
    assert fb.mistake == "no_mask" and "output, weights = " in fb.text


@pytest.mark.parametrize("name", list(EX))
def test_every_checker_finds_its_answer_inside_a_tuple_or_list_of_other_things(name):
    ex = EX[name]
    right = np.asarray(ex.expected)
    for answer in [(right, np.zeros(7)), [np.ones((3, 3)), right, "a note"]]:
        fb = ex.feedback(answer)
        assert fb.mistake == "container" and not fb.correct, fb.text
        assert f"answer = answer[{1 if isinstance(answer, list) else 0}]" in fb.text


@pytest.mark.parametrize("name", ["weights", "projection", "row"])
def test_a_tuple_of_rows_is_still_a_matrix_read_whole_first(name):
    ex = EX[name]
    rows = tuple(np.atleast_1d(ex.expected))
    assert ex.feedback(rows).correct


def test_a_choice_held_in_a_tuple_is_named():
    ex = DkPredictionExercise(trials=20)
    fb = ex.feedback(("a", 3))
    assert fb.mistake == "container" and "answer = 'a'" in fb.text and "among other things" in fb.text
    alone = ex.feedback(["a"])                                  # a list of one: nothing else to speak of
    assert alone.mistake == "container" and "holding only 'a'" in alone.text
    assert "other things" not in alone.text
    assert ex.feedback(("a", "b")).mistake == "not_a_choice"   # two choices: no single one to name


# --------------------------------------------------------------------------
# 5. answers of the wrong granularity
# --------------------------------------------------------------------------

def test_the_whole_score_matrix_for_one_score_says_which_entry():
    fb = EX["score"].feedback(Q @ K.T)
    assert fb.mistake == "granularity"
    # bank is query 2, river key 1 (the river bank flooded, counted from 0)
    assert "[2, 1]" in fb.text and "row 'bank', column 'river'" in fb.text and "answer = answer[2, 1]" in fb.text


def test_the_scaled_score_matrix_for_one_raw_score_names_the_entry_and_the_mistake():
    fb = EX["score"].feedback(Q @ K.T / np.sqrt(2))
    assert fb.mistake == "already_scaled" and "[2, 1]" in fb.text


def test_a_row_of_scores_for_one_score_says_which_entry():
    fb = EX["score"].feedback(Q[BANK] @ K.T)
    assert fb.mistake == "granularity" and "[1]" in fb.text and "the entry of 'river'" in fb.text


def test_the_whole_weight_matrix_for_one_row_says_which_row():
    _, W = scaled_dot_product_attention(Q, K, V)
    fb = EX["row"].feedback(W)
    assert fb.mistake == "granularity" and f"row [{BANK}]" in fb.text
    fb = EX["row"].feedback(W.T)  # the matrix transposed: a column
    assert fb.mistake == "granularity" and f"column [:, {BANK}]" in fb.text and "transposed" in fb.text


def test_every_word_projected_for_one_word_says_which_row():
    fb = EX["projection"].feedback(rb.X @ rb.W_K)
    assert fb.mistake == "granularity" and f"row [{BANK}]" in fb.text and "the row of 'bank'" in fb.text


def test_one_row_for_the_whole_matrix_says_whose_row_it_is():
    fb = EX["weights"].feedback(EX["weights"].expected[BANK])
    assert fb.mistake == "shape" and "the row of 'bank' alone" in fb.text


# --------------------------------------------------------------------------
# 4. batch padding masks
# --------------------------------------------------------------------------

def test_padding_mask_shapes_and_the_right_weights_when_batch_equals_n_q():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 3, 2))                     # B = n_q = n_k = 3: the ambiguous case
    is_real = np.array([[True, True, True], [True, True, False], [True, False, False]])
    assert padding_mask(is_real).shape == (3, 1, 3)
    assert padding_mask(is_real, num_heads=4).shape == (3, 1, 1, 3)
    assert padding_mask(is_real[1]).shape == (1, 3)
    _, w = scaled_dot_product_attention(X, X, X, mask=padding_mask(is_real))
    for b in range(3):
        assert (w[b][:, ~is_real[b]] == 0.0).all()     # no query of sentence b reads its padding
        alone = scaled_dot_product_attention(X[b], X[b][is_real[b]], X[b][is_real[b]])[1]  # its real keys only
        assert np.allclose(w[b][:, is_real[b]], alone)
    # With heads: (B, heads, n, d_k) and the (B, 1, 1, n_k) mask.
    H = np.stack([X, 2 * X], axis=1)
    _, wh = scaled_dot_product_attention(H, H, H, mask=padding_mask(is_real, num_heads=2))
    assert (wh[2][:, :, 1:] == 0.0).all()


def test_a_batch_of_flags_passed_as_they_are_gets_an_error_that_shows_the_fix():
    X = np.zeros((2, 4, 3))
    with pytest.raises(ValueError, match=r"\(B, 1, n_k\), or \(B, 1, 1, n_k\) with heads.*padding_mask\(is_real\)"):
        scaled_dot_product_attention(X, X, X, mask=np.ones((2, 4), dtype=bool))


def test_a_square_mask_in_cross_attention_is_told_apart_from_a_padding_mask():
    # A causal (n, n) mask where n_q != n_k is not a padding mistake: the error says what a square mask fits.
    Q, K = np.zeros((2, 3)), np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"A square mask, such as causal_mask\(n\), fits self-attention.*n_q = 2 and n_k = 4") as err:
        scaled_dot_product_attention(Q, K, K, mask=np.ones((4, 4), dtype=bool))
    assert "padding_mask" not in str(err.value)


def test_the_docstring_shows_the_batch_padding_mask_shape():
    doc = scaled_dot_product_attention.__doc__
    assert "(B, 1, n_k)" in doc and "(B, 1, 1, n_k)" in doc and "padding_mask(is_real)" in doc


@pytest.mark.parametrize("bad, kwargs, pattern", [
    (np.ones((2, 3)), {}, r"is_real must be a boolean array .* got dtype float64, shape \(2, 3\)"),
    (np.ones((2, 2, 3), bool), {}, r"is_real must be a boolean array .* shape \(2, 2, 3\)"),
    (np.ones((2, 0), bool), {}, r"is_real must be a boolean array"),
    (np.ones((2, 3), bool), {"num_heads": 0}, r"num_heads must be None or a positive whole number; got 0"),
    (np.ones((2, 3), bool), {"num_heads": True}, r"num_heads must be None or a positive whole number; got True"),
])
def test_padding_mask_bad_input(bad, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        padding_mask(bad, **kwargs)


# --------------------------------------------------------------------------
# 6. messages that say what happened
# --------------------------------------------------------------------------

@pytest.mark.parametrize("call, pattern", [
    (lambda: softmax(np.array([np.longdouble("1e400"), 1.0])),
     r"x holds a number too large for float64 .* got 1e\+400 in dtype float128"),
    (lambda: scaled_dot_product_attention(np.array([[np.longdouble("1e400"), 0.0]]), K[:, :2], V),
     r"Q holds a number too large for float64"),
    (lambda: softmax([10 ** 400, 1]), r"x holds a number too large for float64"),
    (lambda: softmax(np.array([1.0, None])), r"x must be an array of real numbers; got dtype object with an entry that is not a number \(None\)"),
    (lambda: scaled_dot_product_attention(np.array([[-np.inf, 0.0]]), K, V), r"Q contains -inf;"),
    (lambda: softmax(np.array([np.inf, -np.inf])), r"x contains inf; every entry must be a finite number or -inf"),
    (lambda: plots.weights_heatmap(np.array([[np.nan, 1.0]]), ["a"], ["a", "b"], "t"), r"got NaN in shape \(1, 2\)"),
    (lambda: saturation.softmax_jacobian(np.array([np.nan, 1.0])), r"weights contains NaN; every entry must be a finite number \(shape \(2,\)\)"),
    (lambda: scaled_dot_product_attention(np.array([[1e308, 1.0]]), np.array([[1e200, 1.0]]), [[1.0]], scale=2.0),
     r"overflowed float64 to inf.*largest \|Q\| 1e\+308"),
])
def test_each_message_says_what_is_true_of_its_input(call, pattern):
    if "longdouble" in repr(call.__code__.co_consts) and np.finfo(np.longdouble).max < 1e400:
        pytest.skip("this platform's long double is float64: 1e400 cannot even be written")
    with pytest.raises(ValueError, match=pattern):
        call()
    plt.close("all")


def test_a_long_double_that_fits_float64_is_accepted():
    w = softmax(np.array([1000.0, 1001.0], dtype=np.longdouble))
    assert np.allclose(w, [0.268941, 0.731059], atol=1e-6)  # 1/(1+e), e/(1+e)


# --------------------------------------------------------------------------
# The leaner attention: in place, O(n d) checks, and its fast path
# --------------------------------------------------------------------------

def loop_softmax(row):
    m = max(row)
    e = [np.exp(v - m) for v in row]
    return [v / sum(e) for v in e]


def test_inputs_are_left_unchanged_and_the_weights_are_a_new_array():
    x = np.array([[1.0, 2.0], [3.0, -np.inf]])
    before = x.copy()
    w = softmax(x)
    assert np.array_equal(x, before) and not np.shares_memory(w, x)
    q, k, v = Q.copy(), K.copy(), V.copy()
    out, w = scaled_dot_product_attention(q, k, v, mask=MASK)
    assert np.array_equal(q, Q) and np.array_equal(k, K) and np.array_equal(v, V)
    assert not any(np.shares_memory(w, a) for a in (q, k, v, MASK))


@pytest.mark.parametrize("size", [1.0, 17.0, 24.0, 25.0, 40.0])
def test_scores_near_and_past_the_no_subtraction_bound_match_the_plain_loop(size):
    # Scores up to size**2: below EXP_SAFE = 600 the max subtraction is skipped, above it is done.
    q = np.array([[size, 0.0], [0.0, -size]])
    k = np.array([[size, 0.0], [size * 0.5, size * 0.5], [0.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, w = scaled_dot_product_attention(q, k, np.eye(3), scale=1.0)
    for i in range(2):
        assert np.allclose(w[i], loop_softmax(list(q[i] @ k.T)), rtol=1e-12, atol=1e-300)


def test_norms_too_large_to_square_still_give_the_right_weights_without_warning():
    # |q|^2 overflows float64, but every score is small: the scores are checked, not refused.
    q, k = np.array([[1e200]]), np.array([[1e-200], [2e-200]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, w = scaled_dot_product_attention(q, k, np.eye(2), scale=1.0)
    assert np.allclose(w[0], loop_softmax([1.0, 2.0]))


def test_a_fully_masked_row_is_zero_on_both_paths():
    for size in (1.0, 100.0):  # scores within and beyond EXP_SAFE
        q = np.array([[size, 0.0], [0.0, size]])
        out, w = scaled_dot_product_attention(q, q, q, mask=np.array([[False, False], [True, True]]), scale=1.0)
        assert w[0].tolist() == [0.0, 0.0] and out[0].tolist() == [0.0, 0.0]
        assert np.isclose(w[1].sum(), 1.0)


# --------------------------------------------------------------------------
# 3. figures at every size
# --------------------------------------------------------------------------

N_LARGE = plots.ANNOTATE_MAX_TOKENS + 1


def _weights(n, seed=0):
    return softmax(np.random.default_rng(seed).normal(size=(n, n)))


def _labels(n):
    return [f"t{i}" for i in range(n)]


def _fits(fig):
    w, h = fig.get_size_inches()
    return w <= plots.MAX_FIGURE_INCHES[0] + 1e-9 and h <= plots.MAX_FIGURE_INCHES[1] + 1e-9


def test_weights_heatmap_writes_every_weight_up_to_the_threshold():
    n = plots.ANNOTATE_MAX_TOKENS
    fig = plots.weights_heatmap(_weights(n), _labels(n), _labels(n), "t")
    ax = fig.axes[0]
    assert len(ax.texts) == n * n and len(ax.get_xticklabels()) == n and ax.get_title() == "t"
    plt.close(fig)


@pytest.mark.parametrize("n", [N_LARGE, 128, 512])
def test_weights_heatmap_past_the_threshold_drops_numbers_caps_size_thins_labels_and_says_so(n):
    fig = plots.weights_heatmap(_weights(n), _labels(n), _labels(n), "t")
    ax = fig.axes[0]
    assert len(ax.texts) == 0 and _fits(fig)
    shown = [t.get_text() for t in ax.get_xticklabels()]
    assert len(shown) <= plots.ANNOTATE_MAX_TOKENS and shown[0] == "0: t0"
    step = -(-n // plots.ANNOTATE_MAX_TOKENS)
    assert shown[1] == f"{step}: t{step}"
    assert f"weights not written in cells; 1 token in {step} labelled" in ax.get_title()
    plt.close(fig)


def test_heatmap_panels_and_heads_heatmaps_past_the_threshold():
    n = 64
    w = _weights(n)
    fig = plots.heatmap_panels([[(w, _labels(n), _labels(n), "a"), (w, _labels(n), _labels(n), "b")]])
    assert all(len(ax.texts) == 0 for ax in fig.axes) and _fits(fig)
    assert "not written in cells" in fig._suptitle.get_text()
    plt.close(fig)
    fig = plots.heads_heatmaps(np.stack([w] * 6), _labels(n), _labels(n))
    assert all(len(ax.texts) == 0 for ax in fig.axes) and _fits(fig)
    assert all(len(ax.get_yticks()) <= plots.ANNOTATE_MAX_TOKENS for ax in fig.axes)
    assert "not written in cells" in fig._suptitle.get_text()
    plt.close(fig)
    small = plots.heads_heatmaps(np.stack([_weights(4)] * 2), LABELS4, LABELS4)
    assert small._suptitle is None and sum(len(ax.texts) for ax in small.axes) == 2 * 16
    plt.close(small)


def test_plane_plot_labels_at_most_the_threshold_and_says_so():
    n = 100
    fig = plots.plane_plot(np.random.default_rng(0).normal(size=(n, 2)), _labels(n), title="p")
    ax = fig.axes[0]
    assert len(ax.texts) == plots.ANNOTATE_MAX_TOKENS and "1 in 5 labelled" in ax.get_title()
    plt.close(fig)


def test_html_table_past_its_limit_shows_a_corner_and_says_so():
    n, m = 100, plots.TABLE_MAX_TOKENS
    html = plots.weights_table_html(_weights(n), _labels(n), _labels(n), title="t")
    assert html.count("<td style='min-width") == m * m
    assert f"queries 0 to {m - 1} and keys 0 to {m - 1} of {n} x {n}" in html
    small = plots.weights_table_html(_weights(m), _labels(m), _labels(m), title="t")
    assert small.count("<td style='min-width") == m * m and "corner" not in small
