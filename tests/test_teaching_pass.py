"""The tools and claims of the teaching pass (issue 12) on notebooks 01-05 and 11.

- helpers.saturation.query_gradient against nudges, and the notebook 03 claim
  it supports (what reaches the query, scaled and unscaled);
- helpers.examples.SourceAudit (one line per check, the full table at the end);
- the instructors' errors of the new exercise classes;
- the real model's heads_off option, and notebook 11's hedged readings
  (a head switched off; [CLS]'s short transformed values in parking heads).
"""

import re

import nbformat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.attention import merge_heads, scaled_dot_product_attention, softmax, split_heads
from helpers.course import NOTEBOOKS_DIR
from helpers.examples import Published, SourceAudit
from helpers.exercises import ScoreVarianceExercise, SplitHeadsExercise, WeightsCountExercise
from helpers.saturation import query_gradient


# ------------------------------------------------------------ the gradient that reaches the query

@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), d_k=st.integers(1, 12), n_k=st.integers(1, 7),
       scale=st.sampled_from([1.0, 0.5, 0.1, 3.0]))
def test_query_gradient_matches_a_nudge_of_the_loss(seed, d_k, n_k, scale):
    # L(q) = upstream . softmax(scale * K q): central differences, step 1e-6, against the chain rule.
    rng = np.random.default_rng(seed)
    q, K, g = rng.standard_normal(d_k), rng.standard_normal((n_k, d_k)), rng.standard_normal(n_k)

    def loss(x):
        return float(g @ softmax(scale * (K @ x)))

    nudged = np.array([(loss(q + 1e-6 * e) - loss(q - 1e-6 * e)) / 2e-6 for e in np.eye(d_k)])
    assert np.allclose(query_gradient(q, K, g, scale), nudged, atol=1e-6)


def test_query_gradient_works_on_a_batch_and_vanishes_for_a_one_hot_row():
    rng = np.random.default_rng(1)
    q, K, g = rng.standard_normal((5, 3)), rng.standard_normal((5, 4, 3)), rng.standard_normal((5, 4))
    batched = query_gradient(q, K, g, 0.5)
    assert batched.shape == (5, 3)
    assert np.allclose(batched, [query_gradient(q[i], K[i], g[i], 0.5) for i in range(5)])
    # Key 0 scores 1000 above the others: the row is one-hot, J = 0, nothing gets back.
    K1 = np.array([[1000.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    assert np.allclose(query_gradient(np.array([1.0, 0.0]), K1, np.array([1.0, -2.0, 3.0]), 1.0), 0.0)


@pytest.mark.parametrize("args, match", [
    ((np.ones(3), np.ones((4, 2)), np.ones(4), 1.0), "same d_k"),
    ((np.ones(2), np.ones((4, 2)), np.ones(3), 1.0), "upstream must be"),
    ((np.ones(2), np.ones((4, 2)), np.ones(4), 0.0), "scale must be"),
    ((np.ones(2), np.ones((4, 2)), np.ones(4), True), "scale must be"),
    ((np.ones(2), np.ones((4, 2)), np.ones(4), np.inf), "scale must be"),
    ((np.array([1.0, np.nan]), np.ones((4, 2)), np.ones(4), 1.0), "q must hold finite"),
    ((np.ones(2), np.ones(2), np.ones(4), 1.0), "K"),
])
def test_query_gradient_refuses_bad_inputs_by_name(args, match):
    with pytest.raises(ValueError, match=match):
        query_gradient(*args)


def _gradient_shares(d_k, rows=2000, n_keys=8, seed=11):
    """Sizes of dL/dq for random unit-variance queries and keys, upstream dL/dw ~ N(0, 1), scaled and unscaled."""
    rng = np.random.default_rng(seed)
    q, K = rng.standard_normal((rows, d_k)), rng.standard_normal((rows, n_keys, d_k))
    g = rng.standard_normal((rows, n_keys))
    scaled = np.linalg.norm(query_gradient(q, K, g, 1 / np.sqrt(d_k)), axis=-1)
    unscaled = np.linalg.norm(query_gradient(q, K, g, 1.0), axis=-1)
    floor = np.median(scaled) / 100
    return scaled, unscaled, floor


def test_what_reaches_the_query_is_steady_scaled_and_vanishing_or_large_unscaled():
    # The claim of notebook 03, section 3, measured here with a seed of its own.
    medians, shares, tops = {}, {}, {}
    for d_k in (4, 64, 512, 1024):
        scaled, unscaled, floor = _gradient_shares(d_k)
        medians[d_k] = np.median(scaled)
        shares[d_k] = (np.mean(scaled < floor), np.mean(unscaled < floor))
        tops[d_k] = (np.percentile(scaled, 90), np.percentile(unscaled[unscaled >= floor], 90))
    assert max(medians.values()) / min(medians.values()) < 1.3          # scaled: the same size at every width
    assert all(s == 0 for s, _ in shares.values())                       # scaled: no silent row
    assert 0.1 < shares[64][1] < 0.25                                    # unscaled: about one row in six at 64
    assert shares[512][1] > 0.5 and shares[1024][1] > 0.5               # more than half at 512 and 1024
    assert tops[1024][1] > 10 * tops[1024][0]                            # the other rows: ever larger


def _printed(nb, cell_id):
    cell = next(c for c in nb.cells if c.get("id") == cell_id)
    return "".join(o.get("text", "") for o in cell.outputs)


def _markdown(nb, cell_id):
    return next(c for c in nb.cells if c.get("id") == cell_id).source


def test_notebook_03_says_what_its_gradient_table_prints():
    nb = nbformat.read(NOTEBOOKS_DIR / "03_scaling.ipynb", as_version=4)
    line = re.search(r"unscaled: rows passing back almost nothing: ([\d.]+)% at d_k = 64, ([\d.]+)% at 512, "
                     r"([\d.]+)% at 1024", _printed(nb, "cell-14"))
    at64, at512, at1024 = (float(x) / 100 for x in line.groups())
    prose, recap = _markdown(nb, "cell-16"), _markdown(nb, "recap")
    assert "one row in six" in prose and "one in six" in recap
    assert abs(at64 - 1 / 6) < 0.03                                      # "one in six"
    assert "more than half at 512 and 1024" in prose and "more than half at 512" in recap
    assert at512 > 0.5 and at1024 > 0.5
    scaled_line = re.search(r"scaled: median ([\d.]+) to ([\d.]+) over every width, ([\d.]+) to ([\d.]+) from d_k = 4 on",
                            _printed(nb, "cell-14"))
    low, high, low4, high4 = (float(x) for x in scaled_line.groups())
    assert high / low < 2 and high4 / low4 < 1.3                          # "the same place from d_k = 4 on"
    assert "the same place from d_k = 4 on" in prose
    assert "suspect" in prose                                            # Vaswani et al.'s word, attributed
    # "while the largest reach beyond every scaled row": a share of unscaled rows above the largest scaled one
    top = re.search(r"one row in ten passes back more than ([\d.]+) at d_k = 1024, (\d+) times the scaled", _printed(nb, "cell-14"))
    above = re.search(r"unscaled rows larger than every scaled row at d_k = 1024: ([\d.]+)%", _printed(nb, "cell-14"))
    assert int(top.group(2)) >= 3 and float(above.group(1)) > 5
    assert "beyond every scaled row" in prose and "uneven learning" in prose.lower()
    assert "gradients of very uneven size, the largest far above the scaled ones" in recap


# ------------------------------------------------------------ the source audit

PUB = Published("demo", np.array([1.0, 2.0]), 1, "a test", rounded_inputs="The source rounded first.")
PUB_PLAIN = Published("plain", 3.0, 0, "a test")


def test_the_audit_prints_one_line_per_check_and_the_full_table_at_the_end(capsys):
    audit = SourceAudit("source X", "section 9")
    audit.check([1.02, 2.0], PUB, labels=["a", "b"])
    audit.check([1.2, 2.0], PUB, labels=["a", "b"])
    audit.check(3.4, PUB_PLAIN)
    audit.check(4.0, PUB_PLAIN)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "demo: both values match source X to its rounding",
        "demo: 1 of 2 match source X to its rounding; 1 differs, because the source rounded an earlier step "
        "(section 9 has the table)",
        "plain: matches source X to its rounding",
        "plain: differs from source X beyond its rounding, and no note explains it (section 9 has the table)",
    ]
    audit.table()
    table = capsys.readouterr().out
    assert table.count("demo   (source: a test)") == 2 and "agrees?" in table
    assert re.search(r"  a +1\.200 +1\.0 +0\.200  no, rounded first", table)
    assert "why: The source rounded first." in table
    assert re.search(r"4\.00 +3 +1\.00  no, unexplained", table)


def test_the_audit_refuses_bad_inputs_when_checking_not_at_the_end():
    audit = SourceAudit("source X", "section 9")
    with pytest.raises(ValueError, match="ours must have the published shape"):
        audit.check([1.0, 2.0, 3.0], PUB)
    with pytest.raises(ValueError, match="labels must give one label per entry"):
        audit.check([1.0, 2.0], PUB, labels=["a"])
    with pytest.raises(ValueError, match="published must be a Published"):
        audit.check(1.0, 1.0)
    with pytest.raises(ValueError, match="source and table_at"):
        SourceAudit("", "section 9")
    assert audit.records == []


# ------------------------------------------------------------ the new exercises: instructors' errors

def test_the_new_exercises_refuse_bad_inputs_from_an_instructor():
    with pytest.raises(ValueError, match="d_k must be a whole number"):
        ScoreVarianceExercise(0)
    with pytest.raises(ValueError, match="var_q must be a positive finite number"):
        ScoreVarianceExercise(4, var_q=-1.0)
    with pytest.raises(ValueError, match="num_heads must divide d_model = 6"):
        SplitHeadsExercise(np.ones((4, 6)), 4)
    with pytest.raises(ValueError, match="x must be a matrix"):
        SplitHeadsExercise(np.ones(6), 2)
    with pytest.raises(ValueError, match="n must be a whole number"):
        WeightsCountExercise(0, 8)


def test_the_new_exercises_compute_their_answers_from_their_inputs():
    # Hand derivations: Var(q . k) = d_k var_q var_k = 10 * 2 * 3; 4 heads over 3 tokens hold 4 * 3 * 3 weights.
    assert ScoreVarianceExercise(10, var_q=2.0, var_k=3.0).expected == 60
    assert WeightsCountExercise(3, 4).expected == 36
    x = np.arange(8.0).reshape(2, 4)          # 2 tokens, 4 features, 2 heads: head 1 gets features 2, 3
    assert np.array_equal(SplitHeadsExercise(x, 2).expected, [[[0, 1], [4, 5]], [[2, 3], [6, 7]]])


# ------------------------------------------------------------ the real model: a head switched off

@pytest.fixture(scope="module")
def model():
    from helpers.real_model import load_minilm
    return load_minilm()


RIVER = "The bank by the river was steep."
INTEREST = "The bank raised its interest rate."


def test_switching_nothing_off_changes_nothing(model):
    a, b = model.run(RIVER), model.run(RIVER, heads_off=[])
    assert np.array_equal(a.hidden_states, b.hidden_states) and np.array_equal(a.attention, b.attention)


def test_a_head_switched_off_adds_nothing_to_its_layer(model):
    # Layer 0 by hand from the vectors entering it, with head 4's output zeroed before W_O.
    from helpers.real_model import _layer_norm, gelu
    off = model.run(RIVER, heads_off=[(0, 4)])
    normal = model.run(RIVER)
    assert np.array_equal(off.hidden_states[0], normal.hidden_states[0])
    assert np.array_equal(off.attention[0], normal.attention[0])            # its weights are still reported
    x, p = normal.hidden_states[0], model.layers[0]
    Q, K, V = (split_heads(x @ p[f"W_{r}"] + p[f"b_{r}"], model.num_heads) for r in "QKV")
    heads, _ = scaled_dot_product_attention(Q, K, V)
    heads[4] = 0.0
    x = _layer_norm(x + merge_heads(heads) @ p["W_O"] + p["b_O"], *p["ln_attention"], model.eps)
    x = _layer_norm(x + gelu(x @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"], *p["ln_ffn"], model.eps)
    assert np.allclose(off.hidden_states[1], x, rtol=0, atol=1e-10)
    assert not np.allclose(off.hidden_states[1], normal.hidden_states[1], atol=1e-3)


@pytest.mark.parametrize("heads_off", [[(6, 0)], [(0, 12)], [(-1, 0)], [(0,)], [(0, 1, 2)], 3, ["ab"],
                                       [(True, 1)], [(0.0, 1)], None])
def test_odd_heads_off_is_a_clear_value_error(model, heads_off):
    with pytest.raises(ValueError, match="heads_off must"):
        model.run(RIVER, heads_off=heads_off)


def _cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_notebook_11_reading_of_layer_0_head_4_switched_off(model):
    # the table: head 4 moves bank more than head 10 does, and both bring the two banks closer
    river, interest = model.run(RIVER), model.run(INTEREST)
    bank_r, bank_i = river.index("bank"), interest.index("bank")
    apart = _cosine(river.hidden_states[-1, bank_r], interest.hidden_states[-1, bank_i])
    moved = {}
    for head in (4, 10):
        r_off, i_off = model.run(RIVER, heads_off=[(0, head)]), model.run(INTEREST, heads_off=[(0, head)])
        moved[head] = _cosine(r_off.hidden_states[-1, bank_r], river.hidden_states[-1, bank_r])
        assert _cosine(r_off.hidden_states[-1, bank_r], i_off.hidden_states[-1, bank_i]) > apart
    assert 0.95 < moved[4] < moved[10] < 1.0


def test_notebook_11_reading_of_every_head_switched_off(model):
    # "only one head of the 72, layer 5 head 7, moves bank's final vector more; among the ten that move the
    # embedding most; 37 of the 72 heads bring the two banks closer; layer 0 head 10 most, head 4 second"
    river, interest = model.run(RIVER), model.run(INTEREST)
    bank_r, bank_i = river.index("bank"), interest.index("bank")
    apart = _cosine(river.hidden_states[-1, bank_r], interest.hidden_states[-1, bank_i])
    moved, emb, banks = {}, {}, {}
    for layer in range(model.num_layers):
        for head in range(model.num_heads):
            r_off = model.run(RIVER, heads_off=[(layer, head)])
            i_off = model.run(INTEREST, heads_off=[(layer, head)])
            moved[layer, head] = _cosine(r_off.hidden_states[-1, bank_r], river.hidden_states[-1, bank_r])
            emb[layer, head] = float(r_off.embedding @ river.embedding)
            banks[layer, head] = _cosine(r_off.hidden_states[-1, bank_r], i_off.hidden_states[-1, bank_i])
    assert sorted(moved, key=moved.get)[:2] == [(5, 7), (0, 4)]
    assert (0, 4) in sorted(emb, key=emb.get)[:10]
    assert sum(b > apart for b in banks.values()) == 37
    assert sorted(banks, key=banks.get, reverse=True)[:2] == [(0, 10), (0, 4)]
    assert np.median(list(moved.values())) > 0.999 > moved[0, 4]           # "most heads hardly move bank"


def test_notebook_11_reading_of_cls_parking_heads(model):
    # Kobayashi et al. (2020)'s measure: the length of each token's value through a head and its block of W_O.
    river = model.run(RIVER)
    on_cls = river.attention[..., 0].mean(axis=-1)
    parking, other = [], []
    for layer in range(model.num_layers):
        p = model.layers[layer]
        for head in range(model.num_heads):
            cols = slice(head * model.d_k, (head + 1) * model.d_k)
            v = river.hidden_states[layer] @ p["W_V"][:, cols] + p["b_V"][cols]
            length = np.linalg.norm(v @ p["W_O"][cols, :], axis=1)
            (parking if on_cls[layer, head] > 0.5 else other).append(length[0] / np.median(length[1:]))
    assert len(parking) == 41
    assert np.median(parking) < 0.05 and max(parking) < 0.25 and np.median(other) > 3 * np.median(parking)


def test_the_gradient_figure_tells_scaled_from_unscaled_without_colour():
    # Issue 22, item 7: two series drawn in the same style; here they must differ in fill and line style.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from helpers.plots import description, size_histograms

    rng = np.random.default_rng(0)
    fig = size_histograms({"d_k = 4": {"scaled": rng.random(50) + 0.1, "unscaled": rng.random(50) * 10}},
                          {"d_k = 4": 0.01}, title="t")
    patches = [p for p in fig.axes[0].patches]
    styles = {(p.get_fill(), p.get_linestyle(), p.get_hatch()) for p in patches}
    assert len(styles) == 2, styles
    assert "almost nothing" in description(fig) and "median" in description(fig)
    plt.close(fig)
    with pytest.raises(ValueError, match="must have exactly the keys 'scaled' and 'unscaled'"):
        size_histograms({"a": {"scaled": [1.0]}}, {"a": 0.1})
    with pytest.raises(ValueError, match="floor\\['a'\\] must be a positive size"):
        size_histograms({"a": {"scaled": [1.0], "unscaled": [1.0]}}, {"a": 0})
    with pytest.raises(ValueError, match="must be non-empty sizes"):
        size_histograms({"a": {"scaled": [-1.0], "unscaled": [1.0]}}, {"a": 0.1})


def test_the_audit_summary_counts_every_number_and_says_where_the_table_is(capsys):
    audit = SourceAudit("source X", "the appendix")
    audit.record([1.02, 2.0], PUB, labels=["a", "b"])       # both within the source's rounding
    audit.record([1.2, 2.0], PUB, labels=["a", "b"])        # one off, and the source rounded first
    assert capsys.readouterr().out == ""                    # recording prints nothing
    audit.summary()
    assert capsys.readouterr().out.strip() == ("4 numbers published by source X are reproduced; 1 differs only "
                                               "by the published rounding, listed in the appendix")
    audit.record(4.0, PUB_PLAIN)                            # off, and nothing explains it
    audit.summary()
    assert "1 differs unexplained" in capsys.readouterr().out
    with pytest.raises(ValueError, match="ours must have the published shape"):
        audit.record([1.0], PUB)
