"""The decoder contract and its registry.

A decoder turns one encoded source sentence into a ranked list of hypotheses under the
current model parameters. The online loop, the ranking evaluation and ``simpe rank`` only
see this interface; variants register with ``@DECODERS.add("name")``, and their parameters
are their constructor's keyword arguments (checked by ``DECODERS.build``).

Every decoder is used the same way: built (parameters checked, before any model loads),
then ``bind(tokenizer)`` once the model is there (a decoder that compares hypotheses as text,
MBR, needs it and loads what its utility needs), then ``decode(model, input_ids, index=i,
source=text)`` per sentence: ``index`` is the sentence's position in its stream (seeded
decoders draw with ``seed + index``), ``source`` its text (COMET utilities need it).
``decode_batch`` decodes several sentences, batched where a decoder can.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from simpe.registry import Registry


@dataclass(frozen=True)
class Hypothesis:
    """One complete (or, for a cut-short search, best-so-far) target sequence.

    tokens: target token ids without the decoder start token, ending in EOS when complete.
    score: log P(tokens | source) under the model, summed over tokens (no length norm).
    """

    tokens: tuple[int, ...]
    score: float


@dataclass
class DecodeResult:
    """The decoder's output for one source: hypotheses best first, and search facts.

    exact: True only when the decoder proves these are the k best (exact top-k that was
    not cut short); False for a cut-short exact search; None for heuristic decoders.
    expansions: number of prefixes expanded (model forward rows), when counted.
    """

    hypotheses: list[Hypothesis]
    exact: bool | None = None
    expansions: int | None = None
    seconds: float | None = None
    info: dict[str, Any] | None = None


class Decoder(ABC):
    """Decode one source sentence with a model of any family (``simpe.models``: encoder-decoder or causal LM)."""

    name: str = ""  # set by DECODERS.add
    tokenizer: Any = None  # set by bind()

    @abstractmethod
    def decode(self, model: Any, input_ids: Any, *, index: int = 0, source: str | None = None) -> DecodeResult:
        """Decode one source.

        Args:
            model: a ``transformers`` model of a supported family (eval mode, on its device); its family
                (``simpe.models.family_of``) gives the target prefix, the stop tokens and the incremental step.
            input_ids: (1, src_len) LongTensor: the source ids (ending in EOS), or a causal LM's prompt.
            index: the sentence's position in its stream (seeded decoders use seed + index).
            source: the source text, for decoders that score text against it (COMET MBR).
        Returns:
            a ``DecodeResult`` with hypotheses sorted by the decoder's preference, best first.
        """

    def decode_batch(self, model: Any, batch: list[Any], *, start: int = 0) -> list[DecodeResult]:
        """Decode several sources, each a (1, src_len) LongTensor, the first at stream position ``start``;
        the default is a loop over ``decode``."""
        return [self.decode(model, input_ids, index=start + offset) for offset, input_ids in enumerate(batch)]

    def decode_source(self, model: Any, source: Any, *, t0: float | None = None) -> DecodeResult:
        """Decode a source encoded already (``simpe.decoders.incremental.encode``), honouring its typed-prefix
        constraint (``simpe.decoders.prefix``): what the interactive-predictive protocol asks after each correction.
        Greedy, beam, min-heap beam, both exact top-k searches and constrained_beam implement it; sampling and MBR do
        not."""
        from simpe.errors import ConfigError

        raise ConfigError(f"decoder {self.name!r} cannot complete a typed prefix; use greedy, beam, heap_beam, topk, topk_dfs or "
                          "constrained_beam")

    takes_glossary: bool = False  # a decoder that needs the run's glossary (use_glossary) and is refused without one

    def use_glossary(self, pairs: Any, source_lang: str = "en", target_lang: str = "de") -> Decoder:
        """Give the decoder the run's glossary, (source term, target term) pairs in the stream's languages (the loop
        calls it before the model loads, for a decoder that ``takes_glossary``); returns self. Refused by default."""
        from simpe.errors import ConfigError

        raise ConfigError(f"decoder {self.name!r} takes no glossary; constrained_beam puts a glossary's terms into its output")

    def bind(self, tokenizer: Any) -> Decoder:
        """Give the decoder the model's tokenizer (and let it load what it needs); returns self."""
        self.tokenizer = tokenizer
        return self

    def params(self) -> dict[str, Any]:
        """The settings that define this decoder, for logs and run configs."""
        return {}


DECODERS: Registry[Decoder] = Registry("decoder")
