"""The committed replication page is what its committed records give: `simpe replicate --report-only` on
docs/replication/records/ writes docs/replication.md and docs/replication.json again, byte for byte.

When this fails after a change to the claim code (simpe/replicate/claims.py, verdicts.py, papers.py, records.py,
page.py), the page is behind its records: `make replicate ARGS="--report-only"` writes it again (no run), and the diff
is the change's effect on the verdicts. When the loop's code changed, `simpe replicate --status` names the rows whose
records another code made (docs/replicate.md, "Provenance").
"""
from __future__ import annotations

import shutil

import pytest

from simpe.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "replication.md"
RECORDS = REPO_ROOT / "docs" / "replication" / "records"


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory):
    """The page written again from a copy of the committed records (``--report-only``'s ``write_page``), and the
    verdicts it judged them with: judging the records takes most of this module's time, so it is done once."""
    from simpe.replicate import page

    if not (RECORDS / "calls.json").is_file():
        pytest.skip("no committed replication records")
    tmp_path = tmp_path_factory.mktemp("page")
    folder = tmp_path / "replication" / "records"
    shutil.copytree(RECORDS, folder)
    judged, judge = [], page.verdicts

    def recording(evidence):  # the page's own verdicts, kept for the tests below (no other code runs)
        judged.append(judge(evidence))
        return judged[-1]

    out = tmp_path / "replication.md"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page, "verdicts", recording)
        rows = page.write_page(folder, out, tmp_path / "replication.html")
    return out, rows, dict(judged[0])


def test_the_committed_page_is_rebuilt_byte_for_byte_from_the_committed_records(rebuilt):
    from simpe.replicate.claims import CLAIMS

    out, rows, _ = rebuilt
    assert rows == len(CLAIMS)  # every claim has its row
    assert out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    assert out.with_suffix(".json").read_text(encoding="utf-8") == PAGE.with_suffix(".json").read_text(encoding="utf-8")


def test_no_row_reads_partly_or_inconclusive_while_a_required_part_is_refuted(committed_rows):
    """On the committed records, every row of several parts follows the rule of docs/replicate.md ("The verdicts"): a
    refuted required part makes it not reproduced, whatever the other parts say; lasso's R0 claim is the worked example."""
    from simpe.replicate.claims import NOT_REPRODUCED

    rows = committed_rows
    for cid, row in rows.items():
        if any(p.required and p.verdict == NOT_REPRODUCED for p in row.parts):
            assert row.verdict == NOT_REPRODUCED, cid
    lasso = rows["simianer2019-r0-lasso"]
    assert lasso.verdict == NOT_REPRODUCED and "**not reproduced** lasso: simpe -3.4 relative %" in lasso.why
    assert sum(len(row.parts) > 1 for row in rows.values()) >= 10  # the rule is exercised, not vacuous


def test_readmes_tally_is_the_committed_pages():
    """README's generated block is the tally of docs/replication.json (`simpe replicate` writes both)."""
    import json

    from simpe.replicate.page import README_BEGIN, README_END, readme_block

    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    block = README_BEGIN + text.split(README_BEGIN, 1)[1].split(README_END, 1)[0] + README_END
    assert block == readme_block(json.loads(PAGE.with_suffix(".json").read_text(encoding="utf-8")), "docs/replication.md")
    assert "direction-only), " in block and "; [per paper](docs/replication.md#the-tally))." in block


@pytest.fixture(scope="module")
def committed_rows(rebuilt):
    """Every claim's verdict on the committed records, as the page judged them."""
    return rebuilt[2]


def _counted(rows):
    from simpe.replicate.claims import PROBES

    return {cid: row for cid, row in rows.items() if cid not in PROBES and not row.linked}


def test_no_stream_row_is_judged_on_segments_where_the_records_hold_document_ids(committed_rows):
    """Every part of a row that reads the scalc or sdatabase runs (whose records hold document ids) is judged on the
    bootstrap over document blocks, with the segment interval and the figure without its most influential document
    beside it."""
    from simpe.replicate import records as rec
    from simpe.replicate.claims import NEEDS
    from simpe.replicate.judges import documents

    evidence = rec.read_records(RECORDS).evidence()
    streams = {name for name in ("scalc", "sdatabase") if evidence.groups.get(name) and documents(evidence.groups[name])}
    assert streams == {"scalc", "sdatabase"}
    judged = 0
    for cid, row in _counted(committed_rows).items():
        if not set(NEEDS.get(cid, ())) & streams:
            continue
        for part in row.parts:
            if part.effect is None:
                continue
            judged += 1
            assert part.effect.of == "document blocks", (cid, part.why)
            assert "segments: " in part.effect.beside and "without document " in part.effect.beside, (cid, part.why)
    assert judged >= 30  # the Simianer et al. (2019) rows' parts, not a vacuous pass


def test_no_row_is_reproduced_without_a_size_test_and_every_row_follows_its_bands(committed_rows):
    """A reproduced row's every required part has its interval inside its band, in the paper's unit; a direction row
    (no size) is never reproduced; a factor band is [x/2, 2x] of the paper's figure; a null band's half-width stands in
    the rule; and the direction-only rows are partly."""
    import math
    import re

    from simpe.replicate.bands import BANDS, DIRECTION, FACTOR, NULL_JUDGEMENT, NULL_PAPER
    from simpe.replicate.claims import CLAIMS, PARTLY, REPRODUCED
    from simpe.replicate.verdicts import DIRECTION_ONLY, band_around

    rules = {c.id: c.rule for c in CLAIMS}
    for cid, row in _counted(committed_rows).items():
        kinds = BANDS[cid]
        if row.verdict == REPRODUCED:
            assert DIRECTION not in kinds, cid
            required = [p for p in row.parts if p.required]
            assert required, f"{cid}: reproduced with no judged part"
            for p in required:
                assert p.effect is not None and p.band is not None, (cid, p.why)
                assert p.band.low <= p.effect.low and p.effect.high <= p.band.high, (cid, p.why)
        if row.label == DIRECTION_ONLY:
            assert row.verdict == PARTLY, cid
        for p in row.parts:
            if p.band is None:
                continue
            figure = re.search(r"against the paper's ([+-]?[\d.]+), band \[", p.why)
            if figure and FACTOR in kinds and "range" not in kinds:
                assert p.band == band_around(float(figure.group(1))), (cid, p.why)
            if math.isfinite(p.band.low) and p.band.low == -p.band.high and "no effect" in p.why:
                assert NULL_JUDGEMENT in kinds or NULL_PAPER in kinds, cid
                assert f"±{p.band.high:g}" in rules[cid], (cid, p.band)


def test_the_tally_agrees_on_the_page_in_its_json_and_in_readme():
    """Per paper and in total, with the count of direction-only rows, the same numbers in the three places."""
    import json

    from simpe.replicate.claims import Verdict, tally
    from simpe.replicate.verdicts import COUNTED, DIRECTION_ONLY

    data = json.loads(PAGE.with_suffix(".json").read_text(encoding="utf-8"))
    rows = [(cid, Verdict(**{k: row.get(k) for k in ("claim", "source", "paper", "simpe", "verdict", "label", "why", "rule",
                                                     "linked")})) for cid, row in data["rows"].items()]
    assert data["tally"] == tally(rows)
    page, readme = PAGE.read_text(encoding="utf-8"), (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    total = data["tally"]["total"]
    line = (f"{total['reproduced']} reproduced, {total['partly']} partly, {total['not reproduced']} not reproduced, "
            f"{total['inconclusive']} inconclusive, {total['not testable here']} not testable here")
    direction = f"{total[DIRECTION_ONLY]} of the partly rest on direction only"
    assert f"- **in total**: {line} (of " in page and direction in page.split("## The tally", 1)[1].split("\n\n", 2)[1]
    readme_line = (f"{total['reproduced']} reproduced, {total['partly']} partly ({total[DIRECTION_ONLY]} direction-only), "
                   f"{total['not reproduced']} not reproduced, {total['inconclusive']} inconclusive, "
                   f"{total['not testable here']} not testable** (of {sum(total[v] for v in COUNTED)}; [per paper]")
    assert readme_line in readme  # README's word budget holds the total; per paper it links to the page
    from simpe.replicate.papers import PAPERS

    for key, counts in data["tally"].items():
        if key == "total":
            continue
        per_paper = (f"- **{PAPERS[key].cite}**: {counts['reproduced']} reproduced, {counts['partly']} partly, "
                     f"{counts['not reproduced']} not reproduced, {counts['inconclusive']} inconclusive, "
                     f"{counts['not testable here']} not testable here (of {sum(counts[v] for v in COUNTED)}; "
                     f"{counts[DIRECTION_ONLY]} of the partly")
        assert per_paper in page, per_paper
    assert all(sum(data["tally"][k][v] for k in data["tally"] if k != "total") == total[v] for v in (*COUNTED, DIRECTION_ONLY))
