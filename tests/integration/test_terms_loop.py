"""A glossary in the loop (issue 57): `simpe simulate --glossary dataset` logs the term metrics per segment and in
the summary, constrained_beam places the applicable terms, a resumed run counts on exactly, and `simpe compare`,
the plots and the report show the term figures.

Twelve segments of the LibreOffice stream with its shipped glossary. Which terms count in each segment depends on
the source and the reference only, read off the data by hand (stream.en / stream.de lines 1-12 and glossary.tsv):
"Edit Menu" | "Menü Bearbeiten" (Edit -> Bearbeiten), two "Choose Insert - ..." | "Einfügen", then six "Choose
Sheet - Fill Cells[ - X]" | "Tabelle – Zellen ausfüllen[ – X]" with X in Down, Right, Up, Left, Sheets. Whether the
hypothesis holds a term is checked against a plain regular expression on the detokenised text, an independent reading
of the whole-word, case-ignoring rule.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simpe.cli import main
from simpe.config.files import load_config
from simpe.loop.run import Loop
from simpe.report.compare import TABLE_COLUMNS, compare_runs
from simpe.report.html import report_data
from simpe.report.plotting import TERM_PANELS, cumulative_deltas, delta_panels
from simpe.report.render import to_markdown
from simpe.rundir.reader import load_group, read_jsonl
from simpe.terms.glossary import DEFAULT_GLOSSARY

SEGMENTS = 12
COUNTED = {  # segment -> [(source term, occurrence in the stream)], from the data (module docstring)
    3: [("Edit", 1)], 4: [("Insert", 1)], 5: [("Insert", 2)], 6: [("Cells", 1), ("Sheet", 1)],
    7: [("Cells", 2), ("Down", 1), ("Sheet", 2)], 8: [("Cells", 3), ("Right", 1), ("Sheet", 3)],
    9: [("Cells", 4), ("Sheet", 4), ("Up", 1)], 10: [("Cells", 5), ("Left", 1), ("Sheet", 5)],
    11: [("Cells", 6), ("Sheet", 6), ("Sheets", 1)],
}
# what constrained_beam is given: every source term of the glossary in the source, the reference unseen ("More" is a
# UI string, "Zusätze", that the reference of segment 1 does not use: placed, never counted), each target once
CONSTRAINED = {1: ["Zusätze"], 3: ["Bearbeiten"], 4: ["Einfügen"], 5: ["Einfügen"], 6: ["Tabelle", "Zellen"],
               7: ["Tabelle", "Zellen", "Unten"], 8: ["Tabelle", "Zellen", "Rechts"], 9: ["Tabelle", "Zellen", "Oben"],
               10: ["Tabelle", "Zellen", "Links"], 11: ["Tabelle", "Zellen", "Tabellen"]}
TERM_COLUMNS = ["term", "t0", "t1", "term-repeat", "nonterm:r0", "nonterm:r1", "nonterm:r0+1"]


def _glossary() -> dict[str, str]:
    return dict(line.split("\t") for line in DEFAULT_GLOSSARY.read_text(encoding="utf-8").splitlines()
                if line and not line.startswith("#"))


def _holds(text: str, term: str) -> bool:
    return re.search(r"(?<!\w)" + re.escape(term) + r"(?![\w-])", text, flags=re.IGNORECASE) is not None


@pytest.fixture(scope="module")
def group(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """baseline (beam) and baseline-constrained with the dataset's glossary through the CLI (their group); bias without
    one, in a group of its own (the glossary is part of a group's identity: ``simpe.loop.run.group_identity``)."""
    root = tmp_path_factory.mktemp("terms")
    preset = root / "baseline-constrained.yaml"
    preset.write_text("method: {name: baseline}\ndecoder: {name: constrained_beam, params: {beam_size: 5}}\n", encoding="utf-8")
    common = ["--segments", str(SEGMENTS), "--snapshot-every", "0", "--runs-dir", str(root / "runs"), "--device", "cpu",
              "--no-progress"]
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert main(["simulate", "--glossary", "dataset", "--preset", "baseline", str(preset), *common]) == 0
        assert main(["simulate", "--preset", "bias", *common]) == 0
    finally:
        torch.set_num_threads(threads)
    folders = sorted((root / "runs").iterdir())
    assert len(folders) == 2 and [sorted(p.name for p in f.iterdir()) for f in folders if (f / "bias").exists()] == [["bias"]]
    return next(f for f in folders if (f / "baseline").exists())


def _plain_bias(group: Path) -> Path:
    """The bias run without a glossary: beside the group, in its own."""
    (found,) = [f / "bias" for f in group.parent.iterdir() if (f / "bias").exists()]
    return found


def _records(group: Path, name: str) -> list[dict]:
    return read_jsonl(group / name / "segments.jsonl")


def test_every_segment_logs_the_terms_the_data_says_and_hits_as_the_text_says(group: Path) -> None:
    glossary = _glossary()
    records = _records(group, "baseline")
    totals = {name: [0, 0] for name in ("term", "t0", "t1")}
    for record in records:
        counted = COUNTED.get(record["index"], [])
        assert [(term, occurrence) for term, occurrence, _ in record["terms"]] == counted, record["index"]
        hits = [hit for _, _, hit in record["terms"]]
        assert hits == [_holds(record["hypothesis"], glossary[term]) for term, _ in counted], record["index"]
        metrics = record["metrics"]
        assert metrics["term"] == [sum(hits), len(counted)]
        assert metrics["t0"] == [sum(h for h, (_, o) in zip(hits, counted) if o == 1), sum(1 for _, o in counted if o == 1)]
        assert [a + b for a, b in zip(metrics["t0"], metrics["t1"])] == metrics["term"]
        # fixed: missed by the hypothesis, held by the post-edit (the reference): every missed counted term here
        assert record["terms_fixed"] == [term for (term, _), hit in zip(counted, hits) if not hit]
        for name in totals:
            totals[name] = [a + b for a, b in zip(totals[name], metrics[name])]
        assert record["cumulative"]["term"] == (totals["term"][0] / totals["term"][1] if totals["term"][1] else None)
        assert "constrained" not in record  # plain beam places nothing
    assert totals["term"][1] == 20 and totals["t0"][1] == 9 and totals["t1"][1] == 11
    # a term fixed in one segment and met again in the next counted one is asked again: the repeated term error
    pending, repeat = set(), [0, 0]
    for record in records:
        for term, _, hit in record["terms"]:
            if term in pending:
                repeat = [repeat[0] + (not hit), repeat[1] + 1]
                pending.discard(term)
        pending |= set(record["terms_fixed"])
    assert [sum(r["metrics"]["term-repeat"][i] for r in records) for i in (0, 1)] == repeat
    summary = json.loads((group / "baseline" / "summary.json").read_text(encoding="utf-8"))
    assert summary["terms"]["counted"] == 20 and summary["terms"]["entries"] == 467
    assert summary["terms"]["glossary"] == "data/libreoffice/glossary.tsv"  # relative to the repository, not this machine's
    assert summary["terms"]["hits"] == totals["term"][0] == round(summary["corpus"]["term"] * 20)
    assert summary["signatures"]["term"].startswith("gl:glossary.tsv.") and "|n:467|" in summary["signatures"]["term"]
    assert "constrained" not in summary["terms"]


def test_the_constrained_run_places_every_applicable_term(group: Path) -> None:
    records = _records(group, "baseline-constrained")
    assert {r["index"]: r["constrained"]["terms"] for r in records if r["constrained"]["terms"]} == CONSTRAINED
    assert all(r["constrained"]["dropped"] == [] for r in records)
    for record in records:  # every constrained term stands in the output, as a whole word
        assert all(_holds(record["hypothesis"], term) for term in record["constrained"]["terms"]), record["hypothesis"]
    terms = json.loads((group / "baseline-constrained" / "summary.json").read_text(encoding="utf-8"))["terms"]
    assert (terms["segments_constrained"], terms["constrained"], terms["dropped"], terms["in_output"]) == (10, 21, 0, 21)
    assert terms["hits"] == terms["counted"] == 20  # every counted term is one it placed
    assert all(hit for r in records for _, _, hit in r["terms"])


def test_a_resumed_run_counts_the_terms_on_exactly(group: Path, tmp_path: Path, one_torch_thread) -> None:
    """Stopped after 8 segments with a checkpoint after 7: the 7 logged segments are replayed (Cells, fixed in
    segment 6, is still pending), and every record equals the uninterrupted run's."""
    overrides = [f"data.segments={SEGMENTS}", "snapshots.every=0", f"runs_dir={tmp_path}", "device=cpu",
                 "data.glossary=dataset", "checkpoint_every=7"]
    Loop(load_config("baseline", overrides), progress=False).run(stop_after=8)
    path = Loop(load_config("baseline", overrides), progress=False).run(resume=True)
    keys = ("hypothesis", "metrics", "cumulative", "terms", "terms_fixed")
    straight = _records(group, "baseline")
    assert "Cells" in straight[6]["terms_fixed"] and straight[7]["metrics"]["term-repeat"][1] >= 1
    assert [{k: r[k] for k in keys} for r in read_jsonl(path / "segments.jsonl")] == [{k: r[k] for k in keys} for r in straight]


def test_compare_shows_the_term_figures_with_their_bootstrap(group: Path) -> None:
    runs = [group / "baseline", group / "baseline-constrained"]
    comparison = compare_runs(load_group(runs, baseline="baseline"), num_resamples=200)
    assert [c.key for c in comparison.columns] == TABLE_COLUMNS + TERM_COLUMNS
    for row in comparison.rows:
        corpus = json.loads((row.run.path / "summary.json").read_text(encoding="utf-8"))["corpus"]
        for key in TERM_COLUMNS:
            assert row.values[key] == (None if corpus[key] is None else pytest.approx(100 * corpus[key]))
    constrained = comparison.rows[1]
    assert constrained.values["term"] == 100.0 and 0 < constrained.p_values["term"] <= 1
    assert constrained.deltas["term"] == pytest.approx(100 - comparison.rows[0].values["term"])
    markdown = to_markdown(comparison)
    assert "| Term acc. | T0 | T1 | Term rep. ↓ | nonterm:R0 |" in markdown and "- Terms: `gl:glossary.tsv." in markdown
    # a run without the glossary: the term columns are left out, with a note; two baseline runs need --baseline
    mixed = compare_runs(load_group([*runs, _plain_bias(group)], baseline="baseline"), num_resamples=20)
    assert [c.key for c in mixed.columns] == TABLE_COLUMNS
    assert any(note.startswith("Term acc. was logged by only some runs (not by bias)") for note in mixed.notes)
    assert main(["compare", str(group), "--bootstrap", "20"]) == 2


def test_the_plots_draw_the_term_metrics(group: Path) -> None:
    loaded = load_group([group / "baseline", group / "baseline-constrained"], baseline="baseline")
    panels = delta_panels(loaded)
    assert [key for key, _, _ in panels][-4:] == [key for key, _, _ in TERM_PANELS]
    curves = cumulative_deltas(loaded, ("term",))
    base, other = (_records(group, name) for name in ("baseline", "baseline-constrained"))
    expected = [(o["cumulative"]["term"] - b["cumulative"]["term"]) * 100 if b["cumulative"]["term"] is not None else None
                for b, o in zip(base, other)]
    got = [None if v != v else float(v) for v in curves.deltas["baseline-constrained"]["term"]]
    assert got == [None if e is None else pytest.approx(e) for e in expected]
    # the report's page: its chart offers the term panels, and its figure is the one plot_cumulative_deltas draws
    data = report_data(loaded, compare_runs(loaded, num_resamples=20))
    assert [p["key"] for p in data["curves"]["panels"]][-4:] == ["term", "t0", "t1", "term-repeat"]
    assert "term" in [c["key"] for c in data["table"]["columns"]]
