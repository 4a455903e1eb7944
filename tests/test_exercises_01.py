"""Notebook 01 after issues 21 and 22: its exercises of understanding, its one audit line, its build cells.

- KeyDesignExercise (design W_K so that 'bank' prefers 'flooded' over 'river'): many answers are right, so the
  checker checks the property; tested against a loop that shares no code with it, on random matrices.
- HeatmapClaimExercise (which claim a heatmap supports): the claim about the weights in the mix is right,
  the three others are named.
- The softmax-row exercise that left the notebook: its cases still run on SoftmaxRowExercise.
- SourceAudit's quiet mode and its one summary line, and the line notebook 01 stores, recounted from data/.
- The build cells run diagnose on the workbook's stubs and store "not attempted yet".
"""

import math
import re
import warnings

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from exercise_cases import NUMBER, PHRASES, SOFTMAX_ROW_CASES, numbers_above
from helpers.course import NOTEBOOKS_DIR
from helpers.examples import Published, SourceAudit, load_example, matches
from helpers.exercises import HeatmapClaimExercise, KeyDesignExercise, ScoreExercise, SoftmaxRowExercise

RB = load_example("river_bank")
TOKENS = list(RB.tokens)
BANK, RIVER, FLOODED = RB.index("bank"), RB.index("river"), RB.index("flooded")
NB01 = NOTEBOOKS_DIR / "01_river_bank.ipynb"


def _design(**kw):
    args = dict(X=RB.X, W_Q=RB.W_Q, W_K=RB.W_K, tokens=TOKENS, query="bank", prefer="flooded", over="river")
    return KeyDesignExercise(**{**args, **kw})


def _prefers_by_loops(X, W_Q, W_K, i, j, k):
    """Whether query i scores word j above word k, with Python loops (no numpy products, no softmax)."""
    d_model, d_k = len(W_Q), len(W_Q[0])
    q = [sum(X[i][r] * W_Q[r][c] for r in range(d_model)) for c in range(d_k)]

    def score(w):
        key = [sum(X[w][r] * W_K[r][c] for r in range(d_model)) for c in range(d_k)]
        return sum(a * b for a, b in zip(q, key))
    return score(j) - score(k)


# ------------------------------------------------------------ design W_K

def test_the_source_w_k_is_refused_as_an_answer_and_a_swapped_one_passes():
    ex = _design()
    assert ex.feedback(RB.W_K).mistake == "unchanged"
    # diag(1, 2): keys of river (1, 0) and flooded (0.8, 0.4); bank's query (0.75, 0.75) scores them 0.75 and 0.9
    assert ex.feedback(np.diag([1.0, 2.0])).correct


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float64, (2, 2), elements=st.floats(-10, 10, allow_nan=False)))
def test_any_matrix_is_judged_by_the_property_alone(W):
    ex = _design()
    gap = _prefers_by_loops(RB.X.tolist(), RB.W_Q.tolist(), W.tolist(), BANK, FLOODED, RIVER)
    feedback = ex.feedback(W)
    if abs(gap) > 1e-6:
        assert feedback.correct == (gap > 0), (W, gap, feedback.text)
    if not feedback.correct:
        assert feedback.mistake in {"unchanged", "scaled_all", "tie", "still_prefers"}, feedback.text


@pytest.mark.parametrize("c", [0.5, 2.0, 3.0, 1e6])
def test_scaling_all_of_w_k_is_named_whatever_the_factor(c):
    feedback = _design().feedback(c * RB.W_K)
    assert feedback.mistake == "scaled_all" and "the order of the keys stays" in feedback.text


def test_a_negative_multiple_meets_the_property_and_is_told_what_it_did():
    feedback = _design().feedback(-RB.W_K)
    assert feedback.correct and "reverses every preference" in feedback.text
    assert "'the' now takes the most weight" in feedback.text   # -scores: the lowest score, the's 0.225, wins


@pytest.mark.parametrize("answer, key", [
    (np.eye(2), "tie"),                      # identity: river (1, 0) and flooded (0.8, 0.2) both sum to 1
    (np.zeros((2, 2)), "tie"),
    (np.array([[3.0, 0.0], [0.0, 1.0]]), "still_prefers"),
    (RB.X @ RB.W_K, "keys_given"),
    (np.array([1.0, 2.0]), "shape"),
    (np.eye(3), "shape"),
    ([[np.nan, 0], [0, 1]], "nan_inf"),
    ([[np.inf, 0], [0, 1]], "nan_inf"),
    ([[1.7e308] * 2] * 2, "nan_inf"),                         # finite entries, scores that overflow
    ([[1e308, -1e308], [1e308, 1e308]], "saturated"),         # flooded above river, both weights 0 in float64
    ("[[1, 0], [0, 2]]", "not_numbers"),
    ([[1, 0], [0, None]], "none_entry"),
    ([[1, 0], [2]], "unreadable"),
    (np.eye, "function"),
    (..., "not_attempted"),
    (None, "not_attempted"),
    ({"a": 1}, "not_numbers"),
    (np.ma.masked_array(np.eye(2), mask=[[0, 1], [0, 0]]), "masked_array"),
])
def test_named_and_odd_answers_get_friendly_feedback(answer, key):
    feedback = _design().feedback(answer)
    assert feedback.mistake == key and not feedback.correct, feedback.text
    if key in PHRASES:
        assert PHRASES[key] in feedback.text


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.text(), st.integers(), st.floats(), st.lists(st.floats(), max_size=5),
                 st.lists(st.lists(st.floats(), max_size=3), max_size=3),
                 hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4))))
def test_the_checker_never_raises(answer):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        feedback = _design().feedback(answer)
    assert isinstance(feedback.text, str) and feedback.text


def test_the_solution_meets_the_property_for_the_source_and_for_edited_inputs():
    for kw in ({}, {"W_K": np.array([[1.0, 0.0], [0.0, 0.2]])},      # swapping its diagonal still prefers river
               {"W_K": np.array([[2.0, 0.5], [0.0, 1.0]])}):
        ex = _design(**kw)
        namespace = {"np": np}
        exec(ex.solution().text, namespace)
        assert ex.feedback(namespace["answer"]).correct, (kw, ex.solution().text)


def test_an_instructor_s_bad_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="already prefers 'flooded'"):
        _design(W_K=np.diag([1.0, 2.0]))
    with pytest.raises(ValueError, match="prefer must be one of the tokens"):
        _design(prefer="storm")
    with pytest.raises(ValueError, match="two words with different vectors"):
        _design(prefer="river")
    with pytest.raises(ValueError, match="W_Q and W_K must both have shape"):
        _design(W_K=np.ones((2, 3)))
    with pytest.raises(ValueError, match="tokens must name the 4 rows"):
        _design(tokens=TOKENS[:3])


# ------------------------------------------------------------ which claim a heatmap supports

def test_the_claim_about_the_weights_is_right_and_the_others_are_named():
    _, W = None, None
    from helpers.attention import scaled_dot_product_attention
    Q, K = RB.X @ RB.W_Q, RB.X @ RB.W_K
    _, W = scaled_dot_product_attention(Q, K, RB.X @ RB.W_V)
    ex = HeatmapClaimExercise(W, TOKENS)
    assert "'river'" in ex.OPTIONS["c"]               # river takes every row's largest weight (test_published)
    assert "weight" in ex.OPTIONS["c"] and "share" not in ex.OPTIONS["c"]   # a heatmap shows weights, not shares
    assert ex.feedback("c").correct and ex.feedback(" (C) ").correct
    for letter in "abd":
        feedback = ex.feedback(letter)
        assert feedback.mistake == f"chose_{letter}" and not feedback.correct
    for odd in ("e", 3, None, ["c", "a"], np.nan):
        assert not ex.feedback(odd).correct


def test_the_claims_need_one_key_that_wins_every_row():
    with pytest.raises(ValueError, match="one key that takes the largest weight in every row"):
        HeatmapClaimExercise(np.eye(3), ["a", "b", "c"])
    with pytest.raises(ValueError, match="keys must name the 2 columns"):
        HeatmapClaimExercise(np.array([[0.6, 0.4], [0.7, 0.3]]), ["a"])


# ------------------------------------------------------------ the softmax row that left notebook 01

def _softmax_row_namespace():
    Q, K = RB.X @ RB.W_Q, RB.X @ RB.W_K
    ns = {"np": np, "scores": Q @ K.T, "flooded": FLOODED, "d_k": RB.d_k}
    ns["ex_softmax"] = SoftmaxRowExercise(ns["scores"][FLOODED], d_k=RB.d_k, labels=TOKENS)
    ns["ex_score"] = ScoreExercise(RB.X, RB.W_Q, RB.W_K, TOKENS, query="flooded", key="bank")  # 'other_exercise'
    return ns


@pytest.mark.parametrize("case", SOFTMAX_ROW_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(SOFTMAX_ROW_CASES)])
def test_softmax_row_answers_are_still_named(case):
    key, code, *extra = case
    ns = _softmax_row_namespace()   # built per test: a module-level exercise outlives its tests and is then
                                    # 'another exercise' to the checkers of test_exercises.py on the same worker
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        exec(code, ns)
    feedback = ns["ex_softmax"].feedback(ns["answer"])
    assert feedback.mistake == key, feedback.text
    for phrase in [PHRASES[key], *extra]:
        assert phrase in feedback.text


# ------------------------------------------------------------ the audit's one line

PUB = Published("demo", np.array([1.0, 2.0]), 1, "a test", rounded_inputs="The source rounded first.")
PLAIN = Published("plain", 3.0, 0, "a test")


def test_a_quiet_audit_prints_nothing_until_its_summary(capsys):
    audit = SourceAudit("source X", "the appendix", quiet=True)
    audit.check([1.02, 2.0], PUB)
    audit.check(3.4, PLAIN)
    assert capsys.readouterr().out == ""
    audit.summary()                                     # not told what the source publishes: no "all"
    assert capsys.readouterr().out == ("3 numbers published by source X are reproduced, each to its published "
                                       "rounding (the appendix has the table)\n")   # no "0 differ ... listed"
    audit.summary({"demo": PUB, "plain": PLAIN})        # every published number checked: "all"
    assert capsys.readouterr().out.startswith("all 3 numbers published by source X are reproduced")
    audit.check([1.2, 2.0], PUB)                       # 1.2 is off by more than 0.05, where the source rounded first
    audit.summary({"demo": PUB, "plain": PLAIN, "other": PLAIN})
    out = capsys.readouterr().out.splitlines()
    assert out == ["5 numbers published by source X are reproduced; 1 differs only by the published "
                   "rounding, listed in the appendix", "not checked: other"]
    audit.check(4.0, PLAIN)                            # off, and no note explains it
    audit.summary()
    assert capsys.readouterr().out.startswith("4 of 6 numbers published by source X match ours; 1 differs only by "
                                              "the published rounding and 1 differs unexplained")
    with pytest.raises(ValueError, match="quiet must be True or False"):
        SourceAudit("source X", "the appendix", quiet="yes")


def test_notebook_01_keeps_one_audit_line_recounted_from_the_data():
    from test_published import RECIPES

    ours, _ = RECIPES["river_bank"]
    pub = RB.published
    n = sum(np.size(p.value) for p in pub.values())
    rounded = sum(int(np.size(p.value) - matches(ours[name], p).sum()) for name, p in pub.items())
    assert all(p.rounded_inputs for name, p in pub.items() if not matches(ours[name], p).all())
    nb = nbformat.read(NB01, as_version=4)
    printed = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    line = (f"all {n} numbers published by source 000 are reproduced; {rounded} differ only by the published "
            "rounding, listed in the appendix")
    assert line in printed
    assert printed.count("source 000 to its rounding") == 0   # no per-step audit lines on the main path
    main, appendix = _split_at_appendix(nb)
    assert any("audit.table()" in c.source for c in appendix) and not any("audit.table()" in c.source for c in main)


def _split_at_appendix(nb):
    i = next(k for k, c in enumerate(nb.cells) if c.cell_type == "markdown" and re.match(r"#+\s*Appendix", c.source))
    return nb.cells[:i], nb.cells[i:]


# ------------------------------------------------------------ exercise 2 (shore): its answer is on no line above it

def test_exercise_2s_answer_is_printed_nowhere_above_it():
    # issue 33, section 2: its first pair, flooded against bank (1.2), was in the printed Q K^T of section 4,
    # as is every pair of the sentence; the score of a new word is printed nowhere
    from helpers.exercises.feedback import EXACT_ATOL
    nb = nbformat.read(NB01, as_version=4)
    solution = next(c for c in nb.cells if c.get("id") == "ex-score-solution")
    answer = float(re.search(r"= (-?[\d.]+)\s*$", solution.outputs[0]["data"]["text/plain"]).group(1))
    above = numbers_above(nb, "ex-score-try")
    assert not [x for x in above if abs(x - answer) <= EXACT_ATOL], answer
    scores = RB.X @ RB.W_Q @ (RB.X @ RB.W_K).T
    assert all(any(abs(x - s) <= EXACT_ATOL for x in above) for s in scores.ravel())   # why: every pair is there


# ------------------------------------------------------------ the build cells

@pytest.mark.parametrize("call", ['diagnose(workbook.softmax, piece="softmax")',
                                  "diagnose(workbook.attention, masks=False, batches=False)"])
def test_each_build_cell_checks_the_workbook_and_stores_not_attempted(call):
    nb = nbformat.read(NB01, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.source.strip() == call)
    shown = "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.outputs)
    assert shown.startswith("Not attempted yet"), shown
    before = nb.cells[nb.cells.index(cell) - 1]
    assert before.cell_type == "markdown" and before.source.startswith("## Build it: ")
    assert "open `workbook.py`" in before.source.lower() and "**the trap:**" in before.source.lower()


def test_the_softmax_trap_is_computed_where_the_build_section_quotes_it():
    from helpers.attention import softmax
    w = softmax(np.array([1000.0, 1001.0]))
    # 1 / (1 + e) and e / (1 + e), by hand
    assert np.allclose(w, [1 / (1 + math.e), math.e / (1 + math.e)])
    nb = nbformat.read(NB01, as_version=4)
    build = next(c for c in nb.cells if c.source.startswith("## Build it: softmax"))
    assert f"{w[0]:.3f} and {w[1]:.3f}" in build.source


# ------------------------------------------------------------ exercise 3: a mask the page never applies

def test_exercise_3_a_fifth_word_is_measured_and_its_numbers_are_on_no_line_above_it():
    # issue 33, section 2: exercise 3 once asked for the weights with river masked, the matrix the attention build
    # had just computed (and notebook 04's mask explorer stores). Now it asks what shore, a fifth word, does to
    # bank's weights on the old four: a transfer of section 12's one-factor rule, run the other way.
    from helpers.attention import scaled_dot_product_attention
    from helpers.exercises import AddedWordExercise
    nb = nbformat.read(NB01, as_version=4)
    shore = np.array([0.9, 0.1])                          # exercise 2's new word
    X5 = np.vstack([RB.X, shore])
    old = scaled_dot_product_attention(RB.X @ RB.W_Q, RB.X @ RB.W_K, RB.X @ RB.W_V)[1][BANK]
    new = scaled_dot_product_attention(X5 @ RB.W_Q, X5 @ RB.W_K, X5 @ RB.W_V)[1][BANK]
    factor = new[:-1] / old
    assert np.allclose(factor, factor[0]) and factor[0] < 1                  # option (a), measured
    assert np.isclose(factor[0], 1 - new[-1])                                # shore takes what the four gave up
    ex = AddedWordExercise(RB.X, RB.W_Q, RB.W_K, TOKENS, shore, "shore", query="bank")
    assert ex.answer == "a" and ex.feedback("a").correct
    assert [ex.feedback(k).mistake for k in "bcd"] == ["like_attracts", "old_weights_kept", "only_neighbours_fall"]
    assert new[RIVER] < old[RIVER]                                           # (b) is false: river falls too
    solution = next(c for c in nb.cells if c.get("id") == "ex-added-solution").outputs[0]["data"]["text/plain"]
    assert f"{factor[0]:.3f}" in solution and f"{new[-1]:.3f}" in solution
    above = numbers_above(nb, "ex-added-try")
    for shown in (factor[0], new[-1]):                                       # the numbers the check reveals
        assert not [x for x in above if abs(x - shown) <= 5e-4], shown


def test_the_body_states_the_identity_the_design_exercise_rests_on():
    # issue 33, section 3: q . (x W_K) = x . (W_K q), once only in the hints, is said and computed before exercise 4
    nb = nbformat.read(NB01, as_version=4)
    ids = [c.get("id") for c in nb.cells]
    said = next(k for k, c in enumerate(nb.cells) if "q · (x W_K) = x · (W_K q)" in c.source)
    shown = ids.index("score-from-the-key-side")
    assert said < shown < ids.index("ex-design-md") and said < ids.index("ex-intro")
    printed = nb.cells[shown].outputs[0]["text"]
    assert "the same as bank's scores: True" in printed
    u = RB.W_K @ (RB.X[BANK] @ RB.W_Q)
    assert np.allclose(RB.X @ u, (RB.X @ RB.W_Q)[BANK] @ (RB.X @ RB.W_K).T)   # the identity itself, by numpy


def test_the_heatmap_exercise_comes_before_the_prose_that_answers_it():
    # issue 33, section 2: section 10 says every row's largest weight is on river and names the common mistake,
    # claim (a); the exercise sits right after the heatmap, before it
    nb = nbformat.read(NB01, as_version=4)
    heatmap = next(k for k, c in enumerate(nb.cells) if c.cell_type == "code" and "weights_heatmap(W," in c.source)
    exercise = next(k for k, c in enumerate(nb.cells) if c.get("id") == "ex-claim-md")
    said = next(k for k, c in enumerate(nb.cells) if "common mistake is to read that" in c.source)
    assert heatmap < exercise < said
    assert [c.get("id") for c in nb.cells[exercise:exercise + 5]] == [
        "ex-claim-md", "ex-claim-setup", "ex-claim-try", "ex-claim-hint", "ex-claim-solution"]
    assert "heatmap above" in nb.cells[exercise].source
