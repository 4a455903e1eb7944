"""Notebook 11's exercises: no answer is on the page above its exercise (issue 33, section 2).

Exercise 2 of an earlier version (ex_row, bank's weights from printed raw scores) is gone: the real-model
explorer stored its row (layer 0 head 10 of the river sentence) for the static page; moved to "The bank by the
river was muddy." it was still one typed sentence away in the live explorer, its cell ran the model that holds
the answer, and it asked again for 01's softmax build (two fresh reviews).
Exercise 1 (ex_share) is a prediction about the muddy sentence in layer 0 head 4: the weight it turns on is
measured only when the learner checks (and in the folded solution below it). Exercise 2 (ex_claims) chooses
the claim a row supports; the page prints weights, lengths and cosines of that row, never its scores, so its
answer ("bank's query scores river's key higher than any other key") is the softmax's order, which the
learner must bring: not a read-off, and its inputs are unchanged.
"""

import json
import re

import nbformat
import numpy as np
import pytest

from exercise_cases import numbers_above
from helpers.course import NOTEBOOKS_DIR
from helpers.exercises import row_share_prediction
from helpers.exercises.feedback import EXACT_ATOL
from helpers.real_model import load_minilm

NB11 = NOTEBOOKS_DIR / "11_real_model.ipynb"
RIVER = "The bank by the river was steep."


@pytest.fixture(scope="module")
def nb():
    return nbformat.read(NB11, as_version=4)


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def _cell(nb, cell_id):
    return next(c for c in nb.cells if c.get("id") == cell_id)


def _shown(cell):
    return "".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in cell.outputs)


def _above(nb, cell_id):
    """The prose and every text output above the cell ``cell_id``, whitespace folded."""
    end = next(k for k, c in enumerate(nb.cells) if c.get("id") == cell_id)
    text = "\n".join(c.source if c.cell_type == "markdown" else _shown(c) for c in nb.cells[:end])
    return re.sub(r"\s+", " ", text)


def _printed(row):
    return re.sub(r"\s+", " ", np.array2string(row, precision=3, suppress_small=True))


def _muddy(nb):
    return re.search(r'MUDDY = "([^"]+)"', _cell(nb, "f2fb2736").source).group(1)


def _explorer_sentence(nb):
    """The sentence whose every layer, head and token the explorer's stored static form holds."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and "real_model_explorer(" in c.source)
    stored = re.search(r"<script type='application/json' class='course-explorer-grid'>(.*?)</script>",
                        cell.outputs[0]["data"]["text/html"], re.S).group(1)
    return json.loads(stored[:stored.index(',"grid":[')] + "}}")["real"]["text"]


def test_the_exercises_sentence_is_run_nowhere_above_them_nor_stored_by_the_explorer(nb):
    muddy = _muddy(nb)
    assert "muddy" not in _above(nb, "exercises-md").lower()
    assert _explorer_sentence(nb) == RIVER != muddy
    code = [c.source for c in nb.cells[:nb.cells.index(_cell(nb, "share-setup"))] if c.cell_type == "code"]
    assert [s for s in code if "MUDDY" in s] == [_cell(nb, "f2fb2736").source]     # defined there, run by none


def test_exercise_1s_weight_is_measured_only_when_the_learner_checks(nb, model):
    muddy = model.run(_muddy(nb))
    w = muddy.attention[0, 4, muddy.index("bank")]
    assert muddy.tokens[muddy.index("river")] == "river"
    for shown in (_above(nb, "share-check"), _shown(_cell(nb, "share-check"))):
        assert _printed(w) not in shown and f"{w[muddy.index('river')]:.3f}" not in shown
    assert not [x for x in numbers_above(nb, "share-check") if abs(x - w[muddy.index("river")]) <= EXACT_ATOL]
    ex = row_share_prediction(RIVER, _muddy(nb), 0, 4, model=model)
    assert ex.answer == "c" and f"{w[muddy.index('river')]:.3f}" in ex.feedback("c").text


def test_exercise_1_refuses_inputs_its_premise_does_not_hold_for(model):
    with pytest.raises(ValueError, match="layer must be 0"):
        row_share_prediction(RIVER, "The bank by the river was muddy.", layer=1, model=model)
    with pytest.raises(ValueError, match="same positions"):
        row_share_prediction(RIVER, "The river bank was muddy.", model=model)
    with pytest.raises(ValueError, match="at least 0.01"):          # 0.718 -> 0.719 in layer 0 head 4
        row_share_prediction(RIVER, "The bank by the river was steep and high.", model=model)


def test_exercise_2s_answer_is_not_said_above_it(nb):
    ex_claims_answer = "scores river's key higher than any other key"
    assert ex_claims_answer not in _above(nb, "claims-md")
    assert "score" not in _shown(_cell(nb, "8ed355d5")).split("river's key is")[0]   # key_report: no scores column
