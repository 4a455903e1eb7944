"""run_with_your_attention: the learner's attention inside the real model, judged (issue 21, section 3).

Each case is a function whose verdict is known by construction: the worked
solution (right, float64), the same in float32 (right, to float32 precision),
today's named faults of the attention checker (no_scaling changes the model;
mask_after_softmax cannot show on sentences with no mask), a stub, and odd
functions that must not make the verdict raise.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.checkers.finale import BOUNDS, SENTENCES, run_with_your_attention
from helpers.checkers.solutions import attention as worked_attention
from helpers.real_model import load_minilm


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def softmax_rows(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_the_worked_solution_agrees_to_float64_rounding(model):
    v = run_with_your_attention(worked_attention, model)
    assert v.correct and v.mistake is None
    assert v.bound is not None and v.bound <= 1e-9
    assert abs(v.cosine - v.cosine_course) < 1e-9
    assert "agree" in v.text and "float64 rounding" in v.text


def test_a_float32_attention_is_right_to_the_precision_it_computes_in(model):
    def float32_attention(Q, K, V, mask=None):
        out, w = worked_attention(np.float32(Q), np.float32(K), np.float32(V), mask)
        return out.astype(np.float32), w.astype(np.float32)
    v = run_with_your_attention(float32_attention, model)
    assert v.correct
    assert 1e-9 < v.bound <= BOUNDS[-1]
    assert "the precision your function computes in" in v.text


def test_a_missing_scaling_is_named_and_moves_the_real_model(model):
    def unscaled(Q, K, V, mask=None):
        s = Q @ np.swapaxes(K, -1, -2)
        if mask is not None:
            s = np.where(mask, s, -np.inf)
        w = softmax_rows(s)
        return w @ V, w
    v = run_with_your_attention(unscaled, model)
    assert not v.correct and v.mistake == "no_scaling"
    assert abs(v.cosine - v.cosine_course) > 1e-3
    assert "layer 0, head 4" in v.text and "yours:" in v.text


def test_masking_after_the_softmax_cannot_show_without_padding_but_is_still_named(model):
    def masked_after(Q, K, V, mask=None):
        w = softmax_rows(Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1]))
        if mask is not None:
            w = w * mask
        return w @ V, w
    v = run_with_your_attention(masked_after, model)
    assert v.bound is not None and v.bound <= 1e-9     # no [PAD] in either sentence: the model agrees
    assert not v.correct and v.mistake == "mask_after_softmax"
    assert "the model cannot tell" in v.text


def test_a_stub_is_not_attempted_and_the_model_is_not_run(model):
    def stub(Q, K, V, mask=None):
        raise NotImplementedError("attention: not written yet")
    v = run_with_your_attention(stub, model)
    assert v.mistake == "not_attempted" and v.bound is None and v.cosine is None


def test_a_workbook_saved_with_a_syntax_error_is_told_so_and_the_model_is_not_run(model, tmp_path, monkeypatch):
    import importlib
    import sys
    (tmp_path / "workbook_broken.py").write_text("def attention(Q, K, V, mask=None):\n    return Q\n",
                                                 encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("workbook_broken")
    try:
        (tmp_path / "workbook_broken.py").write_text("def attention(Q, K, V, mask=None:\n", encoding="utf-8")
        v = run_with_your_attention(module.attention, model)
        assert v.mistake == "syntax_error" and "at line 1" in v.text and v.bound is None and v.cosine is None
    finally:
        sys.modules.pop("workbook_broken", None)


@pytest.mark.parametrize("fn", [
    lambda Q, K, V, mask=None: None,
    lambda Q, K, V, mask=None: "text",
    lambda Q, K, V, mask=None: 1 / 0,
    lambda Q, K, V, mask=None: Q[..., :3],
    42,
])
def test_odd_functions_get_words_never_an_exception(model, fn):
    v = run_with_your_attention(fn, model)
    assert not v.correct and isinstance(v.mistake, str) and v.text


@pytest.mark.parametrize("over_queries", ["axis=1", "max on rows, sum down columns"])
def test_a_softmax_over_the_query_axis_is_named_in_the_real_model(model, over_queries):
    # The model calls attention with Q, K, V of shape (12, n, 32): a fixed axis=1 is the queries' axis there.
    def fn(Q, K, V, mask=None):
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[-1])
        if mask is not None:
            s = np.where(mask, s, -1e9)
        e = np.exp(s - s.max(axis=1 if over_queries == "axis=1" else -1, keepdims=True))
        w = e / e.sum(axis=1 if over_queries == "axis=1" else -2, keepdims=True)
        return w @ V, w
    v = run_with_your_attention(fn, model)
    assert not v.correct and v.mistake == "wrong_axis"
    assert abs(v.cosine - v.cosine_course) > 1e-3


def test_what_the_attention_does_to_the_model_is_a_field_of_its_own(model):
    def unscaled(Q, K, V, mask=None):
        w = softmax_rows(Q @ np.swapaxes(K, -1, -2))
        return w @ V, w
    v = run_with_your_attention(unscaled, model)
    assert v.on_model and v.text.startswith(v.on_model) and "diagnose finds" not in v.on_model
    assert "diagnose finds" in v.text[len(v.on_model):]
    assert run_with_your_attention(worked_attention, model).on_model == run_with_your_attention(
        worked_attention, model).text


def test_the_sentences_are_those_the_reference_embeddings_were_made_on():
    reference = json.loads((Path(__file__).resolve().parent.parent / "data" / "minilm_reference.json").read_text())
    assert SENTENCES == (reference["sentences"]["river"]["text"], reference["sentences"]["interest"]["text"])


# ---- check_your_block: the learner's own encoder block with one layer's weights (issue 21, section 3) ----

from helpers.checkers.finale import BLOCK_FAULTS, _block, _fault_flags, check_your_block  # noqa: E402
from helpers.checkers.solutions import encoder_block as worked_block  # noqa: E402


def block_with(**flags):
    return lambda x, params, num_heads, mask=None: _block(x, params, num_heads, mask, **flags)


def test_the_worked_block_is_the_models_layer_and_passes(model):
    # Against the model's own forward pass (hidden_states[1]), itself checked against PyTorch in test_real_model.py.
    out = model.run(SENTENCES[0])
    mine = worked_block(out.hidden_states[0], model.layer_parameters(0), model.num_heads)
    assert np.max(np.abs(mine - out.hidden_states[1])) < 1e-9
    v = check_your_block(worked_block, model)
    assert v.correct and v.mistake is None and v.bound_layer <= 1e-9 and v.bound_model <= 1e-9
    assert "Every layer of the model's forward pass is now yours" in v.text


def test_the_judges_right_block_is_the_models_layer_in_every_layer(model):
    out = model.run(SENTENCES[1])
    for layer in range(model.num_layers):
        mine = _block(out.hidden_states[layer], model.layer_parameters(layer), model.num_heads)
        assert np.max(np.abs(mine - out.hidden_states[layer + 1])) < 1e-9


FAULT_WAYS = [(key, flags) for key in sorted(BLOCK_FAULTS) for flags in _fault_flags(key)]


@pytest.mark.parametrize("key, flags", FAULT_WAYS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(FAULT_WAYS)])
def test_each_mistake_is_named_by_its_key(model, key, flags):
    v = check_your_block(block_with(**flags), model)
    assert not v.correct and v.mistake == key and v.bound_layer is None
    assert "yours" in v.text and "the model's" in v.text


def test_the_new_ways_of_the_block_faults_are_among_them():
    # The fresh review of notebook 11: Q/K/V without biases, a reshape-only split, the second residual from
    # the block's input, gamma_1/beta_1 in the second LayerNorm; same misconception, same key as elsewhere.
    assert {"biases": "qkv"} in _fault_flags("no_biases")
    assert {"transpose": "split"} in _fault_flags("reshape_without_transpose")
    assert {"transpose": "heads_as_queries"} in _fault_flags("reshape_without_transpose")
    assert _fault_flags("residual_from_block_input") == ({"residual": (True, "input")},)
    assert _fault_flags("layer_norm_1_reused") == ({"second_norm": "_1"},)
    # The second fresh review: b_O alone dropped, a right split with a reshape-only merge, PyTorch's eps.
    assert {"biases": "out"} in _fault_flags("no_biases")
    assert {"transpose": "merge"} in _fault_flags("reshape_without_transpose")
    assert _fault_flags("wrong_eps") == ({"eps": 1e-5},)


def test_a_wrong_eps_is_named_though_it_stays_within_the_float32_bound(model):
    # eps = 1e-5 (PyTorch's default) moves layer 0 by less than 1e-4, the bound a float32 block passes within;
    # the model's own is params["eps"] (1e-12, the config's layer_norm_eps): named, in float64 and in float32.
    def with_eps(dtype):
        def block(x, params, num_heads, mask=None):
            p = {k: v.astype(dtype) if isinstance(v, np.ndarray) else v for k, v in params.items()}
            return _block(x.astype(dtype), {**p, "eps": 1e-5}, num_heads, mask).astype(dtype)
        return block
    for dtype in (np.float64, np.float32):
        v = check_your_block(with_eps(dtype), model)
        assert not v.correct and v.mistake == "wrong_eps" and "1e-12" in v.text, (dtype, v.text)


def test_a_float64_block_with_a_float32_step_passes_without_claiming_its_precision(model):
    def rounds_x_to_float32(x, params, num_heads, mask=None):
        return _block(x.astype(np.float32).astype(np.float64), params, num_heads, mask)
    v = check_your_block(rounds_x_to_float32, model)
    assert v.correct and v.bound_layer > 1e-9, v.text
    assert "the precision your block computes in" not in v.text and "more than float64 rounding" in v.text


def test_a_learners_own_reshape_without_the_swap_is_named(model):
    # Written as a learner writes it, not through _block: (n, heads, d_k) and no swap, so each token attends
    # across its own 12 heads.
    from helpers.real_model import _layer_norm, gelu

    def no_swap(x, params, num_heads, mask=None):
        p, (n, d) = params, x.shape
        Q, K, V = ((x @ p["W_" + r] + p["b_" + r]).reshape(n, num_heads, d // num_heads) for r in "QKV")
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d // num_heads)
        h = _layer_norm(x + (softmax_rows(s) @ V).reshape(n, d) @ p["W_O"] + p["b_O"], p["gamma_1"], p["beta_1"],
                        p["eps"])
        return _layer_norm(h + gelu(h @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"], p["gamma_2"], p["beta_2"],
                           p["eps"])
    assert check_your_block(no_swap, model).mistake == "reshape_without_transpose"


def test_a_block_that_changes_its_inputs_in_place_is_told_so(model):
    def grows_x(x, params, num_heads, mask=None):
        out = worked_block(x, params, num_heads, mask)
        x += 1.0                                        # the caller's x changed
        return out

    def folds_the_scale_into_W_Q(x, params, num_heads, mask=None):
        params["W_Q"] /= 1.0                           # the same numbers, but written in place
        params["b_Q"] = params["b_Q"] * 1.0            # a new array under the caller's key
        return worked_block(x, params, num_heads, mask)
    v = check_your_block(grows_x, model)
    assert not v.correct and v.mistake == "mutates_inputs" and "x" in v.text and "params" not in v.text
    v = check_your_block(folds_the_scale_into_W_Q, model)
    # W_Q /= 1.0 leaves the numbers equal; the new b_Q array too: the dict is unchanged, so this block is right
    assert v.correct, v.text

    def zeroes_a_bias(x, params, num_heads, mask=None):
        out = worked_block(x, params, num_heads, mask)
        params["b_O"][...] = 0.0
        return out
    v = check_your_block(zeroes_a_bias, model)
    assert not v.correct and v.mistake == "mutates_inputs" and "params" in v.text


def test_a_block_that_returns_output_and_weights_is_told_to_return_only_the_output(model):
    def pair(x, params, num_heads, mask=None):
        return worked_block(x, params, num_heads, mask), np.zeros((num_heads, len(x), len(x)))
    v = check_your_block(pair, model)
    assert not v.correct and v.mistake == "returned_pair" and "Return only the output array" in v.text


def test_the_guide_lists_every_key_of_the_block_judge():
    import re
    guide = (Path(__file__).resolve().parent.parent / "INSTRUCTORS.md").read_text(encoding="utf-8")
    paragraph = guide.split("`helpers.exercises.check_your_block(workbook.encoder_block)`", 1)[1].split("\n\n", 1)[0]
    listed = set(re.findall(r"`(\w+)`", paragraph))
    assert set(BLOCK_FAULTS) | {"mutates_inputs", "returned_pair", "padding_mask_ignored", "no_mask_argument"} <= listed


def test_the_four_mistakes_of_the_brief_are_among_them():
    assert {"no_residual", "pre_ln", "no_gelu", "scale_by_d_model"} <= set(BLOCK_FAULTS)


def test_a_block_that_ignores_the_mask_passes_layer_0_and_six_layers_but_not_padding(model):
    v = check_your_block(lambda x, params, num_heads, mask=None: _block(x, params, num_heads, None), model)
    assert not v.correct and v.mistake == "padding_mask_ignored" and v.bound_model <= 1e-9


def test_a_block_without_a_mask_argument_is_told_so(model):
    v = check_your_block(lambda x, params, num_heads: _block(x, params, num_heads), model)
    assert v.mistake == "no_mask_argument" and v.bound_model <= 1e-9


def test_a_float32_block_is_right_to_the_precision_it_computes_in(model):
    def f32(x, params, num_heads, mask=None):
        p = {k: np.float32(v) if isinstance(v, np.ndarray) else v for k, v in params.items()}
        return _block(np.float32(x), p, num_heads, mask).astype(np.float32)
    v = check_your_block(f32, model)
    assert v.correct and 1e-9 < v.bound_layer <= BOUNDS[-1]
    assert "the precision your block computes in" in v.text


def test_the_stub_is_not_attempted_and_a_missing_piece_is_named(model):
    def stub(x, params, num_heads, mask=None):
        raise NotImplementedError("encoder_block: not written yet")

    def calls_a_stub(x, params, num_heads, mask=None):
        raise NotImplementedError("attention: not written yet")
    assert check_your_block(stub, model).mistake == "not_attempted"
    v = check_your_block(calls_a_stub, model)
    assert v.mistake == "piece_not_written" and "attention: not written yet" in v.text


def test_a_block_that_changes_the_weights_it_is_given_changes_nothing_in_the_model(model):
    before = model.run(SENTENCES[0]).embedding

    def vandal(x, params, num_heads, mask=None):
        for value in params.values():
            if isinstance(value, np.ndarray):
                value[...] = 0.0
        return x
    assert not check_your_block(vandal, model).correct
    assert np.array_equal(model.run(SENTENCES[0]).embedding, before)


@pytest.mark.parametrize("fn", [
    lambda x, params, num_heads, mask=None: None,
    lambda x, params, num_heads, mask=None: "text",
    lambda x, params, num_heads, mask=None: 1 / 0,
    lambda x, params, num_heads, mask=None: x[:, :3],
    lambda x, params, num_heads, mask=None: x * np.nan,
    lambda x, params, num_heads, mask=None: x,            # the identity: "different"
    lambda x: x,                                         # the wrong signature
    lambda *a, **k: exit(),
    42,
])
def test_odd_blocks_get_words_never_an_exception(model, fn):
    v = check_your_block(fn, model)
    assert not v.correct and isinstance(v.mistake, str) and v.text


def test_layer_parameters_are_copies_under_the_fields_names(model):
    p = model.layer_parameters(5)
    assert p["W_Q"].shape == (384, 384) and p["W_1"].shape == (384, 1536) and p["W_2"].shape == (1536, 384)
    assert set(p) == {"W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O", "gamma_1", "beta_1",
                      "W_1", "b_1", "W_2", "b_2", "gamma_2", "beta_2", "eps"}
    p["W_Q"][...] = 0.0
    assert np.any(model.layer_parameters(5)["W_Q"] != 0.0)
    for bad in (6, -1, 1.0, True, "0"):
        with pytest.raises(ValueError, match="layer must be a whole number from 0 to 5"):
            model.layer_parameters(bad)


def test_embedding_vectors_are_hidden_states_0(model):
    out = model.run(SENTENCES[1])
    assert np.array_equal(model.embedding_vectors(out.ids), out.hidden_states[0])
    with pytest.raises(ValueError, match="ids must"):
        model.embedding_vectors(np.array([0.5]))


def test_the_heatmap_claims_exercise_names_each_wrong_claim():
    from helpers.checkers.finale import heatmap_claims
    ex = heatmap_claims(0, 4, weight=0.718, weight_in_mixed=0.719, key_rank=3, apart=0.8874, off=0.9067)
    assert ex.feedback("c").correct
    for key, words in (("a", "evidence, not explanation"), ("b", "number 3 by length"), ("d", "far from 1")):
        f = ex.feedback(key)
        assert not f.correct and f.mistake == f"chose_{key}" and words in f.text


WORKBOOK_WITH_K_T = '''
import numpy as np
from helpers.attention import split_heads


def attention(Q, K, V, mask=None):
    scores = Q @ {transpose} / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    w = np.exp(scores - np.where(np.isfinite(top), top, 0.0))     # a row with every key hidden: all zeros
    total = w.sum(axis=-1, keepdims=True)
    w = w / np.where(total > 0, total, 1.0)
    return w @ V, w


def encoder_block(x, params, num_heads, mask=None):
    {body}
'''


def workbook_module(tmp_path, name, **parts):
    import importlib.util
    path = tmp_path / f"{name}.py"
    path.write_text(WORKBOOK_WITH_K_T.format(**parts), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_error_raised_in_the_learners_own_attention_is_told_as_theirs_with_its_fix(model, tmp_path):
    # K.T reverses every axis of the (12, n, 32) keys: the block's call of attention raises inside attention
    wb = workbook_module(tmp_path, "wb_k_t", transpose="K.T", body="""
    Q, K, V = (split_heads(x @ params["W_" + r] + params["b_" + r], num_heads) for r in "QKV")
    return attention(Q, K, V)[0].sum()""")
    v = check_your_block(wb.encoder_block, model)
    assert not v.correct and v.mistake == "batch_transpose"
    assert "the error came from your attention, which encoder_block calls" in v.text
    assert "diagnose(workbook.attention" in v.text and "np.swapaxes(K, -1, -2)" in v.text


def test_a_right_attention_given_wrong_shapes_by_the_block_is_said_to_be_right(model, tmp_path):
    # attention is right; the block passes unsplit queries (n, 384) with split keys (12, n, 32), so attention raises
    wb = workbook_module(tmp_path, "wb_shapes", transpose="np.swapaxes(K, -1, -2)", body="""
    K, V = (split_heads(x @ params["W_" + r] + params["b_" + r], num_heads) for r in "KV")
    return attention(x @ params["W_Q"], K, V)[0]""")
    v = check_your_block(wb.encoder_block, model)
    assert not v.correct and v.mistake == "raised"
    assert "came from your attention" in v.text and "diagnose finds attention right alone" in v.text


def test_an_error_in_the_block_itself_is_the_blocks(model, tmp_path):
    wb = workbook_module(tmp_path, "wb_own", transpose="np.swapaxes(K, -1, -2)", body="return x @ params['W_1'].T")
    v = check_your_block(wb.encoder_block, model)
    assert v.mistake == "raised" and "came from" not in v.text and v.text.startswith("On layer 0, encoder_block:")


def test_the_worked_block_runs_the_learners_layer_norm_of_notebook_07(model):
    # Issue 33: 11's encoder block uses the layer_norm built in 07. The worked block calls the workbook's
    # layer_norm by name, so a learner's workbook that holds it (here: the worked pieces, with a layer_norm
    # whose variance divides by d_model - 1, the unbiased_variance of 07) gives a block the judge fails.
    import inspect
    from helpers.checkers import solutions
    source = inspect.getsource(solutions.encoder_block)

    def block_using(layer_norm):
        namespace = {"np": np, "split_heads": solutions.split_heads, "merge_heads": solutions.merge_heads,
                     "attention": solutions.attention, "layer_norm": layer_norm}
        exec(source, namespace)
        return namespace["encoder_block"]

    def unbiased(x, gamma, beta, eps=1e-12):
        x = np.asarray(x, dtype=float)
        mu = x.mean(axis=-1, keepdims=True)
        return (x - mu) / np.sqrt(x.var(axis=-1, ddof=1, keepdims=True) + eps) * gamma + beta

    assert check_your_block(block_using(solutions.layer_norm), model).correct
    v = check_your_block(block_using(unbiased), model)
    # the verdict names the mistake of the learner's layer_norm, as 07's diagnose does (the fresh review)
    assert not v.correct and v.mistake == "unbiased_variance" and "your layer_norm, which" in v.text, v.text
