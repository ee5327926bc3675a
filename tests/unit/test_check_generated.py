"""scripts/write_docs.py --check (make check-generated, which CI runs before make test rewrites the generated docs):
a stale generated block is named in one line and fails, and nothing is written."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/cli.md", "docs/methods.md", "docs/benchmarks.json", "docs/benchmark-results.md", "mkdocs.yml",
         "benchmarks/record.py")


def _copy(tmp_path: Path) -> Path:
    for name in PAGES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, tmp_path / name)
    return tmp_path


@pytest.fixture()
def write_docs(tmp_path: Path, monkeypatch):
    spec = importlib.util.spec_from_file_location("write_docs_check", REPO / "scripts" / "write_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "REPO_ROOT", _copy(tmp_path))
    return module


def test_the_committed_generated_docs_pass(write_docs) -> None:
    assert write_docs.main(["--check"]) == 0


def test_a_stale_readme_methods_table_fails_and_nothing_is_written(write_docs, tmp_path: Path, capsys) -> None:
    readme = tmp_path / "README.md"
    text = readme.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `lasso` |"))
    readme.write_text(text.replace(row + "\n", ""), encoding="utf-8")  # a method's row missing: the table is stale
    stale = readme.read_bytes()
    assert write_docs.main(["--check"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("stale: README.md: a generated block differs") and "make write-docs" in err[0]
    assert readme.read_bytes() == stale
    assert write_docs.main([]) == 0 and write_docs.main(["--check"]) == 0  # written, then current


def test_a_hand_edited_benchmark_page_fails(write_docs, tmp_path: Path, capsys) -> None:
    page = tmp_path / "docs" / "benchmark-results.md"
    page.write_text(page.read_text(encoding="utf-8").replace("s/segment", "s/seg", 1), encoding="utf-8")
    assert write_docs.main(["--check"]) == 1
    assert capsys.readouterr().err.startswith("stale: docs/benchmark-results.md: differs from what benchmarks/record.py renders")
    assert write_docs.main(["--bogus"]) == 2
