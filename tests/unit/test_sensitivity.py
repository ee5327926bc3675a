"""The MBR sensitivity of Amrhein and Sennrich (2022): which words are found (worked out by hand), what each change does, and a real run."""
from __future__ import annotations

import random

import pytest

from simpe.errors import ConfigError
from simpe.measure.sensitivity import CHANGES, CONTROLS, candidates, change, format_table, named_entities, nouns, numbers, summarise
from simpe.metrics.stopwords import load_stopwords

SRC = "Choose Tools - Options - LibreOffice Calc - View and select the cell in row 12, column 3.5."
REF = "Wählen Sie Extras - Optionen - LibreOffice Calc - Ansicht und markieren Sie die Zelle in Zeile 12, Spalte 3,5."
DE, EN = load_stopwords("de"), load_stopwords("en")


def texts(spans):
    return [s.text for s in spans]


def test_words_are_found_offline_by_the_stated_rules():
    assert texts(numbers(REF)) == ["12", "3,5"]
    assert texts(named_entities(REF, SRC)) == ["LibreOffice", "Calc"]  # capitalised, not first, written the same in the source
    assert texts(nouns(REF, SRC, "de", DE)) == ["Extras", "Optionen", "Ansicht", "Zelle", "Zeile", "Spalte"]  # not "Sie"
    assert texts(nouns(SRC, REF, "en", EN)) == ["cell"]  # determiner + noun + stopword; "row 12" has no determiner
    assert texts(nouns("Select the first cell and a range.", "", "en", EN)) == ["range"]  # "first cell": an adjective between
    with pytest.raises(ConfigError, match="no noun rule for language 'fr'; known: de, en"):
        nouns(REF, SRC, "fr", DE)


@pytest.mark.parametrize("kind", CHANGES)
def test_each_change_alters_one_word_as_named(kind: str):
    pools = {"num": ["7", "12", "3,5"], "NE": ["Writer", "Calc"], "noun": ["Tabelle", "Zelle"]}
    for seed in range(20):
        made = candidates(SRC, REF, pools, "de", DE, random.Random(seed), "HALLUCINATION", "ALTERNATIVE")
        new = made[kind]
        before, after = REF.split(), new.split()
        assert len(before) == len(after) and sum(a != b for a, b in zip(before, after)) == 1
        old_word, new_word = next((a, b) for a, b in zip(before, after) if a != b)
        if kind.endswith("add"):
            assert len(new_word) == len(old_word) + 1
        elif kind.endswith("del"):
            assert len(new_word.strip(".,")) < len(old_word.strip(".,"))
        elif kind.endswith("sub"):
            assert len(new_word) == len(old_word) and sum(x != y for x, y in zip(new_word, old_word)) == 1
        elif kind.endswith("whole"):
            assert new_word.strip(".,") in pools[kind[: -len("whole")]]  # another of its kind from the test set
        if not kind.startswith("num") and not kind.endswith("whole"):
            assert new_word[:1] == old_word[:1]  # the capital stays
        assert made["copy"] == SRC and made["hallucination"] == "HALLUCINATION" and made["alternative"] == "ALTERNATIVE"


def test_a_change_that_cannot_apply_is_left_out():
    rng = random.Random(0)
    assert change("numadd", "kein Wort", [], ["1"], rng, "abc") is None
    made = candidates("Open it.", "Öffnen Sie es.", {"num": [], "NE": [], "noun": []}, "de", DE, rng, "x", None)
    assert sorted(made) == ["copy", "hallucination"]


def test_a_real_run_on_the_demo_model(demo_model):
    from simpe.measure.sensitivity import analyse

    pairs = [(SRC, REF), ("Click the Calc icon.", "Klicken Sie auf das Calc-Symbol."),
             ("Enter 25 in cell A1.", "Geben Sie 25 in Zelle A1 ein.")]
    result = analyse(demo_model.model, demo_model.tokenizer, [s for s, _ in pairs], [r for _, r in pairs], "chrf++",
                     samples=4, seed=0, lang="de")
    assert set(result["changes"]) == set(CHANGES) | set(CONTROLS)
    assert result["changes"]["copy"]["sentences"] == 3 and result["changes"]["numadd"]["sentences"] == 2
    # each value's source sentence, for intervals over sentences: numbers in the first and the third reference
    assert result["changes"]["numadd"]["sentence"] == [0, 2] and result["changes"]["copy"]["sentence"] == [0, 1, 2]
    # the beam output and its changes, scored against the reference as the support (the paper's references as support)
    support = result["references_support"]
    assert set(support) == set(CHANGES) | {"copy", "hallucination"} and support["copy"]["sentence"] == [0, 1, 2]
    assert support["copy"]["mean"] < 0  # the source copied scores below the beam output against the German reference
    # copying the English source is far from every German sample: it scores far below the reference
    assert result["changes"]["copy"]["mean"] < -20
    assert set(summarise(result)) == {"numbers", "named entities", "nouns"}
    again = analyse(demo_model.model, demo_model.tokenizer, [s for s, _ in pairs], [r for _, r in pairs], "chrf++",
                    samples=4, seed=0, lang="de")
    assert again["changes"] == result["changes"]  # seeded: the same table twice
    assert "average nouns" in format_table(result)


def test_numbers_match_the_source_as_multisets_with_separators_removed():
    """Amrhein and Sennrich (2022)'s Table 2 counts numbers against the source: English 1,000.5 is German 1.000,5."""
    from simpe.measure.sensitivity import number_counts, number_f1

    source = "Set 1,000.5 rows on 2 sheets and 2 more, version 7.4."  # 1,000.5, 2, 2 and 7.4
    # 1.000,5, 2 and 7.4 match; 3 does not (the second 2 has no partner)
    assert number_counts("Setzen Sie 1.000,5 Zeilen auf 2 Blätter und 3 weitere, Version 7.4.", source) == [3, 4, 4]
    assert number_counts("Keine Zahlen.", source) == [0, 0, 4]
    assert number_counts("Keine Zahlen.", "No numbers.") == [0, 0, 0]
    # corpus F1 = 2 * matched / (in the outputs + in the sources): 2 * 3 / (4 + 4 + 0 + 4) = 50
    assert number_f1([[3, 4, 4], [0, 0, 4], [0, 0, 0]]) == pytest.approx(50.0)
    assert number_f1([[0, 0, 0]]) is None
