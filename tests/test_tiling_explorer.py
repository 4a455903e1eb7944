"""The tiling explorer of notebook 08, driven by setting its controls' values.

Expected values are computed here with plain loops over the river-bank scores,
never by the explorer's own code.
"""

import math
import re

import numpy as np
import pytest

import helpers.explorers as W
from helpers.examples import load_example

EX = load_example("river_bank")
N = len(EX.tokens)


def loop_scores(causal):
    """Scaled scores q_i . k_j / sqrt(d_k) with loops; None where the causal mask hides the key."""
    Q, K = EX.X @ EX.W_Q, EX.X @ EX.W_K
    d_k = K.shape[1]
    return [[None if causal and j > i else sum(Q[i, t] * K[j, t] for t in range(d_k)) / math.sqrt(d_k)
             for j in range(N)] for i in range(N)]


def settings():
    for causal in (False, True):
        for b in range(1, N + 1):
            for step in range(1, -(-N // b) + 1):
                yield b, step, causal


@pytest.mark.parametrize("b, step, causal", list(settings()))
def test_running_max_and_sum_are_those_of_the_keys_read_so_far(b, step, causal):
    state = W.tiling_state(b, step, causal)
    S = loop_scores(causal)
    read_to = min(step * b, N)
    for i in range(N):
        seen = [s for s in S[i][:read_to] if s is not None]
        m = max(seen) if seen else -math.inf
        l = sum(math.exp(s - m) for s in seen)
        assert state.max_after[i] == pytest.approx(m) if seen else np.isneginf(state.max_after[i])
        assert state.sum_after[i] == pytest.approx(l, abs=1e-14)
        weights = [math.exp(s - m) / l if s is not None and j < read_to else 0.0 for j, s in enumerate(S[i])]
        assert np.allclose(state.weights[i], weights, atol=1e-14)
        assert state.read[i].tolist() == [s is not None and j < read_to for j, s in enumerate(S[i])]
    assert state.block == ((step - 1) * b, read_to)
    assert state.final == (read_to == N)


@pytest.mark.parametrize("causal", [False, True])
def test_the_last_step_gives_the_plain_weights_and_outputs(causal):
    for b in range(1, N + 1):
        state = W.tiling_state(b, -(-N // b), causal)
        assert state.final
        assert np.max(np.abs(state.weights - state.plain_weights)) < 1e-12
        assert np.max(np.abs(state.output - state.plain_output)) < 1e-12
        assert "Every key has been read" in " ".join(state.messages)


def test_bank_block_size_1_step_2_by_hand():
    # Row 'bank': scaled scores 0.159 (the) then 1.061 (river), source 000. After 'the', m = 0.159 and
    # l = 1; reading 'river' moves m to 1.061 and multiplies the old sum by exp(0.159 - 1.061) = 0.406.
    state = W.tiling_state(1, 2)
    bank = EX.index("bank")
    factor = math.exp(loop_scores(False)[bank][0] - loop_scores(False)[bank][1])
    assert round(factor, 3) == 0.406
    assert state.sum_after[bank] == pytest.approx(factor * 1 + 1)
    text = " ".join(state.messages)
    assert "moves from 0.159 to 1.061" in text and "= 0.406" in text and "l = 1.406" in text
    assert "2 blocks to go" in text


def test_a_block_the_causal_mask_hides_is_said_to_change_nothing():
    # Causal, block size 1, step 4: the key 'flooded' comes after 'bank', so bank's m and l stay.
    state = W.tiling_state(1, 4, causal=True)
    bank = EX.index("bank")
    assert state.max_before[bank] == state.max_after[bank] and state.sum_before[bank] == state.sum_after[bank]
    assert "the causal mask hides them all" in " ".join(state.messages)


def test_a_row_the_causal_mask_has_finished_is_called_final():
    # Causal, blocks of 1, step 3: 'bank' (position 2) has read the, river and itself; 'flooded' is hidden from it.
    text = " ".join(W.tiling_state(1, 3, causal=True).messages)
    assert "The weights of 'bank' are final already" in text and "1 block to go" in text
    assert "final already" not in " ".join(W.tiling_state(1, 3, causal=False).messages)


def test_step_slider_follows_the_block_size_and_every_setting_draws():
    ex = W.tiling_explorer()
    for causal in (False, True):
        ex.controls["causal"].value = causal
        for b in range(N, 0, -1):
            ex.controls["block_size"].value = b
            assert ex.controls["step"].max == -(-N // b)
            for step in range(1, ex.controls["step"].max + 1):
                ex.controls["step"].value = step
                assert ex.error is None and "<table" in ex.picture.value
                assert (ex.state.block_size, ex.state.step, ex.state.causal) == (b, step, causal)  # not stale
                unread = int((~ex.state.read).sum())
                assert ex.picture.value.count("title='masked'") == unread
                assert "not read yet" in ex.picture.value


def test_a_smaller_range_clamps_the_step_and_redraws_once():
    ex = W.tiling_explorer(block_size=1)
    ex.controls["step"].value = 4
    drawn = []
    ex.picture.observe(lambda change: drawn.append(change["new"]), names="value")
    ex.controls["block_size"].value = 2          # 2 steps now: step 4 becomes 2
    assert ex.controls["step"].value == 2 and ex.state.step == 2 and len(drawn) == 1


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(block_size=0), r"block_size must be a whole number from 1 to 4 .* got 0"),
    (dict(block_size=5), r"block_size must be a whole number from 1 to 4 .* got 5"),
    (dict(block_size=2.0), r"block_size must be a whole number .* got 2.0"),
    (dict(block_size=2, step=3), r"step must be a whole number from 1 to 2 \(4 keys in blocks of 2\); got 3"),
    (dict(step=0), "step must be a whole number from 1 to 2"),
    (dict(step=True), "step must be a whole number"),
    (dict(causal="yes"), "causal must be True or False; got 'yes'"),
    (dict(example="nope"), "example: name must be one of the worked examples"),
])
def test_bad_input_names_the_argument(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        W.tiling_state(**kwargs)


def test_bad_start_values_of_the_explorer():
    with pytest.raises(ValueError, match="block_size must be a whole number from 1 to 4"):
        W.tiling_explorer(block_size=9)


def _shown(x):
    """A running value as a reader sees it: 3 decimals, or −∞ (None: a key the causal mask hides)."""
    return "−∞" if x is None or x == -math.inf else f"{x:.3f}"


@pytest.mark.parametrize("b, step, causal", list(settings()))
def test_the_picture_shows_every_running_value_row_by_row(b, step, causal):
    # The running values sit in a table of their own under the weights (a projector's page is too narrow for
    # one wide table): for each query, the scores of the block just read, then m and l before and after it,
    # computed here with loops over the keys read so far.
    ex = W.tiling_explorer(block_size=b, causal=causal)
    ex.controls["step"].value = step
    running = ex.picture.value.split("class='course-values'", 1)[1]
    rows = re.findall(r"<tr><th scope='row'[^>]*>([^<]*)</th>(.*?)</tr>", running)
    S = loop_scores(causal)
    start, stop = (step - 1) * b, min(step * b, N)

    def m_l(i, upto):
        seen = [s for s in S[i][:upto] if s is not None]
        m = max(seen) if seen else None
        return m, (sum(math.exp(s - m) for s in seen) if seen else 0.0)

    assert [label for label, _ in rows] == list(EX.tokens)
    for i, (_, cells) in enumerate(rows):
        (m0, l0), (m1, l1) = m_l(i, start), m_l(i, stop)
        want = [_shown(s) for s in S[i][start:stop]] + [_shown(m0), _shown(m1), _shown(l0), _shown(l1)]
        assert re.findall(r">([^<>]*)</td>", cells) == want, (EX.tokens[i], b, step, causal)


def test_the_tiling_explorer_runs_on_the_step_it_is_given_and_says_so():
    # notebook 08 passes piece("online_softmax_update"): yours once it is right
    import types
    from helpers.checkers.solutions import WORKED
    from helpers.pieces import piece
    step = piece("online_softmax_update", quiet=True, workbook=types.SimpleNamespace(**WORKED))
    calls = []

    def counted(*args):
        calls.append(1)
        return step(*args)
    for b, k, causal in list(settings())[::3]:
        yours, course = W.tiling_state(b, k, causal, online_softmax_update=counted), W.tiling_state(b, k, causal)
        for name in ("max_after", "sum_after", "weights", "output"):
            np.testing.assert_allclose(getattr(yours, name), getattr(course, name), rtol=1e-12, atol=1e-15)
        assert yours.messages == course.messages + ("Computed by your online_softmax_update.",)
    assert "Computed by your" not in " ".join(W.tiling_state().messages)
    ex = W.tiling_explorer(online_softmax_update=counted)
    before = len(calls)
    ex.controls["block_size"].value = 1
    assert len(calls) > before and ex.state.messages[-1] == "Computed by your online_softmax_update."
    states, theirs = ex.static_states(), W.tiling_explorer().static_states()   # every state of its static grid
    assert set(states) == set(theirs) and all("Computed by your online_softmax_update." in v for v in states.values())
    wrong = W.tiling_state(1, 2, online_softmax_update=lambda m, l, acc, s, V: (m, l, acc))   # right or not, it runs
    assert np.isneginf(wrong.max_after).all()
