"""The committed replication page is what its committed records give: `simpe replicate --report-only` on
docs/replication/records/ writes docs/replication.md and docs/replication.json again, byte for byte.

When this fails after a change to the claim code (simpe/replicate/claims.py, verdicts.py, papers.py, records.py,
page.py), the page is behind its records: `make replicate ARGS="--report-only"` writes it again (no run), and the diff
is the change's effect on the verdicts. When the loop's code changed, `simpe replicate --status` names the rows whose
records another code made (docs/replicate.md, "Provenance").
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simpe.paths import REPO_ROOT

PAGE = REPO_ROOT / "docs" / "replication.md"
RECORDS = REPO_ROOT / "docs" / "replication" / "records"


@pytest.mark.skipif(not (RECORDS / "calls.json").is_file(), reason="no committed replication records")
def test_the_committed_page_is_rebuilt_byte_for_byte_from_the_committed_records(tmp_path: Path):
    from simpe.replicate.claims import CLAIMS
    from simpe.replicate.page import write_page

    folder = tmp_path / "replication" / "records"
    shutil.copytree(RECORDS, folder)
    out = tmp_path / "replication.md"
    rows = write_page(folder, out, tmp_path / "replication.html")
    assert rows == len(CLAIMS)  # every claim has its row
    assert out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    assert out.with_suffix(".json").read_text(encoding="utf-8") == PAGE.with_suffix(".json").read_text(encoding="utf-8")


@pytest.mark.skipif(not (RECORDS / "calls.json").is_file(), reason="no committed replication records")
def test_no_row_reads_partly_or_inconclusive_while_a_required_part_is_refuted():
    """On the committed records, every row of several parts follows the rule of docs/replicate.md ("The verdicts"): a
    refuted required part makes it not reproduced, whatever the other parts say; lasso's R0 claim is the worked example."""
    from simpe.replicate import records as rec
    from simpe.replicate.claims import NOT_REPRODUCED, verdicts

    rows = dict(verdicts(rec.read_records(RECORDS).evidence()))
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
    assert "claims; [per paper](docs/replication.md#the-tally))." in block
