"""The layout of helpers/ (issue 20): names stay findable, arrows run down, no circles, no module too big.

Arrows run one way: pieces -> checkers; explorers, checkers -> exercises -> plots, examples, real_model,
training, ... -> attention, positions, tiling -> inputs, paths (DESIGN.md). The checkers (the engine that
judges a learner's function) use the exercises' Feedback; the exercises re-export the checkers' names only
on first use, by name (PEP 562), never by an import (issue 32). helpers.pieces (the function a cell runs:
the learner's once diagnose says it is right, issue 33) stands above the checkers.
"""

import ast
import importlib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from helpers.attention import causal_mask, scaled_dot_product_attention

ROOT = Path(__file__).resolve().parent.parent
HELPERS = ROOT / "helpers"


def module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(HELPERS.rglob("*.py"))}


def helpers_imports(path):
    """The helpers modules ``path`` imports (anywhere in the file, top level or inside a function)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("helpers")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("helpers"):
            for a in node.names:  # `from helpers import attention` imports the module helpers.attention
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in MODULES else node.module)
    return found - {"helpers"}


GRAPH = {name: helpers_imports(path) for name, path in MODULES.items()}

# Names imported from helpers before issue 20, by notebooks, tests, tools and INSTRUCTORS.md, and where
# they are imported from now. Every one must still be importable there.
IMPORTED_BEFORE = {
    "helpers.exercises": "AttentionCountExercise AttentionWeightsExercise ChoiceExercise DkPredictionExercise Feedback "
                         "HullExercise KVCacheSizeExercise MaskExercise OnlineSoftmaxStepExercise "
                         "OutputExercise PermutedOutputExercise ProjectionExercise Reveal ScoreExercise "
                         "ScoreVarianceExercise SinusoidalEntryExercise SoftmaxGradientExercise SoftmaxRowExercise "
                         "SplitHeadsExercise WeightsCountExercise _NumericExercise _fmt diagnose exercise",
    "helpers.checkers.diagnose": "ATOL BATTERY Diagnosis FAULTS RIGHT RTOL TIME_LIMIT _Model _SINGLE diagnose",  # was helpers.diagnose, then helpers.exercises.diagnose
    "helpers.checkers": "BATTERY Diagnosis FAULTS PIECES TIME_LIMIT diagnose solution run_with_your_attention "
                        "check_your_block",
    "helpers.explorers": "DK_CHOICES KERNEL_LINE dk_explorer dk_state heads_explorer heads_state mask_explorer "  # was helpers.widgets
                         "mask_state random_model real_model_explorer real_model_state setup_check tiling_explorer "
                         "tiling_state Explorer",
    "helpers.attention": "attention_entropy causal_mask merge_heads multi_head_attention padding_mask "
                         "scaled_dot_product_attention softmax split_heads",
    "helpers.tiling": "KVCache TILE_NUMBERS online_softmax_update tiled_attention",  # were in helpers.attention
    "helpers.positions": "sinusoidal_positional_encoding",                           # was in helpers.attention
}


@pytest.mark.parametrize("module", sorted(IMPORTED_BEFORE))
def test_every_name_imported_before_is_importable_from_its_home(module):
    mod = importlib.import_module(module)
    missing = [name for name in IMPORTED_BEFORE[module].split() if not hasattr(mod, name)]
    assert not missing, f"{module} lacks {missing}"


def imports_in(source):
    source = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("helpers"):
            yield from ((node.module, a.name) for a in node.names)
        elif isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names if a.name.startswith("helpers"))


def imports_today():
    found = set()
    for path in [*ROOT.glob("tests/**/*.py"), *ROOT.glob("tools/*.py")]:
        found |= set(imports_in(path.read_text()))
    for path in ROOT.glob("notebooks/*.ipynb"):
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code":
                found |= set(imports_in("".join(cell["source"])))
    for block in re.findall(r"```python\n(.*?)```", (ROOT / "INSTRUCTORS.md").read_text(), re.S):
        found |= set(imports_in(block))
    return sorted(found, key=str)


def test_every_import_of_the_notebooks_tests_tools_and_instructors_guide_works():
    broken = []
    for module, name in imports_today():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            broken.append(module)
            continue
        if name is not None and not hasattr(mod, name) and f"{module}.{name}" not in MODULES:
            broken.append(f"{module}.{name}")
    assert not broken


def test_the_old_rooms_are_gone_with_no_alias_left():
    for old in ("widgets.py", "diagnose.py", "exercises.py", "exercises/diagnose.py", "exercises/runner.py",
                "exercises/battery.py", "exercises/solutions.py", "exercises/finale.py"):
        assert not (HELPERS / old).exists()
    assert not list((HELPERS / "exercises").glob("checker_*.py"))
    with pytest.raises(ImportError):
        importlib.import_module("helpers.widgets")


def test_attention_imports_nothing_but_numpy_and_inputs():
    tree = ast.parse(MODULES["helpers.attention"].read_text())
    imported = {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    imported |= {f"{n.module}.{a.name}" if n.module == "helpers" else n.module
                 for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
    assert imported <= {"numpy", "__future__", "helpers.inputs"}, imported


def test_arrows_run_down():
    top = ("helpers.checkers", "helpers.exercises", "helpers.explorers")
    core = {"helpers.attention", "helpers.positions", "helpers.tiling"}
    above = {"helpers.checkers": ("helpers.pieces",), "helpers.exercises": ("helpers.checkers", "helpers.pieces")}
    for name, targets in GRAPH.items():
        for package in top:      # nothing below a package imports it (the checkers stand above the exercises)
            if not name.startswith(package) and not name.startswith(above.get(package, ("-",))):
                assert not any(t.startswith(package) for t in targets), f"{name} imports {package} from below"
        if name in core:
            assert targets <= core | {"helpers.inputs"}, f"{name} imports {targets - core}"
        if name in ("helpers.inputs", "helpers.paths"):
            assert not targets, f"{name} is at the bottom but imports {targets}"


def test_the_pieces_stand_above_the_checkers():
    """helpers.pieces imports the checkers (diagnose); nothing in helpers.checkers, helpers.exercises or below
    imports it (only the explorers, beside the checkers, may), and it imports no explorer."""
    assert any(t.startswith("helpers.checkers") for t in GRAPH["helpers.pieces"])
    assert not any(t.startswith("helpers.explorers") for t in GRAPH["helpers.pieces"])
    importers = sorted(name for name, targets in GRAPH.items() if "helpers.pieces" in targets)
    assert all(name.startswith("helpers.explorers") for name in importers), importers


def test_no_circles():
    state = {}

    def visit(name, path):
        if state.get(name) == "open":
            pytest.fail("import circle: " + " -> ".join(path + [name]))
        if state.get(name) != "done":
            state[name] = "open"
            for target in sorted(GRAPH.get(name, ())):
                if target in MODULES and target != name:
                    visit(target, path + [name])
            state[name] = "done"

    for name in sorted(GRAPH):
        visit(name, [])


def test_no_module_holds_more_than_a_fifth_of_the_package():
    lines = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    total = sum(lines.values())
    assert max(lines.values()) <= total / 5, {k: v for k, v in lines.items() if v > total / 5}


def test_no_package_holds_more_than_a_third_of_the_project():
    """Issue 32: helpers/exercises/ held 45% of the project's lines before the checkers left it."""
    project = [p for p in ROOT.rglob("*.py") if not {".venv", ".git", "student", "site"} & set(p.relative_to(ROOT).parts)]
    total = sum(len(p.read_text().splitlines()) for p in project)
    for package in ("exercises", "checkers", "explorers"):
        lines = sum(len(p.read_text().splitlines()) for p in (HELPERS / package).rglob("*.py"))
        assert lines <= total / 3, (package, lines, total)


def test_the_exercises_import_no_checker_and_still_re_export_them():
    """`from helpers.exercises import diagnose` works, and importing the exercises loads no checker (a fresh
    interpreter: the re-export is a PEP 562 module __getattr__, not an import)."""
    import subprocess
    import sys
    code = ("import sys, helpers.exercises as ex; assert not [m for m in sys.modules if m.startswith('helpers.checkers')]; "
            "from helpers.exercises import diagnose, solution, PIECES; import helpers.checkers as c; "
            "assert diagnose is c.diagnose and solution is c.solution and PIECES is c.PIECES; "
            "from helpers.exercises import solutions, checker_attention; import helpers.checkers.solutions as s; "
            "assert solutions is s and checker_attention.__name__ == 'helpers.checkers.checker_attention'; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr


def test_attention_reads_as_its_equations():
    source = MODULES["helpers.attention"].read_text()
    assert len(source.splitlines()) <= 500
    fn = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "scaled_dot_product_attention")
    body = fn.body[1:]  # the docstring excluded
    assert body[-1].end_lineno - body[0].lineno + 1 <= 30


def plain_attention(Q, K, V, mask):
    """The textbook computation, with nothing skipped: scores, mask, max subtracted, exp, normalise."""
    s = Q @ K.T / np.sqrt(Q.shape[-1])
    s = np.where(mask, s, -np.inf)
    top = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    w = e / np.where(total == 0, 1.0, total)
    return w @ V, w


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.sampled_from([1e-3, 1.0, 10.0, 24.0, 25.0, 100.0, 1e5]), st.data())
def test_attention_equals_the_plain_computation_at_every_magnitude(n, d, size, data):
    # Scores on both sides of EXP_SAFE (600): below it the max subtraction is skipped.
    Q, K, V = (data.draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-size, size))) for _ in range(3))
    mask = data.draw(st.sampled_from([np.ones((n, n), bool), causal_mask(n), ~causal_mask(n)]))
    out, w = scaled_dot_product_attention(Q, K, V, mask=mask)
    want_out, want_w = plain_attention(Q, K, V, mask)
    # How far the two may differ is set by the problem's conditioning, not chosen: a scaled score is a sum
    # of d products, each |q_i k_i| / sqrt(d) <= max|Q| max|K| / sqrt(d), so the two ways of rounding it
    # (scale Q first, or divide Q K^T) differ by at most delta = (d + 2) eps d max|Q| max|K| / sqrt(d).
    # A shift of delta in the scores moves each weight by a factor within exp(+-2 delta), about 1 +- 2 delta,
    # and the output by at most 2 delta max|V| more. At sizes up to 25 delta is below 1e-11; at 1e5
    # (scores near 1e10) it is about 1e-5, and a relative 1e-9 there failed on a right function.
    delta = (d + 2) * np.finfo(float).eps * d * float(np.abs(Q).max() * np.abs(K).max()) / np.sqrt(d)
    np.testing.assert_allclose(w, want_w, rtol=1e-9 + 2 * delta, atol=1e-12)
    np.testing.assert_allclose(out, want_out, rtol=1e-9,
                               atol=(1e-9 + 2 * delta) * max(1.0, float(np.abs(V).max(initial=0))))
