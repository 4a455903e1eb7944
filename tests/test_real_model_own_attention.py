"""The real model run with a learner's own attention: MiniLM.run(text, attention=fn) (issue 21, section 3).

The reference points are the model's own pass (helpers.attention inside) and
the reference embeddings of data/minilm_reference.json (made with PyTorch by
tools/make_minilm_reference.py). A right attention written another way (a loop
over heads and queries, plain numpy) must give the same embedding to float64
rounding; a float32 one to float32 precision; a faulty one must change it.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.attention import scaled_dot_product_attention
from helpers.real_model import load_minilm

REFERENCE = json.loads(
    (Path(__file__).resolve().parent.parent / "data" / "minilm_reference.json").read_text(encoding="utf-8"))
RIVER = REFERENCE["sentences"]["river"]["text"]
INTEREST = REFERENCE["sentences"]["interest"]["text"]


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def own(model):
    return model.run(RIVER)


def loop_attention(Q, K, V, mask=None):
    """Attention as a learner writes it with loops: one head, one query at a time (Vaswani et al. 2017, eq. 1)."""
    Q, K, V = np.asarray(Q), np.asarray(K), np.asarray(V)
    out = np.zeros(Q.shape[:-1] + V.shape[-1:])
    weights = np.zeros(Q.shape[:-1] + K.shape[-2:-1])
    for index in np.ndindex(Q.shape[:-2]):
        for i in range(Q.shape[-2]):
            s = np.array([Q[index][i] @ K[index][j] for j in range(K.shape[-2])]) / np.sqrt(K.shape[-1])
            if mask is not None:
                allowed = np.broadcast_to(mask, Q.shape[:-2] + (Q.shape[-2], K.shape[-2]))[index][i]
                s = np.where(allowed, s, -np.inf)
            e = np.exp(s - s.max())
            weights[index][i] = e / e.sum()
            out[index][i] = weights[index][i] @ V[index]
    return out, weights


def test_the_course_attention_passed_in_gives_the_same_bits(model, own):
    passed = model.run(RIVER, attention=scaled_dot_product_attention)
    assert np.array_equal(passed.embedding, own.embedding)
    assert np.array_equal(passed.attention, own.attention)


def test_a_right_attention_written_with_loops_gives_the_embedding_to_float64_rounding(model, own):
    mine = model.run(RIVER, attention=loop_attention)
    assert np.max(np.abs(mine.embedding - own.embedding)) < 1e-9
    assert np.max(np.abs(mine.attention - own.attention)) < 1e-9
    published = np.asarray(REFERENCE["sentences"]["river"]["embedding"])   # PyTorch's, float32
    assert np.max(np.abs(mine.embedding - published)) < 1e-5


def test_output_alone_is_enough_and_then_no_weights_are_reported(model, own):
    mine = model.run(RIVER, attention=lambda Q, K, V: loop_attention(Q, K, V)[0])
    assert mine.attention is None
    assert np.max(np.abs(mine.embedding - own.embedding)) < 1e-9


def test_a_float32_attention_agrees_to_float32_precision(model, own):
    def float32_attention(Q, K, V):
        out, w = scaled_dot_product_attention(Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32))
        return out.astype(np.float32), w.astype(np.float32)
    mine = model.run(RIVER, attention=float32_attention)
    gap = np.max(np.abs(mine.embedding - own.embedding))
    assert 0 < gap < 1e-5          # float32 rounds at about 6e-8 of each value; six layers add it up


def test_a_faulty_attention_changes_the_model(model, own):
    def unscaled(Q, K, V):
        return scaled_dot_product_attention(Q, K, V, scale=1.0)
    mine = model.run(RIVER, attention=unscaled)
    assert np.max(np.abs(mine.attention[0] - own.attention[0])) > 0.05
    assert float(mine.embedding @ own.embedding) < 0.999


def test_the_padding_mask_reaches_the_function_as_its_fourth_argument(model):
    n = len(model.tokenize(RIVER)[1])
    padded = model.run(RIVER, pad_to=n + 3)
    mine = model.run(RIVER, pad_to=n + 3, attention=loop_attention)
    assert np.max(np.abs(mine.embedding - padded.embedding)) < 1e-9
    assert np.all(mine.attention[..., n:] == 0)              # no weight on a [PAD] key
    with pytest.raises(TypeError) as info:                  # a function that takes no mask cannot hide [PAD]s
        model.run(RIVER, pad_to=n + 3, attention=lambda Q, K, V: loop_attention(Q, K, V))
    assert any("layer 0" in note for note in info.value.__notes__)


def test_embed_of_a_batch_with_the_learners_attention(model):
    texts = [RIVER, INTEREST]
    ours, mine = model.embed(texts), model.embed(texts, attention=loop_attention)
    assert np.max(np.abs(ours - mine)) < 1e-9


def test_heads_off_works_with_an_own_attention(model):
    a = model.run(RIVER, heads_off=[(0, 4)])
    b = model.run(RIVER, heads_off=[(0, 4)], attention=loop_attention)
    assert np.max(np.abs(a.embedding - b.embedding)) < 1e-9


@pytest.mark.parametrize("fn, words", [
    (lambda Q, K, V: "text", "not an array of numbers"),
    (lambda Q, K, V: Q[..., :5], "must have shape"),
    (lambda Q, K, V: (Q, np.zeros(3)), "weights of shape"),
    (lambda Q, K, V: Q * np.nan, "NaN or infinite"),
    (lambda Q, K, V: None, "returned None"),
])
def test_a_function_that_returns_something_else_is_a_clear_value_error(model, fn, words):
    with pytest.raises(ValueError, match="layer 0") as info:
        model.run(RIVER, attention=fn)
    assert words in str(info.value)


def test_attention_must_be_a_function(model):
    with pytest.raises(ValueError, match="attention must be a function"):
        model.run(RIVER, attention="scaled_dot_product_attention")


def test_an_error_inside_the_function_reaches_the_learner_with_the_layer(model):
    def stub(Q, K, V, mask=None):
        raise NotImplementedError("attention: not written yet")
    with pytest.raises(NotImplementedError) as info:
        model.run(RIVER, attention=stub)
    assert "layer 0" in info.value.__notes__[0]
