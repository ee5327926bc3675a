"""The decoder contract and its registry.

A decoder turns one encoded source sentence into a ranked list of hypotheses under the
current model parameters. The online loop, the ranking evaluation and ``simpe rank`` only
see this interface; variants register with ``@DECODERS.add("name")``.

Extensions to the first version of this contract, all with defaults (nothing that used it
changes): ``Decoder.decode_batch`` (a loop over ``decode`` unless a decoder batches), and
``Decoder.bind(tokenizer)`` for decoders that compare hypotheses as text (MBR).
Unknown constructor parameters raise ``ConfigError`` naming the valid ones.
"""
from __future__ import annotations

import functools
import inspect
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from simpe.errors import ConfigError
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
    tokenizer: Any = None  # set by bind(); only text-comparing decoders (MBR) need it

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Turn "unexpected keyword argument" into a ConfigError naming the valid parameters,
        # so a typo in a YAML decoder block reads as a user mistake, not a traceback.
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_checks_params", False):
            return
        valid = [p for p in inspect.signature(init).parameters if p != "self"]

        @functools.wraps(init)
        def checked(self: Decoder, *args: Any, **params: Any) -> None:
            unknown = sorted(set(params) - set(valid))
            if unknown:
                raise ConfigError(f"unknown parameter(s) {', '.join(map(repr, unknown))} for decoder "
                                  f"{cls.name or cls.__name__!r}; valid: {', '.join(valid) or '(none)'}")
            init(self, *args, **params)

        checked._checks_params = True  # type: ignore[attr-defined]
        cls.__init__ = checked  # type: ignore[method-assign]

    @abstractmethod
    def decode(self, model: Any, input_ids: Any) -> DecodeResult:
        """Decode one source.

        Args:
            model: a ``transformers`` ``MarianMTModel`` (eval mode, on its device).
            input_ids: (1, src_len) LongTensor of source token ids ending in EOS.
        Returns:
            a ``DecodeResult`` with hypotheses sorted by descending score.
        """

    def decode_batch(self, model: Any, batch: list[Any]) -> list[DecodeResult]:
        """Decode several sources, each a (1, src_len) LongTensor; the default is a loop over ``decode``."""
        return [self.decode(model, input_ids) for input_ids in batch]

    def bind(self, tokenizer: Any) -> Decoder:
        """Give the decoder the tokenizer it needs to compare hypotheses as text; returns self."""
        self.tokenizer = tokenizer
        return self

    def params(self) -> dict[str, Any]:
        """The settings that define this decoder, for logs and run configs."""
        return {}


DECODERS: Registry[Decoder] = Registry("decoder")
