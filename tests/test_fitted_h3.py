"""Fitted faults of positional_encoding and rope (issue 32, sections 1, 3 and 5).

Each wrong function is written the way public code writes it (the Annotated Transformer's exp-log rates with
another base, fairseq's positions after a padding index, Llama's rotate_half with repeat_interleave frequencies,
np.sin(np.degrees(angle)), ...). A family must fit its parameter on inputs of any size: each is checked on two
parts of the battery of different sizes, and the verdict must name the learner's own value. Then: the input a
verdict points to is one where the named fault changes the output, and a right function in float16 is
low_precision while no named fault lands inside that tolerance.
"""

import dataclasses
import math
import types

import numpy as np
import pytest

from helpers.checkers import checker_numeric, checker_positions, checker_rope, diagnose
from helpers.checkers.runner import matches
from helpers.positions import apply_rope, sinusoidal_positional_encoding

PE, ROPE = checker_positions.PIECE, checker_rope.PIECE


def _parts(piece, *names):
    """The piece with only the battery's cases of those names (inputs of other sizes than the whole battery)."""
    cases = tuple(c for c in piece.cases if c.name in names)
    assert len(cases) == len(names)
    return dataclasses.replace(piece, cases=cases)


PE_PARTS = [_parts(PE, "(4, 4)", "(1, 8)", "(6, 2)"),
            _parts(PE, "(3, 6)", *[c.name for c in PE.cases[4:]])]
ROPE_PARTS = [_parts(ROPE, "one pair", "(4, 4)", "n = 1"),
              _parts(ROPE, "given positions", "batch", "random (6, 8)", "random (2, 3, 7, 16)")]


def _sizes(piece):
    return {np.shape(piece.expected(c.args)) for c in piece.cases}


def test_the_two_parts_of_each_battery_have_inputs_of_other_sizes():
    for a, b in (PE_PARTS, ROPE_PARTS):
        assert _sizes(a).isdisjoint(_sizes(b))


def _named(piece_parts, fn, key, *words):
    """The family key, and its fitted value in the text, on the whole battery and on each part."""
    whole = diagnose(fn, piece=piece_parts[0].name)
    verdicts = [whole] + [part.check(fn, 2.0) for part in piece_parts]
    for verdict in verdicts:
        assert not verdict.correct and verdict.mistake == key, verdict.text
        for word in words:
            assert word in verdict.text, verdict.text
    return whole


# --------------------------------------------------------------------------
# positional_encoding
# --------------------------------------------------------------------------

def pe_with_base(base):
    def positional_encoding(max_len, d_model):
        """The Annotated Transformer's rates, exp(-2i log(base) / d_model), with another base."""
        pe = np.zeros((max_len, d_model))
        position = np.arange(0, max_len)[:, None]
        div_term = np.exp(np.arange(0, d_model, 2) * -(math.log(base) / d_model))
        pe[:, 0::2] = np.sin(position * div_term)
        pe[:, 1::2] = np.cos(position * div_term)
        return pe
    return positional_encoding


def pe_after_padding(padding_idx):
    def positional_encoding(n, d_model):
        """fairseq's make_positions: positions count from padding_idx + 1."""
        positions = np.arange(n) + padding_idx + 1
        angle = positions[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
        out = np.empty((n, d_model))
        out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
        return out
    return positional_encoding


def pe_in_degrees(n, d_model):
    angle = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((n, d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(np.degrees(angle)), np.cos(np.degrees(angle))
    return out


def pe_in_radians(n, d_model):
    angle = np.arange(n)[:, None] / 10000 ** (np.arange(0, d_model, 2) / d_model)
    out = np.empty((n, d_model))
    out[:, 0::2], out[:, 1::2] = np.sin(np.radians(angle)), np.cos(np.radians(angle))
    return out


@pytest.mark.parametrize("base, named", [(1000.0, "1000"), (50.0, "50"), (500000.0, "500000"), (2500.0, "2500")])
def test_another_base_of_the_encoding_is_named_with_its_value(base, named):
    _named(PE_PARTS, pe_with_base(base), "wrong_base", f"base {named}:", "10000")


def test_the_base_100_is_the_exponent_i_over_d_and_says_so():
    # 100^(2i/d) = 10000^(i/d): the same numbers, today's key, and the verdict names the base too
    verdict = diagnose(pe_with_base(100.0), piece="positional_encoding")
    assert verdict.mistake == "exponent_i_over_d" and "base 100" in verdict.text
    verdict = diagnose(rope_hf(100.0, "interleaved", "every_two"), piece="rope")
    assert verdict.mistake == "frequency_exponent" and "base 100" in verdict.text


def pe_base_and_column_exponent(base):
    def positional_encoding(n, d_model):
        """Another base, and the cosines' exponent from their own column, arange(1, d, 2) (maxjcohen/transformer
        #62): a family combined with a fixed fault of another part."""
        pos = np.arange(n)[:, None]
        pe = np.zeros((n, d_model))
        pe[:, 0::2] = np.sin(pos / np.power(base, np.arange(0, d_model, 2) / d_model))
        pe[:, 1::2] = np.cos(pos / np.power(base, np.arange(1, d_model, 2) / d_model))
        return pe
    return positional_encoding


def pe_base_and_swapped(base):
    def positional_encoding(n, d_model):
        """Another base, cosines in the even columns and sines in the odd ones."""
        angle = np.arange(n)[:, None] / base ** (np.arange(0, d_model, 2) / d_model)
        pe = np.empty((n, d_model))
        pe[:, 0::2], pe[:, 1::2] = np.cos(angle), np.sin(angle)
        return pe
    return positional_encoding


@pytest.mark.parametrize("fn, fault, named", [
    (pe_base_and_column_exponent(1000.0), "two_i_plus_one", "1000"),
    (pe_base_and_column_exponent(500.0), "two_i_plus_one", "500"),
    (pe_base_and_swapped(2000.0), "sin_cos_swapped", "2000"),
])
def test_another_base_with_a_fixed_fault_of_another_part_is_both_keys_on_inputs_of_other_sizes(fn, fault, named):
    for verdict in [diagnose(fn, piece="positional_encoding")] + [part.check(fn, 2.0) for part in PE_PARTS]:
        assert set(verdict.mistake.split("+")) == {"wrong_base", fault}, verdict.text
        assert f"base {named}:" in verdict.text and checker_positions.FAULTS[fault][1] in verdict.text


def test_the_right_base_written_as_an_exp_of_a_log_passes():
    assert diagnose(pe_with_base(10000.0), piece="positional_encoding").correct


@pytest.mark.parametrize("padding_idx, start", [(1, 2), (4, 5), (-2, -1)])
def test_positions_shifted_by_any_whole_number_are_named_with_the_shift(padding_idx, start):
    _named(PE_PARTS, pe_after_padding(padding_idx), "positions_shifted", f"start at {start}:")


def test_a_shift_by_one_keeps_its_own_key():
    assert diagnose(pe_after_padding(0), piece="positional_encoding").mistake == "positions_from_one"


def test_row_zero_left_blank_is_its_own_key_not_a_shift():
    # the other rows are the right rows of their positions: nothing is shifted
    def positional_encoding(n, d_model):
        pe = sinusoidal_positional_encoding(n, d_model)
        pe[0] = 0.0
        return pe
    for part in PE_PARTS:
        verdict = part.check(positional_encoding, 2.0)
        assert verdict.mistake == "first_row_zeros" and "0, 1, 0, 1" in verdict.text, verdict.text


def test_degrees_either_way_round_is_one_key_and_the_verdict_says_which():
    for part in [None] + PE_PARTS:
        into = diagnose(pe_in_degrees, piece="positional_encoding") if part is None else part.check(pe_in_degrees, 2.0)
        read = diagnose(pe_in_radians, piece="positional_encoding") if part is None else part.check(pe_in_radians, 2.0)
        assert into.mistake == read.mistake == "degrees"
        assert "turns it into degrees first" in into.text and "reads it as degrees" not in into.text
        assert "reads it as degrees" in read.text and "turns it into degrees" not in read.text
    assert "turns it into degrees first" in diagnose(lambda n, d: pe_in_degrees(n, d).T,
                                                     piece="positional_encoding").text


# --------------------------------------------------------------------------
# rope
# --------------------------------------------------------------------------

def rope_hf(base=10000.0, frequencies="cat", pairing="half", offset=0, offset_given=False, unit=None):
    """The way libraries write RoPE: one angle per feature (emb), then x * cos + rotate(x) * sin."""
    def apply_rope(x, positions=None):
        x = np.asarray(x, dtype=float)
        n, d = x.shape[-2:]
        m = np.arange(offset, offset + n) if positions is None else np.asarray(positions) + (
            offset if offset_given else 0)
        inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
        freqs = np.outer(m, inv_freq)
        if unit is not None:
            freqs = unit(freqs)
        emb = np.concatenate([freqs, freqs], -1) if frequencies == "cat" else np.repeat(freqs, 2, axis=-1)
        if pairing == "half":                                 # rotate_half
            rotated = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
        else:                                                 # rotate_every_two (GPT-J)
            rotated = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape)
        return x * np.cos(emb) + rotated * np.sin(emb)
    return apply_rope


def test_the_library_forms_with_their_own_layouts_are_right_or_today_s_keys():
    assert diagnose(rope_hf(frequencies="interleaved", pairing="every_two"), piece="rope").correct
    assert diagnose(rope_hf(frequencies="cat", pairing="half"), piece="rope").mistake == "rotate_half_layout"


@pytest.mark.parametrize("base, named", [(500000.0, "500000"), (1000000.0, "1000000"), (1000.0, "1000"),
                                         (20000.0, "20000")])
def test_another_base_of_rope_is_named_with_its_value(base, named):
    _named(ROPE_PARTS, rope_hf(base, "interleaved", "every_two"), "wrong_base", f"base {named}:", "10000")


@pytest.mark.parametrize("offset", [2, 5, -3])
def test_rope_positions_shifted_by_an_offset_are_named_with_it(offset):
    fn = rope_hf(frequencies="interleaved", pairing="every_two", offset=offset)
    _named([ROPE_PARTS[0], _parts(ROPE, "batch", "random (2, 3, 7, 16)")], fn, "positions_shifted",
           f"shifted by {offset}:", "use as they are: right")
    given_too = rope_hf(frequencies="interleaved", pairing="every_two", offset=offset, offset_given=True)
    verdict = _named(ROPE_PARTS, given_too, "positions_shifted", f"shifted by {offset}:")
    assert "to the positions given too" in verdict.text


def test_rope_positions_from_one_everywhere_keep_their_key():
    verdict = diagnose(rope_hf(frequencies="interleaved", pairing="every_two", offset=1, offset_given=True),
                       piece="rope")
    assert verdict.mistake == "positions_from_one" and "given too" in verdict.text, verdict.text


def test_repeat_interleave_frequencies_with_rotate_half_are_a_mixed_layout():
    # raiyanyahya/how-to-train-your-gpt #6
    verdict = _named(ROPE_PARTS, rope_hf(frequencies="interleaved", pairing="half"), "rope_layout_mixed",
                     "feature i with feature i + d/2 (rotate_half)", "np.repeat(theta, 2)")
    assert "You paired neighbours" not in verdict.text


def test_neighbour_pairs_with_concatenated_frequencies_are_a_mixed_layout():
    verdict = _named(ROPE_PARTS, rope_hf(frequencies="cat", pairing="every_two"), "rope_layout_mixed",
                     "You paired neighbours (2i, 2i + 1)", "np.concatenate([theta, theta])")
    assert "(rotate_half), but" not in verdict.text


def test_rope_degrees_either_way_round_is_one_key_and_the_verdict_says_which():
    into = diagnose(rope_hf(frequencies="interleaved", pairing="every_two", unit=np.degrees), piece="rope")
    read = diagnose(rope_hf(frequencies="interleaved", pairing="every_two", unit=np.radians), piece="rope")
    assert into.mistake == read.mistake == "degrees"
    assert "turns it into degrees first" in into.text and "reads it as degrees" in read.text


# --------------------------------------------------------------------------
# Section 3: the input a verdict points to shows the mistake
# --------------------------------------------------------------------------

SAMPLES = {"wrong_base": [1000.0, 500000.0], "positions_shifted": [2, -1], "rope_layout_mixed": ["half", "neighbour"],
           "positions_from_one": [(1, True)], "positions_from_first_axis": [0]}
BATCH_ONLY = ("positions_from_first_axis",)
"""Families that show only on a batch, where numpy refuses them: the hint's one matrix cannot show them."""


def _sample(family):
    values = SAMPLES[family.key]
    if family.key == "positions_shifted" and family in ROPE.families:
        values = [(2, False), (-1, True)]
    return values


def _key_learners(piece):
    """(key, learner, model of the case) for every key of the piece: the fixed faults (each way they are written)
    and the families with sample values."""
    names = piece.arguments + tuple(piece.optional)
    found = []
    for key in piece.faults:
        forms = piece.model(piece.cases[0].args, frozenset([key]))
        for i in range(len(forms) if isinstance(forms, list) else 1):
            def model(args, key=key, i=i):
                out = piece.model(args, frozenset([key]))
                return out[i] if isinstance(out, list) else out
            found.append((key, model, model))
    for family in piece.families:
        for value in _sample(family):
            found.append((family.key, lambda args, family=family, value=value: (family.predict(args, value) or [None])[0],
                          lambda args, family=family, value=value: _first(family.model(args, value))))  # numpy's errors
    learners = []
    for key, model, computes in found:
        def learner(*a, computes=computes):
            out = computes(dict(zip(names, a + (None,) * (len(names) - len(a)))))
            return None if out is None else np.array(out)
        learners.append((key, learner, model))
    return learners


def _first(out):
    return out[0] if isinstance(out, list) else out


@pytest.mark.parametrize("piece", [PE, ROPE], ids=lambda p: p.name)
def test_the_case_a_verdict_points_to_is_one_the_named_fault_changes(piece):
    for key, learner, model in _key_learners(piece):
        verdict = piece.check(learner, 2.0)
        assert verdict.mistake == key, (key, verdict.text)
        case = next(c for c in piece.cases if c.name == verdict.case)
        out, want = model(case.args), piece.expected(case.args)
        assert out is None or np.shape(out) != np.shape(want) or not np.allclose(out, want), (key, case.name)
        assert "Print yours for" not in verdict.text        # the hint is for an output no fault explains


def test_the_hints_inputs_show_the_mistakes_of_layout_and_frequencies():
    ones = {"x": np.ones((3, 4)), "positions": None}
    right = apply_rope(ones["x"])
    assert "np.ones((3, 4))" in ROPE.hint
    for key in ("rotate_half_layout", "not_interleaved", "frequency_exponent", "rotation_sign", "degrees"):
        out = ROPE.model(ones, frozenset([key]))
        assert all(not np.allclose(o, right) for o in (out if isinstance(out, list) else [out])), key
    for family in ROPE.families:
        for value in _sample(family) if family.key not in BATCH_ONLY else ():
            assert not np.allclose(family.predict(ones, value)[0], right), (family.key, value)
    pe_args = {"n": 4, "d_model": 4}
    assert "n = 4, d_model = 4" in PE.hint
    for family in PE.families:
        for value in _sample(family):
            assert not np.allclose(family.predict(pe_args, value)[0], sinusoidal_positional_encoding(4, 4))
    assert not np.allclose(PE.model(pe_args, frozenset(["first_row_zeros"])), sinusoidal_positional_encoding(4, 4))


# --------------------------------------------------------------------------
# Section 5: float16
# --------------------------------------------------------------------------

def rope_float16(x, positions=None):
    """Every step in float16, the angles too (as a half-precision model computes them)."""
    x = np.asarray(x).astype(np.float16)
    n, d = x.shape[-2], x.shape[-1]
    m = (np.arange(n) if positions is None else np.asarray(positions)).astype(np.float16)
    inv_freq = (1.0 / 10000 ** (np.arange(0, d, 2) / d)).astype(np.float16)
    angle = m[:, None] * inv_freq
    out = np.empty_like(x)
    out[..., 0::2] = x[..., 0::2] * np.cos(angle) - x[..., 1::2] * np.sin(angle)
    out[..., 1::2] = x[..., 0::2] * np.sin(angle) + x[..., 1::2] * np.cos(angle)
    return out


def pe_float16(n, d_model):
    pos = np.arange(n, dtype=np.float16)[:, None]
    angle = pos / (10000.0 ** (np.arange(0, d_model, 2) / d_model)).astype(np.float16)
    pe = np.zeros((n, d_model), np.float16)
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def test_a_right_rope_and_encoding_computed_in_float16_are_low_precision():
    assert diagnose(rope_float16, piece="rope").mistake == "low_precision"
    assert diagnose(pe_float16, piece="positional_encoding").mistake == "low_precision"


@pytest.mark.parametrize("piece", [PE, ROPE], ids=lambda p: p.name)
def test_no_named_fault_lands_inside_the_float16_tolerance(piece):
    for key, _, model in _key_learners(piece):
        inside = True
        for case in piece.cases:
            out, want = model(case.args), np.asarray(piece.expected(case.args), dtype=float)
            run = types.SimpleNamespace(case=case)
            atol = checker_numeric._low_atol(piece, run, want)
            if out is None or not matches(np.asarray(out, dtype=float), want, None, checker_numeric.LOW_RTOL, atol):
                inside = False
                break
        assert not inside, key


def test_diagnose_stays_fast_on_fitted_faults():
    import time
    for fn, piece in ((rope_hf(frequencies="interleaved", pairing="half"), "rope"),
                      (rope_hf(base=3.0e5, frequencies="interleaved", pairing="every_two"), "rope"),
                      (pe_with_base(1000.0), "positional_encoding"),
                      (lambda n, d: sinusoidal_positional_encoding(n, d) * 1.1, "positional_encoding"),
                      (lambda x, positions=None: np.asarray(x) * 1.1, "rope")):
        started = time.perf_counter()
        diagnose(fn, piece=piece)
        assert time.perf_counter() - started < 2.0
