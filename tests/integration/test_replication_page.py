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
