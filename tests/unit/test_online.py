"""OnlineScorer: cumulative values equal sacreBLEU / a from-scratch R on every prefix; replay resumes exactly."""
from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER

from simpe.config.files import defaults
from simpe.config.tree import MetricsConfig
from simpe.errors import ConfigError, DataError
from simpe.metrics import METRICS
from simpe.metrics.online import OnlineScorer, cumulative_curves
from simpe.metrics.recall import write_vocab
from simpe.metrics.stopwords import load_stopwords
from simpe.metrics.text import TextPipeline, content_types

ROOT = Path(__file__).resolve().parents[2]
STREAM = ROOT / "data" / "libreoffice" / "stream.de"
TRUECASER = ROOT / "models" / "demo-en-de" / "truecase.de.model"
TARGET_SPM = ROOT / "models" / "demo-en-de" / "target.spm"


def perturb(line: str, rng: random.Random) -> str:
    """A lightly damaged copy: drop a word, swap two neighbours, or keep."""
    words = line.split()
    roll = rng.random()
    if len(words) > 2 and roll < 0.4:
        del words[rng.randrange(len(words))]
    elif len(words) > 3 and roll < 0.7:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


@pytest.fixture(scope="module")
def stream() -> tuple[list[str], list[str]]:
    if STREAM.is_file():
        with open(STREAM, encoding="utf-8") as f:
            refs = [next(f).rstrip("\n") for _ in range(80)]
    else:  # a fresh checkout without the data still tests the invariants
        refs = [f"Die Funktion Nummer {i} berechnet die Summe der Zellen im Bereich A{i}." for i in range(80)]
    rng = random.Random(7)
    hyps = [perturb(r, rng) for r in refs]
    hyps[3] = ""  # an empty hypothesis
    return hyps, refs


def config(**kw) -> MetricsConfig:
    kw.setdefault("truecaser", str(TRUECASER) if TRUECASER.is_file() else None)
    return defaults("metrics", **kw)


def test_record_layout(stream):
    hyps, refs = stream
    record = OnlineScorer(config()).add(hyps[0], refs[0])
    assert set(record) == {"hyp_tokens", "ref_tokens", "metrics", "stats", "cumulative"}
    assert set(record["metrics"]) == {"sbleu", "chrf", "ter", "r0", "r1", "r0+1"}
    assert set(record["stats"]) == {"bleu", "chrf", "ter"}
    assert len(record["stats"]["bleu"]) == 10 and len(record["stats"]["chrf"]) == 18 and len(record["stats"]["ter"]) == 2
    assert set(record["cumulative"]) == {"bleu", "chrf", "ter", "sbleu", "r0", "r1", "r0+1"}
    assert json.loads(json.dumps(record)) == record


def test_cumulative_equals_sacrebleu_on_every_prefix(stream):
    hyps, refs = stream
    scorer = OnlineScorer(config())
    records = [scorer.add(h, r) for h, r in zip(hyps, refs)]
    exp_scorer = OnlineScorer(config(sbleu="exp"))
    exp_records = [exp_scorer.add(h, r) for h, r in zip(hyps, refs)]
    bleu_plus_one = METRICS.build("sbleu")
    for n in (1, 2, 4, 7, 31, 80):
        cum = records[n - 1]["cumulative"]
        assert cum["bleu"] == pytest.approx(BLEU().corpus_score(hyps[:n], [refs[:n]]).score, abs=1e-9)
        assert cum["chrf"] == pytest.approx(CHRF().corpus_score(hyps[:n], [refs[:n]]).score, abs=1e-9)
        assert cum["ter"] == pytest.approx(TER().corpus_score(hyps[:n], [refs[:n]]).score, abs=1e-9)
        mean = sum(bleu_plus_one.sentence_score(h, r) for h, r in zip(hyps[:n], refs[:n])) / n
        assert cum["sbleu"] == pytest.approx(mean, abs=1e-9)  # Nakov BLEU+1 (the default)
        mean = sum(sacrebleu.sentence_bleu(h, [r]).score for h, r in zip(hyps[:n], refs[:n])) / n
        assert exp_records[n - 1]["cumulative"]["sbleu"] == pytest.approx(mean, abs=1e-9)
    assert scorer.summary()["corpus"]["bleu"] == records[-1]["cumulative"]["bleu"]


def _recall_from_scratch(hyp_types, ref_types, n, low, high):
    """R over segments 0..n-1 recomputed from nothing: occurrence = refs 0..i containing the type."""
    num = den = 0
    for i in range(n):
        for word in ref_types[i]:
            occurrence = sum(1 for j in range(i + 1) if word in ref_types[j])
            if low <= occurrence <= high:
                den += 1
                num += word in hyp_types[i]
    return num / den if den else None


def test_cumulative_recall_equals_a_from_scratch_count(stream):
    hyps, refs = stream
    cfg = config(r_max_k=2)
    scorer = OnlineScorer(cfg)
    records = [scorer.add(h, r) for h, r in zip(hyps, refs)]
    pipe, stop = TextPipeline(cfg.lang, cfg.truecaser), load_stopwords("de")
    hyp_types = [content_types(pipe.tokens(h), stop) for h in hyps]
    ref_types = [content_types(pipe.tokens(r), stop) for r in refs]
    classes = {"r0": (1, 1), "r1": (2, 2), "r2": (3, 3), "r0+1": (1, 2), "r0..2": (1, 3)}
    for n in (1, 5, 40, 80):
        for name, (low, high) in classes.items():
            expected = _recall_from_scratch(hyp_types, ref_types, n, low, high)
            got = records[n - 1]["cumulative"][name]
            assert (got is None and expected is None) or got == pytest.approx(expected, abs=1e-12), (name, n)


def _full_config(tmp_path) -> MetricsConfig:
    vocab = tmp_path / "vocab.txt"
    write_vocab({"Funktion": 3, "Sie": 9, "Zellen": 2, "Menü": 1}, vocab)
    return config(r_max_k=2, novel_vocab=str(vocab), rare_threshold=1, subword="all")


def test_replay_then_add_equals_an_uninterrupted_run(stream, tmp_path):
    spm = pytest.importorskip("sentencepiece")
    if not TARGET_SPM.is_file():
        pytest.skip("demo target.spm not on disk")
    sp = spm.SentencePieceProcessor(model_file=str(TARGET_SPM))
    hyps, refs = stream
    pieces = [(sp.encode(h, out_type=str), sp.encode(r, out_type=str)) for h, r in zip(hyps, refs)]
    cfg = _full_config(tmp_path)

    whole = OnlineScorer(cfg)
    uninterrupted = [json.loads(json.dumps(whole.add(h, r, hp, rp))) for (h, r), (hp, rp) in zip(zip(hyps, refs), pieces)]
    assert "subword:r0" in uninterrupted[0]["metrics"] and "novel:r0..2" in uninterrupted[0]["cumulative"]

    cut = 37
    resumed = OnlineScorer(cfg)
    for record in uninterrupted[:cut]:
        resumed.replay(record)
    assert resumed.cumulative() == uninterrupted[cut - 1]["cumulative"]
    continued = [json.loads(json.dumps(resumed.add(h, r, hp, rp)))
                 for (h, r), (hp, rp) in zip(list(zip(hyps, refs))[cut:], pieces[cut:])]
    assert continued == uninterrupted[cut:]
    assert resumed.summary() == whole.summary()


def test_content_subword_variant_counts_pieces_of_content_words_and_resumes(stream):
    spm = pytest.importorskip("sentencepiece")
    if not TARGET_SPM.is_file():
        pytest.skip("demo target.spm not on disk")
    sp = spm.SentencePieceProcessor(model_file=str(TARGET_SPM))
    hyps, refs = stream
    cfg = config(subword="content")
    whole = OnlineScorer(cfg, spm_model=TARGET_SPM)
    records = [json.loads(json.dumps(whole.add(h, r))) for h, r in zip(hyps, refs)]
    assert "ref_pieces" not in records[0]  # recomputed from the logged tokens on resume
    # segment 0: the subword units are the pieces of its content types, each segmented alone
    ref_types = whole.content_types(records[0]["ref_tokens"].split())
    hyp_types = whole.content_types(records[0]["hyp_tokens"].split())
    units = lambda types: {p for t in types for p in sp.encode(t, out_type=str)}  # noqa: E731
    assert records[0]["metrics"]["subword:r0"] == [len(units(ref_types) & units(hyp_types)), len(units(ref_types))]
    assert "unit:subword-content." in whole.signatures()["subword:r"]
    resumed = OnlineScorer(cfg, spm_model=TARGET_SPM)
    for record in records[:30]:
        resumed.replay(record)
    assert [json.loads(json.dumps(resumed.add(h, r))) for h, r in zip(hyps[30:], refs[30:])] == records[30:]


def test_cumulative_curves_from_logged_records(stream):
    hyps, refs = stream
    scorer = OnlineScorer(config())
    records = [json.loads(json.dumps(scorer.add(h, r))) for h, r in zip(hyps, refs)]
    curves = cumulative_curves(records, config())
    for name, curve in curves.items():
        assert curve == [rec["cumulative"][name] for rec in records]


def test_replay_refuses_records_it_cannot_resume_from(stream, tmp_path):
    hyps, refs = stream
    record = json.loads(json.dumps(OnlineScorer(config()).add(hyps[1], refs[1])))
    with pytest.raises(DataError, match="lacks stats"):
        OnlineScorer(config()).replay({k: v for k, v in record.items() if k != "stats"})
    with pytest.raises(DataError, match="stats\\['bleu'\\]"):
        OnlineScorer(config()).replay({**record, "stats": {**record["stats"], "bleu": [1, 2]}})
    # resumed with other stopwords: the logged denominators no longer match
    empty = tmp_path / "none.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(DataError, match="denominator"):
        OnlineScorer(config(stopwords=str(empty))).replay(record)
    with pytest.raises(DataError, match="ref_pieces"):
        OnlineScorer(config(subword="all")).replay(record)


def test_config_validation_and_subword_pieces():
    assert defaults("metrics", truecaser="none").truecaser is None
    with pytest.raises(ConfigError, match="unknown key metrics.r_max_kk; known:.*r_max_k"):
        defaults("metrics", r_max_kk=2)
    with pytest.raises(ConfigError, match="r_max_k"):
        defaults("metrics", r_max_k=-1)
    with pytest.raises(ConfigError, match="metrics.r_max_k must be an integer, got 'two'"):
        defaults("metrics", r_max_k="two")
    with pytest.raises(ConfigError, match="known:"):
        OnlineScorer(config(stopwords="xx"))
    with pytest.raises(DataError, match="hyp_pieces"):
        OnlineScorer(config(subword="all")).add("a", "b")
    with pytest.raises(ConfigError, match="unknown metrics.subword 'some'; known: null, all, content"):
        config(subword="some")
    with pytest.raises(ConfigError, match="unknown metrics.sbleu 'add1'; known: nakov, exp"):
        config(sbleu="add1")
    with pytest.raises(ConfigError, match="subword=content needs the target SentencePiece model"):
        OnlineScorer(config(subword="content"))
    with pytest.raises(ConfigError, match="novel_vocab=train needs a dataset with a train vocabulary"):
        OnlineScorer(config(novel_vocab="train"))
    with pytest.raises(ConfigError, match="ships no truecase.de.model"):
        OnlineScorer(defaults("metrics", truecaser="model"), model_dir=None)


def test_summary_of_an_empty_stream():
    summary = OnlineScorer(config()).summary()
    assert summary["corpus"] == {"bleu": None, "chrf": None, "ter": None, "sbleu": None, "r0": None, "r1": None, "r0+1": None}
    assert set(summary["signatures"]) == {"bleu", "chrf", "ter", "sbleu", "r"}


def test_a_logged_metric_is_a_name_in_metrics_logged(stream):
    """``metrics.logged`` adds any registered metric: its statistics, segment score and running value are logged and
    its running value is sacreBLEU's corpus score of the prefix; a resumed scorer continues it exactly."""
    hyps, refs = stream
    cfg = config(logged=["bleu", "chrf", "ter", "chrf++"])
    scorer = OnlineScorer(cfg)
    records = [json.loads(json.dumps(scorer.add(h, r))) for h, r in zip(hyps[:12], refs[:12])]
    assert list(records[0]["stats"]) == ["bleu", "chrf", "ter", "chrf++"]
    assert list(records[0]["metrics"])[:4] == ["sbleu", "chrf", "ter", "chrf++"]
    assert records[-1]["cumulative"]["chrf++"] == pytest.approx(CHRF(word_order=2).corpus_score(hyps[:12], [refs[:12]]).score)
    assert scorer.metric_names()[:5] == ["bleu", "chrf", "ter", "chrf++", "sbleu"]
    resumed = OnlineScorer(cfg)
    for record in records[:6]:
        resumed.replay(record)
    assert [resumed.add(h, r)["cumulative"] for h, r in zip(hyps[6:12], refs[6:12])] == [r["cumulative"] for r in records[6:]]


def test_metrics_logged_is_checked_in_one_line():
    with pytest.raises(ConfigError, match=r"unknown metrics.logged metric 'meteor'; known: .*chrf\+\+"):
        OnlineScorer(config(logged=["bleu", "meteor"]))
    with pytest.raises(ConfigError, match="metrics.logged cannot hold 'sbleu'"):
        OnlineScorer(config(logged=["bleu", "sbleu"]))
    with pytest.raises(ConfigError, match="metrics.logged must hold bleu"):
        OnlineScorer(config(logged=["chrf"]))
    with pytest.raises(ConfigError, match="names a metric twice"):
        OnlineScorer(config(logged=["bleu", "ter", "ter"]))


def test_a_glossary_scorer_logs_the_term_metrics_restarts_per_document_and_replays() -> None:
    """The term counter inside the scorer (data.glossary): per-segment [num, den] under metrics, ratios under
    cumulative, the signature under ``term``; under scope document a term is first again in a new document; replay
    resumes the occurrence counts and the pending fixes exactly."""
    from simpe.metrics.online import metric_for, signature_label
    from simpe.metrics.recall import RecallMetric
    from simpe.terms.match import TermMatcher
    from simpe.terms.score import TERM_METRICS, TermCounter

    def scorer(scope: str) -> OnlineScorer:
        counter = TermCounter(TermMatcher([("Cells", "Zellen"), ("Sheet", "Tabelle")]))
        counter.signature = "gl:test"
        return OnlineScorer(replace(defaults("metrics"), truecaser=None, scope=scope), terms=counter)

    texts = [("Format Cells.", "Zellen formatieren.", "Wählen Sie Format.", "a"),  # Cells missed: fixed
             ("Format Cells.", "Zellen formatieren.", "Formatieren.", "a"),  # Cells missed again
             ("Format Cells.", "Zellen formatieren.", "Zellen formatieren.", "b")]  # a new document
    for scope, t0, t1, repeat in (("stream", [0, 1], [1, 2], [1, 2]), ("document", [1, 2], [0, 1], [1, 1])):
        live = scorer(scope)
        records = [{**live.add(hyp, ref, source=src, doc_id=doc), "source": src, "doc_id": doc}
                   for src, ref, hyp, doc in texts]
        assert [r["terms"] for r in records] == [[["Cells", 1, False]], [["Cells", 2, False]],
                                                  [["Cells", 1 if scope == "document" else 3, True]]]
        assert [r["terms_fixed"] for r in records] == [["Cells"], ["Cells"], []]
        summed = {n: [sum(r["metrics"][n][i] for r in records) for i in (0, 1)] for n in ("t0", "t1", "term-repeat")}
        assert summed == {"t0": t0, "t1": t1, "term-repeat": repeat}, scope
        assert records[-1]["cumulative"]["term"] == pytest.approx(1 / 3)
        assert live.summary()["signatures"]["term"] == "gl:test" and "term" in live.metric_names()
        resumed = scorer(scope)
        for record in json.loads(json.dumps(records[:2])):
            resumed.replay(record)
        src, ref, hyp, doc = texts[2]
        assert resumed.add(hyp, ref, source=src, doc_id=doc)["metrics"] == records[2]["metrics"]
    with pytest.raises(DataError, match="need the source"):
        scorer("stream").add("Zellen.", "Zellen.")
    with pytest.raises(DataError, match="differs"):  # a record logged under another glossary
        scorer("stream").replay({**records[0], "metrics": {**records[0]["metrics"], "term": [1, 1]}})
    assert metric_for("term") is TERM_METRICS["term"] and metric_for("term-repeat").higher_is_better is False
    assert isinstance(metric_for("nonterm:r0+1"), RecallMetric) and metric_for("nonterm:r0").label == "nonterm:R0"
    assert signature_label("term") == "Terms"
