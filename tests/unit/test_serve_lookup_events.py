"""The workbench's parts without a model: fuzzy matches, glossary hits, the events journal, the key log's new events."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simpe.errors import DataError
from simpe.serve.events import Journal, final_versions, read_events
from simpe.serve.keylog import check_draft, check_note, check_submission, counts
from simpe.serve.lookup import MEMORY, POST_EDIT, Terms, find_matches, fuzzy_score
from simpe.serve.workbench import latest_draft, qa_warnings


@pytest.mark.parametrize("a, b, expected", [
    ("Open the file.", "Open the file.", 100),
    # one insertion ("s") over the longer source's 15 characters: 1 - 1/15 = 93.3 -> 93
    ("Open the file.", "Open the files.", 93),
    # "OK" -> "Cancel": 2 substitutions and 4 insertions = 6 edits over 13 characters: 1 - 6/13 = 53.8 -> 53
    ("Click OK.", "Click Cancel.", 53),
    ("abc", "xyz", 0),
])
def test_fuzzy_scores_are_levenshtein_similarity_rounded_down(a, b, expected):
    assert fuzzy_score(a, b) == expected
    assert fuzzy_score(b, a) == expected


def test_matches_rank_by_score_then_post_edits_then_later_ones():
    memory = [("Open the files.", "Öffnen Sie die Dateien."), ("Close the file.", "Schließen Sie die Datei."),
              ("Print it.", "Drucken Sie es.")]
    post_edits = [(0, "Open the files.", "Die Dateien öffnen."), (1, "Open the file!", "Datei öffnen!"),
                  (2, "Open the files.", "Die Dateien öffnen.")]  # the same pair as segment 0: offered once
    matches = find_matches("Open the file.", memory, post_edits)
    # "Open the file!" 1 substitution / 14 = 92.8 -> 92; "Open the files." 93 (three of them: two post-edits, the
    # later first, the same pair once, then the memory's); "Close the file." 4 edits / 15 -> 73
    assert [(m.rank, m.score, m.origin, m.index, m.target) for m in matches] == [
        (1, 93, POST_EDIT, 2, "Die Dateien öffnen."), (2, 93, MEMORY, None, "Öffnen Sie die Dateien."),
        (3, 92, POST_EDIT, 1, "Datei öffnen!")]
    assert find_matches("Something else entirely", memory, post_edits) == []  # below 50 %
    assert find_matches("x", [], []) == []


def test_glossary_hits_have_spans_and_missing_terms_follow_the_one_rule(tmp_path: Path):
    glossary = tmp_path / "g.tsv"
    glossary.write_text("#langs en de\nCell\tZelle\nSheet\tTabelle\nCell Protection\tZellschutz\n", encoding="utf-8")
    terms = Terms(glossary, "en", "de")
    hits = terms.hits("Choose Sheet - Cell Protection, then Cell. The sheet is protected.")
    assert [(h["source"], h["target"], h["spans"]) for h in hits] == [
        ("Cell", "Zelle", [[15, 19], [37, 41]]), ("Sheet", "Tabelle", [[7, 12]]),
        ("Cell Protection", "Zellschutz", [[15, 30]])]
    # target side case ignored, whole tokens only: "Zellen" is not "Zelle"
    assert terms.missing(hits, "Wählen Sie TABELLE - Zellschutz, dann Zellen.") == [{"source": "Cell", "target": "Zelle"}]
    assert terms.missing([], "anything") == []


def test_journal_appends_syncs_and_cuts_a_torn_tail(tmp_path: Path):
    journal = Journal(tmp_path)
    journal.open()
    journal.append({"event": "revision", "index": 1, "version": 2, "post_edit": "B", "previous": "A", "human": {}})
    journal.append({"event": "comment", "index": 1, "text": "check the term"})
    journal.append({"event": "flag", "index": 1, "flagged": True})
    journal.append({"event": "revision", "index": 1, "version": 3, "post_edit": "C", "previous": "B", "human": {}})
    with open(tmp_path / "events.jsonl", "a", encoding="utf-8") as handle:
        handle.write('{"event": "revision", "index": 1, "vers')  # a kill while the line was written
    again = Journal(tmp_path)
    again.open()
    assert [e["event"] for e in again.events] == ["revision", "comment", "flag", "revision"]
    assert again.comments(1) == ["check the term"] and again.flagged(1) and not again.flagged(0)
    assert [v["post_edit"] for v in again.versions(1)] == ["B", "C"] and final_versions(again.events)[1]["post_edit"] == "C"
    again.append({"event": "flag", "index": 1, "flagged": False})  # appended after the cut: the file reads whole
    assert [json.loads(line)["event"] for line in (tmp_path / "events.jsonl").read_text().splitlines()][-1] == "flag"
    assert not Journal.flagged(again, 1) and len(read_events(tmp_path)) == 5


def test_submissions_take_pauses_and_the_workbench_events():
    index, text, human = check_submission({"index": 2, "post_edit": " Text ", "seconds": 3.5,
                                           "keys": [[1, "t", 2], [5, "s", 9], [9, "r", 7], [12, "n", 0], [13, "i", "x"]],
                                           "pauses": [[100, 1100], [2000, 2500]]})
    assert (index, text, human["paused_seconds"], human["pauses"]) == (2, "Text", 1.5, [[100, 1100], [2000, 2500]])
    # t, s, r are changes of one run; the caret move ends it; the typed x starts another
    assert counts(human["keys"]) == {"keystrokes": 5, "mouse": 0, "pastes": 0, "edits": 2, "inserts": 1,
                                     "keys_by": {"typing": 1, "moving": 1, "replacing": 3}}
    assert "pauses" not in check_submission({"index": 0, "post_edit": "x"})[2]
    for bad, message in [({"index": 0, "post_edit": "x", "pauses": [[5, 1]]}, "start <= end"),
                         ({"index": 0, "post_edit": "x", "keys": [[1, "t", 4]]}, "rank, 1 to 3"),
                         ({"index": 0, "post_edit": "x", "pause": []}, "unknown field 'pause'")]:
        with pytest.raises(DataError, match=message):
            check_submission(bad)
    assert check_note({"index": 3, "comment": "two\nlines"}) == (3, "two\nlines", None)
    assert check_note({"index": 3, "flagged": True}) == (3, None, True)
    for bad in ({"index": 3}, {"index": 3, "flagged": "yes"}, {"index": 3, "comment": " "}, {"index": 3, "x": 1}):
        with pytest.raises(DataError):
            check_note(bad)


def test_every_editing_key_and_selection_has_its_category():
    # a hand-made log: typed "ab", Backspace, Ctrl+Shift+Left (a selection), Ctrl+Left (a move), Ctrl+V, Ctrl+X,
    # Ctrl+Z, a term (Alt+1) and a tag (Alt+T) inserted, a click, Ctrl+1
    keys = [[1, "i", "a"], [2, "i", "b"], [3, "d", 1], [4, "v", 0], [5, "n", 0], [6, "p", 4], [7, "x", 2], [8, "u", 0],
            [9, "g", 5], [10, "k", 3], [11, "m", 0], [12, "t", 1]]
    index, _, human = check_submission({"index": 0, "post_edit": "x", "keys": keys, "start": {"origin": "match", "rank": 1}})
    assert human["start"] == {"origin": "match", "rank": 1}
    assert counts(human["keys"]) == {
        "keystrokes": 11, "mouse": 1, "pastes": 1, "edits": 3, "inserts": 1,
        "keys_by": {"typing": 2, "deleting": 1, "moving": 1, "selecting": 1, "pasting": 2, "replacing": 1, "inserting": 2,
                    "undoing": 1}}
    for bad, message in [({"origin": "match"}, "rank is 1 to 3"), ({"origin": "memory"}, "one of mt, target, source, match"),
                         ({"origin": "mt", "rank": 1}, "only a match start")]:
        with pytest.raises(DataError, match=message):
            check_submission({"index": 0, "post_edit": "x", "start": bad})
    index, text, human = check_draft({"index": 4, "post_edit": "", "seconds": 2.5, "keys": [[3, "i", "x"]],
                                      "elapsed_ms": 4100})
    assert (index, text, human) == (4, "", {"seconds": 2.5, "keys": [[3, "i", "x"]], "elapsed_ms": 4100})
    with pytest.raises(DataError, match="elapsed_ms"):
        check_draft({"index": 4, "post_edit": "", "elapsed_ms": -1})


@pytest.mark.parametrize("source, text, kinds", [
    ("Open 3 files.", "Öffnen Sie 3 Dateien.", []),
    ("Open 3 files.", "Öffnen Sie drei Dateien.", ["numbers of the source missing: 3"]),
    ("Set 1.5 cm.", "Stellen Sie 1,5 cm ein.", []),  # separators apart: one number
    ("Open 2 files.", "Öffnen Sie 2 Dateien 4.", ["numbers not in the source: 4"]),
    ("Open the file.", "Öffnen Sie  die Datei.", ["a doubled space"]),
    ("Open the file.", "Öffnen Sie die Datei", ["ends with no punctuation, the source with ."]),
    ("Open the ⟨1⟩file⟨/1⟩.", "Öffnen Sie die Datei.", ["tags of the source missing: ⟨1⟩ ⟨/1⟩"]),
])
def test_qa_warnings_worked_out_by_hand(source, text, kinds):
    assert [w["text"] for w in qa_warnings(source, text, [])] == kinds


def test_qa_names_a_missing_term_and_drafts_are_found_per_version():
    assert qa_warnings("Open the file.", "Öffnen Sie das Dokument.", [{"source": "file", "target": "Datei"}]) == [
        {"kind": "terms", "text": "glossary terms missing: Datei (file)"}]
    events = [{"event": "draft", "index": 1, "version": 1, "post_edit": "a"},
              {"event": "draft", "index": 1, "version": 2, "post_edit": "b"},
              {"event": "revision", "index": 1, "version": 2, "post_edit": "b"},
              {"event": "draft", "index": 2, "version": 1, "post_edit": "c"}]
    assert latest_draft(events, 1, 2) is None  # saved since
    assert latest_draft(events, 1, 3) is None and latest_draft(events, 2, 1)["post_edit"] == "c"
    assert latest_draft(events + [{"event": "draft", "index": 1, "version": 3, "post_edit": "d"}], 1, 3)["post_edit"] == "d"


def test_the_tables_key_kinds_are_the_key_logs_categories():
    from simpe.report.people import KEY_KINDS
    from simpe.serve.keylog import CATEGORIES

    assert KEY_KINDS == tuple(CATEGORIES)
