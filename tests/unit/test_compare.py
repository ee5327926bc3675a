"""The comparison table: deltas from logged figures, bootstrap p-values, writers, ``simpe compare``.

Fixture runs come from test_reader.write_group: real sentences, sacreBLEU statistics.
"""
from __future__ import annotations

import csv
import io
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest, estimate_ci

sys.path.insert(0, str(Path(__file__).parent))
from test_reader import perturb, stream, write_group, write_run  # noqa: E402

from simpe.cli import main  # noqa: E402
from simpe.errors import RunDirError  # noqa: E402
from simpe.metrics import metric_for  # noqa: E402
from simpe.report.compare import column, compare_runs, segment_stats  # noqa: E402
from simpe.report.render import to_csv, to_latex, to_markdown, write_comparison  # noqa: E402
from simpe.rundir.reader import load_group  # noqa: E402
from simpe.stats import bootstrap_scores, paired_bootstrap, resample_counts  # noqa: E402

TABLE_KEYS = ["bleu", "sbleu", "ter", "chrf", "r0+1", "r0", "r1"]


def percent_of_ratio(summed: np.ndarray) -> np.ndarray:
    """The R metrics' score of summed [num, den] statistics, in percent (as the table shows it)."""
    return 100 * metric_for("r0").scores_from_stats(summed)


@pytest.fixture(scope="module")
def group_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_group(tmp_path_factory.mktemp("runs"), num_segments=40)


@pytest.fixture(scope="module")
def comparison(group_dir: Path):
    return compare_runs(load_group([group_dir]))


def _summary(group_dir: Path, name: str) -> dict:
    return json.loads((group_dir / name / "summary.json").read_text())


def test_deltas_are_differences_of_the_logged_corpus_figures(group_dir: Path, comparison) -> None:
    base = _summary(group_dir, "baseline")["corpus"]
    assert [row.run.name for row in comparison.rows] == ["baseline", "bias", "full", "lasso"]
    assert [spec.key for spec in comparison.columns] == TABLE_KEYS  # no COMET: corpus comet is null
    for row in comparison.rows:
        corpus = _summary(group_dir, row.run.name)["corpus"]
        for key in TABLE_KEYS:
            scale = column(key).scale
            assert row.values[key] == pytest.approx(corpus[key] * scale, abs=1e-9)
            if row.run.name != "baseline":
                assert row.deltas[key] == pytest.approx((corpus[key] - base[key]) * scale, abs=1e-9)
    full = comparison.rows[2]
    assert full.adapted_parameters == 5_000_000 and full.store_bytes == 10_000_000
    assert full.deltas["bleu"] > 20 and full.deltas["ter"] < -10  # 8 % vs 35 % word errors


def test_best_value_per_column_is_marked(comparison) -> None:
    # full has the fewest errors: best everywhere, TER lowest
    assert all(comparison.best[key] == {"full"} for key in TABLE_KEYS)
    full = comparison.rows[2]
    markdown = to_markdown(comparison)
    assert f"**{full.values['bleu']:.1f}** (+{full.deltas['bleu']:.1f})†" in markdown
    assert f"**{full.values['ter']:.1f}** (-{abs(full.deltas['ter']):.1f})†" in markdown
    assert f"\\textbf{{{full.values['ter']:.1f}}}" in to_latex(comparison)
    baseline_line = next(line for line in markdown.splitlines() if line.startswith("| baseline |"))
    assert "**" not in baseline_line and "(" not in baseline_line  # absolute figures only


def test_identical_method_gets_p_one_and_a_much_better_one_p_below_005(comparison) -> None:
    bias, full = comparison.rows[1], comparison.rows[2]  # bias: the baseline's hypotheses
    assert all(bias.p_values[key] == 1.0 for key in TABLE_KEYS)
    assert all(bias.deltas[key] == 0.0 for key in TABLE_KEYS)
    for key in ("bleu", "sbleu", "ter", "chrf", "r0+1", "r0"):
        assert full.p_values[key] < 0.05, key
    assert full.p_values["bleu"] == pytest.approx(1 / 1001)
    low, high = full.delta_ci95["bleu"]
    assert low < full.deltas["bleu"] < high and low > 0


def test_p_values_repeat_with_a_seed(group_dir: Path) -> None:
    group = load_group([group_dir])
    first, again = compare_runs(group, seed=7, num_resamples=300), compare_runs(group, seed=7, num_resamples=300)
    other = compare_runs(group, seed=8, num_resamples=300)
    lasso = [row.p_values for row in (first.rows[3], again.rows[3], other.rows[3])]
    assert lasso[0] == lasso[1]
    assert lasso[0] != lasso[2]
    assert all(0 < p <= 1 for p in lasso[0].values())


def test_resampling_is_sacrebleus_paired_bootstrap(group_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same resamples as sacreBLEU's PairedTest(test_type="bs"): equal bootstrap means and CIs."""
    monkeypatch.setenv("SACREBLEU_SEED", "12345")
    group = load_group([group_dir])
    n = group.num_segments
    references = [seg["reference"] for seg in group.baseline.segments]
    systems = [(run.name, [seg["hypothesis"] for seg in run.segments]) for run in group.runs]
    signatures, results = PairedTest(systems, {"BLEU": BLEU(), "chrF": CHRF(), "TER": TER()}, [references],
                                     test_type="bs", n_samples=1000)()
    counts = resample_counts(n, 1000, seed=12345)
    for key, name in (("bleu", "BLEU"), ("chrf", "chrF2"), ("ter", "TER")):
        for position, run in enumerate(group.runs):
            resampled = bootstrap_scores(segment_stats(run, key, n), metric_for(key).scores_from_stats, counts)
            mean, ci = estimate_ci(resampled)
            # sacreBLEU sums float32 statistics; under numpy 2 (NEP 50: a float32 scalar times a Python float stays
            # float32) its BLEU formula then runs in float32 too: measured 1.3e-7 relative on BLEU, 2.9e-6 on chrF
            # where numpy 1 promoted to float64; simpe's resampling is float64 throughout
            assert mean == pytest.approx(results[name][position].mean, rel=1e-5, abs=1e-6), (key, run.name)
            assert ci == pytest.approx(results[name][position].ci, rel=1e-5, abs=1e-6), (key, run.name)
    # the departure documented in simpe.stats: sacreBLEU calls an identical system significant
    assert results["BLEU"][1].p_value == pytest.approx(1 / 1001)
    assert compare_runs(group).rows[1].p_values["bleu"] == 1.0


def test_paired_bootstrap_on_ratio_statistics() -> None:
    rng = np.random.default_rng(0)
    den = rng.integers(1, 5, size=200)
    base = np.stack([rng.binomial(den, 0.4), den], axis=1)  # (200, 2) [num, den]
    counts = resample_counts(200, 500, seed=3)
    assert counts.shape == (500, 200) and (counts.sum(1) == 200).all()
    same = paired_bootstrap(base, base.copy(), percent_of_ratio, num_resamples=500, seed=3)
    assert same.p_value == 1.0 and same.delta == 0.0
    better = np.stack([np.minimum(den, base[:, 0] + 1), den], axis=1)
    result = paired_bootstrap(base, better, percent_of_ratio, num_resamples=500, seed=3)
    assert result.p_value == pytest.approx(1 / 501)
    assert result.delta == pytest.approx(100 * (better[:, 0].sum() - base[:, 0].sum()) / den.sum())
    assert paired_bootstrap(base, better, percent_of_ratio, 500, seed=3) == result


def test_logged_statistics_have_the_declared_layout(group_dir: Path) -> None:
    """BLEU statistics are read in BleuMetric's declared layout only, and rescore to sacreBLEU's corpus BLEU."""
    run = load_group([group_dir]).baseline
    documented = segment_stats(run, "bleu", 40)
    assert documented.shape == (40, len(metric_for("bleu").stat_names)) == (40, 10)
    hypotheses = [seg["hypothesis"] for seg in run.segments]
    references = [seg["reference"] for seg in run.segments]
    assert metric_for("bleu").score_from_stats(documented.sum(0)) == pytest.approx(
        BLEU().corpus_score(hypotheses, [references]).score, abs=1e-9)
    short = [dict(seg, stats=dict(seg["stats"], bleu=seg["stats"]["bleu"][:-1])) for seg in run.segments]
    with pytest.raises(RunDirError, match="not 10 numbers per segment .*m1, m2"):
        segment_stats(replace(run, segments=short), "bleu", 40)


def test_writers_produce_markdown_csv_and_booktabs(comparison, tmp_path: Path) -> None:
    paths = write_comparison(comparison, tmp_path / "out")
    assert {p.name for p in paths.values()} == {"compare.md", "compare.csv", "compare.tex"}
    rows = list(csv.DictReader(io.StringIO(paths["csv"].read_text())))
    assert [r["adapter"] for r in rows] == ["baseline", "bias", "full", "lasso"]
    for row, record in zip(comparison.rows, rows):
        assert float(record["bleu"]) == pytest.approx(row.values["bleu"], abs=1e-5)
        assert float(record["r0"]) == pytest.approx(row.values["r0"], abs=1e-5)
        if row.deltas:
            assert float(record["r0_delta"]) == pytest.approx(row.deltas["r0"], abs=1e-5)
            assert float(record["bleu_p"]) == pytest.approx(row.p_values["bleu"], rel=1e-5)
    assert rows[0]["bleu_delta"] == "" and rows[0]["complete"] == "1"
    latex = paths["latex"].read_text()
    for command in (r"\toprule", r"\midrule", r"\bottomrule", r"\begin{tabular}{lrrrrrrrrr}", r"\caption{"):
        assert command in latex
    assert r"nrefs:1\textbar{}case:mixed\textbar{}eff:no\textbar{}tok:13a" in latex
    markdown = paths["markdown"].read_text()
    assert markdown == to_markdown(comparison)
    signatures = comparison.rows[0].run.summary["signatures"]
    assert f"- BLEU: `{signatures['bleu']}`" in markdown and f"- TER: `{signatures['ter']}`" in markdown
    assert signatures["bleu"] == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    assert "1000 resamples, seed 12345" in markdown


def test_cli_compare_prints_markdown_and_writes_into_the_group(group_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["compare", str(group_dir), "--bootstrap", "200", "--bootstrap-seed", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# Adaptation methods on libreoffice-stream--demo-en-de--40seg (40 segments, 4 runs)")
    assert "| lasso |" in out and "200 resamples, seed 5" in out
    assert (group_dir / "compare" / "compare.md").read_text() in out


def test_cli_refuses_an_incomplete_run_unless_allowed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    group = write_group(tmp_path, num_segments=30, methods={"baseline": ("baseline", 0.35, 0), "full": ("full", 0.1, 9)})
    _, references = stream(30)
    write_run(group, "lasso", "lasso", perturb(references, 0.2, 4), logged=18)
    assert main(["compare", str(group)]) == 2
    err = capsys.readouterr().err
    assert "lasso is incomplete (no DONE)" in err and "--allow-incomplete" in err and len(err.splitlines()) == 1

    assert main(["compare", str(group), "--allow-incomplete", "--out", str(tmp_path / "t")]) == 0
    capsys.readouterr()
    comp = compare_runs(load_group([group], allow_incomplete=True))
    for row in comp.rows:  # figures of the last shared segment, not the summaries
        cumulative = row.run.segments[17]["cumulative"]
        assert row.values["bleu"] == pytest.approx(cumulative["bleu"])
        assert row.values["r0"] == pytest.approx(100 * cumulative["r0"])
    for name in ("compare.md", "compare.csv", "compare.tex"):
        assert "lasso (incomplete)" in (tmp_path / "t" / name).read_text(), name
    assert "first 18 of 30 segments" in (tmp_path / "t" / "compare.md").read_text()


def test_cli_refuses_runs_on_different_streams(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    group = write_group(tmp_path, num_segments=20, methods={"baseline": ("baseline", 0.35, 0)})
    _, references = stream(20)
    changed = references[:]
    changed[3] = "Drücken Sie die Eingabetaste."
    write_run(tmp_path / "elsewhere", "full", "full", perturb(changed, 0.1, 2), references=changed)
    assert main(["compare", str(group / "baseline"), str(tmp_path / "elsewhere" / "full")]) == 2
    assert "different streams" in capsys.readouterr().err


def test_comet_column_appears_when_scored(tmp_path: Path) -> None:
    group = tmp_path / "g"
    _, references = stream(25)
    comet = {"baseline": [0.6 + 0.01 * (i % 3) for i in range(25)], "full": [0.7 + 0.01 * (i % 5) for i in range(25)]}
    write_run(group, "baseline", "baseline", perturb(references, 0.35, 1), comet=comet["baseline"])
    write_run(group, "full", "full", perturb(references, 0.1, 2), comet=comet["full"])
    comp = compare_runs(load_group([group]))
    assert comp.columns[-1].key == "comet"
    full = comp.rows[1]
    assert full.deltas["comet"] == pytest.approx(np.mean(comet["full"]) - np.mean(comet["baseline"]))
    assert full.p_values["comet"] == pytest.approx(1 / 1001)
    markdown = to_markdown(comp)
    assert "| R1 | COMET | adapted params |" in markdown and "- COMET: `model:tiny-comet|batch:8`" in markdown
    assert "comet_delta" in to_csv(comp).splitlines()[0]


def test_reads_what_simpes_online_scorer_logs(tmp_path: Path) -> None:
    """Records made by the loop's own scorer (simpe.metrics.online): stats parse, figures agree."""
    from simpe.config.files import defaults
    from simpe.metrics.online import OnlineScorer

    sources, references = stream(24)
    group = tmp_path / "libreoffice-stream--demo-en-de--24seg"
    for name, rate in (("baseline", 0.4), ("full", 0.05)):
        scorer = OnlineScorer(defaults("metrics", lang="de", truecaser=None, stopwords="de"))
        records = [{"index": i, "source": s, "reference": r, "hypothesis": h, **scorer.add(h, r)}
                   for i, (s, r, h) in enumerate(zip(sources, references, perturb(references, rate, seed=len(name))))]
        run = group / name
        run.mkdir(parents=True)
        (run / "config.yaml").write_text(f"adapter: {name}\nmethod:\n  name: {name}\n  params: {{}}\n")
        (run / "segments.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        (run / "summary.json").write_text(json.dumps({"method": name, "adapter": name, "segments": 24, **scorer.summary()}))
        (run / "DONE").write_text("complete\n")
    comp = compare_runs(load_group([group]))
    assert comp.notes == []  # the figures recomputed from the logged stats equal the logged ones
    base, full = (json.loads((group / n / "summary.json").read_text())["corpus"] for n in ("baseline", "full"))
    row = comp.rows[1]
    for key in TABLE_KEYS:
        if base[key] is not None and full[key] is not None:
            assert row.deltas[key] == pytest.approx((full[key] - base[key]) * column(key).scale)
    assert row.p_values["bleu"] < 0.05 and row.p_values["ter"] < 0.05
    markdown = to_markdown(comp)
    assert "SBLEU: `nrefs:1|case:mixed|eff:yes|tok:13a|smooth:nakov" in markdown
    assert "- R: `k:1|unit:word|sw:de.bf55e315|case:exact|filter:punct-or-digits|tok:moses.de|tc:none|scope:stream|version:" in markdown


def test_runs_whose_r_signatures_differ_are_not_compared(tmp_path: Path) -> None:
    """R counted with other stopword rules (or by simpe 0.1, with no R signature) is not comparable."""
    from simpe.config.files import defaults
    from simpe.metrics.online import OnlineScorer

    sources, references = stream(8)
    group = tmp_path / "libreoffice-stream--demo-en-de--8seg"

    def write(name: str, case: str, drop_r_signature: bool = False) -> None:
        scorer = OnlineScorer(defaults("metrics", lang="de", truecaser=None, stopwords="de", stopword_case=case))
        records = [{"index": i, "source": s, "reference": r, "hypothesis": r, **scorer.add(r, r)}
                   for i, (s, r) in enumerate(zip(sources, references))]
        run = group / name
        run.mkdir(parents=True, exist_ok=True)
        (run / "config.yaml").write_text(f"adapter: {name}\nmethod:\n  name: {name}\n  params: {{}}\n")
        (run / "segments.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
        summary = {"method": name, "adapter": name, "segments": 8, **scorer.summary()}
        if drop_r_signature:
            del summary["signatures"]["r"]
        (run / "summary.json").write_text(json.dumps(summary))
        (run / "DONE").write_text("complete\n")

    write("baseline", "exact")
    write("full", "insensitive")
    with pytest.raises(RunDirError, match="scored R with different settings.*case:insensitive"):
        compare_runs(load_group([group]))
    write("full", "exact", drop_r_signature=True)
    with pytest.raises(RunDirError, match="runs full logged no R signature"):
        compare_runs(load_group([group]))
