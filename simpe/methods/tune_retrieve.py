"""``tune-retrieve``: retrieve the most similar earlier post-edits, fine-tune a copy on them, translate, reset.

What ModernMT shipped (after Farajian et al. 2017, "Multi-domain neural machine translation through unsupervised
adaptation"; its open code: ``mmt/tuning.py`` and the memory's ``F1BleuRescorer``). For each segment, before its
translation (``translating``):

1. retrieve: the memory's entries sharing a word with the source (an inverted index, at most ``candidates`` of them,
   most shared words first) are scored with ModernMT's F1-BLEU (the F1 of smoothed 1-4-gram BLEU precision and
   recall of the two sources' words, ε 0.1; an entry more than twice as long or short as the source scores 0),
   and the ``matches`` best with a score of at least ``min_score`` are kept. ModernMT halves that score and adds half
   of a context score (its context analyser's similarity of the document to the memory); simpe has no context
   vector, so the score is the F1-BLEU itself, and a perfect match is not copied as ModernMT copies it: the model
   translates;
2. fine-tune: epochs = int(``max_epochs`` × mean score) steps of the shared update on the batch of matches, with
   lr = ``max_lr`` × √(mean score) (ModernMT: max_epochs 4, max lr 1e-4, one batch an epoch for its one suggestion
   by default). simpe's update is plain SGD with each tensor's gradient clipped to norm 1: a step moves a tensor by
   at most lr. ModernMT's 1e-4 is a learning rate of its own optimiser (the model's training one, Adam, made
   afresh for each tuning), whose first step moves every value by about lr: a 256 x 1024 tensor of the demo model
   by ~0.05 in norm, five times simpe's online step at lr 1e-2. At 1e-4 under SGD the copy would not move, so the
   default ``max_lr`` is null: the run's ``update.lr`` (the 1e-2 of Simianer et al. (2019)), which moves it as far as an online update
   does. Every parameter of the model is tuned (ModernMT tunes the whole model), whatever the run's method adapts;
3. translate with the tuned copy, then put every tuned value back (the state before the segment: the base model, or
   the persistent state of the method it is composed with, ``full+tune-retrieve``).

After the segment the post-edit joins the memory (``after_segment``). A translation memory given as ``memory``
(tmx, tsv or text: ``Context.read_pairs``) is in the memory from the start. The per-user store is the memory, as
UTF-8 JSON bytes of (source, post-edit) pairs; no parameter changes persistently.
"""
from __future__ import annotations

import contextlib
import math
import re
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods import memory
from simpe.methods.base import METHODS, Context, Footprint, Method, RunShape, base_parameters
from simpe.ties import rank

MEMORY = "__tune_memory__"  # the store's one tensor: the memory as UTF-8 JSON bytes
ORDER, EPSILON, MAX_EXPANSION = 4, 0.1, 2.0  # ModernMT's F1BleuCalculator and F1BleuRescorer
WORD = re.compile(r"\w+|[^\w\s]")
CACHE = 4096  # encoded pairs kept


def words(text: str) -> list[str]:
    return WORD.findall(text)


def _ngrams(tokens: list[str]) -> Counter:
    return Counter(tuple(tokens[i:i + n]) for n in range(1, ORDER + 1) for i in range(len(tokens) - n + 1))


def f1_bleu(query: list[str], query_ngrams: Counter, entry: list[str], entry_ngrams: Counter) -> float:
    """ModernMT's F1-BLEU of a memory entry's source against the query (both word lists with their 1-4-gram counts):
    2PR / (P + R), P and R geometric means over n = 1..4 of (matches + ε) / (n-grams + ε), ε 0.1; 0 when one is
    more than twice as long as the other."""
    if not query or not entry or max(len(query), len(entry)) / min(len(query), len(entry)) > MAX_EXPANSION:
        return 0.0
    matches = [0] * ORDER
    for gram, count in query_ngrams.items():
        other = entry_ngrams.get(gram)
        if other:
            matches[len(gram) - 1] += min(count, other)
    precision = recall = 0.0
    for n in range(1, ORDER + 1):
        precision += math.log((matches[n - 1] + EPSILON) / (max(len(entry) - n + 1, 0) + EPSILON))
        recall += math.log((matches[n - 1] + EPSILON) / (max(len(query) - n + 1, 0) + EPSILON))
    p, r = math.exp(precision / ORDER), math.exp(recall / ORDER)
    return 2 * p * r / (p + r)


@METHODS.add("tune-retrieve")
class TuneRetrieveMethod(memory.MemoryStore, Method):
    """For each segment: fine-tune a copy on the most similar earlier post-edits, translate, reset (ModernMT)."""
    memory_key = MEMORY
    store_markers = (MEMORY,)

    parametric = False  # nothing persists: the tuned copy is reset after each translation
    companion = True  # beside a method that trains: full+tune-retrieve

    def __init__(self, matches: int = 1, max_epochs: int = 4, max_lr: float | None = None, min_score: float = 0.0,
                 candidates: int = 64, memory: str | None = None) -> None:
        for key, value in (("matches", matches), ("max_epochs", max_epochs), ("candidates", candidates)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"tune-retrieve {key} must be an integer >= 1, got {value!r}")
        if max_lr is not None and not max_lr > 0:
            raise ConfigError(f"tune-retrieve max_lr must be > 0 or null (the run's update.lr), got {max_lr}")
        if not 0.0 <= min_score <= 1.0:
            raise ConfigError(f"tune-retrieve min_score must be in [0, 1], got {min_score}")
        self.matches, self.max_epochs, self.max_lr, self.min_score = matches, max_epochs, max_lr, float(min_score)
        self.candidates, self.memory_file = candidates, memory
        self._clear()
        self.context: Context | None = None

    def _clear(self) -> None:
        self.memory: list[tuple[str, str]] = []
        self._words: list[list[str]] = []
        self._grams: list[Counter] = []
        self._index: dict[str, list[int]] = {}
        self._encoded: dict[int, Any] = {}

    def _remember(self, source: str, reference: str) -> None:
        index = len(self.memory)
        self.memory.append((source, reference))
        tokens = words(source)
        self._words.append(tokens)
        self._grams.append(_ngrams(tokens))
        for word in set(tokens):
            self._index.setdefault(word, []).append(index)

    def select(self, model):
        self.model = model
        return {}

    def prepare(self, context: Context, resume: bool = False) -> None:
        self.context = context
        if self.memory_file and not resume:
            for source, reference in context.read_pairs(self.memory_file):
                self._remember(source, reference)

    # ---- retrieval
    def retrieve(self, source: str) -> list[tuple[int, float]]:
        """The ``matches`` best memory entries for ``source`` with their F1-BLEU: (entry, score), best first."""
        query = words(source)
        shared: Counter = Counter()
        for word in set(query):
            for index in self._index.get(word, ()):
                shared[index] += 1
        if not shared:
            return []
        candidates = sorted(shared, key=lambda i: (-shared[i], -i))[: self.candidates]  # most shared words, later first
        grams = _ngrams(query)
        scores = [f1_bleu(query, grams, self._words[i], self._grams[i]) for i in candidates]
        order = rank(scores, key=[-i for i in candidates])  # equal scores (simpe.ties): the later post-edit
        return [(candidates[j], scores[j]) for j in order if scores[j] > 0 and scores[j] >= self.min_score][: self.matches]

    def schedule(self, scores: list[float]) -> tuple[int, float]:
        """(steps, lr) for matches of these scores: ModernMT's int(max_epochs × mean), max_lr × √mean."""
        mean = sum(scores) / len(scores)
        max_lr = self.max_lr if self.max_lr is not None else self.context.lr
        return int(self.max_epochs * mean), max_lr * math.sqrt(mean)

    def _pair(self, index: int) -> Any:
        pair = self._encoded.get(index)
        if pair is None:
            pair = self.context.encode(*self.memory[index])
            if len(self._encoded) < CACHE:
                self._encoded[index] = pair
        return pair

    @contextlib.contextmanager
    def translating(self, source: str) -> Iterator[dict[str, Any] | None]:
        if not self.memory:
            yield None
            return
        if self.context is None:
            raise ModelError("tune-retrieve was not prepared (Method.prepare) before its first translation")
        start = time.perf_counter()
        found = self.retrieve(source)
        facts: dict[str, Any] = {"matches": len(found), "score": None, "steps": 0, "lr": None}
        saved: list[torch.Tensor] = []
        params: dict[str, torch.nn.Parameter] = {}
        try:
            if found:
                steps, lr = self.schedule([score for _, score in found])
                facts.update(score=sum(s for _, s in found) / len(found), lr=lr)
                if steps:
                    params = base_parameters(self.model)
                    saved = self._saved_state(list(params.values()))  # the state to return to
                    record = self.context.tune(params, [self._pair(i) for i, _ in found], lr, steps)
                    facts["steps"] = record.get("repetitions", 0)
                    if record.get("skipped"):
                        facts["skipped"] = record["skipped"]
            facts["seconds"] = time.perf_counter() - start
            yield facts
        finally:
            if saved:
                with torch.no_grad():
                    torch._foreach_copy_(list(params.values()), saved)  # bit for bit, one call for every tensor

    def _saved_state(self, params: list[torch.nn.Parameter]) -> list[torch.Tensor]:
        """A copy of ``params`` in buffers kept from segment to segment (one foreach copy; the buffers are allocated
        once, at the first tuning: the model's whole size once more, as a clone per segment was)."""
        buffers = getattr(self, "_saved_buffers", None)
        if buffers is None or len(buffers) != len(params) or any(b.shape != p.shape or b.dtype != p.dtype or
                                                                  b.device != p.device for b, p in zip(buffers, params)):
            buffers = self._saved_buffers = [torch.empty_like(p, memory_format=torch.preserve_format) for p in params]
        with torch.no_grad():
            torch._foreach_copy_(buffers, [p.detach() for p in params])
        return buffers

    def after_segment(self, pair: Any) -> None:
        self._remember(pair.source, pair.reference)

    def footprint(self, shape: RunShape) -> Footprint:
        """Every base parameter tuned around each translation on a batch of ``matches`` pairs (``tuned_values``: their
        gradients and a pass over the batch); held from the first tuning on: the copy to return to (``_saved_state``'s
        buffers, at the weights' dtype) and the tuning's own undo buffers and master copies (``Context.tune``: plain
        SGD's spare of each tensor at the step's width, a float32 master of each below float32). Its memory of
        post-edits is left out: texts, small beside any model's tensors. None before ``select``."""
        model = self.__dict__.get("model")
        if model is None:
            return super().footprint(shape)
        tuned = sum(p.numel() for p in {id(p): p for p in base_parameters(model).values()}.values())
        masters = shape.weight < 4 and bool(self.update.master_copies)
        kept = tuned * shape.weight + tuned * (4 if masters else shape.weight) + (tuned * 4 if masters else 0)
        return super().footprint(shape) + Footprint(state=kept, tuned_values=tuned, tuning_pairs=self.matches)

    # ---- what a per-user store holds: the memory, no parameter (simpe.methods.memory.MemoryStore)
    def describe(self) -> dict[str, Any]:
        return {"trainable_tensors": 0, "memory_pairs": len(self.memory), "matches": self.matches,
                "max_epochs": self.max_epochs, "max_lr": self.max_lr, "min_score": self.min_score}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._clear()
        for source, reference in memory.pairs_of(state, MEMORY):
            self._remember(source, reference)
