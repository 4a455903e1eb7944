"""The three explorers, driven as a learner drives them: by setting each control's value.

Expected values come from the mathematics, computed here with plain loops
or from the sources' published numbers, never from the explorer itself.
"""

import math
import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import helpers.explorers as W
from helpers.attention import causal_mask
from helpers.examples import load_example, matches
from helpers.saturation import random_queries_keys


def loop_softmax(row):
    m = max(row)
    e = [math.exp(x - m) for x in row]
    return [x / sum(e) for x in e]


def shows_a_picture(explorer):
    """The explorer drew a heatmap (a table) and holds a state, not an error."""
    return explorer.error is None and explorer.state is not None and "<table" in explorer.picture.value


# ---------------------------------------------------------------- d_k explorer

def test_dk_weights_are_the_softmax_of_the_scaled_random_scores():
    state = W.dk_state(16, scaled=True)
    Q, K = random_queries_keys(16, n=6, seed=0)
    for i in range(6):
        scores = [sum(Q[i, t] * K[j, t] for t in range(16)) / 4.0 for j in range(6)]  # sqrt(16) = 4
        assert np.allclose(state.weights[i], loop_softmax(scores))


def test_dk_switching_scaling_off_at_64_raises_the_largest_weight():
    ex = W.dk_explorer()
    ex.controls["d_k"].value = 64
    ex.controls["scaled"].value = True
    scaled = ex.state
    ex.controls["scaled"].value = False
    unscaled = ex.state
    # Unscaled scores are the scaled ones times sqrt(64) = 8: a sharper softmax
    # in every row, so a larger largest weight and a smaller entropy.
    assert unscaled.largest_weight > scaled.largest_weight
    assert (unscaled.weights.max(axis=1) > scaled.weights.max(axis=1)).all()
    assert (unscaled.entropy < scaled.entropy).all()
    assert np.allclose(unscaled.scores, scaled.scores)
    assert f"{unscaled.largest_weight:.3f}" in ex.picture.value


def test_dk_scaled_scores_keep_their_spread_unscaled_ones_grow():
    # Var(q . k) = d_k for N(0, 1) entries; divided by sqrt(d_k) it is 1.
    # With 36 scores the sample std is noisy, so compare ends of the range.
    small, large = W.dk_state(4, scaled=False), W.dk_state(1024, scaled=False)
    assert large.score_std > 8 * small.score_std
    assert 0.4 < W.dk_state(1024, scaled=True).score_std < 2.0


def test_dk_at_one_scaling_changes_nothing():
    # sqrt(1) = 1: dividing by it is no change.
    assert np.array_equal(W.dk_state(1, True).weights, W.dk_state(1, False).weights)


def test_dk_every_setting_draws_and_rows_sum_to_one():
    ex = W.dk_explorer()
    for scaled in (False, True):
        ex.controls["scaled"].value = scaled
        for d_k in W.DK_CHOICES[::-1]:
            ex.controls["d_k"].value = d_k
            assert shows_a_picture(ex), (d_k, scaled, ex.error)
            assert ex.state.d_k == d_k and ex.state.scaled == scaled  # not a stale state
            assert np.allclose(ex.state.weights.sum(axis=1), 1.0)


def test_dk_saturation_is_reported():
    state = W.dk_state(1024, scaled=False)
    assert state.largest_weight > 0.99
    assert any("saturated" in m for m in state.messages)
    assert state.gradient < 0.05  # a nearly one-hot softmax has a nearly zero Jacobian
    assert not any("saturated" in m for m in W.dk_state(1024, scaled=True).messages)


def test_dk_runs_on_the_attention_it_is_given_and_names_only_the_learners():
    from helpers.pieces import piece

    def loop_attention(Q, K, V, mask=None, scale=None):       # a learner's: the softmax row by row, with loops
        c = 1 / math.sqrt(K.shape[-1]) if scale is None else scale
        weights = np.array([loop_softmax([c * float(q @ k) for k in K]) for q in Q])
        return weights @ V, weights

    for d_k, scaled in ((64, True), (64, False), (3, True)):
        course, mine = W.dk_state(d_k, scaled), W.dk_state(d_k, scaled, attention=loop_attention)
        assert np.allclose(mine.weights, course.weights, rtol=0, atol=1e-12)
        assert mine.messages == course.messages + ("Computed by your attention.",)
    served = W.dk_state(64, True, attention=piece("attention", use="course", quiet=True))   # the course's, wrapped
    assert served.messages == W.dk_state(64, True).messages
    ex = W.dk_explorer(attention=loop_attention)
    ex.controls["scaled"].value = False
    assert ex.state.messages[-1] == "Computed by your attention."


@pytest.mark.parametrize("bad, pattern", [
    (dict(d_k=0), r"d_k must be a positive whole number; got 0"),
    (dict(d_k=2.5), r"d_k must be a positive whole number; got 2.5"),
    (dict(d_k=8, scaled="yes"), r"scaled must be True or False; got 'yes'"),
])
def test_dk_state_bad_input(bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        W.dk_state(**bad)


# ---------------------------------------------------------------- mask explorer

rb = load_example("river_bank")
N = len(rb.tokens)


def test_mask_causal_on_zeroes_everything_above_the_diagonal_and_rows_sum_to_one():
    ex = W.mask_explorer(causal=False)
    assert (ex.state.weights[np.triu_indices(N, 1)] > 0).all()  # no mask: every key gets some weight
    ex.controls["causal"].value = True
    w = ex.state.weights
    assert (w[np.triu_indices(N, 1)] == 0.0).all()
    assert np.allclose(w.sum(axis=1), 1.0)
    assert w[0, 0] == 1.0  # 'the' sees only itself
    assert ex.picture.value.count("title='masked'") == N * (N - 1) // 2


def test_mask_causal_row_of_bank_is_the_published_one():
    state = W.mask_state(causal=True)
    bank = rb.index("bank")
    assert matches(state.weights[bank, : bank + 1], rb.published["causal_weights_bank"]).all()
    assert matches(state.output[bank], rb.published["causal_output_bank"]).all()


def test_mask_hiding_a_key_redistributes_its_weight_in_proportion():
    ex = W.mask_explorer(causal=False)
    before = ex.state.weights.copy()
    river = rb.index("river")
    ex.controls["hidden"].buttons[river].value = True
    after = ex.state.weights
    assert (after[:, river] == 0.0).all()
    assert np.allclose(after.sum(axis=1), 1.0)
    keep = [j for j in range(N) if j != river]
    # Every remaining weight grows by the same factor within a row: 1 / (1 - old weight of river).
    assert np.allclose(after[:, keep], before[:, keep] / (1 - before[:, [river]]))


def test_mask_hiding_every_key_gives_zero_weights_zero_output_and_a_message():
    ex = W.mask_explorer()
    for button in ex.controls["hidden"].buttons:
        button.value = True
    s = ex.state
    assert s.hidden == tuple(range(N))
    assert (s.weights == 0.0).all() and (s.output == 0.0).all()
    assert not np.isnan(s.weights).any()
    assert s.empty_rows == tuple(range(N))
    assert any("Every key is hidden" in m for m in s.messages)
    assert "Every key is hidden" in ex.picture.value and "<table" in ex.picture.value
    ex.controls["where"].value = "after"  # the bug mode must cope as well
    assert shows_a_picture(ex) and (ex.state.weights == 0.0).all()


def test_mask_a_query_left_with_nothing_is_named():
    ex = W.mask_explorer(causal=True)
    ex.controls["hidden"].buttons[0].value = True  # hide 'the': the query 'the' sees nothing else
    s = ex.state
    assert s.empty_rows == (0,)
    assert (s.weights[0] == 0).all() and (s.output[0] == 0).all()
    assert np.allclose(s.weights[1:].sum(axis=1), 1.0)
    assert any("Nothing is left for 'the'" in m for m in s.messages)


def test_mask_after_the_softmax_leaves_rows_short_of_one():
    ex = W.mask_explorer(causal=True)
    ex.controls["where"].value = "after"
    s = ex.state
    full = W.mask_state(causal=False).weights  # the softmax over every key
    # The bug keeps the unmasked entries of the full softmax as they are.
    assert np.array_equal(s.weights, np.where(causal_mask(N), full, 0.0))
    assert (s.row_sums[:-1] < 1 - 1e-3).all() and np.isclose(s.row_sums[-1], 1.0)
    assert any("instead of 1" in m for m in s.messages)


@given(causal=st.booleans(), hidden=st.sets(st.integers(0, N - 1)), where=st.sampled_from(["before", "after"]))
@settings(max_examples=60, deadline=None)
def test_mask_state_masked_keys_get_exactly_zero(causal, hidden, where):
    s = W.mask_state(causal, tuple(hidden), where)
    allowed = (causal_mask(N) if causal else np.ones((N, N), bool)).copy()
    allowed[:, sorted(hidden)] = False
    assert np.array_equal(s.mask, allowed)
    assert (s.weights[~allowed] == 0.0).all()
    has_key = allowed.any(axis=1)
    if where == "before":
        assert np.allclose(s.weights.sum(axis=1)[has_key], 1.0)
    assert (s.weights[~has_key] == 0.0).all() and (s.output[~has_key] == 0.0).all()


def test_the_mask_explorer_runs_on_the_functions_it_is_given():
    # notebook 04 passes piece("attention", masks=True, batches=True) and piece("causal_mask"): yours once right
    import types
    from helpers.checkers.solutions import WORKED
    from helpers.pieces import piece
    mine = types.SimpleNamespace(**WORKED)
    attention = piece("attention", masks=True, batches=True, quiet=True, workbook=mine)
    mask = piece("causal_mask", quiet=True, workbook=mine)
    calls = []

    def counted(Q, K, V, mask=None):
        calls.append(mask is not None)
        return attention(Q, K, V, mask=mask)
    for causal, hidden, where in [(True, (), "before"), (True, (1,), "after"), (False, (0, 1, 2, 3), "before")]:
        yours, course = W.mask_state(causal, hidden, where, attention=counted, causal_mask=mask), W.mask_state(causal, hidden, where)
        np.testing.assert_allclose(yours.weights, course.weights, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(yours.output, course.output, rtol=1e-12, atol=1e-15)
        whose = "Computed by your attention and causal_mask." if causal else "Computed by your attention."
        assert yours.messages == course.messages + (whose,) and np.array_equal(yours.mask, course.mask)
    assert calls == [True, False, True]                  # masked before the softmax; after it, the full softmax
    ex = W.mask_explorer(attention=counted, causal_mask=mask)
    ex.controls["where"].value = "after"
    assert calls[-2:] == [True, False]                   # the live explorer, and every state of its static grid
    states = ex.static_states()
    said = re.compile(r"<p [^>]*>Computed by your attention( and causal_mask)?\.</p>")
    assert len(calls) >= 4 + len(states) and all(said.search(html) for html in states.values())
    assert {k: said.sub("", html) for k, html in states.items()} == W.mask_explorer().static_states()
    # the course's own, as piece(..., use="course") gives them, are not called yours
    course = piece("attention", "course", masks=True, batches=True, quiet=True), piece("causal_mask", "course", quiet=True)
    assert W.mask_state(True, attention=course[0], causal_mask=course[1]).messages == W.mask_state(True).messages
    assert W.mask_state(True, attention=course[0], causal_mask=mask).messages[-1] == "Computed by your causal_mask."
    flipped = W.mask_state(True, attention=counted, causal_mask=lambda n: np.triu(np.ones((n, n), dtype=bool)))
    assert flipped.weights[0, 1] > 0                     # what it was given runs, right or not


@pytest.mark.parametrize("bad, pattern", [
    (dict(hidden=(4,)), r"hidden must hold key positions 0 to 3 of \['the', 'river', 'bank', 'flooded'\]; got 4"),
    (dict(hidden=(-1,)), r"got -1"),
    (dict(hidden=("river", 1)), r"got 'river'"),
    (dict(where="during"), r"where must be 'before' or 'after' \(the softmax\); got 'during'"),
    (dict(example="nowhere"), r"name must be one of the worked examples in data/"),
])
def test_mask_state_bad_input(bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        W.mask_state(**bad)


# ---------------------------------------------------------------- heads explorer

def loop_head_weights(num_heads, h):
    """Weights of head h from the plain definition: slice the projections, scale by 1/sqrt(d_k)."""
    X, W_Q, W_K, _, _ = W.random_model()
    d_k = W.HEADS_D_MODEL // num_heads
    cols = slice(h * d_k, (h + 1) * d_k)
    Q, K = (X @ W_Q)[:, cols], (X @ W_K)[:, cols]
    return np.array([loop_softmax([float(Q[i] @ K[j]) / math.sqrt(d_k) for j in range(len(X))])
                     for i in range(len(X))])


def test_heads_eight_heads_give_eight_weight_matrices():
    ex = W.heads_explorer()
    ex.controls["num_heads"].value = 8
    s = ex.state
    assert s.weights.shape == (8, 4, 4) and s.d_k == 3  # 24 / 8
    for h in range(8):
        assert np.allclose(s.weights[h], loop_head_weights(8, h))
    assert len(re.findall(r"head \d+ ·", ex.picture.value)) == 8


def test_heads_every_choice_rebuilds_the_grid():
    ex = W.heads_explorer()
    for h in W.HEADS_CHOICES[::-1] + W.HEADS_CHOICES:
        ex.controls["num_heads"].value = h
        assert shows_a_picture(ex)
        assert ex.state.weights.shape[0] == h
        assert len(re.findall(r"head \d+ ·", ex.picture.value)) == h
        assert "flex-wrap:wrap" in ex.picture.value  # the heads wrap to the page's width (a projector's is narrow)
        assert np.allclose(ex.state.weights.sum(axis=-1), 1.0)


def test_heads_choices_are_the_divisors_of_d_model_that_fit():
    assert W.HEADS_CHOICES == (1, 2, 3, 4, 6, 8, 12)
    assert all(W.HEADS_D_MODEL % h == 0 for h in W.HEADS_CHOICES)


def test_heads_state_refuses_a_number_that_does_not_divide():
    with pytest.raises(ValueError, match=r"Values that work: \[1, 2, 3, 4, 6, 8, 12, 24\]"):
        W.heads_state(5)


# ---------------------------------------------------------------- all explorers

EXTREMES = [
    (W.dk_explorer, "d_k", W.DK_CHOICES[0]),
    (W.dk_explorer, "d_k", W.DK_CHOICES[-1]),
    (W.dk_explorer, "scaled", False),
    (W.heads_explorer, "num_heads", W.HEADS_CHOICES[0]),
    (W.heads_explorer, "num_heads", W.HEADS_CHOICES[-1]),
    (W.mask_explorer, "causal", False),
    (W.mask_explorer, "where", "after"),
]


@pytest.mark.parametrize("make, name, value", EXTREMES, ids=lambda x: getattr(x, "__name__", str(x)))
def test_extreme_settings_draw_a_picture(make, name, value):
    ex = make()
    ex.controls[name].value = value
    assert shows_a_picture(ex)


@pytest.mark.parametrize("make", [W.dk_explorer, W.mask_explorer, W.heads_explorer])
def test_redraw_in_place_one_picture_sized_from_its_layout(make):
    ex = make()
    children, picture = ex.children, ex.picture
    for name, control in ex.controls.items():
        options = getattr(control, "options", None)
        if name == "hidden":
            for b in control.buttons:
                b.value = not b.value
        elif options:
            for option in options:
                control.value = option[1] if isinstance(option, tuple) else option
        else:
            control.value = not control.value
    assert ex.children == children and ex.picture is picture  # nothing added, nothing piled up
    # The space kept for the picture follows its current layout (a minimum: the picture grows past it, never cut).
    assert ex.picture.layout.height is None and ex.picture.layout.min_height.endswith("px")
    assert ex.picture.value.count("<table") == (ex.state.num_heads if make is W.heads_explorer else 1)


@pytest.mark.parametrize("make, pure, name, value", [
    (W.dk_explorer, "dk_state", "d_k", 8),
    (W.mask_explorer, "mask_state", "causal", False),
    (W.heads_explorer, "heads_state", "num_heads", 4),
])
def test_an_error_inside_an_update_is_shown_in_the_explorer(monkeypatch, make, pure, name, value):
    ex = make()
    good = ex.controls[name].value

    def broken(*args, **kwargs):
        raise ValueError("something went wrong inside the update")

    monkeypatch.setattr(sys.modules[make.__module__], pure, broken)  # the explorer's own module
    ex.controls[name].value = value  # must not raise
    assert ex.state is None
    assert ex.error == "ValueError: something went wrong inside the update"
    assert "something went wrong inside the update" in ex.picture.value
    assert "<table" not in ex.picture.value  # the old picture is not left standing
    monkeypatch.undo()
    ex.controls[name].value = good
    assert shows_a_picture(ex)


@pytest.mark.parametrize("make, kwargs, pattern", [
    (W.dk_explorer, dict(d_k=5), r"d_k must be one of the slider's values"),
    (W.heads_explorer, dict(num_heads=24), r"num_heads must be one of \[1, 2, 3, 4, 6, 8, 12\]"),
])
def test_explorer_bad_start_values(make, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        make(**kwargs)


# ---------------------------------------------------------------- d_k explorer: spread, saturation, nesting

@pytest.mark.parametrize("d_k", [1, 64, 1024])
@pytest.mark.parametrize("scaled", [True, False])
def test_dk_spread_is_reported_with_its_sample_size_and_the_spread_it_estimates(d_k, scaled):
    s = W.dk_state(d_k, scaled)
    # Var(q . k) = d_k for N(0, 1) entries (a sum of d_k independent terms of variance 1),
    # so the spread over all random vectors is sqrt(d_k), and 1 after dividing by sqrt(d_k).
    assert s.expected_std == (1.0 if scaled else math.sqrt(d_k))
    Q, K = random_queries_keys(d_k, n=6, seed=0)
    sample = np.std(Q @ K.T / (math.sqrt(d_k) if scaled else 1.0))
    assert math.isclose(s.score_std, sample)
    first = s.messages[0]
    assert f"standard deviation {sample:.2f}" in first
    assert "The 36 scores" in first and "only 6 queries and 6 keys, a small sample" in first
    assert first.count("over many random vectors the spread is") == 1
    assert first.rstrip(".").split("the spread is ")[1].split(".")[0].endswith(
        "= 1" if scaled else f"= {math.sqrt(d_k):.3g}")


@pytest.mark.parametrize("d_k", W.DK_CHOICES)
@pytest.mark.parametrize("scaled", [True, False])
def test_dk_saturation_message_names_exactly_the_saturated_rows(d_k, scaled):
    s = W.dk_state(d_k, scaled)
    rows = [i for i in range(6) if max(s.weights[i]) > 0.99]
    assert s.saturated_rows == tuple(rows)
    said = [m for m in s.messages if "saturated" in m]
    if not rows:
        assert said == []
        return
    (m,) = said
    names = ", ".join(f"q{i + 1}" for i in rows)
    assert m.startswith(f"{len(rows)} of the 6 rows {'has' if len(rows) == 1 else 'have'} saturated ({names})")
    # The gradient sizes quoted are those rows' Jacobian sizes, each far below an even row's sqrt(5)/6.
    quoted = [float(x) for x in re.search(r"there is(?:, row by row,)? ([\d., ]+) \(", m).group(1).split(", ")]
    assert np.allclose(quoted, s.row_gradient[rows], atol=5e-4)
    assert all(q < 0.05 < math.sqrt(5) / 6 for q in quoted)


def test_dk_growing_d_k_adds_terms_to_the_same_dot_products():
    # The explorer's vectors are nested, so the scores at 512 are those at 256 plus the
    # products of features 257..512: moving the slider extends the same dot products.
    small, large = W.dk_state(256, scaled=False), W.dk_state(512, scaled=False)
    Q, K = random_queries_keys(512, n=6, seed=0)
    assert np.allclose(large.scores - small.scores, Q[:, 256:] @ K[:, 256:].T)


@pytest.mark.parametrize("make, kwargs, pattern", [
    (W.dk_explorer, dict(scaled="no"), r"scaled must be True or False; got 'no'"),
    (W.dk_explorer, dict(scaled=None), r"scaled must be True or False; got None"),
    (W.dk_explorer, dict(d_k=True), r"d_k must be one of the slider's values .*; got True"),
    (W.dk_explorer, dict(d_k=64.0), r"d_k must be one of the slider's values .*; got 64.0"),
    (W.dk_state, dict(scaled=None), r"scaled must be True or False; got None"),
    (W.dk_state, dict(seed=-1), r"seed must be a non-negative whole number; got -1"),
    (W.mask_state, dict(causal="no"), r"causal must be True or False; got 'no'"),
    (W.mask_state, dict(causal=None), r"causal must be True or False; got None"),
    (W.mask_state, dict(causal=1), r"causal must be True or False; got 1"),
    (W.mask_state, dict(hidden=5), r"hidden must be a tuple or list of key positions 0 to 3 of .*; got 5"),
    (W.mask_state, dict(hidden=None), r"hidden must be a tuple or list of key positions 0 to 3 of .*; got None"),
    (W.mask_state, dict(hidden="01"), r"hidden must be a tuple or list of key positions .*; got '01'"),
    (W.mask_state, dict(example=5), r"example: name must be one of the worked examples in data/ .*; got 5"),
    (W.mask_explorer, dict(causal="no"), r"causal must be True or False; got 'no'"),
    (W.mask_explorer, dict(example="nowhere"), r"example: name must be one of the worked examples .*; got 'nowhere'"),
    (W.heads_state, dict(tokens=()), r"tokens must be a non-empty tuple or list of words \(strings\), one per "
                                     r"position; got \(\)"),
    (W.heads_state, dict(tokens=None), r"tokens must be a non-empty tuple or list of words .*; got None"),
    (W.heads_state, dict(tokens="the river"), r"tokens must be a non-empty tuple or list of words .*; got 'the river'"),
    (W.heads_state, dict(tokens=(1, 2)), r"tokens must be a non-empty tuple or list of words .*; got \(1, 2\)"),
    (W.heads_state, dict(seed=-1), r"seed must be a non-negative whole number; got -1"),
    (W.heads_state, dict(seed="x"), r"seed must be a non-negative whole number; got 'x'"),
    (W.heads_state, dict(seed=1.5), r"seed must be a non-negative whole number; got 1.5"),
    (W.heads_state, dict(num_heads="x"), r"num_heads must be a positive whole number; got 'x'"),
    (W.random_model, dict(seed=[1]), r"seed must be a non-negative whole number; got \[1\]"),
    (W.heads_explorer, dict(num_heads=True), r"num_heads must be one of \[1, 2, 3, 4, 6, 8, 12\] .*; got True"),
    (W.heads_explorer, dict(num_heads=8.0), r"num_heads must be one of \[1, 2, 3, 4, 6, 8, 12\] .*; got 8.0"),
], ids=lambda x: getattr(x, "__name__", None))
def test_every_bad_argument_gets_a_value_error_naming_it(make, kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        make(**kwargs)


# ---------------------------------------------------------------- mask explorer: the hidden keys, both ways

def test_mask_hidden_value_and_buttons_stay_in_step_both_ways():
    ex = W.mask_explorer()
    hidden, buttons = ex.controls["hidden"], ex.controls["hidden"].buttons
    redraws = []
    ex.picture.observe(lambda change: redraws.append(change["new"]), names="value")
    hidden.value = (2, 0)  # set in code, in any order
    assert hidden.value == (0, 2)
    assert [b.value for b in buttons] == [True, False, True, False]  # the buttons show it
    assert ex.state.hidden == (0, 2) and "hidden keys: the, bank" in ex.picture.value
    assert len(redraws) == 1  # one change, one redraw: the buttons following it do not redraw again
    buttons[1].value = True  # the next press adds to the setting instead of discarding it
    assert hidden.value == (0, 1, 2) and ex.state.hidden == (0, 1, 2)
    buttons[0].value = False
    assert hidden.value == (1, 2) and ex.state.hidden == (1, 2)
    hidden.value = []
    assert [b.value for b in buttons] == [False] * N and ex.state.hidden == ()
    for bad in [(N,), 5, None, ("river",)]:
        with pytest.raises(ValueError, match="hidden must"):
            hidden.value = bad
        assert hidden.value == () and [b.value for b in buttons] == [False] * N and ex.state.hidden == ()


# ---------------------------------------------------------------- mask explorer: every message true of its setting

def quoted(names):
    q = [f"'{t}'" for t in names]
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " and " + q[-1]


SUBSETS = [tuple(j for j in range(N) if bits >> j & 1) for bits in range(2 ** N)]


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("hidden", SUBSETS, ids=str)
def test_mask_messages_say_only_what_happened(causal, hidden, where):
    s = W.mask_state(causal, hidden, where)
    text = " ".join(s.messages)
    allowed = causal_mask(N) if causal else np.ones((N, N), bool)
    allowed[:, list(hidden)] = False
    empty = [i for i in range(N) if not allowed[i].any()]
    losing = [i for i in range(N) if allowed[i].any() and not allowed[i].all()]  # lose keys, keep at least one
    tok = rb.tokens
    # The whole sentence hidden: one message, true of the mode that ran.
    assert ("Every key is hidden" in text) == (len(hidden) == N)
    assert ("-inf" in text or "NaN" in text) == (len(hidden) == N and where == "before")
    assert ("softmax still ran over every key" in text) == (len(hidden) == N and where == "after")
    # Queries left with nothing: named, with the grammar of their number.
    partly_empty = 0 < len(empty) < N
    assert ("Nothing is left for" in text) == partly_empty
    if partly_empty:
        one = len(empty) == 1
        assert f"Nothing is left for {quoted([tok[i] for i in empty])} to attend to: " \
               + ("its weights are all 0 and its output is" if one else "their weights are all 0 and their outputs are") \
               in text
    # What is masked: hidden keys only when some are hidden, later words only with the causal mask.
    if len(hidden) < N:
        assert ("hidden key" in text) == bool(hidden) and ("later words" in text) == (causal and bool(losing))
        if hidden:
            assert f"hidden key{'s' if len(hidden) > 1 else ''} {quoted([tok[j] for j in hidden])}" in text
    assert ("Nothing is masked" in text) == bool(allowed.all())
    if allowed.all():
        assert np.allclose(s.row_sums, 1.0)
    # The rows that lose keys: shared out before the softmax, short of 1 after it.
    rows = f"row{'s' if len(losing) > 1 else ''} of {quoted([tok[i] for i in losing])}" if losing else None
    assert ("shared out" in text) == (where == "before" and bool(losing))
    assert ("instead of 1" in text) == (where == "after" and bool(losing))
    if losing and where == "before":
        assert f"in the {rows}, the softmax runs over the remaining keys only" in text
        assert np.allclose(s.row_sums[[i for i in range(N) if i not in empty]], 1.0)
    if losing and where == "after":
        said = re.search(r"The (rows? of .*?) sums? to ([\d., ]+) instead of 1", text)
        assert said.group(1) == rows
        assert [float(x) for x in said.group(2).split(", ")] == [round(float(s.row_sums[i]), 3) for i in losing]
        assert all(s.row_sums[i] < 1 for i in losing)
        assert (" sums to " in said.group(0)) == (len(losing) == 1)
    # No message speaks of a key that was not masked or a row that is not there.
    assert "hidden keys' weight" not in text and "the hidden keys still" not in text
