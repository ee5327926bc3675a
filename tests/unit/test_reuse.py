"""Completions that reuse the decoder states of earlier ones (``simpe.decoders.reuse``) are the completions decoded from
scratch: the same sessions run with and without reuse ask the same typed prefixes, get the same tokens (scores equal
to float noise) and count the same effort, on the demo model and on every family's tiny model; and the reuse is real
(rows read from the memo, fewer rows run through the model)."""
from __future__ import annotations

import pytest
from tiny_families import REPO, SETTINGS

from simpe.decoders import DECODERS
from simpe.decoders.incremental import decoding, encode
from simpe.decoders.prefix import CharPrefix, Surfaces
from simpe.decoders.reuse import PrefixMemo
from simpe.loop.interactive import Completer, session
from simpe.model import load_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Recording:
    """The run's decoder, each completion's best hypothesis kept (typed prefix's constraint, tokens, score)."""

    def __init__(self, decoder) -> None:
        self.decoder, self.limit, self.calls = decoder, decoder.limit, []

    def decode_source(self, model, source):
        result = self.decoder.decode_source(model, source)
        best = result.hypotheses[0]
        self.calls.append((None if source.constraint is None else source.constraint.target, best.tokens, best.score))
        return result


def _sessions(loaded, decoder, ids, proposal: str, reference: str, level: str, reuse: bool):
    recording = Recording(decoder)
    completer = Completer(loaded.model, loaded.tokenizer, recording, ids, reuse=reuse)
    effort = session(proposal, reference, completer, level).to_dict()
    del effort["latency_ms"]
    return effort, recording.calls, completer.memo


def _same(loaded, decoder, ids, proposal: str, reference: str, level: str) -> PrefixMemo:
    """Run one session both ways; assert the same prefixes typed, completions and counts; the reusing memo."""
    fresh, fresh_calls, _ = _sessions(loaded, decoder, ids, proposal, reference, level, reuse=False)
    reused, reused_calls, memo = _sessions(loaded, decoder, ids, proposal, reference, level, reuse=True)
    assert reused == fresh
    assert [(typed, tokens) for typed, tokens, _ in reused_calls] == [(typed, tokens) for typed, tokens, _ in fresh_calls]
    assert [score for *_, score in reused_calls] == pytest.approx([score for *_, score in fresh_calls], abs=1e-4)
    return memo


def _stream(count: int) -> list[tuple[str, str]]:
    data = REPO / "data" / "libreoffice"
    return list(zip(*((data / f"stream.{side}").read_text(encoding="utf-8").splitlines()[:count] for side in ("en", "de"))))


@pytest.mark.parametrize("name, params", [("greedy", {}), ("beam", {"beam_size": 5})])
def test_demo_completions_with_and_without_reuse_are_the_same(name: str, params: dict, demo_model) -> None:
    tokenizer = demo_model.tokenizer
    decoder = DECODERS.build(name, **params).bind(tokenizer)
    served = computed = 0
    for source, reference in _stream(2):  # 6 and 8 words, 18 and 3 completions at char level (greedy)
        ids = demo_model.family.encode_source(tokenizer, source, demo_model.device)[0]
        proposal = tokenizer.decode(list(decoder.decode(demo_model.model, ids).hypotheses[0].tokens), skip_special_tokens=True)
        for level in ("char", "word"):
            memo = _same(demo_model, decoder, ids, proposal.lstrip(" "), reference, level)
            served, computed = served + memo.served, computed + memo.computed
    # greedy reads most rows (the validated text, as it wrote it before); a beam's tail after each correction is
    # new rows (beam_size of them per position), and its rows in the typed text are not all the ones it fed before
    assert served > (computed if name == "greedy" else computed / 5), (served, computed)


# 4 s (qwen2) to 15 s (mbart) each on 2 cores: t5 in make test, every family in make test-slow (as the brute force)
@pytest.mark.parametrize("kind", [k if k == "t5" else pytest.param(k, marks=pytest.mark.slow)
                                  for k in ("mbart", "m2m100", "nllb", "t5", "llama", "qwen2")])
def test_tiny_family_completions_with_and_without_reuse_are_the_same(kind: str, family_model) -> None:
    loaded = load_model(family_model(kind), "cpu", settings=SETTINGS[kind])
    ids = loaded.family.encode_source(loaded.tokenizer, "Choose Format - Cells.", loaded.device)[0]
    # a random model completes little: the char level types most characters, one completion each
    for name, params in [("greedy", {}), ("beam", {"beam_size": 3}), ("heap_beam", {"beam_size": 3}),
                         ("topk_dfs", {"k": 1, "max_expansions": 200})]:
        decoder = DECODERS.build(name, max_len_a=0.0, max_len_b=6, max_len_cap=6, **params).bind(loaded.tokenizer)
        memo = _same(loaded, decoder, ids, "Klicken", "Wählen Sie", "char")
        assert memo.served > 0, (kind, name)
        _same(loaded, decoder, ids, "Klicken", "Wählen Sie die Zellen", "word")


def test_the_memo_serves_only_what_it_holds_and_prunes_what_left_the_typed_text(demo_model) -> None:
    tokenizer, model = demo_model.tokenizer, demo_model.model
    ids = demo_model.family.encode_source(tokenizer, "Choose Format - Cells.", demo_model.device)[0]
    decoder = DECODERS.build("greedy")
    with decoding(model):
        base = encode(model, ids, decoder.limit)
    memo = PrefixMemo()
    first = decoder.decode_source(model, base.__class__(**{**base.__dict__, "memo": memo})).hypotheses[0]
    assert memo.computed == len(first.tokens) and memo.served == 0 and all(first.tokens[:n] in memo for n in range(len(first.tokens)))
    again = decoder.decode_source(model, base.__class__(**{**base.__dict__, "memo": memo})).hypotheses[0]
    assert again == first and memo.served == len(first.tokens) and memo.computed == len(first.tokens)  # all read
    assert memo.get(first.tokens[:1]) is not None and memo.get((first.tokens[0],) * 3) is None
    text = tokenizer.decode(list(first.tokens), skip_special_tokens=True)
    constraint = CharPrefix(Surfaces.for_tokenizer(tokenizer), "X" + text)  # the first token's text left it
    before = memo.bytes
    memo.prune(lambda tokens: constraint.state(tokens) is not None)
    assert list(memo.rows) == [()] and 0 < memo.bytes < before
    small = PrefixMemo(budget_bytes=1)  # checked between decodes (the Completer starts again): this one is whole
    assert decoder.decode_source(model, base.__class__(**{**base.__dict__, "memo": small})).hypotheses[0] == first
    assert small.over_budget and len(small.rows) == len(first.tokens)
    small.clear()
    assert not small.rows and small.bytes == 0 and not small.started
