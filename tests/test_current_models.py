"""Notebook 10 (attention in current models, issue 26): its exercises, typed as a learner would type them,
and its window explorer.

The notebook's code cells run in this process (exercise_cases.run_in_process), so every exercise is built
from the inputs the notebook shows. The helpers it calls (apply_rope, grouped-query attention,
sliding_window_mask) are tested in tests/test_current_models_helpers.py; the rope checker in
tests/test_checker_rope.py; the tiled window in tests/test_tiling.py.
"""

import itertools

import numpy as np
import pytest

from exercise_cases import run_in_process
from helpers.attention import sliding_window_mask
from helpers.course import NOTEBOOKS_DIR
from helpers.exercises import KVCacheBytesExercise, RopeLayoutExercise, RopePairExercise, WindowReachExercise
from helpers.explorers import window_explorer, window_state

NS = run_in_process(NOTEBOOKS_DIR / "10_current_models.ipynb")

# (mistake, what the learner types); None: right.
CASES = {
    "ex_pair": [
        (None, "a = 200 * 10000 ** (-2 * 1 / 4)\nanswer = [np.cos(a) - 0.5 * np.sin(a), np.sin(a) + 0.5 * np.cos(a)]"),
        (None, "answer = [-0.871, 0.701]"),
        ("rotation_sign", "a = -200 * 10000 ** (-2 / 4)\nanswer = [np.cos(a) - 0.5 * np.sin(a), np.sin(a) + 0.5 * np.cos(a)]"),
        ("frequency_exponent", "a = 200 * 10000 ** (-1 / 4)\nanswer = [np.cos(a) - 0.5 * np.sin(a), np.sin(a) + 0.5 * np.cos(a)]"),
        ("degrees", "a = np.radians(200 * 10000 ** (-2 / 4))\nanswer = [np.cos(a) - 0.5 * np.sin(a), np.sin(a) + 0.5 * np.cos(a)]"),
        ("pair_index_ignored", "a = 200\nanswer = [np.cos(a) - 0.5 * np.sin(a), np.sin(a) + 0.5 * np.cos(a)]"),
        ("not_rotated", "answer = [1, 0.5]"),
        ("pair_swapped", "a = 200 * 10000 ** (-2 * 1 / 4)\nanswer = [np.sin(a) + 0.5 * np.cos(a), np.cos(a) - 0.5 * np.sin(a)]"),
        ("not_attempted", "answer = ..."),
    ],
    "ex_bytes": [
        (None, "answer = 2 * 28 * 4 * 128 * 8192 * 2 / 2**20"),
        (None, "answer = 448"),
        ("query_heads_counted", "answer = 2 * 28 * 28 * 128 * 8192 * 2 / 2**20"),
        ("keys_only", "answer = 28 * 4 * 128 * 8192 * 2 / 2**20"),
        ("cache_layers_forgotten", "answer = 2 * 4 * 128 * 8192 * 2 / 2**20"),
        ("bits_for_bytes", "answer = 2 * 28 * 4 * 128 * 8192 * 16 / 2**20"),
        ("decimal_megabytes", "answer = 2 * 28 * 4 * 128 * 8192 * 2 / 1e6"),
        ("keys_only", "answer = 2 * 28 * 4 * 128 * 8192 / 2**20"),      # bytes forgotten: the same 224, one message
        ("answered_in_bytes", "answer = 2 * 28 * 4 * 128 * 8192 * 2"),
        ("answered_in_gib", "answer = 2 * 28 * 4 * 128 * 8192 * 2 / 2**30"),
        ("not_attempted", "answer = ..."),
    ],
    "ex_reach": [
        (None, "answer = 4 * (9 - 1) + 1"),
        (None, "answer = 33"),
        ("window_times_layers", "answer = 4 * 9"),
        ("one_layer_only", "answer = 9"),
        ("self_not_counted", "answer = 4 * 8"),
        ("windows_multiplied", "answer = 9 ** 4"),
        ("not_attempted", "answer = ..."),
    ],
    "ex_layout": [
        (None, "answer = 'c'"),
        (None, "answer = '(C)'"),
        ("layouts_interchangeable", "answer = 'a'"),
        ("still_relative", "answer = 'b'"),
        ("lengths_change", "answer = 'd'"),
        ("not_a_choice", "answer = 'e'"),
        ("not_attempted", "answer = ..."),
    ],
    "ex_growth": [
        (None, "answer = 'b'"),
        (None, "answer = 'about 3 times as many'"),
        ("blocks_follow_window", "answer = 'a'"),
        ("blocks_stay", "answer = 'c'"),
        ("not_a_choice", "answer = 'd'"),
        ("not_attempted", "answer = ..."),
    ],
}

# Words each key's printed feedback must contain, so a reader sees the mistake named.
PHRASES = {
    None: "Correct!", "not_attempted": "Not attempted yet", "not_a_choice": "Answer with one of the letters",
    "rotation_sign": "the other way", "frequency_exponent": "10000^(-i/d)", "degrees": "degree mode",
    "query_heads_counted": "query heads", "keys_only": "the factor 2", "cache_layers_forgotten": "left out the layers",
    "bits_for_bytes": "bytes a number", "decimal_megabytes": "10^6 bytes",
    "pair_index_ignored": "pair 0's rate", "not_rotated": "Nothing turned", "pair_swapped": "swapped",
    "answered_in_bytes": "size in bytes", "answered_in_gib": "size in GiB",
    "window_times_layers": "counts the token itself in every layer", "one_layer_only": "one layer's reach",
    "self_not_counted": "own position", "windows_multiplied": "do not multiply",
    "layouts_interchangeable": "right on its own", "still_relative": "no longer cancel",
    "lengths_change": "keeps lengths",
    "blocks_follow_window": "also reads the block its queries sit in", "blocks_stay": "a wider window touches more",
}


def _answer(code):
    namespace = dict(NS)
    exec(code, namespace)
    return namespace["answer"]


@pytest.mark.parametrize("exercise, key, code", [(ex, key, code) for ex in CASES for key, code in CASES[ex]])
def test_each_answer_gets_the_feedback_that_names_it(exercise, key, code):
    feedback = NS[exercise].feedback(_answer(code))
    assert feedback.mistake == key and feedback.correct == (key is None), feedback.text
    assert PHRASES[key] in feedback.text, feedback.text


def test_forgetting_the_bytes_is_named_beside_the_keys_only():
    # at 2 bytes a number both slips give half the answer: the one message names both
    text = NS["ex_bytes"].feedback(224).text
    assert "the factor 2" in text and "numbers, not bytes" in text, text
    apart = KVCacheBytesExercise(28, 28, 4, 128, 8192, bits=32)                  # 4 bytes: the slips differ
    assert {"keys_only", "bytes_forgotten"} <= set(apart.mistakes)
    assert apart.feedback(2 * 28 * 4 * 128 * 8192 / 2**20).mistake == "bytes_forgotten"


@pytest.mark.parametrize("exercise", ["ex_pair", "ex_bytes", "ex_reach"])
def test_every_named_mistake_is_typed_told_apart_and_carries_only_its_phrase(exercise):
    ex = NS[exercise]
    assert set(ex.mistakes) <= {key for key, _ in CASES[exercise]}
    values = [("right", ex.expected)] + [(k, v) for k, _, v in ex._variants]
    for (a, x), (b, y) in itertools.combinations(values, 2):
        assert np.max(np.abs(x - y)) > 2 * ex.atol, f"{a} and {b} are too close"   # no answer fits two
    for key, message, _ in ex._variants:
        assert PHRASES[key] in message
        assert not any(PHRASES[other] in message for other, _, _ in ex._variants if other != key), key


def test_the_right_answers_are_computed_from_the_inputs():
    # By hand: angle 200 * 10000^(-2/4) = 2 rad; (cos 2 - 0.5 sin 2, sin 2 + 0.5 cos 2).
    np.testing.assert_allclose(NS["ex_pair"].expected, [np.cos(2) - 0.5 * np.sin(2), np.sin(2) + 0.5 * np.cos(2)])
    assert NS["ex_bytes"].expected == 448      # by hand: 2 * 28 * 4 * 128 * 8192 * 2 bytes = 448 * 2^20
    assert WindowReachExercise(window=4096, layers=32).expected == 131041               # Mistral 7B's span, k x (W - 1) + 1
    # The notebook's own GiB line: Mistral 7B's sizes (Jiang et al. 2023, table 1), 2 bytes a number.
    assert KVCacheBytesExercise(32, 32, 32, 128, 4096).expected == 2048
    assert KVCacheBytesExercise(32, 32, 8, 128, 4096).expected == 512


def test_the_layout_exercise_reads_the_notebooks_measurement():
    assert NS["measured"] == {"same_layout_relative": True, "mixed_layout_relative": False, "lengths_kept": True}
    for bad in ({"same_layout_relative": True}, {"same_layout_relative": True, "mixed_layout_relative": True,
                                                  "lengths_kept": True}, "yes"):
        with pytest.raises(ValueError, match="measured"):
            RopeLayoutExercise(bad)


@pytest.mark.parametrize("make, match", [
    (lambda: RopePairExercise([1, 0], -1, 0, 2), "position"),
    (lambda: RopePairExercise([1, 0], 1, 2, 4), "pair index"),
    (lambda: KVCacheBytesExercise(2, 4, 3, 8, 10), "num_kv_heads"),
    (lambda: KVCacheBytesExercise(2, 4, 2, 8, 10, bits=12), "bits"),
    (lambda: WindowReachExercise(0, 2), "window"),
])
def test_an_instructors_bad_inputs_are_named(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# ------------------------------------------------------------ no exercise's answer is on the page above it

@pytest.mark.parametrize("exercise, cell", [("ex_pair", "ex-pair-try"), ("ex_bytes", "ex-bytes-try"),
                                            ("ex_reach", "ex-reach-try")])
def test_no_answer_is_printed_above_its_exercise_nor_in_the_window_explorers_states(exercise, cell):
    # issue 33, section 2: ex_reach asked for 4 layers of window 6, whose 4 x (6 - 1) + 1 = 21 the window
    # explorer's static form prints in its window-6, 4-layer state ("... = 21, capped at n = 16"); a window of 9
    # is past the slider's 8, and 33 is no number of any state, nor of any output or sentence above the exercise
    import nbformat

    from exercise_cases import NUMBER, numbers_above
    from helpers.explorers.window import LAYERS_MAX, WINDOW_MAX
    nb = nbformat.read(NOTEBOOKS_DIR / "10_current_models.ipynb", as_version=4)
    above = numbers_above(nb, cell)
    states = [float(x) for w in range(1, WINDOW_MAX + 1) for layers in range(1, LAYERS_MAX + 1)
              for message in window_state(w, layers).messages for x in NUMBER.findall(message)]
    atol, shown = NS[exercise].atol, above + states
    found = [[x for x in shown if abs(x - value) <= atol] for value in np.ravel(NS[exercise].expected)]
    assert not all(found), (exercise, found)            # a pair is read off only when both of its numbers are
    assert not found[0], (exercise, found)              # and the first of ex_pair's, -0.871, is nowhere
    assert 21 in states                                   # why: the old inputs' answer was there


# ------------------------------------------------------------ the window explorer

def _reach_by_paths(n, window, layers):
    # token j reaches token i when a chain i = k_L, ..., k_0 = j steps back 0 to window - 1 positions each layer
    reach = np.eye(n, dtype=bool)
    for _ in range(layers):
        reach = np.array([[any(reach[k, j] for k in range(n) if 0 <= i - k < window) for j in range(n)]
                          for i in range(n)])
    return reach


@pytest.mark.parametrize("window, layers", [(1, 3), (2, 1), (3, 2), (4, 5), (8, 6), (5, 3)])
def test_window_state_is_the_boolean_product_of_the_masks(window, layers):
    state = window_state(window, layers)
    np.testing.assert_array_equal(state.reach, _reach_by_paths(16, window, layers))
    assert state.last_reach == state.formula == min(16, layers * (window - 1) + 1)
    if layers == 1:
        np.testing.assert_array_equal(state.reach, sliding_window_mask(16, window))


def test_the_explorer_follows_its_sliders_and_refuses_what_they_cannot_show():
    ex = window_explorer()
    assert ex.state.last_reach == 5 and "5 of 16 positions" in ex.picture.value
    ex.controls["window"].value, ex.controls["layers"].value = 4, 4
    assert ex.state.last_reach == 13 and ex.picture.value.count("&#9679;") == int(ex.state.reach.sum())
    page = ex._repr_mimebundle_()["text/html"]
    assert "saved picture of the explorer" in page and "4 layers of window 4" in page
    for bad in ({"window": 0}, {"window": 9}, {"layers": 7}, {"layers": 2.0}, {"window": True}):
        with pytest.raises(ValueError, match="slider"):
            window_explorer(**bad)


def test_the_window_growth_exercise_counts_blocks_as_derived_by_hand():
    # By hand: n = 16,384 in blocks of 256 is 64 query blocks. A window of 512 spans 2 blocks, so query block q
    # reads key blocks q - 2 to q (fewer for q < 2): 1 + 2 + 3 x 62 = 189. A window of 2,048 spans 8: blocks
    # q - 8 to q, 1 + 2 + ... + 8 + 9 x 56 = 36 + 504 = 540, 2.86 times, near (8 + 1) / (2 + 1) = 3, not the
    # window's 4: each query block also reads the block its queries sit in.
    assert NS["ex_growth"].counts == (189, 540)
    assert NS["ex_growth"].answer == "b" and "540" in NS["ex_growth"].feedback("a").text
    from helpers.exercises import WindowGrowthExercise
    # a text of one block: 1 key block at either window, so the answer is measured as "the same number"
    assert WindowGrowthExercise(n=256, block_size=256, window=512, wider=4096).answer == "c"
    with pytest.raises(ValueError, match="wider must be a window wider"):
        WindowGrowthExercise(n=4096, block_size=256, window=512, wider=512)
    with pytest.raises(ValueError, match="window must be a positive whole number"):
        WindowGrowthExercise(n=4096, block_size=256, window=0, wider=512)
    with pytest.raises(ValueError, match="told apart"):   # blocks far smaller than the windows: 3.91 against 4
        WindowGrowthExercise(n=16384, block_size=16, window=512, wider=2048)


def test_the_choice_exercises_answers_are_not_printed_above_them():
    # issue 33, section 2: section 1 used to print the mixed layouts' measurement ("... m - n only: False"), which
    # is exercise 4's answer; the 540 blocks of exercise 5 appear in no output above it
    import nbformat

    from exercise_cases import numbers_above
    nb = nbformat.read(NOTEBOOKS_DIR / "10_current_models.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    layout = next(i for i, c in enumerate(code) if "ex_layout.check(answer)" in c.source)
    printed = "\n".join(str(o.get("text", "")) for c in code[:layout] for o in c.outputs)
    assert "rotate-half, m - n only" not in printed and "one layout for both" in printed
    growth = next(c for c in code if "ex_growth.check(answer)" in c.source)
    assert 540 not in numbers_above(nb, growth.id) and 45 in numbers_above(nb, growth.id)
