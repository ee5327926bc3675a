"""The papers are cited by authors and year, never by the project's file names for them ("seed 002"), and every
term the glossary promises is defined there.

"Seed 002" is the name of a file in ``../shared/seeds``, not a word a reader can resolve, and "seed" is also the
random seed; docs/references.md maps each citation to its paper. The generated docs/replication.md and its
records are left out: ``simpe replicate`` writes them (they cite by authors and year too)."""
from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEED_NAME = re.compile(r"seeds?[\s_-]?00", re.IGNORECASE)  # "seed 002", "Seed 000", "seed00", "seed-002", "seeds 000-003"
GLOSSARY_TERMS = ("R0", "R1", "R0+1", "SBLEU", "kRG", "kQRG", "search error", "empty mode", "stream", "scalc",
                  "sdatabase", "smath", "schart", "train", "method", "preset", "modifier", "store", "baseline")


def _files() -> list[Path]:
    files = [REPO / "README.md"]
    files += [p for p in sorted((REPO / "docs").glob("*.md")) if p.name != "replication.md"]
    files += sorted((REPO / "simpe").rglob("*.py"))
    for folder in ("scripts", "adapters", "sweeps", "benchmarks", "tests"):
        files += [p for p in sorted((REPO / folder).rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    return [p for p in files if p.resolve() != Path(__file__).resolve()]


def test_no_paper_is_named_by_its_seed_file():
    found = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # a binary file (a golden PNG, a checkpoint): not prose
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if SEED_NAME.search(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not found, "cite the paper by authors and year (docs/references.md), not its seed file:\n" + "\n".join(found)


def test_the_glossary_defines_each_term():
    text = (REPO / "docs" / "glossary.md").read_text(encoding="utf-8")
    headings = {h.strip().strip("`") for h in re.findall(r"^#+ (.+)$", text, re.M)}
    bold = {b.strip("`") for b in re.findall(r"\*\*(.+?)\*\*", text)}
    missing = [term for term in GLOSSARY_TERMS if term not in headings | bold]
    assert not missing, f"docs/glossary.md defines no heading or bold entry for {missing}"


def test_the_readme_links_the_glossary_before_its_first_term():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    link = text.find("docs/glossary.md")
    assert link >= 0, "README.md does not link docs/glossary.md"
    first = min(m.start() for term in ("R0", "SBLEU", "kRG", "scalc", "preset", "store")
                for m in [re.search(rf"\b{re.escape(term)}\b", text)] if m)
    assert link < first, "README.md uses a glossary term before it links docs/glossary.md"
