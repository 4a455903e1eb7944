"""diagnose(fn, piece="rope"): a learner's apply_rope(x, positions=None) against helpers.positions.apply_rope (issue 26).

Each misconception is written here as a learner would write it, independently of the checker's model,
and must be named by its key; right functions written other ways must pass.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.exercises import diagnose
from helpers.checkers.checker_rope import FAULTS, PIECE
from helpers.checkers.solutions import WORKED
from helpers.positions import apply_rope


def _rope(x, positions=None, exponent=lambda i, d: -2 * i / d, sign=1.0, start=0.0, use_given=True, half=False,
          unit=1.0, concatenated=False):
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2], x.shape[-1]
    m = np.arange(n) + start if positions is None or not use_given else np.asarray(positions, dtype=float)
    out = np.array(x, dtype=float)
    for i in range(d // 2):
        a, b = (i, i + d // 2) if half else (2 * i, 2 * i + 1)
        angle = sign * m * 10000.0 ** exponent(i, d) * unit
        out[..., a] = x[..., a] * np.cos(angle) - x[..., b] * np.sin(angle)
        out[..., b] = x[..., a] * np.sin(angle) + x[..., b] * np.cos(angle)
    if concatenated:                       # right pairs, written back as all first features, then all second
        out = np.concatenate([out[..., 0::2], out[..., 1::2]], axis=-1)
    return out


LEARNERS = {
    "frequency_exponent": lambda x, positions=None: _rope(x, positions, exponent=lambda i, d: -i / d),
    "frequency_inverted": lambda x, positions=None: _rope(x, positions, exponent=lambda i, d: 2 * i / d),
    "rotation_sign": lambda x, positions=None: _rope(x, positions, sign=-1.0),
    "positions_from_one": lambda x, positions=None: _rope(x, positions, start=1.0),
    "positions_ignored": lambda x, positions=None: _rope(x, positions, use_given=False),
    "rotate_half_layout": lambda x, positions=None: _rope(x, positions, half=True),
    "rotation_sign+rotate_half_layout": lambda x, positions=None: _rope(x, positions, sign=-1.0, half=True),
    "pair_index_ignored": lambda x, positions=None: _rope(x, positions, exponent=lambda i, d: 0.0),
    "not_rotated": lambda x, positions=None: np.array(x, dtype=float),
    "degrees": lambda x, positions=None: _rope(x, positions, unit=np.pi / 180),
    "not_interleaved": lambda x, positions=None: _rope(x, positions, concatenated=True),
    "positions_from_one+positions_ignored": lambda x, positions=None: _rope(x, positions, start=1.0, use_given=False),
}


def test_the_new_keys_say_what_went_wrong():
    assert "Nothing turned: your output equals x." in diagnose(LEARNERS["not_rotated"], piece="rope").text
    assert "out[..., 0::2] and out[..., 1::2]" in diagnose(LEARNERS["not_interleaved"], piece="rope").text


def rope_complex(x, positions=None):
    # a right one written with complex numbers, as several libraries do: each pair is x[2i] + 1j x[2i+1]
    x = np.asarray(x, dtype=float)
    n, d = x.shape[-2], x.shape[-1]
    m = np.arange(n) if positions is None else np.asarray(positions, dtype=float)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * m[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def rope_with_base(x, pos=None, base=10000.0):
    return _rope(x, pos) if base == 10000.0 else None


@pytest.mark.parametrize("key", sorted(LEARNERS))
def test_each_mistake_is_named(key):
    verdict = diagnose(LEARNERS[key], piece="rope")
    assert not verdict.correct and verdict.mistake == key, verdict.text


def test_every_fault_has_a_learner_function():
    assert set(FAULTS) <= set(LEARNERS)


@pytest.mark.parametrize("fn", [WORKED["rope"], _rope, rope_complex, rope_with_base,
                                lambda x, positions=None: _rope(np.asarray(x, np.float32), positions).astype(np.float32)],
                         ids=["worked", "loops", "complex", "other argument names", "float32"])
def test_right_functions_written_other_ways_pass(fn):
    verdict = diagnose(fn, piece="rope")
    assert verdict.correct, verdict.text


def test_float16_is_low_precision_and_a_stub_is_not_attempted():
    assert diagnose(lambda x, positions=None: _rope(np.asarray(x, np.float16), positions).astype(np.float16),
                    piece="rope").mistake == "low_precision"

    def apply_rope(x, positions=None):
        raise NotImplementedError("rope: not written yet")
    assert diagnose(apply_rope, piece="rope").mistake == "not_attempted"


def test_a_function_without_positions_is_told_to_take_them():
    verdict = diagnose(lambda x: _rope(x), piece="rope")
    assert verdict.mistake == "no_positions_argument", verdict.text


@pytest.mark.parametrize("value", [None, "text", np.nan, [[1.0]], 3])
def test_never_raises_whatever_the_function_returns(value):
    verdict = diagnose(lambda x, positions=None: value, piece="rope")
    assert not verdict.correct and verdict.mistake


def test_the_battery_tells_every_fault_from_the_right_answer():
    for key in FAULTS:
        differs = [not np.allclose(PIECE.model(c.args, frozenset([key])), PIECE.expected(c.args)) for c in PIECE.cases]
        assert any(differs), key


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), half=st.integers(1, 5), shift=st.floats(0, 50), seed=st.integers(0, 1000))
def test_the_worked_rope_agrees_with_the_courses_at_any_positions(n, half, shift, seed):
    x = np.random.default_rng(seed).standard_normal((2, n, 2 * half))
    positions = shift + np.arange(n)
    np.testing.assert_allclose(WORKED["rope"](x, positions), apply_rope(x, positions), atol=1e-12)
    np.testing.assert_allclose(rope_complex(x, positions), apply_rope(x, positions), atol=1e-12)
