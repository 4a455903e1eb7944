"""Every number stored with a worked example, recomputed by the helpers.

Each published entry in data/<example>.json has a recipe here that computes
it from the example's inputs with helpers.attention. A published entry with no
recipe fails the test, and so does an example in data/ with no recipes, so a
number added to data/ is never left unchecked.

Where the source rounded an intermediate value before the next step (the
entry carries a ``rounded_inputs`` note), the test checks two things:
the source's own chain, recomputed from its rounded inputs, reproduces the
published value within its rounding; and our full-precision value is within
two units of the last published decimal. Why two units: in river_bank the
scaled scores were rounded to 3 decimals (error up to 0.0005); exp has a slope
below 3 on the scores involved (all below 1.07), so the exponentials move by
up to 0.0015, plus 0.0005 for printing them at 3 decimals: under 0.002.
"""

import numpy as np
import pytest

from helpers.attention import causal_mask, scaled_dot_product_attention, softmax
from helpers.examples import available_examples, load_example, matches


def _basics(ex):
    """Q, K, V, the raw and scaled scores, the output and the weights of an example."""
    Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V
    scores = Q @ K.T
    out, W = scaled_dot_product_attention(Q, K, V)
    return Q, K, V, scores, scores / np.sqrt(ex.d_k), out, W


def river_bank():
    """Source 000: 'the river bank flooded'. Returns (ours, source_chain)."""
    rb = load_example("river_bank")
    i_bank, i_the = rb.index("bank"), rb.index("the")
    Q, K, V, scores, scaled, out, W = _basics(rb)
    out_causal, W_causal = scaled_dot_product_attention(Q, K, V, mask=causal_mask(len(rb.tokens)))
    exp_bank = np.exp(scaled[i_bank])
    ours = {
        "keys": K,
        "query_bank": Q[i_bank],
        "score_terms_the": Q[i_bank] * K[i_the],
        "scores_bank": scores[i_bank],
        "sqrt_d_k": np.sqrt(rb.d_k),
        "scaled_scores_bank": scaled[i_bank],
        "exp_scaled_scores_bank": exp_bank,
        "sum_exp_bank": exp_bank.sum(),
        "weights_bank": W[i_bank],
        "weights_bank_sum": W[i_bank].sum(),
        "output_terms_bank": (W[i_bank][:, None] * V).T,
        "output_bank": out[i_bank],
        "weights_the": W[i_the],
        "unscaled_x8_scores_bank": 8 * scores[i_bank],
        "unscaled_x8_weights_bank": softmax(8 * scores[i_bank]),
        "causal_scaled_scores_bank": scaled[i_bank, : i_bank + 1],
        "causal_exp_bank": exp_bank[: i_bank + 1],
        "causal_sum_exp_bank": exp_bank[: i_bank + 1].sum(),
        "causal_weights_bank": W_causal[i_bank, : i_bank + 1],
        "causal_output_bank": out_causal[i_bank],
        "dot_products_4_tokens": Q.shape[0] * K.shape[0],
        "dot_products_4096_tokens": 4096 * 4096,
    }
    # The source's own chain, step by step from the values it printed. It
    # exponentiates its scaled scores as printed (3 decimals). For the full row
    # it then adds those exponentials *before* rounding them (8.8747 -> 8.875;
    # its four printed exponentials add to 8.874); for the causal row it adds
    # the printed ones (1.172 + 2.889 + 2.214 = 6.275). Its weights are those
    # exponentials over that sum, and its output terms use the printed weights.
    p = rb.published
    src_exp = np.exp(p["scaled_scores_bank"].value)
    source_chain = {
        "exp_scaled_scores_bank": src_exp,
        "sum_exp_bank": src_exp.sum(),
        "weights_bank": src_exp / src_exp.sum(),
        "output_terms_bank": (p["weights_bank"].value[:, None] * V).T,
        "causal_exp_bank": np.exp(p["causal_scaled_scores_bank"].value),
        "causal_sum_exp_bank": p["causal_exp_bank"].value.sum(),
    }
    return ours, source_chain


def bank_river():
    """Source 003: 'The bank by the river was steep', three tokens. Full precision matches every number."""
    ex = load_example("bank_river")
    i = ex.index("bank")
    Q, K, V, scores, scaled, out, W = _basics(ex)
    ours = {
        "query_bank": Q[i],
        "keys": K,
        "score_terms_bank": Q[i] * K,
        "scores_bank": scores[i],
        "d_k": ex.d_k,
        "sqrt_d_k": np.sqrt(ex.d_k),
        "scaled_scores_bank": scaled[i],
        "weights_bank": W[i],
        "values": V,
        "output_bank": out[i],
        "unscaled_weight_river": scaled_dot_product_attention(Q, K, V, scale=1.0)[1][i, ex.index("river")],
    }
    return ours, {}


def bank_interest():
    """The course's own 'The bank raised its interest rate', through source 003's matrices."""
    ex = load_example("bank_interest")
    i = ex.index("bank")
    Q, K, V, scores, scaled, out, W = _basics(ex)
    key_lengths = np.linalg.norm(K, axis=1)
    ours = {
        "query_bank": Q[i],
        "keys": K,
        "scores_bank": scores[i],
        "key_lengths": key_lengths,
        "cosines_bank": scores[i] / (np.linalg.norm(Q[i]) * key_lengths),
        "scaled_scores_bank": scaled[i],
        "weights_bank": W[i],
        "weight_on_interest_and_rate": W[i, ex.index("interest")] + W[i, ex.index("rate")],
        "values": V,
        "output_bank": out[i],
    }
    return ours, {}


RECIPES = {f.__name__: f() for f in (river_bank, bank_river, bank_interest)}
CASES = [(name, key) for name in RECIPES for key in sorted(load_example(name).published)]


def test_every_example_in_data_has_recipes():
    assert available_examples() == sorted(RECIPES)


@pytest.mark.parametrize("example", sorted(RECIPES))
def test_every_published_number_has_a_recipe(example):
    ours, _ = RECIPES[example]
    assert sorted(ours) == sorted(load_example(example).published)


@pytest.mark.parametrize("example, name", CASES)
def test_published_number_is_reproduced(example, name):
    ours, source_chain = RECIPES[example]
    pub = load_example(example).published[name]
    mine = ours[name]
    if pub.rounded_inputs is None:
        assert matches(mine, pub).all(), f"{example}.{name}: ours {mine} vs published {pub.value}"
    else:
        assert matches(source_chain[name], pub).all(), f"{name}: the source's chain does not give {pub.value}"
        two_units = 2 * 10.0 ** -np.asarray(pub.decimals, dtype=float)
        assert (np.abs(np.asarray(mine) - pub.value) <= two_units).all()


@pytest.mark.parametrize("example", sorted(RECIPES))
def test_rounded_inputs_notes_are_needed(example):
    # A rounded_inputs note must mark a real difference; if full precision
    # already matches, the note is wrong and should go.
    ours, _ = RECIPES[example]
    for name, pub in load_example(example).published.items():
        if pub.rounded_inputs is not None:
            assert not matches(ours[name], pub).all(), f"{name} matches at full precision; drop its note"


def test_river_bank_weights_rows_sum_to_one_and_river_wins_every_row():
    rb = load_example("river_bank")
    *_, W = _basics(rb)
    assert np.allclose(W.sum(axis=1), 1.0)
    assert (W.argmax(axis=1) == rb.index("river")).all()
