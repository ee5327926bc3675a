"""Exact top-k (``topk``, batched best-first) and Algorithm 1 (``topk_dfs``) against brute-force
enumeration of every hypothesis of tiny random Marian models (vocabulary 12: EOS, 10 tokens, pad;
at most 5 tokens), scored by plain full-sequence forward passes."""
from __future__ import annotations

import itertools

import pytest
import torch
from messages import raises_naming
from test_decoders import SOURCES, make_text_model, peaky_tiny, teacher_forced_score, text_tokenizer
from transformers.modeling_outputs import BaseModelOutput

from simpe.decoders import DECODERS
from simpe.decoders.beam import BeamDecoder
from simpe.decoders.heap_beam import HeapBeamDecoder
from simpe.decoders.topk import TopKDecoder
from simpe.decoders.topk_dfs import TopKDfsDecoder
from simpe.errors import ConfigError
from simpe.ties import SCORE_ATOL, margin

VOCAB, MAX_LEN = 12, 5
PAD = VOCAB - 1
LIMIT = dict(max_len_a=0.0, max_len_b=MAX_LEN, max_len_cap=MAX_LEN)
SOURCE = torch.tensor([[3, 5, 7, 2, 0]])  # (1, 5)
_BRUTE: dict[tuple, list[tuple[float, tuple[int, ...]]]] = {}


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: see conftest.py


def model_for(seed: int, kind: str):
    """flat: near-uniform (the lazy-successor stress test); normal: random init; peaky: sharp, EOS-prone."""
    scale, eos_bias = {"flat": (0.1, 0.0), "normal": (1.0, 0.0), "peaky": (3.0, 1.0)}[kind]
    return peaky_tiny(seed, vocab=VOCAB, scale=scale, eos_bias=eos_bias)


def brute_force(model, key: tuple, source: torch.Tensor = SOURCE) -> list[tuple[float, tuple[int, ...]]]:
    """Every hypothesis of at most MAX_LEN tokens (EOS last, no pad), scored with full forward passes, best first."""
    if key in _BRUTE:
        return _BRUTE[key]
    scored: list[tuple[float, tuple[int, ...]]] = []
    with torch.inference_mode():
        enc = model.get_encoder()(input_ids=source).last_hidden_state  # (1, src_len, d_model)
        for length in range(1, MAX_LEN + 1):
            seqs = [body + (0,) for body in itertools.product(range(1, PAD), repeat=length - 1)]
            target = torch.tensor(seqs)  # (n, length)
            dec_in = torch.cat([torch.full((len(seqs), 1), PAD), target[:, :-1]], dim=1)  # (n, length)
            logits = model(decoder_input_ids=dec_in,
                           encoder_outputs=BaseModelOutput(last_hidden_state=enc.expand(len(seqs), -1, -1))).logits  # (n, length, vocab)
            logp = torch.log_softmax(logits.float(), dim=-1)  # (n, length, vocab)
            scores = logp.gather(2, target.unsqueeze(2)).squeeze(2).double().sum(dim=1)  # (n,)
            scored += list(zip(scores.tolist(), seqs))
    assert len(scored) == sum(10 ** n for n in range(MAX_LEN))  # 11111 hypotheses
    scored.sort(key=lambda item: -item[0])
    _BRUTE[key] = scored
    return scored


def assert_exact(hyps, truth: list[tuple[float, tuple[int, ...]]], k: int, tol: float = 1e-5) -> None:
    """The k best up to ties: scores equal the true top-k scores rank by rank, and every returned hypothesis is
    distinct and carries its own true score (within ``tol``, float noise). Tied hypotheses may swap places, and
    at the k-th place a tied one may stand in for another: tied is simpe's own rule (``simpe.ties``: 1e-5
    relative, 7.5e-5 at a score of -7.5), which orders a tie group by its token sequences."""
    table = dict((tokens, score) for score, tokens in truth)
    assert len(hyps) == min(k, len(truth))
    assert len({h.tokens for h in hyps}) == len(hyps)
    for hyp, (score, _) in zip(hyps, truth):
        assert hyp.score == pytest.approx(score, abs=tol + 2 * margin(score, SCORE_ATOL))
        assert table[hyp.tokens] == pytest.approx(hyp.score, abs=tol)
    # where no tie is involved, the token sequences are the same
    for i, (hyp, (score, tokens)) in enumerate(zip(hyps, truth)):
        neighbours = [s for s, _ in truth[max(0, i - 1): i + 2] if _ != tokens]
        if all(abs(s - score) > tol + 2 * margin(score, SCORE_ATOL) for s in neighbours):
            assert hyp.tokens == tokens


@pytest.mark.parametrize("kind", ["flat", "normal", "peaky"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_topk_equals_brute_force(seed: int, kind: str) -> None:
    model = model_for(seed, kind)
    truth = brute_force(model, (seed, kind))
    for k in (1, 5, 20):
        for batch_size in ((1, 7, 64) if k <= 5 else (7, 64)):
            result = TopKDecoder(k=k, batch_size=batch_size, **LIMIT).decode(model, SOURCE)
            assert result.exact is True and result.info["finalised"] == k
            assert_exact(result.hypotheses, truth, k)
        result = TopKDecoder(k=k, beam_size=1, **LIMIT).decode(model, SOURCE)  # a weaker initial bound
        assert_exact(result.hypotheses, truth, k)


@pytest.mark.parametrize("kind", ["flat", "normal", "peaky"])
@pytest.mark.parametrize("seed", [0, 3])
def test_algorithm1_reference_equals_brute_force_and_best_first_expands_no_more(seed: int, kind: str) -> None:
    model = model_for(seed, kind)
    truth = brute_force(model, (seed, kind))
    for k in (1, 4, 12):
        dfs = TopKDfsDecoder(k=k, **LIMIT).decode(model, SOURCE)
        assert dfs.exact is True
        assert_exact(dfs.hypotheses, truth, k)
        # sequential best-first expands only prefixes scoring at least the k-th best, all of which the DFS expands
        best_first = TopKDecoder(k=k, batch_size=1, **LIMIT).decode(model, SOURCE)
        assert best_first.expansions + best_first.info["reused"] <= dfs.expansions


def test_exact_top_one_is_never_below_beam() -> None:
    for seed in range(4):
        model = model_for(seed, "normal")
        truth = brute_force(model, (seed, "normal")) if seed < 3 else None
        top = TopKDecoder(k=3, **LIMIT).decode(model, SOURCE).hypotheses
        for width in (1, 3, 5):
            assert top[0].score >= BeamDecoder(beam_size=width, **LIMIT).decode(model, SOURCE).hypotheses[0].score - 1e-9
            assert top[0].score >= HeapBeamDecoder(beam_size=width, **LIMIT).decode(model, SOURCE).hypotheses[0].score - 1e-9
        if truth:
            assert top[0].score == pytest.approx(truth[0][0], abs=1e-5)


def test_fewer_hypotheses_than_k() -> None:
    """Vocabulary {EOS, 1, pad} and 3 tokens: the whole space is (EOS), (1 EOS), (1 1 EOS)."""
    model = peaky_tiny(0, vocab=3, scale=1.0, eos_bias=0.0)
    ids = torch.tensor([[1, 0]])  # (1, 2)
    limit = dict(max_len_a=0.0, max_len_b=3, max_len_cap=3)
    for decoder in (TopKDecoder(k=5, **limit), TopKDfsDecoder(k=5, **limit)):
        result = decoder.decode(model, ids)
        assert result.exact is True
        assert sorted(h.tokens for h in result.hypotheses) == [(0,), (1, 0), (1, 1, 0)]
        for hyp in result.hypotheses:
            assert hyp.score == pytest.approx(teacher_forced_score(model, ids, hyp.tokens), abs=1e-5)
        assert sum(torch.tensor([h.score for h in result.hypotheses]).exp()) <= 1.0


def test_cut_short_search_is_not_exact() -> None:
    model = model_for(1, "flat")
    truth = dict((tokens, score) for score, tokens in brute_force(model, (1, "flat")))
    for decoder in (TopKDecoder(k=10, max_expansions=5, **LIMIT), TopKDfsDecoder(k=10, max_expansions=5, **LIMIT),
                    TopKDecoder(k=10, max_seconds=1e-9, **LIMIT), TopKDfsDecoder(k=10, max_seconds=1e-9, **LIMIT)):
        result = decoder.decode(model, SOURCE)
        assert result.exact is False
        assert result.expansions <= 5
        hyps = result.hypotheses
        assert 1 <= len(hyps) <= 10 and len({h.tokens for h in hyps}) == len(hyps)
        assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)
        for hyp in hyps:  # real hypotheses with their true scores, only not proven best
            assert truth[hyp.tokens] == pytest.approx(hyp.score, abs=1e-5)


def test_mixed_length_batches_on_a_real_vocabulary() -> None:
    """On an 8k-vocabulary model (prefixes of many lengths in each batch) both searches agree, and agree
    with the teacher-forced scores of what they return."""
    model, tok = make_text_model(), text_tokenizer()
    for src in SOURCES[:2]:
        ids = tok(src, return_tensors="pt")["input_ids"]  # (1, src_len)
        fast = TopKDecoder(k=8, batch_size=16).decode(model, ids)
        slow = TopKDfsDecoder(k=8).decode(model, ids)
        assert fast.exact and slow.exact and fast.info["batches"] > 1
        assert [h.score for h in fast.hypotheses] == pytest.approx([h.score for h in slow.hypotheses], abs=1e-5)
        assert {h.tokens for h in fast.hypotheses} == {h.tokens for h in slow.hypotheses}
        for hyp in fast.hypotheses:
            assert hyp.score == pytest.approx(teacher_forced_score(model, ids, hyp.tokens), abs=1e-5)


def test_parameters_are_checked() -> None:
    with pytest.raises(ConfigError, match=r"k must be an integer in \[1, 10,000\]"):
        TopKDecoder(k=0)
    with pytest.raises(ConfigError, match="max_seconds must be a finite number > 0"):
        TopKDfsDecoder(max_seconds=0)
    with raises_naming(ConfigError, "'width'", "'topk'", "k, beam_size, batch_size"):
        DECODERS.build("topk", width=3)


def test_an_adapted_model_is_searched_as_it_scores() -> None:
    """The bias method's second output bias (a forward hook on lm_head) is part of the model the searches see."""
    from simpe.methods.bias import attach_output_bias

    model = model_for(2, "normal")
    bias = attach_output_bias(model)
    with torch.no_grad():
        bias.copy_(torch.linspace(-1.0, 2.0, VOCAB))  # (vocab,)
    truth = brute_force(model, (2, "normal", "output-bias"))
    assert truth[0][0] != pytest.approx(brute_force(model_for(2, "normal"), (2, "normal"))[0][0], abs=1e-3)
    assert_exact(TopKDecoder(k=6, batch_size=5, **LIMIT).decode(model, SOURCE).hypotheses, truth, 6)
    assert_exact(TopKDfsDecoder(k=6, **LIMIT).decode(model, SOURCE).hypotheses, truth, 6)


def test_decode_batch_searches_sentences_of_different_lengths_in_lockstep() -> None:
    """Sources of different lengths share forward passes (padded source positions masked): each result is
    the exact top-k of its own source (brute force), and a row cap below the batch changes nothing."""
    model = model_for(4, "normal")
    sources = [torch.tensor([[3, 5, 7, 2, 0]]), torch.tensor([[9, 0]]), torch.tensor([[1, 2, 3, 4, 5, 6, 7, 8, 0]])]
    truths = [brute_force(model, (4, "normal", "batch", j), src) for j, src in enumerate(sources)]
    for decoder in (TopKDecoder(k=6, batch_size=8, **LIMIT), TopKDecoder(k=6, batch_size=3, max_rows=4, **LIMIT)):
        results = decoder.decode_batch(model, sources)
        for result, truth, src in zip(results, truths, sources):
            assert result.exact is True and result.info["batch_sentences"] == 3
            assert_exact(result.hypotheses, truth, 6)
            single = decoder.decode(model, src)
            assert [h.tokens for h in single.hypotheses] == [h.tokens for h in result.hypotheses] or \
                [h.score for h in single.hypotheses] == pytest.approx([h.score for h in result.hypotheses], abs=1e-5)
    cut = TopKDecoder(k=6, max_expansions=2, **LIMIT).decode_batch(model, sources)
    assert [r.exact for r in cut] == [False, False, False] and all(r.expansions <= 2 for r in cut)
