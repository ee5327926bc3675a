"""Cross-attention by source (``simpe.decoders.cross``): rows reading their source's encoder states in place give the
records that a copy per row gave, bit for bit, for every family where it is used; elsewhere nothing changes."""
from __future__ import annotations

import pytest
import torch
from test_decoders import peaky_tiny
from tiny_families import token_model

import simpe.decoders.cross as cross
import simpe.decoders.topk as topk
from simpe.decoders.beam import BeamDecoder
from simpe.decoders.heap_beam import HeapBeamDecoder
from simpe.decoders.sampling import SamplingDecoder
from simpe.decoders.topk import TopKDecoder
from simpe.models import family_of

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tiny models: see conftest.py

LIMIT = dict(max_len_a=0.0, max_len_b=5, max_len_cap=5)
SOURCES = [torch.tensor([[3, 5, 7, 4, 2]]), torch.tensor([[9, 2]]), torch.tensor([[4, 5, 6, 7, 8, 9, 3, 4, 2]])]  # end: EOS 2


def _model(kind: str):
    if kind == "marian":
        return peaky_tiny(5, vocab=12, scale=1.0, eos_bias=0.0), [s.clone().masked_fill_(s == 2, 0) for s in SOURCES]  # Marian's EOS 0
    return token_model(kind, seed=5), SOURCES


def _records(model, sources) -> list:
    """Every decoder that batches sources: tokens and scores of each hypothesis, expansions."""
    decoders = [BeamDecoder(beam_size=3, **LIMIT), HeapBeamDecoder(beam_size=4, **LIMIT), SamplingDecoder(samples=12, seed=3, **LIMIT),
                TopKDecoder(k=5, batch_size=4, **LIMIT)]
    return [[([h.tokens for h in r.hypotheses], [h.score for h in r.hypotheses], r.expansions) for r in d.decode_batch(model, sources)]
            for d in decoders]


def test_blocks_are_the_runs_of_one_source() -> None:
    assert cross.blocks([0, 0, 1, 2, 2, 2]) == [(0, 2, 0), (2, 3, 1), (3, 6, 2)]
    assert cross.blocks([1]) == [(0, 1, 1)] and cross.blocks([]) == []


@pytest.mark.parametrize("kind", ["marian", "mbart", "m2m100", "t5", "llama"])
def test_by_source_gives_the_records_of_a_copy_per_row(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    model, sources = _model(kind)
    family = family_of(model)
    used = kind in ("marian", "mbart", "m2m100")
    assert cross.usable(model, family) is used
    grouped = []
    attention = cross._attention

    def counting(module, query, key, *args, **kwargs):
        current = cross._PASS.get()
        grouped.append(current is not None and any(key is held for held in current[1]))
        return attention(module, query, key, *args, **kwargs)

    monkeypatch.setattr(cross, "_attention", counting)
    cross._registered.cache_clear()
    from transformers import AttentionInterface
    AttentionInterface.register(cross.NAME, counting)
    by_source = _records(model, sources)
    assert any(grouped) is used  # the path taken where usable, and only there
    assert model.config._attn_implementation == "sdpa" or not used  # restored after every pass
    monkeypatch.setattr(cross, "usable", lambda model, family: False)
    monkeypatch.setattr(topk, "usable", lambda model, family: False)
    assert _records(model, sources) == by_source  # bit for bit: tokens, scores, expansions
    AttentionInterface.register(cross.NAME, attention)
