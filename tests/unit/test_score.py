"""``simpe score``: agreement with the sacrebleu command line, R golden values, COMET, and one-line errors."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from simpe.cli import main

VENV_BIN = Path(sys.executable).parent
HYPS = [
    "Wählen Sie Format - Zellen.",
    "Klicken Sie auf OK",
    "",
    "Die Funktion gibt 3,5 % der Summe zurück.   ",
    "Öffnen Sie das Menü „Einfügen“ und wählen Sie Kopf- und Fußzeilen.\r",
    "Weitere Erklärungen finden sie oben auf der Seite.",
]
REFS = [
    "Wählen Sie Format - Zellen.",
    "Klicken Sie auf die Schaltfläche OK.",
    "Ein Verweis ohne Übersetzung.",
    "Die Funktion liefert 3,5 % der Summe.",
    "Wählen Sie Einfügen - Kopf- und Fußzeilen.",
    "Weitere Erklärungen finden Sie oben auf dieser Seite.",
]


def write(path: Path, lines: list[str]) -> str:
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return str(path)


@pytest.fixture
def files(tmp_path) -> tuple[str, str]:
    return write(tmp_path / "hyp.de", HYPS), write(tmp_path / "ref.de", REFS)


def run_json(capsys, *argv: str) -> dict:
    assert main(["score", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_agrees_with_the_sacrebleu_command_line(files):
    hyp, ref = files
    sacre = subprocess.run([str(VENV_BIN / "sacrebleu"), ref, "-i", hyp, "-m", "bleu", "chrf", "ter", "-w", "4", "-f", "json"],
                           capture_output=True, text=True, check=True)
    expected = {entry["name"]: entry for entry in json.loads(sacre.stdout)}
    simpe = subprocess.run([sys.executable, "-m", "simpe", "score", "-i", hyp, "-r", ref, "--format", "json"],
                           capture_output=True, text=True, check=True)
    report = json.loads(simpe.stdout)
    assert simpe.stderr.strip() == "1 of 6 hypotheses are empty"  # warned once, with a count
    assert report["corpus"]["bleu"] == pytest.approx(expected["BLEU"]["score"], abs=0.01)
    assert report["corpus"]["chrf"] == pytest.approx(expected["chrF2"]["score"], abs=0.01)
    assert report["corpus"]["ter"] == pytest.approx(expected["TER"]["score"], abs=0.01)
    assert report["signatures"]["bleu"] == expected["BLEU"]["signature"]
    assert report["signatures"]["chrf"] == expected["chrF2"]["signature"]
    assert report["signatures"]["ter"] == expected["TER"]["signature"]


def test_paper_example_and_table(tmp_path, capsys):
    hyp = write(tmp_path / "hyp.en", ["A terrier bites the person", "The dog bites the man"])
    ref = write(tmp_path / "ref.en", ["The dog bites the lady", "The man bites the dog"])
    stop = write(tmp_path / "stop.txt", ["a", "A", "the", "The"])
    report = run_json(capsys, "-i", hyp, "-r", ref, "--lang", "en", "--truecaser", "none", "--stopwords", stop)
    assert report["counts"] == {"r0": [2, 4], "r1": [2, 2], "r0+1": [4, 6]}
    assert report["corpus"]["r0"] == 0.5 and report["corpus"]["r1"] == 1.0
    assert report["settings"]["truecaser"] is None and report["segments"] == 2
    assert main(["score", "-i", hyp, "-r", ref, "--lang", "en", "--stopwords", stop]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["metric", "value", "details"]
    rows = {line.split()[0]: line.split()[1:] for line in table[1:-1]}
    assert rows["R0"][:2] == ["50.00", "2/4"] and rows["R1"][:2] == ["100.00", "2/2"] and rows["R0+1"][:2] == ["66.67", "4/6"]
    assert rows["BLEU"][1].startswith("nrefs:1|")


def test_cumulative_curves(files, capsys):
    hyp, ref = files
    report = run_json(capsys, "-i", hyp, "-r", ref, "--cumulative", "--r-max-k", "2")
    curves = report["cumulative"]
    assert set(curves) == {"bleu", "chrf", "ter", "sbleu", "r0", "r1", "r2", "r0+1", "r0..2"}
    assert all(len(curve) == len(HYPS) for curve in curves.values())
    assert all(curves[name][-1] == value for name, value in report["corpus"].items())
    assert main(["score", "-i", hyp, "-r", ref, "--cumulative"]) == 0
    tsv = capsys.readouterr().out.split("\n\n")[1].splitlines()
    assert tsv[0].split("\t")[:4] == ["segment", "BLEU", "chrF", "TER"] and len(tsv) == len(HYPS) + 1


def test_novel_and_subword_variants(files, tmp_path, capsys):
    hyp, ref = files
    vocab = write(tmp_path / "vocab.txt", ["Funktion", "Summe", "Sie"])
    args = ["-i", hyp, "-r", ref, "--novel-vocab", vocab]
    spm = Path(__file__).resolve().parents[2] / "models" / "demo-en-de" / "target.spm"
    if spm.is_file():
        args += ["--subword-model", str(spm)]
    report = run_json(capsys, *args)
    assert "novel:r0" in report["corpus"] and report["counts"]["novel:r0"][1] < report["counts"]["r0"][1]
    if spm.is_file():
        assert report["counts"]["subword:r0"][1] > 0


def test_comet_through_the_cli(files, tmp_path, tiny_comet, capsys, one_torch_thread):
    from simpe.metrics.comet import CometScorer

    hyp, ref = files
    src = write(tmp_path / "src.en", ["x"] * len(HYPS))
    report = run_json(capsys, "-i", hyp, "-r", ref, "--src", src, "--comet", str(tiny_comet))
    expected = CometScorer(str(tiny_comet)).score(["x"] * len(HYPS), [h.rstrip() for h in HYPS], REFS)
    assert report["corpus"]["comet"] == pytest.approx(sum(expected) / len(expected), abs=1e-6)
    assert report["signatures"]["comet"].startswith(f"model:{tiny_comet}|batch:16|version:")


@pytest.mark.parametrize("make_args, message", [
    (lambda d, h, r: ["-i", str(d / "missing.de"), "-r", r], "missing.de' does not exist"),
    (lambda d, h, r: ["-i", h, "-r", write(d / "short.de", REFS[:4])], "line counts differ: .*hyp.de 6, .*short.de 4"),
    (lambda d, h, r: ["-i", h, "-r", r, "--stopwords", "xx"], "unknown stopword language 'xx'; known: .*de"),
    (lambda d, h, r: ["-i", h, "-r", r, "--comet", "some/model"], "COMET needs the source segments"),
    (lambda d, h, r: ["-i", h, "-r", r, "--truecaser", str(d / "tc.model")], "tc.model' does not exist"),
])
def test_bad_input_is_one_line_and_exit_2(files, tmp_path, capsys, make_args, message):
    hyp, ref = files
    assert main(["score", *make_args(tmp_path, hyp, ref)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("simpe: error: ")
    assert pytest.importorskip("re").search(message, err), err


def test_invalid_utf8_names_the_line(files, tmp_path, capsys):
    _, ref = files
    bad = tmp_path / "bad.de"
    bad.write_bytes(b"ok\nok\n\xff\xfe broken\nok\nok\nok\n")
    assert main(["score", "-i", str(bad), "-r", ref]) == 2
    err = capsys.readouterr().err
    assert "bad.de' is not valid UTF-8 (line 3" in err and err.count("\n") == 1


def test_novel_vocab_train_is_the_train_vocabulary_of_the_dataset_named(files, capsys):
    hyp, ref = files
    report = run_json(capsys, "-i", hyp, "-r", ref, "--novel-vocab", "train", "--dataset", "libreoffice")
    assert "vocab:vocab.train.de." in report["signatures"]["novel:r"]  # data/libreoffice/vocab.train.de, hashed
    for dataset, fragments in (("nope", ["'nope'", "known: autodesk, hf, libreoffice, text, tmx, tsv"]),
                               ("text", ["dataset 'text' has no train vocabulary", "--novel-vocab PATH"]),
                               ("autodesk", ["needs a dataset with a train vocabulary"])):
        assert main(["score", "-i", hyp, "-r", ref, "--novel-vocab", "train", "--dataset", dataset]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and all(fragment in err[0] for fragment in fragments), (dataset, err)


def test_glossary_term_metrics_worked_by_hand(tmp_path, capsys):
    """``simpe score --glossary``: the term figures of four segments, worked by hand (docs/terms.md's rules).

    Cells: counted in 0 (hit, first) and 2 (hit, later). Sheet: counted in 1 (missed, first: the post-edit fixes it) and
    3 (missed again, later: a repeated term error). The words outside the glossary (Zellen and Tabelle left out), with
    the stopwords Sie/ein/eine/die and no truecaser: 0 {Wählen ✓, formatieren ✗} first; 1 {Fügen ✓} first; 2 {erneut ✗}
    first, {formatieren ✗} second ("Formatieren" differs in case); 3 {einfügen ✓} first.
    """
    src = write(tmp_path / "src.en", ["Choose Format Cells.", "Insert a Sheet.", "Format Cells again.", "Insert a Sheet."])
    ref = write(tmp_path / "ref.de", ["Wählen Sie Zellen formatieren.", "Fügen Sie eine Tabelle ein.",
                                      "Zellen erneut formatieren.", "Tabelle einfügen."])
    hyp = write(tmp_path / "hyp.de", ["Wählen Sie Zellen.", "Fügen Sie ein Blatt ein.", "Formatieren Sie die Zellen.",
                                      "Blatt einfügen."])
    glossary = write(tmp_path / "glossary.tsv", ["#langs en de", "Cells\tZellen", "Sheet\tTabelle"])
    stop = write(tmp_path / "stop.txt", ["Sie", "ein", "eine", "die"])
    common = ["-i", hyp, "-r", ref, "--truecaser", "none", "--stopwords", stop, "--glossary", glossary]
    report = run_json(capsys, *common, "--src", src)
    counts = report["counts"]
    assert {k: counts[k] for k in ("term", "t0", "t1", "term-repeat")} == {
        "term": [2, 4], "t0": [1, 2], "t1": [1, 2], "term-repeat": [1, 1]}
    assert {k: counts[k] for k in ("nonterm:r0", "nonterm:r1", "nonterm:r0+1")} == {
        "nonterm:r0": [3, 5], "nonterm:r1": [0, 1], "nonterm:r0+1": [3, 6]}
    assert report["corpus"]["term"] == 0.5 and report["corpus"]["term-repeat"] == 1.0
    assert report["signatures"]["term"].startswith("gl:glossary.tsv.") and "|n:2|src:exact|tgt:insensitive|" in report["signatures"]["term"]
    assert main(["score", *common, "--src", src]) == 0
    table = capsys.readouterr().out
    assert "Term acc." in table and "2/4 glossary terms" in table and "1/1 fixed terms" in table
    assert "Terms signature: gl:glossary.tsv." in table
    # without the sources there is nothing to find terms in: one line, exit 2
    assert main(["score", *common]) == 2
    assert "--glossary needs --src" in capsys.readouterr().err
