"""Notebooks 01 to 11 but 00 run on the learner's own pieces once they are right (issue 33, section 1: derive, build, use).

Each notebook runs twice in a fresh kernel, in a copy of notebooks/ whose workbook.py is filled in: first
with the worked pieces it uses (helpers.checkers.solutions.WORKED), then with one piece deliberately wrong
beside the worked others (01 and 03: a softmax that skips the maximum, no_max_subtraction; 02, which builds nothing
and runs 01's softmax and attention: an attention without the division by sqrt(d_k), no_scaling; 04: a causal mask that
hides the diagonal, diagonal_masked; 05: a split_heads that reshapes without the transpose,
reshape_without_transpose, which the worked multi_head_attention calls, so it gives way too; 06: a positional
encoding with the exponent i / d_model, exponent_i_over_d; 07: a layer_norm whose variance divides by
d_model - 1, unbiased_variance; 08: an online_softmax_update that leaves acc
unrescaled, acc_not_rescaled, which the worked tiled_attention calls; 09: a softmax_backward that returns
w * g, missing_sum_term; 10: an apply_rope with i / d, frequency_exponent; 11: an attention that forgets the
division by sqrt(d_k), no_scaling, in the real model from its first run on). Each cell that runs a piece comes after that piece's Build it (in
this notebook, or an earlier one: 02, 03 and 11 build nothing and run earlier notebooks' pieces, 04 runs 01's softmax) and prints one line saying whose ran: "your
softmax" once it is right, the course's naming the mistake otherwise. Either way every cell (but the
build cells, whose verdict is the point, and the cells nbval does not compare) prints what is stored, once the whose-lines are folded as nbval
folds them (nbval_sanitize.cfg): the learner's right pieces give the notebook's numbers to its printed digits.
Notebook 11 builds nothing with diagnose: its judges of the learner's attention and encoder block
(run_with_your_attention, check_your_block: VERDICT) are the cells whose text is their verdict. It runs in
about 7 s in each of its two runs on a quiet machine, without the explorers' static forms (which would add
about 25 s: the real model's explorer stores 72 heads).
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbconvert.preprocessors import CoalesceStreamsPreprocessor
from nbval.plugin import get_sanitize_patterns

from helpers.checkers.solutions import WORKED, workbook_source
from helpers.course import BUILT_IN
from helpers.explorers.static import STATIC_FORMS_ENV

ROOT = Path(__file__).resolve().parents[1]
FOLDS = get_sanitize_patterns((ROOT / "nbval_sanitize.cfg").read_text())
BUILD = re.compile(r"diagnose\(\s*workbook\.(\w+)")
VERDICT = re.compile(r"\b(?:run_with_your_attention|check_your_block)\(\s*workbook\.")   # notebook 11's judges
USE = re.compile(r"""piece\(\s*["'](\w+)["']([^()\n]*)\)""")
CELL_TIMEOUT = 120      # seconds one cell may take: the whole notebook runs in a few seconds
# as tools/execute_notebooks.py runs it (the Makefile unsets MPLBACKEND: Agg would drop the figures' outputs)
KERNEL_ENV = {**{k: v for k, v in os.environ.items() if k != "MPLBACKEND"}, STATIC_FORMS_ENV: "1"}

NO_MAX = '''

def softmax(x, axis=-1):
    e = np.exp(x)                                   # no maximum subtracted: overflows at [1000, 1001]
    return e / e.sum(axis=axis, keepdims=True)
'''
NO_DIAGONAL = '''

def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)   # the diagonal hidden: no token reads itself
'''
RESHAPE_ONLY = '''

def split_heads(x, num_heads):
    *lead, n, d_model = x.shape
    return x.reshape(*lead, num_heads, n, d_model // num_heads)   # no swap of the axes: tokens mixed
'''
HEADS = ("split_heads", "merge_heads", "multi_head_attention")
I_OVER_D = '''

def positional_encoding(n, d_model):
    pos, i = np.arange(n)[:, None], np.arange(d_model // 2)[None, :]
    angles = pos / 10000 ** (i / d_model)                # i, not 2i: the trap notebook 06 names
    pe = np.zeros((n, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angles), np.cos(angles)
    return pe
'''
ACC_KEPT = '''

def online_softmax_update(running_max, running_sum, acc, scores, V_block):
    new_max = np.maximum(running_max, scores.max(axis=-1))
    shift = np.where(np.isneginf(new_max), 0.0, new_max)
    p = np.exp(scores - shift[..., None])
    return new_max, np.exp(running_max - shift) * running_sum + p.sum(axis=-1), acc + p @ V_block   # acc not rescaled
'''
UNBIASED = '''

def layer_norm(x, gamma, beta, eps=1e-12):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, ddof=1, keepdims=True)     # ddof=1: divided by d_model - 1 (torch's x.var() default)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta
'''
TILING = ("online_softmax_update", "tiled_attention", "kv_cache_step")
ROPE_I_OVER_D = '''

def apply_rope(x, positions=None):
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2:]
    m = np.arange(n) if positions is None else np.asarray(positions, dtype=float)
    angle = m[:, None] * 10000.0 ** (-np.arange(d // 2) / d)      # i / d, not 2i / d: later pairs turn too fast
    out = np.empty(x.shape)
    out[..., 0::2] = x[..., 0::2] * np.cos(angle) - x[..., 1::2] * np.sin(angle)
    out[..., 1::2] = x[..., 0::2] * np.sin(angle) + x[..., 1::2] * np.cos(angle)
    return out
'''
WORKBOOK_NAME = {"rope": "apply_rope"}      # a piece whose workbook function has another name (notebook 10)
COURSE_NAME = {"kv_cache_step": "KVCache"}   # and one whose course version has (08's step runs in helpers.tiling's KVCache)
MISSING_SUM = '''

def softmax_backward(weights, grad_weights):
    return weights * grad_weights                   # w * g: the sum term dropped (notebook 09's trap)
'''


NO_SCALE = '''

def attention(Q, K, V, mask=None):
    scores = Q @ np.swapaxes(K, -1, -2)              # no division by sqrt(d_k): the trap notebook 01 names
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ V, weights
'''


class Case:
    """A notebook, the pieces its Build it sections build, those it runs (built here or earlier), and one wrong piece."""

    def __init__(self, name, built, used, wrong, wrong_source, wrong_line, gives_way=(), static_forms=True):
        self.path = ROOT / "notebooks" / name
        self.static_forms = static_forms    # False: the explorers store no static form (their cells are not compared)
        self.built, self.used, self.wrong, self.wrong_source, self.wrong_line = built, used, wrong, wrong_source, wrong_line
        self.gives_way = set(gives_way)     # worked pieces that call the wrong one, and so give way too

    def __repr__(self):
        return self.path.stem


CASES = [
    Case("01_river_bank.ipynb", {"softmax", "attention"}, {"softmax", "attention"}, "softmax", NO_MAX,
         ("the course's softmax (yours: no_max_subtraction", "; see the Build it above)")),
    Case("02_two_senses.ipynb", set(), {"softmax", "attention"}, "attention", NO_SCALE,
         ("the course's attention (yours: no_scaling", "; see Build it in notebook 01)")),
    Case("03_scaling.ipynb", set(), {"softmax", "attention"}, "softmax", NO_MAX,
         ("the course's softmax (yours: no_max_subtraction", "; see Build it in notebook 01)")),
    Case("04_masking.ipynb", {"causal_mask", "attention", "padding_mask"},
         {"softmax", "causal_mask", "attention", "padding_mask"}, "causal_mask", NO_DIAGONAL,
         ("the course's causal_mask (yours: diagonal_masked", "; see the Build it above)")),
    Case("05_multi_head.ipynb", set(HEADS), {"attention", *HEADS}, "split_heads", RESHAPE_ONLY,
         ("the course's split_heads (yours: reshape_without_transpose", "; see the Build it above)"),
         gives_way={"multi_head_attention"}),
    Case("06_order_and_position.ipynb", {"positional_encoding"}, {"attention", "positional_encoding"}, "positional_encoding", I_OVER_D,
         ("the course's positional_encoding (yours: exponent_i_over_d", "; see the Build it above)")),
    Case("07_limits.ipynb", {"layer_norm"}, {"layer_norm"}, "layer_norm", UNBIASED,
         ("the course's layer_norm (yours: unbiased_variance", "; see the Build it above)")),
    Case("08_cost_and_tiling.ipynb", set(TILING), {"attention", *TILING}, "online_softmax_update", ACC_KEPT,
         ("the course's online_softmax_update (yours: acc_not_rescaled", "; see the Build it above)"),
         gives_way={"tiled_attention"}),
    Case("09_learning.ipynb", {"softmax_backward"}, {"softmax_backward"}, "softmax_backward", MISSING_SUM,
         ("the course's softmax_backward (yours: missing_sum_term", "; see the Build it above)")),
    Case("10_current_models.ipynb", {"apply_rope"}, {"rope"}, "rope", ROPE_I_OVER_D,
         ("the course's rope (yours: frequency_exponent", "; see the Build it above)")),
    Case("11_real_model.ipynb", set(), {"attention"}, "attention", NO_SCALE,
         ("the course's attention (yours: no_scaling", "; see Build it in notebook 01)"), static_forms=False),
]


def worked(*pieces):
    return "".join("\n\n" + inspect.getsource(WORKED[p]) for p in pieces)


def run(tmp_path, notebook, workbook, static_forms=True):
    """``notebook`` as a fresh kernel prints it beside ``workbook`` (the text of a workbook.py); static_forms=False
    runs it without the explorers' static forms (notebook 11's stores 72 heads of the real model: 25 s more)."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copy(notebook, folder / notebook.name)
    (folder / "workbook.py").write_text(workbook_source() + workbook)
    nb = nbformat.read(folder / notebook.name, as_version=4)
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(folder)}}).execute(
        env=KERNEL_ENV if static_forms else {k: v for k, v in KERNEL_ENV.items() if k != STATIC_FORMS_ENV})
    nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})   # as tools/execute_notebooks.py stores it
    return nb


def text(cell):
    """A code cell's printed text and the text/plain of what it showed, as nbval compares them."""
    return "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


def fold(s):
    for regex, replace in FOLDS:
        s = re.sub(regex, replace, s)
    return s


@pytest.fixture(scope="module", params=CASES, ids=repr)
def case(request):
    return request.param


@pytest.fixture(scope="module")
def stored(case):
    return nbformat.read(case.path, as_version=4)


@pytest.fixture(scope="module")
def right(case, tmp_path_factory):
    return run(tmp_path_factory.mktemp("right"), case.path, worked(*sorted(case.used | {"softmax"})), case.static_forms)


@pytest.fixture(scope="module")
def one_wrong(case, tmp_path_factory):
    return run(tmp_path_factory.mktemp("wrong"), case.path,
               worked(*sorted((case.used | {"softmax"}) - {case.wrong})) + case.wrong_source, case.static_forms)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def uses(nb):
    """(index, the pieces it asks for in order, cell) of each code cell that asks piece(...) for a piece (a quiet
    one prints no line, and is left out)."""
    found = [(i, [name for name, rest in USE.findall(c.source) if not re.search(r"quiet\s*=\s*True", rest)], c)
             for i, c in enumerate(code_cells(nb))]
    return [(i, names, c) for i, names, c in found if names]


def test_every_use_comes_after_its_build_and_every_build_before_its_first_use(case, stored):
    built = {name: i for i, c in enumerate(code_cells(stored)) for name in BUILD.findall(c.source)}
    assert set(built) == case.built
    found = uses(stored)
    assert {name for _, names, _ in found for name in names} == case.used
    number = case.path.name[:2]
    for i, names, _ in found:
        for name in (WORKBOOK_NAME.get(n, n) for n in names):
            if name in built:
                assert i > built[name], f"code cell {i} uses {name} before its Build it (code cell {built[name]})"
            else:                                      # built in an earlier notebook
                assert re.search(r"notebook (\d\d)", BUILT_IN[name]).group(1) < number, name
    # the stored outputs are the stubs': each of those cells says so in its first lines, one a piece
    for _, names, cell in found:
        assert text(cell).splitlines()[:len(names)] == [f"the course's {COURSE_NAME.get(n, n)} (yours: not attempted yet)"
                                                        for n in names], \
            text(cell)


def test_right_pieces_run_the_cells_after_their_build_and_print_the_stored_numbers(case, stored, right):
    for i, names, cell in uses(right):
        assert text(cell).splitlines()[:len(names)] == [f"your {n}" for n in names], (i, text(cell))
    assert_same_numbers(stored, right)
    verdicts = [text(c) for c in code_cells(right) if BUILD.search(c.source)]
    assert bool(verdicts) == bool(case.built) and all(v.startswith("Correct!") for v in verdicts), verdicts
    if case.path.name == "11_real_model.ipynb":       # the worked attention in the real model: the course's numbers
        judged = next(c for c in code_cells(right) if "run_with_your_attention(workbook.attention)" in c.source)
        assert "agree with the course's own" in text(judged) and "less than 1e-09" in text(judged), text(judged)
    said = {"03_scaling.ipynb": ("dk_explorer(", "Computed by your attention."),
            "04_masking.ipynb": ("mask_explorer(", "Computed by your attention and causal_mask."),
            "05_multi_head.ipynb": ("heads_explorer(", "Computed by your multi_head_attention."),
            "11_real_model.ipynb": ("real_model_explorer(", "Computed by your attention.")}
    if case.path.name in said:                       # the explorer runs on the learner's pieces and says so
        call, caption = said[case.path.name]
        explorer = next(c for c in code_cells(right) if call in c.source)
        assert caption in text(explorer)
        assert "Computed by your" not in text(next(c for c in code_cells(stored) if call in c.source))
    if case.path.name == "08_cost_and_tiling.ipynb":  # the tiling explorer runs on the learner's step and says so
        explorer = next(c for c in code_cells(right) if c.source.startswith("explorer\n") or c.source == "explorer")
        assert "Computed by your online_softmax_update." in text(explorer)


def test_a_wrong_piece_gives_way_to_the_course_and_is_named(case, stored, one_wrong):
    lines = {name: [] for name in case.used}
    for _, _, cell in uses(one_wrong):
        for line in text(cell).splitlines():
            name = next((n for n in case.used if fold(line) == f"[{n}: yours or the course's]"), None)
            if name:
                lines[name].append(line)
    start, end = case.wrong_line
    assert lines[case.wrong] and all(l.startswith(start) and l.endswith(end) for l in lines[case.wrong])
    for name in case.used - {case.wrong}:                  # the worked others are right
        if name in case.gives_way:
            assert lines[name] and all(l.startswith(f"the course's {name} (yours: ") for l in lines[name]), lines[name]
        else:
            assert lines[name] and set(lines[name]) == {f"your {name}"}, (name, lines[name])
    assert_same_numbers(stored, one_wrong)


def assert_same_numbers(stored, fresh):
    old, new = code_cells(stored), code_cells(fresh)
    assert [c.id for c in old] == [c.id for c in new]
    compared = [not BUILD.search(c.source) and not VERDICT.search(c.source)
                and "nbval-ignore-output" not in c.metadata.get("tags", []) for c in old]
    differ = [c.id for c, d, yes in zip(old, new, compared) if yes and fold(text(c)) != fold(text(d))]
    assert not differ, "\n".join(f"{i}:\n{fold(text(d))}" for i, d in zip([c.id for c in new], new) if i in differ)
