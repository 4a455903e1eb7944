"""diagnose(fn, piece=...) for softmax, causal_mask and padding_mask, the cross-cutting rules (signatures,
float16, stubs), the worked solutions and the workbook. Each faulty function is written the way a learner
writes it, not built from the checkers' own models."""

import ast
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import wrong_functions  # tests/ is on the path under pytest: the collection of learners' functions
from helpers.attention import causal_mask, padding_mask, scaled_dot_product_attention, softmax
from helpers.exercises import PIECES, Feedback, diagnose, solution
from helpers.checkers.battery import CAUSAL_MASK, PADDING_MASK, SOFTMAX
from helpers.checkers.checker_masks import CAUSAL_FAULTS, PADDING_FAULTS, VALUE_FAULTS
from helpers.checkers.checker_softmax import FAULTS as SOFTMAX_FAULTS
from helpers.checkers.runner import LOW_ATOL, LOW_RTOL
from helpers.checkers.solutions import STUBS, WORKED, function_name, workbook_source

ROOT = Path(__file__).resolve().parent.parent
WORKBOOK = ROOT / "notebooks" / "workbook.py"


# --------------------------------------------------------------------------
# softmax
# --------------------------------------------------------------------------

def softmax_loops(x, axis=-1):
    """Right, with Python loops over every slice, and the all -inf slice handled by hand."""
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.zeros_like(x)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        if np.all(np.isneginf(row)):
            continue
        m = max(row)
        e = [np.exp(v - m) for v in row]
        out[index] = [v / sum(e) for v in e]
    return np.moveaxis(out, -1, axis)


def softmax_float32(x, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, np.float32(0)))
    s = e.sum(axis=axis, keepdims=True)
    return e / np.where(s == 0, np.float32(1), s)


def softmax_dim(x, dim=-1, temperature=1.0):
    """Right, with torch's name for the axis and an extra keyword argument with a default."""
    return WORKED["softmax"](np.asarray(x) / temperature, axis=dim)


def naive_softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def naive_guarded(x, axis=-1):
    e = np.exp(x)
    s = e.sum(axis=axis, keepdims=True)
    return e / np.where(s == 0, 1, s)


def textbook_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_axis0(x, axis=-1):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


def softmax_everything(x, axis=-1):
    m = np.max(x)
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    return e / e.sum()


def softmax_last_always(x, axis=-1):
    return WORKED["softmax"](x)


def exp_only(x, axis=-1):
    return np.exp(x - np.max(x, axis=axis, keepdims=True))


def softmax_fill(x, axis=-1):
    """-inf replaced by -1e9 inside (hyunwoongko/transformer #10): a slice hidden everywhere gets 1/n each."""
    x = np.where(np.isinf(x), -1e9, x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_one_max(x, axis=-1):
    """One maximum for the whole array: a row far below it underflows to 0 / 0 (guarded here: zeros)."""
    e = np.exp(x - np.max(x))
    total = np.sum(e, axis=axis, keepdims=True)
    return e / np.where(total == 0, 1, total)


def softmax_no_keepdims(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0))
    return e / np.maximum(np.sum(e, axis=axis), 1e-300)          # right on one row; raises on most matrices


def no_axis(x):
    return WORKED["softmax"](x)


# Issue 32's second review (findings 5 and 9), as the reviewer wrote them: in the collection (tests/wrong_functions.py)
softmax_min, softmax_axis_none = wrong_functions.softmax_min_subtracted, wrong_functions.softmax_axis_default_none


SOFTMAX_NAMED = [
    (naive_softmax, "no_max_subtraction+neg_inf_nan"), (naive_guarded, "no_max_subtraction"),
    (textbook_softmax, "neg_inf_nan"), (softmax_axis0, "wrong_axis"), (softmax_everything, "softmax_over_everything"),
    (softmax_last_always, "axis_ignored"), (exp_only, "neg_inf_nan+exp_not_normalised"), (softmax_fill, "finite_fill"),
    (softmax_one_max, "max_over_everything"), (softmax_no_keepdims, "no_keepdims"), (softmax_min, "min_subtracted"),
    (softmax_axis_none, "wrong_default_axis"), (no_axis, "no_axis_argument"),
]


@pytest.mark.parametrize("fn, key", SOFTMAX_NAMED, ids=[f.__name__ for f, _ in SOFTMAX_NAMED])
def test_each_softmax_mistake_is_named(fn, key):
    verdict = diagnose(fn, piece="softmax")
    assert verdict.correct is False and verdict.mistake == key, verdict.text
    assert "It first goes wrong on" in verdict.text and "expected" in verdict.text


def test_every_softmax_fault_has_a_learner_function():
    named = {k for _, key in SOFTMAX_NAMED for k in key.split("+")}
    assert set(SOFTMAX_FAULTS) <= named


def test_a_softmax_subtracting_the_minimum_is_told_so_with_no_sentence_about_the_maximum():
    verdict = diagnose(softmax_min, piece="softmax")
    assert verdict.mistake == "min_subtracted", verdict.text
    assert "subtracts the minimum" in verdict.text and "x - (-inf) is inf" in verdict.text
    assert "has maximum -inf" not in verdict.text            # neg_inf_nan's sentence, false for it


def test_a_default_axis_of_none_or_0_is_named_with_the_default_and_an_axis_written_in_is_not():
    verdict = diagnose(softmax_axis_none, piece="softmax")
    assert verdict.mistake == "wrong_default_axis", verdict.text
    assert "defaults to None" in verdict.text and "def softmax(x, axis=-1)" in verdict.text

    def softmax_default_0(x, axis=0):
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / np.sum(e, axis=axis, keepdims=True)
    verdict = diagnose(softmax_default_0, piece="softmax")
    assert verdict.mistake == "wrong_default_axis" and "defaults to 0" in verdict.text, verdict.text
    assert diagnose(softmax_axis0, piece="softmax").mistake == "wrong_axis"   # axis=0 written in, default -1


def test_np_exp_passed_as_the_softmax_is_exp_not_normalised_in_its_own_words():
    verdict = diagnose(np.exp, piece="softmax")
    assert verdict.mistake == "exp_not_normalised", verdict.text
    assert "You pass np.exp itself as the softmax" in verdict.text and "def softmax(x, axis=-1)" in verdict.text

    def exp_no_axis(x):
        return np.exp(x - np.max(x, axis=-1, keepdims=True))
    assert diagnose(exp_no_axis, piece="softmax").mistake == "neg_inf_nan+exp_not_normalised+no_axis_argument"


def test_the_softmax_battery_overflows_a_naive_exp_and_holds_an_all_minus_inf_row():
    xs = [case.args["x"] for case in SOFTMAX]
    assert any(np.max(x) > np.log(np.finfo(float).max) for x in xs)          # exp overflows past about 709.8
    assert any(np.isneginf(x).all(axis=-1).any() for x in xs if x.ndim == 2)
    assert any(x.size == 1 for x in xs) and any(x.ndim == 3 for x in xs)      # n = 1, and a batch


# --------------------------------------------------------------------------
# causal_mask and padding_mask
# --------------------------------------------------------------------------

def causal_right_loops(n):
    return np.array([[j <= i for j in range(n)] for i in range(n)])


def causal_diagonal_masked(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


def causal_upper(n):
    return np.triu(np.ones((n, n), dtype=bool))


def causal_flipped(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)      # torch.nn.MultiheadAttention's convention


def causal_float(n):
    return np.tril(np.ones((n, n)))


def causal_additive(n):
    return np.where(np.tril(np.ones((n, n), dtype=bool)), 0.0, -np.inf)


def padding_right_loops(is_real):
    B, n_k = np.shape(is_real)
    return np.array([[[bool(is_real[b][j]) for j in range(n_k)]] for b in range(B)])


def padding_queries(is_real):
    return is_real[:, :, None]


def padding_as_is(is_real):
    return is_real.copy()


def padding_flipped(is_real):
    return ~is_real[:, None, :]


def padding_ints(is_real):
    return is_real[:, None, :].astype(int)


def causal_one_ahead(n):
    return np.tril(np.ones((n, n), dtype=bool), k=1)        # one future token visible


def padding_head_axis(is_real):
    return is_real[:, None, None, :]                         # the multi-head shape, for scores without heads


def padding_square(is_real):
    return np.repeat(is_real[:, None, :], is_real.shape[1], axis=1)


def padding_queries_and_keys(is_real):
    return is_real[:, :, None] & is_real[:, None, :]


def causal_everything(n):
    return np.ones((n, n), dtype=bool)


MASK_NAMED = [
    ("causal_mask", causal_diagonal_masked, "diagonal_masked"), ("causal_mask", causal_upper, "future_visible"),
    ("causal_mask", causal_flipped, "mask_flipped"), ("causal_mask", causal_float, "not_boolean"),
    ("causal_mask", causal_additive, "additive_mask"),
    ("padding_mask", padding_queries, "query_axis"), ("padding_mask", padding_as_is, "not_broadcast"),
    ("padding_mask", padding_flipped, "mask_flipped"), ("padding_mask", padding_ints, "not_boolean"),
    ("causal_mask", causal_one_ahead, "one_future_visible"), ("padding_mask", padding_head_axis, "head_axis"),
    ("padding_mask", padding_square, "square_mask"), ("padding_mask", padding_queries_and_keys, "queries_hidden_too"),
    ("causal_mask", causal_everything, "everything_visible"),
]


@pytest.mark.parametrize("piece, fn, key", MASK_NAMED, ids=[f.__name__ for _, f, _ in MASK_NAMED])
def test_each_mask_mistake_is_named(piece, fn, key):
    verdict = diagnose(fn, piece=piece)
    assert verdict.correct is False and verdict.mistake == key, verdict.text
    assert "the mask has shape" not in verdict.text          # a requirement: "must have shape"


def test_every_mask_fault_has_a_learner_function():
    named = {k for _, _, key in MASK_NAMED for k in key.split("+")}
    assert set(CAUSAL_FAULTS) | set(PADDING_FAULTS) | set(VALUE_FAULTS) == named


def test_a_wrong_mask_is_shown_beside_the_expected_one():
    verdict = diagnose(causal_diagonal_masked, piece="causal_mask")
    assert verdict.case == "n = 3"            # the first input: n = 3
    # n = 3 by hand: expected rows 1 0 0 / 1 1 0 / 1 1 1; with the diagonal hidden 0 0 0 / 1 0 0 / 1 1 0
    table = [" ".join(line.split()) for line in verdict.text.splitlines()[-4:]]
    assert table == ["yours expected", "[[0 0 0] [[1 0 0]", "[1 0 0] [1 1 0]", "[1 1 0]] [1 1 1]]"]


def test_the_padding_battery_has_as_many_sentences_as_tokens():
    """Where (B, n_k) lines up with (n_q, n_k) without an error: the silent case of not_broadcast."""
    assert any(c.args["is_real"].shape[0] == c.args["is_real"].shape[1] for c in PADDING_MASK)
    assert any(c.args["n"] == 1 for c in CAUSAL_MASK)


# --------------------------------------------------------------------------
# attention: the signature, float16, einsum, extra arguments
# --------------------------------------------------------------------------

def attention_attn_mask(q, k, v, attn_mask=None, scale=None):
    scores = q @ np.swapaxes(k, -1, -2) * (scale or 1 / np.sqrt(k.shape[-1]))
    if attn_mask is not None:
        scores = np.where(attn_mask, scores, -1e9)
    return WORKED["softmax"](scores) @ v


def attention_einsum(query, key, value, mask=None, dropout=0.0):
    scores = np.einsum("...qd,...kd->...qk", query, key) / np.sqrt(key.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return np.einsum("...qk,...kd->...qd", WORKED["softmax"](scores), value)


def attention_float32(Q, K, V, mask=None):
    return WORKED["attention"](*(a.astype(np.float32) for a in (Q, K, V)), mask)[0]


def attention_float16(Q, K, V, mask=None):
    return WORKED["attention"](*(a.astype(np.float16) for a in (Q, K, V)), mask)[0]


def attention_flipped_attn_mask(Q, K, V, attn_mask=None):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    return WORKED["softmax"](scores) @ V


@pytest.mark.parametrize("fn", [attention_attn_mask, attention_einsum, attention_float32], ids=lambda f: f.__name__)
def test_right_attention_written_other_ways_passes(fn):
    verdict = diagnose(fn)
    assert verdict.correct, verdict.text


def test_a_mask_called_attn_mask_is_read_from_the_signature():
    assert diagnose(attention_flipped_attn_mask).mistake == "mask_flipped"


def test_float16_is_low_precision_and_shows_the_digits_that_differ():
    verdict = diagnose(attention_float16)
    assert verdict.mistake == "low_precision", verdict.text
    line = next(s for s in verdict.text.splitlines() if s.startswith("It first goes wrong"))
    yours, expected = line.split("yours ", 1)[1].split(", expected ")
    assert yours != expected.rstrip(".")       # printed with enough digits to see them differ
    f16 = lambda x, axis=-1: WORKED["softmax"](np.asarray(x, np.float16), axis).astype(np.float16)
    assert diagnose(f16, piece="softmax").mistake == "low_precision"


def test_the_float16_tolerance_is_far_looser_than_float16_and_far_tighter_than_any_mistake():
    """Every named softmax mistake is outside the low-precision tolerance on its first wrong input."""
    for fn, _ in [(f, k) for f, k in SOFTMAX_NAMED if k not in ("no_axis_argument", "wrong_default_axis")]:
        far = False
        for case in SOFTMAX:
            try:
                with np.errstate(all="ignore"):
                    got = np.asarray(fn(np.array(case.args["x"]), case.args.get("axis", -1)), dtype=float)
            except ValueError:                    # numpy refuses it (no keepdims): far from any answer
                far = True
                break
            want = softmax(case.args["x"], axis=case.args.get("axis", -1))
            if got.shape != want.shape or not np.allclose(got, want, rtol=LOW_RTOL, atol=LOW_ATOL, equal_nan=False):
                far = True
                break
        assert far, fn.__name__


# --------------------------------------------------------------------------
# Stubs, worked solutions, the workbook
# --------------------------------------------------------------------------

@pytest.mark.parametrize("piece", sorted(PIECES))
def test_every_checker_says_correct_on_its_worked_solution(piece):
    verdict = diagnose(WORKED[piece], piece=piece)
    assert verdict.correct and verdict.mistake is None and verdict.text.startswith("Correct!"), verdict.text


@pytest.mark.parametrize("piece", sorted(PIECES))
def test_the_solution_shows_the_worked_source(piece):
    shown = str(diagnose(WORKED[piece], piece=piece).solution())
    assert f"def {function_name(piece)}(" in shown and "return" in shown
    assert str(solution(piece)) == shown
    with pytest.raises(ValueError, match="piece"):
        solution("apply_rope")                           # a piece is named by its piece, not its function


FINALE = {"encoder_block"}   # judged by helpers.checkers.finale.check_your_block, which runs the real model


def test_the_pieces_the_workbook_the_stubs_and_the_solutions_agree():
    assert set(PIECES) | FINALE == set(STUBS) == set(WORKED) and not set(PIECES) & FINALE


def test_the_stored_workbook_is_the_pristine_stubs():
    assert WORKBOOK.read_text(encoding="utf-8") == workbook_source(), (
        "notebooks/workbook.py is not the course's stubs. If it holds your own functions, this failure is "
        "expected (the test checks the course as shipped): keep your file. If you changed a stub in "
        "helpers/checkers/solutions.py, run tools/make_workbook.py (it refuses to overwrite your own code "
        "without --force)")
    tree = ast.parse(WORKBOOK.read_text(encoding="utf-8"))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert [f.name for f in functions] == [function_name(piece) for piece in STUBS]
    for f in functions:
        body = f.body[1:]                              # the docstring aside
        assert len(body) == 1 and isinstance(body[0], ast.Raise), f.name
        assert body[0].exc.func.id == "NotImplementedError"


@pytest.mark.parametrize("piece", sorted(PIECES))
def test_a_stub_is_not_attempted_yet(piece):
    namespace = {}
    exec(compile(workbook_source(), "workbook.py", "exec"), namespace)
    verdict = diagnose(namespace[function_name(piece)], piece=piece)
    assert verdict.mistake == "not_attempted" and verdict.text.startswith("Not attempted yet"), verdict.text


def test_a_function_that_raises_not_implemented_only_for_masks_is_not_a_stub():
    def no_masks_yet(Q, K, V, mask=None):
        if mask is not None:
            raise NotImplementedError("masks next week")
        return WORKED["attention"](Q, K, V)
    assert diagnose(no_masks_yet).mistake == "raised"


# --------------------------------------------------------------------------
# Odd functions: every piece answers, names what happened, never raises
# --------------------------------------------------------------------------

def odd(piece, kind):
    right = WORKED[piece]

    def fn(*args, **kwargs):
        if kind == "raise":
            raise RuntimeError("my bug")
        if kind == "exit":
            sys.exit(1)
        if kind == "none":
            right(*args, **kwargs)
            return None
        if kind == "text":
            return "the answer"
        if kind == "nan":
            return np.full(np.shape(np.asarray(right(*args, **kwargs), dtype=object) if piece != "attention"
                                    else right(*args, **kwargs)[0]), np.nan)
        if kind == "shape":
            out = right(*args, **kwargs)
            return (out[0] if isinstance(out, tuple) else np.asarray(out)).ravel()[:-1]   # a tuple: its first
        if kind == "slow":
            time.sleep(1.0)
        if kind == "print":
            print("working on it")
        if kind == "mutate":               # (the online step may update its running values: its scores, then)
            args[3 if piece == "online_softmax_update" else 0][...] = 0 if piece != "causal_mask" else args[0]
            return right(*args, **kwargs)
        return right(*args, **kwargs)
    return fn


ODD = [("raise", "raised"), ("exit", "exit"), ("none", "returned_none"), ("shape", "wrong_shape"),
       ("print", None)]


@pytest.mark.parametrize("piece", sorted(PIECES))
@pytest.mark.parametrize("kind, key", ODD)
def test_odd_functions_are_named_for_every_piece(piece, kind, key):
    verdict = diagnose(odd(piece, kind), piece=piece)
    assert isinstance(verdict, Feedback) and verdict.mistake == key, verdict.text


@pytest.mark.parametrize("piece, kind", [(piece, kind) for piece in sorted(PIECES) for kind in ("text", "nan", "mutate")
                                         if (piece, kind) not in (("causal_mask", "mutate"), ("positional_encoding", "mutate"))])
# (n is a number: nothing to mutate)
def test_text_nan_and_mutation_are_never_right(piece, kind):
    verdict = diagnose(odd(piece, kind), piece=piece)
    assert verdict.correct is False and isinstance(verdict.text, str)
    if kind == "mutate":
        assert "in place" in verdict.text


@pytest.mark.parametrize("piece", sorted(PIECES))
def test_a_slow_function_is_left_behind_for_every_piece(piece):
    started = time.perf_counter()
    verdict = diagnose(odd(piece, "slow"), piece=piece, time_limit=0.1)
    assert time.perf_counter() - started < 0.9 and verdict.mistake == "too_slow"


def test_an_unknown_piece_or_option_is_a_clear_value_error():
    with pytest.raises(ValueError, match="piece"):
        diagnose(WORKED["softmax"], piece="softmaxx")
    with pytest.raises(ValueError, match="masks"):
        diagnose(WORKED["softmax"], piece="softmax", masks=False)


# --------------------------------------------------------------------------
# Property: right functions written another way agree with the course's, on random shapes and values
# --------------------------------------------------------------------------

scores = hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=5),
                    elements=st.one_of(st.floats(-800, 800), st.just(-np.inf)))


@settings(max_examples=150, deadline=None)
@given(x=scores, data=st.data())
def test_softmax_written_other_ways_agrees_with_the_courses(x, data):
    assume(not np.all(np.isneginf(x)))   # helpers.inputs refuses an array of -inf only (see the report)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    want = softmax(x, axis=axis)
    # float64 in another order: measured up to 2e-9 relative at scores near 800; float32: its eps is 1.2e-7
    for fn, rtol in ((WORKED["softmax"], 1e-7), (softmax_loops, 1e-7), (softmax_float32, 1e-4)):
        np.testing.assert_allclose(fn(x, axis), want, rtol=rtol, atol=1e-6 if rtol > 1e-5 else 1e-12,
                                   err_msg=fn.__name__)
    np.testing.assert_allclose(softmax_dim(x, dim=axis), want, rtol=1e-7, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2), st.integers(1, 5), st.integers(1, 5), st.integers(1, 4), st.data())
def test_attention_written_other_ways_agrees_with_the_courses(B, n_q, n_k, d, data):
    Q, K, V = (data.draw(hnp.arrays(np.float64, (B, n, d), elements=st.floats(-30, 30)))
               for n in (n_q, n_k, n_k))
    mask = data.draw(hnp.arrays(np.bool_, (B, n_q, n_k)))
    mask[..., 0] = True                          # every query sees a key: the -1e9 fill then agrees with -inf
    want, _ = scaled_dot_product_attention(Q, K, V, mask=mask)
    for fn, rtol in ((attention_attn_mask, 1e-9), (attention_einsum, 1e-9), (attention_float32, 1e-3)):
        np.testing.assert_allclose(fn(Q, K, V, mask), want, rtol=rtol, atol=rtol * 30, err_msg=fn.__name__)
    np.testing.assert_allclose(WORKED["attention"](Q, K, V, mask)[0], want, rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), real=hnp.arrays(np.bool_, hnp.array_shapes(min_dims=2, max_dims=2, max_side=8)))
def test_masks_written_other_ways_agree_with_the_courses(n, real):
    np.testing.assert_array_equal(causal_right_loops(n), causal_mask(n))
    np.testing.assert_array_equal(WORKED["causal_mask"](n), causal_mask(n))
    np.testing.assert_array_equal(padding_right_loops(real), padding_mask(real))
    np.testing.assert_array_equal(WORKED["padding_mask"](real), padding_mask(real))


@pytest.mark.parametrize("piece, fn", [("softmax", softmax_loops), ("softmax", softmax_float32),
                                       ("softmax", softmax_dim), ("causal_mask", causal_right_loops),
                                       ("padding_mask", padding_right_loops)], ids=lambda x: getattr(x, "__name__", x))
def test_diagnose_accepts_right_functions_written_other_ways(piece, fn):
    verdict = diagnose(fn, piece=piece)
    assert verdict.correct, verdict.text


# --------------------------------------------------------------------------
# Grading a class's workbooks
# --------------------------------------------------------------------------

def _grading_tool_and_pristine_workbook(tmp_path):
    """tools/grade_workbooks.py as a module, and a workbook of stubs at tmp_path/a/workbook.py."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import grade_workbooks
    finally:
        sys.path.remove(str(ROOT / "tools"))
    pristine = tmp_path / "a" / "workbook.py"
    pristine.parent.mkdir()
    pristine.write_text(workbook_source())
    return grade_workbooks, pristine


def test_grading_tallies_every_students_keys(tmp_path, capsys):
    grade_workbooks, pristine = _grading_tool_and_pristine_workbook(tmp_path)
    partly = tmp_path / "b" / "workbook.py"
    partly.parent.mkdir()
    partly.write_text(workbook_source().replace(
        '    raise NotImplementedError("softmax: not written yet")',
        "    e = np.exp(x - np.max(x, axis=axis, keepdims=True))\n    return e / e.sum(axis=axis, keepdims=True)"))
    broken = tmp_path / "c" / "workbook.py"
    broken.parent.mkdir()
    broken.write_text("def softmax(x, axis=-1):\n    return x +\n")
    grades = grade_workbooks.main([pristine, partly, broken])
    assert grades[str(pristine)] == {piece: "not_attempted" for piece in PIECES}
    assert grades[str(partly)]["softmax"] == "neg_inf_nan"
    assert grades[str(broken)] == {"workbook": "import_error"}
    counts = grade_workbooks.tally(grades)
    assert counts[("softmax", "not_attempted")] == 1 and counts[("attention", "not_attempted")] == 2
    assert "neg_inf_nan" in capsys.readouterr().out


def test_the_grading_command_line_gives_usage_and_names_a_missing_file_and_its_tally_is_aligned(tmp_path, capsys):
    grade_workbooks, pristine = _grading_tool_and_pristine_workbook(tmp_path)
    for argv, said in (([], "usage:"), ([str(tmp_path / "nope.py")], "no such file: "), (["--help"], "usage:")):
        with pytest.raises(SystemExit):
            grade_workbooks.cli(argv)
        printed = capsys.readouterr()
        assert said in printed.out + printed.err, (argv, printed)
    grade_workbooks.cli([str(pristine)])
    tally_lines = capsys.readouterr().out.split("\n\n", 1)[1].strip("\n").splitlines()
    assert any("online_softmax_update" in line for line in tally_lines)     # a piece name longer than 14
    assert len({line.rindex(" ") for line in tally_lines}) == 1, tally_lines   # the keys start in one column


def test_make_workbook_help_prints_usage_and_writes_nothing():
    stored = (ROOT / "notebooks" / "workbook.py").stat().st_mtime_ns
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "make_workbook.py"), "--help"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.startswith("usage:") and "wrote" not in run.stdout
    assert (ROOT / "notebooks" / "workbook.py").stat().st_mtime_ns == stored


def test_grading_with_block_runs_each_students_encoder_block_on_the_real_model(tmp_path):
    grade_workbooks, pristine = _grading_tool_and_pristine_workbook(tmp_path)
    worked = tmp_path / "b" / "workbook.py"      # the worked solutions of every piece, the block among them
    worked.parent.mkdir()
    worked.write_text("from helpers.checkers.solutions import *  # noqa\n"
                      "from helpers.checkers.solutions import encoder_block\n")
    assert "encoder_block" not in grade_workbooks.grade(pristine)          # only with block=True
    assert grade_workbooks.grade(pristine, block=True)["encoder_block"] == "not_attempted"
    assert grade_workbooks.grade(worked, block=True)["encoder_block"] == "correct"


def test_the_guide_lists_the_keys_each_checker_names():
    import re
    guide = (ROOT / "INSTRUCTORS.md").read_text(encoding="utf-8")
    section = guide.split("## The workbook", 1)[1].split("\n## ", 1)[0]
    rows = {m[0]: set(re.findall(r"`(\w+)`", m[1])) for m in re.findall(r"^\| `(\w+)` \|[^|]*\|(.*)\|$", section, re.M)}
    assert rows["softmax"] == set(SOFTMAX_FAULTS) | {"no_axis_argument"}
    assert rows["causal_mask"] == set(CAUSAL_FAULTS) | set(VALUE_FAULTS)
    assert rows["padding_mask"] == set(PADDING_FAULTS) | set(VALUE_FAULTS)   # additive_mask too: diagnose names it
    assert set(rows) == set(PIECES)


@pytest.mark.parametrize("piece, fn", [
    ("softmax", lambda x, axis=-1: WORKED["softmax"](x, axis) * 0.9),
    ("causal_mask", lambda n: np.eye(n, dtype=bool)),     # only the diagonal: no named mistake
    ("padding_mask", lambda is_real: np.ones((is_real.shape[0], 1, is_real.shape[1]), dtype=bool)),
], ids=["softmax", "causal_mask", "padding_mask"])
def test_a_wrong_function_no_mistake_explains_is_different(piece, fn):
    verdict = diagnose(fn, piece=piece)
    assert verdict.mistake == "different", verdict.text
    assert "yours" in verdict.text and "expected" in verdict.text


# --------------------------------------------------------------------------
# A workbook saved with a SyntaxError: autoreload keeps the previous save's function
# --------------------------------------------------------------------------

def test_a_workbook_saved_with_a_syntax_error_stops_diagnose_with_its_line(tmp_path, monkeypatch):
    import importlib
    (tmp_path / "workbook_saved.py").write_text(workbook_source().replace(
        'raise NotImplementedError("softmax: not written yet")', "return WORKED_SOFTMAX(x, axis)", 1)
        + "\nfrom helpers.checkers.solutions import WORKED\nWORKED_SOFTMAX = WORKED['softmax']\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("workbook_saved")
    try:
        assert diagnose(module.softmax, piece="softmax").correct           # the previous save, right
        lines = (tmp_path / "workbook_saved.py").read_text(encoding="utf-8").splitlines()
        bad = len(lines) + 1
        (tmp_path / "workbook_saved.py").write_text("\n".join(lines) + "\ndef attention(Q, K, V\n", encoding="utf-8")
        verdict = diagnose(module.softmax, piece="softmax")                # the loaded function is still right
        assert verdict.correct is False and verdict.mistake == "syntax_error", verdict.text
        assert f"workbook_saved.py has a SyntaxError at line {bad}" in verdict.text
        assert "previous save" in verdict.text and "Correct" not in verdict.text
        assert diagnose(module.attention).mistake == "syntax_error"      # every piece of that file
    finally:
        sys.modules.pop("workbook_saved", None)


def test_a_function_of_a_notebook_cell_or_of_a_module_that_compiles_is_checked_as_usual():
    ns = {"__name__": "__main__"}
    exec("def my_softmax(x, axis=-1):\n    return x\n", ns)
    assert diagnose(ns["my_softmax"], piece="softmax").mistake != "syntax_error"
    assert diagnose(softmax, piece="softmax").correct                       # helpers.attention compiles
    assert diagnose(np.exp, piece="softmax").mistake != "syntax_error"       # no Python source at all
