"""``icl``: in-context adaptation of a causal LM: earlier post-edits as prompt examples, no weight update.

Moslem et al. (2023, "Adaptive Machine Translation with Large Language Models"): the stream's
previous (source, post-edit) pairs are a translation memory; for each new segment the ``k``
most similar ones (fuzzy match of the sources) go into the prompt as examples, the most similar
last, closest to the query (``simpe.models.causal`` builds the prompt: earlier chat turns under
a chat template, earlier blocks under a plain one). The memory holds only earlier segments: the
loop asks for the examples before segment i's post-edit is stored (``after_segment``), so the
output of segment i never sees reference i.

Similarity (``similarity``): ``chrf``, the character n-gram F-score of the two sources (n = 1..6,
beta 2, whitespace removed: sacreBLEU's chrF definition, computed here because methods never
import the metric stack), or ``overlap``, the Jaccard overlap of their lower-cased word sets.
A pair below ``min_similarity`` is never used. Equal similarities (to rounding noise,
``simpe.ties``) prefer the later post-edit: the translator's latest decision. A source seen
before with the same text is a 100% match and is the last example.

No parameter changes (the update still measures the pair's loss, with the examples in the
prompt, and takes no step); the per-user store is the memory itself, as UTF-8 JSON bytes
(``store_bytes``). An encoder-decoder family cannot take examples: the method is refused, in
one line, before the model loads.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from simpe.errors import ConfigError
from simpe.methods import memory
from simpe.methods.base import METHODS, Method
from simpe.models import ModelFamily
from simpe.ties import rank

SIMILARITIES = ("chrf", "overlap")
MEMORY = "__icl_memory__"  # the store's one tensor: the memory as UTF-8 JSON bytes
CHRF_ORDER, CHRF_BETA = 6, 2.0


def _char_ngrams(text: str, n: int) -> Counter:
    chars = "".join(text.split())
    return Counter(chars[i:i + n] for i in range(len(chars) - n + 1))


def chrf(hypothesis: str, reference: str) -> float:
    """Sentence chrF in [0, 1] (character n-grams 1..6, beta 2, whitespace removed, orders without n-grams skipped)."""
    precisions, recalls = [], []
    for n in range(1, CHRF_ORDER + 1):
        hyp, ref = _char_ngrams(hypothesis, n), _char_ngrams(reference, n)
        if not hyp or not ref:
            continue
        match = sum((hyp & ref).values())
        precisions.append(match / sum(hyp.values()))
        recalls.append(match / sum(ref.values()))
    if not precisions:
        return 0.0
    p, r = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    if p + r == 0:
        return 0.0
    b2 = CHRF_BETA ** 2
    return (1 + b2) * p * r / (b2 * p + r)


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the lower-cased word sets, in [0, 1]."""
    left, right = set(a.lower().split()), set(b.lower().split())
    return len(left & right) / len(left | right) if left | right else 0.0


@METHODS.add("icl")
class IclMethod(memory.MemoryStore, Method):
    """In-context examples: the ``k`` earlier post-edits whose sources are most similar; no parameter changes."""
    memory_key = MEMORY
    store_markers = (MEMORY,)

    parametric = False  # trains no tensor

    def __init__(self, k: int = 2, similarity: str = "chrf", min_similarity: float = 0.0) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigError(f"icl k must be an integer >= 1, got {k!r}")
        if similarity not in SIMILARITIES:
            raise ConfigError(f"unknown icl similarity {similarity!r}; known: {', '.join(SIMILARITIES)}")
        if not 0.0 <= min_similarity <= 1.0:
            raise ConfigError(f"icl min_similarity must be in [0, 1], got {min_similarity}")
        self.k, self.similarity, self.min_similarity = k, similarity, float(min_similarity)
        self.memory: list[tuple[str, str]] = []

    def check_family(self, family: ModelFamily) -> None:
        if family.encoder_decoder:
            raise ConfigError(f"method 'icl' puts earlier post-edits into a causal LM's prompt; the {family.name} family is "
                              "encoder-decoder and takes no examples (use knn, or a fine-tuning method, there)")

    def select(self, model):
        from simpe.models import family_of

        self.check_family(family_of(model))
        self.memory = []
        return {}

    def score(self, a: str, b: str) -> float:
        return chrf(a, b) if self.similarity == "chrf" else overlap(a, b)

    def examples(self, source: str) -> list[tuple[str, str]]:
        """The ``k`` most similar earlier pairs, least similar first (the most similar closest to the query)."""
        if not self.memory:
            return []
        scores = [self.score(source, earlier) for earlier, _ in self.memory]
        latest_first = [-i for i in range(len(self.memory))]  # equal similarity: the later post-edit
        order = [i for i in rank(scores, key=latest_first) if scores[i] >= self.min_similarity][: self.k]
        return [self.memory[i] for i in reversed(order)]

    def after_segment(self, pair: Any) -> None:
        self.memory.append((pair.source, pair.reference))

    # ---- what a per-user store holds: the memory, no parameter (simpe.methods.memory.MemoryStore)
    def describe(self) -> dict[str, Any]:
        return {"trainable_tensors": 0, "memory_pairs": len(self.memory), "k": self.k, "similarity": self.similarity,
                "min_similarity": self.min_similarity}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.memory = memory.pairs_of(state, MEMORY)
