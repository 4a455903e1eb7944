"""diagnose(fn, piece="layer_norm") and helpers.depth.layer_norm (issue 33, section 1: notebook 07's build piece).

The course's function against a hand computation (Ba, Kiros & Hinton 2016, eq. 3-4); its errors; each fault of
the checker written here as a learner would write it (independently of the checker's model) and named by its
key; the fitted families naming the learner's own value; right functions written other ways passing.
"""

import numpy as np
import pytest

from helpers.checkers.checker_layer_norm import FAMILIES, FAULTS
from helpers.checkers.solutions import WORKED
from helpers.depth import layer_norm, stack_residuals
from helpers.exercises import diagnose


def test_the_courses_layer_norm_is_the_hand_computation():
    # x = [1, 2, 3, 4]: mean 2.5, biased variance (2.25 + 0.25 + 0.25 + 2.25) / 4 = 1.25, so
    # entry 0 is -1.5 / sqrt(1.25) = -1.3416...; then times gamma, plus beta (worked by hand).
    out = layer_norm([[1.0, 2.0, 3.0, 4.0]], gamma=[2.0, 1.0, 1.0, 1.0], beta=[0.0, 0.0, 0.0, 10.0], eps=0.0 + 1e-12)
    np.testing.assert_allclose(out, [[-3.0 / np.sqrt(1.25), -0.5 / np.sqrt(1.25), 0.5 / np.sqrt(1.25),
                                      1.5 / np.sqrt(1.25) + 10.0]], rtol=1e-10)
    np.testing.assert_array_equal(layer_norm(np.full((1, 3), 2.0), beta=[1.0, 2.0, 3.0]), [[1.0, 2.0, 3.0]])
    x = np.random.default_rng(0).normal(3.0, 2.0, (2, 5, 8))
    y = layer_norm(x)                              # gamma and beta left out: mean 0, variance 1 per token
    np.testing.assert_allclose(y.mean(axis=-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=-1), 1.0, rtol=1e-9)
    # eps inside the root: variance 1.25 and eps 0.75 give sqrt(2): entry 0 is -1.5 / sqrt(2)
    assert layer_norm([1.0, 2.0, 3.0, 4.0], eps=0.75)[0] == pytest.approx(-1.5 / np.sqrt(2.0))


@pytest.mark.parametrize("kwargs, match", [
    ({"x": [[1.0, np.nan]]}, "x contains NaN"), ({"x": np.zeros((2, 0))}, "d_model >= 1"), ({"x": "text"}, "x must"),
    ({"x": np.ones((2, 3)), "gamma": np.ones(4)}, r"gamma must have shape \(d_model,\) = \(3,\)"),
    ({"x": np.ones((2, 3)), "beta": [[0.0, 0.0, 0.0]]}, "beta must have shape"),
    ({"x": np.ones((2, 3)), "gamma": [1.0, np.inf, 1.0]}, "gamma"),
    ({"x": np.ones((2, 3)), "eps": 0.0}, "eps must be a positive finite number; got 0.0"),
    ({"x": np.ones((2, 3)), "eps": True}, "eps must"), ({"x": np.ones((2, 3)), "eps": "1e-5"}, "eps must"),
])
def test_bad_input_is_a_value_error_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layer_norm(**kwargs)


def test_stack_residuals_runs_the_layer_norm_it_is_given():
    X = np.random.default_rng(1).standard_normal((6, 8))
    calls = []

    def counted(x):
        calls.append(x.shape)
        return layer_norm(x)
    ours = stack_residuals(X, 2, "post-LN", num_heads=2, seed=3, layer_norm=counted)
    assert calls == [(6, 8)] * 4                   # two LayerNorms a layer, two layers
    np.testing.assert_array_equal(ours.residual, stack_residuals(X, 2, "post-LN", num_heads=2, seed=3).residual)
    other = stack_residuals(X, 2, "post-LN", num_heads=2, seed=3, layer_norm=lambda x: 2 * layer_norm(x))
    assert not np.allclose(other.residual[1:], ours.residual[1:])
    with pytest.raises(ValueError, match="layer_norm must be a function"):
        stack_residuals(X, 2, "post-LN", layer_norm=1.0)


def _mu_var(x, axis=-1, ddof=0):
    x = np.asarray(x, dtype=float)
    return x.mean(axis=axis, keepdims=True), x.var(axis=axis, keepdims=True, ddof=ddof)


def _unbiased(x, gamma, beta, eps=1e-12):
    n = x.shape[-1]
    mu = x.sum(-1, keepdims=True) / n
    return (x - mu) / np.sqrt(((x - mu) ** 2).sum(-1, keepdims=True) / (n - 1) + eps) * gamma + beta


def _std_plus_eps(x, gamma, beta, eps=1e-12):
    mu, var = _mu_var(x)
    return gamma * (x - mu) / (var ** 0.5 + eps) + beta


LEARNERS = {
    "unbiased_variance": _unbiased,
    "no_sqrt": lambda x, gamma, beta, eps=1e-12: (x - _mu_var(x)[0]) / (_mu_var(x)[1] + eps) * gamma + beta,
    "eps_outside_sqrt": _std_plus_eps,
    "std_no_eps": lambda x, gamma, beta, eps=1e-12: (x - _mu_var(x)[0]) / np.std(x, -1, keepdims=True) * gamma + beta,
    "no_centering": lambda x, gamma, beta, eps=1e-12: x / np.sqrt(_mu_var(x)[1] + eps) * gamma + beta,
    "rms_norm": lambda x, gamma, beta, eps=1e-12: gamma * x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) + beta,
    "gamma_beta_swapped": lambda x, gamma, beta, eps=1e-12: WORKED["layer_norm"](x, beta, gamma, eps),
    "no_gamma_beta": lambda x, gamma, beta, eps=1e-12: WORKED["layer_norm"](x, 1.0, 0.0, eps),
    "whole_array": lambda x, gamma, beta, eps=1e-12: (x - x.mean()) / np.sqrt(x.var() + eps) * gamma + beta,
    "no_keepdims": lambda x, gamma, beta, eps=1e-12: (x - x.mean(-1)) / np.sqrt(x.var(-1) + eps) * gamma + beta,
}


@pytest.mark.parametrize("key", sorted(LEARNERS))
def test_each_fixed_mistake_is_named(key):
    verdict = diagnose(LEARNERS[key], piece="layer_norm")
    assert verdict.mistake == key, verdict.text
    assert "yours" in verdict.text and "expected" in verdict.text or "refuse" in verdict.text or "NaN" in verdict.text


def test_every_fault_has_a_learner_function():
    assert set(LEARNERS) == set(FAULTS)


def test_the_variance_divided_by_d_model_minus_one_is_told_so_and_shown_against_the_hand_value():
    verdict = diagnose(_unbiased, piece="layer_norm")
    assert "d_model - 1" in verdict.text and "one token" in verdict.text
    assert "-1.342" in verdict.text            # the expected first entry of x = [1, 2, 3, 4] (hand: -1.5 / sqrt(1.25))
    assert "-1.162" in verdict.text            # yours: -1.5 / sqrt(5 / 3), the variance divided by 3


@pytest.mark.parametrize("axis", [0, -2, 1])
def test_another_axis_is_named(axis):
    def other_axis(x, gamma, beta, eps=1e-12):
        mu, var = _mu_var(x, axis)
        return (x - mu) / np.sqrt(var + eps) * gamma + beta
    verdict = diagnose(other_axis, piece="layer_norm")
    assert verdict.mistake == "wrong_axis", verdict.text
    assert f"axis {axis}" in verdict.text


@pytest.mark.parametrize("eps, said", [(1e-5, "eps = 1e-05"), (1e-6, "eps = 1e-06"), (0.001, "eps = 0.001")])
def test_one_eps_whatever_is_passed_is_named_with_its_value(eps, said):
    def fixed(x, gamma, beta, eps_passed=1e-12):       # takes an eps, and writes its own in the formula
        mu, var = _mu_var(x)
        return (x - mu) / np.sqrt(var + eps) * gamma + beta
    verdict = diagnose(lambda x, gamma, beta, eps=1e-12: fixed(x, gamma, beta), piece="layer_norm")
    assert verdict.mistake == "eps_fixed", verdict.text
    assert said in verdict.text


def test_another_default_eps_is_named_and_torchs_is_said_to_be_torchs():
    def torch_default(x, gamma, beta, eps=1e-5):
        return WORKED["layer_norm"](x, gamma, beta, eps)
    verdict = diagnose(torch_default, piece="layer_norm")
    assert verdict.mistake == "wrong_default_eps" and "1e-05 (torch.nn.LayerNorm's)" in verdict.text, verdict.text


def test_a_fitted_fault_combines_with_a_fixed_one_of_another_part():
    def axis0_no_gain(x, gamma, beta, eps=1e-12):
        mu, var = _mu_var(x, 0)
        return (x - mu) / np.sqrt(var + eps)
    verdict = diagnose(axis0_no_gain, piece="layer_norm")
    assert set(verdict.mistake.split("+")) == {"wrong_axis", "no_gamma_beta"}, verdict.text
    assert {f.key for f in FAMILIES} == {"wrong_axis", "eps_fixed", "wrong_default_eps"}


def test_no_eps_parameter_is_told_to_take_one():
    verdict = diagnose(lambda x, gamma, beta: WORKED["layer_norm"](x, gamma, beta), piece="layer_norm")
    assert verdict.mistake == "no_eps_argument" and "takes no eps" in verdict.text, verdict.text
    # the advice names the workbook's default (the fresh review: "eps=None" led to wrong_default_eps)
    assert "eps=1e-12" in verdict.text and "eps=None" not in verdict.text, verdict.text


@pytest.mark.parametrize("fn", [
    lambda x, gamma, beta, eps=1e-12: layer_norm(x, gamma, beta, eps),
    lambda x, g, b, epsilon=1e-12: (x - x.mean(-1)[..., None]) / np.sqrt(x.var(-1)[..., None] + epsilon) * g + b,
    lambda x, gamma, beta, eps=1e-12: np.float32(gamma) * (np.float32(x) - np.float32(x).mean(-1, keepdims=True))
    / np.sqrt(np.float32(x).var(-1, keepdims=True) + np.float32(eps)) + np.float32(beta),
], ids=["course", "indexing_none", "float32"])
def test_right_functions_written_other_ways_pass(fn):
    verdict = diagnose(fn, piece="layer_norm")
    assert verdict.correct, verdict.text

