"""run_with_your_attention: the learner's attention inside the real model, judged (issue 21, section 3).

Each case is a function whose verdict is known by construction: the worked
solution (right, float64), the same in float32 (right, to float32 precision),
today's named faults of the attention checker (no_scaling changes the model;
mask_after_softmax cannot show on sentences with no mask), a stub, and odd
functions that must not make the verdict raise.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.exercises.finale import BOUNDS, SENTENCES, run_with_your_attention
from helpers.exercises.solutions import attention as worked_attention
from helpers.real_model import load_minilm


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_the_worked_solution_agrees_to_float64_rounding(model):
    v = run_with_your_attention(worked_attention, model)
    assert v.correct and v.mistake is None
    assert v.bound is not None and v.bound <= 1e-9
    assert abs(v.cosine - v.cosine_course) < 1e-9
    assert "agree" in v.text and "float64 rounding" in v.text


def test_a_float32_attention_is_right_to_the_precision_it_computes_in(model):
    def float32_attention(Q, K, V, mask=None):
        out, w = worked_attention(np.float32(Q), np.float32(K), np.float32(V), mask)
        return out.astype(np.float32), w.astype(np.float32)
    v = run_with_your_attention(float32_attention, model)
    assert v.correct
    assert 1e-9 < v.bound <= BOUNDS[-1]
    assert "the precision your function computes in" in v.text


def test_a_missing_scaling_is_named_and_moves_the_real_model(model):
    def unscaled(Q, K, V, mask=None):
        s = Q @ np.swapaxes(K, -1, -2)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = softmax_rows(s)
        return w @ V, w
    v = run_with_your_attention(unscaled, model)
    assert not v.correct and v.mistake == "no_scaling"
    assert abs(v.cosine - v.cosine_course) > 1e-3
    assert "layer 0, head 4" in v.text and "yours:" in v.text


def test_masking_after_the_softmax_cannot_show_without_padding_but_is_still_named(model):
    def masked_after(Q, K, V, mask=None):
        w = softmax_rows(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]))
        if mask is not None:
            w = w * mask
        return w @ V, w
    v = run_with_your_attention(masked_after, model)
    assert v.bound is not None and v.bound <= 1e-9     # no [PAD] in either sentence: the model agrees
    assert not v.correct and v.mistake == "mask_after_softmax"
    assert "the model cannot tell" in v.text


def test_a_stub_is_not_attempted_and_the_model_is_not_run(model):
    def stub(Q, K, V, mask=None):
        raise NotImplementedError("attention: not written yet")
    v = run_with_your_attention(stub, model)
    assert v.mistake == "not_attempted" and v.bound is None and v.cosine is None


@pytest.mark.parametrize("fn", [
    lambda Q, K, V, mask=None: None,
    lambda Q, K, V, mask=None: "text",
    lambda Q, K, V, mask=None: 1 / 0,
    lambda Q, K, V, mask=None: Q[..., :3],
    42,
])
def test_odd_functions_get_words_never_an_exception(model, fn):
    v = run_with_your_attention(fn, model)
    assert not v.correct and isinstance(v.mistake, str) and v.text


def test_the_sentences_are_those_the_reference_embeddings_were_made_on():
    reference = json.loads((Path(__file__).resolve().parent.parent / "data" / "minilm_reference.json").read_text())
    assert SENTENCES == (reference["sentences"]["river"]["text"], reference["sentences"]["interest"]["text"])
