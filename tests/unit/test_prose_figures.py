"""One source per figure: the times, ratios and counts the pages' prose states either come from their records or are
not stated there (the cases issue 54 found stale: the page lists against mkdocs.yml's nav, README's times of make
simulate and make test, bench-loop's and bench-topk's figures in docs/benchmarks.md, the costs and the paper's
comparison in docs/methods.md, the replication records' size). History lives in dated sections and the changelog."""
from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# measured figures of the history pages (dated sections, the changelog) and pages written by commands
WRITTEN_OR_HISTORY = {"benchmarks.md", "benchmark-results.md", "replication.md", "changelog.md", "cli.md"}
TIME = re.compile(r"\b(\d[\d.,]*(?:[-–]\d[\d.,]*)?)\s?(s|ms|min|minutes|hours|seconds)\b")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """The text without its code blocks (commands and their comments are not figures)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _nav() -> list[str]:
    nav = yaml.safe_load(_text(REPO / "mkdocs.yml"))["nav"]
    return [page for entry in nav for page in entry.values()]


def test_the_page_lists_are_the_nav_of_mkdocs_yml() -> None:
    """docs/index.md's page table and README's list name every page of the manual, in the nav's order."""
    pages = [page for page in _nav() if page != "index.md"]
    assert sorted(pages) == sorted(p.name for p in DOCS.glob("*.md") if p.name != "index.md")
    index = _text(DOCS / "index.md")
    table = index.split("| page | what it is for |", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"^\| \[[^]]+\]\(([\w-]+\.md)\)", table, re.M) == pages
    readme = _text(REPO / "README.md")
    listed = readme.split("<!-- page list:", 1)[1].split("<!-- end of the page list -->", 1)[0]
    assert re.findall(r"\(docs/([\w-]+\.md)\)", listed) == pages


def test_no_page_states_a_time_measured_by_hand() -> None:
    """README and the current pages state no measured time (make simulate's and make test's included): a time is in
    benchmark-results.md (written by the bench targets), the dated history of benchmarks.md or the changelog. Left
    are the settings the code holds, each checked against it, and the demo model's training time, the card's."""
    card = json.loads(_text(REPO / "models" / "demo-en-de" / "model_card.json"))
    allowed = {
        ("serve.md", "150 ms"): "setTimeout(askCompletion, 150)" in _text(REPO / "simpe" / "serve" / "static" / "page.js"),
        ("serve.md", "30 s"): 'default=30.0' in _text(REPO / "benchmarks" / "bench_serve.py"),
        ("serve.md", "0.25-30 s"): '"matecat": (0.25, 30.0)' in _text(REPO / "simpe" / "report" / "people.py"),
        ("serve.md", "0.8 s"): "setTimeout(saveDraft, 800)" in "".join(
            _text(p) for p in sorted((REPO / "simpe" / "serve" / "static").glob("*.js"))),
        ("security.md", "5 seconds"): "ADDRESS_TIMEOUT = 5.0" in _text(REPO / "simpe" / "sweep" / "executor.py"),
        ("tracking.md", "10 seconds"): "PROBE_SECONDS = 10" in _text(REPO / "simpe" / "track" / "mlflow.py"),
        ("sweeps.md", "10 minutes"): "MIN_TIME = 10" in _text(REPO / "simpe" / "sweep" / "slurm.py"),
        ("sweeps.md", "60 s"): "SIGNAL_LEAD = 60" in _text(REPO / "simpe" / "sweep" / "slurm.py"),
        ("sweeps.md", "4 minutes"): "time_limit >= 4 else" in _text(REPO / "simpe" / "sweep" / "slurm.py"),
        ("tests.md", "30 s"): "MIN_JOB_AGE = 30" in _text(REPO / "tests" / "slurm_cluster.py"),
        ("data.md", "271.8 minutes"): card["training_minutes"] == 271.8,
        # the card's table of minutes per step, read in the sentence that names it (models/demo-en-de/README.md)
        ("data.md", "14 minutes"): True, ("data.md", "40 minutes"): True, ("data.md", "11 minutes"): True,
    }
    found = []
    for path in [REPO / "README.md", *sorted(DOCS.glob("*.md"))]:
        if path.name in WRITTEN_OR_HISTORY:
            continue
        for match in TIME.finditer(_prose(_text(path))):
            figure = f"{match.group(1)} {match.group(2)}"
            if not allowed.get((path.name, figure)):
                found.append(f"{path.name}: {figure}")
    assert found == [], "times measured by hand in current prose: link their record instead"
    assert not re.search(r"make (simulate|test)`? (takes )?about \d", _text(REPO / "README.md"))


def test_methods_md_quotes_costs_only_as_recorded() -> None:
    """docs/methods.md gives no per-segment seconds by hand; a cost ratio it quotes for a preset is
    simpe/relative_cost.json's (bench-loop's), and it links that record."""
    text = _prose(_text(DOCS / "methods.md"))
    relative = json.loads(_text(REPO / "simpe" / "relative_cost.json"))["relative"]
    assert "simpe/relative_cost.json" in text and "benchmark-results.md" in text
    assert not re.search(r"\b(baseline|full|lasso|full\+\w+|lasso\+\w+|tune-retrieve) 0\.\d\d\b", text)
    for preset, ratio in re.findall(r"`?([a-z+-]+)`? (\d+\.\d+)× baseline", text):
        assert relative[preset] == float(ratio), (preset, ratio, relative.get(preset))


def test_the_papers_comparison_is_its_six_methods() -> None:
    """Simianer et al. (2019) compare five methods and the baseline (section 3): methods.md says six, names them, and
    calls no other set the paper's."""
    text = " ".join(_text(DOCS / "methods.md").split())
    assert "the six of Simianer et al. (2019)'s comparison (`baseline full bias fixed top lasso`" in text
    assert not re.search(r"(seven|eight|nine|\d+) of the paper's comparison", text)


def test_benchmarks_md_current_part_states_no_figure_and_history_is_dated() -> None:
    """Before its first history section docs/benchmarks.md states no measured figure (goals only); every later section
    is history with its date; the history's bench-loop goal and top-k ratio say they were then's and link the record."""
    text = _text(DOCS / "benchmarks.md")
    current, _, history = text.partition("\n## History")
    without_goals = re.sub(r"(goal[^|]*?|[<≤] ?)\d[\d.,]* ?(ms|s|%|×)", "", current)
    assert not re.search(r"\d[\d.,]* ?(×|s/segment|s/sentence|ms\b|% outside)", without_goals), "a measured figure in the current part"
    headings = re.findall(r"^## (.+)$", "## History" + history, re.M)
    assert headings and all(h.startswith("History") and re.search(r"\d{4}-\d{2}-\d{2}", h) for h in headings), headings
    assert "then reached for five methods" in history and "22× faster than Algorithm 1 then" in history
    record = json.loads(_text(DOCS / "benchmarks.json"))
    assert "9.7x" in record["bench-topk"]["figures"]["topk_dfs (Algorithm 1)"]  # what the link leads to
    shares = [float(v.split(", ")[1].split("%")[0]) for v in record["bench-loop"]["figures"].values()]
    assert min(shares) >= 10.0  # the record the text names: none below the goal on its machine


def test_replicate_md_quotes_the_records_sizes_they_have() -> None:
    """docs/replicate.md's "a 2,000-segment run's record takes about 100 kB" is the committed records' (within 10 %),
    and it states no size of all records by hand (they grow with the plan: du says)."""
    text = " ".join(_text(DOCS / "replicate.md").split())
    assert "a 2,000-segment run's record takes about 100 kB" in text
    sizes = [p.stat().st_size for p in (DOCS / "replication" / "records" / "scalc").glob("*.json") if p.name != "lasso.json"]
    assert sizes and all(abs(size / 1000 - 100) <= 10 for size in sizes), sizes
    assert "du -sh docs/replication/records" in text and not re.search(r"whole plan's records about \d", text)
