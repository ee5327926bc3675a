"""Sampling-based MBR decoding (Amrhein and Sennrich (2022); Eikema and Aziz 2020).

Draw ``samples`` ancestral samples (sampling.py, seeded); the candidates are the distinct
samples, the support is all samples (duplicates count as often as drawn); return the
candidate with the highest mean utility against the support,
``argmax_c 1/N sum_j u(c, s_j)``. A candidate is compared with its own copies in the
support too, as in Eikema and Aziz's implementation. Utilities (utility.py): ``chrf``,
``chrf++``, ``sbleu`` on detokenised text, or ``comet`` (source, candidate, support as
pseudo-reference), with each distinct sentence embedded once and every pair scored from
the cached embeddings.

``bind(tokenizer)`` gives it the tokenizer that turns token ids into text and builds the
utility (loading COMET for the ``comet`` utility), so a loop finds a bad COMET model before
its first segment. Sample seeds are ``seed + index`` (the sentence's stream position). The result
lists every candidate, ordered by expected utility (ties to rounding noise, ``simpe.ties``: the
higher model score first, then the lower token ids); each
``Hypothesis.score`` is still the raw log P(y|x), and ``info["utilities"]`` gives the
expected utility of each, in the same order.
"""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

from simpe.decoders.base import DECODERS, Decoder, DecodeResult, Hypothesis
from simpe.decoders.incremental import LengthLimit, check_int, decoding, encode
from simpe.decoders.sampling import draw_samples
from simpe.errors import ConfigError
from simpe.metrics.utility import COMET, Utility, build_utility, check_utility
from simpe.ties import SCORE_ATOL, rank


@DECODERS.add("mbr")
class MbrDecoder(Decoder):
    """MBR over ``samples`` seeded ancestral samples with a chrF, chrF++, sentence-BLEU or COMET utility."""

    def __init__(self, samples: int = 100, seed: int = 0, utility: str = "chrf", comet_model: Any = None,
                 max_len_a: float = 2.0, max_len_b: int = 10, max_len_cap: int = 256) -> None:
        check_int("samples", samples, 1)
        check_int("seed", seed, 0)
        check_utility(utility, comet_model)
        self.samples, self.seed, self.utility_name, self.comet_model = samples, seed, utility, comet_model
        self.limit = LengthLimit(max_len_a, max_len_b, max_len_cap)
        self.utility: Utility | None = None

    def bind(self, tokenizer: Any) -> MbrDecoder:
        """Keep the tokenizer and build the utility (COMET loads here, once)."""
        self.tokenizer = tokenizer
        if self.utility is None:
            self.utility = build_utility(self.utility_name, self.comet_model)
        return self

    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        """MBR-decode one source; ``source`` (for COMET) defaults to the detokenised ``input_ids``."""
        if self.tokenizer is None or self.utility is None:
            raise ConfigError("the mbr decoder compares text: call decoder.bind(tokenizer) before decode()")
        t0 = time.perf_counter()
        with decoding(model):
            encoded = encode(model, input_ids, self.limit)
            drawn, expansions = draw_samples(model, encoded, self.samples, self.seed + index)
        counts = Counter(h.tokens for h in drawn)
        candidates: dict[tuple[int, ...], Hypothesis] = {}
        for h in drawn:
            candidates.setdefault(h.tokens, h)
        cands = list(candidates.values())
        texts = self.tokenizer.batch_decode([list(h.tokens) for h in cands], skip_special_tokens=True)
        if len(cands) == 1:
            expected = [0.0]
        else:
            src_text = source
            if src_text is None and self.utility_name == COMET:
                ids = input_ids[0] if hasattr(input_ids, "dim") and input_ids.dim() == 2 else input_ids
                src_text = self.tokenizer.decode(ids, skip_special_tokens=True, use_source_tokenizer=True)
            matrix = self.utility.matrix(texts, texts, src_text)  # (candidates, candidates): u(candidate, support)
            weights = [counts[h.tokens] / len(drawn) for h in cands]
            expected = (matrix * weights).sum(axis=1).tolist()  # mean utility over the support, as drawn
        # expected utilities tied to rounding noise (simpe.ties): the higher model score, then the token ids
        order = rank(expected, [h.score for h in cands], key=[h.tokens for h in cands], atol=SCORE_ATOL)
        return DecodeResult([cands[i] for i in order], exact=None, expansions=expansions, seconds=time.perf_counter() - t0,
                            info={"utilities": [expected[i] for i in order], "texts": [texts[i] for i in order],
                                  "candidates": len(cands), "samples": len(drawn), "utility": self.utility_name})

    def params(self) -> dict[str, Any]:
        return {"samples": self.samples, "seed": self.seed, "utility": self.utility_name,
                "comet_model": self.comet_model if isinstance(self.comet_model, (str, type(None))) else type(self.comet_model).__name__,
                **self.limit.params()}
