"""``simpe replicate``: the plan (never smath), and a tiny version of the whole pipeline on the demo model.

The tiny pipeline: three methods on 3 segments of each stream, the decoding studies on 2 dev
sentences, every claim judged and the page written. The real page (docs/replication.md) comes
from ``make replicate`` (hours); here only the machinery is checked, with concrete values where
they are known by hand (the random kRG) and by an independent computation (a claim's figures
against the runs' own summaries).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simpe.replicate.claims import NOT_TESTABLE, Evidence, verdicts
from simpe.replicate.plan import Scale, describe, make_plan

ray = pytest.importorskip("ray")


def test_the_plan_covers_every_experiment_and_never_smath(tmp_path: Path):
    from simpe.paths import REPO_ROOT
    from simpe.replicate.plan import SMALL_MODEL

    p = make_plan(Scale(), tmp_path)
    small = (REPO_ROOT / SMALL_MODEL / "config.json").is_file()  # why-size runs only where the smaller model is
    assert {name: len(specs) for name, specs in p.experiments.items()} == {
        "scalc": 8, "sdatabase": 8, "forgetting": 8, "sensitivity": 18, "why-budget": 3, **({"why-size": 4} if small else {}),
        "field": 6, "field-forgetting": 6, "terms": 12}
    # the field's methods share the scalc and forgetting baselines (the same folders)
    # (the ewc presets in every clone: their Fisher reads the shipped train-sample split)
    assert [spec.name for spec in p.experiments["field"]] == ["baseline", "tune-retrieve", "full+replay", "full+ewc",
                                                              "lasso+ewc", "full+knn"]
    assert p.notes == []
    assert p.experiments["field"][0].path == p.experiments["scalc"][0].path
    assert p.experiments["field-forgetting"][0].path == p.experiments["forgetting"][0].path
    # lasso's budgets share the scalc baseline (one run): the paper's 1M + 1M scaled part by part, and 25 % + 25 %
    assert {spec.name for spec in p.experiments["why-budget"]} == {
        "baseline", "lasso--budget_nonembedding=0.1--budget_embedding=0.0066", "lasso--budget_nonembedding=0.25--budget_embedding=0.25"}
    assert p.experiments["why-budget"][0].path == p.experiments["scalc"][0].path
    splits = {spec.cfg.data.split for spec in p.specs()}
    assert splits == {"stream", "sdatabase"}  # the reserved split's smath half is never loaded
    assert {spec.cfg.data.segments for spec in p.experiments["scalc"]} == {2000}
    assert all(spec.cfg.metrics.novel_vocab == "train" and spec.cfg.metrics.subword == "all" for spec in p.specs())
    # the terms part: its own group (the glossary is part of its identity), each method plain and constrained, +prefer
    assert [spec.name for spec in p.experiments["terms"]] == [
        "baseline", "full", "lora", "lasso", "knn", *(f"{m}--name=constrained_beam" for m in ("baseline", "full", "lora", "lasso", "knn")),
        "full+prefer", "lora+prefer"]
    assert {spec.cfg.data.glossary for spec in p.experiments["terms"]} == {"dataset"}
    assert p.experiments["terms"][0].path.parent != p.experiments["scalc"][0].path.parent
    assert {spec.cfg.data.segments for spec in p.experiments["terms"]} == {2000}
    assert len(p.specs()) == 66 + 4 * small  # no run twice
    assert all(spec.cfg.snapshots.forgetting == 100 and not spec.cfg.snapshots.ranking for spec in p.experiments["forgetting"])
    text = describe(p, 2)
    assert f"{66 + 4 * small} loop runs" in text and "expected: about" in text and "plus the decoding studies" in text


def test_a_call_with_only_some_parts_describes_only_those(tmp_path: Path):
    from simpe.replicate.plan import parts_to_run

    p = make_plan(Scale(), tmp_path)
    parts = parts_to_run(["forgetting"])
    p.experiments = {name: specs for name, specs in p.experiments.items() if name in parts}
    text = describe(p, 2, parts)
    assert "8 loop runs" in text and "decoding studies" not in text and "exact top-1" not in text
    assert "MBR sensitivity" not in text and "+ 0.0 h of studies" in text
    assert "exact top-1" in describe(p, 2, parts | {"studies"})


def test_sdatabase_is_the_reserved_splits_database_module_only():
    from simpe.datasets import DATASETS

    segments = DATASETS.build("libreoffice").load("sdatabase")
    assert len(segments) == 1742
    assert {s.doc_id.split("/")[1] for s in segments} == {"sdatabase"}


TINY = dict(segments=3, second_segments=3, sensitivity=False, probe=2, beam_probe=3, beam_sizes=(2, 3), ks=(2, 3), max_expansions=300,
            methods=["baseline", "full", "lasso"], sensitivity_sentences=3, sensitivity_samples=4, forgetting_segments=3,
            forgetting_every=3, forgetting_size=2, system_samples=6, mbr_samples=4)


def test_the_page_from_no_runs_judges_every_claim_and_says_what_is_missing(tmp_path: Path):
    """--report-only before anything ran (make test's cover of the page; the tiny pipeline below, with its runs and
    studies, is make test-slow's): every claim gets a row, each that needs a run says which, both pages are written."""
    from simpe.errors import ConfigError
    from simpe.replicate.run import replicate

    out = tmp_path / "docs" / "replication.md"
    with pytest.raises(ConfigError, match="no records folder .*: `simpe replicate` .* writes the records"):
        replicate(Scale(**TINY), tmp_path / "runs", out, run=False)  # a page is never emptied for want of its records
    (tmp_path / "docs" / "replication" / "records").mkdir(parents=True)  # an empty records folder: every row says why
    message = replicate(Scale(**TINY), tmp_path / "runs", out, workers=1, threads=1, progress=False, run=False)
    assert message.endswith(f"(46 claims, judged from the records in {tmp_path / 'docs' / 'replication' / 'records'})")
    rows = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["rows"]
    assert len(rows) == 46 and [c for c, row in rows.items() if row["verdict"] != NOT_TESTABLE] == ["yan2022-random"]
    assert not any("awaits" in row["why"] for row in rows.values())  # nothing ran: no row waits for a newer record
    assert rows["simianer2019-bleu"]["why"] == ("no records of the scalc runs in records/scalc/ (`simpe replicate --only scalc` "
                                                "runs them and writes them)")
    assert rows["simianer2019-bleu"]["code"]["scalc"] is None and rows["simianer2019-bleu"]["measured"] == []
    page = out.read_text(encoding="utf-8")
    assert ("- **in total**: 0 reproduced, 0 partly, 0 not reproduced, 0 inconclusive, 34 not testable here (of 34 claims; 0 of "
            "the partly rest on direction only)") in page
    assert ("- **Simianer et al. (2019)**: 0 reproduced, 0 partly, 0 not reproduced, 0 inconclusive, 11 not testable here (of 11; "
            "0 of the partly rest on direction only)") in page
    assert ("12 probes beyond the papers (and checks of arithmetic or of a theorem, and rows that could not pass or fail by "
            "construction) are measured, not counted") in page
    assert "Simianer et al. (2019), *Measuring Immediate Adaptation Performance for Neural Machine Translation*" in page
    assert "58.75 (exact expectation; linear gain: 80.42)" in page and "**measured**: arithmetic, not a finding: +0.03" in page
    assert "<table>" in (tmp_path / "runs" / "replication.html").read_text(encoding="utf-8")


@pytest.mark.slow  # docs/tests.md: in make test, test_replication_page.py (write_page from records, byte for byte) and
# test_replicate_records.py's status of stale rows
def test_report_only_rebuilds_the_page_byte_for_byte_from_the_records(tmp_path: Path, one_torch_thread):
    """The page rests on the records alone. A short real run (3 scalc segments of the baseline and lasso, the demo
    model through the loop, one thread) writes the records and the page; the records give the verdicts the runs give;
    with the runs deleted, --report-only writes the page and its json again, byte for byte; --status finds every row
    current, then names the rows, the run and the file behind a record made by other code."""
    from simpe.replicate import records as rec
    from simpe.replicate.provenance import status
    from simpe.replicate.run import replicate
    from simpe.rundir.reader import load_group

    out, runs = tmp_path / "docs" / "replication.md", tmp_path / "runs"
    scale = Scale(**{**TINY, "methods": ["baseline", "lasso"]})  # type: ignore[arg-type]
    try:
        message = replicate(scale, runs, out, workers=1, threads=1, progress=False, only=["scalc"], call="simpe replicate --test")
    finally:
        ray.shutdown()
    assert message.endswith("(46 claims; 0 runs failed)")
    folder = out.with_suffix("") / "records"
    assert sorted(p.name for p in (folder / "scalc").iterdir()) == ["baseline.json", "lasso.json"]
    group = load_group(sorted(runs.glob("*--3seg--*/*")))
    records = rec.read_records(folder)
    assert verdicts(records.evidence()) == verdicts(Evidence({"scalc": group}, None, {name: records.evidence().notes[name] for name in
                                                                                      ("sdatabase", "forgetting", "sensitivity", "why-budget", "why-size",
                                                                                       "field", "field-forgetting", "terms")}))
    texts = [p.read_text(encoding="utf-8") for p in (folder / "scalc").glob("*.json")]
    assert all(len(t) < 20_000 and group.baseline.segments[0]["hypothesis"] not in t and '"hyp_tokens"' not in t for t in texts)
    page, data = out.read_bytes(), out.with_suffix(".json").read_bytes()
    text = page.decode("utf-8")
    assert "- **calls**: `simpe replicate --test` at commit " in text and " h of wall time, on " in text and "## Provenance" in text
    assert "2 loop runs (scalc: 2) and 0 studies" in text and "in replication/records/" in text

    shutil.rmtree(runs)
    replicate(scale, runs, out, run=False)
    assert out.read_bytes() == page and out.with_suffix(".json").read_bytes() == data
    assert status(out).splitlines() == ["all 46 rows are current: their records and the page were made by the code as it is now"]

    lasso = folder / "scalc" / "lasso.json"  # as if lasso.py had changed since the run
    saved = json.loads(lasso.read_text(encoding="utf-8"))
    lasso.write_text(lasso.read_text(encoding="utf-8").replace(f'"code": "{saved["code"]}"', '"code": "0000000000000000"'), encoding="utf-8")
    tables = json.loads((folder / "code.json").read_text(encoding="utf-8"))
    tables["0" * 16] = {**tables[saved["code"]], "simpe/methods/lasso.py": "0" * 16}
    (folder / "code.json").write_text(json.dumps(tables), encoding="utf-8")
    lines = status(out).splitlines()
    assert lines[0] == ("simianer2019-bleu: stale: the code changed since the scalc records were made (lasso: simpe/methods/lasso.py): "
                        "they await the next call that runs the part, `simpe replicate --only scalc` or the from-scratch `make replicate`")
    assert lines[-1] == "15 of 46 rows stale against the code as it is now" and len(lines) == 16  # the why and field rows too


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import torch

    from simpe.replicate.run import replicate

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("replicate")
    scale = Scale(**TINY)
    out = root / "docs" / "replication.md"
    try:
        message = replicate(scale, root / "runs", out, workers=1, threads=1, progress=False, call="test")
    finally:
        ray.shutdown()
        torch.set_num_threads(threads)
    return root, out, message


@pytest.mark.slow  # make test: test_the_page_from_no_runs_judges_every_claim_and_says_what_is_missing
def test_a_tiny_replication_judges_every_claim_and_writes_both_pages(tiny):
    root, out, message = tiny
    assert "0 runs failed" in message
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!-- generated by `simpe replicate`")
    assert "| A random order of the top 10 scores kRG 58.72 under the exponential gain. `yan2022-random` |" in page
    assert "58.75 (exact expectation; linear gain: 80.42)" in page and "**measured**: arithmetic, not a finding: +0.03" in page
    assert "BLEU on 2 held-out dev segments after 3 stream segments: baseline" in page  # the forgetting probe ran
    assert "**not testable here**: no COMET model offline" in page  # what cannot run here says so, and what fills it
    assert "`amrhein2022-sbleu`" in page and "`amrhein2022-chrf++`" in page
    assert "3 systems (the demo model and its adapted states after 3 scalc segments of each method): sampled kQRG" in page
    assert (out.parent / "replication" / "figure2.png").stat().st_size > 10_000
    assert "<table>" in (root / "runs" / "replication.html").read_text(encoding="utf-8")
    studies = json.loads((root / "runs" / "studies.json").read_text(encoding="utf-8"))
    assert studies["settings"] == {"probe": 2, "beam_sizes": [2, 3], "ks": [2, 3], "max_expansions": 300, "beam_probe": 3}
    assert studies["figures"]["beam_sizes"]["sentences"] == 3 and len(studies["figures"]["beam_sizes"]["bleu_stats"]["3"]) == 3
    assert all("krg_linear_ln" in r for r in studies["figures"]["top_region"]["2"]["per_sentence"])
    systems = json.loads((out.parent / "replication" / "records" / "systems.json").read_text(encoding="utf-8"))
    assert all(len(m["per_sentence"]) == 2 and "random_krg" in m["per_sentence"][0] for m in systems["figures"]["models"])
    rows = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["rows"]
    assert "awaits" not in rows["yan2022-sampling"]["why"] and "awaits" not in rows["yan2021-t2-length-norm"]["why"]
    assert "awaits" not in rows["simianer2019-bleu-similar"]["why"]  # TER's per-segment statistics are in the records


@pytest.mark.slow  # make test: test_the_page_from_no_runs_judges_every_claim_and_says_what_is_missing
def test_a_claims_figures_are_the_runs_own(tiny):
    """The R0 claim's effect comes from the logged statistics; it equals the runs' summaries as a relative change."""
    from simpe.rundir.reader import load_group

    root, _, _ = tiny
    group_dir = next((root / "runs").glob("libreoffice-stream--*--3seg--*"))
    group = load_group([group_dir / name for name in ("baseline", "full", "lasso")])  # the scalc runs, not the forgetting ones
    (cid, verdict), = verdicts(Evidence({"scalc": group}, None), only=["simianer2019-r0-lasso"])
    runs = {run.name: run for run in group.runs}
    r0 = 100 * (runs["lasso"].summary["corpus"]["r0"] / runs["baseline"].summary["corpus"]["r0"] - 1)
    assert verdict.simpe.startswith(f"lasso {r0:+.1f} relative % (95% CI ")
    (_, missing), = verdicts(Evidence({"scalc": None}, None, {"scalc": "not run"}), only=["simianer2019-bleu"])
    assert missing.verdict == NOT_TESTABLE and missing.why == "not run"
    (_, random), = verdicts(Evidence({}, None), only=["yan2022-random"])
    assert random.verdict == "measured"  # arithmetic: a probe, not a finding


@pytest.mark.slow  # make test: test_the_page_from_no_runs_judges_every_claim_and_says_what_is_missing
def test_the_field_methods_table_is_the_runs_own(tiny):
    """The field part (tune-retrieve, full+replay, full+ewc, lasso+ewc, full+knn on the same 3 segments): its table's
    BLEU differences equal the runs' own summaries (sacreBLEU on the whole outputs, an independent computation), against
    the baseline and, for a composition, against the method it modifies; every field method also ran its forgetting run."""
    from simpe.replicate import records as rec
    from simpe.replicate.claims import field_evidence

    root, out, _ = tiny
    records = rec.read_records(out.with_suffix("") / "records")
    table = field_evidence(records.evidence())
    assert [row.method for row in table.rows] == ["full", "lasso", "tune-retrieve", "full+replay", "full+ewc", "lasso+ewc",
                                                  "full+knn"]
    runs = {r.name: r for r in (*records.group("scalc")[0].runs, *records.group("field")[0].methods)}
    bleu = {name: run.summary["corpus"]["bleu"] for name, run in runs.items()}
    for row in table.rows:
        assert row.bleu.value == pytest.approx(bleu[row.method] - bleu["baseline"], abs=1e-9)
        assert row.parent == {"full+replay": "full", "full+ewc": "full", "lasso+ewc": "lasso", "full+knn": "full"}.get(row.method)
        if row.parent:
            assert row.bleu_parent.value == pytest.approx(bleu[row.method] - bleu[row.parent], abs=1e-9)
        assert row.forgetting is not None and row.seconds > 0
    page = out.read_text(encoding="utf-8")
    assert "## The field's methods beside the papers' (`beyond-field`, measured)" in page
    assert "| tune-retrieve | " in page and "(vs full) |" in page


@pytest.mark.slow  # make test: test_the_page_from_no_runs_judges_every_claim_and_says_what_is_missing
def test_the_terms_table_is_the_runs_own(tiny):
    """The terms part (the baseline, full and lasso with the LibreOffice glossary, each plain and constrained, and
    full+prefer, on the same 3 segments): its table's figures equal the runs' own summaries (BLEU by sacreBLEU on the
    whole outputs, term accuracy by the loop's term counter), each constrained run set against its plain self and
    full+prefer against full; the records keep the term columns."""
    from simpe.replicate import records as rec
    from simpe.replicate.claims import terms_evidence

    _, out, _ = tiny
    records = rec.read_records(out.with_suffix("") / "records")
    table = terms_evidence(records.evidence())
    assert [(row.label, row.against) for row in table.rows] == [
        ("baseline", None), ("baseline + constraint", "baseline"), ("full", "baseline"), ("full + constraint", "full"),
        ("lasso", "baseline"), ("lasso + constraint", "lasso"), ("full+prefer", "full")]
    group = records.group("terms")[0]
    runs = {r.name: r for r in group.runs}
    name = {"baseline + constraint": "baseline--name=constrained_beam", "full + constraint": "full--name=constrained_beam",
            "lasso + constraint": "lasso--name=constrained_beam"}
    corpus = {label: runs[name.get(label, label)].summary["corpus"] for label in [row.label for row in table.rows]}
    for row in table.rows:
        assert row.values["bleu"] == pytest.approx(corpus[row.label]["bleu"], abs=1e-9)
        term = corpus[row.label].get("term")  # None where the 3 segments hold no glossary term the reference uses
        assert row.values["term"] is None if term is None else row.values["term"] == pytest.approx(100 * term, abs=1e-9)
        if row.against:
            assert row.effects["bleu"].value == pytest.approx(corpus[row.label]["bleu"] - corpus[row.against]["bleu"], abs=1e-9)
    assert table.occurrences is not None and table.entries == 467 and table.glossary == "data/libreoffice/glossary.tsv"
    assert all(f"{key}.hits" in (out.with_suffix("") / "records" / "terms" / "full.json").read_text(encoding="utf-8")
               for key in ("term", "t0", "t1"))  # the records keep the term columns
    page = out.read_text(encoding="utf-8")
    assert "## Terms and preferences (`beyond-terms`, measured)" in page and "| full + constraint | full | " in page


@pytest.mark.slow  # make test: test_report_only_rebuilds_the_page_byte_for_byte_from_the_records
def test_a_call_with_only_rewrites_its_parts_records_and_keeps_the_others(tiny, tmp_path: Path):
    """--only forgetting, after the whole plan: the forgetting records are written again (by this call: the stale
    forgetting runs start again), the scalc records stay byte for byte, and the page names both calls."""
    import ray

    from simpe.replicate.run import replicate

    root, out, _ = tiny
    page = tmp_path / "docs" / "replication.md"
    shutil.copytree(out.with_suffix(""), page.with_suffix(""))  # the first call's records
    records = page.with_suffix("") / "records"
    scalc = {p.name: p.read_bytes() for p in (records / "scalc").glob("*.json")}
    first = json.loads((records / "calls.json").read_text(encoding="utf-8"))["calls"][0]["id"]
    for env in (root / "runs").glob("*--3seg--*/*--forgetting=2/env.json"):  # as if the code had changed since they ran
        data = json.loads(env.read_text(encoding="utf-8"))
        env.write_text(json.dumps({**data, "code": {**data["code"], "fingerprint": "0" * 16}}), encoding="utf-8")
    try:
        replicate(Scale(**TINY), root / "runs", page, workers=1, threads=1, progress=False, only=["forgetting"], call="second")
    finally:
        ray.shutdown()
    assert {p.name: p.read_bytes() for p in (records / "scalc").glob("*.json")} == scalc
    calls = json.loads((records / "calls.json").read_text(encoding="utf-8"))["calls"]
    assert [c["call"] for c in calls][-1] == "second" and calls[-1]["wall_seconds"] > 0
    second = calls[-1]["id"]
    rows = json.loads(page.with_suffix(".json").read_text(encoding="utf-8"))["rows"]
    assert rows["simianer2019-bleu"]["measured"] == [first]
    assert rows["beyond-forgetting"]["measured"] == [second]  # the forgetting runs ran again in the second call
    text = page.read_text(encoding="utf-8")
    assert "`test` at commit" in text and "`second` at commit" in text


# ---------------------------------------------------------------------------------------- your model, your data
@pytest.fixture
def tiny_text(tmp_path: Path) -> list[str]:
    """A text dataset of 40 LibreOffice segments, its last 10 held out as the dev split: the --set flags naming it."""
    from simpe.paths import DATA_DIR

    for name, lang in (("src.en", "en"), ("ref.de", "de")):
        lines = (DATA_DIR / "libreoffice" / f"stream.{lang}").read_text(encoding="utf-8").splitlines()[:40]
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["--set", f"data.params.source={tmp_path / 'src.en'}", "--set", f"data.params.reference={tmp_path / 'ref.de'}",
            "--set", "data.params.dev=10"]


def test_your_model_and_data_plan_the_parts_that_need_only_a_model_and_a_stream(tiny_text, tmp_path: Path, capsys, no_model_load):
    """--dataset text (the demo model, 5 segments) --dry-run: the stream runs, the forgetting runs on the held-out dev
    split and the studies, what is left out and why; nothing written, no model loaded."""
    from simpe.cli import main

    runs = tmp_path / "runs"
    assert main(["replicate", "--dataset", "text", *tiny_text, "--segments", "5", "--runs-dir", str(runs), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("your model and data: the demo model on text (30 stream segments, 10 dev segments)\n")
    assert "  stream         8 runs x 5 segments: baseline, full, bias, fixed, top, lasso, lora, knn" in out
    assert "  forgetting     8 runs x 30 segments: baseline--forgetting=10," in out and "  studies      50 dev sentences" in out
    assert "left out: no novel-word R (Table 3): the dataset has no train vocabulary" in out
    assert "sdatabase" not in out and "sensitivity" not in out and "MBR" not in out
    assert not runs.exists() and not (tmp_path / "replication").exists()
    assert main(["replicate", "--dataset", "text", *tiny_text[:4], "--segments", "5", "--runs-dir", str(runs), "--dry-run"]) == 0
    out = capsys.readouterr().out  # no dev split: no forgetting runs, no studies, and the flag that holds one out
    assert "\n  forgetting  " not in out and "\n  studies  " not in out
    assert "left out: no forgetting runs and no decoding studies: text has no dev split (--set data.params.dev=N holds out" in out


@pytest.mark.parametrize("case", ["missing-file", "missing-model", "too-many-segments", "dev-too-large", "unknown-part",
                                  "set-without-model", "unknown-dataset", "unknown-key"])
def test_bad_input_to_your_replication_is_one_line_before_the_model_loads(case: str, tiny_text, tmp_path: Path, capsys,
                                                                          no_model_load):
    from simpe.cli import main

    runs = tmp_path / "runs"
    base = ["replicate", "--dataset", "text", *tiny_text, "--segments", "5", "--runs-dir", str(runs)]
    args, fragment = {
        "missing-file": ([*base[:4], f"data.params.source={tmp_path / 'nope.en'}", *base[5:]], "nope.en' does not exist"),
        "missing-model": ([*base, "--model", str(tmp_path / "nomodel")], "nomodel does not exist"),
        "too-many-segments": ([*base[:-3], "500", *base[-2:]], "--segments 500, but the stream of text has 30 segments"),
        "dev-too-large": ([*base, "--set", "data.params.dev=40"], "dev=40 holds out every one of its 40 segments"),
        "unknown-part": ([*base, "--only", "scalc"], "unknown part 'scalc' of the replication of your model and data; known: "
                                                     "stream, forgetting, studies"),
        "set-without-model": (["replicate", "--set", "data.params.dev=1", "--runs-dir", str(runs)], "give --model or --dataset"),
        "unknown-dataset": ([*base[:2], "wmt", *base[3:]], "unknown dataset 'wmt'"),
        "unknown-key": ([*base, "--set", "data.params.nonesuch=1"], "nonesuch"),
    }[case]
    capsys.readouterr()
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("simpe: error: ") and fragment in lines[0], lines
    assert not runs.exists()


@pytest.mark.slow  # make test: the dry run above (the plan) and test_report_only_rebuilds_the_page_byte_for_byte_from_the_records
def test_your_model_and_data_fill_the_same_page_with_their_names_at_the_top(tiny_text, tmp_path: Path, one_torch_thread):
    """A real call on the tiny text dataset (3 methods, 5 segments, the studies on 2 dev sentences): the page names the
    model and the data at the top, judges the stream's claims, says what is not run on your data, and is rebuilt byte
    for byte from its records."""
    from simpe.replicate.run import replicate

    sets = tuple(tiny_text[i + 1] for i in range(0, len(tiny_text), 2))
    scale = Scale(segments=5, probe=2, beam_probe=2, beam_sizes=(2, 3), ks=(2, 3), max_expansions=300, methods=["baseline", "full", "lasso"],
                  forgetting_segments=5, forgetting_every=5, forgetting_size=3, dataset="text", sets=sets)
    out, runs = tmp_path / "runs" / "replication.md", tmp_path / "runs"
    try:
        replicate(scale, runs, out, workers=1, threads=1, progress=False, call="simpe replicate --dataset text")
    finally:
        ray.shutdown()
    text = out.read_text(encoding="utf-8")
    assert "- **model**: demo-en-de (the embedded demo model" in text
    assert f"- **data**: text (dev=10, reference={tmp_path / 'ref.de'}, source={tmp_path / 'src.en'}, src_lang=en, tgt_lang=de): " \
           "the stream's first 5 segments; forgetting runs on its first 5 segments, probed on the dev split" in text
    rows = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["rows"]
    assert rows["simianer2019-bleu"]["verdict"] != NOT_TESTABLE and rows["simianer2019-bleu"]["code"]["scalc"]
    assert rows["beyond-forgetting"]["simpe"].startswith("BLEU on 3 held-out dev segments after 5 stream segments")
    assert "not run on your model and data" in rows["simianer2019-t5-streams"]["why"]
    assert rows["yan2021-empty-modes"]["verdict"] == "measured" and rows["yan2021-empty-modes"]["simpe"] != "–"
    page = out.read_bytes()
    for group in runs.glob("libreoffice-stream--demo-en-de--5seg--*"):
        shutil.rmtree(group)
    for group in runs.glob("text-stream--*"):
        shutil.rmtree(group)
    replicate(scale, runs, out, run=False)
    assert out.read_bytes() == page
