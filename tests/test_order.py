"""Tests of the helpers behind notebook 07: helpers.hull and helpers.depth.

References are hand derivations written beside each test, or brute-force
versions in this file that share no code with the helpers.
"""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.attention import causal_mask, scaled_dot_product_attention, softmax
from helpers.depth import LAYOUTS, collapse_residual, layer_norm, stack_residuals
from helpers.hull import convex_hull_2d, convex_weights, edge_beyond, hull_position

RIVER_BANK = np.array([[0.1, 0.1], [1.0, 0.0], [0.5, 0.5], [0.8, 0.2]])   # the, river, bank, flooded (source 000)
coords = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False).map(lambda x: round(x, 3))
point_sets = hnp.arrays(np.float64, st.tuples(st.integers(1, 9), st.just(2)), elements=coords)


# ---------------------------------------------------------------- the hull

def test_the_hull_of_the_river_bank_values_is_a_triangle():
    # By hand: flooded (0.8, 0.2) lies on the segment river (1, 0) - bank (0.5, 0.5), where x + y = 1,
    # so the hull is the triangle the - river - bank, counter-clockwise from the lowest x.
    assert convex_hull_2d(RIVER_BANK).tolist() == [[0.1, 0.1], [1.0, 0.0], [0.5, 0.5]]


@pytest.mark.parametrize("point, where", [
    ((0.5, 0.3), "inside"),     # 0.25 the + 0.2 river + 0.55 bank (checked below)
    ((0.8, 0.2), "edge"),       # flooded itself, on the edge river-bank
    ((0.1, 0.1), "edge"),       # a corner
    ((0.9, 0.4), "outside"),    # x + y = 1.3 > 1: beyond the edge river-bank, though inside the bounding box
    ((0.0, 0.0), "outside"),    # the output of a fully masked row
])
def test_hull_position_by_hand(point, where):
    assert hull_position(point, RIVER_BANK) == where


def test_edge_beyond_names_the_edge_the_point_is_past():
    a, b = edge_beyond((0.9, 0.4), RIVER_BANK)
    assert {tuple(a), tuple(b)} == {(1.0, 0.0), (0.5, 0.5)}
    assert edge_beyond((0.5, 0.3), RIVER_BANK) is None


def test_degenerate_hulls():
    assert convex_hull_2d([[1, 1], [1, 1]]).tolist() == [[1.0, 1.0]]
    assert convex_hull_2d([[0, 0], [2, 2], [1, 1]]).tolist() == [[0.0, 0.0], [2.0, 2.0]]
    assert hull_position((1, 1), [[0, 0], [2, 2]]) == "edge"
    assert hull_position((1, 1.1), [[0, 0], [2, 2]]) == "outside"
    assert hull_position((3, 3), [[0, 0], [2, 2]]) == "outside"
    assert hull_position((1, 1), [[1, 1]]) == "edge"
    assert convex_weights((1.5, 1.5), [[0, 0], [2, 2]]).tolist() == [0.25, 0.75]


def _in_some_triangle(p, P):
    """Brute force: p is in the hull iff it is in a triangle of three of the points (Caratheodory, 2-D)."""
    for a, b, c in itertools.combinations(P, 3):
        area = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        if abs(area) < 1e-12:
            continue
        lam = [((b[0] - p[0]) * (c[1] - p[1]) - (b[1] - p[1]) * (c[0] - p[0])) / area,
               ((c[0] - p[0]) * (a[1] - p[1]) - (c[1] - p[1]) * (a[0] - p[0])) / area,
               ((a[0] - p[0]) * (b[1] - p[1]) - (a[1] - p[1]) * (b[0] - p[0])) / area]
        if min(lam) >= -1e-9:
            return True
    return False


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.tuples(st.integers(3, 8), st.just(2)), elements=coords),
       st.tuples(coords, coords))
def test_hull_position_agrees_with_brute_force_triangles(P, p):
    if np.linalg.matrix_rank(P - P[0]) < 2:
        return   # all on one line: tested by hand above
    assert (hull_position(p, P) != "outside") == _in_some_triangle(np.array(p), P)


@settings(max_examples=60, deadline=None)
@given(point_sets, st.integers(0, 10_000))
def test_every_attention_output_lies_in_the_hull_and_convex_weights_rebuild_it(V, seed):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(3, len(V))) * 3
    out, _ = scaled_dot_product_attention(scores, np.eye(len(V)), V, scale=1.0)   # Q K^T = scores
    for o in out:
        assert hull_position(o, V) != "outside"
        w = convex_weights(o, V)
        assert w is not None and (w >= 0).all() and np.isclose(w.sum(), 1.0)
        assert np.allclose(w @ V, o, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(point_sets)
def test_every_point_is_in_its_own_hull_and_the_corners_are_points(P):
    hull = convex_hull_2d(P)
    assert all(any(np.array_equal(c, p) for p in P) for c in hull)
    for p in P:
        assert hull_position(p, P) != "outside"


def test_an_interior_point_is_reached_by_softmax_weights():
    # The claim of the hull exercise: scores log(w) give the weights w, so any interior point is an output.
    w = np.array([0.25, 0.2, 0.55, 0.0]) * 0.96 + 0.01          # all above 0, still summing to 1
    out = softmax(np.log(w)) @ RIVER_BANK
    assert hull_position(out, RIVER_BANK) == "inside"
    assert np.allclose(softmax(np.log(w)), w)


@pytest.mark.parametrize("call, name", [
    (lambda: convex_hull_2d([[1, 2, 3]]), "points"),
    (lambda: convex_hull_2d([]), "points"),
    (lambda: convex_hull_2d([[np.nan, 1]]), "points"),
    (lambda: convex_hull_2d("ab"), "points"),
    (lambda: hull_position((1, 2, 3), RIVER_BANK), "point"),
    (lambda: hull_position((np.inf, 0), RIVER_BANK), "point"),
    (lambda: hull_position("xy", RIVER_BANK), "point"),
    (lambda: hull_position((None, 0), RIVER_BANK), "point"),
    (lambda: convex_weights((0, 0), [[0, 0, 0]]), "points"),
])
def test_hull_helpers_refuse_bad_input_naming_it(call, name):
    with pytest.raises(ValueError, match=f"^{name} (must|contains)"):
        call()


# ---------------------------------------------------------------- rank collapse

def test_collapse_residual_by_hand():
    # Rows (1, 0) and (-1, 0): mean (0, 0), so the residual is all of X: 1.
    assert collapse_residual([[1.0, 0.0], [-1.0, 0.0]]) == 1.0
    # Rows (1, 1) and (1, 1): identical, 0. All zeros: identical too, 0.
    assert collapse_residual([[1.0, 1.0], [1.0, 1.0]]) == 0.0
    assert collapse_residual(np.zeros((3, 2))) == 0.0
    # Rows (2, 0) and (0, 0): mean (1, 0), deviations (1, 0) and (-1, 0): sqrt(2) / 2.
    assert math.isclose(collapse_residual([[2.0, 0.0], [0.0, 0.0]]), math.sqrt(2) / 2)


@given(hnp.arrays(np.float64, (4, 3), elements=coords), st.floats(0.1, 100))
def test_collapse_residual_ignores_the_size_of_X_and_the_order_of_its_rows(X, c):
    r = collapse_residual(X)
    assert 0.0 <= r <= 1.0 + 1e-12
    assert math.isclose(collapse_residual(c * X), r, rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(collapse_residual(X[::-1]), r, rel_tol=1e-9, abs_tol=1e-12)


def test_collapse_residual_of_a_batch_is_one_number_per_sentence():
    X = np.stack([[[1.0, 0.0], [-1.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]]])
    assert collapse_residual(X).tolist() == [1.0, 0.0]


def test_layer_norm_gives_mean_0_and_variance_1():
    x = np.array([[1.0, 2.0, 3.0, 6.0], [5.0, 5.0, 5.0, 5.0]])
    y = layer_norm(x)
    assert np.allclose(y[0].mean(), 0) and np.allclose(y[0].var(), 1)
    assert y[1].tolist() == [0.0, 0.0, 0.0, 0.0]


def _loop_attention_layer(X, W_Q, W_K, W_V, W_O):
    """One head of self-attention then W_O, with Python loops."""
    n = len(X)
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    out = np.zeros_like(X)
    for i in range(n):
        s = [float(Q[i] @ K[j]) / math.sqrt(Q.shape[1]) for j in range(n)]
        e = [math.exp(v - max(s)) for v in s]
        out[i] = sum(e[j] / sum(e) * V[j] for j in range(n))
    return out @ W_O


def test_one_pure_attention_layer_matches_a_loop_with_the_same_seeded_weights():
    X = np.random.default_rng(1).standard_normal((5, 4))
    run = stack_residuals(X, 1, "attention", num_heads=1, scale=1.0, seed=3)
    rng = np.random.default_rng(3)   # the helper draws W_Q, W_K, W_V, W_O in that order, each N(0, 1/d)
    W = [rng.standard_normal((4, 4)) / 2.0 for _ in range(4)]
    expected = _loop_attention_layer(X, *W)
    assert math.isclose(run.residual[1], collapse_residual(expected), rel_tol=1e-9)
    assert math.isclose(run.branch[0], np.linalg.norm(expected) / np.linalg.norm(X), rel_tol=1e-9)


def test_uniform_weights_collapse_in_one_layer():
    # Scale tiny: scores near 0, every weight about 1/n, every output about the mean value: residual near 0.
    X = np.random.default_rng(0).standard_normal((6, 8))
    run = stack_residuals(X, 1, "attention", scale=1e-6)
    assert run.residual[1] < 1e-5


def test_pure_attention_reaches_machine_precision_and_pre_ln_holds():
    # The measurement notebook 07 reports: d_model 32, 8 tokens, 4 heads, weights of scale 1, seeds 0-4.
    X = np.random.default_rng(0).standard_normal((8, 32))
    for seed in range(5):
        pure = stack_residuals(X, 12, "attention", num_heads=4, seed=seed).residual
        pre = stack_residuals(X, 12, "pre-LN", num_heads=4, seed=seed).residual
        assert pure[-1] < 1e-12
        assert pre[-1] > 0.1


def test_the_same_arguments_give_the_same_numbers():
    X = np.random.default_rng(0).standard_normal((4, 8))
    for layout in LAYOUTS:
        a = stack_residuals(X, 3, layout, num_heads=2, scale=2.0, seed=5)
        b = stack_residuals(X, 3, layout, num_heads=2, scale=2.0, seed=5)
        assert np.array_equal(a.residual, b.residual) and np.array_equal(a.branch, b.branch)
        assert a.residual.shape == (4,) and a.branch.shape == (3,)


def test_a_skip_connection_with_identical_rows_stays_collapsed():
    # If every row is the same vector, attention returns that vector's image for every row: still identical.
    X = np.tile([1.0, -2.0, 0.5, 3.0], (5, 1))
    for layout in LAYOUTS:
        assert np.all(stack_residuals(X, 2, layout, num_heads=2).residual < 1e-12)


@pytest.mark.parametrize("kwargs, name", [
    (dict(X=np.ones(3), num_layers=1), "X"),
    (dict(X=[[np.nan, 1.0]], num_layers=1), "X"),
    (dict(X=np.ones((2, 3, 4)), num_layers=1), "X"),
    (dict(X=np.ones((2, 4)), num_layers=0), "num_layers"),
    (dict(X=np.ones((2, 4)), num_layers=2.5), "num_layers"),
    (dict(X=np.ones((2, 4)), num_layers=2, layout="post-ln"), "layout"),
    (dict(X=np.ones((2, 4)), num_layers=2, scale=0), "scale"),
    (dict(X=np.ones((2, 4)), num_layers=2, scale=float("inf")), "scale"),
    (dict(X=np.ones((2, 4)), num_layers=2, num_heads=3), "num_heads"),
    (dict(X=np.ones((2, 4)), num_layers=2, seed=-1), "seed"),
])
def test_stack_residuals_refuses_bad_input_naming_it(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} (must|contains)"):
        stack_residuals(**kwargs)


def test_collapse_residual_refuses_bad_input():
    for bad in ([1.0, 2.0], [["a", "b"]], [[np.inf, 0.0]], np.ones((0, 2)), [[None, 1.0]],
                np.ma.masked_array(np.ones((2, 2)), mask=[[1, 0], [0, 0]])):
        with pytest.raises(ValueError, match="^X (must|contains|is a numpy masked array)"):
            collapse_residual(bad)


# ---------------------------------------------------------------- order (the claims of notebook 06)

@settings(max_examples=40, deadline=None)
@given(hnp.arrays(np.float64, (5, 3), elements=coords), st.permutations(range(5)))
def test_self_attention_is_permutation_equivariant_and_the_causal_mask_breaks_it(X, perm):
    perm = list(perm)
    W_Q, W_K = np.eye(3), np.diag([2.0, 1.0, 0.5])
    out, W = scaled_dot_product_attention(X @ W_Q, X @ W_K, X)
    out_p, W_p = scaled_dot_product_attention(X[perm] @ W_Q, X[perm] @ W_K, X[perm])
    assert np.allclose(out_p, out[perm]) and np.allclose(W_p, W[perm][:, perm])
    # With the causal mask, the last word's output depends only on the set of words before it.
    mask = causal_mask(5)
    last = scaled_dot_product_attention(X @ W_Q, X @ W_K, X, mask=mask)[0][-1]
    shuffled = perm[:-1] if perm[-1] == 4 else None
    if shuffled is not None:
        Y = X[shuffled + [4]]
        assert np.allclose(scaled_dot_product_attention(Y @ W_Q, Y @ W_K, Y, mask=mask)[0][-1], last)


# ---------------------------------------------------------------- the exercises of notebooks 06 and 07

from helpers.exercises import HullExercise, PermutedOutputExercise, SinusoidalEntryExercise  # noqa: E402

TOKENS = ["the", "river", "bank", "flooded"]
W_Q_RB, W_K_RB = np.array([[1.0, 0.5], [0.5, 1.0]]), np.array([[2.0, 0.0], [0.0, 1.0]])   # source 000's formulas


def test_permuted_output_exercise_moves_the_rows_with_the_words():
    ex = PermutedOutputExercise(RIVER_BANK, W_Q_RB, W_K_RB, np.eye(2), TOKENS, ["bank", "flooded", "the", "river"])
    out, _ = scaled_dot_product_attention(RIVER_BANK @ W_Q_RB, RIVER_BANK @ W_K_RB, RIVER_BANK)
    assert ex.perm.tolist() == [2, 3, 0, 1]
    assert ex.feedback(out[[2, 3, 0, 1]]).correct
    assert ex.feedback(out).mistake == "unpermuted"
    # [2, 3, 0, 1] is its own inverse: moving the rows "the opposite way" gives the right answer, so it is not named.
    assert "inverse_order" not in ex.mistakes


def test_an_instructor_who_edits_the_sentence_edits_nothing_else():
    X = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    W = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    ex = PermutedOutputExercise(X, W, W, W, ["a", "b", "c"], ["c", "a", "b"])
    out, _ = scaled_dot_product_attention(X @ W, X @ W, X @ W)
    assert ex.feedback(out[[2, 0, 1]]).correct and ex.feedback(out[[1, 2, 0]]).mistake == "inverse_order"


@pytest.mark.parametrize("order", [["the", "river", "bank"], ["the", "the", "bank", "flooded"], ["a", "b", "c", "d"]])
def test_permuted_output_exercise_refuses_an_order_that_is_not_a_permutation(order):
    with pytest.raises(ValueError, match="^order must"):
        PermutedOutputExercise(RIVER_BANK, W_Q_RB, W_K_RB, np.eye(2), TOKENS, order)


@pytest.mark.parametrize("pos, column, d_model", [(10, 3, 16), (0, 0, 2), (7, 0, 2), (5, 4, 8), (100, 9, 12)])
def test_sinusoidal_entry_exercise_knows_the_formula(pos, column, d_model):
    # The formula of Vaswani et al. (2017) sec. 3.5, written out with math: column 2i is sin, 2i + 1 is cos.
    angle = pos / 10000 ** (2 * (column // 2) / d_model)
    want = math.sin(angle) if column % 2 == 0 else math.cos(angle)
    ex = SinusoidalEntryExercise(pos, column, d_model)
    assert math.isclose(float(ex.expected), want, abs_tol=1e-12)
    assert ex.feedback(round(want, 3)).correct


def test_sinusoidal_entry_by_hand():
    # PE[10, 3] at d_model 16: i = 1, angle = 10 / 10000^(1/8) = 10 / sqrt(10) = sqrt(10); cos(sqrt(10)) = -0.99979.
    assert math.isclose(float(SinusoidalEntryExercise(10, 3, 16).expected), math.cos(math.sqrt(10)))
    # Notebook 06's PE[8, 3]: angle = 8 / sqrt(10) = 2.5298; cos = -0.81863.
    assert math.isclose(float(SinusoidalEntryExercise(8, 3, 16).expected), math.cos(8 / math.sqrt(10)))


def test_the_sinusoidal_entry_tells_three_decimals_from_one():
    # PE[10, 3] = -0.99979 is -1.0 at one decimal and -1.000 at three, the same number, so a one-place answer
    # passed; PE[8, 3] = -0.81863 to three decimals: -0.819 is right, -0.8 rounded too far. (Notebook 06 no longer
    # asks it, since its Build it computes every entry; the exercise stays for instructors.)
    ex = SinusoidalEntryExercise(8, 3, 16)
    assert ex.feedback(-0.819).correct and ex.feedback(-0.8186).correct
    assert ex.feedback(-0.8).mistake == "rounded" and ex.feedback(-0.82).mistake == "rounded"


@pytest.mark.parametrize("kwargs, name", [
    (dict(pos=-1, column=0, d_model=4), "pos"),
    (dict(pos=1.5, column=0, d_model=4), "pos"),
    (dict(pos=1, column=4, d_model=4), "column"),
    (dict(pos=1, column=-1, d_model=4), "column"),
    (dict(pos=1, column=0, d_model=5), "d_model"),
])
def test_sinusoidal_entry_exercise_refuses_bad_inputs(kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must"):
        SinusoidalEntryExercise(**kwargs)


def test_hull_exercise_measures_its_answer():
    assert HullExercise((0.9, 0.4), RIVER_BANK, TOKENS).answer == "no"
    inside = HullExercise((0.5, 0.3), RIVER_BANK, TOKENS)
    assert inside.answer == "yes"
    assert inside.feedback("no").mistake == "chose_no"
    assert "0.25 × v_the + 0.2 × v_river + 0.55 × v_bank" in inside.feedback("yes").text
    # Outside the bounding box too: the box mistake is not mentioned.
    far = HullExercise((2.0, 2.0), RIVER_BANK, TOKENS)
    assert far.answer == "no" and "common mistake" not in far.feedback("yes").text


def test_hull_exercise_reads_a_bool_as_no_choice():
    # The question asks for 'yes' or 'no' in quotes; True must not be taken for 'yes'.
    ex = HullExercise((0.9, 0.4), RIVER_BANK, TOKENS)
    for answer in (True, False, np.True_, 3, float("nan")):
        fb = ex.feedback(answer)
        assert (fb.correct, fb.mistake) == (False, "not_a_choice")
        assert fb.text == "Answer with one of 'yes' or 'no', in quotes (a string)."
    assert ex.feedback("no").correct


def test_hull_exercise_refuses_a_point_on_the_edge_and_labels_that_do_not_fit():
    with pytest.raises(ValueError, match="^point .* lies on the edge"):
        HullExercise((0.8, 0.2), RIVER_BANK, TOKENS)
    with pytest.raises(ValueError, match="^labels must"):
        HullExercise((0.5, 0.3), RIVER_BANK, TOKENS[:3])


def test_huge_inputs_are_refused_or_handled_not_turned_into_nan():
    with pytest.raises(ValueError, match="^points must hold numbers of size at most"):
        convex_hull_2d([[1e308, 1e308], [-1e308, -1e308], [1e308, -1e308]])
    # The residual ignores the size of X, so entries near the float limit give the same number as small ones.
    assert math.isclose(collapse_residual([[1e308, 1e308], [-1e308, 0.0]]), collapse_residual([[1.0, 1.0], [-1.0, 0.0]]))


@pytest.mark.parametrize("kwargs, name", [
    (dict(order=None), "order"),
    (dict(order="flooded the river bank"), "order"),
    (dict(W_Q=np.eye(3)), "W_Q"),
    (dict(tokens=TOKENS[:3], order=TOKENS[:3]), "tokens"),
])
def test_permuted_output_exercise_refuses_bad_instructor_input_naming_it(kwargs, name):
    args = dict(X=RIVER_BANK, W_Q=W_Q_RB, W_K=W_K_RB, W_V=np.eye(2), tokens=TOKENS, order=TOKENS[::-1])
    with pytest.raises(ValueError, match=f"^{name} must"):
        PermutedOutputExercise(**{**args, **kwargs})


# ---------------------------------------------------------------- notebook 06's build cell

def test_the_build_cell_of_06_checks_the_workbook_and_stores_not_attempted():
    import nbformat
    from helpers.course import NOTEBOOKS_DIR
    nb = nbformat.read(NOTEBOOKS_DIR / "06_order_and_position.ipynb", as_version=4)
    setup = next(c for c in nb.cells if c.id == "order-02")
    assert "%autoreload 2" in setup.source and "import workbook" in setup.source
    cell = next(c for c in nb.cells if c.cell_type == "code"
                and c.source.strip() == 'diagnose(workbook.positional_encoding, piece="positional_encoding")')
    shown = "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.outputs)
    assert shown.startswith("Not attempted yet"), shown
    before = nb.cells[nb.cells.index(cell) - 1]
    assert before.cell_type == "markdown" and before.source.startswith("## Build it: positional_encoding")
    assert "open `workbook.py`" in before.source.lower() and "**the trap:**" in before.source.lower()
    # the trap the section names is the checker's key for it (one key per misconception)
    assert "i / d_model" in before.source
    from helpers.exercises import diagnose

    def exponent_i_over_d(n, d_model):   # the trap written out: 10000^(i/d) in place of 10000^(2i/d)
        import numpy as np
        pos, i = np.arange(n)[:, None], np.arange(d_model // 2)[None, :]
        angle = pos / 10000.0 ** (i / d_model)
        pe = np.empty((n, d_model))
        pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
        return pe

    assert diagnose(exponent_i_over_d, piece="positional_encoding").mistake == "exponent_i_over_d"


def test_the_sinusoidal_entry_exercise_uses_the_checkers_keys():
    # one key per misconception (issue 21): every mistake the exercise names for a formula written wrong
    # is a key of the positional_encoding checker; angle_only (the angle, not its sine), and the slips of
    # writing the number down, sign_flipped (its sign dropped) and truncated (cut off after 3 decimals), have
    # no whole-array twin
    from helpers.exercises import SinusoidalEntryExercise
    from helpers.checkers.checker_positions import FAULTS
    keys = set(SinusoidalEntryExercise(pos=8, column=3, d_model=16).mistakes)
    assert "exponent_i_over_d" in keys and "dropped_2" not in keys
    assert "sign_flipped" in keys             # truncated is told after the variants, exactly -0.818
    assert keys - {"angle_only", "sign_flipped"} <= set(FAULTS)


def test_06s_sum_of_three_vectors_is_the_real_models_input():
    # Notebook 06 (cell order-32) says MiniLM's input is word + position + segment, then LayerNorm: the
    # LayerNorm of that sum, written here by hand (BERT's, eps from the config), is the model's layer-0
    # hidden state; leaving the segment vector out (issue 22, old c31) gives another input.
    import numpy as np
    from helpers.real_model import load_minilm
    model = load_minilm()
    run = model.run("The bank by the river was steep.")
    ids = model.tokenize("The bank by the river was steep.")[1]
    gamma, beta = model.embeddings_ln

    def layer_norm(x):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + model.eps) * gamma + beta

    word, position = model.word_embeddings[ids].astype(float), model.position_embeddings[:len(ids)]
    segment = model.token_type_embeddings[0]
    assert np.allclose(layer_norm(word + position + segment), run.hidden_states[0], atol=1e-6)
    assert not np.allclose(layer_norm(word + position), run.hidden_states[0], atol=1e-3)
    # "as long as a position vector": within the range of positions 1-63
    lengths = np.linalg.norm(model.position_embeddings[1:64], axis=1)
    assert lengths.min() <= np.linalg.norm(segment) + 0.05 and np.linalg.norm(segment) <= lengths.max() + 0.05


def test_the_causal_order_exercise_measures_which_words_keep_their_outputs():
    # By hand: with the causal mask, swapping the last two words leaves the words up to 'the' and 'river'
    # as they were ({the}, {the, river}), so those two keep their outputs; 'flooded' (now reading
    # the, river, flooded) and 'bank' (now reading all four) read other sets of words.
    import numpy as np
    import pytest
    from helpers.examples import load_example
    from helpers.exercises import CausalOrderExercise
    ex = load_example("river_bank")
    args = (ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.tokens)
    q = CausalOrderExercise(*args, ["the", "river", "flooded", "bank"])
    assert q.answer == "c" and q.OPTIONS["c"].startswith("'the' and 'river' keep theirs")
    assert q.feedback("a").mistake == "chose_a" and q.feedback("b").mistake == "chose_b"
    assert q.feedback("c").correct
    # the right claim follows the inputs: swapping the first two words keeps 'bank' and 'flooded'
    assert CausalOrderExercise(*args, ["river", "the", "bank", "flooded"]).OPTIONS["c"].startswith(
        "'bank' and 'flooded' keep theirs")
    for order in (["the", "river", "bank", "flooded"],      # nothing moved: every word keeps its output
                  ["flooded", "bank", "river", "the"],      # reversed: no word reads the same set
                  ["the", "river", "bank"]):                # not the same tokens
        with pytest.raises(ValueError, match="order"):
            CausalOrderExercise(*args, order)
    # a wrong layer would fail: with no mask every word keeps its output (the claim of option a)
    from helpers.attention import scaled_dot_product_attention
    X = ex.X[[0, 1, 3, 2]]
    out = scaled_dot_product_attention(X @ ex.W_Q, X @ ex.W_K, X @ ex.W_V)[0]
    full = scaled_dot_product_attention(ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V)[0]
    assert np.allclose(out, full[[0, 1, 3, 2]])
