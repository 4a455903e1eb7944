"""The claims notebook 02 makes about the two senses of "bank".

The numbers themselves are checked in test_published.py; these tests check
what the notebook says about them: one model for both sentences, the same
word vectors, bank leaning on interest and rate, raised's long key not
winning, and the two outputs landing apart.
"""

import numpy as np

from helpers.attention import scaled_dot_product_attention
from helpers.examples import load_example

river = load_example("bank_river")
interest = load_example("bank_interest")


def _bank_row(ex):
    Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V
    out, W = scaled_dot_product_attention(Q, K, V)
    i = ex.index("bank")
    return Q[i], K, out[i], W[i]


def test_both_sentences_use_one_model():
    for name in ("W_Q", "W_K", "W_V"):
        assert np.array_equal(getattr(river, name), getattr(interest, name)), name


def test_shared_words_keep_their_vectors():
    for token in ("The", "bank"):
        assert np.array_equal(river.X[river.index(token)], interest.X[interest.index(token)]), token


def test_bank_asks_the_same_question_in_both_sentences():
    # Bank's query depends on bank's vector alone: [0, 1] W_Q = [1, 3] by hand.
    q_river, *_ = _bank_row(river)
    q_interest, *_ = _bank_row(interest)
    assert np.array_equal(q_river, [1, 3]) and np.array_equal(q_interest, [1, 3])


def test_bank_leans_on_interest_and_rate():
    _, _, _, w = _bank_row(interest)
    top_two = {interest.tokens[j] for j in np.argsort(w)[-2:]}
    assert top_two == {"interest", "rate"}
    # By hand: (1177.4 + 580.5) / 1800.0 = 0.977 (data/bank_interest.json).
    assert w[interest.index("interest")] + w[interest.index("rate")] > 0.95


def test_the_longest_key_is_not_the_winner():
    # By hand: |k_raised| = |[4, 0]| = 4 > |k_interest| = sqrt(10); raised
    # scores 4 against interest's 10, so it gets under 1 % of the weight.
    _, K, _, w = _bank_row(interest)
    lengths = np.linalg.norm(K, axis=1)
    assert interest.tokens[int(lengths.argmax())] == "raised"
    assert w[interest.index("raised")] < 0.01


def test_interest_key_points_along_bank_query():
    # By hand: k_interest = [3, -1] W_K = [3 - 2, 3] = [1, 3] = q_bank.
    q, K, _, _ = _bank_row(interest)
    k = K[interest.index("interest")]
    assert np.isclose(q @ k / (np.linalg.norm(q) * np.linalg.norm(k)), 1.0)


def test_the_two_banks_land_apart():
    # Source 003 gives [1.98, 1.97]; the hand derivation gives [2.779, -1.589]:
    # 3.65 apart, more than the distance between river's value [2, 2] and the
    # river-sentence output (0.04) many times over.
    _, _, out_river, _ = _bank_row(river)
    _, _, out_interest, _ = _bank_row(interest)
    assert np.linalg.norm(out_river - out_interest) > 3.0
    assert np.linalg.norm(out_river - [2, 2]) < 0.05
