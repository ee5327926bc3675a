"""The decoder contract and its registry.

A decoder turns one encoded source sentence into a ranked list of hypotheses under the
current model parameters. The online loop, the ranking evaluation and ``simpe rank`` only
see this interface; variants register with ``@DECODERS.add("name")``.
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
    """Decode one source sentence with a Marian-style encoder-decoder model."""

    name: str = ""

    @abstractmethod
    def decode(self, model: Any, input_ids: Any) -> DecodeResult:
        """Decode one source.

        Args:
            model: a ``transformers`` ``MarianMTModel`` (eval mode, on its device).
            input_ids: (1, src_len) LongTensor of source token ids ending in EOS.
        Returns:
            a ``DecodeResult`` with hypotheses sorted by descending score.
        """

    def params(self) -> dict[str, Any]:
        """The settings that define this decoder, for logs and run configs."""
        return {}


DECODERS: Registry[Decoder] = Registry("decoder")
