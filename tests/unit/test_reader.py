"""Reading run directories: load_run, find_runs, load_group, the one JSON-lines rule, and their refusals.

The fixtures are real data, written the way docs/run-format.md describes: German
LibreOffice-help-like references, hypotheses perturbed from them with a seeded RNG, and
every per-segment statistic and cumulative value computed with sacreBLEU (BLEU, chrF,
TER) or counted (R0, R1, R0+1). ``write_run`` and ``write_group`` are also used by
test_compare.py, test_plotting.py and test_report.py.
"""
from __future__ import annotations

import hashlib
import json

# (source, reference): LibreOffice Calc help style; content words recur across segments
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from messages import raises_naming
from sacrebleu.metrics import BLEU, CHRF, TER

from simpe.errors import RunDirError
from simpe.rundir.reader import find_runs, load_group, load_run, read_jsonl, valid_prefix
from simpe.rundir.writer import RunDir

PAIRS = [
    ("Select the cell range.", "Wählen Sie den Zellbereich aus."),
    ("Choose Format - Cells and click the Numbers tab.", "Wählen Sie Format - Zellen und klicken Sie auf das Register Zahlen."),
    ("The function returns the sum of the cell range.", "Die Funktion gibt die Summe des Zellbereichs zurück."),
    ("Enter the formula in the input line.", "Geben Sie die Formel in die Eingabezeile ein."),
    ("The pivot table summarizes the data of the sheet.", "Die Pivot-Tabelle fasst die Daten des Tabellenblatts zusammen."),
    ("Click the Sort Ascending icon.", "Klicken Sie auf das Symbol Aufsteigend sortieren."),
    ("The chart shows the values of the selected columns.", "Das Diagramm zeigt die Werte der ausgewählten Spalten."),
    ("Insert a new sheet before the current sheet.", "Fügen Sie ein neues Tabellenblatt vor dem aktuellen Tabellenblatt ein."),
    ("The filter hides the rows that do not match.", "Der Filter blendet die Zeilen aus, die nicht übereinstimmen."),
    ("Use the function to round the number.", "Verwenden Sie die Funktion, um die Zahl zu runden."),
    ("The dialog shows the cell styles of the document.", "Der Dialog zeigt die Zellvorlagen des Dokuments."),
    ("Drag the fill handle to copy the formula.", "Ziehen Sie den Ausfüllpunkt, um die Formel zu kopieren."),
    ("Open the Navigator to find the named range.", "Öffnen Sie den Navigator, um den benannten Bereich zu finden."),
    ("The result appears in the target cell.", "Das Ergebnis erscheint in der Zielzelle."),
    ("Protect the sheet with a password.", "Schützen Sie das Tabellenblatt mit einem Kennwort."),
    ("The conditional formatting colours the values.", "Die bedingte Formatierung färbt die Werte ein."),
    ("Merge the selected cells into one cell.", "Verbinden Sie die ausgewählten Zellen zu einer Zelle."),
]
WRONG_WORDS = ["Fenster", "Datei", "Objekt", "Ansicht", "Bild", "Rahmen", "Text", "Seite", "Liste", "Feld"]
STOPWORDS = {"der", "die", "das", "den", "dem", "des", "ein", "eine", "einem", "einen", "einer", "und", "sie",
             "auf", "in", "zu", "um", "mit", "vor", "aus", "zur", "zum", "nicht", "Sie", "Der", "Die", "Das"}
BLEU_METRIC, CHRF_METRIC, TER_METRIC, SBLEU_METRIC = BLEU(), CHRF(), TER(), BLEU(effective_order=True)
for _metric in (BLEU_METRIC, CHRF_METRIC, TER_METRIC, SBLEU_METRIC):
    _metric.num_refs = 1  # as the loop does: signatures need it


def stream(num_segments: int) -> tuple[list[str], list[str]]:
    """Sources and references of a stream cycling through PAIRS."""
    pairs = [PAIRS[i % len(PAIRS)] for i in range(num_segments)]
    return [s for s, _ in pairs], [r for _, r in pairs]


def perturb(references: list[str], error_rate: float, seed: int) -> list[str]:
    """Hypotheses: each reference word replaced with probability error_rate, sometimes dropped."""
    rng = random.Random(seed)
    hypotheses = []
    for reference in references:
        words = []
        for word in reference.split():
            draw = rng.random()
            if draw < error_rate * 0.25:
                continue
            words.append(rng.choice(WRONG_WORDS) if draw < error_rate else word)
        hypotheses.append(" ".join(words) or "Fenster")
    return hypotheses


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+(?:-\w+)*|[^\w\s]", text)


def content_types(text: str) -> set[str]:
    return {t for t in tokens(text) if t not in STOPWORDS and t.lower() not in STOPWORDS and re.search(r"[^\W\d_]", t)}


def recall_stats(hypotheses: list[str], references: list[str]) -> list[dict[str, list[int]]]:
    """Per-segment [num, den] of R0, R1 and R0+1 (occurrence counts over references in stream order)."""
    seen: dict[str, int] = {}
    out = []
    for hypothesis, reference in zip(hypotheses, references):
        hyp_types, ref_types = content_types(hypothesis), content_types(reference)
        r0 = {t for t in ref_types if seen.get(t, 0) == 0}
        r1 = {t for t in ref_types if seen.get(t, 0) == 1}
        for t in ref_types:
            seen[t] = seen.get(t, 0) + 1
        out.append({"r0": [len(hyp_types & r0), len(r0)], "r1": [len(hyp_types & r1), len(r1)],
                    "r0+1": [len(hyp_types & (r0 | r1)), len(r0 | r1)]})
    return out


def stream_sha256(sources: list[str], references: list[str]) -> str:
    digest = hashlib.sha256()
    for source, reference in zip(sources, references):
        digest.update(source.encode() + b"\t" + reference.encode() + b"\n")
    return digest.hexdigest()


def segment_records(sources: list[str], references: list[str], hypotheses: list[str]) -> list[dict[str, Any]]:
    """segments.jsonl records per docs/run-format.md, every figure computed with sacreBLEU."""
    bleu_stats = np.array(BLEU_METRIC._extract_corpus_statistics(hypotheses, [references]), dtype=float)  # (n, 10)
    chrf_stats = np.array(CHRF_METRIC._extract_corpus_statistics(hypotheses, [references]), dtype=float)  # (n, 18)
    ter_stats = np.array(TER_METRIC._extract_corpus_statistics(hypotheses, [references]), dtype=float)  # (n, 2)
    recalls = recall_stats(hypotheses, references)
    sbleu = [SBLEU_METRIC.sentence_score(h, [r]).score for h, r in zip(hypotheses, references)]
    records = []
    sums = {key: np.zeros(2) for key in ("r0", "r1", "r0+1")}
    for i, (source, reference, hypothesis) in enumerate(zip(sources, references, hypotheses)):
        for key in sums:
            sums[key] += recalls[i][key]
        cumulative = {
            "bleu": BLEU_METRIC._compute_score_from_stats(bleu_stats[:i + 1].sum(0)).score,
            "chrf": CHRF_METRIC._compute_score_from_stats(chrf_stats[:i + 1].sum(0)).score,
            "ter": TER_METRIC._compute_score_from_stats(ter_stats[:i + 1].sum(0)).score,
            "sbleu": float(np.mean(sbleu[:i + 1])),
            **{key: (float(s[0] / s[1]) if s[1] else None) for key, s in sums.items()},
        }
        b = [int(v) for v in bleu_stats[i]]
        metrics: dict[str, Any] = {
            "sbleu": sbleu[i],
            "chrf": CHRF_METRIC.sentence_score(hypothesis, [reference]).score,
            "ter": TER_METRIC.sentence_score(hypothesis, [reference]).score,
            **recalls[i],
        }
        records.append({
            "index": i, "doc_id": f"text/scalc/00/{i // 5:08d}", "seg_id": f"par_id{3150000 + i}",
            "source": source, "reference": reference, "hypothesis": hypothesis,
            "hyp_tokens": " ".join(tokens(hypothesis)), "ref_tokens": " ".join(tokens(reference)),
            "metrics": metrics,
            # documented order: [m1..m4, t1..t4, hyp_len, ref_len]; sacreBLEU's is [hyp_len, ref_len, m.., t..]
            "stats": {"bleu": b[2:] + b[:2], "chrf": [int(v) for v in chrf_stats[i]],
                      "ter": [float(v) for v in ter_stats[i]]},
            "cumulative": cumulative,
            "update": {"loss_before": 2.3, "ppl_before": 9.97, "loss_after": 0.6, "ppl_after": 1.8,
                       "repetitions": 2, "skipped": None},
            "seconds": {"translate": 0.08, "score": 0.003, "update": 0.05},
        })
    return records


def write_run(group_dir: Path, name: str, method: str, hypotheses: list[str], *, num_segments: int | None = None,
              logged: int | None = None, references: list[str] | None = None, snapshots: bool = True,
              comet: list[float] | None = None, adapted_parameters: int = 0) -> Path:
    """Write one run directory under ``group_dir``; ``logged`` < stream length makes it incomplete."""
    n = len(hypotheses) if num_segments is None else num_segments
    sources, default_refs = stream(n)
    references = default_refs if references is None else references
    records = segment_records(sources, references, hypotheses)
    complete = logged is None
    shown = records if complete else records[:logged]
    run = group_dir / name
    run.mkdir(parents=True)
    sha = stream_sha256(sources, references)
    config = {"adapter": name, "method": {"name": method, "params": {}}, "model": {"name": "demo-en-de"},
              "stream": {"dataset": "libreoffice", "split": "stream", "num_segments": n, "sha256": sha}}
    (run / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    env = {"device": "cpu", "packages": {"sacrebleu": "2.6.0"}, "stream_sha256": sha}
    (run / "env.json").write_text(json.dumps(env), encoding="utf-8")
    (run / "log.txt").write_text("2026-11-21 10:00:00 INFO simpe.loop.run: start\n", encoding="utf-8")
    (run / "segments.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in shown), encoding="utf-8")
    (run / "hyp.tok.de").write_text("".join(r["hyp_tokens"] + "\n" for r in shown), encoding="utf-8")
    (run / "ref.tok.de").write_text("".join(r["ref_tokens"] + "\n" for r in shown), encoding="utf-8")
    if snapshots:
        rng = random.Random(name)
        lines = [{"segment": s, "top.krg": rng.uniform(0.5, 0.9), "top.kqrg": rng.uniform(0.2, 0.6),
                  "top.empty_rate": rng.choice([0.0, 0.1]), "top.beam_error_rate": rng.uniform(0, 0.3),
                  "mc.krg": rng.uniform(0.4, 0.8), "mc.kqrg": rng.uniform(0.2, 0.5)}
                 for s in range(0, len(shown), 10)]
        (run / "snapshots.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    if complete:
        last = records[-1]["cumulative"]
        summary = {"method": method, "adapter": name, "dataset": "libreoffice", "split": "stream", "segments": n,
                   "model": "demo-en-de", "stream_sha256": sha,
                   "corpus": {**last, "comet": None if comet is None else float(np.mean(comet))},
                   "signatures": {"bleu": str(BLEU_METRIC.get_signature()), "chrf": str(CHRF_METRIC.get_signature()),
                                  "ter": str(TER_METRIC.get_signature()), "sbleu": str(SBLEU_METRIC.get_signature()),
                                  **({} if comet is None else {"comet": "model:tiny-comet|batch:8"})},
                   "segment_comet": comet,
                   "adapted_parameters": adapted_parameters, "store_bytes": adapted_parameters * 2,
                   "seconds": {"translate": 4.0, "score": 0.2, "update": 3.0, "total": 7.5}}
        (run / "summary.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
        (run / "DONE").write_text("", encoding="utf-8")
    return run


# method -> (adapter name, error rate of its hypotheses, adapted parameters); "same" repeats the baseline
GROUP_METHODS = {"baseline": ("baseline", 0.35, 0), "full": ("full", 0.08, 5_000_000),
                 "lasso": ("lasso", 0.2, 1_200_000), "same": ("bias", None, 512)}


def write_group(root: Path, num_segments: int = 40, methods: dict[str, tuple[str, float | None, int]] | None = None,
                **kwargs: Any) -> Path:
    """A group folder with one run per method: baseline, a much better ``full``, a ``lasso``,
    and a ``bias`` run whose hypotheses are the baseline's (identical method)."""
    group = root / f"libreoffice-stream--demo-en-de--{num_segments}seg"
    _, references = stream(num_segments)
    baseline_hyps = perturb(references, GROUP_METHODS["baseline"][1] or 0.0, seed=1)
    for seed, (name, rate, params) in enumerate((methods or GROUP_METHODS).values(), 1):
        hyps = baseline_hyps if rate is None else perturb(references, rate, seed=seed)
        method = name if name in ("baseline", "full", "lasso", "bias", "fixed", "top") else "full"
        write_run(group, name, method, hyps, adapted_parameters=params, **kwargs)
    return group


@pytest.fixture(scope="module")
def group_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_group(tmp_path_factory.mktemp("runs"))


def test_load_run_reads_every_file(group_dir: Path) -> None:
    run = load_run(group_dir / "lasso")
    assert run.name == "lasso" and run.method == "lasso" and run.complete
    assert run.num_segments == 40 and [s["index"] for s in run.segments] == list(range(40))
    assert len(run.snapshots) == 4 and run.snapshots[1]["segment"] == 10
    assert run.summary is not None and run.summary["segments"] == 40
    assert run.config["stream"]["sha256"] == run.stream_sha256 == run.summary["stream_sha256"]
    assert run.label == "lasso"


def test_find_runs_lists_run_folders_only(group_dir: Path, tmp_path: Path) -> None:
    (group_dir / "compare").mkdir(exist_ok=True)
    (group_dir / "plots").mkdir(exist_ok=True)
    assert [p.name for p in find_runs(group_dir)] == ["baseline", "bias", "full", "lasso"]
    with pytest.raises(RunDirError, match="holds no run directories"):
        find_runs(tmp_path)


def test_load_group_puts_the_baseline_first(group_dir: Path) -> None:
    group = load_group([group_dir])
    assert group.baseline.name == "baseline"
    assert [run.name for run in group.methods] == ["bias", "full", "lasso"]
    assert group.num_segments == group.stream_segments == 40 and not group.truncated
    assert group.group_dir == group_dir
    explicit = load_group([group_dir / "full", group_dir / "baseline"])
    assert [run.name for run in explicit.runs] == ["baseline", "full"] and explicit.group_dir == group_dir


def test_incomplete_run_is_refused_with_the_way_to_include_it(tmp_path: Path) -> None:
    _, references = stream(30)
    run = write_run(tmp_path, "lasso", "lasso", perturb(references, 0.2, 3), logged=12)
    (run / ".lock").write_text("pid 4242 on gone")  # left by a killed writer: no process holds the kernel lock
    with raises_naming(RunDirError, "lasso", "no DONE", "interrupted", "--allow-incomplete"):
        load_run(run)

    with RunDir(run) as writer:
        writer._lock()  # a live writer (this process)
        with pytest.raises(RunDirError, match=r"is incomplete \(no DONE\) and is being written by pid \d+ on "):
            load_run(run)
    loaded = load_run(run, allow_incomplete=True)
    assert not loaded.complete and loaded.summary is None and loaded.num_segments == 12
    assert loaded.label == "lasso (incomplete)" and loaded.name == "lasso" and loaded.method == "lasso"


def test_torn_last_line_of_an_incomplete_run_is_dropped(tmp_path: Path) -> None:
    _, references = stream(10)
    run = write_run(tmp_path, "full", "full", perturb(references, 0.2, 3), logged=6)
    with (run / "segments.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"index": 6, "source": "Sel')
    assert load_run(run, allow_incomplete=True).num_segments == 6


def test_incomplete_group_covers_the_shared_prefix(tmp_path: Path) -> None:
    group_root = write_group(tmp_path, num_segments=30, methods={"baseline": ("baseline", 0.35, 0),
                                                                "full": ("full", 0.1, 10)})
    _, references = stream(30)
    write_run(group_root, "lasso", "lasso", perturb(references, 0.2, 9), logged=17)
    with pytest.raises(RunDirError, match="lasso is incomplete"):
        load_group([group_root])
    group = load_group([group_root], allow_incomplete=True)
    assert group.num_segments == 17 and group.stream_segments == 30 and group.truncated
    assert [run.label for run in group.runs] == ["baseline", "full", "lasso (incomplete)"]


def test_runs_on_different_streams_are_refused(tmp_path: Path) -> None:
    group_root = write_group(tmp_path, num_segments=20, methods={"baseline": ("baseline", 0.35, 0)})
    other = tmp_path / "other"
    _, references = stream(20)
    changed = list(references)
    changed[7] = "Klicken Sie auf Abbrechen."
    write_run(other, "full", "full", perturb(changed, 0.1, 2), references=changed)
    with pytest.raises(RunDirError, match="different streams .*stream sha256"):
        load_group([group_root / "baseline", other / "full"])
    # without hashes (a loop that wrote none) the per-segment texts still tell them apart
    for path in (group_root / "baseline", other / "full"):
        summary = json.loads((path / "summary.json").read_text())
        del summary["stream_sha256"]
        (path / "summary.json").write_text(json.dumps(summary))
        config = yaml.safe_load((path / "config.yaml").read_text())
        del config["stream"]["sha256"]
        (path / "config.yaml").write_text(yaml.safe_dump(config))
        (path / "env.json").write_text("{}")
    with pytest.raises(RunDirError, match="different streams: segment 7 has a different reference"):
        load_group([group_root / "baseline", other / "full"])


def test_an_incomplete_run_on_another_stream_is_caught_by_its_hash(tmp_path: Path) -> None:
    """The logged prefix is identical; only env.json's stream hash (written at the start) tells."""
    group_root = write_group(tmp_path, num_segments=30, methods={"baseline": ("baseline", 0.35, 0)})
    _, references = stream(30)
    changed = references[:25] + ["Schließen Sie das Fenster."] * 5
    run = write_run(tmp_path / "other", "full", "full", perturb(changed, 0.1, 2), references=changed, logged=12)
    assert load_run(run, allow_incomplete=True).stream_sha256 != load_run(group_root / "baseline").stream_sha256
    with pytest.raises(RunDirError, match="different streams .*stream sha256"):
        load_group([group_root / "baseline", run], allow_incomplete=True)


def test_runs_of_different_lengths_are_refused(tmp_path: Path) -> None:
    group_root = write_group(tmp_path, num_segments=20, methods={"baseline": ("baseline", 0.35, 0)})
    longer = tmp_path / "longer"
    _, references = stream(25)
    write_run(longer, "full", "full", perturb(references, 0.1, 2))
    with pytest.raises(RunDirError, match="different streams"):
        load_group([group_root / "baseline", longer / "full"])


def test_exactly_one_baseline_is_required(group_dir: Path, tmp_path: Path) -> None:
    with raises_naming(RunDirError, "exactly one run must be the baseline", "'baseline'", "full (method full", "lasso (method lasso"):
        load_group([group_dir / "full", group_dir / "lasso"])
    second = tmp_path / "g2"
    _, references = stream(40)
    write_run(second, "baseline-b", "baseline", perturb(references, 0.35, 1))
    with pytest.raises(RunDirError, match="2 runs of method 'baseline'"):
        load_group([group_dir / "baseline", second / "baseline-b", group_dir / "full"])
    with pytest.raises(RunDirError, match="only the baseline"):
        load_group([group_dir / "baseline"])


def test_bad_paths_are_named(tmp_path: Path, group_dir: Path) -> None:
    with pytest.raises(RunDirError, match="neither a run directory"):
        load_group([tmp_path / "missing"])
    with pytest.raises(RunDirError, match="given twice"):
        load_group([group_dir / "baseline", group_dir / "baseline", group_dir / "full"])


def test_the_reader_refuses_bare_nan_and_infinity(tmp_path: Path) -> None:
    path = tmp_path / "segments.jsonl"
    path.write_text('{"index": 0, "x": 1}\n{"index": 1, "x": NaN}\n{"index": 2, "x": 2}\n', encoding="utf-8")
    with pytest.raises(RunDirError, match=r"line 2 is not valid JSON \(non-finite number NaN"):
        read_jsonl(path)
    assert [r["index"] for r in valid_prefix(path, indexed=True)] == [0]


def test_valid_prefix_stops_at_the_first_bad_line_even_mid_file(tmp_path: Path) -> None:
    """The old failure: new records appended after a torn fragment; a resume keeps only what precedes it."""
    path = tmp_path / "segments.jsonl"
    path.write_bytes(b'{"index": 0}\n{"index": 1, "src": "Gr\xc3' + b'\n{"index": 2}\n{"index": 1}\n')
    assert valid_prefix(path, indexed=True) == [{"index": 0}]
    path.write_bytes(b'{"index": 0}\n{"index": 2}\n')  # a gap in the indices also ends the prefix
    assert valid_prefix(path, indexed=True) == [{"index": 0}]
