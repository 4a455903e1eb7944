"""Issue 25: inputs keep their meaning, round three.

One section per fault of the issue (the numbers are the issue's; 7 and 8
belong to the learner-builds issue), each testing the fault's kind in every
function that takes the same argument. Expected values come from the plain
version of the same computation (scaled_dot_product_attention, itself
checked against loops in test_attention.py) or from a hand derivation
written beside the test. Fault 9 (the real model's max_seq_length) is in
tests/test_real_model.py, fault 13 (figures at 512 tokens) at the end here.
"""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from helpers import plots, saturation, training  # noqa: E402
from helpers.attention import merge_heads, multi_head_attention, padding_mask, softmax, split_heads  # noqa: E402
from helpers.attention import scaled_dot_product_attention  # noqa: E402
from helpers.tiling import online_softmax_update, tiled_attention  # noqa: E402

finite = st.floats(min_value=-5, max_value=5, allow_nan=False, allow_infinity=False)


# --------------------------------------------------------------------------
# 1. tiled_attention broadcasts batch dimensions as scaled_dot_product_attention does
# --------------------------------------------------------------------------

def test_tiled_attention_broadcasts_unbatched_queries_over_batched_keys():
    rng = np.random.default_rng(0)
    Q, K, V = rng.standard_normal((3, 4)), rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 2))
    plain, _ = scaled_dot_product_attention(Q, K, V)
    for block in (1, 2, 5, 8):  # several key blocks, and one
        out = tiled_attention(Q, K, V, block_size=block)
        assert out.shape == plain.shape == (2, 3, 2)
        np.testing.assert_allclose(out, plain, rtol=1e-12, atol=1e-12)


@st.composite
def broadcast_case(draw):
    """Batch shapes for Q, K and V that broadcast together, each possibly shorter or with 1s."""
    full = draw(st.lists(st.integers(1, 3), min_size=0, max_size=3))
    def part(full):
        cut = draw(st.integers(0, len(full)))
        return tuple(1 if draw(st.booleans()) else s for s in full[cut:])
    n_q, n_k, d_k, d_v = (draw(st.integers(1, 6)) for _ in range(4))
    Q = draw(hnp.arrays(np.float64, part(full) + (n_q, d_k), elements=finite))
    K = draw(hnp.arrays(np.float64, part(full) + (n_k, d_k), elements=finite))
    V = draw(hnp.arrays(np.float64, part(full) + (n_k, d_v), elements=finite))
    # the mask broadcasts to the scores, whose batch is that of Q and K (V's may add more to the output)
    scores_batch = list(np.broadcast_shapes(Q.shape[:-2], K.shape[:-2]))
    mask = draw(st.none() | hnp.arrays(bool, part(scores_batch) + (n_q, n_k)))
    return Q, K, V, mask, draw(st.integers(1, 7))


@settings(max_examples=200, deadline=None)
@given(broadcast_case())
def test_tiled_attention_equals_the_plain_version_for_any_broadcasting_batch_and_block(case):
    Q, K, V, mask, block = case
    plain, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    out = tiled_attention(Q, K, V, block_size=block, mask=mask)
    assert out.shape == plain.shape
    np.testing.assert_allclose(out, plain, rtol=1e-10, atol=1e-10)


# --------------------------------------------------------------------------
# 2. multi_head_attention reads a per-sentence padding mask per sentence
# --------------------------------------------------------------------------

def _mha_case(B=2, n=4, d_model=4):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((B, n, d_model))
    W = [rng.standard_normal((d_model, d_model)) for _ in range(4)]
    is_real = np.ones((B, n), dtype=bool)
    is_real[0, 2:] = False   # sentence 0: two real tokens, two [PAD]
    is_real[1, 3:] = False   # sentence 1: three real tokens
    return X, W, is_real


def test_a_per_sentence_padding_mask_gives_each_sentence_its_own_padding_with_as_many_heads_as_sentences():
    X, W, is_real = _mha_case()
    out, weights = multi_head_attention(X, *W, num_heads=2, mask=padding_mask(is_real))
    for b in range(2):  # each sentence alone, its padding as a (1, n) mask, is the reference
        alone_out, alone_w = multi_head_attention(X[b], *W, num_heads=2, mask=is_real[b][None, :])
        np.testing.assert_allclose(weights[b], alone_w, atol=1e-12)
        np.testing.assert_allclose(out[b], alone_out, atol=1e-12)
        assert np.all(weights[b][..., ~is_real[b]] == 0.0)  # no head of sentence b looks at b's padding


@pytest.mark.parametrize("mask_of", [lambda r: padding_mask(r), lambda r: padding_mask(r, num_heads=2),
                                     lambda r: padding_mask(r)[:, None]])
def test_every_padding_mask_shape_means_the_same_padding(mask_of):
    X, W, is_real = _mha_case()
    _, expected = multi_head_attention(X, *W, num_heads=2, mask=padding_mask(is_real, num_heads=2))
    _, weights = multi_head_attention(X, *W, num_heads=2, mask=mask_of(is_real))
    np.testing.assert_allclose(weights, expected, atol=1e-12)


def test_a_mask_of_the_wrong_rank_for_multi_head_attention_says_what_to_pass():
    X, W, is_real = _mha_case()
    with pytest.raises(ValueError, match=r"mask.*\(2, 1, 1, 1, 4\).*padding_mask\(is_real\)"):
        multi_head_attention(X, *W, num_heads=2, mask=padding_mask(is_real)[:, None, None])


def test_the_docstring_says_how_a_per_sentence_mask_is_read():
    doc = multi_head_attention.__doc__
    assert "padding_mask(is_real)" in doc and "per sentence" in doc


# --------------------------------------------------------------------------
# 3. Optimiser settings outside their range are refused by name
# --------------------------------------------------------------------------

def _training_case():
    params = training.init_params(d_model=3, d_k=2, d_v=2, n_classes=2, seed=0)
    grads = {k: np.ones_like(v) for k, v in params.items()}
    return params, grads


@pytest.mark.parametrize("kwargs, pattern", [
    ({"beta1": 1.0}, r"beta1 must be.*\[0, 1\).*got 1\.0"),
    ({"beta1": 1.5}, r"beta1 must be.*\[0, 1\).*got 1\.5"),
    ({"beta1": -0.5}, r"beta1 must be.*\[0, 1\).*got -0\.5"),
    ({"beta2": 1.0}, r"beta2 must be.*\[0, 1\).*got 1\.0"),
    ({"beta2": float("nan")}, r"beta2 must be.*got nan"),
    ({"eps": -1e-8}, r"eps must be a positive.*got -1e-08"),
    ({"eps": 0.0}, r"eps must be a positive.*got 0\.0"),
    ({"learning_rate": 0.0}, r"learning_rate must be a positive.*got 0\.0"),
    ({"learning_rate": -0.1}, r"learning_rate must be a positive.*got -0\.1"),
])
def test_adam_step_refuses_settings_outside_their_range_by_name(kwargs, pattern):
    params, grads = _training_case()
    kwargs = {"learning_rate": 0.1, **kwargs}
    with pytest.raises(ValueError, match=pattern):
        adam = training.adam_step(params, grads, {}, **kwargs)
        # today beta = 1 gives NaN (m / (1 - 1**t) = 0/0) and eps = 0 gives 0/0 on a zero gradient:
        raise AssertionError(f"accepted {kwargs}; W_Q became {adam['W_Q'].ravel()[:2]}")


def test_with_a_positive_eps_a_zero_gradient_moves_nothing():
    # Why eps must be positive, not only non-negative: with g = 0 on the first step, m = v = 0 and
    # the update is 0 / (sqrt(0) + eps), 0/0 when eps = 0 (Kingma & Ba 2015, Algorithm 1).
    params, grads = _training_case()
    grads = {k: np.zeros_like(v) for k, v in grads.items()}
    new = training.adam_step(params, grads, {}, learning_rate=0.1, eps=1e-8)
    for name in training.PARAMETERS:
        np.testing.assert_array_equal(new[name], params[name])


@pytest.mark.parametrize("call", [
    lambda p, g: training.gradient_descent_step(p, g, learning_rate=-1.0),
    lambda p, g: training.gradient_descent_step(p, g, learning_rate=float("inf")),
    lambda p, g: training.train(p, np.zeros((1, 2, 3)), np.zeros((1, 2), dtype=int), steps=1, learning_rate=0.0),
])
def test_the_other_optimisers_refuse_a_learning_rate_that_is_not_positive(call):
    params, grads = _training_case()
    with pytest.raises(ValueError, match=r"learning_rate must be a positive finite number; got"):
        call(params, grads)


# --------------------------------------------------------------------------
# 4. adam_step refuses state of another shape
# --------------------------------------------------------------------------

def test_adam_step_refuses_state_left_by_parameters_of_another_shape():
    old = training.init_params(d_model=3, d_k=2, d_v=2, n_classes=2, seed=0)
    state = {}
    training.adam_step(old, {k: np.ones_like(v) for k, v in old.items()}, state, learning_rate=0.1)
    new = training.init_params(d_model=3, d_k=1, d_v=2, n_classes=2, seed=0)
    grads = {k: np.ones_like(v) for k, v in new.items()}
    before = {k: np.copy(v) for k, v in state.items()}
    with pytest.raises(ValueError, match=r"state\['m_W_Q'\] has shape \(3, 2\).*params\['W_Q'\] has shape \(3, 1\)"):
        out = training.adam_step(new, grads, state, learning_rate=0.1)
        raise AssertionError(f"accepted; W_Q came back with shape {out['W_Q'].shape}")
    assert state.keys() == before.keys() and all(np.array_equal(state[k], before[k]) for k in state)


@pytest.mark.parametrize("state, pattern", [
    ({"t": 0.5}, r"state\['t'\].*whole number.*got 0\.5"),
    ({"t": 1, "m_W_Q": "x"}, r"state\['m_W_Q'\] must be an array of real numbers"),
    ([], r"state must be a dict"),
])
def test_adam_step_refuses_state_that_is_not_its_own(state, pattern):
    params, grads = _training_case()
    with pytest.raises(ValueError, match=pattern):
        training.adam_step(params, grads, state, learning_rate=0.1)


# --------------------------------------------------------------------------
# 5. An all-zero row of weights (a query with nothing to attend to) has zero gradient
# --------------------------------------------------------------------------

def test_softmax_backward_of_the_zero_row_attention_returns_is_zero():
    Q, K, V = np.ones((2, 2)), np.ones((3, 2)), np.ones((3, 1))
    mask = np.array([[True, False, True], [False, False, False]])  # query 1 has nothing to attend to
    _, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    assert np.all(w[1] == 0.0)
    d_w = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    d_s = training.softmax_backward(w, d_w)
    # Hand derivation: row 0 is (1/2, 0, 1/2), so d_s_j = w_j (g_j - sum_i w_i g_i) = w_j (g_j - 2):
    # (-1/2, 0, 1/2); row 1 is zero weights, whose scores do not move them: zero gradient.
    np.testing.assert_allclose(d_s, [[-0.5, 0.0, 0.5], [0.0, 0.0, 0.0]], atol=1e-15)


def test_the_softmax_jacobian_of_a_zero_row_is_zero_and_agrees_with_softmax_backward():
    w = np.array([[0.25, 0.75], [0.0, 0.0]])
    J = saturation.softmax_jacobian(w)
    np.testing.assert_array_equal(J[1], np.zeros((2, 2)))
    np.testing.assert_allclose(saturation.jacobian_size(w), [np.linalg.norm(J[0]), 0.0])
    g = np.array([[1.0, -1.0], [2.0, 3.0]])
    np.testing.assert_allclose(training.softmax_backward(w, g), (J @ g[..., None])[..., 0], atol=1e-15)


@pytest.mark.parametrize("fn", [lambda w: training.softmax_backward(w, np.ones_like(w)),
                                saturation.softmax_jacobian, saturation.jacobian_size])
def test_rows_summing_to_neither_one_nor_zero_are_still_refused(fn):
    with pytest.raises(ValueError, match=r"weights must have rows that sum to 1 \(or 0"):
        fn(np.array([[0.5, 0.2]]))


# --------------------------------------------------------------------------
# 6. numerical_gradient reads a 1-element array as its number and refuses anything else
# --------------------------------------------------------------------------

@pytest.mark.parametrize("wrap", [np.array, lambda v: np.array([v]), lambda v: np.array([[v]]), np.float64])
def test_numerical_gradient_reads_a_one_element_loss_as_its_number(wrap):
    x = np.array([1.0, -2.0])
    # f(x) = x0^2 + 3 x1 has gradient (2 x0, 3) = (2, 3); central differences are exact for a quadratic
    grad = training.numerical_gradient(lambda a: wrap(a[0] ** 2 + 3 * a[1]), x)
    np.testing.assert_allclose(grad, [2.0, 3.0], rtol=1e-6)


@pytest.mark.parametrize("loss, shown", [(None, "None"), (np.array([1.0, 2.0]), r"shape \(2,\)"),
                                         ("1.0", "'1.0'"), (float("nan"), "nan"), (True, "True"),
                                         (np.array([]), r"shape \(0,\)")])
def test_numerical_gradient_refuses_a_loss_that_is_not_one_finite_number(loss, shown):
    with pytest.raises(ValueError, match=rf"f must return the loss as one finite number.*got .*{shown}"):
        training.numerical_gradient(lambda a: loss, np.array([1.0, 2.0]))


# --------------------------------------------------------------------------
# 10. Integer scores whose differences vanish in float64
# --------------------------------------------------------------------------

BIG = 2 ** 53
# softmax([a, a + 1]) = softmax([0, 1]) (shift invariance) = (1, e) / (1 + e):
LOGISTIC = [1 / (1 + math.e), math.e / (1 + math.e)]   # 0.2689, 0.7311


@pytest.mark.parametrize("scores", [np.array([BIG, BIG + 1]), np.array([BIG, BIG + 1], dtype=np.uint64),
                                    np.array([2 ** 63 - 2, 2 ** 63 - 1]), np.array([2 ** 64 - 2, 2 ** 64 - 1], dtype=np.uint64),
                                    np.array([10 ** 30, 10 ** 30 + 1], dtype=object),
                                    np.array([-2 ** 63, 2 ** 63 - 2, 2 ** 63 - 1])])
def test_softmax_of_large_integer_scores_uses_their_exact_differences(scores):
    w = softmax(scores)
    np.testing.assert_allclose(w[-2:], LOGISTIC, rtol=1e-12)
    if len(scores) == 3:  # a gap of about 2**64 leaves exactly zero weight
        assert w[0] == 0.0


def test_softmax_of_large_integers_along_another_axis():
    x = np.array([[BIG, BIG + 5], [BIG + 1, BIG + 5]])
    np.testing.assert_allclose(softmax(x, axis=0), [[LOGISTIC[0], 0.5], [LOGISTIC[1], 0.5]], rtol=1e-12)


def test_cross_entropy_of_large_integer_logits_uses_their_exact_differences():
    logits = np.array([[[BIG, BIG + 1]]])
    loss, d = training.cross_entropy(logits, np.array([[1]]))
    np.testing.assert_allclose(loss, -math.log(LOGISTIC[1]), rtol=1e-12)
    np.testing.assert_allclose(d[0, 0], [LOGISTIC[0], LOGISTIC[1] - 1.0], rtol=1e-12)


def test_online_softmax_update_refuses_integer_scores_float64_cannot_hold_by_name():
    V = np.ones((2, 1))
    with pytest.raises(ValueError, match=r"scores holds integers beyond 2\*\*53.*9007199254740993"):
        online_softmax_update(np.full(1, -np.inf), np.zeros(1), np.zeros((1, 1)), np.array([[BIG, BIG + 1]]), V)


# --------------------------------------------------------------------------
# 11. Views that write back into the caller's array
# --------------------------------------------------------------------------

VIEW_CASES = {
    "split_heads": lambda: (x := np.arange(24.0).reshape(2, 3, 4), split_heads(x, 2)),
    "split_heads of one head": lambda: (x := np.arange(6.0).reshape(2, 3), split_heads(x, 1)),
    "merge_heads of one head": lambda: (x := np.arange(6.0).reshape(1, 2, 3), merge_heads(x)),
    "merge_heads of one token": lambda: (x := np.arange(6.0).reshape(2, 1, 3), merge_heads(x)),
    "padding_mask": lambda: (x := np.array([[True, True, False]]), padding_mask(x)),
    "padding_mask with heads": lambda: (x := np.array([True, False]), padding_mask(x, num_heads=2)),
}


@pytest.mark.parametrize("name", sorted(VIEW_CASES))
def test_writing_into_a_result_never_changes_the_callers_array(name):
    x, result = VIEW_CASES[name]()
    before = x.copy()
    try:
        result[...] = result.flat[0] if result.dtype == bool else -1.0
    except ValueError as exc:
        assert "read-only" in str(exc)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("fn", [split_heads, merge_heads, padding_mask])
def test_the_docstring_says_the_result_is_read_only(fn):
    assert "read-only" in fn.__doc__


# --------------------------------------------------------------------------
# 13. Every figure function at 512 tokens keeps readable axes
# --------------------------------------------------------------------------

def _figure_cases(n):
    import importlib.util  # the benchmark's own list: the same figures are timed there
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "bench_attention", Path(__file__).resolve().parents[1] / "tools" / "bench_attention.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return [(name, draw) for name, draw in bench.figure_cases(n) if not name.endswith("_html")]


@pytest.mark.parametrize("case", range(6))
def test_at_512_tokens_every_figure_keeps_axes_of_a_readable_pixel_size(case):
    name, draw = _figure_cases(512)[case]
    fig = draw()
    try:
        fig.canvas.draw()
        width, height = fig.get_size_inches() * fig.dpi
        assert width >= 300 and height >= 200, f"{name}: figure {width:.0f} x {height:.0f} px"
        for ax in fig.axes:
            if ax.get_label() == "<colorbar>":
                continue
            box = ax.get_window_extent()
            # 100 px is about 1 inch at 100 dpi: a heatmap smaller than that shows nothing of 512 tokens
            assert box.width >= 100 and box.height >= 100, f"{name}: axes {box.width:.0f} x {box.height:.0f} px"
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------
# -inf everywhere: a slice with every key hidden is allowed wherever -inf entries are
# --------------------------------------------------------------------------

@pytest.mark.parametrize("x", [np.array([-np.inf]), np.full((2, 3), -np.inf), np.full((2, 1, 4), -np.inf)])
def test_softmax_of_scores_that_are_minus_inf_everywhere_is_all_zeros(x):
    # The docstring's promise for a slice that hides every key (hand derivation: nothing to give weight to).
    # This was refused as "x contains -inf" when every entry, not only some, was -inf.
    w = softmax(x)
    assert w.shape == x.shape and (w == 0).all()
    with pytest.raises(ValueError, match="NaN"):
        softmax(np.array([-np.inf, np.nan]))
    with pytest.raises(ValueError, match="contains inf"):
        softmax(np.array([-np.inf, np.inf]))


def test_a_mask_between_two_dimensions_and_x_s_is_refused_not_lined_up_with_the_heads():
    # X (1, B=2, n, d) with padding_mask(is_real) (B, 1, n): numpy would line B up with the 2 heads and give each
    # head another sentence's padding (a fresh reviewer measured outputs off by 8.5). Refused, saying what to pass.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1, 2, 3, 4))
    W = [rng.normal(size=(4, 4)) for _ in range(4)]
    is_real = np.array([[True, True, False], [True, False, False]])
    with pytest.raises(ValueError, match=r"mask of shape \(2, 1, 3\) has 3 dimensions.*takes 4 .*or 5"):
        multi_head_attention(X, *W, 2, mask=padding_mask(is_real))
    out, _ = multi_head_attention(X, *W, 2, mask=padding_mask(is_real)[None])   # per sentence, X's 4 dimensions
    for b in range(2):                                                            # each sentence alone, its pads cut
        n_b = int(is_real[b].sum())
        alone, _ = multi_head_attention(X[0, b, :n_b], *W, 2)
        assert np.allclose(out[0, b, :n_b], alone, atol=1e-12)


def test_adam_step_reads_a_state_of_lists_a_zero_d_beta_and_refuses_a_huge_rate_and_a_negative_v():
    # Found by a fresh reviewer: a state read back from JSON (lists) failed deep inside numpy, np.array(0.9)
    # was refused as a beta, 10**400 gave a bare OverflowError, and a negative v_* gave NaN parameters.
    params, grads = _training_case()
    state = {}
    once = training.adam_step(params, grads, state, 0.1)
    as_lists = {"t": state["t"], **{k: v.tolist() for k, v in state.items() if k != "t"}}
    again = training.adam_step(once, grads, dict(state), 0.1)
    from_lists = training.adam_step(once, grads, as_lists, 0.1)
    assert all(np.allclose(from_lists[k], again[k], rtol=0, atol=1e-15) for k in again)
    zero_d = training.adam_step(params, grads, {}, 0.1, beta1=np.array(0.9))
    assert all(np.array_equal(zero_d[k], once[k]) for k in once)
    with pytest.raises(ValueError, match=r"learning_rate must be a positive finite number; got 100000000000\.\.\."):
        training.adam_step(params, grads, {}, 10**400)
    bad = {"t": 1, **{k: np.array(v) for k, v in state.items() if k != "t"}}
    bad["v_W_Q"] = -np.abs(bad["v_W_Q"]) - 1.0
    with pytest.raises(ValueError, match=r"state\['v_W_Q'\] holds a negative number"):
        training.adam_step(params, grads, bad, 0.1)


def test_softmax_and_cross_entropy_of_long_doubles_keep_differences_float64_would_lose():
    # The same kind as integers beyond 2**53 (found by a fresh reviewer): a long double holds 2**53 and 2**53 + 1
    # apart, float64 makes them equal. Right values by hand: softmax([0, 1]) = [1/(1+e), e/(1+e)].
    x = np.array([2**53, 2**53 + 1], dtype=np.longdouble)
    if x[1] - x[0] != 1:
        pytest.skip("this platform's long double is float64 itself (e.g. on Windows or arm64 macOS)")
    want = np.array([1 / (1 + math.e), math.e / (1 + math.e)])
    assert np.allclose(softmax(x), want, rtol=0, atol=1e-15)
    logits = x.reshape(1, 1, 2)
    assert math.isclose(training.cross_entropy(logits, np.array([[1]]))[0], -math.log(want[1]), rel_tol=1e-12)
    assert (softmax(np.full((1, 3), -np.inf, dtype=np.longdouble)) == 0).all()
