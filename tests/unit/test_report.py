"""simpe report: the word marks (worked by hand on Simianer et al. (2019), Figure 1), the data the page embeds, the CLI,
and the page itself in a real headless browser (Debian's chromium; skipped with a message when absent)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import test_reader  # noqa: E402
from test_reader import write_group, write_run  # noqa: E402

from simpe.cli import main  # noqa: E402
from simpe.report.compare import compare_runs  # noqa: E402
from simpe.report.html import report_data, write_report  # noqa: E402
from simpe.report.marks import group_marks, one_shot_disagreement  # noqa: E402
from simpe.rundir.reader import load_group  # noqa: E402

FIGURE1_STOPWORDS = {"a", "A", "the", "The"}
REFERENCES = ["The dog bites the lady", "The man bites the dog"]
HYPOTHESES = {"baseline": ["A terrier bites the person", "The dog bites the man"],
              "full": ["A terrier bites the person", "The terrier bites the man"]}


def _with_stopwords(run: Path, path: Path) -> None:
    """Point the run's config at a stopword file (what the loop's config.yaml holds)."""
    import yaml

    config = yaml.safe_load((run / "config.yaml").read_text())
    config["metrics"] = {"stopwords": str(path)}
    (run / "config.yaml").write_text(yaml.safe_dump(config))


@pytest.fixture
def figure1_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Figure 1 stream of Simianer et al. (2019) (stopwords a/A/the/The) with a baseline and a 'full' run that repeats a
    corrected word ('terrier') and misses a one-shot word ('dog')."""
    monkeypatch.setattr(test_reader, "STOPWORDS", FIGURE1_STOPWORDS)  # the logged R counts use the same list
    stopwords = tmp_path / "stop.txt"
    stopwords.write_text("a\nA\nthe\nThe\n")  # matched exactly, as rk.rb does
    group = tmp_path / "fig1--2seg"
    for name, hyps in HYPOTHESES.items():
        _with_stopwords(write_run(group, name, name, hyps, references=REFERENCES, snapshots=False), stopwords)
    return group


def test_marks_of_simianer_2019_figure_1(figure1_group: Path) -> None:
    """Reference 1: dog, bites, lady are R0. Reference 2: man is R0, bites and dog are R1 (seen once before).
    Baseline: 'bites' is its only R0 hit in segment 0 (R0 = 1/3 there), 'dog bites man' hits everything in
    segment 1; terrier/person are content words the post-edit removed. 'full' outputs 'terrier' again in
    segment 1 where the post-edit again lacks it (a repeated corrected word) and misses the R1 word 'dog'."""
    marks = group_marks(load_group([figure1_group]))
    first, second = marks.segments
    assert marks.mismatches == {}  # the marks reproduce the logged [num, den] of R0 and R1
    assert (first.ref_marks, first.r0, first.r1) == (".00.0", ["bites", "dog", "lady"], [])
    assert (second.ref_marks, second.r0, second.r1) == (".01.1", ["man"], ["bites", "dog"])
    assert first.hyp_marks == {"baseline": ".xA.x", "full": ".xA.x"}
    assert second.hyp_marks == {"baseline": ".BB.A", "full": ".rB.A"}
    assert first.missed["baseline"] == {"r0": ["dog", "lady"], "r1": []}
    assert second.missed["full"] == {"r0": [], "r1": ["dog"]} and second.repeats == {"baseline": [], "full": ["terrier"]}
    assert one_shot_disagreement(second) == ["dog"] and one_shot_disagreement(first) == []


def test_report_data_embeds_the_table_curves_and_segments(figure1_group: Path) -> None:
    group = load_group([figure1_group])
    comparison = compare_runs(group, num_resamples=20)
    data = report_data(group, comparison)
    assert [r["name"] for r in data["runs"]] == ["baseline", "full"]
    assert all(re.fullmatch(r"#[0-9a-f]{6}", r["color"]) for r in data["runs"])
    rows = {row["name"]: row for row in data["table"]["rows"]}
    assert rows["baseline"]["values"]["r0"] == pytest.approx(100 * 2 / 4)  # the paper's R0 = 2/4: bites; man
    assert rows["full"]["deltas"]["r1"] == pytest.approx(-50.0)  # full hits 1 of the 2 R1 words, baseline 2
    assert data["curves"]["x"] == [0, 1]
    assert data["curves"]["y"]["full"]["r1"] == [None, pytest.approx(-50.0)]
    index, doc, seg, source, ref_tokens, ref_marks, r0, r1, hyps, disagree = data["segments"][1]
    assert (index, ref_tokens, ref_marks, r0, r1, disagree) == (1, "The man bites the dog", ".01.1", ["man"], ["bites", "dog"], ["dog"])
    assert hyps[1][:2] == ["The terrier bites the man", ".rB.A"] and hyps[1][3:] == [2, 3] and hyps[0][3:] == [3, 3]
    assert data["snapshots"] == {"series": {}, "references": [], "inexact": {}}


def test_cli_report_writes_one_self_contained_page(figure1_group: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["report", str(figure1_group), "--bootstrap", "20"]) == 0
    page = figure1_group / "report.html"
    assert f"wrote {page}" in capsys.readouterr().out
    text = page.read_text(encoding="utf-8")
    assert "data:image/png;base64," in text and "<table id='methods'>" in text
    assert not re.search(r"""(src|href)=['"]?(https?:)?//""", text)  # nothing fetched from the network
    embedded = json.loads(re.search(r'<script id="data" type="application/json">(.*?)</script>', text, re.S).group(1))
    assert embedded["segments"][1][9] == ["dog"]
    # repeated errors, by hand: 'dog' is missed in segment 1 by both, shown; the baseline gets it in 2, full misses it again
    repeated = {row["name"]: row["repeated"] for row in embedded["table"]["rows"]}
    assert repeated == {"baseline": {"again": 0, "shown": 1, "rate": 0.0}, "full": {"again": 1, "shown": 1, "rate": 1.0}}
    assert "<td>100.0%<br><span class='delta'>(1 of 1)</span></td>" in text
    assert main(["report", str(figure1_group / "full")]) == 2  # a group needs its baseline
    assert "baseline" in capsys.readouterr().err


# ---------------------------------------------------------------- in a real browser
def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no headless browser installed (apt-get install chromium); the page's browser test needs one")


def _dom(browser: str, page: Path, fragment: str = "") -> str:
    out = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000",
                          "--dump-dom", page.resolve().as_uri() + fragment],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_the_page_in_a_headless_browser(tmp_path: Path) -> None:
    """Table, both figures, the chart and the segment browser are there; filters, sorting and links change
    which rows are visible; only a first screenful of rows is rendered."""
    browser = _browser()
    group = write_group(tmp_path, num_segments=60)
    page = write_report(load_group([group]), num_resamples=20)
    dom = _dom(browser, page)
    body = re.search(r"<table id=.methods.>.*?<tbody>(.*?)</tbody>", dom, re.S).group(1)
    assert re.findall(r"<tr><th>([^<]+)</th>", body) == ["baseline", "bias", "full", "lasso"]  # the method table
    assert dom.count("data:image/png;base64,") == 2  # Figure 2 and the ranking snapshots
    assert 'class="pt"' in dom and "<svg" in dom
    assert "60 of 60 segments" in dom
    assert len(re.findall(r'class="seg( hl)?" id="seg-', dom)) == 40  # lazily: the first 40 rows only
    data = report_data(load_group([group]), compare_runs(load_group([group]), num_resamples=20))
    disagree = [s[0] for s in data["segments"] if s[9]]
    repeat_full = [s[0] for s in data["segments"] if "r" in s[8][2][1]]  # runs: baseline, bias, full, lasso
    assert 0 < len(disagree) < 60 and 0 < len(repeat_full) < 60

    dom = _dom(browser, page, "#filter=disagree")
    assert f"{len(disagree)} of 60 segments" in dom
    assert [int(i) for i in re.findall(r'id="seg-(\d+)"', dom)] == disagree[:40]
    dom = _dom(browser, page, "#filter=repeat&method=2")
    assert [int(i) for i in re.findall(r'id="seg-(\d+)"', dom)] == repeat_full[:40]
    dom = _dom(browser, page, "#sort=sbleu&method=2")
    shown = [int(i) for i in re.findall(r'id="seg-(\d+)"', dom)]
    gain = {s[0]: abs(s[8][2][2] - s[8][0][2]) for s in data["segments"]}
    assert [gain[i] for i in shown] == sorted(gain.values(), reverse=True)[:40]
    dom = _dom(browser, page, "#seg=55")  # what a click on a curve point opens
    assert 'class="seg hl" id="seg-55"' in dom


def test_the_page_is_filled_in_one_pass_so_a_value_is_never_scanned_again():
    from simpe.report.html import fill

    assert fill("<p>%A%</p><i>%B%</i>", {"A": "%B%<img>", "B": "%A%"}) == "<p>%B%<img></p><i>%A%</i>"
    with pytest.raises(ValueError, match=r"placeholders \['A', 'B'\] and the values given \['A'\] differ"):
        fill("%A%%B%", {"A": "x"})
