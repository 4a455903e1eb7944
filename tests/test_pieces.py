"""helpers.pieces (issue 33, section 1): a cell runs the learner's piece once diagnose says it is right.

- The workbook's stubs give the course's function, and the line says "not attempted yet".
- A worked function (helpers.checkers.solutions.WORKED) runs, and the line says "your softmax"; a wrong
  one gives the course's, and the line names its key; a right float32 or loop version runs as it is.
- The learner's attention is adapted to the course's signature (scale=, the weights of an output-only
  function), a mask or a batch the cell did not ask for is refused whoever wrote the function.
- The diagnosis is cached until the function's code or the text of its file changes.
- nbval_sanitize.cfg folds exactly the lines that depend on the workbook, and no number; every
  nbval run of the project passes it.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from nbval.plugin import get_sanitize_patterns

import helpers.pieces as pieces
from helpers.attention import causal_mask as course_causal_mask, padding_mask as course_padding_mask
from helpers.attention import scaled_dot_product_attention, softmax as course_softmax
from helpers.checkers.solutions import WORKED, workbook_source
from helpers.pieces import CHOICES, USES, piece
from wrong_functions import softmax_single   # tests/ is on the path under pytest

ROOT = Path(__file__).resolve().parents[1]
SANITIZER = ROOT / "nbval_sanitize.cfg"
rng = np.random.default_rng(33)
Q, K, V = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
MASK = np.tril(np.ones((4, 5), dtype=bool))


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)      # no Jupyter session names the notebook here
    pieces.clear_cache()
    pieces.this_notebook(None)
    yield
    pieces.clear_cache()
    pieces.this_notebook(None)


def module_from(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chosen(capsys, *args, **kwargs):
    """(the function piece(...) returns, the one line it printed)."""
    fn = piece(*args, **kwargs)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 1, printed
    return fn, printed[0]


def naive_softmax(x, axis=-1):
    e = np.exp(x)                                   # no maximum subtracted
    return e / e.sum(axis=axis, keepdims=True)


float32_softmax = softmax_single      # the collection's right float32 softmax (tests/wrong_functions.py)


def loop_softmax(x, axis=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.zeros(x.shape)
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        top = max(row) if np.isfinite(max(row)) else 0.0
        e = [float(np.exp(s - top)) for s in row]
        total = sum(e)
        out[index] = [v / total if total else 0.0 for v in e]
    return np.moveaxis(out, -1, axis)


def output_only_attention(Q, K, V, mask=None):
    return WORKED["attention"](Q, K, V, mask)[0]


# ------------------------------------------------------------ whose function runs, and the line

def test_the_stubs_give_the_course_functions_not_attempted_yet(tmp_path, capsys):
    (tmp_path / "stubs.py").write_text(workbook_source())
    stubs = module_from(tmp_path / "stubs.py", "stubs_for_pieces")
    fn, line = chosen(capsys, "softmax", workbook=stubs)
    assert fn is course_softmax and line == "the course's softmax (yours: not attempted yet)"
    fn, line = chosen(capsys, "attention", workbook=stubs)
    assert line == "the course's attention (yours: not attempted yet)"
    out, weights = fn(Q, K, V)
    want = scaled_dot_product_attention(Q, K, V)
    assert np.array_equal(out, want[0]) and np.array_equal(weights, want[1])
    # notebook 04's: the masks, and attention with masks and batches
    fn, line = chosen(capsys, "causal_mask", workbook=stubs)
    assert fn is course_causal_mask and line == "the course's causal_mask (yours: not attempted yet)"
    fn, line = chosen(capsys, "padding_mask", workbook=stubs)
    assert fn is course_padding_mask and line == "the course's padding_mask (yours: not attempted yet)"
    fn, line = chosen(capsys, "attention", masks=True, batches=True, workbook=stubs)
    assert line == "the course's attention (yours: not attempted yet)"
    np.testing.assert_array_equal(fn(Q[None], K[None], V[None], mask=MASK)[1][0],
                                  scaled_dot_product_attention(Q, K, V, MASK)[1])


def test_the_repository_workbook_is_the_stubs_and_gives_the_course_functions(capsys):
    # the stored outputs are made with it (tests/test_checkers.py checks its text too)
    stubs = module_from(ROOT / "notebooks" / "workbook.py", "workbook_as_shipped")
    assert chosen(capsys, "softmax", workbook=stubs)[1] == "the course's softmax (yours: not attempted yet)"


def test_a_worked_function_runs_and_says_yours(capsys):
    mine = types.SimpleNamespace(**WORKED)
    fn, line = chosen(capsys, "softmax", workbook=mine)
    assert inspect.unwrap(fn) is WORKED["softmax"] and line == "your softmax"
    fn, line = chosen(capsys, "attention", workbook=mine)
    assert line == "your attention"
    out, weights = fn(Q, K, V)
    want_out, want_weights = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12, atol=1e-14)


def test_a_wrong_function_gives_the_course_and_names_its_key(capsys):
    fn, line = chosen(capsys, "softmax", workbook=types.SimpleNamespace(softmax=naive_softmax))
    assert fn is course_softmax
    assert line.startswith("the course's softmax (yours: no_max_subtraction") and "see Build it in notebook 01" in line
    fn, line = chosen(capsys, "softmax", "yours", workbook=types.SimpleNamespace(softmax=naive_softmax))
    assert inspect.unwrap(fn) is naive_softmax and line.startswith("your softmax (diagnose: no_max_subtraction")


def test_in_the_notebook_that_builds_it_the_line_points_to_the_build_it_above(capsys, monkeypatch):
    wrong = types.SimpleNamespace(softmax=naive_softmax)
    pieces.this_notebook("01")                                   # 01 builds softmax: its Build it is above
    assert chosen(capsys, "softmax", workbook=wrong)[1].endswith("; see the Build it above)")
    pieces.this_notebook(6)                                      # in 06, softmax was built in 01
    assert chosen(capsys, "softmax", workbook=wrong)[1].endswith("; see Build it in notebook 01)")
    pieces.this_notebook(None)
    monkeypatch.setenv("JPY_SESSION_NAME", "/home/me/course/notebooks/01_river_bank.ipynb")   # JupyterLab's
    assert chosen(capsys, "softmax", workbook=wrong)[1].endswith("; see the Build it above)")
    for bad in ("six", "6", 100, True, 6.0):
        with pytest.raises(ValueError, match="number must be"):
            pieces.this_notebook(bad)


def test_the_course_on_request_to_compare(capsys):
    fn, line = chosen(capsys, "softmax", use="course", workbook=types.SimpleNamespace(**WORKED))
    assert fn is course_softmax and line == "the course's softmax (as asked)"
    mine, course = piece("attention", quiet=True, workbook=types.SimpleNamespace(**WORKED)), piece("attention", "course")
    assert capsys.readouterr().out == "the course's attention (as asked)\n"
    np.testing.assert_allclose(mine(Q, K, V)[1], course(Q, K, V)[1], rtol=1e-12)


def test_a_right_float32_or_loop_version_runs_as_it_is(capsys):
    fn, line = chosen(capsys, "softmax", workbook=types.SimpleNamespace(softmax=float32_softmax))
    assert inspect.unwrap(fn) is float32_softmax and line == "your softmax (in float32)"
    assert fn(np.array([1000.0, 1001.0])).dtype == np.float32
    fn, line = chosen(capsys, "softmax", workbook=types.SimpleNamespace(softmax=loop_softmax))
    assert inspect.unwrap(fn) is loop_softmax and line == "your softmax"
    # a cell whose digits need float64 keeps the course's, and says why
    fn, line = chosen(capsys, "softmax", float64=True, workbook=types.SimpleNamespace(softmax=float32_softmax))
    assert fn is course_softmax and line == "the course's softmax (yours is float32; this cell needs float64)"
    assert piece("softmax", float64=True, quiet=True,
                 workbook=types.SimpleNamespace(softmax=loop_softmax)).__wrapped__ is loop_softmax



def float32_output_only_attention(Q, K, V, mask=None):
    # right, in float32, returning the output alone (the workbook allows it)
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.float32(np.sqrt(K.shape[-1]))
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V


def test_a_float32_attention_is_told_as_float32_though_the_adapter_reads_it_as_float64(capsys):
    # The fresh review: the dtype was read after the adapter, which reads every output as float64, so a float32
    # attention printed "your attention" and ran in cells that need float64's digits (03's audit of the sources).
    workbook = types.SimpleNamespace(attention=float32_output_only_attention)
    fn, line = chosen(capsys, "attention", workbook=workbook)
    assert line == "your attention (in float32)"
    fn, line = chosen(capsys, "attention", float64=True, workbook=workbook)
    assert line == "the course's attention (yours is float32; this cell needs float64)"


def test_the_worked_multi_head_and_block_run_on_an_attention_that_returns_its_output_alone():
    # The fresh review: diagnose accepts an output-only attention in 01 and 04, and the worked
    # multi_head_attention of 05 (its solution) unpacked (heads, weights) from it: "not enough values to unpack".
    import inspect as _inspect
    from helpers.attention import multi_head_attention as course_mha
    from helpers.checkers import solutions
    namespace = {"np": np, "split_heads": solutions.split_heads, "merge_heads": solutions.merge_heads,
                 "attention": lambda Q, K, V, mask=None: solutions.attention(Q, K, V, mask)[0]}
    exec(_inspect.getsource(solutions.multi_head_attention), namespace)
    rng = np.random.default_rng(0)
    X, W = rng.normal(size=(5, 8)), rng.normal(size=(4, 8, 8))    # 5 tokens, d_model 8; W_Q, W_K, W_V, W_O
    np.testing.assert_allclose(namespace["multi_head_attention"](X, *W, 2), course_mha(X, *W, 2)[0],
                               rtol=1e-12, atol=1e-12)

def test_no_workbook_function_gives_the_course_and_says_so(capsys):
    fn, line = chosen(capsys, "softmax", workbook=types.SimpleNamespace())
    assert fn is course_softmax and line == "the course's softmax (yours: no softmax in the workbook)"


# ------------------------------------------------------------ the learner's attention, adapted

def test_an_output_only_attention_gives_its_weights_and_takes_scale(capsys):
    fn, line = chosen(capsys, "attention", workbook=types.SimpleNamespace(attention=output_only_attention))
    assert line == "your attention"
    for scale in (None, 1.0, 0.25):
        out, weights = fn(Q, K, V, scale=scale)
        want_out, want_weights = scaled_dot_product_attention(Q, K, V, scale=scale)
        np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(weights, want_weights, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="scale must be a positive finite number"):
        fn(Q, K, V, scale=-1.0)
    with pytest.raises(ValueError, match="Q and K must have the same d_k"):
        fn(Q, K[:, :2], V)


def test_a_mask_needs_a_diagnosis_with_masks(capsys):
    def no_mask_handled(Q, K, V, mask=None):
        return WORKED["attention"](Q, K, V)
    mine = types.SimpleNamespace(attention=no_mask_handled)
    fn, line = chosen(capsys, "attention", workbook=mine)
    assert line == "your attention"
    fn_masked, line = chosen(capsys, "attention", masks=True, workbook=mine)
    assert line == "the course's attention (yours with a mask: mask_ignored; see Build it in notebook 04)"
    np.testing.assert_array_equal(fn_masked(Q, K, V, mask=MASK)[1], scaled_dot_product_attention(Q, K, V, MASK)[1])
    right = piece("attention", masks=True, quiet=True, workbook=types.SimpleNamespace(**WORKED))
    np.testing.assert_allclose(right(Q, K, V, mask=MASK)[1], scaled_dot_product_attention(Q, K, V, MASK)[1])
    # a mask or a batch the cell did not ask for: refused, whoever wrote the function
    for workbook in (mine, types.SimpleNamespace()):
        unmasked = piece("attention", quiet=True, workbook=workbook)
        with pytest.raises(ValueError, match=r"masks=True"):
            unmasked(Q, K, V, mask=MASK)
        with pytest.raises(ValueError, match=r"batches=True"):
            unmasked(Q[None], K[None], V[None])


# ------------------------------------------------------------ notebook 04: the masks, and attention with masks and batches

REAL = np.array([[True, True, True, False], [True, True, False, False]])


def test_worked_masks_run_and_say_yours_with_the_course_signature(capsys):
    mine = types.SimpleNamespace(**WORKED)
    fn, line = chosen(capsys, "causal_mask", workbook=mine)
    assert line == "your causal_mask"
    for n in (1, 4, 7):
        assert np.array_equal(fn(n), course_causal_mask(n)) and fn(n).dtype == bool
    with pytest.raises(ValueError, match="n must be a positive whole number of tokens"):
        fn(0)
    fn, line = chosen(capsys, "padding_mask", workbook=mine)
    assert line == "your padding_mask"
    for flags in (REAL, REAL[0]):              # a batch, and one sentence (a batch of one for yours)
        for heads in (None, 2):
            got, want = fn(flags, num_heads=heads), course_padding_mask(flags, num_heads=heads)
            assert got.shape == want.shape and np.array_equal(got, want), (flags.shape, heads, got.shape)
    with pytest.raises(ValueError, match="num_heads must be None or a positive whole number"):
        fn(REAL, num_heads=0)
    with pytest.raises(ValueError, match="is_real"):
        fn(REAL.astype(int))
    fn, line = chosen(capsys, "attention", masks=True, batches=True, workbook=mine)
    assert line == "your attention"
    batch_mask = course_padding_mask(REAL) & np.tril(np.ones((4, 4), dtype=bool))
    Qb, Kb, Vb = rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 3)), rng.standard_normal((2, 4, 2))
    for got, want in zip(fn(Qb, Kb, Vb, mask=batch_mask), scaled_dot_product_attention(Qb, Kb, Vb, mask=batch_mask)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def causal_mask_without_diagonal(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)


def padding_mask_flags_as_they_are(is_real):
    return np.asarray(is_real, dtype=bool)


def attention_with_k_dot_t(Q, K, V, mask=None):
    scores = Q @ K.T / np.sqrt(K.shape[-1])                  # .T reverses every axis of a batch
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return WORKED["softmax"](scores) @ V


def test_wrong_masks_give_the_course_and_name_their_key(capsys):
    fn, line = chosen(capsys, "causal_mask", workbook=types.SimpleNamespace(causal_mask=causal_mask_without_diagonal))
    assert fn is course_causal_mask
    assert line == "the course's causal_mask (yours: diagonal_masked; see Build it in notebook 04)"
    fn, line = chosen(capsys, "padding_mask", workbook=types.SimpleNamespace(padding_mask=padding_mask_flags_as_they_are))
    assert fn is course_padding_mask
    assert line == "the course's padding_mask (yours: not_broadcast; see Build it in notebook 04)"
    fn, line = chosen(capsys, "causal_mask", "yours", workbook=types.SimpleNamespace(causal_mask=causal_mask_without_diagonal))
    assert line == "your causal_mask (diagnose: diagonal_masked)" and not fn(3)[0, 0]


def test_an_attention_right_in_notebook_01_but_wrong_with_a_batch_points_to_notebook_04(capsys):
    mine = types.SimpleNamespace(attention=attention_with_k_dot_t)
    assert chosen(capsys, "attention", workbook=mine)[1] == "your attention"          # notebook 01's stage
    fn, line = chosen(capsys, "attention", masks=True, batches=True, workbook=mine)
    assert line.startswith("the course's attention (yours with masks and batches: ") and \
        line.endswith("; see Build it in notebook 04)"), line
    mistake = line.split(": ", 1)[1].split(";")[0]
    assert mistake != "different" and mistake == pieces.diagnose(attention_with_k_dot_t).mistake
    np.testing.assert_array_equal(fn(Q, K, V, mask=MASK)[1], scaled_dot_product_attention(Q, K, V, MASK)[1])


# ------------------------------------------------------------ errors

def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"piece must be one of 'softmax', 'attention', .*; got 'sofmax'"):
        piece("sofmax")
    with pytest.raises(ValueError, match=r"use must be one of 'auto', 'course', 'yours'; got 'mine'"):
        piece("softmax", use="mine")
    with pytest.raises(ValueError, match=r"piece\('softmax'\) takes no masks= option"):
        piece("softmax", masks=True)
    with pytest.raises(ValueError, match=r"batches must be True or False"):
        piece("attention", batches="yes")
    with pytest.raises(ValueError, match=r"float64 must be True or False; got 64"):
        piece("softmax", float64=64)
    with pytest.raises(ValueError, match=r"piece\('causal_mask'\) takes no batches= option"):
        piece("causal_mask", batches=True)
    assert CHOICES[:7] == ("softmax", "attention", "causal_mask", "padding_mask", "split_heads", "merge_heads",
                           "multi_head_attention") and USES == ("auto", "course", "yours")
    assert "positional_encoding" in CHOICES                                                   # notebook 06


# ------------------------------------------------------------ the cache

def test_the_diagnosis_is_cached_until_the_workbook_changes(tmp_path, monkeypatch, capsys):
    calls = []
    real = pieces.diagnose
    monkeypatch.setattr(pieces, "diagnose", lambda fn, **kw: calls.append(kw) or real(fn, **kw))
    path = tmp_path / "my_workbook.py"
    path.write_text(workbook_source())
    module = module_from(path, "my_workbook")
    for _ in range(3):
        assert chosen(capsys, "softmax", workbook=module)[1] == "the course's softmax (yours: not attempted yet)"
    assert len(calls) == 1                                         # one diagnosis, then the cache
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))   # saved again, the same text
    piece("softmax", quiet=True, workbook=module)
    assert len(calls) == 1
    path.write_text(workbook_source() + "\n# a note\n")           # the text changed: diagnosed again
    piece("softmax", quiet=True, workbook=module)
    assert len(calls) == 2
    path.write_text(workbook_source() + "\n\ndef softmax(x, axis=-1):\n"
                    "    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
                    "    return e / e.sum(axis=axis, keepdims=True)\n")
    module = module_from(path, "my_workbook")                     # what %autoreload 2 does after a save
    assert chosen(capsys, "softmax", workbook=module)[1].startswith("the course's softmax (yours: neg_inf_nan")
    assert len(calls) == 3


def test_the_cache_tells_apart_two_functions_with_the_same_file(capsys):
    # both live in this test file: the function's code is part of the key
    assert chosen(capsys, "softmax", workbook=types.SimpleNamespace(softmax=naive_softmax))[1] != \
        chosen(capsys, "softmax", workbook=types.SimpleNamespace(softmax=loop_softmax))[1]


# ------------------------------------------------------------ nbval's sanitizer

def fold(text):
    for regex, replace in get_sanitize_patterns(SANITIZER.read_text()):
        text = re.sub(regex, replace, text)
    return text


@pytest.mark.parametrize("line", [
    "your softmax", "your attention", "your softmax (in float32)", "your softmax (diagnose: no_max_subtraction)",
    "the course's softmax (yours: not attempted yet)",
    "the course's softmax (yours: no_max_subtraction+neg_inf_nan; see Build it in notebook 01)",
    "the course's attention (yours with a mask: mask_ignored; see Build it in notebook 04)",
    "the course's attention (yours with masks and batches: transpose_all_axes; see Build it in notebook 04)",
    "your causal_mask", "your padding_mask", "the course's causal_mask (yours: not attempted yet)",
    "the course's padding_mask (yours: not_broadcast; see Build it in notebook 04)",
    "the course's softmax (yours is float32; this cell needs float64)",
    "the course's softmax (yours: no softmax in the workbook)",
    "your split_heads", "your multi_head_attention", "the course's merge_heads (yours: not attempted yet)",
    "the course's multi_head_attention (yours: scale_by_d_model; see Build it in notebook 05)",
    "your positional_encoding", "the course's positional_encoding (yours: exponent_i_over_d; see Build it in notebook 06)",
    "the course's positional_encoding (yours: exponent_i_over_d; see the Build it above)",
    "the course's positional_encoding (yours is float32; this cell needs float64)"])
def test_the_sanitizer_folds_every_whose_line_to_one_text(line):
    name = line.split()[1] if line.startswith("your") else line.split()[2]
    assert fold(f"above\n{line}\nweights: [0.132 0.325]\n") == f"above\n[{name}: yours or the course's]\nweights: [0.132 0.325]\n"


@pytest.mark.parametrize("text", [
    "the course's softmax (as asked)", "your softmax (0.269)", "your softmax [0.269 0.731]",
    "the course's softmax (yours: 0.269)", "your softmax: 0.5", "softmax of the scaled scores: [0.132 0.325]",
    "your answer", "print('your softmax')", "the course's softmax (yours: not attempted yet) 0.5"])
def test_the_sanitizer_folds_nothing_else_and_no_number(text):
    assert fold(text) == text


def test_the_sanitizer_knows_every_piece_the_accessor_serves():
    regex = get_sanitize_patterns(SANITIZER.read_text())[0][0]
    named = re.findall(r"\((\w+(?:\|\w+)*)\)", regex)
    assert named and all(set(group.split("|")) == set(CHOICES) for group in named)


def test_every_nbval_run_of_the_project_passes_the_sanitizer():
    runs = {"Makefile": (ROOT / "Makefile").read_text()}
    runs |= {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / "tests").glob("*.py") if p.name != "test_pieces.py"}
    using = {name: text for name, text in runs.items() if re.search(r"""["']?--nbval["']?[,\s]""", text)}
    assert "Makefile" in using and "tests/test_other_blas.py" in using and "tests/test_student_edition.py" in using
    for name, text in using.items():
        assert "--nbval-sanitize-with" in text, f"{name} runs nbval without nbval_sanitize.cfg"
    assert "nbval_sanitize.cfg" in re.search(r"^test:.*\n\t(.*)$", runs["Makefile"], re.M).group(1)


# ------------------------------------------------------------ notebook 05's pieces: the heads

HEADS = ("split_heads", "merge_heads", "multi_head_attention")
X6 = rng.standard_normal((4, 6))
W6 = [rng.standard_normal((6, 6)) for _ in range(4)]


def reshape_only_split(x, num_heads):
    *lead, n, d_model = x.shape
    return x.reshape(*lead, num_heads, n, d_model // num_heads)       # no transpose: tokens mixed


def d_model_scaled_multi_head(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    split = WORKED["split_heads"]
    Q, K, V = (split(X @ W, num_heads) for W in (W_Q, W_K, W_V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(X.shape[-1])           # sqrt(d_model), not sqrt(d_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return WORKED["merge_heads"](e / e.sum(axis=-1, keepdims=True) @ V) @ W_O


def pair_multi_head(X, W_Q, W_K, W_V, W_O, num_heads, mask=None):
    from helpers.attention import multi_head_attention
    return multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads, mask=mask)


def test_the_heads_stubs_give_the_course_functions_not_attempted_yet(tmp_path, capsys):
    import helpers.attention as course
    (tmp_path / "stubs.py").write_text(workbook_source())
    stubs = module_from(tmp_path / "stubs.py", "stubs_for_heads")
    for name in HEADS:
        fn, line = chosen(capsys, name, workbook=stubs)
        assert fn is getattr(course, name) and line == f"the course's {name} (yours: not attempted yet)"


def test_the_worked_heads_run_and_say_yours(capsys):
    from helpers.attention import merge_heads, multi_head_attention, split_heads
    mine = types.SimpleNamespace(**WORKED)
    split, line = chosen(capsys, "split_heads", workbook=mine)
    assert line == "your split_heads"
    np.testing.assert_array_equal(split(X6, 3), split_heads(X6, 3))
    merge, line = chosen(capsys, "merge_heads", workbook=mine)
    assert line == "your merge_heads"
    np.testing.assert_array_equal(merge(split_heads(X6, 3)), X6)
    multi, line = chosen(capsys, "multi_head_attention", workbook=mine)
    assert line == "your multi_head_attention"
    for num_heads in (1, 2, 3, 6):      # the worked one returns the output only: its weights are read back from it
        out, weights = multi(X6, *W6, num_heads)
        want_out, want_weights = multi_head_attention(X6, *W6, num_heads)
        np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(weights, want_weights, rtol=1e-10, atol=1e-13)
    X = rng.standard_normal((2, 4, 6))
    mask = np.tril(np.ones((4, 4), dtype=bool))
    out, weights = multi(X, *W6, 3, mask=mask)
    want_out, want_weights = multi_head_attention(X, *W6, 3, mask=mask)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-10, atol=1e-13)
    assert np.all(weights[..., ~mask] == 0)                             # a hidden key's weight is 0, noise folded


def test_a_wrong_head_piece_gives_the_course_and_names_its_key(capsys):
    from helpers.attention import multi_head_attention, split_heads
    fn, line = chosen(capsys, "split_heads", workbook=types.SimpleNamespace(split_heads=reshape_only_split))
    assert fn is split_heads
    assert line == "the course's split_heads (yours: reshape_without_transpose; see Build it in notebook 05)"
    fn, line = chosen(capsys, "multi_head_attention",
                      workbook=types.SimpleNamespace(multi_head_attention=d_model_scaled_multi_head))
    assert fn is multi_head_attention
    assert line == "the course's multi_head_attention (yours: scale_by_d_model; see Build it in notebook 05)"


def test_the_learner_multi_head_adapted(capsys):
    from helpers.attention import multi_head_attention
    multi = piece("multi_head_attention", quiet=True, workbook=types.SimpleNamespace(multi_head_attention=pair_multi_head))
    out, weights = multi(X6, *W6, 2)                                    # (output, weights) of yours: as they are
    assert np.array_equal(weights, multi_head_attention(X6, *W6, 2)[1])
    worked = piece("multi_head_attention", quiet=True, workbook=types.SimpleNamespace(**WORKED))
    with pytest.raises(ValueError, match=r"rows of X are independent"):
        worked(np.vstack([X6[:3], X6[0] + X6[1]]), *W6, 2)           # token 3 = token 0 + token 1
    with pytest.raises(ValueError, match=r"num_kv_heads"):
        worked(X6, *W6, 2, num_kv_heads=1)
    with pytest.raises(ValueError, match=r"num_heads must divide d_model = 6"):
        worked(X6, *W6, 4)
    with pytest.raises(ValueError, match=r"W_O"):
        worked(X6, *W6[:3], np.eye(5), 2)
    assert capsys.readouterr().out == ""


# ------------------------------------------------------------ what yours returns, read as diagnose reads it

def test_a_right_function_returning_a_list_or_three_things_runs_the_cells_as_arrays(tmp_path):
    """A softmax that returns .tolist() and an attention that returns (output, weights, scores) are right for
    diagnose; the cells then get arrays from them (a second review found them handed on as they were)."""
    source = workbook_source() + '''

def softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return (e / np.sum(e, axis=axis, keepdims=True)).tolist()


def attention(Q, K, V, mask=None):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total == 0, 1.0, total)
    return w @ V, w, s
'''
    (tmp_path / "lists.py").write_text(source)
    wb = module_from(tmp_path / "lists.py", "lists_for_pieces")
    sm = piece("softmax", workbook=wb, quiet=True)
    x = np.array([[0.0, 1.0, 2.0], [3.0, 3.0, 3.0]])
    assert isinstance(sm(x), np.ndarray) and np.allclose(sm(x), course_softmax(x))
    at = piece("attention", workbook=wb, quiet=True)
    Q = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 2.0]])
    out, w = at(Q, Q, Q)
    want_out, want_w = scaled_dot_product_attention(Q, Q, Q)
    assert np.allclose(out, want_out) and np.allclose(w, want_w)


# ------------------------------------------------------------ notebook 06's piece: positional_encoding

def exponent_i_over_d(n, d_model):
    pos, i = np.arange(n)[:, None], np.arange(d_model // 2)[None, :]
    angle = pos / 10000.0 ** (i / d_model)                              # i, not 2i: the trap of notebook 06
    pe = np.empty((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def test_the_positions_stub_gives_the_course_function_not_attempted_yet(tmp_path, capsys):
    from helpers.positions import sinusoidal_positional_encoding
    (tmp_path / "stubs.py").write_text(workbook_source())
    stubs = module_from(tmp_path / "stubs.py", "stubs_for_positions")
    fn, line = chosen(capsys, "positional_encoding", workbook=stubs)
    assert fn is sinusoidal_positional_encoding and line == "the course's positional_encoding (yours: not attempted yet)"


def test_the_worked_positional_encoding_runs_and_says_yours(capsys):
    from helpers.positions import sinusoidal_positional_encoding
    fn, line = chosen(capsys, "positional_encoding", workbook=types.SimpleNamespace(**WORKED))
    assert inspect.unwrap(fn) is WORKED["positional_encoding"] and line == "your positional_encoding"
    for n, d_model in ((64, 64), (4, 2), (1, 384)):
        np.testing.assert_allclose(fn(n, d_model), sinusoidal_positional_encoding(n, d_model), rtol=0, atol=1e-12)
    for args, name in (((0, 4), "n"), ((4, 5), "d_model"), ((2.5, 4), "n")):   # the course's checks, yours or not
        with pytest.raises(ValueError, match=f"^{name} must be"):
            fn(*args)
    listed = piece("positional_encoding", quiet=True, workbook=types.SimpleNamespace(
        positional_encoding=lambda n, d_model: WORKED["positional_encoding"](n, d_model).tolist()))
    assert isinstance(listed(3, 4), np.ndarray)                        # a list is read as an array, as diagnose reads it


def test_a_wrong_positional_encoding_gives_the_course_and_names_its_key(capsys):
    from helpers.positions import sinusoidal_positional_encoding
    fn, line = chosen(capsys, "positional_encoding", workbook=types.SimpleNamespace(positional_encoding=exponent_i_over_d))
    assert fn is sinusoidal_positional_encoding
    assert line == "the course's positional_encoding (yours: exponent_i_over_d; see Build it in notebook 06)"


def test_a_float32_positional_encoding_runs_but_gives_way_where_a_cell_needs_float64(capsys):
    from helpers.positions import sinusoidal_positional_encoding
    mine = types.SimpleNamespace(positional_encoding=lambda n, d_model: WORKED["positional_encoding"](n, d_model)
                                 .astype(np.float32))
    fn, line = chosen(capsys, "positional_encoding", workbook=mine)
    assert line == "your positional_encoding (in float32)" and fn(3, 4).dtype == np.float32
    fn, line = chosen(capsys, "positional_encoding", float64=True, workbook=mine)
    assert fn is sinusoidal_positional_encoding
    assert line == "the course's positional_encoding (yours is float32; this cell needs float64)"


# ------------------------------------------------------------ notebook 08's pieces: the online step, tiled attention, the KV cache

TILING = ("online_softmax_update", "tiled_attention", "kv_cache_step")
QT, KT, VT = rng.standard_normal((2, 7, 4)), rng.standard_normal((2, 7, 4)), rng.standard_normal((2, 7, 3))


def step_acc_not_rescaled(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    p = np.exp(scores - shift[..., None])
    return new_max, np.exp(running_max - shift) * running_sum + p.sum(axis=-1), acc + p @ V_block   # acc as it was


def tiled_last_block_dropped(Q, K, V, block_size):
    n_k = K.shape[-2] // block_size * block_size                   # the shorter last block left out
    return WORKED["tiled_attention"](Q, K[..., :n_k, :], V[..., :n_k, :], block_size)


def kv_new_token_forgotten(cache_keys, cache_values, q, k, v):
    if len(cache_keys) == 0:
        return np.zeros(len(v))
    scores = cache_keys @ q / np.sqrt(q.shape[-1])
    e = np.exp(scores - scores.max())
    return e / e.sum() @ cache_values


def test_the_tiling_stubs_give_the_course_functions_not_attempted_yet(tmp_path, capsys):
    import helpers.tiling as course
    (tmp_path / "stubs.py").write_text(workbook_source())
    stubs = module_from(tmp_path / "stubs.py", "stubs_for_tiling")
    for name, shown, theirs in zip(TILING, ("online_softmax_update", "tiled_attention", "KVCache"),
                                   (course.online_softmax_update, course.tiled_attention, course.KVCache)):
        fn, line = chosen(capsys, name, workbook=stubs)
        assert fn is theirs and line == f"the course's {shown} (yours: not attempted yet)"     # what runs: KVCache
    assert set(TILING) <= set(CHOICES)


def test_the_worked_tiling_pieces_run_and_say_yours_with_the_course_signatures(capsys):
    import helpers.tiling as course
    mine = types.SimpleNamespace(**WORKED)
    step, line = chosen(capsys, "online_softmax_update", workbook=mine)
    assert line == "your online_softmax_update"
    start = (np.full((2, 7), -np.inf), np.zeros((2, 7)), np.zeros((2, 7, 3)))
    scores = QT @ np.swapaxes(KT, -1, -2) / 2.0
    got = want = start
    for k0 in (0, 3, 6):                                          # three blocks, the last one shorter
        got = step(*got, scores[..., k0:k0 + 3], VT[..., k0:k0 + 3, :])
        want = course.online_softmax_update(*want, scores[..., k0:k0 + 3], VT[..., k0:k0 + 3, :])
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="same b keys"):
        step(*start, scores[..., :3], VT[..., :2, :])
    tiled, line = chosen(capsys, "tiled_attention", workbook=mine)
    assert line == "your tiled_attention"
    for b, scale in ((1, None), (3, None), (7, 0.25), (20, 1.0)):
        np.testing.assert_allclose(tiled(QT, KT, VT, b, scale=scale), course.tiled_attention(QT, KT, VT, b, scale=scale),
                                   rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(tiled(QT[0], KT, VT, 2), course.tiled_attention(QT[0], KT, VT, 2), rtol=1e-12)  # broadcast
    with pytest.raises(ValueError, match=r"takes no mask.*use='course'"):
        tiled(QT, KT, VT, 2, mask=np.ones((7, 7), dtype=bool))
    with pytest.raises(ValueError, match="block_size must be a positive whole number"):
        tiled(QT, KT, VT, 0)
    Cache, line = chosen(capsys, "kv_cache_step", workbook=mine)
    assert line == "your kv_cache_step" and issubclass(Cache, course.KVCache)
    yours, theirs = Cache(), course.KVCache()
    for q, k, v in zip(QT[0], KT[0], VT[0]):
        yours.append(k, v)
        theirs.append(k, v)
        for scale in (None, 0.5):
            for g, w in zip(yours.attend(q, scale=scale), theirs.attend(q, scale=scale)):   # output, and its weights
                np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    assert len(yours) == 7 and yours.nbytes == theirs.nbytes and yours.keys.shape == (7, 4)
    with pytest.raises(ValueError, match="the cache is empty"):
        Cache().attend(QT[0, 0])


def test_an_in_place_step_of_yours_leaves_the_callers_arrays_alone(capsys):
    from wrong_functions import online_softmax_update_in_place   # tests/ is on the path under pytest
    mine = types.SimpleNamespace(online_softmax_update=online_softmax_update_in_place)
    step, line = chosen(capsys, "online_softmax_update", workbook=mine)
    assert line == "your online_softmax_update"
    m, l, acc = np.full(7, -np.inf), np.zeros(7), np.zeros((7, 3))
    new = step(m, l, acc, QT[0] @ KT[0].T, VT[0])
    assert np.isneginf(m).all() and not l.any() and not acc.any() and np.all(np.isfinite(new[0]))


def test_wrong_tiling_pieces_give_the_course_and_name_their_key(capsys):
    import helpers.tiling as course
    for name, fn, key, theirs in [
            ("online_softmax_update", step_acc_not_rescaled, "acc_not_rescaled", course.online_softmax_update),
            ("tiled_attention", tiled_last_block_dropped, "last_block_dropped", course.tiled_attention),
            ("kv_cache_step", kv_new_token_forgotten, "new_token_not_attended", course.KVCache)]:
        got, line = chosen(capsys, name, workbook=types.SimpleNamespace(**{name: fn}))
        assert got is theirs, line
        mistake = pieces.diagnose(fn, piece=name).mistake
        assert mistake not in (None, "different") and (key is None or mistake == key), mistake
        shown = "KVCache" if name == "kv_cache_step" else name      # the course's step is helpers.tiling's KVCache
        assert line == f"the course's {shown} (yours: {mistake}; see Build it in notebook 08)"
    pieces.this_notebook("08")                                   # in 08 itself: the Build it above
    assert chosen(capsys, "kv_cache_step", workbook=types.SimpleNamespace(kv_cache_step=kv_new_token_forgotten))[1] \
        == "the course's KVCache (yours: new_token_not_attended; see the Build it above)"
    assert chosen(capsys, "kv_cache_step", "course")[1] == "the course's KVCache (as asked)"


@pytest.mark.parametrize("line", [
    "your online_softmax_update", "your tiled_attention", "your kv_cache_step",
    "the course's tiled_attention (yours: not attempted yet)",
    "the course's online_softmax_update (yours: acc_not_rescaled; see Build it in notebook 08)",
    "the course's KVCache (yours: new_token_not_attended; see Build it in notebook 08)",
    "the course's KVCache (yours: not attempted yet)", "the course's KVCache (yours is float32; this cell needs float64)"])
def test_the_sanitizer_folds_the_tiling_whose_lines(line):
    name = line.split()[1] if line.startswith("your") else line.split()[2]
    name = "kv_cache_step" if name == "KVCache" else name     # the course's KVCache folds as the step's line
    assert fold(f"{line}\nm = 1.061\n") == f"[{name}: yours or the course's]\nm = 1.061\n"


# ------------------------------------------------------------ notebook 09's piece: softmax_backward

def missing_sum_backward(weights, grad_weights):
    return np.asarray(weights) * np.asarray(grad_weights)          # w * g: the sum term dropped


def test_softmax_backward_stubs_worked_and_wrong(tmp_path, capsys):
    from helpers.saturation import softmax_jacobian
    from helpers.training import softmax_backward as course_backward
    assert "softmax_backward" in CHOICES
    (tmp_path / "stubs.py").write_text(workbook_source())
    fn, line = chosen(capsys, "softmax_backward", workbook=module_from(tmp_path / "stubs.py", "stubs_for_backward"))
    assert fn is course_backward and line == "the course's softmax_backward (yours: not attempted yet)"
    fn, line = chosen(capsys, "softmax_backward", workbook=types.SimpleNamespace(**WORKED))
    assert line == "your softmax_backward"
    w = course_softmax(rng.standard_normal((3, 5)))
    g = rng.standard_normal((3, 5))
    want = np.stack([softmax_jacobian(row) @ d for row, d in zip(w, g)])
    np.testing.assert_allclose(fn(w, g), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(fn(w[0].tolist(), g[0].tolist()), want[0], rtol=1e-12, atol=1e-14)   # lists in
    with pytest.raises(ValueError, match="same shape"):             # the course's checks, before yours runs
        fn(w, g[:, :4])
    with pytest.raises(ValueError, match="weights must be non-negative"):
        fn(-w, g)
    fn, line = chosen(capsys, "softmax_backward", workbook=types.SimpleNamespace(softmax_backward=missing_sum_backward))
    assert fn is course_backward
    assert line == "the course's softmax_backward (yours: missing_sum_term; see Build it in notebook 09)"
    assert fold(line) == "[softmax_backward: yours or the course's]"


# ------------------------------------------------------------ notebook 10's piece: rope (workbook.apply_rope)

def rope_i_over_d(x, positions=None):
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2:]
    m = np.arange(n) if positions is None else np.asarray(positions, dtype=float)
    angle = m[:, None] * 10000.0 ** (-np.arange(d // 2) / d)          # i / d: the later pairs turn too fast
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * np.cos(angle) - x[..., 1::2] * np.sin(angle)
    out[..., 1::2] = x[..., 0::2] * np.sin(angle) + x[..., 1::2] * np.cos(angle)
    return out


def test_rope_stubs_worked_and_wrong(tmp_path, capsys):
    from helpers.positions import apply_rope
    assert "rope" in CHOICES
    (tmp_path / "stubs.py").write_text(workbook_source())
    fn, line = chosen(capsys, "rope", workbook=module_from(tmp_path / "stubs.py", "stubs_for_rope"))
    assert fn is apply_rope and line == "the course's rope (yours: not attempted yet)"
    fn, line = chosen(capsys, "rope", workbook=types.SimpleNamespace(apply_rope=WORKED["rope"]))
    assert line == "your rope"
    x = rng.standard_normal((2, 5, 8))
    np.testing.assert_allclose(fn(x), apply_rope(x), rtol=1e-12, atol=1e-14)
    positions = [0.0, 1.5, 3.0, 100.0, 1000.5]                         # fractions, as notebook 10 passes them
    np.testing.assert_allclose(fn(x, positions), apply_rope(x, positions), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fn(x[0].tolist()), apply_rope(x[0]), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="even"):                      # the course's checks, before yours runs
        fn(x[..., :7])
    with pytest.raises(ValueError, match="positions must have one entry per token"):
        fn(x, [0.0, 1.0])
    with pytest.raises(ValueError, match=r"takes no base .*use='course'"):
        fn(x, base=500.0)
    fn, line = chosen(capsys, "rope", workbook=types.SimpleNamespace(apply_rope=rope_i_over_d))
    assert fn is apply_rope
    assert line == "the course's rope (yours: frequency_exponent; see Build it in notebook 10)"
    assert fold(line) == "[rope: yours or the course's]"
    assert chosen(capsys, "rope", workbook=types.SimpleNamespace())[1] == "the course's rope (yours: no apply_rope in the workbook)"


# ------------------------------------------------------------ notebook 07's piece: layer_norm

def layer_norm_ddof1(x, gamma, beta, eps=1e-12):
    mu = x.mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps) * gamma + beta


def test_layer_norm_stubs_worked_and_wrong(tmp_path, capsys):
    from helpers.depth import layer_norm, stack_residuals
    assert "layer_norm" in CHOICES
    (tmp_path / "stubs.py").write_text(workbook_source())
    fn, line = chosen(capsys, "layer_norm", workbook=module_from(tmp_path / "stubs.py", "stubs_for_layer_norm"))
    assert fn is layer_norm and line == "the course's layer_norm (yours: not attempted yet)"
    seen = []

    def worked(x, gamma, beta, eps=1e-12):
        seen.append(eps)
        return WORKED["layer_norm"](x, gamma, beta, eps)
    fn, line = chosen(capsys, "layer_norm", workbook=types.SimpleNamespace(layer_norm=worked))
    assert line == "your layer_norm"
    x = rng.standard_normal((2, 5, 8))
    gamma, beta = rng.uniform(0.5, 2, 8), rng.standard_normal(8)
    seen.clear()
    np.testing.assert_allclose(fn(x), layer_norm(x), rtol=1e-12, atol=1e-12)   # no gain, no bias: ones and zeros
    np.testing.assert_allclose(fn(x, gamma, beta, eps=0.5), layer_norm(x, gamma, beta, 0.5), rtol=1e-12)
    assert seen == [1e-12, 0.5]                                                 # the eps asked for reaches yours
    np.testing.assert_allclose(fn(x[0].tolist()), layer_norm(x[0]), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="gamma must have shape"):              # the course's checks, before yours
        fn(x, gamma[:4])
    with pytest.raises(ValueError, match="eps must be a positive"):
        fn(x, eps=-1.0)
    X = rng.standard_normal((6, 8))                  # notebook 07's stacks run on it, the same numbers
    np.testing.assert_allclose(stack_residuals(X, 3, "pre-LN", 2, layer_norm=fn).residual,
                               stack_residuals(X, 3, "pre-LN", 2).residual, rtol=1e-9)
    fn, line = chosen(capsys, "layer_norm", workbook=types.SimpleNamespace(layer_norm=layer_norm_ddof1))
    assert fn is layer_norm
    assert line == "the course's layer_norm (yours: unbiased_variance; see Build it in notebook 07)"
    assert fold(line) == "[layer_norm: yours or the course's]"
    fn, line = chosen(capsys, "layer_norm", use="yours", workbook=types.SimpleNamespace(layer_norm=layer_norm_ddof1))
    assert line == "your layer_norm (diagnose: unbiased_variance)" and not np.allclose(fn(x), layer_norm(x))
