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
