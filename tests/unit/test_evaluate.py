"""ranking.evaluate: snapshot() on a tiny Marian model with the demo model's real SentencePiece tokenizer, and
the ranking snapshot's faster path (issue 28) gives the records of the plain computation, on the demo model.

``evaluate`` encodes each probe sentence once for its three decoders (``decode_sources``) and
decodes each distinct hypothesis once (``Detokenizer``). Its records must be those of the plain
computation: each decoder's own ``decode_batch`` on the same sentences, ``tokenizer.batch_decode``
and sacreBLEU's chrF, exactly (same batches, so the same floats). Against one sentence at a time,
the top-k lists must be the same token sequences with scores within 1e-5 relative, and their
figures within 1e-6. (Samples drawn one sentence at a time are the same draws up to float noise
of the batch shape, sampling.py: a draw within rounding distance of a CDF boundary may go the
other way, so they are compared with the batched decoder, not one by one.)
"""
from __future__ import annotations

import dataclasses
import math
import random

import pytest
import sacrebleu
import torch
from test_decoders import REFERENCES, SOURCES, make_text_model, text_tokenizer

from simpe.config.files import defaults
from simpe.decoders.beam import BeamDecoder
from simpe.decoders.sampling import SamplingDecoder
from simpe.decoders.topk import TopKDecoder
from simpe.errors import ConfigError
from simpe.models import family_of
from simpe.paths import DATA_DIR
from simpe.ranking.evaluate import Detokenizer, evaluate, snapshot
from simpe.ranking.measures import kqrg, krg, random_krg, rank_figures

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _probe(count: int = 3, max_words: int = 6) -> tuple[list[str], list[str]]:
    """The first ``count`` dev pairs of at most ``max_words`` source words (as the loop's probe set picks them)."""
    sources = (DATA_DIR / "libreoffice" / "dev.en").read_text(encoding="utf-8").splitlines()
    references = (DATA_DIR / "libreoffice" / "dev.de").read_text(encoding="utf-8").splitlines()
    pairs = [(s, r) for s, r in zip(sources, references) if s.strip() and len(s.split()) <= max_words][:count]
    return [s for s, _ in pairs], [r for _, r in pairs]


def _chrf(texts: list[str], reference: str) -> list[float]:
    return [sacrebleu.sentence_chrf(t, [reference]).score / 100 for t in texts]


def _config():
    return dataclasses.replace(defaults("ranking"), k=5, samples=24, sample_seed=3, max_expansions=None, max_seconds=None)


def test_detokenizer_gives_batch_decode_text(demo_model) -> None:
    tokenizer = demo_model.tokenizer
    detok = Detokenizer(tokenizer)
    assert detok.drop is not None  # Marian: the fast path is the one under test
    special = sorted(set(tokenizer.all_special_ids))
    rng = random.Random(0)
    sequences = [tuple(rng.choice(special) if rng.random() < 0.15 else rng.randrange(tokenizer.vocab_size)
                       for _ in range(rng.randrange(0, 12))) for _ in range(300)]
    sequences += [(0,), (), tuple(special), sequences[5]]  # EOS alone, nothing, only specials, a repeat
    hyps = [type("H", (), {"tokens": s})() for s in sequences]
    assert detok(hyps) == tokenizer.batch_decode([list(s) for s in sequences], skip_special_tokens=True)
    assert detok(hyps[:7]) == tokenizer.batch_decode([list(s) for s in sequences[:7]], skip_special_tokens=True)


def test_snapshot_records_equal_the_plain_computation(demo_model) -> None:
    model, tokenizer = demo_model.model, demo_model.tokenizer
    sources, references = _probe()
    cfg = _config()
    length = cfg.length()
    summary, records = evaluate(model, tokenizer, sources, references, cfg, keep_records=True)
    family = family_of(model)
    batch = [family.encode_source(tokenizer, s, demo_model.device)[0] for s in sources]
    tops = TopKDecoder(k=cfg.k, beam_size=max(cfg.k, cfg.beam_size), batch_size=cfg.batch_size, **length).decode_batch(model, batch)
    beams = BeamDecoder(beam_size=cfg.beam_size, **length).decode_batch(model, batch)
    drawn = SamplingDecoder(samples=cfg.samples, seed=cfg.sample_seed, **length).decode_batch(model, batch)
    for record, top, beam, mc, reference in zip(records, tops, beams, drawn, references):
        texts = tokenizer.batch_decode([list(h.tokens) for h in top.hypotheses], skip_special_tokens=True)
        qualities = _chrf(texts, reference)
        assert record["top"]["hypotheses"] == [{"text": t, "score": h.score, "quality": q, "length": len(h.tokens)}
                                               for t, h, q in zip(texts, top.hypotheses, qualities)]
        assert record["top"]["expansions"] == top.expansions
        figures = rank_figures(qualities, cfg.gain, cfg.ties)
        assert {k: record["top"][k] for k in figures} == figures
        best = beam.hypotheses[0]
        beam_text = tokenizer.decode(list(best.tokens), skip_special_tokens=True)
        assert record["top"]["beam"] == {"text": beam_text, "score": best.score, "quality": _chrf([beam_text], reference)[0]}
        sample_texts = tokenizer.batch_decode([list(h.tokens) for h in mc.hypotheses], skip_special_tokens=True)
        sample_q = _chrf(sample_texts, reference)
        assert [s["text"] for s in record["mc"]["samples"]] == list(dict.fromkeys(sample_texts))
        assert sum(s["count"] for s in record["mc"]["samples"]) == cfg.samples
        figures = rank_figures(sample_q, cfg.gain, cfg.ties)
        assert {k: record["mc"][k] for k in figures} == figures
        assert record["mc"]["mean_quality"] == sum(sample_q) / len(sample_q)
    assert summary["top.krg"] == sum(r["top"]["krg"] for r in records) / len(records)


def test_top_region_equals_one_sentence_at_a_time(demo_model) -> None:
    model, tokenizer = demo_model.model, demo_model.tokenizer
    sources, references = _probe()
    cfg = dataclasses.replace(_config(), sampling=False)
    summary, records = evaluate(model, tokenizer, sources, references, cfg, keep_records=True)
    krgs = []
    for index, (record, source, reference) in enumerate(zip(records, sources, references)):
        alone, _ = evaluate(model, tokenizer, [source], [reference], cfg, keep_records=True)
        ids = tokenizer(source, return_tensors="pt")["input_ids"]
        top = TopKDecoder(k=cfg.k, beam_size=max(cfg.k, cfg.beam_size), **cfg.length()).decode(model, ids, index=index)
        ours = record["top"]["hypotheses"]
        texts = tokenizer.batch_decode([list(h.tokens) for h in top.hypotheses], skip_special_tokens=True)
        assert [h["text"] for h in ours] == texts
        assert [h["length"] for h in ours] == [len(h.tokens) for h in top.hypotheses]
        for h, ref in zip(ours, top.hypotheses):
            assert h["score"] == pytest.approx(ref.score, rel=1e-5)
        figures = rank_figures(_chrf(texts, reference), cfg.gain, cfg.ties)
        for key, value in figures.items():
            assert record["top"][key] == pytest.approx(value, rel=1e-6, abs=1e-6), key
        krgs.append(figures["krg"])
        assert alone["top.krg"] == pytest.approx(record["top"]["krg"], rel=1e-6, abs=1e-6)
    assert summary["top.krg"] == pytest.approx(sum(krgs) / len(krgs), rel=1e-6)


@pytest.fixture(scope="module")
def text_model():
    return make_text_model(seed=0), text_tokenizer()


def test_snapshot_figures_and_no_side_effects(text_model) -> None:
    model, tokenizer = text_model
    model.train()  # the loop's model may be in train mode: the snapshot must not change that
    before = {k: v.clone() for k, v in model.state_dict().items()}
    torch.manual_seed(123)
    rng = torch.get_rng_state()
    cfg = defaults("ranking", k=3, samples=16, max_expansions=None, max_seconds=None)
    out = snapshot(model, tokenizer, SOURCES, REFERENCES, cfg)
    assert torch.equal(rng, torch.get_rng_state())
    assert model.training and all(m.training for m in model.modules())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    for key in ("top.krg", "top.kqrg", "top.random_krg", "top.empty_rate", "top.beam_error_rate", "top.exact_rate",
                "mc.krg", "mc.kqrg", "mc.random_krg", "probe_size", "seconds"):
        assert key in out, key
    assert out["probe_size"] == len(SOURCES)
    assert out["top.exact_rate"] == 1.0 and out["top.short_rate"] == 0.0
    assert out["top.random_krg"] == pytest.approx(random_krg(3))
    # tied sample qualities share gains, which can only raise a list's random baseline over the tie-free one
    assert random_krg(16) - 1e-12 <= out["mc.random_krg"] <= 1.0
    for key in ("top.krg", "mc.krg"):
        assert 0.0 < out[key] <= 1.0
    for key in ("top.kqrg", "mc.kqrg", "top.empty_rate", "top.beam_error_rate", "mc.mean_quality"):
        assert 0.0 <= out[key] <= 1.0
    again = snapshot(model, tokenizer, SOURCES, REFERENCES, cfg)
    assert {k: v for k, v in again.items() if "seconds" not in k} == {k: v for k, v in out.items() if "seconds" not in k}
    model.eval()


def test_evaluate_records_match_direct_decoding(text_model) -> None:
    import sacrebleu

    from simpe.decoders.beam import BeamDecoder
    from simpe.decoders.sampling import SamplingDecoder
    from simpe.decoders.topk import TopKDecoder

    model, tokenizer = text_model
    cfg = defaults("ranking", k=3, samples=12, sample_seed=5, max_expansions=None, max_seconds=None, quality="chrf")
    summary, records = evaluate(model, tokenizer, SOURCES, REFERENCES, cfg, keep_records=True)
    empty = beam_errors = 0
    for i, (record, src, ref) in enumerate(zip(records, SOURCES, REFERENCES)):
        ids = tokenizer(src, return_tensors="pt")["input_ids"]
        top = TopKDecoder(k=3, beam_size=5).decode(model, ids).hypotheses
        texts = tokenizer.batch_decode([list(h.tokens) for h in top], skip_special_tokens=True)
        q = [sacrebleu.sentence_chrf(t, [ref]).score / 100 for t in texts]
        assert [h["text"] for h in record["top"]["hypotheses"]] == texts
        assert record["top"]["krg"] == pytest.approx(krg(q)) and record["top"]["kqrg"] == pytest.approx(kqrg(q))
        beam = BeamDecoder(beam_size=5).decode(model, ids).hypotheses[0]
        empty += top[0].tokens == (0,)
        beam_errors += beam.score < top[0].score - 1e-4
        samples = SamplingDecoder(samples=12, seed=5 + i).decode(model, ids).hypotheses
        stexts = tokenizer.batch_decode([list(h.tokens) for h in samples], skip_special_tokens=True)
        sq = [sacrebleu.sentence_chrf(t, [ref]).score / 100 for t in stexts]
        assert record["mc"]["krg"] == pytest.approx(krg(sq)) and record["mc"]["kqrg"] == pytest.approx(kqrg(sq))
        assert sum(s["count"] for s in record["mc"]["samples"]) == 12
    assert summary["top.empty_rate"] == empty / len(SOURCES)
    assert summary["top.beam_error_rate"] == beam_errors / len(SOURCES)


def test_cut_short_search_is_reported(text_model) -> None:
    model, tokenizer = text_model
    # sentences whose exact top-3 needs more than 2 expansions with this tiny model and the demo vocabulary (its random
    # weights differ between transformers 4 and 5, which initialise in another order: sentences 0 and 3 on both)
    out = snapshot(model, tokenizer, [SOURCES[0], SOURCES[3]], [REFERENCES[0], REFERENCES[3]],
                   defaults("ranking", k=3, max_expansions=2, max_seconds=None, sampling=False))
    assert out["top.exact_rate"] == 0.0
    assert "mc.krg" not in out


def test_sbleu_quality(text_model) -> None:
    model, tokenizer = text_model
    out = snapshot(model, tokenizer, SOURCES[:2], REFERENCES[:2],
                   defaults("ranking", k=2, samples=8, quality="sbleu", max_expansions=None, max_seconds=None))
    assert 0.0 <= out["top.kqrg"] <= 1.0 and 0.0 <= out["mc.kqrg"] <= 1.0


def test_comet_quality_from_cached_embeddings(text_model, tiny_comet) -> None:
    from simpe.metrics.comet import CometScorer
    from simpe.metrics.utility import CometUtility

    model, tokenizer = text_model
    scorer = CometScorer(str(tiny_comet), batch_size=4)
    hyps = ["Wählen Sie den Zellbereich aus.", "Wählen Sie aus.", "", "Klicken Sie auf OK."]
    utility = CometUtility(scorer)
    got = utility.scores(hyps, REFERENCES[1], SOURCES[1])
    assert got == pytest.approx(scorer.score([SOURCES[1]] * 4, hyps, [REFERENCES[1]] * 4), abs=1e-5)
    matrix = utility.matrix(hyps, hyps, SOURCES[1])  # every pair, each sentence embedded once
    assert matrix.shape == (4, 4) and matrix[1, 3] == pytest.approx(scorer.score([SOURCES[1]], [hyps[1]], [hyps[3]])[0], abs=1e-5)
    out = snapshot(model, tokenizer, SOURCES[:2], REFERENCES[:2],
                   defaults("ranking", k=2, samples=6, quality="comet", max_expansions=None, max_seconds=None), comet=scorer)
    assert out["quality"] == "comet" and math.isfinite(out["top.kqrg"]) and math.isfinite(out["mc.kqrg"])
    with pytest.raises(ConfigError, match="needs a COMET model"):
        snapshot(model, tokenizer, SOURCES[:1], REFERENCES[:1], defaults("ranking", quality="comet"))
