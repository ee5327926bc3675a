"""``replay``: a modifier of a parametric method; each update also steps on ``k`` pairs drawn from earlier ones.

Rehearsal against forgetting (as in continual learning for NMT, e.g. ContinualMT): the update on post-edit i takes a
batch of it and ``k`` pairs drawn, without replacement within a draw, from the stream's earlier post-edits
(``source: post-edits``, the default) or from a fixed pool of ``pool`` pairs of the training split (``source: train``,
drawn once with the run's seed through the loop's ``Context.sentences``). The draws come from their own torch
generator seeded with ``seed``, so a run is repeatable and a resume goes on with the same draws (the generator's
state and the buffer are part of the resume state). The loss of each step is the mean of the pairs' mean token
losses (``simpe.loop.update``); the perplexity threshold stays post-edit i's, so a segment whose post-edit is already
learnt steps on nothing, replayed pairs included. The per-user store is the method's: replay adds nothing to it.
"""
from __future__ import annotations

import json
from typing import Any

import torch

from simpe.errors import ConfigError, ModelError
from simpe.methods.base import Context, Footprint, Method, RunShape
from simpe.methods.compose import MODIFIERS, Modifier

SOURCES = ("post-edits", "train")
BUFFER, RNG = "buffer", "rng"  # state entries: the pairs as UTF-8 JSON bytes, the generator's state
CACHE = 4096  # encoded pairs kept (the buffer's texts are kept whole; their ids are made again beyond this)


def _texts(tensor: torch.Tensor) -> Any:
    return json.loads(bytes(tensor.tolist()).decode("utf-8"))


@MODIFIERS.add("replay")
class ReplayModifier(Modifier):
    """Each update also steps on ``k`` earlier pairs (post-edits or training pairs) drawn with a fixed seed."""

    parametric_only = True

    def __init__(self, k: int = 2, source: str = "post-edits", pool: int = 1000, seed: int = 1) -> None:
        for key, value in (("k", k), ("pool", pool)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"replay {key} must be an integer >= 1, got {value!r}")
        if source not in SOURCES:
            raise ConfigError(f"unknown replay source {source!r}; known: {', '.join(SOURCES)}")
        self.k, self.source, self.pool, self.seed = k, source, pool, int(seed)
        self.buffer: list[tuple[str, str]] = []
        self.generator = torch.Generator().manual_seed(self.seed)
        self._encoded: dict[int, Any] = {}
        self._encode: Any = None

    def sentences_needed(self) -> list[tuple[str, int]]:
        return [("train", self.pool)] if self.source == "train" else []

    def prepare(self, context: Context, resume: bool = False) -> None:
        self._encode = context.encode
        if self.source == "train" and not self.buffer:
            self.buffer = [tuple(p) for p in context.sentences("train", self.pool)]

    def update_pairs(self, pair: Any) -> list[Any]:
        if not self.buffer:
            return []
        if self._encode is None:
            raise ModelError("replay was not prepared (Method.prepare) before its first update")
        drawn = torch.randperm(len(self.buffer), generator=self.generator)[: self.k].tolist()  # (min(k, n),)
        out = []
        for index in drawn:
            encoded = self._encoded.get(index)
            if encoded is None:
                encoded = self._encode(*self.buffer[index])
                if len(self._encoded) < CACHE:
                    self._encoded[index] = encoded
            out.append(encoded)
        return out

    def after_segment(self, pair: Any) -> None:
        if self.source == "post-edits":
            self.buffer.append((pair.source, pair.reference))

    def footprint(self, method: Method, shape: RunShape) -> Footprint:
        """``k`` more pairs in each update repetition's batch. Its memory is left out: the buffer's texts and at most
        ``CACHE`` encoded pairs (token ids) are small beside any model's tensors."""
        return Footprint(update_pairs=self.k)

    def describe(self) -> dict[str, Any]:
        return {"k": self.k, "source": self.source, "buffer_pairs": len(self.buffer), "seed": self.seed}

    # ---- resume: the buffer and the generator (not part of the per-user store)
    def state_dict(self) -> dict[str, torch.Tensor]:
        encoded = json.dumps(self.buffer, ensure_ascii=False).encode("utf-8")
        return {BUFFER: torch.tensor(list(encoded), dtype=torch.uint8), RNG: self.generator.get_state()}

    def check_state(self, state: dict[str, Any]) -> None:
        if set(state) != {BUFFER, RNG}:
            raise ModelError(f"holds {sorted(state)}; replay resumes from {BUFFER} and {RNG}")
        buffer, rng = state[BUFFER], state[RNG]
        if not isinstance(buffer, torch.Tensor) or buffer.dtype != torch.uint8 or buffer.dim() != 1:
            raise ModelError(f"holds a {BUFFER} that is not a 1-D uint8 tensor")
        try:
            pairs = _texts(buffer)
        except (UnicodeDecodeError, ValueError):
            raise ModelError(f"holds a {BUFFER} that is not UTF-8 JSON") from None
        if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2 and all(isinstance(s, str) for s in p)
                                                  for p in pairs):
            raise ModelError(f"holds a {BUFFER} that is not a list of (source, post-edit) pairs of strings")
        expected = self.generator.get_state()
        if not isinstance(rng, torch.Tensor) or rng.dtype != expected.dtype or rng.shape != expected.shape:
            raise ModelError(f"holds a {RNG} that is not a generator state of this torch ({tuple(expected.shape)} uint8)")

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.buffer = [tuple(p) for p in _texts(state[BUFFER])]
        self.generator.set_state(state[RNG].clone())
        self._encoded = {}
