"""The simulated translator of the interactive-predictive protocol (``simpe.loop.interactive.session``), counted by hand.

The system's side is given here as a table (typed prefix -> the full text it would complete), so that each count
below is worked out by hand from the protocol's rules (the module docstring); the real system, the run's decoder
completing from the typed prefix, is tested in tests/unit/test_prefix.py and, in the loop, in
tests/integration/test_interactive_loop.py.
"""
from __future__ import annotations

import pytest

from simpe.loop.interactive import session
from simpe.metrics.effort import KSMR, WSR

REFERENCE = "Wählen Sie Format"  # 17 characters, 3 words


def _system(table: dict[str, str]):
    asked: list[str] = []

    def complete(typed: str) -> str:
        asked.append(typed)
        return table[typed]

    return complete, asked


def test_char_level_one_correction_then_a_tail_to_delete():
    complete, asked = _system({"W": "Wählen Sie Formate"})
    effort = session("Klicken Sie Format", REFERENCE, complete, "char")
    # "K" -> types "W" (1 key, the cursor is there: no click); the completion is right up to the post-edit's end and
    # one "e" more: a click at the error (1), a keystroke deletes the rest (1)
    assert asked == ["W"]
    assert (effort.keystrokes, effort.mouse, effort.corrections, effort.completions) == (2, 1, 2, 1)
    assert effort.stats() == [3, 17] and KSMR.score_from_stats(effort.stats()) == pytest.approx(3 / 17)


def test_word_level_types_the_rest_of_the_word_and_its_space():
    complete, asked = _system({"Wählen ": "Wählen Sie Formate"})
    effort = session("Klicken Sie Format", REFERENCE, complete, "word")
    assert asked == ["Wählen "]
    # the first word is wrong from its first letter: "Wählen " typed (7 keys, 1 word stroke); then the tail deleted
    assert (effort.keystrokes, effort.mouse, effort.word_strokes, effort.corrections) == (8, 1, 1, 2)
    assert effort.stats() == [1, 3] and WSR.score_from_stats(effort.stats()) == pytest.approx(1 / 3)


def test_a_correct_proposal_costs_nothing_and_is_accepted():
    complete, asked = _system({})
    for level in ("char", "word"):
        effort = session(REFERENCE, REFERENCE, complete, level)
        assert effort.accepted and effort.stats()[0] == 0 and effort.completions == 0
    assert asked == []


def test_a_system_with_nothing_that_agrees_lets_the_translator_type_on():
    complete, asked = _system({"A": "X"})  # no completion of "A" that starts with "A"
    effort = session("", "Ab", complete, "char")
    # types "A" (1), the system offers nothing: types "b" (1), done; the cursor never moved: no click
    assert asked == ["A"] and (effort.keystrokes, effort.mouse, effort.completions, effort.unhelpful) == (2, 0, 1, 1)


def test_an_error_after_correct_text_costs_a_click():
    complete, asked = _system({"Wählen Sie F": "Wählen Sie Format", "Wählen Sie ": "Wählen Sie Format"})
    char = session("Wählen Sie Datei", REFERENCE, complete, "char")
    assert asked == ["Wählen Sie F"] and (char.keystrokes, char.mouse, char.completions) == (1, 1, 1)
    word = session("Wählen Sie Datei", REFERENCE, complete, "word")
    # the error is at "D": the word "Format" is typed whole (6 keys) and it is the last word: no completion needed
    assert (word.keystrokes, word.mouse, word.word_strokes, word.completions) == (6, 1, 1, 0)


def test_a_session_ends_within_one_correction_per_character():
    complete, _ = _system({REFERENCE[:i]: "" for i in range(1, len(REFERENCE) + 1)})  # a system that never helps
    effort = session("", REFERENCE, complete, "char")
    assert effort.keystrokes == len(REFERENCE) and effort.corrections == len(REFERENCE)
    with pytest.raises(ValueError, match="unknown level 'line'"):
        session("", REFERENCE, complete, "line")
