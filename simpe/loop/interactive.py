"""The interactive-predictive protocol, simulated: a translator who corrects, a system that completes.

For each segment the system proposes a translation; the simulated translator reads it against the post-edit
(the reference), finds the first error, corrects it, and the system completes the sentence again from the
validated prefix (``simpe.decoders.prefix``), until the sentence equals the post-edit. This is the protocol of
Barrachina et al. (2009), Knowles & Koehn (2016) and Peris, Domingo & Casacuberta (2017). Two translators:

* ``char``: at the first wrong character the translator types the correct one (1 keystroke). Effort: KSMR.
* ``word``: at the first wrong word the translator types the correct word and the space after it (a word
  stroke; its characters are keystrokes). Effort: WSR.

What counts (docs/interactive.md has a worked example):

* a mouse action when the error is not where the cursor is (the end of what the translator typed last): a click
  there accepts the correct text before it, as in Barrachina et al. (2009);
* a proposal longer than the post-edit, correct up to the post-edit's end: one keystroke deletes the rest;
* the final acceptance of a correct sentence costs nothing (a segment proposed right costs 0);
* when the system offers nothing that agrees with the typed prefix (a character its vocabulary cannot write),
  the translator goes on typing: the validated prefix grows by at least one character per correction, so a
  session ends after at most one correction per reference character.

``session`` is the translator; ``Completer`` the system side: it encodes the source once and decodes each
completion from that encoder output with the run's decoder, constrained to the typed prefix.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simpe.decoders.incremental import NEG_INF, Source, decoding, encode
from simpe.decoders.prefix import constrain
from simpe.decoders.reuse import PrefixMemo

LEVELS = ("char", "word")
EFFORT_OF = {"char": "ksmr", "word": "wsr"}  # the metric (simpe.metrics.effort) each level's session measures
# Decoder.decode_source honours a typed prefix; constrained_beam completes it under the segment's glossary terms too
COMPLETING_DECODERS = ("greedy", "beam", "heap_beam", "topk", "topk_dfs", "constrained_beam")


@dataclass
class Effort:
    """One simulated translator's work on one segment."""

    level: str
    keystrokes: int = 0
    mouse: int = 0
    word_strokes: int = 0
    corrections: int = 0
    completions: int = 0
    unhelpful: int = 0  # completions that offered nothing beyond the typed prefix (none agreed with it)
    ref_chars: int = 0
    ref_words: int = 0
    latency_ms: list[float] = field(default_factory=list)  # each completion's time

    @property
    def accepted(self) -> bool:
        """The first proposal was the post-edit."""
        return self.corrections == 0

    def to_dict(self) -> dict[str, Any]:
        return {"keystrokes": self.keystrokes, "mouse": self.mouse, "word_strokes": self.word_strokes,
                "corrections": self.corrections, "completions": self.completions, "unhelpful": self.unhelpful,
                "ref_chars": self.ref_chars, "ref_words": self.ref_words,
                "latency_ms": [round(ms, 1) for ms in self.latency_ms]}

    def stats(self) -> list[float]:
        """The metric statistics of this level: [keystrokes + mouse, ref chars] (char) or [word strokes, ref words]."""
        if self.level == "char":
            return [self.keystrokes + self.mouse, self.ref_chars]
        return [self.word_strokes, self.ref_words]


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _word_end(text: str, at: int) -> int:
    """The end of the word of ``text`` at ``at``, with the space after it (``len(text)`` at the last word)."""
    space = text.find(" ", at)
    return len(text) if space < 0 else space + 1


def session(proposal: str, reference: str, complete: Callable[[str], str], level: str) -> Effort:
    """Simulate one translator on one segment.

    Args:
        proposal: the system's first translation.
        reference: the post-edit the translator wants.
        complete: the system: the full text of its best completion of a typed prefix (the prefix itself when it
            has none that agrees).
        level: ``char`` or ``word`` (module docstring).
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; known: {', '.join(LEVELS)}")
    effort = Effort(level, ref_chars=len(reference), ref_words=len(reference.split()))
    hypothesis, cursor = proposal, 0  # cursor: the end of the validated prefix
    while hypothesis != reference:
        error = _common(hypothesis, reference)  # >= cursor: every completion starts with the validated prefix
        effort.corrections += 1
        if error > cursor:
            effort.mouse += 1  # a click at the error accepts the correct text before it
        if error == len(reference):  # correct up to the end, then more: one keystroke deletes the rest
            effort.keystrokes += 1
            break
        if level == "char":
            cursor = error + 1
            effort.keystrokes += 1
        else:
            cursor = _word_end(reference, error)  # the rest of the word at the error, and its space
            effort.keystrokes += cursor - error
            effort.word_strokes += 1
        typed = reference[:cursor]
        if typed == reference:
            break
        hypothesis = complete(typed)
        effort.completions += 1
        if not hypothesis.startswith(typed):  # nothing that agrees with the prefix: the translator types on
            effort.unhelpful += 1
            hypothesis = typed
    return effort


class Completer:
    """The system side of a session: the source encoded once, each completion decoded from it under the typed prefix.

    ``decoder`` is the run's decoder (greedy, beam, heap_beam, topk, topk_dfs or constrained_beam:
    ``Decoder.decode_source``); the completion is its best hypothesis, detokenised as the loop detokenises hypotheses.
    With ``text`` (the segment's source) a decoder that places glossary terms (``takes_glossary``: constrained_beam)
    completes under the typed prefix and the terms that apply to it together (``ConstrainedBeamDecoder.with_terms``:
    the prefix first, then every term not yet in what was typed). With ``reuse`` (the default)
    the decoder states of the token prefixes earlier completions fed are kept (``simpe.decoders.reuse``): a completion
    reads the rows of the validated text the model wrote before instead of running the model on them, and computes
    only from the first token prefix no earlier completion fed; the completions are the same as without it.
    ``source``: the segment's source encoded already (``encode`` with the decoder's limit), shared by the levels.
    """

    def __init__(self, model: Any, tokenizer: Any, decoder: Any, input_ids: Any, *, reuse: bool = True,
                 source: Source | None = None, text: str | None = None) -> None:
        self.model, self.tokenizer, self.decoder = model, tokenizer, decoder
        if source is None:
            with decoding(model):
                source = encode(model, input_ids, decoder.limit)  # the encoder runs once per segment
        self.source = source
        self.memo = PrefixMemo() if reuse else None
        self.latency_ms: list[float] = []
        self.pairs = decoder.applicable(text) if text and getattr(decoder, "takes_glossary", False) else []

    def __call__(self, typed: str) -> str:
        t0 = time.perf_counter()
        source = constrain(self.source, self.tokenizer, typed)
        if self.pairs:
            with decoding(self.model):
                source = self.decoder.with_terms(self.model, source, self.pairs, typed)[0]
        if self.memo is not None:
            if self.memo.over_budget:
                self.memo.clear()
            if source.constraint is not None:  # the prefixes whose text left what was typed are never fed again
                self.memo.prune(lambda tokens: source.constraint.state(tokens) is not None)
            source = dataclasses.replace(source, memo=self.memo)
        result = self.decoder.decode_source(self.model, source)
        best = result.hypotheses[0] if result.hypotheses else None
        text = typed
        if best is not None and best.score > NEG_INF:
            text = self.tokenizer.decode(list(best.tokens), skip_special_tokens=True).lstrip(" ")  # as prefix.py compares
        self.latency_ms.append(1000 * (time.perf_counter() - t0))
        return text


def run_sessions(model: Any, tokenizer: Any, decoder: Any, input_ids: Any, proposal: str, reference: str,
                 levels: tuple[str, ...], reuse: bool = True, text: str | None = None) -> dict[str, Effort]:
    """Every level's session on one segment, each with the same proposal; latencies per level. The source is
    encoded once for all levels; ``reuse``: each level's completions reuse the decoder states of its earlier ones;
    ``text``: the segment's source, for a decoder's glossary terms (``Completer``)."""
    out: dict[str, Effort] = {}
    with decoding(model):
        source = encode(model, input_ids, decoder.limit)
    for level in levels:
        completer = Completer(model, tokenizer, decoder, input_ids, reuse=reuse, source=source, text=text)
        effort = session(proposal.lstrip(" "), reference, completer, level)
        effort.latency_ms = completer.latency_ms
        out[level] = effort
    return out
