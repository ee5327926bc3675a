"""Translators' runs (``simpe serve``) in compare and the report: two references, never mixed.

A person's run is written as the server writes it (simpe.serve.session): its records' figures against the person's
own post-edits, their ``stream`` part against the stream's references, ``human`` with the page's measures. The
fixtures are test_reader's real sentences and sacreBLEU statistics. The invariant: against the stream's references a
translator's row is exactly what a simulated run with the same translations gets (same figures, same p-values);
HTER and effort are sacreBLEU's TER and the sums of what the page measured, per translator and pooled per method.
"""
from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
import yaml
from sacrebleu.metrics import TER

sys.path.insert(0, str(Path(__file__).parent))
from test_reader import GROUP_METHODS, STOPWORDS, perturb, segment_records, stream, write_group, write_run  # noqa: E402

from simpe.cli import main  # noqa: E402
from simpe.report.compare import SIGNIFICANT_MARK, compare_runs  # noqa: E402
from simpe.report.html import report_data  # noqa: E402
from simpe.report.people import STREAM, stream_group  # noqa: E402
from simpe.report.render import to_csv, to_latex, to_markdown  # noqa: E402
from simpe.rundir.reader import load_group  # noqa: E402

N = 30
KEYS = {"anna": (4.0, 7, 1), "ben": (2.5, 3, 0)}  # seconds, keystrokes, clicks per segment


def post_edits_of(references: list[str], translator: str) -> list[str]:
    """A translator's own post-edits: the stream's reference, reworded in every third segment."""
    word = {"anna": "bitte", "ben": "jetzt"}[translator]
    return [f"{ref[:-1]} {word}." if i % 3 == 0 else ref for i, ref in enumerate(references)]


def write_person(group: Path, translator: str, hypotheses: list[str], with_stream: bool = True) -> Path:
    """A person's run of preset ``full`` as simpe serve writes it (records, summary.json: human and stream)."""
    sources, references = stream(N)
    post_edits = post_edits_of(references, translator)
    run = write_run(group, f"full@{translator}", "full", hypotheses, references=post_edits)
    against_stream = segment_records(sources, references, hypotheses)
    seconds, keystrokes, mouse = KEYS[translator]
    records = [json.loads(line) for line in (run / "segments.jsonl").read_text().splitlines()]
    for record, other in zip(records, against_stream):
        record["human"] = {"translator": translator, "seconds": seconds, "keys": [], "keystrokes": keystrokes,
                           "mouse": mouse, "pastes": 0, "edits": 1}
        if with_stream:
            record[STREAM] = {key: other[key] for key in ("reference", "ref_tokens", "metrics", "stats", "cumulative")}
    (run / "segments.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    baseline_summary = json.loads((group / "baseline" / "summary.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    summary["stream_sha256"] = baseline_summary["stream_sha256"]  # the loop hashes the stream, not the post-edits
    summary["human"] = {"translator": translator, "hter": summary["corpus"]["ter"]}
    if with_stream:
        summary[STREAM] = {"corpus": {**against_stream[-1]["cumulative"], "comet": None}, "segment_comet": None}
    (run / "summary.json").write_text(json.dumps(summary))
    env = json.loads((run / "env.json").read_text())
    (run / "env.json").write_text(json.dumps({**env, "stream_sha256": baseline_summary["stream_sha256"]}))
    return run


@pytest.fixture(scope="module")
def group_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """baseline, full, twin (a simulated run with anna's translations), full@anna and full@ben."""
    _, references = stream(N)
    group = write_group(tmp_path_factory.mktemp("runs"), num_segments=N,
                        methods={k: GROUP_METHODS[k] for k in ("baseline", "full")})
    shown = {"anna": perturb(references, 0.15, seed=11), "ben": perturb(references, 0.25, seed=12)}
    write_run(group, "twin", "full", shown["anna"])
    for translator, hypotheses in shown.items():
        write_person(group, translator, hypotheses)
    stopwords = group.parent / "stopwords.txt"  # the list test_reader's R counts use, for the report's word marks
    stopwords.write_text("".join(f"{word}\n" for word in sorted(STOPWORDS)))
    for run in group.iterdir():
        config = yaml.safe_load((run / "config.yaml").read_text())
        (run / "config.yaml").write_text(yaml.safe_dump({**config, "metrics": {"stopwords": str(stopwords)}}))
    return group


@pytest.fixture(scope="module")
def comparison(group_dir: Path):
    return compare_runs(load_group([group_dir]), num_resamples=200)


def test_a_translators_row_is_scored_against_the_streams_references(comparison) -> None:
    rows = {row.run.name: row for row in comparison.rows}
    assert list(rows) == ["baseline", "full", "full@anna", "full@ben", "twin"]
    anna, twin = rows["full@anna"], rows["twin"]
    # the same translations against the same references: the same figures, differences and p-values
    for spec in comparison.columns:
        assert anna.values[spec.key] == pytest.approx(twin.values[spec.key], abs=1e-9), spec.key
        assert anna.deltas[spec.key] == pytest.approx(twin.deltas[spec.key], abs=1e-9), spec.key
        assert anna.p_values[spec.key] == twin.p_values[spec.key], spec.key
    # and not against anna's own post-edits (the record's reference): sacreBLEU TER both ways
    _, references = stream(N)
    hypotheses = [r["hypothesis"] for r in anna.run.segments]
    assert anna.values["ter"] == pytest.approx(TER().corpus_score(hypotheses, [references]).score, abs=1e-9)
    assert anna.values["ter"] != pytest.approx(
        TER().corpus_score(hypotheses, [post_edits_of(references, "anna")]).score, abs=0.1)
    assert comparison.notes[0].startswith("Every figure of this table is scored against the stream's references")


def test_hter_and_effort_per_translator_and_per_method(comparison) -> None:
    _, references = stream(N)
    people = {e.name: e for e in comparison.people}
    assert list(people) == ["full@anna", "full@ben"]
    shown, own = {}, {}
    for translator in ("anna", "ben"):
        effort = people[f"full@{translator}"]
        run = next(run for run in comparison.group.runs if run.name == f"full@{translator}")
        shown[translator] = [r["hypothesis"] for r in run.segments]
        own[translator] = post_edits_of(references, translator)
        seconds, keystrokes, mouse = KEYS[translator]
        assert effort.translators == [translator] and effort.method == "full" and effort.segments == N
        assert effort.seconds == pytest.approx(N * seconds) and effort.seconds_per_segment == pytest.approx(seconds)
        assert effort.keystrokes == N * keystrokes and effort.mouse == N * mouse
        chars = sum(map(len, own[translator]))
        assert effort.chars == chars and effort.actions_per_char == pytest.approx(N * (keystrokes + mouse) / chars)
        hter = TER().corpus_score(shown[translator], [own[translator]]).score
        assert effort.hter == pytest.approx(hter, abs=1e-9)
        assert effort.unchanged == sum(h == p for h, p in zip(shown[translator], own[translator]))
    method, = comparison.method_effort
    assert method.name == "full" and method.translators == ["anna", "ben"] and method.segments == 2 * N
    assert method.seconds == pytest.approx(N * (4.0 + 2.5)) and method.keystrokes == N * (7 + 3)
    pooled = TER().corpus_score(shown["anna"] + shown["ben"], [own["anna"] + own["ben"]]).score
    assert method.hter == pytest.approx(pooled, abs=1e-9)


def test_the_writers_say_which_reference_and_never_mark_effort(comparison) -> None:
    markdown = to_markdown(comparison)
    table, _, rest = markdown.partition("## Translators, against their own post-edits")
    assert "Reference: every column scores against the stream's references, translators' runs included" in table
    anna = next(e for e in comparison.people if e.name == "full@anna")
    line = next(line for line in rest.splitlines() if line.startswith("| anna |"))
    # no pause, no revision, no match inserted in these records: 0.0 s paused, 0 revisions, 0 matches
    assert line.startswith(f"| anna | full@anna | {N} | {anna.hter:.1f} ({anna.hter_mt:.1f}) | 2 min 00 s | 4.0 | 0.0 s | "
                           f"{N * 7} | 7.0 | {N} | ")
    assert anna.hter == anna.hter_mt  # records without a start: the MT is the start
    assert line.endswith(" | 0 | 0 (0) |")  # no revision, no match started from or inserted
    assert not [line for line in rest.splitlines() if line.startswith("|") and SIGNIFICANT_MARK in line]
    assert "| full | anna, ben | 60 |" in rest
    rows = list(csv.DictReader(io.StringIO(to_csv(comparison))))
    assert {row["reference"] for row in rows} == {"stream"}
    assert [row["translator"] for row in rows] == ["", "", "anna", "ben", ""]
    assert float(rows[2]["own_hter"]) == pytest.approx(anna.hter, abs=1e-6) and rows[2]["own_keystrokes"] == str(N * 7)
    assert "Translators on" in to_latex(comparison) and "own post-edits" in to_latex(comparison)


def test_the_report_marks_translators_against_the_streams_references(group_dir: Path, comparison) -> None:
    data = report_data(load_group([group_dir]), comparison)
    assert data["people"] is True and data["mismatches"] == {}  # the word marks reproduce the logged R counts
    names = [run["name"] for run in data["runs"]]
    anna, twin = names.index("full@anna"), names.index("twin")
    _, references = stream(N)
    own = post_edits_of(references, "anna")
    shown = next(run for run in comparison.group.runs if run.name == "full@anna").segments
    for segment in data["segments"]:
        hyps = segment[8]
        assert hyps[anna][:5] == hyps[twin]  # marks, sBLEU and R0+1 against the stream's reference
        assert hyps[anna][5] == own[segment[0]] and len(hyps[twin]) == 5
        hter = TER().sentence_score(shown[segment[0]]["hypothesis"], [own[segment[0]]]).score
        assert hyps[anna][6] == pytest.approx(hter, abs=0.01)
    people = {e["name"]: e for e in data["table"]["people"]}
    assert people["full@ben"]["keystrokes"] == N * 3


def test_a_run_recorded_without_the_stream_part_is_left_out_of_the_table_only(tmp_path: Path) -> None:
    _, references = stream(N)
    group = write_group(tmp_path, num_segments=N, methods={k: GROUP_METHODS[k] for k in ("baseline", "full")})
    write_person(group, "anna", perturb(references, 0.15, seed=11), with_stream=False)
    comparison = compare_runs(load_group([group]), num_resamples=20)
    assert [row.run.name for row in comparison.rows] == ["baseline", "full"]
    assert any(note.startswith("full@anna: recorded before simpe scored") for note in comparison.notes)
    assert [e.name for e in comparison.people] == ["full@anna"] and comparison.people[0].keystrokes == N * 7


def test_a_group_without_translators_is_left_as_it_is(tmp_path: Path) -> None:
    group = load_group([write_group(tmp_path, num_segments=N)])
    assert stream_group(group) == (group, [])
    comparison = compare_runs(group, num_resamples=20)
    assert comparison.people == [] and "Translators" not in to_markdown(comparison)
    assert "reference" not in next(csv.reader(io.StringIO(to_csv(comparison))))


def test_cli_compare_and_report_with_translators(group_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["compare", str(group_dir), "--bootstrap", "20", "--out", str(tmp_path / "compare")]) == 0
    assert "## Translators, against their own post-edits" in capsys.readouterr().out
    assert main(["report", str(group_dir), "--bootstrap", "20", "--out", str(tmp_path)]) == 0
    page = (tmp_path / "report.html").read_text()
    assert "<table id='people' class='effort'>" in page and "own post-edit" in page


def test_the_browser_shows_a_translators_own_post_edit(group_dir: Path, tmp_path: Path) -> None:
    """In headless Chromium: segment 0's row labels the stream's post-edit and shows anna's own under her hypothesis
    with its HTER; the translators' table is on the page."""
    from test_report import _browser, _dom

    from simpe.report.html import write_report

    browser = _browser()
    page = write_report(load_group([group_dir]), tmp_path, num_resamples=20)
    dom = _dom(browser, page, "#seg=0")
    row = dom[dom.index('id="seg-0"'):dom.index('id="seg-1"')]
    _, references = stream(N)
    own = post_edits_of(references, "anna")[0]
    assert "<b>stream post-edit</b>" in row and f"<b>own post-edit</b> {own} " in row
    assert row.count("own post-edit") == 2  # anna and ben; the simulated runs have none
    assert '<table id="people" class="effort">' in dom


def test_the_browser_shows_a_revised_segments_final_version(tmp_path: Path) -> None:
    """A segment anna revised after submitting (events.jsonl, as simpe serve writes it): the browser shows the final
    version with the HTER against it (sacreBLEU's TER, as the translators' table scores it) and the version the model
    learned from; her other segments and the simulated runs are as before."""
    _, references = stream(N)
    group = write_group(tmp_path, num_segments=N, methods={k: GROUP_METHODS[k] for k in ("baseline", "full")})
    shown = perturb(references, 0.15, seed=11)
    run = write_person(group, "anna", shown)
    own = post_edits_of(references, "anna")
    final = "Ganz anders."
    (run / "events.jsonl").write_text(json.dumps({"event": "revision", "index": 4, "version": 2, "post_edit": final,
                                                  "previous": own[4], "human": {"seconds": 1.0}}) + "\n")
    data = report_data(load_group([group]), compare_runs(load_group([group]), num_resamples=20))
    anna = [r["name"] for r in data["runs"]].index("full@anna")
    rows = {segment[0]: segment[8][anna] for segment in data["segments"]}
    assert rows[4][5:] == [final, pytest.approx(TER().sentence_score(shown[4], [final]).score, abs=0.01), own[4]]
    assert rows[4][6] != pytest.approx(TER().sentence_score(shown[4], [own[4]]).score, abs=0.01)
    assert all(len(row) == 7 and row[5] == own[i] for i, row in rows.items() if i != 4)
    from test_report import _browser, _dom

    from simpe.report.html import write_report

    dom = _dom(_browser(), write_report(load_group([group]), tmp_path / "report", num_resamples=20), "#seg=4")
    row = dom[dom.index('id="seg-4"'):dom.index('id="seg-5"')]
    assert f"<b>own post-edit</b> {final} " in row and f"the model learned from: {own[4]})" in row


def test_the_matecat_time_rule_leaves_out_segments_beyond_its_band(group_dir: Path, tmp_path: Path) -> None:
    """Matecat's band is 0.25-30 s per source word. ben's copy spends 1.0 s on the even segments (sources of 4 to 9
    words: 0.11-0.25 s a word, so every even segment of more than 4 words is out) and 300 s on segment 1 (9 words: 33
    s a word, out); the other odd segments keep 2.5 s (0.28-0.63 s a word, in). Keystrokes are kept whatever the time."""
    import shutil

    group = shutil.copytree(group_dir, tmp_path / "group")
    sources, _ = stream(N)
    words = [len(source.split()) for source in sources]
    ben = group / "full@ben" / "segments.jsonl"
    records = [json.loads(line) for line in ben.read_text().splitlines()]
    times = [1.0 if i % 2 == 0 else 300.0 if i == 1 else 2.5 for i in range(N)]
    for record, seconds in zip(records, times):
        record["human"]["seconds"] = seconds
    ben.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    plain = {e.name: e for e in compare_runs(load_group([group]), num_resamples=20).people}["full@ben"]
    ruled = compare_runs(load_group([group]), num_resamples=20, time_rule="matecat")
    effort = {e.name: e for e in ruled.people}["full@ben"]
    out = [i for i in range(N) if (i % 2 == 0 and words[i] > 4) or i == 1]
    assert words[1] == 9 and out and (effort.outliers, effort.timed_segments) == (len(out), N - len(out))
    assert effort.seconds == pytest.approx(sum(t for i, t in enumerate(times) if i not in out))
    assert (plain.outliers, plain.seconds) == (0, pytest.approx(sum(times)))
    assert effort.keystrokes == plain.keystrokes == N * 3
    assert any(note.startswith(f"Time outliers left out (Matecat's rule): a segment's editing time counts only when it "
                               f"lies within 0.25-30.0 s per source word; {len(out)} segment(s)") for note in ruled.notes)
