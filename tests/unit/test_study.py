"""``simpe rank``: the protocol's outputs for one model, the MBR correlation across models, the
correlation coefficients (golden values worked by hand), and one-line errors for bad input."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_decoders import REFERENCES, SOURCES, make_text_model, text_tokenizer

from simpe.cli import main
from simpe.errors import DataError
from simpe.measure.rank import read_test_set
from simpe.stats import kendall, pearson, spearman

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: see conftest.py


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory) -> list[Path]:
    """Three save_pretrained folders: the tiny text model after 30, 55 and 80 training steps."""
    root = tmp_path_factory.mktemp("rank_models")
    tok = text_tokenizer()
    folders = []
    for steps in (30, 55, 80):
        folder = root / f"tiny-{steps}"
        make_text_model(seed=0, steps=steps).save_pretrained(folder)
        tok.save_pretrained(folder)
        folders.append(folder)
    return folders


@pytest.fixture
def test_set(tmp_path) -> tuple[Path, Path]:
    src, ref = tmp_path / "test.en", tmp_path / "test.de"
    # a long source first, filtered out by --max-words 6
    src.write_text("\n".join(["This sentence has far too many words to pass the filter."] + SOURCES) + "\n", encoding="utf-8")
    ref.write_text("\n".join(["Dieser Satz hat viel zu viele Wörter."] + REFERENCES) + "\n", encoding="utf-8")
    return src, ref


def test_correlation_golden_values() -> None:
    # x = [1, 2, 3, 4], y = [1, 3, 2, 4]: deviations (-1.5, -.5, .5, 1.5) and (-1.5, .5, -.5, 1.5),
    # r = (2.25 - .25 - .25 + 2.25) / 5 = 0.8; the values are their own ranks, so rho = 0.8;
    # pairs: 5 concordant, 1 discordant (2-3), tau = 4 / 6.
    x, y = [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]
    assert pearson(x, y) == pytest.approx(0.8)
    assert spearman(x, y) == pytest.approx(0.8)
    assert kendall(x, y) == pytest.approx(4 / 6)
    assert spearman([10.0, 20.0, 30.0], [0.1, 0.5, 0.2]) == pytest.approx(0.5)
    assert pearson([1.0, 1.0], [2.0, 3.0]) is None and pearson([1.0], [1.0]) is None
    assert kendall([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)


def test_read_test_set_filters(test_set) -> None:
    src, ref = test_set
    sources, references = read_test_set(src, ref, limit=3, max_words=6)
    assert sources == SOURCES[:3] and references == REFERENCES[:3]
    assert len(read_test_set(src, ref)[0]) == 5
    with pytest.raises(DataError, match="no sentence pair"):
        read_test_set(src, ref, max_words=1)


def test_rank_one_model_writes_records_and_summary(saved_models, test_set, tmp_path, capsys) -> None:
    src, ref = test_set
    out = tmp_path / "rank"
    args = ["rank", "--model", str(saved_models[2]), "--src", str(src), "--ref", str(ref), "--max-words", "6",
            "--limit", "3", "--out", str(out), "--k", "3", "--samples", "10", "--device", "cpu"]
    assert main(args) == 0
    records = [json.loads(line) for line in (out / "records.jsonl").read_text(encoding="utf-8").splitlines()]
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [r["source"] for r in records] == SOURCES[:3]
    for record in records:
        top, mc = record["top"], record["mc"]
        assert len(top["hypotheses"]) == 3 and top["exact"] is True
        assert [h["score"] for h in top["hypotheses"]] == sorted((h["score"] for h in top["hypotheses"]), reverse=True)
        assert sum(s["count"] for s in mc["samples"]) == 10
        assert 0 < top["krg"] <= 1 and 0 < mc["krg"] <= 1
    figures = summary["figures"]
    assert figures["probe_size"] == 3 and summary["config"]["k"] == 3 and summary["config"]["samples"] == 10
    assert figures["top.krg"] == pytest.approx(sum(r["top"]["krg"] for r in records) / 3)
    assert figures["mc.kqrg"] == pytest.approx(sum(r["mc"]["kqrg"] for r in records) / 3)
    assert summary["signatures"]["chrf"].startswith("nrefs:1")
    printed = capsys.readouterr().out
    assert "top.krg" in printed and "records.jsonl" in printed
    # a second run into the same folder needs --overwrite
    assert main(args) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(args + ["--overwrite", "--no-sampling", "--quality", "sbleu"]) == 0
    again = json.loads((out / "summary.json").read_text(encoding="utf-8"))["figures"]
    assert "mc.krg" not in again and again["quality"] == "sbleu"


def test_rank_models_correlates_with_mbr(saved_models, test_set, tmp_path, capsys) -> None:
    src, ref = test_set
    out = tmp_path / "corr"
    assert main(["rank", "--models", *map(str, saved_models), "--src", str(src), "--ref", str(ref), "--max-words", "6",
                 "--out", str(out), "--no-top", "--samples", "12", "--mbr-samples", "8", "--device", "cpu"]) == 0
    result = json.loads((out / "correlation.json").read_text(encoding="utf-8"))
    rows = result["models"]
    assert [Path(r["model"]).name for r in rows] == ["tiny-30", "tiny-55", "tiny-80"]
    for row in rows:
        assert 0 <= row["mbr.quality"] <= 1 and 0 <= row["mc.kqrg"] <= 1 and 0 <= row["beam.quality"] <= 1
        assert len((out / row["name"] / "mbr.txt").read_text(encoding="utf-8").splitlines()) == 4
        assert (out / row["name"] / "records.jsonl").exists()
    corr = result["correlation"]
    assert set(corr) == {"mc.kqrg", "mc.krg", "beam.quality", "mc.mean_quality"}
    for values in corr.values():
        assert all(v is None or -1.0 <= v <= 1.0 for v in values.values())
    # the longer a model trained on these pairs, the better its MBR output and its sampled kQRG
    assert rows[0]["mbr.quality"] < rows[2]["mbr.quality"] and rows[0]["mc.kqrg"] < rows[2]["mc.kqrg"]
    assert corr["mc.kqrg"]["pearson"] > 0
    assert "correlation with MBR" in capsys.readouterr().out


def test_rank_errors_are_one_line(saved_models, test_set, tmp_path, capsys) -> None:
    src, ref = test_set
    short = tmp_path / "short.de"
    short.write_text("eins\n", encoding="utf-8")
    base = ["rank", "--model", str(saved_models[0]), "--out", str(tmp_path / "o")]
    cases = [
        (base + ["--src", str(src), "--ref", str(short)], "aligned line by line"),
        (base + ["--src", str(src), "--ref", str(ref), "--quality", "bleurt"], "unknown utility 'bleurt'; known: bleu, chrf, chrf++, sbleu, ter, comet"),
        (base + ["--src", str(src), "--ref", str(ref), "--quality", "comet"], "(e.g. --comet Unbabel/"),
        (base + ["--src", str(src), "--ref", str(tmp_path / "missing.de")], "does not exist"),
        (["rank", "--models", str(saved_models[0]), "--src", str(src), "--ref", str(ref), "--out", str(tmp_path / "o")],
         "at least two"),
        (base + ["--src", str(src), "--ref", str(ref), "--k", "0"], "k must be a positive integer"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert err.startswith("simpe: error:") and message in err and "\n" not in err, err
    assert not (tmp_path / "o").exists()
